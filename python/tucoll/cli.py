"""The `tucoll` command: benchmark runs, the demo, and registry-driven docs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.table import Table

from tucoll import __version__, docs
from tucoll.bench import BenchError, BenchRun, registry, run_bench
from tucoll.build import Build
from tucoll.report import console as make_console
from tucoll.report import print_comparison


def cmd_algorithms(args: argparse.Namespace) -> int:
    reg = registry(Build.find(args.build_dir))
    console = make_console()
    for collective, entry in reg["collectives"].items():
        table = Table(title=f"{collective} (env {entry['env']}, default {entry['default']})", title_justify="left")
        table.add_column("algorithm")
        table.add_column("summary")
        table.add_column("parameters")
        for alg in entry["algorithms"]:
            params = "\n".join(f"{p['name']} in [{p['min']}, {p['max']}] = {p['default']}" for p in alg["params"])
            table.add_row(alg["name"], alg["summary"], params or "-")
        console.print(table)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    build = Build.find(args.build_dir)
    frame = run_bench(build, BenchRun(args.collective, args.np, args.bench_args))
    if args.csv:
        frame.to_csv(args.csv, index=False)
    first = frame.iloc[0]
    print_comparison(frame, f"{args.collective}: P={args.np}, dist={first['dist']}, type={first['type']}, "
                            f"median of the slowest rank over {first['iters']} interleaved iterations")
    return 0 if (frame["ok"] != "0").all() else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from tucoll.demo import run_demo

    return run_demo(Build.find(args.build_dir), nprocs=args.np, sizes=args.sizes, iters=args.iters)


def cmd_docs(args: argparse.Namespace) -> int:
    reg = registry(Build.find(args.build_dir))
    if args.write:
        changed = docs.write(Path(args.write), reg)
        print(f"{args.write}: {'updated' if changed else 'already current'}")
        return 0
    if args.check:
        if docs.is_current(Path(args.check), reg):
            return 0
        print(f"{args.check}: the algorithm table differs from the registry; run `make docs`", file=sys.stderr)
        return 1
    print(docs.algorithm_table(reg), end="")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tucoll", description=__doc__)
    p.add_argument("--version", action="version", version=f"tucoll {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def with_build(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sp.add_argument("--build-dir", help="CMake build directory (default: $TUCOLL_BUILD_DIR or ./build)")
        return sp

    with_build(sub.add_parser("algorithms", help="list the registered algorithms and their parameters")) \
        .set_defaults(func=cmd_algorithms)

    b = with_build(sub.add_parser("bench", help="run tucoll-bench under the MPI launcher and show a comparison",
                                  description="Arguments after the collective go to tucoll-bench unchanged, "
                                              "e.g. `tucoll bench alltoallv -n 4 --dist powerlaw --size 1K`."))
    b.add_argument("collective", help="alltoallv, ...")
    b.add_argument("-n", "--np", type=int, default=4, help="number of ranks (default 4)")
    b.add_argument("--csv", help="also write the rows to this CSV file")
    b.set_defaults(func=cmd_bench)

    d = with_build(sub.add_parser("demo", help="the main job: correctness check and comparison of the algorithms"))
    d.add_argument("-n", "--np", type=int, default=4, help="number of ranks (default 4)")
    d.add_argument("--sizes", default="64,1K,16K", help="largest block sizes S (default 64,1K,16K)")
    d.add_argument("--iters", type=int, default=50, help="timed iterations (default 50)")
    d.set_defaults(func=cmd_demo)

    doc = with_build(sub.add_parser("docs", help="the registry's algorithm table as Markdown"))
    group = doc.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="replace the generated table in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 if FILE's generated table is out of date")
    doc.set_defaults(func=cmd_docs)
    return p


def main(argv: list[str] | None = None) -> int:
    args, rest = parser().parse_known_args(argv)
    if args.command == "bench":
        args.bench_args = rest
    elif rest:
        parser().error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.func(args)
    except (BenchError, FileNotFoundError) as err:
        print(f"tucoll: {err}", file=sys.stderr)
        return 2
