package io.cudaloom.demo;

import io.cudaloom.ReactorStats;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * The await demo: {@code threads} virtual threads each run {@code iterations} steps of
 * {@link DemoWorkload#runOnce} (launch, await, verify), while the main thread prints a progress
 * line; then the figures are collected into a {@link Result}.
 */
final class DemoRun {
    private static final long PROGRESS_INTERVAL_MS = 200; // at most 5 lines a second
    private static final Duration QUIESCENCE_LIMIT = Duration.ofSeconds(5);

    private DemoRun() {}

    /** What one run measured. {@link #passed()} is the demo's verdict. */
    record Result(
            String device,
            int threads,
            int iterations,
            long completions,
            long verified,
            long mismatches,
            long errors,
            String firstError,
            long wallNanos,
            long awaitP50,
            long awaitP90,
            long awaitP99,
            long awaitMax,
            int peakPlatformThreads,
            long cpuNanos,
            long armedAtEnd,
            long slotsInUseAtEnd,
            long quarantinedAtEnd,
            int capacity,
            long fallbacks,
            long registrations,
            long inlineCompletions,
            long immediate) {

        boolean passed() {
            return errors == 0 && mismatches == 0 && verified == (long) threads * iterations
                    && armedAtEnd == 0 && slotsInUseAtEnd == 0;
        }

        double completionsPerSecond() {
            return wallNanos == 0 ? 0 : completions * 1e9 / wallNanos;
        }

        void print(PrintStream out) {
            out.printf(Locale.ROOT, "%ncuda-loom demo: %,d virtual threads x %,d iterations on %s%n",
                    threads, iterations, device);
            row(out, "completions", String.format(Locale.ROOT, "%,d (%,d verified, %,d mismatches, %,d errors)",
                    completions, verified, mismatches, errors));
            row(out, "completions/s", String.format(Locale.ROOT, "%,.0f  (wall %.2f s)",
                    completionsPerSecond(), wallNanos / 1e9));
            row(out, "await latency p50", duration(awaitP50));
            row(out, "await latency p90", duration(awaitP90));
            row(out, "await latency p99", duration(awaitP99) + "  (max " + duration(awaitMax) + ")");
            row(out, "peak platform threads", String.format(Locale.ROOT, "%d  (for %,d virtual threads)",
                    peakPlatformThreads, threads));
            row(out, "process CPU time", cpuNanos < 0 ? "n/a" : String.format(Locale.ROOT, "%.2f s", cpuNanos / 1e9));
            row(out, "slots in use at end", String.format(Locale.ROOT, "%d  (armed %d, capacity %,d - free %,d, quarantined %d)",
                    slotsInUseAtEnd, armedAtEnd, capacity, capacity - slotsInUseAtEnd, quarantinedAtEnd));
            row(out, "fallbacks", String.format(Locale.ROOT, "%,d  (slot registrations %,d, inline %,d, already done %,d)",
                    fallbacks, registrations, inlineCompletions, immediate));
            if (firstError != null) {
                row(out, "first error", firstError);
            }
            out.printf(Locale.ROOT, "  (await latency: time parked in await(), including the wait behind other threads'%n"
                    + "   work queued on the same stream; peak platform threads: the whole JVM, device threads included)%n");
            out.println(passed() ? "result: OK" : "result: FAILED");
        }

        private static void row(PrintStream out, String name, String value) {
            out.printf(Locale.ROOT, "  %-24s %s%n", name, value);
        }

        /** Microseconds below 10 ms, else milliseconds. */
        static String duration(long nanos) {
            return nanos < 10_000_000
                    ? String.format(Locale.ROOT, "%,.1f us", nanos / 1e3)
                    : String.format(Locale.ROOT, "%,.1f ms", nanos / 1e6);
        }
    }

    static Result run(DemoWorkload workload, int threads, int iterations, PrintStream progress)
            throws InterruptedException {
        var reactor = workload.device().reactor();
        ReactorStats before = reactor.stats();
        LongAdder completions = new LongAdder();
        LongAdder verified = new LongAdder();
        LongAdder mismatches = new LongAdder();
        LongAdder errors = new LongAdder();
        AtomicReference<String> firstError = new AtomicReference<>();
        CountDownLatch start = new CountDownLatch(1);
        CountDownLatch finished = new CountDownLatch(threads);

        var factory = Thread.ofVirtual().name("demo-", 0).factory();
        for (int t = 0; t < threads; t++) {
            int index = t;
            factory.newThread(() -> {
                try {
                    start.await();
                    for (int it = 0; it < iterations; it++) {
                        boolean ok = workload.runOnce(index, it);
                        completions.increment();
                        (ok ? verified : mismatches).increment();
                    }
                } catch (Exception | Error e) {       // a fault, a closed device, an interrupt
                    errors.increment();
                    firstError.compareAndSet(null, e.toString());
                } finally {
                    finished.countDown();
                }
            }).start();
        }

        // All threads exist and are parked on the start gate: measure from here.
        ProcessMetrics.resetPeakPlatformThreads();
        long cpu0 = ProcessMetrics.processCpuNanos();
        long t0 = System.nanoTime();
        start.countDown();
        long total = (long) threads * iterations;
        while (!finished.await(PROGRESS_INTERVAL_MS, TimeUnit.MILLISECONDS)) {
            long done = completions.sum();
            double secs = (System.nanoTime() - t0) / 1e9;
            progress.printf(Locale.ROOT, "\r  %,d / %,d awaits  %,.0f/s  armed slots %,d  platform threads %d   ",
                    done, total, done / Math.max(secs, 1e-9), reactor.stats().armedNow(),
                    ProcessMetrics.platformThreads());
            progress.flush();
        }
        long wall = System.nanoTime() - t0;
        long cpu1 = ProcessMetrics.processCpuNanos();
        int peak = ProcessMetrics.peakPlatformThreads();
        progress.printf(Locale.ROOT, "\r  %,d / %,d awaits done in %.2f s%-40s%n", completions.sum(), total, wall / 1e9, "");
        progress.flush();

        // An await that completed inline (its own spin saw the flag) returns before the scanner
        // retires its slot; give the scanner a moment to catch up before reading "slots in use".
        ReactorStats after = awaitQuiescence(workload);
        LatencyHistogram lat = workload.awaitLatency();
        long inUse = after.capacity() - after.freeSlots();
        return new Result(workload.description(), threads, iterations, completions.sum(), verified.sum(),
                mismatches.sum(), errors.sum(), firstError.get(), wall,
                lat.percentile(50), lat.percentile(90), lat.percentile(99), lat.max(),
                peak, cpu0 < 0 ? -1 : cpu1 - cpu0, after.armedNow(), inUse, after.quarantined(),
                after.capacity(), after.fallbacks() - before.fallbacks(),
                after.registrations() - before.registrations(),
                after.inlineCompletions() - before.inlineCompletions(),
                after.immediate() - before.immediate());
    }

    /** Reactor stats once no slot is armed or held (or after a short limit, whatever they say then). */
    static ReactorStats awaitQuiescence(DemoWorkload workload) throws InterruptedException {
        var reactor = workload.device().reactor();
        long deadline = System.nanoTime() + QUIESCENCE_LIMIT.toNanos();
        ReactorStats s = reactor.stats();
        while ((s.armedNow() != 0 || s.freeSlots() != s.capacity()) && System.nanoTime() < deadline) {
            Thread.sleep(1);
            s = reactor.stats();
        }
        return s;
    }
}
