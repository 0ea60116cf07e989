#!/usr/bin/env bash
# Runs LostWakeupStress MODE N times (fresh JVM each, 2 carriers) and counts hung runs.
# Usage: stress/lost-wakeup-runs.sh MODE [runs=40] [seconds=15] [threads=200] [spin us=1]
# (java: the newest JDK >= 21 in /usr/lib/jvm, or $JAVA)
# Needs a build first: mvn -pl stress -am test-compile dependency:build-classpath
#   -Dmdep.outputFile=target/cp.txt -Dmdep.includeScope=test   (writes stress/target/cp.txt)
set -uo pipefail
cd "$(dirname "$0")"
mode=${1:?mode: release|waiter|reactor}; runs=${2:-40}; secs=${3:-15}
threads=${4:-200}; spin=${5:-1}
java=${JAVA:-$(ls -d /usr/lib/jvm/*/bin/java | sort -V | tail -1)}
cp=target/classes:$(cat target/cp.txt)
hung=0; total=0
for i in $(seq 1 "$runs"); do
  out=$("$java" -Djdk.virtualThreadScheduler.parallelism=2 -cp "$cp" io.cudaloom.reactor.LostWakeupStress "$mode" "$secs" "$threads" "$spin")
  rc=$?
  echo "run $i rc=$rc: $(echo "$out" | head -1)"
  [ $rc -eq 1 ] && { hung=$((hung+1)); echo "$out" | tail -n +2 | head -8; }
  total=$((total+1))
done
echo "SUMMARY $mode: $hung of $total runs hung ($secs s each, java $("$java" -version 2>&1 | head -1))"
