package io.cudaloom.bench;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import com.sun.management.OperatingSystemMXBean;
import io.cudaloom.demo.DemoKernels;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ObjDoubleConsumer;
import org.HdrHistogram.AtomicHistogram;

/**
 * The demo's floor end to end, with no project code: the smallest program that waits for the
 * demo's steps the way the library does, so that the library's own CPU per completion can be read
 * against a program that does the same work with nothing else. It answers what
 * {@code DriverContention}'s {@code DEMO_STEP} cannot: that floor counts the driver's calls made by
 * platform threads back to back, while the demo also parks and wakes a virtual thread per step and
 * runs at twice any of that floor's rates.
 *
 * <p>What it does, as {@code DemoMain --baseline off} does: {@code threads} virtual threads (10,000)
 * each run {@code iterations} steps (200); a step takes a 1 KiB block from a pool (a semaphore and a
 * lock-free queue, as the demo's), fills 256 floats, puts them into the block's pinned host memory,
 * has the block copied to the device, scaled by {@code scale_f32} (the library's kernels resource,
 * read as data), copied back, waits, reads the floats back and checks each, and records the wait
 * in an HdrHistogram, as the demo's step does. Each step takes the next stream in turn (one atomic
 * counter), as the demo's does.
 *
 * <p>How it waits, the fewest parts that do it without a thread blocked in the driver:
 * <ul>
 *   <li><b>Submission by combining, per stream.</b> A step is appended to its stream's queue
 *       (a {@link ConcurrentLinkedQueue}); the thread that then wins the stream's drain flag (a
 *       compare-and-set) calls {@code cuCtxSetCurrent} once and submits every queued step (three
 *       driver calls each) while the stream has room (at most {@value #ROOM_ENTRIES} work entries
 *       submitted and not yet proven complete, as the library's work limit; a drain starts only with
 *       a quarter of that free), gives each its ticket (the stream's count of steps submitted),
 *       then enqueues one {@code cuStreamWriteValue32} of the last ticket into the stream's flag word
 *       in pinned, device-mapped host memory. It clears the flag and looks again (a step appended
 *       after its last poll, or room that came back, is then drained by it or by whoever set the
 *       flag since).
 *   <li><b>One scanner</b> (a platform thread) reads each stream's flag word (an acquire load); a
 *       value beyond the last seen proves every step up to that ticket complete: it raises the
 *       stream's proof, then sets each such step's done flag (a volatile write) and unparks its
 *       thread. After a pass that found nothing it parks for {@value #SCANNER_PARK_NANOS} ns.
 *   <li><b>Room comes back with the wake-ups.</b> A woken thread whose stream has steps queued
 *       drains it (the proof was raised before its unpark, so it sees the room).
 * </ul>
 * No admission, faults, closes, timeouts, interrupts, slots, metrics or argument checks: a program
 * of one workload on a healthy device. Kernel arguments are written by the drainer into its
 * stream's native block, which {@code cuLaunchKernel} reads during the call.
 *
 * <p>The driver is reached through {@code java.lang.foreign} downcalls to libcuda, as the library's
 * hot calls are by default. {@code device=fake} runs the same code on an in-process stand-in (one
 * platform thread per stream runs its copies, scale and flag writes in order), for a machine with no
 * GPU and for the module's tests; its figures mean nothing.
 *
 * <p>Measured as the demo measures: every thread runs its first step (the warm-up), all wait at a
 * gate, then the rest; completions/s and CPU per completion (the process's CPU time, every thread)
 * over that steady state. Printed: the same summary line as the demo's, and flag writes, drains and
 * the scanner's CPU per completion.
 *
 * <p>{@code kernelUs=N} runs the sweep's step instead ({@code GpuBench sweep}'s {@code await()} row):
 * each thread launches {@code spin_kernel(N us)} (one driver call, one work entry) and waits for it,
 * {@code iterations} times, after a warm-up of {@code warmups} (10) launches of 10 us kernels.
 *
 * <p>{@code drainers=K} caps the threads that drain at once, device-wide: a thread that finds every
 * permit taken lists its stream, and a permit's holder drains every listed stream before it gives the
 * permit back. Without it (the default) each stream has at most one drainer, as the library's
 * combining does, so up to {@code streams} threads are in the driver at once.
 *
 * <p>{@code bash .gpu/java io.cudaloom.bench.MinimalReactor [threads=10000] [iterations=200] [streams=8]
 * [kernelUs=N [warmups=10]] [drainers=K] [device=cuda|fake]}
 */
@SuppressWarnings("restricted") // libraryLookup, downcallHandle, reinterpret: run with --enable-native-access=ALL-UNNAMED
public final class MinimalReactor {
    /** Floats per step, as the demo's. */
    static final int FLOATS = 256;
    static final long BLOCK_BYTES = 4L * FLOATS;
    /** Blocks in the pool, as the demo's. */
    static final int BLOCKS = 16_384;
    /** Work entries a stream may have submitted and not proven (the library's work limit). */
    static final int ROOM_ENTRIES = 256;
    /** Kernel time of the spin mode's warm-up launches (as {@code GpuBench sweep}'s JIT warm-up). */
    static final long WARM_UP_KERNEL_NANOS = 10_000;
    /** The scanner's park after a pass that found nothing. */
    static final long SCANNER_PARK_NANOS = 20_000;
    private static final OperatingSystemMXBean OS = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final VarHandle INT = JAVA_INT.varHandle();

    private MinimalReactor() {}

    /** What the program asks of the device: the three calls of a step, the flag write, the flag read. */
    interface Device extends AutoCloseable {
        String name();

        /** Pinned host memory of {@link #BLOCKS} blocks. */
        MemorySegment host();

        /** Makes the context current on the calling thread (once per drain). */
        void bind();

        /** Copy {@code block} to the device, scale it by {@code factor}, copy it back, on stream {@code s}; {@code params} is the drainer's. */
        void step(int s, int block, float factor, MemorySegment params);

        /** Launches {@code spin_kernel(nanos)} (one thread, 1 argument) on stream {@code s}; {@code params} is the drainer's. */
        void spin(int s, long nanos, MemorySegment params);

        /** Enqueues a device write of {@code value} into stream {@code s}'s flag word. */
        void writeFlag(int s, int value);

        /** Stream {@code s}'s flag word (an acquire load). */
        int flag(int s);

        @Override
        void close();
    }

    /**
     * One step waiting: its thread and what it submits (the demo's step on a block, or, with block -1,
     * a spin kernel of {@code nanos}); its ticket (the drainer's), and done (the scanner's).
     */
    static final class Step {
        final Thread thread = Thread.currentThread();
        final int block;
        final float factor;
        final long nanos;
        /** Written by the drainer before the step is put in flight; read by the scanner after it took it from there. */
        long ticket;
        /** Written by the scanner (volatile) before the unpark; read by the step's thread. */
        volatile boolean done;

        Step(int block, float factor, long nanos) {
            this.block = block;
            this.factor = factor;
            this.nanos = nanos;
        }
    }

    /** One stream's queue, drain flag, tickets, steps in flight and proof. */
    static final class Lane {
        final int index;
        final ConcurrentLinkedQueue<Step> queue = new ConcurrentLinkedQueue<>();
        final AtomicBoolean draining = new AtomicBoolean();
        /** Whether the lane is in the run's list of lanes wanting a drainer (with a device-wide cap on drainers). */
        final AtomicBoolean listed = new AtomicBoolean();
        /**
         * Steps submitted; written only by the drain flag's holder (the flag's compare-and-set and clear
         * order the holders), read by anyone deciding whether to try for the flag.
         */
        volatile long submitted;
        /** Submitted steps in ticket order (the drainer adds, the scanner takes). */
        final ConcurrentLinkedQueue<Step> inFlight = new ConcurrentLinkedQueue<>();
        /** The highest ticket proven complete (the scanner raises it before the wake-ups). */
        final AtomicLong proven = new AtomicLong();
        final MemorySegment params;
        /** Drains that submitted steps, each ending with one flag write. */
        final LongAdder drains = new LongAdder();

        /** Steps this lane may have submitted and not proven. */
        final int room;

        Lane(int index, MemorySegment params, int room) {
            this.index = index;
            this.params = params;
            this.room = room;
        }

        /** Whether a drain under way may submit one more step. */
        boolean hasRoom() {
            return submitted - proven.get() < room;
        }

        /**
         * Whether a drain may start: a quarter of the room free. Without this margin a stream whose
         * queue stays full settles into drains of one step and one flag write each, every wake-up
         * giving back the room of one (the library paces its trackers for the same reason).
         */
        boolean mayStart() {
            return submitted - proven.get() <= room - room / 4;
        }
    }

    /** The program's state: the device, the lanes, the block pool. */
    static final class Run {
        final Device device;
        final Lane[] lanes;
        final ConcurrentLinkedQueue<Integer> free = new ConcurrentLinkedQueue<>();
        final Semaphore freeBlocks = new Semaphore(BLOCKS);
        final AtomicHistogram awaitLatency = new AtomicHistogram(TimeUnit.SECONDS.toNanos(60), 2);
        final LongAdder completions = new LongAdder();
        final LongAdder mismatches = new LongAdder();
        final AtomicInteger nextLane = new AtomicInteger();
        volatile boolean stop;

        /**
         * At most this many threads drain lanes at once, device-wide; null: no cap (one drainer per lane
         * at most, as the library's combining).
         */
        final Semaphore drainers;
        /** Lanes with steps to drain whose thread found every drainer's permit taken (each listed once). */
        final ConcurrentLinkedQueue<Lane> wanting = new ConcurrentLinkedQueue<>();
        /** Calls of {@link #drain} that found every permit taken and left the listed lanes to their holders. */
        final LongAdder leftToHolders = new LongAdder();

        /**
         * {@code entriesPerStep}: the work entries of one step (3 for the demo's, 1 for a spin kernel);
         * {@code drainers}: the device-wide cap on threads draining at once (0: none).
         */
        Run(Device device, int streams, int entriesPerStep, int drainers, Arena arena) {
            this.device = device;
            this.drainers = drainers > 0 ? new Semaphore(drainers) : null;
            this.lanes = new Lane[streams];
            for (int s = 0; s < streams; s++) {
                lanes[s] = new Lane(s, arena.allocate(64, 64), ROOM_ENTRIES / entriesPerStep);
            }
            for (int b = 0; b < BLOCKS; b++) {
                free.add(b);
            }
        }

        /** One step of thread {@code index}, iteration {@code it}: the demo's runOnce and scale. */
        void step(int index, int it) throws InterruptedException {
            float[] data = new float[FLOATS];
            float base = index % 4096;
            float factor = 2 + (it % 3);
            for (int i = 0; i < FLOATS; i++) {
                data[i] = base + i;
            }
            scale(data, factor);
            boolean ok = true;
            for (int i = 0; i < FLOATS; i++) {
                if (data[i] != (base + i) * factor) {
                    ok = false;
                    break;
                }
            }
            completions.increment();
            if (!ok) {
                mismatches.increment();
            }
        }

        /** The demo's {@code CudaWorkload.scale}: a block from the pool, in, scaled on the device, waited for, out. */
        void scale(float[] data, float factor) throws InterruptedException {
            freeBlocks.acquire();
            int block = Objects.requireNonNull(free.poll(), "a permit stands for a free block");
            long offset = block * BLOCK_BYTES;
            MemorySegment.copy(data, 0, device.host(), JAVA_FLOAT, offset, FLOATS);
            Lane lane = lanes[Math.floorMod(nextLane.getAndIncrement(), lanes.length)]; // the demo's round robin
            submitAndWait(lane, new Step(block, factor, 0));
            MemorySegment.copy(device.host(), JAVA_FLOAT, offset, data, 0, FLOATS);
            free.add(block);
            freeBlocks.release();
        }

        /** The sweep's step: a spin kernel of {@code nanos} launched, waited for. */
        void spin(long nanos) {
            Lane lane = lanes[Math.floorMod(nextLane.getAndIncrement(), lanes.length)];
            submitAndWait(lane, new Step(-1, 0, nanos));
            completions.increment();
        }

        /**
         * Appends {@code step} to {@code lane}'s queue, drains the lane if nobody does, parks until the
         * scanner has set the step's done flag, and drains again if room came back with the wake-up
         * and steps are queued. An interrupt is kept for the caller: the step is in flight.
         */
        private void submitAndWait(Lane lane, Step step) {
            lane.queue.add(step);
            long start = System.nanoTime();
            drain(lane);
            boolean interrupted = false;
            while (!step.done) {
                LockSupport.park(this);
                interrupted |= Thread.interrupted();
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            awaitLatency.recordValue(System.nanoTime() - start);
            if (!lane.queue.isEmpty()) {
                drain(lane); // room came back with this wake-up
            }
        }

        /**
         * Has the lane drained: by this thread ({@link #drainLane}) without a cap on drainers; with
         * one, the lane is listed as wanting a drainer, and this thread drains every listed lane while
         * it holds a permit. It looks at the list again after giving the permit back: a thread that
         * listed a lane and found no permit did so before its try (a compare-and-set on the
         * semaphore), and the holder's release comes before its look, so one of the two sees the
         * other's write and the lane is never left listed with nobody draining.
         */
        void drain(Lane lane) {
            if (drainers == null) {
                drainLane(lane);
                return;
            }
            if (lane.listed.compareAndSet(false, true)) {
                wanting.add(lane);
            }
            boolean first = true;
            while (!wanting.isEmpty()) {
                if (!drainers.tryAcquire()) {
                    if (first) {
                        leftToHolders.increment(); // the listed lanes are a permit holder's to drain
                    }
                    return;
                }
                first = false;
                try {
                    Lane l;
                    while ((l = wanting.poll()) != null) {
                        l.listed.set(false); // before the drain: a step appended meanwhile lists it again
                        drainLane(l);
                    }
                } finally {
                    drainers.release();
                }
            }
        }

        /**
         * Submits the lane's queued steps while it has room, if no other thread does; looks again
         * after clearing the flag, so that a step appended (or room given back) while the flag was
         * held is never left queued with nobody draining.
         */
        void drainLane(Lane lane) {
            while (!lane.queue.isEmpty() && lane.mayStart() && lane.draining.compareAndSet(false, true)) {
                int n = 0;
                try {
                    device.bind();
                    Step s;
                    while (lane.hasRoom() && (s = lane.queue.poll()) != null) {
                        if (s.block >= 0) {
                            device.step(lane.index, s.block, s.factor, lane.params);
                        } else {
                            device.spin(lane.index, s.nanos, lane.params);
                        }
                        s.ticket = ++lane.submitted;
                        lane.inFlight.add(s);
                        n++;
                    }
                    if (n > 0) {
                        device.writeFlag(lane.index, (int) lane.submitted);
                        lane.drains.increment();
                    }
                } finally {
                    lane.draining.set(false);
                }
            }
        }

        /** The scanner's loop: read each flag, raise the proof, wake the steps it covers; park when a pass found nothing. */
        void scan() {
            long[] seen = new long[lanes.length];
            while (!stop) {
                boolean found = false;
                for (Lane lane : lanes) {
                    int f = device.flag(lane.index);
                    if (f != seen[lane.index]) {
                        seen[lane.index] = f;
                        lane.proven.set(f); // before the wake-ups: a woken thread sees the room
                        Step s;
                        while ((s = lane.inFlight.peek()) != null && s.ticket <= f) {
                            lane.inFlight.poll();
                            s.done = true; // volatile, before the unpark
                            LockSupport.unpark(s.thread);
                        }
                        found = true;
                    }
                }
                if (!found) {
                    LockSupport.parkNanos(SCANNER_PARK_NANOS);
                }
            }
        }
    }

    /**
     * What the threads run: the demo's step ({@code kernelNanos} < 0; the first of {@code iterations}
     * is the warm-up), or the sweep's ({@code kernelNanos} >= 0: {@code warmUps} spin kernels of 10 us,
     * then {@code iterations} of {@code kernelNanos}, each launched and waited for).
     */
    record Mode(long kernelNanos, int warmUps) {
        static final Mode DEMO = new Mode(-1, 1);

        boolean demo() {
            return kernelNanos < 0;
        }

        /** Completions a thread makes in all. */
        long perThread(int iterations) {
            return demo() ? iterations : warmUps + (long) iterations;
        }

        String work() {
            return demo() ? "the demo's step (scale_f32 on " + FLOATS + " floats, copies both ways)"
                    : String.format(Locale.ROOT, "spin_kernel(%d us) launched and waited for", kernelNanos / 1000);
        }

        String steady(int iterations) {
            return demo() ? "iterations 2-" + iterations + " of " + iterations + ", after a warm-up of 1 iteration per thread"
                    : String.format(Locale.ROOT, "%d launches of %d us kernels per thread, after a warm-up of %d of %d us",
                            iterations, kernelNanos / 1000, warmUps, WARM_UP_KERNEL_NANOS / 1000);
        }
    }

    public static void main(String[] args) throws Exception {
        int threads = 10_000, iterations = 200, streams = 8, warmUps = 10, drainers = 0;
        long kernelNanos = -1;
        String device = "cuda";
        for (String a : args) {
            int eq = a.indexOf('=');
            String key = eq < 0 ? a : a.substring(0, eq), value = eq < 0 ? "" : a.substring(eq + 1);
            switch (key) {
                case "threads" -> threads = positive(key, value);
                case "iterations" -> iterations = positive(key, value);
                case "streams" -> streams = positive(key, value);
                case "kernelUs" -> kernelNanos = 1000L * positive(key, value);
                case "warmups" -> warmUps = positive(key, value);
                case "drainers" -> drainers = positive(key, value);
                case "device" -> device = value;
                default -> usage("unknown argument '" + a + "'");
            }
        }
        Mode mode = kernelNanos < 0 ? Mode.DEMO : new Mode(kernelNanos, warmUps);
        if (mode.demo() && iterations < 2) {
            usage("iterations must be >= 2 (the first is the warm-up), was " + iterations);
        }
        if (threads > BLOCKS) {
            usage("threads must be <= " + BLOCKS + " (the block pool), was " + threads);
        }
        if (!device.equals("cuda") && !device.equals("fake")) {
            usage("device must be cuda or fake, was '" + device + "'");
        }
        Result r;
        try (Arena arena = Arena.ofShared();
                Device d = device.equals("cuda") ? new Cuda(streams, arena) : new Fake(streams, arena)) {
            r = run(d, threads, iterations, streams, mode, drainers, arena);
        }
        System.out.println(r.report());
        if (!r.passed()) {
            System.out.println("result: FAILED");
            System.exit(1);
        }
        System.out.println("result: OK");
    }

    /**
     * Runs on the stand-in ({@code device=fake}), the demo's step ({@code kernelUs} < 0) or the
     * sweep's, with at most {@code drainers} threads draining at once (0: no cap), and returns the report; throws if a step failed, a check mismatched or a completion is
     * missing. For the module's tests, which reach this class (compiled for Java 22) by reflection.
     */
    public static String runOnStandIn(int threads, int iterations, int streams, int kernelUs, int drainers)
            throws InterruptedException {
        Result r;
        try (Arena arena = Arena.ofShared(); Device d = new Fake(streams, arena)) {
            r = run(d, threads, iterations, streams, kernelUs < 0 ? Mode.DEMO : new Mode(1000L * kernelUs, 2), drainers,
                    arena);
        }
        if (!r.passed()) {
            throw new IllegalStateException("the stand-in's run failed its checks: " + r.report());
        }
        return r.report();
    }

    private static int positive(String key, String value) {
        try {
            int v = Integer.parseInt(value);
            if (v >= 1) {
                return v;
            }
        } catch (NumberFormatException e) {
            // below
        }
        usage(key + " must be a positive integer, was '" + value + "'");
        return 0;
    }

    private static void usage(String problem) {
        System.err.println("MinimalReactor: " + problem);
        System.err.println("usage: MinimalReactor [threads=10000] [iterations=200] [streams=8] [kernelUs=N [warmups=10]]"
                + " [drainers=K] [device=cuda|fake]");
        System.exit(2);
    }

    /** What one run measured (the steady state: after the warm-up). */
    record Result(String device, int threads, int iterations, int streams, Mode mode, int drainers, long completions,
            long mismatches, long steadyCompletions, long steadyWallNanos, long steadyCpuNanos,
            long drains, long leftToHolders, long scannerCpuNanos, long p50Nanos, long p99Nanos) {
        /** Every step completed and every check passed. */
        boolean passed() {
            return mismatches == 0 && completions == threads * mode.perThread(iterations);
        }

        String report() {
            double perSecond = steadyCompletions * 1e9 / steadyWallNanos;
            double cpuUs = steadyCpuNanos / 1e3 / steadyCompletions;
            double busy = (double) steadyCpuNanos / steadyWallNanos;
            return String.format(Locale.ROOT, "MinimalReactor: %,d virtual threads on %s, %d streams%s, %s, no project"
                    + " code%n"
                    + "  completions              %,d (%,d mismatches)%n"
                    + "  completions/s            %,.0f  (steady state)%n"
                    + "  CPU per completion       %.1f us  (process CPU time / completions, steady state)%n"
                    + "  cores busy               %.2f%n"
                    + "  await latency p50 / p99  %.1f / %.1f ms%n"
                    + "  flag writes              %,d (%.4f per completion), drains %,d (%.1f steps each)%s%n"
                    + "  scanner CPU              %.2f us per completion (whole run)%n"
                    + "summary: steady state (%s): %,.0f completions/s, %.1f us CPU per completion, %.2f cores busy",
                    threads, device, streams, drainers == 0 ? "" : " (at most " + drainers + " draining at once)",
                    mode.work(), completions, mismatches, perSecond, cpuUs, busy,
                    p50Nanos / 1e6, p99Nanos / 1e6, drains, (double) drains / completions, drains,
                    drains == 0 ? 0.0 : (double) completions / drains,
                    drainers == 0 ? "" : String.format(Locale.ROOT, "; %,d times every permit was taken", leftToHolders),
                    scannerCpuNanos / 1e3 / completions,
                    mode.steady(iterations), perSecond, cpuUs, busy);
        }
    }

    /** Runs the program on {@code device}. */
    static Result run(Device device, int threads, int iterations, int streams, Mode mode, int drainers, Arena arena)
            throws InterruptedException {
        Run run = new Run(device, streams, mode.demo() ? 3 : 1, drainers, arena);
        AtomicLong scannerCpu = new AtomicLong();
        Thread scanner = startScanner(run, scannerCpu);
        CountDownLatch warmedUp = new CountDownLatch(threads);
        CountDownLatch steady = new CountDownLatch(1);
        CountDownLatch finished = new CountDownLatch(threads);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>(threads);
        for (int t = 0; t < threads; t++) {
            int index = t;
            ts.add(Thread.ofVirtual().unstarted(() -> {
                try {
                    try {
                        if (mode.demo()) {
                            run.step(index, 0);
                        } else {
                            for (int w = 0; w < mode.warmUps(); w++) {
                                run.spin(WARM_UP_KERNEL_NANOS);
                            }
                        }
                    } finally {
                        warmedUp.countDown();
                    }
                    steady.await();
                    if (mode.demo()) {
                        for (int it = 1; it < iterations; it++) {
                            run.step(index, it);
                        }
                    } else {
                        for (int it = 0; it < iterations; it++) {
                            run.spin(mode.kernelNanos());
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                } finally {
                    finished.countDown();
                }
            }));
        }
        ts.forEach(Thread::start);
        if (!warmedUp.await(120, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the warm-up did not finish in 120 s: " + warmedUp.getCount() + " threads left");
        }
        run.awaitLatency.reset();
        long warm = run.completions.sum();
        long cpu0 = OS.getProcessCpuTime();
        long t0 = System.nanoTime();
        steady.countDown();
        if (!finished.await(300, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the steady state did not finish in 300 s: " + finished.getCount() + " threads left");
        }
        long wall = System.nanoTime() - t0;
        long cpu = OS.getProcessCpuTime() - cpu0;
        run.stop = true;
        scanner.join();
        if (failure.get() != null) {
            throw new IllegalStateException("a step failed: " + failure.get(), failure.get());
        }
        long drains = 0;
        for (Lane lane : run.lanes) {
            drains += lane.drains.sum();
        }
        long all = run.completions.sum();
        return new Result(device.name(), threads, iterations, streams, mode, drainers, all, run.mismatches.sum(), all - warm, wall, cpu,
                drains, run.leftToHolders.sum(), scannerCpu.get(), run.awaitLatency.getValueAtPercentile(50),
                run.awaitLatency.getValueAtPercentile(99));
    }

    /** Starts {@code run}'s scanner (a platform thread), which leaves its CPU time in {@code cpu} when it stops. */
    private static Thread startScanner(Run run, AtomicLong cpu) {
        return Thread.ofPlatform().name("minimal-scanner").daemon().start(() -> {
            run.device.bind();
            long t0 = THREADS.getCurrentThreadCpuTime();
            try {
                run.scan();
            } finally {
                cpu.set(THREADS.getCurrentThreadCpuTime() - t0);
            }
        });
    }

    /**
     * The same reactor as a service, for the servlet benchmark's {@code minimal} server: {@link #open}
     * makes the device (CUDA, or the stand-in), the lanes and the scanner; {@link #accept} is one
     * request's step (the demo's scale: a block from the pool, in, scaled on the device, waited for,
     * out) on the caller's thread, which parks while it waits; {@link #close} stops the scanner and
     * frees everything. The demo's code (compiled for Java 21) reaches it by reflection, hence the JDK
     * interface.
     */
    public static final class Service implements ObjDoubleConsumer<float[]>, AutoCloseable {
        private final Arena arena;
        private final Device device;
        private final Run run;
        private final Thread scanner;
        private final int streams;

        private Service(int streams, boolean standIn) {
            this.streams = streams;
            this.arena = Arena.ofShared();
            this.device = standIn ? new Fake(streams, arena) : new Cuda(streams, arena);
            this.run = new Run(device, streams, 3, 0, arena);
            this.scanner = startScanner(run, new AtomicLong());
        }

        /** A service on device 0 ({@code standIn}: on the in-process stand-in) with {@code streams} streams. */
        public static Service open(int streams, boolean standIn) {
            if (streams < 1) {
                throw new IllegalArgumentException("streams must be >= 1, was " + streams);
            }
            return new Service(streams, standIn);
        }

        public String description() {
            return device.name() + ", " + streams + " streams, MinimalReactor (combining per stream, one flag write per"
                    + " drain, one scanner; no project code)";
        }

        /**
         * Scales {@code data} ({@value MinimalReactor#FLOATS} floats) by {@code factor} on the device, in place, and
         * returns when it is done. An interrupt while it waits for the device is kept for the caller
         * (the wait goes on: the block is in flight); one while it waits for a block is reported as an
         * {@link IllegalStateException}, the interrupt kept.
         */
        @Override
        public void accept(float[] data, double factor) {
            if (data.length != FLOATS) {
                throw new IllegalArgumentException("vector length must be " + FLOATS + ", was " + data.length);
            }
            try {
                run.scale(data, (float) factor);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the device", e);
            }
        }

        @Override
        public void close() throws InterruptedException {
            run.stop = true;
            scanner.join();
            device.close();
            arena.close();
        }
    }

    // ---- libcuda through java.lang.foreign ---------------------------------------------------------

    /** Device 0's primary context, {@code streams} non-blocking streams, the pool's memory, the flag words. */
    static final class Cuda implements Device {
        private static final Linker LINKER = Linker.nativeLinker();
        private static final SymbolLookup LIB = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
        private static final MethodHandle INIT = handle("cuInit", JAVA_INT);
        private static final MethodHandle DEVICE_GET = handle("cuDeviceGet", ADDRESS, JAVA_INT);
        private static final MethodHandle DEVICE_NAME = handle("cuDeviceGetName", ADDRESS, JAVA_INT, JAVA_INT);
        private static final MethodHandle RETAIN = handle("cuDevicePrimaryCtxRetain", ADDRESS, JAVA_INT);
        private static final MethodHandle RELEASE = handle("cuDevicePrimaryCtxRelease_v2", JAVA_INT);
        private static final MethodHandle SET_CURRENT = handle("cuCtxSetCurrent", JAVA_LONG);
        private static final MethodHandle MODULE_LOAD = handle("cuModuleLoadData", ADDRESS, ADDRESS);
        private static final MethodHandle MODULE_UNLOAD = handle("cuModuleUnload", JAVA_LONG);
        private static final MethodHandle GET_FUNCTION = handle("cuModuleGetFunction", ADDRESS, JAVA_LONG, ADDRESS);
        private static final MethodHandle STREAM_CREATE = handle("cuStreamCreate", ADDRESS, JAVA_INT);
        private static final MethodHandle STREAM_SYNC = handle("cuStreamSynchronize", JAVA_LONG);
        private static final MethodHandle STREAM_DESTROY = handle("cuStreamDestroy_v2", JAVA_LONG);
        private static final MethodHandle MEM_ALLOC = handle("cuMemAlloc_v2", ADDRESS, JAVA_LONG);
        private static final MethodHandle MEM_FREE = handle("cuMemFree_v2", JAVA_LONG);
        private static final MethodHandle HOST_ALLOC = handle("cuMemHostAlloc", ADDRESS, JAVA_LONG, JAVA_INT);
        private static final MethodHandle HOST_FREE = handle("cuMemFreeHost", JAVA_LONG);
        private static final MethodHandle HOST_DEVICE_POINTER = handle("cuMemHostGetDevicePointer_v2", ADDRESS, JAVA_LONG,
                JAVA_INT);
        private static final MethodHandle HTOD = handle("cuMemcpyHtoDAsync_v2", JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG);
        private static final MethodHandle DTOH = handle("cuMemcpyDtoHAsync_v2", JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG);
        private static final MethodHandle LAUNCH = handle("cuLaunchKernel", JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG);
        private static final MethodHandle WRITE32 = handle("cuStreamWriteValue32_v2", JAVA_LONG, JAVA_LONG, JAVA_INT,
                JAVA_INT);
        /** {@code CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP}. */
        private static final int MAPPED = 0x01 | 0x02;
        private static final int STREAM_NON_BLOCKING = 0x1;
        /** Bytes between two streams' flag words: one cache line each. */
        private static final long FLAG_STRIDE = 64;

        private final String name;
        private final int ordinal;
        private final long ctx;
        private final long module;
        private final long scale;
        private final long spinKernel;
        private final long[] streams;
        private final long device;
        private final long hostAddress;
        private final MemorySegment host;
        private final long flagsAddress;
        private final MemorySegment flags;
        private final long flagsDevice;

        Cuda(int streamCount, Arena arena) {
            try {
                MemorySegment out = arena.allocate(JAVA_LONG);
                check((int) INIT.invokeExact(0), "cuInit");
                check((int) DEVICE_GET.invokeExact(out, 0), "cuDeviceGet");
                ordinal = out.get(JAVA_INT, 0);
                MemorySegment nameBytes = arena.allocate(256);
                check((int) DEVICE_NAME.invokeExact(nameBytes, 256, ordinal), "cuDeviceGetName");
                name = nameBytes.getString(0);
                check((int) RETAIN.invokeExact(out, ordinal), "cuDevicePrimaryCtxRetain");
                ctx = out.get(JAVA_LONG, 0);
                check((int) SET_CURRENT.invokeExact(ctx), "cuCtxSetCurrent");
                String ptx = DemoKernels.ptxText(); // the resource's text, read as data
                check((int) MODULE_LOAD.invokeExact(out, arena.allocateFrom(ptx)), "cuModuleLoadData");
                module = out.get(JAVA_LONG, 0);
                check((int) GET_FUNCTION.invokeExact(out, module, arena.allocateFrom("scale_f32")), "cuModuleGetFunction");
                scale = out.get(JAVA_LONG, 0);
                check((int) GET_FUNCTION.invokeExact(out, module, arena.allocateFrom("spin_kernel")), "cuModuleGetFunction");
                spinKernel = out.get(JAVA_LONG, 0);
                streams = new long[streamCount];
                for (int s = 0; s < streamCount; s++) {
                    check((int) STREAM_CREATE.invokeExact(out, STREAM_NON_BLOCKING), "cuStreamCreate");
                    streams[s] = out.get(JAVA_LONG, 0);
                }
                check((int) MEM_ALLOC.invokeExact(out, BLOCKS * BLOCK_BYTES), "cuMemAlloc_v2");
                device = out.get(JAVA_LONG, 0);
                check((int) HOST_ALLOC.invokeExact(out, BLOCKS * BLOCK_BYTES, 0), "cuMemHostAlloc");
                hostAddress = out.get(JAVA_LONG, 0);
                host = MemorySegment.ofAddress(hostAddress).reinterpret(BLOCKS * BLOCK_BYTES);
                check((int) HOST_ALLOC.invokeExact(out, FLAG_STRIDE * streamCount, MAPPED), "cuMemHostAlloc (mapped)");
                flagsAddress = out.get(JAVA_LONG, 0);
                flags = MemorySegment.ofAddress(flagsAddress).reinterpret(FLAG_STRIDE * streamCount);
                flags.fill((byte) 0);
                check((int) HOST_DEVICE_POINTER.invokeExact(out, flagsAddress, 0), "cuMemHostGetDevicePointer_v2");
                flagsDevice = out.get(JAVA_LONG, 0);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        @Override
        public String name() {
            return name + " (cuda:" + ordinal + ", java.lang.foreign downcalls)";
        }

        @Override
        public MemorySegment host() {
            return host;
        }

        @Override
        public void bind() {
            try {
                check((int) SET_CURRENT.invokeExact(ctx), "cuCtxSetCurrent");
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        @Override
        public void step(int s, int block, float factor, MemorySegment params) {
            long stream = streams[s];
            long offset = block * BLOCK_BYTES;
            long data = device + offset;
            // params: three pointers, then the three values (scale_f32(float* data, float factor, int n))
            long base = params.address();
            params.set(JAVA_LONG, 0, base + 24);
            params.set(JAVA_LONG, 8, base + 32);
            params.set(JAVA_LONG, 16, base + 40);
            params.set(JAVA_LONG, 24, data);
            params.set(JAVA_FLOAT, 32, factor);
            params.set(JAVA_INT, 40, FLOATS);
            try {
                check((int) HTOD.invokeExact(data, hostAddress + offset, BLOCK_BYTES, stream), "cuMemcpyHtoDAsync_v2");
                check((int) LAUNCH.invokeExact(scale, 1, 1, 1, FLOATS, 1, 1, 0, stream, base, 0L), "cuLaunchKernel");
                check((int) DTOH.invokeExact(hostAddress + offset, data, BLOCK_BYTES, stream), "cuMemcpyDtoHAsync_v2");
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        @Override
        public void spin(int s, long nanos, MemorySegment params) {
            long base = params.address();
            params.set(JAVA_LONG, 0, base + 8); // spin_kernel(u64 nanos): one pointer, then the value
            params.set(JAVA_LONG, 8, nanos);
            try {
                check((int) LAUNCH.invokeExact(spinKernel, 1, 1, 1, 1, 1, 1, 0, streams[s], base, 0L), "cuLaunchKernel");
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        @Override
        public void writeFlag(int s, int value) {
            try {
                check((int) WRITE32.invokeExact(streams[s], flagsDevice + FLAG_STRIDE * s, value, 0),
                        "cuStreamWriteValue32_v2");
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        @Override
        public int flag(int s) {
            return (int) INT.getAcquire(flags, FLAG_STRIDE * s);
        }

        @Override
        public void close() {
            try {
                bind();
                for (long stream : streams) {
                    check((int) STREAM_SYNC.invokeExact(stream), "cuStreamSynchronize");
                    check((int) STREAM_DESTROY.invokeExact(stream), "cuStreamDestroy_v2");
                }
                check((int) HOST_FREE.invokeExact(flagsAddress), "cuMemFreeHost");
                check((int) HOST_FREE.invokeExact(hostAddress), "cuMemFreeHost");
                check((int) MEM_FREE.invokeExact(device), "cuMemFree_v2");
                check((int) MODULE_UNLOAD.invokeExact(module), "cuModuleUnload");
                check((int) RELEASE.invokeExact(ordinal), "cuDevicePrimaryCtxRelease_v2");
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        private static MethodHandle handle(String name, MemoryLayout... args) {
            MemorySegment symbol = LIB.find(name).orElseThrow(() -> new IllegalStateException("libcuda.so.1 has no symbol "
                    + name));
            return LINKER.downcallHandle(symbol, FunctionDescriptor.of(JAVA_INT, args));
        }

        /** Throws, naming the call and the driver's error name, unless {@code result} is CUDA_SUCCESS (BindingCost's check). */
        private static void check(int result, String what) {
            BindingCost.Cuda.check(result, what);
        }
    }

    // ---- an in-process stand-in, for machines without a GPU ----------------------------------------

    /** One platform thread per stream runs its entries in order: copies, the scale, the flag write (a release store). */
    static final class Fake implements Device {
        private final MemorySegment host;
        private final MemorySegment memory;
        private final MemorySegment flags;
        private final List<LinkedBlockingQueue<Runnable>> queues = new ArrayList<>();
        private final List<Thread> workers = new ArrayList<>();
        private volatile boolean closed;

        Fake(int streams, Arena arena) {
            host = arena.allocate(BLOCKS * BLOCK_BYTES, 64);
            memory = arena.allocate(BLOCKS * BLOCK_BYTES, 64);
            flags = arena.allocate(64L * streams, 64);
            for (int s = 0; s < streams; s++) {
                LinkedBlockingQueue<Runnable> q = new LinkedBlockingQueue<>();
                queues.add(q);
                workers.add(Thread.ofPlatform().name("fake-stream-" + s).daemon().start(() -> {
                    while (!closed) {
                        try {
                            Runnable r = q.poll(10, TimeUnit.MILLISECONDS);
                            if (r != null) {
                                r.run();
                            }
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }));
            }
        }

        @Override
        public String name() {
            return "an in-process stand-in (device=fake: no GPU, the figures mean nothing)";
        }

        @Override
        public MemorySegment host() {
            return host;
        }

        @Override
        public void bind() {}

        @Override
        public void step(int s, int block, float factor, MemorySegment params) {
            long offset = block * BLOCK_BYTES;
            queues.get(s).add(() -> {
                MemorySegment.copy(host, offset, memory, offset, BLOCK_BYTES);
                for (int i = 0; i < FLOATS; i++) {
                    long at = offset + 4L * i;
                    memory.set(JAVA_FLOAT, at, memory.get(JAVA_FLOAT, at) * factor);
                }
                MemorySegment.copy(memory, offset, host, offset, BLOCK_BYTES);
            });
        }

        @Override
        public void spin(int s, long nanos, MemorySegment params) {
            queues.get(s).add(() -> LockSupport.parkNanos(nanos));
        }

        @Override
        public void writeFlag(int s, int value) {
            queues.get(s).add(() -> INT.setRelease(flags, 64L * s, value));
        }

        @Override
        public int flag(int s) {
            return (int) INT.getAcquire(flags, 64L * s);
        }

        @Override
        public void close() {
            closed = true;
            for (Thread w : workers) {
                try {
                    w.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }
}
