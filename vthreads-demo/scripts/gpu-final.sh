#!/usr/bin/env bash
# gpu-final.sh: one device call that measures a build for its closing notes, most important first
# (a call cut short still brings back what ran): the GPU suite; the lifetime stress; the demo with
# its batched run, submission by combining against direct submission (-Dcudaloom.submission); the
# batched demo and the 10 us sweep with the hot driver calls as FFM downcalls (-Dcudaloom.driverCalls=ffm);
# the driver's floor; the 10 us sweep both ways; the JDK's own floor for a batched blocking call
# (VirtualThreadHandOff, default carriers and 4, unpaced and paced at the rates of long kernels); the batched demo on 4 carriers; the one-waiter
# latency both ways; the 200 us and 1 ms sweeps both ways; the servlet benchmark with both pools; a JFR
# profile of the batched demo. Each step's output is one file of "$OUT/results.tgz" (packed again
# after every step, so a call cut short still brings back what ran; a device call brings back only
# a few files, so everything travels in that one), whose steps.txt has each step's exit code and
# duration; "$OUT/summary.txt" is the summary. Budget about 540 s of wall time (SKIP="demo-ffm sweep-ffm": 480).
# From the repository root, after ../shared/tools/gpu-bundle && bash vthreads-demo/scripts/gpu-trim.sh:
#   bash vthreads-demo/scripts/gpu-final.sh > /dev/null; cat "$OUT/summary.txt"   (then unpack $OUT/results.tgz)
# Knobs: SKIP="suite lifetime ..." leaves steps out (names as in the step lines below); SERVLET_LEVELS
# (default 100,10000) the servlet's concurrency levels; SERVLET_SERVERS (default: the five) the servlet step's
# servers (-Dservlet.servers, e.g. floor,await,spinning,blocking,held,minimal).
set -u
cd "$(dirname "$0")/../.." || exit 2
DEST=${OUT:-$(mktemp -d /tmp/gpu-final.XXXXXX)}
mkdir -p "$DEST" || exit 2
OUT=$(mktemp -d /tmp/gpu-final-steps.XXXXXX) # the steps write here (steps.sh); pack() carries it to DEST
pack() { tar czf "$DEST/results.tgz" -C "$OUT" . 2>/dev/null; }
. vthreads-demo/scripts/steps.sh
{
  date -u; cat .gpu/INFO 2>/dev/null; nproc
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
} > "$OUT/steps.txt"
bash .gpu/java -version > /dev/null 2>&1 || { echo "the bundled java does not start" >> "$OUT/steps.txt"; exit 2; }
want() { case " ${SKIP:-} " in *" $1 "*) return 1 ;; *) return 0 ;; esac; }
eval "$(declare -f step | sed '1s/^step/run_one_step/')" # steps.sh's step, then pack
step() { run_one_step "$@"; pack; }
J="bash .gpu/java"

want suite && step suite junit.txt 150 bash .gpu/junit
want suite-ffm && step suite-ffm junit-ffm.txt 150 env JAVA_TOOL_OPTIONS=-Dcudaloom.driverCalls=ffm bash .gpu/junit
want suite-direct && step suite-direct junit-direct.txt 150 env JAVA_TOOL_OPTIONS=-Dcudaloom.submission=direct bash .gpu/junit
want demo && step demo demo-combining.txt 100 $J -Dcudaloom.submission=combining io.cudaloom.demo.DemoMain \
  --iterations 20 --batch 64 --report "$OUT/demo-report.html"
want demo && step demo-direct demo-direct.txt 60 $J -Dcudaloom.submission=direct io.cudaloom.demo.DemoMain \
  --iterations 20 --baseline off
# the hot driver calls through FFM downcalls instead of JCuda (TUNING: "Driver calls: JCuda or FFM downcalls"); each
# prints which binding it got ("driver calls: ffm", or "jcuda (why)"): the demo on stderr, the sweep in its header
want demo-ffm && step demo-ffm demo-ffm.txt 60 $J --enable-native-access=ALL-UNNAMED -Dcudaloom.driverCalls=ffm \
  io.cudaloom.demo.DemoMain --iterations 20 --batch 64 --baseline off
want sweep-ffm && step sweep-ffm sweep-ffm.md 60 $J --enable-native-access=ALL-UNNAMED -Dcudaloom.driverCalls=ffm \
  -Dsweep.rows=AWAIT,BATCHED,CEILING_8 io.cudaloom.bench.GpuBench sweep kernelsUs=10 rounds=1
# the batched demo beside the per-op one on 4 carriers (TUNING: "Virtual-thread carriers for batched calls")
# (200 iterations: at 800 k completions/s, 20 iterations leave a steady state of a quarter second, with the JIT still compiling)
want demo-p4 && step demo-p4 demo-p4.txt 90 $J -Djdk.virtualThreadScheduler.parallelism=4 io.cudaloom.demo.DemoMain \
  --iterations "${LONG_ITERATIONS:-200}" --batch 64 --baseline off
want demo-long && step demo-long demo-long.txt 90 $J io.cudaloom.demo.DemoMain \
  --iterations "${LONG_ITERATIONS:-200}" --batch 64 --baseline off
want floor && step floor floor.md 60 $J io.cudaloom.bench.DriverContention 20000
want sweep && step sweep sweep-combining.md 60 $J -Dcudaloom.submission=combining io.cudaloom.bench.GpuBench sweep kernelsUs=10 rounds=1
want sweep && want sweep-p4 && step sweep-p4 sweep-p4.md 60 $J -Dsweep.rows=AWAIT,BATCHED,CEILING_8 -Djdk.virtualThreadScheduler.parallelism=4 io.cudaloom.bench.GpuBench sweep kernelsUs=10 rounds=1
want sweep && want sweep-direct && step sweep-direct sweep-direct.md 60 $J -Dcudaloom.submission=direct io.cudaloom.bench.GpuBench sweep kernelsUs=10 rounds=1
want latency && step latency-combining latency-combining.md 60 $J -Dcudaloom.submission=combining io.cudaloom.bench.WaitLatencyBench \
  iterations=2000 warmup=2000 methods=await,sync kernelsUs=0,20,200
want latency && want latency-direct && step latency-direct latency-direct.md 60 $J -Dcudaloom.submission=direct io.cudaloom.bench.WaitLatencyBench \
  iterations=2000 warmup=2000 methods=await,sync kernelsUs=0,20,200
want lifetime && step lifetime lifetime.txt 100 $J io.cudaloom.bench.LifetimeStress all --seconds "${CHURN_SECONDS:-10}"
# the long kernels: the await() row, the 8-thread ceiling and the blocking-sync pool (-Dsweep.rows), on the
# default carriers and on 4; LONG_AWAITS=100 is the sweep's full size (8 s a row)
LONG_ROWS="-Dsweep.rows=${LONG_ROWS:-AWAIT,CEILING_8,POOL_BLOCKING}"
want sweep-long && step sweep-long-combining sweep-long-combining.md "${LONG_LIMIT:-120}" $J "$LONG_ROWS" -Dcudaloom.submission=combining io.cudaloom.bench.GpuBench sweep kernelsUs=200,1000 awaitsPerThread="${LONG_AWAITS:-8}" rounds=1
want sweep-long && want sweep-long-p4 && step sweep-long-p4 sweep-long-p4.md "${LONG_LIMIT:-120}" $J "$LONG_ROWS" -Djdk.virtualThreadScheduler.parallelism=4 -Dcudaloom.submission=combining io.cudaloom.bench.GpuBench sweep kernelsUs=200,1000 awaitsPerThread="${LONG_AWAITS:-8}" rounds=1
want sweep-long && want sweep-long-direct && step sweep-long-direct sweep-long-direct.md "${LONG_LIMIT:-120}" $J "$LONG_ROWS" -Dcudaloom.submission=direct io.cudaloom.bench.GpuBench sweep kernelsUs=200,1000 awaitsPerThread="${LONG_AWAITS:-8}" rounds=1
want handoff && step handoff handoff.md 40 $J io.cudaloom.bench.VirtualThreadHandOff threads=10000 perThread=20
want handoff && step handoff-p4 handoff-p4.md 40 $J -Djdk.virtualThreadScheduler.parallelism=4 io.cudaloom.bench.VirtualThreadHandOff threads=10000 perThread=20
want handoff && step handoff-paced handoff-paced.md 40 $J io.cudaloom.bench.VirtualThreadHandOff threads=8000 perThread=1 batch=1 delivery=platform rate=8000,40000
want handoff && step handoff-paced-p4 handoff-paced-p4.md 40 $J -Djdk.virtualThreadScheduler.parallelism=4 io.cudaloom.bench.VirtualThreadHandOff threads=8000 perThread=1 batch=1 delivery=platform rate=8000,40000
want servlet && step servlet servlet.md 200 $J ${SERVLET_SERVERS:+-Dservlet.servers=$SERVLET_SERVERS} io.cudaloom.bench.GpuBench servlet concurrency="${SERVLET_LEVELS:-100,10000}" seconds=5
# the same servers with the reactor's relayed wake-ups off (ReactorConfig.relayWakeups; a benchmark knob), for the tail
# the same servers loaded by platform-thread workers (one per connection, woken by the kernel): the client's own
# virtual-thread scheduling out of the measured latency, for the tail
want servlet-platform-client && step servlet-platform-client servlet-platform-client.md 200 $J -Dloadgen.threads=platform io.cudaloom.bench.GpuBench servlet concurrency="${SERVLET_LEVELS:-100,10000}" seconds=5
want servlet-norelay && step servlet-norelay servlet-norelay.md 200 $J -Dservlet.relayWakeups=false io.cudaloom.bench.GpuBench servlet concurrency="${SERVLET_LEVELS:-100,10000}" seconds=5
want jfr && step jfr demo-jfr.txt 60 $J -XX:StartFlightRecording=filename="$OUT/batch.jfr",settings=profile \
  io.cudaloom.demo.DemoMain --iterations 20 --batch 64 --baseline off

{
  cat "$OUT/steps.txt"
  for f in junit junit-ffm junit-direct; do echo "-- $f"; grep -E "tests (found|successful|failed|aborted)|✘" "$OUT/$f.txt" 2>/dev/null | cut -c1-300; done
  grep -E "^(PASS|FAIL|ALL|NOT)" "$OUT/lifetime.txt" 2>/dev/null
  awk '/^== /{s=$2} /^driver calls:/{print "-- " s ": " $0}' "$OUT/stderr.log" 2>/dev/null
  grep -H "^driver calls:" "$OUT"/sweep-*.md 2>/dev/null | sed "s|^$OUT/||"
  grep "driver calls:" "$OUT/stderr.log" 2>/dev/null | sort | uniq -c
  for f in demo-combining demo-direct demo-ffm demo-p4 demo-long; do echo "-- $f"; grep -E "^summary|completions/s|CPU per completion" "$OUT/$f.txt" 2>/dev/null | head -8; done
  for f in sweep-combining sweep-p4 sweep-direct sweep-ffm sweep-long-combining sweep-long-p4 sweep-long-direct; do echo "-- $f"; grep -E "^\| (\`await|batched|ceiling: 8|pool: 64 platform threads, launch \+ .cuStream)" "$OUT/$f.md" 2>/dev/null | cut -c1-200; done
  for f in latency-combining latency-direct; do echo "-- $f"; grep -E "^\| " "$OUT/$f.md" 2>/dev/null | cut -c1-160 | head -12; done
  for f in handoff handoff-p4 handoff-paced handoff-paced-p4; do echo "-- $f"; grep -h "^| " "$OUT/$f.md" 2>/dev/null; done
} > "$OUT/summary.txt"
pack
cp "$OUT/summary.txt" "$DEST/summary.txt"
exit $(( failed > 0 ))
