# tucoll — the commands a user needs. `make demo` and `make test` install what is missing
# (apt-get for system packages, pip into .venv), then build; present tools are used as they are.
#
#   make demo                 build; check and compare the alltoallv algorithms on 4 ranks, on a
#                             simulated cluster, and in the transitive-closure application
#   make test                 build from scratch and run every test (ctest + pytest)
#   make test MPI=mpich       the same against MPICH (build-mpich/), quick matrix at P <= 5
#   make test MPI=openmpi5    the same against PyPI's current Open MPI 5 / MPICH 5 wheels
#   make test MPI=mpich5      (pinned in scripts/deps.sh, installed into .deps/), quick matrix
#   make build                build into build/ (binaries in build/bin/)
#   make install PREFIX=DIR   library, header, CMake package and pkg-config file
#   make test-gpu             the GPU tests (the ipc algorithm's cuda backend) on a machine with GPUs
#   make sanitize             the MPI tests under AddressSanitizer + UBSan (build-asan/)
#   make sim-build            SimGrid 4.1 built once into .deps/ (from PyPI's source distribution),
#                             then library, tucoll-bench and transitive_closure for its SMPI (build-sim/)
#   make docs                 regenerate the registry-driven parts of README.md

SHELL := /bin/bash
MPI ?= openmpi
BUILD_TYPE ?= RelWithDebInfo
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTEST_ARGS ?=
BUILD_DIR ?= $(if $(filter openmpi,$(MPI)),build,build-$(MPI))
VENV := .venv
# SimGrid, built by the project (scripts/simgrid.sh): kept across `make test`, which rebuilds build-sim/.
SIMGRID_PREFIX ?= .deps/simgrid-4.1
PYTHON := $(VENV)/bin/python

# MPICH's ch4:ucx ranks busy-poll: oversubscribed on a small machine every call crawls (the full
# matrix at P = 16 takes hours). Its default run is the quick matrix at P <= 5; the full one is
# `make test MPI=mpich TUCOLL_TEST_MATRIX=full CTEST_ARGS=`.
# The wheels (openmpi5, mpich5) run the MPI programs' quick matrix too: they are there for the
# MPI-4/5 paths and the newer implementations' semantics, and CI runs four MPIs in its time.
WHEEL_MPIS := openmpi5 mpich5
ifneq ($(filter mpich $(WHEEL_MPIS),$(MPI)),)
TUCOLL_TEST_MATRIX ?= quick
export TUCOLL_TEST_MATRIX
CTEST_ARGS ?= -E "np([6-9]|[1-9][0-9])$$"
# These builds are there for their tests: line tables (-g1) still give a failing test's backtrace
# its lines, and compile a third faster than full debug information (CLI11's and nlohmann-json's
# templates, mostly). build/, the one users link against, keeps -g.
TEST_BUILD_ARGS := -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
endif

# Open MPI refuses to start as root without these; they change nothing for other users.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

CTEST_ARGS ?=

.PHONY: all deps mpi-wheel sim-deps venv configure build test test-gpu ctest pytest demo install sanitize docs clean sim-build

all: build

deps:
	@scripts/deps.sh system $(MPI)
	$(if $(filter $(WHEEL_MPIS),$(MPI)),@$(MAKE) --no-print-directory mpi-wheel)

# The pinned wheel of MPI=openmpi5|mpich5, installed with the project's pip into .deps/$(MPI).
mpi-wheel: $(VENV)/.installed
	@scripts/deps.sh wheel $(MPI) $(PYTHON)

$(VENV)/.installed: python/pyproject.toml
	@test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e "python[test]"
	@touch $@

venv: deps $(VENV)/.installed

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $$(scripts/deps.sh cmake-args $(MPI)) $(TEST_BUILD_ARGS) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

ctest:
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# With another MPI than the default only the tests whose results depend on it: the rest (marked
# mpi_free: models, simulation, the repository's own checks) ran with the default and would run
# alike. A -m in PYTEST_ARGS replaces this selection (pytest keeps the last -m).
pytest: venv
	TUCOLL_BUILD_DIR=$(abspath $(BUILD_DIR)) TUCOLL_SIM_BUILD_DIR=$(abspath build-sim) \
	  $(PYTHON) -m pytest -q tests/python $(if $(filter openmpi,$(MPI)),,-m "not mpi_free") $(PYTEST_ARGS)

# The SimGrid target is built (from scratch too) and tested along with the default MPI. The
# Python tools' tests run with the system's MPIs; against a wheel only the MPI programs run.
test: venv
	rm -rf $(BUILD_DIR)
	$(MAKE) --no-print-directory build
	$(MAKE) --no-print-directory ctest
	$(if $(filter openmpi,$(MPI)),rm -rf build-sim && $(MAKE) --no-print-directory sim-build)
	$(if $(filter $(WHEEL_MPIS),$(MPI)),,$(MAKE) --no-print-directory pytest)

# Needs a CUDA toolkit (nvcc; CUDACXX if not in /usr/local/cuda) and, to do more than skip, GPUs;
# a CUDA-aware MPI only for the messages between nodes and below ipc_threshold.
test-gpu: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L gpu $(CTEST_ARGS)

demo: build venv sim-build
	$(PYTHON) -m tucoll demo --build-dir $(BUILD_DIR) --sim-build-dir build-sim

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

sim-deps: deps
	@scripts/deps.sh simgrid $(MPI)
	@scripts/simgrid.sh $(SIMGRID_PREFIX) $(JOBS) >/dev/null

# The simulated target: same sources compiled with SMPI's wrappers (Release: simulations of
# thousands of ranks run all of them in one process).
sim-build: deps sim-deps
	cmake -S . -B build-sim -DTUCOLL_SIMGRID=ON -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_C_COMPILER=$(abspath $(SIMGRID_PREFIX))/bin/smpicc \
	  -DCMAKE_CXX_COMPILER=$(abspath $(SIMGRID_PREFIX))/bin/smpicxx $(CMAKE_ARGS)
	cmake --build build-sim -j $(JOBS) --target tucoll-bench transitive_closure

# Every test program, built with ASan + UBSan (Debug: internal checks on), on the quick matrix:
# instrumented and oversubscribed, the full one takes hours here; TUCOLL_TEST_MATRIX=full for it.
sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTUCOLL_SANITIZE=ON $$(scripts/deps.sh cmake-args $(MPI))
	cmake --build build-asan -j $(JOBS)
	TUCOLL_TEST_MATRIX=$${TUCOLL_TEST_MATRIX:-quick} \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build-asan --output-on-failure -j $(JOBS) -LE "install|preload" $(CTEST_ARGS)

docs: build venv
	$(PYTHON) -m tucoll docs --build-dir $(BUILD_DIR) --write README.md

# .deps/ (SimGrid) survives: `rm -rf .deps` rebuilds it on the next sim-build.
clean:
	rm -rf build build-mpich build-openmpi5 build-mpich5 build-asan build-sim
