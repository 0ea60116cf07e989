#!/usr/bin/env bash
# gpu-experiments.sh: A/B probes for the load path, each in its own JVM, packed into
# "$OUT/results.tgz". From the repository root after ../shared/tools/gpu-bundle.
set -u
R=$(mktemp -d /tmp/gpu-exp.XXXXXX)
J=.gpu/java
sweep() { # name, then java options; a 10 us sweep row set
  local name=$1; shift
  timeout 60 bash $J "$@" io.cudaloom.bench.GpuBench sweep kernelsUs=${KUS:-10} rounds=1 > "$R/sweep-$name.md" 2> "$R/sweep-$name.err"
}
sweep default
# sweep serialized -Dio.cudaloom.cuda.serializeSubmissions=true   (needs 4232636: reverted after this run)
sweep carriers8 -Djdk.virtualThreadScheduler.parallelism=8
KUS=200 sweep 200-carriers8 -Djdk.virtualThreadScheduler.parallelism=8
timeout 60 bash $J io.cudaloom.bench.WaitLatencyBench iterations=2000 warmup=2000 methods=await,sync kernelsUs=0,200 > "$R/latency.md" 2>&1
timeout 120 bash $J -XX:StartFlightRecording=filename=$R/servlet.jfr,settings=profile io.cudaloom.bench.GpuBench servlet concurrency=10000 seconds=8 > "$R/servlet.md" 2> "$R/servlet.err"
J2=/tmp/gpu-jre/bin/jfr
$J2 view --width 200 hot-methods $R/servlet.jfr > "$R/servlet-hot-methods.txt" 2>&1
$J2 view --width 200 contention-by-site $R/servlet.jfr > "$R/servlet-contention.txt" 2>&1
$J2 view --width 200 pinned-threads $R/servlet.jfr > "$R/servlet-pinned.txt" 2>&1
$J2 print --events jdk.ExecutionSample --stack-depth 6 $R/servlet.jfr | grep -A6 'stackTrace' | grep 'line:' | sed 's/line:.*//' | sort | uniq -c | sort -rn | head -60 > "$R/servlet-frames.txt" 2>&1
rm -f $R/servlet.jfr
tar czf "$OUT/results.tgz" -C "$R" .
grep -h '`await()`: 10,000' $R/sweep-*.md | cut -c1-300
