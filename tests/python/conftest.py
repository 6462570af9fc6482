import pytest

from tucoll.build import Build


def pytest_configure(config):
    config.addinivalue_line("markers", "mpi_free: its results do not depend on the MPI of the build under test "
                            "(models, simulation, the repository's checks; the library is loaded for its registry "
                            "at most), so `make test MPI=...` with another than the default skips it")


@pytest.fixture(scope="session")
def build() -> Build:
    return Build.find()


@pytest.fixture(scope="session")
def dask_scheduler():
    """A real `dask scheduler` and two `dask worker`s on the loopback, as a batch job would start
    them; yields the scheduler's address."""
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    from dask.distributed import Client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    bindir = Path(sys.executable).parent
    scheduler = subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = [subprocess.Popen([str(bindir / "dask"), "worker", address, "--nthreads", "1", "--no-dashboard"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    try:
        deadline = time.time() + 60
        while True:
            try:
                with Client(address, timeout=5) as client:
                    if len(client.scheduler_info()["workers"]) == 2:
                        break
            except OSError:
                pass
            assert time.time() < deadline, "the scheduler and its workers did not come up"
            time.sleep(1)
        yield address
    finally:
        for proc in [*workers, scheduler]:
            proc.terminate()
        for proc in [*workers, scheduler]:
            proc.wait(timeout=30)
