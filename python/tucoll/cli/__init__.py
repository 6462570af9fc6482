"""The `tucoll` command: benchmark runs, the demo, and registry-driven docs."""

from __future__ import annotations

import argparse
import subprocess
import sys

from tucoll import __version__, signals
from tucoll.bench import BenchError

from .autotuning import add_analyze, add_fit, add_report, add_table, add_tune
from .calibration import add_calibrate
from .docgen import add_docs
from .runs import add_algorithms, add_bench, add_demo
from .simulation import add_figure, add_sim, add_sweep


# `tucoll --help` lists the commands in this order.
COMMANDS = (add_algorithms, add_bench, add_demo, add_calibrate, add_sim, add_figure, add_sweep, add_tune, add_analyze,
            add_fit, add_table, add_report, add_docs)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tucoll", description=__doc__)
    p.add_argument("--version", action="version", version=f"tucoll {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    signals.install()
    args, rest = parser().parse_known_args(argv)
    if args.command in ("bench", "sim"):
        args.bench_args = rest
    elif rest:
        parser().error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.func(args)
    except (BenchError, FileNotFoundError, RuntimeError, ValueError) as err:
        print(f"tucoll: {err}", file=sys.stderr)
        return 2
    except subprocess.TimeoutExpired as err:
        print(f"tucoll: gave up after {err.timeout:.0f} s of wall time (--timeout)", file=sys.stderr)
        return 124
