"""`tucoll report`: one page (Markdown + PNGs) on a sweep, the sensitivity analysis, the models
and what their choices cost, and the lookup table built from them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window: before pyplot is imported

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tucoll import tuning  # noqa: E402
from tucoll.sizes import text as human_bytes  # noqa: E402


def family(spec: str) -> str:
    return spec.split(":")[0]


def plot_winners(data: pd.DataFrame, out: Path) -> str:
    """The fastest algorithm family per (P, size) for each distribution, per source."""
    winners = data.loc[data.groupby("config")["median_us"].idxmin()]
    families = sorted(winners["spec"].map(family).unique())
    colours = {f: plt.cm.tab10(i % 10) for i, f in enumerate(families)}
    panels = list(winners.groupby(["source", "dist"]))
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 1.2 + 0.9 * len(panels) * 1.3), squeeze=False)
    for ax, ((source, dist), group) in zip(axes[:, 0], panels):
        nprocs = sorted(group["nprocs"].unique())
        sizes = sorted(group["requested_size"].unique())
        for _, row in group.iterrows():
            ax.add_patch(plt.Rectangle((sizes.index(row["requested_size"]), nprocs.index(row["nprocs"])), 1, 1,
                                       color=colours[family(row["spec"])]))
        ax.set_xlim(0, len(sizes))
        ax.set_ylim(0, len(nprocs))
        ax.set_xticks(np.arange(len(sizes)) + 0.5, [human_bytes(int(s)) for s in sizes], rotation=90, fontsize=7)
        ax.set_yticks(np.arange(len(nprocs)) + 0.5, [str(p) for p in nprocs], fontsize=8)
        ax.set_ylabel("P")
        ax.set_title(f"{source}, {dist}: fastest algorithm per max block size S", fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[f]) for f in families]
    fig.legend(handles, families, loc="lower center", ncol=min(len(families), 6), fontsize=8)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    counts = winners["spec"].map(family).value_counts()
    return ", ".join(f"{f} {n}" for f, n in counts.items())


def plot_models(fit: tuning.FitResult, out: Path) -> None:
    """Predicted against measured time (chosen model) and the regret distribution of every model."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    test = fit.data[fit.masks["test"]]
    chosen = fit.results[fit.chosen]
    left.loglog(test["median_us"], chosen.test_predicted, ".", markersize=3, alpha=0.5)
    lo, hi = test["median_us"].min(), test["median_us"].max()
    left.plot([lo, hi], [lo, hi], "k--", linewidth=1)
    left.set(xlabel="measured time (us)", ylabel="predicted time (us)",
             title=f"{fit.chosen}: test MAPE {chosen.mape_test:.2f} %")
    for name, r in fit.results.items():
        values = np.sort(r.test_regrets)
        right.plot(values, np.arange(1, len(values) + 1) / len(values), label=f"{name} ({r.regret_geomean:.3f})")
    right.set_xscale("log")
    right.axvline(1.25, color="grey", linestyle=":", linewidth=1)
    right.set(xlabel="t(chosen) / t(best)", ylabel="share of test workloads",
              title="regret of each model's choice (geomean)")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_table(table: dict, out: Path, max_panels: int = 6) -> None:
    """What the table chooses along its feature(s), for up to `max_panels` entries: a band per entry
    for one feature, a map per entry for two (impossible corners, such as a largest block below
    the mean, included)."""
    features = table["features"]
    # Entries with the same rules (one choice for every workload of a machine, say) drawn once.
    same: dict[str, list[dict]] = {}
    for e in table["entries"]:
        same.setdefault(json.dumps(e["rules"], sort_keys=True), []).append(e)
    entries = [group[0] for group in same.values()]
    label = {id(group[0]): f"P={group[0]['nprocs']}, Q={group[0]['ppn']}"
             + (f" (also P={','.join(str(e['nprocs']) for e in group[1:])})" if len(group) > 1 else "")
             for group in same.values()}
    if len(entries) > max_panels:  # spread over the entries: smallest to largest P of each Q
        step = len(entries) / max_panels
        entries = [entries[int(i * step)] for i in range(max_panels - 1)] + [entries[-1]]
    bounds = []

    def collect(rules):
        for r in rules:
            if r["below"]:
                bounds.append(r["below"])
            if "rules" in r:
                collect(r["rules"])
    for e in table["entries"]:
        collect(e["rules"])
    grid = tuning.log_grid(min(bounds + [1.0]), max(bounds + [2.0]), 8)
    held = tuning.held(table)
    choices = [[tuning.lookup(held, e["nprocs"], e["ppn"], [v] if len(features) == 1 else [v, w])
                for v in grid for w in (grid if len(features) == 2 else [0])] for e in entries]
    specs = sorted({c for row in choices for c in row})
    index = {spec: i for i, spec in enumerate(specs)}
    cmap = matplotlib.colors.ListedColormap([plt.cm.tab20(i % 20) for i in range(len(specs))])
    if len(features) == 1:
        fig, ax = plt.subplots(figsize=(10, 1.0 + 0.35 * len(entries)))
        ax.imshow([[index[c] for c in row] for row in choices], aspect="auto", cmap=cmap, vmin=-0.5,
                  vmax=len(specs) - 0.5, extent=(0, len(grid), len(entries), 0), interpolation="nearest")
        ticks = range(0, len(grid), 8)
        ax.set_xticks(list(ticks), [human_bytes(int(grid[i])) for i in ticks], fontsize=7)
        ax.set_yticks(np.arange(len(entries)) + 0.5, [label[id(e)] for e in entries], fontsize=8)
        ax.set_xlabel(f"{features[0]} (bytes)")
        axes = [ax]
    else:
        cols = min(3, len(entries))
        rows = math.ceil(len(entries) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols + 2.5, 3.6 * rows), squeeze=False)
        axes = list(axes.ravel())
        ticks = range(0, len(grid), 16)
        for ax, e, row in zip(axes, entries, choices):
            image = np.array([index[c] for c in row]).reshape(len(grid), len(grid)).T
            ax.imshow(image, origin="lower", cmap=cmap, vmin=-0.5, vmax=len(specs) - 0.5, interpolation="nearest")
            ax.set_xticks(list(ticks), [human_bytes(int(grid[i])) for i in ticks], fontsize=6, rotation=90)
            ax.set_yticks(list(ticks), [human_bytes(int(grid[i])) for i in ticks], fontsize=6)
            ax.set_xlabel(features[0], fontsize=8)
            ax.set_ylabel(features[1], fontsize=8)
            ax.set_title(label[id(e)], fontsize=9)
        for ax in axes[len(entries):]:
            ax.axis("off")
    fig.legend([plt.Rectangle((0, 0), 1, 1, color=cmap(i)) for i in range(len(specs))], specs, fontsize=7,
               loc="center right")
    fig.suptitle("Tuning table: the spec auto runs", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.78, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def write_report(datasets: list[Path], out_dir: Path, table_path: Path | None, seed: int = 0,
                 sharing: "tuning.ReductionSharing | None" = None) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    data = tuning.load(datasets)
    analysis = tuning.analyze(data)
    tuning.plot_correlation(analysis, out_dir / "correlation.png")
    winners = plot_winners(data, out_dir / "winners.png")
    lines = ["# Autotuning report", "",
             f"Generated by `tucoll report {' '.join(map(str, datasets))}"
             f"{f' --table {table_path}' if table_path else ''}`. Times from simulated sources are SimGrid model "
             "results; `local` ones are measured on this machine.", "",
             "## The sweep", "",
             "| source | P | ranks per node | distributions | sizes | specs | rows |",
             "| --- | --- | --- | --- | --- | ---: | ---: |"]
    for source, part in data.groupby("source"):
        sizes = sorted(part["requested_size"].unique())
        lines.append(f"| {source} | {', '.join(map(str, sorted(part['nprocs'].unique())))} | "
                     f"{', '.join(map(str, sorted(part['ppn'].unique())))} | {', '.join(sorted(part['dist'].unique()))} "
                     f"| {len(sizes)} from {human_bytes(int(sizes[0]))} to {human_bytes(int(sizes[-1]))} | "
                     f"{part['spec'].nunique()} | {len(part)} |")
    lines += ["", f"Fastest family per workload: {winners}.", "", "![winners](winners.png)", "",
              "## Sensitivity analysis", "",
              "Spearman correlation of each block-size statistic with time, within each (machine, P, algorithm) "
              "group, so that what varies is the workload alone.", "",
              "| statistic | rho | one allreduce | used |", "| --- | ---: | --- | --- |"]
    for row in analysis.ranking.itertuples():
        lines.append(f"| {row.statistic} | {row.rho:+.3f} | {'yes' if row.runtime else '-'} | "
                     f"{'table key' if row.statistic in analysis.table_features else ('selected' if row.statistic in analysis.selected else '-')} |")
    lines += ["", f"Table features: {analysis.reason}.", "", "![correlation](correlation.png)", ""]

    summaries = {}
    charged = ", each spec charged auto's allreduce where it cannot take it in place of its own" if sharing else ""
    for source, part in data.groupby("source"):
        part = part.reset_index(drop=True)
        # With auto's reduction charged, as `tucoll table` fits: the family chosen here is the table's.
        fit = tuning.fit(part, analysis.table_features, seed=seed, sharing=sharing)
        rich = tuning.fit(part, analysis.selected, seed=seed, families=[fit.chosen], sharing=sharing)
        png = f"models-{source}.png"
        plot_models(fit, out_dir / png)
        summaries[source] = fit.summary()
        lines += [f"## Models: {source}", "",
                  f"log(time) from P, Q, {', '.join(analysis.table_features)} and the spec; 70/10/20 split by workload "
                  f"({part['config'].nunique()} workloads, {len(part)} rows); regret = t(spec the model predicts "
                  "fastest) / t(fastest measured), over the test workloads"
                  f"{charged}"
                  " (the chosen family is the one `tucoll table` builds from).", "",
                  "| model | hyper-parameters | MAPE test % | regret geomean | regret p95 | regret max | test workloads |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for name, r in fit.results.items():
            lines.append(f"| {name}{' (chosen)' if name == fit.chosen else ''} | {r.params} | {r.mape_test:.2f} | "
                         f"{r.regret_geomean:.4f} | {r.regret_p95:.4f} | {r.regret_max:.3f} | {r.n_test_configs} |")
        extra = rich.results[fit.chosen]
        lines += ["", f"With every selected statistic ({', '.join(analysis.selected)}) the {fit.chosen} model "
                      f"reaches MAPE {extra.mape_test:.2f} % and regret {extra.regret_geomean:.4f} (p95 "
                      f"{extra.regret_p95:.4f}); a table can only use what every rank knows.", "",
                  f"![models]({png})", ""]
    if table_path:
        table = json.loads(Path(table_path).read_text())
        plot_table(table, out_dir / "table.png")
        r = tuning.table_regret(table, data, sharing)
        lines += ["## The lookup table", "",
                  f"`{table_path}`: {len(table['entries'])} entries keyed by `{', '.join(table['features'])}`, fallback "
                  f"`{table['fallback']}`. On the dataset's {len(r)} workloads (in sample: the shipped table is "
                  f"fitted on all of them) auto costs — the picked spec, plus auto's allreduce for specs that cannot take "
                  f"it in place of their own (the sweeps' measured auto_reduction_us per shape) — regret geomean {tuning.geomean(r):.4f}, p95 "
                  f"{np.percentile(r, 95):.4f}, max {r.max():.3f}.", "", "![table](table.png)", ""]
    (out_dir / "summary.json").write_text(json.dumps(summaries, indent=1) + "\n")
    report = out_dir / "REPORT.md"
    report.write_text("\n".join(lines) + "\n")
    return report
