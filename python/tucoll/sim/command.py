"""One simulated run: tucoll-bench's arguments as the simulator takes them, the smpirun command
line, and what the library reads from the environment there (copy costs, the tuning table)."""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path

from tucoll import sizes as units
from tucoll.build import REPO_ROOT, Build
from tucoll.sim.memory import mapping_options, max_map_count, shared_block_bytes, shared_views
from tucoll.sim.platforms import Platform


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
        """A tucoll-bench collective (its first argument), not another program or bench mode (the
        machine probe times itself)."""
        return (self.program == "tucoll-bench" and bool(self.bench_args) and not self.bench_args[0].startswith("-")
                and self.bench_args[0] != "machine")

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
    env["TUCOLL_SIM_CALL"] = repr(run.platform.call_cost)
    env["TUCOLL_SIM_SHARED_BUFFERS"] = "1" if run.shared_buffers else "0"
    if run.platform.ipc:
        for engine in ("kernel", "memcpy"):
            env[f"TUCOLL_SIM_IPC_{engine.upper()}_LAT"] = repr(run.platform.ipc[f"{engine}_latency"])
            env[f"TUCOLL_SIM_IPC_{engine.upper()}_BW"] = repr(run.platform.ipc[f"{engine}_bandwidth"])
        env["TUCOLL_SIM_HOST_LINK_LAT"] = repr(run.platform.ipc["host_latency"])
        env["TUCOLL_SIM_HOST_LINK_BW"] = repr(run.platform.ipc["host_bandwidth"])
        env["TUCOLL_SIM_DEVICE_BUFFERS"] = "1"  # the ranks are GPUs, the program's buffers theirs (bench/buffer.h)
    else:  # a CPU platform: its ranks are not GPUs (src/ipc/sim.cpp)
        for name in ("IPC_KERNEL_LAT", "IPC_KERNEL_BW", "IPC_MEMCPY_LAT", "IPC_MEMCPY_BW", "HOST_LINK_LAT", "HOST_LINK_BW",
                     "DEVICE_BUFFERS"):
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
