"""The sweep data the tuner reads: the rows, the block-size statistics, a spec's parts, and the
errors it raises."""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import pandas as pd

from tucoll import native, store
from tucoll.sweep import KEY, current_rows


# Block-size statistics tucoll-bench reports (bench/workload.h, BlockStats).
STATS = ["max_block", "mean_block", "busiest_mean_block", "median_block", "std_block", "skew_block", "zero_share",
         "total_bytes", "rank_imbalance"]
# The ones the library computes at run time from its single allreduce (core/tuning.h); a table is
# keyed by one or two of them.
RUNTIME_FEATURES = ["busiest_mean_block", "max_block", "mean_block"]
CONFIG = ["source", "nprocs", "ppn", "mapping", "dist", "requested_size"]


class TuningError(RuntimeError):
    pass


@contextmanager
def library_errors():
    """The library's refusal of a table (native.SpecError) as a TuningError."""
    try:
        yield
    except native.SpecError as err:
        raise TuningError(str(err)) from None


def load(paths: list[Path]) -> pd.DataFrame:
    """The usable rows of one or more sweep datasets: the last row of each cell, measured (not
    failed), not wrong (ok != 0), and where simulated, on the platform's current model
    (sweep.current_rows); `sources` says which library sources each ran with ("" unrecorded)."""
    frames = [store.latest(current_rows(store.load(Path(p), KEY)), KEY) for p in paths]
    data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    data["sources"] = store.sources_of(data)
    if data.empty:
        raise TuningError(f"no rows in {', '.join(map(str, paths))}")
    missing = [c for c in STATS + KEY + ["median_us"] if c not in data.columns]
    if missing:
        raise TuningError(f"the dataset lacks columns {missing}; was it written by `tucoll sweep`?")
    if "failed" in data.columns:
        data = data[data["failed"].fillna("") == ""]
    data = data[data["ok"].astype(str) != "0"].copy()
    for column in STATS + ["median_us", "nprocs", "ppn", "requested_size"]:
        data[column] = pd.to_numeric(data[column], errors="coerce")
    data = data[data["median_us"] > 0].dropna(subset=STATS + ["median_us"])
    data["spec"] = data["requested"].astype(str)
    data["config"] = data[CONFIG].astype(str).agg("|".join, axis=1)
    return data.reset_index(drop=True)


def library_sources(data: pd.DataFrame) -> dict[str, int]:
    """How many rows ran with each library sources fingerprint ("unrecorded": before rows kept
    them): a table's provenance, and a warning when its rows are not all of the current sources."""
    counts = data["sources"].replace("", "unrecorded").value_counts()
    return {str(k): int(v) for k, v in counts.items()}


@lru_cache(maxsize=None)
def spec_parts(spec: str) -> tuple[str, dict[str, int | str]]:
    """("tuna", {"radix": 4}) from "tuna:radix=4", parsed by the library (the one parser of the
    spelling, core/spec.cpp); named values (copy=hybrid) stay strings. Callers must not change
    the dict (it is cached)."""
    with library_errors():
        return native.library().parse_spec(spec)
