"""scripts/gpu-check.sh runs where nobody watches it (a lent GPU machine, minutes of device time):
its shell must parse, its pins must name what --fetch fetches, and its summary must turn the
CSVs tucoll-bench writes into the tables, ratios included."""

import csv
import os
import shutil
from pathlib import Path
import subprocess
import sys

import pytest

from tucoll.build import REPO_ROOT

pytestmark = pytest.mark.mpi_free  # see conftest.py

SCRIPT = REPO_ROOT / "scripts" / "gpu-check.sh"
SUMMARY = REPO_ROOT / "scripts" / "gpu-check" / "summary.py"
PINS = REPO_ROOT / "scripts" / "gpu-check" / "carry.pins"

# tucoll-bench's CSV headers: alltoall's and alltoallv's columns differ (alltoallv has the blocks'
# statistics and total_bytes).
HEADER = {
    "alltoall": "collective,algorithm,params,nprocs,ppn,dist,size,type,iters,median_us,min_us,max_us,rounds,"
                "messages,scratch_bytes,ok,mean_us,bytes_sent,temp_bytes,staging_bytes,mapping,path,chosen,"
                "algbw_GBps,busbw_GBps,from_last_exit_us",
    "alltoallv": "collective,algorithm,params,nprocs,ppn,dist,size,type,iters,median_us,min_us,max_us,rounds,"
                 "messages,scratch_bytes,ok,mean_us,bytes_sent,temp_bytes,staging_bytes,mapping,path,chosen,"
                 "max_block,mean_block,busiest_mean_block,median_block,std_block,skew_block,zero_share,total_bytes,"
                 "rank_imbalance,algbw_GBps,busbw_GBps,auto_reduction_us,from_last_exit_us",
}
BANNER = ("\n===================================================================================\n"
          "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   RANK 3 PID 4242 RUNNING AT gpu\n"
          "=   KILLED BY SIGNAL: 9 (Killed)\n")


def test_script_parses_and_pins_every_carried_file():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    pins = [line.split() for line in PINS.read_text().splitlines() if line and not line.startswith("#")]
    assert all(len(p) == 3 and len(p[0]) == 64 for p in pins), pins
    names = {p[1] for p in pins}
    assert any(n.startswith("mpich-") and n.endswith(".whl") for n in names)
    for package in ("nlohmann-json3-dev", "libcli11-dev", "libgtest-dev", "libsuitesparse-dev", "libcholmod3"):
        assert any(p[2].startswith(package + "=") for p in pins), package


def write_csv(path, rows, tail=""):
    """A tucoll-bench CSV of `rows` (each a dict of some columns, the rest empty), then `tail`."""
    header = HEADER[rows[0]["collective"]].split(",")
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, header)
        w.writeheader()
        for r in rows:
            w.writerow({k: "" for k in header} | r)
        f.write(tail)


def row(collective, alg, params, p, size, us, ok="1", chosen="", total=None):
    r = dict(collective=collective, algorithm=alg, params=params, nprocs=p, ppn=p, dist="uniform", size=size,
             median_us=us, ok=ok, chosen=chosen or alg)
    return r if total is None else r | {"total_bytes": total}


def test_summary_tables_against_the_copy_limit_and_the_vendor(tmp_path):
    (tmp_path / "facts.txt").write_text("name, memory.total [MiB], driver_version\nNVIDIA H100 80GB HBM3, 81559 MiB, 580\n")
    (tmp_path / "tests.log").write_text(
        "1/3 Test #5: ipc_gpu_np1 ......   Passed    3.10 sec\n2/3 Test #6: ipc_gpu_np2 ......***Timeout  90.01 sec\n"
        "67% tests passed, 1 tests failed out of 3\ntest_ipc_gpu np 8: passed\n")
    # 4 ranks, 1 MiB blocks: 16 MiB moved; one copy of 16 MiB at 1600 GB/s takes 10.5 us.
    (tmp_path / "copy_limit.txt").write_text("4 1048576 16777216 10.49 1600.0\n")
    (tmp_path / "copy_start.txt").write_text("SKIP: no CUDA device\nkernel 0 5.10 4.80\nd2d 131072 8.25 7.90\n"
                                             "d2h 16 - - (failed)\n")
    # A CSV per run, as the script keeps them: alltoall moves P * P * S, alltoallv its total_bytes.
    write_csv(tmp_path / "gpu_alltoall.4.4K.csv", [
        row("alltoall", "ipc", "copy=kernel,ipc_threshold=4096,memcpy_threshold=524288,overlap=1,uniform_check=0",
            4, 1048576, 20.972),
        row("alltoall", "staged", "inner=spreadout", 4, 1048576, 1000.0, ok="0"),
    ])
    write_csv(tmp_path / "gpu_alltoallv.4.4K.csv", [row("alltoallv", "ipc", "copy=memcpy", 4, 1048576, 10.486,
                                                        total=8388608)])
    # A run killed at its limit: mpiexec's banner on stdout, no rows.
    (tmp_path / "gpu_alltoallv.4.16M.csv").write_text(BANNER)
    write_csv(tmp_path / "cpu_bench.csv", [
        row("alltoallv", "vendor", "", 16, 16, 30.0),
        row("alltoallv", "tuna", "radix=2", 16, 16, 10.0),
        row("alltoallv", "auto", "", 16, 16, 12.0, chosen="tuna:radix=4"),
        row("alltoallv", "pairwise", "", 16, 16, 0.0),  # no time: left out
    ], tail=BANNER)
    out = subprocess.run([sys.executable, str(SUMMARY), "--out", str(tmp_path), "--seconds", "300"],
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("# scripts/gpu-check.sh: NVIDIA H100 80GB HBM3")
    assert "test_ipc_gpu np 8: passed" in out and "- 2/3 Test #6: ipc_gpu_np2 ......***Timeout  90.01 sec" in out
    assert "ipc_gpu_np1" not in out
    ipc = next(line for line in out.splitlines() if "ipc:copy=kernel" in line)
    assert "| 4 | alltoall | 1 MiB | ipc:copy=kernel | 21.0 | 16.78 MB | 800.0 | 10.5 | 0.50 | ok |" == ipc
    assert "| WRONG |" in next(line for line in out.splitlines() if "staged:inner" in line)
    v = next(line for line in out.splitlines() if "ipc:copy=memcpy" in line)
    assert "| 4 | alltoallv | 1 MiB | ipc:copy=memcpy | 10.5 | 8.39 MB | 800.0 | 5.2 | 0.50 | ok |" == v
    # The copy starts beside what the simulated A100s charge (platforms.json: 4 us; 7 us + 128 KiB at 1 TB/s).
    assert "| kernel | - | 5.10 | 4.80 | 4.00 |" in out
    assert "| d2d | 128 KiB | 8.25 | 7.90 | 7.13 |" in out and "| d2h |" not in out
    cpu = next(line for line in out.splitlines() if line.startswith("| 16 B"))
    assert cpu == "| 16 B | 30.0 | tuna:radix=2 (10.0) | tuna:radix=4 | 12.0 | 1.20 | 2.50 | - |"


def test_summary_of_a_rehearsal_says_what_was_skipped(tmp_path):
    (tmp_path / "facts.txt").write_text("GPU: none\n")
    out = subprocess.run([sys.executable, str(SUMMARY), "--out", str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout
    assert "no GPU here: a rehearsal" in out and "SKIP: no GPU measurements" in out
    assert "## What a copy costs to start" in out


BUDGET = REPO_ROOT / "scripts" / "gpu-check" / "budget.sh"


def budget(script, tmp_path, path=None):
    env = None if path is None else {**os.environ, "PATH": str(path)}
    return subprocess.run(["bash", "-c", f'. "{BUDGET}"; {script}'], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, env=env)


def without_pkill(folder):
    """A PATH of what budget.sh and the test use, pkill left out (an image without procps)."""
    folder.mkdir()
    for tool in ("bash", "date", "timeout", "tr", "grep", "ls", "setsid", "cut", "sed", "sleep"):
        (folder / tool).symlink_to(shutil.which(tool))
    return folder


@pytest.mark.parametrize("procps", [True, False], ids=["pkill", "proc"])
def test_a_hung_command_costs_its_own_limit_and_leaves_nothing_running(tmp_path, procps):
    # A program that hangs in a session of its own (as an MPI launcher's ranks may), under a folder
    # whose name is no literal regular expression: stopped at its limit, then reaped by its path.
    folder = tmp_path / "mpich+5.0"
    folder.mkdir()
    hang = folder / "hang"
    hang.write_bytes(Path("/bin/sleep").read_bytes())
    hang.chmod(0o755)
    log = tmp_path / "stages.txt"
    run = budget(f'''budget_start 30 "{log}"; BUDGET_REAP=("^$(budget_literal "{folder}/")")
        stage tests; start=$(date +%s)
        bounded 2 0 bash -c 'setsid "{hang}" 600 & setsid "{hang}" 601 & wait'; echo "rc $? after $(( $(date +%s) - start )) s"
        stage end''', tmp_path, None if procps else without_pkill(tmp_path / "bin"))
    rc, after = next(line.split()[1::2] for line in run.stdout.splitlines() if line.startswith("rc "))
    after = int(after)
    assert rc == "124" and after < 10, run.stdout + run.stderr
    left = subprocess.run(["pgrep", "-f", str(hang)], capture_output=True, text=True).stdout
    assert left == "", left
    lines = [line.split("\t") for line in log.read_text().splitlines()]
    assert lines[0] == ["budget", "30"]
    assert lines[1][:3] == ["timeout", "tests", "2"] and lines[1][3].startswith("bash -c")
    assert lines[2][:2] == ["stage", "tests"]


def test_a_command_the_budget_cannot_give_time_is_not_started(tmp_path):
    log = tmp_path / "stages.txt"
    run = budget(f'''budget_start 20 "{log}"; stage bench
        bounded 60 18 touch started; echo "rc $?"; bounded 60 5 true; echo "rc $?"''', tmp_path)
    assert run.stdout.split() == ["==", "bench", "(at", "0", "s,", "20", "s", "left)", "rc", "124", "rc", "0"], run.stdout
    assert not (tmp_path / "started").exists()
    assert log.read_text().splitlines()[1].split("\t")[:3] == ["skipped", "bench", "2"]


def test_summary_says_which_commands_the_budget_cut_short(tmp_path):
    (tmp_path / "facts.txt").write_text("GPU: none\n")
    (tmp_path / "stages.txt").write_text(
        "budget\t450\nstage\tbuild\t61\ntimeout\ttests\t180\tctest --test-dir /x/build -L gpu --timeout 90\n"
        "stage\ttests\t185\nskipped\tgpu bench\t3\t/x/mpich/bin/mpiexec -np 8 /x/build/bin/tucoll-bench alltoall\n"
        "stage\tgpu bench\t2\n")
    out = subprocess.run([sys.executable, str(SUMMARY), "--out", str(tmp_path), "--seconds", "448"],
                         capture_output=True, text=True, check=True).stdout
    assert "Wall time 448 s. 2 command(s) cut short by the budget: see Stages, last." in out
    assert "| build | 61 | - |" in out
    assert "| tests | 185 | `ctest --test-dir build -L gpu --timeout 90` stopped after 180 s |" in out
    assert "| gpu bench | 2 | `mpiexec -np 8 tucoll-bench alltoall` not started: budget spent |" in out


def test_summary_survives_what_a_failed_run_leaves(tmp_path):
    (tmp_path / "facts.txt").write_bytes(b"GPU: none \xff\xfe\n")
    (tmp_path / "tests.log").write_bytes(b"\xff test_ipc_gpu np 2: TIMEOUT\n")
    (tmp_path / "stages.txt").write_text("budget\t450\nstage\tbuild\tsixty\n")  # garbled: that section only
    (tmp_path / "gpu_alltoall.8.4K.csv").write_text(HEADER["alltoall"] + "\nalltoall,ipc,,8\n" + BANNER)
    (tmp_path / "cpu_bench.csv").write_text(BANNER)
    (tmp_path / "copy_limit.txt").write_text("8 4096 262144 - -\n8 65536 x y z\n")
    out = subprocess.run([sys.executable, str(SUMMARY), "--out", str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout
    assert "test_ipc_gpu np 2: TIMEOUT" in out
    assert "SKIP: no GPU measurements" in out and "no CPU measurements" in out
    assert "## stages_section: not summarised (ValueError" in out
