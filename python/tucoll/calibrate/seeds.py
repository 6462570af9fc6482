"""The seeds' measurements (data/published/seeds.csv): the fit, the calibrated platforms, and the
models held against the fit and check sets."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from tucoll import sim
from tucoll import sizes as units
from tucoll.build import REPO_ROOT
from tucoll.calibrate.model import (Blocks, Mechanisms, Topology, best_tuna, fit_parameter, fit_tuna_parameter,
                                    tuna_rounds, tuna_time, vendor_time)
from tucoll.calibrate import gpu
from tucoll.calibrate.simulations import SimCache, SimPoint


SEEDS = REPO_ROOT / "data" / "published" / "seeds.csv"
CACHE = REPO_ROOT / "docs" / "calibration" / "simulated.csv"


# ------------------------------------------------------------------------ the calibration

# How each mechanism reaches a calibrated platform: a SimGrid option of its <config>, a field of its
# JSON entry (what tucoll sim hands the library), or a scale of its links' bandwidth.
OPTIONS = {"match_cost": "smpi/match-cost", "nic_gap": "smpi/nic-gap", "copy_piece": "copy_piece",
           "adapters": "network adapters", "torus": "torus"}
SIMGRID_OPTIONS = ("match_cost", "nic_gap")


@dataclass(frozen=True)
class Parameter:
    """One mechanism of a calibrated machine: its value when set from a source (None when the fit set
    pins it; a torus' dimensions for `torus`) and where it comes from."""
    name: str
    source: str
    value: float | tuple[int, ...] | None = None


@dataclass(frozen=True)
class Machine:
    """A seed's machine: the platform modelling it; the mechanism its fit-set vendor time pins, the
    one its fit-set TuNA time pins (copy_piece: the vendor's messages are contiguous, so it
    cannot), and the rest with their sources."""
    name: str
    base: str
    by_vendor: Parameter
    by_tuna: Parameter
    sourced: tuple[Parameter, ...]
    summary: str

    @property
    def calibrated(self) -> str:
        return f"{self.base.removesuffix('-like')}-calibrated"

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        return (self.by_vendor, self.by_tuna, *self.sourced)


TUNA_FIT_SOURCE = ("fitted: TuNA's {value} at P = 8192, 16 B (seed 000, V-A; ideal radix, in the one-node model), where "
                   "each of its rounds moves P / r blocks of 0 to 16 B (8 on average) that are not adjacent, packed "
                   "on one side and unpacked on the other: its 16 B cost is per block more than per byte. The "
                   "seed's own implementation (github.com/KokoFan16/rbruck_alltoallv, src/tuna.cpp) also works "
                   "out each block's place in T in every round it moves (two log() calls and a power per block), "
                   "which this cost holds too; tucoll keeps its schedule from call to call and takes places from "
                   "a free list (src/alltoallv/radix_schedule.h, tuna_engine.cpp), so on tucoll's TuNA it likely "
                   "charges more per block than its code spends")

MACHINE_LIST = [
    Machine("polaris", "polaris-like",
            Parameter("nic_gap", "fitted: the vendor's 51.8 ms at P = 8192, 16 B (seed 000, V-A), where the MPICH "
                      "exchange's few queued messages leave the interface's 2 x 32 x 8160 messages per node as its "
                      "cost (the node's two adapters together: each takes half at twice the gap)"),
            Parameter("copy_piece", TUNA_FIT_SOURCE.format(value="1.78 ms")),
            (Parameter("match_cost", "Slingshot's Cassini NIC matches MPI messages in hardware (libfabric fi_cxi(7), "
                       "hardware tag matching): no software queue walk; what matching costs is part of the "
                       "interface's time per message", 0.0),
             Parameter("adapters", "ALCF's Polaris machine overview: each node has a pair of Slingshot 11 network "
                       "adapters. Every link of the base's untapered fabric stands for two: twice the injection, and "
                       "a fabric with as many ports per endpoint as before", 2.0)),
            "ALCF Polaris: Slingshot dragonfly, two adapters per node, Cray MPICH selection, 32 ranks per node; "
            "calibrated"),
    Machine("fugaku", "fugaku-like",
            Parameter("match_cost", "fitted: the vendor's 408.33 ms at P = 8192, 16 B (seed 000, V-A), where Open "
                      "MPI's basic linear exchange posts all P - 1 receives, about P^2 / 4 = 16.8 million entries "
                      "walked per rank"),
            Parameter("copy_piece", TUNA_FIT_SOURCE.format(value="5.79 ms")),
            (Parameter("nic_gap", "no independent measurement of Tofu-D's rate per message; the fit set holds one "
                       "vendor time, which cannot pin two mechanisms, so this one is left out (an interface rate "
                       "would lower the fitted matching cost)", 0.0),
             Parameter("torus", "Ajima et al., \"The Tofu Interconnect D\", IEEE CLUSTER 2018: a 6-D torus X x Y x Z x "
                       "A x B x C whose A x B x C = 2 x 3 x 2 are the 12 nodes of a Tofu unit, 10 links of 6.8 GB/s "
                       "per node (Fugaku: 24 x 23 x 24 x 2 x 3 x 2 = 158,976 nodes). The base folds it into a 3-D "
                       "torus of 8 x 8 x 8. Here the job's 512 nodes (16,384 ranks at 32 per node) lie on 4 x 4 x 3 "
                       "units, each unit's 12 nodes filled first, its X, Y and Z closed as tori (the seed does not "
                       "give its jobs' shapes)", (2, 3, 2, 4, 4, 3))),
            "RIKEN Fugaku: Tofu-D 6-D torus, Open MPI selection, 32 ranks per node as in seed 000; calibrated"),
]
MACHINE_BY_NAME = {m.name: m for m in MACHINE_LIST}


def seeds() -> pd.DataFrame:
    return pd.read_csv(SEEDS, dtype=str, keep_default_na=False)


def mechanisms(machine: Machine, values: dict[str, float]) -> Mechanisms:
    """The base platform's mechanisms with `values` set (adapters scale the links; a torus reshapes
    the network)."""
    m = Mechanisms.of(sim.Platform.load(machine.base))
    values = dict(values)
    adapters = values.pop("adapters", 1.0)
    torus = values.pop("torus", None)
    if torus is not None:
        m = m.with_topology(Topology("TORUS", tuple(torus)))
    return replace(m, link_bandwidth=m.link_bandwidth * adapters, **values)


def fit_row(table: pd.DataFrame, machine: Machine, algorithm: str):
    rows = table[(table["machine"] == machine.name) & (table["set"] == "fit") &
                 (table["algorithms"] == algorithm) & (table["quantity"] == "time")]
    if len(rows) != 1:
        raise ValueError(f"{SEEDS}: expected one fit-set {algorithm} time for {machine.name}, found {len(rows)}")
    return rows.iloc[0]


def fit(table: pd.DataFrame | None = None) -> dict[str, dict[str, float]]:
    """Each machine's mechanism values: the sourced ones as its Machine says; one fitted to its
    fit-set vendor time (through vendor_time), then copy_piece to its fit-set TuNA time (through
    tuna_time with the ideal radix, the other values set)."""
    table = seeds() if table is None else table
    fits = {}
    for machine in MACHINE_LIST:
        values = {p.name: p.value for p in machine.sourced}
        vendor_row = fit_row(table, machine, "vendor")
        platform = sim.Platform.load(machine.base)
        m = mechanisms(machine, {**values, machine.by_vendor.name: 0.0, machine.by_tuna.name: 0.0})
        value = fit_parameter(m, machine.by_vendor.name, platform.vendor, int(vendor_row["nprocs"]),
                              int(vendor_row["ppn"]), row_blocks(vendor_row), seconds_of(vendor_row))
        if math.isnan(value):
            raise ValueError(f"{machine.name}: the model's other costs already exceed the published "
                             f"{vendor_row['value']} {vendor_row['unit']}; no {OPTIONS[machine.by_vendor.name]} fits it")
        values[machine.by_vendor.name] = value
        tuna_row = fit_row(table, machine, "tuna")
        m = mechanisms(machine, {**values, machine.by_tuna.name: 0.0})
        value = fit_tuna_parameter(m, machine.by_tuna.name, int(tuna_row["nprocs"]), int(tuna_row["ppn"]),
                                   row_blocks(tuna_row), ideal_radices(int(tuna_row["nprocs"])),
                                   seconds_of(tuna_row))
        if math.isnan(value):
            raise ValueError(f"{machine.name}: TuNA's other costs already exceed the published "
                             f"{tuna_row['value']} {tuna_row['unit']}; no {OPTIONS[machine.by_tuna.name]} fits it")
        values[machine.by_tuna.name] = value
        fits[machine.name] = values
    return fits


def row_blocks(row) -> Blocks:
    if row["workload"] != "uniform":
        raise ValueError(f"{row['id']}: the models are for the uniform workload, not {row['workload']}")
    return Blocks.uniform(units.parse(row["block_bytes"]))


def seconds_of(row) -> float:
    return float(row["value"]) * {"ms": 1e-3, "us": 1e-6, "s": 1.0}[row["unit"]]


def calibrated_path(machine: Machine) -> Path:
    return sim.PLATFORM_DIR / "calibrated" / f"{machine.calibrated}.json"


def describe(name: str, value: float) -> str:
    """A parameter's value as the docs print it."""
    if name == "torus":
        return " x ".join(map(str, value))
    return f"{value:g}" if name == "adapters" else f"{value * 1e9:.2f} ns"


def write_platforms(fits: dict[str, dict[str, float]]) -> list[Path]:
    """The calibrated platforms (sim/platforms/calibrated/): each base platform with its mechanisms
    set, the seeds' 32 ranks per node, and where each value comes from."""
    paths = []
    for machine in MACHINE_LIST:
        values = fits[machine.name]
        note = "\n".join([
            f"  {machine.calibrated}: {machine.base} with the mechanisms calibrated on seed 000's fit set",
            "  (data/published/seeds.csv), written by tucoll calibrate: do not edit by hand.",
            *(f"  - {OPTIONS[p.name]} = {describe(p.name, values[p.name])}: {p.source}." for p in machine.parameters),
            "  Everything else is the base platform's, with the sources its own comment gives.",
        ])
        # 32 ranks per node: the seeds' runs (seed 000, V, on both machines).
        paths.append(sim.derived_platform(machine.base, {OPTIONS[k]: f"{values[k]:.9g}" for k in SIMGRID_OPTIONS},
                                          calibrated_path(machine), note=note,
                                          bandwidth_scale=values.get("adapters", 1.0), torus=values.get("torus"),
                                          summary=machine.summary,
                                          ranks_per_node=32, copy_piece=float(f"{values['copy_piece']:.9g}")))
    return paths


# --------------------------------------------------------------- the closed forms, checked

# Where the closed forms are held against simulation: the P at which the vendor's P^2 messages
# still simulate in minutes, and at which Open MPI's selection runs its basic linear exchange.
VALIDATION = {  # machine: spec: {block size: P}
    "polaris": {"vendor": {16: (256, 512, 1024, 2048), 1024: (256, 512, 1024)},
                "tuna": {16: (256, 512, 1024, 2048), 1024: (256, 512, 1024, 2048)}},
    # The torus makes every event a full solve: the vendor at 1 KiB past P = 128 takes an hour here.
    "fugaku": {"vendor": {16: (128, 192), 1024: (128,)},
               "tuna": {16: (128, 256, 512), 1024: (128, 256, 512)}},
}
VALIDATION_RADICES = (2, 4, 16)


def validation_points() -> list[SimPoint]:
    points = []
    for machine in MACHINE_LIST:
        for size, nprocs_list in VALIDATION[machine.name]["vendor"].items():
            points += [SimPoint(machine.calibrated, n, 32, size, "vendor") for n in nprocs_list]
        for size, nprocs_list in VALIDATION[machine.name]["tuna"].items():
            points += [SimPoint(machine.calibrated, n, 32, size, f"tuna:radix={r}")
                       for n in nprocs_list for r in VALIDATION_RADICES if r < n]
    return points


def closed_form(point: SimPoint) -> float:
    """The model's time of a simulated point (seconds): the vendor's closed form, TuNA's one-node model."""
    platform = sim.Platform.load(point.platform)
    m = Mechanisms.of(platform)
    if point.spec == "vendor":
        return vendor_time(m, platform.vendor, point.nprocs, point.ppn, Blocks.uniform(point.size))
    radix = int(point.spec.split("radix=")[1])
    return tuna_time(m, point.nprocs, point.ppn, Blocks.uniform(point.size), radix)


# ------------------------------------------------------------------- against the seeds

def ideal_radices(nprocs: int) -> tuple[int, ...]:
    """The radices the model tries for "TuNA with ideal r" (seed 000 tries 2 to P): the powers
    of two below P (from P on, the library's TuNA is the spread-out exchange, all messages at once)."""
    return tuple(2 ** k for k in range(1, max(1, (nprocs - 1).bit_length())))


CROSSOVER_SIZES = tuple(2 ** k for k in range(4, 17))  # 16 B to 64 KiB
# Seed 000's radix trends (V-A, Fig. 7: "consistent across all process counts", shown at P = 2048).
TREND_QUANTITIES = ("ideal_radix", "radix_rises_upto", "radix_falls_above")
TREND_NPROCS = 2048  # the P of Fig. 7, where the rows of these trends are held
CROSSOVER_NPROCS = 8192  # where the seed quotes its numbers (V-A, Fig. 8)


@dataclass(frozen=True)
class Model:
    """One machine's models on a given platform (calibrated or not)."""
    machine: Machine
    platform: sim.Platform
    mech: Mechanisms
    ppn: int = 32
    cache: SimCache | None = None  # simulated TuNA, where it was simulated

    def vendor(self, nprocs: int, size: int) -> float:
        return vendor_time(self.mech, self.platform.vendor, nprocs, self.ppn, Blocks.uniform(size))

    def tuna(self, nprocs: int, size: int) -> tuple[float, int]:
        """TuNA with its ideal radix in the one-node model: (seconds, radix)."""
        return best_tuna(self.mech, nprocs, self.ppn, Blocks.uniform(size), ideal_radices(nprocs))

    def simulated_tunas(self, nprocs: int, size: int) -> list[tuple[float, int, bool]]:
        """Every simulated TuNA the cache holds at this P and size: (seconds, radix, whether
        simulated with the current library sources)."""
        if self.cache is None:
            return []
        return [(self.cache.get(p), int(p.spec.split("=")[1]), self.cache.current(p))
                for p in self.cache.points(self.platform.name)
                if p.collective == "alltoallv" and p.nprocs == nprocs and p.ppn == self.ppn and p.size == size
                and p.spec.startswith("tuna:radix=")]

    def tuna_simulated(self, nprocs: int, size: int) -> tuple[float, int, bool] | None:
        """The best of simulated_tunas, if any."""
        found = self.simulated_tunas(nprocs, size)
        return min(found) if found else None

    def ideal_radix(self, nprocs: int, size: int) -> int:
        return self.tuna(nprocs, size)[1]

    def radix_trend(self, nprocs: int, quantity: str) -> float:
        """Seed 000's Fig. 7 trends in the one-node model at `nprocs`, over CROSSOVER_SIZES:
        `radix_rises_upto`, the largest size up to which the smallest radix is the best at every
        size (0: not even at the first); `radix_falls_above`, the largest size above which the
        largest radix is the best at every size (inf: not even at the last)."""
        radices = ideal_radices(nprocs)
        if quantity == "radix_rises_upto":  # from the smallest size up, while the smallest radix is best
            upto = 0
            for size in CROSSOVER_SIZES:
                if self.ideal_radix(nprocs, size) != radices[0]:
                    break
                upto = size
            return float(upto)
        # From the largest size down, while the largest radix is best.
        for i in range(len(CROSSOVER_SIZES) - 1, -1, -1):
            if self.ideal_radix(nprocs, CROSSOVER_SIZES[i]) != radices[-1]:
                return float(CROSSOVER_SIZES[i]) if i < len(CROSSOVER_SIZES) - 1 else math.inf
        return 0.0

    def round_cost_for_smallest_radix(self, nprocs: int, size: int) -> float:
        """How much more every round of TuNA would have to cost (seconds) for the smallest radix
        to be the best at this P and size in the one-node model: where a round's cost is the same
        at every radix, radix r beats 2 by t_2 - t_r with n_r - n_2 more rounds."""
        blocks, radices = Blocks.uniform(size), ideal_radices(nprocs)
        first = tuna_time(self.mech, nprocs, self.ppn, blocks, radices[0])
        rounds = len(tuna_rounds(nprocs, radices[0]))
        need = 0.0
        for radix in radices[1:]:
            more = len(tuna_rounds(nprocs, radix)) - rounds
            if more > 0:
                need = max(need, (first - tuna_time(self.mech, nprocs, self.ppn, blocks, radix)) / more)
        return need

    def crossover(self, nprocs: int) -> int | None:
        """The largest block size of CROSSOVER_SIZES up to which TuNA is ahead of the vendor."""
        last = None
        for size in CROSSOVER_SIZES:
            if self.tuna(nprocs, size)[0] >= self.vendor(nprocs, size):
                break
            last = size
        return last


def models(calibrated: bool, cache: SimCache | None = None) -> dict[str, Model]:
    out = {}
    for machine in MACHINE_LIST:
        platform = sim.Platform.load(machine.calibrated if calibrated else machine.base)
        out[machine.name] = Model(machine, platform, Mechanisms.of(platform), cache=cache)
    return out


def why_not(row) -> str | None:
    """Why a seed row is not held against the models, or None when it is."""
    if row["machine"] not in MACHINE_BY_NAME:
        return "another machine (the Neuchatel clusters): not modelled"
    if row["workload"] != "uniform":
        return "an application or a non-uniform distribution: the models are for uniform blocks"
    if row["quantity"] == "crossover" and row["algorithms"] == "tuna vs vendor":
        return None
    if row["quantity"] in TREND_QUANTITIES and row["algorithms"] == "tuna" and row["nprocs"]:
        return None
    if row["quantity"] not in ("time", "time_ratio"):
        return "a trend or an ideal parameter, not a time"
    if row["algorithms"] not in ("vendor", "tuna", "vendor/tuna"):
        return "a hierarchical or scattered variant: no model, and not simulable at this P here"
    if not row["nprocs"] or not row["block_bytes"]:
        return "no P or block size given"
    return None


def evaluate(row, model: Model) -> tuple[float, str]:
    """The model's value for a seed row, in the row's unit, and how it was obtained."""
    if row["quantity"] == "crossover":
        s = model.crossover(CROSSOVER_NPROCS)
        return float(s or 0), f"models at P = {CROSSOVER_NPROCS}"
    if row["quantity"] in TREND_QUANTITIES:
        return _trend(row, model)
    nprocs, size = int(row["nprocs"]), units.parse(row["block_bytes"])
    if row["algorithms"] == "vendor":
        return model.vendor(nprocs, size) / seconds_of(row) * float(row["value"]), "closed form"
    simulated = model.tuna_simulated(nprocs, size)
    tuna, radix = simulated[:2] if simulated else model.tuna(nprocs, size)
    how = f"one-node model, r = {radix}"
    if simulated:
        how = f"TuNA simulated (best of the radices simulated: r = {radix}" + \
              ("" if simulated[2] else "; earlier library sources") + ")"
    if row["algorithms"] == "tuna":
        return tuna / seconds_of(row) * float(row["value"]), how
    return model.vendor(nprocs, size) / tuna, how + "; vendor closed form"


def _trend(row, model: Model) -> tuple[float, str]:
    nprocs = int(row["nprocs"])
    if row["quantity"] in ("radix_rises_upto", "radix_falls_above"):
        sizes = f"{units.text(CROSSOVER_SIZES[0], long=True)} to {units.text(CROSSOVER_SIZES[-1], long=True)}"
        return model.radix_trend(nprocs, row["quantity"]), f"one-node model at P = {nprocs}, {sizes}"
    size = units.parse(row["block_bytes"])
    how = f"one-node model at P = {nprocs}, {units.text(size, long=True)}"
    simulated = model.simulated_tunas(nprocs, size)
    if simulated:
        tried = ", ".join(str(radix) for radix in sorted({radix for _, radix, _ in simulated}))
        how += f"; simulated, of r = {tried}: r = {min(simulated)[1]}"
    return float(model.ideal_radix(nprocs, size)), how


RATIO_NPROCS = (256, 512, 1024, 2048, 4096, 8192, 16384)


def ratio_by_p(cache: SimCache | None = None) -> pd.DataFrame:
    """vendor / TuNA (ideal radix) on each calibrated machine by P at 16 B and 1 KiB, beside the
    seeds' published ratio where there is one: by the models (the vendor's closed form, TuNA's
    one-node model), and with TuNA simulated where
    the cache holds it (the vendor then simulated too where it is cached, else its closed form,
    which is within 1 % of simulation where both ran)."""
    published = seeds()
    rows = []
    for name, model in models(calibrated=True, cache=cache).items():
        for size in (16, 1024):
            for nprocs in RATIO_NPROCS:
                if nprocs > len(model.platform.hosts) * model.ppn:
                    continue
                try:
                    closed_vendor = model.vendor(nprocs, size)
                except ValueError:  # Open MPI's pairwise exchange (256 <= P < 1024): no closed form
                    continue
                tuna, radix = model.tuna(nprocs, size)
                simulated = model.tuna_simulated(nprocs, size)
                vendor = (cache.get(SimPoint(model.platform.name, nprocs, model.ppn, size, "vendor"))
                          if cache else None) or closed_vendor
                paper = published[(published["machine"] == name) & (published["nprocs"] == str(nprocs)) &
                                  (published["block_bytes"] == str(size)) &
                                  (published["workload"] == "uniform") &
                                  (published["algorithms"] == "vendor/tuna")]["value"]
                rows.append({"machine": name, "S": units.text(size), "P": nprocs,
                             "models": closed_vendor / tuna, "r": radix,
                             "TuNA simulated": vendor / simulated[0] if simulated else math.nan,
                             "r simulated": simulated[1] if simulated else math.nan,
                             "published": float(paper.iloc[0]) if len(paper) else math.nan})
    return pd.DataFrame(rows)


def calibration_table(table: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the CPU machines' rows held against the model: published, before and after calibration,
    after / published; their rows left out, with why)."""
    table = seeds() if table is None else table
    cache = SimCache(CACHE) if CACHE.is_file() else None
    before, after = models(calibrated=False, cache=cache), models(calibrated=True, cache=cache)
    held, left = [], []
    for _, row in table[~table["machine"].isin(gpu.PLATFORMS)].iterrows():  # GPU machines: gpu.gpu_table
        reason = why_not(row)
        if reason:
            left.append({"set": row["set"], "id": row["id"], "why": reason})
            continue
        old, _ = evaluate(row, before[row["machine"]])
        new, how = evaluate(row, after[row["machine"]])
        published = float(row["value"])
        held.append({"set": row["set"], "id": row["id"], "P": row["nprocs"] or "-", "S": row["block_bytes"],
                     "published": published, "unit": row["unit"], "before": old, "after": new,
                     "after / published": new / published if published else math.nan, "how": how})
    return pd.DataFrame(held), pd.DataFrame(left)


def validation_table(results: dict[SimPoint, float], cache: SimCache | None = None) -> pd.DataFrame:
    """The models against the simulated times; with `cache`, which library sources each was
    simulated with (current or earlier)."""
    rows = []
    for point, simulated in results.items():
        modelled = closed_form(point)
        rows.append({"platform": point.platform, "P": point.nprocs, "S": units.text(point.size),
                     "spec": point.spec, "simulated_us": simulated * 1e6, "model_us": modelled * 1e6,
                     "model / simulated": modelled / simulated})
        if cache is not None:
            rows[-1]["sources"] = "current" if cache.current(point) else "earlier"
    return pd.DataFrame(rows).sort_values(["platform", "spec", "S", "P"], key=_natural).reset_index(drop=True)


def _natural(column: pd.Series) -> pd.Series:
    return column.map(units.parse) if column.name == "S" else column
