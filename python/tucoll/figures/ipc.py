"""The IPC alltoall on simulated GPU clusters (seed 002 Figs. 4, 8, 9)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from tucoll import sizes as units
from tucoll.figures.core import Case, save


IPC_SIZES = ("16", "256", "4K", "8K", "64K", "512K", "4M")
IPC_SPECS = ("vendor", "ipc", "ipc:copy=kernel", "ipc:copy=memcpy", "ipc:overlap=0", "staged", "spreadout", "pairwise")
IPC_RUNS = {"thetagpu-like": (8, 16, 32, 64, 128), "lassen-like": (4, 8, 16, 32, 64)}


def ipc_cases(registry: dict) -> list[Case]:
    # One warm-up call: the first call on a communicator splits the node's communicator and agrees
    # on the backend, which a real program pays once. The best host algorithm is the faster of
    # spreadout and pairwise (TuNA's store-and-forward buffer, P blocks of 4 MiB per rank, does
    # not fit this machine's memory at P = 64). The simulator keeps its own copy of what is in
    # flight, P x P blocks: blocks stop at 512 KiB from 64 ranks and at 64 KiB at 128, where more
    # exceeds this machine's 24 GiB.
    def sizes(p: int) -> tuple[str, ...]:
        return IPC_SIZES if p <= 32 else IPC_SIZES[:-1] if p <= 64 else IPC_SIZES[:-2]
    return [Case(platform, p, "alltoall", IPC_SPECS, workload=("--warmup", "1"), sizes=sizes(p))
            for platform, nprocs in IPC_RUNS.items() for p in nprocs]


def plot_ipc(data: pd.DataFrame, out: Path) -> str:
    host = ("spreadout", "pairwise")
    lines = []
    platforms = list(dict.fromkeys(data["platform"]))
    fig, axes = plt.subplots(2, len(platforms), figsize=(5.8 * len(platforms), 8), squeeze=False)
    for col, platform in enumerate(platforms):
        at = data[data["platform"] == platform]
        top, bottom = axes[0][col], axes[1][col]
        for i, (nprocs, group) in enumerate(at.groupby("nprocs")):
            t = group.pivot_table(index="size", columns="requested", values="median_us")
            best_host = t[[h for h in host if h in t]].min(axis=1)
            top.plot(t.index, t["vendor"] / t["ipc"], marker="o", color=f"C{i}", label=f"P = {nprocs}")
            for size in t.index:
                lines.append(f"{platform} P = {nprocs}, S = {units.text(size, long=True)}: vendor {t.loc[size, 'vendor']:.1f}, "
                             f"ipc (hybrid) {t.loc[size, 'ipc']:.1f}, kernel {t.loc[size, 'ipc:copy=kernel']:.1f}, "
                             f"memcpy {t.loc[size, 'ipc:copy=memcpy']:.1f}, no overlap "
                             f"{t.loc[size, 'ipc:overlap=0']:.1f}, staged {t.loc[size, 'staged']:.1f}, "
                             f"best host algorithm {best_host[size]:.1f} us")
        top.axhline(1.0, color="black", linewidth=0.8)
        top.set(xscale="log", xlabel="block size (bytes)", ylabel="vendor time / ipc (hybrid) time",
                title=f"alltoall, {platform} (simulated)")
        one = at[at["nprocs"] == at["nprocs"].min()].pivot_table(index="size", columns="requested", values="median_us")
        for spec, style in (("vendor", "s--"), ("ipc:copy=kernel", "o-"), ("ipc:copy=memcpy", "^-"), ("ipc", "k:"),
                            ("staged", "x-.")):
            bottom.plot(one.index, one[spec], style, label="ipc (hybrid)" if spec == "ipc" else spec)
        bottom.set(xscale="log", yscale="log", xlabel="block size (bytes)", ylabel="simulated time (us)",
                   title=f"one node ({at['nprocs'].min()} GPUs): kernel vs memcpy copies")
        for ax in (top, bottom):
            ax.set_xscale("log", base=2)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    save(fig, out)
    return "\n".join(lines)
