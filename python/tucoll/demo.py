"""`make demo`: check every algorithm against the vendor MPI and compare them on this machine."""

from __future__ import annotations

from tucoll.bench import BenchRun, run_bench
from tucoll.build import Build
from tucoll.report import console as make_console
from tucoll.report import print_comparison


def run_demo(build: Build, nprocs: int = 4, sizes: str = "64,1K,16K", iters: int = 50) -> int:
    console = make_console()
    console.rule("[bold]tucoll demo: non-uniform all-to-all")
    console.print(f"{nprocs} ranks on this machine ({build.mpi_flavor}), block sizes uniform in [0, S]. "
                  "Every algorithm's result is checked against the vendor MPI_Alltoallv (ok = 1).\n"
                  "Times are real but come from ranks sharing few cores: compare ratios, not absolute values.")
    frame = run_bench(build, BenchRun("alltoallv", nprocs, ["--dist", "uniform", "--sizes", sizes, "--iters",
                                                            str(iters), "--check"]))
    out_dir = build.root / "demo"
    out_dir.mkdir(exist_ok=True)
    frame.to_csv(out_dir / "alltoallv.csv", index=False)
    print_comparison(frame, f"alltoallv, P={nprocs}: median of the slowest rank over {iters} interleaved "
                            "iterations (fastest per size in green)", console)
    console.print(f"rows written to {out_dir / 'alltoallv.csv'}")
    failed = frame[frame["ok"] != "1"]
    if not failed.empty:
        console.print(f"[bold red]results differ from the vendor for: {', '.join(failed['algorithm'].unique())}")
        return 1
    return 0
