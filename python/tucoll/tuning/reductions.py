"""What auto's one allreduce saves: which specs can take it in place of their own reduction, and
what a reduction costs the others (charged in the models' regret and the table's choice)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from tucoll import native


class ReductionSharing:
    """Which specs take auto's allreduce in place of a reduction of their own: those that reduce M,
    the largest block, themselves at that shape — the library's answer (tucoll_spec_properties),
    so that choosing them costs auto nothing beyond the algorithm itself."""

    def __init__(self, library: "native.Library"):
        self._library = library

    @lru_cache(maxsize=None)
    def shares(self, spec: str, nprocs: int, ppn: int) -> bool:
        try:
            return self._library.spec_properties("alltoallv", spec, nprocs, ppn).uses_max_block
        except native.SpecError:
            return False


def reduction_sharing(build_dir=None) -> ReductionSharing:
    return ReductionSharing(native.library(build_dir))


def reduction_cost(group: pd.DataFrame) -> float:
    """auto's allreduce at this shape, in µs: the median of the bench's `auto_reduction_us` (the
    reduction itself, timed beside the candidates) where the sweep measured it. Datasets from
    before that column get an estimate: half the fastest time measured on the smallest workload —
    a tiny alltoallv is latency-bound like an allreduce of a few bytes and takes at least as many
    rounds (simulated polaris-like, P = 256: 23 µs estimated, 20 µs measured)."""
    if "auto_reduction_us" in group:
        measured = pd.to_numeric(group["auto_reduction_us"], errors="coerce").dropna()
        if not measured.empty:
            return float(measured.median())
    smallest = group[group["max_block"] == group["max_block"].min()]
    return 0.5 * float(smallest["median_us"].min()) if not smallest.empty else 0.0


def reduction_charges(specs: list[str], group: pd.DataFrame, sharing: ReductionSharing | None) -> np.ndarray:
    """What auto adds to each spec's own time: its allreduce, except for the specs that take the
    result in place of their own reduction. Zero throughout without `sharing`."""
    if sharing is None:
        return np.zeros(len(specs))
    nprocs, ppn, cost = int(group["nprocs"].iloc[0]), int(group["ppn"].iloc[0]), reduction_cost(group)
    return np.array([0.0 if sharing.shares(s, nprocs, ppn) else cost for s in specs])


def row_charges(data: pd.DataFrame, sharing: ReductionSharing | None) -> np.ndarray:
    """reduction_charges for every row of `data` (zeros without `sharing`)."""
    out = np.zeros(len(data))
    if sharing is None:
        return out
    for rows in data.groupby(["source", "nprocs", "ppn"]).indices.values():
        group = data.iloc[rows]
        out[rows] = reduction_charges(list(group["spec"]), group, sharing)
    return out
