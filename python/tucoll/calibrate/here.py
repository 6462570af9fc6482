"""`tucoll calibrate --here`: this machine's mechanisms from microbenchmarks with its MPI, as a
platform file, and its predictions held against measurement."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tucoll import sizes as units
from tucoll.build import REPO_ROOT
from tucoll.calibrate.simulations import SimCache, SimPoint, run_points


# ------------------------------------------------------------------------- this machine

HERE_DOCS = REPO_ROOT / "docs" / "calibration"  # where this repository keeps its own machine's run
# scripts/gpu-check.sh measures the same P, sizes and specs on a machine without this package.
HERE_NPROCS_FIT, HERE_NPROCS_PREDICT = (2, 4), (8, 16)
HERE_SIZES = (16, 1024, 65536)
HERE_SPECS = ("vendor", "tuna:radix=2", "tuna:radix=4")


@dataclass(frozen=True)
class HereFit:
    """A machine's mechanisms, from `tucoll-bench machine` (two ranks on one node)."""
    latency: float         # one-way time of an empty message, less the two overheads
    bandwidth: float       # bytes/s between two ranks (large ping-pong messages)
    overhead: float        # seconds per message, many outstanding (smpi/os, ois, or each)
    match_cost: float      # seconds per posted receive an arrival walks past
    copy_bandwidth: float  # bytes/s of one core's memcpy (local copies inside the algorithms)
    cores: int

    def rows(self) -> pd.DataFrame:
        return pd.DataFrame([
            {"parameter": "latency (smpi cluster lat)", "value": f"{self.latency * 1e9:.0f} ns",
             "from": "ping-pong of 0 B: one way, less the send and receive overheads"},
            {"parameter": "bandwidth (loopback_bw)", "value": f"{self.bandwidth / 1e9:.2f} GB/s",
             "from": "ping-pong of 16 KiB to 1 MiB: the slope of time over size"},
            {"parameter": "smpi/os, ois, or", "value": f"{self.overhead * 1e9:.0f} ns",
             "from": "64 to 1024 messages outstanding: time per added message"},
            {"parameter": "smpi/match-cost", "value": f"{self.match_cost * 1e9:.2f} ns",
             "from": "1024 receives matched last-first against first-first: extra time per entry walked"},
            {"parameter": "smpi/nic-gap", "value": "0", "from": "one node: no message crosses an interface"},
            {"parameter": "copy bandwidth", "value": f"{self.copy_bandwidth / 1e9:.2f} GB/s",
             "from": "memcpy of 64 MiB on one core"},
        ])


def probe_here(build) -> pd.DataFrame:
    """Runs `tucoll-bench machine` on two ranks with the build's MPI; its rows."""
    import io
    import subprocess

    cmd = build.launch(2, "tucoll-bench", ["machine"])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=build.environment(), timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return pd.read_csv(io.StringIO(proc.stdout))


def fit_here(probe: pd.DataFrame, cores: int) -> HereFit:
    """The mechanisms of the machine that `probe` (tucoll-bench machine's rows) measured, which has
    `cores` cores."""
    import numpy as np

    pp = probe[probe["test"] == "pingpong"].set_index("bytes")["seconds"]
    large = pp[pp.index >= 16384]
    slope, _ = np.polyfit(large.index.to_numpy(dtype=float), large.to_numpy(), 1)
    burst = probe[probe["test"] == "burst"].set_index("count")["seconds"]
    reversed_ = probe[probe["test"] == "burst_reversed"].set_index("count")["seconds"]
    counts = burst.index[burst.index >= 64]
    overhead = max(0.0, np.polyfit(counts.to_numpy(dtype=float), burst[counts].to_numpy(), 1)[0])
    w = int(burst.index.max())
    match_cost = max(0.0, (reversed_[w] - burst[w]) / (w * (w - 1) / 2))
    latency = max(0.0, pp[0] - 2 * overhead)
    copy = probe[probe["test"] == "copy"].iloc[0]
    copy_bandwidth = copy["bytes"] / copy["seconds"]
    return HereFit(latency, 1 / slope if slope > 0 else math.inf, overhead, match_cost, copy_bandwidth, cores)


def write_here_platform(fit_: HereFit, flavor: str, path: Path) -> Path:
    """A one-node platform for `tucoll sim --platform` with this machine's fitted mechanisms."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    o = f"0:{fit_.overhead:.6g}:0"
    xml = f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- A machine of {fit_.cores} cores, as tucoll calibrate fitted it from tucoll-bench machine with its MPI
     ({flavor}): one node, every rank on it. -->
<platform version="4.1">
  <config>
    <prop id="smpi/os" value="{o}"/>
    <prop id="smpi/ois" value="{o}"/>
    <prop id="smpi/or" value="{o}"/>
    <prop id="smpi/match-cost" value="{fit_.match_cost:.6g}"/>
    <prop id="smpi/bw-factor" value="0:1"/>
    <prop id="smpi/lat-factor" value="0:1"/>
  </config>
  <zone id="world" routing="Full">
    <cluster id="here" prefix="here-" radical="0-0" suffix=".sim" speed="1Gf" core="64"
             bw="{fit_.bandwidth:.6g}Bps" lat="{fit_.latency:.6g}s"
             loopback_bw="{fit_.bandwidth:.6g}Bps" loopback_lat="{fit_.latency:.6g}s"/>
  </zone>
</platform>
"""
    path.with_suffix(".xml").write_text(xml)
    entry = {"file": path.with_suffix(".xml").name, "hosts": [["here-", 1, ".sim"]], "ranks_per_node": 64,
             "vendor": "mpich" if flavor == "mpich" else "ompi", "copy_bandwidth": fit_.copy_bandwidth,
             "summary": f"a machine of {fit_.cores} cores ({flavor}), fitted by tucoll calibrate --here"}
    path.with_suffix(".json").write_text(json.dumps(entry, indent=2) + "\n")
    return path.with_suffix(".json")


def measure_here(build, iters: int = 20, log=print) -> pd.DataFrame:
    """Uniform alltoallv with the real MPI (tucoll-bench, interleaved) at the fit P and the larger P."""
    from tucoll.bench import BenchRun, arguments, run_bench

    frames = []
    for nprocs in HERE_NPROCS_FIT + HERE_NPROCS_PREDICT:
        args = arguments(here_specs(nprocs), HERE_SIZES) + ["--iters", str(iters)]
        frames.append(run_bench(build, BenchRun("alltoallv", nprocs, args)))
        log(f"measured P={nprocs}")
    return pd.concat(frames, ignore_index=True)


def here_specs(nprocs: int) -> list[str]:
    """HERE_SPECS that run at this P (TuNA's radix runs from 2 to P)."""
    return [s for s in HERE_SPECS if not s.startswith("tuna:radix=") or int(s.split("=")[1]) <= nprocs]


def here_table(measured: pd.DataFrame, platform_file: Path, cores: int, scheduler: str | None = None,
               workers: int | None = None, sim_build_dir: str | None = None, log=print) -> pd.DataFrame:
    """Predicted (simulated on the fitted platform) against `measured` (tucoll-bench's rows with the
    real MPI) for uniform alltoallv at the fit P and the larger P, per algorithm and size; `cores`
    of the measuring machine say which P were oversubscribed."""
    from tucoll.bench import spec as spec_of

    rows = []
    points = [SimPoint(str(platform_file), int(row["nprocs"]), int(row["nprocs"]), int(row["size"]), spec_of(row))
              for _, row in measured.iterrows()]
    cache = SimCache(Path(platform_file).with_name(Path(platform_file).stem + "-simulated.csv"))
    predicted = run_points(points, cache, scheduler=scheduler, workers=workers, build_dir=sim_build_dir, log=log)
    for point, measured_us in zip(points, measured["median_us"].astype(float)):
        rows.append({"P": point.nprocs, "role": "fit range" if point.nprocs in HERE_NPROCS_FIT else "predicted",
                     "oversubscribed": point.nprocs > cores, "S": units.text(point.size), "spec": point.spec,
                     "measured_us": measured_us, "predicted_us": predicted[point] * 1e6,
                     "predicted / measured": predicted[point] * 1e6 / measured_us})
    return pd.DataFrame(rows)
