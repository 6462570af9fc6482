"""Arguments and defaults several `tucoll` commands share."""

from __future__ import annotations

import argparse
from pathlib import Path

MPI_BUILD = "$TUCOLL_BUILD_DIR or ./build"
SIMGRID_BUILD = "build-sim/ (make sim-build)"
TARGET_BUILD = f"{SIMGRID_BUILD} with --platform, else {MPI_BUILD}"


def rank_list(text: str) -> list[int]:
    """--np of sweep, tune and figure: comma-separated numbers of ranks."""
    return [int(p) for p in text.split(",")]


def with_build(sp: argparse.ArgumentParser, default: str = MPI_BUILD) -> argparse.ArgumentParser:
    sp.add_argument("--build-dir", help=f"CMake build directory (default: {default})")
    return sp


def with_cluster(sp: argparse.ArgumentParser) -> None:
    """Where independent simulations run (tucoll.cluster)."""
    sp.add_argument("--scheduler", help="run the simulations on this Dask scheduler's workers (tcp://host:port; "
                                        "default: local worker processes)")
    sp.add_argument("--workers", type=int, help="local Dask workers, one simulation each (default: one per core)")


def with_target(sp: argparse.ArgumentParser, np_help: str, iters: str, timeout: str) -> None:
    """Where benchmarks run, for sweep_target: a simulated platform or this machine."""
    sp.add_argument("--platform", help="simulate on this platform (uses the SimGrid build); default: this machine")
    sp.add_argument("--np", required=True, type=rank_list, help=np_help)
    sp.add_argument("--ppn", type=int, help="ranks per node (default: the platform's; this machine: all on one node)")
    sp.add_argument("--iters", type=int, default=20, help=iters)
    sp.add_argument("--timeout", type=float, help=timeout)
    sp.add_argument("--force", action="store_true",
                    help="simulate all-at-once algorithms even where it takes hours")
    with_cluster(sp)


def with_datasets(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
    sp.add_argument("datasets", nargs="+", type=Path, help="sweep datasets (tucoll sweep)")
    return sp


def with_model_options(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
    sp.add_argument("--seed", type=int, default=0, help="seed of the split and the models (default 0)")
    return sp
