"""The autotuner (seed 003): sensitivity analysis of block-size statistics, regression models of
alltoallv time, and the lookup table the library's `auto` algorithm reads.

Data: a sweep dataset (tucoll sweep). A *configuration* is one workload on one machine — source,
P, ranks per node, mapping, distribution, size — and holds one row per algorithm spec timed on it.
Models predict log(time) from the machine's shape, block-size statistics and the spec; they are
judged by MAPE and, what matters, by the regret of the spec they would pick: the measured time of
the spec predicted fastest over the measured time of the fastest, per test configuration.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product
from pathlib import Path

import numpy as np
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
SPLIT = (0.7, 0.1, 0.2)
TABLE_FORMAT = "tucoll-tuning-table"
TABLE_VERSION = 1


class TuningError(RuntimeError):
    pass


# ------------------------------------------------------------------------------------ data

def load(paths: list[Path]) -> pd.DataFrame:
    """The usable rows of one or more sweep datasets: measured (not failed), not wrong (ok != 0),
    and where simulated, on the platform's current model (sweep.current_rows)."""
    frames = [current_rows(store.load(Path(p), KEY)) for p in paths]
    data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
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


@lru_cache(maxsize=None)
def spec_parts(spec: str) -> tuple[str, dict[str, int | str]]:
    """("tuna", {"radix": 4}) from "tuna:radix=4", parsed by the library (the one parser of the
    spelling, core/spec.cpp); named values (copy=hybrid) stay strings. Callers must not change
    the dict (it is cached)."""
    with library_errors():
        return native.library().parse_spec(spec)


# -------------------------------------------------------------------------------- analysis

@dataclass
class Analysis:
    correlation: pd.DataFrame  # pooled within-group rank correlations (STATS + time)
    ranking: pd.DataFrame      # statistic, rho with time, |rho|, runtime-computable
    selected: list[str]        # non-redundant statistics, best first
    table_features: list[str]  # the runtime features tables are keyed by (one or two)
    reason: str


def within_group_ranks(data: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Ranks of `columns` inside each (machine, P, Q, spec) group, centred and scaled: pooled, their
    correlations are Spearman correlations with P, Q and the algorithm held fixed (which otherwise
    dominate time and hide what the workload's shape does)."""
    groups = data.groupby(["source", "nprocs", "ppn", "spec"], sort=False)
    ranked = groups[columns].rank(method="average")
    centred = ranked - ranked.groupby([data[c] for c in ["source", "nprocs", "ppn", "spec"]]).transform("mean")
    return centred


def analyze(data: pd.DataFrame, redundancy: float = 0.95) -> Analysis:
    data = data.assign(time=np.log(data["median_us"]))
    columns = STATS + ["time"]
    centred = within_group_ranks(data, columns)
    # Groups where a statistic does not vary (one workload) carry no information about it.
    usable = centred.loc[:, centred.abs().sum() > 0]
    correlation = usable.corr().fillna(0.0)
    rho = correlation["time"].drop("time")
    ranking = pd.DataFrame({"statistic": rho.index, "rho": rho.values, "abs_rho": rho.abs().values})
    ranking["runtime"] = ranking["statistic"].isin(RUNTIME_FEATURES)
    ranking = ranking.sort_values("abs_rho", ascending=False).reset_index(drop=True)
    selected: list[str] = []
    for stat in ranking["statistic"]:
        if all(abs(correlation.loc[stat, other]) < redundancy for other in selected):
            selected.append(stat)
    runtime = ranking[ranking["runtime"]]
    if runtime.empty:
        raise TuningError("no runtime-computable statistic varies in this dataset")
    best = runtime.iloc[0]
    features = [str(best["statistic"])]
    reason = (f"{best['statistic']} has the strongest correlation with time (Spearman rho = {best['rho']:.3f}, "
              f"within machine, P and algorithm) of the statistics every rank can compute from one allreduce")
    second = [r for r in runtime.itertuples()
              if r.statistic != best["statistic"] and abs(correlation.loc[r.statistic, best["statistic"]]) < redundancy]
    if second:
        features.append(second[0].statistic)
        reason += (f"; {second[0].statistic} (rho = {second[0].rho:.3f}) is the strongest of the others that is not "
                   f"redundant with it (|rho| between them {abs(correlation.loc[second[0].statistic, features[0]]):.3f}"
                   f" < {redundancy}), and tells workloads with the same {features[0]} apart")
    overall = ranking.iloc[0]
    if overall["statistic"] not in RUNTIME_FEATURES:
        reason += (f"; {overall['statistic']} correlates more (rho = {overall['rho']:.3f}) but needs the whole "
                   f"block-size distribution, which no rank has without gathering it")
    return Analysis(correlation, ranking, selected, features, reason)


def plot_correlation(analysis: Analysis, out: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corr = analysis.correlation
    fig, ax = plt.subplots(figsize=(7.5, 6.2))
    image = ax.imshow(corr.values, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(len(corr)), corr.columns, rotation=45, ha="right")
    ax.set_yticks(range(len(corr)), corr.index)
    for i in range(len(corr)):
        for j in range(len(corr)):
            ax.text(j, i, f"{corr.values[i, j]:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if abs(corr.values[i, j]) > 0.6 else "black")
    fig.colorbar(image, ax=ax, shrink=0.8, label="Spearman rho (within machine, P, algorithm)")
    ax.set_title("Block-size statistics and alltoallv time")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


# ---------------------------------------------------------------------------------- models

def design(data: pd.DataFrame, features: list[str], algorithms: list[str], sources: list[str]) -> pd.DataFrame:
    """The model inputs: the machine's shape, log block-size features, the algorithm one-hot and
    its parameters (log2 radix; log2 of the batch, all-at-once counted as every peer)."""
    x = pd.DataFrame(index=data.index)
    x["log2_p"] = np.log2(data["nprocs"])
    x["log2_q"] = np.log2(data["ppn"])
    x["log2_nodes"] = np.log2(np.ceil(data["nprocs"] / data["ppn"]))
    for f in features:  # signed: skew_block can be negative
        x["log2_" + f] = np.sign(data[f]) * np.log2(1.0 + data[f].abs())
    parts = data["spec"].map(spec_parts)
    names = parts.map(lambda p: p[0])
    for alg in algorithms:
        x["alg_" + alg] = (names == alg).astype(float)
    x["log2_radix"] = [math.log2(p[1]["radix"]) if "radix" in p[1] else 0.0 for p in parts]
    batch = [p[1].get("block_count", -1) for p in parts]
    x["log2_batch"] = [0.0 if b < 0 else math.log2(n - 1 if b == 0 or b >= n else b) if n > 1 else 0.0
                       for b, n in zip(batch, data["nprocs"])]
    if len(sources) > 1:
        for s in sources:
            x["src_" + s] = (data["source"] == s).astype(float)
    return x


def model_grid(seed: int) -> dict[str, list]:
    """Each model family with its hyper-parameter candidates (chosen on the validation split)."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import Lasso, LinearRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeRegressor

    def scaled(model):
        return make_pipeline(StandardScaler(), model)

    return {
        "linear": [scaled(LinearRegression())],
        "lasso": [scaled(Lasso(alpha=a, max_iter=20000)) for a in (1e-4, 1e-3, 1e-2, 1e-1)],
        "ridge": [scaled(Ridge(alpha=a)) for a in (0.01, 0.1, 1.0, 10.0, 100.0)],
        "tree": [DecisionTreeRegressor(max_depth=d, min_samples_leaf=m, random_state=seed)
                 for d in (8, 12, 16, 24) for m in (1, 2, 4)],
        "forest": [RandomForestRegressor(n_estimators=150, max_features=f, min_samples_leaf=m, n_jobs=-1,
                                         random_state=seed) for f in (0.5, 1.0) for m in (1, 2)],
        "boosting": [GradientBoostingRegressor(n_estimators=n, learning_rate=lr, max_depth=d, random_state=seed)
                     for n, lr, d in ((400, 0.1, 4), (800, 0.05, 5), (400, 0.2, 6))],
    }


def split_configs(data: pd.DataFrame, seed: int) -> dict[str, np.ndarray]:
    """70/10/20 of the configurations (all specs of a workload stay together, so regret is
    measured on workloads the model never saw)."""
    configs = np.array(sorted(data["config"].unique()))
    rng = np.random.default_rng(seed)
    rng.shuffle(configs)
    n = len(configs)
    n_train, n_val = int(round(SPLIT[0] * n)), int(round(SPLIT[1] * n))
    parts = {"train": configs[:n_train], "validation": configs[n_train:n_train + n_val],
             "test": configs[n_train + n_val:]}
    return {name: data["config"].isin(set(c)).to_numpy() for name, c in parts.items()}


def mape(measured: np.ndarray, predicted: np.ndarray) -> float:
    return float(np.mean(np.abs(predicted - measured) / measured) * 100.0)


def regrets(data: pd.DataFrame, predicted: np.ndarray, charges: np.ndarray | None = None) -> np.ndarray:
    """t(spec predicted fastest) / t(fastest measured), per configuration with two or more specs;
    with `charges` (µs per row, see row_charges) both the choice and its time include them."""
    c = np.zeros(len(data)) if charges is None else charges
    frame = pd.DataFrame({"config": data["config"].to_numpy(), "t": data["median_us"].to_numpy(),
                          "p": predicted + c, "c": c})
    out = []
    for _, group in frame.groupby("config", sort=False):
        if len(group) < 2:
            continue
        i = int(np.argmin(group["p"].to_numpy()))
        out.append((group["t"].iloc[i] + group["c"].iloc[i]) / group["t"].min())
    return np.array(out)


def geomean(values: np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(values)))) if len(values) else float("nan")


@dataclass
class ModelResult:
    name: str
    model: object
    params: str
    mape_validation: float
    regret_validation: float
    mape_test: float
    regret_geomean: float
    regret_p95: float
    regret_max: float
    n_test: int          # test rows
    n_test_configs: int  # test configurations (workloads)
    test_regrets: np.ndarray = field(repr=False, default_factory=lambda: np.array([]))
    test_predicted: np.ndarray = field(repr=False, default_factory=lambda: np.array([]))


@dataclass
class FitResult:
    features: list[str]
    algorithms: list[str]
    sources: list[str]
    results: dict[str, ModelResult]
    chosen: str
    data: pd.DataFrame = field(repr=False)
    masks: dict[str, np.ndarray] = field(repr=False)

    def x(self, data: pd.DataFrame) -> pd.DataFrame:
        return design(data, self.features, self.algorithms, self.sources)

    def summary(self) -> dict:
        return {"features": self.features, "chosen": self.chosen,
                "rows": int(len(self.data)), "configurations": int(self.data["config"].nunique()),
                "models": {name: {"mape_test": round(r.mape_test, 3), "regret_geomean": round(r.regret_geomean, 4),
                                  "regret_p95": round(r.regret_p95, 4), "regret_max": round(r.regret_max, 4),
                                  "n_test": r.n_test, "n_test_configs": r.n_test_configs,
                                  "mape_validation": round(r.mape_validation, 3),
                                  "regret_validation": round(r.regret_validation, 4), "params": r.params}
                           for name, r in self.results.items()}}


# The hyper-parameters each family searches (model_grid), for reports.
SEARCHED = {"linear": (), "lasso": ("alpha",), "ridge": ("alpha",), "tree": ("max_depth", "min_samples_leaf"),
            "forest": ("max_features", "min_samples_leaf"), "boosting": ("n_estimators", "learning_rate", "max_depth")}


def describe(family: str, model) -> str:
    """The searched hyper-parameters of a fitted model, as text."""
    inner = model.steps[-1][1] if hasattr(model, "steps") else model
    params = inner.get_params()
    return ", ".join(f"{k}={params[k]}" for k in SEARCHED[family]) or "-"


# Polaris-like's sweep of P = 64-4096 gave 27 validation workloads: tree 1.2626, boosting 1.2715
# (docs/TUNING.md, the shipped table).
REGRET_TIE = 0.01


def fit(data: pd.DataFrame, features: list[str], seed: int = 0, families: list[str] | None = None,
        progress=None, sharing: ReductionSharing | None = None) -> FitResult:
    """Every family on the 70/10/20 split. Regret is that of choosing the spec predicted fastest;
    with `sharing` it is auto's (each spec's time plus the reduction auto adds to it, see
    reduction_charges), which is what a table built from the model will cost."""
    algorithms = sorted({spec_parts(s)[0] for s in data["spec"]})
    sources = sorted(data["source"].unique())
    masks = split_configs(data, seed)
    if not masks["test"].any() or not masks["validation"].any():
        raise TuningError(f"{data['config'].nunique()} configurations are too few for a 70/10/20 split")
    x = design(data, features, algorithms, sources).to_numpy()
    y = np.log(data["median_us"].to_numpy())
    t = data["median_us"].to_numpy()
    charges = row_charges(data, sharing)
    results = {}
    for name, candidates in model_grid(seed).items():
        if families and name not in families:
            continue
        best = None
        for model in candidates:
            model.fit(x[masks["train"]], y[masks["train"]])
            pred = np.exp(model.predict(x[masks["validation"]]))
            score = (mape(t[masks["validation"]], pred),
                     geomean(regrets(data[masks["validation"]], pred, charges[masks["validation"]])))
            if best is None or score[0] < best[1][0]:
                best = (model, score)
        model, (val_mape, val_regret) = best
        pred = np.exp(model.predict(x[masks["test"]]))
        test = data[masks["test"]]
        r = regrets(test, pred, charges[masks["test"]])
        results[name] = ModelResult(name, model, describe(name, model), val_mape, val_regret, mape(t[masks["test"]], pred),
                                    geomean(r), float(np.percentile(r, 95)), float(r.max()), int(masks["test"].sum()),
                                    len(r), r, pred)
        if progress:
            progress(f"{name}: validation MAPE {val_mape:.2f} %, test MAPE {results[name].mape_test:.2f} %, "
                     f"regret {results[name].regret_geomean:.4f}")
    return FitResult(features, algorithms, sources, results, chosen_model(results), data, masks)


def chosen_model(results: dict[str, ModelResult]) -> str:
    """The family the table is built from: least regret on the validation split, where regrets
    within REGRET_TIE of the least count as equal (a split of a few dozen workloads cannot tell
    them apart) and the better predictor of the times, the lower validation MAPE, decides."""
    least = min(r.regret_validation for r in results.values())
    return min((r for r in results.values() if r.regret_validation <= least * (1 + REGRET_TIE)),
               key=lambda r: r.mape_validation).name


# ---------------------------------------------------------------------------------- tables

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


@contextmanager
def library_errors():
    """The library's refusal of a table (native.SpecError) as a TuningError."""
    try:
        yield
    except native.SpecError as err:
        raise TuningError(str(err)) from None


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


def table_regret(table: Table, data: pd.DataFrame, sharing: ReductionSharing | None = None) -> np.ndarray:
    """t(auto) / t(fastest), per configuration where the picked spec was measured: t(auto) is the
    picked spec's time plus, with `sharing`, the reduction auto adds to it (reduction_charges;
    none where the entry names one spec)."""
    out = []
    costs = {shape: reduction_cost(g) for shape, g in data.groupby(["source", "nprocs", "ppn"])} \
        if sharing is not None else {}
    table = held(table)
    for _, group in data.groupby("config", sort=False):
        first = group.iloc[0]
        spec = lookup(table, int(first["nprocs"]), int(first["ppn"]), [float(first[f]) for f in table.features])
        picked = group[group["spec"] == spec]
        if not picked.empty:
            charge = 0.0
            if sharing is not None and not sharing.shares(spec, int(first["nprocs"]), int(first["ppn"])) \
                    and reduces(table, int(first["nprocs"]), int(first["ppn"])):
                charge = costs[(first["source"], first["nprocs"], first["ppn"])]
            out.append((picked["median_us"].iloc[0] + charge) / group["median_us"].min())
    return np.array(out)


def write_table(table: Table, path: Path) -> None:
    """Writes `table` after the library has checked it: the format, and every spec against the
    registry at its entry's shape."""
    table = held(table, str(path))
    with library_errors():
        table.check()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(table.json())
