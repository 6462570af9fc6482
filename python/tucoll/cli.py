"""The `tucoll` command: benchmark runs, the demo, and registry-driven docs."""

from __future__ import annotations

import argparse
import subprocess
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


def cmd_sim(args: argparse.Namespace) -> int:
    from tucoll import sim

    bench_args = [a for a in args.bench_args if a != "--"]
    platform = sim.Platform.load(args.platform)
    run = sim.SimRun(platform, args.np, args.ppn or platform.ranks_per_node, args.mapping,
                     args.vendor or platform.vendor, bench_args, shared_buffers=args.shared_buffers,
                     check=not (args.no_check or args.shared_buffers), all_iterations=args.all_iterations)
    proc = sim.simulate(sim.sim_build(args.build_dir), run, force=args.force, timeout=args.timeout)
    print(f"# {run.label()}")
    print(sim.relabel_mapping(proc.stdout, args.mapping), end="")
    if proc.returncode != 0:
        print(proc.stderr, end="", file=sys.stderr)
    return proc.returncode


def cmd_figure(args: argparse.Namespace) -> int:
    from tucoll import figures, sim

    console = make_console()
    build = sim.sim_build(args.build_dir)
    registry = sim.registry(build)
    if args.names == ["list"]:
        for fig in figures.FIGURES.values():
            cases = fig.cases(registry)
            console.print(f"[bold]{fig.name}[/bold]: {fig.title} ({len(cases)} simulations)")
        return 0
    names = list(figures.FIGURES) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in figures.FIGURES]
    if unknown:
        raise sim.SimError(f"unknown figure(s) {', '.join(unknown)}; known: {', '.join(figures.FIGURES)}")
    for name in names:
        fig = figures.FIGURES[name]
        if not args.plot_only:
            # Plain flushed lines: progress must show when the output goes to a log file.
            figures.run_figure(build, fig, args.timeout, lambda text: print(text, flush=True))
        out, summary = figures.render(fig, registry)
        console.print(f"[bold]{fig.title}[/bold] -> {out.relative_to(sim.REPO_ROOT)} (simulated times)")
        console.print(summary, markup=False, highlight=False)
    return 0


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

    sm = with_build(sub.add_parser(
        "sim", help="run tucoll-bench on a SimGrid-modelled cluster (times are simulated)",
        description="Everything after -- goes to tucoll-bench, e.g. `tucoll sim --platform polaris-like --np 256 -- "
                    "alltoallv --alg vendor --alg tuna:radix=2 --size 16`. Uses the SimGrid build "
                    "(make sim-build; default build-sim/). Results are checked against the vendor MPI unless "
                    "--no-check or --shared-buffers."))
    sm.add_argument("--platform", required=True, help="polaris-like, fugaku-like, yahoo-like, cervino-like, quartz-like")
    sm.add_argument("--np", type=int, required=True, help="simulated ranks")
    sm.add_argument("--ppn", type=int, help="ranks per node (default: the platform's); the nodes are the regions "
                                            "node-aware algorithms see")
    sm.add_argument("--mapping", choices=["sequential", "cyclic"], default="sequential",
                    help="ranks fill nodes in turn (sequential) or go round-robin over them (cyclic)")
    sm.add_argument("--vendor", choices=["ompi", "mpich"], help="whose collective selection the vendor baseline "
                                                                "follows (default: the platform's)")
    sm.add_argument("--no-check", action="store_true", help="do not compare results with the vendor's")
    sm.add_argument("--shared-buffers", action="store_true",
                    help="SMPI shared allocations for data (fits thousands of ranks in memory; no check)")
    sm.add_argument("--all-iterations", action="store_true",
                    help="simulate the bench's --iters as given (default: one timed iteration, since a simulation "
                         "is deterministic and further iterations repeat the first; no warmup unless the bench "
                         "arguments give --warmup)")
    sm.add_argument("--force", action="store_true", help="run even when the flow estimate says it takes hours")
    sm.add_argument("--timeout", type=float, help="give up after this many seconds of wall time")
    sm.set_defaults(func=cmd_sim)

    fg = with_build(sub.add_parser(
        "figure", help="reproduce the papers' scaling figures by simulation (docs/RESULTS.md)",
        description="Simulates what docs/figures/data/simulated.csv lacks for each named figure (resumable), "
                    "then writes docs/figures/NAME.png and prints a summary. Uses the SimGrid build."))
    fg.add_argument("names", nargs="+", help="figure names, `all`, or `list`")
    fg.add_argument("--plot-only", action="store_true", help="plot from the stored results, simulate nothing")
    fg.add_argument("--timeout", type=float, help="give up on one simulation after this many seconds")
    fg.set_defaults(func=cmd_figure)

    doc = with_build(sub.add_parser("docs", help="the registry's algorithm table as Markdown"))
    group = doc.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="replace the generated table in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 if FILE's generated table is out of date")
    doc.set_defaults(func=cmd_docs)
    return p


def main(argv: list[str] | None = None) -> int:
    args, rest = parser().parse_known_args(argv)
    if args.command in ("bench", "sim"):
        args.bench_args = rest
    elif rest:
        parser().error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.func(args)
    except (BenchError, FileNotFoundError, RuntimeError) as err:
        print(f"tucoll: {err}", file=sys.stderr)
        return 2
    except subprocess.TimeoutExpired as err:
        print(f"tucoll: gave up after {err.timeout:.0f} s of wall time (--timeout)", file=sys.stderr)
        return 124
