"""`make demo`: the project in a few minutes — every alltoallv algorithm checked against the vendor
MPI and compared on this machine, the same comparison on a simulated cluster, and a real
application, with a summary table and a figure."""

from __future__ import annotations

import io
import subprocess
import time

import pandas as pd
from rich.table import Table

from tucoll.bench import BenchRun, arguments, run_bench
from tucoll.build import MATRIX_DIR, Build
from tucoll.report import console as make_console
from tucoll.report import print_comparison, with_speedup
from tucoll.sizes import text as human_bytes

SIMULATED_NPROCS = 128
# A simulation of all-at-once traffic costs minutes where the round-based schedules cost seconds:
# the simulated tour takes the registry's algorithms (at their defaults) that keep at most this
# many flows per rank in flight, and the vendor's.
SIMULATED_FLOWS_PER_RANK = 8


def simulated_specs(nprocs: int, ppn: int) -> list[str]:
    """Every alltoallv algorithm of the registry at its defaults, but those with more than
    SIMULATED_FLOWS_PER_RANK flows per rank in flight at this shape."""
    from tucoll import native

    lib = native.library()
    specs = []
    for alg in lib.registry()["collectives"]["alltoallv"]["algorithms"]:
        flows = lib.spec_properties("alltoallv", alg["name"], nprocs, ppn).concurrent_flows
        if flows <= SIMULATED_FLOWS_PER_RANK * nprocs:
            specs.append(alg["name"])
    return specs
GRAPH = MATRIX_DIR / "dwt_162.mtx"


def local_comparison(build: Build, console, nprocs: int, sizes: str, iters: int, out_dir) -> pd.DataFrame:
    console.rule("[bold]1. Correctness and comparison on this machine")
    console.print(f"{nprocs} ranks on this machine ({build.mpi_flavor}), block sizes uniform in [0, S]. Every algorithm's "
                  "result is checked against the vendor MPI_Alltoallv (ok = 1). Times are real but come from ranks "
                  "sharing few cores: compare ratios, not absolute values.")
    frame = run_bench(build, BenchRun("alltoallv", nprocs, arguments((), [sizes]) + ["--iters", str(iters), "--check"]))
    frame.to_csv(out_dir / "alltoallv.csv", index=False)
    print_comparison(frame, f"alltoallv, P={nprocs}: median of the slowest rank over {iters} interleaved iterations "
                            "(fastest per size in green; auto shows what it chose)", console)
    return frame


def simulated_comparison(sim_build: Build | None, console, sizes: str, out_dir) -> pd.DataFrame | None:
    from tucoll import sim

    console.rule("[bold]2. The same comparison on a simulated cluster")
    if sim_build is None:
        console.print("[yellow]No SimGrid build (make sim-build): skipped.")
        return None
    platform = sim.Platform.load("polaris-like")
    specs = simulated_specs(SIMULATED_NPROCS, platform.ranks_per_node)
    args = ["alltoallv", *arguments(specs, [sizes]), "--format", "csv"]
    run = sim.SimRun(platform, SIMULATED_NPROCS, platform.ranks_per_node, "sequential", platform.vendor, args,
                     shared_buffers=False, check=True)
    started = time.monotonic()
    proc = sim.simulate(sim_build, run)
    frame = pd.read_csv(io.StringIO(proc.stdout), dtype={"params": str, "ok": str, "path": str},
                        keep_default_na=False)
    frame.to_csv(out_dir / "alltoallv-simulated.csv", index=False)
    print_comparison(frame, f"alltoallv, P={SIMULATED_NPROCS} on {platform.name} ({platform.summary}): SIMULATED times, checked "
                            f"against the vendor ({time.monotonic() - started:.0f} s of simulation)", console)
    return frame


def application(build: Build, console, nprocs: int, out_dir) -> pd.DataFrame | None:
    console.rule("[bold]3. An application: transitive closure of a graph")
    if not GRAPH.is_file():  # it ships in data/: missing means a broken checkout, not an optional part
        console.print(f"[bold red]{GRAPH} not present: the checkout is incomplete (see data/README.md).")
        return None
    specs = ["vendor", "tuna:radix=2", "tuna_coalesced:radix=2,block_count=0", "auto"]
    cmd = build.launch(nprocs, "transitive_closure", [str(GRAPH), *[a for s in specs for a in ("--alg", s)],
                                                      "--repeat", "3", "--check", "--format", "csv"])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=build.environment(), timeout=600)
    if proc.returncode != 0:
        console.print(f"[bold red]transitive_closure failed:\n{proc.stdout}\n{proc.stderr}")
        return None
    frame = pd.read_csv(io.StringIO(proc.stdout), keep_default_na=False)
    frame.to_csv(out_dir / "transitive_closure.csv", index=False)
    table = Table(title=f"transitive closure of {GRAPH.name} ({frame['vertices'][0]} vertices), P={nprocs}, "
                        "median of 3 runs, verified against a serial closure", title_justify="left")
    for column in ("alltoallv", "ran", "iterations", "paths", "total s", "alltoallv s", "ok"):
        table.add_column(column)
    for row in frame.itertuples():
        table.add_row(row.algorithm, row.chosen, str(row.iterations), str(row.paths), f"{row.total_s:.4f}",
                      f"{row.comm_s:.4f}", str(row.ok))
    console.print(table)
    return frame


def summary_figure(local: pd.DataFrame, simulated: pd.DataFrame | None, out) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("this machine (measured)", local)] + ([(f"polaris-like P={SIMULATED_NPROCS} (simulated)", simulated)]
                                                     if simulated is not None else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4), squeeze=False)
    for ax, (title, frame) in zip(axes[0], panels):
        frame = with_speedup(frame)
        frame["spec"] = [a if not p else f"{a}:{p}" for a, p in zip(frame["algorithm"], frame["params"])]
        pivot = frame.pivot_table(index="spec", columns="size", values="speedup", sort=False)
        pivot.plot.barh(ax=ax, width=0.8)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set(xscale="log", xlabel="speed-up over the vendor's MPI_Alltoallv", ylabel="", title=title)
        ax.legend(ax.containers, [f"S = {human_bytes(int(s))}" for s in pivot.columns], fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def run_demo(build: Build, nprocs: int = 4, sizes: str = "64,1K,16K", iters: int = 50,
             sim_build: Build | None = None) -> int:
    console = make_console()
    out_dir = build.root / "demo"
    out_dir.mkdir(exist_ok=True)
    local = local_comparison(build, console, nprocs, sizes, iters, out_dir)
    simulated = simulated_comparison(sim_build, console, sizes, out_dir)
    app = application(build, console, nprocs, out_dir)
    console.rule("[bold]Summary")
    summary = Table(title="speed-up over the vendor's MPI_Alltoallv of the fastest tucoll algorithm, and of auto",
                    title_justify="left")
    for column in ("where", "S", "fastest", "speed-up", "auto ran", "auto speed-up"):
        summary.add_column(column)
    for where, frame in (("this machine", local), ("polaris-like, simulated", simulated)):
        if frame is None:
            continue
        frame = with_speedup(frame)
        for size, group in frame.groupby("size"):
            best = group.loc[group["median_us"].idxmin()]
            auto = group[group["algorithm"] == "auto"]
            summary.add_row(where, human_bytes(int(size)),
                            best["algorithm"] + (f":{best['params']}" if best["params"] else ""),
                            f"{best['speedup']:.2f}x", auto["chosen"].iloc[0] if len(auto) else "-",
                            f"{auto['speedup'].iloc[0]:.2f}x" if len(auto) else "-")
    console.print(summary)
    figure = out_dir / "demo.png"
    summary_figure(local, simulated, figure)
    console.print(f"figure: {figure}; rows: {out_dir}/*.csv")
    failed = [f for f in (local, simulated) if f is not None and (f["ok"] != "1").any()]
    if failed or (app is not None and (app["ok"].astype(str) != "1").any()):
        console.print("[bold red]some results differ from the vendor's or the serial computation")
        return 1
    if app is None:
        console.print("[bold red]the application did not run (see section 3)")
        return 1
    return 0
