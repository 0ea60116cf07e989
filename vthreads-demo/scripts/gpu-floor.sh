#!/usr/bin/env bash
# gpu-floor.sh: one device call that measures the CUDA driver's floor, no project code (issue #37,
# item 1). DriverContention: CPU per step of the submitting threads at 1-16 threads, for an empty
# kernel, a 10 us kernel, a 1 KiB copy, and the library's own mixes (the demo's step: copy in,
# scale_f32, copy out, flag write; the sweep's step: spin_kernel(0), flag write), into
# "$R/floor.md". BindingCost: CPU per cuLaunchKernel through JCuda and through a java.lang.foreign
# downcall, for 0, 1 and 3 kernel arguments, into "$R/binding.md". Both are packed into
# "$OUT/floor.tgz" after each step, so a call cut short still brings back what ran.
# From the repository root, after ../shared/tools/gpu-bundle && bash vthreads-demo/scripts/gpu-trim.sh:
#   bash vthreads-demo/scripts/gpu-floor.sh
# FLOOR_STEPS: DriverContention's steps per thread (default 50000, the count of the earlier runs:
# about 25 s on an H200 on 2026-12-06, far below its 150 s limit); BINDING_ARGS: BindingCost's launches,
# rounds and warm-up launches per variant (default "50000 5 20000": about 20 s there).
set -u
R=$(mktemp -d /tmp/gpu-floor.XXXXXX)
pack() { tar czf "$OUT/floor.tgz" -C "$R" . 2>/dev/null; }
{ date -u; git log -1 --format='%H %s' 2>/dev/null; git status --short 2>/dev/null; cat .gpu/INFO 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null
  echo "cores: $(nproc)"; } > "$R/info.txt"
pack
timeout 150 bash .gpu/java io.cudaloom.bench.DriverContention "${FLOOR_STEPS:-50000}" \
  > "$R/floor.md" 2> "$R/floor.err"; echo "floor exit $?" >> "$R/info.txt"; pack
# BindingCost is compiled for Java 22 (vthreads-demo/pom.xml, execution compile-java22): a build
# JDK 21 leaves it out, which is said here rather than run into a ClassNotFoundException.
if ls .gpu/cp/*/io/cudaloom/bench/BindingCost.class > /dev/null 2>&1; then
  # shellcheck disable=SC2086 # BINDING_ARGS: several arguments
  timeout 150 bash .gpu/java io.cudaloom.bench.BindingCost ${BINDING_ARGS:-50000 5 20000} \
    > "$R/binding.md" 2> "$R/binding.err"; echo "binding exit $?" >> "$R/info.txt"
else
  echo "binding: not run: .gpu/cp holds no io/cudaloom/bench/BindingCost.class (built with a JDK < 22?)" \
    | tee "$R/binding.md" >> "$R/info.txt"
fi
pack
# A short summary, last so that the end of the output shows it: the GPU and the exit codes; per
# operation, 1 and 8 submitting threads; the binding's medians and ratios. (info.txt in the archive
# holds the commit and the working tree's status too.)
grep -E '^(cores|floor exit|binding)|, [0-9.]+, ' "$R/info.txt"
grep -hE 'Exception|Error|STALL' "$R/floor.err" "$R/binding.err" 2>/dev/null | head -5
echo "== driver floor (steps/s, CPU per step of the submitting threads):"
awk -F'|' '/^### /{op=$0; sub(/^### /, "", op); sub(/:.*/, "", op)}
  /^\| [0-9]+ \|/{for (i = 2; i <= 6; i++) gsub(/^ +| +$/, "", $i)
    if ($2 == 1 || $2 == 8) printf "%-12s %2s threads: %10s steps/s, %s per step (%s per call)\n", op, $2, $4, $5, $6}' \
  "$R/floor.md"
echo "== binding (median CPU per launch, then ratios):"
grep -E '^\| (jcuda|ffm)-[0-9]arg ' "$R/binding.md" | cut -d'|' -f2,4
grep -E '^\| kernel arguments|^\| [0-9] \|' "$R/binding.md"
