#!/usr/bin/env bash
# A Fortran (mpif.h) program under the interposer: correct results, and — where the MPI's Fortran
# layout is known to the interposer (Open MPI) — tucoll's log shows it took MPI_ALLTOALLV and
# MPI_ALLTOALL.
#
#   check_fortran.sh PRELOAD_LIB PROGRAM NPROCS EXPECT_LOG(0|1) MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
lib=$1 program=$2 np=$3 expect_log=$4
shift 4
out=$(LD_PRELOAD="$lib" TUCOLL_VERBOSE=1 "$@" -n "$np" "$program" 2>&1) || { echo "FAIL: $out"; exit 1; }
echo "$out"
grep -q "MPI_ALLTOALLV ok = 1" <<<"$out" || { echo "FAIL: wrong results"; exit 1; }
if [ "$expect_log" = 1 ] && ! grep -q "^\[tucoll\] MPI_Alltoallv on MPI_COMM_WORLD (P=$np" <<<"$out"; then
    echo "FAIL: tucoll did not take the Fortran MPI_ALLTOALLV"; exit 1
fi
if [ "$expect_log" = 1 ] && ! grep -q "^\[tucoll\] MPI_Alltoall on MPI_COMM_WORLD (P=$np" <<<"$out"; then
    echo "FAIL: tucoll did not take the Fortran MPI_ALLTOALL"; exit 1
fi
