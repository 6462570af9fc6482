"""Simulated points (uniform alltoallv, or MPI_Alltoall of one block size), run in parallel on a
Dask cluster and cached under the model's fingerprint."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tucoll import sim, store
from tucoll import sizes as units
from tucoll.build import REPO_ROOT, sources_fingerprint


# ------------------------------------------------------------------------- simulations

@dataclass(frozen=True)
class SimPoint:
    """One simulated exchange: a spec at one P and block size on a platform; an alltoallv of blocks
    uniform from 0 to `size` (the seeds' uniform distribution), or an alltoall of `size`-byte
    blocks (the OSU benchmark's, as seed 002 measures); timed as tucoll-bench's column `timed`
    (median_us, or from_last_exit_us for a measurement timed so: `tucoll calibrate --here`)."""
    platform: str
    nprocs: int
    ppn: int
    size: int
    spec: str
    collective: str = "alltoallv"
    timed: str = "median_us"


def simulate_point(point: SimPoint, build_dir: str | None = None) -> float:
    """The simulated time of `point` in seconds (run by a Dask worker)."""
    from tucoll import sweep  # sweep imports the bench machinery; only workers need it

    build, platform = sim.sim_build(build_dir), sim.Platform.load(point.platform)
    if point.collective == "alltoallv":
        rows = sweep.Target(build, platform, ppn=point.ppn, force=True).run(point.nprocs, "uniform", [point.size],
                                                                             [point.spec])
        return float(rows[point.timed].iloc[0]) * 1e-6
    # One warm-up call: the first on a communicator sets up what a program pays once (the ipc
    # exchange splits off its node's communicator and agrees on a backend).
    run = sim.SimRun(platform, point.nprocs, point.ppn, "sequential", platform.vendor,
                     [point.collective, "--alg", point.spec, "--size", str(point.size), "--warmup", "1", "--format",
                      "csv"], shared_buffers=True, check=False)
    proc = sim.simulate(build, run, force=True)
    rows = pd.read_csv(io.StringIO(proc.stdout), dtype=store.TEXT_COLUMNS, keep_default_na=False)
    return float(rows[point.timed].iloc[0]) * 1e-6


class SimCache:
    """Simulated times kept in a CSV under the simulated machine's fingerprint (platform and
    patches) and the library sources they were simulated with. A report uses a time simulated
    with earlier sources and says so (`current`: any change to src/ would otherwise throw away
    hours of simulation that it rarely moves); `--validate` simulates those again."""
    COLUMNS = ["platform", "model", "sources", "nprocs", "ppn", "size", "spec", "collective", "timed", "seconds"]

    def __init__(self, path: Path):
        self.path = Path(path)
        self.frame = (pd.read_csv(self.path, dtype={"spec": str, "model": str, "platform": str, "sources": str})
                      if self.path.is_file() else pd.DataFrame(columns=self.COLUMNS))
        if "sources" not in self.frame.columns:  # a cache from before the sources were kept apart: never current
            self.frame.insert(2, "sources", "")
        if "collective" not in self.frame.columns:  # a cache from before it held anything but alltoallv
            self.frame.insert(7, "collective", "alltoallv")
        if "timed" not in self.frame.columns:  # nor anything but the bench's median
            self.frame.insert(8, "timed", "median_us")
        # The last row of a point wins: a point simulated again is appended.
        self.times = {(r.platform, r.model, int(r.nprocs), int(r.ppn), int(r.size), r.spec, r.collective, r.timed):
                      (float(r.seconds), r.sources) for r in self.frame.itertuples()}
        self.fingerprints: dict[str, str] = {}

    def model(self, platform: str) -> str:
        if platform not in self.fingerprints:
            self.fingerprints[platform] = sim.Platform.load(platform).fingerprint()
        return self.fingerprints[platform]

    def _key(self, point: SimPoint) -> tuple:
        return (point.platform, self.model(point.platform), point.nprocs, point.ppn, point.size, point.spec,
                point.collective, point.timed)

    def get(self, point: SimPoint) -> float | None:
        """The time simulated on this machine model, with the current sources or earlier ones."""
        found = self.times.get(self._key(point))
        return found[0] if found else None

    def current(self, point: SimPoint) -> bool:
        """Whether `point` was simulated with the library's current sources."""
        found = self.times.get(self._key(point))
        return found is not None and found[1] == sources_fingerprint()

    def points(self, platform: str) -> list[SimPoint]:
        """The points cached for `platform` on its current model."""
        model = self.model(platform)
        return [SimPoint(p, n, ppn, size, spec, collective, timed)
                for (p, m, n, ppn, size, spec, collective, timed) in self.times if p == platform and m == model]

    def put(self, point: SimPoint, seconds: float) -> None:
        key = self._key(point)
        self.times[key] = (seconds, sources_fingerprint())
        row = dict(zip(self.COLUMNS, (*key[:2], sources_fingerprint(), *key[2:], seconds)))
        self.frame = pd.concat([self.frame, pd.DataFrame([row])], ignore_index=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.frame.to_csv(self.path, index=False)


def run_points(points: list[SimPoint], cache: SimCache, scheduler: str | None = None, workers: int | None = None,
               build_dir: str | None = None, log=print) -> dict[SimPoint, float]:
    """Simulates the points `cache` lacks or holds from earlier library sources, in parallel on a
    Dask cluster (tucoll.cluster)."""
    from tucoll import cluster  # Dask, only where it is used

    results = {p: cache.get(p) for p in points if cache.current(p)}
    pending = [p for p in dict.fromkeys(points) if p not in results]
    # The slowest first (most ranks), so that the cluster does not end waiting on one of them.
    pending.sort(key=lambda p: (-p.nprocs * (p.nprocs if p.spec == "vendor" else 1), p.size))
    for point, seconds, error in cluster.run_unordered(simulate_point, pending, build_dir, scheduler=scheduler,
                                                        workers=workers):
        if error:
            raise error
        cache.put(point, seconds)
        results[point] = seconds
        log(f"simulated {point.platform} P={point.nprocs} S={units.text(point.size)} {point.collective} {point.spec}: "
            f"{seconds * 1e6:.1f} us ({len(results)}/{len(points)})")
    return results
