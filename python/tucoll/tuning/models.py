"""Regression models of alltoallv time (seed 003): six families, their MAPE and the regret of the
spec each would pick."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tucoll.tuning.data import TuningError, spec_parts
from tucoll.tuning.reductions import ReductionSharing, row_charges


SPLIT = (0.7, 0.1, 0.2)


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
