#!/usr/bin/env bash
# gpu-trim.sh: after ../shared/tools/gpu-bundle, removes from .gpu what nothing run on the GPU
# machine loads, so that the working tree plus .gpu stays under the device call's 64 MiB (the
# bundle of 2026-12-06 was 74 MiB, 54 trimmed):
#  - JMH and its dependencies, AssertJ, Byte Buddy; the stress module (jcstress runs on CPUs);
#  - Spring Boot and the Prometheus registry, which only CPU tests use, with those tests' classes
#    (io.cudaloom.spring's tests, CudaLoomMetricsTest): without their libraries JUnit could not
#    load them while it looks for the gpu-tagged tests;
#  - core's jar among the libraries: .gpu/cp holds core's classes of this build.
# From the repository root:  ../shared/tools/gpu-bundle && bash vthreads-demo/scripts/gpu-trim.sh
set -eu
[ -d .gpu/lib ] || { echo "gpu-trim: no .gpu/lib here: run ../shared/tools/gpu-bundle first" >&2; exit 2; }
rm -f .gpu/lib/byte-buddy-*.jar .gpu/lib/assertj-core-*.jar .gpu/lib/commons-math3-*.jar \
  .gpu/lib/jmh-*.jar .gpu/lib/jopt-simple-*.jar .gpu/lib/jcstress-core-*.jar .gpu/lib/cuda-loom-core-*.jar \
  .gpu/lib/spring-*.jar .gpu/lib/prometheus-*.jar .gpu/lib/micrometer-registry-prometheus-*.jar \
  .gpu/lib/snakeyaml-*.jar .gpu/lib/jackson-*.jar .gpu/lib/tomcat-*.jar .gpu/lib/logback-*.jar \
  .gpu/lib/log4j-*.jar .gpu/lib/jakarta.annotation*.jar
rm -rf .gpu/cp/stress-classes .gpu/cp/stress-test-classes .gpu/cp/core-test-classes/io/cudaloom/spring
rm -f .gpu/cp/core-test-classes/io/cudaloom/micrometer/CudaLoomMetricsTest*.class
du -sh .gpu
