"""tucoll sim, figure and sweep: simulated clusters, the papers' figures, benchmark sweeps."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tucoll.build import Build
from tucoll.report import console as make_console

from .common import SIMGRID_BUILD, TARGET_BUILD, rank_list, with_build, with_cluster, with_target


def cmd_sim(args: argparse.Namespace) -> int:
    from tucoll import sim

    bench_args = [a for a in args.bench_args if a != "--"]
    platform = sim.Platform.load(args.platform)
    run = sim.SimRun(platform, args.np, args.ppn or platform.ranks_per_node, args.mapping,
                     args.vendor or platform.vendor, bench_args, shared_buffers=args.shared_buffers,
                     check=not (args.no_check or args.shared_buffers), all_iterations=args.all_iterations,
                     program=args.program)
    build = sim.sim_build(args.build_dir)
    if stale := sim.stale_table(build):
        print(f"warning: auto, where it runs, reads the build's table: {stale}", file=sys.stderr)
    proc = sim.simulate(build, run, force=args.force, timeout=args.timeout)
    print(f"# {run.label()}")
    print(sim.relabel_mapping(proc.stdout, args.mapping), end="")
    if proc.returncode != 0:
        print(proc.stderr, end="", file=sys.stderr)
    else:  # the library's own log (TUCOLL_VERBOSE), without the simulator's
        for line in proc.stderr.splitlines():
            if line.startswith("[tucoll]"):
                print(line, file=sys.stderr)
    return proc.returncode


def add_sim(sub) -> None:
    from tucoll import sim

    sm = with_build(sub.add_parser(
        "sim", help="run tucoll-bench on a SimGrid-modelled cluster (times are simulated)",
        description="Everything after -- goes to tucoll-bench, e.g. `tucoll sim --platform polaris-like --np 256 -- "
                    "alltoallv --alg vendor --alg tuna:radix=2 --size 16`. Uses the SimGrid build "
                    "(make sim-build; default build-sim/). Results are checked against the vendor MPI unless "
                    "--no-check or --shared-buffers."), SIMGRID_BUILD)
    sm.add_argument("--platform", required=True,
                    help=f"one of sim/platforms/platforms.json: {', '.join(sim.platform_names())}; or a "
                         "platform's own .json file (one entry of that form)")
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
    sm.add_argument("--program", default="tucoll-bench",
                    help="a program of the SimGrid build to run instead of tucoll-bench, e.g. transitive_closure "
                         "(its arguments after --, passed as they are)")
    sm.add_argument("--force", action="store_true", help="run even when the flow estimate says it takes hours")
    sm.add_argument("--timeout", type=float, help="give up after this many seconds of wall time")
    sm.set_defaults(func=cmd_sim)


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
            figures.run_figure(build, fig, args.timeout, lambda text: print(text, flush=True),
                               set(args.np) if args.np else None, args.scheduler, args.workers, args.refresh)
        out, summary = figures.render(fig, registry)
        console.print(f"[bold]{fig.title}[/bold] -> {out.relative_to(sim.REPO_ROOT)} (simulated times)")
        console.print(summary, markup=False, highlight=False)
    return 0


def add_figure(sub) -> None:
    fg = with_build(sub.add_parser(
        "figure", help="reproduce the papers' scaling figures by simulation (docs/RESULTS.md)",
        description="Simulates what docs/figures/data/simulated.csv lacks for each named figure (resumable), "
                    "then writes docs/figures/NAME.png and prints a summary. Uses the SimGrid build."), SIMGRID_BUILD)
    fg.add_argument("names", nargs="+", help="figure names, `all`, or `list`")
    fg.add_argument("--plot-only", action="store_true", help="plot from the stored results, simulate nothing")
    fg.add_argument("--refresh", action="store_true",
                    help="also simulate again what the store holds from earlier library sources (src/, include/); "
                         "without it those rows are plotted and counted in the summary")
    fg.add_argument("--timeout", type=float, help="give up on one simulation after this many seconds")
    fg.add_argument("--np", type=rank_list,
                    help="simulate only the cases at these numbers of ranks (comma-separated), e.g. to split a "
                         "figure over two processes; the figure is drawn from all stored cases")
    with_cluster(fg)
    fg.set_defaults(func=cmd_figure)


def sweep_target(args: argparse.Namespace):
    """Where `tucoll sweep` and `tucoll tune` run their benchmarks (options of with_target)."""
    from tucoll import sim, sweep

    if args.platform:
        target = sweep.Target(sim.sim_build(args.build_dir), sim.Platform.load(args.platform))
    else:
        target = sweep.Target(Build.find(args.build_dir))
    target.ppn, target.iters, target.timeout, target.force = args.ppn, args.iters, args.timeout, args.force
    target.scheduler, target.workers = args.scheduler, args.workers
    return target


def cmd_sweep(args: argparse.Namespace) -> int:
    from tucoll import sim, sweep

    target = sweep_target(args)
    target.mapping = args.mapping
    target.max_flows = args.max_flows or sim.MAX_CONCURRENT_FLOWS
    job = sweep.Sweep(Path(args.dataset), target, args.np, args.dist.split(";"),
                      sweep.parse_sizes(args.sizes), grid=args.grid, only=args.alg or [],
                      sizes_per_run=args.sizes_per_run, specs_per_run=args.specs_per_run,
                      retry_failed=args.retry_failed, refresh=args.refresh)
    added = sweep.run_sweep(job, make_console(), dry_run=args.dry_run)
    print(f"{args.dataset}: {added} rows added")
    return 0


def add_sweep(sub) -> None:
    sw = with_build(sub.add_parser(
        "sweep", help="benchmark every alltoallv algorithm and parameter over P, sizes and distributions",
        description="Runs tucoll-bench over a grid (P x max block size S x distribution x every registered alltoallv "
                    "algorithm with its parameter grid) on this machine (mpirun) or, with --platform, on a simulated "
                    "one, appending one row per measurement to DATASET (.csv or .csv.gz; resumable: cells already "
                    "there are skipped). Rows carry the workload's block-size statistics for `tucoll analyze`."),
        TARGET_BUILD)
    sw.add_argument("dataset", help="CSV file the rows are appended to (.csv.gz compresses)")
    with_target(sw, "comma-separated numbers of ranks, e.g. 64,128,256",
                iters="timed iterations per cell on this machine (default 20; a simulation times one)",
                timeout="give up on one job after this many seconds (cells recorded as failed)")
    sw.add_argument("--mapping", choices=["sequential", "cyclic"], default="sequential")
    sw.add_argument("--dist", default="uniform;normal;powerlaw",
                    help="semicolon-separated tucoll-bench distributions (default uniform;normal;powerlaw; "
                         "file:PATH:scale=F patterns too)")
    sw.add_argument("--sizes", default="paper",
                    help="max block sizes S: `paper` (seed 003's 31 levels, 2 B .. 64 KiB) or a list such as 16,1K,64K")
    sw.add_argument("--grid", choices=["paper", "coarse"], default="paper",
                    help="parameter grid: paper = radix 2, 4, ..., P with fine steps around 2, sqrt(P) and P, "
                         "block_count 1, 2, 4, ... and 0 (all); coarse = a few values of each")
    sw.add_argument("--alg", action="append",
                    help="restrict to these algorithm names (their whole grid) or exact specs (repeatable)")
    sw.add_argument("--sizes-per-run", type=int, default=4, help="sizes per tucoll-bench job (default 4)")
    sw.add_argument("--specs-per-run", type=int, default=0,
                    help="simulation: specs per tucoll-bench job (default 0: all of a cell's in one); a simulated time "
                         "does not depend on the rest of the job, so a stopped sweep keeps the jobs that finished")
    sw.add_argument("--max-flows", type=int,
                    help="simulation: leave out specs that keep more point-to-point flows in flight at once (default "
                         "300000, as tucoll sim; thousands of concurrent flows already make a simulation slow)")
    sw.add_argument("--retry-failed", action="store_true", help="run cells again whose earlier run failed")
    sw.add_argument("--refresh", action="store_true",
                    help="run cells again whose stored row came from earlier library sources (src/, include/) or "
                         "from before rows kept them; the new row supersedes the old, which stays in the file")
    sw.add_argument("--dry-run", action="store_true", help="count the cells and jobs, run nothing")
    sw.set_defaults(func=cmd_sweep)

