"""The figures' machinery: a case and a figure, the store of simulated results, simulating what
the store lacks on a Dask cluster, and drawing a figure from it."""

from __future__ import annotations

import io
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window: before pyplot is imported

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from tucoll import bench, sim, store  # noqa: E402
from tucoll import sizes as units  # noqa: E402
from tucoll.build import REPO_ROOT, Build, sources_fingerprint  # noqa: E402


FIGURE_DIR = REPO_ROOT / "docs" / "figures"
STORE = FIGURE_DIR / "data" / "simulated.csv"

# The columns that identify one simulated measurement in the store.
# requested_size is the size asked for in bytes (-1 for workloads without one, such as a matrix);
# model is the platform's fingerprint (sim.Platform.fingerprint): a changed machine model is
# simulated again, and only its current rows are plotted. Beside the key, `sources` keeps the
# library sources each row was simulated with (build.sources_fingerprint; empty: from before it was
# kept). A change to src/ rarely moves a figure and re-simulating them all takes hours, so rows from
# earlier sources are plotted and counted in the summary, and `--refresh` simulates them again;
# the last row of a key wins.
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


def done_keys(frame: pd.DataFrame, current_only: bool = False) -> set[tuple]:
    """The keys the store holds; with `current_only`, those whose last row was simulated with the
    current library sources."""
    if current_only and not frame.empty:
        latest = store.latest(frame, KEY)
        frame = latest[store.sources_of(latest) == sources_fingerprint()]
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
    """Stores the rows of `data` (case.reuse's sweep dataset, the last row of each cell) for the
    case's pending untagged specs; returns how many. The sweep ran the same bench arguments (shared
    buffers, one timed call)."""
    dist = case.workload[case.workload.index("--dist") + 1]
    ppn = case.resolved_ppn()
    same = data[(data["source"] == case.platform) & (data["model"] == sim.model_of(case.platform)) &
                (data["nprocs"].astype(str) == str(case.nprocs)) &
                (data["ppn"].astype(str) == str(ppn)) & (data["mapping"] == case.mapping) & (data["dist"] == dist) &
                (data["failed"].astype(str) == "")]
    wanted = {(k[6], k[7]) for k in case.keys() if k not in done and not (case.tagged and k[7] in case.tagged)}
    rows = same[[(int(size), spec) in wanted for size, spec in zip(same["requested_size"], same["requested"])]]
    if rows.empty:
        return 0
    rows = rows.assign(platform=case.platform, nprocs=case.nprocs, ppn=ppn, requested_size=rows["requested_size"].astype(int),
                       workload=[case.workload_label(spec) for spec in rows["requested"]],
                       sim_wall_s=rows["wall_s"], sources=store.sources_of(rows)).drop(columns=SWEEP_ONLY)
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
    rows["sources"] = sources_fingerprint()
    append_rows(rows)
    return len(rows)


def run_figure(build: Build, figure: Figure, timeout: float | None, progress, nprocs: set[int] | None = None,
               scheduler: str | None = None, workers: int | None = None, refresh: bool = False) -> None:
    """Simulates the figure's missing cases (only those at `nprocs` ranks when given) in parallel
    on a Dask cluster (tucoll.cluster), largest P first; stores each as it finishes. With `refresh`,
    also what the store holds from earlier library sources."""
    cases = sorted((c for c in figure.cases(sim.registry(build)) if not nprocs or c.nprocs in nprocs),
                   key=lambda c: -c.nprocs)
    # Rows that depend on the table are labelled with tuning/default.json's fingerprint: refuse to
    # simulate them with another table, which the label would not show.
    stale = sim.stale_table(build)
    if stale and any(c.tag and c.tag.startswith("table ") for c in cases):
        raise sim.SimError(f"{figure.name} labels auto's rows with tuning/default.json, but {stale}")
    from tucoll import cluster, sweep  # Dask, only where it is used

    done = done_keys(load_store(), current_only=refresh)
    # The last row of a sweep's cell counts, as in the tables built from it (a failed refresh hides
    # the older row it was meant to replace).
    sweeps = {path: store.latest(store.load(REPO_ROOT / path, sweep.KEY), sweep.KEY)
              for path in {c.reuse for c in cases if c.reuse}}
    if refresh:  # a sweep's rows stand in only where they are as current as a simulation would be
        sweeps = {path: data[store.sources_of(data) == sources_fingerprint()] for path, data in sweeps.items()}
    reused = sum(reuse_sweep_rows(c, sweeps[c.reuse], done) for c in cases if c.reuse)
    if reused:
        progress(f"[{figure.name}] {reused} rows taken from the sweeps' datasets")
        done = done_keys(load_store(), current_only=refresh)
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
    """The store's rows for exactly these cases, the last of each key."""
    if store.empty:
        return store
    wanted = {k for c in cases for k in c.keys()}
    mask = [k in wanted for k in store[KEY].itertuples(index=False, name=None)]
    return store[mask].drop_duplicates(KEY, keep="last").copy()


def earlier_sources(data: pd.DataFrame) -> str:
    """A line on the rows of `data` simulated with earlier library sources (or not known to be
    current), empty when there are none."""
    sources = store.sources_of(data)
    earlier = int((sources != sources_fingerprint()).sum())
    if not earlier:
        return ""
    unknown = int((sources == "").sum())
    return (f"{earlier} of {len(data)} rows were simulated with earlier library sources"
            + (f" ({unknown} from before the store kept them)" if unknown else "")
            + "; `--refresh` simulates them again")


# ------------------------------------------------------------------------------- drawing

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
    summary = figure.plot(data, out)
    note = earlier_sources(data)
    return out, summary + (f"\n({note})" if note else "")
