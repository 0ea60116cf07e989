#!/usr/bin/env bash
# gpu-run.sh: one device call's worth of measurements (the GPU suite, then measure-h200.sh and the
# park-overshoot probe), every output packed into "$OUT/results.tgz" so that it comes back as one
# file. From the repository root, after ../shared/tools/gpu-bundle:  bash vthreads-demo/scripts/gpu-run.sh
set -u
R=$(mktemp -d /tmp/gpu-run.XXXXXX)
# Packed again after every step: a call cut short by its time limit still brings back what ran.
pack() { tar czf "$OUT/results.tgz" -C "$R" . 2>/dev/null; }
{ date -u; git log -1 --format='%H %s' 2>/dev/null; cat .gpu/INFO 2>/dev/null; } > "$R/info.txt"
bash .gpu/java io.cudaloom.bench.ParkOvershoot 1000 > "$R/park-overshoot.md" 2>&1; pack
if [ "${DRIVER_CONTENTION:-1}" = 1 ]; then # what a submission costs as more threads submit (no project code)
  timeout 90 bash .gpu/java io.cudaloom.bench.DriverContention 50000 > "$R/driver-contention.md" 2>&1; pack
fi
if [ "${SKIP_JUNIT:-0}" != 1 ]; then
  timeout 200 bash .gpu/junit > "$R/junit.txt" 2>&1; echo "junit exit $?" >> "$R/info.txt"; pack
fi
( while sleep 20; do pack; done ) & PACKER=$!
OUT="$R/m" bash vthreads-demo/scripts/measure-h200.sh > "$R/measure.log" 2>&1; echo "measure exit $?" >> "$R/info.txt"
kill $PACKER 2>/dev/null; pack
if [ "${DEMO_JFR:-1}" = 1 ]; then # where the demo's CPU goes (Java and native frames)
  timeout 90 bash .gpu/java -XX:StartFlightRecording=filename=$R/demo.jfr,settings=profile io.cudaloom.demo.DemoMain \
    --device cuda --iterations 30 > "$R/demo-jfr-run.txt" 2>&1
  for v in hot-methods native-methods contention-by-site; do
    /tmp/gpu-jre/bin/jfr view --width 200 $v "$R/demo.jfr" > "$R/demo-jfr-$v.txt" 2>&1
  done
  rm -f "$R/demo.jfr"
fi
pack
tail -3 "$R/junit.txt" 2>/dev/null; cat "$R/info.txt"
