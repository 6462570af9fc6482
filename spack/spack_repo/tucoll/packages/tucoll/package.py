from spack_repo.builtin.build_systems.cmake import CMakePackage
from spack_repo.builtin.build_systems.cuda import CudaPackage

from spack.package import *


class Tucoll(CMakePackage, CudaPackage):
    """MPI collective algorithms for irregular data exchange behind MPI-identical interfaces:
    TuNA and hierarchical TuNA, two-phase Bruck and the classic alltoallv algorithms, Sparbit and
    the classic allgathers, sparse dynamic data exchange, the IPC all-to-all(v) over cross-memory
    attach and CUDA IPC; an autotuned default (`auto`) and an interposer (libtucoll_preload) that
    gives unmodified MPI programs all of it."""

    # No public release yet: build a checkout (spack/README.md):
    #   spack develop --path /path/to/tucoll tucoll@0.1.0 && spack install tucoll@0.1.0
    version("0.1.0")

    variant(
        "simgrid",
        default=False,
        description="Build for SimGrid's SMPI instead of an MPI: the library and tucoll-bench for "
        "simulated clusters (SimGrid without tucoll's patches in sim/simgrid-patches)",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("mpi", when="~simgrid")
    depends_on("simgrid@4.1: +smpi", when="+simgrid")
    depends_on("nlohmann-json@3.2:")
    depends_on("cli11")  # tucoll-bench and the applications
    depends_on("suite-sparse")  # CHOLMOD reads Matrix Market files (tucoll-bench)
    depends_on("googletest", type="test")
    depends_on("cuda@12.5:", when="+cuda")  # cudaGetDriverEntryPointByVersion

    conflicts("+cuda", when="+simgrid", msg="simulated GPUs need no CUDA: +simgrid models them")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("TUCOLL_SIMGRID", "simgrid"),
            self.define("TUCOLL_CUDA", "ON" if spec.satisfies("+cuda") else "OFF"),
            self.define("TUCOLL_BUILD_TESTS", self.run_tests),
        ]
        if spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CUDA_ARCHITECTURES", spec.variants["cuda_arch"].value))
        if spec.satisfies("+simgrid"):
            args.append(self.define("CMAKE_C_COMPILER", spec["simgrid"].prefix.bin.smpicc))
            args.append(self.define("CMAKE_CXX_COMPILER", spec["simgrid"].prefix.bin.smpicxx))
        else:
            args.append(self.define("MPI_C_COMPILER", spec["mpi"].mpicc))
        return args
