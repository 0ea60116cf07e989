package io.cudaloom.protocol;

import java.util.concurrent.CyclicBarrier;

/**
 * What {@link LifetimeGuard} costs a driver call: an {@code enter()}/{@code exit()} pair in a loop,
 * against the same loop without it, on one thread (the common case: a guard per stream) and on
 * {@code threads} threads sharing one guard (every carrier launching on the same stream). A plain
 * main, no JMH: the loops are long enough for the JIT, repeated, and each keeps a result alive.
 *
 * <pre>java -cp core/target/classes:core/target/test-classes io.cudaloom.protocol.LifetimeGuardBench [iterations] [threads]</pre>
 */
public final class LifetimeGuardBench {
    private static volatile long sink;

    public static void main(String[] args) throws Exception {
        long n = args.length > 0 ? Long.parseLong(args[0]) : 100_000_000L;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        for (int round = 0; round < 5; round++) {
            double base = perOp(n, false);
            double guarded = perOp(n, true);
            double atomic = oneAtomic(n);
            double shared = contended(n / 4, threads);
            System.out.printf("round %d: loop alone %.2f ns, with enter/exit %.2f ns (guard %.2f ns per call; "
                    + "one AtomicLong.incrementAndGet in the same loop: %.2f ns); %d threads sharing one guard "
                    + "%.2f ns per call%n", round, base, guarded, guarded - base, atomic - base, threads, shared);
        }
    }

    /** Nanoseconds per iteration of a loop doing a little work, with or without the guard around it. */
    private static double perOp(long n, boolean guard) {
        LifetimeGuard g = new LifetimeGuard();
        long acc = 0;
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            if (guard) {
                if (!g.enter()) {
                    throw new AssertionError();
                }
                acc += i ^ (acc >>> 3); // stands for the call
                g.exit();
            } else {
                acc += i ^ (acc >>> 3);
            }
        }
        long t = System.nanoTime() - t0;
        sink = acc;
        return (double) t / n;
    }

    /** The same loop with one atomic increment instead of the guard: what one locked instruction costs here. */
    private static double oneAtomic(long n) {
        java.util.concurrent.atomic.AtomicLong a = new java.util.concurrent.atomic.AtomicLong();
        long acc = 0;
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            a.incrementAndGet();
            acc += i ^ (acc >>> 3);
        }
        long t = System.nanoTime() - t0;
        sink = acc + a.get();
        return (double) t / n;
    }

    /** Nanoseconds per enter/exit pair, each of {@code threads} threads doing {@code n} on one guard. */
    private static double contended(long n, int threads) throws Exception {
        LifetimeGuard g = new LifetimeGuard();
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                long acc = 0;
                for (long i = 0; i < n; i++) {
                    g.enter();
                    acc += i;
                    g.exit();
                }
                sink = acc;
            });
        }
        start.await();
        long t0 = System.nanoTime();
        for (Thread t : ts) {
            t.join();
        }
        return (double) (System.nanoTime() - t0) / n;
    }
}
