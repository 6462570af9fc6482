"""Independent simulations run on a Dask cluster (tucoll.cluster): a sweep on a scheduler's workers
gives what one simulation gives, and a signal that ends the tool ends its workers' simulations."""

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from test_sim import assert_a_signal_ends_all, processes_with

SIM_BUILD = Path(os.environ.get("TUCOLL_SIM_BUILD_DIR", Path(__file__).resolve().parents[2] / "build-sim"))
pytestmark = [pytest.mark.skipif(not (SIM_BUILD / "build-info.json").is_file(), reason="no SimGrid build (make sim-build)"),
              pytest.mark.mpi_free]  # see conftest.py


def tucoll(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "tucoll", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_a_simulated_sweep_runs_on_the_schedulers_workers(tmp_path, dask_scheduler):
    from dask.distributed import Client

    dataset = tmp_path / "sweep.csv"
    specs = ["vendor", "tuna:radix=2"]
    swept = tucoll("sweep", dataset, "--platform", "polaris-like", "--np", "8,16", "--dist", "uniform", "--sizes",
                   "16,1K", *[a for s in specs for a in ("--alg", s)], "--sizes-per-run", "1", "--specs-per-run", "1",
                   "--build-dir", SIM_BUILD, "--scheduler", dask_scheduler)
    assert swept.returncode == 0, swept.stderr
    assert "8 rows added" in swept.stdout
    with Client(dask_scheduler) as client:  # the jobs ran there, not in the tool
        assert "run_job" in client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))
    rows = pd.read_csv(dataset).set_index(["nprocs", "requested_size", "requested"])["median_us"]
    # Each, simulated alone, is what the simulation of both specs in one job gives: the simulator is
    # deterministic and a spec's time does not depend on the rest of its job (--specs-per-run).
    alone = tucoll("sim", "--build-dir", SIM_BUILD, "--platform", "polaris-like", "--np", 16, "--", "alltoallv",
                   *[a for s in specs for a in ("--alg", s)], "--sizes", "1K", "--dist", "uniform", "--format", "csv")
    assert alone.returncode == 0, alone.stderr
    simulated = pd.read_csv(io.StringIO(alone.stdout), comment="#", keep_default_na=False)
    assert len(simulated) == 2
    for spec, row in zip(specs, simulated.itertuples()):
        assert rows[(16, 1024, spec)] == pytest.approx(row.median_us, rel=1e-9), spec


@pytest.mark.parametrize("signum", [15, 1])  # SIGTERM (timeout, a batch system's cancel), SIGHUP
def test_a_signal_that_ends_a_sweep_ends_its_workers_simulations(tmp_path, signum):
    import uuid

    marker = str(uuid.uuid4())
    env = dict(os.environ, TUCOLL_TEST_MARKER=marker)
    tool = subprocess.Popen([sys.executable, "-m", "tucoll", "sweep", str(tmp_path / "sweep.csv"), "--platform",
                             "polaris-like", "--np", "512", "--dist", "uniform", "--sizes", "4K", "--alg", "vendor",
                             "--build-dir", str(SIM_BUILD), "--workers", "1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    # Started once a simulator of the tool's is running (the tool, its Dask worker and smpirun
    # come first).
    assert_a_signal_ends_all(tool, signum, marker, lambda: set(simulators_running()) & set(processes_with(marker)),
                             "a worker or its simulator outlived the tool", start_within=90, exit_within=60,
                             end_within=30)


def simulators_running(*words: bytes) -> list[int]:
    """The simulators (smpimain) whose command line holds every one of `words`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
        except OSError:
            continue
        if b"smpimain" in cmdline and all(w in cmdline for w in words):
            found.append(int(proc.name))
    return found


def test_a_second_client_does_not_end_the_first_ones_simulations(tmp_path, dask_scheduler):
    # Registering the worker plugin again from another client must not tear it down on the
    # workers: its teardown ends the simulations they run (a sweep started beside another one).
    # The simulation runs on the scheduler's worker, so it is known by its arguments (a size no
    # other test simulates).
    from tucoll import cluster

    words = (b"smpi/np:512", b"--sizes\x003000\x00")
    first = subprocess.Popen([sys.executable, "-m", "tucoll", "sweep", str(tmp_path / "first.csv"), "--platform",
                              "polaris-like", "--np", "512", "--dist", "uniform", "--sizes", "3000", "--alg", "vendor",
                              "--build-dir", str(SIM_BUILD), "--scheduler", dask_scheduler],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 90
        while not simulators_running(*words) and time.time() < deadline:
            time.sleep(0.2)
        running = simulators_running(*words)
        assert running, "the simulation did not start"
        with cluster.client(dask_scheduler):
            pass
        time.sleep(1)
        assert simulators_running(*words) == running, "another client's registration ended the simulation"
    finally:
        first.terminate()
        first.wait(timeout=60)
        for pid in simulators_running(*words):  # the worker would run it to its end for no one
            os.kill(pid, 9)


def test_a_simulation_killed_from_outside_is_neither_split_nor_stored(tmp_path, monkeypatch):
    import pickle

    from tucoll import cluster, sim, sweep

    class Target:
        timeout, platform, scheduler, workers = None, "a platform", None, 1

        def __init__(self, returncode):
            self.returncode, self.calls = returncode, []

        def run(self, nprocs, dist, sizes, specs):
            self.calls.append(list(specs))
            raise sim.SimError("simulation failed", self.returncode)

    job = sweep.Job(64, "uniform", (16,), ("a", "b", "c", "d"))
    killed = Target(-9)
    with pytest.raises(sim.SimError):
        sweep.run_job(job, killed)
    assert killed.calls == [["a", "b", "c", "d"]]  # not run again in halves
    crashed = Target(134)  # the simulator's own failure: split down to the failing specs, as before
    assert [o.failed for o in sweep.run_job(job, crashed)] == ["simulation failed"] * 4
    assert len(crashed.calls) == 7
    # Raised on a Dask worker, it arrives with its return code.
    assert pickle.loads(pickle.dumps(sim.SimError("x", -9))).killed
    # The sweep notes it, stores nothing for that job and goes on with the others.
    monkeypatch.setattr(cluster, "run_unordered", lambda *a, **k: iter([(job, None, sim.SimError("ended", -15))]))
    run = sweep.Sweep(tmp_path / "d.csv", killed, [64], ["uniform"], [16])
    [(_, outcomes)] = list(run.outcomes([job]))
    assert "not stored" in outcomes[0].note and run.record(outcomes[0]) == 0
    assert not (tmp_path / "d.csv").exists()


def test_specs_per_run_splits_simulated_cells_only(tmp_path):
    from tucoll import sim, sweep

    cells = [sweep.Cell(64, "uniform", size, spec) for size in (16, 1024) for spec in ("a", "b", "c")]
    simulated = sweep.Target(build=None, platform=sim.Platform.load("polaris-like"))
    split = sweep.Sweep(tmp_path / "d.csv", simulated, [64], ["uniform"], [16, 1024], sizes_per_run=2, specs_per_run=2)
    assert [(j.sizes, j.specs) for j in split.jobs(cells)] == [((16, 1024), ("a", "b")), ((16, 1024), ("c",))]
    here = sweep.Sweep(tmp_path / "d.csv", sweep.Target(build=None), [4], ["uniform"], [16], specs_per_run=2)
    with pytest.raises(ValueError, match="interleaved"):
        here.jobs(cells)
