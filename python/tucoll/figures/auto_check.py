"""auto against the fastest candidate in the same simulation (seed 003)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from tucoll import sim
from tucoll import sizes as units
from tucoll.build import PATTERN_DIR, REPO_ROOT
from tucoll.figures.core import Case, save

# The machine the shipped table is fitted to (docs/TUNING.md): auto is checked on the model its
# numbers come from.


AUTO_PLATFORM = "polaris-calibrated"


def table_specs(nprocs: int, ppn: int) -> list[str]:
    """The specs the shipped tuning table can choose at (P, Q): those of the entry auto uses there."""
    from tucoll import tuning

    table = json.loads((REPO_ROOT / "tuning" / "default.json").read_text())
    return tuning.entry_specs(tuning.nearest_entry(table, nprocs, ppn))


def auto_candidates(nprocs: int, ppn: int) -> tuple[str, ...]:
    """What auto is compared with: the vendor, two-phase Bruck, every spec the shipped table can
    choose at this P, the flat TuNA radices and all-at-once coalesced TuNA; without what keeps
    more flows in flight than the simulator takes (sim.MAX_CONCURRENT_FLOWS, as the sweep)."""
    from tucoll import native

    specs = ["vendor", "bruck2", *table_specs(nprocs, ppn), *(f"tuna:radix={r}" for r in (2, 4, 16, 32)),
             "tuna_coalesced:radix=2,block_count=0"]
    lib = native.library()
    return tuple(s for s in dict.fromkeys(specs)
                 if lib.spec_properties("alltoallv", s, nprocs, ppn).concurrent_flows <= sim.MAX_CONCURRENT_FLOWS)


def table_tag() -> str:
    """The shipped tuning table's fingerprint: auto's results depend on it (run_figure refuses to
    simulate such rows with a build whose copy of the table differs)."""
    import hashlib

    table = REPO_ROOT / "tuning" / "default.json"
    return "table " + hashlib.sha256(table.read_bytes()).hexdigest()[:10] if table.is_file() else "no table"


# The sweep the shipped table is fitted to: its rows of the same runs are reused for the candidates.
AUTO_SWEEP = "tuning/polaris-calibrated.csv.gz"


def auto_cases(registry: dict) -> list[Case]:
    """auto and the candidates in one run per workload: the seed distributions, the FFT shapes and
    the recorded patterns (scaled) at P = 256; uniform 16 B and 1 KiB at 512 and 1024, where the
    sweep has nothing else (each direct exchange there costs many minutes to simulate). Where
    the sweep ran the same workload, its rows stand for the candidates (Case.reuse) and auto alone
    is simulated."""
    tag = table_tag()

    def case(nprocs: int, workload: tuple[str, ...], sizes: tuple[str, ...], without: tuple[str, ...] = ()) -> Case:
        candidates = tuple(s for s in auto_candidates(nprocs, 32) if s not in without)
        return Case(AUTO_PLATFORM, nprocs, "alltoallv", ("auto",) + candidates, workload, sizes,
                    tag=tag, tagged=("auto",), reuse=AUTO_SWEEP)

    # No blocks of 4 KiB: on this model 34 specs at 4 KiB at P = 256 did not finish in 20 minutes.
    cases = [case(256, ("--dist", dist), ("16", "256")) for dist in ("uniform", "normal", "powerlaw", "fft1", "fft2")]
    pattern = PATTERN_DIR / "pattern_256.txt"  # blocks up to 7.5 MB: scaled to at most 750 B and 7.5 KiB
    cases += [case(256, ("--dist", f"file:{pattern}:scale={scale}"), ()) for scale in ("0.0001", "0.001")]
    cases += [case(512, ("--dist", "uniform"), ("16", "1K")), case(1024, ("--dist", "uniform"), ("16",))]
    # All-at-once coalesced TuNA at 1024, 1 KiB did not finish in the sweep's 900 s (every
    # block_count=0 radix): the simulator's cost, which leaves it out of this comparison only.
    cases += [case(1024, ("--dist", "uniform"), ("1K",), without=("tuna_coalesced:radix=2,block_count=0",))]
    return cases


def plot_auto(data: pd.DataFrame, out: Path) -> str:
    rows, lines = [], []
    # auto's rows carry the table's fingerprint in their workload label, the candidates' do not.
    data = data.assign(workload=data["workload"].str.split(" [", regex=False).str[0])
    data = data.sort_values(["nprocs", "requested_size"], kind="stable")
    for (nprocs, workload, size), group in data.groupby(["nprocs", "workload", "requested_size"], sort=False):
        auto = group[group["requested"] == "auto"]
        others = group[group["requested"] != "auto"]
        if auto.empty or others.empty:
            continue
        best = others.loc[others["median_us"].idxmin()]
        ratio = auto["median_us"].iloc[0] / best["median_us"]
        vendor = others[others["requested"] == "vendor"]["median_us"]
        label = f"P={nprocs} {workload.replace('dist=', '')}" + \
                (f" S={units.text(int(size), long=True)}" if int(size) >= 0 else "")
        vendor_ratio = vendor.iloc[0] / best["median_us"] if len(vendor) else float("nan")
        rows.append((label, ratio, vendor_ratio))
        lines.append(f"{label}: auto ran {auto['chosen'].iloc[0]} {auto['median_us'].iloc[0]:.1f} us; best "
                     f"{best['requested']} {best['median_us']:.1f} us; auto/best {ratio:.3f}"
                     + (f"; vendor/auto {vendor.iloc[0] / auto['median_us'].iloc[0]:.2f}" if len(vendor) else ""))
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(rows) + 1.8))
    y = np.arange(len(rows))
    ax.barh(y - 0.2, [r[1] for r in rows], height=0.4, label="auto",
            color=["tab:green" if r[1] <= 1.10 else "tab:red" for r in rows])
    ax.barh(y + 0.2, [r[2] for r in rows], height=0.4, label="vendor", color="tab:grey")
    ax.set_xscale("log")
    ax.set_xlim(0.9, max([r[2] for r in rows if r[2] == r[2]] + [1.5]) * 1.2)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.axvline(1.1, color="tab:red", linestyle=":", linewidth=1, label="10 % over the best")
    ax.set_yticks(y, [r[0] for r in rows])
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3, frameon=False)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks([1, 1.1, 1.5, 2, 3, 5, 8])
    ax.set(xlabel="t / t(fastest of the candidates in the same run), simulated",
           title=f"auto and vendor against the best candidate, {AUTO_PLATFORM}")
    save(fig, out)
    worst = max(r[1] for r in rows) if rows else float("nan")
    return "\n".join(lines + [f"worst auto/best: {worst:.3f} over {len(rows)} workloads"])
