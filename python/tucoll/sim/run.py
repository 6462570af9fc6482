"""Running a simulation: refused when it would take hours, ended with whatever ends the tools."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import tempfile
from pathlib import Path

from tucoll import native, signals
from tucoll.bench import registry
from tucoll.build import REPO_ROOT, Build
from tucoll.sim.command import SimRun, algorithm_names, bench_specs, build_command
from tucoll.sim.errors import SimError
from tucoll.sim.platforms import hostfile_lines


# Concurrent point-to-point flows the simulator is asked to model at once, above which an
# all-at-once algorithm would take hours to simulate (SimGrid's max-min sharing solver is
# superlinear in active flows). About P = 512 with every rank talking to every other.
MAX_CONCURRENT_FLOWS = 300_000


# The process groups of the simulations this process is running (a Dask worker runs them from
# threads): end_running() ends them where no exception reaches the thread that waits on one.
_running: set[int] = set()


def end_running() -> None:
    """Kills every simulation this process started and has not yet seen end."""
    for group in list(_running):
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def concurrent_flows(collective: str, spec: str, nprocs: int, ppn: int | None = None) -> int:
    """Flows in flight at once across the job for one spec, as the library reports it
    (tucoll_spec_properties); `ppn` ranks per node (default: one node per rank, the most for the
    node-bounded algorithms). 0 when not known (the vendor's) or not valid: never refused here."""
    try:
        flows = native.library().spec_properties(collective, spec, nprocs, max(1, min(ppn or 1, nprocs))).concurrent_flows
    except native.SpecError:
        return 0
    return max(0, flows)


def run_simulation(build: Build, run: SimRun, timeout: float | None = None) -> subprocess.CompletedProcess:
    if build.mpi_flavor != "smpi":
        raise SimError(f"{build.root} is not a SimGrid build: run `make sim-build` and pass --build-dir build-sim")
    device_costs = [k for k in ("smpi/device-os", "smpi/device-or") if run.platform.options().get(k)]
    if device_costs and not build.smpi_device_memory:
        raise SimError(f"{run.platform.name} sets {', '.join(device_costs)}, which the SimGrid of {build.root} cannot "
                       "charge (sim/simgrid-patches/smpi-device-messages.patch): rebuild it with `make sim-build`")
    with tempfile.TemporaryDirectory(prefix="tucoll-sim-") as tmp:
        hostfile = Path(tmp) / "hostfile"
        hostfile.write_text("\n".join(hostfile_lines(run.platform, run.nprocs, run.ppn, run.mapping)) + "\n")
        cmd, env = build_command(build, run, hostfile)
        # smpirun is a script that starts the simulator as a child, in a session of its own: a
        # timeout, an interrupt or a signal that ends the tools (tucoll.signals) must end the
        # whole group, or the simulation goes on without anyone waiting. The child is made inside
        # the try, so that no exception can come between its start and the handler (a `with`
        # block would wait for the simulation to end instead).
        # The signals that end the tools are held while the child starts (one landing inside Popen
        # would leave it unknown here, so running) and let through in the child before it execs.
        ending = {*signals.ENDING, signal.SIGINT}
        child = None
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, ending)
            try:
                child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                         start_new_session=True,
                                         preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, ending))
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, ending)
            _running.add(child.pid)
            out, err = child.communicate(timeout=timeout)
        except BaseException:
            if child is not None:
                os.killpg(child.pid, signal.SIGKILL)
                child.communicate()
            raise
        finally:
            if child is not None:
                _running.discard(child.pid)
        proc = subprocess.CompletedProcess(cmd, child.returncode, out, err)
    if proc.returncode not in (0, 1):
        unknown = re.search(r"Bad config key: (\S+)", proc.stderr)
        if unknown:  # SimGrid then lists every option it has: its one line says more
            raise SimError(f"{run.platform.name} sets {unknown.group(1)}, which the SimGrid of {build.root} does not "
                           "have (an option of one of sim/simgrid-patches/, or of a newer build): rebuild it with "
                           "`make sim-build`", proc.returncode)
        raise SimError(f"simulation failed ({proc.returncode}): {shlex.join(cmd)}\n{proc.stdout}\n{proc.stderr}",
                       proc.returncode)
    return proc


def sim_build(build_dir: str | os.PathLike | None = None) -> Build:
    """The SimGrid build: `build_dir` if given, else build-sim/ (make sim-build)."""
    return Build.find(build_dir or REPO_ROOT / "build-sim")


def check_flows(build: Build, run: SimRun) -> None:
    """Refuses algorithms whose all-at-once traffic would take hours to simulate at this P."""
    collective = run.bench_args[0]
    registry_json = registry(build)
    specs = bench_specs(run.bench_args) or algorithm_names(registry_json, collective)
    for spec in specs:
        flows = concurrent_flows(collective, spec, run.nprocs, run.ppn)
        if flows > MAX_CONCURRENT_FLOWS:
            raise SimError(
                f"{spec} keeps about {flows:,} point-to-point flows in flight at P={run.nprocs}: simulating that "
                f"would take hours (the limit is {MAX_CONCURRENT_FLOWS:,}). Bound its batches (e.g. "
                "scattered:block_count=32), lower P, or pass --force.")


def simulate(build: Build, run: SimRun, force: bool = False,
             timeout: float | None = None) -> subprocess.CompletedProcess:
    """Validates `run` (machine size, flow estimate unless `force`) and simulates it."""
    hostfile_lines(run.platform, run.nprocs, run.ppn, run.mapping)  # fails early when the machine is too small
    if run.program != "tucoll-bench":
        return run_simulation(build, run, timeout=timeout)
    if not run.bench_args or run.bench_args[0].startswith("-"):
        raise SimError("give the tucoll-bench arguments after --, e.g. -- alltoallv --alg tuna:radix=2")
    if not force:
        check_flows(build, run)
    return run_simulation(build, run, timeout=timeout)
