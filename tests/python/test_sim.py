"""The SimGrid target: a small simulated run is correct and deterministic; the tool's guards hold."""

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tucoll.build import MATRIX_DIR
from tucoll.sim import Platform

SIM_BUILD = Path(os.environ.get("TUCOLL_SIM_BUILD_DIR", Path(__file__).resolve().parents[2] / "build-sim"))

pytestmark = [pytest.mark.skipif(not (SIM_BUILD / "build-info.json").is_file(),
                                 reason="no SimGrid build (make sim-build)"),
              pytest.mark.mpi_free]  # see conftest.py


def sim(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "tucoll", "sim", "--build-dir", str(SIM_BUILD), *args],
                          capture_output=True, text=True, timeout=timeout)


def frame(proc):
    assert proc.returncode == 0, proc.stderr
    return pd.read_csv(io.StringIO(proc.stdout), comment="#", dtype={"params": str, "ok": str}, keep_default_na=False)


ARGS = ["--platform", "polaris-like", "--np", "64", "--", "alltoallv", "--alg", "vendor", "--alg", "tuna:radix=2",
        "--alg", "tuna:radix=8", "--alg", "bruck2", "--alg", "tuna_coalesced:radix=4,block_count=1",
        "--alg", "scattered:block_count=8", "--dist", "uniform", "--size", "64", "--format", "csv"]


def test_simulated_results_are_correct_and_deterministic():
    first, second = sim(*ARGS), sim(*ARGS)
    rows = frame(first)
    assert first.stdout.startswith("# simulated with SimGrid on polaris-like")
    assert len(rows) == 6 and (rows["ok"] == "1").all(), rows
    assert (rows["ppn"] == 32).all()  # nodes come from the hostfile: two nodes of 32
    # SMPI's MPI_Wtime is one clock for all ranks (MPI_WTIME_IS_GLOBAL): calls are also timed from
    # the last rank's barrier exit, which on two nodes the simulated barrier releases last, a
    # message's latency or so after the first.
    assert ((rows["from_last_exit_us"] > 0) & (rows["from_last_exit_us"] < rows["median_us"])).all(), rows
    assert first.stdout == second.stdout, "two simulations of the same run must print the same times"


def test_auto_uses_the_build_table_in_simulation():
    # SMPI runs a private copy of the binary per rank: the table must still be found, and auto
    # must run what the table says for the workload's statistics.
    import json

    from tucoll import tuning

    rows = frame(sim("--platform", "polaris-like", "--np", "64", "--", "alltoallv", "--alg", "auto", "--dist",
                     "powerlaw", "--size", "256", "--iters", "1", "--check", "--format", "csv"))
    auto = rows.iloc[0]
    assert auto["ok"] == "1" and "default.json P=64 Q=32" in auto["path"], auto["path"]
    table = json.loads((SIM_BUILD / "share" / "tucoll" / "tuning" / "default.json").read_text())
    expected = tuning.lookup(table, 64, 32, [float(auto[f]) for f in table["features"]])
    assert auto["chosen"] == expected


def test_allgather_and_sparse_run_in_simulation():
    rows = frame(sim("--platform", "yahoo-like", "--np", "24", "--mapping", "cyclic", "--", "allgather", "--size",
                     "1K", "--format", "csv"))
    assert (rows["ok"] == "1").all(), rows
    rows = frame(sim("--platform", "quartz-like", "--np", "64", "--", "alltoallv_crs", "--matrix",
                     str(MATRIX_DIR / "dwt_162.mtx"), "--format", "csv"))
    assert (rows["ok"] == "1").all(), rows


def test_ipc_copies_on_a_simulated_gpu_cluster():
    # The sim backend: copies straight into the node's receive buffers, checked against the
    # vendor; blocks below ipc_threshold take the MPI's own alltoall; the copy engines differ.
    rows = frame(sim("--platform", "thetagpu-like", "--np", "16", "--", "alltoall", "--warmup", "1", "--alg",
                     "vendor", "--alg", "ipc", "--alg", "ipc:copy=kernel", "--alg", "ipc:copy=memcpy",
                     "--alg", "ipc:ipc_threshold=0", "--sizes", "16,4K", "--check", "--format", "csv"))
    assert (rows["ok"] == "1").all(), rows
    ipc = rows[rows["algorithm"] == "ipc"]
    assert ipc["path"].str.contains("ipc sim, uniform").any(), ipc["path"]
    assert ipc["path"].str.contains("below threshold").any(), ipc["path"]
    at_4k = rows[(rows["size"] == 4096) & (rows["algorithm"] == "ipc")].set_index("params")["median_us"]
    assert len(set(at_4k)) > 1, "kernel and copy engine are charged differently"
    rows = frame(sim("--platform", "lassen-like", "--np", "8", "--", "alltoallv", "--alg", "ipc:ipc_threshold=0",
                     "--dist", "powerlaw", "--size", "8K", "--check", "--format", "csv"))
    assert (rows["ok"] == "1").all() and rows["path"].str.contains("ipc sim").all(), rows


def test_a_simgrid_without_device_memory_refuses_a_platform_that_charges_it():
    # A SimGrid without sim/simgrid-patches/smpi-device-messages.patch (Spack's) would simulate
    # thetagpu-like's device costs as nothing, under a fingerprint that says otherwise.
    from dataclasses import replace

    from tucoll import sim as simulation

    build = replace(simulation.sim_build(str(SIM_BUILD)), smpi_device_memory=False)
    run = simulation.SimRun(Platform.load("thetagpu-like"), 8, 8, "sequential", "ompi",
                            ["alltoall", "--size", "16"], shared_buffers=False, check=False)
    with pytest.raises(simulation.SimError, match="smpi-device-messages.patch"):
        simulation.run_simulation(build, run)
    assert simulation.sim_build(str(SIM_BUILD)).smpi_device_memory  # the project's own SimGrid has it


def test_ipc_copies_cost_what_the_cuda_backend_spends():
    # On a GPU platform as the cuda backend copies: the copy kernel launched once per call for
    # every block, self included; the copy engine once per block. Everything else the two
    # variants do is the same, so their times differ by exactly that.
    from tucoll.sim import Platform

    size, nprocs = 4096, 8
    rows = frame(sim("--platform", "thetagpu-like", "--np", str(nprocs), "--", "alltoall", "--alg",
                     "ipc:copy=kernel,ipc_threshold=0", "--alg", "ipc:copy=memcpy,ipc_threshold=0", "--size",
                     str(size), "--warmup", "1", "--check", "--format", "csv"))
    assert (rows["ok"] == "1").all(), rows
    t = rows.set_index("params")["median_us"]
    kernel, memcpy = (t[[p for p in t.index if f"copy={c}" in p][0]] for c in ("kernel", "memcpy"))
    c = Platform.load("thetagpu-like").ipc
    expected_us = (nprocs * (c["memcpy_latency"] + size / c["memcpy_bandwidth"])
                   - (c["kernel_latency"] + nprocs * size / c["kernel_bandwidth"])) * 1e6
    assert memcpy - kernel == pytest.approx(expected_us, rel=0.02), t


def test_messages_on_device_memory_pay_what_the_gpu_aware_mpi_adds(tmp_path):
    # The benchmark's buffers are GPU memory on a GPU platform: the vendor's one message each way
    # at P = 2 pays smpi/device-os at its sender and smpi/device-or at its receiver
    # (sim/simgrid-patches/smpi-device-messages.patch); the ipc exchange's own messages are on host
    # memory and pay nothing.
    from tucoll import sim as simulation

    def run(name, os_cost, or_cost):
        path = simulation.derived_platform("thetagpu-like", {"smpi/device-os": f"0:{os_cost}:0",
                                                             "smpi/device-or": f"0:{or_cost}:0"}, tmp_path / f"{name}.json")
        rows = frame(sim("--platform", str(path), "--np", "2", "--", "alltoall", "--alg", "vendor", "--alg",
                         "ipc:copy=kernel,ipc_threshold=0", "--size", "16", "--warmup", "1", "--check",
                         "--format", "csv"))
        assert (rows["ok"] == "1").all(), rows
        return rows.set_index("algorithm")["median_us"]

    free, paid = run("free", 0, 0), run("paid", 1e-5, 2e-5)
    assert paid["vendor"] - free["vendor"] == pytest.approx(30.0, abs=1.5), (free, paid)
    assert paid["ipc"] == free["ipc"], (free, paid)


@pytest.mark.parametrize("shared_buffers", [False, True])
def test_the_mpis_own_copy_on_device_memory_is_paid_piece_by_piece(tmp_path, shared_buffers):
    # The vendor's alltoall copies a rank's own block itself (SMPI's Datatype::copy, as Open MPI's
    # ompi_datatype_sndrcv): on device memory, smpi/device-copy per piece of at most
    # smpi/device-copy-piece bytes (sim/simgrid-patches/smpi-local-copies-on-device.patch): 300 KiB
    # in pieces of 128 KiB are two full ones and 44 KiB, each charged 10 us and its own bytes.
    # Shared-malloc buffers (the figures') skip the copy's bytes, not its time. ipc copies with
    # the GPU itself and pays nothing of it.
    from tucoll import sim as simulation

    def run(name, cost):
        path = simulation.derived_platform("thetagpu-like", {"smpi/device-copy": cost,
                                                             "smpi/device-copy-piece": "131072"},
                                           tmp_path / f"{name}.json")
        rows = frame(sim("--platform", str(path), "--np", "2", *(["--shared-buffers"] if shared_buffers else []), "--",
                         "alltoall", "--alg", "vendor", "--alg", "ipc:copy=memcpy,ipc_threshold=0", "--size", "300K",
                         "--warmup", "1", *([] if shared_buffers else ["--check"]), "--format", "csv"))
        assert len(rows) == 2 and (shared_buffers or (rows["ok"] == "1").all()), rows
        return rows.set_index("algorithm")["median_us"]

    free, paid = run("free", ""), run("paid", "0:1e-5:1e-10")
    expected_us = (3 * 1e-5 + 300 * 1024 * 1e-10) * 1e6
    assert paid["vendor"] - free["vendor"] == pytest.approx(expected_us, abs=0.05), (free, paid)
    assert paid["ipc"] == free["ipc"], (free, paid)


@pytest.mark.parametrize("size", [1024, 1 << 20])
def test_a_local_copy_costs_its_bytes_over_the_copy_bandwidth(size):
    # One rank: spreadout's whole exchange is the copy of its own block, charged at the
    # platform's copy bandwidth however small (SMPI's smpi_execute would scale the charge by
    # smpi/host-speed and drop it under smpi/cpu-threshold).
    from tucoll.sim import Platform

    # onehot at P = 1: the rank's one block, `size` bytes, to itself.
    rows = frame(sim("--platform", "polaris-like", "--np", "1", "--", "alltoallv", "--alg", "spreadout", "--dist",
                     "onehot", "--size", str(size), "--iters", "2", "--warmup", "0", "--format", "csv"))
    expected_us = size / Platform.load("polaris-like").copy_bandwidth * 1e6
    # + 10 ns: SMPI charges every MPI_Wtime call smpi/wtime (1e-8 s by default).
    assert rows.iloc[0]["median_us"] == pytest.approx(expected_us + 0.010, rel=1e-3, abs=2e-3), rows.iloc[0]


def test_each_tucoll_call_pays_the_platforms_call_cost_once():
    # Host computation is not sampled, so a platform's call_cost (tucoll calibrate --here measures
    # it) is what each tucoll call's dispatch adds, once, whatever the algorithm; the MPI's own
    # alltoallv (`mpi`) does not go through tucoll and pays nothing.
    import dataclasses

    from tucoll import sim as simulation
    from tucoll.build import Build

    platform = Platform.load("polaris-like")
    times = {}
    for cost in (0.0, 1e-6):
        run = simulation.SimRun(dataclasses.replace(platform, call_cost=cost), 4, 4, "sequential", platform.vendor,
                                ["alltoallv", "--alg", "mpi", "--alg", "vendor", "--alg", "tuna:radix=2",
                                 "--dist", "uniform", "--size", "64", "--iters", "3", "--format", "csv"], False, True)
        rows = frame(simulation.simulate(Build.find(SIM_BUILD), run))
        times[cost] = {r["algorithm"]: r["median_us"] for _, r in rows.iterrows()}
    added = {alg: times[1e-6][alg] - times[0.0][alg] for alg in times[0.0]}
    assert added == pytest.approx({"mpi": 0.0, "vendor": 1.0, "tuna": 1.0}, abs=1e-3), times


def charged_copy_bytes(tmp_path, spec, ppn, datatype, block=64 << 10):
    """Bytes charged as copies on the critical path of `spec` at P = 4, every block `block` bytes:
    the time at two copy bandwidths, t = t_network + bytes / bandwidth, solved for bytes."""
    import dataclasses

    from tucoll import sim as simulation
    from tucoll.build import Build

    pattern = tmp_path / "blocks.txt"
    pattern.write_text("".join(" ".join([str(block)] * 4) + "\n" for _ in range(4)))
    platform = Platform.load("polaris-like")
    times = {}
    for bandwidth in (platform.copy_bandwidth, platform.copy_bandwidth / 4):
        run = simulation.SimRun(dataclasses.replace(platform, copy_bandwidth=bandwidth), 4, ppn, "sequential",
                                platform.vendor, ["alltoallv", "--alg", spec, "--dist", f"file:{pattern}", "--type",
                                                  datatype, "--check", "--format", "csv"], False, True)
        rows = frame(simulation.simulate(Build.find(SIM_BUILD), run))
        assert rows.iloc[0]["ok"] == "1", rows
        times[bandwidth] = rows.iloc[0]["median_us"] * 1e-6
    fast, slow = sorted(times, reverse=True)
    return (times[slow] - times[fast]) / (1 / slow - 1 / fast) / block


@pytest.mark.parametrize("spec, ppn, datatype, blocks", [
    # TuNA, radix 2: its own block is copied once; each of its two rounds sends two blocks as one
    # message of two ranges, which the MPI packs (2 blocks) and unpacks (2) when it leaves the node.
    ("tuna:radix=2", 1, "char", 1 + 2 * (2 + 2)),
    ("tuna:radix=2", 4, "char", 1),
    # The vendor packs a non-contiguous type's four blocks and unpacks the four it receives.
    ("vendor", 1, "vector", 4 + 4),
    ("vendor", 1, "char", 0),
])
def test_packing_a_message_costs_a_copy_of_it(tmp_path, spec, ppn, datatype, blocks):
    # SMPI packs derived datatypes without simulated time; the library charges what an MPI copies.
    assert charged_copy_bytes(tmp_path, spec, ppn, datatype) == pytest.approx(blocks, abs=1e-3)


def test_staged_pays_the_gpu_host_link_twice(tmp_path):
    # thetagpu-like models its ranks as GPUs: staged copies a packed buffer to host memory in one
    # copy and back in one, each at host_latency + bytes / host_bandwidth, around its inner
    # algorithm's exchange on the same data. Without the MPI's cost on device memory, which
    # spreadout pays on the program's buffers and staged's host buffers do not.
    from tucoll import sim as simulation
    from tucoll.sim import Platform

    size, nprocs = 64 << 10, 8
    path = simulation.derived_platform("thetagpu-like", {"smpi/device-os": "", "smpi/device-or": ""},
                                       tmp_path / "host-costs-only.json")
    rows = frame(sim("--platform", str(path), "--np", str(nprocs), "--", "alltoall", "--alg", "spreadout",
                     "--alg", "staged:inner=spreadout", "--size", str(size), "--iters", "2", "--check",
                     "--format", "csv"))
    assert (rows["ok"] == "1").all(), rows
    t = rows.set_index("algorithm")["median_us"]
    link = Platform.load("thetagpu-like").ipc
    copy_us = (link["host_latency"] + nprocs * size / link["host_bandwidth"]) * 1e6
    assert t["staged"] - t["spreadout"] == pytest.approx(2 * copy_us, rel=0.02), t


def test_all_at_once_algorithms_are_refused_at_scale():
    proc = sim("--platform", "polaris-like", "--np", "1024", "--", "alltoallv", "--alg", "linear", "--size", "16")
    assert proc.returncode == 2
    assert "would take hours" in proc.stderr
    proc = sim("--platform", "polaris-like", "--np", "1024", "--", "alltoallv", "--alg", "tuna:radix=1024")
    assert "would take hours" in proc.stderr


def test_unknown_platform_and_too_many_ranks():
    assert "unknown platform" in sim("--platform", "nowhere", "--np", "4", "--", "alltoallv").stderr
    assert "models 5 nodes" in sim("--platform", "cervino-like", "--np", "1000", "--", "alltoallv").stderr


def test_a_timeout_ends_the_simulation_with_a_message():
    proc = sim("--platform", "polaris-like", "--np", "256", "--timeout", "1", "--", "alltoallv", "--alg", "vendor",
               "--size", "16K", "--format", "csv")
    assert proc.returncode == 124
    assert "gave up after 1 s" in proc.stderr and "Traceback" not in proc.stderr


def test_an_application_runs_in_simulation():
    graph = MATRIX_DIR / "dwt_162.mtx"
    proc = sim("--platform", "polaris-like", "--np", "48", "--program", "transitive_closure", "--", str(graph),
               "--alg", "vendor", "--alg", "tuna:radix=2", "--alg", "auto", "--check", "--format", "csv")
    rows = frame(proc)
    assert "program transitive_closure" in proc.stdout.splitlines()[0]
    assert list(rows["algorithm"]) == ["vendor", "tuna:radix=2", "auto"]
    assert (rows["ok"].astype(str) == "1").all() and (rows["paths"] == 26244).all(), rows
    assert (rows["comm_s"] > 0).all()


@pytest.mark.parametrize("program", ["tucoll-bench", "transitive_closure"])
def test_simulated_programs_export_main_alone(program):
    # SMPI loads a copy of the program per rank: every other exported symbol costs each copy
    # dynamic symbols and relocations, and an STB_GNU_UNIQUE one is shared by all the ranks.
    proc = subprocess.run(["nm", "-D", "--defined-only", str(SIM_BUILD / "bin" / program)],
                          capture_output=True, text=True, check=True)
    assert [line.split()[-1] for line in proc.stdout.splitlines()] == ["main"], proc.stdout[:2000]


def test_flow_estimates_come_from_the_library():
    from tucoll import sim as simulation

    flows = lambda spec, p, q: simulation.concurrent_flows("alltoallv", spec, p, q)  # noqa: E731
    assert flows("linear", 256, 32) == 256 * 255
    assert flows("tuna:radix=2", 256, 32) == 256
    assert flows("scattered:block_count=8", 256, 32) == 256 * 8
    assert flows("tuna_coalesced:radix=2,block_count=0", 256, 32) == 256 * 7  # one message per other node
    assert flows("tuna_staggered:radix=2,block_count=0", 256, 32) == 256 * 224  # one per rank on other nodes
    assert flows("tuna:radix=255", 256, 32) == 256 * 255  # every block direct: all rounds at once
    assert flows("vendor", 256, 32) == 0  # unknown: never refused
    assert flows("tuna:radix=300", 256, 32) == 0  # not valid there: the bench says why


def test_shared_buffers_take_the_smallest_block_the_mapping_limit_allows():
    from tucoll import sim as simulation

    MiB = 1 << 20
    # Small runs keep SimGrid's 1 MiB block (their copies stay in cache).
    assert simulation.shared_block_bytes(256, 256 * 64 * 1024, 65530) == MiB
    # P = 4096 at 1 KiB: 4 MiB buffers, which 1 MiB blocks took past the default limit.
    assert simulation.shared_block_bytes(4096, 4 * MiB, 65530) == 8 * MiB
    assert simulation.shared_block_bytes(4096, 4 * MiB, 1 << 20) == MiB  # a raised limit
    assert simulation.shared_block_bytes(2048, 32 * MiB, 65530) == 16 * MiB  # two blocks per buffer
    assert simulation.shared_block_bytes(64, None, 65530) == simulation.SHARED_BLOCK_MAX  # size not known
    assert simulation.shared_block_bytes(4096, 4 * MiB, None) == MiB  # not Linux: no limit to keep

    platform = simulation.Platform.load("polaris-like")

    def largest(args, program="tucoll-bench"):
        run = simulation.SimRun(platform, 1024, 32, "sequential", "mpich", args, shared_buffers=True,
                                check=False, program=program)
        return simulation.largest_buffer(run)

    assert largest(["alltoallv", "--alg", "tuna:radix=4", "--sizes", "16,1K,16K", "--dist", "uniform"]) == 1024 * 16384
    assert largest(["allgather", "--size=4K"]) == 1024 * 4096
    assert largest(["alltoallv", "--dist", "file:pattern.txt:scale=0.1"]) is None
    assert largest(["alltoallv", "--dist", "uniform"]) is None  # the bench's default size
    assert largest(["graph.mtx"], program="transitive_closure") is None


def test_messages_of_several_ranges_cost_the_same_on_shared_buffers():
    # On shared buffers such a message travels as its bytes from a stand-in rather than as a
    # derived datatype (p2p.cpp): the simulated times must not change.
    args = ["--platform", "polaris-like", "--np", "64", "--", "alltoallv", "--alg", "tuna:radix=2", "--alg",
            "bruck2", "--alg", "tuna_coalesced:radix=4,block_count=1", "--alg", "tuna_staggered:radix=2,block_count=4",
            "--dist", "uniform", "--sizes", "16,4K", "--format", "csv"]
    shared, private = frame(sim("--shared-buffers", *args)), frame(sim("--no-check", *args))
    assert len(shared) == 8
    assert shared["median_us"].tolist() == private["median_us"].tolist()


def test_runs_past_the_kernels_mapping_limit_drop_guard_pages_or_say_what_to_raise():
    from tucoll import sim as simulation

    assert simulation.mapping_options(4096, 65530) == []
    assert simulation.mapping_options(6144, 65530) == ["--cfg=contexts/guard-size:0"]
    assert simulation.mapping_options(8192, None) == []  # not Linux: nothing to check
    with pytest.raises(simulation.SimError, match=r"vm.max_map_count = 65,530.*sysctl -w vm.max_map_count=131072"):
        simulation.mapping_options(8192, 65530)
    assert simulation.mapping_options(8192, 262144) == []
    with pytest.raises(simulation.SimError, match=r"sysctl -w vm.max_map_count=262144"):
        simulation.mapping_options(16384, 131072)


def routes(platform, *pairs):
    """The links of the route between each pair of hosts, by SimGrid's own routing (tests/sim/routes.cpp)."""
    prefix = Path(json.loads((SIM_BUILD / "build-info.json").read_text())["mpiexec"]).parents[1]
    tool = SIM_BUILD / "routes"
    source = Path(__file__).resolve().parents[1] / "sim" / "routes.cpp"
    if not tool.is_file() or tool.stat().st_mtime < source.stat().st_mtime:
        subprocess.run([os.environ.get("CXX", "c++"), "-std=c++17", "-O1", str(source), "-o", str(tool),
                        f"-I{prefix / 'include'}", f"-L{prefix / 'lib'}", f"-Wl,-rpath,{prefix / 'lib'}", "-lsimgrid"],
                       check=True)
    platform = Platform.load(platform)
    hosts = [platform.hosts[node] for pair in pairs for node in pair]
    out = subprocess.run([str(tool), str(platform.file), *hosts, "--log=root.thres:critical"],
                         capture_output=True, text=True, check=True).stdout
    return [line.split()[2:] for line in out.splitlines()]


def test_dragonfly_global_links_leave_from_the_senders_router():
    # polaris-like: 4 groups of 4 chassis of 4 routers of 4 nodes; node n is in group n // 64,
    # chassis n % 64 // 16, blade n % 16 // 4. sim/simgrid-patches/dragonfly-global-links.patch.
    def kinds(route):
        return [re.match(r"(local|green|black|blue)_link", link).group(1) for link in route]

    # From group 0 chassis 1 blade 1 to group 1 chassis 2 blade 1: out through the sender's own
    # router's global link to the router at the same place in group 1, then across its chassis;
    # never through chassis 0 of the sender's group.
    (route,) = routes("polaris-like", (20, 100))
    assert kinds(route) == ["local", "blue", "black", "local"]
    assert "black_link_in_group_1_between_chassis_1_and_2_blade_1" in route[2]

    # Every router has its own share of the pair's global links.
    blue = {next(link for link in route if link.startswith("blue")) for route in
            routes("polaris-like", (4, 100), (20, 100), (36, 100), (52, 100), (16, 100), (24, 100))}
    assert len(blue) == 6

    # Inside a group, after the green hop the route stays in the chassis it is in (SimGrid 4.1
    # went on from chassis 0: from chassis 2 to chassis 0 it skipped the black hop).
    (route,) = routes("polaris-like", (36, 12))
    assert kinds(route) == ["local", "green", "black", "local"]
    assert "green_link_in_chassis_2" in route[1] and "between_chassis_0_and_2_blade_3" in route[2]


def platform_with(tmp_path, base: str, props: dict) -> str:
    """A platform file of the shipped `base` with these SimGrid options added to its <config>."""
    from tucoll.sim import derived_platform

    return str(derived_platform(base, props, tmp_path / f"{base}-test.json"))


def test_a_receivers_matching_cost_grows_with_its_queues(tmp_path):
    # sim/simgrid-patches/match-cost.patch: smpi/match-cost charges a receiver for every queued
    # operation its MPI examines to match a message. linear posts all P - 1 receives and sends at
    # once, so its ranks walk queues of up to P - 1 entries, on the order of P^2 / 4 in all;
    # TuNA's rounds keep one message in flight (radix 2), so its walks stay a few entries per
    # message. The charge is a time per entry: twice the cost, twice the added time.
    args = ["--np", "32", "--", "alltoallv", "--alg", "linear", "--alg", "tuna:radix=2", "--dist", "uniform",
            "--size", "16", "--format", "csv"]
    base = frame(sim("--platform", "polaris-like", *args)).set_index("algorithm")["median_us"]
    added = {}
    for cost in (1e-7, 2e-7):
        charged = frame(sim("--platform", platform_with(tmp_path, "polaris-like", {"smpi/match-cost": cost}), *args))
        added[cost] = charged.set_index("algorithm")["median_us"] - base
    p = 32
    assert added[1e-7]["linear"] > 0.1 * (p - 1) ** 2 / 4, added  # us: entries x 0.1 us, at least a tenth
    assert added[1e-7]["tuna"] < 0.1 * 4 * 2 * 5, added  # 5 rounds, data + metadata, a few entries each
    assert added[2e-7]["linear"] == pytest.approx(2 * added[1e-7]["linear"], rel=0.02), added


def coll_call_times(tmp_path, name: str, props: dict) -> dict[str, float]:
    """tests/sim/coll_calls.cpp on two ranks of two polaris-like nodes with these SimGrid options:
    the simulated seconds of each operation it times."""
    from tucoll.sim import hostfile_lines

    smpirun = Path(json.loads((SIM_BUILD / "build-info.json").read_text())["mpiexec"])
    tool = SIM_BUILD / "coll_calls"
    source = Path(__file__).resolve().parents[1] / "sim" / "coll_calls.cpp"
    if not tool.is_file() or tool.stat().st_mtime < source.stat().st_mtime:
        subprocess.run([str(smpirun.parent / "smpicxx"), "-std=c++17", "-O1", str(source), "-o", str(tool)],
                       check=True, capture_output=True)
    (tmp_path / name).mkdir()
    platform = Platform.load(platform_with(tmp_path / name, "polaris-like", props))
    hostfile = tmp_path / name / "hostfile"
    hostfile.write_text("\n".join(hostfile_lines(platform, 2, 1, "sequential")) + "\n")
    out = subprocess.run([str(smpirun), "-np", "2", "-platform", str(platform.file), "-hostfile", str(hostfile),
                          "--cfg=smpi/simulate-computation:no", "--cfg=smpi/coll-selector:mpich",
                          "--cfg=smpi/allreduce:redbcast", "--log=root.thres:critical", str(tool)],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return {op: float(seconds) for op, seconds in (line.split() for line in out.splitlines())}


def test_the_mpis_collective_call_cost_is_charged_once_per_call(tmp_path):
    # sim/simgrid-patches/coll-call-cost.patch: every collective the program calls, blocking or
    # nonblocking, pays smpi/coll-call-cost once, also an allreduce that SMPI runs as a reduce
    # and a bcast (redbcast: collectives an algorithm calls are not charged again); point to
    # point and MPI_Reduce_local pay nothing.
    cost = 1e-5  # 10 us: far above what any of these operations costs on two nodes
    base = coll_call_times(tmp_path, "free", {})
    charged = coll_call_times(tmp_path, "charged", {"smpi/coll-call-cost": cost})
    assert base.keys() == charged.keys() == {"barrier", "ibarrier", "allreduce", "iallreduce", "alltoallv",
                                             "ialltoallv", "sendrecv", "reduce_local"}
    added = {op: charged[op] - base[op] for op in base}
    for op in ("barrier", "ibarrier", "allreduce", "iallreduce", "alltoallv", "ialltoallv"):
        assert added[op] == pytest.approx(cost, rel=1e-6), added
    assert added["sendrecv"] == pytest.approx(0, abs=1e-12) and added["reduce_local"] == pytest.approx(0, abs=1e-12), added


def processes_with(marker: str) -> list[int]:
    """The processes whose environment holds `marker`."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker.encode() in (proc / "environ").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                pass
    return found


def assert_a_signal_ends_all(tool: subprocess.Popen, signum: int, marker: str, started, what: str,
                             start_within: float = 60, exit_within: float = 30, end_within: float = 10) -> None:
    """Once `started()` holds, `signum` to `tool` must end it as the signal would (128 + signum)
    and end every process holding `marker` in its environment (all it started), or `what` fails."""
    import time

    deadline = time.time() + start_within
    while not started() and tool.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    if not started():  # say why: a tool that ended early left its reason on stderr
        tool.kill()
        _, err = tool.communicate()
        raise AssertionError(f"the simulation did not start within {start_within} s; the tool "
                             f"{'ended with ' + str(tool.returncode) if tool.returncode is not None else 'was still running'}:\n{err}")
    tool.send_signal(signum)
    assert tool.wait(timeout=exit_within) == 128 + signum
    deadline = time.time() + end_within
    while processes_with(marker) and time.time() < deadline:
        time.sleep(0.2)
    assert processes_with(marker) == [], what


@pytest.mark.parametrize("signum", [15, 1])  # SIGTERM (timeout, a batch system's cancel), SIGHUP
def test_a_signal_that_ends_the_tool_ends_its_simulation(signum):
    import uuid

    marker = f"TUCOLL_TEST_MARKER={uuid.uuid4()}"
    env = dict(os.environ, TUCOLL_TEST_MARKER=marker.split("=", 1)[1])
    tool = subprocess.Popen([sys.executable, "-m", "tucoll", "sim", "--build-dir", str(SIM_BUILD), "--platform",
                             "polaris-like", "--np", "512", "--", "alltoallv", "--alg", "vendor", "--dist", "uniform",
                             "--size", "4K"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert_a_signal_ends_all(tool, signum, marker, lambda: len(processes_with(marker)) >= 2,  # tool and simulator
                             "the simulator outlived the tool")


def test_a_platform_option_the_simgrid_lacks_names_the_option_and_the_rebuild(tmp_path):
    # A SimGrid built before one of sim/simgrid-patches/ (or Spack's) throws "Bad config key" and
    # lists every option it has; the tool says which one and what to do instead.
    here = Path(__file__).resolve().parents[2] / "docs" / "calibration"
    (tmp_path / "here.json").write_text((here / "here.json").read_text())
    xml = (here / "here.xml").read_text().replace("<config>", '<config>\n    <prop id="smpi/no-such-option" value="1"/>')
    (tmp_path / "here.xml").write_text(xml)
    proc = subprocess.run([sys.executable, "-m", "tucoll", "sim", "--platform", str(tmp_path / "here.json"),
                           "--np", "2", "--no-check", "--build-dir", str(SIM_BUILD), "--", "alltoallv", "--alg",
                           "vendor", "--sizes", "16"], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "sets smpi/no-such-option" in proc.stdout + proc.stderr and "make sim-build" in proc.stdout + proc.stderr
    assert "Existing config keys" not in proc.stdout + proc.stderr
