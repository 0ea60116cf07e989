package io.cudaloom.reactor;

import io.cudaloom.GpuFaultException;
import io.cudaloom.ReactorClosedException;
import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.BackoffIdleStrategy;
import io.cudaloom.protocol.IdleStrategy;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.protocol.SlotTable.RetiredBatch;
import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.JfrEvents;
import io.cudaloom.reactor.metrics.SharedCounters;
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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import org.jspecify.annotations.Nullable;

/**
 * The single consumer of a reactor's {@link SlotTable}, run as an agent (in the manner of Agrona's
 * {@code Agent} and {@code AgentRunner}): {@link #doWork} is the work step (scan and deliver; the
 * fault probe and the quarantine check, each on its own deadline) and returns how much it retired;
 * an {@link IdleStrategy} ({@link BackoffIdleStrategy}) decides what an idle cycle costs and never
 * parks; and the {@link Runner} ({@link #task}) runs the loop and makes every park of the scanner,
 * timed and untimed, in one method ({@link Runner#turn}). The loop cannot die or spin:
 * <ul>
 *   <li>an interrupt is cleared and ignored (nothing interrupts the scanner on purpose, and a set
 *       interrupt status makes every park return at once: a busy loop);
 *   <li>a {@link RuntimeException} from a cycle (e.g. a backend hook) is counted
 *       ({@link io.cudaloom.ReactorStats#scannerErrors()}), reported to the thread's uncaught-exception
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
 * writer: written with opaque stores, read by {@link SharedCounters#snapshot} with opaque loads.
 */
public final class Scanner implements SharedCounters.ScannerCounts {
    /**
     * The lifecycle the loop runs under ({@link io.cudaloom.reactor.lifecycle.Shutdown} implements it): the loop runs
     * while it is open, closes it after an {@link Error}, and finishes a close that ran on the
     * scanner thread itself once it has left the loop.
     */
    public interface Owner {
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
    /**
     * The time box of the untimed park: with nothing armed the scanner still wakes this often, and
     * counts a wake-up that should have come and did not ({@link Counter#SCANNER_MISSED_WAKEUPS}).
     * A lost wake-up then costs at most this much latency, not a hang; an idle reactor costs one
     * wake-up a second.
     */
    static final long UNTIMED_PARK_BOX_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final VarHandle COUNT = MethodHandles.arrayElementVarHandle(long[].class);

    /** The blocker of the scanner's timed parks (the reactor: what a thread dump names). */
    private final Object parkBlocker;
    private final Owner lifecycle;
    private final Registrar registrar;
    private final SlotTable<Completion> table;
    private final ReactorConfig config;
    /** The device's fault owner: it decides which probed streams fail and when quarantined slots come back. */
    private final DeviceFaults faults;
    /** {@link #failed}, made once: what the fault owner's decisions report a throwing backend hook to. */
    private final Consumer<RuntimeException> hookFailed = this::failed;
    private final IdleStrategy idle;
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
    /** Set by close() called on the scanner thread itself; read by that thread when it leaves the loop. */
    private boolean finishCloseOnExit;
    /**
     * The scanner thread's CPU time as it left the loop ({@link #exit}; -1 before, or where the JVM cannot
     * tell): read by {@link #cpuNanos} once the thread has terminated, which
     * orders this write before the read.
     */
    private volatile long cpuNanosAtExit = -1L;

    public Scanner(Owner lifecycle, Registrar registrar, SlotTable<Completion> table, ReactorConfig config,
            DeviceFaults faults, PreWake preWake, Object parkBlocker) {
        this.parkBlocker = parkBlocker;
        this.preWake = preWake;
        this.lifecycle = lifecycle;
        this.registrar = registrar;
        this.table = table;
        this.config = config;
        this.faults = faults;
        this.idle = new BackoffIdleStrategy(config.scannerSpinNanos(), config.scannerLingerNanos(),
                config.scannerMinParkNanos(), config.scannerMaxParkNanos(), System.nanoTime());
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

    /** The scanner thread's timer slack where it can be set (Linux's default is 50 us: {@link TimerSlack}). */
    static final long TIMER_SLACK_NANOS = 1_000L;

    /**
     * The scanner thread's task: a {@link Runner} that parks with {@link LockSupport} and boxes the
     * untimed park in {@link #UNTIMED_PARK_BOX_NANOS}.
     */
    public Runnable task() {
        return runner(Parker.LOCK_SUPPORT, UNTIMED_PARK_BOX_NANOS);
    }

    /** A runner of this scanner with {@code parker} as its parks and {@code untimedParkBoxNanos} as the untimed park's box. */
    Runner runner(Parker parker, long untimedParkBoxNanos) {
        return new Runner(new WeakReference<>(this), parker, untimedParkBoxNanos);
    }

    /**
     * The park primitive of the {@link Runner}: {@link #LOCK_SUPPORT} in the reactor; in the
     * stress module's jcstress tests, a model of LockSupport's permit.
     */
    interface Parker {
        /** A timed park of at most {@code nanos} (positive); an unpark ends it sooner, and it may return spuriously. */
        void parkNanos(Object blocker, long nanos);

        /**
         * The untimed park, boxed: as {@link #parkNanos} of {@code boxNanos} (the reactor's is
         * exactly that); a separate method so that a model can tell it from a timed park.
         */
        default void parkBoxed(Object blocker, long boxNanos) {
            parkNanos(blocker, boxNanos);
        }

        Parker LOCK_SUPPORT = LockSupport::parkNanos;
    }

    /**
     * The loop, in the manner of Agrona's {@code AgentRunner.workLoop}
     * ({@code workCount = agent.doWork(); idleStrategy.idle(workCount)}), and the one place where
     * the scanner parks. One turn:
     * <pre>
     *   s = the scanner (weakly held); if dropped: end        (UnclosedDeviceReport cleans up)
     *   if s's reactor is closed: s.exit(); end
     *   clear the interrupt status                             (nothing interrupts us on purpose)
     *   action = s.step()                                      (doWork(); if it retired nothing, the
     *                                                           park gate and the idle strategy's decision)
     *     RuntimeException: count, report, pause 1 ms; Error: count, report, close, s.exit(); end
     *   CONTINUE: go round;  SPIN: onSpinWait;  YIELD: yield
     *   timed park of n ns:  n = the pre-wake plan's cut of n (WakeBoard ordering 1); park n if n > 0;
     *                        s.timedParkEnded()                (the board's awake, the strategy learns)
     *   PARK (untimed):      drop s; park, boxed in 1 s;       (a registrant's unpark is the permit:
     *                                                           the park gate in idleStep says why)
     *                        s = the scanner again; s.untimedParkEnded(ran out the box?)
     *                                                          (counts a missed wake-up if work is armed)
     * </pre>
     * It holds the scanner only weakly while parked untimed (nothing armed, nothing quarantined):
     * then no thread keeps the device reachable, so a device its user dropped without closing can
     * be collected and reported ({@link io.cudaloom.reactor.lifecycle.UnclosedDeviceReport}), whose cleaning unparks this thread
     * to let it end. That park's blocker is the runner itself, which holds nothing else.
     */
    static final class Runner implements Runnable {
        private final WeakReference<Scanner> scanner;
        private final Parker parker;
        private final long untimedParkBoxNanos;

        Runner(WeakReference<Scanner> scanner, Parker parker, long untimedParkBoxNanos) {
            if (untimedParkBoxNanos <= 0) {
                throw new IllegalArgumentException("untimed park box must be positive: " + untimedParkBoxNanos);
            }
            this.scanner = scanner;
            this.parker = parker;
            this.untimedParkBoxNanos = untimedParkBoxNanos;
        }

        @Override
        public void run() {
            TimerSlack.setForCurrentThread(TIMER_SLACK_NANOS); // precise predicted parks (TimerSlack)
            if (start()) {
                while (turn()) {
                    // every park is made in turn()
                }
            }
        }

        /** Before the first turn: the strategy's clock starts (spin for the first work first); false if the scanner is gone. */
        boolean start() {
            Scanner s = scanner.get();
            if (s == null) {
                return false;
            }
            s.resume();
            return true;
        }

        /** One turn of the loop (the class comment's pseudo-code); false once the loop has ended. */
        boolean turn() {
            Scanner s = scanner.get();
            if (s == null) {
                return false; // dropped unclosed: its report's cleaning woke us
            }
            if (s.lifecycle.isClosed()) {
                s.exit();
                return false;
            }
            Thread.interrupted(); // cleared and ignored: see the class comment
            long action;
            try {
                action = s.step();
            } catch (RuntimeException e) {
                s.failed(e);
                parker.parkNanos(s.parkBlocker, ERROR_PAUSE_NANOS);
                return true;
            } catch (Error e) {
                s.stopAfter(e);
                s.exit();
                return false;
            }
            if (action == IdleStrategy.CONTINUE) {
                return true;
            } else if (action == IdleStrategy.SPIN) {
                Thread.onSpinWait();
            } else if (action == IdleStrategy.YIELD) {
                Thread.yield();
            } else if (action == IdleStrategy.PARK) {
                long box = untimedParkBoxNanos;
                s = null; // parked with no strong reference to the reactor (class comment)
                long from = System.nanoTime();
                parker.parkBoxed(this, box);
                boolean ranOut = System.nanoTime() - from >= box;
                s = scanner.get();
                if (s == null) {
                    return false;
                }
                s.untimedParkEnded(ranOut);
            } else {
                long park = s.preWake.planPark(action); // never past a posted pre-wake (WakeBoard ordering 1)
                if (park > 0) {
                    parker.parkNanos(s.parkBlocker, park);
                }
                s.timedParkEnded();
            }
            return true;
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

    /** An {@link Error} from a cycle: counted and reported, then the reactor is closed with it (the runner then exits). */
    private void stopAfter(Error e) {
        failed(e);
        if (lifecycle.closeAfterScannerError(e)) {
            finishCloseOnExit = true;
        }
    }

    /** The loop has ended (the reactor closed, or an Error closed it): records the CPU time, finishes a close made here. */
    private void exit() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        cpuNanosAtExit = threads.isCurrentThreadCpuTimeSupported() ? threads.getCurrentThreadCpuTime() : -1L;
        if (finishCloseOnExit) {
            lifecycle.finishClose(); // close() ran on this thread (a completion), or an Error stopped us
        }
    }

    /** Started, or woken for new work after an untimed park: spin for it first. */
    void resume() {
        idle.reset(System.nanoTime());
    }

    /**
     * One pass of the loop, no park in it: a scan (delivering what it retired, and the fault probe
     * and the quarantine check when they are due), then, if it retired nothing, the idle step's
     * decision. Returns what the runner does next ({@link IdleStrategy}'s actions:
     * {@link IdleStrategy#CONTINUE} after a pass that retired something; {@link IdleStrategy#PARK}
     * only through the park gate of {@link #idleStep}).
     */
    long step() {
        return doWork() > 0 ? IdleStrategy.CONTINUE : idleStep();
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
            if (armed()) {
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

    /**
     * Whether anything waits on the scanner: a slot armed, or a fallback outstanding. Read through
     * the counts, never this pass's bits (the park gate, {@link #idleStep}).
     */
    private boolean armed() {
        return !table.isIdle() || registrar.fallbacksOutstanding();
    }

    /**
     * One idle step's decision, counted; the runner carries it out.
     *
     * <p>The park gate (no lost wake-up). A registrant publishes its registration and then, only if
     * it took the armed count from 0 to 1, unparks the scanner:
     * <ul>
     *   <li>the registrant's write: the volatile read-modify-write of the armed count
     *       ({@link SlotTable#publish}, SlotTable ordering 3; for a fallback, the outstanding
     *       count's getAndIncrement in {@link Registrar#registerFallback}); it publishes that
     *       something is armed, and it precedes the registrant's {@code LockSupport.unpark} of this
     *       thread (program order; SlotTable ordering 9);
     *   <li>the scanner's read: {@link #armed()}'s volatile reads of those same counts, here, after
     *       this pass's scan and before the runner's park; never this pass's active bits, which a
     *       registration counted before the pass may not yet show (the broken twin
     *       {@code scanner-park-gate-reads-bits.patch} does that, and jcstress catches it).
     * </ul>
     * Volatile accesses are totally ordered, so either this read sees the count (the decision is a
     * timed park or a spin: something is armed) or the registrant's increment comes after it, so it
     * found the count 0, made the 0-to-1 transition and unparks this thread after it: then that
     * unpark is the untimed park's permit, and the park returns at once (jcstress
     * {@code ScannerParkGateTest}). Nothing that reads shared state runs between this decision and
     * the runner's park. Should a wake-up be lost all the same, the park's time box ends it and
     * {@link #untimedParkEnded} counts it.
     */
    private long idleStep() {
        boolean armed = armed();
        long deadline = quarantine.isEmpty() ? IdleStrategy.NO_DEADLINE : nextQuarantineCheckAt;
        // Watched: every armed slot has a waiter looking at its flag (a hint, see PreWake).
        boolean watched = armed && !registrar.fallbacksOutstanding() && preWake.everyArmedSlotWatched(table);
        long action = idle.idle(armed, watched, System.nanoTime(), deadline);
        if (action == IdleStrategy.PARK) {
            increment(Counter.SCANNER_PARKS);
        } else if (IdleStrategy.isTimedPark(action)) {
            increment(Counter.SCANNER_TIMED_PARKS);
        }
        return action;
    }

    /** A timed park of the runner has ended (however woken). */
    void timedParkEnded() {
        preWake.awake();
        idle.parked(System.nanoTime());
    }

    /**
     * The untimed park has ended: woken by an unpark, spuriously, or, when {@code ranOutTheBox}, by
     * its time box. A box that ran out and then finds work armed ({@link #armed()}: the park gate's
     * read) counts a missed wake-up (as Netty's epoll loop counts a missed eventfd write): that
     * work's registrant should have unparked us. Also counted, rarely, is a registration that came
     * just as the box ran out, whose unpark then leaves a permit. Either way the work is served now.
     */
    void untimedParkEnded(boolean ranOutTheBox) {
        if (ranOutTheBox && armed()) {
            increment(Counter.SCANNER_MISSED_WAKEUPS);
        }
        resume();
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
    public void finishCloseOnExit() {
        finishCloseOnExit = true;
    }

    // ---- delivery -----------------------------------------------------------------------------

    /** Completes every payload of the batch (withdrawn slots have none); returns how many it completed. */
    private int deliver(RetiredBatch<Completion> retired, @Nullable RuntimeException failure) {
        int delivered = 0;
        for (int i = 0; i < retired.size(); i++) {
            Completion c = retired.payload(i);
            if (c != null) {
                Waiter.deliverGuarded(c, retired.ticket(i), failure);
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
        if (JfrEvents.deviceFaultEnabled()) {
            JfrEvents.deviceFault(stream.deviceName(), stream, error, failed);
        }
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
    public boolean reclaimStep(ReactorClosedException failure) {
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
