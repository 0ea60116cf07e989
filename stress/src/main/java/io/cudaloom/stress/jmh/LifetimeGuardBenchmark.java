package io.cudaloom.stress.jmh;

import io.cudaloom.protocol.LifetimeGuard;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What {@link LifetimeGuard} costs a driver call (its javadoc: "a volatile load and one
 * compare-and-set to enter, one get-and-add to exit"): an {@code enter()}/{@code exit()} pair around
 * a little work, against the work alone and against the work with one atomic increment (what one
 * locked instruction costs on this machine), on one thread with a guard of its own (the common
 * case: a guard per stream) and on two threads sharing one guard (every carrier launching on the
 * same stream), beside two threads sharing one {@link AtomicLong}.
 *
 * <p>The JMH port of the hand-written timing loop {@code LifetimeGuardBench} (core's test sources
 * until 0.1.0): the same four measurements, with JMH's forks, warm-up and dead-code protection
 * instead of long loops and a volatile sink. The "work" stands for the driver call: one step of
 * a dependent chain, so that neither it nor the guard around it can be hoisted or folded.
 * Run (stress/README.md, "Microbenchmarks"):
 * <pre>java -jar stress/target/benchmarks.jar LifetimeGuard</pre>
 * Subtract {@code workAlone} from the others for the cost of the guard itself.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class LifetimeGuardBenchmark {

    /** One thread's own guard, counter and work. */
    @State(Scope.Thread)
    public static class PerThread {
        final LifetimeGuard guard = new LifetimeGuard();
        final AtomicLong counter = new AtomicLong();
        long i;
        long acc;

        /** The stand-in for the driver call: one step of a dependent chain. */
        long work() {
            long x = i++;
            return acc += x ^ (acc >>> 3);
        }
    }

    /** A guard and a counter shared by all the benchmark's threads. */
    @State(Scope.Benchmark)
    public static class Shared {
        final LifetimeGuard guard = new LifetimeGuard();
        final AtomicLong counter = new AtomicLong();
    }

    @Benchmark
    public long workAlone(PerThread t) {
        return t.work();
    }

    @Benchmark
    public long enterExit(PerThread t) {
        if (!t.guard.enter()) {
            throw new AssertionError("the guard is never closed here");
        }
        try {
            return t.work();
        } finally {
            t.guard.exit();
        }
    }

    @Benchmark
    public long oneAtomicIncrement(PerThread t) {
        t.counter.incrementAndGet();
        return t.work();
    }

    @Benchmark
    @Threads(2)
    public long enterExitSharedGuard(Shared s, PerThread t) {
        if (!s.guard.enter()) {
            throw new AssertionError("the guard is never closed here");
        }
        try {
            return t.work();
        } finally {
            s.guard.exit();
        }
    }

    @Benchmark
    @Threads(2)
    public long oneAtomicIncrementShared(Shared s, PerThread t) {
        s.counter.incrementAndGet();
        return t.work();
    }
}
