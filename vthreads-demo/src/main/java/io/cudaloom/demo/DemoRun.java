package io.cudaloom.demo;

import io.cudaloom.ReactorStats;
import java.io.Console;
import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

/**
 * The await demo: {@code threads} virtual threads each run {@code iterations} steps of
 * {@link DemoWorkload#runOnce} (launch, await, verify), while the main thread prints progress;
 * then the figures are collected into a {@link Result}. The baseline runs the same number of steps
 * on a pool of platform threads ({@link Crew#platformPool}) that block in the workload's
 * synchronize instead.
 *
 * <p>Steady state: the first {@code warmUp} iterations of every thread are a warm-up (the JIT's
 * first compiles, the carrier pool growing, first-touch allocations). Every thread stops after its
 * warm-up and waits until all have finished theirs; then the clock, the process CPU time and the
 * await-latency histogram start afresh, and all threads run their remaining iterations. The
 * throughput, CPU and latency figures are over that window only; the checks (every result
 * verified, no slot left in use) cover the whole run.
 */
final class DemoRun {
    private static final long PROGRESS_INTERVAL_MS = 200;        // on a console: at most 5 updates a second
    private static final long PLAIN_PROGRESS_INTERVAL_MS = 2_000; // elsewhere (a file, a pipe): a line every 2 s
    private static final Duration QUIESCENCE_LIMIT = Duration.ofSeconds(5);

    private DemoRun() {}

    /**
     * System property: how {@link Progress#to} writes progress. {@code auto} (the default): one line
     * rewritten in place if this JVM runs on a console ({@link #onConsole()}), plain lines otherwise;
     * {@code lines}: plain lines always; {@code console}: in place always. {@code ./demo} sets
     * {@code lines} when its stderr, where progress goes, is not a terminal (which the JVM cannot
     * tell: its console is about stdin and stdout).
     */
    static final String PROGRESS_PROPERTY = "cudaloom.demo.progress";

    /**
     * Where progress goes. On a console one line rewritten in place with {@code \r}; elsewhere (a
     * log file, a pipe, a test) plain lines, fewer of them.
     */
    record Progress(PrintStream stream, boolean console) {
        static final Progress NONE = new Progress(new PrintStream(PrintStream.nullOutputStream()), false);

        /**
         * Progress on {@code stream}: rewritten in place only on {@code System.err}, and there as
         * {@link #PROGRESS_PROPERTY} says (by default, only if this JVM runs on a console).
         */
        static Progress to(PrintStream stream) {
            return new Progress(stream,
                    stream == System.err && inPlace(System.getProperty(PROGRESS_PROPERTY, "auto"), DemoRun::onConsole));
        }

        /**
         * Whether progress is rewritten in place, for a {@link #PROGRESS_PROPERTY} value: {@code lines}
         * no, {@code console} yes, anything else ({@code auto}) what {@code onConsole} says, asked
         * only then.
         */
        static boolean inPlace(String choice, BooleanSupplier onConsole) {
            return switch (choice.strip().toLowerCase(Locale.ROOT)) {
                case "lines" -> false;
                case "console" -> true;
                default -> onConsole.getAsBoolean();
            };
        }
    }

    /**
     * Whether this JVM runs on a console: {@link System#console()} is not null and, on JDK 22 and
     * later (where it may be non-null with the streams redirected), {@code Console.isTerminal()}.
     */
    static boolean onConsole() {
        Console c = System.console();
        if (c == null) {
            return false;
        }
        try {
            return (Boolean) Console.class.getMethod("isTerminal").invoke(c);
        } catch (NoSuchMethodException e) {
            return true; // JDK 21: a console exists only on a terminal
        } catch (ReflectiveOperationException | RuntimeException e) {
            return false;
        }
    }

    /** What one run measured. {@link #passed()} is the demo's verdict. */
    record Result(
            String device,
            String threadKind,
            int threads,
            int iterations,
            int warmUpIterations,
            long steps,
            long completions,
            long verified,
            long mismatches,
            long errors,
            String firstError,
            long wallNanos,
            long cpuNanos,
            long warmUpCompletions,
            long warmUpWallNanos,
            long steadyCompletions,
            long steadyWallNanos,
            long steadyCpuNanos,
            long awaitP50,
            long awaitP90,
            long awaitP99,
            long awaitMax,
            List<LatencyHistogram.Point> latencySeries,
            int peakPlatformThreads,
            long armedAtEnd,
            long slotsInUseAtEnd,
            long quarantinedAtEnd,
            int capacity,
            long fallbacks,
            long registrations,
            long inlineCompletions,
            long immediate,
            long coalesced,
            long flagWrites,
            long scannerCpuNanos) {

        boolean passed() {
            return errors == 0 && mismatches == 0 && verified == steps
                    && armedAtEnd == 0 && slotsInUseAtEnd == 0;
        }

        /** Steady-state completions per second of wall time. */
        double completionsPerSecond() {
            return steadyWallNanos == 0 ? 0 : steadyCompletions * 1e9 / steadyWallNanos;
        }

        /** Steady-state process CPU time per completion in nanoseconds; NaN if unknown. */
        double cpuNanosPerCompletion() {
            return steadyCpuNanos < 0 || steadyCompletions == 0 ? Double.NaN : (double) steadyCpuNanos / steadyCompletions;
        }

        /** Steady-state process CPU time over wall time; NaN if unknown. */
        double coresBusy() {
            return steadyCpuNanos < 0 || steadyWallNanos == 0 ? Double.NaN : (double) steadyCpuNanos / steadyWallNanos;
        }

        /** Which iterations the warm-up was, in words. */
        String warmUpText() {
            return switch (warmUpIterations) {
                case 0 -> "none (--warmup 0): the figures include the first iterations' JIT compiles";
                case 1 -> "the first iteration of each thread";
                default -> String.format(Locale.ROOT, "the first %,d iterations of each thread", warmUpIterations);
            };
        }

        /** Which iterations the steady state was, in words. */
        String steadyText() {
            int first = warmUpIterations + 1;
            return first == iterations ? "iteration " + first + " of " + iterations
                    : String.format(Locale.ROOT, "iterations %,d-%,d of %,d", first, iterations, iterations);
        }

        /** The one-line summary: steady-state throughput, CPU per completion, cores busy. */
        String summary() {
            return String.format(Locale.ROOT, "summary: steady state (%s, after %s): %,.0f completions/s, %s CPU per"
                    + " completion, %s cores busy", steadyText(), warmUpIterations == 0 ? "no warm-up"
                            : warmUpIterations == 1 ? "a warm-up of 1 iteration per thread"
                            : "a warm-up of " + warmUpIterations + " iterations per thread",
                    completionsPerSecond(), cpuPerCompletionText(), coresBusyText());
        }

        private String cpuPerCompletionText() {
            double c = cpuNanosPerCompletion();
            return Double.isNaN(c) ? "n/a" : duration(Math.round(c));
        }

        private String coresBusyText() {
            double c = coresBusy();
            return Double.isNaN(c) ? "n/a" : String.format(Locale.ROOT, "%.2f", c);
        }

        /** The table, its notes, the summary and the verdict line. */
        void print(PrintStream out) {
            printTable(out);
            out.println(passed() ? "result: OK" : "result: FAILED");
        }

        /** {@link #print} without the verdict line (the demo prints one verdict after the side-by-side table). */
        void printTable(PrintStream out) {
            out.printf(Locale.ROOT, "%ncuda-loom demo: %,d %s x %,d iterations on %s%n",
                    threads, threadKind, iterations, device);
            row(out, "completions", String.format(Locale.ROOT, "%,d (%,d verified, %,d mismatches, %,d errors)",
                    completions, verified, mismatches, errors));
            row(out, "warm-up", warmUpIterations == 0 ? warmUpText()
                    : String.format(Locale.ROOT, "%s: %,d completions in %.2f s, not in the figures below",
                            warmUpText(), warmUpCompletions, warmUpWallNanos / 1e9));
            row(out, "steady state", String.format(Locale.ROOT, "%s: %,d completions in %.2f s",
                    steadyText(), steadyCompletions, steadyWallNanos / 1e9));
            row(out, "completions/s", String.format(Locale.ROOT, "%,.0f  (steady state)", completionsPerSecond()));
            row(out, "CPU per completion", cpuPerCompletionText()
                    + "  (process CPU time / completions, steady state)");
            row(out, "cores busy", coresBusyText() + "  (process CPU time / wall, steady state)");
            row(out, "await latency p50", duration(awaitP50) + "  (steady state)");
            row(out, "await latency p90", duration(awaitP90));
            row(out, "await latency p99", duration(awaitP99) + "  (max " + duration(awaitMax) + ")");
            row(out, "peak platform threads", String.format(Locale.ROOT, "%d  (for %,d %s)",
                    peakPlatformThreads, threads, threadKind));
            row(out, "process CPU time", steadyCpuNanos < 0 ? "n/a" : String.format(Locale.ROOT,
                    "%.2f s steady state; %.2f s whole run (wall %.2f s)", steadyCpuNanos / 1e9, cpuNanos / 1e9,
                    wallNanos / 1e9));
            row(out, "slots in use at end", String.format(Locale.ROOT, "%d  (armed %d, capacity %,d - free %,d, quarantined %d)",
                    slotsInUseAtEnd, armedAtEnd, capacity, capacity - slotsInUseAtEnd, quarantinedAtEnd));
            row(out, "fallbacks", String.format(Locale.ROOT, "%,d  (slot registrations %,d, inline %,d, already done %,d)",
                    fallbacks, registrations, inlineCompletions, immediate));
            if (scannerCpuNanos >= 0 && completions > 0) { // as MinimalReactor prints its scanner's
                row(out, "scanner CPU", String.format(Locale.ROOT, "%.2f us per completion (whole run)",
                        scannerCpuNanos / 1e3 / completions));
            }
            if (firstError != null) {
                row(out, "first error", firstError);
            }
            out.printf(Locale.ROOT, "  (await latency: time parked in await(), including the wait behind other threads'%n"
                    + "   work queued on the same stream; peak platform threads: the whole JVM, device threads included;%n"
                    + "   process CPU time: every thread of the JVM; the checks and the slot counts cover the whole run)%n");
            out.println(summary());
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

    /** {@link #run(DemoWorkload, int, int, int, Progress)} without a warm-up, progress on {@code progress} as plain lines. */
    static Result run(DemoWorkload workload, int threads, int iterations, PrintStream progress)
            throws InterruptedException {
        return run(workload, threads, iterations, 0, new Progress(progress, false));
    }

    /**
     * Runs the demo on {@code threads} virtual threads: {@code warmUp} iterations per thread, then
     * (once every thread has finished them) the remaining {@code iterations - warmUp}, the steady
     * state.
     */
    static Result run(DemoWorkload workload, int threads, int iterations, int warmUp, Progress progress)
            throws InterruptedException {
        return run(workload, Crew.virtualThreads(threads, iterations), warmUp, progress);
    }

    /**
     * Who runs the steps: {@code threads} threads of {@code factory} share {@code steps} steps as
     * evenly as they go ({@link #stepsOf}). The await demo is {@code threads} virtual threads of
     * {@code iterations} steps each; the baseline is a pool of platform threads that runs the same
     * number of steps.
     *
     * @param iterations the iterations the warm-up is a part of: a thread's warm-up is
     *     {@code warmUp / iterations} of its steps, rounded down
     */
    record Crew(String kind, ThreadFactory factory, int threads, long steps, int iterations) {
        Crew {
            if (threads < 1 || steps < threads || iterations < 1) {
                throw new IllegalArgumentException("a crew needs threads >= 1, steps >= threads and iterations >= 1,"
                        + " was " + threads + ", " + steps + ", " + iterations);
            }
        }

        /** {@code threads} virtual threads, {@code iterations} steps each. */
        static Crew virtualThreads(int threads, int iterations) {
            return new Crew("virtual threads", Thread.ofVirtual().name("demo-", 0).factory(), threads,
                    (long) threads * iterations, iterations);
        }

        /**
         * A pool of {@code threads} platform threads (daemons) sharing {@code steps} steps, whose
         * warm-up is the same fraction of their steps as {@code warmUp} is of {@code iterations}.
         */
        static Crew platformPool(int threads, long steps, int iterations) {
            int n = (int) Math.min(threads, steps);
            return new Crew("platform threads", Thread.ofPlatform().name("demo-pool-", 0).daemon().factory(), n,
                    steps, iterations);
        }

        /** Steps of thread {@code t}: an even share, the first {@code steps % threads} threads one more. */
        long stepsOf(int t) {
            return steps / threads + (t < steps % threads ? 1 : 0);
        }

        /** Warm-up steps of thread {@code t}: {@code warmUp / iterations} of its steps, rounded down. */
        long warmUpOf(int t, int warmUp) {
            return stepsOf(t) * warmUp / iterations;
        }
    }

    /**
     * Runs {@code crew}: each thread its warm-up steps, then (once every thread has finished them)
     * the rest, the steady state. {@link Result#threads()} and {@link Result#iterations()} are the
     * crew's threads and the iterations of its first thread.
     */
    static Result run(DemoWorkload workload, Crew crew, int warmUp, Progress progress) throws InterruptedException {
        int iterations = crew.iterations();
        if (warmUp < 0 || warmUp >= iterations) {
            throw new IllegalArgumentException("warm-up must be in [0, iterations), was " + warmUp + " of " + iterations);
        }
        int threads = crew.threads();
        var reactor = workload.device().reactor();
        ReactorStats before = reactor.stats();
        LongAdder completions = new LongAdder();
        LongAdder verified = new LongAdder();
        LongAdder mismatches = new LongAdder();
        LongAdder errors = new LongAdder();
        AtomicReference<String> firstError = new AtomicReference<>();
        CountDownLatch start = new CountDownLatch(1);
        CountDownLatch warmedUp = new CountDownLatch(threads);
        CountDownLatch steady = new CountDownLatch(1);
        CountDownLatch finished = new CountDownLatch(threads);
        long warmUpSteps = 0;
        for (int t = 0; t < threads; t++) {
            warmUpSteps += crew.warmUpOf(t, warmUp);
        }

        for (int t = 0; t < threads; t++) {
            int index = t;
            long mine = crew.stepsOf(t);
            long myWarmUp = crew.warmUpOf(t, warmUp);
            crew.factory().newThread(() -> {
                boolean failed = false;
                try {
                    start.await();
                    for (long it = 0; it < myWarmUp; it++) {
                        step(workload, index, (int) it, completions, verified, mismatches);
                    }
                } catch (Exception | Error e) {       // a fault, a closed device, an interrupt
                    failed = true;
                    errors.increment();
                    firstError.compareAndSet(null, e.toString());
                } finally {
                    warmedUp.countDown();
                }
                try {
                    if (!failed) {
                        steady.await();
                        for (long it = myWarmUp; it < mine; it++) {
                            step(workload, index, (int) it, completions, verified, mismatches);
                        }
                    }
                } catch (Exception | Error e) {
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
        long total = crew.steps();
        start.countDown();
        if (warmUpSteps > 0) {
            waitWithProgress(warmedUp, "warm-up", completions, 0, warmUpSteps, t0, reactor, progress);
        } else {
            warmedUp.await();
        }
        // Every thread is parked before its steady state (or has failed): nobody records now.
        long warmUpDone = completions.sum();
        long t1 = System.nanoTime();
        workload.awaitLatency().reset();
        long cpu1 = ProcessMetrics.processCpuNanos();
        long t1s = System.nanoTime();
        steady.countDown();
        waitWithProgress(finished, "steady state", completions, warmUpDone, total, t1s, reactor, progress);
        long t2 = System.nanoTime();
        long cpu2 = ProcessMetrics.processCpuNanos();
        int peak = ProcessMetrics.peakPlatformThreads();
        PrintStream p = progress.stream();
        p.printf(Locale.ROOT, "%s  %,d / %,d awaits done in %.2f s (warm-up %.2f s, steady state %.2f s)%s%n",
                progress.console() ? "\r" : "", completions.sum(), total, (t2 - t0) / 1e9, (t1 - t0) / 1e9,
                (t2 - t1s) / 1e9, progress.console() ? " ".repeat(20) : "");
        p.flush();

        // An await that completed inline (its own spin saw the flag) returns before the scanner
        // retires its slot; give the scanner a moment to catch up before reading "slots in use".
        ReactorStats after = awaitQuiescence(workload);
        LatencyHistogram lat = workload.awaitLatency();
        long inUse = after.capacity() - after.freeSlots();
        boolean cpuKnown = cpu0 >= 0;
        return new Result(workload.description(), crew.kind(), threads, (int) crew.stepsOf(0), warmUp, total,
                completions.sum(), verified.sum(),
                mismatches.sum(), errors.sum(), firstError.get(), t2 - t0, cpuKnown ? cpu2 - cpu0 : -1,
                warmUpDone, t1 - t0, completions.sum() - warmUpDone, t2 - t1s, cpuKnown ? cpu2 - cpu1 : -1,
                lat.percentile(50), lat.percentile(90), lat.percentile(99), lat.max(), lat.percentileSeries(),
                peak, after.armedNow(), inUse, after.quarantined(),
                after.capacity(), after.fallbacks() - before.fallbacks(),
                after.registrations() - before.registrations(),
                after.inlineCompletions() - before.inlineCompletions(),
                after.immediate() - before.immediate(),
                after.coalesced() - before.coalesced(),
                after.flagWrites() - before.flagWrites(),
                after.scannerCpuNanos() < 0 || before.scannerCpuNanos() < 0 ? -1
                        : after.scannerCpuNanos() - before.scannerCpuNanos());
    }

    private static void step(DemoWorkload workload, int index, int it, LongAdder completions, LongAdder verified,
            LongAdder mismatches) throws InterruptedException {
        boolean ok = workload.runOnce(index, it);
        completions.increment();
        (ok ? verified : mismatches).increment();
    }

    /** Waits for {@code latch}, printing progress of {@code phase}: on a console in place, else a plain line now and then. */
    private static void waitWithProgress(CountDownLatch latch, String phase, LongAdder completions, long from,
            long to, long phaseStart, io.cudaloom.CompletionReactor reactor, Progress progress)
            throws InterruptedException {
        long interval = progress.console() ? PROGRESS_INTERVAL_MS : PLAIN_PROGRESS_INTERVAL_MS;
        PrintStream p = progress.stream();
        while (!latch.await(interval, TimeUnit.MILLISECONDS)) {
            long done = completions.sum();
            double secs = (System.nanoTime() - phaseStart) / 1e9;
            p.printf(Locale.ROOT, "%s  %s: %,d / %,d awaits  %,.0f/s  armed slots %,d  platform threads %d%s",
                    progress.console() ? "\r" : "", phase, done, to, (done - from) / Math.max(secs, 1e-9),
                    reactor.stats().armedNow(), ProcessMetrics.platformThreads(),
                    progress.console() ? "   " : System.lineSeparator());
            p.flush();
        }
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
