"""The sparse dynamic exchange on real matrices (seed 004 Figs. 5-8)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from tucoll import sim
from tucoll.build import MATRIX_DIR
from tucoll.figures.core import Case, save


SPARSE_MATRICES = ("lp_woodw", "bibd_49_3", "msc01050", "radfr1")
SPARSE_NPROCS = (32, 64, 128, 256, 512, 1024, 2048)


def sparse_cases(registry: dict) -> list[Case]:
    cases = []
    for matrix in SPARSE_MATRICES:
        path = str(MATRIX_DIR / f"{matrix}.mtx")
        for p in SPARSE_NPROCS:
            # One simulation per algorithm (they are short), so one that does not finish (see
            # docs/RESULTS.md) costs only its own point. The matrix workload is small: checked
            # against the reference at every P.
            for collective in ("alltoallv_crs", "alltoall_crs"):
                cases += [Case("quartz-like", p, collective, (alg,), workload=("--matrix", path, "--warmup", "1"),
                               sizes=(), shared_buffers=False) for alg in sim.algorithm_names(registry, collective)]
    return cases


def plot_sparse(data: pd.DataFrame, out: Path) -> str:
    matrices = list(dict.fromkeys(data["workload"]))
    fig, axes = plt.subplots(2, len(matrices), figsize=(4.2 * len(matrices), 7), squeeze=False)
    lines = []
    for col, workload in enumerate(matrices):
        for row, collective in enumerate(("alltoall_crs", "alltoallv_crs")):
            ax = axes[row][col]
            at = data[(data["workload"] == workload) & (data["collective"] == collective)]
            for spec, group in at.groupby("requested", sort=False):
                group = group.sort_values("nprocs")
                ax.plot(group["nprocs"], group["median_us"], marker="o", label=spec)
            ax.set(xscale="log", yscale="log", xlabel="P (32 ranks per node)", ylabel="simulated time (us)",
                   title=f"{collective}, {workload.split('=')[1].split()[0]}")
            ax.set_xscale("log", base=2)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
            top = at[at["nprocs"] == at["nprocs"].max()].sort_values("median_us")
            if not top.empty:
                inter = ", ".join(f"{r.requested} {r.inter_region_msgs}" for r in top.itertuples())
                lines.append(f"{collective} {workload} P = {top['nprocs'].iloc[0]}: fastest {top['requested'].iloc[0]}"
                             f" ({top['median_us'].iloc[0]:.1f} us vs {top['median_us'].iloc[-1]:.1f} us slowest); "
                             f"max inter-node messages per rank: {inter}")
    save(fig, out)
    return "\n".join(lines)
