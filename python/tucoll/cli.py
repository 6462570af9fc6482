"""The `tucoll` command: benchmark runs, the demo, and registry-driven docs."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from rich.table import Table

from tucoll import __version__, docs, replay, signals
from tucoll.bench import BenchError, BenchRun, registry, run_bench
from tucoll.build import REPO_ROOT, Build
from tucoll.report import console as make_console
from tucoll.report import print_comparison


# ------------------------------------------------------------------ the arguments, by command

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
                               set(args.np) if args.np else None, args.scheduler, args.workers)
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
    fg.add_argument("--timeout", type=float, help="give up on one simulation after this many seconds")
    fg.add_argument("--np", type=rank_list,
                    help="simulate only the cases at these numbers of ranks (comma-separated), e.g. to split a "
                         "figure over two processes; the figure is drawn from all stored cases")
    with_cluster(fg)
    fg.set_defaults(func=cmd_figure)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from tucoll import calibrate

    console = make_console()
    if args.here:
        return calibrate_here(args, console)
    fits = calibrate.fit()
    console.print("[bold]Mechanisms[/bold] (fitted on data/published/seeds.csv's fit set, or sourced):")
    console.print(calibrate.parameters_table(fits).to_string(index=False), markup=False, highlight=False)
    if args.write:
        for path in calibrate.write_platforms(fits):
            console.print(f"wrote {path.relative_to(calibrate.REPO_ROOT)} and its .xml")
    held, left = calibrate.calibration_table()
    for name in ("fit", "check"):
        console.print(f"\n[bold]{name} set[/bold] (the model at the seeds' P; `how` says closed form or simulated)")
        console.print(held[held["set"] == name].drop(columns=["set"]).to_string(index=False, float_format="%.4g"),
                      markup=False, highlight=False)
    console.print(f"\n{len(left)} rows not held against the model here:")
    console.print(left.groupby(["set", "why"]).size().to_string(), markup=False, highlight=False)
    cache = calibrate.SimCache(calibrate.CACHE)
    if args.validate:
        results = calibrate.run_points(calibrate.validation_points(), cache, scheduler=args.scheduler,
                                       workers=args.workers, build_dir=args.build_dir, log=console.print)
    else:  # what the cache holds, from the current library sources or earlier ones (said per point)
        results = {p: t for p in calibrate.validation_points() if (t := cache.get(p)) is not None}
    validation = calibrate.validation_table(results, cache) if results else None
    if validation is not None:
        console.print("\n[bold]closed forms against simulation[/bold] (simulated)")
        console.print(validation.to_string(index=False, float_format="%.4g"), markup=False, highlight=False)
    if args.write:
        doc = calibrate.write_doc(fits, held, left, validation)
        console.print(f"wrote {doc.relative_to(calibrate.REPO_ROOT)}")
    return 0


def add_calibrate(sub) -> None:
    ca = with_build(sub.add_parser(
        "calibrate", help="hold the modelled machines against the seeds' measurements (data/published/seeds.csv)",
        description="Fits each calibrated platform's mechanism on the seeds' fit set, prints the model against "
                    "the published fit and check sets (closed forms at the seeds' P), and holds the closed forms "
                    "against simulation at the P where both run (the cached simulations; --validate simulates "
                    "again what is missing or was simulated with earlier library sources)."), SIMGRID_BUILD)
    ca.add_argument("--validate", action="store_true",
                    help="simulate the validation points the cache (docs/calibration/simulated.csv) lacks or holds "
                         "from earlier library sources")
    ca.add_argument("--write", action="store_true",
                    help="write the calibrated platforms (sim/platforms/calibrated/) and docs/CALIBRATION.md")
    with_cluster(ca)
    ca.add_argument("--here", action="store_true",
                    help="fit this machine's mechanisms from microbenchmarks with its MPI (tucoll-bench machine), "
                         "write them as a platform file (--out) and predict alltoallv at larger P against measurement")
    ca.add_argument("--out", default="here.json", help="--here: the platform file to write (and its .xml beside it)")
    ca.add_argument("--mpi-build-dir", help="--here: the MPI build to probe and measure with (default build/)")
    ca.add_argument("--probe", help="--here: tucoll-bench machine's CSV from another machine, instead of probing")
    ca.add_argument("--measured", help="--here: tucoll-bench alltoallv rows (CSV) measured there, instead of here")
    ca.add_argument("--cores", type=int, help="--here: cores of the machine measured (default: this one's)")
    ca.add_argument("--flavor", default="openmpi", choices=["openmpi", "mpich"],
                    help="--here with --probe and --measured: the MPI measured there")
    ca.set_defaults(func=cmd_calibrate)


def calibrate_here(args: argparse.Namespace, console) -> int:
    """tucoll calibrate --here: fit this machine's mechanisms, write its platform, predict larger P."""
    import pandas as pd

    from tucoll import calibrate

    out = Path(args.out)
    build = None if args.probe and args.measured else Build.find(args.mpi_build_dir)
    if args.probe:  # measured elsewhere (scripts/gpu-check.sh's calibrate stage)
        probe = pd.read_csv(args.probe)
    else:
        console.print(f"probing this machine with {build.mpi_flavor} (tucoll-bench machine, 2 ranks)")
        probe = calibrate.probe_here(build)
    cores = args.cores or os.cpu_count() or 1
    fitted = calibrate.fit_here(probe, cores)
    console.print(fitted.rows().to_string(index=False), markup=False, highlight=False)
    flavor = build.mpi_flavor if build else args.flavor
    platform = calibrate.write_here_platform(fitted, flavor, out)
    console.print(f"wrote {platform} and its .xml: `tucoll sim --platform {platform}`")
    measured = pd.read_csv(args.measured, dtype={"params": str}, keep_default_na=False) if args.measured \
        else calibrate.measure_here(build, log=console.print)
    table = calibrate.here_table(measured, platform, cores, scheduler=args.scheduler, workers=args.workers,
                                 sim_build_dir=args.build_dir, log=console.print)
    console.print(f"\n[bold]alltoallv, uniform: simulated on the fitted platform against measured[/bold] "
                  f"({cores} cores: P above that is oversubscribed, scheduler-bound)")
    console.print(table.to_string(index=False, float_format="%.4g"), markup=False, highlight=False)
    table.to_csv(out.with_name(out.stem + "-prediction.csv"), index=False)
    probe.to_csv(out.with_name(out.stem + "-probe.csv"), index=False)
    fitted.rows().to_csv(out.with_name(out.stem + "-fit.csv"), index=False)
    return 0


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
                      retry_failed=args.retry_failed)
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
    sw.add_argument("--dry-run", action="store_true", help="count the cells and jobs, run nothing")
    sw.set_defaults(func=cmd_sweep)


def tuning_features(args: argparse.Namespace, data, analysis) -> list[str]:
    if args.features in (None, "table"):
        return analysis.table_features
    if args.features == "selected":
        return analysis.selected
    return args.features.split(",")


def cmd_tune(args: argparse.Namespace) -> int:
    from tucoll import tuning

    console = make_console()
    recording = Path(args.recording)
    patterns, note = replay.selected(replay.load(recording), args.patterns)
    if not patterns:
        raise replay.TuneError(f"{recording}: no alltoallv or alltoall calls were recorded ({note})")
    console.print(f"{recording}: {note}")
    target = sweep_target(args)
    dataset = Path(args.dataset) if args.dataset else recording / f"replay-{target.source}.csv.gz"
    replay.replay(target, dataset, patterns, args.np, args.resize, args.grid, args.alg or [], console)

    base = json.loads(Path(args.base).read_text())
    features = base["features"]
    sharing = tuning.reduction_sharing(args.library_build_dir)
    data = tuning.load([dataset])
    data = data[data["source"] == target.source]
    shapes = [s for s in replay.shapes(data, patterns, args.resize, features, sharing) if s.nprocs in args.np]
    if not shapes:
        raise replay.TuneError(f"{dataset}: no pattern was measured with every candidate")
    table = replay.build_table(base, shapes, recording, features)
    out = Path(args.output) if args.output else recording / "tuned.json"
    tuning.write_table(table, out)

    names = {p.dist(args.resize): p.name for p in patterns}
    rows = replay.report(base, table, shapes, names)
    view = Table(title=f"{target.source}: predicted time per call (µs{', simulated' if args.platform else ''}); "
                       f"recorded patterns resized by {args.resize}")
    for column in ("P", "pattern", "calls", "vendor", "auto, base table", "auto, tuned table", "best measured",
                   "tuned vs vendor", "tuned vs base"):
        view.add_column(column, overflow="fold",
                        justify="left" if column == "pattern" or "auto" in column or "best" in column else "right")
    for r in rows.itertuples():
        view.add_row(str(r.nprocs), r.pattern, str(r.calls), f"{r.vendor_us:.1f}", f"{r.base_us:.1f} {r.base_spec}",
                     f"{r.tuned_us:.1f} {r.tuned_spec}", f"{r.best_us:.1f} {r.best_spec}",
                     f"{r.vendor_us / r.tuned_us:.2f}x", f"{r.base_us / r.tuned_us:.2f}x")
    console.print(view)
    for w in replay.weighted(rows).itertuples():
        console.print(f"P={w.nprocs}, the {w.calls} recorded calls: vendor {w.vendor:.3f} ms, auto with the base "
                      f"table {w.base:.3f} ms, with the tuned table {w.tuned:.3f} ms (best measured {w.best:.3f} ms): "
                      f"{w.vendor / w.tuned:.2f}x over the vendor, {w.base / w.tuned:.2f}x over the base table")
    if args.report:
        rows.to_csv(args.report, index=False)
    console.print(f"{out}: {len(shapes)} tuned entries ({', '.join(f'P={s.nprocs}' for s in shapes)}) and "
                  f"{len(table['entries']) - len(shapes)} from {args.base}; use it with TUCOLL_TUNING_FILE={out}")
    return 0


def add_tune(sub) -> None:
    tn = with_build(sub.add_parser(
        "tune", help="replay a recorded run (TUCOLL_RECORD) with every candidate and write a table for it",
        description="Reads a recording (a folder written by TUCOLL_RECORD=DIR, or one communicator's folder in "
                    "it), replays its most called alltoallv/alltoall patterns with every candidate algorithm at "
                    "each --np -- simulated with --platform, else here with mpirun -- into a resumable dataset, "
                    "and writes a tuning table: the fastest measured spec per pattern as rules on the base table's "
                    "features (one spec where choosing costs more than it saves), the base table's entries "
                    "elsewhere. Prints the predicted time per call of the vendor, of auto with the base table "
                    "and with the tuned one, per pattern and weighted by the recorded calls."), TARGET_BUILD)
    tn.add_argument("recording", help="the TUCOLL_RECORD folder (or one communicator's folder in it)")
    with_target(tn, "comma-separated numbers of ranks to replay at, e.g. 256,1024",
                iters="timed iterations here (default 20; a simulation times one)",
                timeout="give up on one replay job after this many seconds")
    tn.add_argument("--resize", choices=replay.RESIZE_RULES, default=replay.RESIZE_RULES[0],
                    help="how an n-rank alltoallv pattern becomes a P-rank one (tucoll-bench --help, --dist file:): "
                         "stretch gives each original rank P/n ranks that each send what it sent, split over the "
                         "ranks of each destination group (weak scaling, locality kept); tile repeats the matrix, "
                         "block sizes kept (each rank sends P/n times as much). alltoall patterns are always tiled "
                         "(default stretch)")
    tn.add_argument("--patterns", type=int, default=4,
                    help="replay the N most called patterns, ties broken by bytes (default 4; 0: every one, the "
                         "whole recording)")
    tn.add_argument("--grid", choices=["paper", "coarse"], default="coarse",
                    help="candidates' parameter grid, as tucoll sweep (default coarse)")
    tn.add_argument("--alg", action="append", help="restrict the candidates to these names or specs (repeatable)")
    tn.add_argument("--base", default=str(replay.DEFAULT_BASE),
                    help="the table to start from and compare with (default: the shipped tuning/default.json)")
    tn.add_argument("--dataset", help="where the replay's measurements go (default RECORDING/replay-WHERE.csv.gz)")
    tn.add_argument("-o", "--output", help="the tuned table (default RECORDING/tuned.json)")
    tn.add_argument("--report", help="also write the per-pattern comparison as CSV here")
    tn.add_argument("--library-build-dir",
                    help=f"build whose libtucoll says which specs share auto's reduction (default: {MPI_BUILD})")
    tn.set_defaults(func=cmd_tune)


def cmd_analyze(args: argparse.Namespace) -> int:
    from tucoll import tuning

    data = tuning.load(args.datasets)
    analysis = tuning.analyze(data)
    png = tuning.plot_correlation(analysis, Path(args.out) / "correlation.png")
    if args.json:
        print(json.dumps({"ranking": analysis.ranking.round(4).to_dict(orient="records"),
                          "selected": analysis.selected, "table_features": analysis.table_features,
                          "reason": analysis.reason, "heatmap": str(png)}, indent=1))
        return 0
    console = make_console()
    table = Table(title=f"Block-size statistics against time: {len(data)} rows, {data['config'].nunique()} workloads "
                        "(Spearman rho within machine, P and algorithm)", title_justify="left")
    for column in ("statistic", "rho", "|rho|", "one allreduce", "selected"):
        table.add_column(column)
    for row in analysis.ranking.itertuples():
        table.add_row(row.statistic, f"{row.rho:+.3f}", f"{row.abs_rho:.3f}", "yes" if row.runtime else "-",
                      "yes" if row.statistic in analysis.selected else "-")
    console.print(table)
    console.print(f"Features for models: {', '.join(analysis.selected)} (each less than 0.95 correlated with the "
                  f"ones above it).\nTable features: {', '.join(analysis.table_features)}: {analysis.reason}.\n"
                  f"Heat map: {png}")
    return 0


def add_analyze(sub) -> None:
    an = with_datasets(sub.add_parser(
        "analyze", help="sensitivity analysis: block-size statistics against time",
        description="Spearman correlations of the workload's block-size statistics with time, within each (machine, P, "
                    "algorithm) group; a heat map, a ranked list, the non-redundant features models use and the "
                    "features tuning tables are keyed by (of those every rank can compute from one allreduce: the best "
                    "and the best one not redundant with it)."))
    an.add_argument("--out", default=str(REPO_ROOT / "docs" / "tuning"), help="where correlation.png goes")
    an.add_argument("--json", action="store_true", help="print the analysis as JSON")
    an.set_defaults(func=cmd_analyze)


def print_fit(fit, console) -> None:
    table = Table(title=f"Models of log(time) from {', '.join(fit.features)} + P, Q, algorithm: "
                        f"{len(fit.data)} rows, {fit.data['config'].nunique()} workloads, 70/10/20 split by workload",
                  title_justify="left")
    for column in ("model", "hyper-parameters (validation)", "MAPE test %", "regret geomean", "regret p95",
                   "regret max", "test rows", "test workloads"):
        table.add_column(column)
    for name, r in fit.results.items():
        table.add_row(name + (" (chosen)" if name == fit.chosen else ""), r.params, f"{r.mape_test:.2f}",
                      f"{r.regret_geomean:.4f}", f"{r.regret_p95:.4f}", f"{r.regret_max:.3f}", str(r.n_test),
                      str(r.n_test_configs))
    console.print(table)


def cmd_fit(args: argparse.Namespace) -> int:
    from tucoll import tuning

    data = tuning.load(args.datasets)
    features = tuning_features(args, data, tuning.analyze(data))
    console = make_console()
    log = None if args.json else (lambda text: console.print(text))
    fit = tuning.fit(data, features, seed=args.seed, families=args.model, progress=log)
    if args.json:
        print(json.dumps(fit.summary(), indent=1))
    else:
        print_fit(fit, console)
    return 0


def add_fit(sub) -> None:
    ft = with_model_options(with_datasets(sub.add_parser(
        "fit", help="fit linear, lasso, ridge, tree, forest and boosting models; MAPE and regret on a test split",
        description="Predicts log(time) from P, ranks per node, block-size features and the algorithm with its "
                    "parameters. 70/10/20 train/validation/test split by workload; hyper-parameters chosen on "
                    "validation MAPE; reported on test: MAPE and the regret of choosing the spec each model predicts "
                    "fastest, t(chosen)/t(best).")))
    ft.add_argument("--features", help="`table` (default: the analysis's table features alone, which is what a "
                                       "table can use), `selected` (every non-redundant statistic), or a list")
    ft.add_argument("--model", action="append", help="only these families (linear, lasso, ridge, tree, forest, "
                                                     "boosting; repeatable)")
    ft.add_argument("--json", action="store_true", help="print mape_test, regret_geomean, regret_p95 and n_test "
                                                        "per model as JSON")
    ft.set_defaults(func=cmd_fit)


def cmd_table(args: argparse.Namespace) -> int:
    from tucoll import tuning

    console = make_console()
    data = tuning.load(args.datasets)
    features = args.features.split(",") if args.features else tuning.analyze(data).table_features
    sharing = tuning.reduction_sharing(args.build_dir)
    fits = {}
    for source, part in data.groupby("source"):
        console.print(f"[bold]{source}[/bold]: fitting {len(part)} rows ({part['config'].nunique()} workloads)")
        fits[source] = tuning.fit(part.reset_index(drop=True), features, seed=args.seed, sharing=sharing)
        print_fit(fits[source], console)
        held_out = tuning.build_table({source: fits[source]}, features, refit=False, sharing=sharing)
        test = fits[source].data[fits[source].masks["test"]]
        r = tuning.table_regret(held_out, test, sharing)
        console.print(f"{source}: the table from the {fits[source].chosen} model fitted on the training split, on the "
                      f"{len(r)} test workloads: regret geomean {tuning.geomean(r):.4f}, p95 "
                      f"{np.percentile(r, 95):.4f}, max {r.max():.3f}")
    provenance = {"by": "tucoll table", "datasets": [str(p) for p in args.datasets],
                  "models": {s: f.chosen for s, f in fits.items()}, "seed": args.seed}
    table = tuning.build_table(fits, features, fallback=args.fallback, provenance=provenance, sharing=sharing)
    for path in args.merge or []:
        added = tuning.merge_online(table, json.loads(Path(path).read_text()), str(path))
        provenance.setdefault("merged", []).append(str(path))
        console.print(f"{path}: {added} online entries added (shapes the sweeps do not cover)")
    tuning.write_table(table, Path(args.output))
    r = tuning.table_regret(table, data, sharing)
    console.print(f"{args.output}: {len(table['entries'])} entries keyed by {', '.join(features)}; on all {len(r)} "
                  f"workloads of "
                  f"the dataset (in sample): regret geomean {tuning.geomean(r):.4f}, p95 {np.percentile(r, 95):.4f}")
    return 0


def add_table(sub) -> None:
    tb = with_build(with_model_options(with_datasets(sub.add_parser(
        "table", help="write the lookup table the library's `auto` alltoallv reads",
        description="Fits the models per source (machine) in the datasets on the runtime features, and writes a "
                    "table with one entry per (source, P, ranks per node): the spec the chosen model predicts fastest "
                    "over a grid of the features, counting for specs that cannot take auto's allreduce in place of "
                    "their own reduction an estimate of it (the build's registry says which can). Format: "
                    "docs/TUNING.md."))))
    tb.add_argument("-o", "--output", required=True, help="the JSON table to write (e.g. tuning/default.json)")
    tb.add_argument("--features", help="key the table by these (one or two of busiest_mean_block, max_block, "
                                       "mean_block, comma-separated; default: the analysis's choice)")
    tb.add_argument("--fallback", default="vendor", help="spec run where the table's choice is invalid (default vendor)")
    tb.add_argument("--merge", action="append", metavar="FILE",
                    help="a table saved by online tuning (TUCOLL_TUNING_SAVE); its entries join for the shapes the "
                         "datasets do not cover (repeatable)")
    tb.set_defaults(func=cmd_table)


def cmd_report(args: argparse.Namespace) -> int:
    from tucoll.tuning_report import write_report

    from tucoll import tuning

    sharing = tuning.reduction_sharing(args.build_dir)
    report = write_report(args.datasets, Path(args.out), Path(args.table) if args.table else None, seed=args.seed,
                          sharing=sharing)
    print(f"{report}: written with its figures")
    return 0


def add_report(sub) -> None:
    rp = with_build(with_model_options(with_datasets(sub.add_parser(
        "report", help="one page (Markdown + PNGs) on a sweep, its analysis, the models, their regret and the table"))))
    rp.add_argument("--out", default=str(REPO_ROOT / "docs" / "tuning"), help="directory for REPORT.md and its PNGs")
    rp.add_argument("--table", help="a tuning table to show and measure (e.g. tuning/default.json)")
    rp.set_defaults(func=cmd_report)


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


def add_docs(sub) -> None:
    doc = with_build(sub.add_parser("docs", help="the registry's algorithm table as Markdown"))
    group = doc.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="replace the generated table in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 if FILE's generated table is out of date")
    doc.set_defaults(func=cmd_docs)


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
