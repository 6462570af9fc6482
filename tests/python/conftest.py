import pytest

from tucoll.build import Build


@pytest.fixture(scope="session")
def build() -> Build:
    return Build.find()
