"""`tucoll figure`: the store's keys, resuming, and plotting from stored results (no simulation)."""

import pandas as pd
import pytest

from tucoll import figures, sim


@pytest.fixture(scope="module")
def registry_json(build):
    """The library's registry (through ctypes: no simulation needed)."""
    from tucoll.bench import registry

    return registry(build)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(figures.core, "STORE", tmp_path / "data" / "simulated.csv")
    monkeypatch.setattr(figures.core, "FIGURE_DIR", tmp_path)
    return tmp_path


def fake_rows(case, times):
    """Rows as store_output appends them, one per (size, spec), with the given times in that order."""
    keys = case.keys()
    frame = pd.DataFrame(keys, columns=figures.KEY)
    frame["size"] = frame["requested_size"]
    frame["median_us"] = times
    frame["inter_region_msgs"] = 0
    frame["algorithm"] = frame["requested"].str.split(":").str[0]
    return frame


def test_sizes_and_workload_labels():
    assert figures.size_bytes("16K") == 16384 and figures.size_bytes("1M") == 1 << 20
    assert figures.size_bytes("64") == 64
    case = figures.Case("polaris-like", 64, "alltoallv", ("tuna:radix=2",), sizes=("16", "1K"))
    assert case.workload_label() == "dist=uniform"
    assert [k[6] for k in case.keys()] == [16, 1024]
    assert [k[6] for k in figures.Case("quartz-like", 32, "alltoall_crs", ("nbx",), sizes=()).keys()] == [-1]
    assert case.resolved_ppn() == 32  # the platform's ranks per node
    matrix = figures.Case("quartz-like", 32, "alltoall_crs", ("nbx",), workload=("--matrix", "/x/lp_woodw.mtx"),
                          sizes=())
    assert matrix.workload_label() == "matrix=lp_woodw"


def test_bench_arguments_name_every_spec_and_size():
    case = figures.Case("polaris-like", 64, "alltoallv", ("vendor", "tuna:radix=4"), sizes=("16", "1K"))
    args = case.bench_args(["tuna:radix=4"], ["1K"])
    assert args == ["alltoallv", "--alg", "tuna:radix=4", "--sizes", "1K", "--dist", "uniform", "--format", "csv"]


def test_a_case_already_in_the_store_is_not_simulated_again(store):
    case = figures.Case("polaris-like", 64, "alltoallv", ("vendor", "tuna:radix=2"), sizes=("16",))
    figures.append_rows(fake_rows(case, [10.0, 5.0]))
    done = figures.done_keys(figures.load_store())
    # No build is needed: nothing is pending, so nothing runs.
    assert figures.simulate_case(case, build=None, done=done, timeout=1) is None
    wider = figures.Case("polaris-like", 64, "alltoallv", ("vendor", "tuna:radix=2", "tuna:radix=4"), sizes=("16",))
    pending = [k for k in wider.keys() if k not in done]
    assert [k[7] for k in pending] == ["tuna:radix=4"]


def test_a_sweeps_rows_of_the_same_run_stand_for_the_untagged_specs(store, tmp_path):
    from tucoll import store as store_module
    from tucoll import sweep

    model = sim.model_of("polaris-like")
    rows = [{"source": "polaris-like", "simulated": 1, "requested": spec, "collective": "alltoallv",
             "algorithm": spec.split(":")[0], "nprocs": 64, "ppn": 32, "mapping": "sequential", "dist": dist,
             "requested_size": 16, "size": 16, "median_us": us, "wall_s": 9.5, "failed": failed, "model": m}
            for spec, dist, us, failed, m in (("vendor", "uniform", 50.0, "", model),
                                              ("tuna:radix=2", "uniform", 20.0, "", model),
                                              ("auto", "uniform", 1.0, "", model),
                                              ("tuna:radix=4", "uniform", 0.0, "crash", model),
                                              ("vendor", "powerlaw", 60.0, "", model),
                                              ("tuna:radix=16", "uniform", 7.0, "", "an-old-model"))]
    pd.DataFrame(rows).to_csv(tmp_path / "sweep.csv", index=False)
    case = figures.Case("polaris-like", 64, "alltoallv", ("auto", "vendor", "tuna:radix=2", "tuna:radix=4"),
                        tag="table x", tagged=("auto",), reuse="sweep.csv")
    data = store_module.load(tmp_path / "sweep.csv", sweep.KEY)
    case = figures.Case("polaris-like", 64, "alltoallv", ("auto", "vendor", "tuna:radix=2", "tuna:radix=4",
                                                         "tuna:radix=16"),
                        tag="table x", tagged=("auto",), reuse="sweep.csv")
    # Not auto (tagged), not the failed cell, not powerlaw, not the row of another machine model.
    assert figures.reuse_sweep_rows(case, data, set()) == 2
    stored = figures.load_store()
    done = figures.done_keys(stored)
    assert {k[7] for k in case.keys() if k in done} == {"vendor", "tuna:radix=2"}
    assert set(stored["model"]) == {model}
    assert set(stored["workload"]) == {"dist=uniform"} and set(stored["median_us"]) == {50.0, 20.0}
    assert "source" not in stored.columns and set(stored["sim_wall_s"]) == {9.5}
    assert figures.reuse_sweep_rows(case, data, done) == 0


def test_a_changed_machine_model_is_simulated_again(store, monkeypatch):
    case = figures.Case("polaris-like", 64, "alltoallv", ("vendor",), sizes=("16",))
    figures.append_rows(fake_rows(case, [10.0]))
    assert all(k in figures.done_keys(figures.load_store()) for k in case.keys())
    # The platform's file, SimGrid patches or model fields change: so does its fingerprint, and the
    # stored row no longer stands for the case (nor is it plotted: selection() keys on the model).
    monkeypatch.setattr(sim, "model_of", lambda platform: "another-model")
    assert not any(k in figures.done_keys(figures.load_store()) for k in case.keys())
    assert figures.selection(figures.load_store(), [case]).empty


def test_rows_from_earlier_library_sources_are_plotted_counted_and_refreshed_on_demand(store, monkeypatch):
    from tucoll.figures import core

    case = figures.Case("polaris-like", 64, "alltoallv", ("vendor", "tuna:radix=2"), sizes=("16",))
    older = fake_rows(case, [10.0, 5.0]).assign(sources="an-older-one")
    figures.append_rows(older.iloc[:1])  # vendor: simulated before a change to src/
    monkeypatch.setattr(core, "sources_fingerprint", lambda: "the-current-one")
    figures.append_rows(fake_rows(case, [10.0, 5.0]).iloc[1:].assign(sources="the-current-one"))
    stored = figures.load_store()
    vendor, tuna = case.keys()
    # Plotted and counted; simulated again only when asked for.
    assert {vendor, tuna} <= figures.done_keys(stored)
    assert figures.done_keys(stored, current_only=True) == {tuna}
    assert "1 of 2 rows were simulated with earlier library sources" in figures.earlier_sources(
        figures.selection(stored, [case]))
    # The vendor simulated again: its last row wins, and nothing is from earlier sources any more.
    figures.append_rows(fake_rows(case, [12.0, 5.0]).iloc[:1].assign(sources="the-current-one"))
    data = figures.selection(figures.load_store(), [case])
    assert len(data) == 2 and data.set_index("requested").loc["vendor", "median_us"] == 12.0
    assert figures.earlier_sources(data) == ""
    assert figures.done_keys(figures.load_store(), current_only=True) == {vendor, tuna}
    # Rows from before the store kept sources are never taken as current.
    legacy = fake_rows(figures.Case("polaris-like", 128, "alltoallv", ("vendor",), sizes=("16",)), [20.0])
    figures.append_rows(legacy)
    assert "from before the store kept them" in figures.earlier_sources(figures.load_store())


def test_radix_trend_plot_from_stored_rows(store):
    cases = [figures.Case(p, 1024, "alltoallv", figures.tuna_specs(1024), sizes=(s,))
             for p in ("polaris-like", "fugaku-like") for s in ("16", "16K")]
    for case in cases:
        n = len(case.specs)
        figures.append_rows(fake_rows(case, [100.0 + abs(i - n // 2) for i in range(n)]))
    data = figures.selection(figures.load_store(), cases)
    summary = figures.plot_radix_trends(data, store / "radix.png")
    assert (store / "radix.png").stat().st_size > 0
    assert "best radix 32" in summary  # the bottom of the synthetic U (index 4 of 2..256)


def test_sparbit_heatmap_counts_wins(store, registry_json):
    allgathers = tuple(a["name"] for a in registry_json["collectives"]["allgather"]["algorithms"])
    assert allgathers[-1] == "sparbit"
    cases = [figures.Case("yahoo-like", p, "allgather", allgathers, workload=(), sizes=("1", "1024"),
                          mapping=m) for m in ("sequential", "cyclic") for p in (16, 24)]
    for case in cases:
        # sparbit (last) fastest at every point
        times = [float(10 - i) for _ in case.sizes for i in range(len(case.specs))]
        figures.append_rows(fake_rows(case, times))
    summary = figures.plot_sparbit(figures.selection(figures.load_store(), cases), store / "heat.png")
    assert "sequential: Sparbit fastest in 100% of 4 cases" in summary
    assert (store / "heat.png").is_file()


def test_every_figure_lists_its_cases(registry_json):
    sparse = figures.FIGURES["sparse-scaling"].cases(registry_json)
    assert {c.specs[0] for c in sparse if c.collective == "alltoall_crs"} == {
        a["name"] for a in registry_json["collectives"]["alltoall_crs"]["algorithms"]}, "names come from the registry"
    for figure in figures.FIGURES.values():
        cases = figure.cases(registry_json)
        assert cases, figure.name
        assert len({c for c in cases}) == len(cases), f"{figure.name} repeats a case"


def test_new_columns_widen_the_store_without_reordering(store):
    alltoallv = figures.Case("polaris-like", 64, "alltoallv", ("vendor",), sizes=("16",))
    figures.append_rows(fake_rows(alltoallv, [1.0]))
    sparse = figures.Case("quartz-like", 32, "alltoall_crs", ("nbx",), workload=("--matrix", "m.mtx"), sizes=())
    rows = fake_rows(sparse, [2.0])
    rows["inter_region_msgs"] = 7
    rows["late_column"] = "x"
    figures.append_rows(rows)
    header = figures.core.STORE.read_text().splitlines()[0].split(",")
    assert header[:len(figures.KEY)] == figures.KEY and header[-1] == "late_column"
    stored = figures.load_store()
    assert figures.done_keys(stored) == set(alltoallv.keys()) | set(sparse.keys())
    assert list(stored["late_column"]) == ["", "x"]


def test_simulated_runs_time_one_iteration_and_warm_up_only_when_asked(tmp_path):
    from tucoll import sim
    from tucoll.build import Build

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tucoll-bench").write_text("")
    build = Build(tmp_path, "smpi", "smpirun", "-np", [])
    platform = sim.Platform.load("quartz-like")

    def bench_args(args):
        run = sim.SimRun(platform, 64, 32, "sequential", "ompi", args, shared_buffers=False, check=False)
        cmd, _ = sim.build_command(build, run, tmp_path / "hostfile")
        return cmd[cmd.index(str(tmp_path / "bin" / "tucoll-bench")) + 1:]

    assert bench_args(["alltoallv", "--iters", "20"]) == ["alltoallv", "--iters", "1", "--warmup", "0"]
    assert bench_args(["alltoall_crs", "--warmup", "1"]) == ["alltoall_crs", "--warmup", "1", "--iters", "1"]


def test_auto_rows_are_not_simulated_with_a_stale_copy_of_the_table(tmp_path, monkeypatch, build, registry_json):
    # The build copies tuning/default.json when configured; a table rebuilt since then must not
    # produce rows labelled with the new table's fingerprint.
    from dataclasses import replace

    from tucoll import sim

    monkeypatch.delenv("TUCOLL_TUNING_FILE", raising=False)
    copy = tmp_path / "share" / "tucoll" / "tuning" / "default.json"
    copy.parent.mkdir(parents=True)
    source = figures.REPO_ROOT / "tuning" / "default.json"
    stale_build = replace(build, root=tmp_path)
    copy.write_bytes(source.read_bytes())
    assert sim.stale_table(stale_build) is None
    copy.write_text("{}")
    assert "cmake --build" in sim.stale_table(stale_build)
    monkeypatch.setattr(sim, "registry", lambda _build: registry_json)
    with pytest.raises(sim.SimError, match="differs from"):
        figures.run_figure(stale_build, figures.FIGURES["auto-check"], timeout=1, progress=print)
    monkeypatch.setenv("TUCOLL_TUNING_FILE", str(source))  # a table named explicitly is the one used
    assert sim.stale_table(stale_build) is None


def test_a_fingerprint_follows_the_model_not_its_comments(tmp_path):
    def fingerprint(name, props=None, note="", **fields):
        path = sim.derived_platform("polaris-like", props or {}, tmp_path / name / "p.json", note, **fields)
        return sim.Platform.load(str(path)).fingerprint()

    base = fingerprint("a")
    assert fingerprint("b", note="a different comment", summary="another summary") == base
    assert fingerprint("c", copy_piece=1e-8) != base
    assert fingerprint("d", {"smpi/or": "1us"}) != base
    assert fingerprint("e", bandwidth_scale=2.0) != base


def test_a_patch_inert_on_a_platform_leaves_its_fingerprint_alone(tmp_path, monkeypatch):
    # A SimGrid patch whose header says "Inert unless a platform sets: OPTIONS" re-keys only the
    # platforms that set one of them (adding a mechanism must not re-simulate every cache);
    # any other patch re-keys every platform.
    import importlib
    import shutil

    platforms = importlib.import_module("tucoll.sim.platforms")  # tucoll.sim.platforms is also a function
    patches = tmp_path / "patches"
    shutil.copytree(platforms.PATCH_DIR, patches)
    monkeypatch.setattr(platforms, "PATCH_DIR", patches)
    made = {name: sim.derived_platform("polaris-like", props, tmp_path / name / "p.json")
            for name, props in (("plain", {}), ("sets-it", {"smpi/new-cost": "1e-7"}))}

    def fingerprints():
        return {name: sim.Platform.load(str(path)).fingerprint() for name, path in made.items()}

    before = fingerprints()
    (patches / "new-cost.patch").write_text("tucoll: a new mechanism.\n\n"
                                            "Inert unless a platform sets: smpi/other-cost, smpi/new-cost\n\n"
                                            "--- a/src/x.cpp\n+++ b/src/x.cpp\n")
    added = fingerprints()
    assert added["plain"] == before["plain"] and added["sets-it"] != before["sets-it"]
    # Said in passing rather than on a line of its own, it is no such header.
    (patches / "new-cost.patch").write_text("tucoll: a new mechanism, not inert unless a platform sets: smpi/new-cost\n")
    assert fingerprints()["plain"] != before["plain"]
    (patches / "new-cost.patch").unlink()
    assert fingerprints() == before
    with (patches / "match-cost.patch").open("a") as patch:  # a patch without the header
        patch.write("\n")
    assert all(after != before[name] for name, after in fingerprints().items())


def test_a_table_is_built_from_the_current_models_rows_only(monkeypatch):
    from tucoll import sweep

    def model_of(platform):
        if platform != "polaris-like":
            raise sim.SimError(f"unknown platform {platform!r}")
        return "now"

    monkeypatch.setattr(sim, "model_of", model_of)
    data = pd.DataFrame({"source": ["polaris-like", "polaris-like", "local", "my-cluster.json"],
                         "simulated": ["1", "1", "0", "1"], "model": ["now", "before", "", "x"]})
    # An earlier model's row goes; this machine's rows and a platform not known here stay.
    assert sweep.current_rows(data)["model"].tolist() == ["now", "", "x"]
