#!/usr/bin/env bash
# OSU's nonblocking-collective benchmarks (osu_ialltoallv, osu_ialltoall, osu_iallgather,
# osu_iallgatherv: how much of the collective a compute phase between its start and its wait
# hides) on the MPI alone and through tucoll's interposer with each spec, the variants run one
# after another and the whole set repeated, so that drifts of the machine reach them alike.
# Prints CSV: benchmark, np, variant, probes, size, rep, overall_us, compute_us, pure_comm_us,
# overlap_pct, validation (OSU's Pass/Fail with -c, else empty).
#
# OSU Micro-Benchmarks (7.x) are not part of tucoll: build them against the same MPI and pass the
# folder that holds their binaries (searched recursively).
#
#   scripts/osu-overlap.sh OSU_DIR [-n NP] [-r REPS] [-t PROBES] [-m MIN:MAX] [-i ITERS] [-p] [-c]
#                          [-b BENCHMARK]... [-s SPEC]...
#
#   -t PROBES   MPI_Test calls OSU makes during the compute phase (its own -t); through the
#               interposer each one advances tucoll's rounds. Default 0.
#   -s SPEC     a tucoll spec for the benchmark's collective (TUCOLL_ALLTOALLV etc.); default:
#               vendor, and for the all-to-alls tuna:radix=2 and linear.
#   -p          also each spec with TUCOLL_PROGRESS=thread (variant SPEC+thread).
#   -c          OSU checks every result (its -c); a run with a failed check fails the script.
#
# Environment: MPIRUN (default mpirun), MPIRUN_FLAGS (e.g. --oversubscribe), TUCOLL_BUILD_DIR
# (default build/: its lib/libtucoll_preload.so).
set -euo pipefail

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
[[ $# -ge 1 && $1 != -h ]] || usage 1
osu_dir=$1
shift
np=2 reps=3 probes=0 sizes=16:65536 iters=200 thread=0 validate=() benches=() specs=()
while getopts "n:r:t:m:i:b:s:pch" opt; do
    case $opt in
        n) np=$OPTARG ;;
        r) reps=$OPTARG ;;
        t) probes=$OPTARG ;;
        m) sizes=$OPTARG ;;
        i) iters=$OPTARG ;;
        b) benches+=("$OPTARG") ;;
        s) specs+=("$OPTARG") ;;
        p) thread=1 ;;
        c) validate=(-c) ;;
        h) usage 0 ;;
        *) usage 1 ;;
    esac
done
[[ ${#benches[@]} -gt 0 ]] || benches=(osu_ialltoallv osu_ialltoall osu_iallgather osu_iallgatherv)

root=$(cd "$(dirname "$0")/.." && pwd)
preload=${TUCOLL_BUILD_DIR:-$root/build}/lib/libtucoll_preload.so
[[ -f $preload ]] || { echo "error: $preload not found: build tucoll first (make build)" >&2; exit 1; }
mpirun_cmd=(${MPIRUN:-mpirun} ${MPIRUN_FLAGS:-} -n "$np")

# The tucoll variable that selects the benchmark's collective, and the specs tried by default.
selector() {
    case $1 in
        osu_ialltoallv) echo TUCOLL_ALLTOALLV ;;
        osu_ialltoall) echo TUCOLL_ALLTOALL ;;
        osu_iallgather) echo TUCOLL_ALLGATHER ;;
        osu_iallgatherv) echo TUCOLL_ALLGATHERV ;;
        *) echo "error: $1 is not one of OSU's nonblocking alltoall(v)/allgather(v) benchmarks" >&2; exit 1 ;;
    esac
}
default_specs() {
    case $1 in
        osu_ialltoallv | osu_ialltoall) echo vendor tuna:radix=2 linear ;;
        *) echo vendor ring ;;
    esac
}

echo "benchmark,np,variant,probes,size,rep,overall_us,compute_us,pure_comm_us,overlap_pct,validation"
failed=0
for bench in "${benches[@]}"; do
    binary=$(find "$osu_dir" -name "$bench" -type f -perm -u+x | head -n 1)
    [[ -n $binary ]] || { echo "error: no $bench under $osu_dir" >&2; exit 1; }
    var=$(selector "$bench")
    bench_specs=("${specs[@]}")
    [[ ${#bench_specs[@]} -gt 0 ]] || read -r -a bench_specs <<<"$(default_specs "$bench")"
    variants=(mpi "${bench_specs[@]}")
    [[ $thread == 0 ]] || for spec in "${bench_specs[@]}"; do variants+=("$spec+thread"); done
    for rep in $(seq 1 "$reps"); do
        for variant in "${variants[@]}"; do
            env_args=()
            [[ $variant == mpi ]] || env_args=(LD_PRELOAD="$preload" "$var=${variant%+thread}")
            [[ $variant != *+thread ]] || env_args+=(TUCOLL_PROGRESS=thread)
            rows=$("${mpirun_cmd[@]}" env "${env_args[@]}" "$binary" -m "$sizes" -i "$iters" -x 20 -t "$probes" \
                       "${validate[@]}" |
                awk -v b="$bench" -v n="$np" -v v="$variant" -v t="$probes" -v r="$rep" '
                    /^[0-9]/ { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", b, n, (v == "mpi" ? v : "tucoll:" v), t,
                                      $1, r, $2, $3, $4, $5, (NF > 5 ? $NF : "") }') ||
                { echo "error: $bench $variant: the run failed" >&2; failed=1; }
            echo "$rows"
            ! grep -q ",Fail$" <<<"$rows" || { echo "error: $bench $variant: OSU's check failed" >&2; failed=1; }
        done
    done
done
exit "$failed"
