package io.cudaloom.stress;

import io.cudaloom.protocol.BackoffIdleStrategy;
import io.cudaloom.protocol.SlotTable.HeapFlagArray;
import io.cudaloom.protocol.IdleStrategy;
import io.cudaloom.protocol.SlotTable.RetiredBatch;
import io.cudaloom.protocol.SlotTable;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import java.util.stream.LongStream;

/**
 * The A/B harness of the scanner policy, a port of the Rust original's {@code ab_bench}, run
 * against the real {@link SlotTable} (its own {@code nArmed}: {@code publish} reports
 * idle-to-active), plus the measurements needed to choose the scanner's idle strategy.
 *
 * <h2>Section "ab": registration throughput, 2 x 2 configurations x 2 regimes</h2>
 * Registrant threads claim a slot (spinning while none is free), reset its flag, publish, play the
 * device by writing the flag at once, unpark the scanner (always, or only on idle-to-active:
 * "empty-to-wake") and count; the scanner retires and either parks when nothing is armed ("park":
 * core's {@link BackoffIdleStrategy}, by default with an unbounded spin window, i.e. spin while
 * armed; {@code --ab-park} picks another policy) or never parks (the never-park baseline).
 * Saturated: back to back; bursty: a yield every 256 registrations. Reported:
 * registrations/s (median of the runs, with min and max; the original kept the best of 3 and
 * called it the median), unparks and scan passes (medians), and the scanner thread's CPU time as a
 * share of its wall time (ThreadMXBean).
 *
 * <h2>Section "idle": what the scanner does while something is armed</h2>
 * Waiter threads register (claim, reset, hand a due time to a modelled device thread, publish,
 * unpark on idle-to-active) and park until the scanner delivers their ticket. The device writes
 * each flag when its kernel time has elapsed (random per scenario) and stamps the moment; the
 * scanner stamps the moment it retires the slot. Reported per idle strategy and scenario: awaits/s,
 * the scanner's detection delay (flag written to slot retired) and the waiter's wake latency (flag
 * written to waiter running again) as percentiles over all runs, the scanner's CPU share (median of
 * runs, min-max) and timed parks per second. Policies: see {@link Policy}.
 *
 * <p>Both sections run one scan loop ({@link ScanLoop}), the shape of the reactor's
 * {@code Scanner}: scan; if it retired something, deliver and {@code idle.reset(now)}; else
 * {@code idle.idle(!table.isIdle(), now, NO_DEADLINE)}. Every back-off policy is core's
 * {@link BackoffIdleStrategy} itself (a configuration of spin, minPark and maxPark); the only
 * other idle code is the baselines it is compared against ({@link SpinThenYield},
 * {@link NeverPark}).
 *
 * <p>Run (plain class path, no shaded jar needed):
 * {@code java -cp stress/target/classes:core/target/classes io.cudaloom.stress.AbBench [options]};
 * {@code --help} lists the options. Output is Markdown.
 */
public final class AbBench {

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private AbBench() {}

    // ---- options --------------------------------------------------------------------------------

    static final class Options {
        String section = "all";
        int threads = 8;
        int ops = 150_000;
        int runs = 5;
        int slots = 1024;
        long idleMillis = 1000;
        int idleRuns = 3;
        String abPark = "spin";
        List<String> strategies = new ArrayList<>(List.of(
                "spin",
                "spin-yield:10000",
                "yield",
                "park:50us:50us",
                "backoff:0us:20us:1ms:8",
                "backoff:50us:20us:1ms:8",
                "backoff:250us:20us:1ms:8",
                "backoff:250us:20us:500us:8",
                "backoff:50us:20us:250us:8"));
        List<String> scenarios = new ArrayList<>(List.of(
                "1x50us", "1x200us", "1x5ms", "1x50ms", "8x20us-2ms"));
    }

    static final String USAGE = """
            AbBench: A/B harness of the cuda-loom scanner (Markdown on stdout)
              --section all|ab|idle      which part to run (default all)
              --threads N                ab: registrant threads (default 8)
              --ops N                    ab: registrations per thread per run (default 150000)
              --runs N                   ab: runs per configuration, median reported (default 5)
              --slots N                  slot table capacity (default 1024)
              --ab-park SPEC             ab: idle policy of the "+ park" configurations (a strategy
                                         spec, below; default spin)
              --idle-ms N                idle: milliseconds per run (default 1000)
              --idle-runs N              idle: runs per strategy and scenario (default 3)
              --strategies a;b;...       idle: strategies (specs below), default:
                                         spin;spin-yield:10000;yield;park:50us:50us;backoff:0us:20us:1ms:8;
                                         backoff:50us:20us:1ms:8;backoff:250us:20us:1ms:8;
                                         backoff:250us:20us:500us:8;backoff:50us:20us:250us:8
              --scenarios a;b;...        idle: WAITERSxKERNEL or WAITERSxMIN-MAX (log-uniform), default:
                                         1x50us;1x200us;1x5ms;1x50ms;8x20us-2ms
            strategy specs (durations take ns, us or ms; every one parks untimed when nothing is armed):
              backoff:SPIN:MIN:MAX[:8]   core's BackoffIdleStrategy: spin SPIN after the last retirement,
                                         then park waited/8 within [MIN, MAX] (the divisor is fixed at 8);
                                         core's default is backoff:250us:20us:1ms:8
              park:SPIN:PARK             fixed parks after the spin: BackoffIdleStrategy, MIN = MAX = PARK
              spin                       spin while anything is armed: BackoffIdleStrategy, endless spin
              spin-yield:N               baseline (the Rust original): spin-hint for N idle passes, then
                                         Thread.yield between passes
              yield                      baseline: spin-yield:0
            """;

    static Options parse(String[] args) {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help") || a.equals("-h")) {
                System.out.print(USAGE);
                System.exit(0);
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value after " + a + "\n" + USAGE);
            }
            String v = args[++i];
            switch (a) {
                case "--section" -> o.section = v;
                case "--threads" -> o.threads = positive(a, v);
                case "--ops" -> o.ops = positive(a, v);
                case "--runs" -> o.runs = positive(a, v);
                case "--slots" -> o.slots = positive(a, v);
                case "--idle-ms" -> o.idleMillis = positive(a, v);
                case "--idle-runs" -> o.idleRuns = positive(a, v);
                case "--ab-park" -> o.abPark = v;
                case "--strategies" -> o.strategies = List.of(v.split(";"));
                case "--scenarios" -> o.scenarios = List.of(v.split(";"));
                default -> throw new IllegalArgumentException("unknown option " + a + "\n" + USAGE);
            }
        }
        if (!List.of("all", "ab", "idle").contains(o.section)) {
            throw new IllegalArgumentException("--section must be all, ab or idle");
        }
        Policy.parse(o.abPark); // fail early on a bad spec
        o.strategies.forEach(Policy::parse);
        o.scenarios.forEach(Scenario::parse);
        return o;
    }

    private static int positive(String name, String v) {
        int n = Integer.parseInt(v.replace("_", ""));
        if (n <= 0) {
            throw new IllegalArgumentException(name + " must be positive, was " + v);
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        Options o = parse(args);
        List<Policy> strategies = o.strategies.stream().map(Policy::parse).toList();
        List<Scenario> scenarios = o.scenarios.stream().map(Scenario::parse).toList();
        if (!THREADS.isCurrentThreadCpuTimeSupported()) {
            System.err.println("warning: thread CPU time not supported; CPU columns read 0");
        }
        System.out.printf("# cuda-loom scanner A/B (%s)%n%n", LocalDate.now());
        System.out.printf("Host: %d CPUs, %s %s; Java %s (%s); args: %s%n", Runtime.getRuntime().availableProcessors(),
                System.getProperty("os.name"), System.getProperty("os.arch"), System.getProperty("java.version"),
                System.getProperty("java.vm.name"), args.length == 0 ? "(defaults)" : String.join(" ", args));
        System.out.printf("Load average at start: %s (other work on the host skews every number below)%n", loadAverage());
        if (o.section.equals("all") || o.section.equals("ab")) {
            abSection(o);
        }
        if (o.section.equals("all") || o.section.equals("idle")) {
            idleSection(o, strategies, scenarios);
        }
        System.out.printf("%nLoad average at end: %s%n", loadAverage());
    }

    /** The first three fields of /proc/loadavg, or "n/a". */
    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException | RuntimeException e) {
            return "n/a";
        }
    }

    // ---- section ab -----------------------------------------------------------------------------

    enum Unpark { ALWAYS, EMPTY_TO_WAKE }

    record AbResult(double opsPerSec, long unparks, long scanPasses, double scannerCpu) {}

    static void abSection(Options o) throws InterruptedException {
        Policy park = Policy.parse(o.abPark);
        Object[][] configs = {
                {Unpark.ALWAYS, park, "always + park"},
                {Unpark.EMPTY_TO_WAKE, park, "empty-to-wake + park"},
                {Unpark.ALWAYS, Policy.NEVER_PARK, "always + never-park"},
                {Unpark.EMPTY_TO_WAKE, Policy.NEVER_PARK, "empty-to-wake + never-park"},
        };
        if (!o.abPark.equals("spin")) {
            System.out.printf("%n\"+ park\" runs %s%n", park.label());
        }
        runAb(Unpark.EMPTY_TO_WAKE, park, true, o.threads, Math.max(1, o.ops / 10), o.slots); // warm-up
        for (boolean saturated : new boolean[] {true, false}) {
            System.out.printf("%n## %s (%d threads x %,d registrations, median of %d runs)%n%n",
                    saturated ? "SATURATED" : "BURSTY (yield every 256)", o.threads, o.ops, o.runs);
            System.out.println("| config | M reg/s (median) | min - max | unparks | scan passes | scanner CPU |");
            System.out.println("|---|---|---|---|---|---|");
            for (Object[] c : configs) {
                List<AbResult> results = new ArrayList<>();
                for (int r = 0; r < o.runs; r++) {
                    results.add(runAb((Unpark) c[0], (Policy) c[1], saturated, o.threads, o.ops, o.slots));
                }
                double[] ops = results.stream().mapToDouble(AbResult::opsPerSec).sorted().toArray();
                System.out.printf(Locale.ROOT, "| %s | %.2f | %.2f - %.2f | %,d | %,d | %.0f%% |%n", c[2],
                        median(ops) / 1e6, ops[0] / 1e6, ops[ops.length - 1] / 1e6,
                        (long) median(results.stream().mapToDouble(AbResult::unparks).sorted().toArray()),
                        (long) median(results.stream().mapToDouble(AbResult::scanPasses).sorted().toArray()),
                        100 * median(results.stream().mapToDouble(AbResult::scannerCpu).sorted().toArray()));
            }
        }
    }

    static AbResult runAb(Unpark unpark, Policy idle, boolean saturated, int threads, int opsPer, int slots)
            throws InterruptedException {
        HeapFlagArray flags = new HeapFlagArray(slots);
        SlotTable<Object> table = new SlotTable<>(slots, flags);
        long total = (long) threads * opsPer;
        AbScanner scanner = new AbScanner(table, idle.create(), total);
        Thread scannerThread = Thread.ofPlatform().name("ab-scanner").unstarted(scanner);
        scannerThread.start();
        long[] unparks = new long[threads];
        Thread[] workers = new Thread[threads];
        long start = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            int id = t;
            workers[t] = Thread.ofPlatform().name("ab-registrant-" + t).start(() -> {
                Object token = new Object();
                long n = 0;
                for (int i = 0; i < opsPer; i++) {
                    long ticket;
                    while ((ticket = table.claim()) == SlotTable.NO_SLOT) {
                        Thread.onSpinWait();
                    }
                    table.resetFlag(ticket);
                    boolean idleToActive = table.publish(ticket, token);
                    flags.setRelease(SlotTable.slotOf(ticket), 1); // the modelled device completes at once
                    if (unpark == Unpark.ALWAYS || idleToActive) {
                        n++;
                        LockSupport.unpark(scannerThread);
                    }
                    if (!saturated && (i & 255) == 0) {
                        Thread.yield();
                    }
                }
                unparks[id] = n; // read after join
            });
        }
        for (Thread w : workers) {
            w.join();
        }
        while (scanner.done < total) { // the scanner may have parked just before the last retirement
            LockSupport.unpark(scannerThread);
            Thread.onSpinWait();
        }
        scannerThread.join();
        double secs = (System.nanoTime() - start) / 1e9;
        return new AbResult(total / secs, Arrays.stream(unparks).sum(), scanner.passes,
                scanner.cpuNanos / (double) scanner.wallNanos);
    }

    /** The scan loop of the ab section: retires (no payload to deliver) until all are done. */
    static final class AbScanner extends ScanLoop<Object> {
        private final long total;
        private long retired;
        volatile long done;

        AbScanner(SlotTable<Object> table, ScannerIdle idle, long total) {
            super(table, idle);
            this.total = total;
        }

        @Override
        boolean finished() {
            return retired >= total;
        }

        @Override
        void deliver(RetiredBatch<Object> batch) {
            retired += batch.size();
            done = retired;
        }
    }

    // ---- section idle ---------------------------------------------------------------------------

    /** Waiters, and a kernel-time distribution (fixed, or log-uniform between two bounds). */
    record Scenario(String spec, int waiters, long minKernelNanos, long maxKernelNanos) {
        static Scenario parse(String spec) {
            String[] wk = spec.trim().split("x", 2);
            if (wk.length != 2) {
                throw new IllegalArgumentException("scenario '" + spec + "': WAITERSxKERNEL or WAITERSxMIN-MAX");
            }
            int waiters = Integer.parseInt(wk[0]);
            String[] range = wk[1].split("-");
            long min = nanos(range[0]);
            long max = range.length > 1 ? nanos(range[1]) : min;
            if (waiters <= 0 || min <= 0 || max < min) {
                throw new IllegalArgumentException("scenario '" + spec + "': bad numbers");
            }
            return new Scenario(spec.trim(), waiters, min, max);
        }

        long sample(SplittableRandom rnd) {
            if (minKernelNanos == maxKernelNanos) {
                return minKernelNanos;
            }
            double lo = Math.log(minKernelNanos);
            double hi = Math.log(maxKernelNanos);
            return (long) Math.exp(lo + rnd.nextDouble() * (hi - lo));
        }

        String describe() {
            String k = minKernelNanos == maxKernelNanos ? fmt(minKernelNanos)
                    : fmt(minKernelNanos) + "-" + fmt(maxKernelNanos) + " log-uniform";
            return waiters + (waiters == 1 ? " waiter" : " waiters") + ", kernels " + k;
        }
    }

    record IdleResult(long awaits, double seconds, long[] detect, long[] wake, double scannerCpu, long timedParks,
            long idleParks) {}

    static void idleSection(Options o, List<Policy> strategies, List<Scenario> scenarios)
            throws InterruptedException {
        // Warm-up: every code path once, briefly.
        for (Policy s : strategies) {
            runIdle(s, scenarios.get(0), 50, o.slots);
        }
        for (Scenario sc : scenarios) {
            System.out.printf("%n## IDLE STRATEGY: %s (%d x %d ms)%n%n", sc.describe(), o.idleRuns, o.idleMillis);
            System.out.println("| strategy | awaits/s | detect p50 / p90 / p99 / max (us) | wake p50 / p99 (us) "
                    + "| scanner CPU (median, min-max) | timed parks/s |");
            System.out.println("|---|---|---|---|---|---|");
            for (Policy s : strategies) {
                List<IdleResult> rs = new ArrayList<>();
                for (int r = 0; r < o.idleRuns; r++) {
                    rs.add(runIdle(s, sc, o.idleMillis, o.slots));
                }
                org.HdrHistogram.Histogram detect = histogram(rs.stream().flatMapToLong(x -> Arrays.stream(x.detect)));
                org.HdrHistogram.Histogram wake = histogram(rs.stream().flatMapToLong(x -> Arrays.stream(x.wake)));
                double secs = rs.stream().mapToDouble(IdleResult::seconds).sum();
                long awaits = rs.stream().mapToLong(IdleResult::awaits).sum();
                double[] cpu = rs.stream().mapToDouble(IdleResult::scannerCpu).sorted().toArray();
                long parks = rs.stream().mapToLong(IdleResult::timedParks).sum();
                System.out.printf(Locale.ROOT, "| %s | %,.0f | %s / %s / %s / %s | %s / %s | %.1f%% (%.1f-%.1f) | %,.0f |%n",
                        s.label(), awaits / secs, us(pct(detect, 0.5)), us(pct(detect, 0.9)), us(pct(detect, 0.99)),
                        us(pct(detect, 1.0)), us(pct(wake, 0.5)), us(pct(wake, 0.99)), 100 * median(cpu),
                        100 * cpu[0], 100 * cpu[cpu.length - 1], parks / secs);
            }
        }
    }

    static IdleResult runIdle(Policy policy, Scenario sc, long millis, int slots) throws InterruptedException {
        HeapFlagArray flags = new HeapFlagArray(slots);
        SlotTable<IdleWaiter> table = new SlotTable<>(slots, flags);
        Device device = new Device(flags);
        IdleScanner scanner = new IdleScanner(table, policy.create());
        Thread deviceThread = Thread.ofPlatform().name("idle-device").daemon(true).unstarted(device);
        Thread scannerThread = Thread.ofPlatform().name("idle-scanner").daemon(true).unstarted(scanner);
        device.thread = deviceThread;
        deviceThread.start();
        scannerThread.start();
        IdleWaiter[] waiters = new IdleWaiter[sc.waiters()];
        Thread[] waiterThreads = new Thread[sc.waiters()];
        long start = System.nanoTime();
        for (int i = 0; i < waiters.length; i++) {
            waiters[i] = new IdleWaiter(table, device, scannerThread, sc, 42L * i + 7);
            waiterThreads[i] = Thread.ofPlatform().name("idle-waiter-" + i).daemon(true).start(waiters[i]);
        }
        Thread.sleep(millis);
        for (IdleWaiter w : waiters) {
            w.stop = true;
        }
        for (Thread t : waiterThreads) {
            t.join(); // each finishes the await it is in
        }
        double secs = (System.nanoTime() - start) / 1e9;
        scanner.stop = true;
        LockSupport.unpark(scannerThread);
        scannerThread.join();
        device.stop = true;
        LockSupport.unpark(deviceThread);
        deviceThread.join();
        long awaits = 0;
        LongList wake = new LongList();
        for (IdleWaiter w : waiters) {
            awaits += w.awaits;
            wake.addAll(w.wake);
        }
        return new IdleResult(awaits, secs, scanner.detect.toArray(), wake.toArray(),
                scanner.cpuNanos / (double) scanner.wallNanos, scanner.timedParks, scanner.parks);
    }

    /** One registration's device work: its due time, and when the flag was written. */
    static final class Kernel {
        final long due;
        final int slot;
        volatile long flagWrittenAt; // set by the device just before the flag's release store

        Kernel(long due, int slot) {
            this.due = due;
            this.slot = slot;
        }
    }

    /**
     * The modelled device: writes each kernel's flag at its due time, in due order. Sleeps (timed
     * park) until shortly before the next due time, then spins to it, so flags land close to
     * their due times without a core spent on long kernels.
     */
    static final class Device implements Runnable {
        private static final long SPIN_BEFORE_DUE = 200_000L;
        private final HeapFlagArray flags;
        private final ConcurrentLinkedQueue<Kernel> inbox = new ConcurrentLinkedQueue<>();
        private final PriorityQueue<Kernel> pending = new PriorityQueue<>((a, b) -> Long.compare(a.due, b.due));
        volatile boolean stop;
        Thread thread;

        Device(HeapFlagArray flags) {
            this.flags = flags;
        }

        void submit(Kernel k) {
            inbox.add(k);
            LockSupport.unpark(thread);
        }

        @Override
        public void run() {
            while (!stop) {
                for (Kernel k; (k = inbox.poll()) != null; ) {
                    pending.add(k);
                }
                Kernel next = pending.peek();
                if (next == null) {
                    LockSupport.park(this);
                    continue;
                }
                long left = next.due - System.nanoTime();
                if (left > SPIN_BEFORE_DUE) {
                    LockSupport.parkNanos(this, left - SPIN_BEFORE_DUE);
                } else if (left > 0) {
                    Thread.onSpinWait();
                } else {
                    pending.poll();
                    next.flagWrittenAt = System.nanoTime();
                    flags.setRelease(next.slot, 1);
                }
            }
        }
    }

    /** A waiting thread: registers, parks until its ticket is delivered, and records the wake. */
    static final class IdleWaiter implements Runnable {
        private final SlotTable<IdleWaiter> table;
        private final Device device;
        private final Thread scanner;
        private final Scenario scenario;
        private final SplittableRandom rnd;
        volatile boolean stop;
        private volatile long delivered = Long.MIN_VALUE;
        private Thread thread;
        /** The current registration's kernel: written before publish, read by the scanner after. */
        Kernel kernel;
        long awaits;
        final LongList wake = new LongList();

        IdleWaiter(SlotTable<IdleWaiter> table, Device device, Thread scanner, Scenario scenario, long seed) {
            this.table = table;
            this.device = device;
            this.scanner = scanner;
            this.scenario = scenario;
            this.rnd = new SplittableRandom(seed);
        }

        void deliver(long ticket) {
            delivered = ticket;
            LockSupport.unpark(thread);
        }

        @Override
        public void run() {
            thread = Thread.currentThread();
            while (!stop) {
                long ticket;
                while ((ticket = table.claim()) == SlotTable.NO_SLOT) {
                    Thread.onSpinWait();
                }
                table.resetFlag(ticket);
                Kernel k = new Kernel(System.nanoTime() + scenario.sample(rnd), SlotTable.slotOf(ticket));
                kernel = k;
                device.submit(k); // "enqueue the flag write" behind the kernel
                if (table.publish(ticket, this)) {
                    LockSupport.unpark(scanner);
                }
                while (delivered != ticket) {
                    LockSupport.park(this);
                }
                wake.add(System.nanoTime() - k.flagWrittenAt);
                awaits++;
            }
        }
    }

    /** The scan loop of the idle section: delivers to the waiters and records detection delays. */
    static final class IdleScanner extends ScanLoop<IdleWaiter> {
        volatile boolean stop;
        final LongList detect = new LongList();

        IdleScanner(SlotTable<IdleWaiter> table, ScannerIdle idle) {
            super(table, idle);
        }

        @Override
        boolean finished() {
            return stop;
        }

        @Override
        void deliver(RetiredBatch<IdleWaiter> batch) {
            long now = System.nanoTime();
            for (int i = 0; i < batch.size(); i++) {
                IdleWaiter w = batch.payload(i);
                if (w != null) {
                    detect.add(now - w.kernel.flagWrittenAt);
                    w.deliver(batch.ticket(i));
                }
            }
        }
    }

    // ---- the scan loop and its idle policies ----------------------------------------------------

    /**
     * The one scan loop of both sections, the shape of the reactor's {@code Scanner}
     * ({@code run}, {@code doWork}, {@code idleStep}) without its fault probe and quarantine: scan;
     * if it retired something, deliver and reset the idle policy; else one idle step, with the
     * park gate ({@code isIdle()}, the armed count) checked right before it. Counts passes, timed
     * and untimed parks, and the thread's CPU and wall time.
     */
    abstract static class ScanLoop<T> implements Runnable {
        private final SlotTable<T> table;
        private final ScannerIdle idle;
        long passes;
        long timedParks;
        long parks;
        long cpuNanos;
        long wallNanos;

        ScanLoop(SlotTable<T> table, ScannerIdle idle) {
            this.table = table;
            this.idle = idle;
        }

        /** Whether the loop should stop (checked before each pass). */
        abstract boolean finished();

        /** Hands a non-empty batch of retired slots over; the loop clears it afterwards. */
        abstract void deliver(RetiredBatch<T> batch);

        @Override
        public void run() {
            long cpu0 = THREADS.getCurrentThreadCpuTime();
            long wall0 = System.nanoTime();
            RetiredBatch<T> batch = new RetiredBatch<>(table.capacity());
            idle.reset(wall0);
            while (!finished()) {
                table.scanOnce(batch);
                passes++;
                if (!batch.isEmpty()) {
                    deliver(batch);
                    batch.clear();
                    idle.reset(System.nanoTime());
                    continue;
                }
                switch (idle.idle(!table.isIdle(), System.nanoTime(), IdleStrategy.NO_DEADLINE)) {
                    case TIMED_PARK -> timedParks++;
                    case PARK -> parks++;
                    case SPUN -> { }
                }
            }
            cpuNanos = THREADS.getCurrentThreadCpuTime() - cpu0;
            wallNanos = System.nanoTime() - wall0;
        }
    }

    /** What {@link ScannerIdle#idle} did. */
    enum Step { SPUN, TIMED_PARK, PARK }

    /**
     * What the scan loop calls after a pass that retired nothing: core's
     * {@link BackoffIdleStrategy} ({@link Backoff}), or one of the baselines it is compared with.
     * It decides and carries out what it decided (core's strategy only decides: {@link Backoff}
     * carries it out as the reactor's scanner runner does).
     */
    interface ScannerIdle {
        void reset(long now);

        Step idle(boolean armed, long now, long deadlineNanos);
    }

    /**
     * Core's strategy, its decisions carried out as the reactor's scanner runner does (LockSupport
     * parks, each park's end reported), but for the untimed park's box: the bench's loop ends only
     * when its work is done, so it needs none.
     */
    record Backoff(BackoffIdleStrategy strategy) implements ScannerIdle {
        Backoff(long spinNanos, long minParkNanos, long maxParkNanos) {
            this(new BackoffIdleStrategy(spinNanos, 0L /* no linger: the policies as measured */, minParkNanos, maxParkNanos,
                    System.nanoTime()));
        }

        @Override
        public void reset(long now) {
            strategy.reset(now);
        }

        @Override
        public Step idle(boolean armed, long now, long deadlineNanos) {
            long action = strategy.idle(armed, now, deadlineNanos);
            if (action == IdleStrategy.PARK) {
                LockSupport.park(AbBench.class);
                strategy.parked(System.nanoTime());
                return Step.PARK;
            }
            if (IdleStrategy.isTimedPark(action)) {
                LockSupport.parkNanos(AbBench.class, action);
                strategy.parked(System.nanoTime());
                return Step.TIMED_PARK;
            }
            if (action == IdleStrategy.SPIN) {
                Thread.onSpinWait();
            } else if (action == IdleStrategy.YIELD) {
                Thread.yield();
            }
            return Step.SPUN;
        }
    }

    /**
     * Baseline, not a candidate: the Rust original's spin-then-yield, which
     * {@link BackoffIdleStrategy} cannot express (it never yields). While anything is armed:
     * spin-hint for {@code spinPasses} idle passes after the last progress, then
     * {@link Thread#yield} between passes; nothing armed: untimed park, as every policy here
     * (empty-to-wake is not a choice). {@code yield} is {@code spinPasses} = 0.
     */
    static final class SpinThenYield implements ScannerIdle {
        private final int spinPasses;
        private int idlePasses;

        SpinThenYield(int spinPasses) {
            this.spinPasses = spinPasses;
        }

        @Override
        public void reset(long now) {
            idlePasses = 0;
        }

        @Override
        public Step idle(boolean armed, long now, long deadlineNanos) {
            if (!armed) {
                LockSupport.park(this);
                idlePasses = 0;
                return Step.PARK;
            }
            if (idlePasses++ < spinPasses) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
            return Step.SPUN;
        }
    }

    /**
     * Baseline, not a candidate: the ab section's never-park scanner, which spins even when
     * nothing is armed ({@link BackoffIdleStrategy} always parks then).
     */
    static final class NeverPark implements ScannerIdle {
        @Override
        public void reset(long now) {}

        @Override
        public Step idle(boolean armed, long now, long deadlineNanos) {
            Thread.onSpinWait();
            return Step.SPUN;
        }
    }

    /**
     * A named idle policy (for {@code --strategies} and {@code --ab-park}); {@link #create} makes a
     * fresh instance per scanner (policies hold per-scanner state). Specs:
     * <ul>
     *   <li>{@code backoff:SPIN:MIN:MAX[:8]}: core's {@link BackoffIdleStrategy}(SPIN, MIN, MAX):
     *       spin for SPIN after the last retirement, then park for waited/8 clamped to [MIN, MAX].
     *       Core's default is {@code backoff:250us:20us:1ms:8} ({@code backoff:50us:20us:1ms:8}
     *       before core's commit 7ae5671). The divisor is fixed at 8 in core; the old spec's fifth
     *       field is accepted as 8 only;
     *   <li>{@code park:SPIN:PARK}: fixed timed parks after the spin, i.e.
     *       {@link BackoffIdleStrategy}(SPIN, PARK, PARK);
     *   <li>{@code spin}: never sleeps while anything is armed, i.e. {@link BackoffIdleStrategy}
     *       with an unbounded spin window;
     *   <li>{@code spin-yield:N} and {@code yield}: the {@link SpinThenYield} baseline.
     * </ul>
     * Durations take the suffixes ns, us, ms.
     */
    record Policy(String label, Supplier<ScannerIdle> factory) {
        static final Policy NEVER_PARK = new Policy("never-park", NeverPark::new);

        ScannerIdle create() {
            return factory.get();
        }

        static Policy parse(String spec) {
            String[] p = spec.trim().split(":");
            try {
                return switch (p[0]) {
                    case "spin" -> {
                        arity(spec, p, 1);
                        yield new Policy("spin", () -> new Backoff(Long.MAX_VALUE, 1L, 1L));
                    }
                    case "yield" -> {
                        arity(spec, p, 1);
                        yield new Policy("yield", () -> new SpinThenYield(0));
                    }
                    case "spin-yield" -> {
                        arity(spec, p, 2);
                        int passes = Integer.parseInt(p[1]);
                        yield new Policy("spin-yield:" + passes, () -> new SpinThenYield(passes));
                    }
                    case "park" -> {
                        arity(spec, p, 3);
                        long spin = nanos(p[1]);
                        long park = nanos(p[2]);
                        new Backoff(spin, park, park); // validate now
                        yield new Policy("park:" + fmt(spin) + ":" + fmt(park), () -> new Backoff(spin, park, park));
                    }
                    case "backoff" -> {
                        if (p.length == 5 && Integer.parseInt(p[4]) != 8) {
                            throw new IllegalArgumentException("bad idle strategy spec '" + spec
                                    + "': BackoffIdleStrategy parks waited/8, its divisor is not a parameter");
                        }
                        if (p.length != 4 && p.length != 5) {
                            arity(spec, p, 4);
                        }
                        long spin = nanos(p[1]);
                        long min = nanos(p[2]);
                        long max = nanos(p[3]);
                        new Backoff(spin, min, max); // validate now
                        yield new Policy("backoff:" + fmt(spin) + ":" + fmt(min) + ":" + fmt(max) + ":8",
                                () -> new Backoff(spin, min, max));
                    }
                    default -> throw new IllegalArgumentException("unknown idle strategy '" + p[0] + "' in '"
                            + spec + "'\n" + USAGE);
                };
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad idle strategy spec '" + spec + "'\n" + USAGE, e);
            }
        }

        private static void arity(String spec, String[] p, int n) {
            if (p.length != n) {
                throw new IllegalArgumentException("bad idle strategy spec '" + spec + "': expected " + (n - 1)
                        + " parameter(s)\n" + USAGE);
            }
        }
    }

    // ---- small utilities ------------------------------------------------------------------------

    /** A growable long array (no boxing in the measured threads). */
    static final class LongList {
        private long[] a = new long[1024];
        private int n;

        void add(long v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, n * 2);
            }
            a[n++] = v;
        }

        void addAll(LongList o) {
            for (int i = 0; i < o.n; i++) {
                add(o.a[i]);
            }
        }

        long[] toArray() {
            return Arrays.copyOf(a, n);
        }
    }

    static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** The samples (nanoseconds) in an HdrHistogram (3 significant digits, auto-resizing). */
    static org.HdrHistogram.Histogram histogram(LongStream samples) {
        org.HdrHistogram.Histogram h = new org.HdrHistogram.Histogram(3);
        samples.forEach(v -> h.recordValue(Math.max(0L, v)));
        return h;
    }

    /** The {@code q} quantile (1.0: the maximum) of {@code h}; -1 if empty. */
    static long pct(org.HdrHistogram.Histogram h, double q) {
        if (h.getTotalCount() == 0) {
            return -1;
        }
        return q >= 1.0 ? h.getMaxValue() : h.getValueAtPercentile(100 * q);
    }

    static long nanos(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        if (t.endsWith("ns")) {
            return Long.parseLong(t.substring(0, t.length() - 2));
        }
        if (t.endsWith("us")) {
            return Long.parseLong(t.substring(0, t.length() - 2)) * 1_000L;
        }
        if (t.endsWith("ms")) {
            return Long.parseLong(t.substring(0, t.length() - 2)) * 1_000_000L;
        }
        return Long.parseLong(t);
    }

    static String fmt(long nanos) {
        if (nanos % 1_000_000L == 0 && nanos != 0) {
            return nanos / 1_000_000L + "ms";
        }
        if (nanos % 1_000L == 0) {
            return nanos / 1_000L + "us";
        }
        return nanos + "ns";
    }

    static String us(long nanos) {
        if (nanos < 0) {
            return "-";
        }
        return nanos < 10_000 ? String.format(Locale.ROOT, "%.1f", nanos / 1e3)
                : String.format(Locale.ROOT, "%,d", nanos / 1_000);
    }
}
