package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.GpuDevice;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class DemoRunTest {
    private static final PrintStream NO_PROGRESS = new PrintStream(PrintStream.nullOutputStream());

    @Test
    void everyStepIsAwaitedAndVerified() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create();
             DemoWorkload workload = DemoWorkload.forDevice(device, 4, Duration.ofNanos(20_000))) {
            assertTrue(workload instanceof SimulatedWorkload);
            DemoRun.Result r = DemoRun.run(workload, 500, 4, NO_PROGRESS);
            assertEquals(2_000, r.completions());
            assertEquals(2_000, r.verified());
            assertEquals(0, r.mismatches());
            assertEquals(0, r.errors());
            assertEquals(0, r.slotsInUseAtEnd());
            assertEquals(0, r.armedAtEnd());
            assertEquals(2_000, workload.awaitLatency().count(), "one latency per await");
            assertTrue(r.awaitP50() <= r.awaitP90() && r.awaitP90() <= r.awaitP99() && r.awaitP99() <= r.awaitMax());
            assertEquals(2_000, r.registrations() + r.coalesced() + r.immediate() + r.fallbacks(),
                    "every await armed a (shared) slot, joined one, fell back, or found its work already done");
            assertTrue(r.passed());
            // the scanner's share, printed beside MinimalReactor's: its thread's CPU over the run (the JVM tells it here)
            assertTrue(r.scannerCpuNanos() > 0 && r.scannerCpuNanos() <= r.cpuNanos(), r.scannerCpuNanos() + " " + r.cpuNanos());
            ByteArrayOutputStream text = new ByteArrayOutputStream();
            r.printTable(new PrintStream(text, true, StandardCharsets.UTF_8));
            assertTrue(text.toString(StandardCharsets.UTF_8).contains(String.format(java.util.Locale.ROOT,
                    "  scanner CPU              %.2f us per completion (whole run)", r.scannerCpuNanos() / 1e3 / 2_000)),
                    text.toString(StandardCharsets.UTF_8));
        }
    }

    @Test
    void theSteadyStateStartsOnceEveryThreadHasFinishedItsWarmUp() throws Exception {
        int threads = 300, iterations = 5, warmUp = 2;
        AtomicInteger warmUpSteps = new AtomicInteger();
        AtomicInteger early = new AtomicInteger();
        try (SimulatedDevice device = SimulatedDevice.create();
             DemoWorkload counting = new ForwardingWorkload(DemoWorkload.forDevice(device, 4, Duration.ofNanos(20_000))) {
                 @Override
                 public boolean runOnce(int threadIndex, int iteration) throws InterruptedException {
                     if (iteration >= warmUp && warmUpSteps.get() != threads * warmUp) {
                         early.incrementAndGet();     // a steady step before every warm-up step was done
                     }
                     boolean ok = super.runOnce(threadIndex, iteration);
                     if (iteration < warmUp) {
                         warmUpSteps.incrementAndGet();
                     }
                     return ok;
                 }
             }) {
            ByteArrayOutputStream progress = new ByteArrayOutputStream();
            DemoRun.Result r = DemoRun.run(counting, threads, iterations, warmUp,
                    new DemoRun.Progress(new PrintStream(progress, true, StandardCharsets.UTF_8), false));
            assertEquals(0, early.get(), "steps of the steady state that ran before the warm-up had ended");
            assertTrue(r.passed());
            assertEquals(1_500, r.completions());
            assertEquals(1_500, r.verified(), "the checks cover the warm-up too");
            assertEquals(600, r.warmUpCompletions());
            assertEquals(900, r.steadyCompletions());
            assertEquals(900, counting.awaitLatency().count(), "the latencies are the steady state's only");
            assertTrue(0 < r.steadyWallNanos() && r.steadyWallNanos() < r.wallNanos());
            assertTrue(0 < r.warmUpWallNanos() && r.warmUpWallNanos() + r.steadyWallNanos() <= r.wallNanos());
            assertTrue(0 < r.steadyCpuNanos() && r.steadyCpuNanos() <= r.cpuNanos(), r.steadyCpuNanos() + " " + r.cpuNanos());
            assertEquals(900 * 1e9 / r.steadyWallNanos(), r.completionsPerSecond(), 1e-6);
            assertEquals((double) r.steadyCpuNanos() / 900, r.cpuNanosPerCompletion(), 1e-9);
            assertEquals((double) r.steadyCpuNanos() / r.steadyWallNanos(), r.coresBusy(), 1e-12);

            String text = print(r);
            assertTrue(text.contains("  warm-up                  the first 2 iterations of each thread: 600 completions in "), text);
            assertTrue(text.contains("  steady state             iterations 3-5 of 5: 900 completions in "), text);
            String summary = text.lines().filter(l -> l.startsWith("summary: ")).findFirst().orElseThrow();
            assertTrue(summary.startsWith("summary: steady state (iterations 3-5 of 5, after a warm-up of 2 iterations"
                    + " per thread): "), summary);
            assertTrue(summary.endsWith(String.format(java.util.Locale.ROOT, " %.2f cores busy", r.coresBusy())), summary);
            String p = progress.toString(StandardCharsets.UTF_8);
            assertFalse(p.contains("\r"), "plain progress lines: " + p);
            assertTrue(p.contains("1,500 / 1,500 awaits done in "), p);
        }
    }

    @Test
    void progressRewritesItsLineOnlyOnAConsole() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create();
             DemoWorkload workload = DemoWorkload.forDevice(device, 2, Duration.ZERO)) {
            ByteArrayOutputStream console = new ByteArrayOutputStream();
            DemoRun.run(workload, 10, 2, 1, new DemoRun.Progress(new PrintStream(console, true, StandardCharsets.UTF_8), true));
            assertTrue(console.toString(StandardCharsets.UTF_8).startsWith("\r"), console.toString(StandardCharsets.UTF_8));
            DemoRun.Result none = DemoRun.run(workload, 10, 1, 0, DemoRun.Progress.NONE);
            assertTrue(print(none).contains("  warm-up                  none (--warmup 0)"), print(none));
            assertTrue(print(none).contains("summary: steady state (iteration 1 of 1, after no warm-up): "), print(none));
            assertThrows(IllegalArgumentException.class, () -> DemoRun.run(workload, 10, 2, 2, DemoRun.Progress.NONE));
        }
        assertFalse(DemoRun.Progress.to(new PrintStream(new ByteArrayOutputStream())).console(),
                "a stream other than System.err is never the console");
    }

    @Test
    void progressWriterChoice() {
        java.util.function.BooleanSupplier mustNotBeAsked = () -> {
            throw new AssertionError("an explicit choice must not look at the console");
        };
        // ./demo with stderr redirected (a file, a pipe): plain lines, even if stdin and stdout are a terminal
        assertFalse(DemoRun.Progress.inPlace("lines", mustNotBeAsked));
        assertFalse(DemoRun.Progress.inPlace(" LINES ", mustNotBeAsked));
        assertTrue(DemoRun.Progress.inPlace("console", mustNotBeAsked));
        // auto (the default; ./demo on a terminal): the JVM's console decides
        assertTrue(DemoRun.Progress.inPlace("auto", () -> true));
        assertFalse(DemoRun.Progress.inPlace("auto", () -> false));
        assertFalse(DemoRun.Progress.inPlace("no-such-choice", () -> false), "anything else is auto");
        // here (surefire: System.err is a pipe, no console) the default writes plain lines
        String previous = System.getProperty(DemoRun.PROGRESS_PROPERTY);
        try {
            System.clearProperty(DemoRun.PROGRESS_PROPERTY);
            assertFalse(DemoRun.Progress.to(System.err).console(), "no console under surefire: plain lines");
            System.setProperty(DemoRun.PROGRESS_PROPERTY, "console");
            assertTrue(DemoRun.Progress.to(System.err).console(), "console forces the line in place");
            assertFalse(DemoRun.Progress.to(new PrintStream(new ByteArrayOutputStream())).console(),
                    "a stream other than System.err is never rewritten in place");
        } finally {
            if (previous == null) {
                System.clearProperty(DemoRun.PROGRESS_PROPERTY);
            } else {
                System.setProperty(DemoRun.PROGRESS_PROPERTY, previous);
            }
        }
    }

    @Test
    void theDataWrittenByTheDeviceIsVisibleAfterTheAwait() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create();
             DemoWorkload workload = DemoWorkload.forDevice(device, 2, Duration.ofMillis(1))) {
            float[] data = new float[DemoWorkload.VECTOR_LENGTH];
            data[0] = 1;
            data[1] = -4;
            data[255] = 3;
            workload.scale(data, 2.5f);
            assertEquals(2.5f, data[0]);
            assertEquals(-10f, data[1]);
            assertEquals(0f, data[2]);
            assertEquals(7.5f, data[255]);
            assertTrue(workload.runOnce(7, 2));
            assertThrows(IllegalArgumentException.class, () -> workload.scale(new float[4], 2f),
                    "every backend takes vectors of VECTOR_LENGTH only");
        }
    }

    @Test
    void aWrongResultIsReportedAsAMismatchAndFailsTheRun() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create();
             DemoWorkload broken = new ForwardingWorkload(DemoWorkload.forDevice(device, 2, Duration.ZERO)) {
                 @Override
                 public void scale(float[] data, float factor) throws InterruptedException {
                     super.scale(data, factor);
                     data[data.length - 1] += 1;         // an off-by-one "kernel"
                 }
             }) {
            DemoRun.Result r = DemoRun.run(broken, 10, 2, NO_PROGRESS);
            assertEquals(20, r.completions());
            assertEquals(20, r.mismatches());
            assertEquals(0, r.verified());
            assertFalse(r.passed());
            assertTrue(print(r).contains("result: FAILED"));
        }
    }

    @Test
    void aDeviceFaultIsReportedAsAnErrorAndFailsTheRun() throws Exception {
        try (SimulatedDevice device = SimulatedDevice.create()) {
            SimulatedStream faulty = device.newStream();
            DemoWorkload faulting = new ForwardingWorkload(DemoWorkload.forDevice(device, 1, Duration.ZERO)) {
                @Override
                public void scale(float[] data, float factor) throws InterruptedException {
                    faulty.injectFault("illegal address (injected)");
                    faulty.event().await();             // throws GpuFaultException
                }
            };
            DemoRun.Result r = DemoRun.run(faulting, 20, 3, NO_PROGRESS);
            assertEquals(20, r.errors(), "each thread stops at its first error");
            assertEquals(0, r.completions());
            assertTrue(r.firstError().contains("GpuFaultException"), r.firstError());
            assertTrue(r.firstError().contains("illegal address (injected)"), r.firstError());
            assertFalse(r.passed());
            assertEquals(0, r.slotsInUseAtEnd(), "a faulted stream's slots are recycled or never taken");
            faulting.close();
        }
    }

    @Test
    void theCudaWorkloadRejectsANonCudaDevice() {
        try (SimulatedDevice device = SimulatedDevice.create()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DemoWorkload.cuda(device, 1));
            assertTrue(e.getMessage().startsWith("not a CUDA device"), e.getMessage());
        }
    }

    private static String print(DemoRun.Result r) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        r.print(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /** Delegates everything; tests override {@link #scale}. */
    static class ForwardingWorkload implements DemoWorkload {
        final DemoWorkload delegate;

        ForwardingWorkload(DemoWorkload delegate) {
            this.delegate = delegate;
        }

        @Override
        public String description() {
            return "test: " + delegate.description();
        }

        @Override
        public GpuDevice device() {
            return delegate.device();
        }

        @Override
        public void scale(float[] data, float factor) throws InterruptedException {
            delegate.scale(data, factor);
        }

        @Override
        public LatencyHistogram awaitLatency() {
            return delegate.awaitLatency();
        }

        @Override
        public void close() {
            delegate.close();
        }
    }

    @Test
    void aPlatformPoolSharesTheSameStepsAndEachThreadKeepsToItsStream() throws Exception {
        DemoRun.Crew pool = DemoRun.Crew.platformPool(7, 100, 4);
        long sum = 0;
        for (int t = 0; t < pool.threads(); t++) {
            sum += pool.stepsOf(t);
            assertTrue(pool.stepsOf(t) == 14 || pool.stepsOf(t) == 15, "an even share: " + pool.stepsOf(t));
            assertEquals(pool.stepsOf(t) / 4, pool.warmUpOf(t, 1), "a quarter of its steps, rounded down");
        }
        assertEquals(100, sum, "every step once");
        assertEquals(3, DemoRun.Crew.platformPool(64, 3, 1).threads(), "no thread without a step");
        try (SimulatedDevice device = SimulatedDevice.create();
             DemoWorkload workload = DemoWorkload.forDevice(device, 4, Duration.ZERO, DemoWorkload.WaitBy.SYNCHRONIZE)) {
            java.util.Map<Thread, java.util.Set<Integer>> streamsOf = new java.util.concurrent.ConcurrentHashMap<>();
            StreamChoice choice = new StreamChoice(4, DemoWorkload.WaitBy.SYNCHRONIZE);
            DemoRun.Result r = DemoRun.run(new ForwardingWorkload(workload) {
                @Override
                public void scale(float[] data, float factor) throws InterruptedException {
                    streamsOf.computeIfAbsent(Thread.currentThread(), k -> java.util.concurrent.ConcurrentHashMap.newKeySet())
                            .add(choice.next());
                    super.scale(data, factor);
                }
            }, DemoRun.Crew.platformPool(4, 100, 4), 1, DemoRun.Progress.NONE);
            assertTrue(r.passed(), r.toString());
            assertEquals(100, r.verified());
            assertEquals(4 * (25 / 4), r.warmUpCompletions(), "each thread warms up on a quarter of its 25 steps");
            assertEquals("platform threads", r.threadKind());
            assertEquals(4, streamsOf.size(), "four pool threads");
            assertTrue(streamsOf.keySet().stream().noneMatch(Thread::isVirtual));
            assertEquals(java.util.Set.of(0, 1, 2, 3), streamsOf.values().stream().map(s -> {
                assertEquals(1, s.size(), "a thread keeps to one stream");
                return s.iterator().next();
            }).collect(java.util.stream.Collectors.toSet()), "one stream each");
        }
        StreamChoice roundRobin = new StreamChoice(3, DemoWorkload.WaitBy.AWAIT);
        assertEquals(java.util.List.of(0, 1, 2, 0), java.util.List.of(roundRobin.next(), roundRobin.next(),
                roundRobin.next(), roundRobin.next()), "awaiting steps go round-robin");
    }
}
