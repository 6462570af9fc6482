"""tucoll algorithms, bench and demo: runs with the MPI build."""

from __future__ import annotations

import argparse

from rich.table import Table

from tucoll.bench import BenchRun, registry, run_bench
from tucoll.build import Build
from tucoll.report import console as make_console
from tucoll.report import print_comparison

from .common import with_build


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


def add_algorithms(sub) -> None:
    with_build(sub.add_parser("algorithms", help="list the registered algorithms and their parameters")) \
        .set_defaults(func=cmd_algorithms)


def cmd_bench(args: argparse.Namespace) -> int:
    build = Build.find(args.build_dir)
    frame = run_bench(build, BenchRun(args.collective, args.np, args.bench_args))
    if args.csv:
        frame.to_csv(args.csv, index=False)
    first = frame.iloc[0]
    print_comparison(frame, f"{args.collective}: P={args.np}, dist={first['dist']}, type={first['type']}, "
                            f"median of the slowest rank over {first['iters']} interleaved iterations")
    return 0 if (frame["ok"] != "0").all() else 1


def add_bench(sub) -> None:
    b = with_build(sub.add_parser("bench", help="run tucoll-bench under the MPI launcher and show a comparison",
                                  description="Arguments after the collective go to tucoll-bench unchanged, "
                                              "e.g. `tucoll bench alltoallv -n 4 --dist powerlaw --size 1K`."))
    b.add_argument("collective", help="alltoallv, ...")
    b.add_argument("-n", "--np", type=int, default=4, help="number of ranks (default 4)")
    b.add_argument("--csv", help="also write the rows to this CSV file")
    b.set_defaults(func=cmd_bench)


def cmd_demo(args: argparse.Namespace) -> int:
    from tucoll import sim
    from tucoll.demo import run_demo

    try:
        sim_build = sim.sim_build(args.sim_build_dir)
    except FileNotFoundError:
        sim_build = None
    return run_demo(Build.find(args.build_dir), nprocs=args.np, sizes=args.sizes, iters=args.iters,
                    sim_build=sim_build)


def add_demo(sub) -> None:
    d = with_build(sub.add_parser("demo", help="the main job: correctness, a comparison here and on a simulated cluster, "
                                               "an application"))
    d.add_argument("-n", "--np", type=int, default=4, help="number of ranks (default 4)")
    d.add_argument("--sizes", default="64,1K,16K", help="largest block sizes S (default 64,1K,16K)")
    d.add_argument("--iters", type=int, default=50, help="timed iterations (default 50)")
    d.add_argument("--sim-build-dir", help="SimGrid build for the simulated comparison (default build-sim/; skipped "
                                           "when absent)")
    d.set_defaults(func=cmd_demo)
