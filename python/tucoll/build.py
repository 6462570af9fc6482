"""Where the C++ build lives and how to launch its MPI programs."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# Real patterns and matrices that ship with the repository (data/README.md says where they came from).
DATA_DIR = REPO_ROOT / "data"
MATRIX_DIR = DATA_DIR / "matrices"
PATTERN_DIR = DATA_DIR / "patterns"

# Open MPI refuses to start as root without these; they change nothing for other users.
LAUNCH_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@functools.lru_cache(maxsize=1)
def sources_fingerprint() -> str:
    """The library's sources (src/, include/), which its programs and simulated algorithms are
    compiled from: stored beside simulated and measured times, so that a time from earlier sources
    is known as such."""
    digest = hashlib.sha256()
    for path in sorted(p for d in ("src", "include") for p in (REPO_ROOT / d).rglob("*") if p.is_file()):
        digest.update(path.relative_to(REPO_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class Build:
    """A configured CMake build directory (its build-info.json says how to launch jobs)."""

    root: Path
    mpi_flavor: str
    mpiexec: str
    numproc_flag: str
    mpiexec_flags: list[str]
    # A SimGrid build whose simulator charges messages on declared device memory
    # (sim/simgrid-patches/smpi-device-messages.patch); False for others and for MPI builds.
    smpi_device_memory: bool = False

    @classmethod
    def find(cls, build_dir: str | os.PathLike | None = None) -> "Build":
        root = Path(build_dir or os.environ.get("TUCOLL_BUILD_DIR") or REPO_ROOT / "build").resolve()
        info_file = root / "build-info.json"
        if not info_file.is_file():
            raise FileNotFoundError(f"{info_file} not found: build tucoll first (make build)")
        info = json.loads(info_file.read_text())
        return cls(
            root=root,
            mpi_flavor=info["mpi_flavor"],
            mpiexec=info["mpiexec"],
            numproc_flag=info["mpiexec_numproc_flag"] or "-n",
            mpiexec_flags=shlex.split(info["mpiexec_flags"].replace(";", " ")),
            smpi_device_memory=info.get("smpi_device_memory", "").upper() in ("1", "ON", "TRUE", "YES"),
        )

    def binary(self, name: str) -> Path:
        path = self.root / "bin" / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: build tucoll first (make build)")
        return path

    def launch(self, nprocs: int, program: str, args: list[str]) -> list[str]:
        """The command line that runs `program` (a binary of this build) on `nprocs` ranks."""
        return [self.mpiexec, self.numproc_flag, str(nprocs), *self.mpiexec_flags, str(self.binary(program)), *args]

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(LAUNCH_ENV)
        env.update(extra or {})
        return env
