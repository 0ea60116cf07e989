#!/usr/bin/env bash
# gpu-run.sh: one device call's worth of measurements (the GPU suite, then measure-h200.sh and the
# park-overshoot probe), every output packed into "$OUT/results.tgz" so that it comes back as one
# file. From the repository root, after ../shared/tools/gpu-bundle:  bash vthreads-demo/scripts/gpu-run.sh
set -u
R=$(mktemp -d /tmp/gpu-run.XXXXXX)
{ date -u; git log -1 --format='%H %s' 2>/dev/null; cat .gpu/INFO 2>/dev/null; } > "$R/info.txt"
bash .gpu/java io.cudaloom.bench.ParkOvershoot 1000 > "$R/park-overshoot.md" 2>&1
if [ "${DRIVER_CONTENTION:-1}" = 1 ]; then # what a submission costs as more threads submit (no project code)
  timeout 90 bash .gpu/java io.cudaloom.bench.DriverContention 50000 > "$R/driver-contention.md" 2>&1
fi
if [ "${SKIP_JUNIT:-0}" != 1 ]; then
  timeout 200 bash .gpu/junit > "$R/junit.txt" 2>&1; echo "junit exit $?" >> "$R/info.txt"
fi
OUT="$R/m" bash vthreads-demo/scripts/measure-h200.sh > "$R/measure.log" 2>&1; echo "measure exit $?" >> "$R/info.txt"
if [ "${DEMO_JFR:-1}" = 1 ]; then # where the demo's CPU goes (Java and native frames)
  timeout 90 bash .gpu/java -XX:StartFlightRecording=filename=$R/demo.jfr,settings=profile io.cudaloom.demo.DemoMain \
    --device cuda --iterations 30 > "$R/demo-jfr-run.txt" 2>&1
  for v in hot-methods native-methods contention-by-site; do
    /tmp/gpu-jre/bin/jfr view --width 200 $v "$R/demo.jfr" > "$R/demo-jfr-$v.txt" 2>&1
  done
  rm -f "$R/demo.jfr"
fi
tar czf "$OUT/results.tgz" -C "$R" .
tail -3 "$R/junit.txt" 2>/dev/null; cat "$R/info.txt"
