"""The machine models' mechanisms, and the closed forms of the vendor's and TuNA's uniform
alltoallv on them: what the simulator charges, written out, for the P it cannot reach."""

from __future__ import annotations

import functools
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace

from scipy.optimize import brentq

from tucoll import sim


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

    @classmethod
    def of(cls, platform: sim.Platform) -> "Mechanisms":
        root = ET.parse(platform.file).getroot()
        props = {p.get("id"): p.get("value") for p in root.iter("prop")}
        cluster = next(root.iter("cluster"))
        topology = Topology.of(cluster)
        isend, isend_b = _per_message(props.get("smpi/ois", "0:0:0"))
        recv, recv_b = _per_message(props.get("smpi/or", "0:0:0"))
        # Links a message crosses: a dragonfly's 3 to 5 (its node links and 1 to 3 between routers),
        # a torus' average hop count plus the two node links; a switch's two.
        hops = {"DRAGONFLY": 4, "TORUS": sum(n / 4 for n in topology.params) + 2}.get(topology.kind, 2)
        return cls(isend, isend_b, recv, recv_b, float(props.get("smpi/match-cost", 0)),
                   float(props.get("smpi/nic-gap", 0)), _rate(cluster.get("bw")),
                   hops * _seconds(cluster.get("lat")), _rate(cluster.get("loopback_bw")),
                   _seconds(cluster.get("loopback_lat")), platform.copy_bandwidth, topology, platform.copy_piece)


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


def vendor_time(m: Mechanisms, selector: str, nprocs: int, ppn: int, block: int) -> float:
    """The vendor's uniform alltoallv on `m` in closed form (seconds): the largest of what each
    rank does one message after another (overheads and queue walk), what each node's interface
    does (ppn * (P - ppn) messages each way at nic_gap), and what the busiest link carries. Exact when one
    of them dominates, as at the seeds' P; below the model where two are close (seeds.VALIDATION)."""
    peers, remote = nprocs - 1, max(nprocs - ppn, 0)
    rank = peers * (m.isend + m.recv + block * (m.isend_per_byte + m.recv_per_byte))
    rank += m.match_cost * queue_walk(selector, nprocs)
    nic = 2 * ppn * remote * m.nic_gap
    return max(rank, nic, exchange_link_time(m, nprocs, ppn, block))


def exchange_link_time(m: Mechanisms, nprocs: int, ppn: int, block: int) -> float:
    """How long the links take to carry every rank's `block` bytes to every rank of the other nodes
    at once (seconds): a node's own link carries its (N - 1) node-to-node shares; on a torus every
    share crosses its hop count of links, spread over each node's 2 x dims directional links."""
    topology = m.topology
    nodes = max(1, nprocs // ppn)
    flows = float(nodes - 1)
    if topology.kind == "TORUS":
        flows = sum(sum(topology.steps(nodes, shift)) for shift in range(1, nodes)) / (2 * len(topology.params))
    return ppn * ppn * block * flows / m.link_bandwidth


def _zero_of(excess) -> float:
    """The non-negative value at which the increasing `excess` is zero; NaN when it is not
    negative at 0 (the other terms alone already exceed the measurement)."""
    if excess(0.0) >= 0:
        return math.nan
    high = 1e-9
    while excess(high) < 0:
        high *= 2
    return brentq(excess, 0.0, high, xtol=1e-15, rtol=1e-12)


def fit_parameter(m: Mechanisms, name: str, selector: str, nprocs: int, ppn: int, block: int,
                  measured: float) -> float:
    """The value of mechanism `name` (match_cost or nic_gap) at which vendor_time equals `measured`
    seconds; NaN when no value can (the other terms alone already exceed it)."""
    def excess(value: float) -> float:
        return vendor_time(replace(m, **{name: value}), selector, nprocs, ppn, block) - measured

    return _zero_of(excess)


def fit_tuna_parameter(m: Mechanisms, name: str, nprocs: int, ppn: int, block: int, radices: tuple[int, ...],
                       measured: float) -> float:
    """The value of mechanism `name` at which TuNA with its ideal radix (of `radices`) takes
    `measured` seconds in closed form; NaN when no value can."""
    def excess(value: float) -> float:
        mv = replace(m, **{name: value})
        return min(tuna_time(mv, nprocs, ppn, block, r) for r in radices if r < nprocs) - measured

    return _zero_of(excess)


# ----------------------------------------------------------------------- TuNA, analytic

@dataclass(frozen=True)
class Topology:
    """The cluster's shape as SimGrid builds it (topology and topo_parameters)."""
    kind: str
    params: tuple

    @classmethod
    def of(cls, cluster: ET.Element) -> "Topology":
        """The topology of a platform file's <cluster>."""
        kind, text = cluster.get("topology", "FLAT"), cluster.get("topo_parameters", "")
        return cls(kind, tuple(int(d) for d in text.split(",")) if kind == "TORUS" else ())

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


def tuna_time(m: Mechanisms, nprocs: int, ppn: int, block: int, radix: int) -> float:
    """TuNA's uniform alltoallv on `m` in closed form (seconds): its rounds one after another, each
    one data message to one peer, preceded by one of the blocks' sizes wherever some block of the
    round is not yet at its destination (which then cannot know its size: every digit position
    but the last). A round costs the rank's overheads, its packing and unpacking copies (each
    block counted a piece on each side: an upper bound, as adjacent blocks travel as one range
    in the library), a network latency per message, and the longest of what the node's traffic
    takes on its busiest link, on shared memory, and on its interface (nic_gap per message sent
    and per message received)."""
    topology = m.topology
    nodes = max(1, nprocs // ppn)
    total = 0.0
    for distance, blocks in tuna_rounds(nprocs, radix):
        data = blocks * block
        span = radix ** int(math.log(distance, radix) + 1e-9)  # r^x of this round's digit position
        messages = 2 if span * radix < nprocs else 1
        # Ranks whose peer is on another node, and how far away (sequential mapping).
        near, far = distance // ppn, distance // ppn + 1
        remote_far = distance % ppn  # ranks of a node that reach `far` nodes away; the rest `near`
        remote_near = ppn - remote_far if near % nodes else 0
        remote = remote_far * (far % nodes != 0) + remote_near
        cpu = messages * (m.isend + m.recv) + data * (m.isend_per_byte + m.recv_per_byte)
        cpu += 2 * data / m.copy_bandwidth + 2 * blocks * m.copy_piece
        link = max(remote_near * data * topology.shift_load(nodes, near),
                   remote_far * data * topology.shift_load(nodes, far)) / m.link_bandwidth
        local = data / m.loopback_bandwidth if remote < ppn else 0.0  # a node's loopback is a fat pipe in SimGrid
        nic = 2 * messages * remote * m.nic_gap
        latency = m.path_latency if remote else m.loopback_latency
        total += cpu + messages * latency + max(link, local, nic)
    return total


def _seconds(text: str) -> float:
    for suffix, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    raise ValueError(f"time {text!r}")
