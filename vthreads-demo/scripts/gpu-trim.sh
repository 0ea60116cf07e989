#!/usr/bin/env bash
# gpu-trim.sh: after ../shared/tools/gpu-bundle, removes from .gpu/lib the jars that nothing run on
# the GPU machine loads (JMH and its dependencies, AssertJ and Byte Buddy), so that the working tree
# plus .gpu stays under the device call's 64 MiB (the bundle of 2026-12-05 was 69 MiB, 57 trimmed).
# From the repository root:  ../shared/tools/gpu-bundle && bash vthreads-demo/scripts/gpu-trim.sh
set -eu
[ -d .gpu/lib ] || { echo "gpu-trim: no .gpu/lib here: run ../shared/tools/gpu-bundle first" >&2; exit 2; }
rm -f .gpu/lib/byte-buddy-*.jar .gpu/lib/assertj-core-*.jar .gpu/lib/commons-math3-*.jar \
  .gpu/lib/jmh-*.jar .gpu/lib/jopt-simple-*.jar
du -sh .gpu
