"""tucoll calibrate: the modelled machines against measurements, and this machine's own model (--here)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tucoll.build import Build
from tucoll.report import console as make_console

from .common import SIMGRID_BUILD, with_build, with_cluster


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
    published = calibrate.seeds()
    if args.validate:  # seed 002's GPU machines: one node's MPI_Alltoall simulates in seconds
        calibrate.run_points(calibrate.gpu_points(published), cache, scheduler=args.scheduler,
                             workers=args.workers, build_dir=args.build_dir, log=console.print)
    gpu = calibrate.gpu_table(published, cache)
    console.print("\n[bold]GPU machines[/bold] (simulated outright; nothing fitted)")
    console.print(gpu[0].to_string(index=False, float_format="%.4g") if len(gpu[0]) else "nothing simulated yet",
                  markup=False, highlight=False)
    if args.write:
        doc = calibrate.write_doc(fits, held, left, validation, gpu)
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
    ca.add_argument("--rounds", type=int,
                    help="--here: times the probe and the measurement alternate (default 5; their medians are "
                         "fitted and held against each other, and their spread is reported)")
    ca.add_argument("--probe", nargs="+", metavar="CSV",
                    help="--here: tucoll-bench machine's CSV from another machine, a file per round (or one with a "
                         "round column), instead of probing")
    ca.add_argument("--measured", nargs="+", metavar="CSV",
                    help="--here with --probe: tucoll-bench alltoallv rows (CSV) measured there, a file per round")
    ca.add_argument("--cores", type=int, help="--here: cores of the machine measured (default: this one's)")
    ca.add_argument("--flavor", default="openmpi", choices=["openmpi", "mpich"],
                    help="--here with --probe and --measured: the MPI measured there")
    ca.set_defaults(func=cmd_calibrate)


def calibrate_here(args: argparse.Namespace, console) -> int:
    """tucoll calibrate --here: fit this machine's mechanisms, write its platform, predict larger P."""
    from tucoll import calibrate

    out = Path(args.out)
    if bool(args.probe) != bool(args.measured):
        console.print("tucoll calibrate --here: --probe and --measured come together (both from the machine measured)")
        return 2
    if args.rounds is not None and (args.rounds < 1 or args.probe):
        console.print("tucoll calibrate --here: --rounds takes a count of 1 or more, and only when this machine is "
                      "probed (with --probe, the files are the rounds)")
        return 2
    if args.probe:  # measured elsewhere (scripts/gpu-check.sh's calibrate stage)
        build = None
        probe = calibrate.read_rounds(args.probe)
        measured = calibrate.read_rounds(args.measured, dtype={"params": str}, keep_default_na=False)
    else:
        build = Build.find(args.mpi_build_dir)
        rounds = args.rounds or calibrate.HERE_ROUNDS
        console.print(f"probing and measuring this machine with {build.mpi_flavor}, {rounds} rounds")
        probe, measured = calibrate.probe_and_measure_here(build, rounds=rounds, log=console.print)
    # Kept first, so that the fit can be made again without measuring (--probe F-probe.csv
    # --measured F-measured.csv), whatever happens after.
    out.parent.mkdir(parents=True, exist_ok=True)
    probe.to_csv(out.with_name(out.stem + "-probe.csv"), index=False)
    measured.to_csv(out.with_name(out.stem + "-measured.csv"), index=False)
    cores = args.cores or os.cpu_count() or 1
    fitted = calibrate.fit_here(probe, cores)
    if fitted.skipped:
        console.print(f"[yellow]rounds {', '.join(map(str, fitted.skipped))} of the probe lack rows (cut short): "
                      "left out of the fit[/yellow]")
    flavor = build.mpi_flavor if build else args.flavor
    fitted.rows().to_csv(out.with_name(out.stem + "-fit.csv"), index=False)  # again below, with the call cost
    # The probe simulated on the platform without the MPI's collective-call cost gives that cost
    # (what its alltoallv takes beyond the simulation) and the pieces' check.
    platform = calibrate.write_here_platform(fitted, flavor, out)
    simulated = calibrate.simulate_probe(platform, args.build_dir)
    simulated_alltoallv = simulated.loc[simulated["test"] == "alltoallv_mpi", "seconds"]
    if fitted.mpi_alltoallv > 0 and simulated_alltoallv.empty:
        console.print("[yellow]the SimGrid build's tucoll-bench machine does not probe the MPI's alltoallv: "
                      "smpi/coll-call-cost left out (`make sim-build`)[/yellow]")
    elif fitted.mpi_alltoallv > 0:
        fitted = fitted.with_coll_call_cost(float(simulated_alltoallv.iloc[0]))
        platform = calibrate.write_here_platform(fitted, flavor, out)
        if fitted.coll_call_cost == 0:
            console.print(f"[yellow]the MPI's alltoallv took {fitted.mpi_alltoallv * 1e9:.0f} ns, less than the "
                          f"{float(simulated_alltoallv.iloc[0]) * 1e9:.0f} ns simulated: its messages cost less than "
                          "the ping-pong's pieces say, and smpi/coll-call-cost is 0[/yellow]")
    console.print(fitted.rows().to_string(index=False), markup=False, highlight=False)
    console.print(f"wrote {platform} and its .xml: `tucoll sim --platform {platform}`")
    pieces = fitted.piece_rows(simulated)
    console.print("\n[bold]point to point, piece by piece: measured, and the probe simulated on the platform[/bold]")
    console.print(pieces.to_string(index=False), markup=False, highlight=False)
    if (pieces["simulated"] == "-").any():
        console.print("[yellow]the SimGrid build's tucoll-bench machine probes fewer sizes than this probe: "
                      "`make sim-build`[/yellow]")
    table = calibrate.here_table(measured, platform, cores, scheduler=args.scheduler, workers=args.workers,
                                 sim_build_dir=args.build_dir, log=console.print)
    console.print(f"\n[bold]alltoallv, uniform: simulated on the fitted platform against measured[/bold] "
                  f"({cores} cores: P above that is oversubscribed, scheduler-bound)")
    console.print(table.to_string(index=False, float_format="%.4g"), markup=False, highlight=False)
    table.to_csv(out.with_name(out.stem + "-prediction.csv"), index=False)
    fitted.rows().to_csv(out.with_name(out.stem + "-fit.csv"), index=False)
    pieces.to_csv(out.with_name(out.stem + "-pieces.csv"), index=False)
    return 0
