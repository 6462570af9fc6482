"""The repository stands on its own: a user clones it alone, so nothing outside docs/ may reach for
the development checkout's sibling folder of papers and data, and the data it ships is intact."""

import hashlib
import re
import subprocess

import pytest

from tucoll.build import DATA_DIR, REPO_ROOT

pytestmark = pytest.mark.mpi_free  # see conftest.py

# The sibling folder, in the spellings code uses for it: a relative path, or a path component in
# Python or CMake. (Written so that this file does not match itself.)
SIBLING = re.compile(r"\.\./shared\b|\bshared/(data|seeds)\b|[\"']shared[\"']\s*[/,)]")


def tracked_files() -> list[str]:
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("not a git checkout: no list of tracked files")
    return [f for f in proc.stdout.split("\0") if f]


def test_nothing_outside_docs_refers_to_the_sibling_folder():
    offenders = []
    for name in tracked_files():
        if name.startswith("docs/"):
            continue
        path = REPO_ROOT / name
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if b"\0" in data:  # binary
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if SIBLING.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert not offenders, "these read the sibling folder, which a fresh clone lacks:\n" + "\n".join(offenders)


def test_the_pattern_catches_the_spellings_it_is_for():
    name = "sh" + "ared"  # spelt in two pieces so that this file passes its own check
    for line in (f'GRAPH = REPO_ROOT.parent / "{name}" / "data"', f"set(DIR ${{PROJECT_SOURCE_DIR}}/../{name})",
                 f"os.path.join(root, '..', '{name}', 'data')", f"see {name}/seeds/INDEX.md"):
        assert SIBLING.search(line), line
    for line in ("--cfg=smpi/shared-malloc:global", "std::make_shared<W>()", "shared_buffers=False"):
        assert not SIBLING.search(line), line


def test_shipped_data_matches_its_checksums():
    sums = (DATA_DIR / "SHA256SUMS").read_text().splitlines()
    assert len(sums) == 27  # 7 patterns, 20 matrices (data/README.md)
    for entry in sums:
        digest, name = entry.split(maxsplit=1)
        assert hashlib.sha256((DATA_DIR / name).read_bytes()).hexdigest() == digest, name
