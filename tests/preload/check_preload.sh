#!/usr/bin/env bash
# The drop-in interposer on an unmodified MPI program: the same results with and without
# LD_PRELOAD=libtucoll_preload.so, tucoll's log shows it took the calls (TUCOLL_VERBOSE=1), and
# TUCOLL_DISABLE=1 makes it a pass-through. With a second program (linked against the interposer
# at build time) the same holds without LD_PRELOAD. With TUCOLL_PROGRESS=thread the interposer
# initializes MPI with MPI_THREAD_MULTIPLE and a progress thread runs the nonblocking calls; without
# it, the program's waits on its own requests advance them (MPI's progress rule).
#
#   check_preload.sh PRELOAD_LIB PROGRAM LINKED_PROGRAM NPROCS MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
lib=$1 program=$2 linked=$3 np=$4
shift 4
launch=("$@" -n "$np")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {  # run NAME PROGRAM [ENV...]: stdout to NAME.out (sorted), stderr to NAME.err
    local name=$1 prog=$2
    shift 2
    if ! env "$@" "${launch[@]}" "$prog" >"$tmp/$name.raw" 2>"$tmp/$name.err"; then
        echo "FAIL: $name: the program's own check failed or it crashed"; cat "$tmp/$name.raw" "$tmp/$name.err"; exit 1
    fi
    sort "$tmp/$name.raw" >"$tmp/$name.out"
}

run plain "$program"
run preload "$program" LD_PRELOAD="$lib" TUCOLL_VERBOSE=1
run disabled "$program" LD_PRELOAD="$lib" TUCOLL_VERBOSE=1 TUCOLL_DISABLE=1
run linked "$linked" TUCOLL_VERBOSE=1
# Recording the unmodified program's exchanges: one folder per communicator with a manifest.
run recorded "$program" LD_PRELOAD="$lib" TUCOLL_RECORD="$tmp/recording"
# A job-wide spec that does not fit the program's 2-rank communicators: adjusted there, not fatal.
run clamped "$program" LD_PRELOAD="$lib" TUCOLL_VERBOSE=1 TUCOLL_ALLTOALLV=tuna:radix=3
run progress "$program" LD_PRELOAD="$lib" TUCOLL_VERBOSE=1 TUCOLL_PROGRESS=thread TUCOLL_ALLTOALLV=tuna:radix=2
# Several rounds and no thread: the program's waits on its own requests advance the collectives.
run rounds "$program" LD_PRELOAD="$lib" TUCOLL_ALLTOALLV=tuna:radix=2
run refusals "$program" LD_PRELOAD="$lib" TUCOLL_CHECK_REFUSALS=1
grep -q "^MPI_Cancel and MPI_Request_free refused on MPI_Ialltoall: ok" "$tmp/refusals.out" ||
    { echo "FAIL: refusals: freeing or cancelling a nonblocking collective's request"; cat "$tmp/refusals.out" "$tmp/refusals.err"; exit 1; }

grep -q ": ok" "$tmp/plain.out" || { echo "FAIL: the program printed no checks"; exit 1; }
for name in preload disabled linked clamped recorded progress rounds; do
    if ! diff -u "$tmp/plain.out" "$tmp/$name.out"; then echo "FAIL: $name output differs from plain MPI"; exit 1; fi
done
calls=(MPI_Alltoallv MPI_Alltoall MPI_Allgather MPI_Allgatherv MPI_Ialltoallv MPI_Ialltoall MPI_Iallgather
       MPI_Iallgatherv)
# The persistent collectives where the MPI has them (the program checks them only there).
for call in MPI_Alltoallv_init MPI_Alltoall_init MPI_Allgather_init MPI_Allgatherv_init; do
    grep -q "^$call on" "$tmp/plain.out" && calls+=("$call")
done
for name in preload linked; do
    for call in "${calls[@]}"; do
        grep -q "^\[tucoll\] $call on MPI_COMM_WORLD (P=$np, led by world rank 0): " "$tmp/$name.err" ||
            { echo "FAIL: $name: no tucoll log line for $call"; cat "$tmp/$name.err"; exit 1; }
    done
    # Once per communicator, collective and algorithm: the program calls everything twice.
    dups=$(grep '^\[tucoll\]' "$tmp/$name.err" | sort | uniq -d | wc -l)
    [ "$dups" -eq 0 ] || { echo "FAIL: $name: repeated log lines"; cat "$tmp/$name.err"; exit 1; }
done
clamp_notes=$(grep -c "TUCOLL_ALLTOALLV=tuna:radix=3: radix=3 is out of range" "$tmp/clamped.err" || true)
# Said once per communicator where it does not fit: the two halves (1 or 2 ranks), not the world.
[ "$clamp_notes" -eq 2 ] ||
    { echo "FAIL: TUCOLL_ALLTOALLV=tuna:radix=3: expected a note per half, got $clamp_notes"; cat "$tmp/clamped.err"; exit 1; }
grep -q "progress thread started" "$tmp/progress.err" ||
    { echo "FAIL: TUCOLL_PROGRESS=thread started no progress thread"; cat "$tmp/progress.err"; exit 1; }
if grep -q "^\[tucoll\] MPI_" "$tmp/disabled.err"; then echo "FAIL: TUCOLL_DISABLE=1 still routed calls"; exit 1; fi
grep -q "TUCOLL_DISABLE is set" "$tmp/disabled.err" || { echo "FAIL: TUCOLL_DISABLE=1 was not announced"; exit 1; }
manifests=$(find "$tmp/recording" -name manifest.json | wc -l)
# MPI_COMM_WORLD and the program's split halves (each half's rank 0 writes its own).
[ "$manifests" -ge 2 ] || { echo "FAIL: TUCOLL_RECORD wrote $manifests manifests"; ls -R "$tmp/recording"; exit 1; }
grep -q '"collective": "alltoallv"' "$tmp"/recording/MPI_COMM_WORLD.*/manifest.json ||
    { echo "FAIL: TUCOLL_RECORD: no alltoallv pattern recorded on MPI_COMM_WORLD"; exit 1; }
echo "preload: same results as plain MPI at P=$np; tucoll took ${calls[*]}; TUCOLL_RECORD wrote $manifests manifests"
grep '^\[tucoll\]' "$tmp/preload.err" | sort
