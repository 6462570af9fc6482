"""Sensitivity analysis (seed 003): which block-size statistics time follows, within each group."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tucoll.tuning.data import RUNTIME_FEATURES, STATS, TuningError


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
