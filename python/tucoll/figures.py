"""`tucoll figure`: the papers' scaling figures, reproduced on simulated machines.

Each figure is a list of simulation cases plus a plot. Results accumulate in one store,
docs/figures/data/simulated.csv, keyed by platform, P, ranks per node, mapping, collective,
workload, size and the requested spec: a case runs only what the store lacks, so an interrupted
figure resumes where it stopped and figures share cases (TuNA's radix sweep at P = 1024 also
serves the TuNA-vs-vendor figure).
"""

from __future__ import annotations

import io
import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window: before pyplot is imported

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tucoll import bench, sim, store  # noqa: E402
from tucoll import sizes as units  # noqa: E402
from tucoll.build import MATRIX_DIR, PATTERN_DIR, REPO_ROOT, Build  # noqa: E402

FIGURE_DIR = REPO_ROOT / "docs" / "figures"
STORE = FIGURE_DIR / "data" / "simulated.csv"

# The columns that identify one simulated measurement in the store.
# requested_size is the size asked for in bytes (-1 for workloads without one, such as a matrix);
# model is the platform's fingerprint (sim.Platform.fingerprint): a changed machine model is
# simulated again, and only its current rows are plotted.
KEY = ["platform", "nprocs", "ppn", "mapping", "collective", "workload", "requested_size", "requested", "model"]


@dataclass(frozen=True)
class Case:
    """One simulation: `specs` timed on `workload` at each of `sizes` (bench size strings)."""

    platform: str
    nprocs: int
    collective: str
    specs: tuple[str, ...]
    workload: tuple[str, ...] = ("--dist", "uniform")
    sizes: tuple[str, ...] = ("16",)
    mapping: str = "sequential"
    ppn: int | None = None
    # Data buffers shared between simulated ranks: thousands of ranks fit in memory, and the
    # results are not checked (the same cases are checked at small P by the tests).
    shared_buffers: bool = True
    # Part of the stored key but not of the run: what else the results depend on (the tuning
    # table's fingerprint for `auto`), so that they are simulated again when it changes; only for
    # `tagged` specs when given (the others do not depend on it).
    tag: str = ""
    tagged: tuple[str, ...] | None = None
    # A sweep dataset (tucoll sweep, same platform and workload) whose rows stand for this case's
    # untagged specs: the same tucoll-bench run, stored rather than simulated twice.
    reuse: str = ""

    def resolved_ppn(self) -> int:
        return self.ppn or sim.Platform.load(self.platform).ranks_per_node

    def workload_label(self, spec: str | None = None) -> str:
        """The workload as stored; with the tag where `spec` (any, when None) depends on it."""
        args = list(self.workload)
        if "--matrix" in args:
            label = "matrix=" + Path(args[args.index("--matrix") + 1]).stem
            return label + (" warmup=" + args[args.index("--warmup") + 1] if "--warmup" in args else "")
        if "--dist" in args and args[args.index("--dist") + 1].startswith("file:"):  # the pattern's name, not its path
            dist = args[args.index("--dist") + 1]
            args[args.index("--dist") + 1] = "file:" + Path(dist[5:].split(":")[0]).stem + \
                                               "".join(":" + o for o in dist[5:].split(":")[1:])
        label = " ".join(a.lstrip("-") for a in args).replace(" ", "=", 1)
        tagged = self.tag and (spec is None or self.tagged is None or spec in self.tagged)
        return label + (f" [{self.tag}]" if tagged else "")

    def keys(self) -> list[tuple]:
        sizes = [size_bytes(s) for s in self.sizes] or [-1]
        model = sim.model_of(self.platform)
        return [(self.platform, self.nprocs, self.resolved_ppn(), self.mapping, self.collective,
                 self.workload_label(spec), size, spec, model) for size in sizes for spec in self.specs]

    def bench_args(self, specs: list[str], sizes: list[str]) -> list[str]:
        return [self.collective, *bench.arguments(specs, sizes, self.workload), "--format", "csv"]


size_bytes = units.parse


@dataclass
class Figure:
    name: str
    title: str
    # The simulations, given the registry (tucoll-bench --list-json): algorithm names come from it.
    cases: Callable[[dict], list[Case]]
    plot: Callable[[pd.DataFrame, Path], str]


# --------------------------------------------------------------------------------------- store

def load_store() -> pd.DataFrame:
    return store.load(STORE, KEY)


def append_rows(rows: pd.DataFrame) -> None:
    store.append(STORE, rows)


def done_keys(frame: pd.DataFrame) -> set[tuple]:
    return store.keys(frame, KEY)


# ----------------------------------------------------------------------------------- running

def simulate_case(case: Case, build: Build, done: set[tuple], timeout: float | None) -> tuple | None:
    """Simulates what `case` still lacks (on a Dask worker): store_output's arguments after the
    case (specs, sizes, stdout, wall, stderr), or None when nothing is missing."""
    pending = [k for k in case.keys() if k not in done]
    if not pending:
        return None
    sizes = [s for s in case.sizes if any(k[6] == size_bytes(s) for k in pending)]  # [] when sizeless
    specs = [p for p in case.specs if any(k[7] == p for k in pending)]
    platform = sim.Platform.load(case.platform)
    run = sim.SimRun(platform, case.nprocs, case.resolved_ppn(), case.mapping, platform.vendor,
                     case.bench_args(specs, sizes), shared_buffers=case.shared_buffers,
                     check=not case.shared_buffers)
    started = time.monotonic()
    proc = sim.simulate(build, run, timeout=timeout)
    return specs, sizes, proc.stdout, time.monotonic() - started, proc.stderr


SWEEP_ONLY = ["source", "simulated", "dist", "wall_s", "failed"]


def reuse_sweep_rows(case: Case, data: pd.DataFrame, done: set[tuple]) -> int:
    """Stores the rows of `data` (case.reuse's sweep dataset) for the case's pending untagged
    specs; returns how many. The sweep ran the same bench arguments (shared buffers, one timed call)."""
    dist = case.workload[case.workload.index("--dist") + 1]
    ppn = case.resolved_ppn()
    same = data[(data["source"] == case.platform) & (data["model"] == sim.model_of(case.platform)) &
                (data["nprocs"].astype(str) == str(case.nprocs)) &
                (data["ppn"].astype(str) == str(ppn)) & (data["mapping"] == case.mapping) & (data["dist"] == dist) &
                (data["failed"].astype(str) == "")]
    wanted = {(k[6], k[7]) for k in case.keys() if k not in done and not (case.tagged and k[7] in case.tagged)}
    rows = same[[(int(size), spec) in wanted for size, spec in zip(same["requested_size"], same["requested"])]]
    rows = rows.drop_duplicates(["requested_size", "requested"])
    if rows.empty:
        return 0
    rows = rows.assign(platform=case.platform, nprocs=case.nprocs, ppn=ppn, requested_size=rows["requested_size"].astype(int),
                       workload=[case.workload_label(spec) for spec in rows["requested"]],
                       sim_wall_s=rows["wall_s"]).drop(columns=SWEEP_ONLY)
    append_rows(rows)
    return len(rows)


def store_output(case: Case, specs: list[str], sizes: list[str], stdout: str, wall: float,
                 stderr: str = "") -> int:
    """Stores what tucoll-bench printed for `specs` at `sizes` of `case`; returns the rows added.

    Also for a simulation of exactly that case run by hand (`tucoll sim ... --format csv`), such as
    one too long for a figure's run, whose printed CSV is kept with its wall time."""
    rows = pd.read_csv(io.StringIO(sim.relabel_mapping(stdout, case.mapping)),
                       dtype={"params": str, "ok": str, "path": str}, keep_default_na=False)
    requested_sizes = [size_bytes(s) for s in sizes] or [-1]
    if len(rows) != len(requested_sizes) * len(specs):
        raise sim.SimError(f"expected {len(requested_sizes) * len(specs)} rows from {case}, got:\n{stdout}\n"
                           f"{stderr}")
    # tucoll-bench prints sizes in turn and, within a size, the algorithms in --alg order.
    rows.insert(0, "requested", [spec for _ in requested_sizes for spec in specs])
    rows["requested_size"] = [size for size in requested_sizes for _ in specs]
    rows.insert(0, "workload", [case.workload_label(spec) for _ in requested_sizes for spec in specs])
    rows.insert(0, "platform", case.platform)
    rows["ppn"] = case.resolved_ppn()
    rows["model"] = sim.model_of(case.platform)
    rows["sim_wall_s"] = round(wall, 1)
    append_rows(rows)
    return len(rows)


def run_figure(build: Build, figure: Figure, timeout: float | None, progress, nprocs: set[int] | None = None,
               scheduler: str | None = None, workers: int | None = None) -> None:
    """Simulates the figure's missing cases (only those at `nprocs` ranks when given) in parallel
    on a Dask cluster (tucoll.cluster), largest P first; stores each as it finishes."""
    cases = sorted((c for c in figure.cases(sim.registry(build)) if not nprocs or c.nprocs in nprocs),
                   key=lambda c: -c.nprocs)
    # Rows that depend on the table are labelled with tuning/default.json's fingerprint: refuse to
    # simulate them with another table, which the label would not show.
    stale = sim.stale_table(build)
    if stale and any(c.tag and c.tag.startswith("table ") for c in cases):
        raise sim.SimError(f"{figure.name} labels auto's rows with tuning/default.json, but {stale}")
    from tucoll import cluster, sweep  # Dask, only where it is used

    done = done_keys(load_store())
    sweeps = {path: store.load(REPO_ROOT / path, sweep.KEY) for path in {c.reuse for c in cases if c.reuse}}
    reused = sum(reuse_sweep_rows(c, sweeps[c.reuse], done) for c in cases if c.reuse)
    if reused:
        progress(f"[{figure.name}] {reused} rows taken from the sweeps' datasets")
        done = done_keys(load_store())
    pending = [c for c in cases if any(k not in done for k in c.keys())]
    progress(f"[{figure.name}] {len(cases) - len(pending)} of {len(cases)} simulations in the store, "
             f"{len(pending)} to run")
    for i, (case, result, error) in enumerate(cluster.run_unordered(simulate_case, pending, build, done, timeout,
                                                                     scheduler=scheduler, workers=workers), 1):
        what = (f"[{figure.name} {i}/{len(pending)}] {case.platform} P={case.nprocs} {case.collective} "
                f"{case.workload_label()} sizes={','.join(case.sizes)} ({len(case.specs)} specs)")
        if isinstance(error, subprocess.TimeoutExpired):
            # Left out of the figure (and tried again by the next run); the others go on.
            progress(f"{what}: gave up after {timeout:.0f} s of wall time")
        elif isinstance(error, sim.SimError):
            progress(f"{what}: the simulation failed; left out: {str(error).splitlines()[0][:200]}")
        elif error:
            raise error
        else:
            store_output(case, *result)
            progress(f"{what}: {result[3]:.0f} s")


def selection(store: pd.DataFrame, cases: list[Case]) -> pd.DataFrame:
    """The store's rows for exactly these cases."""
    if store.empty:
        return store
    wanted = {k for c in cases for k in c.keys()}
    mask = [k in wanted for k in store[KEY].itertuples(index=False, name=None)]
    return store[mask].copy()


# ------------------------------------------------------------------------------ the figures

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


def radix_trend_cases(registry: dict) -> list[Case]:
    return [Case(platform, 1024, "alltoallv", tuna_specs(1024), sizes=(size,))
            for platform in ("polaris-like", "fugaku-like") for size in TREND_SIZES] + \
           [Case("polaris-like", LARGE_TREND_NPROCS, "alltoallv", (spec,))
            for spec in tuna_specs(LARGE_TREND_NPROCS, LARGE_TREND_RADICES)]


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


SPARBIT_NPROCS = (16, 24, 32, 40, 48, 64, 80, 96, 112, 128)
SPARBIT_SIZES = tuple(str(4 ** k) for k in range(11))  # 1 B ... 1 MiB


def sparbit_cases(registry: dict) -> list[Case]:
    allgathers = tuple(sim.algorithm_names(registry, "allgather"))
    return [Case("yahoo-like", p, "allgather", allgathers, workload=(), sizes=SPARBIT_SIZES, mapping=m)
            for m in ("sequential", "cyclic") for p in SPARBIT_NPROCS]


def plot_sparbit(data: pd.DataFrame, out: Path) -> str:
    from matplotlib.colors import ListedColormap

    algorithms = list(dict.fromkeys(data["requested"]))  # as the bench printed them: registry order
    colors = ListedColormap([f"C{i}" for i in range(len(algorithms))])
    mappings = ["sequential", "cyclic"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    lines = []
    for ax, mapping in zip(axes, mappings):
        at = data[data["mapping"] == mapping]
        best = at.loc[at.groupby(["nprocs", "size"])["median_us"].idxmin()]
        grid = best.pivot(index="size", columns="nprocs", values="requested")
        codes = grid.apply(lambda col: col.map(algorithms.index))
        ax.imshow(codes.to_numpy(dtype=float), cmap=colors, vmin=-0.5, vmax=len(algorithms) - 0.5, aspect="auto",
                  origin="lower")
        ax.set_xticks(range(len(grid.columns)), [str(c) for c in grid.columns])
        ax.set_yticks(range(len(grid.index)), [units.text(s, long=True) for s in grid.index])
        ax.set(xlabel="P (8 ranks per node)", ylabel="bytes per rank",
               title=f"fastest allgather, yahoo-like, {mapping} mapping")
        wins = (best["requested"] == "sparbit").mean()
        # Sparbit within 5 % of the fastest counts as a tie the paper would not call a loss.
        near = at.merge(best[["nprocs", "size", "median_us"]], on=["nprocs", "size"], suffixes=("", "_best"))
        near = near[(near["requested"] == "sparbit") & (near["median_us"] <= 1.05 * near["median_us_best"])]
        lines.append(f"{mapping}: Sparbit fastest in {wins:.0%} of {len(best)} cases, within 5 % of the fastest in "
                     f"{len(near) / len(best):.0%}; winners: "
                     + ", ".join(f"{k} {v}" for k, v in best["requested"].value_counts().items()))
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors(i)) for i in range(len(algorithms))]
    fig.tight_layout()
    fig.legend(handles, algorithms, loc="upper center", ncol=len(algorithms), bbox_to_anchor=(0.5, 0.0))
    save(fig, out, layout=False)
    return "\n".join(lines)


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


# ------------------------------------------------------------------- auto against the best

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


IPC_SIZES = ("16", "256", "4K", "64K", "512K", "4M")
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


FIGURES = {f.name: f for f in [
    Figure("radix-trends", "TuNA radix trends at P = 1024 and 4096 (seed 000 Fig. 7)", radix_trend_cases, plot_radix_trends),
    Figure("tuna-vs-vendor", "TuNA (best radix) vs vendor alltoallv over P (seed 000 Figs. 8-9)", vendor_cases,
           plot_vendor),
    Figure("hierarchical", "coalesced vs staggered hierarchical TuNA (seed 000 Figs. 10, 13)", hier_cases, plot_hier),
    Figure("sparbit-heatmap", "fastest allgather per (P, size), sequential and cyclic (seed 001 Fig. 5)",
           sparbit_cases, plot_sparbit),
    Figure("sparse-scaling", "sparse dynamic exchange on real matrices (seed 004 Figs. 5-8)", sparse_cases,
           plot_sparse),
    Figure("auto-check", "auto against the fastest candidate in the same run (seed 003)", auto_cases, plot_auto),
    Figure("ipc-gpu", "IPC alltoall on simulated GPU clusters (seed 002 Figs. 4, 8, 9)", ipc_cases, plot_ipc),
]}


# ----------------------------------------------------------------------------------- helpers

def save(fig, out: Path, layout: bool = True) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if layout:
        fig.tight_layout()
    fig.savefig(out, dpi=110, bbox_inches="tight")  # keeps legends placed outside the axes
    plt.close(fig)


def render(figure: Figure, registry: dict) -> tuple[Path, str]:
    """Plots whatever of the figure's cases the store holds; returns the PNG and a summary."""
    data = selection(load_store(), figure.cases(registry))
    if data.empty:
        raise sim.SimError(f"no simulated data for {figure.name} yet: run `tucoll figure {figure.name}`")
    out = FIGURE_DIR / f"{figure.name}.png"
    return out, figure.plot(data, out)
