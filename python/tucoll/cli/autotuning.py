"""tucoll tune, analyze, fit, table and report: from measurements to the tuning table `auto` reads."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from rich.table import Table

from tucoll import replay
from tucoll.build import REPO_ROOT, sources_fingerprint
from tucoll.report import console as make_console

from .common import MPI_BUILD, TARGET_BUILD, with_build, with_datasets, with_model_options, with_target
from .simulation import sweep_target


def tuning_features(args: argparse.Namespace, data, analysis) -> list[str]:
    if args.features in (None, "table"):
        return analysis.table_features
    if args.features == "selected":
        return analysis.selected
    return args.features.split(",")


def cmd_tune(args: argparse.Namespace) -> int:
    from tucoll import tuning

    console = make_console()
    recording = Path(args.recording)
    patterns, note = replay.selected(replay.load(recording), args.patterns)
    if not patterns:
        raise replay.TuneError(f"{recording}: no alltoallv or alltoall calls were recorded ({note})")
    console.print(f"{recording}: {note}")
    target = sweep_target(args)
    dataset = Path(args.dataset) if args.dataset else recording / f"replay-{target.source}.csv.gz"
    replay.replay(target, dataset, patterns, args.np, args.resize, args.grid, args.alg or [], console)

    base = json.loads(Path(args.base).read_text())
    features = base["features"]
    sharing = tuning.reduction_sharing(args.library_build_dir)
    data = tuning.load([dataset])
    data = data[data["source"] == target.source]
    shapes = [s for s in replay.shapes(data, patterns, args.resize, features, sharing) if s.nprocs in args.np]
    if not shapes:
        raise replay.TuneError(f"{dataset}: no pattern was measured with every candidate")
    table = replay.build_table(base, shapes, recording, features)
    out = Path(args.output) if args.output else recording / "tuned.json"
    tuning.write_table(table, out)

    names = {p.dist(args.resize): p.name for p in patterns}
    rows = replay.report(base, table, shapes, names)
    view = Table(title=f"{target.source}: predicted time per call (µs{', simulated' if args.platform else ''}); "
                       f"recorded patterns resized by {args.resize}")
    for column in ("P", "pattern", "calls", "vendor", "auto, base table", "auto, tuned table", "best measured",
                   "tuned vs vendor", "tuned vs base"):
        view.add_column(column, overflow="fold",
                        justify="left" if column == "pattern" or "auto" in column or "best" in column else "right")
    for r in rows.itertuples():
        view.add_row(str(r.nprocs), r.pattern, str(r.calls), f"{r.vendor_us:.1f}", f"{r.base_us:.1f} {r.base_spec}",
                     f"{r.tuned_us:.1f} {r.tuned_spec}", f"{r.best_us:.1f} {r.best_spec}",
                     f"{r.vendor_us / r.tuned_us:.2f}x", f"{r.base_us / r.tuned_us:.2f}x")
    console.print(view)
    for w in replay.weighted(rows).itertuples():
        console.print(f"P={w.nprocs}, the {w.calls} recorded calls: vendor {w.vendor:.3f} ms, auto with the base "
                      f"table {w.base:.3f} ms, with the tuned table {w.tuned:.3f} ms (best measured {w.best:.3f} ms): "
                      f"{w.vendor / w.tuned:.2f}x over the vendor, {w.base / w.tuned:.2f}x over the base table")
    if args.report:
        rows.to_csv(args.report, index=False)
    console.print(f"{out}: {len(shapes)} tuned entries ({', '.join(f'P={s.nprocs}' for s in shapes)}) and "
                  f"{len(table['entries']) - len(shapes)} from {args.base}; use it with TUCOLL_TUNING_FILE={out}")
    return 0


def add_tune(sub) -> None:
    tn = with_build(sub.add_parser(
        "tune", help="replay a recorded run (TUCOLL_RECORD) with every candidate and write a table for it",
        description="Reads a recording (a folder written by TUCOLL_RECORD=DIR, or one communicator's folder in "
                    "it), replays its most called alltoallv/alltoall patterns with every candidate algorithm at "
                    "each --np -- simulated with --platform, else here with mpirun -- into a resumable dataset, "
                    "and writes a tuning table: the fastest measured spec per pattern as rules on the base table's "
                    "features (one spec where choosing costs more than it saves), the base table's entries "
                    "elsewhere. Prints the predicted time per call of the vendor, of auto with the base table "
                    "and with the tuned one, per pattern and weighted by the recorded calls."), TARGET_BUILD)
    tn.add_argument("recording", help="the TUCOLL_RECORD folder (or one communicator's folder in it)")
    with_target(tn, "comma-separated numbers of ranks to replay at, e.g. 256,1024",
                iters="timed iterations here (default 20; a simulation times one)",
                timeout="give up on one replay job after this many seconds")
    tn.add_argument("--resize", choices=replay.RESIZE_RULES, default=replay.RESIZE_RULES[0],
                    help="how an n-rank alltoallv pattern becomes a P-rank one (tucoll-bench --help, --dist file:): "
                         "stretch gives each original rank P/n ranks that each send what it sent, split over the "
                         "ranks of each destination group (weak scaling, locality kept); tile repeats the matrix, "
                         "block sizes kept (each rank sends P/n times as much). alltoall patterns are always tiled "
                         "(default stretch)")
    tn.add_argument("--patterns", type=int, default=4,
                    help="replay the N most called patterns, ties broken by bytes (default 4; 0: every one, the "
                         "whole recording)")
    tn.add_argument("--grid", choices=["paper", "coarse"], default="coarse",
                    help="candidates' parameter grid, as tucoll sweep (default coarse)")
    tn.add_argument("--alg", action="append", help="restrict the candidates to these names or specs (repeatable)")
    tn.add_argument("--base", default=str(replay.DEFAULT_BASE),
                    help="the table to start from and compare with (default: the shipped tuning/default.json)")
    tn.add_argument("--dataset", help="where the replay's measurements go (default RECORDING/replay-WHERE.csv.gz)")
    tn.add_argument("-o", "--output", help="the tuned table (default RECORDING/tuned.json)")
    tn.add_argument("--report", help="also write the per-pattern comparison as CSV here")
    tn.add_argument("--library-build-dir",
                    help=f"build whose libtucoll says which specs share auto's reduction (default: {MPI_BUILD})")
    tn.set_defaults(func=cmd_tune)


def cmd_analyze(args: argparse.Namespace) -> int:
    from tucoll import tuning

    data = tuning.load(args.datasets)
    analysis = tuning.analyze(data)
    png = tuning.plot_correlation(analysis, Path(args.out) / "correlation.png")
    if args.json:
        print(json.dumps({"ranking": analysis.ranking.round(4).to_dict(orient="records"),
                          "selected": analysis.selected, "table_features": analysis.table_features,
                          "reason": analysis.reason, "heatmap": str(png)}, indent=1))
        return 0
    console = make_console()
    table = Table(title=f"Block-size statistics against time: {len(data)} rows, {data['config'].nunique()} workloads "
                        "(Spearman rho within machine, P and algorithm)", title_justify="left")
    for column in ("statistic", "rho", "|rho|", "one allreduce", "selected"):
        table.add_column(column)
    for row in analysis.ranking.itertuples():
        table.add_row(row.statistic, f"{row.rho:+.3f}", f"{row.abs_rho:.3f}", "yes" if row.runtime else "-",
                      "yes" if row.statistic in analysis.selected else "-")
    console.print(table)
    console.print(f"Features for models: {', '.join(analysis.selected)} (each less than 0.95 correlated with the "
                  f"ones above it).\nTable features: {', '.join(analysis.table_features)}: {analysis.reason}.\n"
                  f"Heat map: {png}")
    return 0


def add_analyze(sub) -> None:
    an = with_datasets(sub.add_parser(
        "analyze", help="sensitivity analysis: block-size statistics against time",
        description="Spearman correlations of the workload's block-size statistics with time, within each (machine, P, "
                    "algorithm) group; a heat map, a ranked list, the non-redundant features models use and the "
                    "features tuning tables are keyed by (of those every rank can compute from one allreduce: the best "
                    "and the best one not redundant with it)."))
    an.add_argument("--out", default=str(REPO_ROOT / "docs" / "tuning"), help="where correlation.png goes")
    an.add_argument("--json", action="store_true", help="print the analysis as JSON")
    an.set_defaults(func=cmd_analyze)


def print_fit(fit, console) -> None:
    table = Table(title=f"Models of log(time) from {', '.join(fit.features)} + P, Q, algorithm: "
                        f"{len(fit.data)} rows, {fit.data['config'].nunique()} workloads, 70/10/20 split by workload",
                  title_justify="left")
    for column in ("model", "hyper-parameters (validation)", "MAPE test %", "regret geomean", "regret p95",
                   "regret max", "test rows", "test workloads"):
        table.add_column(column)
    for name, r in fit.results.items():
        table.add_row(name + (" (chosen)" if name == fit.chosen else ""), r.params, f"{r.mape_test:.2f}",
                      f"{r.regret_geomean:.4f}", f"{r.regret_p95:.4f}", f"{r.regret_max:.3f}", str(r.n_test),
                      str(r.n_test_configs))
    console.print(table)


def cmd_fit(args: argparse.Namespace) -> int:
    from tucoll import tuning

    data = tuning.load(args.datasets)
    features = tuning_features(args, data, tuning.analyze(data))
    console = make_console()
    log = None if args.json else (lambda text: console.print(text))
    fit = tuning.fit(data, features, seed=args.seed, families=args.model, progress=log)
    if args.json:
        print(json.dumps(fit.summary(), indent=1))
    else:
        print_fit(fit, console)
    return 0


def add_fit(sub) -> None:
    ft = with_model_options(with_datasets(sub.add_parser(
        "fit", help="fit linear, lasso, ridge, tree, forest and boosting models; MAPE and regret on a test split",
        description="Predicts log(time) from P, ranks per node, block-size features and the algorithm with its "
                    "parameters. 70/10/20 train/validation/test split by workload; hyper-parameters chosen on "
                    "validation MAPE; reported on test: MAPE and the regret of choosing the spec each model predicts "
                    "fastest, t(chosen)/t(best).")))
    ft.add_argument("--features", help="`table` (default: the analysis's table features alone, which is what a "
                                       "table can use), `selected` (every non-redundant statistic), or a list")
    ft.add_argument("--model", action="append", help="only these families (linear, lasso, ridge, tree, forest, "
                                                     "boosting; repeatable)")
    ft.add_argument("--json", action="store_true", help="print mape_test, regret_geomean, regret_p95 and n_test "
                                                        "per model as JSON")
    ft.set_defaults(func=cmd_fit)


def cmd_table(args: argparse.Namespace) -> int:
    from tucoll import tuning

    console = make_console()
    data = tuning.load(args.datasets)
    features = args.features.split(",") if args.features else tuning.analyze(data).table_features
    sharing = tuning.reduction_sharing(args.build_dir)
    fits, sources = {}, {}
    current = sources_fingerprint()
    for source, part in data.groupby("source"):
        console.print(f"[bold]{source}[/bold]: fitting {len(part)} rows ({part['config'].nunique()} workloads)")
        sources[source] = tuning.library_sources(part)
        stale = len(part) - sources[source].get(current, 0)
        if stale:
            console.print(f"[yellow]{source}: {stale} of the {len(part)} rows ran with earlier library sources or "
                          f"before rows kept them ({', '.join(f'{k}: {v}' for k, v in sources[source].items())}; "
                          f"current: {current}); `tucoll sweep --refresh` runs them again")
        fits[source] = tuning.fit(part.reset_index(drop=True), features, seed=args.seed, sharing=sharing)
        print_fit(fits[source], console)
        held_out = tuning.build_table({source: fits[source]}, features, refit=False, sharing=sharing)
        test = fits[source].data[fits[source].masks["test"]]
        r = tuning.table_regret(held_out, test, sharing)
        console.print(f"{source}: the table from the {fits[source].chosen} model fitted on the training split, on the "
                      f"{len(r)} test workloads: regret geomean {tuning.geomean(r):.4f}, p95 "
                      f"{np.percentile(r, 95):.4f}, max {r.max():.3f}")
    provenance = {"by": "tucoll table", "datasets": [str(p) for p in args.datasets],
                  "models": {s: f.chosen for s, f in fits.items()}, "library_sources": sources, "seed": args.seed}
    table = tuning.build_table(fits, features, fallback=args.fallback, provenance=provenance, sharing=sharing)
    for path in args.merge or []:
        added = tuning.merge_online(table, json.loads(Path(path).read_text()), str(path))
        provenance.setdefault("merged", []).append(str(path))
        console.print(f"{path}: {added} online entries added (shapes the sweeps do not cover)")
    tuning.write_table(table, Path(args.output))
    r = tuning.table_regret(table, data, sharing)
    console.print(f"{args.output}: {len(table['entries'])} entries keyed by {', '.join(features)}; on all {len(r)} "
                  f"workloads of "
                  f"the dataset (in sample): regret geomean {tuning.geomean(r):.4f}, p95 {np.percentile(r, 95):.4f}")
    if args.against:
        print_comparison(json.loads(Path(args.against).read_text()), table, data, sharing, args.against, console)
    return 0


def print_comparison(old, new, data, sharing, old_name: str, console) -> None:
    """Where the new table's choices differ from `old`'s on the dataset's workloads, and what it costs."""
    from tucoll import tuning

    by_p, changed = tuning.compare_tables(old, new, data, sharing)
    summary = Table(title=f"Against {old_name}: t(auto) / t(fastest) on the dataset's workloads where both tables' "
                          f"choices were measured (unmeasured: either choice was not)", title_justify="left")
    summary.add_column("source")
    for column in ("P", "workloads", "choice changed", "unmeasured", "geomean, old → new", "worst, old → new"):
        summary.add_column(column, justify="right")
    for row in by_p.itertuples():
        summary.add_row(row.source, row.nprocs, str(row.workloads), str(row.changed), str(row.unmeasured),
                        f"{row.geomean_old:.3f} → {row.geomean_new:.3f}", f"{row.worst_old:.3f} → {row.worst_new:.3f}")
    console.print(summary)
    if changed.empty:
        return
    detail = Table(title="The changed choices", title_justify="left")
    for column in ("source", "P", "workload", "old (t / t fastest)", "new (t / t fastest)"):
        detail.add_column(column, overflow="fold")
    for row in changed.itertuples():
        detail.add_row(row.source, str(row.nprocs), f"{row.dist}, S = {row.size}",
                       f"{row.spec_old} ({row.regret_old:.3f})", f"{row.spec_new} ({row.regret_new:.3f})")
    console.print(detail)


def add_table(sub) -> None:
    tb = with_build(with_model_options(with_datasets(sub.add_parser(
        "table", help="write the lookup table the library's `auto` alltoallv reads",
        description="Fits the models per source (machine) in the datasets on the runtime features, and writes a "
                    "table with one entry per (source, P, ranks per node): the spec the chosen model predicts fastest "
                    "over a grid of the features, counting for specs that cannot take auto's allreduce in place of "
                    "their own reduction an estimate of it (the build's registry says which can). Format: "
                    "docs/TUNING.md."))))
    tb.add_argument("-o", "--output", required=True, help="the JSON table to write (e.g. tuning/default.json)")
    tb.add_argument("--features", help="key the table by these (one or two of busiest_mean_block, max_block, "
                                       "mean_block, comma-separated; default: the analysis's choice)")
    tb.add_argument("--fallback", default="vendor", help="spec run where the table's choice is invalid (default vendor)")
    tb.add_argument("--merge", action="append", metavar="FILE",
                    help="a table saved by online tuning (TUCOLL_TUNING_SAVE); its entries join for the shapes the "
                         "datasets do not cover (repeatable)")
    tb.add_argument("--against", metavar="OLD_TABLE",
                    help="a table to compare with (e.g. `git show HEAD:tuning/default.json > old.json`): per P, "
                         "the choices that changed and t(auto) / t(fastest) old and new, on the datasets' workloads")
    tb.set_defaults(func=cmd_table)


def cmd_report(args: argparse.Namespace) -> int:
    from tucoll.tuning_report import write_report

    from tucoll import tuning

    sharing = tuning.reduction_sharing(args.build_dir)
    report = write_report(args.datasets, Path(args.out), Path(args.table) if args.table else None, seed=args.seed,
                          sharing=sharing)
    print(f"{report}: written with its figures")
    return 0


def add_report(sub) -> None:
    rp = with_build(with_model_options(with_datasets(sub.add_parser(
        "report", help="one page (Markdown + PNGs) on a sweep, its analysis, the models, their regret and the table"))))
    rp.add_argument("--out", default=str(REPO_ROOT / "docs" / "tuning"), help="directory for REPORT.md and its PNGs")
    rp.add_argument("--table", help="a tuning table to show and measure (e.g. tuning/default.json)")
    rp.set_defaults(func=cmd_report)
