"""The machine models' mechanisms, and the vendor's and TuNA's uniform alltoallv on them for the P
the simulator cannot reach: the vendor's in closed form, TuNA's run on one node's ranks."""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from tucoll import sim


# ---------------------------------------------------------------------------- the mechanisms

def _per_message(value: str) -> tuple[float, float]:
    """An SMPI piecewise overhead ("0:1e-6:3e-11;..."): the first piece's (seconds, seconds per byte)."""
    _, fixed, per_byte = value.split(";")[0].split(":")
    return float(fixed), float(per_byte)


def piecewise(text: str, size: float) -> float:
    """A cost in smpi/os's format as SimGrid's FactorSet reads it: "size:base:per_byte;..." takes
    the piece with the largest start below `size` (a size on a start belongs to the piece before;
    below the first, 0), a lone number is a constant."""
    if not any(c in text for c in ":;"):
        return float(text)
    pieces = sorted(tuple(map(float, part.split(":"))) for part in text.split(";") if part)
    below = [p for p in pieces if p[0] < size]
    if not below:
        return 0.0
    _, base, *per_byte = below[-1]
    return base + (per_byte[0] * size if per_byte else 0.0)


def device_copy(options: dict[str, str], size: int) -> tuple[int, float]:
    """How many pieces smpi/device-copy charges an MPI's copy of `size` bytes on device memory, and
    their seconds: the full pieces of smpi/device-copy-piece bytes and the rest (0 or absent: one
    piece), as sim/simgrid-patches/smpi-local-copies-on-device.patch does."""
    text, piece = options.get("smpi/device-copy", ""), int(options.get("smpi/device-copy-piece", 0) or 0)
    if not text or size <= 0:
        return 0, 0.0
    piece = piece if piece > 0 else size
    full, rest = divmod(size, piece)
    return full + (rest > 0), full * piecewise(text, piece) + (piecewise(text, rest) if rest else 0.0)


def _rate(text: str) -> float:
    """A SimGrid bandwidth ("25GBps") in bytes per second."""
    for suffix, scale in (("GBps", 1e9), ("MBps", 1e6), ("kBps", 1e3), ("Bps", 1.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    raise ValueError(f"bandwidth {text!r}")


@dataclass(frozen=True)
class Mechanisms:
    """What a platform charges a message and how its nodes are connected, read from its files once
    (seconds, bytes/s)."""
    isend: float
    isend_per_byte: float
    recv: float
    recv_per_byte: float
    match_cost: float          # smpi/match-cost: per queue entry examined
    nic_gap: float             # smpi/nic-gap: per inter-node message, per node, each way
    link_bandwidth: float      # one network link
    path_latency: float        # a typical path between two nodes
    loopback_bandwidth: float  # within a node
    loopback_latency: float
    copy_bandwidth: float      # local copies inside the algorithms
    topology: "Topology"
    copy_piece: float = 0.0    # per contiguous piece a copy or a datatype engine handles
    detached_limit: float = 65536  # smpi/send-is-detached-thresh: smaller sends complete when posted

    @classmethod
    def of(cls, platform: sim.Platform) -> "Mechanisms":
        root = ET.parse(platform.file).getroot()
        props = {p.get("id"): p.get("value") for p in root.iter("prop")}
        cluster = next(root.iter("cluster"))
        topology = Topology.of(cluster)
        isend, isend_b = _per_message(props.get("smpi/ois", "0:0:0"))
        recv, recv_b = _per_message(props.get("smpi/or", "0:0:0"))
        return cls(isend, isend_b, recv, recv_b, float(props.get("smpi/match-cost", 0)),
                   float(props.get("smpi/nic-gap", 0)), _rate(cluster.get("bw")),
                   topology.hops() * _seconds(cluster.get("lat")), _rate(cluster.get("loopback_bw")),
                   _seconds(cluster.get("loopback_lat")), platform.copy_bandwidth, topology, platform.copy_piece,
                   float(props.get("smpi/send-is-detached-thresh", 65536)))

    def with_topology(self, topology: "Topology") -> "Mechanisms":
        """The same machine on another network shape of the same links."""
        link_latency = self.path_latency / self.topology.hops()
        return replace(self, topology=topology, path_latency=topology.hops() * link_latency)


@dataclass(frozen=True)
class Blocks:
    """What the models need of a workload's blocks: their mean size in bytes, and the share that
    are not empty (an empty block is no range to pack or unpack: the library skips it)."""
    mean: float
    nonempty: float = 1.0

    @classmethod
    def uniform(cls, size: int) -> "Blocks":
        """The seeds' and tucoll-bench's `uniform`: whole bytes drawn uniformly from 0 to `size`
        (seed 000, V-A: "uniformly sampled between 0 and S, yielding an average block of S/2")."""
        return cls(size / 2, size / (size + 1))


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


def vendor_time(m: Mechanisms, selector: str, nprocs: int, ppn: int, blocks: Blocks) -> float:
    """The vendor's uniform alltoallv on `m` in closed form (seconds): the largest of what each
    rank does one message after another (overheads and queue walk), what each node's interface
    does (ppn * (P - ppn) messages each way at nic_gap), and what the busiest link carries. Exact when one
    of them dominates, as at the seeds' P; below the model where two are close (seeds.VALIDATION)."""
    peers, remote = nprocs - 1, max(nprocs - ppn, 0)
    rank = peers * (m.isend + m.recv + blocks.mean * (m.isend_per_byte + m.recv_per_byte))
    rank += m.match_cost * queue_walk(selector, nprocs)
    nic = 2 * ppn * remote * m.nic_gap
    return max(rank, nic, exchange_link_time(m, nprocs, ppn, blocks))


def exchange_link_time(m: Mechanisms, nprocs: int, ppn: int, blocks: Blocks) -> float:
    """How long the busiest link takes to carry every rank's block to every rank of the other nodes
    at once (seconds), the messages routed as the simulator routes them."""
    nodes = max(1, nprocs // ppn)
    return ppn * ppn * blocks.mean * m.topology.exchange_load(nodes) / m.link_bandwidth


def _zero_of(excess) -> float:
    """The non-negative value at which the increasing `excess` is zero; NaN when it is not
    negative at 0 (the other terms alone already exceed the measurement)."""
    if excess(0.0) >= 0:
        return math.nan
    high = 1e-9
    while excess(high) < 0:
        high *= 2
    return brentq(excess, 0.0, high, xtol=1e-15, rtol=1e-12)


def fit_parameter(m: Mechanisms, name: str, selector: str, nprocs: int, ppn: int, blocks: Blocks,
                  measured: float) -> float:
    """The value of mechanism `name` (match_cost or nic_gap) at which vendor_time equals `measured`
    seconds; NaN when no value can (the other terms alone already exceed it)."""
    def excess(value: float) -> float:
        return vendor_time(replace(m, **{name: value}), selector, nprocs, ppn, blocks) - measured

    return _zero_of(excess)


def fit_tuna_parameter(m: Mechanisms, name: str, nprocs: int, ppn: int, blocks: Blocks,
                       radices: tuple[int, ...], measured: float) -> float:
    """The value of mechanism `name` at which TuNA with its ideal radix (of `radices`) takes
    `measured` seconds (tuna_time); NaN when no value can."""
    def excess(value: float) -> float:
        mv = replace(m, **{name: value})
        return best_tuna(mv, nprocs, ppn, blocks, tuple(r for r in radices if r < nprocs))[0] - measured

    return _zero_of(excess)


# ------------------------------------------------------------------- TuNA, on one node

@dataclass(frozen=True)
class Topology:
    """The cluster's shape as SimGrid builds it (topology and topo_parameters), and its routes.

    TORUS: the dimensions, the first varying fastest along node numbers. DRAGONFLY: (groups, global
    links per pair of groups, chassis per group, links per pair of chassis, routers per chassis,
    links per pair of routers, nodes per router). Anything else: every node on its own link to
    one switch (the platform files build their fat trees without taper).

    `adaptive` (dragonfly only) is not what SimGrid does: it asks what spreading traffic over
    non-minimal paths, as routing that adapts to load does (Slingshot's: De Sensi et al., SC20),
    would give. Each round's flows are split between their minimal paths and Valiant's (through
    each of the job's routers alike), all in the one share that leaves the busiest link least
    loaded; routing that decides flow by flow could do somewhat better."""
    kind: str
    params: tuple
    adaptive: bool = False

    def __post_init__(self):
        if self.adaptive and self.kind != "DRAGONFLY":
            raise ValueError(f"adaptive routing is modelled on a dragonfly, not on a {self.kind.lower()}")

    @classmethod
    def of(cls, cluster: ET.Element) -> "Topology":
        """The topology of a platform file's <cluster>."""
        kind, text = cluster.get("topology", "FLAT"), cluster.get("topo_parameters", "")
        if kind == "TORUS":
            return cls(kind, tuple(int(d) for d in text.split(",")))
        if kind == "DRAGONFLY":
            return cls(kind, tuple(int(v) for level in text.split(";") for v in level.split(",")))
        return cls(kind, ())

    def hops(self) -> float:
        """Links a message crosses on a typical path: a dragonfly's 3 to 5 (its node links and 1
        to 3 between routers), a torus' average hop count plus the two node links; a switch's two."""
        return {"DRAGONFLY": 4, "TORUS": sum(n / 4 for n in self.params) + 2}.get(self.kind, 2)

    def route(self, src: int, dst: int) -> list[tuple[tuple, float]]:
        """The links from node `src` to node `dst`, each as (an id of the link and its direction, its
        bandwidth in links), as SimGrid 4.1 routes them (TorusZone, DragonflyZone with
        sim/simgrid-patches/dragonfly-global-links.patch)."""
        if self.kind == "TORUS":
            return self._torus_route(src, dst)
        if self.kind == "DRAGONFLY":
            return self._dragonfly_route(src, dst)
        return [(("up", src), 1.0), (("down", dst), 1.0)]

    def _torus_route(self, src: int, dst: int) -> list[tuple[tuple, float]]:
        # Dimension order, the shorter way round (to the right on a tie); each node owns one
        # split-duplex link per dimension, to its right neighbour.
        links, current, stride = [], src, 1
        for dim, n in enumerate(self.params):
            here, there = (src // stride) % n, (dst // stride) % n
            right = (there > here and there <= here + n // 2) or (here > n // 2 and (here + n // 2) % n >= there)
            while (current // stride) % n != there:
                position = (current // stride) % n
                if right:
                    links.append(((current, dim, "up"), 1.0))
                    current += stride if position < n - 1 else stride - stride * n
                else:
                    current -= stride if position > 0 else stride - stride * n
                    links.append(((current, dim, "down"), 1.0))
            stride *= n
        return links

    def _dragonfly_route(self, src: int, dst: int) -> list[tuple[tuple, float]]:
        # Minimal: the source router's global link to the same place in the target group, then the
        # chassis' link to the target router, then the group's link to the target chassis.
        groups, blue, chassis, black, routers, green, per_router = self.params

        def coords(node: int) -> tuple[int, int, int]:
            router = node // per_router
            return router // (chassis * routers), router // routers % chassis, router % routers

        (g, c, b), (tg, tc, tb) = coords(src), coords(dst)
        links = [(("node", src, "up"), 1.0)]
        if tg != g:
            links.append((("blue", g, c, b, tg), blue / (chassis * routers)))
            g = tg
        if tb != b:
            links.append((("green", g, c, b, tb), float(green)))
            b = tb
        if tc != c:
            links.append((("black", g, b, c, tc), float(black)))
        links.append((("node", dst, "down"), 1.0))
        return links

    @functools.lru_cache(maxsize=None)
    def load(self, nodes: int, shifts: tuple[tuple[int, float], ...]) -> float:
        """The busiest link's load, in units of one link's bandwidth, when every node of `nodes`
        sends `weight` flows to the node `shift` after it, for each (shift, weight) of `shifts`."""
        if not self.adaptive:  # the same sums, link by link and shift by shift, on arrays
            parts = [(self._shift_arrays(nodes, shift % nodes), weight) for shift, weight in shifts if weight]
            total = np.zeros(len(self._link_index(nodes)))
            for (links, flows), weight in parts:
                total[links] += weight * flows
            return float(total.max()) if len(total) else 0.0
        minimal: dict[tuple, float] = {}
        for shift, weight in shifts:
            if weight:
                for link, flows in self._shift_links(nodes, shift % nodes).items():
                    minimal[link] = minimal.get(link, 0.0) + weight * flows
        if not minimal:
            return 0.0
        # Valiant's loads do not depend on the shift: summed over every source, each leg reaches
        # every node once.
        valiant = self._valiant_links(nodes)
        flows = sum(weight for shift, weight in shifts if weight and shift % nodes)
        links = list(minimal.keys() | valiant.keys())
        a = np.array([minimal.get(link, 0.0) for link in links])
        b = np.array([valiant.get(link, 0.0) for link in links]) * flows

        def busiest(share: float) -> float:
            return float((share * a + (1 - share) * b).max())

        # Convex in the minimal share (the largest of linear functions).
        best = minimize_scalar(busiest, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-6})
        return min(best.fun, busiest(0.0), busiest(1.0))

    @functools.lru_cache(maxsize=None)
    def _valiant_links(self, nodes: int) -> dict[tuple, float]:
        """Each link's flows when every node sends one flow to some node, each through an
        intermediate router, each of the job's routers carrying an equal share (Valiant's routing):
        the same for every destination shift."""
        per_router = self.params[-1]
        routers = max(1, -(-nodes // per_router))
        loads: dict[tuple, float] = {}
        for src in range(nodes):
            for router in range(routers):
                via = router * per_router  # a node of the router stands for it: its own links are left out
                for link, bandwidth in self.route(src, via)[:-1] + self.route(via, src)[1:]:
                    loads[link] = loads.get(link, 0.0) + 1.0 / (bandwidth * routers)
        return loads

    @functools.lru_cache(maxsize=None)
    def _shift_links(self, nodes: int, shift: int) -> dict[tuple, float]:
        """Each link's flows, in units of its bandwidth, when every node sends one to the node
        `shift` after it."""
        loads: dict[tuple, float] = {}
        for src in range(nodes if shift else 0):
            for link, bandwidth in self.route(src, (src + shift) % nodes):
                loads[link] = loads.get(link, 0.0) + 1.0 / bandwidth
        return loads

    @functools.lru_cache(maxsize=None)
    def _link_index(self, nodes: int) -> dict[tuple, int]:
        """A number for each link that the shifts among `nodes` nodes seen so far load (it grows)."""
        return {}

    @functools.lru_cache(maxsize=None)
    def _shift_arrays(self, nodes: int, shift: int) -> tuple[np.ndarray, np.ndarray]:
        """_shift_links as arrays: the links' numbers (_link_index) and their flows."""
        index, loads = self._link_index(nodes), self._shift_links(nodes, shift)
        links = np.array([index.setdefault(link, len(index)) for link in loads], dtype=np.intp)
        return links, np.fromiter(loads.values(), dtype=float, count=len(loads))

    def shift_load(self, nodes: int, shift: int) -> float:
        """The busiest link's load when every node sends one flow to the node `shift` after it."""
        return self.load(nodes, ((shift, 1.0),))

    def exchange_load(self, nodes: int) -> float:
        """The busiest link's load when every node sends one flow to every other node."""
        return self.load(nodes, tuple((shift, 1.0) for shift in range(1, nodes)))


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


@dataclass(frozen=True)
class Phase:
    """One message each way of a TuNA round, as every rank makes it: to the rank `distance` ahead,
    `size` bytes, `copy` seconds of packing before the send and as many of unpacking after the
    receive, and `link` seconds that the busiest link takes with every node's messages of the round
    on it. A `paired` phase (a step of recursive doubling) exchanges with rank XOR `distance`
    instead: to it and from it."""
    distance: int
    size: float
    copy: float
    link: float
    paired: bool = False


def allreduce_steps(nprocs: int) -> tuple[int, ...]:
    """The partners (XOR masks) of a few-byte MPI_Allreduce, in order: recursive doubling, what
    both simulated selections run for it (SMPI's allreduce__mpich below 2 KiB and allreduce__ompi
    below 10 000 B take allreduce__rdb). With P not a power of two the ranks above the largest
    power of two first fold into their neighbours and get the result back last (a step of
    distance 1 each, taken here by every rank)."""
    pof2 = 1 << (nprocs.bit_length() - 1)
    steps = tuple(1 << k for k in range(pof2.bit_length() - 1))
    return steps if pof2 == nprocs else (1, *steps, 1)


def allreduce_phases(nprocs: int) -> list["Phase"]:
    """allreduce_steps as phases: one 8-byte message each way with each partner."""
    return [Phase(step, 8.0, 0.0, 0.0, paired=True) for step in allreduce_steps(nprocs)]


def tuna_reduces(nprocs: int, radix: int) -> bool:
    """Whether TuNA opens with the allreduce of the largest block that sizes its buffer: unless
    every block goes direct (src/alltoallv/radix_schedule.h, every_block_direct)."""
    return not (nprocs <= 2 or radix >= nprocs - 1)


def tuna_phases(m: Mechanisms, nprocs: int, ppn: int, blocks: Blocks, radix: int) -> list[Phase]:
    """TuNA's rounds as messages: each round one data message each way, preceded by one of the
    blocks' sizes wherever some block of the round is not yet at its destination (which then cannot
    know its size: every digit position but the last). Packing and unpacking copy every block that
    is not empty as a range of its own, as the library lists them. First, the allreduce of the
    largest block (src/alltoallv/tuna.cpp) as its steps: one 8-byte message each way with a
    partner."""
    nodes = max(1, nprocs // ppn)
    phases = allreduce_phases(nprocs) if tuna_reduces(nprocs, radix) else []
    for distance, count in tuna_rounds(nprocs, radix):
        data = count * blocks.mean
        span = radix ** int(math.log(distance, radix) + 1e-9)  # r^x of this round's digit position
        # Ranks whose peer is on another node, and how far away (sequential mapping).
        near, far = distance // ppn, distance // ppn + 1
        remote_far = distance % ppn  # ranks of a node that reach `far` nodes away; the rest `near`
        remote_near = ppn - remote_far if near % nodes else 0
        link = m.topology.load(nodes, ((near, float(remote_near)), (far, float(remote_far)))) * data / m.link_bandwidth
        if span * radix < nprocs:
            phases.append(Phase(distance, 8.0 * count, 0.0, 0.0))
        phases.append(Phase(distance, data, data / m.copy_bandwidth + count * blocks.nonempty * m.copy_piece, link))
    return phases


@functools.lru_cache(maxsize=4096)
def tuna_time(m: Mechanisms, nprocs: int, ppn: int, blocks: Blocks, radix: int) -> float:
    """TuNA's uniform alltoallv on `m` (seconds): its phases (tuna_phases) run by run_phases."""
    return run_phases(m, nprocs, ppn, tuple(tuna_phases(m, nprocs, ppn, blocks, radix)))


@functools.lru_cache(maxsize=256)
def allreduce_time(m: Mechanisms, nprocs: int, ppn: int) -> float:
    """A few-byte MPI_Allreduce on `m` (seconds): recursive doubling's steps run by run_phases. What
    TuNA opens with, and what auto adds to each call it decides (the sweeps' auto_reduction_us)."""
    return run_phases(m, nprocs, ppn, tuple(allreduce_phases(nprocs)))


def run_phases(m: Mechanisms, nprocs: int, ppn: int, phases: tuple[Phase, ...]) -> float:
    """How long every rank takes to run `phases` (seconds), its messages run as the simulator runs
    them, on one node: every node runs the same schedule (P a multiple of the ranks per node), so a
    message from another node left it when the same local rank's message of that phase left this one.

    A rank runs its phases one after another: it packs, posts its send (the send overhead), takes
    its turn on the node's interface if the message leaves the node, then waits for its peer's
    message (a path's latency and the round's busiest-link time after it left, or the node's
    loopback), takes a turn on the interface if that came from another node, pays the receive
    overhead and one matching step (a small message: SMPI charges them on completion) and unpacks; a
    message from the detached limit up is complete only once delivered. The interface takes
    messages one at a time, sent and received, first come first served (smpi/nic-gap). Ranks do
    not wait for each other between rounds, so one rank's copies run while another's messages wait
    for the interface: summing rounds (every rank's worst) would count both."""
    nodes = max(1, nprocs // ppn)

    def from_other_node(rank: int, phase: Phase) -> bool:  # whether local rank `rank`'s message comes from another node
        if phase.paired:  # (with ppn not a power of two, XOR partners are only roughly alike on every node)
            return nodes > 1 and (rank ^ phase.distance) // ppn != 0
        return nodes > 1 and ((rank - phase.distance) // ppn) % nodes != 0

    # Each phase's partners and whether a message crosses the interface, by local rank: looked up
    # once here rather than at each of the loop's events (millions per calibration).
    receivers = [[(r ^ ph.distance if ph.paired else r + ph.distance) % ppn for r in range(ppn)] for ph in phases]
    senders = [[(r ^ ph.distance if ph.paired else r - ph.distance) % ppn for r in range(ppn)] for ph in phases]
    incoming = [[from_other_node(r, ph) for r in range(ppn)] for ph in phases]
    outgoing = [[incoming[k][receivers[k][r]] for r in range(ppn)] for k in range(len(phases))]

    departed: list[list[float | None]] = [[None] * ppn for _ in phases]
    delivered: list[list[float]] = [[0.0] * ppn for _ in phases]  # at its receiver, by sender
    waiting: dict[tuple[int, int], float] = {}  # (phase, rank) -> since when it waits for its peer's message
    events: list[tuple[float, int, str, int, int]] = []
    order = itertools.count()
    push, pop = heapq.heappush, heapq.heappop
    interface_free = 0.0
    finished = [0.0] * ppn
    gap = m.nic_gap

    for rank in range(ppn):
        push(events, (0.0, next(order), "send", rank, 0))
    while events:
        time, _, what, rank, k = pop(events)
        phase = phases[k]
        if what == "send":
            time += phase.copy + m.isend + phase.size * m.isend_per_byte
            if outgoing[k][rank] and gap > 0:
                push(events, (time, next(order), "interface out", rank, k))
                continue
            what = "departed"
        elif what == "interface out":
            time = interface_free = max(time, interface_free) + gap
            what = "departed"
        if what == "departed":
            departed[k][rank] = time
            flight = (m.path_latency + phase.link if outgoing[k][rank]
                      else m.loopback_latency + phase.size / m.loopback_bandwidth)
            delivered[k][rank] = time + flight
            to, source = receivers[k][rank], senders[k][rank]
            if (k, to) in waiting:
                push(events, (max(waiting.pop((k, to)), delivered[k][rank]), next(order), "arrived", to, k))
            if departed[k][source] is not None:
                push(events, (max(time, delivered[k][source]), next(order), "arrived", rank, k))
            else:
                waiting[(k, rank)] = time
            continue
        if what == "arrived":
            if incoming[k][rank] and gap > 0:
                push(events, (time, next(order), "interface in", rank, k))
                continue
        elif what == "interface in":
            time = interface_free = max(time, interface_free) + gap
        if phase.size < m.detached_limit:
            time += m.recv + phase.size * m.recv_per_byte + m.match_cost
        else:
            time = max(time, delivered[k][rank])
        time += phase.copy
        finished[rank] = time
        if k + 1 < len(phases):
            push(events, (time, next(order), "send", rank, k + 1))
    return max(finished)


def tuna_lower_bound(m: Mechanisms, nprocs: int, ppn: int, blocks: Blocks, radix: int) -> float:
    """What one rank's own work in TuNA takes (seconds): its overheads and copies, one after another;
    tuna_time is never less."""
    return sum(m.isend + m.recv + phase.size * (m.isend_per_byte + m.recv_per_byte) + 2 * phase.copy
               for phase in tuna_phases(m, nprocs, ppn, blocks, radix))


def best_tuna(m: Mechanisms, nprocs: int, ppn: int, blocks: Blocks, radices: tuple[int, ...]) -> tuple[float, int]:
    """TuNA with the fastest of `radices` (seconds, radix); a radix whose lower bound is already
    slower than the best so far is not run."""
    best = (math.inf, 0)
    for bound, radix in sorted((tuna_lower_bound(m, nprocs, ppn, blocks, r), r) for r in radices):
        if bound < best[0]:
            best = min(best, (tuna_time(m, nprocs, ppn, blocks, radix), radix))
    return best


def _seconds(text: str) -> float:
    for suffix, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    raise ValueError(f"time {text!r}")
