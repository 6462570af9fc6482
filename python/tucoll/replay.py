"""`tucoll tune RECORDING`: from a recorded run to a tuning table for it.

A recording (TUCOLL_RECORD=DIR or tucoll_record_start; src/core/record.h) holds, per
communicator, the distinct P x P byte matrices of the program's all-to-all calls with their call
counts. Tuning replays the most called ones with every candidate algorithm — on a simulated
platform at any number of ranks (a recorded n-rank matrix resized to P by `tile` or `stretch`,
tucoll-bench --dist file:...:resize=; alltoall patterns are always tiled) or here with mpirun — through the sweep machinery (a
resumable dataset), then writes a table `auto` reads:

  - per shape (P, ranks per node), the measured fastest spec of each replayed pattern, as rules on
    the base table's features (switches half-way, on a log scale, between neighbouring patterns);
    one spec for every pattern where that costs less, weighted by calls, than choosing with
    auto's reduction (the same trade-off `tucoll table` makes);
  - the base table's entries (the shipped default) for every other shape.

It reports, per pattern and weighted by the recorded calls, the predicted time of the vendor's
alltoallv, of auto with the base table and of auto with the tuned one.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tucoll import sweep, tuning
from tucoll.build import REPO_ROOT

DEFAULT_BASE = REPO_ROOT / "tuning" / "default.json"
# The collectives whose patterns an alltoallv table serves (an alltoall is an alltoallv of equal blocks).
TUNED = ("alltoallv", "alltoall")
RESIZE_RULES = ("stretch", "tile")  # tucoll-bench --dist file:PATH:resize=RULE; the first is the default


class TuneError(RuntimeError):
    pass


@dataclass(frozen=True)
class Pattern:
    communicator: str   # the recording's folder of one communicator
    id: int
    path: Path
    collective: str
    nprocs: int         # ranks of the recorded communicator
    calls: int
    total_bytes: int
    max_block: int
    recorded_us: float  # mean time of a call in the recorded run

    @property
    def name(self) -> str:
        """`7 alltoallv`, after the communicator's name where it is not MPI_COMM_WORLD."""
        comm = self.communicator.split(".")[0]
        return ("" if comm == "MPI_COMM_WORLD" else f"{comm}/") + f"{self.id} {self.collective}"

    def dist(self, resize: str) -> str:
        # The same dist at every P (resizing to the recorded P is the identity), so one dataset
        # row key names the pattern wherever it is replayed. An MPI_Alltoall sends one block of
        # the same size to every rank at any P: it is always tiled.
        # Relative to where tucoll runs (the bench inherits it) when below it, so that a dataset
        # made at the repository's root is resumed from any clone of it.
        rule = "tile" if self.collective == "alltoall" else resize
        path = Path(os.path.relpath(self.path.resolve()))
        return f"file:{self.path.resolve() if path.parts[:1] == ('..',) else path}:resize={rule}"


def manifests(recording: Path) -> list[Path]:
    """The manifests of a recording: one communicator's folder, or a folder of them."""
    if (recording / "manifest.json").is_file():
        return [recording / "manifest.json"]
    found = sorted(recording.glob("*/manifest.json"))
    if not found:
        raise TuneError(f"{recording}: no manifest.json in it or in its folders (was it written by TUCOLL_RECORD?)")
    return found


def load(recording: Path) -> list[Pattern]:
    """Every recorded pattern, most called first."""
    patterns = []
    for path in manifests(recording):
        m = json.loads(path.read_text())
        if m.get("format") != "tucoll-recording":
            raise TuneError(f"{path}: not a tucoll recording (format {m.get('format')!r})")
        for p in m["patterns"]:
            patterns.append(Pattern(path.parent.name, int(p["id"]), path.parent / p["file"], p["collective"],
                                    int(m["communicator"]["size"]), int(p["calls"]), int(p["total_bytes"]),
                                    int(p["max_block"]), 1e6 * float(p["seconds"]["mean"])))
    return sorted(patterns, key=lambda p: (-p.calls, -p.total_bytes, p.name))


def selected(patterns: list[Pattern], count: int) -> tuple[list[Pattern], str]:
    """The `count` most called all-to-all patterns (all of them for 0), and a line on what that
    leaves out."""
    tunable = [p for p in patterns if p.collective in TUNED and p.calls > 0]
    chosen = tunable[:count] if count > 0 else tunable
    calls = sum(p.calls for p in tunable)
    other = sorted({p.collective for p in patterns if p.collective not in TUNED})
    note = (f"{len(chosen)} of {len(tunable)} all-to-all patterns, {sum(p.calls for p in chosen)} of {calls} "
            f"recorded calls")
    if other:
        note += f" ({', '.join(other)} patterns are not tuned: auto's table is for alltoallv)"
    return chosen, note


def replay(target: sweep.Target, dataset: Path, patterns: list[Pattern], nprocs: list[int], resize: str,
           grid: str, only: list[str], console) -> int:
    """Runs every candidate on every pattern at every P that the dataset lacks; rows added."""
    job = sweep.Sweep(dataset, target, nprocs, [p.dist(resize) for p in patterns], [0], grid=grid, only=only)
    return sweep.run_sweep(job, console)


# ------------------------------------------------------------------------------------ the table

@dataclass
class Shape:
    """One (P, Q) of the replay: every pattern's time for every spec measured on all of them."""

    nprocs: int
    ppn: int
    times: pd.DataFrame       # index: pattern dist, columns: specs (µs)
    features: pd.DataFrame    # index: pattern dist, columns: the table's features
    weights: pd.Series        # index: pattern dist, recorded calls
    charges: pd.Series        # index: specs, what auto's reduction adds to each (µs)


def shapes(data: pd.DataFrame, patterns: list[Pattern], resize: str, features: list[str],
           sharing: tuning.ReductionSharing | None) -> list[Shape]:
    weights = {p.dist(resize): p.calls for p in patterns}
    out = []
    for (nprocs, ppn), group in data[data["dist"].isin(weights)].groupby(["nprocs", "ppn"]):
        times = group.pivot_table(index="dist", columns="spec", values="median_us", aggfunc="min")
        times = times.dropna(axis=1)  # candidates measured on every pattern
        if times.empty:
            continue
        feats = group.drop_duplicates("dist").set_index("dist").loc[times.index, features]
        specs = list(times.columns)
        charges = pd.Series(tuning.reduction_charges(specs, group, sharing), index=specs)
        out.append(Shape(int(nprocs), int(ppn), times, feats, pd.Series(weights).loc[times.index], charges))
    return out


def shape_rules(shape: Shape) -> list[dict]:
    """The rules of a table entry for this shape (see the module's doc)."""
    w = shape.weights.to_numpy(dtype=float)
    constant = (shape.times.to_numpy() * w[:, None]).sum(axis=0)
    charged = shape.times + shape.charges
    choosing = (charged.min(axis=1).to_numpy() * w).sum()
    best_constant = shape.times.columns[int(constant.argmin())]
    if len(shape.times) == 1 or constant.min() <= choosing:
        return [{"below": None, "spec": best_constant}]
    # Patterns sharing a value of the first feature get the spec best for them together.
    key = shape.features.iloc[:, 0]
    points, choices = [], []
    for value in sorted(key.unique()):
        rows = key[key == value].index
        totals = (charged.loc[rows].to_numpy() * shape.weights.loc[rows].to_numpy()[:, None]).sum(axis=0)
        points.append(max(float(value), 1.0))
        choices.append(charged.columns[int(totals.argmin())])
    return tuning.merge_rules(np.array(points), choices)


def build_table(base: dict, tuned: list[Shape], recording: Path, features: list[str]) -> dict:
    table = json.loads(json.dumps(base))  # a copy
    replaced = {(s.nprocs, s.ppn) for s in tuned}
    table["entries"] = [e for e in table["entries"] if (e["nprocs"], e["ppn"]) not in replaced]
    for s in tuned:
        table["entries"].append({"nprocs": s.nprocs, "ppn": s.ppn,
                                 "source": f"tucoll tune {recording.name} ({len(s.times)} recorded patterns, "
                                           f"{len(s.times.columns)} candidates measured)",
                                 "rules": shape_rules(s)})
    table["entries"].sort(key=lambda e: (e["ppn"], e["nprocs"]))
    table["features"] = features
    table["generated_by"] = {"by": "tucoll tune", "recording": str(recording), "base": base.get("generated_by", {})}
    return table


# ----------------------------------------------------------------------------------- the report

def auto_time(table: dict, shape: Shape, dist: str) -> tuple[str, float]:
    """What auto with `table` runs on this pattern and its predicted time (with its reduction where
    the entry chooses by the features), or (spec, nan) where that spec was not measured."""
    spec = tuning.lookup(table, shape.nprocs, shape.ppn, [float(v) for v in shape.features.loc[dist]])
    if spec not in shape.times.columns:
        return spec, math.nan
    charge = shape.charges[spec] if tuning.reduces(table, shape.nprocs, shape.ppn) else 0.0
    return spec, float(shape.times.loc[dist, spec] + charge)


def report(base: dict, tuned_table: dict, tuned: list[Shape], names: dict[str, str]) -> pd.DataFrame:
    """One row per (P, pattern): vendor, auto with the base table, auto with the tuned table."""
    rows = []
    for s in tuned:
        for dist in s.times.index:
            base_spec, base_us = auto_time(base, s, dist)
            tuned_spec, tuned_us = auto_time(tuned_table, s, dist)
            rows.append({"nprocs": s.nprocs, "ppn": s.ppn, "pattern": names[dist], "calls": int(s.weights[dist]),
                         "vendor_us": float(s.times.loc[dist, "vendor"]) if "vendor" in s.times else math.nan,
                         "base_spec": base_spec, "base_us": base_us, "tuned_spec": tuned_spec, "tuned_us": tuned_us,
                         "best_spec": s.times.loc[dist].idxmin(), "best_us": float(s.times.loc[dist].min())})
    return pd.DataFrame(rows)


def weighted(frame: pd.DataFrame) -> pd.DataFrame:
    """Per P: the recorded calls' total predicted time (ms) under each choice."""
    out = []
    for nprocs, g in frame.groupby("nprocs"):
        w = g["calls"]
        out.append({"nprocs": nprocs, "calls": int(w.sum()),
                    **{c: float((g[f"{c}_us"] * w).sum()) / 1e3 for c in ("vendor", "base", "tuned", "best")}})
    return pd.DataFrame(out)
