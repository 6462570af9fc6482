"""`tucoll calibrate`: the fit, the calibrated platforms, the closed forms and the simulator's
network-interface mechanism (sim/simgrid-patches/nic-gap.patch)."""

import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import fields, replace
from pathlib import Path

import pytest

from tucoll import calibrate, sim

pytestmark = pytest.mark.mpi_free  # see conftest.py

SIM_BUILD = Path(os.environ.get("TUCOLL_SIM_BUILD_DIR", Path(__file__).resolve().parents[2] / "build-sim"))
needs_simgrid = pytest.mark.skipif(not (SIM_BUILD / "build-info.json").is_file(),
                                   reason="no SimGrid build (make sim-build)")


def test_the_fit_reproduces_the_fit_sets_times_and_nothing_is_fitted_on_the_check_set():
    held, _ = calibrate.calibration_table()
    fitted = held[held["set"] == "fit"]
    assert len(fitted) == 4  # vendor and TuNA on both machines
    # The vendor's from its closed form, TuNA's from its one-node model; a simulation of TuNA at
    # P = 8192, where cached, is held out.
    closed = fitted[fitted["how"].str.startswith("closed form")]
    stepped = fitted[fitted["how"].str.startswith("one-node model")]
    assert len(closed) == 2 and len(closed) + len(stepped) >= 3
    assert closed["after / published"].tolist() == pytest.approx([1.0] * len(closed), rel=1e-6)
    # The one-node model runs events, so its time steps where two events trade places; a fitted
    # value can sit on such a step, and the platform's 9 digits land on either side of it.
    assert stepped["after / published"].tolist() == pytest.approx([1.0] * len(stepped), rel=1e-3)
    # Seed 000's radix trends (Fig. 7) are held at its P, each from the models.
    trends = held[held["id"].str.contains("radix")]
    assert len(trends) == 6 and (trends["P"] == "2048").all()
    assert trends["how"].str.startswith("one-node model at P = 2048").all()
    # Changing a check-set value moves no parameter.
    table = calibrate.seeds()
    moved = table.copy()
    moved.loc[moved["set"] == "check", "value"] = "1"
    assert calibrate.fit(moved) == calibrate.fit(table)


def test_the_shipped_calibrated_platforms_hold_the_fit():
    # A change to the seeds' file or to the closed forms needs `tucoll calibrate --write`.
    fits = calibrate.fit()
    for machine in calibrate.MACHINE_LIST:
        platform = sim.Platform.load(machine.calibrated)
        props = {p.get("id"): p.get("value") for p in ET.parse(platform.file).getroot().iter("prop")}
        values = fits[machine.name]
        for name in calibrate.SIMGRID_OPTIONS:
            assert float(props[calibrate.OPTIONS[name]]) == pytest.approx(values[name], rel=1e-5), (machine.name, name)
        assert platform.copy_piece == pytest.approx(values["copy_piece"], rel=1e-5)
        base = calibrate.Mechanisms.of(sim.Platform.load(machine.base))
        calibrated = calibrate.Mechanisms.of(platform)
        assert calibrated.link_bandwidth == pytest.approx(base.link_bandwidth * values.get("adapters", 1.0))
        if "torus" in values:
            assert calibrated.topology == calibrate.Topology("TORUS", values["torus"])
            assert len(platform.hosts) == math.prod(values["torus"])
        else:
            assert calibrated.topology == base.topology
        assert platform.ranks_per_node == 32
        assert machine.calibrated in sim.platform_names()


def test_every_parameter_has_a_source_and_the_tuna_time_pins_only_the_piece_cost():
    for machine in calibrate.MACHINE_LIST:
        assert all(p.source for p in machine.parameters)
        assert machine.by_tuna.name == "copy_piece" and machine.by_tuna.value is None
    # Moving a fit-set TuNA time moves the piece cost alone.
    table = calibrate.seeds()
    moved = table.copy()
    moved.loc[(moved["set"] == "fit") & (moved["algorithms"] == "tuna"), "value"] = \
        moved.loc[(moved["set"] == "fit") & (moved["algorithms"] == "tuna"), "value"].astype(float).mul(1.2).astype(str)
    before, after = calibrate.fit(table), calibrate.fit(moved)
    for name in before:
        assert after[name]["copy_piece"] > before[name]["copy_piece"]
        assert {k: v for k, v in after[name].items() if k != "copy_piece"} == \
            {k: v for k, v in before[name].items() if k != "copy_piece"}


def test_radix_trends_read_the_ideal_radix_by_block_size():
    polaris = calibrate.models(calibrated=True)["polaris"]
    radices = calibrate.ideal_radices(64)  # 2 .. 32

    def model_with(ideal: dict[int, int]) -> calibrate.Model:
        class Stub(calibrate.Model):
            def ideal_radix(self, nprocs, size):
                return ideal[size]
        return Stub(**{f.name: getattr(polaris, f.name) for f in fields(polaris)})

    sizes = calibrate.CROSSOVER_SIZES
    rising = model_with({s: radices[0] if s <= 512 else (8 if s < 16384 else radices[-1]) for s in sizes})
    assert rising.radix_trend(64, "radix_rises_upto") == 512
    assert rising.radix_trend(64, "radix_falls_above") == 8192
    flat = model_with({s: 8 for s in sizes})
    assert flat.radix_trend(64, "radix_rises_upto") == 0
    assert flat.radix_trend(64, "radix_falls_above") == math.inf
    largest = model_with({s: radices[-1] for s in sizes})
    assert largest.radix_trend(64, "radix_falls_above") == 0


def test_the_round_cost_that_makes_the_smallest_radix_best():
    polaris = calibrate.models(calibrated=True)["polaris"]
    nprocs, blocks = 1024, calibrate.Blocks.uniform(16)
    radices = calibrate.ideal_radices(nprocs)
    extra = polaris.round_cost_for_smallest_radix(nprocs, 16)
    assert extra > 0

    def with_rounds(radix: int, cost: float) -> float:
        return calibrate.tuna_time(polaris.mech, nprocs, 32, blocks, radix) + \
            len(calibrate.tuna_rounds(nprocs, radix)) * cost

    # With that much more per round, r = 2 is the best; with a little less, it is not.
    assert min(radices, key=lambda r: (with_rounds(r, extra * 1.0001), r)) == 2
    assert min(radices, key=lambda r: (with_rounds(r, extra * 0.99), r)) != 2


def test_shift_loads():
    torus = calibrate.Topology("TORUS", (8, 8, 8))
    assert torus.shift_load(512, 1) == 1 and torus.shift_load(512, 3) == 3 and torus.shift_load(512, 6) == 2
    assert torus.shift_load(512, 8 * 4) == 4  # 4 steps along the second dimension
    assert torus.shift_load(512, 0) == 0
    # A ring of two has one link between its nodes (as Tofu-D's A and C axes): both ways use it.
    pair = calibrate.Topology("TORUS", (2,))
    assert pair.route(0, 1)[0][0][:2] == pair.route(1, 0)[0][0][:2] and pair.shift_load(2, 1) == 1
    # Every node to every other on a ring of 8: the busiest link carries 1 + 2 + 3 + 4 flows
    # (the ties, 4 steps, go one way).
    assert calibrate.Topology("TORUS", (8,)).exchange_load(8) == 10
    # polaris-like: 4 nodes per router, 4 routers per chassis (one link per pair), 4 chassis per
    # group (two links per pair of routers at the same place), 4 groups (21 links per pair, spread
    # over a group's 16 routers). A shift by a router's nodes puts all 4 on one link within the
    # chassis, by a chassis' nodes on two links, by a group's on a global link of 21 / 16.
    fly = calibrate.Mechanisms.of(sim.Platform.load("polaris-like")).topology
    assert fly.kind == "DRAGONFLY" and fly.params == (4, 21, 4, 2, 4, 1, 4)
    assert fly.shift_load(64, 1) == 1 and fly.shift_load(64, 4) == 4 and fly.shift_load(64, 16) == 2
    assert fly.shift_load(256, 64) == pytest.approx(4 * 16 / 21)
    assert calibrate.Topology("FLAT", ()).exchange_load(10) == 9  # the node's own link
    # Routing that adapts to load spreads a shift over Valiant's paths: a router's 4 nodes to the
    # next router halve their busiest link (a node's own link still carries its flow), while the
    # exchange of every node with every other, which minimal routing already balances, keeps it.
    spread = replace(fly, adaptive=True)
    assert spread.shift_load(64, 1) == 1 and spread.shift_load(64, 4) == pytest.approx(2)
    for shift in (16, 17, 48):
        assert 1 <= spread.shift_load(64, shift) < fly.shift_load(64, shift)
    assert spread.exchange_load(64) == fly.exchange_load(64)
    with pytest.raises(ValueError, match="dragonfly"):
        replace(torus, adaptive=True).shift_load(512, 1)


def test_the_closed_forms_take_the_seeds_uniform_blocks():
    # Seed 000, V-A: sizes uniform from 0 to S, S / 2 on average; an empty block is no range.
    blocks = calibrate.Blocks.uniform(16)
    assert blocks.mean == 8 and blocks.nonempty == pytest.approx(16 / 17)
    m = calibrate.Mechanisms.of(sim.Platform.load("polaris-calibrated"))
    assert calibrate.tuna_time(m, 256, 32, calibrate.Blocks(1024), 4) > \
        calibrate.tuna_time(m, 256, 32, calibrate.Blocks.uniform(1024), 4)


def test_tunas_one_node_model_adds_up_a_rank_alone_and_overlaps_ranks_across_the_interface():
    from dataclasses import fields, replace
    m = calibrate.Mechanisms.of(sim.Platform.load("polaris-calibrated"))
    blocks = calibrate.Blocks.uniform(16)
    # One node: every rank's phases run alike, each its overheads, copies and the loopback.
    phases = calibrate.tuna_phases(m, 32, 32, blocks, 4)
    alone = sum(2 * p.copy + m.isend + p.size * (m.isend_per_byte + m.recv_per_byte) + m.loopback_latency +
                p.size / m.loopback_bandwidth + m.recv + m.match_cost for p in phases)
    assert calibrate.tuna_time(m, 32, 32, blocks, 4) == pytest.approx(alone, rel=1e-9)
    # Many nodes: never less than a rank's own work; the interface's turns run while other ranks
    # copy, so a piece cost that doubles a rank's copies adds less than that to the time.
    assert calibrate.tuna_time(m, 1024, 32, blocks, 16) > calibrate.tuna_lower_bound(m, 1024, 32, blocks, 16)
    copies = sum(2 * p.copy for p in calibrate.tuna_phases(m, 1024, 32, blocks, 16))
    doubled = replace(m, copy_piece=2 * m.copy_piece)
    copies_doubled = sum(2 * p.copy for p in calibrate.tuna_phases(doubled, 1024, 32, blocks, 16))
    assert calibrate.tuna_time(doubled, 1024, 32, blocks, 16) - calibrate.tuna_time(m, 1024, 32, blocks, 16) < \
        copies_doubled - copies
    # The best radix skips radices whose rank alone is slower than the best found.
    best, radix = calibrate.best_tuna(m, 1024, 32, blocks, (2, 4, 8, 16, 32, 64, 128, 256, 512))
    assert best == min(calibrate.tuna_time(m, 1024, 32, blocks, r) for r in (2, 4, 8, 16, 32, 64, 128, 256, 512))


def test_tunas_one_node_model_opens_with_the_allreduce_of_its_largest_block():
    # Recursive doubling: log2 P partners; P not a power of two folds in and out (distance 1).
    assert calibrate.allreduce_steps(256) == (1, 2, 4, 8, 16, 32, 64, 128)
    assert calibrate.allreduce_steps(6) == (1, 1, 2, 1)
    assert calibrate.allreduce_steps(2) == (1,)
    m = calibrate.Mechanisms.of(sim.Platform.load("polaris-calibrated"))
    blocks = calibrate.Blocks.uniform(16)
    phases = calibrate.tuna_phases(m, 256, 32, blocks, 4)
    assert [(p.distance, p.size, p.paired) for p in phases[:8]] == [(2 ** k, 8.0, True) for k in range(8)]
    assert not any(p.paired for p in phases[8:])
    # Every block direct (radix >= P - 1): no buffer to size, no reduction.
    assert not any(p.paired for p in calibrate.tuna_phases(m, 256, 32, blocks, 255))
    # On one node each step is one message each way over the loopback.
    step = m.isend + m.recv + 8 * (m.isend_per_byte + m.recv_per_byte) + m.loopback_latency + \
        8 / m.loopback_bandwidth + m.match_cost
    assert calibrate.allreduce_time(m, 32, 32) == pytest.approx(5 * step, rel=1e-9)
    # Its steps between nodes (partners 32, 64, 128 away) wait for the interface, which takes the
    # 32 ranks' messages one after another, out and in: at least 2 x 32 gaps each.
    assert calibrate.allreduce_time(m, 256, 32) > 3 * 2 * 32 * m.nic_gap + 5 * step
    assert calibrate.tuna_time(m, 256, 32, blocks, 4) > calibrate.allreduce_time(m, 256, 32)


def test_the_models_stay_near_the_simulations_the_cache_holds():
    # docs/calibration/simulated.csv: the validation points simulated on the shipped platforms.
    cache = calibrate.SimCache(calibrate.CACHE)
    results = {p: t for p in calibrate.validation_points() if (t := cache.get(p)) is not None}
    if not results:
        pytest.skip("no simulation of the shipped calibrated platforms cached")
    ratio = calibrate.validation_table(results)["model / simulated"]
    assert ratio.between(0.7, 1.35).all(), ratio.describe()


def test_tuna_rounds_move_every_block_once_per_nonzero_digit():
    for nprocs, radix in ((8, 2), (27, 3), (100, 4), (37, 5)):
        rounds = calibrate.tuna_rounds(nprocs, radix)
        moved = sum(blocks for _, blocks in rounds)
        digits = 0
        for i in range(nprocs):
            while i:
                digits += (i % radix) != 0
                i //= radix
        assert moved == digits


def test_calibrate_command_prints_both_sets(capsys):
    # In this process rather than a new one: the one-node model's times (model.tuna_time, cached
    # per process) are those the first test's table took a minute to run, event by event, in Python.
    from tucoll.cli import parser
    args = parser().parse_args(["calibrate"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "fit set" in out and "check set" in out
    assert "polaris_p8192_16B_vendor_time" in out and "smpi/nic-gap" in out


@needs_simgrid
def test_the_interface_gap_charges_messages_between_nodes_as_the_closed_form_says(tmp_path):
    def vendor_us(props: dict, nprocs: int) -> float:
        platform = sim.derived_platform("polaris-like", props, tmp_path / f"p{len(props)}-{nprocs}.json")
        point = calibrate.SimPoint(str(platform), nprocs, 32, 16, "vendor")
        return calibrate.simulate_point(point, str(SIM_BUILD)) * 1e6, platform

    gap = 2e-7
    # One node: nothing crosses an interface, nothing changes.
    alone, _ = vendor_us({}, 32)
    assert vendor_us({"smpi/nic-gap": gap}, 32)[0] == pytest.approx(alone, rel=1e-9)
    # Four nodes: each interface takes 2 x 32 x 96 messages one after another, which dominates.
    charged, path = vendor_us({"smpi/nic-gap": gap}, 128)
    assert charged == pytest.approx(2 * 32 * 96 * gap * 1e6, rel=0.05)
    closed = calibrate.closed_form(calibrate.SimPoint(str(path), 128, 32, 16, "vendor")) * 1e6
    assert closed == pytest.approx(charged, rel=0.05)


@needs_simgrid
def test_the_piece_cost_charges_the_ranges_of_tunas_rounds_as_the_closed_form_says(tmp_path):
    def tuna(copy_piece: float) -> tuple[float, float]:
        path = sim.derived_platform("polaris-like", {}, tmp_path / f"piece-{copy_piece}.json", copy_piece=copy_piece)
        point = calibrate.SimPoint(str(path), 16, 32, 16, "tuna:radix=2")
        return calibrate.simulate_point(point, str(SIM_BUILD)), calibrate.closed_form(point)

    piece = 1e-6  # far above everything else a 16-byte round costs on one node
    (simulated0, closed0), (simulated, closed) = tuna(0.0), tuna(piece)
    # Four rounds of eight blocks, each a range on both sides unless empty (1 in 17 of sizes 0 to
    # 16): 60.2 pieces in closed form; the simulation draws its sizes, and adds TuNA's few local
    # copies (its own block, blocks moved within the buffers).
    assert closed - closed0 == pytest.approx(64 * 16 / 17 * piece, rel=1e-6)
    assert 0.85 * 64 * piece <= simulated - simulated0 <= 1.25 * 64 * piece


@needs_simgrid
def test_simulations_run_on_a_dask_scheduler_and_workers_on_the_loopback(tmp_path, dask_scheduler):
    points = [calibrate.SimPoint("polaris-calibrated", n, 4, 16, spec)
              for n in (8, 16) for spec in ("vendor", "tuna:radix=2")]
    cache = calibrate.SimCache(tmp_path / "simulated.csv")
    first = calibrate.run_points(points, cache, scheduler=dask_scheduler, build_dir=str(SIM_BUILD), log=lambda _: None)
    assert set(first) == set(points) and all(t > 0 for t in first.values())
    # Cached under the model's fingerprint: a second report simulates nothing.
    again = calibrate.run_points(points, calibrate.SimCache(tmp_path / "simulated.csv"), scheduler="unused",
                                 log=lambda _: None)
    assert again == first


PROBE_SIZES = (0, 16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 262144, 1048576)


def pingpong_time(b: int) -> float:
    """The made-up MPI of probe_rows: an empty message in 0.8 us; eager copies up to 2 KiB at 1 us +
    2 ns/B; a rendezvous from 4 KiB at 3 us + 1 ns/B."""
    return 8e-7 if b == 0 else 1e-6 + 2e-9 * b if b <= 2048 else 3e-6 + 1e-9 * b


def probe_rows(overhead: float = 1e-7, sizes=PROBE_SIZES) -> str:
    """A two-rank probe as tucoll-bench machine prints it: the ping-pong of pingpong_time, `overhead`
    per message outstanding, 5 ns per queue entry walked, memcpy at 20 GB/s in cache (1 MiB) and
    10 GB/s beyond it (64 MiB), 3 ns per block copied beside its bytes, a tucoll call 200 ns more
    than the MPI's own, the MPI's alltoallv of 1-byte blocks on the two ranks in 3 us a call, and the
    ranks leaving the barrier 200 ns apart."""
    rows = ["test,bytes,count,seconds"]
    rows += [f"pingpong,{b},1,{pingpong_time(b):.9g}" for b in sizes]
    for w in (1, 16, 64, 256, 1024):
        rows.append(f"burst,8,{w},{2e-6 + w * overhead:.9g}")
        rows.append(f"burst_reversed,8,{w},{2e-6 + w * overhead + 5e-9 * w * (w - 1) / 2:.9g}")
    rows.append(f"copy,{1 << 20},1,{(1 << 20) / 2e10:.9g}")
    rows.append(f"copy,{64 << 20},1,{(64 << 20) / 1e10:.9g}")
    rows.append(f"copy_pieces,8,4096,{4096 * (3e-9 + 8 / 2e10):.9g}")
    rows += ["call_mpi,16,1,3e-08", "call_tucoll,16,1,2.3e-07", "alltoallv_mpi,1,2,3e-06", "barrier_spread,0,2,2e-07"]
    return "\n".join(rows) + "\n"


def test_here_fit_recovers_the_mechanisms_of_a_probe():
    import io

    import pandas as pd

    fit = calibrate.fit_here(pd.read_csv(io.StringIO(probe_rows())), cores=16)
    assert fit.overhead == pytest.approx(1e-7, rel=1e-6)
    assert fit.match_cost == pytest.approx(5e-9, rel=1e-6)
    assert fit.latency == pytest.approx(8e-7 - 2e-7, rel=1e-6)  # the empty message, less two overheads
    assert fit.copy_bandwidth == pytest.approx(2e10, rel=1e-6)  # the copy in cache
    assert fit.call_cost == pytest.approx(2e-7, rel=1e-6)
    assert fit.copy_piece == pytest.approx(3e-9, rel=1e-6)
    # The MPI's collective call: what its alltoallv takes beyond the platform's simulation of it
    # (given here; simulated in the test below), written only where measured.
    assert fit.mpi_alltoallv == pytest.approx(3e-6) and fit.coll_call_cost == 0
    assert fit.with_coll_call_cost(1e-6).coll_call_cost == pytest.approx(2e-6)
    assert fit.with_coll_call_cost(5e-6).coll_call_cost == 0  # never below what is simulated
    # The ranks' spread leaving the barrier: reported beside the parameters, not one of them.
    assert fit.barrier_spread == pytest.approx(2e-7)
    assert "barrier exit spread (measured, not simulated)" in set(fit.rows()["parameter"])
    # A piece from each probed size, through its time: eager at 0.5 GB/s, the rendezvous at 1 GB/s,
    # the step between them in the piece from 2 KiB (2 KiB more in 2 us: the most, so the
    # platform's bandwidth, each piece's factor its own over it).
    assert [p.at for p in fit.pieces] == list(PROBE_SIZES)
    assert [p.time for p in fit.pieces] == pytest.approx([pingpong_time(b) for b in PROBE_SIZES], rel=1e-6)
    assert [p.bandwidth for p in fit.pieces[1:5]] == pytest.approx([5e8] * 4, rel=1e-6)
    assert [p.bandwidth for p in fit.pieces[6:]] == pytest.approx([1e9] * 7, rel=1e-6)
    assert fit.pieces[5].bandwidth == pytest.approx(1.024e9, rel=1e-6) == fit.bandwidth
    # Written at each piece's start less one (a factor holds above its size): eager messages at
    # (1 us - 2 overheads) / latency, the rendezvous at 2.8 / 0.6.
    lat_factor, bw_factor = (dict(kv.split(":") for kv in f.split(";")) for f in fit.factors())
    assert float(lat_factor["0"]) == pytest.approx(0.8 / 0.6, rel=1e-5) and float(bw_factor["0"]) == pytest.approx(0.5 / 1.024)
    assert float(lat_factor["4095"]) == pytest.approx(2.8 / 0.6, rel=1e-5) and float(bw_factor["4095"]) == pytest.approx(1 / 1.024)
    # A probe from before the call rows, the copy in cache and most ping-pong sizes: no call cost,
    # the copy of 64 MiB, a piece per size it has.
    older = pd.read_csv(io.StringIO(probe_rows(sizes=(0, 16, 1024, 16384, 262144, 1048576))))
    older = older[~older["test"].str.startswith("call") & ~((older["test"] == "copy") & (older["bytes"] == 1 << 20))
                  & ~older["test"].isin(["copy_pieces", "alltoallv_mpi", "barrier_spread"])]
    assert calibrate.fit_here(older, cores=16).call_cost == 0 == calibrate.fit_here(older, cores=16).copy_piece
    assert calibrate.fit_here(older, cores=16).barrier_spread == 0
    assert "barrier exit spread (measured, not simulated)" not in set(calibrate.fit_here(older, cores=16).rows()["parameter"])
    assert calibrate.fit_here(older, cores=16).with_coll_call_cost(1e-6).coll_call_cost == 0
    assert calibrate.fit_here(older, cores=16).copy_bandwidth == pytest.approx(1e10, rel=1e-6)
    # Its piece from 16 KiB to 256 KiB crosses 64 KiB, where SimGrid stops charging the overheads:
    # split there, the same line on both sides.
    pieces = calibrate.fit_here(older, cores=16).pieces
    assert [p.start for p in pieces] == [0, 1, 1024, 16384, 65536, 262144, 1048576]
    assert pieces[3].intercept() == pieces[4].intercept() and pieces[3].bandwidth == pieces[4].bandwidth
    lat_factor = dict(kv.split(":") for kv in calibrate.fit_here(older, cores=16).factors()[0].split(";"))
    assert float(lat_factor["65535"]) - float(lat_factor["16383"]) == pytest.approx(2e-7 / 6e-7, rel=1e-5)


def test_here_pieces_are_monotone_no_faster_than_a_copy_and_never_below_the_overheads():
    import io

    import pandas as pd

    probe = pd.read_csv(io.StringIO(probe_rows()))
    pingpong = probe["test"] == "pingpong"
    # Noise: 64 B faster than 16 B. Sizes that close differ by noise alone, so they share a time.
    noisy = probe.copy()
    noisy.loc[pingpong & (noisy["bytes"] == 64), "seconds"] = pingpong_time(16) - 1e-8
    fit = calibrate.fit_here(noisy, cores=16)
    assert all(a.time <= b.time for a, b in zip(fit.pieces, fit.pieces[1:]))
    assert fit.pieces[1].bandwidth == pytest.approx(2e10)  # no rise: as fast as a copy, no faster
    # Out of cache, 1 MiB at a third of the bandwidth: the line through 256 KiB and 1 MiB would
    # start below the overheads SimGrid charges (none to a rendezvous, from 64 KiB), so the piece
    # runs from them through its size's time instead.
    slow = probe.copy()
    slow.loc[pingpong & (slow["bytes"] == 1 << 20), "seconds"] = 3e-6 + 3e-9 * (1 << 20)
    piece = calibrate.fit_here(slow, cores=16).pieces[-2]
    assert piece.at == 262144 and piece.intercept() == pytest.approx(0, abs=1e-15)
    assert piece.time == pytest.approx(pingpong_time(262144), rel=1e-6)
    # An MPI whose messages in a burst cost more each (600 ns) than half a small message's
    # ping-pong (MPICH's ch4 here): the burst's rate is its nonblocking sends' (smpi/ois), the
    # blocking sends and receives (smpi/os, or) take what the shortest ping-pong holds beside 1 ns
    # of latency, so that every piece keeps its line through its size's time, no faster than a copy.
    costly = calibrate.fit_here(pd.read_csv(io.StringIO(probe_rows(overhead=6e-7))), cores=16)
    assert costly.overhead == pytest.approx(6e-7, rel=1e-6)
    assert costly.blocking_overhead == pytest.approx((8e-7 - 1e-9) / 2) and costly.latency == pytest.approx(1e-9)
    assert [p.bandwidth for p in costly.pieces[1:5]] == pytest.approx([5e8] * 4, rel=1e-6)
    assert max(p.bandwidth for p in costly.pieces) <= 2e10
    assert all(p.intercept() >= calibrate.here.charged_overheads(p.start, costly.blocking_overhead) - 1e-15
               for p in costly.pieces if p.at)
    # Where the ping-pong holds two of the burst's rate, all three are that rate.
    assert fit.blocking_overhead == fit.overhead


@needs_simgrid
def simulated_rows(platform, *bench_args: str):
    """`tucoll sim --platform PLATFORM --np 2 -- BENCH_ARGS`: the CSV rows tucoll-bench prints."""
    import io

    import pandas as pd

    proc = subprocess.run([sys.executable, "-m", "tucoll", "sim", "--platform", str(platform), "--np", "2",
                           "--no-check", "--build-dir", str(SIM_BUILD), "--", *bench_args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return pd.read_csv(io.StringIO("\n".join(l for l in proc.stdout.splitlines() if not l.startswith("#"))))


@pytest.mark.parametrize("overhead", [1e-7, 6e-7], ids=["cheap-messages", "costly-messages"])
def test_the_fitted_platform_reproduces_its_probes_point_to_point_times_in_simulation(tmp_path, overhead):
    import io

    import pandas as pd

    # costly-messages: a burst's messages cost each more than half a small message's ping-pong
    # (MPICH's ch4 on two cores): smpi/os and or are then less than smpi/ois.
    fit = calibrate.fit_here(pd.read_csv(io.StringIO(probe_rows(overhead=overhead))), cores=16)
    platform = calibrate.write_here_platform(fit, "openmpi", tmp_path / "made-up.json")
    assert "smpi/coll-call-cost" not in platform.with_suffix(".xml").read_text()
    # The MPI's own copies (its block to itself) at the copy the probe measured, as tucoll's are.
    assert '<prop id="smpi/host-copy-bw" value="2e+10"/>' in platform.with_suffix(".xml").read_text()

    def simulate():
        frame = simulated_rows(platform, "machine")
        return frame.groupby("test")["seconds"].first(), frame[frame["test"] == "pingpong"].set_index("bytes")["seconds"]

    tests, pingpong = simulate()
    # Every non-empty size within 5 % (SimGrid charges an empty message no overheads and the
    # first piece's latency factor: not held).
    for size in PROBE_SIZES[1:]:
        assert pingpong[size] == pytest.approx(pingpong_time(size), rel=0.05), size
    # And the burst's rate per message, its 16 to 256 messages' slope: the overhead and the posted
    # receive each arrival walks past to match (5 ns).
    frame = simulated_rows(platform, "machine")
    bursts = frame[frame["test"] == "burst"].set_index("count")["seconds"]
    assert (bursts[256] - bursts[16]) / 240 == pytest.approx(overhead + 5e-9, rel=0.03)
    # The MPI's collective-call cost (sim/simgrid-patches/coll-call-cost.patch) closes the gap
    # between the simulated alltoallv and the measured one: charged once per call.
    assert 0 < tests["alltoallv_mpi"] < 3e-6
    assert tests["barrier_spread"] == 0  # alike simulated ranks leave the barrier together
    fit = fit.with_coll_call_cost(tests["alltoallv_mpi"])
    platform = calibrate.write_here_platform(fit, "openmpi", tmp_path / "made-up.json")
    assert "smpi/coll-call-cost" in platform.with_suffix(".xml").read_text()
    tests_after, pingpong_after = simulate()
    assert tests_after["alltoallv_mpi"] == pytest.approx(3e-6, rel=0.01)
    assert pingpong_after.equals(pingpong)  # point to point: no collective, nothing charged


def test_the_mpis_own_block_to_itself_costs_what_tucolls_copies_cost(tmp_path):
    """sim/simgrid-patches/smpi-local-copies-on-host.patch: the vendor's copy of its own block,
    free in SMPI before, is charged at the platform's copy bandwidth and piece cost."""
    import io

    import pandas as pd

    fit = calibrate.fit_here(pd.read_csv(io.StringIO(probe_rows())), cores=16)
    platform = calibrate.write_here_platform(fit, "openmpi", tmp_path / "made-up.json")

    def vendor_time(element: str) -> float:  # fft2 at P = 2: rank 0 sends 1 MiB to each rank, rank 1 a quarter
        rows = simulated_rows(platform, "alltoallv", "--alg", "vendor", "--size", "1M", "--dist", "fft2", "--type",
                              element, "--format", "csv")
        return float(rows["median_us"].iloc[0]) * 1e-6

    charged = {element: vendor_time(element) for element in ("char", "vector")}
    xml = platform.with_suffix(".xml")
    xml.write_text("\n".join(l for l in xml.read_text().splitlines() if "smpi/host-copy" not in l) + "\n")
    free = {element: vendor_time(element) for element in ("char", "vector")}
    # Rank 0's copy of its 1 MiB to itself (a piece and its bytes at 20 GB/s) comes before its
    # exchange, which rank 1 (a quarter of that to copy) then waits for.
    assert charged["char"] - free["char"] == pytest.approx(3e-9 + 2 ** 20 / 2e10, rel=0.1)
    # A derived type's blocks, its own among them, are tucoll's layer's to charge (vendor.cpp's
    # charge_packing): not charged twice.
    assert charged["vector"] == pytest.approx(free["vector"], rel=1e-9)


def test_here_fits_the_median_of_its_rounds_and_reports_their_spread():
    import io

    import pandas as pd

    probe = pd.concat([pd.read_csv(io.StringIO(probe_rows(o))).assign(round=r)
                       for r, o in enumerate((1e-7, 3e-7, 2e-7), start=1)], ignore_index=True)
    fit = calibrate.fit_here(probe, cores=16)
    assert fit.overhead == pytest.approx(2e-7, rel=1e-6) and len(fit.rounds) == 3
    assert sorted(r.overhead for r in fit.rounds) == pytest.approx([1e-7, 2e-7, 3e-7], rel=1e-6)
    rows = fit.rows().set_index("parameter")
    assert rows.loc["smpi/ois", "3 rounds: least to most"] == "100 ns to 300 ns"
    assert rows.loc["smpi/ois", "value"] == "200 ns"
    assert rows.loc["smpi/os, or", "value"] == "200 ns"  # the ping-pongs hold two of each
    # The measurement: one row per point, the median of its rounds and their spread.
    measured = pd.DataFrame([{"collective": "alltoallv", "algorithm": "vendor", "params": "", "nprocs": 2,
                              "size": 16, "median_us": t, "round": r} for r, t in enumerate((1.0, 4.0, 2.0), start=1)])
    one = calibrate.median_of_rounds(measured)
    assert len(one) == 1 and one.iloc[0]["median_us"] == 2.0 and one.iloc[0]["rounds_spread"] == 4.0
    assert one.iloc[0]["params"] == "" and one.iloc[0]["measured_rounds"] == 3
    assert calibrate.compared_time(measured) == "median_us"  # an older bench, or ranks on several nodes
    # Timed from the last rank's barrier exit too (one node): that time is compared, its spread reported.
    from_last = measured.assign(from_last_exit_us=(0.5, 3.0, 1.0))
    assert calibrate.compared_time(from_last) == "from_last_exit_us"
    one = calibrate.median_of_rounds(from_last)
    assert one.iloc[0]["from_last_exit_us"] == 1.0 and one.iloc[0]["median_us"] == 2.0
    assert one.iloc[0]["rounds_spread"] == 6.0
    assert calibrate.compared_time(from_last.assign(from_last_exit_us=(0.5, None, 1.0))) == "median_us"
    # A round cut short (the machine's probe timed out part-way) is left out, and said so.
    cut = pd.concat([probe, pd.read_csv(io.StringIO(probe_rows(9e-7))).head(8).assign(round=4)], ignore_index=True)
    fit = calibrate.fit_here(cut, cores=16)
    assert fit.skipped == (4,) and len(fit.rounds) == 3 and fit.overhead == pytest.approx(2e-7, rel=1e-6)
    # Also one cut after every row the fit needs, before the optional ones (an older probe's
    # round would fit alone, but beside whole rounds it lacks what they have).
    late = pd.read_csv(io.StringIO(probe_rows(9e-7)))
    late = late[late["test"] != "alltoallv_mpi"].assign(round=4)
    assert calibrate.fit_here(pd.concat([probe, late], ignore_index=True), cores=16).skipped == (4,)


def test_here_refuses_what_it_cannot_fit(tmp_path):
    (tmp_path / "probe.csv").write_text(probe_rows())
    with_round = tmp_path / "rounds.csv"
    import pandas as pd

    pd.read_csv(tmp_path / "probe.csv").assign(round=1).to_csv(with_round, index=False)
    with pytest.raises(ValueError, match="not both"):
        calibrate.read_rounds([str(tmp_path / "probe.csv"), str(with_round)])

    def here(*args):
        return subprocess.run([sys.executable, "-m", "tucoll", "calibrate", "--here", "--out", str(tmp_path / "x.json"),
                               *args], capture_output=True, text=True, timeout=120)

    # Said before any build is looked for: back home there is often none.
    alone = here("--probe", str(tmp_path / "probe.csv"), "--mpi-build-dir", str(tmp_path / "no-build"))
    assert alone.returncode == 2 and "come together" in alone.stdout
    assert here("--rounds", "0").returncode == 2


@needs_simgrid
def test_here_from_another_machines_probe_and_measurements(tmp_path):
    # What scripts/gpu-check.sh brings back: the probe and tucoll-bench's rows, a file per round,
    # fitted and predicted here without an MPI build.
    header = "collective,algorithm,params,nprocs,ppn,dist,size,type,iters,median_us,min_us,max_us,rounds,messages," \
             "scratch_bytes,ok"
    probes, measured = [], []
    for r, scale in enumerate((1.0, 1.5), start=1):
        probes.append(tmp_path / f"probe.{r}.csv")
        probes[-1].write_text(probe_rows(1e-7 * scale))
        rows = [f"alltoallv,vendor,,{p},{p},uniform,16,char,20,{5.0 * p * scale},1,1,0,0,0,-" for p in (2, 8)]
        measured.append(tmp_path / f"measured.{r}.csv")
        measured[-1].write_text("\n".join([header, *rows]) + "\n")
    out = tmp_path / "there.json"
    proc = subprocess.run([sys.executable, "-m", "tucoll", "calibrate", "--here", "--probe", *map(str, probes),
                           "--measured", *map(str, measured), "--cores", "16", "--flavor", "mpich",
                           "--out", str(out), "--workers", "2", "--build-dir", str(SIM_BUILD)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    platform = sim.Platform.load(str(out))
    assert platform.vendor == "mpich" and platform.call_cost == pytest.approx(2e-7, rel=1e-6)
    assert platform.copy_piece == pytest.approx(3e-9, rel=1e-6)
    # The ping-pong's pieces: eager messages at half the bandwidth of the rendezvous.
    assert platform.options()["smpi/bw-factor"].startswith("0:0.488281;63:0.488281;255:0.488281;1023:0.488281;")
    import pandas as pd

    table = pd.read_csv(tmp_path / "there-prediction.csv")
    assert sorted(table["P"]) == [2, 8] and not table["oversubscribed"].any()
    assert (table["predicted_us"] > 0).all()
    assert table["rounds' spread"].tolist() == pytest.approx([1.5, 1.5])
    assert table["measured_us"].tolist() == pytest.approx([12.5, 50.0])  # the median of two: their mean
    assert "2 rounds: least to most" in pd.read_csv(tmp_path / "there-fit.csv").columns


def test_a_time_simulated_with_earlier_sources_is_used_and_labelled_but_not_current(tmp_path):
    cache = calibrate.SimCache(tmp_path / "simulated.csv")
    point = calibrate.SimPoint("polaris-calibrated", 256, 32, 16, "tuna:radix=2")
    cache.put(point, 1e-4)
    assert cache.get(point) == 1e-4 and cache.current(point)
    frame = cache.frame.assign(sources="an-older-one")  # as if simulated before a change to src/
    frame.to_csv(tmp_path / "simulated.csv", index=False)
    older = calibrate.SimCache(tmp_path / "simulated.csv")
    assert older.get(point) == 1e-4 and not older.current(point)
    assert older.points("polaris-calibrated") == [point]
    # A point simulated again is appended; the last row wins.
    older.put(point, 2e-4)
    again = calibrate.SimCache(tmp_path / "simulated.csv")
    assert again.get(point) == 2e-4 and again.current(point)
    # Another machine model (platform or patches) is another point altogether.
    assert calibrate.SimCache(tmp_path / "simulated.csv").get(
        calibrate.SimPoint("fugaku-calibrated", 256, 32, 16, "tuna:radix=2")) is None


def test_gpu_rows_are_held_against_simulated_alltoalls(tmp_path):
    # Seed 002's one-node rows from simulated MPI_Alltoall times: ratios, times, the time saved and
    # the kernel/memcpy crossover. Here the cache holds made-up times: kernel 30 us + 10 ps per
    # byte, memcpy 50 us + 5 ps per byte (equal at 4 MB), the MPI 3x and pairwise 2x ipc.
    table = calibrate.seeds()
    cache = calibrate.SimCache(tmp_path / "simulated.csv")
    ipc = {p.size: 20e-6 + p.size * 1e-11 for p in calibrate.gpu_points(table)}
    seconds = {"ipc:copy=kernel,ipc_threshold=0": lambda s: 30e-6 + s * 1e-11,
               "ipc:copy=memcpy,ipc_threshold=0": lambda s: 50e-6 + s * 5e-12,
               "vendor": lambda s: 3 * ipc[s], "pairwise": lambda s: 2 * ipc[s], "ipc": lambda s: ipc[s]}
    for point in calibrate.gpu_points(table):
        assert point.collective == "alltoall" and point.platform in ("thetagpu-like", "lassen-like")
        cache.put(point, seconds[point.spec](point.size))
    held, left = calibrate.gpu_table(table, cache)
    value = held.set_index("id")["simulated"]
    assert value["thetagpu_p8_8KiB_ompi_ucx_over_ipc"] == pytest.approx(3.0)
    assert value["thetagpu_p16_64KiB_ipc_saving"] == pytest.approx(50.0)
    assert value["thetagpu_p8_kernel_ipc_small_overhead"] == pytest.approx(30.0, rel=1e-3)
    assert value["thetagpu_p8_kernel_ipc_good_below"] == 2 << 20
    assert value["thetagpu_p8_memcpy_ipc_better_above"] == 4 << 20
    assert value["lassen_p64_4KiB_ipc_time"] == pytest.approx((20e-6 + 4096e-11) * 1e6)
    assert set(held["set"]) == {"check"}  # nothing of the GPU machines is fitted
    reasons = set(left["why"])
    assert "not simulated yet: tucoll calibrate --validate" not in reasons
    assert any("another library" in r for r in reasons)
    # The CPU machines' table leaves the GPU rows to this one.
    _, cpu_left = calibrate.calibration_table(table)
    assert not cpu_left["id"].isin(held["id"]).any()


def test_piecewise_costs_are_read_as_simgrid_reads_them():
    # smpi/os's format, as FactorSet: a size on a piece's start belongs to the piece before, below
    # the first piece costs nothing; the device copy adds its full pieces and the rest.
    from tucoll.calibrate.model import device_copy, piecewise

    device_os = "0:0:0;256:7.1e-7:1.69e-9;8192:2.3e-6:0"
    assert piecewise(device_os, 0) == 0.0 and piecewise(device_os, 256) == 0.0
    assert piecewise(device_os, 8192) == pytest.approx(7.1e-7 + 1.69e-9 * 8192)
    assert piecewise(device_os, 8193) == pytest.approx(2.3e-6)
    assert piecewise("3e-6", 1 << 20) == 3e-6
    copy = {"smpi/device-copy": "0:1e-5:1e-10", "smpi/device-copy-piece": "131072"}
    pieces, seconds = device_copy(copy, 300 * 1024)
    assert pieces == 3 and seconds == pytest.approx(3e-5 + 300 * 1024 * 1e-10)
    pieces, seconds = device_copy({**copy, "smpi/device-copy-piece": "0"}, 300 * 1024)
    assert pieces == 1 and seconds == pytest.approx(1e-5 + 300 * 1024 * 1e-10)
    assert device_copy({}, 1 << 20) == (0, 0.0)

