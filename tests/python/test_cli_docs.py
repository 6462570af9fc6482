"""The `tucoll` command and the registry-generated documentation."""

import subprocess
import sys
from pathlib import Path

from tucoll import docs
from tucoll.bench import registry

README = Path(__file__).resolve().parents[2] / "README.md"
USER_GUIDE = README.parent / "docs" / "USER_GUIDE.md"


def tucoll(build, *args):
    return subprocess.run([sys.executable, "-m", "tucoll", *args, "--build-dir", str(build.root)],
                          capture_output=True, text=True, timeout=300)


def test_readme_algorithm_table_matches_the_registry(build):
    assert docs.is_current(README, registry(build)), "README.md is out of date: run `make docs`"


def test_generated_table_names_every_algorithm_and_parameter(build):
    reg = registry(build)
    table = docs.algorithm_table(reg)
    for entry in reg["collectives"].values():
        for alg in entry["algorithms"]:
            assert f"| `{alg['name']}` |" in table
            for p in alg["params"]:
                assert docs.describe_parameter(p) in table
                if p["choices"]:  # named values: every choice, and the default by name
                    assert all(c in table for c in p["choices"])
                else:
                    assert f"`{p['name']}` in [{p['min']}, {p['max']}]" in table


def test_replace_generated_keeps_the_rest_of_the_file():
    text = f"before\n{docs.BEGIN}\nold\n{docs.END}\nafter\n"
    assert docs.replace_generated(text, "new\n") == f"before\n{docs.BEGIN}\nnew\n{docs.END}\nafter\n"


def test_algorithms_command(build):
    proc = tucoll(build, "algorithms")
    assert proc.returncode == 0, proc.stderr
    assert "scattered" in proc.stdout and "block_count" in proc.stdout


def test_bench_command_passes_arguments_through(build, tmp_path):
    csv = tmp_path / "rows.csv"
    proc = subprocess.run([sys.executable, "-m", "tucoll", "bench", "alltoallv", "-n", "2", "--build-dir",
                           str(build.root), "--csv", str(csv), "--size", "32", "--iters", "2", "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "vs vendor" in proc.stdout
    assert csv.read_text().startswith("collective,algorithm,params")


def test_missing_build_is_reported(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tucoll", "algorithms", "--build-dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "build tucoll first" in proc.stderr


def test_demo_runs_every_part(build, tmp_path):
    import os
    import subprocess
    import sys

    sim_build = os.environ.get("TUCOLL_SIM_BUILD_DIR", str(build.root.parent / "build-sim"))
    proc = subprocess.run([sys.executable, "-m", "tucoll", "demo", "--build-dir", str(build.root), "--sim-build-dir",
                           sim_build, "--iters", "3", "--sizes", "64"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for part in ("1. Correctness", "3. An application", "Summary"):
        assert part in proc.stdout
    assert (build.root / "demo" / "demo.png").is_file()
    assert (build.root / "demo" / "transitive_closure.csv").is_file()


def test_every_shipped_platform_is_named_in_sim_help_and_the_user_guide():
    from tucoll import cli, sim

    sim_parser = cli.parser()._subparsers._group_actions[0].choices["sim"]
    help_text = next(a.help for a in sim_parser._actions if a.dest == "platform")
    guide = USER_GUIDE.read_text()
    for name in sim.platform_names():
        assert name in help_text, f"`tucoll sim --help` does not name {name}"
        assert f"`{name}`" in guide, f"docs/USER_GUIDE.md does not name {name}"
