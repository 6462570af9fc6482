"""Coalesced against staggered hierarchical TuNA (seed 000 Figs. 10, 13)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.ticker
import pandas as pd

from tucoll import sizes as units
from tucoll.figures.core import Case, save


HIER_RADICES = (2, 8, 16, 48)
HIER_BLOCK_COUNTS = (1, 4, 0)
HIER_NPROCS = (96, 192, 384)
HIER_SIZES = ("16", "16K")  # the ends of the paper's range, where it reports opposite winners


# 16, 32 and 64 nodes: only the pair of each variant that won at 8 nodes, and flat TuNA (a search
# there would cost hours, docs/results/03-hierarchical.md).
HIER_LARGE_NPROCS = (768, 1536, 3072)


def hier_large_specs(nprocs: int, size: str) -> tuple[str, ...]:
    # Past 16 nodes both variants keep 4 messages in flight per rank, for the simulator's sake:
    # coalesced sending to every other node at once (47 616 flows at P = 1536) makes its clock
    # crawl, and staggered with 32 in flight (98 304 flows at 3072) did not finish in 2 h 15 min.
    # The batch of 4 costs coalesced 4.3 % at 8 nodes and 16 B and 22 % at 16 nodes and 16 KiB,
    # staggered 1.9 % at 32 nodes and 16 B (docs/results/03-hierarchical.md).
    batch = 32 if nprocs <= HIER_LARGE_NPROCS[0] else 4
    return {  # staggered, the longest to simulate, last
        "16": (f"tuna_coalesced:radix=2,block_count={batch}", "tuna:radix=16",
               f"tuna_staggered:radix=2,block_count={batch}"),
        "16K": (f"tuna_coalesced:radix=16,block_count={batch}", "tuna:radix=16",
                "tuna_staggered:radix=2,block_count=4"),
    }[size]


def hier_specs() -> tuple[str, ...]:
    # A coordinate search: radix swept at the default block_count, block_count at radix 2.
    specs = []
    for variant in ("tuna_coalesced", "tuna_staggered"):
        specs += [f"{variant}:radix={r},block_count=32" for r in HIER_RADICES]
        specs += [f"{variant}:radix=2,block_count={b}" for b in HIER_BLOCK_COUNTS]
    return tuple(specs)


def hier_cases(registry: dict) -> list[Case]:
    # Flat TuNA is the reference: SimGrid 3.32's copy of Open MPI's alltoallv selection picks its
    # "pair" algorithm at some non-power-of-two P (every P = 48 N is one) and aborts there.
    # One simulation per spec: at P = 192 and 16 KiB a run of all of them ended in a segfault of
    # the simulator after minutes (docs/RESULTS.md), which should cost only the spec involved.
    return [Case("fugaku-like", p, "alltoallv", (spec,), sizes=(size,))
            for p in HIER_NPROCS for size in HIER_SIZES for spec in hier_specs() + ("tuna:radix=16",)] + \
           [Case("fugaku-like", p, "alltoallv", (spec,), sizes=(size,))
            for p in HIER_LARGE_NPROCS for size in HIER_SIZES for spec in hier_large_specs(p, size)]


def plot_hier(data: pd.DataFrame, out: Path) -> str:
    data["variant"] = data["requested"].str.split(":").str[0]
    lines = []
    sizes = sorted(data["size"].unique())
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        at = data[data["size"] == size]
        for variant, style in (("tuna_coalesced", "o-"), ("tuna_staggered", "s-"), ("tuna", "^:")):
            best = at[at["variant"] == variant].sort_values("median_us").groupby("nprocs").head(1)
            best = best.sort_values("nprocs")
            if best.empty:
                continue
            ax.plot(best["nprocs"], best["median_us"], style, label=variant if variant != "tuna" else "tuna r=16")
            for _, row in best.iterrows():
                lines.append(f"P = {row['nprocs']}, S = {units.text(size, long=True)}: best {variant} = {row['requested']} "
                             f"({row['median_us']:.1f} us)")
        ax.set(xlabel="P (48 ranks per node)", ylabel="simulated time (us)", yscale="log",
               title=f"hierarchical TuNA, fugaku-like, S = {units.text(size, long=True)}")
        ax.set_xscale("log", base=2)
        ticks = sorted(at["nprocs"].unique())
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, out)
    return "\n".join(lines)
