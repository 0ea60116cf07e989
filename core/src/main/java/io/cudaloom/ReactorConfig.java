package io.cudaloom;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of a {@link CompletionReactor}. Immutable; build with {@link #builder()}.
 *
 * <p>Defaults: 4,096 slots; the waiter spins on its own flag for up to 50 us before parking
 * (only while at most half as many threads as processors are inside {@code await()}, and only if
 * its stream's recent awaits were that short), then parks untimed until its completer unparks it;
 * the scanner predicts the next retirement from the recent ones and parks until shortly before it,
 * in parks of at most 1 ms (without a prediction it spins 250 us after its last wake-up or retirement, then parks for 2% of
 * the time it has waited so far, between 20 us and 1 ms), and parks untimed as soon as nothing is
 * armed (no linger); streams of slots that stay armed are probed for device faults at most once per
 * millisecond; the reactor's {@link ReactorMXBean} is registered while the device is open.
 */
public final class ReactorConfig {
    /**
     * The default {@link Builder#admissionLimit}: a quarter of the CUDA driver's per-stream queue
     * (about 1,000 entries, every launch, copy and flag write taking one), leaving the rest for
     * flag writes and work enqueued on raw handles; measured on the H200 to keep 8 streams of 10 us
     * kernels at the driver's ceiling (docs/BENCHMARKS.md).
     */
    public static final int DEFAULT_ADMISSION_LIMIT = 256;
    /** The largest admission limit accepted: below the CUDA driver's per-stream queue. */
    public static final int MAX_ADMISSION_LIMIT = 896;
    /** The largest capacity accepted: 16 Mi slots (64 MiB of pinned flags). */
    public static final int MAX_CAPACITY = 1 << 24;
    /** The system property that sets the default of {@link Builder#drainers} (unset: 0, no cap). */
    public static final String DRAINERS_PROPERTY = "cudaloom.drainers";
    /** The largest cap on drainers accepted ({@link Builder#drainers}). */
    public static final int MAX_DRAINERS = 1024;
    /** The default of {@link Builder#slowAwaitFactor}. */
    public static final double DEFAULT_SLOW_AWAIT_FACTOR = 4.0;
    private static final Duration MAX_DURATION = Duration.ofSeconds(10);

    private final int capacity;
    private final long waiterSpinNanos;
    private final int waiterSpinMaxWaiters;
    private final long scannerSpinNanos;
    private final long scannerLingerNanos;
    private final long scannerMinParkNanos;
    private final long scannerMaxParkNanos;
    private final long faultProbeIntervalNanos;
    private final CompletionStrategy strategy;
    private final boolean coalesce;
    private final int admissionLimit;
    private final int flagWritesInFlight;
    private final boolean relayWakeups;
    private final boolean waiterPreWake;
    private final boolean scannerDefersToSpinningWaiters;
    private final boolean jmx;
    private final double slowAwaitFactor;
    private final Submission submission;
    private final int drainers;

    private ReactorConfig(Builder b) {
        this.capacity = b.capacity;
        this.waiterSpinNanos = b.waiterSpin.toNanos();
        this.waiterSpinMaxWaiters = b.waiterSpinMaxWaiters;
        this.scannerSpinNanos = b.scannerSpin.toNanos();
        this.scannerLingerNanos = b.scannerLinger.toNanos();
        this.scannerMinParkNanos = b.scannerMinPark.toNanos();
        this.scannerMaxParkNanos = b.scannerMaxPark.toNanos();
        this.faultProbeIntervalNanos = b.faultProbeInterval.toNanos();
        this.strategy = b.strategy;
        this.coalesce = b.coalesce;
        this.admissionLimit = b.admissionLimit;
        this.flagWritesInFlight = b.flagWritesInFlight;
        this.relayWakeups = b.relayWakeups;
        this.waiterPreWake = b.waiterPreWake;
        this.scannerDefersToSpinningWaiters = b.scannerDefersToSpinningWaiters;
        this.jmx = b.jmx;
        this.slowAwaitFactor = b.slowAwaitFactor;
        this.submission = b.submission;
        this.drainers = b.drainers;
    }

    /** {@value #DRAINERS_PROPERTY} if set, else 0; a value that is not a cap {@link Builder#drainers} takes is refused. */
    static int defaultDrainers() {
        String v = System.getProperty(DRAINERS_PROPERTY);
        if (v == null || v.isBlank()) {
            return 0;
        }
        try {
            int d = Integer.parseInt(v.strip());
            if (d >= 0 && d <= MAX_DRAINERS) {
                return d;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new IllegalArgumentException(DRAINERS_PROPERTY + " must be a number between 0 (no cap) and " + MAX_DRAINERS
                + ", was " + v);
    }

    public static ReactorConfig defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return new Builder()
                .capacity(capacity)
                .waiterSpin(Duration.ofNanos(waiterSpinNanos), waiterSpinMaxWaiters)
                .scannerSpin(Duration.ofNanos(scannerSpinNanos))
                .scannerLinger(Duration.ofNanos(scannerLingerNanos))
                .scannerPark(Duration.ofNanos(scannerMinParkNanos), Duration.ofNanos(scannerMaxParkNanos))
                .faultProbeInterval(Duration.ofNanos(faultProbeIntervalNanos))
                .strategy(strategy)
                .coalesce(coalesce)
                .admissionLimit(admissionLimit)
                .flagWritesInFlight(flagWritesInFlight)
                .relayWakeups(relayWakeups)
                .waiterPreWake(waiterPreWake)
                .scannerDefersToSpinningWaiters(scannerDefersToSpinningWaiters)
                .jmx(jmx)
                .slowAwaitFactor(slowAwaitFactor)
                .submission(submission)
                .drainers(drainers);
    }

    public int capacity() { return capacity; }
    public long waiterSpinNanos() { return waiterSpinNanos; }
    public int waiterSpinMaxWaiters() { return waiterSpinMaxWaiters; }
    public long scannerSpinNanos() { return scannerSpinNanos; }
    public long scannerLingerNanos() { return scannerLingerNanos; }
    public long scannerMinParkNanos() { return scannerMinParkNanos; }
    public long scannerMaxParkNanos() { return scannerMaxParkNanos; }
    public long faultProbeIntervalNanos() { return faultProbeIntervalNanos; }
    public CompletionStrategy strategy() { return strategy; }
    public boolean coalesce() { return coalesce; }
    /** How work reaches the driver ({@link Builder#submission}). */
    public Submission submission() { return submission; }
    /** Work entries a stream may have in flight before a submitter parks ({@link Builder#admissionLimit}). */
    public int admissionLimit() { return admissionLimit; }
    /** The most threads draining the device's streams into the driver at once; 0: no cap ({@link Builder#drainers}). */
    public int drainers() { return drainers; }
    /** Shared flag writes a stream may have pending before waiters gather for the next ({@link Builder#flagWritesInFlight}). */
    public int flagWritesInFlight() { return flagWritesInFlight; }
    /** Whether woken members of a shared flag write wake the others ({@link Builder#relayWakeups}). */
    public boolean relayWakeups() { return relayWakeups; }
    /** Whether the scanner wakes a waiter that sleeps through a predicted wait ({@link Builder#waiterPreWake}). */
    public boolean waiterPreWake() { return waiterPreWake; }
    /** Whether the scanner parks while every armed slot's waiter looks at it ({@link Builder#scannerDefersToSpinningWaiters}). */
    public boolean scannerDefersToSpinningWaiters() { return scannerDefersToSpinningWaiters; }
    /** Whether the reactor registers its {@link ReactorMXBean} while open (see {@link Builder#jmx}). */
    public boolean jmx() { return jmx; }
    /** The relative {@code SlowAwait} threshold's factor over the recent p99 ({@link Builder#slowAwaitFactor}); 0: off. */
    public double slowAwaitFactor() { return slowAwaitFactor; }

    @Override
    public String toString() {
        return "ReactorConfig[capacity=" + capacity + ", strategy=" + strategy
                + ", waiterSpin=" + waiterSpinNanos + "ns (while waiters <= " + waiterSpinMaxWaiters + ")"
                + ", scannerSpin=" + scannerSpinNanos + "ns, scannerLinger=" + scannerLingerNanos + "ns, scannerPark=" + scannerMinParkNanos
                + ".." + scannerMaxParkNanos + "ns, faultProbeInterval=" + faultProbeIntervalNanos + "ns"
                + ", admissionLimit=" + admissionLimit + (submission == Submission.DIRECT ? ", direct submission" : "")
                + (drainers > 0 ? ", drainers=" + drainers : "") + (coalesce ? ", coalesce (flagWritesInFlight="
                + flagWritesInFlight + (relayWakeups ? ", relayed wake-ups" : "") + ")" : ", no coalesce") + (waiterPreWake ? "" : ", no pre-wake") + (scannerDefersToSpinningWaiters ? "" : ", no deferral to spinning waiters") + (jmx ? "" : ", no jmx") + "]";
    }

    /** Builder; each setter rejects bad values at once with a message naming the setting. */
    public static final class Builder {
        private int capacity = 4096;
        private Duration waiterSpin = Duration.ofNanos(50_000);
        private int waiterSpinMaxWaiters = Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
        private Duration scannerSpin = Duration.ofNanos(250_000);
        private Duration scannerLinger = Duration.ZERO;
        private Duration scannerMinPark = Duration.ofNanos(20_000);
        private Duration scannerMaxPark = Duration.ofMillis(1);
        private Duration faultProbeInterval = Duration.ofMillis(1);
        private CompletionStrategy strategy = CompletionStrategy.REACTOR;
        private boolean coalesce = true;
        private int admissionLimit = DEFAULT_ADMISSION_LIMIT;
        private int flagWritesInFlight = 1;
        private boolean relayWakeups = true;
        private boolean waiterPreWake = true;
        private boolean scannerDefersToSpinningWaiters = true;
        private boolean jmx = true;
        private double slowAwaitFactor = DEFAULT_SLOW_AWAIT_FACTOR;
        private Submission submission = Submission.defaultMode();
        private int drainers = defaultDrainers();

        private Builder() {}

        /**
         * With submission by combining, the most threads that drain the device's streams into the
         * driver at once; 0 (the default): no cap, each stream with work queued has its own drainer.
         * The driver's calls get dearer the more threads make them at once (its per-context lock); with
         * a cap, a thread that finds every drainer's permit taken leaves its stream to the holders, who
         * drain every stream that wants it ({@code io.cudaloom.protocol.DrainerPermits}), and goes on:
         * no caller waits for a permit. Ignored with {@link Submission#DIRECT}. Default: the system
         * property {@value #DRAINERS_PROPERTY}, else 0. It trades throughput for CPU: on an H100
         * (s19-run41, docs/BENCHMARKS.md, seventeenth pass) a cap of 2 cut the demo's CPU from 30-35 to
         * 21-23 us per completion and its rate by 31%; the HTTP-bound servlet benchmark kept its rate at
         * 7.5 us less CPU per request, with a longer tail (docs/TUNING.md, "How many streams").
         */
        public Builder drainers(int drainers) {
            if (drainers < 0 || drainers > MAX_DRAINERS) {
                throw new IllegalArgumentException("drainers must be between 0 (no cap) and " + MAX_DRAINERS
                        + ", was " + drainers);
            }
            this.drainers = drainers;
            return this;
        }

        /**
         * How a stream's work, flag writes and host callbacks reach the driver: {@link Submission#DIRECT}
         * (each caller calls the driver, parking for admission while the stream is full) or
         * {@link Submission#COMBINING} (callers append to the stream's submission queue and return;
         * one thread per stream drains it). Default: the system property
         * {@value Submission#PROPERTY}, else {@code COMBINING} (why: {@link Submission}).
         */
        public Builder submission(Submission submission) {
            this.submission = Objects.requireNonNull(submission, "submission");
            return this;
        }

        /**
         * The relative threshold of the JFR event {@code io.cudaloom.SlowAwait}: an await is recorded
         * as slow only when it took longer than the recording's threshold (20 ms unless the recording
         * sets another) <em>and</em> longer than {@code factor} x the p99 of the device's recent awaits
         * ({@link AwaitLatency#recentP99Nanos()}, the last 10 to 20 s). So a device whose awaits
         * normally wait 200 ms (queued behind other threads' work) records the outliers, not every
         * await. Default {@value ReactorConfig#DEFAULT_SLOW_AWAIT_FACTOR}; 0 turns it off (the
         * recording's threshold alone applies, as it also does until the device has seen 10 awaits).
         */
        public Builder slowAwaitFactor(double factor) {
            if (!(factor >= 0) || factor > 1_000_000) {
                throw new IllegalArgumentException("slowAwaitFactor must be in [0, 1e6], was " + factor);
            }
            this.slowAwaitFactor = factor;
            return this;
        }

        /**
         * Register the reactor's {@link ReactorMXBean} with the platform MBean server while the
         * device is open (on by default): {@code io.cudaloom:type=GpuDevice,name="<device name>"}.
         * Off, nothing is registered; the JFR events are emitted either way.
         */
        public Builder jmx(boolean register) {
            this.jmx = register;
            return this;
        }

        /**
         * Let blocking waiters on one stream share flag writes (on by default: group commit). A
         * waiter whose work an armed flag write already covers joins it; otherwise, while fewer
         * than {@link #flagWritesInFlight} shared writes are pending on the stream, it arms one at
         * once (so a lone waiter waits exactly as long as with its own write), and beyond that it
         * gathers with the stream's other newcomers behind one write, armed when a pending one
         * lands. Under load this makes far fewer flag writes than awaits, which keeps the stream's
         * driver queue for work. Requires that all work on the stream is counted: work enqueued on a
         * raw stream handle must be reported with {@link GpuStream#noteExternalSubmission()} (off,
         * every await arms its own write, and such work need not be counted for correctness, but
         * flag writes are then not bounded by admission).
         */
        public Builder coalesce(boolean coalesce) {
            this.coalesce = coalesce;
            return this;
        }

        /**
         * The most shared flag writes pending per stream before newcomers gather behind the next
         * one (default 1; see {@link #coalesce}). Higher: less waiting for a write to be armed,
         * more writes. Measured on the H200 (docs/BENCHMARKS.md, 10 us kernels, 10,000 virtual
         * threads on 8 streams): 1 gave 445,455 completions/s at 0.221 flag writes per completion,
         * 2 gave 362,245/s at 0.418, because with 2 the reservation freed by each delivery goes to
         * the next lone arrival, whose write then serves one waiter. A lone waiter still arms its
         * own write at once with 1.
         */
        public Builder flagWritesInFlight(int writes) {
            if (writes < 1 || writes > 64) {
                throw new IllegalArgumentException("flagWritesInFlight must be between 1 and 64, was " + writes);
            }
            this.flagWritesInFlight = writes;
            return this;
        }

        /**
         * Whether the waiters that share one flag write wake each other (default true): the thread
         * that sees the write land wakes at most two of them, and each woken one wakes two more of
         * the rest before its {@code await()} returns, so a group of {@code n} wakes in about
         * {@code log2(n)} rounds on many carriers instead of {@code n} wake-ups in a row on the
         * scanner. The cost: a woken waiter's own return is later by up to two wake-ups (about a
         * microsecond or two each). False: the scanner wakes every member itself.
         */
        public Builder relayWakeups(boolean relay) {
            this.relayWakeups = relay;
            return this;
        }

        /**
         * Whether the scanner wakes a waiter that sleeps through a predicted wait (default true).
         * A waiter whose stream's recent awaits were longer than its spin sleeps until shortly
         * before the predicted end, then spins on its flag; a virtual thread's own timed park
         * returns 65-78 us late on the H200 (the JDK's timer thread has Linux's default 50 us of
         * timer slack, then the carrier wakes), so it must wake that much earlier and spin
         * through the difference. With this on, the waiter asks the scanner instead, whose parks
         * have 1 us of slack, and its park is only a backstop: it wakes a carrier's wake-up after
         * the planned time and spins a few microseconds. False: the waiter's own timed park
         * (for comparisons; docs/BENCHMARKS.md).
         */
        public Builder waiterPreWake(boolean preWake) {
            this.waiterPreWake = preWake;
            return this;
        }

        /**
         * Whether the scanner parks instead of spinning while every armed slot has a waiter that
         * spins on its flag itself (default true): a lone waiter on a short kernel spins on its own
         * flag and completes on its own thread, so a scanner spinning beside it doubles the CPU.
         * With this on it parks in parks of {@link #scannerPark}'s minimum (20 us by default)
         * instead, cut short by a pre-wake that is due; work armed meanwhile by anyone else is
         * seen within such a park. A waiter counts only while it spins (not while it sleeps
         * through a prediction). On the H200 (docs/BENCHMARKS.md, seventh pass) the scanner's CPU
         * per 20 us wait fell from 19.0-20.2 us to 7.5-8.9 us, and 200 us waits stayed within
         * 1.009-1.015 x {@code cuStreamSynchronize}'s p50 in 4 of 4 rounds. Under load no waiter
         * spins ({@link #waiterSpin(Duration, int)}), so it changes nothing there.
         */
        public Builder scannerDefersToSpinningWaiters(boolean defer) {
            this.scannerDefersToSpinningWaiters = defer;
            return this;
        }

        /**
         * Admission: the most work entries (launches, copies, memsets, raw submissions counted with
         * {@link GpuStream#noteExternalSubmission()}) a stream may have in flight (default
         * {@value ReactorConfig#DEFAULT_ADMISSION_LIMIT}). A submission to a stream that has this
         * many not yet known complete parks its thread (FIFO, keeping the interrupt status) until
         * the reactor sees earlier work complete, instead of spinning inside the driver, whose own
         * queue (about 1,000 entries per stream) it stays below.
         */
        public Builder admissionLimit(int entries) {
            if (entries < 1 || entries > MAX_ADMISSION_LIMIT) {
                throw new IllegalArgumentException("admissionLimit must be between 1 and " + MAX_ADMISSION_LIMIT
                        + ", was " + entries);
            }
            this.admissionLimit = entries;
            return this;
        }

        /** Number of completion slots (flags); beyond it awaits fall back to host callbacks. */
        public Builder capacity(int capacity) {
            if (capacity < 1 || capacity > MAX_CAPACITY) {
                throw new IllegalArgumentException(
                        "capacity must be between 1 and " + MAX_CAPACITY + ", was " + capacity);
            }
            this.capacity = capacity;
            return this;
        }

        /**
         * How long a waiter spins on its own completion flag before parking (0 = never spin), and
         * the most threads inside {@code await()} on this reactor for which a waiter still spins
         * (default: half the processors). With more, every carrier is better used running other
         * virtual threads than spinning. A waiter also skips the spin when its stream's recent
         * awaits took longer than the spin would last.
         */
        public Builder waiterSpin(Duration spin, int whileWaitersAtMost) {
            this.waiterSpin = checked("waiterSpin", spin, true);
            if (whileWaitersAtMost < 0) {
                throw new IllegalArgumentException("waiterSpin whileWaitersAtMost must be >= 0, was " + whileWaitersAtMost);
            }
            this.waiterSpinMaxWaiters = whileWaitersAtMost;
            return this;
        }

        /**
         * How long the scanner keeps spinning after the last armed slot retired before it parks
         * untimed (default 0: it parks at once). An await that comes within that time finds the
         * scanner awake and does not unpark it. Measured on the H200 (docs/BENCHMARKS.md, third
         * pass, run s5-run2), one waiter in a loop gains nothing from a linger of 100 us: its own
         * spin sees its flag (the scanner is not on its path), and the spin cost the scanner 19 to
         * 32 us of CPU per 200 us wait; p50 was no worse at 0 for empty, 20 us and 200 us kernels.
         * Under load something is always armed, and the linger never runs.
         */
        public Builder scannerLinger(Duration linger) {
            this.scannerLinger = checked("scannerLinger", linger, true);
            return this;
        }

        public Builder waiterSpin(Duration spin) {
            return waiterSpin(spin, waiterSpinMaxWaiters);
        }

        /** How long the scanner spins after its last retirement before it starts timed parks. */
        public Builder scannerSpin(Duration spin) {
            this.scannerSpin = checked("scannerSpin", spin, true);
            return this;
        }

        /**
         * Bounds of the scanner's timed parks while slots are armed but nothing completes. The
         * maximum is also how late, at most (plus the timer's slack), the scanner sees a completion
         * that comes earlier than it predicted: no park while something is armed is longer.
         */
        public Builder scannerPark(Duration min, Duration max) {
            checked("scannerPark min", min, false);
            checked("scannerPark max", max, false);
            if (min.compareTo(max) > 0) {
                throw new IllegalArgumentException("scannerPark min " + min + " exceeds max " + max);
            }
            this.scannerMinPark = min;
            this.scannerMaxPark = max;
            return this;
        }

        /** How often, at most, the streams of long-armed slots are queried for device faults. */
        public Builder faultProbeInterval(Duration interval) {
            this.faultProbeInterval = checked("faultProbeInterval", interval, false);
            return this;
        }

        public Builder strategy(CompletionStrategy strategy) {
            this.strategy = Objects.requireNonNull(strategy, "strategy");
            return this;
        }

        public ReactorConfig build() {
            return new ReactorConfig(this);
        }

        private static Duration checked(String what, Duration d, boolean zeroAllowed) {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || (!zeroAllowed && d.isZero())) {
                throw new IllegalArgumentException(what + " must be " + (zeroAllowed ? ">= 0" : "> 0") + ", was " + d);
            }
            if (d.compareTo(MAX_DURATION) > 0) {
                throw new IllegalArgumentException(what + " must be at most " + MAX_DURATION + ", was " + d);
            }
            return d;
        }
    }
}
