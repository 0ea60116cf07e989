#!/usr/bin/env bash
# gpu-profile.sh: one device call that shows where the CPU per completion goes: JFR profiles (settings=profile)
# of the per-op demo and of the 1 ms sweep's await() row, the 200 us and 1 ms sweeps beside the 8-thread ceiling,
# the per-op demo at 200 iterations, the JDK's own hand-off (VirtualThreadHandOff) and the process's idle CPU.
# Everything is packed into "$OUT/results.tgz" (the .jfr files beside the outputs), "$OUT/summary.txt" the summary.
# Budget about 200 s of wall time. From the repository root, after ../shared/tools/gpu-bundle && bash
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
want long-jfr && step long-jfr long-jfr.md 60 $J $P -XX:StartFlightRecording=filename="$OUT/long.jfr",settings=profile \
  -Dsweep.rows=AWAIT io.cudaloom.bench.GpuBench sweep kernelsUs=1000 awaitsPerThread=8 rounds=1
want sweep-long && step sweep-long sweep-long.md 120 $J -Dsweep.rows=AWAIT,CEILING_8 io.cudaloom.bench.GpuBench sweep \
  kernelsUs=200,1000 awaitsPerThread=100 rounds=1
want sweep-long-p4 && step sweep-long-p4 sweep-long-p4.md 120 $J -Djdk.virtualThreadScheduler.parallelism=4 -Dsweep.rows=AWAIT,CEILING_8 \
  io.cudaloom.bench.GpuBench sweep kernelsUs=200,1000 awaitsPerThread=100 rounds=1
want demo-long && step demo-long demo-long.txt 60 $J io.cudaloom.demo.DemoMain --iterations 200 --baseline off
want handoff && step handoff handoff.md 40 $J io.cudaloom.bench.VirtualThreadHandOff threads=10000 perThread=20
{
  cat "$OUT/steps.txt"
  for f in demo-jfr demo-long; do echo "-- $f"; grep -E "^summary|completions/s|CPU per completion" "$OUT/$f.txt" 2>/dev/null | head -6; done
  for f in long-jfr sweep-long sweep-long-p4; do echo "-- $f"; grep -E "^\| (\`await|ceiling: 8)" "$OUT/$f.md" 2>/dev/null | cut -c1-220; done
  grep -h "^| " "$OUT/handoff.md" 2>/dev/null
  grep "driver calls:" "$OUT/stderr.log" 2>/dev/null | sort | uniq -c
} > "$OUT/summary.txt"
pack
cp "$OUT/summary.txt" "$DEST/summary.txt"
exit $(( failed > 0 ))
