"""`tucoll sweep`: time every alltoallv algorithm and parameter choice over a grid of P, block sizes
and distributions, on this machine (mpirun) or on a simulated platform (`tucoll sim`).

The dataset is an append-only CSV (`.csv` or `.csv.gz`, see tucoll.store) with one row per
(where, P, ranks per node, mapping, distribution, size, spec): tucoll-bench's columns, among them
the workload's block-size statistics, plus where it ran. A sweep runs only the cells the dataset
lacks, so an interrupted one resumes. Cells whose run failed (a simulator crash, a timeout) are
stored with the reason in `failed` and are not retried unless --retry-failed. Each row keeps the
library sources it ran with (`sources`); --refresh runs again the cells whose row came from earlier
ones, and the last row of a cell is the one that counts.
"""

from __future__ import annotations

import functools
import io
import math
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

import pandas as pd

from tucoll import bench, native, sim, store
from tucoll import sizes as units
from tucoll.bench import BenchError, BenchRun, run_bench
from tucoll.bench import registry as bench_registry
from tucoll.build import Build, sources_fingerprint

# Max block sizes S of seed 003's benchmark: 31 levels from 2 B to 64 KiB (the powers of two and
# the points half-way between them on a log scale, 3 * 2^k).
PAPER_SIZES = sorted({2 ** k for k in range(1, 17)} | {3 * 2 ** k for k in range(0, 15)})

# model: a simulated platform's fingerprint (sim.Platform.fingerprint), empty for this machine: a
# changed machine model is swept again, and tables are built from its current rows only.
KEY = ["source", "nprocs", "ppn", "mapping", "dist", "requested_size", "requested", "model"]
LOCAL = "local"


# ------------------------------------------------------------------------------- the grid

def radix_values(lo: int, hi: int, grid: str) -> list[int]:
    """Radices 2, 4, ..., hi; the paper grid adds fine steps around 2, sqrt(hi) and hi, the coarse
    one keeps 2, 4, the power of two nearest sqrt(hi), four times that, and hi."""
    root = math.sqrt(hi)
    if grid == "coarse":
        near_root = 2 ** round(math.log2(max(root, 2)))
        values = {2, 4, near_root, 4 * near_root, hi}
    else:
        powers = {2 ** k for k in range(1, max(1, hi).bit_length() + 1)}
        values = powers | {3, round(root) - 1, round(root), round(root) + 1, hi - 1, hi}
    return sorted(v for v in values if lo <= v <= hi)


def batch_values(lo: int, peers: int, grid: str) -> list[int]:
    """Batch sizes (block_count): 1, 2, 4, ... below the number of peers, and 0 = all at once."""
    values = {1, 8} if grid == "coarse" else {2 ** k for k in range(0, max(1, peers).bit_length() + 1)}
    return sorted(v for v in values if lo <= v < peers) + ([0] if lo <= 0 else [])


def parameter_values(alg: dict, param: dict, nprocs: int, ppn: int, grid: str) -> list[int | str]:
    """The values of one parameter a sweep times at P = nprocs, Q = ppn: its range comes from the
    library (tucoll_param_range), its sampling from the registry's `grid`."""
    r = native.library().param_range("alltoallv", alg["name"], param["name"], nprocs, ppn)
    if param["grid"] == "radix":
        return radix_values(r.low, max(r.low, r.high if r.high is not None else r.low), grid)
    if param["grid"] == "batch":  # batches of fewer messages than the span, and 0 = all at once
        return batch_values(r.low, r.span, grid)
    if param["grid"] == "node-batch":  # batches of fewer nodes than there are (seed 003), and 0
        return batch_values(r.low, math.ceil(nprocs / ppn), grid)
    if param["grid"] == "choices":  # every named way (copy=kernel|memcpy|hybrid)
        return list(param["choices"])
    if param["grid"] == "default":  # a machine's threshold: what the library would use
        return [param["default"] if not param["choices"] else param["choices"][param["default"]]]
    # Any other parameter: its default, and its bounds when they are finite.
    return sorted({v for v in (r.low, param["default"], r.high) if v is not None})


def algorithm_specs(registry: dict, nprocs: int, ppn: int, grid: str = "paper",
                    only: Iterable[str] | None = None) -> list[str]:
    """Every alltoallv algorithm of the registry (meta-algorithms such as auto excepted) with
    every combination of its parameters' grid values, as spec strings. `only` keeps the given
    names, or exact specs (which are taken as given)."""
    wanted = list(only or [])
    specs: list[str] = [w for w in wanted if ":" in w]
    names = {w for w in wanted if ":" not in w}
    for alg in registry["collectives"]["alltoallv"]["algorithms"]:
        if alg.get("meta") or (wanted and alg["name"] not in names):
            continue
        if not alg["params"]:
            specs.append(alg["name"])
            continue
        grids = [parameter_values(alg, p, nprocs, ppn, grid) for p in alg["params"]]
        for combo in product(*grids):
            specs.append(alg["name"] + ":" + ",".join(f"{p['name']}={v}" for p, v in zip(alg["params"], combo)))
    return list(dict.fromkeys(specs))


# ----------------------------------------------------------------------------- where it runs

@dataclass
class Target:
    """This machine (`local`, mpirun) or a simulated platform."""

    build: Build
    platform: sim.Platform | None = None
    ppn: int | None = None
    mapping: str = "sequential"
    iters: int = 20
    timeout: float | None = None
    force: bool = False
    max_flows: int = sim.MAX_CONCURRENT_FLOWS
    scheduler: str | None = None  # simulations run on a Dask cluster (tucoll.cluster): this scheduler's,
    workers: int | None = None    # or this many local workers (default one per core)

    @property
    def source(self) -> str:
        return self.platform.name if self.platform else LOCAL

    @functools.cached_property
    def model(self) -> str:
        """The platform's fingerprint (read once: Sweep.key asks for it per cell), empty here."""
        return self.platform.fingerprint() if self.platform else ""

    def ranks_per_node(self, nprocs: int) -> int:
        if self.ppn:
            return min(self.ppn, nprocs)
        return min(self.platform.ranks_per_node, nprocs) if self.platform else nprocs

    def registry(self) -> dict:
        return bench_registry(self.build)  # the simulated build has the same registry

    def refused(self, spec: str, nprocs: int) -> bool:
        """Specs whose all-at-once traffic is too much to simulate at this P (see sim.check_flows)."""
        if not self.platform or self.force:
            return False
        flows = sim.concurrent_flows("alltoallv", spec, nprocs, self.ranks_per_node(nprocs))
        return flows > self.max_flows

    def run(self, nprocs: int, dist: str, sizes: list[int], specs: list[str]) -> pd.DataFrame:
        """One tucoll-bench job: `specs` interleaved at each of `sizes`; the bench's rows."""
        args = bench.arguments(specs, sizes, ("--dist", dist))
        ppn = self.ranks_per_node(nprocs)
        if self.platform:
            run = sim.SimRun(self.platform, nprocs, ppn, self.mapping, self.platform.vendor,
                             ["alltoallv", *args, "--format", "csv"],
                             shared_buffers=True, check=False)
            proc = sim.simulate(self.build, run, force=self.force, timeout=self.timeout)
            text = sim.relabel_mapping(proc.stdout, self.mapping)
            return pd.read_csv(io.StringIO(text), dtype=store.TEXT_COLUMNS, keep_default_na=False)
        args += ["--iters", str(self.iters), "--check", "--mapping", self.mapping, "--ppn", str(ppn)]
        return run_bench(self.build, BenchRun("alltoallv", nprocs, args), timeout=self.timeout)


# -------------------------------------------------------------------------------- the sweep

@dataclass
class Cell:
    nprocs: int
    dist: str
    size: int
    spec: str


@dataclass(frozen=True)
class Job:
    """One tucoll-bench run: `specs` interleaved at each of `sizes`."""
    nprocs: int
    dist: str
    sizes: tuple[int, ...]
    specs: tuple[str, ...]

    def label(self) -> str:
        return f"P={self.nprocs} {self.dist} sizes {self.sizes[0]}..{self.sizes[-1]}"


@dataclass
class Outcome:
    """What one run of (part of) a job gave: the bench's rows, why it failed, or neither (a run
    ended from outside, which leaves nothing to store)."""
    job: Job
    rows: pd.DataFrame | None
    wall: float
    failed: str = ""
    note: str = ""


def run_job(job: Job, target: Target) -> list[Outcome]:
    """Runs one job (on a Dask worker for a simulated target); a crashed simulation is split in
    halves until the failing spec is found."""
    started = time.monotonic()
    try:
        return [Outcome(job, target.run(job.nprocs, job.dist, list(job.sizes), list(job.specs)),
                        time.monotonic() - started)]
    except subprocess.TimeoutExpired:
        why = f"timeout after {target.timeout:.0f} s"
        return [Outcome(job, None, time.monotonic() - started, why, f"{job.label()}: gave up after "
                        f"{target.timeout:.0f} s; recorded as failed")]
    except (sim.SimError, BenchError) as err:
        if isinstance(err, sim.SimError) and err.killed:
            raise  # killed from outside: splitting would run it all again; the next sweep retries it
        if len(job.specs) > 1:
            half = len(job.specs) // 2
            return (run_job(Job(job.nprocs, job.dist, job.sizes, job.specs[:half]), target) +
                    run_job(Job(job.nprocs, job.dist, job.sizes, job.specs[half:]), target))
        lines = str(err).splitlines()
        reason = next((line.strip() for line in lines[1:]
                       if "CRITICAL" in line or "Segmentation" in line or "tucoll-bench:" in line), lines[0])[:200]
        return [Outcome(job, None, time.monotonic() - started, reason,
                        f"{job.label()} {job.specs[0]}: failed ({reason}); recorded as failed")]


@dataclass
class Sweep:
    dataset: Path
    target: Target
    nprocs: list[int]
    dists: list[str]
    sizes: list[int]
    grid: str = "paper"
    only: list[str] = field(default_factory=list)
    sizes_per_run: int = 4
    # Simulation only: specs per job (0: all of them in one). A simulated time does not depend on
    # what else ran in the job, so a cell's specs may run apart: a stopped sweep keeps what
    # finished, and the costly all-at-once exchanges no longer hold the cheap specs back. On this
    # machine every spec of a cell runs in one job, interleaved (their times must be comparable).
    specs_per_run: int = 0
    retry_failed: bool = False
    # Run again the cells whose stored row came from earlier library sources (or from before rows
    # kept them): a changed algorithm's times, which a plain sweep keeps, as it keys on the machine.
    refresh: bool = False

    def key(self, cell: Cell) -> tuple:
        return (self.target.source, cell.nprocs, self.target.ranks_per_node(cell.nprocs), self.target.mapping,
                cell.dist, cell.size, cell.spec, self.target.model)

    def cells(self) -> tuple[list[Cell], list[str]]:
        """Every cell of the grid, and notes on specs left out (refused by the simulator)."""
        registry = self.target.registry()
        cells, notes = [], []
        for nprocs in self.nprocs:
            ppn = self.target.ranks_per_node(nprocs)
            specs = algorithm_specs(registry, nprocs, ppn, self.grid, self.only)
            refused = [s for s in specs if self.target.refused(s, nprocs)]
            if refused:
                notes.append(f"P={nprocs}: {len(refused)} specs left out, more than {self.target.max_flows:,} flows "
                             f"at once (--max-flows, --force): {', '.join(refused[:4])}"
                             f"{' ...' if len(refused) > 4 else ''}")
            for dist, size, spec in product(self.dists, self.sizes, [s for s in specs if s not in refused]):
                cells.append(Cell(nprocs, dist, size, spec))
        return cells, notes

    def pending(self, cells: list[Cell]) -> tuple[list[Cell], int]:
        """The cells to run, and how many of the others the dataset holds from earlier library
        sources or unrecorded ones (which `refresh` runs again)."""
        data = store.latest(store.load(self.dataset, KEY), KEY)
        if self.retry_failed and "failed" in data.columns:
            data = data[data["failed"] == ""]
        current = store.sources_of(data) == sources_fingerprint()
        done = store.keys(data[current] if self.refresh else data, KEY)
        stale = set() if self.refresh else store.keys(data[~current], KEY)  # all of them done
        keys = [self.key(c) for c in cells]
        return [c for c, k in zip(cells, keys) if k not in done], sum(k in stale for k in keys)

    def jobs(self, pending: list[Cell]) -> list[Job]:
        """Pending cells grouped into bench runs: per (P, distribution), a few sizes at a time
        (and, simulated, a few specs at a time: specs_per_run); the largest P first (the longest
        to simulate)."""
        if self.specs_per_run and self.target.platform is None:
            raise ValueError("specs per run apply to simulations: on this machine a cell's specs run interleaved")
        groups: dict[tuple[int, str], list[Cell]] = {}
        for c in pending:
            groups.setdefault((c.nprocs, c.dist), []).append(c)
        jobs = []
        for (nprocs, dist), group in groups.items():
            sizes = sorted({c.size for c in group})
            for i in range(0, len(sizes), self.sizes_per_run):
                chunk = sizes[i:i + self.sizes_per_run]
                specs = tuple(dict.fromkeys(c.spec for c in group if c.size in chunk))
                step = self.specs_per_run or len(specs)
                jobs += [Job(nprocs, dist, tuple(chunk), specs[k:k + step]) for k in range(0, len(specs), step)]
        return sorted(jobs, key=lambda j: -j.nprocs)

    def record(self, outcome: Outcome) -> int:
        """Stores the rows of one outcome (or, for a failed one, a row per cell with the reason)."""
        job, rows = outcome.job, outcome.rows
        if rows is None and not outcome.failed:
            return 0  # nothing measured, nothing to keep (Sweep.outcomes)
        if outcome.failed:
            rows = pd.DataFrame([{"collective": "alltoallv", "algorithm": s.split(":")[0],
                                  "params": s.partition(":")[2], "nprocs": job.nprocs, "dist": job.dist, "size": size}
                                 for size in job.sizes for s in job.specs])
        elif len(rows) != len(job.sizes) * len(job.specs):
            raise BenchError(f"expected {len(job.sizes) * len(job.specs)} rows, got {len(rows)}")
        # tucoll-bench prints sizes in turn and, within a size, the algorithms in --alg order.
        rows.insert(0, "requested", [s for _ in job.sizes for s in job.specs])
        rows.insert(0, "simulated", int(self.target.platform is not None))
        rows.insert(0, "source", self.target.source)
        rows["requested_size"] = [size for size in job.sizes for _ in job.specs]
        rows["ppn"] = self.target.ranks_per_node(job.nprocs)
        rows["mapping"] = self.target.mapping
        rows["dist"] = job.dist
        rows["wall_s"] = round(outcome.wall, 2)
        rows["failed"] = outcome.failed
        rows["model"] = self.target.model
        rows["sources"] = sources_fingerprint()  # the library's, which the build compiled
        store.append(self.dataset, rows)
        return len(rows)

    def outcomes(self, jobs: list[Job]) -> Iterator[tuple[Job, list[Outcome]]]:
        """Runs the jobs: simulations in parallel on the Dask cluster, measurements on this machine
        one after another (two at once would disturb each other's times)."""
        from tucoll import cluster  # Dask, only where it is used

        if self.target.platform is None:
            for job in jobs:
                yield job, run_job(job, self.target)
            return
        for job, outcomes, error in cluster.run_unordered(run_job, jobs, self.target, scheduler=self.target.scheduler,
                                                           workers=self.target.workers):
            if error and not (isinstance(error, sim.SimError) and error.killed) and \
                    type(error).__name__ != "KilledWorker":
                raise error
            if error:  # a simulation or its worker ended from outside: stored as nothing, retried next time
                outcomes = [Outcome(job, None, 0.0, note=f"{job.label()}: not stored ({str(error).splitlines()[0][:160]}); "
                                                         "the next sweep runs it again")]
            yield job, outcomes


def current_rows(data: pd.DataFrame) -> pd.DataFrame:
    """The rows measured on a machine, and the simulated rows of each platform's current model: a
    dataset may still hold rows of an earlier model (kept, as the store only grows), which must
    not mix with the current ones. A source that names no platform known here is kept as it is."""
    if data.empty or "simulated" not in data.columns:
        return data
    current = {}
    for source in data["source"].unique():
        try:
            current[source] = sim.model_of(source)
        except sim.SimError:
            current[source] = None
    keep = [simulated != "1" or current[source] in (None, model)
            for source, simulated, model in zip(data["source"], data["simulated"].astype(str), data["model"])]
    return data[keep]


# The bench job that measures auto's reduction for a shape whose rows lack it: any cheap spec will
# do, the reduction is timed beside it (tucoll-bench's auto_reduction_us column).
REDUCTION_PROBE = ("uniform", 16, "tuna:radix=2")


def fill_reductions(sweep: Sweep, log: Callable[[str], None]) -> int:
    """Measures auto's own cost (`auto_reduction_us`) at each P of the sweep whose rows have no
    measurement of it — rows from before the bench timed it — with one small bench job, and
    writes it into those rows. Returns the rows filled."""
    data = store.load(sweep.dataset, KEY)
    filled = 0
    for nprocs in ([] if data.empty else sweep.nprocs):
        ppn = sweep.target.ranks_per_node(nprocs)
        where = {"source": sweep.target.source, "nprocs": str(nprocs), "ppn": str(ppn),
                 "mapping": sweep.target.mapping, "model": sweep.target.model}
        mask = pd.Series(True, index=data.index)
        for column, wanted in where.items():
            mask &= data[column].astype(str) == wanted
        shape = data[mask]
        measured = shape.get("auto_reduction_us", pd.Series(dtype=str)).astype(str)
        if shape.empty or (measured != "").any():
            continue
        dist, size, spec = REDUCTION_PROBE
        try:
            rows = sweep.target.run(nprocs, dist, [size], [spec])
            value = str(rows["auto_reduction_us"].iloc[0])
        except (subprocess.TimeoutExpired, sim.SimError, BenchError, KeyError, IndexError) as err:
            log(f"P={nprocs}: auto's reduction could not be measured ({str(err).splitlines()[0][:160]}); "
                "tucoll table estimates it for this shape")
            continue
        filled += store.fill(sweep.dataset, where, "auto_reduction_us", value)
        log(f"P={nprocs}: auto's reduction {value} µs, written into {len(shape)} earlier rows")
    return filled


def parse_sizes(text: str) -> list[int]:
    """`paper` (seed 003's 31 levels) or a comma-separated list with optional K/M suffixes."""
    if text == "paper":
        return list(PAPER_SIZES)
    return [units.parse(item) for item in text.split(",")]


def run_sweep(sweep: Sweep, console, dry_run: bool = False) -> int:
    """Runs what the dataset lacks, with a progress bar and a time estimate; returns rows added."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    cells, notes = sweep.cells()
    for note in notes:
        console.print(f"[yellow]{note}")
    pending, earlier = sweep.pending(cells)
    jobs = sweep.jobs(pending)
    console.print(f"{sweep.target.source}: {len(cells)} cells in the grid, {len(cells) - len(pending)} already in "
                  f"{sweep.dataset}, {len(pending)} to run in {len(jobs)} bench jobs")
    if earlier:
        console.print(f"[yellow]{earlier} of the cells already there were run with earlier library sources or before "
                      f"rows kept them (column `sources`); --refresh runs them again")
    if dry_run:
        return 0
    added = 0
    started = time.monotonic()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("eta"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False, disable=not jobs) as progress:
        task = progress.add_task("cells", total=len(pending))
        for i, (job, outcomes) in enumerate(sweep.outcomes(jobs), 1):
            for outcome in outcomes:
                if outcome.note:
                    progress.console.print(outcome.note)
                added += sweep.record(outcome)
            progress.update(task, completed=added, description=job.label())
            if not console.is_terminal:  # a log file sees no bar: one line per job, with the estimate
                elapsed = time.monotonic() - started
                eta = elapsed / max(added, 1) * (len(pending) - added)
                console.print(f"[{i}/{len(jobs)}] {job.label()}: {added}/{len(pending)} cells, "
                              f"{elapsed / 60:.1f} min, about {eta / 60:.0f} min left")
    fill_reductions(sweep, console.print)
    return added
