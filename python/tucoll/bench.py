"""Running tucoll-bench and reading what it prints."""

from __future__ import annotations

import io
import subprocess
from dataclasses import dataclass, field

import pandas as pd

from tucoll import native
from tucoll.build import Build

# Every collective's CSV starts with these columns (later ones may follow).
CSV_COLUMNS = [
    "collective", "algorithm", "params", "nprocs", "ppn", "dist", "size", "type", "iters",
    "median_us", "min_us", "max_us", "rounds", "messages", "scratch_bytes", "ok",
]


class BenchError(RuntimeError):
    """tucoll-bench exited with an error; the message carries its output."""


def arguments(specs=(), sizes=(), workload=("--dist", "uniform")) -> list[str]:
    """The part of a tucoll-bench command line that says what to time: each spec (`--alg`, run
    interleaved in this order), the block sizes (`--sizes`, none for a sizeless workload such as a
    matrix) and the workload's own options. The one spelling of it for bench, sim, sweep and figure."""
    args = [a for spec in specs for a in ("--alg", spec)]
    if sizes:
        args += ["--sizes", ",".join(map(str, sizes))]
    return args + list(workload)


@dataclass
class BenchRun:
    collective: str
    nprocs: int
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def run_bench(build: Build, run: BenchRun, timeout: float | None = None) -> pd.DataFrame:
    """Runs tucoll-bench with CSV output and returns its rows (params kept as strings)."""
    cmd = build.launch(run.nprocs, "tucoll-bench", [run.collective, *run.args, "--format", "csv"])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=build.environment(run.env), timeout=timeout)
    if proc.returncode not in (0, 1):  # 1 = a --check mismatch, reported in the rows
        raise BenchError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    frame = pd.read_csv(io.StringIO(proc.stdout), dtype={"params": str, "ok": str, "path": str}, keep_default_na=False)
    missing = [c for c in CSV_COLUMNS if c not in frame.columns]
    if missing:
        raise BenchError(f"tucoll-bench output lacks columns {missing}:\n{proc.stdout}")
    return frame


def registry(build: Build | None = None) -> dict:
    """The library's registry (every collective, algorithm and parameter) as JSON, from the library
    itself (tucoll_registry_json through ctypes: no launcher, no MPI_Init)."""
    return native.library(build.root if build is not None else None).registry()


def spec(row: pd.Series) -> str:
    """The spec string of a result row: name, or name:params."""
    return f"{row['algorithm']}:{row['params']}" if row["params"] else row["algorithm"]
