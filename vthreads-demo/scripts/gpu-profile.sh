#!/usr/bin/env bash
# gpu-profile.sh: one device call that shows where the CPU per completion goes: JFR profiles (settings=profile)
# of the per-op demo and of the 1 ms sweep's await() row, the 200 us and 1 ms sweeps beside the 8-thread ceiling,
# the per-op demo at 200 iterations, the JDK's own hand-off (VirtualThreadHandOff) and the process's idle CPU.
# Everything is packed into "$OUT/results.tgz" (the .jfr files beside the outputs), "$OUT/summary.txt" the summary.
# The servlet's await() server and its HTTP floor at 10,000 concurrent, each profiled alone (SKIP="servlet-jfr-floor
# servlet-jfr-await" leaves them out). Budget about 260 s of wall time. From the repository root, after ../shared/tools/gpu-bundle && bash
# vthreads-demo/scripts/gpu-trim.sh: bash vthreads-demo/scripts/gpu-profile.sh. Knobs: SKIP="name ..." as gpu-final.sh.
set -u
cd "$(dirname "$0")/../.." || exit 2
DEST=${OUT:-$(mktemp -d /tmp/gpu-profile.XXXXXX)}
mkdir -p "$DEST" || exit 2
OUT=$(mktemp -d /tmp/gpu-profile-steps.XXXXXX)
pack() { tar czf "$DEST/results.tgz" -C "$OUT" . 2>/dev/null; }
. vthreads-demo/scripts/steps.sh
{
  date -u; cat .gpu/INFO 2>/dev/null; nproc
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
} > "$OUT/steps.txt"
want() { case " ${SKIP:-} " in *" $1 "*) return 1 ;; *) return 0 ;; esac; }
eval "$(declare -f step | sed '1s/^step/run_one_step/')"
step() { run_one_step "$@"; pack; }
J="bash .gpu/java"
P="-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints" # samples name the inlined method, not the one it was inlined into
want demo-jfr && step demo-jfr demo-jfr.txt 60 $J $P -XX:StartFlightRecording=filename="$OUT/demo.jfr",settings=profile \
  io.cudaloom.demo.DemoMain --iterations 60 --baseline off
[ -f "$OUT/demo.jfr" ] && $J io.cudaloom.bench.ProfileBreakdown "$OUT/demo.jfr" top=20 > "$OUT/demo-jfr-owners.md" 2>&1
want long-jfr && step long-jfr long-jfr.md 60 $J $P -XX:StartFlightRecording=filename="$OUT/long.jfr",settings=profile \
  -Dsweep.rows=AWAIT io.cudaloom.bench.GpuBench sweep kernelsUs=1000 awaitsPerThread=8 rounds=1
want sweep-long && step sweep-long sweep-long.md 120 $J -Dsweep.rows=AWAIT,CEILING_8 io.cudaloom.bench.GpuBench sweep \
  kernelsUs=200,1000 awaitsPerThread=100 rounds=1
want sweep-long-p4 && step sweep-long-p4 sweep-long-p4.md 120 $J -Djdk.virtualThreadScheduler.parallelism=4 -Dsweep.rows=AWAIT,CEILING_8 \
  io.cudaloom.bench.GpuBench sweep kernelsUs=200,1000 awaitsPerThread=100 rounds=1
want demo-long && step demo-long demo-long.txt 60 $J io.cudaloom.demo.DemoMain --iterations 200 --baseline off
want handoff && step handoff handoff.md 40 $J io.cudaloom.bench.VirtualThreadHandOff threads=10000 perThread=20
# the servlet at 10,000 concurrent: the await() server and its HTTP floor, each profiled alone (-Dservlet.servers), where
# the issue's "GPU path" (server CPU per request over the floor's) goes: ProfileBreakdown's samples by owner (library,
# driver, scheduler, Jetty) and jfr's hot methods beside each recording
for s in floor await; do
  want "servlet-jfr-$s" && step "servlet-jfr-$s" "servlet-jfr-$s.md" 90 $J $P \
    -XX:StartFlightRecording=filename="$OUT/servlet-$s.jfr",settings=profile,+io.cudaloom.SlowAwait#enabled=false -Dservlet.servers="$s" \
    io.cudaloom.bench.GpuBench servlet concurrency="${SERVLET_LEVELS:-10000}" seconds="${SERVLET_SECONDS:-5}" ${SERVLET_DEVICE:+device=$SERVLET_DEVICE}
  if [ -f "$OUT/servlet-$s.jfr" ]; then
    $J io.cudaloom.bench.ProfileBreakdown "$OUT/servlet-$s.jfr" top=20 > "$OUT/servlet-jfr-$s-owners.md" 2>&1
    [ -x /tmp/gpu-jre/bin/jfr ] && /tmp/gpu-jre/bin/jfr view --width 220 hot-methods "$OUT/servlet-$s.jfr" \
      > "$OUT/servlet-jfr-$s-hot-methods.txt" 2>&1
  fi
done
{
  cat "$OUT/steps.txt"
  for f in demo-jfr demo-long; do echo "-- $f"; grep -E "^summary|completions/s|CPU per completion" "$OUT/$f.txt" 2>/dev/null | head -6; done
  for f in long-jfr sweep-long sweep-long-p4; do echo "-- $f"; grep -E "^\| (\`await|ceiling: 8)" "$OUT/$f.md" 2>/dev/null | cut -c1-220; done
  grep -h "^| " "$OUT/handoff.md" 2>/dev/null
  echo "-- demo-jfr, by owner"; sed -n '/^| owner/,/^| all/p' "$OUT/demo-jfr-owners.md" 2>/dev/null
  for s in floor await; do
    echo "-- servlet-jfr-$s"; grep -E "^\| Jetty" "$OUT/servlet-jfr-$s.md" 2>/dev/null | cut -c1-260
    sed -n '/^| owner/,/^| all/p' "$OUT/servlet-jfr-$s-owners.md" 2>/dev/null
  done
  grep "driver calls:" "$OUT/stderr.log" 2>/dev/null | sort | uniq -c
} > "$OUT/summary.txt"
pack
cp "$OUT/summary.txt" "$DEST/summary.txt"
exit $(( failed > 0 ))
