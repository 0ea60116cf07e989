#!/usr/bin/env bash
# gpu-ab-builds.sh: one build against another in one device call, each step alternating between
# them: WaitLatencyBench (one waiter; empty, 20 us and 200 us kernels) and the 10 us sweep.
# The new build is .gpu (../shared/tools/gpu-bundle); the old one is its core and vthreads-demo
# classes under .gpu/old/{core-classes,vthreads-demo-classes} (from `mvn package` of that
# commit), run with the same runtime, natives and libraries (but the bundle's own core jars).
# Outputs, packed into "$OUT/ab.tgz" after every step (a device call brings back at most 8 files):
# latency-{old,new}-{1,2}.md (+ .err), sweep10-{old,new}.md (+ .err).
# AB_STEPS picks the steps in order (default "latency sweep10"); "sweep1000" is the sweep of 1 ms
# kernels old, new, new, old (sweep1000-{old,new}-{1,2}.md), "sweep200" that of 200 us kernels
# old, new (sweep200-{old,new}.md), each with its .err; "long1000" and "long200" the await() row alone
# of 10,000 threads x 100 awaits, old, new, new, old; "demo" the per-op demo, 200 iterations, the same
# (AB_DEMO_ROUNDS rounds, default 2, each round's order the reverse of the one before). The latency step's
# knobs: AB_LATENCY_ROUNDS (default 2, ordered the same way), AB_LATENCY_ITERATIONS (2000), AB_LATENCY_KERNELS (0,20,200).
# "servlet": GpuBench servlet's await() server and its HTTP floor (servlet-{old,new}-N.md), AB_SERVLET_ROUNDS rounds.
# With .gpu/old/core.jar (the old commit's multi-release jar) the old build is that jar with the new
# build's other classes: the A/B is the core's change alone.
set -u
source .gpu/env.sh
R=$(mktemp -d /tmp/gpu-ab.XXXXXX)
pack() { tar czf "$OUT/ab.tgz" -C "$R" . 2>/dev/null; }
LIBS=$(ls .gpu/lib/*.jar | grep -v 'cuda-loom-core' | tr '\n' ':')
OLDCP=.gpu/old/core-classes:.gpu/old/vthreads-demo-classes:.gpu/cp/core-test-classes:${LIBS%:}
if [ -f .gpu/old/core.jar ]; then
  # The old core as its (multi-release) jar, with the new build's benchmarks: the A/B is the core's
  # change alone, and the old core's FFM overlay is used as the new one's is.
  OLDCP=.gpu/old/core.jar:$(ls -d .gpu/cp/* | grep -v -- 'core' | tr '\n' ':').gpu/cp/core-test-classes:${LIBS%:}
fi
run() { # build, output name, args...
  local b=$1 name=$2; shift 2
  local cp=$CP; [ "$b" = old ] && cp=$OLDCP
  timeout ${AB_TIMEOUT:-150} "$J/bin/java" "${JOPTS[@]}" -cp "$cp" "$@" > "$R/$name.md" 2> "$R/$name.err"
  echo "$name: exit $?"
  pack
}
alternate() { # rounds, output name, args...: old, new; new, old; ... (each round the reverse of the one before)
  local rounds=$1 out=$2 round b order; shift 2
  for round in $(seq 1 "$rounds"); do
    order="old new"; [ $((round % 2)) = 0 ] && order="new old"
    for b in $order; do
      run "$b" "$out-$b-$round" "$@"
    done
  done
}
for step in ${AB_STEPS:-latency sweep10}; do
  case "$step" in
    latency)
      alternate "${AB_LATENCY_ROUNDS:-2}" latency io.cudaloom.bench.WaitLatencyBench \
        iterations="${AB_LATENCY_ITERATIONS:-2000}" warmup=2000 methods=await,sync kernelsUs="${AB_LATENCY_KERNELS:-0,20,200}" ;;
    sweep10)
      for b in old new; do
        run "$b" "sweep10-$b" io.cudaloom.bench.GpuBench sweep kernelsUs=10 rounds=1
      done ;;
    sweep1000)
      alternate 2 sweep1000 io.cudaloom.bench.GpuBench sweep kernelsUs=1000 rounds=1 ;;
    long1000|long200)
      # the await() row alone, old, new, new, old: 10,000 threads x 100 awaits (capped to 8 s of kernels)
      alternate 2 "$step" -Dsweep.rows=AWAIT io.cudaloom.bench.GpuBench sweep kernelsUs="${step#long}" awaitsPerThread=100 rounds=1 ;;
    demo)
      alternate "${AB_DEMO_ROUNDS:-2}" demo io.cudaloom.demo.DemoMain --iterations 200 --baseline off ;;
    servlet)
      # the servlet at 10,000 concurrent (AB_SERVLET_LEVELS), the await() server beside its HTTP floor alone
      # (-Dservlet.servers), AB_SERVLET_ROUNDS rounds (default 2)
      alternate "${AB_SERVLET_ROUNDS:-2}" servlet -Dservlet.servers=floor,await io.cudaloom.bench.GpuBench servlet \
        concurrency="${AB_SERVLET_LEVELS:-10000}" seconds=5 ;;
    sweep200)
      for b in old new; do
        run "$b" "sweep200-$b" io.cudaloom.bench.GpuBench sweep kernelsUs=200 rounds=1
      done ;;
    *) echo "unknown step $step" ;;
  esac
done
grep -H -E "await\(\)|^summary|^\| Jetty" "$R"/*.md | sed "s|^$R/||" | cut -c1-240
