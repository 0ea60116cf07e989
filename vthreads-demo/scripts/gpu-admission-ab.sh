#!/usr/bin/env bash
# gpu-admission-ab.sh: the sweep of long kernels (200 us, 1 ms) with the admission limit at its
# default (256) and raised (512, 896 = ReactorConfig.MAX_ADMISSION_LIMIT), each in its own JVM, in
# one device call; outputs packed into "$OUT/admission.tgz" after every step.
set -u
R=$(mktemp -d /tmp/gpu-adm.XXXXXX)
pack() { tar czf "$OUT/admission.tgz" -C "$R" . 2>/dev/null; }
for limit in ${LIMITS:-256 896 512}; do
  timeout 150 bash .gpu/java -Dsweep.admissionLimit=$limit io.cudaloom.bench.GpuBench sweep kernelsUs=${KERNELS:-200,1000} rounds=1 \
    > "$R/sweep-adm$limit.md" 2> "$R/sweep-adm$limit.err"
  echo "admission $limit: exit $?"; pack
done
grep -h "await()\`: 10,000" "$R"/sweep-adm*.md | cut -c1-220
