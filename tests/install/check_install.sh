#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds a C program against it twice: with
# find_package(tucoll) and with pkg-config. Both programs then run on 2 ranks.
#   check_install.sh BUILD_DIR MPI_C_COMPILER MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
build=$1 mpicc=$2 mpiexec=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(dirname "$(find "$work/prefix" -name 'libtucoll.so' | head -n 1)")

cmake -S "$here" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" -DMPI_C_COMPILER="$mpicc" >/dev/null
cmake --build "$work/consumer" >/dev/null
PKG_CONFIG_PATH="$libdir/pkgconfig" "$mpicc" "$here/consumer.c" -o "$work/consumer-pc" \
  $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs tucoll)

for program in "$work/consumer/consumer" "$work/consumer-pc"; do
  LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$mpiexec" -n 2 "$@" "$program"
done
echo "installed tucoll works with find_package and pkg-config"
