#!/usr/bin/env bash
# The GPU machine's check, in one command: what tucoll's CUDA backend does on a real GPU, built,
# tested and measured, with a summary printed last. Written for the lent GPU machine (one H100,
# 16 cores, CUDA 13 and CMake, no network, no package registries, the working tree copied over
# with what --fetch put in .gpu-carry/), and rehearsed on machines without a GPU, where the GPU
# stages say SKIP and everything else runs.
#
#   scripts/gpu-check.sh --fetch    here, with network: the pinned MPICH wheel from PyPI and the
#                                   Debian packages of the build dependencies, into .gpu-carry/
#                                   (ignored by git), checked against scripts/gpu-check/carry.pins
#                                   and its size printed
#   scripts/gpu-check.sh            there (device tool: carry .gpu-carry, 600 s): every stage below,
#                                   results in build-gpu-check/out, summary last; where $OUT is set
#                                   (the device tool's folder of what comes back, at most 8 files)
#                                   also $OUT/summary.md and all results as $OUT/gpu-check.tar.gz,
#                                   refreshed after every stage should the call be cut short
#   back home                       tar -xzf gpu-check.tar.gz -C R; the summary's tables go to
#                                   docs/RESULTS.md §9 (labelled measured, the card named); the
#                                   calibrate stage's rounds to `tucoll calibrate --here` (below)
#
# Every command runs bounded by what is left of the check's budget (GPU_CHECK_BUDGET, default 450 s)
# less the share promised to the stages after it, and what a killed command leaves running is
# reaped (scripts/gpu-check/budget.sh): a hang costs its own stage, never the summary. Stages:
#   facts     nvidia-smi, nvcc, compilers, CMake, cores
#   unpack    MPICH 5.0.2 (PyPI's wheel: mpicc, mpiexec; not CUDA-aware) and the Debian packages
#             (nlohmann-json, CLI11, GoogleTest, SuiteSparse/CHOLMOD and its libraries), extracted
#             into build-gpu-check/ — never into /
#   build     CMake + the CUDA backend for sm_90: library, tucoll-bench, test_ipc_gpu,
#             test_ipc_device, the copy-limit and copy-start probes
#   tests     the GPU tests (test_ipc_gpu at 1, 2, 4 and 8 ranks on the one GPU) and the fake-device
#             tests (CPU)
#   gpu bench tucoll-bench alltoall and alltoallv --memory device --check, 4 and 8 ranks on the GPU
#             (no MPS, the GPU's settings untouched): ipc with copy=kernel, memcpy, hybrid, and
#             staged, 4 KiB to 16 MiB blocks; the copy limit: one device-to-device copy of
#             the bytes a call moves; and the copy starts: what a kernel, a device copy and a host
#             copy cost to start and wait for, the per-copy terms of the simulated GPU platforms
#   cpu bench the GPU hidden (CUDA_VISIBLE_DEVICES=): every alltoallv algorithm and auto against
#             the MPI's own MPI_Alltoallv, 16 B to 64 KiB, at min(16, cores) ranks (not
#             oversubscribed)
#   calibrate tucoll-bench machine (2 ranks) and alltoallv at 2, 4, 8 and 16 ranks, in 5 rounds, the GPU hidden:
#             what `tucoll calibrate --here --probe ... --measured ...` fits and predicts back home
#   summary   scripts/gpu-check/summary.py over the CSVs and stages.txt (each stage's seconds, and
#             every command the budget cut short): printed, and written to summary.md
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
carry=$root/.gpu-carry
pins=$root/scripts/gpu-check/carry.pins
work=$root/build-gpu-check
out=$work/out
. "$root/scripts/gpu-check/budget.sh"

# ---- --fetch: here, with network ----------------------------------------------------------------
if [ "${1:-}" = "--fetch" ]; then
  mkdir -p "$carry"
  (cd "$carry" &&
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
      -d . "mpich==5.0.2") || { echo "gpu-check --fetch: pip download of mpich failed" >&2; exit 1; }
  debs=$(awk '!/^#/ && $2 ~ /\.deb$/ {print $3}' "$pins")
  (cd "$carry" && apt-get download $debs 2>&1 | grep -v "unsandboxed" ) ||
    { echo "gpu-check --fetch: apt-get download failed (a Debian 12 machine's packages are pinned)" >&2; exit 1; }
  (cd "$carry" && awk '!/^#/ {print $1 "  " $2}' "$pins" | sha256sum --check --quiet) ||
    { echo "gpu-check --fetch: a file differs from scripts/gpu-check/carry.pins" >&2; exit 1; }
  ls "$carry" | grep -vxF -f <(awk '!/^#/ {print $2}' "$pins") | sed "s|^|$carry/|" | xargs -r rm -f
  tree=$(cd "$root" && git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
  size=$(du -sb "$carry" | cut -f1)
  echo "gpu-check --fetch: .gpu-carry/ holds $(ls "$carry" | wc -l) files, $((size / 1048576)) MiB;" \
       "with the working tree ($((tree / 1048576)) MiB) $(((size + tree) / 1048576)) MiB of the 64 MiB that travel"
  [ $((size + tree)) -lt $((64 * 1048576)) ] || { echo "gpu-check --fetch: over 64 MiB" >&2; exit 1; }
  exit 0
fi

rm -rf "$out"
mkdir -p "$work" "$out"
# What comes back from the device machine is at most 8 files of $OUT: the results go as one archive.
ship() {
  [ -n "${OUT:-}" ] || return 0
  mkdir -p "$OUT" && tar -czf "$OUT/gpu-check.tar.part" -C "$out" . && mv -f "$OUT/gpu-check.tar.part" "$OUT/gpu-check.tar.gz"
  [ ! -f "$out/summary.md" ] || cp "$out/summary.md" "$OUT/summary.md"
}
budget_stage_hook() { ship; }
# The summary of whatever the stages wrote, on stdout.
summarise() { python3 "$root/scripts/gpu-check/summary.py" --out "$out" --seconds $(( $(date +%s) - budget_began )); }
trap ship EXIT
budget_start "${GPU_CHECK_BUDGET:-450}" "$out/stages.txt"
jobs=$(nproc)
command -v nvcc >/dev/null || PATH=$PATH:/usr/local/cuda/bin  # where an image keeps CUDA off PATH
# nvidia-smi bounded too: on a GPU in a bad state it can block for minutes.
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && timeout -k 5 30 nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
# A bench's CSV, header and rows alone: mpiexec writes its banner about a killed rank to stdout too.
csv_rows() { grep -E '^[a-z_]+,' "$1"; }

# ---- facts --------------------------------------------------------------------------------------
stage facts
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
  if [ $gpu = 1 ]; then
    timeout -k 5 30 nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem,compute_mode --format=csv
    timeout -k 5 30 nvidia-smi topo -m 2>/dev/null | head -5
  else
    echo "GPU: none (nvidia-smi absent or sees no device): the GPU stages SKIP"
  fi
  command -v nvcc >/dev/null && nvcc --version | tail -2
  for c in g++ cc cmake python3; do command -v $c >/dev/null && echo "$c: $($c --version 2>&1 | head -1)"; done
} 2>&1 | tee "$out/facts.txt"

# ---- unpack -------------------------------------------------------------------------------------
stage unpack
if [ ! -f "$pins" ] || ! (cd "$carry" 2>/dev/null && awk '!/^#/ {print $1 "  " $2}' "$pins" | sha256sum --check --quiet); then
  echo "gpu-check: .gpu-carry/ is missing or differs from carry.pins: run scripts/gpu-check.sh --fetch first" \
       "(on a machine with network) and carry .gpu-carry" | tee "$out/summary.md"
  exit 1
fi
deps=$work/deps
mpich=$work/mpich
rm -rf "$deps" "$mpich"
mkdir -p "$deps" "$mpich"
python3 -m zipfile -e "$carry"/mpich-*.whl "$mpich/wheel" >/dev/null
mv "$mpich"/wheel/mpich-*.data/data/* "$mpich"/ && rm -rf "$mpich/wheel"
chmod +x "$mpich"/bin/*
for d in "$carry"/*.deb; do
  if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$d" "$deps"
  else (cd "$work" && ar x "$d" data.tar.xz && tar -xJf data.tar.xz -C "$deps" && rm -f data.tar.xz); fi
done
arch_lib=$deps/usr/lib/x86_64-linux-gnu
export PATH=$mpich/bin:$PATH
export LD_LIBRARY_PATH=$mpich/lib:$arch_lib:$arch_lib/blas:$arch_lib/lapack${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export HYDRA_LAUNCHER=fork          # one machine: no ssh,
echo "localhost:$(nproc)" > "$work/hosts"
export HYDRA_HOST_FILE=$work/hosts  # and no name lookup of the host (a VM may have none)
export UCX_TLS=${UCX_TLS:-self,sm}   # one machine: shared memory, no network devices probed
echo "MPICH: $("$mpich"/bin/mpichversion | head -1); packages: $(ls "$carry" | grep -c '\.deb$') extracted into $deps"

# ---- build --------------------------------------------------------------------------------------
stage build
cuda_args=()
command -v nvcc >/dev/null && cuda_args=(-DTUCOLL_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$(command -v nvcc)")
build=$work/build
BUDGET_REAP=("^$(budget_literal "$build/bin/")" "^$(budget_literal "$mpich/bin/")")  # its programs, its MPI's launcher
# Without a build nothing else runs: it may take all but 150 s (2 cores here: 200 s; 16 there).
{
  bounded 120 150 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda_args[@]}" \
    -DMPI_C_COMPILER="$mpich/bin/mpicc" -DMPIEXEC_EXECUTABLE="$mpich/bin/mpiexec" \
    -DCMAKE_PREFIX_PATH="$deps/usr" -DCMAKE_LIBRARY_PATH="$arch_lib" &&
  bounded 300 150 cmake --build "$build" -j "$jobs" --target tucoll-bench test_ipc_gpu test_ipc_device &&
  if command -v nvcc >/dev/null; then
    bounded 120 150 nvcc -O2 -arch=sm_90 -o "$build/bin/copy_limit" "$root/scripts/gpu-check/copy_limit.cu" &&
    bounded 120 150 nvcc -O2 -arch=sm_90 -o "$build/bin/copy_start" "$root/scripts/gpu-check/copy_start.cu"
  fi
} > "$out/build.log" 2>&1
build_rc=$?
tail -3 "$out/build.log"
if [ $build_rc != 0 ]; then
  echo "gpu-check: the build failed (build.log)"; tail -40 "$out/build.log"
  stage end
  summarise > "$out/summary.md"
  exit 1
fi
bench=$build/bin/tucoll-bench
# run CAP RESERVE NP PROGRAM...: PROGRAM on NP ranks of the carried MPICH, bounded (budget.sh).
run() { bounded "$1" "$2" "$mpich/bin/mpiexec" -np "$3" "${@:4}"; }

# ---- tests --------------------------------------------------------------------------------------
stage tests
{
  echo "# fake device (CPU), np 1-4"
  bounded 120 220 ctest --test-dir "$build" -R "^ipc_device_np" --output-on-failure -j "$jobs"
  if [ $gpu = 1 ]; then
    # Each rank count by itself rather than through ctest (whose --timeout yields to the tests'
    # TIMEOUT of 900 s): a hang costs its own run.
    for np in 1 2 4 8; do
      echo "# real GPU: test_ipc_gpu, np $np"
      run 60 170 $np "$build/bin/test_ipc_gpu"
      case $? in 0) echo "test_ipc_gpu np $np: passed" ;; 124) echo "test_ipc_gpu np $np: TIMEOUT" ;;
                 *) echo "test_ipc_gpu np $np: FAILED" ;; esac
    done
  else
    echo "SKIP: GPU tests (no GPU here)"
  fi
} > "$out/tests.log" 2>&1
grep -E "tests passed|tests failed|test_ipc_gpu np|SKIP|\*\*\*" "$out/tests.log"

# ---- gpu bench ----------------------------------------------------------------------------------
stage "gpu bench"
algs=(--alg ipc:copy=kernel --alg ipc:copy=memcpy --alg ipc:copy=hybrid --alg staged)
if [ $gpu = 1 ]; then
  bounded 30 140 "$build/bin/copy_start" > "$out/copy_start.txt"
  for np in 4 8; do
    for collective in alltoall alltoallv; do
      extra=()
      [ $collective = alltoallv ] && extra=(--dist uniform)
      # The largest blocks in a run of their own: tucoll-bench prints its rows at the end, so a
      # run cut short loses all of them. A CSV per run (alltoall's and alltoallv's columns differ).
      for sizes in 4K,64K,1M 16M; do
        name=gpu_$collective.$np.${sizes%%,*}
        run 60 90 $np "$bench" $collective "${algs[@]}" --sizes $sizes "${extra[@]}" --memory device --check \
            --iters 10 --warmup 3 --format csv > "$work/$name.raw" 2> "$work/$name.err" ||
          { echo "tucoll-bench $collective np $np, $sizes: failed"; tail -5 "$work/$name.err"; }
        csv_rows "$work/$name.raw" > "$out/$name.csv"
      done
    done
    bounded 30 85 "$build/bin/copy_limit" $np 4096 65536 1048576 16777216 >> "$out/copy_limit.txt"
  done
else
  echo "SKIP: tucoll-bench --memory device, the copy limit and the copy starts (no GPU here)"
fi

# ---- cpu bench ----------------------------------------------------------------------------------
stage "cpu bench"
cpu_ranks=$(( jobs < 16 ? jobs : 16 ))
[ $cpu_ranks -lt 2 ] && cpu_ranks=2
CUDA_VISIBLE_DEVICES= run 120 45 $cpu_ranks "$bench" alltoallv --sizes 16,256,1K,4K,16K,64K --dist uniform --check \
    --iters 20 --warmup 3 --format csv > "$work/cpu_bench.raw" 2> "$work/cpu_bench.err" ||
  { echo "tucoll-bench alltoallv (CPU) failed:"; tail -5 "$work/cpu_bench.err"; }
csv_rows "$work/cpu_bench.raw" > "$out/cpu_bench.csv"

# ---- calibrate ----------------------------------------------------------------------------------
# What `tucoll calibrate --here` needs from a machine with cores enough for P = 16 unoversubscribed:
# its microbenchmarks (2 ranks) and the measured alltoallv at P = 2, 4 (fit range), 8 and 16
# (predicted), as python/tucoll/calibrate/here.py names them, alternating in 5 rounds (a file per
# round) as `tucoll calibrate --here` runs them. The fit and the simulation run back home, on the
# results unpacked (tar -xzf gpu-check.tar.gz -C R): `tucoll calibrate --here --probe
# R/machine_probe.*.csv --measured R/here_measured.*.csv --cores N --flavor mpich`.
stage calibrate
for round in 1 2 3 4 5; do
  # Rounds after the first only while a whole round fits what is left: the summary last.
  if [ $round -gt 1 ] && [ "$(budget_left)" -lt 45 ]; then
    echo "calibrate: no round $round and after ($(budget_left) s left)"; break
  fi
  # A probe cut short would stop the fit back home: kept only when it ran to its end.
  CUDA_VISIBLE_DEVICES= run 60 5 2 "$bench" machine > "$work/machine_probe.raw" 2> "$work/machine_probe.err" &&
    csv_rows "$work/machine_probe.raw" > "$out/machine_probe.$round.csv" ||
    { echo "tucoll-bench machine (round $round) failed:"; tail -5 "$work/machine_probe.err"
      rm -f "$out/machine_probe.$round.csv"; }
  measured=$out/here_measured.$round.csv
  for np in 2 4 8 16; do
    [ $np -gt "$jobs" ] && continue
    algs="--alg vendor --alg tuna:radix=2"
    [ $np -ge 4 ] && algs="$algs --alg tuna:radix=4"
    CUDA_VISIBLE_DEVICES= run 60 5 $np "$bench" alltoallv $algs --sizes 16,1024,65536 --dist uniform \
        --iters 20 --format csv > "$work/here.$np.csv" 2> "$work/here.$np.err" ||
      { echo "tucoll-bench alltoallv np $np (calibrate, round $round) failed:"; tail -5 "$work/here.$np.err"; continue; }
    # -s, not -f: the redirection has made the file (empty) before the test runs.
    if [ -s "$measured" ]; then csv_rows "$work/here.$np.csv" | tail -n +2; else csv_rows "$work/here.$np.csv"; fi >> "$measured"
  done
done
echo "calibrate: $(ls "$out"/machine_probe.*.csv 2>/dev/null | wc -l) probes," \
  "$(ls "$out"/here_measured.*.csv 2>/dev/null | wc -l) measurements"

# ---- summary ------------------------------------------------------------------------------------
stage summary
summarise | tee "$out/summary.md" ||
  echo "gpu-check: summary.py failed; the results are in the archive" | tee -a "$out/summary.md"
