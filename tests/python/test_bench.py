"""tucoll-bench as users run it: output formats, --check, options and errors."""

import re
import subprocess

import pytest

from tucoll.bench import CSV_COLUMNS, BenchRun, registry, run_bench
from tucoll.build import MATRIX_DIR, PATTERN_DIR

HEADER = ("collective,algorithm,params,nprocs,ppn,dist,size,type,iters,median_us,min_us,max_us,rounds,messages,"
          "scratch_bytes,ok")


def bench(build, nprocs, *args):
    cmd = build.launch(nprocs, "tucoll-bench", list(args))
    return subprocess.run(cmd, capture_output=True, text=True, env=build.environment(), timeout=300)


def alltoallv_names(build):
    return [a["name"] for a in registry(build)["collectives"]["alltoallv"]["algorithms"]]


def test_csv_header_is_exactly_the_documented_one(build):
    proc = bench(build, 2, "alltoallv", "--size", "16", "--iters", "2", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith(HEADER + ",") or proc.stdout.splitlines()[0] == HEADER
    assert CSV_COLUMNS == HEADER.split(",")


@pytest.mark.parametrize("nprocs,dist,type_", [(5, "uniform", "char"), (5, "zeros", "vector"), (3, "powerlaw", "int"),
                                               (4, "onehuge", "char4-int"), (2, "fft1", "double")])
def test_every_algorithm_matches_the_vendor(build, nprocs, dist, type_):
    frame = run_bench(build, BenchRun("alltoallv", nprocs, ["--dist", dist, "--type", type_, "--size", "64",
                                                              "--iters", "3", "--check"]))
    assert list(frame["algorithm"]) == alltoallv_names(build)
    assert (frame["ok"] == "1").all(), frame
    assert (frame["nprocs"] == nprocs).all()
    assert (frame["median_us"] >= frame["min_us"]).all() and (frame["max_us"] >= frame["median_us"]).all()


def test_explicit_algorithms_sizes_and_parameters(build):
    frame = run_bench(build, BenchRun("alltoallv", 3, ["--alg", "scattered:block_count=1", "--alg", "pairwise",
                                                         "--sizes", "8,1K", "--iters", "2", "--check"]))
    assert list(frame["algorithm"]) == ["scattered", "pairwise", "scattered", "pairwise"]
    assert list(frame["params"]) == ["block_count=1", "", "block_count=1", ""]
    assert list(frame["size"]) == [8, 8, 1024, 1024]
    assert (frame["rounds"] == 2).all()


def test_real_pattern_file(build):
    pattern = PATTERN_DIR / "pattern_4.txt"
    frame = run_bench(build, BenchRun("alltoallv", 4, ["--dist", f"file:{pattern}:scale=0.0001", "--iters", "2",
                                                         "--check"]))
    assert (frame["ok"] == "1").all()
    assert (frame["messages"] > 0).all()


@pytest.mark.parametrize("resize,nprocs,total", [("tile", 4, 240), ("stretch", 4, 120), ("stretch", 5, 132)])
def test_a_pattern_resized_to_more_ranks(build, tmp_path, resize, nprocs, total):
    # [[0, 10], [20, 30]]: tile repeats it (each rank sends P/2 times its original's row);
    # stretch keeps each rank's row total, split over the destination group, rounded per block (P = 5:
    # groups of 3 and 2 ranks, 20 / 3 -> 7, so 3 x 10 + 2 x (3 x 7 + 2 x 15) = 132).
    pattern = tmp_path / "two.pattern"
    pattern.write_text("0 10\n20 30\n")
    frame = run_bench(build, BenchRun("alltoallv", nprocs, ["--dist", f"file:{pattern}:resize={resize}",
                                                            "--iters", "1", "--check"]))
    assert (frame["ok"] == "1").all()
    assert frame["total_bytes"].iloc[0] == total


def test_a_pattern_of_other_size_needs_a_resize_rule(build, tmp_path):
    pattern = tmp_path / "two.pattern"
    pattern.write_text("0 10\n20 30\n")
    proc = bench(build, 3, "alltoallv", "--dist", f"file:{pattern}", "--iters", "1")
    assert proc.returncode != 0 and "resize=tile" in proc.stderr
    proc = bench(build, 3, "alltoallv", "--dist", f"file:{pattern}:resize=squeeze", "--iters", "1")
    assert proc.returncode != 0 and "bad resize" in proc.stderr


def test_osu_format_prints_a_block_per_algorithm(build):
    proc = bench(build, 2, "alltoallv", "--alg", "linear", "--alg", "xor", "--sizes", "4,8", "--iters", "2",
                 "--format", "osu")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("# Size") == 2
    assert "Avg Latency(us)" in proc.stdout
    assert "# tucoll-bench alltoallv: linear" in proc.stdout


def test_default_table_compares_with_vendor(build):
    # Every algorithm's row, its speedup the vendor's median over its own (as printed, to the
    # printed precision).
    proc = bench(build, 2, "alltoallv", "--size", "32", "--iters", "2")
    assert proc.returncode == 0, proc.stderr
    row = re.compile(r"^32\s+(?P<label>.+?)\s+(?P<median>[\d.]+)\s+[\d.]+\s+[\d.]+\s+(?P<speedup>[\d.]+)x\s")
    rows = [m for m in map(row.match, proc.stdout.splitlines()) if m]
    medians = {re.split(r"[: ]", m["label"])[0]: float(m["median"]) for m in rows}
    assert set(medians) == set(alltoallv_names(build)), proc.stdout
    # The medians print to 0.01 us and the speedup to 0.01: the speedup of the unrounded medians
    # lies within what the printed ones allow, which at sub-microsecond medians is a few percent.
    half = 0.005
    vendor = medians["vendor"]
    for m in rows:
        median = float(m["median"])
        low = (vendor - half) / (median + half) - half
        high = (vendor + half) / max(median - half, 1e-9) + half
        assert low <= float(m["speedup"]) <= high, (m.group(0), low, high)


@pytest.mark.parametrize("args,message", [
    (["--alg", "nope"], 'unknown alltoallv algorithm "nope"'),
    (["--alg", "scattered:block_count=-1"], "out of range"),
    (["--dist", "lognormal"], 'unknown distribution "lognormal"'),
    (["--dist", "file:/nonexistent"], "cannot open pattern file"),
    # No GPU here: a CUDA build says there is no device, any other build that it needs one.
    (["--memory", "device"], "--memory device"),
])
def test_bad_options_fail_with_a_message(build, args, message):
    proc = bench(build, 2, "alltoallv", "--iters", "1", *args)
    assert proc.returncode != 0
    assert message in proc.stderr


def test_help_lists_distributions_and_types(build):
    proc = bench(build, 1, "alltoallv", "--help")
    assert proc.returncode == 0
    for word in ("uniform", "normal", "powerlaw", "fft1", "fft2", "zeros", "onehot", "file:PATH", "vector"):
        assert word in proc.stdout


def test_list_shows_every_registered_algorithm(build):
    proc = bench(build, 1, "--list")
    assert proc.returncode == 0
    for name in alltoallv_names(build):
        assert f"  {name}" in proc.stdout


def test_tuna_family_matches_the_vendor(build):
    frame = run_bench(build, BenchRun("alltoallv", 7, ["--alg", "bruck2", "--alg", "tuna:radix=2", "--alg",
                                                         "tuna:radix=3", "--alg", "tuna:radix=7", "--dist", "powerlaw",
                                                         "--size", "256", "--iters", "3", "--check"]))
    assert (frame["ok"] == "1").all(), frame
    assert list(frame["rounds"]) == [3, 3, 4, 6]
    assert frame.iloc[3]["scratch_bytes"] == 0  # radix >= P-1: spread-out, no T


@pytest.mark.parametrize("nprocs", [8, 10])
def test_hierarchical_variants_with_declared_nodes(build, nprocs):
    frame = run_bench(build, BenchRun("alltoallv", nprocs,
                                      ["--alg", "tuna_coalesced:radix=2,block_count=1", "--alg",
                                       "tuna_staggered:radix=2,block_count=4", "--dist", "uniform", "--size", "64",
                                       "--iters", "3", "--check"], env={"TUCOLL_PPN": "4"}))
    assert (frame["ok"] == "1").all(), frame
    assert (frame["ppn"] == 4).all()
    uneven = nprocs % 4 != 0
    assert all(("fallback" in p) == uneven for p in frame["path"]), list(frame["path"])


def test_tuna_scratch_is_its_peak(build):
    # P = 8, radix 2: B = 8 - 3 - 1 = 4 blocks between rounds, and one more while slot 7 (binary
    # 111) passes through in round x = 1; the CSV's staging_bytes is that one.
    frame = run_bench(build, BenchRun("alltoallv", 8, ["--alg", "tuna:radix=2", "--dist", "onehot", "--size",
                                                         "1000", "--iters", "2"]))
    assert frame.iloc[0]["scratch_bytes"] == 5 * 1000
    assert frame.iloc[0]["staging_bytes"] == 1000


@pytest.mark.parametrize("nprocs", [5, 6, 8])
def test_allgather_runs_every_registered_algorithm(build, nprocs):
    frame = run_bench(build, BenchRun("allgather", nprocs, ["--size", "1024", "--iters", "3", "--check"]))
    assert list(frame["algorithm"]) == [a["name"] for a in registry(build)["collectives"]["allgather"]["algorithms"]]
    assert (frame["ok"] == "1").all(), frame


def test_allgatherv_algorithms_match_the_vendor(build):
    frame = run_bench(build, BenchRun("allgatherv", 7, ["--dist", "powerlaw", "--size", "512", "--iters", "3",
                                                          "--check"]))
    assert list(frame["algorithm"]) == [a["name"] for a in registry(build)["collectives"]["allgatherv"]["algorithms"]]
    assert (frame["ok"] == "1").all(), frame


@pytest.mark.parametrize("nprocs,rounds", [(8, 3), (21, 5)])
def test_sparbit_rounds(build, nprocs, rounds):
    frame = run_bench(build, BenchRun("allgather", nprocs, ["--alg", "sparbit", "--size", "64", "--iters", "1",
                                                              "--warmup", "0", "--check"]))
    assert frame.iloc[0]["rounds"] == rounds
    assert frame.iloc[0]["ok"] == "1"


@pytest.mark.parametrize("collective,args", [
    ("allgather", ["--size", "100", "--in-place"]),
    ("allgatherv", ["--dist", "uniform", "--size", "100", "--type", "vector"]),
    ("alltoallv", ["--alg", "tuna_coalesced:radix=2", "--alg", "tuna_staggered:radix=3", "--alg", "linear",
                   "--size", "50"]),
])
@pytest.mark.parametrize("mapping", ["sequential", "cyclic"])
def test_rank_mappings(build, collective, args, mapping):
    frame = run_bench(build, BenchRun(collective, 6, [*args, "--mapping", mapping, "--iters", "2", "--check"],
                                      env={"TUCOLL_PPN": "3"}))
    assert (frame["ok"] == "1").all(), frame
    assert (frame["mapping"] == mapping).all()
    assert (frame["ppn"] == 3).all()
    assert not any("fallback" in p for p in frame["path"])


@pytest.mark.parametrize("collective,matrix,count", [("alltoallv_crs", "can_1054.mtx", 4),
                                                     ("alltoall_crs", "bibd_49_3.mtx", 5)])
def test_sparse_exchanges_on_matrices(build, collective, matrix, count):
    frame = run_bench(build, BenchRun(collective, 8, ["--matrix", str(MATRIX_DIR / matrix), "--iters", "3", "--check"],
                                      env={"TUCOLL_PPN": "4"}))
    assert len(frame) == count
    assert (frame["ok"] == "1").all(), frame
    assert list(frame.columns)[-1] == "inter_region_msgs"
    by_alg = frame.set_index("algorithm")["inter_region_msgs"]
    assert by_alg["nbx_loc"] < by_alg["nbx"]
    assert by_alg["personalized_loc"] < by_alg["personalized"]


def test_sparse_random_pattern(build):
    frame = run_bench(build, BenchRun("alltoallv_crs", 5, ["--dist", "random:3", "--size", "64", "--type", "vector",
                                                             "--iters", "2", "--check"], env={"TUCOLL_PPN": "2"}))
    assert (frame["ok"] == "1").all(), frame


@pytest.mark.parametrize("collective,args", [("alltoall", []), ("alltoallv", ["--dist", "powerlaw"])])
def test_bandwidth_columns_follow_nccl_tests(build, collective, args):
    # algbw: the bytes the mean rank sends over the median time; busbw = algbw (P-1)/P.
    nprocs = 3
    frame = run_bench(build, BenchRun(collective, nprocs, ["--size", "4K", "--iters", "3", "--alg", "vendor", *args]))
    row = frame.iloc[0]
    rank_bytes = 4096 * nprocs if collective == "alltoall" else row["mean_block"] * nprocs
    assert row["algbw_GBps"] == pytest.approx(rank_bytes / (row["median_us"] * 1e3), rel=1e-3, abs=1e-4)
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * (nprocs - 1) / nprocs, rel=1e-3, abs=1e-4)


def test_calls_on_one_node_are_also_timed_from_the_last_ranks_barrier_exit(build):
    # The ranks read the node's monotonic clock: a call timed from the last rank's exit to the
    # last rank's end is never longer than the slowest rank's own time (which starts at its own,
    # earlier or equal, exit), and it is a time.
    frame = run_bench(build, BenchRun("alltoallv", 3, ["--sizes", "16,4K", "--iters", "5", "--alg", "vendor",
                                                       "--alg", "tuna:radix=2"]))
    from_last = frame["from_last_exit_us"].astype(float)
    assert (from_last > 0).all() and (from_last <= frame["median_us"] + 1e-3).all(), frame
    crs = run_bench(build, BenchRun("alltoallv_crs", 3, ["--dist", "random:2", "--iters", "2"]))
    assert "from_last_exit_us" in crs.columns and list(crs.columns)[-1] == "inter_region_msgs"


def test_persistent_requests_are_checked_and_reported(build):
    frame = run_bench(build, BenchRun("alltoallv", 3, ["--persistent", "--alg", "vendor", "--alg", "tuna:radix=2",
                                                       "--alg", "auto", "--dist", "powerlaw", "--sizes", "16,1K",
                                                       "--iters", "3", "--check"]))
    assert (frame["ok"] == "1").all(), frame
    assert frame["path"].str.contains("persistent").all(), frame["path"]
