#!/usr/bin/env bash
# Builds the SimGrid release the simulated target is made against from PyPI's source
# distribution (it holds the whole C++ source, SMPI included) into a prefix inside the project,
# and prints that prefix. A prefix already built for the pinned version is reused as it is.
#
#   scripts/simgrid.sh PREFIX [JOBS]
#
# Why not the distribution's libsimgrid-dev: Debian ships 3.32, whose list of detached sends is
# quadratic in the number of simulated ranks (P = 4096 did not finish in 2 h); 3.34 replaced it.
# The patches in sim/simgrid-patches/ are applied to the source first (each says why); the
# prefix is rebuilt when they change.
set -euo pipefail

version=4.1
sha256=23ac24cb5b2467f1f051c992ec921b4a9f8f5ac2df16c489bd01bf1c44e6e817
url=https://files.pythonhosted.org/packages/b8/32/2dbaab60c222ee33371b82ec73529ab6eaf3a96edcc0b9ea55c8cb427221/simgrid-$version.tar.gz

prefix=${1:?usage: scripts/simgrid.sh PREFIX [JOBS]}
jobs=${2:-$(nproc 2>/dev/null || echo 2)}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
patches=$(cd "$(dirname "$0")/../sim/simgrid-patches" && pwd)
precompiled_headers=$(cd "$(dirname "$0")" && pwd)/simgrid-pch.cmake
shopt -s nullglob
patch_files=("$patches"/*.patch)
patch_sum=$(cat /dev/null "${patch_files[@]}" | sha256sum | cut -c1-16)
stamp="$prefix/.tucoll-simgrid-$version-$patch_sum"

if [ -f "$stamp" ] && [ -x "$prefix/bin/smpicxx" ]; then
  echo "$prefix"
  exit 0
fi

work="$prefix.build"
rm -rf "$work"
mkdir -p "$work"
archive="$work/simgrid-$version.tar.gz"
echo "simgrid.sh: fetching simgrid $version (PyPI source distribution)" >&2
if ! curl -fsSL --retry 3 -o "$archive" "$url"; then
  # A site that reaches PyPI only through a mirror or proxy pip is configured for.
  rm -f "$archive"
  python3 -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation \
    "simgrid==$version" -d "$work" >&2
fi
echo "$sha256  $archive" | sha256sum --check --quiet - >&2 || {
  echo "simgrid.sh: $archive does not have the pinned SHA-256 $sha256" >&2; exit 1; }
tar -xzf "$archive" -C "$work"
for p in "${patch_files[@]}"; do
  # Exactly as written (no fuzz): a patch that no longer fits the source must fail loudly.
  patch -s -p1 --fuzz=0 --forward --batch -d "$work/simgrid-$version" <"$p" ||
    { echo "simgrid.sh: $p does not apply" >&2; exit 1; }
done

# Only the library and SMPI: no bindings, no model checker, no documentation, and no debug
# information: SimGrid's CMakeLists adds -g3 to every compile, which took a quarter of its build here
# (15.6 min against 12.1 on 2 cores); the -g0 of the build type's flags comes after it. Debug
# information never changes the code GCC makes, so simulated times stay what they were. Its most
# included headers are precompiled (simgrid-pch.cmake says which and why): 5.5 min to build here
# against 8.5. Neither that nor the debug information changes a simulated time, so neither is in
# the prefix's stamp. From inside the work directory: SimGrid's configure leaves a test program
# (test_stackgrowth) in the current one.
cd "$work"
cmake -S "$work/simgrid-$version" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS_RELEASE="-O3 -DNDEBUG -g0" -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG -g0" \
  -DCMAKE_PROJECT_INCLUDE="$precompiled_headers" \
  -DCMAKE_INSTALL_PREFIX="$prefix" -Denable_smpi=ON -Denable_python=OFF -Denable_java=OFF \
  -Denable_fortran=OFF -Denable_model-checking=OFF -Denable_documentation=OFF \
  -Denable_ns3=OFF -Denable_lua=OFF >"$work/configure.log" 2>&1 || {
  tail -40 "$work/configure.log" >&2; echo "simgrid.sh: configure failed, log in $work/configure.log" >&2; exit 1; }
echo "simgrid.sh: building simgrid $version into $prefix (a few minutes; log in $work/build.log)" >&2
if ! cmake --build "$work/build" -j "$jobs" >"$work/build.log" 2>&1 ||
   ! cmake --install "$work/build" >>"$work/build.log" 2>&1; then
  tail -40 "$work/build.log" >&2; echo "simgrid.sh: build failed, log in $work/build.log" >&2; exit 1
fi
cd "$prefix"
rm -rf "$work"
rm -f "$prefix"/.tucoll-simgrid-*
touch "$stamp"
echo "$prefix"
