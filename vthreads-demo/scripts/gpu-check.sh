#!/usr/bin/env bash
# gpu-check.sh: one device call that checks a build on the GPU: the GPU suite, the lifetime stress
# (streams and devices closed under load, a fault under 10,000 waiters) and, unless LATENCY=0, the
# wait-latency benchmark twice with the methods in LATENCY_METHODS, and with SWEEP_KERNELS set
# GpuBench's sweep (the load path) on those kernel times; with DEMO=1 the demo as a new user runs it
# (the await() run beside its platform-pool baseline and its batched run, --batch DEMO_BATCH, default
# 64; and --load; each with its --report
# page); with FLOOR=1 the driver's floor (DriverContention) in the same call; with GRAPH=1 the demo's
# step op by op against a CUDA graph of it (GraphStep, GRAPH_STEPS per thread); with SERVLET=1 the
# servlet benchmark (GpuBench servlet: floor, await(), batched, the spinning and the blocking-sync
# 200-thread pools) at SERVLET_CONCURRENCY (default 100,10000), SERVLET_SECONDS per level (default 5);
# CHURN_SECONDS sets the lifetime stress's churn (LIFETIME=0 skips it). Every output is packed into
# "$OUT/results.tgz" after each step, so a call cut short still brings back what ran.
# From the repository root, after ../shared/tools/gpu-bundle && bash vthreads-demo/scripts/gpu-trim.sh:
#   bash vthreads-demo/scripts/gpu-check.sh
set -u
R=$(mktemp -d /tmp/gpu-check.XXXXXX)
pack() { tar czf "$OUT/results.tgz" -C "$R" . 2>/dev/null; }
{ date -u; git log -1 --format='%H %s' 2>/dev/null; git status --short 2>/dev/null; cat .gpu/INFO 2>/dev/null; } > "$R/info.txt"
timeout "${JUNIT_TIMEOUT:-200}" bash .gpu/junit > "$R/junit.txt" 2>&1; echo "junit exit $?" >> "$R/info.txt"; pack
if [ "${LIFETIME:-1}" = 1 ]; then
  timeout 240 bash .gpu/java io.cudaloom.bench.LifetimeStress all --seconds "${CHURN_SECONDS:-30}" \
    > "$R/lifetime.txt" 2>&1; echo "lifetime exit $?" >> "$R/info.txt"; pack
fi
if [ "${DEMO:-0}" = 1 ]; then # what ./demo runs (no Maven there: the bundle's java), and --load
  timeout 150 bash .gpu/java io.cudaloom.demo.DemoMain --iterations "${DEMO_ITERATIONS:-20}" --batch "${DEMO_BATCH:-64}" \
    --report "$R/demo-report.html" > "$R/demo.txt" 2> "$R/demo.err"; echo "demo exit $?" >> "$R/info.txt"; pack
  timeout 200 bash .gpu/java io.cudaloom.demo.DemoMain --load --seconds "${LOAD_SECONDS:-5}" \
    --report "$R/load-report.html" > "$R/load.txt" 2> "$R/load.err"; echo "load exit $?" >> "$R/info.txt"; pack
fi
if [ "${FLOOR:-0}" = 1 ]; then # the driver's floor for the same submissions, in the same call
  timeout 120 bash .gpu/java io.cudaloom.bench.DriverContention "${FLOOR_STEPS:-30000}" \
    > "$R/floor.md" 2> "$R/floor.err"; echo "floor exit $?" >> "$R/info.txt"; pack
fi
if [ "${GRAPH:-0}" = 1 ]; then # the demo's fixed step op by op and as a CUDA graph (#39 item 3)
  timeout 120 bash .gpu/java io.cudaloom.bench.GraphStep perThread="${GRAPH_STEPS:-30000}" threads=1,8 \
    > "$R/graph.md" 2> "$R/graph.err"; echo "graph exit $?" >> "$R/info.txt"; pack
fi
if [ "${SERVLET:-0}" = 1 ]; then # Jetty: await() and batched against both 200-thread pools (#37, #39)
  timeout 240 bash .gpu/java io.cudaloom.bench.GpuBench servlet concurrency="${SERVLET_CONCURRENCY:-100,10000}" \
    seconds="${SERVLET_SECONDS:-5}" > "$R/servlet.md" 2> "$R/servlet.err"; echo "servlet exit $?" >> "$R/info.txt"; pack
fi
if [ "${LATENCY:-1}" = 1 ]; then
  for i in 1 2; do
    timeout 150 bash .gpu/java io.cudaloom.bench.WaitLatencyBench iterations=2000 warmup=2000 \
      methods="${LATENCY_METHODS:-await,await-defer,sync}" kernelsUs="${LATENCY_KERNELS:-0,20,200}" \
      > "$R/latency-$i.md" 2> "$R/latency-$i.err"; echo "latency $i exit $?" >> "$R/info.txt"; pack
  done
fi
if [ -n "${SWEEP_KERNELS:-}" ]; then # the load path: GpuBench's sweep against its anchors, e.g. SWEEP_KERNELS=10,200,1000
  timeout 200 bash .gpu/java io.cudaloom.bench.GpuBench sweep kernelsUs="$SWEEP_KERNELS" rounds=1 \
    > "$R/sweep.md" 2> "$R/sweep.err"; echo "sweep exit $?" >> "$R/info.txt"
fi
pack
grep -E "tests (successful|failed|aborted|found)" "$R/junit.txt"; grep -E "^(PASS|FAIL|ALL|NOT)" "$R/lifetime.txt" 2>/dev/null
grep -E "StreamOrderedFreeGpuTest" "$R/junit.txt" | head -4
[ -f "$R/demo.txt" ] && sed -n '/^side by side/,$p' "$R/demo.txt"
[ -f "$R/servlet.md" ] && awk '/^### Against the pools/ { f = 1 } f && /^- / { exit } f' "$R/servlet.md"
cat "$R/info.txt"
