#!/usr/bin/env bash
# MPICH's own collective tests (test/mpi/coll of an MPICH source tree) on the MPI that a tucoll
# build uses, run plain and through tucoll's interposer (LD_PRELOAD=libtucoll_preload.so): with
# the default algorithms, and with -a with every algorithm of every interposed collective forced
# (TUCOLL_ALLTOALLV/ALLTOALL, TUCOLL_ALLGATHER/ALLGATHERV, read from the registry:
# tucoll-bench --list-json). Each test runs at the process counts its testlist.in gives (up to
# -n). A test passes when it exits 0 and prints "No Errors"; a run past -T seconds is a hang.
# Prints CSV (config, test, np, result, seconds) and, last, a summary; exits 1 when a test that
# passes plain fails or hangs through the interposer.
#
# MPICH's tests are not part of tucoll: pass a checkout or release tree of MPICH (its test/mpi is
# compiled here as it stands; its configure is replaced by the two small headers written below).
#
#   scripts/mpich-coll-tests.sh MPICH_DIR [-b BUILD_DIR] [-n MAX_NP] [-T SECONDS] [-a] [-t TEST]...
#
#   -b BUILD_DIR  the tucoll build whose interposer and MPI are used (default build/)
#   -n MAX_NP     the largest process count run (default 10)
#   -T SECONDS    a run's time limit (default 180)
#   -a            also every algorithm forced, one configuration each
#   -t TEST       a test of test/mpi/coll (repeatable); default: those of the interposed
#                 collectives (allgather, allgatherv, alltoall, alltoallv: blocking, nonblocking,
#                 persistent, on intercommunicators) and the mixes of nonblocking collectives
#
# Environment: MPIRUN_FLAGS (added to mpiexec's; --oversubscribe is added for Open MPI).
set -euo pipefail

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
[[ $# -ge 1 && $1 != -h ]] || usage 1
mpich=$1
shift
build=build max_np=10 limit=180 every=0 tests=()
while getopts "b:n:T:t:ah" opt; do
    case $opt in
        b) build=$OPTARG ;;
        n) max_np=$OPTARG ;;
        T) limit=$OPTARG ;;
        t) tests+=("$OPTARG") ;;
        a) every=1 ;;
        h) usage 0 ;;
        *) usage 1 ;;
    esac
done
[[ ${#tests[@]} -gt 0 ]] || tests=(allgather2 allgather3 allgather_struct allgatherv2 allgatherv3 allgatherv4
    alltoall1 alltoallv alltoallv0 coll6 coll7 coll12 coll13 icallgather icallgatherv icalltoall icalltoallv
    nonblocking nonblocking2 nonblocking3 p_allgather p_allgatherv p_alltoall p_alltoallv)

src=$mpich/test/mpi
[[ -d $src/coll ]] || src=$mpich
[[ -d $src/coll && -d $src/util && -d $src/include ]] || { echo "no test/mpi with coll/, util/, include/ under $mpich" >&2; exit 2; }
build=$(cd "$build" && pwd)
preload=$build/lib/libtucoll_preload.so
[[ -f $preload ]] || { echo "no interposer at $preload: build tucoll first (make build)" >&2; exit 2; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -1; }
mpicc=$(cache MPI_C_COMPILER)
mpiexec=$(cache MPIEXEC_EXECUTABLE)
[[ -x $mpicc && -x $mpiexec ]] || { echo "no MPI compiler or mpiexec in $build/CMakeCache.txt" >&2; exit 2; }
flags=()
if "$mpiexec" --version 2>&1 | grep -qi 'open mpi\|openrte\|prte'; then
    flags+=(--oversubscribe)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# shellcheck disable=SC2206
flags+=(${MPIRUN_FLAGS:-})

work=$(mktemp -d "${TMPDIR:-/tmp}/tucoll-mpich-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT
# What MPICH's configure would have said of a POSIX system; MPIX extensions left out.
cat >"$work/mpitestconf.h" <<'EOF'
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STDARG_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_LONG_LONG 1
#define HAVE_MPI_WIN_CREATE 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
EOF
: >"$work/mtest_mpix.h"
cc=("$mpicc" -O1 -w -I"$work" -I"$src/include")
for unit in mtest mtest_common dtypes mtest_single run_mpitests; do
    "${cc[@]}" -c "$src/util/$unit.c" -o "$work/$unit.o"
done
built=()
for t in "${tests[@]}"; do
    objs=("$work/mtest.o" "$work/mtest_common.o" "$work/dtypes.o" "$work/mtest_single.o")
    grep -q '^int run(' "$src/coll/$t.c" && objs+=("$work/run_mpitests.o")  # a test without main
    if "${cc[@]}" "$src/coll/$t.c" "${objs[@]}" -lm -o "$work/$t" 2>"$work/$t.log"; then
        built+=("$t")
    else
        echo "not built: $t ($(grep -m1 -o 'error: .*' "$work/$t.log" || echo 'see the compiler'))" >&2
    fi
done

# The process counts of a test: those its testlist.in lists (up to max_np), else 4.
counts() {
    local n
    n=$(awk -v t="$1" -v m="$max_np" '$1 == t && $2 ~ /^[0-9]+$/ && $2 <= m && NF == 2 { print $2 }' \
        "$src/coll/testlist.in" | sort -un | tr '\n' ' ')
    echo "${n:-4}"
}

configs=("plain" "auto")
if [[ $every -eq 1 ]]; then
    while IFS= read -r line; do configs+=("$line"); done < <("$build/bin/tucoll-bench" --list-json | python3 -c '
import json, sys
reg = json.load(sys.stdin)["collectives"]
names = lambda c: [a["name"] for a in reg[c]["algorithms"] if not a["meta"] and a["name"] != "vendor"]
for a in names("alltoallv"):
    print(f"TUCOLL_ALLTOALLV={a}" + (f" TUCOLL_ALLTOALL={a}" if a in names("alltoall") else ""))
for a in names("allgather"):
    print(f"TUCOLL_ALLGATHER={a}" + (f" TUCOLL_ALLGATHERV={a}" if a in names("allgatherv") else ""))
')
fi

echo "config,test,np,result,seconds"
declare -A plain_ok=()
bad=0 runs=0
for config in "${configs[@]}"; do
    env_of=()
    [[ $config == plain ]] || env_of+=(LD_PRELOAD="$preload")
    if [[ $config != plain && $config != auto ]]; then
        read -r -a extra <<<"$config"
        env_of+=("${extra[@]}")
    fi
    for t in "${built[@]}"; do
        for np in $(counts "$t"); do
            start=$(date +%s%N)
            set +e
            out=$(env "${env_of[@]}" timeout "$limit" "$mpiexec" "${flags[@]}" -n "$np" "$work/$t" 2>&1)
            rc=$?
            set -e
            seconds=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
            if [[ $rc -eq 124 || $rc -eq 137 ]]; then
                result=hang
            elif [[ $rc -eq 0 ]] && grep -q 'No Errors' <<<"$out"; then
                result=pass
            else
                result=fail
            fi
            runs=$((runs + 1))
            [[ $config == plain && $result == pass ]] && plain_ok[$t.$np]=1
            if [[ $config != plain && $result != pass && -n ${plain_ok[$t.$np]:-} ]]; then
                bad=$((bad + 1))
                tail -5 <<<"$out" | sed "s/^/  $t np=$np: /" >&2
            fi
            printf '"%s",%s,%s,%s,%s\n' "$config" "$t" "$np" "$result" "$seconds"
        done
    done
done
echo "# ${#built[@]} tests, ${#configs[@]} configurations, $runs runs: $bad fail or hang through tucoll where the MPI alone passes ($("$mpiexec" --version 2>&1 | grep -m1 -i 'mpi\|version'))"
[[ $bad -eq 0 ]]
