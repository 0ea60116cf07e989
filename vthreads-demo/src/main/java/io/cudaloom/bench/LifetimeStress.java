package io.cudaloom.bench;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuEvent;
import io.cudaloom.GpuFaultException;
import io.cudaloom.GpuStream;
import io.cudaloom.ReactorClosedException;
import io.cudaloom.ReactorConfig;
import io.cudaloom.ReactorStats;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.internal.BackendAccess;
import io.cudaloom.spi.DeviceProbes;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.demo.DemoKernels;
import io.cudaloom.demo.LatencyHistogram;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

/**
 * Lifetimes and failure paths under load, three scenarios, each ending in one line
 * {@code PASS <scenario>: ...} or {@code FAIL <scenario>: ...} with its counts (exit code 0 only
 * if it passed):
 * <ul>
 *   <li>{@code churn}: {@code waiters} virtual threads launch and await on 8 streams while two
 *       threads close and reopen those streams at random, for {@code seconds}. Every step ends in
 *       a documented outcome (completed; the stream was closed: the launch or the event refused,
 *       or an event taken while it was closing refused), none hangs, and at the end every slot is
 *       back, every closed stream destroyed (on a GPU: the device's set and the driver's streams
 *       back to 0) and, after the device's close, the flag memory freed.
 *   <li>{@code fault}: {@code waiters} virtual threads wait on all 8 streams (coalesced: the waiters
 *       of a stream share one flag write, since 1,250 flag writes per stream would not fit in its
 *       hardware queue behind a running kernel); a kernel faults
 *       (CUDA_ERROR_ILLEGAL_ADDRESS) on one of them. Every waiter fails with the fault named within
 *       a bound; the wake-up latency after the fault became observable is reported (p50, p99,
 *       max). The device's close afterwards releases everything. On the simulated device, whose
 *       streams fault one by one (a CUDA fault takes the whole context), the fault is injected on
 *       every stream.
 *   <li>{@code close}: {@code waiters} virtual threads launch and await in a loop; the device is
 *       closed under them. All end with ReactorClosedException, no other failure, no driver call is
 *       admitted after the context's release, and everything is released.
 * </ul>
 * {@code all} runs each in a child JVM (the same java binary and class path): a CUDA fault poisons
 * the process's context, and a crash of one scenario must not hide the others.
 *
 * <pre>
 *   bash .gpu/java io.cudaloom.bench.LifetimeStress all                      # on the GPU: 10,000 waiters, 60 s churn
 *   java ... io.cudaloom.bench.LifetimeStress all --device sim --seconds 5   # anywhere: 1,000 waiters
 *   LifetimeStress churn|fault|close|all [--device auto|cuda|sim] [--seconds N] [--waiters N]
 * </pre>
 */
public final class LifetimeStress {
    private static final int STREAMS = 8;
    private static final Duration STEP_KERNEL = Duration.ofNanos(20_000);
    /** An await that takes longer than this counts as hung. */
    private static final Duration HANG = Duration.ofSeconds(30);
    /** The bound on a fault's wake-up after it became observable. */
    private static final long FAULT_WAKE_BOUND_MS = 1_000;

    private final String device;
    private final int seconds;
    private final int waiters;

    private LifetimeStress(String device, int seconds, int waiters) {
        this.device = device;
        this.seconds = seconds;
        this.waiters = waiters;
    }

    public static void main(String[] args) throws Exception {
        System.exit(run(args));
    }

    /** Runs the mode {@code args} name; returns the exit code: 0 passed, 1 failed, 2 bad usage. */
    static int run(String[] args) throws Exception {
        if (args.length == 0 || args[0].equals("--help")) {
            System.out.println("usage: LifetimeStress churn|fault|close|all [--device auto|cuda|sim] [--seconds N] [--waiters N]");
            return args.length == 0 ? 2 : 0;
        }
        String mode = args[0];
        String dev = "auto";
        int secs = 60;
        int n = -1;
        try {
            for (int i = 1; i < args.length; i += 2) {
                String a = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                String v = args[i + 1];
                switch (a) {
                    case "--device" -> dev = v;
                    case "--seconds" -> secs = Integer.parseInt(v);
                    case "--waiters" -> n = Integer.parseInt(v.replace("_", ""));
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            }
            if (!List.of("auto", "cuda", "sim").contains(dev)) {
                throw new IllegalArgumentException("--device must be auto, cuda or sim, was " + dev);
            }
            if (!List.of("churn", "fault", "close", "all").contains(mode)) {
                throw new IllegalArgumentException("mode must be churn, fault, close or all, was " + mode);
            }
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            return 2;
        }
        if (n < 0) {
            n = dev.equals("sim") ? 1_000 : 10_000;
        }
        LifetimeStress stress = new LifetimeStress(dev, secs, n);
        boolean ok = switch (mode) {
            case "churn" -> stress.churn();
            case "fault" -> stress.fault();
            case "close" -> stress.close();
            default -> stress.all(args);
        };
        return ok ? 0 : 1;
    }

    // ---- all: each scenario in a child JVM -------------------------------------------------------

    private boolean all(String[] args) throws Exception {
        List<String> rest = new ArrayList<>(Arrays.asList(args).subList(1, args.length));
        List<String> lines = new ArrayList<>();
        boolean ok = true;
        long start = System.nanoTime();
        for (String scenario : List.of("churn", "fault", "close")) {
            List<String> cmd = new ArrayList<>();
            cmd.add(ProcessHandle.current().info().command().orElse("java"));
            cmd.add("--enable-native-access=ALL-UNNAMED");
            String lib = System.getProperty("java.library.path");
            if (lib != null) {
                cmd.add("-Djava.library.path=" + lib);
            }
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add(LifetimeStress.class.getName());
            cmd.add(scenario);
            cmd.addAll(rest);
            long limit = scenario.equals("churn") ? seconds + 90L : 120L;
            System.out.println("== " + scenario + " (child JVM, at most " + limit + " s)");
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String verdict = null;
            try (var out = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(limit);
                Thread killer = Thread.ofPlatform().daemon(true).start(() -> {
                    try {
                        if (!p.waitFor(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                            p.destroyForcibly();
                        }
                    } catch (InterruptedException e) {
                        p.destroyForcibly();
                    }
                });
                String line;
                while ((line = out.readLine()) != null) {
                    System.out.println("   " + line);
                    if (line.startsWith("PASS " + scenario) || line.startsWith("FAIL " + scenario)) {
                        verdict = line;
                    }
                }
                killer.join();
            }
            int exit = p.waitFor();
            if (verdict == null) {
                verdict = "FAIL " + scenario + ": the child JVM ended (exit " + exit + ") without a verdict"
                        + (exit == 137 || exit == 9 ? " (killed: over its time limit, a hang?)" : " (a crash?)");
            } else if (exit != 0 && verdict.startsWith("PASS")) {
                verdict = "FAIL " + scenario + ": exit code " + exit + " after " + verdict;
            }
            ok &= exit == 0 && verdict.startsWith("PASS");
            lines.add(verdict);
        }
        System.out.printf("%n== LifetimeStress all on %s, %d waiters, churn %d s: %.0f s%n", device, waiters, seconds,
                (System.nanoTime() - start) / 1e9);
        lines.forEach(System.out::println);
        System.out.println(ok ? "ALL PASSED" : "NOT ALL PASSED");
        return ok;
    }

    // ---- shared ----------------------------------------------------------------------------------

    private GpuDevice open(boolean coalesce) {
        ReactorConfig config = ReactorConfig.builder().capacity(Math.max(1_024, Integer.highestOneBit(waiters * 2)))
                .coalesce(coalesce).build();
        return switch (device) {
            case "sim" -> SimulatedDevice.create(config);
            case "cuda" -> CudaDevice.open(0, config);
            default -> GpuDevice.open(config);
        };
    }

    /** Outcomes by kind; anything not documented is kept with its first example. */
    private static final class Outcomes {
        final Map<String, LongAdder> counts = new ConcurrentHashMap<>();
        final Map<String, String> examples = new ConcurrentHashMap<>();
        final LongAdder undocumented = new LongAdder();

        void count(String kind) {
            counts.computeIfAbsent(kind, k -> new LongAdder()).increment();
        }

        void undocumented(Throwable t) {
            undocumented.increment();
            String kind = "UNDOCUMENTED " + t.getClass().getName();
            count(kind);
            examples.putIfAbsent(kind, String.valueOf(t));
        }

        long get(String kind) {
            LongAdder a = counts.get(kind);
            return a == null ? 0 : a.sum();
        }

        long total() {
            return counts.values().stream().mapToLong(LongAdder::sum).sum();
        }

        @Override
        public String toString() {
            Map<String, Long> sorted = new TreeMap<>();
            counts.forEach((k, v) -> sorted.put(k, v.sum()));
            StringBuilder sb = new StringBuilder();
            sorted.forEach((k, v) -> sb.append(sb.length() == 0 ? "" : ", ").append(k).append(' ')
                    .append(String.format(Locale.ROOT, "%,d", v)));
            if (!examples.isEmpty()) {
                sb.append("; e.g. ").append(examples);
            }
            return sb.toString();
        }
    }

    /** A step's failure, classified: true if documented for a step on a stream that may be closed. */
    private static boolean closedStreamOutcome(Outcomes o, Throwable t) {
        if (t instanceof ReactorClosedException) {
            o.count("reactor closed");
            return true;
        }
        if (t instanceof IllegalStateException e && e.getMessage() != null) {
            String m = e.getMessage();
            if (m.contains("taken while it was closing")) {
                o.count("event taken while its stream closed: refused");
                return true;
            }
            if (m.startsWith("stream ") && m.endsWith(" is closed")) {
                o.count("stream closed: refused");
                return true;
            }
        }
        return false;
    }

    private static boolean eventually(Duration within, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            Thread.sleep(5); // polling a condition with a deadline (as Awaitility would), not a hand-off
        }
        return true;
    }

    private static boolean slotsBack(GpuDevice d) {
        ReactorStats s = d.reactor().stats();
        return s.armedNow() == 0 && s.freeSlots() == s.capacity() && s.quarantined() == 0;
    }

    private static String stats(GpuDevice d) {
        ReactorStats s = d.reactor().stats();
        return String.format(Locale.ROOT, "registrations %,d, coalesced %,d, completions %,d, fallbacks %,d, abandoned %,d, "
                + "faults %,d, armed %d, free %d/%d, quarantined %d", s.registrations(), s.coalesced(), s.completions(),
                s.fallbacks(), s.abandoned(), s.faults(), s.armedNow(), s.freeSlots(), s.capacity(), s.quarantined());
    }

    /**
     * The backend's own counters (not API: read through the library's internal hooks, which a
     * benchmark on the class path may use): what it still holds, calls it should never have seen.
     */
    private static DeviceProbes probes(GpuDevice d) {
        return BackendAccess.hooks().probes(d);
    }

    /** Streams still alive, and (on a GPU) the driver's streams and calls admitted after the release. */
    private static String lifetimes(GpuDevice d) {
        DeviceProbes p = probes(d);
        if (d instanceof CudaDevice) {
            return "live streams " + p.liveStreams() + ", driver streams " + p.driverStreams()
                    + ", calls admitted after the release " + p.callsAdmittedAfterRelease();
        }
        return "live streams " + p.liveStreams() + ", flag writes after the release " + p.writesAfterRelease();
    }

    private static boolean noStreamLeft(GpuDevice d) {
        DeviceProbes p = probes(d);
        return p.liveStreams() == 0 && p.driverStreams() == 0;
    }

    private static boolean nothingAfterRelease(GpuDevice d) {
        DeviceProbes p = probes(d);
        return p.callsAdmittedAfterRelease() == 0 && p.writesAfterRelease() == 0;
    }

    private static boolean verdict(String scenario, boolean ok, String counts) {
        System.out.println((ok ? "PASS " : "FAIL ") + scenario + ": " + counts);
        return ok;
    }

    // ---- (a) churn ------------------------------------------------------------------------------

    private boolean churn() throws Exception {
        GpuDevice d = open(false);
        System.out.println("churn on " + d.name() + ": " + waiters + " virtual threads on " + STREAMS
                + " streams closed and reopened at random for " + seconds + " s");
        AtomicReferenceArray<GpuStream> streams = new AtomicReferenceArray<>(STREAMS);
        for (int i = 0; i < STREAMS; i++) {
            streams.set(i, d.newStream());
        }
        Outcomes o = new Outcomes();
        LongAdder steps = new LongAdder();
        AtomicLong reopened = new AtomicLong();
        AtomicInteger hung = new AtomicInteger();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        CountDownLatch done = new CountDownLatch(waiters);
        for (int w = 0; w < waiters; w++) {
            Thread.ofVirtual().start(() -> {
                try {
                    while (System.nanoTime() - end < 0) {
                        GpuStream s = streams.get(ThreadLocalRandom.current().nextInt(STREAMS));
                        steps.increment();
                        try {
                            s.launchKernel(STEP_KERNEL);
                            GpuEvent e = s.event();
                            if (e.await(HANG)) {
                                o.count("completed");
                            } else {
                                hung.incrementAndGet();
                                o.count("HUNG (await over " + HANG.toSeconds() + " s)");
                            }
                        } catch (Throwable t) {
                            if (!closedStreamOutcome(o, t)) {
                                o.undocumented(t);
                            }
                        }
                    }
                } finally {
                    done.countDown();
                }
            });
        }
        List<Thread> closers = new ArrayList<>();
        for (int c = 0; c < 2; c++) {
            closers.add(Thread.ofPlatform().start(() -> {
                ThreadLocalRandom r = ThreadLocalRandom.current();
                while (System.nanoTime() - end < 0) {
                    int slot = r.nextInt(STREAMS);
                    try {
                        GpuStream fresh = d.newStream();
                        GpuStream old = streams.getAndSet(slot, fresh);
                        old.close(); // never throws
                        reopened.incrementAndGet();
                    } catch (Throwable t) {
                        o.undocumented(t);
                    }
                    try {
                        Thread.sleep(r.nextInt(1, 20)); // a random pace: 1-20 ms between closes
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }));
        }
        for (Thread t : closers) {
            t.join();
        }
        boolean allEnded = done.await(HANG.toSeconds() + 30, TimeUnit.SECONDS);
        for (int i = 0; i < STREAMS; i++) {
            streams.get(i).close();
        }
        boolean slots = eventually(Duration.ofSeconds(30), () -> slotsBack(d));
        boolean streamsGone = eventually(Duration.ofSeconds(30), () -> noStreamLeft(d));
        ReactorStats end0 = d.reactor().stats();
        boolean balanced = slots && end0.faults() == 0 && end0.abandoned() == 0; // no fault, no await gave up
        String before = stats(d) + "; " + lifetimes(d);
        d.close();
        boolean released = eventually(Duration.ofSeconds(30), () -> BackendAccess.hooks().isMemoryReleased(d));
        boolean afterRelease = nothingAfterRelease(d);
        long total = o.total();
        boolean ok = allEnded && hung.get() == 0 && o.undocumented.sum() == 0 && balanced && streamsGone && released
                && afterRelease && total == steps.sum() && o.get("completed") > 0;
        return verdict("churn", ok, String.format(Locale.ROOT, "%,d steps (%,d outcomes: %s); %,d streams closed and reopened; "
                + "all ended %b, hung %d; before the device's close: %s (stats balanced: every slot back, no fault, "
                + "none abandoned %b; closed streams destroyed %b); after: flag memory freed %b, %s", steps.sum(), total, o,
                reopened.get(), allEnded, hung.get(), before, balanced, streamsGone, released, lifetimes(d)));
    }

    // ---- (b) fault ------------------------------------------------------------------------------

    private boolean fault() throws Exception {
        // Coalesced: the waiters of a stream share its flag write. Each waiter's own would not fit:
        // a stream's hardware queue holds about 1,020 entries behind a running kernel, and 10,000
        // flag writes on 8 streams are 1,250 each (the enqueuing threads would block in the driver).
        GpuDevice d = open(true);
        boolean cuda = d instanceof CudaDevice;
        System.out.println("fault on " + d.name() + ": " + waiters + " virtual threads waiting on " + STREAMS
                + " streams (coalesced), a kernel faults on " + (cuda ? "one of them" : "each of them (simulated streams fault one by one)"));
        List<GpuStream> streams = new ArrayList<>();
        for (int i = 0; i < STREAMS; i++) {
            streams.add(d.newStream());
        }
        DemoKernels kernels = cuda ? DemoKernels.load((CudaDevice) d) : null;
        CountDownLatch simGate = new CountDownLatch(1);
        ReactorStats before0 = d.reactor().stats();
        long registeredBefore = before0.registrations() + before0.coalesced();
        if (cuda) {
            for (GpuStream s : streams) { // warm: the kernels loaded before the clock starts
                s.launchKernel(Duration.ZERO);
                s.await();
            }
            CudaStream faulting = (CudaStream) streams.get(0);
            faulting.launchKernel(Duration.ofSeconds(3)); // the waiters register meanwhile
            kernels.launchFault(faulting); // CUDA_ERROR_ILLEGAL_ADDRESS
            for (int i = 1; i < STREAMS; i++) {
                streams.get(i).launchKernel(Duration.ofSeconds(60)); // only the fault can end these waits early
            }
        } else {
            for (GpuStream s : streams) {
                ((SimulatedStream) s).launch(() -> {
                    try {
                        simGate.await();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                });
                ((SimulatedStream) s).injectFault("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)");
            }
        }
        long[] wokeAt = new long[waiters];
        Outcomes o = new Outcomes();
        CountDownLatch done = new CountDownLatch(waiters);
        for (int w = 0; w < waiters; w++) {
            int me = w;
            GpuEvent event = streams.get(w % STREAMS).event();
            Thread.ofVirtual().start(() -> {
                try {
                    event.await();
                    o.count("completed (the fault missed it)");
                } catch (GpuFaultException e) {
                    wokeAt[me] = System.nanoTime();
                    o.count(e.getMessage() != null && e.getMessage().contains("ILLEGAL_ADDRESS")
                            ? "fault, named" : "fault, NOT named");
                } catch (Throwable t) {
                    o.undocumented(t);
                } finally {
                    done.countDown();
                }
            });
        }
        BooleanSupplier registeredAll = () -> registeredNow(d) - registeredBefore >= waiters;
        boolean allRegistered = eventually(Duration.ofSeconds(cuda ? 2 : 30), registeredAll);
        long registered = registeredNow(d) - registeredBefore;
        simGate.countDown();
        // When the fault became observable: the first poll of the faulting stream that reports it.
        long observable = observeFault(streams.get(0));
        boolean allEnded = done.await(60, TimeUnit.SECONDS);
        LatencyHistogram latencies = new LatencyHistogram(); // HdrHistogram; its max is exact
        Arrays.stream(wokeAt).filter(t -> t != 0).forEach(t -> latencies.record(t - observable));
        String latency = latencies.count() == 0 ? "no waiter woke" : String.format(Locale.ROOT,
                "p50 %.2f ms, p99 %.2f ms, max %.2f ms", latencies.percentile(50) / 1e6,
                latencies.percentile(99) / 1e6, latencies.max() / 1e6);
        boolean bounded = latencies.count() > 0 && latencies.max() <= FAULT_WAKE_BOUND_MS * 1_000_000L;
        String before = stats(d);
        if (kernels != null) {
            kernels.close();
        }
        d.close();
        boolean released = eventually(Duration.ofSeconds(30), () -> BackendAccess.hooks().isMemoryReleased(d));
        boolean streamsGone = eventually(Duration.ofSeconds(30), () -> noStreamLeft(d));
        boolean ok = allEnded && o.get("fault, named") == waiters && o.undocumented.sum() == 0 && bounded && released
                && streamsGone && nothingAfterRelease(d);
        return verdict("fault", ok, String.format(Locale.ROOT, "%,d waiters (%,d registered before the fault%s): %s; "
                + "all ended %b; wake-up after the fault was observable: %s (bound %d ms); before the close: %s; "
                + "after the device's close: flag memory freed %b, %s", waiters, registered,
                allRegistered ? "" : ", the rest found it at once", o, allEnded, latency, FAULT_WAKE_BOUND_MS, before,
                released, lifetimes(d)));
    }

    /** Waiters registered so far: those that armed a slot and those that joined another's. */
    private static long registeredNow(GpuDevice d) {
        ReactorStats s = d.reactor().stats();
        return s.registrations() + s.coalesced();
    }

    /** Polls the stream without registering until it reports the fault; returns when (System.nanoTime). */
    private static long observeFault(GpuStream stream) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() - deadline < 0) {
            try {
                stream.event().await(Duration.ZERO); // a poll: one query, nothing registered
            } catch (GpuFaultException e) {
                return System.nanoTime();
            }
            Thread.onSpinWait();
        }
        return System.nanoTime();
    }

    // ---- (c) close ------------------------------------------------------------------------------

    private boolean close() throws Exception {
        GpuDevice d = open(false);
        System.out.println("close on " + d.name() + ": " + waiters + " virtual threads launch and await on " + STREAMS
                + " streams; the device is closed under them");
        List<GpuStream> streams = new ArrayList<>();
        for (int i = 0; i < STREAMS; i++) {
            streams.add(d.newStream());
        }
        Outcomes o = new Outcomes();
        LongAdder steps = new LongAdder();
        AtomicInteger endedClosed = new AtomicInteger();
        AtomicInteger hung = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(waiters);
        CountDownLatch running = new CountDownLatch(waiters);
        for (int w = 0; w < waiters; w++) {
            GpuStream s = streams.get(w % STREAMS);
            Thread.ofVirtual().start(() -> {
                boolean first = true;
                try {
                    while (true) {
                        steps.increment();
                        s.launchKernel(STEP_KERNEL);
                        boolean completed = s.event().await(HANG);
                        if (first) {
                            running.countDown();
                            first = false;
                        }
                        if (!completed) {
                            hung.incrementAndGet();
                            o.count("HUNG (await over " + HANG.toSeconds() + " s)");
                            return;
                        }
                        o.count("completed");
                    }
                } catch (ReactorClosedException e) {
                    o.count("reactor closed");
                    endedClosed.incrementAndGet();
                } catch (Throwable t) {
                    o.undocumented(t);
                } finally {
                    if (first) {
                        running.countDown();
                    }
                    done.countDown();
                }
            });
        }
        boolean allRunning = running.await(60, TimeUnit.SECONDS); // each has completed a step
        long stepsAtClose = steps.sum();
        long closeStart = System.nanoTime();
        d.close();
        double closeMs = (System.nanoTime() - closeStart) / 1e6;
        boolean allEnded = done.await(60, TimeUnit.SECONDS);
        boolean released = eventually(Duration.ofSeconds(30), () -> BackendAccess.hooks().isMemoryReleased(d));
        boolean streamsGone = eventually(Duration.ofSeconds(30), () -> noStreamLeft(d));
        ReactorStats after = d.reactor().stats();
        boolean ok = allRunning && allEnded && endedClosed.get() == waiters && hung.get() == 0
                && o.undocumented.sum() == 0 && released && streamsGone && nothingAfterRelease(d)
                && after.faults() == 0 && o.total() == steps.sum();
        return verdict("close", ok, String.format(Locale.ROOT, "%,d waiters, %,d steps (%,d when the device closed, "
                + "close() returned in %.1f ms): %s; ended with ReactorClosedException %,d of %,d; all ended %b; "
                + "after: %s; flag memory freed %b, %s", waiters, steps.sum(), stepsAtClose, closeMs, o,
                endedClosed.get(), waiters, allEnded, stats(d), released, lifetimes(d)));
    }
}
