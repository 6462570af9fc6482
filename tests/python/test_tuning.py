"""The autotuner: sweep grid and dataset schema, the split, model fitting on a synthetic dataset,
and tables that the library reads back exactly as the Python lookup does."""

import json
from pathlib import Path
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tucoll import sweep, tuning
from tucoll.bench import BenchRun, registry, run_bench
from tucoll.build import REPO_ROOT, sources_fingerprint


def tucoll(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "tucoll", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


# ------------------------------------------------------------------------------------- grid

def test_paper_sizes_are_seed_003s_31_levels():
    assert len(sweep.PAPER_SIZES) == 31
    assert sweep.PAPER_SIZES[0] == 2 and sweep.PAPER_SIZES[-1] == 64 * 1024
    assert all(b > a for a, b in zip(sweep.PAPER_SIZES, sweep.PAPER_SIZES[1:]))


def test_grid_covers_every_algorithm_within_its_bounds(build):
    reg = registry(build)
    algorithms = reg["collectives"]["alltoallv"]["algorithms"]
    for nprocs, ppn in ((16, 16), (64, 32), (1024, 32)):
        specs = sweep.algorithm_specs(reg, nprocs, ppn, "paper")
        names = {s.split(":")[0] for s in specs}
        assert names == {a["name"] for a in algorithms if not a["meta"]}
        assert "auto" not in names
        for spec in specs:
            _, params = tuning.spec_parts(spec)
            if "radix" in params:
                hi = ppn if spec.startswith("tuna_") else nprocs
                assert 2 <= params["radix"] <= hi, spec
            if "block_count" in params:
                assert params["block_count"] >= 0
        radices = {tuning.spec_parts(s)[1]["radix"] for s in specs if s.startswith("tuna:")}
        root = round(math.sqrt(nprocs))
        assert {2, 3, root - 1, root, root + 1, nprocs - 1, nprocs} <= radices  # fine steps around 2, sqrt P, P
        assert len(specs) == len(set(specs))
    coarse = sweep.algorithm_specs(reg, 256, 32, "coarse")
    assert len(coarse) < len(sweep.algorithm_specs(reg, 256, 32, "paper"))
    exact = "tuna_coalesced:radix=2,block_count=1"
    assert sweep.algorithm_specs(reg, 8, 8, "paper", only=["tuna", exact]) == \
        [exact] + [s for s in sweep.algorithm_specs(reg, 8, 8, "paper") if s.startswith("tuna:")]


def test_sizes_parse():
    assert sweep.parse_sizes("paper") == sweep.PAPER_SIZES
    assert sweep.parse_sizes("16,1K,2M") == [16, 1024, 2 << 20]


# --------------------------------------------------------------------------------- a sweep

def test_local_sweep_writes_the_schema_and_resumes(build, tmp_path):
    dataset = tmp_path / "local.csv.gz"
    args = ["sweep", dataset, "--np", "3", "--dist", "uniform;powerlaw", "--sizes", "16,256", "--alg", "vendor",
            "--alg", "tuna:radix=2", "--iters", "3", "--build-dir", build.root]
    first = tucoll(*args)
    assert first.returncode == 0, first.stderr
    assert "8 rows added" in first.stdout
    data = pd.read_csv(dataset, dtype=str, keep_default_na=False)
    for column in sweep.KEY + tuning.STATS + ["median_us", "ok", "failed", "wall_s", "chosen", "simulated"]:
        assert column in data.columns, column
    assert set(data["source"]) == {"local"} and set(data["ppn"]) == {"3"}
    assert set(data["ok"]) == {"1"} and set(data["failed"]) == {""}
    loaded = tuning.load([dataset])
    assert len(loaded) == 8 and loaded["config"].nunique() == 4
    # The statistics are those of the workload: powerlaw's mean block is far below its largest.
    power = loaded[loaded["dist"] == "powerlaw"].iloc[0]
    assert power["max_block"] > 3 * power["mean_block"]
    # auto's own cost at the shape, timed beside the candidates.
    assert (pd.to_numeric(data["auto_reduction_us"]) > 0).all()
    second = tucoll(*args)
    assert second.returncode == 0 and "0 rows added" in second.stdout, second.stdout
    # Rows from before the bench timed it get it measured, once per shape, by the next sweep.
    data["auto_reduction_us"] = ""
    data.to_csv(dataset, index=False)
    third = tucoll(*args)
    assert third.returncode == 0 and "auto's reduction" in third.stdout, third.stdout
    refilled = pd.read_csv(dataset, dtype=str, keep_default_na=False)
    assert refilled["auto_reduction_us"].nunique() == 1 and float(refilled["auto_reduction_us"].iloc[0]) > 0
    # Rows keep the library sources they ran with; rows from earlier ones are kept, counted, and
    # run again on request, the new row superseding the old in what a table is built from.
    assert set(refilled["sources"]) == {sources_fingerprint()}
    refilled.loc[refilled["requested"] == "vendor", "sources"] = "0123456789ab"
    refilled.to_csv(dataset, index=False)
    kept = tucoll(*args)
    assert kept.returncode == 0 and "0 rows added" in kept.stdout, kept.stdout
    assert "4 of the cells already there were run with earlier library sources" in kept.stdout, kept.stdout
    refreshed = tucoll(*args, "--refresh")
    assert refreshed.returncode == 0 and "4 rows added" in refreshed.stdout, refreshed.stdout
    assert len(pd.read_csv(dataset)) == 12
    loaded = tuning.load([dataset])
    assert len(loaded) == 8 and set(loaded["sources"]) == {sources_fingerprint()}


def test_the_last_row_of_a_cell_counts_and_sources_may_be_missing():
    from tucoll import store

    frame = pd.DataFrame({"k": [1, 2, 1], "v": ["old", "only", "new"]})
    assert list(store.latest(frame, ["k"])["v"]) == ["only", "new"]
    assert list(store.sources_of(frame)) == ["", "", ""]  # stored before rows kept them
    mixed = pd.concat([frame, pd.DataFrame({"k": [3], "v": ["x"], "sources": ["0123456789ab"]})], ignore_index=True)
    assert list(store.sources_of(mixed)) == ["", "", "", "0123456789ab"]


# ------------------------------------------------------------------------ synthetic models

SPECS = ["vendor", "tuna:radix=2", "tuna:radix=8", "scattered:block_count=4"]


def synthetic(n_sizes=24, seed=3) -> pd.DataFrame:
    """Times from an alpha-beta model: radix 2 wins small blocks, radix 8 the middle, the vendor
    large ones; max_block separates two distributions with equal means."""
    rng = np.random.default_rng(seed)
    rows = []
    for nprocs in (16, 32, 64):
        for dist, skew in (("flat", 1.0), ("peaky", 8.0)):
            for k in range(n_sizes):
                size = 2.0 ** (1 + k * 15 / n_sizes)
                mean = size / 2
                for spec in SPECS:
                    name, params = tuning.spec_parts(spec)
                    lat = {"vendor": nprocs, "tuna": params.get("radix", 2) * math.log(nprocs, params.get("radix", 2)),
                           "scattered": nprocs / 2}[name]
                    beta = {"vendor": 1.0, "tuna": math.log2(nprocs) / math.log2(params.get("radix", 2)),
                            "scattered": 1.3}[name] * (skew if name == "tuna" else 1.0)
                    t = 2.0 * lat + 0.01 * beta * mean * nprocs
                    rows.append({"source": "synthetic", "nprocs": nprocs, "ppn": 16, "mapping": "sequential",
                                 "dist": dist, "requested_size": int(size), "requested": spec, "ok": "-",
                                 "median_us": t * rng.uniform(0.99, 1.01), "failed": "",
                                 "max_block": size * skew, "mean_block": mean, "busiest_mean_block": mean * 1.1,
                                 "median_block": mean, "std_block": mean / 3 * skew, "skew_block": skew - 1,
                                 "zero_share": 0.0, "total_bytes": mean * nprocs * nprocs, "rank_imbalance": 1.1})
    return pd.DataFrame(rows)


@pytest.fixture()
def synthetic_dataset(tmp_path):
    path = tmp_path / "synthetic.csv"
    synthetic().to_csv(path, index=False)
    return path


def test_split_is_70_10_20_by_workload(synthetic_dataset):
    data = tuning.load([synthetic_dataset])
    masks = tuning.split_configs(data, seed=0)
    total = data["config"].nunique()
    counts = {k: data[m]["config"].nunique() for k, m in masks.items()}
    assert sum(counts.values()) == total
    assert abs(counts["train"] - 0.7 * total) <= 1 and abs(counts["test"] - 0.2 * total) <= 1
    for a in masks:
        for b in masks:
            if a < b:
                assert not set(data[masks[a]]["config"]) & set(data[masks[b]]["config"])
    # Seeded: the same split every time.
    again = tuning.split_configs(data, seed=0)
    assert all((masks[k] == again[k]).all() for k in masks)


def test_analysis_finds_the_feature_that_separates_workloads(synthetic_dataset):
    analysis = tuning.analyze(tuning.load([synthetic_dataset]))
    assert analysis.table_features[0] in tuning.RUNTIME_FEATURES
    assert set(analysis.table_features) <= set(tuning.RUNTIME_FEATURES)
    assert analysis.ranking["abs_rho"].is_monotonic_decreasing
    assert analysis.correlation.shape[0] == analysis.correlation.shape[1]


def test_design_keeps_negative_statistics_finite(synthetic_dataset):
    # skew_block is negative for left-skewed workloads (a few small blocks among large ones).
    data = tuning.load([synthetic_dataset])
    data["skew_block"] = -data["skew_block"] - 0.5
    x = tuning.design(data, ["mean_block", "skew_block"], sorted(data["spec"].map(lambda s: tuning.spec_parts(s)[0])
                                                                 .unique()), ["synthetic"])
    assert np.isfinite(x.to_numpy(dtype=float)).all()
    assert (x["log2_skew_block"] < 0).all()


def test_fit_reports_every_model_and_trees_choose_well(synthetic_dataset):
    data = tuning.load([synthetic_dataset])
    fit = tuning.fit(data, ["mean_block", "max_block"], seed=0)
    assert set(fit.results) == {"linear", "lasso", "ridge", "tree", "forest", "boosting"}
    for r in fit.results.values():
        assert r.n_test == int(fit.masks["test"].sum()) and r.regret_geomean >= 1.0
        assert r.regret_max >= r.regret_p95 and r.regret_max >= r.regret_geomean
    # The model is log-linear in P and piecewise in size: tree ensembles should beat a linear fit.
    assert min(fit.results[m].mape_test for m in ("tree", "forest", "boosting")) < fit.results["linear"].mape_test
    assert fit.results["boosting"].mape_test < 25
    assert fit.results[fit.chosen].regret_geomean < 1.05
    summary = fit.summary()
    assert {"mape_test", "regret_geomean", "regret_p95", "n_test"} <= set(summary["models"]["tree"])


def test_the_table_model_is_the_better_predictor_among_regrets_within_the_tie():
    def result(name, regret, mape):
        return tuning.ModelResult(name, None, "-", mape, regret, mape, regret, regret, regret, 1, 1)

    # The shipped sweep's validation split: the tree's lower regret is within 1 % of boosting's.
    close = {"tree": result("tree", 1.2626, 20.38), "boosting": result("boosting", 1.2715, 12.40),
             "linear": result("linear", 1.3427, 71.28)}
    assert tuning.chosen_model(close) == "boosting"
    # Past the tie the lower regret wins whatever the MAPE.
    apart = {"tree": result("tree", 1.20, 20.0), "boosting": result("boosting", 1.2715, 12.4)}
    assert tuning.chosen_model(apart) == "tree"


def test_fit_json_command(synthetic_dataset):
    proc = tucoll("fit", synthetic_dataset, "--json", "--model", "tree", "--model", "linear")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out["models"]) == {"tree", "linear"}
    assert out["models"]["tree"]["n_test"] > 0


# --------------------------------------------------------------------------- table round trip

def test_table_is_what_the_library_reads(build, synthetic_dataset, tmp_path):
    """A table from the synthetic data, rescaled to P = 4 on one node, is read by the library:
    `auto`, computing the features at run time, runs what a lookup of the bench's statistics says."""
    data = tuning.load([synthetic_dataset])
    data = data[(data["nprocs"] == 16) & (data["spec"] != "tuna:radix=8")].copy()  # no radix 8 at P = 4
    data["nprocs"], data["ppn"] = 4, 4
    data["config"] = data[tuning.CONFIG].astype(str).agg("|".join, axis=1)
    features = ["mean_block", "max_block"]
    fit = tuning.fit(data.reset_index(drop=True), features, seed=0, families=["tree"])
    table = tuning.build_table({"synthetic": fit}, features)
    path = tmp_path / "table.json"
    tuning.write_table(table, path)
    assert json.loads(path.read_text())["entries"][0]["nprocs"] == 4
    specs = set()
    for dist, size in (("uniform", 16), ("uniform", 4096), ("powerlaw", 65536), ("onehuge", 64)):
        rows = run_bench(build, BenchRun("alltoallv", 4, ["--alg", "auto", "--dist", dist, "--size", str(size),
                                                            "--iters", "2", "--check"],
                                         env={"TUCOLL_TUNING_FILE": str(path)}))
        row = rows.iloc[0]
        expected = tuning.lookup(table, 4, 4, [float(row[f]) for f in features])
        assert row["ok"] == "1"
        assert row["chosen"] == expected, (dist, size, row["path"])
        assert "P=4 Q=4 mean_block=" in row["path"]
        specs.add(row["chosen"])
    assert len(specs) >= 2, "the workloads should reach different rules"


def test_reduction_is_charged_to_specs_that_cannot_take_it(build, synthetic_dataset):
    # auto's allreduce replaces the TuNA family's own reduction of M; every other spec pays it on
    # top, and the table must count that.
    sharing = tuning.reduction_sharing(build.root)
    for spec in ("vendor", "scattered", "spreadout", "auto"):
        assert not sharing.shares(spec, 64, 16), spec
    assert sharing.shares("tuna:radix=4", 64, 64)
    assert sharing.shares("bruck2", 64, 64)
    assert not sharing.shares("tuna:radix=63", 64, 64)  # all direct: no M
    assert sharing.shares("tuna_coalesced:radix=16,block_count=1", 64, 16)  # inter-node blocks
    assert not sharing.shares("tuna_staggered:radix=16,block_count=0", 16, 16)  # one node, all direct
    assert sharing.shares("tuna_staggered:radix=2,block_count=0", 16, 16)  # one node, T
    data = tuning.load([synthetic_dataset])
    group = data[data["nprocs"] == 16]
    cost = tuning.reduction_cost(group)
    smallest = group[group["max_block"] == group["max_block"].min()]
    assert cost == pytest.approx(0.5 * smallest["median_us"].min())  # estimated: no measurement
    assert tuning.reduction_cost(group.assign(auto_reduction_us=["", "7.5"] * (len(group) // 2))) == 7.5
    charges = tuning.reduction_charges(["vendor", "tuna:radix=2"], group, sharing)
    assert list(charges) == [cost, 0.0]
    assert not tuning.reduction_charges(["vendor"], group, None).any()
    # Charged, a table's regret can only grow.
    fit = tuning.fit(data, ["mean_block"], seed=0)
    table = tuning.build_table({"synthetic": fit}, ["mean_block"], sharing=sharing)
    assert (tuning.table_regret(table, data, sharing) >= tuning.table_regret(table, data) - 1e-12).all()


def test_table_command_and_report(synthetic_dataset, tmp_path):
    out = tmp_path / "t.json"
    proc = tucoll("table", synthetic_dataset, "-o", out)
    assert proc.returncode == 0, proc.stderr
    table = json.loads(out.read_text())
    assert table["format"] == "tucoll-tuning-table" and table["version"] == 1
    # Which library sources the rows ran with: none recorded in this dataset, and said so.
    rows = len(tuning.load([synthetic_dataset]))
    assert table["generated_by"]["library_sources"] == {"synthetic": {"unrecorded": rows}}
    assert f"{rows} of the {rows} rows ran with earlier library sources" in proc.stdout, proc.stdout
    assert {(e["nprocs"], e["ppn"]) for e in table["entries"]} == {(16, 16), (32, 16), (64, 16)}
    # Against a table that always names the vendor, the changes are listed per P.
    vendor = tmp_path / "vendor.json"
    vendor.write_text(json.dumps(table_of(table["features"], [
        {"nprocs": p, "ppn": 16, "rules": [{"below": None, "spec": "vendor"}]} for p in (16, 32, 64)])))
    against = tucoll("table", synthetic_dataset, "-o", tmp_path / "t2.json", "--against", vendor)
    assert against.returncode == 0, against.stderr
    assert "choice changed" in against.stdout and "The changed choices" in against.stdout
    report = tucoll("report", synthetic_dataset, "--table", out, "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "REPORT.md").read_text()
    for png in ("winners.png", "correlation.png", "models-synthetic.png", "table.png"):
        assert (tmp_path / "report" / png).is_file() and png in text


def table_of(features: list[str], entries: list[dict]) -> dict:
    return {"format": "tucoll-tuning-table", "version": 1, "collective": "alltoallv", "features": features,
            "fallback": "vendor", "entries": entries}


def test_two_tables_are_compared_choice_by_choice(build, synthetic_dataset):
    data = tuning.load([synthetic_dataset])

    def one_spec(spec16: str) -> dict:
        return table_of(["mean_block"], [{"nprocs": p, "ppn": 16, "rules": [
            {"below": None, "spec": spec16 if p == 16 else "vendor"}]} for p in (16, 32, 64)])

    old, new = one_spec("vendor"), one_spec("tuna:radix=2")
    by_p, changed = tuning.compare_tables(old, new, data)
    assert set(by_p["source"]) == {"synthetic"}
    by_p = by_p.set_index("nprocs")
    assert (by_p["unmeasured"] == 0).all()
    workloads16 = data[data["nprocs"] == 16]["config"].nunique()
    assert by_p.loc["16", "changed"] == by_p.loc["16", "workloads"] == workloads16
    assert by_p.loc["32", "changed"] == by_p.loc["64", "changed"] == 0
    assert by_p.loc["all", "workloads"] == data["config"].nunique()
    assert len(changed) == workloads16 and set(changed["spec_new"]) == {"tuna:radix=2"}
    at16 = data[data["nprocs"] == 16]
    assert by_p.loc["16", "geomean_new"] == pytest.approx(tuning.geomean(tuning.table_regret(new, at16)))
    assert by_p.loc["32", "worst_old"] == by_p.loc["32", "worst_new"]
    choices = tuning.table_choices(new, data)
    assert (choices[choices["nprocs"] == 16]["spec"] == "tuna:radix=2").all()
    # A pick that was never measured is counted as changed and unmeasured, not dropped.
    unswept = one_spec("tuna:radix=16")
    by_p, changed = tuning.compare_tables(old, unswept, data)
    at16 = by_p.set_index("nprocs").loc["16"]
    assert at16["changed"] == at16["unmeasured"] == workloads16 and math.isnan(at16["geomean_new"])
    assert changed["regret_new"].isna().all()
    assert tuning.table_regret(new, data.iloc[:0]).size == 0


def test_online_choices_join_a_swept_table_where_it_has_no_entry(build):
    swept = table_of(["mean_block", "max_block"], [
        {"nprocs": 4, "ppn": 4, "rules": [{"below": None, "rules": [{"below": None, "spec": "vendor"}]}]}])
    online = table_of(["max_block"], [
        {"nprocs": 4, "ppn": 4, "rules": [{"below": None, "spec": "pairwise"}]},
        {"nprocs": 8, "ppn": 8, "rules": [{"below": 128.0, "spec": "spreadout"}, {"below": None, "spec": "tuna:radix=3"}]}])
    assert tuning.merge_online(swept, online) == 1
    assert tuning.lookup(swept, 4, 4, [10.0, 10.0]) == "vendor"  # the swept entry wins
    assert tuning.lookup(swept, 8, 8, [10.0, 100.0]) == "spreadout"
    assert tuning.lookup(swept, 8, 8, [10.0, 1000.0]) == "tuna:radix=3"
    assert swept["entries"][1]["source"] == "online (online)"
    with pytest.raises(tuning.TuningError):
        tuning.merge_online(table_of(["mean_block"], []), online)


def test_a_table_is_checked_by_the_library_before_it_is_written(build, tmp_path):
    path = tmp_path / "t.json"
    good = table_of(["max_block"], [{"nprocs": 8, "ppn": 8, "source": "x",
                                     "rules": [{"below": 64.0, "spec": "tuna:radix=8"}, {"below": None, "spec": "vendor"}]}])
    tuning.write_table(good, path)
    assert json.loads(path.read_text())["entries"][0]["rules"][0] == {"below": 64.0, "spec": "tuna:radix=8"}
    for bad in (table_of(["max_block"], [{"nprocs": 8, "ppn": 8, "rules": [{"below": None, "spec": "tuna:radix=9"}]}]),
                table_of(["median_block"], []), {**good, "version": 2}):
        with pytest.raises(tuning.TuningError):
            tuning.write_table(bad, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()
    # The shipped table passes the same check.
    tuning.write_table(json.loads((REPO_ROOT / "tuning" / "default.json").read_text()), tmp_path / "shipped.json")


def test_specs_are_parsed_and_reductions_decided_by_the_library(build):
    assert tuning.spec_parts("tuna:radix=4,block_count=2K") == ("tuna", {"radix": 4, "block_count": 2048})
    assert tuning.spec_parts("ipc:copy=hybrid") == ("ipc", {"copy": "hybrid"})
    assert tuning.spec_parts("vendor") == ("vendor", {})
    for bad in ("tuna:radix=", "tuna:=4", ":radix=4"):
        with pytest.raises(tuning.TuningError):
            tuning.spec_parts(bad)
    table = table_of(["max_block"], [
        {"nprocs": 4, "ppn": 4, "rules": [{"below": 64.0, "spec": "spreadout"}, {"below": None, "spec": "spreadout"}]},
        {"nprocs": 8, "ppn": 8, "rules": [{"below": 64.0, "spec": "spreadout"}, {"below": None, "spec": "vendor"}]}])
    # One spec under every rule: auto decides with no reduction (core/tuning.cpp's only_spec).
    assert not tuning.reduces(table, 4, 4) and tuning.reduces(table, 8, 8)
    with pytest.raises(tuning.TuningError):
        tuning.reduces(table_of(["max_block"], []), 4, 4)
