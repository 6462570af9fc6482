"""The loop from a recorded run to a tuned table: TUCOLL_RECORD, tucoll tune, the table auto reads."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tucoll import replay
from tucoll.bench import BenchRun, run_bench


def tucoll(*args, cwd=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "tucoll", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


@pytest.fixture(scope="module")
def recording(build, tmp_path_factory):
    """tucoll-bench run under TUCOLL_RECORD at P = 4: uniform then powerlaw blocks, a few calls each."""
    folder = tmp_path_factory.mktemp("rec") / "rec"
    for dist in ("uniform", "powerlaw"):
        run_bench(build, BenchRun("alltoallv", 4, ["--alg", "pairwise", "--dist", dist, "--sizes", "2K",
                                                   "--iters", "3", "--warmup", "1"],
                                  env={"TUCOLL_RECORD": str(folder)}))
    return folder


def test_a_recording_lists_each_distinct_matrix_once(recording):
    patterns = replay.load(recording)
    # Two runs, two communicators (one per process group), one matrix each, called warm-up + 3 times.
    assert len(replay.manifests(recording)) == 2
    assert sorted(p.calls for p in patterns) == [4, 4]
    assert {p.collective for p in patterns} == {"alltoallv"}
    assert all(p.nprocs == 4 and p.path.is_file() for p in patterns)
    chosen, note = replay.selected(patterns, 1)
    assert len(chosen) == 1 and "1 of 2 all-to-all patterns, 4 of 8 recorded calls" in note
    assert len(replay.selected(patterns, 0)[0]) == 2  # 0: the whole recording


def test_tune_replays_at_more_ranks_and_writes_a_table_auto_reads(build, recording, tmp_path):
    out, report = tmp_path / "tuned.json", tmp_path / "report.csv"
    proc = tucoll("tune", recording, "--np", "4,6", "--alg", "vendor", "--alg", "spreadout", "--alg", "pairwise",
                  "--iters", "2", "-o", out, "--report", report, "--build-dir", build.root, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = json.loads(out.read_text())
    tuned = {(e["nprocs"], e["ppn"]): e for e in table["entries"] if e["source"].startswith("tucoll tune")}
    assert set(tuned) == {(4, 4), (6, 6)}
    specs = {r["spec"] for e in tuned.values() for r in e["rules"] if "spec" in r}
    assert specs <= {"vendor", "spreadout", "pairwise"}
    # The base table's other entries are kept.
    assert any(e["nprocs"] == 1024 for e in table["entries"])
    rows = pd.read_csv(report)
    assert len(rows) == 4 and set(rows["nprocs"]) == {4, 6}
    # The tuned table's choice is the cheapest over each P's recorded calls of all it could choose
    # (vendor among them, charged nothing as a constant choice), and no row beats its fastest
    # measured candidate.
    per_p = replay.weighted(rows)
    assert (per_p["tuned"] <= per_p["vendor"] * (1 + 1e-9)).all(), per_p
    assert (rows["tuned_us"] >= rows["best_us"] * (1 - 1e-9)).all(), rows
    assert "recorded calls" in proc.stdout
    # auto reads it.
    ran = run_bench(build, BenchRun("alltoallv", 6, ["--alg", "auto", "--dist", "uniform", "--sizes", "2K",
                                                     "--iters", "1"], env={"TUCOLL_TUNING_FILE": str(out)}))
    assert ran["chosen"].iloc[0] in {"vendor", "spreadout", "pairwise"}
    # A second run finds every measurement in the dataset and simulates nothing.
    again = tucoll("tune", recording, "--np", "4,6", "--alg", "vendor", "--alg", "spreadout", "--alg", "pairwise",
                   "--iters", "2", "-o", out, "--build-dir", build.root, cwd=tmp_path)
    assert again.returncode == 0 and "0 to run" in again.stdout


def shape(times, features, weights, charges):
    specs = list(charges)
    index = [f"p{i}" for i in range(len(times))]
    return replay.Shape(8, 8, pd.DataFrame(times, index=index, columns=specs),
                        pd.DataFrame({"mean_block": features, "max_block": features}, index=index),
                        pd.Series(weights, index=index), pd.Series(charges))


def test_one_spec_where_choosing_costs_more_than_it_saves():
    # b is 1 µs faster on the rarely called pattern; the reduction costs 5 µs on every call.
    s = shape([[10.0, 12.0], [20.0, 19.0]], [100, 10000], [100, 1], {"a": 5.0, "b": 5.0})
    assert replay.shape_rules(s) == [{"below": None, "spec": "a"}]


def test_rules_switch_between_patterns_where_choosing_pays():
    s = shape([[10.0, 40.0], [90.0, 20.0]], [100, 10000], [1, 1], {"a": 5.0, "b": 5.0})
    rules = replay.shape_rules(s)
    assert [r["spec"] for r in rules] == ["a", "b"]
    assert rules[0]["below"] == pytest.approx(np.sqrt(100 * 10000), rel=1e-3)


def test_missing_recording_is_an_error(tmp_path):
    proc = tucoll("tune", tmp_path, "--np", "4")
    assert proc.returncode != 0 and "no manifest.json" in proc.stderr
