#!/usr/bin/env bash
# measure-h200.sh: the benchmarks of docs/BENCHMARKS.md ("How the benchmarks measure") in one go,
# on the GPU machine (a 16-core H200 host), from the repository root, after a bundle was made
# here with ../shared/tools/gpu-bundle (it leaves .gpu/ at the root):
#
#   OUT=/some/folder bash vthreads-demo/scripts/measure-h200.sh
#
# Each step's stdout goes to one file under "$OUT" (flat; 6 files in all), its stderr to the
# terminal and to "$OUT/stderr.log", and its exit code and duration to the terminal and
# "$OUT/steps.txt". A failed step does not stop the next; the script exits 1 if any failed, 2 if
# there is no bundle. Without OUT the files go to a new temporary folder (printed).
#
# Budget, about 8 minutes of wall time in the worst case; expected durations on the H200 (from the
# earlier runs in docs/BENCHMARKS.md; estimates, not measurements of this build):
#   (a) GpuBench sweep kernelsUs=10,200,1000 rounds=1, 10,000 threads: ~105 s expected
#       (10 us ~20 s, 200 us and 1000 us ~40-45 s each: launches per row are capped at 8 s of GPU
#       time); killed after 150 s
#   (b) GpuBench servlet concurrency=100,10000 seconds=8: ~120 s expected (per level a new load
#       generator JVM, its warm-up of at most 5 s, the level of at most 8 s; 3 servers (the HTTP
#       floor, await(), the platform pool) x 2 levels); killed after 200 s
#   (c) WaitLatencyBench, await() and cuStreamSynchronize, empty / 20 us / 200 us kernels, 2,000
#       timed waits after 2,000 warm-up, rounds A and B, CPU per wait side by side: ~20 s
#       expected (12 runs, each on a fresh device, the 200 us ones ~0.9 s of waiting); killed
#       after 60 s; LATENCY_METHODS replaces the methods (e.g. await,await-noprewake,sync)
#   (d) DemoMain --device cuda --iterations 60, 10,000 virtual threads, steady state after a
#       warm-up of the first iteration: ~25 s expected (600,000 steps at ~30,000/s); killed after 70 s
# Limits: 150 + 200 + 60 + 70 = 480 s, plus up to 5 s per step between TERM and KILL: 500 s.
set -o pipefail
set -u

cd "$(dirname "$0")/../.." || exit 2
if [ ! -x .gpu/java ] && [ ! -f .gpu/java ]; then
  echo "measure-h200: no .gpu/java here ($(pwd)): make the bundle first with ../shared/tools/gpu-bundle" >&2
  exit 2
fi
OUT=${OUT:-$(mktemp -d /tmp/measure-h200.XXXXXX)}
mkdir -p "$OUT" || exit 2
echo "measure-h200: results in $OUT"

# shellcheck source=steps.sh
. vthreads-demo/scripts/steps.sh # the repository root, after the cd above

{
  echo "measure-h200: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $(nproc) cores; open-file limit $(ulimit -n)"
  cat .gpu/INFO 2>/dev/null
  nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not found"
} | tee "$OUT/steps.txt"

# Unpack the bundled runtime once, outside the timed steps.
bash .gpu/java -version > /dev/null 2>&1 || { echo "measure-h200: the bundled java does not start" | tee -a "$OUT/steps.txt"; exit 2; }

step "(a) sweep" sweep.md 150 \
  bash .gpu/java io.cudaloom.bench.GpuBench sweep kernelsUs=10,200,1000 rounds=1
step "(b) servlet" servlet.md 200 \
  bash .gpu/java io.cudaloom.bench.GpuBench servlet concurrency=100,10000 seconds=8
step "(c) wait latency" latency.md 60 \
  bash .gpu/java io.cudaloom.bench.WaitLatencyBench iterations=2000 warmup=2000 methods="${LATENCY_METHODS:-await,sync}" kernelsUs=0,20,200
step "(d) demo steady state" demo.txt 70 \
  bash .gpu/java io.cudaloom.demo.DemoMain --device cuda --iterations 60

echo "measure-h200: $failed step(s) failed; files: $(cd "$OUT" && ls | tr '\n' ' ')" | tee -a "$OUT/steps.txt"
[ "$failed" -eq 0 ]
