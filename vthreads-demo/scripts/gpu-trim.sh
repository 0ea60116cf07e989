#!/usr/bin/env bash
# gpu-trim.sh: after ../shared/tools/gpu-bundle, removes from .gpu what nothing run on the GPU
# machine loads, so that the working tree plus .gpu stays under the device call's 64 MiB (the
# bundle of 2026-12-06 was 74 MiB, 54 trimmed):
#  - JMH and its dependencies, AssertJ, Byte Buddy; the stress module (jcstress runs on CPUs), and JNA,
#    which only jcstress brings;
#  - Spring Boot and the Prometheus registry, which only CPU tests use, with those tests' classes
#    (io.cudaloom.spring's tests, CudaLoomMetricsTest): without their libraries JUnit could not
#    load them while it looks for the gpu-tagged tests;
#  - core's jar among the libraries: .gpu/cp holds core's classes of this build.
# And it puts core's JAR of this build in place of .gpu/cp/core-classes: the JAR is multi-release
# (META-INF/versions/22 holds the FFM downcalls of -Dcudaloom.driverCalls=ffm), and a directory of
# classes on the class path has no overlay, so with the directory every ffm step would run on JCuda
# (and say so: "driver calls: jcuda (...)"). Kept as a directory if the JAR is older than the classes.
# From the repository root:  ../shared/tools/gpu-bundle && bash vthreads-demo/scripts/gpu-trim.sh
set -eu
[ -d .gpu/lib ] || { echo "gpu-trim: no .gpu/lib here: run ../shared/tools/gpu-bundle first" >&2; exit 2; }
rm -f .gpu/lib/byte-buddy-*.jar .gpu/lib/assertj-core-*.jar .gpu/lib/commons-math3-*.jar \
  .gpu/lib/jmh-*.jar .gpu/lib/jopt-simple-*.jar .gpu/lib/jcstress-core-*.jar .gpu/lib/cuda-loom-core-*.jar \
  .gpu/lib/spring-*.jar .gpu/lib/prometheus-*.jar .gpu/lib/micrometer-registry-prometheus-*.jar \
  .gpu/lib/snakeyaml-*.jar .gpu/lib/jackson-*.jar .gpu/lib/tomcat-*.jar .gpu/lib/logback-*.jar \
  .gpu/lib/log4j-*.jar .gpu/lib/jakarta.annotation*.jar .gpu/lib/jna-*.jar
rm -rf .gpu/cp/stress-classes .gpu/cp/stress-test-classes .gpu/cp/core-test-classes/io/cudaloom/spring
rm -f .gpu/cp/core-test-classes/io/cudaloom/micrometer/CudaLoomMetricsTest*.class
core_jar=$(ls core/target/cuda-loom-core-*.jar 2>/dev/null | grep -v -e '-sources\.jar$' -e '-javadoc\.jar$' -e '-tests\.jar$' | head -1)
if [ -n "$core_jar" ] && [ -d .gpu/cp/core-classes ] && [ -z "$(find core/target/classes -name '*.class' -newer "$core_jar" | head -1)" ]; then
  rm -rf .gpu/cp/core-classes && cp "$core_jar" .gpu/cp/core-classes.jar
  echo "gpu-trim: .gpu/cp/core-classes.jar is $core_jar (multi-release)"
else
  echo "gpu-trim: WARNING: core's classes stay a directory (no JAR newer than them): -Dcudaloom.driverCalls=ffm falls back to JCuda" >&2
fi
du -sh .gpu
