"""TuNA's radix trends and TuNA against the vendor over P (seed 000 Figs. 7-9)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from tucoll import sizes as units
from tucoll.figures.core import Case, save


RADICES = (2, 4, 8, 16, 32, 64, 128, 256)
TREND_SIZES = ("16", "1K", "16K")
SCALING_NPROCS = (128, 256, 512, 1024)


def tuna_specs(nprocs: int, radices=RADICES) -> tuple[str, ...]:
    # r >= P-1 is the linear spread-out exchange; at these P it is refused as all-at-once.
    return tuple(f"tuna:radix={r}" for r in radices if r < nprocs - 1)


# At P = 4096 one spec takes about 6 minutes and 6.5 GB here (docs/results/06-simulation-cost.md): 16 B only, one
# simulation per radix so that each result is stored as soon as it is there.
LARGE_TREND_NPROCS = 4096
LARGE_TREND_RADICES = (2, 4, 8, 16, 32, 64)


# The seed's own P for Fig. 7, on the calibrated Polaris (docs/CALIBRATION.md holds its trends
# there): every power-of-two radix below P, one simulation per radix and size (the largest radix
# at 16 KiB is the longest, about half an hour here).
CALIBRATED_TREND = ("polaris-calibrated", 2048)


def radix_trend_cases(registry: dict) -> list[Case]:
    calibrated, at = CALIBRATED_TREND
    return [Case(platform, 1024, "alltoallv", tuna_specs(1024), sizes=(size,))
            for platform in ("polaris-like", "fugaku-like") for size in TREND_SIZES] + \
           [Case("polaris-like", LARGE_TREND_NPROCS, "alltoallv", (spec,))
            for spec in tuna_specs(LARGE_TREND_NPROCS, LARGE_TREND_RADICES)] + \
           [Case(calibrated, at, "alltoallv", (spec,), sizes=(size,))
            for size in TREND_SIZES for spec in tuna_specs(at, tuple(2 ** k for k in range(1, 11)))]


def plot_radix_trends(data: pd.DataFrame, out: Path) -> str:
    data["radix"] = data["requested"].str.extract(r"radix=(\d+)").astype(int)
    panels = list(dict.fromkeys(zip(data["platform"], data["nprocs"])))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    lines = []
    for ax, (platform, nprocs) in zip(axes[0], panels):
        panel = data[(data["platform"] == platform) & (data["nprocs"] == nprocs)]
        for size, group in panel.groupby("size"):
            group = group.sort_values("radix")
            best = group.loc[group["median_us"].idxmin()]
            ax.plot(group["radix"], group["median_us"], marker="o", label=f"S = {units.text(size, long=True)}")
            ax.plot([best["radix"]], [best["median_us"]], marker="*", markersize=14, color="black")
            lines.append(f"{platform}, P = {nprocs}, S = {units.text(size, long=True)}: best radix {best['radix']} "
                         f"({best['median_us']:.1f} us; radix 2: "
                         f"{group[group['radix'] == 2]['median_us'].min():.1f} us)")
        ax.set(xscale="log", yscale="log", xlabel="radix r", ylabel="simulated time (us)",
               title=f"TuNA radix trends, {platform}, P = {nprocs}")
        ax.set_xscale("log", base=2)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    save(fig, out)
    return "\n".join(lines)


# Past P = 1024, the radices that won at smaller P and their neighbours, one simulation per spec so
# that each result is stored as soon as it is there (docs/results/06-simulation-cost.md has their cost). The vendor
# posts P^2 messages: at 16 B it takes 5 minutes at 2048 and 22 at 4096; at 1 KiB 11 minutes at
# 1024 and 51 at 2048, so past 2048 1 KiB is TuNA only, with the radix that won at 1024 (TuNA r = 32
# at 1 KiB and 4096 alone took 29 minutes; the vendor there gains some 10 us of simulated time per
# wall minute and would need 10 hours or more, docs/results/02-tuna-vs-vendor.md). The 16 B radices at 4096 are
# the radix trends' own cases. At 16 KiB past 1024 TuNA alone, with the radix that won at 1024
# (10 minutes at 2048, 37 at 4096 with vm.max_map_count raised; the vendor would take about 7 hours
# at 2048).
LARGE_SCALING = (
    (2048, "16", ("vendor",) + tuna_specs(2048, (2, 4, 8, 16, 32))),
    (4096, "16", ("vendor",)),
    (2048, "1K", tuna_specs(2048, (16, 32)) + ("vendor",)),
    (4096, "1K", tuna_specs(4096, (32,))),
    (2048, "16K", tuna_specs(2048, (32,))),
    (4096, "16K", tuna_specs(4096, (32,))),
)


def vendor_cases(registry: dict) -> list[Case]:
    # Cheapest first (P, then S): a figure cut short by its time budget still spans the P range.
    cases = [Case("polaris-like", p, "alltoallv", ("vendor",) + tuna_specs(p), sizes=(size,))
             for p in SCALING_NPROCS for size in TREND_SIZES if (p, size) != (1024, "16K")]
    # The vendor alone runs for tens of minutes at P = 1024 and 16 KiB: there, one simulation per
    # spec, the vendor last, so that the radices are stored whatever becomes of it.
    cases += [Case("polaris-like", 1024, "alltoallv", (spec,), sizes=("16K",))
              for spec in tuna_specs(1024) + ("vendor",)]
    large = [Case("polaris-like", p, "alltoallv", (spec,), sizes=(size,))
             for p, size, specs in LARGE_SCALING for spec in specs]
    return cases + large + [c for c in radix_trend_cases(registry) if c.nprocs == LARGE_TREND_NPROCS]


def plot_vendor(data: pd.DataFrame, out: Path) -> str:
    lines = []
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    summary = []
    for (size, nprocs), group in data.groupby(["size", "nprocs"]):
        vendor = group[group["requested"] == "vendor"]["median_us"]
        tuna = group[group["requested"].str.startswith("tuna")]
        if tuna.empty:
            continue
        best = tuna.loc[tuna["median_us"].idxmin()]
        # Where the vendor was not simulated (large P and S, section 2) TuNA stands alone.
        summary.append({"size": size, "nprocs": nprocs, "vendor": vendor.iloc[0] if not vendor.empty else np.nan,
                        "tuna": best["median_us"], "radix": best["requested"].split("=")[1]})
    table = pd.DataFrame(summary)
    for i, (size, group) in enumerate(table.groupby("size")):
        group = group.sort_values("nprocs")
        paired = group.dropna(subset=["vendor"])
        color = f"C{i}"  # one colour per S: dashed vendor, solid TuNA
        left.plot(paired["nprocs"], paired["vendor"], marker="s", linestyle="--", color=color,
                  label=f"vendor, S = {units.text(size, long=True)}")
        left.plot(group["nprocs"], group["tuna"], marker="o", color=color, label=f"TuNA best r, S = {units.text(size, long=True)}")
        right.plot(paired["nprocs"], paired["vendor"] / paired["tuna"], marker="o", color=color,
                   label=f"S = {units.text(size, long=True)}")
        for _, row in group.iterrows():
            if np.isnan(row["vendor"]):
                lines.append(f"P = {row['nprocs']}, S = {units.text(size, long=True)}: vendor not simulated, "
                             f"TuNA r={row['radix']} {row['tuna']:.1f} us")
                continue
            right.annotate(f"r={row['radix']}", (row["nprocs"], row["vendor"] / row["tuna"]), fontsize=7,
                           textcoords="offset points", xytext=(3, 3))
            lines.append(f"P = {row['nprocs']}, S = {units.text(size, long=True)}: vendor {row['vendor']:.1f} us, "
                         f"TuNA r={row['radix']} {row['tuna']:.1f} us, speedup {row['vendor'] / row['tuna']:.2f}x")
    left.set(xscale="log", yscale="log", xlabel="P", ylabel="simulated time (us)",
             title="alltoallv on polaris-like (uniform, MPICH selection)")
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set(xscale="log", xlabel="P", ylabel="vendor time / TuNA time", title="speedup of TuNA (best radix)")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, out)
    return "\n".join(lines)
