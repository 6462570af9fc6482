"""`tucoll calibrate --here`: this machine's mechanisms from microbenchmarks with its MPI, as a
platform file, and its predictions held against measurement."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from tucoll import sizes as units
from tucoll.build import REPO_ROOT
from tucoll.calibrate.simulations import SimCache, SimPoint, run_points


# ------------------------------------------------------------------------- this machine

HERE_DOCS = REPO_ROOT / "docs" / "calibration"  # where this repository keeps its own machine's run
# scripts/gpu-check.sh measures the same P, sizes and specs on a machine without this package.
HERE_NPROCS_FIT, HERE_NPROCS_PREDICT = (2, 4), (8, 16)
HERE_SIZES = (16, 1024, 65536)
HERE_SPECS = ("vendor", "tuna:radix=2", "tuna:radix=4")


# smpi/send-is-detached-thresh, which the here platform sets: a smaller send is eager (detached), and
# SimGrid charges it smpi/os (smpi/ois for MPI_Isend) and smpi/or; a send of this size or more is a
# rendezvous, charged neither.
DETACHED_BELOW = 65536


def charged_overheads(size: int, overhead: float) -> float:
    """What SimGrid charges a blocking message (the ping-pong's) of `size` bytes besides its latency
    and bytes: smpi/os and smpi/or, each `overhead`."""
    return 2 * overhead if size < DETACHED_BELOW else 0.0


HERE_ROUNDS = 5  # probe and measurement alternate this many times (a VM's speed drifts between them)
# Each row of HereFit.rows: the field, its name in the platform, its unit and scale, where it comes from.
PARAMETERS = (
    ("latency", "latency (smpi cluster lat)", "ns", 1e9,
     "ping-pong of 0 B: one way, less the send and receive overheads (at least 1 ns: the pieces' factors are of it)"),
    ("bandwidth", "bandwidth (loopback_bw)", "GB/s", 1e-9,
     "the most of the pieces' bandwidths (below): each piece's smpi/bw-factor is its own over this"),
    ("overhead", "smpi/ois", "ns", 1e9,
     "16 to 256 messages outstanding: time per added message (an alltoallv at P <= 128 holds fewer)"),
    ("blocking_overhead", "smpi/os, or", "ns", 1e9,
     "smpi/ois, or less where two of it exceed the shortest ping-pong one way: half of that, less 1 ns of latency"),
    ("match_cost", "smpi/match-cost", "ns", 1e9,
     "1024 receives matched last-first against first-first: extra time per entry walked"),
    ("copy_bandwidth", "copy bandwidth (TUCOLL_SIM_COPY_BW, smpi/host-copy-bw)", "GB/s", 1e-9,
     "memcpy of 1 MiB on one core, the same buffers each time (in cache, as a repeated call's are)"),
    ("copy_piece", "copy_piece (TUCOLL_SIM_COPY_PIECE, smpi/host-copy-piece)", "ns", 1e9,
     "memcpy of 4096 blocks of 1 to 15 B a cache line apart into one buffer, less their bytes at the copy "
     "bandwidth: per block"),
    ("call_cost", "call_cost (TUCOLL_SIM_CALL)", "ns", 1e9,
     "alltoallv of 16 B on MPI_COMM_SELF through tucoll_alltoallv_with(vendor), less MPI_Alltoallv's own"),
    ("coll_call_cost", "smpi/coll-call-cost", "ns", 1e9,
     "the MPI's alltoallv of 1 B blocks on the 2 ranks, back to back, less the same loop simulated on the "
     "platform without this cost"),
)


@dataclass(frozen=True)
class Piece:
    """The one-way time of a message from `start` bytes up to the next piece's start: `time` at the
    probed size `at`, and `bandwidth` for each byte beyond it (or below it)."""
    start: int
    at: int
    time: float
    bandwidth: float

    def intercept(self) -> float:
        return self.time - self.at / self.bandwidth if self.at else self.time


@dataclass(frozen=True)
class HereFit:
    """A machine's mechanisms, from `tucoll-bench machine` (two ranks on one node)."""
    latency: float         # one-way time of an empty message, less the two overheads
    bandwidth: float       # bytes/s between two ranks: the most of the pieces'
    pieces: tuple[Piece, ...]  # the ping-pong's one-way time by size, piece by piece
    overhead: float        # seconds per message, many outstanding (smpi/ois)
    match_cost: float      # seconds per posted receive an arrival walks past
    copy_bandwidth: float  # bytes/s of one core's memcpy (local copies inside the algorithms)
    copy_piece: float      # seconds per block copied apart from its bytes (0: not probed)
    call_cost: float       # seconds of a tucoll call before its exchange (0: not probed)
    cores: int
    # The MPI's own alltoallv of 1-byte blocks on the probe's ranks (seconds per call; 0: not
    # probed), and what it costs besides what the platform simulates of it: with_coll_call_cost.
    mpi_alltoallv: float = 0.0
    coll_call_cost: float = 0.0
    # smpi/os and smpi/or: the burst's rate per message (`overhead`) where the ping-pong holds two of
    # it, else what the ping-pong holds (an MPI whose messages in a burst cost each more than half
    # a small message's ping-pong, as MPICH's ch4 here: the burst's rate is then its nonblocking
    # sends', which SimGrid charges as smpi/ois, and the slower side of the burst).
    blocking_overhead: float = 0.0
    # Seconds between the first and the last rank leaving MPI_Barrier (0: not probed). Not a
    # parameter: the bench's median holds it (each rank's clock starts as it leaves the barrier,
    # the slowest rank's time is kept), its from_last_exit_us does not, and a simulated barrier
    # releases two alike ranks together. Reported beside the parameters.
    barrier_spread: float = 0.0
    # The fits of the probe's rounds one by one, when it has several: their spread, reported; and
    # the rounds left out, whose probe lacks rows (cut short).
    rounds: tuple["HereFit", ...] = ()
    skipped: tuple[int, ...] = ()

    def rows(self) -> pd.DataFrame:
        spread = len(self.rounds) > 1

        def row(field_: str, name: str, unit: str, scale: float, source: str) -> dict:
            shown = {"parameter": name, "value": _shown(getattr(self, field_), unit, scale)}
            if spread:
                values = sorted(getattr(r, field_) for r in self.rounds)
                shown[f"{len(self.rounds)} rounds: least to most"] = \
                    f"{_shown(values[0], unit, scale)} to {_shown(values[-1], unit, scale)}"
            return {**shown, "from": source}

        rows = [row(*parameter) for parameter in PARAMETERS]
        rows.append({"parameter": "smpi/nic-gap", "value": "0", **({f"{len(self.rounds)} rounds: least to most": "-"}
                     if spread else {}), "from": "one node: no message crosses an interface"})
        if self.barrier_spread > 0:
            rows.append(row("barrier_spread", "barrier exit spread (measured, not simulated)", "ns", 1e9,
                            "the first to the last rank leaving MPI_Barrier after the MPI's alltoallv, on one clock: "
                            "in the bench's median, not in its time from the last rank's exit nor in a simulated "
                            "one (SimGrid's barrier releases alike ranks together)"))
        return pd.DataFrame(rows)

    def with_coll_call_cost(self, simulated: float) -> "HereFit":
        """This fit with its smpi/coll-call-cost: the measured alltoallv of 1-byte blocks less
        `simulated`, the same loop simulated on the platform without the cost (its messages, which
        the ping-pong's pieces hold). Each round's measurement is held against the same simulation,
        of the median's platform. Nothing where the probe has no such row."""
        def of(fit_: HereFit) -> float:
            return max(0.0, fit_.mpi_alltoallv - simulated) if fit_.mpi_alltoallv > 0 else 0.0
        return replace(self, coll_call_cost=of(self),
                       rounds=tuple(replace(r, coll_call_cost=of(r)) for r in self.rounds))

    def factors(self) -> tuple[str, str]:
        """smpi/lat-factor and smpi/bw-factor, piece by piece (factor_values), as SimGrid reads
        them: a factor written at b holds for sizes above b (its FactorSet), so each piece is
        written at its start less one."""
        values = self.factor_values()
        return (";".join(f"{p.start - 1}:{lat:.6g}" for p, lat, _ in values),
                ";".join(f"{p.start - 1}:{bw:.6g}" for p, _, bw in values))

    def factor_values(self) -> list[tuple[Piece, float, float]]:
        """Each non-empty piece with its latency and bandwidth factors: SimGrid's time of a message
        of s bytes is os + lat x lat-factor(s) + s / (bw x bw-factor(s)) + or (the overheads below
        DETACHED_BELOW only), which each piece's line through its ping-pong points is made to be.
        An empty message is charged no overheads and the first piece's latency factor (SimGrid
        4.1, as simulate_probe shows), so its own time is not held: the pieces' table shows it
        against its measurement."""
        # A piece drawn from the overheads (see _pieces) has no latency: what is left is rounding.
        return [(p, _at_least_zero((p.intercept() - charged_overheads(p.start, self.blocking_overhead)) / self.latency),
                 p.bandwidth / self.bandwidth) for p in self.pieces if p.at]

    def piece_rows(self, simulated: pd.DataFrame | None = None) -> pd.DataFrame:
        """The point-to-point pieces as the docs show them; with `simulated` (the probe simulated on
        the fitted platform: simulate_probe) its one-way times beside the measured ones."""
        if simulated is not None:
            simulated = simulated[simulated["test"] == "pingpong"].set_index("bytes")["seconds"]
        factors = {id(p): (f"{lat:.6g}", f"{bw:.6g}") for p, lat, bw in self.factor_values()}
        rows = []
        for i, p in enumerate(self.pieces):
            row = {"sizes": f"{units.text(p.start)} to {units.text(self.pieces[i + 1].start - 1)}"
                   if i + 1 < len(self.pieces) else f"{units.text(p.start)} and more",
                   "ping-pong at": units.text(p.at), "one way": f"{p.time * 1e6:.3f} us"}
            times = sorted(r.pieces[i].time for r in self.rounds if len(r.pieces) == len(self.pieces))
            if len(self.rounds) > 1 and times:
                row[f"{len(self.rounds)} rounds: least to most"] = f"{times[0] * 1e6:.3f} to {times[-1] * 1e6:.3f} us"
            if simulated is not None:  # a SimGrid build from before a probe size was added lacks it
                t = simulated.get(p.at)
                row["simulated"] = f"{t * 1e6:.3f} us" if t is not None else "-"
                row["simulated / measured"] = round(t / p.time, 3) if t is not None else float("nan")
            lat_factor, bw_factor = factors.get(id(p), ("1", "1"))
            row.update({"bandwidth": _shown(p.bandwidth, "GB/s", 1e-9) if p.at else "-",
                        "smpi/lat-factor": lat_factor, "smpi/bw-factor": bw_factor})
            rows.append(row)
        return pd.DataFrame(rows)


def _at_least_zero(value: float) -> float:
    return value if value > 1e-9 else 0.0


def _shown(value: float, unit: str, scale: float) -> str:
    if value == 0:
        return f"0 {unit}"
    return f"{value * scale:.2f} {unit}" if unit == "GB/s" or value * scale < 10 else f"{value * scale:.0f} {unit}"


def probe_here(build) -> pd.DataFrame:
    """Runs `tucoll-bench machine` on two ranks with the build's MPI; its rows."""
    import io
    import subprocess

    cmd = build.launch(2, "tucoll-bench", ["machine"])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=build.environment(), timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return pd.read_csv(io.StringIO(proc.stdout))


def fit_here(probe: pd.DataFrame, cores: int) -> HereFit:
    """The mechanisms of the machine that `probe` (tucoll-bench machine's rows) measured, which has
    `cores` cores. A probe of several rounds (a `round` column) is fitted on the median of its
    rounds' times, test by test, and each round alone for the spread."""
    if "round" in probe.columns and probe["round"].nunique() > 1:
        rounds, skipped = {}, []
        every = set(probe["test"])  # a round without a test the others have was cut short
        for number, part in probe.groupby("round", sort=True):
            try:
                if set(part["test"]) != every:
                    raise KeyError(sorted(every - set(part["test"])))
                rounds[number] = _fit_one(part, cores)
            except (KeyError, IndexError, ValueError, TypeError):  # a round cut short: rows missing
                skipped.append(int(number))
        if not rounds:
            raise ValueError(f"no round of the probe has every test tucoll-bench machine prints (rounds {skipped})")
        whole = probe[probe["round"].isin(list(rounds))]
        median = whole.groupby(["test", "bytes", "count"], as_index=False, sort=False)["seconds"].median()
        return replace(_fit_one(median, cores), rounds=tuple(rounds.values()), skipped=tuple(skipped))
    return _fit_one(probe, cores)


def _fit_one(probe: pd.DataFrame, cores: int) -> HereFit:
    import numpy as np

    burst = probe[probe["test"] == "burst"].set_index("count")["seconds"]
    reversed_ = probe[probe["test"] == "burst_reversed"].set_index("count")["seconds"]
    # Per message, the burst's time falls to 256 outstanding (its fixed start spread thinner), then
    # rises again at 1024, where the MPI's shared-memory queues fill: a regime no alltoallv at the
    # P measured here reaches, so the rate is fitted below it.
    counts = burst.index[(burst.index >= 16) & (burst.index <= 256)]
    overhead = max(0.0, np.polyfit(counts.to_numpy(dtype=float), burst[counts].to_numpy(), 1)[0])
    w = int(burst.index.max())
    match_cost = max(0.0, (reversed_[w] - burst[w]) / (w * (w - 1) / 2))
    copies = probe[probe["test"] == "copy"]
    copy = copies.loc[copies["bytes"].idxmin()]  # 1 MiB (in cache); older probes: 64 MiB alone
    copy_bandwidth = copy["bytes"] / copy["seconds"]
    pingpong = probe[probe["test"] == "pingpong"].set_index("bytes")["seconds"]
    # The blocking sends' and receives' overheads: every size's ping-pong holds both and at least
    # 1 ns of latency (each piece's latency is a factor of it), so that no piece starts below them.
    blocking = min(overhead, max(0.0, (float(pingpong.min()) - 1e-9) / 2))
    pieces = _pieces(pingpong, copy_bandwidth, blocking)
    latency = max(1e-9, pieces[0].time - 2 * blocking)
    pieces_copied = probe[probe["test"] == "copy_pieces"]
    copy_piece = 0.0  # older probes
    if len(pieces_copied):
        row = pieces_copied.iloc[0]
        copy_piece = max(0.0, (row["seconds"] - row["count"] * row["bytes"] / copy_bandwidth) / row["count"])
    calls = probe[probe["test"].isin(["call_tucoll", "call_mpi"])].set_index("test")["seconds"]
    call_cost = max(0.0, calls["call_tucoll"] - calls["call_mpi"]) if len(calls) == 2 else 0.0  # older probes
    alltoallv = probe.loc[probe["test"] == "alltoallv_mpi", "seconds"]  # older probes: none
    spread = probe.loc[probe["test"] == "barrier_spread", "seconds"]  # older probes, or ranks on several nodes
    return HereFit(latency, max(p.bandwidth for p in pieces[1:]), pieces, overhead, match_cost, copy_bandwidth,
                   copy_piece, call_cost, cores, mpi_alltoallv=float(alltoallv.iloc[0]) if len(alltoallv) else 0.0,
                   barrier_spread=float(spread.iloc[0]) if len(spread) else 0.0, blocking_overhead=blocking)


def _pieces(pingpong: pd.Series, copy_bandwidth: float, overhead: float) -> tuple[Piece, ...]:
    """The one-way time by size (ping-pong, seconds by bytes) as pieces, one from each probed size
    to the next, each the line through its size's time towards the next's: the way SimGrid's SMPI
    is calibrated (Degomme et al., "Simulating MPI applications: the SMPI approach", IEEE TPDS
    2017: piecewise-linear, pieces where the MPI changes protocol), here at every probed size
    rather than at breaks found by a search, so that an MPI's switch from eager copies to a
    rendezvous shows as a step between two of them. An empty message is a piece of its own (it
    skips the payload's path). Times are made non-decreasing in size first (isotonic regression: a
    larger message never takes less, and sizes a few bytes apart differ by noise alone); no piece
    moves bytes faster than one core copies them; and a piece whose line would start below the two
    overheads SimGrid charges it (bandwidth falling with size, out of cache) takes the line from
    them through its size's time instead, since SimGrid has no negative latency. Were the
    overheads alone to exceed a size's time, the piece would keep its slope and no latency, and
    err by what they exceed it by; the fit's blocking overheads (smpi/os, or) are never more than
    half the shortest ping-pong, so that this does not arise."""
    from sklearn.isotonic import IsotonicRegression

    pingpong = pingpong.sort_index()
    sizes = pingpong.index.to_numpy(dtype=float)
    if sizes[0] != 0 or len(sizes) < 3:
        raise ValueError("the ping-pong needs an empty message and two sizes or more")
    times = IsotonicRegression().fit_transform(sizes, pingpong.to_numpy())
    pieces = [Piece(0, 0, float(times[0]), copy_bandwidth)]
    for i in range(1, len(sizes)):
        j = min(i + 1, len(sizes) - 1)  # the last piece continues its predecessor's slope
        rise = (times[j] - times[j - 1]) / (sizes[j] - sizes[j - 1])
        bandwidth = min(copy_bandwidth, 1 / rise) if rise > 0 else copy_bandwidth
        start = 1 if i == 1 else int(sizes[i])
        charged = charged_overheads(start, overhead)
        spare = times[i] - charged  # what the overheads leave of this size's time
        if spare > 0 and times[i] - sizes[i] / bandwidth < charged:
            bandwidth = min(copy_bandwidth, sizes[i] / spare)
        pieces.append(Piece(start, int(sizes[i]), float(times[i]), float(bandwidth)))
        # A piece across DETACHED_BELOW goes on as the same line where SimGrid stops charging the
        # overheads (a probe without a size there).
        end = int(sizes[i + 1]) if i + 1 < len(sizes) else None
        if start < DETACHED_BELOW and (end is None or end > DETACHED_BELOW):
            pieces.append(Piece(DETACHED_BELOW, int(sizes[i]), float(times[i]), float(bandwidth)))
    return tuple(pieces)


def write_here_platform(fit_: HereFit, flavor: str, path: Path) -> Path:
    """A one-node platform for `tucoll sim --platform` with this machine's fitted mechanisms."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    o, ob = f"0:{fit_.overhead:.6g}:0", f"0:{fit_.blocking_overhead:.6g}:0"
    lat_factor, bw_factor = fit_.factors()
    # The copy's two terms go to both consumers: the entry's copy_bandwidth and copy_piece to
    # tucoll's layer (TUCOLL_SIM_COPY_*), smpi/host-copy-* to SMPI's own copies; `tucoll sim` reads
    # them apart, so a platform edited by hand must change both.
    # Set only where measured: a platform that sets none leaves the patch's simulations as they were.
    coll_call = (f'\n    <prop id="smpi/coll-call-cost" value="{fit_.coll_call_cost:.6g}"/>'
                 if fit_.coll_call_cost > 0 else "")
    xml = f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- A machine of {fit_.cores} cores, as tucoll calibrate fitted it from tucoll-bench machine with its MPI
     ({flavor}): one node, every rank on it. -->
<platform version="4.1">
  <config>
    <prop id="smpi/os" value="{ob}"/>
    <prop id="smpi/ois" value="{o}"/>
    <prop id="smpi/or" value="{ob}"/>
    <prop id="smpi/match-cost" value="{fit_.match_cost:.6g}"/>
    <prop id="smpi/send-is-detached-thresh" value="{DETACHED_BELOW}"/>
    <prop id="smpi/bw-factor" value="{bw_factor}"/>
    <prop id="smpi/lat-factor" value="{lat_factor}"/>
    <prop id="smpi/host-copy-bw" value="{fit_.copy_bandwidth:.6g}"/>
    <prop id="smpi/host-copy-piece" value="{fit_.copy_piece:.6g}"/>{coll_call}
  </config>
  <zone id="world" routing="Full">
    <cluster id="here" prefix="here-" radical="0-0" suffix=".sim" speed="1Gf" core="64"
             bw="{fit_.bandwidth:.6g}Bps" lat="{fit_.latency:.6g}s"
             loopback_bw="{fit_.bandwidth:.6g}Bps" loopback_lat="{fit_.latency:.6g}s"/>
  </zone>
</platform>
"""
    path.with_suffix(".xml").write_text(xml)
    entry = {"file": path.with_suffix(".xml").name, "hosts": [["here-", 1, ".sim"]], "ranks_per_node": 64,
             "vendor": "mpich" if flavor == "mpich" else "ompi", "copy_bandwidth": fit_.copy_bandwidth,
             "copy_piece": fit_.copy_piece, "call_cost": fit_.call_cost,
             "summary": f"a machine of {fit_.cores} cores ({flavor}), fitted by tucoll calibrate --here"}
    path.with_suffix(".json").write_text(json.dumps(entry, indent=2) + "\n")
    return path.with_suffix(".json")


def simulate_probe(platform_file: Path, build_dir: str | None = None) -> pd.DataFrame:
    """`tucoll-bench machine` simulated on a fitted platform (two ranks): its rows, as the real
    probe's, so that what the platform makes of each point-to-point time can be held against it."""
    import io

    from tucoll import sim

    platform = sim.Platform.load(str(platform_file))
    run = sim.SimRun(platform, 2, 2, "sequential", platform.vendor, ["machine"], shared_buffers=False, check=False)
    return pd.read_csv(io.StringIO(sim.simulate(sim.sim_build(build_dir), run, force=True).stdout))


def measure_here(build, iters: int = 20, log=print) -> pd.DataFrame:
    """Uniform alltoallv with the real MPI (tucoll-bench, interleaved) at the fit P and the larger P."""
    from tucoll.bench import BenchRun, arguments, run_bench

    frames = []
    for nprocs in HERE_NPROCS_FIT + HERE_NPROCS_PREDICT:
        args = arguments(here_specs(nprocs), HERE_SIZES) + ["--iters", str(iters)]
        frames.append(run_bench(build, BenchRun("alltoallv", nprocs, args)))
        log(f"measured P={nprocs}")
    return pd.concat(frames, ignore_index=True)


def probe_and_measure_here(build, rounds: int = HERE_ROUNDS, iters: int = 20,
                           log=print) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The probe and the measurement, alternating `rounds` times so that both see the machine as it
    drifts (a VM's speed moves by factors between hours): their rows, each with its `round`."""
    probes, measured = [], []
    for r in range(1, rounds + 1):
        log(f"round {r} of {rounds}: probe (tucoll-bench machine, 2 ranks), then alltoallv")
        probes.append(probe_here(build).assign(round=r))
        measured.append(measure_here(build, iters, log=log).assign(round=r))
    return pd.concat(probes, ignore_index=True), pd.concat(measured, ignore_index=True)


def read_rounds(paths: list[str], **read_csv) -> pd.DataFrame:
    """CSV files of a probe or a measurement, as one frame with a `round` column: a file's own, or
    the file's place in `paths` (scripts/gpu-check.sh writes a file per round)."""
    frames = [pd.read_csv(path, **read_csv) for path in paths]
    numbered = ["round" in frame.columns for frame in frames]
    if any(numbered) and not all(numbered):
        raise ValueError("give either files with a round column or a file per round, not both")
    return pd.concat(frames if all(numbered) else [f.assign(round=i) for i, f in enumerate(frames, start=1)],
                     ignore_index=True)


# tucoll-bench's time of a call from the last rank's barrier exit, where its ranks read one clock
# (one node, or a global MPI_Wtime): free of the barrier's exit skew, and simulated alike
# (SimPoint.timed) for the prediction.
FROM_LAST_EXIT = "from_last_exit_us"


def compared_time(measured: pd.DataFrame) -> str:
    """The bench's column a prediction is held against: from_last_exit_us where every row has it,
    else median_us (each rank timed from its own barrier exit, the slowest kept), which is all
    an older bench gives, or one whose ranks read no common clock."""
    if FROM_LAST_EXIT in measured.columns and pd.to_numeric(measured[FROM_LAST_EXIT], errors="coerce").notna().all():
        return FROM_LAST_EXIT
    return "median_us"


def median_of_rounds(measured: pd.DataFrame) -> pd.DataFrame:
    """One row per measured point: the median of its rounds' medians (`median_us`, and
    `from_last_exit_us` where the bench timed it), how many rounds measured it
    (`measured_rounds`), and the most over the least of them (`rounds_spread`, of the time
    `compared_time` picks: 1 for a single round)."""
    if "round" not in measured.columns:
        measured = measured.assign(round=1)
    keys = [c for c in ("collective", "algorithm", "params", "nprocs", "ppn", "dist", "size", "type")
            if c in measured.columns]
    columns = [c for c in ("median_us", FROM_LAST_EXIT) if c in measured.columns]
    times = measured.assign(**{c: pd.to_numeric(measured[c], errors="coerce") for c in columns})
    grouped = times.groupby(keys, sort=False, dropna=False)
    compared = grouped[FROM_LAST_EXIT] if compared_time(times) == FROM_LAST_EXIT else grouped["median_us"]
    return grouped[columns].median().assign(
        measured_rounds=grouped.size(), rounds_spread=compared.max() / compared.min()).reset_index()


def here_specs(nprocs: int) -> list[str]:
    """HERE_SPECS that run at this P (TuNA's radix runs from 2 to P)."""
    return [s for s in HERE_SPECS if not s.startswith("tuna:radix=") or int(s.split("=")[1]) <= nprocs]


def here_table(measured: pd.DataFrame, platform_file: Path, cores: int, scheduler: str | None = None,
               workers: int | None = None, sim_build_dir: str | None = None, log=print) -> pd.DataFrame:
    """Predicted (simulated on the fitted platform) against `measured` (tucoll-bench's rows with the
    real MPI) for uniform alltoallv at the fit P and the larger P, per algorithm and size; `cores`
    of the measuring machine say which P were oversubscribed."""
    from tucoll.bench import spec as spec_of

    column = compared_time(measured)
    measured = median_of_rounds(measured)
    rows = []
    # Timed alike: the simulated bench's own column of the measured one.
    points = [SimPoint(str(platform_file), int(row["nprocs"]), int(row["nprocs"]), int(row["size"]), spec_of(row),
                       timed=column) for _, row in measured.iterrows()]
    cache = SimCache(Path(platform_file).with_name(Path(platform_file).stem + "-simulated.csv"))
    predicted = run_points(points, cache, scheduler=scheduler, workers=workers, build_dir=sim_build_dir, log=log)
    for point, (_, row) in zip(points, measured.iterrows()):
        rows.append({"P": point.nprocs, "role": "fit range" if point.nprocs in HERE_NPROCS_FIT else "predicted",
                     "oversubscribed": point.nprocs > cores, "S": units.text(point.size), "spec": point.spec,
                     "measured_us": row[column], "rounds' spread": row["rounds_spread"],
                     **({"slowest from own exit_us": row["median_us"]} if column == FROM_LAST_EXIT else {}),
                     "predicted_us": predicted[point] * 1e6,
                     "predicted / measured": predicted[point] * 1e6 / row[column]})
    return pd.DataFrame(rows)
