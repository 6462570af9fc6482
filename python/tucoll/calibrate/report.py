"""docs/CALIBRATION.md, written from the calibration's tables."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pandas as pd

from tucoll import sim
from tucoll import sizes as units
from tucoll.build import REPO_ROOT
from tucoll.calibrate import gpu
from tucoll.calibrate.here import HERE_DOCS, HERE_NPROCS_PREDICT
from tucoll.calibrate.model import Blocks, device_copy, fit_tuna_parameter, tuna_rounds
from tucoll.calibrate.seeds import (CACHE, CROSSOVER_NPROCS, MACHINE_LIST, OPTIONS, TREND_NPROCS, describe, fit_row,
                                    models, ratio_by_p, row_blocks, seconds_of, seeds)
from tucoll.calibrate.simulations import SimCache


# ---------------------------------------------------------------------------- the docs

DOC = REPO_ROOT / "docs" / "CALIBRATION.md"


def _number(value) -> str:
    """3 significant digits, whole numbers (byte counts, P) in full."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.0f}" if value == round(value) and abs(value) >= 1 else f"{value:.3g}"
    return str(value)


def _markdown(frame: pd.DataFrame, floats: str | None = None) -> str:
    if floats:
        return frame.to_markdown(index=False, floatfmt=floats)
    return frame.map(_number).to_markdown(index=False) if hasattr(frame, "map") else \
        frame.applymap(_number).to_markdown(index=False)


def parameters_table(fits: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = []
    for machine in MACHINE_LIST:
        for p in machine.parameters:
            rows.append({"machine": machine.name, "option": OPTIONS[p.name],
                         "value": describe(p.name, fits[machine.name][p.name]), "source": p.source})
    return pd.DataFrame(rows)


def gpu_section(held: pd.DataFrame, left: pd.DataFrame) -> list[str]:
    """Seed 002's GPU machines against simulation (calibrate.gpu)."""
    parts = ["## GPU machines: simulated outright", ""]
    if len(held):
        error = held["simulated / published"].map(lambda r: max(r, 1 / r) if r > 0 else math.inf)
        worst = held.loc[error.idxmax()]
        parts += [
            "Seed 002's single-size all-to-all (osu_alltoall) on device buffers, simulated with SimGrid on "
            "thetagpu-like (8 A100 per node) and lassen-like (4 V100): tucoll's `ipc` (the hybrid with the "
            "seed's thresholds, and each copy engine alone), and the MPI's own MPI_Alltoall or a pairwise "
            "exchange on the same device buffers (Open MPI's selection, as Open MPI + UCX; one warm-up call). "
            "Nothing is fitted: the IPC copies' costs come from the seed's Fig. 4, and what a GPU-aware MPI adds "
            "to a message on device memory (smpi/device-os at its sender, smpi/device-or at its receiver: "
            "sim/simgrid-patches/smpi-device-messages.patch) from a point-to-point measurement of Open MPI + "
            "UCX between two A100s (sim/platforms/thetagpu-like.xml says which), and what its own copy of a "
            "rank's block costs there (smpi/device-copy: Open MPI 4.1.1's 128 KiB pieces, from its source, "
            "each at the copy engine's cost read from Fig. 4: "
            "sim/simgrid-patches/smpi-local-copies-on-device.patch); lassen-like has no such measurement of "
            "Spectrum MPI, so its MPI pays nothing extra. The Fig. 4 rows (the copy variants' small-message "
            "overheads and their crossover) are what the IPC copy costs were read from, so they test how the "
            "exchange around the copies adds to them, not an independent prediction. "
            f"{int((error <= 1.5).sum())} of {len(held)} rows are within 1.5x of the published value; the largest "
            f"error is {worst['id']} ({worst['simulated']:.3g} against {worst['published']:.3g} {worst['unit']}).",
            "",
            _markdown(held.drop(columns=["set"])),
            "",
        ]
        value = held.set_index("id")["simulated"]
        needed = {"thetagpu_p8_8KiB_ompi_ucx_over_ipc", "thetagpu_p8_4MiB_ompi_ucx_over_ipc",
                  "thetagpu_p8_kernel_ipc_good_below", "thetagpu_p8_kernel_ipc_small_overhead",
                  "thetagpu_p8_memcpy_ipc_small_overhead"}
        if needed <= set(value.index):
            at_8k, at_4m = value["thetagpu_p8_8KiB_ompi_ucx_over_ipc"], value["thetagpu_p8_4MiB_ompi_ucx_over_ipc"]
            platform = sim.Platform.load(gpu.PLATFORMS["thetagpu"][0])
            ipc, options = platform.ipc, platform.options()
            # smpi/device-os's last piece, the rendezvous: "size:seconds:seconds per byte".
            rendezvous = float(options["smpi/device-os"].split(";")[-1].split(":")[1]) * 1e6
            # The MPI's copy of a rank's own 4 MiB block, piece by piece (smpi/device-copy).
            block = 4 << 20
            pieces, own_copy = device_copy(options, block)
            piece = int(options.get("smpi/device-copy-piece", 0) or 0) or block
            small_copy = device_copy(options, gpu.SMALL)[1] * 1e6
            # What the exchange costs around its copies: the kernel variant at 16 B less its one launch.
            exchange = value["thetagpu_p8_kernel_ipc_small_overhead"] - ipc["kernel_latency"] * 1e6

            def side(ratio: float) -> str:
                return f"{'ahead' if ratio > 1 else 'behind'} ({ratio:.2f}x)"

            parts += [
                f"**What the misses say.** On one DGX A100 node `ipc` is {side(at_8k)} of the MPI at 8 KiB "
                "(published 17.4x), where the MPI stages each of a rank's 14 messages through host memory, and "
                f"{side(at_4m)} at 4 MiB (published 2.5x). There the MPI's messages cost little more than their "
                f"bytes (a rendezvous adds {rendezvous:.1f} us, and UCX 1.11 copies to a rank's 7 peers at once, on a "
                "stream per peer GPU: src/uct/cuda/cuda_ipc/cuda_ipc_ep.c); what holds the MPI back is its copy of "
                f"each rank's own block, which Open MPI 4.1.1 makes in {piece // 1024} KiB pieces, each a copy on the "
                f"GPU that it waits for ({pieces} pieces, {own_copy * 1e6:.0f} us: "
                "smpi/device-copy, sim/simgrid-patches/smpi-local-copies-on-device.patch). At 16 B `ipc` hands the "
                "blocks to the MPI's own alltoall, as the seed's design hands them to its optimised small-message "
                "alltoall (9.48 us, 39 % faster than MVAPICH2-GDR's); the simulated MPI is Open MPI's, whose copy "
                f"of the own block alone costs {small_copy:.1f} us, so vendor / ipc is 1 there by construction and "
                "`ipc`'s time is Open MPI's. The kernel/memcpy crossover lies "
                f"{value['thetagpu_p8_kernel_ipc_good_below'] / 262144:.0f}x higher than the seed's because "
                "tucoll launches a call's kernel copies as one batch (src/ipc/cuda.cu) where the seed's Fig. 4 "
                "costs one launch per copy: a prediction for tucoll on a GPU, and a reason to measure its "
                "`memcpy_threshold` (the seed's 512 KiB) there. The copy variants' small-message times exceed "
                "the seed's overheads "
                f"({value['thetagpu_p8_kernel_ipc_small_overhead']:.1f} and "
                f"{value['thetagpu_p8_memcpy_ipc_small_overhead']:.1f} us against 30 and 50) by what `ipc` "
                f"spends around its copies, exchanging slots and flags on host memory (about {exchange:.0f} us "
                "here), which the per-copy costs read from the same figure already include.",
                "",
            ]
    if len(left):
        parts += [_markdown(left.groupby(["set", "why"]).size().reset_index(name="rows")), ""]
    return parts


def radix_trends(calibrated: dict, uncalibrated: dict) -> str:
    """The paragraph on seed 000's radix trends (Fig. 7): what the models find, and what a round of
    TuNA would have to cost for the seed's ideal radix at small blocks to be theirs."""
    nprocs, size = TREND_NPROCS, 16
    polaris, fugaku = calibrated["polaris"], calibrated["fugaku"]
    need = {name: model.round_cost_for_smallest_radix(nprocs, size) * 1e6 for name, model in calibrated.items()}
    before = {name: model.round_cost_for_smallest_radix(nprocs, size) * 1e6 for name, model in uncalibrated.items()}
    # The piece cost fitted with TuNA at r = 2, the seed's ideal for small blocks, instead of the
    # model's ideal radix: what the model then says.
    tuna_row = fit_row(seeds(), polaris.machine, "tuna")
    fit_p, fit_size, published = int(tuna_row["nprocs"]), units.parse(tuna_row["block_bytes"]), seconds_of(tuna_row)
    at_two = fit_tuna_parameter(replace(polaris.mech, copy_piece=0.0), "copy_piece", fit_p, polaris.ppn,
                                row_blocks(tuna_row), (2,), published)
    refit = replace(polaris, mech=replace(polaris.mech, copy_piece=at_two))
    refit_time, refit_radix = refit.tuna(fit_p, fit_size)

    def trend(models_: dict, quantity: str) -> list[float]:
        return [model.radix_trend(nprocs, quantity) for model in models_.values()]

    def sizes(values: list[float]) -> str:  # the machines' sizes; 0 and inf: the trend at no size
        text = ["no size" if v in (0, math.inf) else units.text(int(v), long=True) for v in values]
        return " (Polaris) and ".join(text) + " (Fugaku)"

    rises, falls = trend(calibrated, "radix_rises_upto"), trend(calibrated, "radix_falls_above")
    neither = all(v == 0 for v in rises + trend(uncalibrated, "radix_rises_upto")) and \
        all(v == math.inf for v in falls + trend(uncalibrated, "radix_falls_above"))
    smallest = ("no block size up to 64 KiB at which the smallest radix is best" if all(v == 0 for v in rises)
                else f"the smallest radix best up to {sizes(rises)}")
    largest = ("none at which the largest is" if all(v == math.inf for v in falls)
               else f"the largest best above {sizes(falls)}")
    return (
        f"**The radix trends** (seed 000, Fig. 7 at P = {nprocs}; \"consistent across all process counts\")"
        + (" are not reproduced, before calibration or after." if neither else ".")
        + " The seed measured TuNA's time rising with the radix for "
        "blocks up to 512 B (ideal r about 2) and falling with it above 8 KiB on Polaris and 32 KiB on "
        f"Fugaku (ideal r near P). The models find r = {polaris.ideal_radix(nprocs, size)} (Polaris) and "
        f"r = {fugaku.ideal_radix(nprocs, size)} (Fugaku) best at {size} B, {smallest}, and {largest}; "
        "the simulations agree where "
        "they ran (the check set's `how`; every radix at P = 2048 on calibrated Polaris: RESULTS.md §1). "
        "For r = 2 to be the best at 16 B, every round "
        f"of TuNA would have to cost {need['polaris']:.1f} us more on calibrated Polaris "
        f"({need['fugaku']:.0f} us on Fugaku; {before['polaris']:.1f} and {before['fugaku']:.1f} us before "
        "calibration), where the whole of an MPI message's latency on Slingshot is 1.5 to 2.5 us (De Sensi "
        "et al., SC20). The piece cost carries most of that: fitted to TuNA's time at its ideal radix in the "
        f"model it is {polaris.mech.copy_piece * 1e9:.1f} ns on Polaris; fitted at r = 2, the seed's ideal for "
        f"small blocks, it would be {at_two * 1e9:.1f} ns, and the model would then put r = {refit_radix} ahead "
        f"at P = {fit_p} ({refit_time * 1e3:.2f} ms, against the {published * 1e3:.2f} ms the seed gives for "
        f"the ideal radix) and still need {refit.round_cost_for_smallest_radix(nprocs, size) * 1e6:.1f} us more "
        f"per round at P = {nprocs}. So the seed's two statements together ask for a cost per round that "
        "neither its messages nor its copies carry here: a round waits for its slowest partner, and under "
        "system noise that wait grows with P, where a deterministic simulation has no noise at all. No "
        "source gives its size on these machines, so it is left out."
    )


def _barrier_spread_text(probe: pd.DataFrame, alone: pd.DataFrame) -> str:
    """How the measured times are timed against the simulated ones, and what the bench's own
    median holds besides: the ranks leave the barrier before each call apart (the probe's
    barrier_spread; older probes have none); beside it, what the predictions lack at the
    smallest block."""
    spread = probe.loc[probe["test"] == "barrier_spread", "seconds"]
    if not len(alone):
        return ""
    smallest = alone[alone["S"] == alone["S"].iloc[0]]
    size = units.text(units.parse(str(smallest["S"].iloc[0])), long=True)
    short = ", ".join(f"{(row['measured_us'] - row['predicted_us']) * 1e3:.0f} ns ({row['spec']})"
                      for _, row in smallest.iterrows())
    spread_ns = f"{spread.median() * 1e9:.0f} ns" if len(spread) else ""
    released = ("a real barrier releases its ranks a message apart and more as noise perturbs them (Hunold and "
                "Carpen-Amarie, IEEE TPDS 2016), a simulated one by its messages alone")
    if "slowest from own exit_us" in alone.columns:
        longer = ", ".join(f"{(row['slowest from own exit_us'] - row['measured_us']) * 1e3:.0f} ns ({row['spec']})"
                           for _, row in smallest.iterrows())
        return (" Each time, measured and simulated, runs from the last rank's exit from the barrier before the "
                "call to the last rank's end (tucoll-bench's from_last_exit_us: the ranks of one node read one "
                "clock). The bench's own median starts each rank's clock at its own exit and keeps the slowest "
                "rank's time, so it also holds how far apart the ranks left the barrier"
                + (f" (the first table's barrier exit spread: {spread_ns} here)" if spread_ns else "")
                + f": {released}. At {size} the measured median is longer by {longer}, and the predictions lack "
                f"{short}.")
    if not len(spread):
        return ""
    return (" The bench starts each rank's clock as the rank leaves MPI_Barrier and keeps the slowest rank's "
            f"time, so every measured call holds how far apart the ranks left the barrier: {spread_ns} here (the "
            f"first table's barrier exit spread), where {released}. At {size} the predictions lack {short}. It is "
            "reported, not charged: the ranks' spread comes from what perturbs them (noise), of which a "
            "deterministic simulation has none.")


def write_doc(fits: dict[str, dict[str, float]], held: pd.DataFrame, left: pd.DataFrame,
              validation: pd.DataFrame | None, gpu: tuple[pd.DataFrame, pd.DataFrame] | None = None) -> Path:
    check = held[held["set"] == "check"]
    # A trend the models show at no block size has no finite error: counted apart.
    shown = check["after / published"].map(lambda r: 0 < r < math.inf)
    error = check.loc[shown, "after / published"].map(lambda r: max(r, 1 / r))
    worst, within = check.loc[error.idxmax()], int((error <= 1.5).sum())
    calibrated = models(calibrated=True)
    trends = radix_trends(calibrated, models(calibrated=False))
    fugaku = calibrated["fugaku"]
    fugaku_vendor = fugaku.vendor(16384, 16384)
    # TuNA with the radix the model finds best at P = 16384, 16 KiB: every block through the
    # node's six TNIs of 6.8 GB/s (Ajima et al. 2018) once per non-zero digit of its index.
    _, fugaku_radix = fugaku.tuna(16384, 16384)
    fugaku_hops = sum(count for _, count in tuna_rounds(16384, fugaku_radix)) / 16384
    fugaku_tuna_floor = 16384 * fugaku_hops * Blocks.uniform(16384).mean * fugaku.ppn / (6 * 6.8e9)
    # Polaris with each round spread over non-minimal paths: vendor / TuNA at the seed's P, 1 and 4 KiB.
    polaris = calibrated["polaris"]
    adaptive = replace(polaris, mech=replace(polaris.mech, topology=replace(polaris.mech.topology, adaptive=True)))
    published = held.set_index("id")["published"]
    minimal, spread = ({size: m.vendor(CROSSOVER_NPROCS, size) / m.tuna(CROSSOVER_NPROCS, size)[0]
                        for size in (1024, 4096)} for m in (polaris, adaptive))
    parts = [
        "# Calibrated machines: the models held against the seeds' measurements",
        "",
        "Written by `tucoll calibrate --write` (the tables) from data/published/seeds.csv; do not edit by hand.",
        "",
        f"**Where it stands.** The fit set is reproduced by construction in the models (TuNA's simulated time at "
        "P = 8192, where the cache holds it, is held out). Of the check set's "
        f"{len(check)} points that the models reach, {within} are within 1.5x of the published value; "
        f"{int((~shown).sum())} are trends the models show at no block size (below); of the rest the "
        f"largest error is {worst['id']} ({worst['after']:.3g} against {worst['published']:.3g} "
        f"{worst['unit']}, {worst['after / published']:.2f}x). At the seeds' P (8192, 16384) the vendor's times "
        "come from its closed form (`vendor_time` in python/tucoll/calibrate/model.py: the simulator's "
        "mechanisms written out), and TuNA's from simulation where the cache holds a run of this model at "
        "that P and its one-node model (`tuna_time`) elsewhere; each row says which. The one-node model runs TuNA's "
        "messages as the simulator runs them, event by event, on one node's ranks, which by symmetry stand "
        "for every node, beginning with the MPI_Allreduce of the largest block that sizes its buffer "
        "(recursive doubling, both simulated selections' choice for 8 bytes: log2 P steps of one message "
        "each way): each rank's overheads and copies one after another, its node's interface taking "
        "messages one at a time, a path's latency and the round's busiest link for a message between nodes; "
        "ranks do not wait for each other between rounds, so one rank's copies run while another's messages "
        "wait for the interface (summing rounds, every rank's worst, put it 1.0 to 1.55x above simulation). "
        "Both models take the seeds' blocks "
        "(sizes uniform from 0 to S: S / 2 on average, and an empty block is no range to copy) and route "
        "every message as SimGrid does (a dragonfly's router-to-router links, a torus' dimension order). "
        "The validation table below holds them against simulation where both run.",
        "",
        "**What the misses need.** On Polaris at 1 KiB the simulation agrees with the models (vendor / "
        "TuNA about 3 at P = 1024 and 2048, below): each of TuNA's rounds sends every rank of a node the same "
        "distance, and SimGrid's dragonfly routes minimally, so the 4 nodes of a router share one link to "
        "the next router; Slingshot routes adaptively over non-minimal paths, which the model lacks. "
        "Spreading the traffic this way does not meet both published points: with each round's flows split "
        "between their minimal and Valiant paths in the one share that loads the busiest link least "
        f"(`Topology(adaptive=True)` in the model), vendor / TuNA at P = {CROSSOVER_NPROCS} rises from "
        f"{minimal[1024]:.2f} to {spread[1024]:.2f} at 1 KiB (published: "
        f"{published['polaris_p8192_1KiB_vendor_over_tuna']:.3g}), but also from "
        f"{minimal[4096]:.2f} to {spread[4096]:.2f} at 4 KiB, where the published crossover "
        f"({published['polaris_uniform_tuna_beats_vendor_upto'] / 1024:.0f} KiB) has the vendor ahead. "
        "On "
        f"Fugaku at P = 16384 and 16 KiB the calibrated vendor takes {fugaku_vendor:.2f} s (the matching fitted "
        "at 16 B: P^2 / 4 entries walked); 9.69x faster would be "
        f"{fugaku_vendor / 9.69 * 1e3:.0f} ms for TuNA, less than its bytes alone take at the six TNIs' "
        f"40.8 GB/s per node (Ajima et al. 2018) with the radix the model finds best, r = {fugaku_radix}, "
        f"which moves each block {fugaku_hops:.2f} times: {fugaku_tuna_floor * 1e3:.0f} ms. So the real vendor there "
        "pays more per "
        "message than at 16 B (Open MPI's rendezvous above "
        "its eager limit is a candidate), and the real TuNA gets more than the one 6.8 GB/s link that "
        "dimension-order routing gives each round's shift here; neither has a source to set it from yet.",
        "",
        trends,
        "",
        "## The mechanisms and their parameters",
        "",
        "Three mechanisms apply to every algorithm alike: a receiving MPI's matching cost per queue entry "
        "it walks (sim/simgrid-patches/match-cost.patch), a network interface's time per message, shared "
        "by its node's ranks (sim/simgrid-patches/nic-gap.patch), and a time per contiguous piece that a "
        "local copy or an MPI's datatype engine handles (`copy_piece`, charged by the library's simulated "
        "layer, src/platform/smpi.cpp: every memcpy, and every range of a message of several ranges on "
        "each side). The fit set holds one vendor time and one TuNA time per machine: the vendor's pins "
        "one per-message mechanism, TuNA's the piece cost (the vendor's messages are contiguous, so its "
        "time cannot); the rest comes from the machine's documentation or is left out, as said. Links, "
        "latencies and per-message CPU overheads are the base platforms', with the sources their files "
        "give. Two more are set only where `--here` measures them (below): what the MPI spends in each "
        "collective call besides its messages (sim/simgrid-patches/coll-call-cost.patch), which neither "
        "seed gives and which at their P, a microsecond or so a call, is nothing beside milliseconds; and "
        "the MPI's own copy of a rank's block to itself, which tucoll's copies pay and SMPI's do not "
        "(sim/simgrid-patches/smpi-local-copies-on-host.patch): one block in P, under 1 % of the bytes "
        "at the seeds' P. The calibrated platforms are `polaris-calibrated` and `fugaku-calibrated` "
        "(sim/platforms/calibrated/), for `tucoll sim --platform`.",
        "",
        _markdown(parameters_table(fits)),
        "",
        "## Fit set and check set",
        "",
        "*before*: the same models on the uncalibrated platforms (polaris-like, fugaku-like: the "
        "mechanisms 0, one adapter) at 32 ranks per node; *after*: on the calibrated ones. A crossover is "
        "the largest block size (powers of two, 16 B to 64 KiB) up to which TuNA with its ideal radix is "
        "ahead.",
        "",
    ]
    for name in ("fit", "check"):
        frame = held[held["set"] == name].drop(columns=["set"])
        parts += [f"### {name.capitalize()} set", "", _markdown(frame), ""]
    ratios = ratio_by_p(SimCache(CACHE) if CACHE.is_file() else None)
    parts += ["### vendor / TuNA by P, calibrated", "",
              "TuNA with its ideal radix: of the powers of two below P in the models; of the radices simulated where the cache "
              "holds simulations of this model (the validation table below lists them, and polaris' r = 16 at "
              "P = 8192, 16 B), the vendor then simulated where it was and in its closed form elsewhere.", "",
              _markdown(ratios.astype(object).where(ratios.notna(), "")), ""]
    reasons = left.groupby(["set", "why"]).size().reset_index(name="rows")
    parts += ["### Not held against the model here", "", _markdown(reasons), ""]
    if validation is not None and len(validation):
        parts += [
            "## The models against simulation",
            "",
            "Uniform alltoallv on the calibrated platforms at 32 ranks per node, simulated with SimGrid (one "
            "iteration, deterministic) where the vendor's P^2 messages still simulate in minutes, against the "
            f"models. Largest error: {validation['model / simulated'].max():.2f}x over, "
            f"{validation['model / simulated'].min():.2f}x under. TuNA's opening MPI_Allreduce is in the "
            "one-node model: without it the model lay 0.80x under at P = 256, 16 B, where a reduction of a few "
            "bytes takes about 30 us simulated (the sweeps' `auto_reduction_us`). Over at 1 KiB: the model loads "
            "a round's busiest link with every node's flows at once, while in the simulation the ranks have "
            "drifted apart in time. Cached in "
            f"{CACHE.relative_to(REPO_ROOT)} under the simulated machine's fingerprint (platform file, its entry's "
            "model fields and the SimGrid patches: sim.Platform.fingerprint) with the library sources each was "
            "simulated with (`sources`: the current ones or earlier); "
            "`tucoll calibrate --validate` simulates what the cache lacks or holds from earlier sources, in "
            "parallel on a Dask cluster (local workers, or `--scheduler tcp://host:port`).",
            "",
            _markdown(validation, floats=".4g"),
            "",
        ]
    if gpu is not None:
        parts += gpu_section(*gpu)
    parts += ["Command: `.venv/bin/tucoll calibrate --validate --write`.", ""]
    fit_rows, prediction = HERE_DOCS / "here-fit.csv", HERE_DOCS / "here-prediction.csv"
    pieces = HERE_DOCS / "here-pieces.csv"
    if fit_rows.is_file() and prediction.is_file():
        table = pd.read_csv(prediction)
        predicted = table[table["role"] == "predicted"]
        over = table[table["oversubscribed"]]["P"]
        probe = pd.read_csv(prediction.with_name("here-probe.csv"))
        rounds = int(probe.get("round", pd.Series([1])).max())
        alone = table[(table["role"] == "fit range") & ~table["oversubscribed"]]
        small = alone[alone["S"] != alone["S"].iloc[-1]]["predicted / measured"] if len(alone) else pd.Series([], dtype=float)
        large = alone[alone["S"] == alone["S"].iloc[-1]]["predicted / measured"] if len(alone) else pd.Series([], dtype=float)
        reproduced = ""
        # What the platform sets, as SimGrid reads it (an older here.json sets neither option).
        options = sim.Platform.load(str(HERE_DOCS / "here.json")).options() if (HERE_DOCS / "here.json").is_file() else {}
        coll_call, host_copy = "smpi/coll-call-cost" in options, "smpi/host-copy-bw" in options
        piece_table = pd.read_csv(pieces, dtype={"ping-pong at": str}) if pieces.is_file() else pd.DataFrame()
        if "simulated / measured" in piece_table.columns:
            sent = piece_table[piece_table["ping-pong at"] != "0"]
            ratio = sent["simulated / measured"].dropna()
            if len(ratio):
                smallest = units.text(units.parse(sent["ping-pong at"].iloc[0]), long=True)
                reproduced = (f"Simulated on the platform, the probe's ping-pong takes {ratio.min():.2f} to "
                              f"{ratio.max():.2f} of the measured time at each size from {smallest} "
                              "(the second table; an empty message SimGrid charges no overheads)"
                              + (", so what falls short at small blocks is not in the point-to-point times the "
                                 "probe measured." if len(small) and small.max() < 0.9 and ratio.min() >= 0.9
                                 else "."))
        fit_range = (f"Where nothing is oversubscribed, at P = {alone['P'].min()}, blocks below {alone['S'].iloc[-1]} "
                     f"are predicted at {small.min():.2f} to {small.max():.2f} of their time, and "
                     f"{alone['S'].iloc[-1]} at {large.min():.2f} to {large.max():.2f}. " + reproduced
                     + _barrier_spread_text(probe, alone) if len(small) else "")
        oversubscribed = (f"From P = {over.min()} the machine was oversubscribed (more ranks than cores), so "
                          "its measured times there are the scheduler's as much as the MPI's, which no network "
                          "model holds." if len(over) else "No P was oversubscribed.")
        parts += [
            "## This machine: fitted at P = 2, predicted at larger P",
            "",
            "`tucoll calibrate --here` fits the same mechanisms from microbenchmarks with the real MPI on two "
            "ranks (`tucoll-bench machine`), writes them as a one-node platform file, simulates uniform "
            "alltoallv on it and measures the same runs with the real MPI (interleaved, median of 20). Probe and "
            f"measurement alternate in {rounds} rounds, since this VM's speed drifts by factors from hour to hour; "
            "the fit is made on the median of the rounds' probes, each round is fitted alone for the spread "
            "(least to most, below), and each measured time is the median of its rounds, with the most over the "
            "least of them beside it. Besides the network's mechanisms the platform charges what a tucoll call "
            "costs before its exchange (`call_cost`: the simulator samples no host computation)"
            + (", what the MPI spends in each call of its own collectives besides their messages "
               "(`smpi/coll-call-cost`, sim/simgrid-patches/coll-call-cost.patch)" if coll_call else "")
            + (", the MPI's own local copies (its block to itself) as tucoll's are charged, at the copy "
               "bandwidth and piece cost measured (`smpi/host-copy-bw`, sim/simgrid-patches/"
               "smpi-local-copies-on-host.patch)" if host_copy else "")
            + (", and a message's time by size is the ping-pong's, piece by piece between the probed sizes "
               "(`smpi/lat-factor`, `smpi/bw-factor`: the second table; the way SMPI is calibrated, Degomme et "
               "al., IEEE TPDS 2017), so that the MPI's eager copies and its rendezvous each cost what they "
               "measured. The ping-pong sends from one buffer and receives into another, as osu_latency does: "
               "a buffer sent back as received has its lines dirty in the other core's cache, which an "
               "alltoallv's send buffer has not. " if len(piece_table) else ". ")
            + f"Predicted at P = {', '.join(map(str, HERE_NPROCS_PREDICT))}: predicted / measured from "
            f"{predicted['predicted / measured'].min():.3g} to {predicted['predicted / measured'].max():.3g}. "
            + oversubscribed + " " + fit_range,
            "",
            _markdown(pd.read_csv(fit_rows)),
            "",
            *(["Point to point, piece by piece: the ping-pong's one-way time at each probed size (made "
               "non-decreasing in size), the same probe simulated on the platform, the bandwidth from it to the "
               "next, and the factors the platform holds them in.", "", _markdown(piece_table), ""]
              if len(piece_table) else []),
            _markdown(table, floats=".4g"),
            "",
            "Command: `.venv/bin/tucoll calibrate --here --out docs/calibration/here.json` (writes the platform "
            "file and these tables).",
            "",
        ]
    DOC.write_text("\n".join(parts))
    return DOC
