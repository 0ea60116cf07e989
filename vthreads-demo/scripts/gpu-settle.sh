#!/usr/bin/env bash
# gpu-settle.sh: a build whose shared writes' settle runs on the group's founder (Waiter item 5) against
# the build before it, in one device call, most important first (a call cut short still brings back what
# ran): the GPU suite and LifetimeStress on the new build; then, alternating old and new (each round the
# reverse of the one before), the servlet at 10,000 concurrent with both pools and MinimalReactor beside the
# await() server (its p99 against both pools is issue #37's target), the demo, the 10 us sweep, and the
# one-waiter latency; last the driver's floor. The old build is .gpu/old/core.jar, the old commit's core jar
# (`mvn -pl core -am package -DskipTests` of that commit), run with the new build's other classes, so the
# A/B is the core's change alone (as gpu-ab-builds.sh does).
#   OUT=$OUT bash vthreads-demo/scripts/gpu-settle.sh > $OUT/console.txt 2>&1   (on the GPU machine, after
#   ../shared/tools/gpu-bundle && bash vthreads-demo/scripts/gpu-trim.sh and the old jar copied in; every
#   output comes back in $OUT/results.tgz, with $OUT/summary.txt)
# Expected wall time on an H100, from s19's step durations: about 330 s (suite 50, lifetime 11, four servlet runs of
# five servers about 45 each, four demos about 8 each, the sweeps, the latency, the floor).
# Knobs: SKIP (step names: suite lifetime servlet demo sweep latency floor), ROUNDS (alternating rounds of
# the servlet and the demo, 2), ITER (demo iterations, 200), SERVLET_SERVERS (the servlet's servers,
# floor,await,spinning,blocking,minimal).
set -u
cd "$(dirname "$0")/../.."
. vthreads-demo/scripts/steps.sh
packed_steps gpu-settle-steps
ITER=${ITER:-200}
[ -f .gpu/old/core.jar ] || echo "no .gpu/old/core.jar: the old build's steps fail" >> "$OUT/steps.txt"
# The old build: its (multi-release) core jar in place of the bundle's core classes and jars, with the new
# build's other classes (gpu-ab-builds.sh's OLDCP for .gpu/old/core.jar), as a launcher of its own (step runs
# its command under timeout, which takes no shell function).
OLD="$PWD/.gpu/old/java"
mkdir -p .gpu/old
cat > "$OLD" <<'LAUNCHER'
#!/usr/bin/env bash
cd "$(dirname "$0")/../.." || exit 2
source .gpu/env.sh
LIBS=$(ls .gpu/lib/*.jar | grep -v 'cuda-loom-core' | tr '\n' ':')
OLDCP=.gpu/old/core.jar:$(ls -d .gpu/cp/* | grep -v -- 'core' | tr '\n' ':').gpu/cp/core-test-classes:${LIBS%:}
exec "$J/bin/java" "${JOPTS[@]}" -cp "$OLDCP" "$@"
LAUNCHER
J="bash .gpu/java"
want suite && step suite junit.txt 150 bash .gpu/junit
want lifetime && step lifetime lifetime.txt 100 $J io.cudaloom.bench.LifetimeStress all --seconds "${CHURN_SECONDS:-10}"
SERVERS=${SERVLET_SERVERS:-floor,await,spinning,blocking,minimal}
for r in $(seq 1 "${ROUNDS:-2}"); do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for b in $order; do
    run=$J; [ "$b" = old ] && run="bash $OLD"
    want servlet && step "servlet-$b-$r" "servlet-$b-$r.md" 200 $run -Dservlet.servers="$SERVERS" \
      io.cudaloom.bench.GpuBench servlet concurrency=10000 seconds=5
  done
  for b in $order; do
    run=$J; [ "$b" = old ] && run="bash $OLD"
    want demo && step "demo-$b-$r" "demo-$b-$r.txt" 60 $run io.cudaloom.demo.DemoMain --iterations "$ITER" --baseline off
  done
done
for b in old new; do
  run=$J; [ "$b" = old ] && run="bash $OLD"
  want sweep && step "sweep-$b" "sweep-$b.md" 60 $run -Dsweep.rows=AWAIT,CEILING_8 io.cudaloom.bench.GpuBench sweep \
    kernelsUs=10 rounds=1
done
for b in old new; do
  run=$J; [ "$b" = old ] && run="bash $OLD"
  want latency && step "latency-$b" "latency-$b.md" 90 $run io.cudaloom.bench.WaitLatencyBench iterations=2000 \
    warmup=auto methods=await,sync kernelsUs=0,20,200
done
want floor && step floor floor.md 90 $J io.cudaloom.bench.DriverContention 20000 ops=DEMO_STEP,SWEEP_STEP,SPIN_10US
{
  echo "-- suite"; grep -E "tests (found|successful|skipped|aborted|failed)" "$OUT/junit.txt" 2>/dev/null
  echo "-- lifetime"; grep -E "PASSED|FAILED" "$OUT/lifetime.txt" 2>/dev/null | tail -3
  echo "-- floor"; grep -E "^### |^\| [0-9]" "$OUT/floor.md" 2>/dev/null
  for f in "$OUT"/demo-*.txt; do echo "-- $(basename "$f")"; grep -E "^summary|scanner CPU" "$f" 2>/dev/null; done
  for f in "$OUT"/servlet-*.md; do echo "-- $(basename "$f")"; grep -E "^\| (Jetty|10,000)" "$f" 2>/dev/null | cut -c1-260; done
  for f in "$OUT"/sweep-*.md; do echo "-- $(basename "$f")"; grep -E "^\| (\`await|ceiling: 8)" "$f" 2>/dev/null | cut -c1-220; done
  for f in "$OUT"/latency-*.md; do echo "-- $(basename "$f")"; grep -E "^\| " "$f" 2>/dev/null | cut -c1-200 | head -12; done
} > "$OUT/summary.txt"
pack
cat "$OUT/summary.txt"
exit "$failed"
