#!/usr/bin/env bash
# gpu-carriers.sh: the per-op demo (one await() per step) beside MinimalReactor (the same steps waited for
# the same way by the fewest parts, no project code) and the driver's floor for its step, in one call, by the
# JDK scheduler's carriers and by streams; the servlet's await() server beside its floors and the same
# server on MinimalReactor; then the 200 us and 1 ms sweeps. What the demo's CPU per completion
# owes to the library, to the virtual-thread scheduler (carriers) and to the number of streams (drainers in
# the driver at once), each ratio within this one run.
#   bash vthreads-demo/scripts/gpu-carriers.sh        (on the GPU machine, after gpu-bundle; OUT must be set:
#   every output comes back as $OUT/results.tgz, with $OUT/summary.txt)
# Knobs: ITER (demo iterations, 200), ROUNDS (rounds of the demo rows, 2), SKIP (step names), CARRIERS (8),
# STREAMS (4 16).
set -u
cd "$(dirname "$0")/../.."
. vthreads-demo/scripts/steps.sh
packed_steps gpu-carriers-steps
J="bash .gpu/java"
ITER=${ITER:-200}
want floor && step floor floor.md 120 $J io.cudaloom.bench.DriverContention 20000 ops=DEMO_STEP,SWEEP_STEP,SPIN_10US
for r in $(seq 1 "${ROUNDS:-2}"); do
  want demo && step "demo-$r" "demo-$r.txt" 60 $J io.cudaloom.demo.DemoMain --iterations "$ITER" --baseline off
  want minimal && step "minimal-$r" "minimal-$r.txt" 60 $J io.cudaloom.bench.MinimalReactor iterations="$ITER"
  for p in ${CARRIERS:-8}; do
    want demo-p && step "demo-p$p-$r" "demo-p$p-$r.txt" 60 $J -Djdk.virtualThreadScheduler.parallelism="$p" \
      io.cudaloom.demo.DemoMain --iterations "$ITER" --baseline off
    want minimal-p && step "minimal-p$p-$r" "minimal-p$p-$r.txt" 60 $J -Djdk.virtualThreadScheduler.parallelism="$p" \
      io.cudaloom.bench.MinimalReactor iterations="$ITER"
  done
  for s in ${STREAMS:-4 16}; do
    want demo-s && step "demo-s$s-$r" "demo-s$s-$r.txt" 60 $J io.cudaloom.demo.DemoMain --iterations "$ITER" \
      --baseline off --streams "$s"
  done
done
want servlet && step servlet servlet.md 150 $J -Dservlet.servers=floor,await,held,minimal io.cudaloom.bench.GpuBench \
  servlet concurrency=10000 seconds=5
want sweep-long && step sweep-long sweep-long.md 150 $J -Dsweep.rows=AWAIT,CEILING_8,POOL_BLOCKING \
  io.cudaloom.bench.GpuBench sweep kernelsUs=200,1000 awaitsPerThread=8 rounds=1
{
  echo "-- floor"; grep -E "^### |^\| [0-9]" "$OUT/floor.md" 2>/dev/null
  for f in "$OUT"/demo-*.txt "$OUT"/minimal-*.txt; do echo "-- $(basename "$f")"; grep -E "^summary" "$f" 2>/dev/null; done
  echo "-- servlet"; grep -E "^\| (Jetty|10,000)" "$OUT/servlet.md" 2>/dev/null | cut -c1-260
  echo "-- sweep-long"; grep -E "^\| (\`await|ceiling: 8|pool: 64 platform threads)" "$OUT/sweep-long.md" 2>/dev/null | cut -c1-220
} > "$OUT/summary.txt"
pack
cat "$OUT/summary.txt"
exit "$failed"
