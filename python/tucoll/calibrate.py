"""`tucoll calibrate`: the modelled machines held against what the seeds measured on the real ones.

The seeds' measurements are data/published/seeds.csv. Its fit set is the only thing a mechanism's
parameter is fitted on; the check set is only reported. Each machine model carries two per-message
mechanisms beside its links (sim/simgrid-patches): a matching cost per queue entry the receiving MPI
walks (smpi/match-cost) and a network interface's time per message, shared by a node's ranks
(smpi/nic-gap). The fit set pins one of them per machine (one vendor time each); the other is set
from the machine's documentation, as its platform file says.

The vendor's P^2 messages cannot be simulated at the seeds' P (8192: 67 million messages), so its
time there comes from a closed form of the same model (vendor_time), held against simulation at
the P where both run (validation_points) and labelled analytic. So does TuNA's (tuna_time) where
the cache holds no simulation of it at that P (8192 ranks take 20 GB and a quarter of an hour
per spec here).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
from scipy.optimize import brentq

from tucoll import sim
from tucoll import sizes as units
from tucoll.build import REPO_ROOT

SEEDS = REPO_ROOT / "data" / "published" / "seeds.csv"


# ---------------------------------------------------------------------------- the mechanisms

def _per_message(value: str) -> tuple[float, float]:
    """An SMPI piecewise overhead ("0:1e-6:3e-11;..."): the first piece's (seconds, seconds per byte)."""
    _, fixed, per_byte = value.split(";")[0].split(":")
    return float(fixed), float(per_byte)


def _rate(text: str) -> float:
    """A SimGrid bandwidth ("25GBps") in bytes per second."""
    for suffix, scale in (("GBps", 1e9), ("MBps", 1e6), ("kBps", 1e3), ("Bps", 1.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    raise ValueError(f"bandwidth {text!r}")


@dataclass(frozen=True)
class Mechanisms:
    """What a platform file charges a message, in seconds (per byte where said)."""
    isend: float
    isend_per_byte: float
    recv: float
    recv_per_byte: float
    match_cost: float      # smpi/match-cost: per queue entry examined
    nic_gap: float         # smpi/nic-gap: per inter-node message, per node, each way
    link_bandwidth: float  # bytes/s of one network link

    @classmethod
    def of(cls, platform: sim.Platform) -> "Mechanisms":
        root = ET.parse(platform.file).getroot()
        props = {p.get("id"): p.get("value") for p in root.iter("prop")}
        cluster = next(root.iter("cluster"))
        isend, isend_b = _per_message(props.get("smpi/ois", "0:0:0"))
        recv, recv_b = _per_message(props.get("smpi/or", "0:0:0"))
        return cls(isend, isend_b, recv, recv_b, float(props.get("smpi/match-cost", 0)),
                   float(props.get("smpi/nic-gap", 0)), _rate(cluster.get("bw")))


# --------------------------------------------------------------------- the vendor, analytic

def queue_walk(selector: str, nprocs: int) -> float:
    """Queue entries a rank's matching engine examines in one vendor alltoallv.

    Open MPI's basic linear exchange (its choice at P >= 1024, and at 4..63 and 128..255) posts
    all P - 1 receives in rank order, then the sends: messages arrive in no order related to
    it, and each walks on average half of what is still posted, P^2 / 4 in all. MPICH's
    (SMPI's alltoallv__mpich) keeps a window of 4 receives and sends: about one entry each."""
    if selector == "ompi":
        if not (4 <= nprocs < 64 or 128 <= nprocs < 256 or nprocs >= 1024):
            raise ValueError(f"Open MPI's selection runs pairwise at P={nprocs}: no closed form here")
        return nprocs * nprocs / 4
    if selector == "mpich":
        return nprocs - 1
    raise ValueError(f"no closed form for the {selector} selection")


def vendor_time(platform: sim.Platform, m: Mechanisms, selector: str, nprocs: int, ppn: int, block: int) -> float:
    """The vendor's uniform alltoallv on `m` in closed form (seconds): the largest of what each
    rank does one message after another (overheads and queue walk), what each node's interface
    does (ppn * (P - ppn) messages each way at nic_gap), and what the busiest link carries. Exact when one
    of them dominates, as at the seeds' P; below the model where two are close (see validate)."""
    peers, remote = nprocs - 1, max(nprocs - ppn, 0)
    rank = peers * (m.isend + m.recv + block * (m.isend_per_byte + m.recv_per_byte))
    rank += m.match_cost * queue_walk(selector, nprocs)
    nic = 2 * ppn * remote * m.nic_gap
    return max(rank, nic, exchange_link_time(platform, m, nprocs, ppn, block))


def exchange_link_time(platform: sim.Platform, m: Mechanisms, nprocs: int, ppn: int, block: int) -> float:
    """How long the links take to carry every rank's `block` bytes to every rank of the other nodes
    at once (seconds): a node's own link carries its (N - 1) node-to-node shares; on a torus every
    share crosses its hop count of links, spread over each node's 2 x dims directional links."""
    topology = Topology.of(platform)
    nodes = max(1, nprocs // ppn)
    flows = float(nodes - 1)
    if topology.kind == "TORUS":
        flows = sum(sum(topology.steps(nodes, shift)) for shift in range(1, nodes)) / (2 * len(topology.params))
    return ppn * ppn * block * flows / m.link_bandwidth


def fit_parameter(platform: sim.Platform, m: Mechanisms, name: str, selector: str, nprocs: int, ppn: int,
                  block: int, measured: float) -> float:
    """The value of mechanism `name` (match_cost or nic_gap) at which vendor_time equals `measured`
    seconds; NaN when no value can (the other terms alone already exceed it)."""
    def excess(value: float) -> float:
        return vendor_time(platform, replace(m, **{name: value}), selector, nprocs, ppn, block) - measured

    if excess(0.0) >= 0:
        return math.nan
    high = 1e-9
    while excess(high) < 0:
        high *= 2
    return brentq(excess, 0.0, high, xtol=1e-15, rtol=1e-12)


# ----------------------------------------------------------------------- TuNA, analytic

@dataclass(frozen=True)
class Topology:
    """The cluster's shape as SimGrid builds it (topology and topo_parameters)."""
    kind: str
    params: tuple

    @classmethod
    def of(cls, platform: sim.Platform) -> "Topology":
        cluster = next(ET.parse(platform.file).getroot().iter("cluster"))
        kind, text = cluster.get("topology", "FLAT"), cluster.get("topo_parameters", "")
        if kind == "TORUS":
            return cls(kind, tuple(int(d) for d in text.split(",")))
        return cls(kind, ())

    def shift_load(self, nodes: int, shift: int) -> float:
        """Flows per link on the busiest link, in units of one link's bandwidth, when every node of
        `nodes` sends one flow to the node `shift` after it.

        Torus (dimension-ordered, shortest routing): a shift of d along a ring of n puts
        min(d, n - d) flows on each of its links; the busiest dimension sets the pace. Anything
        else, the dragonfly included: the node's own link, as the platform files build their
        fabrics without taper (polaris-like's comment says why), and simulation agrees up to
        P = 2048 (docs/CALIBRATION.md); its group-crossing cost beyond is left out."""
        if shift % nodes == 0:
            return 0.0
        return float(max(self.steps(nodes, shift), default=1)) if self.kind == "TORUS" else 1.0

    def steps(self, nodes: int, shift: int) -> list[int]:
        """A torus' hops along each dimension between a node and the node `shift` after it."""
        out, rest = [], shift % nodes
        for n in self.params:
            step = rest % n
            out.append(min(step, n - step))
            rest //= n
        return out


@functools.lru_cache(maxsize=None)
def tuna_rounds(nprocs: int, radix: int) -> tuple[tuple[int, int], ...]:
    """TuNA's rounds (seed 000, Alg. 1) as (distance, blocks sent): for each digit position x and
    digit z, the blocks whose relative index has digit z at x travel to rank + z * r^x."""
    rounds, span = [], 1
    while span < nprocs:
        for z in range(1, radix):
            if z * span >= nprocs:
                break
            cycle = span * radix  # indices i with digit z at x: span of every cycle of span * r
            blocks = nprocs // cycle * span + min(span, max(0, nprocs % cycle - z * span))
            rounds.append((z * span, blocks))
        span *= radix
    return tuple(rounds)


def tuna_time(platform: sim.Platform, m: Mechanisms, nprocs: int, ppn: int, block: int, radix: int) -> float:
    """TuNA's uniform alltoallv on `m` in closed form (seconds): its rounds one after another, each
    one message to one peer (uniform blocks need no size exchange). A round costs the rank's
    overheads and its packing and unpacking copies, a network latency, and the longest of what the
    node's traffic takes on its busiest link, on shared memory, and on its interface (nic_gap per
    message sent and per message received)."""
    topology = Topology.of(platform)
    latency, loop_bw, loop_latency = _links(platform)
    nodes = max(1, nprocs // ppn)
    total = 0.0
    for distance, blocks in tuna_rounds(nprocs, radix):
        data = blocks * block
        # Ranks whose peer is on another node, and how far away (sequential mapping).
        near, far = distance // ppn, distance // ppn + 1
        remote_far = distance % ppn  # ranks of a node that reach `far` nodes away; the rest `near`
        remote_near = ppn - remote_far if near % nodes else 0
        remote = remote_far * (far % nodes != 0) + remote_near
        cpu = m.isend + m.recv + data * (m.isend_per_byte + m.recv_per_byte)
        cpu += 2 * data / platform.copy_bandwidth
        link = max(remote_near * data * topology.shift_load(nodes, near),
                   remote_far * data * topology.shift_load(nodes, far)) / m.link_bandwidth
        local = data / loop_bw if remote < ppn else 0.0  # a node's loopback is a fat pipe in SimGrid
        nic = 2 * remote * m.nic_gap
        total += cpu + (latency if remote else loop_latency) + max(link, local, nic)
    return total


def _links(platform: sim.Platform) -> tuple[float, float, float]:
    """(network latency of a typical path, loopback bandwidth, loopback latency) of the cluster."""
    cluster = next(ET.parse(platform.file).getroot().iter("cluster"))
    hop = _seconds(cluster.get("lat"))
    topology = Topology.of(platform)
    # Links a message crosses: a dragonfly's 3 to 5 (its node links and 1 to 3 between routers),
    # a torus' average hop count plus the two node links; a switch's two.
    hops = {"DRAGONFLY": 4, "TORUS": sum(n / 4 for n in topology.params) + 2}.get(topology.kind, 2)
    return hops * hop, _rate(cluster.get("loopback_bw")), _seconds(cluster.get("loopback_lat"))


def _seconds(text: str) -> float:
    for suffix, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    raise ValueError(f"time {text!r}")


# ------------------------------------------------------------------------ the calibration

OPTIONS = {"match_cost": "smpi/match-cost", "nic_gap": "smpi/nic-gap"}


@dataclass(frozen=True)
class Machine:
    """A seed's machine: the platform modelling it, the mechanism its fit-set vendor time pins,
    and the other mechanism's value with its source."""
    name: str
    base: str
    fitted: str
    fixed: str
    fixed_value: float
    fixed_source: str
    fitted_source: str
    summary: str

    @property
    def calibrated(self) -> str:
        return f"{self.base.removesuffix('-like')}-calibrated"


MACHINE_LIST = [
    Machine("polaris", "polaris-like", "nic_gap", "match_cost", 0.0,
            "Slingshot's Cassini NIC matches MPI messages in hardware (libfabric fi_cxi(7), hardware tag "
            "matching): no software queue walk; what matching costs is part of the interface's time per "
            "message",
            "fitted: the vendor's 51.8 ms at P = 8192, 16 B (seed 000, V-A), where the MPICH exchange's "
            "few queued messages leave the interface's 2 x 32 x 8160 messages per node as its cost",
            "ALCF Polaris: Slingshot dragonfly, Cray MPICH selection, 32 ranks per node; calibrated"),
    Machine("fugaku", "fugaku-like", "match_cost", "nic_gap", 0.0,
            "no independent measurement of Tofu-D's rate per message; the fit set holds one vendor time, "
            "which cannot pin two mechanisms, so this one is left out (an interface rate would lower the "
            "fitted matching cost)",
            "fitted: the vendor's 408.33 ms at P = 8192, 16 B (seed 000, V-A), where Open MPI's basic "
            "linear exchange posts all P - 1 receives, about P^2 / 4 = 16.8 million entries walked per rank",
            "RIKEN Fugaku: Tofu-D torus, Open MPI selection, 32 ranks per node as in seed 000; calibrated"),
]
MACHINE_BY_NAME = {m.name: m for m in MACHINE_LIST}


def seeds() -> pd.DataFrame:
    return pd.read_csv(SEEDS, dtype=str, keep_default_na=False)


def fit(table: pd.DataFrame | None = None) -> dict[str, dict[str, float]]:
    """Each machine's two mechanism values: the fitted one from its fit-set vendor time (through
    vendor_time), the other as its Machine says."""
    table = seeds() if table is None else table
    fits = {}
    for machine in MACHINE_LIST:
        rows = table[(table["machine"] == machine.name) & (table["set"] == "fit") &
                     (table["algorithms"] == "vendor") & (table["quantity"] == "time")]
        if len(rows) != 1:
            raise ValueError(f"{SEEDS}: expected one fit-set vendor time for {machine.name}, found {len(rows)}")
        row = rows.iloc[0]
        platform = sim.Platform.load(machine.base)
        m = replace(Mechanisms.of(platform), **{machine.fixed: machine.fixed_value})
        value = fit_parameter(platform, m, machine.fitted, platform.vendor, int(row["nprocs"]), int(row["ppn"]),
                              units.parse(row["block_bytes"]), _seconds_of(row))
        if math.isnan(value):
            raise ValueError(f"{machine.name}: the model's other costs already exceed the published "
                             f"{row['value']} {row['unit']}; no {OPTIONS[machine.fitted]} fits it")
        fits[machine.name] = {machine.fitted: value, machine.fixed: machine.fixed_value}
    return fits


def _seconds_of(row) -> float:
    return float(row["value"]) * {"ms": 1e-3, "us": 1e-6, "s": 1.0}[row["unit"]]


def calibrated_path(machine: Machine) -> Path:
    return sim.PLATFORM_DIR / "calibrated" / f"{machine.calibrated}.json"


def write_platforms(fits: dict[str, dict[str, float]]) -> list[Path]:
    """The calibrated platforms (sim/platforms/calibrated/): each base platform with its two
    mechanisms set, the seeds' 32 ranks per node, and where each value comes from."""
    paths = []
    for machine in MACHINE_LIST:
        values = fits[machine.name]
        note = "\n".join([
            f"  {machine.calibrated}: {machine.base} with the per-message mechanisms calibrated on seed 000's",
            "  fit set (data/published/seeds.csv), written by tucoll calibrate: do not edit by hand.",
            f"  - {OPTIONS[machine.fitted]} = {values[machine.fitted]:.6g} s: {machine.fitted_source}.",
            f"  - {OPTIONS[machine.fixed]} = {values[machine.fixed]:.6g} s: {machine.fixed_source}.",
            "  Everything else is the base platform's, with the sources its own comment gives.",
        ])
        path = sim.derived_platform(machine.base, {OPTIONS[k]: f"{v:.9g}" for k, v in values.items()},
                                    calibrated_path(machine), summary=machine.summary, note=note)
        entry = json.loads(path.read_text())
        entry["ranks_per_node"] = 32  # the seeds' runs (seed 000, V: 32 ranks per node on both machines)
        path.write_text(json.dumps(entry, indent=2) + "\n")
        paths.append(path)
    return paths


# ------------------------------------------------------------------------- simulations

@dataclass(frozen=True)
class SimPoint:
    """One simulated uniform alltoallv: a spec at one P and block size on a platform."""
    platform: str
    nprocs: int
    ppn: int
    size: int
    spec: str


def model_fingerprint(platform: sim.Platform) -> str:
    """What a simulated time depends on: the platform file's content (not its comments), the
    SimGrid patches and the library's sources; a result cached under another fingerprint is
    simulated again."""
    digest = hashlib.sha256(ET.canonicalize(from_file=str(platform.file), with_comments=False,
                                            strip_text=True).encode())
    digest.update(repr(platform.copy_bandwidth).encode())
    for path in sorted((REPO_ROOT / "sim" / "simgrid-patches").glob("*.patch")) + _library_sources():
        digest.update(path.relative_to(REPO_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def _library_sources() -> list[Path]:
    return sorted(p for d in ("src", "include") for p in (REPO_ROOT / d).rglob("*") if p.is_file())


def simulate_point(point: SimPoint, build_dir: str | None = None) -> float:
    """The simulated time of `point` in seconds (run by a Dask worker)."""
    from tucoll import sweep  # sweep imports the bench machinery; only workers need it

    target = sweep.Target(sim.sim_build(build_dir), sim.Platform.load(point.platform), ppn=point.ppn, force=True)
    rows = target.run(point.nprocs, "uniform", [point.size], [point.spec])
    return float(rows["median_us"].iloc[0]) * 1e-6


class SimCache:
    """Simulated times kept in a CSV with the model's fingerprint, so that a report reruns only what
    the model's change made stale."""
    COLUMNS = ["platform", "model", "nprocs", "ppn", "size", "spec", "seconds"]

    def __init__(self, path: Path):
        self.path = Path(path)
        self.frame = (pd.read_csv(self.path, dtype={"spec": str, "model": str, "platform": str})
                      if self.path.is_file() else pd.DataFrame(columns=self.COLUMNS))
        self.times = {(r.platform, r.model, int(r.nprocs), int(r.ppn), int(r.size), r.spec): float(r.seconds)
                      for r in self.frame.itertuples()}
        self.fingerprints: dict[str, str] = {}

    def model(self, platform: str) -> str:
        if platform not in self.fingerprints:
            self.fingerprints[platform] = model_fingerprint(sim.Platform.load(platform))
        return self.fingerprints[platform]

    def get(self, point: SimPoint) -> float | None:
        return self.times.get((point.platform, self.model(point.platform), point.nprocs, point.ppn, point.size,
                               point.spec))

    def points(self, platform: str) -> list[SimPoint]:
        """The current points cached for `platform`."""
        model = self.model(platform)
        return [SimPoint(p, n, ppn, size, spec) for (p, m, n, ppn, size, spec) in self.times
                if p == platform and m == model]

    def put(self, point: SimPoint, seconds: float) -> None:
        key = (point.platform, self.model(point.platform), point.nprocs, point.ppn, point.size, point.spec)
        self.times[key] = seconds
        self.frame = pd.concat([self.frame, pd.DataFrame([dict(zip(self.COLUMNS, (*key, seconds)))])],
                               ignore_index=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.frame.to_csv(self.path, index=False)


def run_points(points: list[SimPoint], cache: SimCache, scheduler: str | None = None, workers: int | None = None,
               build_dir: str | None = None, log=print) -> dict[SimPoint, float]:
    """Simulates the points `cache` lacks, in parallel on a Dask cluster: local worker processes
    by default (one per core), or the scheduler at `scheduler` (tcp://host:port)."""
    from dask.distributed import Client, LocalCluster, as_completed

    results = {p: t for p in points if (t := cache.get(p)) is not None}
    pending = [p for p in dict.fromkeys(points) if p not in results]
    if not pending:
        return results
    if scheduler:
        client = Client(scheduler)
    else:
        client = Client(LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                     processes=True, dashboard_address=None))
    with client:
        # The slowest first (most ranks), so that the cluster does not end waiting on one of them.
        pending.sort(key=lambda p: (-p.nprocs * (p.nprocs if p.spec == "vendor" else 1), p.size))
        futures = {client.submit(simulate_point, p, build_dir, pure=False): p for p in pending}
        for done in as_completed(futures):
            point = futures[done]
            seconds = done.result()
            cache.put(point, seconds)
            results[point] = seconds
            log(f"simulated {point.platform} P={point.nprocs} S={units.text(point.size)} {point.spec}: "
                f"{seconds * 1e6:.1f} us ({len(results)}/{len(points)})")
    return results


# --------------------------------------------------------------- the closed forms, checked

# Where the closed forms are held against simulation: the P at which the vendor's P^2 messages
# still simulate in minutes, and at which Open MPI's selection runs its basic linear exchange.
VALIDATION = {  # machine: spec: {block size: P}
    "polaris": {"vendor": {16: (256, 512, 1024, 2048), 1024: (256, 512, 1024)},
                "tuna": {16: (256, 512, 1024, 2048), 1024: (256, 512, 1024, 2048)}},
    # The torus makes every event a full solve: the vendor at 1 KiB past P = 128 takes an hour here.
    "fugaku": {"vendor": {16: (128, 192), 1024: (128,)},
               "tuna": {16: (128, 256, 512), 1024: (128, 256, 512)}},
}
VALIDATION_RADICES = (2, 4, 16)


def validation_points() -> list[SimPoint]:
    points = []
    for machine in MACHINE_LIST:
        for size, nprocs_list in VALIDATION[machine.name]["vendor"].items():
            points += [SimPoint(machine.calibrated, n, 32, size, "vendor") for n in nprocs_list]
        for size, nprocs_list in VALIDATION[machine.name]["tuna"].items():
            points += [SimPoint(machine.calibrated, n, 32, size, f"tuna:radix={r}")
                       for n in nprocs_list for r in VALIDATION_RADICES if r < n]
    return points


def closed_form(point: SimPoint) -> float:
    """The closed form's time of a simulated point (seconds)."""
    platform = sim.Platform.load(point.platform)
    m = Mechanisms.of(platform)
    if point.spec == "vendor":
        return vendor_time(platform, m, platform.vendor, point.nprocs, point.ppn, point.size)
    radix = int(point.spec.split("radix=")[1])
    return tuna_time(platform, m, point.nprocs, point.ppn, point.size, radix)


# ------------------------------------------------------------------- against the seeds

# Radices the closed form tries for "TuNA with ideal r" at the seeds' P (cheap: no simulation).
IDEAL_RADICES = (2, 4, 8, 16, 32, 64, 128)
CROSSOVER_SIZES = tuple(2 ** k for k in range(4, 17))  # 16 B to 64 KiB
CROSSOVER_NPROCS = 8192  # where the seed quotes its numbers (V-A, Fig. 8)


@dataclass(frozen=True)
class Model:
    """One machine's closed forms on a given platform (calibrated or not)."""
    machine: Machine
    platform: sim.Platform
    mech: Mechanisms
    ppn: int = 32

    def vendor(self, nprocs: int, size: int) -> float:
        return vendor_time(self.platform, self.mech, self.platform.vendor, nprocs, self.ppn, size)

    cache: "SimCache | None" = None

    def tuna(self, nprocs: int, size: int) -> tuple[float, int]:
        """TuNA with its ideal radix in closed form: (seconds, radix)."""
        return min((tuna_time(self.platform, self.mech, nprocs, self.ppn, size, r), r)
                   for r in IDEAL_RADICES if r < nprocs)

    def tuna_simulated(self, nprocs: int, size: int) -> tuple[float, int] | None:
        """The best simulated TuNA the cache holds at this P and size (seconds, radix), if any."""
        if self.cache is None:
            return None
        found = [(self.cache.get(p), int(p.spec.split("=")[1])) for p in self.cache.points(self.platform.name)
                 if p.nprocs == nprocs and p.ppn == self.ppn and p.size == size and p.spec.startswith("tuna:radix=")]
        return min(found) if found else None

    def crossover(self, nprocs: int) -> int | None:
        """The largest block size of CROSSOVER_SIZES up to which TuNA is ahead of the vendor."""
        ahead = [s for s in CROSSOVER_SIZES if self.tuna(nprocs, s)[0] < self.vendor(nprocs, s)]
        last = None
        for s in CROSSOVER_SIZES:
            if s not in ahead:
                break
            last = s
        return last


def models(calibrated: bool, cache: SimCache | None = None) -> dict[str, Model]:
    out = {}
    for machine in MACHINE_LIST:
        platform = sim.Platform.load(machine.calibrated if calibrated else machine.base)
        out[machine.name] = Model(machine, platform, Mechanisms.of(platform), cache=cache)
    return out


def why_not(row) -> str | None:
    """Why a seed row is not held against the closed forms, or None when it is."""
    if row["machine"] not in MACHINE_BY_NAME:
        return "another machine (GPU or Neuchatel clusters): not calibrated yet"
    if row["workload"] != "uniform":
        return "an application or a non-uniform distribution: the closed forms are for uniform blocks"
    if row["quantity"] == "crossover" and row["algorithms"] == "tuna vs vendor":
        return None
    if row["quantity"] not in ("time", "time_ratio"):
        return "a trend or an ideal parameter, not a time"
    if row["algorithms"] not in ("vendor", "tuna", "vendor/tuna"):
        return "a hierarchical or scattered variant: no closed form, and not simulable at this P here"
    if not row["nprocs"] or not row["block_bytes"]:
        return "no P or block size given"
    return None


def evaluate(row, model: Model) -> tuple[float, str]:
    """The model's value for a seed row, in the row's unit, and how it was obtained."""
    if row["quantity"] == "crossover":
        s = model.crossover(CROSSOVER_NPROCS)
        return float(s or 0), f"closed form at P = {CROSSOVER_NPROCS}"
    nprocs, size = int(row["nprocs"]), units.parse(row["block_bytes"])
    simulated = model.tuna_simulated(nprocs, size)
    tuna, radix = simulated or model.tuna(nprocs, size)
    how = f"TuNA simulated (best of the radices simulated: r = {radix})" if simulated else f"closed form, r = {radix}"
    if row["algorithms"] == "vendor":
        return model.vendor(nprocs, size) / _seconds_of(row) * float(row["value"]), "closed form"
    if row["algorithms"] == "tuna":
        return tuna / _seconds_of(row) * float(row["value"]), how
    return model.vendor(nprocs, size) / tuna, how + "; vendor closed form"


RATIO_NPROCS = (256, 512, 1024, 2048, 4096, 8192, 16384)


def ratio_by_p(cache: SimCache | None = None) -> pd.DataFrame:
    """vendor / TuNA (ideal radix) on each calibrated machine by P at 16 B and 1 KiB, beside the
    seeds' published ratio where there is one: all in closed form, and with TuNA simulated where
    the cache holds it (the vendor then simulated too where it is cached, else its closed form,
    which is within 1 % of simulation where both ran)."""
    published = seeds()
    rows = []
    for name, model in models(calibrated=True, cache=cache).items():
        for size in (16, 1024):
            for nprocs in RATIO_NPROCS:
                if nprocs > len(model.platform.hosts) * model.ppn:
                    continue
                try:
                    closed_vendor = model.vendor(nprocs, size)
                except ValueError:  # Open MPI's pairwise exchange (256 <= P < 1024): no closed form
                    continue
                tuna, radix = model.tuna(nprocs, size)
                simulated = model.tuna_simulated(nprocs, size)
                vendor = (cache.get(SimPoint(model.platform.name, nprocs, model.ppn, size, "vendor"))
                          if cache else None) or closed_vendor
                paper = published[(published["machine"] == name) & (published["nprocs"] == str(nprocs)) &
                                  (published["block_bytes"] == str(size)) &
                                  (published["workload"] == "uniform") &
                                  (published["algorithms"] == "vendor/tuna")]["value"]
                rows.append({"machine": name, "S": units.text(size), "P": nprocs,
                             "closed forms": closed_vendor / tuna, "r": radix,
                             "TuNA simulated": vendor / simulated[0] if simulated else math.nan,
                             "r simulated": simulated[1] if simulated else math.nan,
                             "published": float(paper.iloc[0]) if len(paper) else math.nan})
    return pd.DataFrame(rows)


def calibration_table(table: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the rows held against the model: published, before and after calibration, after / published;
    the rows left out, with why)."""
    table = seeds() if table is None else table
    cache = SimCache(CACHE) if CACHE.is_file() else None
    before, after = models(calibrated=False, cache=cache), models(calibrated=True, cache=cache)
    held, left = [], []
    for _, row in table.iterrows():
        reason = why_not(row)
        if reason:
            left.append({"set": row["set"], "id": row["id"], "why": reason})
            continue
        old, _ = evaluate(row, before[row["machine"]])
        new, how = evaluate(row, after[row["machine"]])
        published = float(row["value"])
        held.append({"set": row["set"], "id": row["id"], "P": row["nprocs"] or "-", "S": row["block_bytes"],
                     "published": published, "unit": row["unit"], "before": old, "after": new,
                     "after / published": new / published if published else math.nan, "how": how})
    return pd.DataFrame(held), pd.DataFrame(left)


def validation_table(results: dict[SimPoint, float]) -> pd.DataFrame:
    rows = []
    for point, simulated in results.items():
        closed = closed_form(point)
        rows.append({"platform": point.platform, "P": point.nprocs, "S": units.text(point.size),
                     "spec": point.spec, "simulated_us": simulated * 1e6, "closed_form_us": closed * 1e6,
                     "closed / simulated": closed / simulated})
    return pd.DataFrame(rows).sort_values(["platform", "spec", "S", "P"], key=_natural).reset_index(drop=True)


def _natural(column: pd.Series) -> pd.Series:
    return column.map(units.parse) if column.name == "S" else column


# ---------------------------------------------------------------------------- the docs

DOC = REPO_ROOT / "docs" / "CALIBRATION.md"
CACHE = REPO_ROOT / "docs" / "calibration" / "simulated.csv"


def _number(value) -> str:
    """3 significant digits, whole numbers (byte counts, P) in full."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.0f}" if value == round(value) and abs(value) >= 1 else f"{value:.3g}"
    return str(value)


def _markdown(frame: pd.DataFrame, floats: str | None = None) -> str:
    if floats:
        return frame.to_markdown(index=False, floatfmt=floats)
    return frame.map(_number).to_markdown(index=False) if hasattr(frame, "map") else \
        frame.applymap(_number).to_markdown(index=False)


def parameters_table(fits: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = []
    for machine in MACHINE_LIST:
        for name, source in ((machine.fitted, machine.fitted_source), (machine.fixed, machine.fixed_source)):
            rows.append({"machine": machine.name, "option": OPTIONS[name],
                         "value": f"{fits[machine.name][name] * 1e9:.2f} ns", "source": source})
    return pd.DataFrame(rows)


def write_doc(fits: dict[str, dict[str, float]], held: pd.DataFrame, left: pd.DataFrame,
              validation: pd.DataFrame | None) -> Path:
    check = held[held["set"] == "check"]
    worst = check.loc[(check["after / published"].map(lambda r: max(r, 1 / r) if r > 0 else math.inf)).idxmax()]
    parts = [
        "# Calibrated machines: the models held against the seeds' measurements",
        "",
        "Written by `tucoll calibrate --write` (the tables) from data/published/seeds.csv; do not edit by hand.",
        "",
        f"**Where it stands.** The fit set is reproduced by construction; of the check set's "
        f"{len(check)} points that the closed forms reach, the largest error is "
        f"{worst['id']} ({worst['after']:.3g} against {worst['published']:.3g} {worst['unit']}, "
        f"{worst['after / published']:.2f}x). At the seeds' P (8192, 16384) the vendor's times come from "
        "its closed form (`vendor_time` in python/tucoll/calibrate.py: the simulator's mechanisms written "
        "out), and TuNA's from simulation where it was run (polaris, 8192, 16 B) and its closed form "
        "(`tuna_time`) elsewhere; each row says which. The validation table below holds the closed forms "
        "against simulation where both run.",
        "",
        "## The mechanisms and their parameters",
        "",
        "Two per-message mechanisms apply to every algorithm alike: a receiving MPI's matching cost per "
        "queue entry it walks (sim/simgrid-patches/match-cost.patch) and a network interface's time per "
        "message, shared by its node's ranks (sim/simgrid-patches/nic-gap.patch). The fit set holds one "
        "vendor time per machine, so it pins one mechanism per machine; the other comes from the "
        "machine's documentation or is left out, as said. Links, latencies and per-message CPU overheads "
        "are the base platforms', with the sources their files give. The calibrated platforms are "
        "`polaris-calibrated` and `fugaku-calibrated` (sim/platforms/calibrated/), for `tucoll sim "
        "--platform`.",
        "",
        _markdown(parameters_table(fits)),
        "",
        "## Fit set and check set",
        "",
        "*before*: the same closed forms on the uncalibrated platforms (polaris-like, fugaku-like, both "
        "mechanisms 0) at 32 ranks per node; *after*: on the calibrated ones. A crossover is the largest "
        "block size (powers of two, 16 B to 64 KiB) up to which TuNA with its ideal radix is ahead.",
        "",
    ]
    for name in ("fit", "check"):
        frame = held[held["set"] == name].drop(columns=["set"])
        parts += [f"### {name.capitalize()} set", "", _markdown(frame), ""]
    ratios = ratio_by_p(SimCache(CACHE) if CACHE.is_file() else None)
    parts += ["### vendor / TuNA by P, calibrated", "",
              "TuNA with its ideal radix: of 2 to 128 in closed form; of the radices simulated (2, 4 and 16 up to "
              "P = 2048, 16 at 8192) where simulated, the vendor then simulated where it was (polaris up to 2048 "
              "at 16 B, 1024 at 1 KiB) and in closed form elsewhere.", "",
              _markdown(ratios.astype(object).where(ratios.notna(), "")), ""]
    reasons = left.groupby(["set", "why"]).size().reset_index(name="rows")
    parts += ["### Not held against the model here", "", _markdown(reasons), ""]
    if validation is not None and len(validation):
        parts += [
            "## The closed forms against simulation",
            "",
            "Uniform alltoallv on the calibrated platforms at 32 ranks per node, simulated with SimGrid (one "
            "iteration, deterministic) where the vendor's P^2 messages still simulate in minutes, against the "
            f"closed forms. Largest error: {validation['closed / simulated'].max():.2f}x over, "
            f"{validation['closed / simulated'].min():.2f}x under. Cached in "
            f"{CACHE.relative_to(REPO_ROOT)} with each platform's fingerprint; `tucoll calibrate --validate` "
            "simulates what the cache lacks, in parallel on a Dask cluster (local workers, or "
            "`--scheduler tcp://host:port`).",
            "",
            _markdown(validation, floats=".4g"),
            "",
        ]
    parts += ["Command: `.venv/bin/tucoll calibrate --validate --write`.", ""]
    fit_rows, prediction = HERE_PROBE.with_name("here-fit.csv"), HERE_PROBE.with_name("here-prediction.csv")
    if fit_rows.is_file() and prediction.is_file():
        table = pd.read_csv(prediction)
        predicted = table[table["role"] == "predicted"]
        parts += [
            "## This machine: fitted at P = 2, predicted at larger P",
            "",
            "`tucoll calibrate --here` fits the same mechanisms from microbenchmarks with the real MPI on two "
            "ranks (`tucoll-bench machine`), writes them as a one-node platform file, simulates uniform "
            "alltoallv on it and measures the same runs with the real MPI (interleaved, median of 20). "
            f"Predicted at P = {', '.join(map(str, HERE_NPROCS_PREDICT))}: predicted / measured from "
            f"{predicted['predicted / measured'].min():.3g} to {predicted['predicted / measured'].max():.3g}. "
            "This machine has 2 cores: every P above 2 is oversubscribed, so its measured times are the "
            "scheduler's as much as the MPI's, which no network model holds.",
            "",
            _markdown(pd.read_csv(fit_rows)),
            "",
            _markdown(table, floats=".4g"),
            "",
            "Command: `.venv/bin/tucoll calibrate --here --out docs/calibration/here.json` (writes the platform "
            "file and these tables).",
            "",
        ]
    DOC.write_text("\n".join(parts))
    return DOC


# ------------------------------------------------------------------------- this machine

HERE_PROBE = REPO_ROOT / "docs" / "calibration" / "here.csv"
HERE_NPROCS_FIT, HERE_NPROCS_PREDICT = (2, 4), (8, 16)
HERE_SIZES = (16, 1024, 65536)
HERE_SPECS = ("vendor", "tuna:radix=2", "tuna:radix=4")


@dataclass(frozen=True)
class HereFit:
    """This machine's mechanisms, from `tucoll-bench machine` (two ranks on one node)."""
    latency: float         # one-way time of an empty message, less the two overheads
    bandwidth: float       # bytes/s between two ranks (large ping-pong messages)
    overhead: float        # seconds per message, many outstanding (smpi/os, ois, or each)
    match_cost: float      # seconds per posted receive an arrival walks past
    copy_bandwidth: float  # bytes/s of one core's memcpy (local copies inside the algorithms)
    cores: int

    def rows(self) -> pd.DataFrame:
        return pd.DataFrame([
            {"parameter": "latency (smpi cluster lat)", "value": f"{self.latency * 1e9:.0f} ns",
             "from": "ping-pong of 0 B: one way, less the send and receive overheads"},
            {"parameter": "bandwidth (loopback_bw)", "value": f"{self.bandwidth / 1e9:.2f} GB/s",
             "from": "ping-pong of 16 KiB to 1 MiB: the slope of time over size"},
            {"parameter": "smpi/os, ois, or", "value": f"{self.overhead * 1e9:.0f} ns",
             "from": "64 to 1024 messages outstanding: time per added message"},
            {"parameter": "smpi/match-cost", "value": f"{self.match_cost * 1e9:.2f} ns",
             "from": "1024 receives matched last-first against first-first: extra time per entry walked"},
            {"parameter": "smpi/nic-gap", "value": "0", "from": "one node: no message crosses an interface"},
            {"parameter": "copy bandwidth", "value": f"{self.copy_bandwidth / 1e9:.2f} GB/s",
             "from": "memcpy of 64 MiB on one core"},
        ])


def probe_here(build) -> pd.DataFrame:
    """Runs `tucoll-bench machine` on two ranks with the build's MPI; its rows."""
    import io
    import subprocess

    cmd = build.launch(2, "tucoll-bench", ["machine"])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=build.environment(), timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return pd.read_csv(io.StringIO(proc.stdout))


def fit_here(probe: pd.DataFrame) -> HereFit:
    import numpy as np

    pp = probe[probe["test"] == "pingpong"].set_index("bytes")["seconds"]
    large = pp[pp.index >= 16384]
    slope, _ = np.polyfit(large.index.to_numpy(dtype=float), large.to_numpy(), 1)
    burst = probe[probe["test"] == "burst"].set_index("count")["seconds"]
    reversed_ = probe[probe["test"] == "burst_reversed"].set_index("count")["seconds"]
    counts = burst.index[burst.index >= 64]
    overhead = max(0.0, np.polyfit(counts.to_numpy(dtype=float), burst[counts].to_numpy(), 1)[0])
    w = int(burst.index.max())
    match_cost = max(0.0, (reversed_[w] - burst[w]) / (w * (w - 1) / 2))
    latency = max(0.0, pp[0] - 2 * overhead)
    copy = probe[probe["test"] == "copy"].iloc[0]
    copy_bandwidth = copy["bytes"] / copy["seconds"]
    return HereFit(latency, 1 / slope if slope > 0 else math.inf, overhead, match_cost, copy_bandwidth,
                   os.cpu_count() or 1)


def write_here_platform(fit_: HereFit, flavor: str, path: Path) -> Path:
    """A one-node platform for `tucoll sim --platform` with this machine's fitted mechanisms."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    o = f"0:{fit_.overhead:.6g}:0"
    xml = f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- This machine ({fit_.cores} cores), as tucoll calibrate fitted it from tucoll-bench machine with its MPI
     ({flavor}): one node, every rank on it. -->
<platform version="4.1">
  <config>
    <prop id="smpi/os" value="{o}"/>
    <prop id="smpi/ois" value="{o}"/>
    <prop id="smpi/or" value="{o}"/>
    <prop id="smpi/match-cost" value="{fit_.match_cost:.6g}"/>
    <prop id="smpi/bw-factor" value="0:1"/>
    <prop id="smpi/lat-factor" value="0:1"/>
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
             "summary": f"this machine ({fit_.cores} cores, {flavor}), fitted by tucoll calibrate --here"}
    path.with_suffix(".json").write_text(json.dumps(entry, indent=2) + "\n")
    return path.with_suffix(".json")


def measure_here(build, iters: int = 20, log=print) -> pd.DataFrame:
    """Uniform alltoallv with the real MPI (tucoll-bench, interleaved) at the fit P and the larger P."""
    from tucoll.bench import BenchRun, run_bench

    frames = []
    for nprocs in HERE_NPROCS_FIT + HERE_NPROCS_PREDICT:
        args = [a for spec in here_specs(nprocs) for a in ("--alg", spec)]
        args += ["--sizes", ",".join(map(str, HERE_SIZES)), "--dist", "uniform", "--iters", str(iters)]
        frames.append(run_bench(build, BenchRun("alltoallv", nprocs, args)))
        log(f"measured P={nprocs}")
    return pd.concat(frames, ignore_index=True)


def here_specs(nprocs: int) -> list[str]:
    """HERE_SPECS that run at this P (TuNA's radix runs from 2 to P)."""
    return [s for s in HERE_SPECS if not s.startswith("tuna:radix=") or int(s.split("=")[1]) <= nprocs]


def here_table(measured: pd.DataFrame, platform_file: Path, cores: int, scheduler: str | None = None,
               workers: int | None = None, sim_build_dir: str | None = None, log=print) -> pd.DataFrame:
    """Predicted (simulated on the fitted platform) against `measured` (tucoll-bench's rows with the
    real MPI) for uniform alltoallv at the fit P and the larger P, per algorithm and size; `cores`
    of the measuring machine say which P were oversubscribed."""
    from tucoll.bench import spec as spec_of

    rows = []
    points = [SimPoint(str(platform_file), int(row["nprocs"]), int(row["nprocs"]), int(row["size"]), spec_of(row))
              for _, row in measured.iterrows()]
    cache = SimCache(Path(platform_file).with_name(Path(platform_file).stem + "-simulated.csv"))
    predicted = run_points(points, cache, scheduler=scheduler, workers=workers, build_dir=sim_build_dir, log=log)
    for point, (_, row) in zip(points, measured.iterrows()):
        nprocs = point.nprocs
        spec = point.spec
        rows.append({"P": nprocs, "role": "fit range" if nprocs in HERE_NPROCS_FIT else "predicted",
                     "oversubscribed": nprocs > cores, "S": units.text(int(row["size"])), "spec": spec,
                     "measured_us": float(row["median_us"]), "predicted_us": predicted[point] * 1e6,
                     "predicted / measured": predicted[point] * 1e6 / float(row["median_us"])})
    return pd.DataFrame(rows)
