package io.cudaloom.reactor;

import io.cudaloom.GpuFaultException;
import io.cudaloom.ReactorClosedException;
import io.cudaloom.ReactorConfig;
import io.cudaloom.ReactorStats;
import io.cudaloom.protocol.BackoffIdleStrategy;
import io.cudaloom.protocol.RetiredBatch;
import io.cudaloom.protocol.SlotTable;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;
import org.jspecify.annotations.Nullable;

/**
 * The single consumer of a reactor's {@link SlotTable}, run as an agent (in the manner of Agrona's
 * {@code Agent}): {@link #doWork} is one cycle (scan and deliver; the fault probe and the quarantine
 * check, each on its own deadline), {@link BackoffIdleStrategy} decides what an idle cycle costs,
 * and {@link #task} runs a loop that cannot die or spin:
 * <ul>
 *   <li>an interrupt is cleared and ignored (nothing interrupts the scanner on purpose, and a set
 *       interrupt status makes every park return at once: a busy loop);
 *   <li>a {@link RuntimeException} from a cycle (e.g. a backend hook) is counted
 *       ({@link ReactorStats#scannerErrors()}), reported to the thread's uncaught-exception
 *       handler, and the loop goes on after a short pause; the probe fails the waiters of a
 *       stream whose query threw, with a {@link GpuFaultException} naming the exception;
 *   <li>an {@link Error} is counted and reported, then the reactor is closed with it as the cause:
 *       every waiter is woken with a {@link ReactorClosedException} that names it, later awaits
 *       fail the same way, and the scanner stops.
 * </ul>
 *
 * <p>What a fault means is not decided here: the device's fault owner ({@link DeviceFaults}) says
 * which probed streams' registrations fail and with what, and when a quarantined slot may be
 * reused; the scanner carries it out (fails the slots, keeps the quarantine list, recycles).
 *
 * <p>All state here is consumer-owned: read and written by the scanner thread only, or, after it
 * has stopped (joined, or on its own thread), by whoever finishes the shutdown. Counters are single
 * writer: written with opaque stores, read by {@link ReactorCounters#snapshot} with opaque loads.
 */
public final class Scanner implements ReactorCounters.ScannerCounts {
    /**
     * The lifecycle the loop runs under ({@link ReactorLifecycle} implements it): the loop runs
     * while it is open, closes it after an {@link Error}, and finishes a close that ran on the
     * scanner thread itself once it has left the loop.
     */
    interface Owner {
        boolean isClosed();

        /** Closes with {@code error} as the cause; true if this call closed it (the scanner then finishes the close). */
        boolean closeAfterScannerError(Error error);

        /** The shutdown as the consumer (the scanner has left its loop). */
        void finishClose();
    }

    /** The longest park while only quarantined slots wait for their stream to settle. */
    private static final long MAX_QUARANTINE_CHECK_NANOS = 100_000_000L;
    /** Pause after a failed cycle, so a hook that keeps throwing costs little CPU. */
    private static final long ERROR_PAUSE_NANOS = 1_000_000L;
    private static final VarHandle COUNT = MethodHandles.arrayElementVarHandle(long[].class);

    /** Timed parks park here; the untimed park is left to {@link Task}, which holds no strong reference. */
    private static final BackoffIdleStrategy.Parker DEFERRED_UNTIMED_PARK = new BackoffIdleStrategy.Parker() {
        @Override
        public void park(Object blocker) {
            // made by Task.run once runUntilIdle has returned
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            LockSupport.parkNanos(blocker, nanos);
        }
    };

    /** The blocker of the scanner's timed parks (the reactor: what a thread dump names). */
    private final Object parkBlocker;
    private final Owner lifecycle;
    private final Registrar registrar;
    private final SlotTable<Completion> table;
    private final ReactorConfig config;
    /** The device's fault owner: it decides which probed streams fail and when quarantined slots come back. */
    private final DeviceFaults faults;
    /** {@link #failed}, made once: what the fault owner's decisions report a throwing backend hook to. */
    private final java.util.function.Consumer<RuntimeException> hookFailed = this::failed;
    private final BackoffIdleStrategy idle;
    /** Waiters that asked to be woken at a time ({@link PreWake}): woken by {@link #doWork}, never slept past. */
    private final PreWake preWake;
    /**
     * The {@link Counter.Source#SCANNER} counters, by {@link Counter#ordinal()} (the other
     * counters' elements stay 0): single writer, opaque stores and loads (class comment).
     */
    private final long[] counts = new long[Counter.COUNT];

    private final RetiredBatch<Completion> batch;
    private final RetiredBatch<Completion> failBatch;
    /** Slots taken out of service: faulted (until their stream settles) or held by close. */
    private final List<Integer> quarantine = new ArrayList<>();
    /** Free slots taken out of circulation by the shutdown, so no registrant can claim them. */
    private int heldFree;
    private final Set<ReactorStream> probeStreams = Collections.newSetFromMap(new IdentityHashMap<>());
    private final IntConsumer collectProbeStream;
    private long nextProbeAt;
    private long nextQuarantineCheckAt;
    private long quarantineCheckNanos;
    /** Set by close() called on the scanner thread itself; read by that thread when it leaves run. */
    private boolean finishCloseOnExit;
    /**
     * The scanner thread's CPU time as it left {@link #run} (-1 before, or where the JVM cannot
     * tell): read by {@link #cpuNanos} once the thread has terminated, which
     * orders this write before the read.
     */
    private volatile long cpuNanosAtExit = -1L;

    public Scanner(Owner lifecycle, Registrar registrar, SlotTable<Completion> table, ReactorConfig config,
            DeviceFaults faults, PreWake preWake, Object parkBlocker) {
        this(lifecycle, registrar, table, config, faults, preWake, parkBlocker, DEFERRED_UNTIMED_PARK);
    }

    /**
     * With {@code parker} as the seam of the idle strategy's parks: the reactor's is
     * {@link #DEFERRED_UNTIMED_PARK} (timed parks park, the untimed one is left to {@link Task});
     * the stress module's jcstress tests pass a model of LockSupport's permit and drive
     * {@link #resume} and {@link #step} themselves, as {@link #runUntilIdle} does.
     */
    Scanner(Owner lifecycle, Registrar registrar, SlotTable<Completion> table, ReactorConfig config,
            DeviceFaults faults, PreWake preWake, Object parkBlocker, BackoffIdleStrategy.Parker parker) {
        this.parkBlocker = parkBlocker;
        this.preWake = preWake;
        this.lifecycle = lifecycle;
        this.registrar = registrar;
        this.table = table;
        this.config = config;
        this.faults = faults;
        this.idle = new BackoffIdleStrategy(config.scannerSpinNanos(), config.scannerLingerNanos(),
                config.scannerMinParkNanos(),
                config.scannerMaxParkNanos(), preWake.parker(parker), parkBlocker); // never parks past a pre-wake
        this.batch = new RetiredBatch<>(table.capacity());
        this.failBatch = new RetiredBatch<>(table.capacity());
        this.collectProbeStream = slot -> probeStreams.add(registrar.streamOf(slot));
        this.quarantineCheckNanos = firstQuarantineCheckNanos();
        this.nextProbeAt = System.nanoTime() + config.faultProbeIntervalNanos(); // the thread starts next
    }

    /** The scanner's counter {@code c} now (an opaque load; any thread). */
    @Override
    public long count(Counter c) {
        return (long) COUNT.getOpaque(counts, c.ordinal());
    }

    /** Counts one of the scanner's counter {@code c} (the scanner thread only). */
    private void increment(Counter c) {
        add(c, 1);
    }

    private void add(Counter c, long n) {
        int i = c.ordinal();
        COUNT.setOpaque(counts, i, counts[i] + n);
    }

    private void setQuarantined() {
        COUNT.setOpaque(counts, Counter.QUARANTINED.ordinal(), (long) quarantine.size());
    }

    // ---- the loop -----------------------------------------------------------------------------

    /**
     * The scanner thread's task. It holds this scanner only weakly while parked untimed (nothing
     * armed, nothing quarantined): then no thread keeps the device reachable, so a device its user
     * dropped without closing can be collected and reported ({@link UnclosedDeviceReport}), whose
     * cleaning unparks this thread to let it end. The park's blocker is the task itself, which
     * holds nothing else. An untimed park still follows the park gate of {@link #idleStep}: the
     * permit of a registrant's unpark that raced ahead of the check outlives the return from
     * {@link #runUntilIdle} to this frame.
     */
    public Runnable task() {
        return new Task(new WeakReference<>(this));
    }

    /** The scanner thread's timer slack where it can be set (Linux's default is 50 us: {@link TimerSlack}). */
    static final long TIMER_SLACK_NANOS = 1_000L;

    private static final class Task implements Runnable {
        private final WeakReference<Scanner> scanner;

        Task(WeakReference<Scanner> scanner) {
            this.scanner = scanner;
        }

        @Override
        public void run() {
            TimerSlack.setForCurrentThread(TIMER_SLACK_NANOS); // precise predicted parks (TimerSlack)
            Scanner s = scanner.get();
            while (s != null && s.runUntilIdle()) {
                s = null; // parked with no strong reference to the reactor (see task())
                LockSupport.park(this);
                s = scanner.get();
            }
        }
    }

    /** The CPU time of {@code self} (this agent's thread) so far, or at its exit once it has ended; -1 if unknown. */
    @Override
    public long cpuNanos(Thread self) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        if (!threads.isThreadCpuTimeSupported()) {
            return -1L;
        }
        long nanos = threads.getThreadCpuTime(self.threadId());
        // -1 for a terminated thread: then the total it recorded on its way out (isAlive() false
        // orders that write before this read).
        return nanos >= 0 || self.isAlive() ? nanos : cpuNanosAtExit;
    }

    /**
     * Runs cycles until the reactor closes (false: the loop has ended) or the idle strategy asks
     * for an untimed park (true: the caller parks, then calls again).
     */
    private boolean runUntilIdle() {
        resume();
        while (!lifecycle.isClosed()) {
            Thread.interrupted(); // cleared and ignored: see the class comment
            try {
                if (step()) {
                    return true;
                }
            } catch (RuntimeException e) {
                failed(e);
                LockSupport.parkNanos(parkBlocker, ERROR_PAUSE_NANOS);
            } catch (Error e) {
                failed(e);
                if (lifecycle.closeAfterScannerError(e)) {
                    finishCloseOnExit = true;
                }
                break;
            }
        }
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        cpuNanosAtExit = threads.isCurrentThreadCpuTimeSupported() ? threads.getCurrentThreadCpuTime() : -1L;
        if (finishCloseOnExit) {
            lifecycle.finishClose(); // close() ran on this thread (a completion), or an Error stopped us
        }
        return false;
    }

    /** Started, or woken for new work after an untimed park: spin for it first. */
    void resume() {
        idle.reset(System.nanoTime());
    }

    /**
     * One pass of the loop: a scan (delivering what it retired, and the fault probe and the
     * quarantine check when they are due), then, if it retired nothing, one idle step (spin,
     * timed park through the seam, or the decision to park untimed). True when the idle strategy
     * asked for the untimed park, which the caller makes (the park gate is in {@link #idleStep}).
     */
    boolean step() {
        return doWork() == 0 && idleStep();
    }

    /** One cycle; returns how many registrations it retired. */
    int doWork() {
        table.scanOnce(batch);
        increment(Counter.SCAN_PASSES);
        int retired = batch.size();
        if (retired > 0) {
            deliver(batch, null);
        }
        long now = System.nanoTime();
        if (retired > 0) {
            idle.progress(now);
        }
        int woken = preWake.fireDue(now); // after the deliveries: a waiter whose work landed is woken by those
        if (woken > 0) {
            add(Counter.PRE_WAKES, woken);
        }
        if (now - nextProbeAt >= 0) {
            nextProbeAt = now + config.faultProbeIntervalNanos();
            if (!table.isIdle() || registrar.fallbacksOutstanding()) {
                probeForFaults();
            }
        }
        if (!quarantine.isEmpty() && now - nextQuarantineCheckAt >= 0) {
            recycleSettledQuarantine();
            quarantineCheckNanos = Math.min(quarantineCheckNanos << 1, MAX_QUARANTINE_CHECK_NANOS);
            nextQuarantineCheckAt = now + quarantineCheckNanos;
        }
        return retired;
    }

    /** One idle step; true when the strategy asked for an untimed park, which the caller makes. */
    private boolean idleStep() {
        // Park gate: the armed count, not this pass's bits. A registration that raced ahead of
        // this check made its volatile read-modify-write of the count, then its unpark (SlotTable
        // orderings 3 and 9): that unpark is our permit, so an untimed park returns at once.
        boolean armed = !table.isIdle() || registrar.fallbacksOutstanding();
        long deadline = quarantine.isEmpty() ? BackoffIdleStrategy.NO_DEADLINE : nextQuarantineCheckAt;
        // Watched: every armed slot has a waiter looking at its flag (a hint, see PreWake).
        boolean watched = armed && !registrar.fallbacksOutstanding() && preWake.everyArmedSlotWatched(table);
        switch (idle.idle(armed, watched, System.nanoTime(), deadline)) {
            case PARK -> {
                increment(Counter.SCANNER_PARKS);
                return true; // the strategy's park is deferred to the task (see task())
            }
            case TIMED_PARK -> increment(Counter.SCANNER_TIMED_PARKS);
            case SPUN -> { }
        }
        return false;
    }

    private void failed(Throwable t) {
        increment(Counter.SCANNER_ERRORS);
        try {
            Thread self = Thread.currentThread();
            self.getUncaughtExceptionHandler().uncaughtException(self, t);
        } catch (Throwable ignored) {
            // a failing handler must not take the scanner down with it
        }
    }

    /** close() was called on this thread (by a completion run here): finish it after the loop. */
    void finishCloseOnExit() {
        finishCloseOnExit = true;
    }

    // ---- delivery -----------------------------------------------------------------------------

    /** Completes every payload of the batch (withdrawn slots have none); returns how many it completed. */
    private int deliver(RetiredBatch<Completion> retired, @Nullable RuntimeException failure) {
        int delivered = 0;
        for (int i = 0; i < retired.size(); i++) {
            Completion c = retired.payload(i);
            if (c != null) {
                Completion.deliverGuarded(c, retired.ticket(i), failure);
                delivered++;
            }
        }
        retired.clear();
        return delivered;
    }

    // ---- fault probe and quarantine -----------------------------------------------------------

    /**
     * Query the streams of pending slots and fallbacks; fail the registrations of those the fault
     * owner says must fail ({@link DeviceFaults#probe}).
     */
    private void probeForFaults() {
        increment(Counter.FAULT_PROBES);
        probeStreams.clear();
        table.forEachArmed(true, collectProbeStream);
        registrar.forEachFallbackStream(probeStreams::add);
        for (ReactorStream stream : probeStreams) {
            DeviceFaults.Verdict verdict = faults.probe(stream, hookFailed);
            if (verdict != null) {
                failStream(stream, verdict.error(), verdict.failure());
            }
        }
        probeStreams.clear();
    }

    /**
     * Fails every registration on {@code stream} and quarantines its slots (DeviceFaults,
     * "Quarantine"); {@code error} describes the fault for JFR.
     */
    private void failStream(ReactorStream stream, String error, GpuFaultException failure) {
        table.forEachArmed(true, slot -> {
            if (registrar.slotStream(slot) == stream && table.failArmed(slot, failBatch)) {
                quarantine.add(slot); // the dead stream's write must not land in a reused slot
            }
        });
        if (!quarantine.isEmpty() && nextQuarantineCheckAt == 0L) {
            nextQuarantineCheckAt = System.nanoTime() + quarantineCheckNanos;
        }
        setQuarantined();
        int failed = deliver(failBatch, failure);
        failed += registrar.failFallbacks(stream, failure);
        ReactorEvents.deviceFault(stream, error, failed);
    }

    private void recycleSettledQuarantine() {
        quarantine.removeIf(slot -> {
            if (faults.mayRecycle(registrar.streamOf(slot), hookFailed)) {
                table.recycle(slot);
                return true;
            }
            return false;
        });
        setQuarantined();
        if (quarantine.isEmpty()) {
            quarantineCheckNanos = firstQuarantineCheckNanos();
            nextQuarantineCheckAt = 0L;
        }
    }

    private long firstQuarantineCheckNanos() {
        return Math.max(100_000L, config.faultProbeIntervalNanos());
    }

    // ---- shutdown (as the consumer, after the scanner loop has stopped) -----------------------

    /**
     * One step of shutdown: wake whatever is still registered, take every free slot out of
     * circulation, and say whether the flag memory may be freed: all slots are held here and every
     * stream that was armed has settled. A registrant between claim and publish holds its slot out
     * of our reach; it will publish (then see the reactor closed) or release it, and a later step
     * collects it.
     */
    boolean reclaimStep(ReactorClosedException failure) {
        table.forEachArmed(false, slot -> {
            if (table.failArmed(slot, failBatch)) {
                quarantine.add(slot);
            }
        });
        deliver(failBatch, failure);
        registrar.failFallbacks(null, failure);
        int held = quarantine.size();
        while (table.claim() != SlotTable.NO_SLOT) {
            held++;
        }
        // Claimed free slots are not kept in `quarantine`: they were never armed since their last
        // retirement, so no write is pending into them.
        heldFree += held - quarantine.size();
        setQuarantined();
        if (heldFree + quarantine.size() < table.capacity()) {
            return false;
        }
        for (int slot : quarantine) {
            if (!faults.mayRecycle(registrar.streamOf(slot), hookFailed)) {
                return false;
            }
        }
        return true;
    }
}
