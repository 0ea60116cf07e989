#!/usr/bin/env bash
# gpu-experiments.sh: A/B probes for the load path, each in its own JVM, packed into
# "$OUT/results.tgz" after every step. From the repository root after ../shared/tools/gpu-bundle.
# Set SKIP_JUNIT=1 to leave out the GPU suite.
set -u
R=$(mktemp -d /tmp/gpu-exp.XXXXXX)
J=.gpu/java
pack() { tar czf "$OUT/results.tgz" -C "$R" . 2>/dev/null; }
{ date -u; git log -1 --format='%H %s' 2>/dev/null; cat .gpu/INFO 2>/dev/null; } > "$R/info.txt"
if [ "${SKIP_JUNIT:-0}" != 1 ]; then
  timeout 200 bash .gpu/junit > "$R/junit.txt" 2>&1; echo "junit exit $?" >> "$R/info.txt"; pack
fi
sweep() { # name, then java options; one sweep row set at KUS microseconds (10 by default)
  local name=$1; shift
  timeout 90 bash $J "$@" io.cudaloom.bench.GpuBench sweep kernelsUs=${KUS:-10} rounds=1 > "$R/sweep-$name.md" 2> "$R/sweep-$name.err"
  pack
}
# The last A/B here (s6-run1, docs/BENCHMARKS.md "Under load, fourth pass"): a device-wide bound on
# the threads inside a submitting driver call, ReactorConfig.submitters in 8cedabb (reverted in
# c19a63b: it lost). To repeat it, check out 8cedabb and add:
#   sweep 10-submitters8 -Dsweep.submitters=8; sweep 10-submitters4 -Dsweep.submitters=4
#   KUS=1000 sweep 1000-submitters8 -Dsweep.submitters=8
sweep 10-default
KUS=1000 sweep 1000-default
grep -h '`await()`: 10,000' $R/sweep-*.md | cut -c1-300
tail -3 "$R/junit.txt" 2>/dev/null; cat "$R/info.txt"
