"""Seed 002's GPU machines held against simulation: tucoll's `ipc` all-to-all and the MPI's own on
device buffers, on thetagpu-like and lassen-like. Nothing is fitted here: every parameter of
those platforms comes from a source their files name (a GPU-aware MPI's cost per message on
device memory among them: smpi/device-os and smpi/device-or). The seed measures with
osu_alltoall, blocks of one size, so these are MPI_Alltoall points, simulated outright (one node
of 8 GPUs takes seconds)."""

from __future__ import annotations

import math

import pandas as pd

from tucoll import sizes as units
from tucoll.calibrate.simulations import SimCache, SimPoint

# The seed's machines, the platforms that model them, and their GPUs per node.
PLATFORMS = {"thetagpu": ("thetagpu-like", 8), "lassen": ("lassen-like", 4)}
# The seed's algorithms as tucoll spells them. `ipc` is the hybrid with the seed's thresholds
# (below 4 KiB the MPI's own alltoall, as the seed's design); the copy variants copy every block.
SPECS = {"ipc": "ipc", "openmpi_ucx": "vendor", "pairwise_sendrecv": "pairwise",
         "ipc_kernel": "ipc:copy=kernel,ipc_threshold=0", "ipc_memcpy": "ipc:copy=memcpy,ipc_threshold=0"}
SMALL = 16  # "overhead for small message sizes" (Fig. 4): the time at the smallest block
# Where the kernel/memcpy crossover is looked for: powers of two around the seed's 256-512 KiB.
CROSSOVER_SIZES = tuple(2 ** k for k in range(14, 23))  # 16 KiB to 4 MiB
# Above this many ranks the simulator's copy of what is in flight (P x P blocks) outgrows this
# machine's memory at these block sizes (docs/RESULTS.md §9 stops there too).
MAX_BYTES_IN_FLIGHT = 2 << 30


def _algorithms(row) -> list[str]:
    """The seed's algorithms a row compares ("a/b" for a ratio, "a vs b" for a crossover)."""
    return row["algorithms"].replace(" vs ", "/").split("/")


def why_not(row) -> str | None:
    """Why a seed row of a GPU machine is not held against simulation, or None when it is."""
    algorithms = _algorithms(row)
    if row["workload"] != "osu_alltoall":
        return "an application or a non-uniform distribution: the models are for uniform blocks"
    if any(a not in SPECS for a in algorithms):
        return "NCCL, MVAPICH2-GDR, Spectrum MPI or an unnamed baseline: another library, not simulated"
    if not row["nprocs"]:
        return "no P or block size given"
    if row["quantity"] == "crossover":
        return None
    if row["quantity"] not in ("time", "time_ratio") and row["unit"] not in ("us", "% time saved"):
        return "a trend or an ideal parameter, not a time"
    if not (row["block_bytes"] or row["unit"] == "us"):  # a time without a size: the smallest block
        return "no P or block size given"
    nprocs, size = int(row["nprocs"]), units.parse(row["block_bytes"] or str(SMALL))
    if nprocs * nprocs * size > MAX_BYTES_IN_FLIGHT:
        return "not simulable here: its P x P blocks in flight exceed this machine's memory"
    return None


def _point(row, spec: str, size: int | None = None) -> SimPoint:
    platform, ppn = PLATFORMS[row["machine"]]
    return SimPoint(platform, int(row["nprocs"]), ppn, size or units.parse(row["block_bytes"] or str(SMALL)),
                    SPECS[spec], "alltoall")


def points(row) -> list[SimPoint]:
    """The simulations a held GPU row needs."""
    if row["quantity"] == "crossover":
        return [_point(row, a, size) for a in _algorithms(row) for size in CROSSOVER_SIZES]
    return [_point(row, a) for a in _algorithms(row)]


def evaluate(row, times: dict[SimPoint, float]) -> tuple[float, str]:
    """The simulated value of a held GPU row, in its unit, and how it was obtained."""
    platform = PLATFORMS[row["machine"]][0]
    if row["quantity"] == "crossover":
        first = row["algorithms"].split(" vs ")[0]
        kernel = {s: times[_point(row, "ipc_kernel", s)] for s in CROSSOVER_SIZES}
        memcpy = {s: times[_point(row, "ipc_memcpy", s)] for s in CROSSOVER_SIZES}
        if first == "ipc_kernel":  # the largest block up to which the kernel is ahead
            ahead = [s for s in CROSSOVER_SIZES if kernel[s] <= memcpy[s]]
            return float(max(ahead) if ahead else 0), f"simulated on {platform}, kernel ahead up to"
        ahead = [s for s in CROSSOVER_SIZES if memcpy[s] < kernel[s]]
        return float(min(ahead) if ahead else 0), f"simulated on {platform}, memcpy ahead from"
    algorithms = _algorithms(row)
    values = [times[_point(row, a)] for a in algorithms]
    how = f"simulated on {platform}: " + ", ".join(f"{SPECS[a]} {v * 1e6:.1f} us" for a, v in zip(algorithms, values))
    if row["unit"] == "% time saved":
        return 100.0 * (1.0 - values[1] / values[0]), how
    if row["quantity"] == "time_ratio":
        return values[0] / values[1], how
    return values[0] * {"us": 1e6, "ms": 1e3}[row["unit"]], how


def _rows(table: pd.DataFrame):
    return table[table["machine"].isin(PLATFORMS)].iterrows()


def gpu_points(table: pd.DataFrame) -> list[SimPoint]:
    return list(dict.fromkeys(p for _, row in _rows(table) if not why_not(row) for p in points(row)))


def gpu_table(table: pd.DataFrame, cache: SimCache) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the GPU rows held against simulation: published, simulated, simulated / published; the GPU
    rows left out, with why). Rows whose simulations the cache lacks are left out as such."""
    held, left = [], []
    for _, row in _rows(table):
        reason = why_not(row)
        needed = [] if reason else points(row)
        if not reason and any(cache.get(p) is None for p in needed):
            reason = "not simulated yet: tucoll calibrate --validate"
        if reason:
            left.append({"set": row["set"], "id": row["id"], "why": reason})
            continue
        value, how = evaluate(row, {p: cache.get(p) for p in needed})
        if not all(cache.current(p) for p in needed):
            how += " (earlier library sources)"
        published = float(row["value"])
        held.append({"set": row["set"], "id": row["id"], "P": row["nprocs"], "S": row["block_bytes"] or "-",
                     "published": published, "unit": row["unit"], "simulated": value,
                     "simulated / published": value / published if published else math.nan, "how": how})
    return pd.DataFrame(held), pd.DataFrame(left)
