#!/usr/bin/env bash
# gpu-drainers.sh: one device call for a build with the device-wide cap on drainers (ReactorConfig.drainers,
# -Dcudaloom.drainers), most important first (a call cut short still brings back what ran): the GPU suite and
# LifetimeStress on the build (default settings); the demo with no cap, a cap of 2 and of 4, alternating,
# beside MinimalReactor with the same caps; the servlet at 10,000 concurrent with both pools, the held floor
# and MinimalReactor; the servlet's await() server with a cap of 2 (its floor beside it); the driver's floor;
# the 10 us sweep with no cap and a cap of 2. The library's own CPU per completion is the difference from
# MinimalReactor in the same run, and the cap's saving the difference between its rows.
#   OUT=$OUT bash vthreads-demo/scripts/gpu-drainers.sh > $OUT/console.txt 2>&1   (on the GPU machine, after
#   ../shared/tools/gpu-bundle && bash vthreads-demo/scripts/gpu-trim.sh; every output comes back in
#   $OUT/results.tgz, with $OUT/summary.txt)
# Knobs: ITER (demo iterations, 200), ROUNDS (demo rounds, 2), CAPS (the caps, "2 4"), SKIP (step names:
# suite lifetime demo minimal servlet servlet-cap floor sweep).
set -u
cd "$(dirname "$0")/../.."
. vthreads-demo/scripts/steps.sh
packed_steps gpu-drainers-steps
J="bash .gpu/java"
M=io.cudaloom.bench.MinimalReactor
ITER=${ITER:-200}
CAPS=${CAPS:-2 4}
want suite && step suite junit.txt 150 bash .gpu/junit
want lifetime && step lifetime lifetime.txt 100 $J io.cudaloom.bench.LifetimeStress all --seconds "${CHURN_SECONDS:-10}"
for r in $(seq 1 "${ROUNDS:-2}"); do
  want demo && step "demo-$r" "demo-$r.txt" 60 $J io.cudaloom.demo.DemoMain --iterations "$ITER" --baseline off
  for c in $CAPS; do
    want demo && step "demo-d$c-$r" "demo-d$c-$r.txt" 60 $J -Dcudaloom.drainers="$c" io.cudaloom.demo.DemoMain \
      --iterations "$ITER" --baseline off
  done
  if [ "$r" = 1 ]; then
    want minimal && step minimal minimal.txt 60 $J $M iterations="$ITER"
    for c in $CAPS; do
      want minimal && step "minimal-d$c" "minimal-d$c.txt" 60 $J $M iterations="$ITER" drainers="$c"
    done
  fi
done
want servlet && step servlet servlet.md 200 $J -Dservlet.servers=floor,await,spinning,blocking,held,minimal \
  io.cudaloom.bench.GpuBench servlet concurrency=10000 seconds=5
for c in $CAPS; do
  want servlet-cap && step "servlet-d$c" "servlet-d$c.md" 90 $J -Dcudaloom.drainers="$c" -Dservlet.servers=floor,await \
    io.cudaloom.bench.GpuBench servlet concurrency=10000 seconds=5
  break # one cap: the first of CAPS
done
want floor && step floor floor.md 90 $J io.cudaloom.bench.DriverContention 20000 ops=DEMO_STEP,SWEEP_STEP,SPIN_10US
want sweep && step sweep sweep.md 60 $J -Dsweep.rows=AWAIT,CEILING_8 io.cudaloom.bench.GpuBench sweep kernelsUs=10 rounds=1
for c in $CAPS; do
  want sweep && step "sweep-d$c" "sweep-d$c.md" 60 $J -Dcudaloom.drainers="$c" -Dsweep.rows=AWAIT \
    io.cudaloom.bench.GpuBench sweep kernelsUs=10 rounds=1
  break
done
{
  echo "-- suite"; grep -E "tests (found|successful|skipped|failed)" "$OUT/junit.txt" 2>/dev/null
  echo "-- lifetime"; grep -E "PASSED|FAILED" "$OUT/lifetime.txt" 2>/dev/null | tail -3
  echo "-- floor"; grep -E "^### |^\| [0-9]" "$OUT/floor.md" 2>/dev/null
  for f in "$OUT"/demo-*.txt "$OUT"/minimal*.txt; do
    echo "-- $(basename "$f")"; grep -E "^summary|scanner CPU" "$f" 2>/dev/null
  done
  for f in "$OUT"/servlet*.md; do echo "-- $(basename "$f")"; grep -E "^\| (Jetty|10,000)" "$f" 2>/dev/null | cut -c1-260; done
  for f in "$OUT"/sweep*.md; do echo "-- $(basename "$f")"; grep -E "^\| (\`await|ceiling: 8)" "$f" 2>/dev/null | cut -c1-220; done
} > "$OUT/summary.txt"
pack
cat "$OUT/summary.txt"
exit "$failed"
