"""The lookup table `auto` reads: built from the models, held and looked up by the library (core/tuning.h,
the one owner of the format), merged with online tuning's, written."""

from __future__ import annotations

import json
import math
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd

from tucoll import native
from tucoll.tuning.data import TuningError, library_errors
from tucoll.tuning.models import FitResult, geomean
from tucoll.tuning.reductions import ReductionSharing, reduction_charges, reduction_cost


TABLE_FORMAT = "tucoll-tuning-table"
TABLE_VERSION = 1


def log_grid(lo: float, hi: float, steps_per_octave: int = 4) -> np.ndarray:
    """Values 2^(k/steps) covering [lo, hi] with an octave's margin on both sides (from 1 up)."""
    lo_e = math.floor(math.log2(max(lo, 1.0)) * steps_per_octave) - steps_per_octave
    hi_e = math.ceil(math.log2(max(hi, 1.0)) * steps_per_octave) + steps_per_octave
    return np.array([2.0 ** (e / steps_per_octave) for e in range(max(lo_e, 0), hi_e + 1)])


def merge_rules(grid: np.ndarray, choices: list) -> list[dict]:
    """Consecutive grid points with the same choice as one rule; a switch lies at the geometric
    middle of the two grid points it falls between. A choice is a spec or a nested rule list."""
    rules: list[dict] = []
    for i, choice in enumerate(choices):
        if rules and (rules[-1].get("spec") == choice or rules[-1].get("rules") == choice):
            continue
        if rules:
            rules[-1]["below"] = round(math.sqrt(grid[i - 1] * grid[i]), 3)
        rules.append({"below": None, ("rules" if isinstance(choice, list) else "spec"): choice})
    return rules


# The table samples the model at 2^(k/8) bytes: with 4 points per octave a workload can sit 9 %
# from the point its rule was chosen at, enough to flip close choices.
TABLE_STEPS_PER_OCTAVE = 8


def single_spec(fit_result: FitResult, group: pd.DataFrame, features: list[str], specs: list[str], model,
                sharing: ReductionSharing | None) -> str | None:
    """The one spec an entry should name for every workload, or None. An entry of one spec costs
    auto nothing beyond that spec (the library then makes no reduction at all); one that chooses
    by the features costs the reduction on every call (reduction_charges). On the workloads
    measured at this shape, the best single spec is taken when its predicted time is no worse,
    in geometric mean, than the per-workload choice with the reduction. Without `sharing` (no
    reduction charged) a single spec never wins, as before."""
    if sharing is None:
        return None
    workloads = group.drop_duplicates("config")[features].reset_index(drop=True)
    frame = workloads.loc[workloads.index.repeat(len(specs))].reset_index(drop=True)
    frame["spec"] = specs * len(workloads)
    first = group.iloc[0]
    frame["source"], frame["nprocs"], frame["ppn"] = first["source"], first["nprocs"], first["ppn"]
    log_time = model.predict(fit_result.x(frame).to_numpy()).reshape(len(workloads), len(specs))
    charged = np.log(np.exp(log_time) + reduction_charges(specs, group, sharing))
    constant = log_time.mean(axis=0)  # per spec: log of the geometric mean over the workloads
    choosing = charged.min(axis=1).mean()
    best = int(constant.argmin())
    return specs[best] if constant[best] <= choosing else None


def entry_rules(fit_result: FitResult, group: pd.DataFrame, features: list[str], model,
                sharing: ReductionSharing | None = None) -> list[dict]:
    """The spec the model predicts fastest under auto (its time plus what auto adds to it, see
    reduction_charges) over a log grid of the features, as (nested) rules; or one rule naming
    one spec where that beats choosing (single_spec).
    With two features, the second one's grid is fixed (so that neighbouring rows of the first can
    merge) and its values the first one rules out (outside the ratios seen in the data) take the
    nearest possible value's choice."""
    # Candidates: the specs measured on (nearly) every workload of this shape — a spec timed on a
    # few sizes only would be chosen where the model extrapolates it.
    coverage = group.groupby("spec")["config"].nunique()
    specs = sorted(coverage[coverage >= 0.9 * coverage.max()].index)
    grids = [log_grid(group[f].min(), group[f].max(), TABLE_STEPS_PER_OCTAVE) for f in features]
    cells = list(product(*grids))
    frame = pd.DataFrame(cells, columns=features)
    first = group.iloc[0]
    frame = frame.loc[frame.index.repeat(len(specs))].reset_index(drop=True)
    frame["spec"] = specs * len(cells)
    frame["source"], frame["nprocs"], frame["ppn"] = first["source"], first["nprocs"], first["ppn"]
    predicted = np.exp(model.predict(fit_result.x(frame).to_numpy()).reshape(len(cells), len(specs)))
    single = single_spec(fit_result, group, features, specs, model, sharing)
    if single is not None:
        return [{"below": None, "spec": single}]
    predicted += reduction_charges(specs, group, sharing)
    best = [specs[i] for i in predicted.argmin(axis=1)]
    if len(features) == 1:
        return merge_rules(grids[0], best)
    ratio = group[features[1]] / group[features[0]].clip(lower=1.0)
    lo_ratio, hi_ratio = ratio.min() / 2, ratio.max() * 2
    rows = []
    for i, g1 in enumerate(grids[0]):
        row = best[i * len(grids[1]):(i + 1) * len(grids[1])]
        possible = [j for j, g2 in enumerate(grids[1]) if lo_ratio * g1 <= g2 <= hi_ratio * g1]
        if possible:
            row = [row[min(max(j, possible[0]), possible[-1])] for j in range(len(row))]
        rule_list = merge_rules(grids[1], row)
        rows.append(rule_list[0]["spec"] if len(rule_list) == 1 else rule_list)
    return merge_rules(grids[0], rows)


def build_table(fits: dict[str, FitResult], features: list[str], fallback: str = "vendor", refit: bool = True,
                provenance: dict | None = None, sharing: ReductionSharing | None = None) -> dict:
    """A table with one entry per (source, P, Q) of each fit's data, from its chosen model: refitted
    on all of that data (`refit`; model selection used the split, the shipped table uses every
    measurement), or as fitted on the training split (to measure the table on the test split)."""
    from sklearn.base import clone

    entries = []
    for source, fit_result in fits.items():
        if fit_result.features != features:
            raise TuningError(f"a table keyed by {features} needs a model of those features alone, "
                              f"not {fit_result.features}")
        model = fit_result.results[fit_result.chosen].model
        if refit:
            model = clone(model)
            model.fit(fit_result.x(fit_result.data).to_numpy(), np.log(fit_result.data["median_us"].to_numpy()))
        for (nprocs, ppn), group in fit_result.data.groupby(["nprocs", "ppn"]):
            entries.append({"nprocs": int(nprocs), "ppn": int(ppn),
                            "source": f"{source} ({fit_result.chosen} model, {group['config'].nunique()} workloads)",
                            "rules": entry_rules(fit_result, group, features, model, sharing)})
    entries.sort(key=lambda e: (e["ppn"], e["nprocs"]))
    return {"format": TABLE_FORMAT, "version": TABLE_VERSION, "collective": "alltoallv", "features": features,
            "fallback": fallback, "generated_by": provenance or {}, "entries": entries}


Table = dict | native.TuningTable  # a table built here, or one the library holds


def held(table: Table, origin: str = "(table)", build_dir=None) -> native.TuningTable:
    """`table` held by the library, which owns the format (core/tuning.h): tables built here as
    dicts are read by the code `auto` runs, so that a lookup here is the lookup there."""
    if isinstance(table, native.TuningTable):
        return table
    with library_errors():
        return native.library(build_dir).tuning_table(json.dumps(table), origin)


def merge_online(table: dict, online: dict, origin: str = "online") -> int:
    """Adds to `table` the entries of a table saved by online tuning (TUCOLL_TUNING_SAVE: features
    ["max_block"]) for the shapes `table` has no entry for; a swept entry wins over an online one.
    Their max_block rules are nested under the table's other feature where it has two. Returns how
    many entries were added."""
    merged = held(table)
    with library_errors():
        added = merged.merge(held(online, origin), origin)
    table.clear()
    table.update(merged.as_dict())
    return added


def nearest_entry(table: Table, nprocs: int, ppn: int) -> dict:
    """The entry the library uses for (P, Q)."""
    entry = held(table).entry(nprocs, ppn)
    if entry is None:
        raise TuningError("the table has no entries")
    return entry


def entry_specs(entry: dict) -> list[str]:
    """The specs an entry's rules name, in the order they name them."""
    specs: list[str] = []

    def walk(rules: list[dict]) -> None:
        for rule in rules:
            if "spec" in rule:
                specs.append(rule["spec"])
            else:
                walk(rule["rules"])

    walk(entry["rules"])
    return list(dict.fromkeys(specs))


def reduces(table: Table, nprocs: int, ppn: int) -> bool:
    """Whether auto reduces the features for (P, Q): not where the entry names one spec."""
    with library_errors():
        return held(table).reduces(nprocs, ppn)


def lookup(table: Table, nprocs: int, ppn: int, values: list[float]) -> str:
    """The spec the library's auto picks at (P, Q) for the feature values."""
    with library_errors():
        return held(table).lookup(nprocs, ppn, values)


CHOICE_COLUMNS = ["config", "source", "nprocs", "ppn", "mapping", "dist", "size", "spec", "regret"]


def table_choices(table: Table, data: pd.DataFrame, sharing: ReductionSharing | None = None) -> pd.DataFrame:
    """Per configuration: its shape, the spec auto picks, and t(auto) / t(fastest) (NaN where the
    picked spec was not measured). t(auto) is the picked spec's time plus, with `sharing`, the
    reduction auto adds to it (reduction_charges; none where the entry names one spec)."""
    rows = []
    costs = {shape: reduction_cost(g) for shape, g in data.groupby(["source", "nprocs", "ppn"])} \
        if sharing is not None else {}
    table = held(table)
    for config, group in data.groupby("config", sort=False):
        first = group.iloc[0]
        nprocs, ppn = int(first["nprocs"]), int(first["ppn"])
        spec = lookup(table, nprocs, ppn, [float(first[f]) for f in table.features])
        picked = group[group["spec"] == spec]
        regret = math.nan
        if not picked.empty:
            charge = 0.0
            if sharing is not None and not sharing.shares(spec, nprocs, ppn) and reduces(table, nprocs, ppn):
                charge = costs[(first["source"], first["nprocs"], first["ppn"])]
            regret = (picked["median_us"].iloc[0] + charge) / group["median_us"].min()
        rows.append({"config": config, "source": first["source"], "nprocs": nprocs, "ppn": ppn,
                     "mapping": first["mapping"], "dist": first["dist"], "size": first["requested_size"],
                     "spec": spec, "regret": regret})
    return pd.DataFrame(rows, columns=CHOICE_COLUMNS)


def table_regret(table: Table, data: pd.DataFrame, sharing: ReductionSharing | None = None) -> np.ndarray:
    """t(auto) / t(fastest), per configuration where the picked spec was measured (table_choices)."""
    return table_choices(table, data, sharing)["regret"].dropna().to_numpy()


def compare_tables(old: Table, new: Table, data: pd.DataFrame,
                   sharing: ReductionSharing | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Where two tables' choices differ on the dataset's workloads, and what each costs: per source
    and P (and per source in all), how many choices changed, how many of either table's picks were
    never measured, and, on the workloads where both were, the regret's geometric mean and worst,
    old and new; then the changed workloads one by one (a regret NaN where its pick was not
    measured)."""
    both = table_choices(old, data, sharing).merge(table_choices(new, data, sharing),
                                                   on=CHOICE_COLUMNS[:-2], suffixes=("_old", "_new"))
    both["changed"] = both["spec_old"] != both["spec_new"]

    def summary(part: pd.DataFrame) -> dict:
        measured = part.dropna(subset=["regret_old", "regret_new"])
        return {"workloads": len(part), "changed": int(part["changed"].sum()),
                "unmeasured": int(part[["regret_old", "regret_new"]].isna().any(axis=1).sum()),
                "geomean_old": geomean(measured["regret_old"].to_numpy()),
                "geomean_new": geomean(measured["regret_new"].to_numpy()),
                "worst_old": measured["regret_old"].max(), "worst_new": measured["regret_new"].max()}

    by_p = []
    for source, at in both.groupby("source"):
        by_p += [{"source": source, "nprocs": str(p), **summary(part)} for p, part in at.groupby("nprocs")]
        by_p.append({"source": source, "nprocs": "all", **summary(at)})
    return pd.DataFrame(by_p), both[both["changed"]].drop(columns="changed").reset_index(drop=True)


def write_table(table: Table, path: Path) -> None:
    """Writes `table` after the library has checked it: the format, and every spec against the
    registry at its entry's shape."""
    table = held(table, str(path))
    with library_errors():
        table.check()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(table.json())
