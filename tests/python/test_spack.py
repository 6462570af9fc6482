"""spack/: tucoll's Spack recipe. Spack is not installable here (neither PyPI nor Debian ships it),
so its recipe is loaded against a stand-in for the parts of Spack's package API it uses, its
directives are checked, and the CMake options it passes for each variant configure this project."""

import importlib.util
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tucoll.build import REPO_ROOT

pytestmark = pytest.mark.mpi_free  # see conftest.py

RECIPE = REPO_ROOT / "spack" / "spack_repo" / "tucoll" / "packages" / "tucoll" / "package.py"
SMPI = REPO_ROOT / ".deps" / "simgrid-4.1" / "bin"


class Spec:
    """The part of a concrete spec the recipe reads."""

    def __init__(self, variants: dict, deps: dict):
        self.variants = {k: types.SimpleNamespace(value=v) for k, v in variants.items()}
        self.deps = deps

    def satisfies(self, text: str) -> bool:
        return all(bool(self.variants[part[1:]].value) == (part[0] == "+") for part in text.split())

    def __getitem__(self, name):
        return self.deps[name]


def load_recipe():
    """The recipe's class and its directives, in the order written."""
    directives = []

    def directive(kind):
        return lambda *args, **kwargs: directives.append((kind, args, kwargs))

    class CMakePackage:
        run_tests = False

        def define(self, name, value):
            if isinstance(value, bool):
                return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
            if isinstance(value, (list, tuple)):
                value = ";".join(str(v) for v in value)
            return f"-D{name}:STRING={value}"

        def define_from_variant(self, name, variant):
            return self.define(name, self.spec.satisfies("+" + variant))

    package_api = types.ModuleType("spack.package")
    for kind in ("version", "variant", "depends_on", "conflicts", "license", "maintainers"):
        setattr(package_api, kind, directive(kind))
    package_api.__all__ = ["version", "variant", "depends_on", "conflicts", "license", "maintainers"]
    cmake, cuda = types.ModuleType("cmake"), types.ModuleType("cuda")
    cmake.CMakePackage, cuda.CudaPackage = CMakePackage, type("CudaPackage", (), {})
    stand_ins = {"spack": types.ModuleType("spack"), "spack.package": package_api,
                 "spack_repo": types.ModuleType("spack_repo"), "spack_repo.builtin": types.ModuleType("b"),
                 "spack_repo.builtin.build_systems": types.ModuleType("bs"),
                 "spack_repo.builtin.build_systems.cmake": cmake, "spack_repo.builtin.build_systems.cuda": cuda}
    saved = {k: sys.modules.get(k) for k in stand_ins}
    sys.modules.update(stand_ins)
    try:
        spec = importlib.util.spec_from_file_location("tucoll_spack_recipe", RECIPE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module.Tucoll, directives


def cmake_args(variants: dict) -> list[str]:
    cls, _ = load_recipe()
    package = cls()
    mpicc = shutil.which("mpicc") or "mpicc"
    package.spec = Spec({"simgrid": False, "cuda": False, "cuda_arch": ("none",), **variants},
                        {"mpi": types.SimpleNamespace(mpicc=mpicc),
                         "simgrid": types.SimpleNamespace(prefix=types.SimpleNamespace(
                             bin=types.SimpleNamespace(smpicc=str(SMPI / "smpicc"), smpicxx=str(SMPI / "smpicxx"))))})
    return package.cmake_args()


def test_recipe_declares_its_variants_and_dependencies():
    cls, directives = load_recipe()
    assert cls.__mro__[1].__name__ == "CMakePackage" and cls.__mro__[2].__name__ == "CudaPackage"
    variants = {args[0]: kwargs for kind, args, kwargs in directives if kind == "variant"}
    assert variants["simgrid"]["default"] is False  # +cuda comes from CudaPackage, off by default there
    deps = {(args[0], kwargs.get("when")) for kind, args, kwargs in directives if kind == "depends_on"}
    for needed in (("mpi", "~simgrid"), ("simgrid@4.1: +smpi", "+simgrid"), ("nlohmann-json@3.2:", None),
                   ("cli11", None), ("suite-sparse", None), ("cuda@12.5:", "+cuda")):
        assert needed in deps, needed
    assert any(kind == "conflicts" and args == ("+cuda",) for kind, args, _ in directives)


def test_cmake_options_per_variant():
    assert cmake_args({}) == ["-DTUCOLL_SIMGRID:BOOL=OFF", "-DTUCOLL_CUDA:STRING=OFF", "-DTUCOLL_BUILD_TESTS:BOOL=OFF",
                              f"-DMPI_C_COMPILER:STRING={shutil.which('mpicc') or 'mpicc'}"]
    cuda = cmake_args({"cuda": True, "cuda_arch": ("80", "90")})
    assert "-DTUCOLL_CUDA:STRING=ON" in cuda and "-DCMAKE_CUDA_ARCHITECTURES:STRING=80;90" in cuda
    sim = cmake_args({"simgrid": True})
    assert "-DTUCOLL_SIMGRID:BOOL=ON" in sim and f"-DCMAKE_CXX_COMPILER:STRING={SMPI / 'smpicxx'}" in sim
    assert not any(a.startswith("-DMPI_C_COMPILER") for a in sim)


def configure(tmp_path, args):
    proc = subprocess.run(["cmake", "-S", str(REPO_ROOT), "-B", str(tmp_path / "build"), *args],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.skipif(shutil.which("mpicc") is None, reason="no MPI compiler wrapper")
def test_the_default_variant_configures(tmp_path):
    out = configure(tmp_path, cmake_args({}))
    assert "MPI flavour" in out and "CUDA IPC backend" not in out


@pytest.mark.skipif(shutil.which("mpicc") is None or shutil.which("nvcc") is None and
                    not Path("/usr/local/cuda/bin/nvcc").exists(), reason="no MPI or no CUDA toolkit")
def test_the_cuda_variant_configures_for_its_architectures(tmp_path):
    out = configure(tmp_path, cmake_args({"cuda": True, "cuda_arch": ("90",)}))
    assert "CUDA IPC backend" in out and "architectures 90" in out


@pytest.mark.skipif(not (SMPI / "smpicxx").exists(), reason="no SimGrid build (make sim-build)")
def test_the_simgrid_variant_configures(tmp_path):
    out = configure(tmp_path, cmake_args({"simgrid": True}))
    assert "SimGrid SMPI build" in out
