#!/usr/bin/env bash
# gpu-minimal.sh: every load benchmark of issue #37 beside MinimalReactor, the same work waited for the same
# way by the fewest parts (no project code), in one call: the driver's floor; the per-op demo and MinimalReactor's
# demo step, alternating; the servlet's await() server beside its HTTP floor, its held floor and the same server
# on MinimalReactor, twice; the 10 us, 200 us and 1 ms sweeps (await(), the 8-thread ceiling, the blocking-sync
# pool) beside MinimalReactor's sweep step at the same kernel times; MinimalReactor with a device-wide cap on the
# threads draining at once (its demo and 10 us steps). The library's own CPU per completion is the difference
# from MinimalReactor in the same run.
#   bash vthreads-demo/scripts/gpu-minimal.sh        (on the GPU machine, after gpu-bundle; OUT must be set:
#   every output comes back as $OUT/results.tgz, with $OUT/summary.txt)
# Knobs: ITER (demo iterations, 200), ROUNDS (demo and servlet rounds, 2), DRAINERS (caps on threads draining at
# once, 2 4), SKIP (step names).
set -u
cd "$(dirname "$0")/../.."
. vthreads-demo/scripts/steps.sh
packed_steps gpu-minimal-steps
J="bash .gpu/java"
M=io.cudaloom.bench.MinimalReactor
ITER=${ITER:-200}
want floor && step floor floor.md 120 $J io.cudaloom.bench.DriverContention 20000 ops=DEMO_STEP,SWEEP_STEP,SPIN_10US
for r in $(seq 1 "${ROUNDS:-2}"); do
  want demo && step "demo-$r" "demo-$r.txt" 60 $J io.cudaloom.demo.DemoMain --iterations "$ITER" --baseline off
  want minimal && step "minimal-$r" "minimal-$r.txt" 60 $J $M iterations="$ITER"
done
# the fewest threads in the driver: MinimalReactor with a device-wide cap on threads draining at once
for d in ${DRAINERS:-2 4}; do
  want drainers && step "minimal-d$d" "minimal-d$d.txt" 60 $J $M iterations="$ITER" drainers="$d"
  want drainers && step "minimal-10us-d$d" "minimal-10us-d$d.txt" 60 $J $M kernelUs=10 iterations=100 drainers="$d"
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  want servlet && step "servlet-$r" "servlet-$r.md" 150 $J -Dservlet.servers=floor,await,held,minimal \
    io.cudaloom.bench.GpuBench servlet concurrency=10000 seconds=5
done
want sweep && step sweep sweep.md 90 $J -Dsweep.rows=AWAIT,CEILING_8,POOL_BLOCKING io.cudaloom.bench.GpuBench sweep \
  kernelsUs=10 rounds=1
want sweep && step minimal-10us minimal-10us.txt 60 $J $M kernelUs=10 iterations=100
want sweep-long && step sweep-long sweep-long.md 150 $J -Dsweep.rows=AWAIT,CEILING_8,POOL_BLOCKING \
  io.cudaloom.bench.GpuBench sweep kernelsUs=200,1000 awaitsPerThread=8 rounds=1
want sweep-long && step minimal-200us minimal-200us.txt 60 $J $M kernelUs=200 iterations=8
want sweep-long && step minimal-1ms minimal-1ms.txt 60 $J $M kernelUs=1000 threads=8000 iterations=8
{
  echo "-- floor"; grep -E "^### |^\| [0-9]" "$OUT/floor.md" 2>/dev/null
  for f in "$OUT"/demo-*.txt "$OUT"/minimal-*.txt; do echo "-- $(basename "$f")"; grep -E "^summary" "$f" 2>/dev/null; done
  for f in "$OUT"/servlet-*.md; do echo "-- $(basename "$f")"; grep -E "^\| (Jetty|10,000)" "$f" 2>/dev/null | cut -c1-260; done
  for f in sweep sweep-long; do echo "-- $f"; grep -E "^\| (\`await|ceiling: 8|pool: 64 platform threads)" "$OUT/$f.md" 2>/dev/null | cut -c1-220; done
} > "$OUT/summary.txt"
pack
cat "$OUT/summary.txt"
exit "$failed"
