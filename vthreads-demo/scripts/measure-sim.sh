#!/usr/bin/env bash
# measure-sim.sh: the steps of measure-h200.sh on the simulated device, with small sizes, on any
# machine (no GPU needed), from the repository root:
#
#   OUT=/some/folder bash vthreads-demo/scripts/measure-sim.sh
#
# It proves the steps and their output formats end to end; the figures of a simulated device say
# nothing about a GPU. Steps that need CUDA (the sweep, WaitLatencyBench) are skipped with the
# reason printed. Java: .gpu/java where a bundle exists, else the newest JDK >= 21 under
# /usr/lib/jvm with the class path of a Maven build of vthreads-demo (compiled here first; the
# same java binary and class path are what the servlet benchmark's load generator JVMs get).
# Files, flat under "$OUT": steps.txt, stderr.log, servlet.md, demo.txt. Exit code 1 if a step
# failed, 2 if no Java could be found or the build failed.
#
# Durations on a 2-core machine (estimates): the build ~30 s when nothing is compiled yet; (b) the
# servlet benchmark ~40 s (per level a JVM start, a warm-up of at most 5 s, a level of at most 2 s;
# killed after 120 s); (d) the demo ~5 s (killed after 60 s).
set -o pipefail
set -u

cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$(mktemp -d /tmp/measure-sim.XXXXXX)}
mkdir -p "$OUT" || exit 2
echo "measure-sim: results in $OUT"

if [ -f .gpu/java ]; then
  JAVA=(bash .gpu/java)
  how="the bundle's .gpu/java"
else
  jdk=""; best=0
  for j in /usr/lib/jvm/*; do
    [ -x "$j/bin/java" ] && [ -f "$j/release" ] || continue
    v=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$j/release")
    [[ "$v" =~ ^[0-9]+$ ]] || continue
    if [ "$v" -ge 21 ] && [ "$v" -gt "$best" ]; then jdk=$j; best=$v; fi
  done
  [ -n "$jdk" ] || { echo "measure-sim: no JDK >= 21 under /usr/lib/jvm" >&2; exit 2; }
  cpfile="$OUT/.classpath"
  echo "measure-sim: building vthreads-demo (mvn -pl vthreads-demo -am compile) for its class path"
  mvn -B -q -pl vthreads-demo -am compile \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath \
      -Dmdep.outputFile="$cpfile" -Dmdep.includeScope=runtime >&2 \
    || { echo "measure-sim: the build failed" >&2; exit 2; }
  JAVA=("$jdk/bin/java" -cp "$(pwd)/vthreads-demo/target/classes:$(cat "$cpfile")")
  rm -f "$cpfile"
  how="$jdk/bin/java (JDK $best) with vthreads-demo's Maven class path"
fi

LABEL_SKIP=${#JAVA[@]}
# shellcheck source=steps.sh
. vthreads-demo/scripts/steps.sh # the repository root, after the cd above

skip() {
  echo "== $1: skipped: $2" | tee -a "$OUT/steps.txt"
}

echo "measure-sim: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $(nproc) cores; open-file limit $(ulimit -n); java: $how" \
  | tee "$OUT/steps.txt"

skip "(a) sweep" "GpuBench sweep launches CUDA kernels (launchSpin) on device 0; the simulated device has no such kernels"
step "(b) servlet" servlet.md 120 \
  "${JAVA[@]}" io.cudaloom.bench.GpuBench servlet concurrency=10,200 seconds=2 requests=2000 device=sim
skip "(c) wait latency" "WaitLatencyBench compares cuStreamSynchronize, cuStreamQuery and cuLaunchHostFunc, which exist on CUDA only"
step "(d) demo steady state" demo.txt 60 \
  "${JAVA[@]}" io.cudaloom.demo.DemoMain --device sim --threads 2000 --iterations 10

echo "measure-sim: $failed step(s) failed; files: $(cd "$OUT" && ls | tr '\n' ' ')" | tee -a "$OUT/steps.txt"
[ "$failed" -eq 0 ]
