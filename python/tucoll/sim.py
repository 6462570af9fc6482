"""`tucoll sim`: run tucoll-bench on a SimGrid-modelled cluster (SMPI) and label the times as simulated."""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
import os
import re
import shlex
import signal
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from tucoll import native, signals
from tucoll import sizes as units
from tucoll.bench import registry  # noqa: F401 (sim.registry: the MPI build's, the same sources)
from tucoll.build import REPO_ROOT, Build

PLATFORM_DIR = REPO_ROOT / "sim" / "platforms"

# Concurrent point-to-point flows the simulator is asked to model at once, above which an
# all-at-once algorithm would take hours to simulate (SimGrid's max-min sharing solver is
# superlinear in active flows). About P = 512 with every rank talking to every other.
MAX_CONCURRENT_FLOWS = 300_000


class SimError(RuntimeError):
    def __init__(self, message: str, returncode: int | None = None):
        super().__init__(message)
        self.returncode = returncode  # the simulator's, where it ran; negative: ended by a signal

    def __reduce__(self):  # raised on a Dask worker, re-raised in the caller
        return SimError, (str(self), self.returncode)

    @property
    def killed(self) -> bool:
        """Ended by a signal from outside (a cancelled job, the OOM killer): not the spec's doing."""
        return self.returncode is not None and self.returncode < 0


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


@dataclass(frozen=True)
class Platform:
    name: str
    file: Path
    hosts: list[str]
    ranks_per_node: int
    vendor: str
    copy_bandwidth: float
    summary: str
    # GPU platforms: what an IPC copy between the node's GPUs costs, per engine (seconds, bytes/s),
    # and a copy across a GPU's link to host memory (host_*, what `staged` pays twice); the sim
    # backend charges them (src/ipc/sim.cpp).
    ipc: dict | None = None
    # What a local copy or a datatype engine pays per contiguous piece (seconds), beside
    # copy_bandwidth: set by tucoll calibrate, 0 elsewhere.
    copy_piece: float = 0.0
    # The entry as platforms.json (or the platform's own .json file) gives it.
    entry: dict = field(default_factory=dict, compare=False)

    def fingerprint(self) -> str:
        """The simulated machine, as far as a simulated time depends on it: the platform file's
        content (not its comments), the entry's model fields (all but its summary and file name)
        and the SimGrid patches. Stored beside simulated times (the figures' store, the sweeps'
        datasets, the calibration cache) so that a changed model is simulated again rather than
        its old times reused."""
        digest = hashlib.sha256(ET.canonicalize(from_file=str(self.file), with_comments=False,
                                                strip_text=True).encode())
        fields = {k: v for k, v in self.entry.items() if k not in ("summary", "file")}
        digest.update(json.dumps(fields, sort_keys=True).encode())
        for patch in sorted((REPO_ROOT / "sim" / "simgrid-patches").glob("*.patch")):
            digest.update(patch.name.encode())
            digest.update(patch.read_bytes())
        return digest.hexdigest()[:12]

    @classmethod
    def load(cls, name: str) -> "Platform":
        """A platform of sim/platforms/platforms.json or sim/platforms/calibrated/ by name, or one of
        a user's own: a JSON file holding one entry of that form (its "file" relative to the JSON
        file), such as a calibrated copy of a shipped platform."""
        if (PLATFORM_DIR / "calibrated" / f"{name}.json").is_file():  # tucoll calibrate --write
            name = str(PLATFORM_DIR / "calibrated" / f"{name}.json")
        if name.endswith(".json"):
            path = Path(name).resolve()
            if not path.is_file():
                raise SimError(f"no platform file {name}")
            entry, base, name = json.loads(path.read_text()), path.parent, path.stem
        else:
            table = platforms()
            if name not in table:
                raise SimError(f"unknown platform {name!r}; known: {', '.join(platform_names())}, "
                               "or a platform's .json file")
            entry, base = table[name], PLATFORM_DIR
        hosts = [f"{prefix}{i}{suffix}" for prefix, count, suffix in entry["hosts"] for i in range(count)]
        return cls(name, base / entry["file"], hosts, entry["ranks_per_node"], entry["vendor"],
                   float(entry["copy_bandwidth"]), entry["summary"], entry.get("ipc"),
                   float(entry.get("copy_piece", 0.0)), entry)


@functools.lru_cache(maxsize=None)
def model_of(platform: str) -> str:
    """A platform's fingerprint by name (Platform.load), read once per process."""
    return Platform.load(platform).fingerprint()


def platforms() -> dict:
    return json.loads((PLATFORM_DIR / "platforms.json").read_text())


def platform_names() -> list[str]:
    """The shipped platforms and the calibrated ones (sim/platforms/calibrated/, tucoll calibrate)."""
    return [*platforms(), *sorted(p.stem for p in (PLATFORM_DIR / "calibrated").glob("*.json"))]


def derived_platform(base: str, props: dict[str, float | str], path: Path, note: str = "",
                     bandwidth_scale: float = 1.0, torus: tuple[int, ...] | None = None, **entry_fields) -> Path:
    """Writes `path` (a .json platform entry, as `tucoll sim --platform` takes) and its .xml beside
    it: the shipped platform `base` with these SimGrid options set in its <config> (replacing
    the base's own values of the same options), its cluster's link bandwidth times
    `bandwidth_scale`, its torus of these dimensions (as many nodes as they hold), `note` as a
    comment heading the file, and `entry_fields` (summary, ranks_per_node, ...) in place of the
    base entry's."""
    entry = dict(platforms()[base])
    xml = (PLATFORM_DIR / entry["file"]).read_text()
    if torus is not None:
        if len(entry["hosts"]) != 1 or 'topology="TORUS"' not in xml:
            raise ValueError(f"{base}: a torus shape applies to one torus cluster")
        nodes = math.prod(torus)
        xml, found = re.subn(r'(<cluster\b[^>]*?\sradical=")[^"]*(")', rf"\g<1>0-{nodes - 1}\g<2>", xml)
        xml, found_too = re.subn(r'(<cluster\b[^>]*?\stopo_parameters=")[^"]*(")',
                                 rf"\g<1>{','.join(map(str, torus))}\g<2>", xml)
        if found != 1 or found_too != 1:
            raise ValueError(f"{base}: expected one <cluster radical=... topo_parameters=...>")
        prefix, _, suffix = entry["hosts"][0]
        entry["hosts"] = [[prefix, nodes, suffix]]
    if bandwidth_scale != 1.0:
        def scaled(match: re.Match) -> str:
            return f'{match.group(1)}{float(match.group(2)) * bandwidth_scale:g}{match.group(3)}"'
        xml, found = re.subn(r'(<cluster\b[^>]*?\sbw=")([0-9.eE+-]+)([kMG]?Bps)"', scaled, xml)
        if found != 1:
            raise ValueError(f"{base}: expected one <cluster bw=...> to scale, found {found}")
    for key in props:  # an option set twice in <config> is an error in SimGrid
        xml = re.sub(rf'\n\s*<prop id="{re.escape(key)}" value="[^"]*"/>', "", xml)
    added = "".join(f'\n    <prop id="{key}" value="{value}"/>' for key, value in props.items())
    xml = xml.replace("<config>", "<config>" + added, 1)
    if note:
        if "--" in note:
            raise ValueError("an XML comment cannot hold '--'")
        xml = xml.replace("<platform ", f"<!--\n{note.rstrip()}\n-->\n<platform ", 1)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".xml").write_text(xml)
    entry.update(entry_fields, file=path.with_suffix(".xml").name)
    path.with_suffix(".json").write_text(json.dumps(entry, indent=2) + "\n")
    return path.with_suffix(".json")


def hostfile_lines(platform: Platform, nprocs: int, ppn: int, mapping: str) -> list[str]:
    """One line per rank: sequential fills nodes in turn, cyclic deals ranks round-robin."""
    nodes = math.ceil(nprocs / ppn)
    if nodes > len(platform.hosts):
        raise SimError(f"{platform.name} models {len(platform.hosts)} nodes: {nprocs} ranks at {ppn} per node "
                       f"need {nodes}")
    if mapping == "sequential":
        return [platform.hosts[r // ppn] for r in range(nprocs)]
    return [platform.hosts[r % nodes] for r in range(nprocs)]


def concurrent_flows(collective: str, spec: str, nprocs: int, ppn: int | None = None) -> int:
    """Flows in flight at once across the job for one spec, as the library reports it
    (tucoll_spec_properties); `ppn` ranks per node (default: one node per rank, the most for the
    node-bounded algorithms). 0 when not known (the vendor's) or not valid: never refused here."""
    try:
        flows = native.library().spec_properties(collective, spec, nprocs, max(1, min(ppn or 1, nprocs))).concurrent_flows
    except native.SpecError:
        return 0
    return max(0, flows)


def option_values(args: list[str], names: tuple[str, ...]) -> list[str]:
    """The values given to any of the options `names` (`--alg X` or `--alg=X`), in order."""
    values, it = [], iter(args)
    for arg in it:
        if arg in names:
            values.append(next(it, ""))
        else:
            values += [arg[len(n) + 1:] for n in names if arg.startswith(n + "=")]
    return values


def bench_specs(bench_args: list[str]) -> list[str]:
    return option_values(bench_args, ("--alg",))


@dataclass
class SimRun:
    platform: Platform
    nprocs: int
    ppn: int
    mapping: str
    vendor: str
    bench_args: list[str]
    shared_buffers: bool
    check: bool
    all_iterations: bool = False
    program: str = "tucoll-bench"  # or another program of the SimGrid build (an application)

    @property
    def collective_run(self) -> bool:
        """A tucoll-bench collective (its first argument), not another program or bench mode."""
        return self.program == "tucoll-bench" and bool(self.bench_args) and not self.bench_args[0].startswith("-")

    def label(self) -> str:
        iterations = ("every iteration simulated" if self.all_iterations else
                      "one iteration per case, since the simulation is deterministic")
        if self.program != "tucoll-bench":
            iterations = f"program {self.program}, host computation not timed"
        return (f"simulated with SimGrid on {self.platform.name} ({self.platform.summary}): P={self.nprocs}, "
                f"{self.ppn} ranks per node, {self.mapping} mapping, vendor = {self.vendor} selection, "
                f"{iterations}; times are model results, not measurements")


def without_options(args: list[str], names: tuple[str, ...]) -> list[str]:
    """`args` without the given options and their values (`--iters 3` or `--iters=3`)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in names:
            skip = True
        elif not any(arg.startswith(n + "=") for n in names):
            out.append(arg)
    return out


# What one simulated rank maps: the segments of its private copy of the program (SMPI privatizes
# by loading a copy per rank), its context stack with a guard page, its shared-malloc views.
# Measured on tuna:radix=4 runs: 11 370 mappings at P = 1024 (9 322 without guard pages) and
# 68 714 at P = 8192 while running; 12 883 at P = 1024 once list messages travel from a shared
# stand-in (Requests::stand_in).
MAPS_PER_RANK = 11
MAPS_OF_GUARDS = 2
MAPS_BASE = 4096

# Global shared malloc maps one block of a file over and over each shared buffer, one mapping per
# whole block (the rest of a buffer, and any buffer under a block, is one mapping, counted in
# MAPS_PER_RANK). Small blocks keep every buffer on the same few physical pages, which the
# algorithms' local copies then find in cache: allgather at P = 32 up to 1 MiB per rank takes
# 3.3 s of wall time with SimGrid's 1 MiB block and 4.6 s with 64 MiB. But a buffer of many
# blocks is many mappings: P = 4096 at 1 KiB (4 MiB buffers) passed the kernel's limit with 1 MiB
# blocks while allocating ("Could not map folded virtual memory"). So the block is the smallest
# that keeps the run within the limit.
SHARED_BLOCK_MIN = 1 << 20  # SimGrid's default
SHARED_BLOCK_MAX = 64 << 20
# The bench's send and receive buffers, the algorithm's scratch, and the stand-in its messages of
# several ranges travel from (Requests::stand_in: up to twice the largest message), with room.
SHARED_BUFFERS_PER_RANK = 6


def max_map_count() -> int | None:
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return None


def shared_views(buffer_bytes: int, block: int) -> int:
    """Mappings a rank's shared buffers of up to `buffer_bytes` add with blocks of `block` bytes."""
    return SHARED_BUFFERS_PER_RANK * (buffer_bytes // block)


def mappings_needed(nprocs: int, views_per_rank: int = 0) -> int:
    """Memory mappings a run of `nprocs` ranks makes; `views_per_rank`: those its shared buffers
    add beyond one per buffer."""
    return nprocs * (MAPS_PER_RANK + views_per_rank) + MAPS_BASE


def shared_block_bytes(nprocs: int, buffer_bytes: int | None, limit: int | None) -> int:
    """The shared-malloc block for `nprocs` ranks whose largest buffer is `buffer_bytes` (None:
    not known, as for a pattern file or an application): the smallest, from SimGrid's 1 MiB up,
    that keeps the run's mappings within the kernel's `limit`."""
    if buffer_bytes is None:
        return SHARED_BLOCK_MAX
    block = SHARED_BLOCK_MIN
    while (block < SHARED_BLOCK_MAX and limit is not None
           and mappings_needed(nprocs, shared_views(buffer_bytes, block)) > limit):
        block *= 2
    return block


def largest_buffer(run: "SimRun") -> int | None:
    """A rank's largest data buffer in a tucoll-bench collective run: P blocks of the largest
    --sizes / --size; None when the run does not say (another program, a pattern file)."""
    if not run.collective_run or any(d.startswith("file:") for d in option_values(run.bench_args, ("--dist",))):
        return None
    sizes = [s for value in option_values(run.bench_args, ("--sizes", "--size")) for s in value.split(",")]
    try:
        largest = max(units.parse(s) for s in sizes)
    except ValueError:  # no sizes, or one this parser does not read: the bench decides
        return None
    return run.nprocs * largest


def mapping_options(nprocs: int, limit: int | None, views_per_rank: int = 0) -> list[str]:
    """SimGrid options that keep a run of `nprocs` ranks within the kernel's `limit` of memory
    mappings per process (vm.max_map_count, 65 530 by default), or SimError when none can;
    `views_per_rank`: the mappings a rank's shared buffers add beyond one per buffer.

    Past the limit the simulator dies while loading rank copies ("dlopen failed: failed to map
    segment"). Dropping the stacks' guard pages saves two mappings per rank, which lets the
    default limit hold up to about 6 900 ranks instead of 5 600; beyond that the limit has to be
    raised.
    """
    needed = mappings_needed(nprocs, views_per_rank)
    if limit is None or needed <= limit:
        return []
    if needed - nprocs * MAPS_OF_GUARDS <= limit:
        return ["--cfg=contexts/guard-size:0"]
    raise SimError(f"simulating {nprocs} ranks maps about {needed:,} memory regions in one process (a copy of the "
                   f"program and a stack per rank), more than the kernel allows (vm.max_map_count = {limit:,}); "
                   f"raise it, e.g. `sudo sysctl -w vm.max_map_count={1 << (needed - 1).bit_length()}`")


def build_command(build: Build, run: SimRun, hostfile: Path) -> tuple[list[str], dict[str, str]]:
    args = list(run.bench_args)
    if run.collective_run and not run.all_iterations:
        # A simulated run is deterministic: further iterations repeat the first one (to within
        # the skew of a barrier), and each can cost minutes at thousands of ranks. No warmup
        # unless asked for: an explicit --warmup 1 keeps first-call setup (a communicator an
        # algorithm splits lazily) out of the timed call.
        warmup = [] if any(a == "--warmup" or a.startswith("--warmup=") for a in args) else ["--warmup", "0"]
        args = without_options(args, ("--iters",)) + ["--iters", "1"] + warmup
    if run.check and "--check" not in args and run.collective_run:
        args.append("--check")
    cfg = [
        "--cfg=smpi/simulate-computation:no",
        f"--cfg=smpi/coll-selector:{run.vendor}",
        # MPI_Test / MPI_Iprobe cost 100 us each by default, growing with every failed call:
        # far too much for polling loops such as NBX's. A small constant instead.
        "--cfg=smpi/test:1e-7",
        "--cfg=smpi/iprobe:1e-7",
        "--cfg=smpi/grow-injected-times:no",
        # SimGrid 3.32's max-min solver aborts ("Cannot saturate more a constraint that has no
        # active element") when a constraint's usage lands just above its default precision of
        # 1e-5, which batched exchanges of hundreds of ranks hit (scattered at P = 256). 1e-4 moves
        # simulated times by less than 3e-5 relative and avoids it.
        "--cfg=maxmin/precision:1e-4",
        "--cfg=contexts/stack-size:2048",
        "--log=root.thres:warning",
    ]
    limit, views = max_map_count(), 0
    if run.shared_buffers:
        buffer_bytes = largest_buffer(run)
        block = shared_block_bytes(run.nprocs, buffer_bytes, limit)
        views = shared_views(buffer_bytes or 0, block)
        cfg += ["--cfg=smpi/shared-malloc:global", f"--cfg=smpi/shared-malloc-blocksize:{block}"]
    cfg += mapping_options(run.nprocs, limit, views)
    cmd = [build.mpiexec, "-np", str(run.nprocs), "-platform", str(run.platform.file), "-hostfile", str(hostfile),
           *cfg, str(build.binary(run.program)), *args]
    env = dict(os.environ)
    env["TUCOLL_SIM_COPY_BW"] = repr(run.platform.copy_bandwidth)
    env["TUCOLL_SIM_COPY_PIECE"] = repr(run.platform.copy_piece)
    env["TUCOLL_SIM_SHARED_BUFFERS"] = "1" if run.shared_buffers else "0"
    if run.platform.ipc:
        for engine in ("kernel", "memcpy"):
            env[f"TUCOLL_SIM_IPC_{engine.upper()}_LAT"] = repr(run.platform.ipc[f"{engine}_latency"])
            env[f"TUCOLL_SIM_IPC_{engine.upper()}_BW"] = repr(run.platform.ipc[f"{engine}_bandwidth"])
        env["TUCOLL_SIM_HOST_LINK_LAT"] = repr(run.platform.ipc["host_latency"])
        env["TUCOLL_SIM_HOST_LINK_BW"] = repr(run.platform.ipc["host_bandwidth"])
    else:
        for name in ("HOST_LINK_LAT", "HOST_LINK_BW"):
            env.pop(f"TUCOLL_SIM_{name}", None)
    env.pop("TUCOLL_PPN", None)  # nodes come from the hostfile
    # SMPI runs a private copy of the binary per rank (privatization), so the library cannot find
    # the build's table beside itself: name it, unless the caller chose one.
    table = tuning_table(build)
    if "TUCOLL_TUNING_FILE" not in env and table is not None:
        env["TUCOLL_TUNING_FILE"] = str(table)
    return cmd, env


def tuning_table(build: Build) -> Path | None:
    """The table `auto` reads in a simulation of `build`: TUCOLL_TUNING_FILE when set, else the
    copy the build took of tuning/default.json when CMake configured it."""
    if os.environ.get("TUCOLL_TUNING_FILE"):
        return Path(os.environ["TUCOLL_TUNING_FILE"])
    table = build.root / "share" / "tucoll" / "tuning" / "default.json"
    return table if table.is_file() else None


def stale_table(build: Build) -> str | None:
    """Why auto in `build` would not run the source tree's tuning/default.json, or None when it
    does. The build copies the table when it is configured, so a table rebuilt since then (or
    checked out) reaches auto only once the build is refreshed."""
    source = REPO_ROOT / "tuning" / "default.json"
    used = tuning_table(build)
    if not source.is_file() or (used is not None and used.is_file() and used.read_bytes() == source.read_bytes()):
        return None
    if os.environ.get("TUCOLL_TUNING_FILE"):
        return f"TUCOLL_TUNING_FILE={used} differs from {source}"
    return (f"{build.root}'s copy of the tuning table differs from {source}: refresh it with "
            f"`cmake --build {build.root}`")


def relabel_mapping(output: str, mapping: str) -> str:
    """The bench sees the world in its own order; the hostfile made that order `mapping`."""
    if mapping == "sequential":
        return output
    lines = output.splitlines(keepends=True)
    if lines and lines[0].startswith("collective,"):
        rows = list(csv.reader(lines))
        column = rows[0].index("mapping") if "mapping" in rows[0] else -1
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for i, row in enumerate(rows):
            if i > 0 and 0 <= column < len(row):
                row[column] = mapping
            writer.writerow(row)
        return buffer.getvalue()
    return output.replace("mapping=sequential", f"mapping={mapping}")


def algorithm_names(registry_json: dict, collective: str) -> list[str]:
    """The registered algorithms of `collective`, in registry order."""
    return [a["name"] for a in registry_json["collectives"].get(collective, {}).get("algorithms", [])]


def run_simulation(build: Build, run: SimRun, timeout: float | None = None) -> subprocess.CompletedProcess:
    if build.mpi_flavor != "smpi":
        raise SimError(f"{build.root} is not a SimGrid build: run `make sim-build` and pass --build-dir build-sim")
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
