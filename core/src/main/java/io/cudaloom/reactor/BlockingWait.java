package io.cudaloom.reactor;

import io.cudaloom.GpuFaultException;
import io.cudaloom.ReactorClosedException;
import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.BackoffIdleStrategy;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.AwaitOutcome;
import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.JfrEvents;
import io.cudaloom.reactor.metrics.LatencyRecorder;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.reactor.metrics.SlowAwaitEvent;
import io.cudaloom.spi.StreamState;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The blocking wait behind every {@link io.cudaloom.GpuEvent} await: one method with mode flags
 * ({@link #acquire}, as AQS's {@code acquire}: timed, interruptible, the waiter's own slot or
 * coalesced, a closed stream's drain), the checks before registering done once
 * ({@link Checks#examine}), then register, optionally spin on the flag, and park until
 * the waiter's own ticket is delivered or the registration is withdrawn (timeout, interrupt). Its
 * algorithm is written as pseudo-code at the head of {@link #acquire}.
 *
 * <p>Whether and how it spins is its {@link SpinPolicy}'s decision ({@link SpinPolicy.Predictive}
 * by default: the spin budget and its reasons are there), from what the waiter knows: the stream's
 * recent waits, the threads inside this wait (counted here) and the armed slots. A predicted wait
 * is slept through and spun only at its end. The sleep is ended by the scanner at the time the
 * waiter posted ({@link PreWake}), its own timed park being the backstop, so one waiter on a
 * 200 us kernel spins through a carrier's wake-up and the margin, not through the JDK timer's
 * slack, and its completion is seen by its own spin (the scanner, which would otherwise deliver
 * it, would add a carrier's wake-up after the landing).
 *
 * <p>Driver calls: a wait whose own work (its event's position) is not yet proven complete takes
 * the stream as busy without a query; registering on a stream that turns out idle is still correct
 * (its flag write lands at once). When coalescing (every submission counted, raw-stream work
 * included), an event whose work an earlier wait or query proved complete
 * ({@link ReactorStream#isKnownComplete}) returns with no driver call at all; without
 * coalescing such an event (its counted work proven, raw-stream work perhaps not) asks the driver
 * once: idle, it returns at once; busy, it registers.
 */
public final class BlockingWait {
    /**
     * The parts a blocking wait uses, each built once by the facade ({@code CompletionReactor}).
     *
     * @param latency the await-latency histogram and the slow-await threshold
     * @param deviceName the device's name, for the JFR event
     * @param parkBlocker the blocker of every waiter's park (the reactor: what a thread dump names)
     * @param callbackExecutor where a shared write taken on a host callback is armed ({@link CoalescedWait})
     */
    public record Parts(LifecycleState state, Checks checks, SlotTable<Completion> table, Registrar registrar,
            PreWake preWake, ReactorConfig config, SharedCounters counters, LatencyRecorder latency, String deviceName,
            Object parkBlocker, Executor callbackExecutor) {}

    private final LifecycleState state;
    private final Checks checks;
    /** The await-latency histogram and the slow-await threshold. */
    private final LatencyRecorder latency;
    private final String deviceName;
    /** The blocker of every waiter's park (the reactor: what a thread dump names). */
    private final Object parkBlocker;
    private final SlotTable<Completion> table;
    private final Registrar registrar;
    /** Where a sleep through a predicted wait asks the scanner to end it (see {@link #sleepThroughPrediction}). */
    private final PreWake preWake;
    /**
     * The counters this wait increments, each handed over once from the reactor's SharedCounters (as
     * Agrona hands an agent the counters it writes): a wait's path adds to them directly.
     */
    private final LongAdder immediate, completions, coalescedCount, faults, timeouts, inlineCompletions, abandoned;
    /** The group commit's arming and delivery; null unless coalescing (and slots are used). */
    private final @Nullable CoalescedWait coalesced;
    /** Whether waiters are coalesced ({@link ReactorConfig#coalesce()}): only then are the counts complete. */
    private final boolean coalesce;
    /** Whether and how a waiter spins before it parks. */
    private final SpinPolicy spinPolicy;
    /** Threads inside {@link #await} now: an input of the spin policy (and the operator gauge). */
    private final AtomicInteger waiters = new AtomicInteger();

    /** With the reactor's spin policy ({@link SpinPolicy#predictive}, from the config). */
    public BlockingWait(Parts parts) {
        this(parts, SpinPolicy.predictive(parts.config(), parts.table().capacity()));
    }

    public BlockingWait(Parts parts, SpinPolicy spinPolicy) {
        this.state = parts.state();
        this.preWake = parts.preWake();
        this.checks = parts.checks();
        this.latency = parts.latency();
        this.deviceName = parts.deviceName();
        this.parkBlocker = parts.parkBlocker();
        this.table = parts.table();
        this.registrar = parts.registrar();
        SharedCounters counters = parts.counters();
        this.immediate = counters.adder(Counter.IMMEDIATE);
        this.completions = counters.adder(Counter.COMPLETIONS);
        this.coalescedCount = counters.adder(Counter.COALESCED);
        this.faults = counters.adder(Counter.FAULTS);
        this.timeouts = counters.adder(Counter.TIMEOUTS);
        this.inlineCompletions = counters.adder(Counter.INLINE_COMPLETIONS);
        this.abandoned = counters.adder(Counter.ABANDONED);
        this.spinPolicy = spinPolicy;
        ReactorConfig config = parts.config();
        this.coalesce = config.coalesce();
        this.coalesced = config.coalesce() && registrar.usesSlots()
                ? new CoalescedWait(parts.callbackExecutor(), registrar, config.relayWakeups())
                : null;
    }

    public int waitersNow() { return waiters.get(); } // read-only: the operator gauge of ReactorStats.waitersNow

    /** {@link #acquire}'s answer: timed, and the time ran out. */
    public static final int TIMED_OUT = 0;
    /** {@link #acquire}'s answer: the work is done. */
    public static final int COMPLETED = 1;
    /**
     * {@link #acquire}'s answer: the stream's state says closed and no drain was passed in; the
     * caller reads the stream's drain (published before the closed state) and acquires again with it.
     */
    public static final int STREAM_CLOSED = -1;

    /**
     * An await on an open stream ({@code GpuStream.await()}, the stress tests and stand-alone parts):
     * {@link #acquire} without a drain (a closed stream's drain serves only the events taken before
     * its close). Returns false only when timed and the time ran out.
     *
     * @throws IllegalStateException if the stream is closed
     */
    public boolean await(ReactorStream stream, long required, boolean interruptible, boolean timed, long nanos)
            throws InterruptedException {
        int answer = acquire(stream, null, required, interruptible, timed, nanos);
        if (answer == STREAM_CLOSED) {
            throw new IllegalStateException("stream " + stream + " is closed");
        }
        return answer == COMPLETED;
    }

    /**
     * Every blocking await of an event ({@code GpuEvent}'s, which holds this wait), open stream or
     * closed: {@link #acquire}, routed by the stream's state, read once: its drain, published
     * before the stream reads as closed (StreamDrain's ordering 1), or none while it is open. A
     * stream that the wait finds closed after that read ({@link #STREAM_CLOSED}) has its drain
     * published by then: the wait runs again on it, with what is left of the time. Returns false
     * only when timed and the time ran out.
     */
    public boolean awaitEvent(ReactorStream stream, long required, boolean interruptible, boolean timed, long nanos)
            throws InterruptedException {
        long start = timed ? System.nanoTime() : 0L;
        int answer = acquire(stream, stream.drain(), required, interruptible, timed, nanos);
        if (answer == STREAM_CLOSED) {
            long left = timed ? Math.max(0L, nanos - (System.nanoTime() - start)) : 0L;
            StreamDrain drain = Objects.requireNonNull(stream.drain(), "a closed stream's drain");
            answer = acquire(stream, drain, required, interruptible, timed, left);
        }
        return answer == COMPLETED;
    }

    /**
     * The one blocking wait, as AQS's {@code acquire(node, arg, shared, interruptible, timed, time)}:
     * every await of an event, on an open stream or a closed one, runs this method, and its modes are
     * flags: {@code interruptible}, {@code timed} (with {@code nanos}; {@code nanos <= 0} polls),
     * coalesced or the waiter's own slot (the reactor's config, {@link #coalesced}), and the closed
     * stream's drain ({@code drain} non-null). Long on purpose, as Exchanger keeps its
     * spin, yield and block in one method: the registration, the spin and the park share their locals
     * (the ticket, what to withdraw, the flag to watch, the deadline, the interrupt), and each
     * ordering below is enforced where it is written.
     *
     * <pre>
     * check:     interrupted? throw. May this thread block? (else throw)
     *            drain mode:  reactor closed? throw. Known complete? return. Covered by the drain? (else throw)
     *                         drain settled, or a poll? return its outcome
     *            slot modes:  known complete (coalescing)? return. Reactor closed? throw.
     *                         stream closed (its state)? return STREAM_CLOSED: the caller passes the drain
     *                         ask the stream (or assume busy): idle? return; faulted? throw; a poll? return false
     * register:  waiter.reset()
     *            drain:     subscribe the waiter to the drain (a registration to withdraw); no spin
     *            own slot:  spin = SpinPolicy.decide(...); Registrar.tryArm; refused: a host callback
     *                       (FallbackRegistration)
     *            coalesced: join the newest armed group that covers us, or the open group (no spin:
     *                       no flag of ours to watch); else arm a group of our own if there is room
     *                       (spin = SpinPolicy.decide(...), on its flag); else gather an open group;
     *                       each join a Waiter.Member to withdraw
     * spin:      sleep through the predicted wait (PreWake), then watch the flag until the spin ends;
     *            flag set and withdrawn by us: done here (inline); taken by the scanner: wait for the
     *            delivery it is making
     * park:      while (!waiter.isDelivered(ticket)):
     *                deadline passed?  withdraw: won, return false; lost, the delivery is imminent: untimed
     *                park (timed or not); interrupted and interruptible? withdraw: won, throw; lost, finish
     * deliver:   relay the group's wake-ups; re-assert an interrupt; throw the delivered failure anew
     * account:   slot modes: waiters gauge, the stream's wait average, histogram, TIMEOUTS, listener;
     *            every mode: the SlowAwait JFR event, committed here, once
     * </pre>
     *
     * <p>Orderings enforced here: the waiter's record is reset before its registration is published
     * (Waiter#reset: the publish's read-modify-write orders it); {@code required} is read before an
     * open group is seen open ({@link CoalescedWait} ordering 1); a group that installs an open group
     * looks for room after the install (ordering 2, {@link CoalescedWait#armOpenIfRoom}); the ticket
     * is read with a volatile load before the delivered failure (SlotTable ordering 9, {@link Waiter});
     * a withdrawal that fails waits for the delivery in flight, so no wait returns while a delivery to
     * its record is being made (guarded by the jcstress {@code BlockingWaitTimeoutTest} and its twin).
     *
     * @param drain the closed stream's drain, read once by the caller from the stream's state; null
     *     while the stream is open
     * @return {@link #COMPLETED}, {@link #TIMED_OUT} or {@link #STREAM_CLOSED}
     */
    public int acquire(ReactorStream stream, @Nullable StreamDrain drain, long required, boolean interruptible,
            boolean timed, long nanos) throws InterruptedException {
        // ---- check: once, before registering (Checks, as AQS's tryAcquire) ----
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        boolean poll = timed && nanos <= 0; // "is it done?": ask the driver, whatever the hint says
        boolean counted = drain == null; // the drain's waits arm nothing of their own: not counted in ReactorStats
        if (drain != null) {
            if (state.isClosed()) {
                throw state.closedFailure();
            }
            // Only when coalescing are the counts complete (raw-stream work counted by the user).
            if (coalesce && stream.isKnownComplete(required)) {
                return COMPLETED;
            }
            checks.checkMayBlock(stream);
            if (required > drain.covered) {
                throw new IllegalStateException("stream " + stream + " is closed: this event was taken while it was"
                        + " closing, after the work the close covers");
            }
            if (drain.isSettled() || poll) { // known at once, or a poll: not timed
                if (!drain.isSettled()) {
                    return TIMED_OUT;
                }
                RuntimeException failure = drain.failure();
                if (failure != null) {
                    throw Failures.anew(failure);
                }
                return COMPLETED;
            }
        } else {
            // Counts are complete only when coalescing (the user counts raw-stream work then): only
            // then does an earlier proof answer for this event without asking the driver.
            checks.checkMayBlock(stream); // first: a kernel may run before its own launch is counted
            if (coalesced != null && stream.isKnownComplete(required) && !state.isClosed() && !stream.isClosed()) {
                immediate.increment();
                completions.increment();
                return COMPLETED;
            }
            state.checkOpen();
            if (stream.isClosed()) {
                return STREAM_CLOSED; // routed by the stream's state: its drain serves the rest
            }
            if (checks.examine(stream, required, !poll) == StreamState.IDLE) {
                return COMPLETED;
            }
            if (poll) {
                return TIMED_OUT;
            }
        }
        // Null unless a JFR recording has io.cudaloom.SlowAwait enabled: no allocation otherwise.
        // Begun before the clock starts, so that the event spans the whole wait (a timed one's
        // deadline included), however long beginning it took (the first one adds JFR hooks).
        SlowAwaitEvent slow = LatencyRecorder.beginAwait();
        long start = System.nanoTime();
        long deadline = timed ? start + nanos : 0L;
        AwaitOutcome outcome = AwaitOutcome.FAILED; // unless decided below
        Waiter waiter = Waiter.current(); // this thread's record, reused by every await
        int inside = counted ? waiters.incrementAndGet() : 0;
        boolean interrupted = false; // an interrupt taken by a park, re-asserted on the way out
        try {
            // ---- register ----
            waiter.reset(); // before the registration is published (Waiter#reset)
            long ticket; // what the waiter's record will be delivered with
            @Nullable Registration registration = null; // what to withdraw; null: the own slot (from the table)
            long spin = SpinPolicy.NO_SPIN; // NO_SPIN, SPIN (0) or a predicted wait (SpinPolicy)
            long flagTicket = 0L; // the slot whose flag the spin watches
            Completion payload = waiter; // what the spin withdraws from that slot when it sees the flag
            if (drain != null) {
                waiter.path = SlowAwaitEvent.DRAIN;
                ticket = Waiter.syntheticTicket();
                registration = drain.enlist(waiter, ticket); // delivered at once if the drain settled meanwhile
            } else {
                CoalescedWait shared = coalesced;
                if (shared == null) {
                    long decided = decideSpin(stream, inside); // before the arm: the armed count without us
                    ticket = registrar.tryArm(stream, waiter);
                    if (!Registrar.armed(ticket)) {
                        waiter.path = SlowAwaitEvent.FALLBACK;
                        FallbackRegistration fallback = registrar.registerFallback(stream, waiter, FallbackReason.of(ticket));
                        ticket = fallback.ticket;
                        registration = fallback;
                    } else {
                        spin = decided;
                        flagTicket = ticket;
                    }
                } else {
                    // The path: coalesced exactly when this await shares a write it did not arm
                    // itself (Counter#COALESCED); a group of its own waits as on its own slot.
                    Waiter.Member member = new Waiter.Member(waiter, Waiter.syntheticTicket());
                    for (;;) {
                        Waiter.Group last = stream.lastGroup;
                        if (last != null && last.covers(required)) {
                            if (last.join(member)) {
                                coalescedCount.increment();
                                waiter.path = SlowAwaitEvent.COALESCED;
                                break;
                            }
                            if (last.deliveredFailure() == null) { // delivered: the work it covers, ours too, is done
                                waiter.path = SlowAwaitEvent.IMMEDIATE;
                                immediate.increment();
                                completions.increment();
                                outcome = AwaitOutcome.COMPLETED;
                                stream.completedThrough(required);
                                return COMPLETED;
                            }
                            // A failed group (fault, close) says nothing about later ones: check afresh.
                            if (checks.precheck(stream, false) == StreamState.IDLE) {
                                waiter.path = SlowAwaitEvent.IMMEDIATE;
                                outcome = AwaitOutcome.COMPLETED;
                                stream.completedThrough(required);
                                return COMPLETED;
                            }
                        }
                        Waiter.Group open = stream.commit.open();
                        if (open != null && open.isOpen()) { // CoalescedWait ordering 1: required was read before this
                            if (open.join(member)) {
                                coalescedCount.increment();
                                waiter.path = SlowAwaitEvent.COALESCED;
                                shared.armOpenIfRoom(stream);
                                break;
                            }
                            if (open.deliveredFailure() == null) { // armed and delivered since: it covered us
                                waiter.path = SlowAwaitEvent.IMMEDIATE;
                                immediate.increment();
                                completions.increment();
                                outcome = AwaitOutcome.COMPLETED;
                                stream.completedThrough(required);
                                return COMPLETED;
                            }
                            continue;
                        }
                        if (stream.commit.tryReserve()) {
                            // A group of its own, as a lone waiter's own slot: parked (the default), inline or fallback.
                            long decided = decideSpin(stream, inside); // before the arm, as for an own slot
                            ReactorStream.GroupDelivery own = shared.armFresh(stream, member);
                            if (!Registrar.armed(own.ticket) && own.ticket != CoalescedWait.ARM_FAILED) {
                                waiter.path = SlowAwaitEvent.FALLBACK;
                            } else if (Registrar.armed(own.ticket)) {
                                spin = decided; // a short kernel then completes with no wake-up
                                flagTicket = own.ticket;
                                payload = own;
                            }
                            break;
                        }
                        Waiter.Group gathering = Waiter.Group.open(shared.relay, member); // its founder (Waiter item 5)
                        if (stream.commit.installOpen(open, gathering)) {
                            coalescedCount.increment(); // it shares the next write with whoever gathers with it
                            waiter.path = SlowAwaitEvent.COALESCED;
                            shared.armOpenIfRoom(stream); // CoalescedWait ordering 2: installed, now look for room
                            break;
                        }
                        member = new Waiter.Member(waiter, Waiter.syntheticTicket()); // lost the race: try theirs
                    }
                    ticket = member.ticket;
                    registration = member;
                }
            }
            // ---- spin (SpinPolicy's decision): sleep through a prediction, then watch the flag ----
            if (spin != SpinPolicy.NO_SPIN && spinOnFlag(waiter, ticket, flagTicket, payload, spin, interruptible, timed,
                    deadline)) {
                waiter.path = SlowAwaitEvent.INLINE;
                if (registration == null) { // its own slot, withdrawn by this thread: no delivery comes
                    outcome = AwaitOutcome.COMPLETED;
                    stream.completedThrough(required); // a normal return proves the event's work done
                    return COMPLETED;
                } // a group delivered on this thread: its membership is delivered, the loop below returns at once
            }
            // ---- park until delivered, or withdrawn on timeout or interrupt ----
            // The wake-up is the completer's unpark, made after its volatile store of the ticket
            // (SlotTable ordering 9), so a park that consumed an earlier, stale permit re-checks,
            // sees the ticket or parks again with that unpark still to come. Spurious returns are
            // re-checked by the loop. The park's blocker is the reactor.
            boolean timedPark = timed;
            while (!waiter.isDelivered(ticket)) {
                if (timedPark) {
                    long remaining = deadline - System.nanoTime();
                    if (remaining <= 0) {
                        boolean withdrawn = registration != null ? registration.cancel() : table.cancel(ticket, waiter);
                        if (counted ? countIf(abandoned, withdrawn) : withdrawn) {
                            outcome = AwaitOutcome.TIMEOUT;
                            return TIMED_OUT;
                        }
                        timedPark = false; // lost the race to a delivery: it is imminent, wait for it
                        continue;
                    }
                    LockSupport.parkNanos(parkBlocker, remaining);
                } else {
                    LockSupport.park(parkBlocker);
                }
                if (Thread.interrupted()) {
                    if (interruptible && !interrupted) {
                        boolean withdrawn = registration != null ? registration.cancel() : table.cancel(ticket, waiter);
                        if (counted ? countIf(abandoned, withdrawn) : withdrawn) {
                            throw new InterruptedException();
                        }
                    }
                    interrupted = true; // delivery imminent (or uninterruptible): finish, then re-assert
                }
            }
            // ---- delivered: the ticket was read (volatile) before the failure ----
            if (registration != null) {
                Waiter.Group.afterDelivery(registration); // a member wakes its part of the group first; a founder settles
            }
            RuntimeException failure = waiter.failure();
            if (failure != null) {
                if (counted && failure instanceof GpuFaultException) {
                    faults.increment();
                }
                throw Failures.anew(failure); // thrown anew, so the stack trace is the waiter's
            }
            if (counted) {
                completions.increment();
                stream.completedThrough(required); // a normal return proves the event's work done
            }
            outcome = AwaitOutcome.COMPLETED;
            return COMPLETED;
        } catch (InterruptedException | GpuFaultException | ReactorClosedException e) {
            outcome = JfrEvents.awaitOutcome(e);
            throw e;
        } catch (IllegalStateException refused) {
            // A registration refused because the stream closed while registering (Registrar reports
            // a refused flag write and host callback by this exception): routed by the stream's
            // state, as at the check above; the attempt ends as failed.
            if (counted && stream.isClosed()) {
                return STREAM_CLOSED;
            }
            throw refused;
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            long now = System.nanoTime();
            if (counted) {
                waiters.decrementAndGet();
                // The spin's guide is when the work was seen done (the delivery or the waiter's own
                // look at its flag), not when this thread got to run again: a late wake-up must not
                // teach the next wait to sleep longer.
                long landed = waiter.landedAt();
                stream.recordWait((landed != 0L && landed - start > 0 && landed - now <= 0 ? landed : now) - start);
                if (outcome == AwaitOutcome.TIMEOUT) {
                    timeouts.increment();
                }
            }
            // Last, the one metrics call: after every counter of this await (a listener reading
            // stats() sees it counted), its histogram record (counted only), the SlowAwait event's
            // end and commit (the path says what happened to this await, Waiter#path), then the
            // listeners (counted only).
            latency.awaitEnded(now - start, outcome, counted, slow, deviceName, stream, waiter.path);
        }
    }

    /**
     * Whether and how this await spins ({@link SpinPolicy#decide}), asked only by an await that is
     * about to arm a flag write of its own (its own slot, or a group of its own): one that joins
     * another's group has no flag of its own to watch, and parks.
     */
    private long decideSpin(ReactorStream stream, int inside) {
        return spinPolicy.decide(stream.recentWaitNanos(), inside, table.armedCount());
    }

    /**
     * The spin of {@link #acquire}: sleeps through a predicted wait ({@link #sleepThroughPrediction}),
     * then watches the flag of slot {@code flagTicket} until the spin ends. True if the work completed
     * and this thread withdrew {@code payload} (so it is not unparked later; the scanner still
     * retires and recycles the slot): the waiter's own slot ({@code payload} is the waiter: counted
     * inline), or a group it armed itself (the group is then delivered on this thread, its own
     * membership included). The flag read may be stale (the slot already retired, recycled and
     * re-armed by someone else): then the withdrawal fails, because the payload is no longer ours,
     * and the delivery we were owed is waited for as usual. See SlotTable ordering 8.
     *
     * <p>A failed withdrawal means the scanner has taken the payload and is delivering it now; the
     * waiter spins on that delivery for a while ({@link #awaitImminentDelivery}), then parks if it
     * has not come, and the scanner's unpark (made after its volatile store of the ticket,
     * SlotTable ordering 9) wakes it.
     */
    private boolean spinOnFlag(Waiter waiter, long ticket, long flagTicket, Completion payload, long predicted,
            boolean interruptible, boolean timed, long deadline) {
        long end = sleepThroughPrediction(waiter, ticket, predicted, interruptible, timed, deadline);
        // Counted as watching only now, while it spins: asleep, it would see its flag only when it
        // wakes, and a scanner deferring to it would leave a kernel that landed early, or a sleep
        // that overran, to that late look (measured on the H200: docs/BENCHMARKS.md, sixth pass).
        preWake.watch(); // after the arm: this thread looks at its own armed flag (PreWake#watching)
        try {
            while (!waiter.isDelivered(ticket)) {
                if (table.flagSet(flagTicket)) {
                    if (table.cancel(flagTicket, payload)) {
                        inlineCompletions.increment();
                        if (payload == waiter) {
                            waiter.landed();
                            completions.increment();
                        } else {
                            payload.complete(flagTicket, null); // the scanner retires the slot, and records its proof
                        }
                        return true;
                    }
                    awaitImminentDelivery(waiter, ticket, end, interruptible); // the scanner took the payload
                    return false;
                }
                if (System.nanoTime() - end >= 0 || interrupted(interruptible)) {
                    return false;
                }
                Thread.onSpinWait();
            }
            return false; // delivered meanwhile (an early landing ended the sleep): the park returns at once
        } finally {
            preWake.unwatch();
        }
    }

    /**
     * After losing the race for a flag to the scanner (its get-and-set took the payload first),
     * the delivery is being made now, a few hundred nanoseconds away: the waiter keeps spinning on
     * it, a volatile read of the ticket that the scanner stores before its unpark (SlotTable
     * ordering 9), through what is left of its spin window (at most {@code waiterSpinNanos} more),
     * instead of parking at once. A park there costs a carrier's wake-up after the unpark: on the
     * H200 (docs/issue20/s5-run3), 20 us kernels with 1,343-1,857 of 2,000 awaits losing that race
     * took 31.6-35.2 us at p50 against 29.3-29.8 us for cuStreamSynchronize. The unpark then
     * leaves a permit, which a later park of this thread consumes as a spurious return (every park
     * loop here re-checks its condition).
     */
    private void awaitImminentDelivery(Waiter waiter, long ticket, long end, boolean interruptible) {
        long now = System.nanoTime();
        long until = end - now < spinPolicy.spinNanos() ? end : now + spinPolicy.spinNanos();
        while (!waiter.isDelivered(ticket) && System.nanoTime() - until < 0 && !interrupted(interruptible)) {
            Thread.onSpinWait();
        }
    }

    /** How late a waiter's own timed park returns, on average (timer slack, the carrier's wake-up); racy by design. */
    private volatile long parkOvershootNanos;
    /** How late a waiter that the scanner wakes ({@link PreWake}) runs again, on average (a carrier's wake-up); racy by design. */
    private volatile long preWokenLateNanos;

    /** Whether an interruptible wait's thread is interrupted (the status is kept: the park that follows handles it). */
    private static boolean interrupted(boolean interruptible) {
        return interruptible && Thread.currentThread().isInterrupted();
    }

    /**
     * How a waiter spins ({@link #spinOnFlag}): for the policy's
     * {@link SpinPolicy#spinNanos()}, or, when {@code predicted > 0} (the stream's recent waits
     * were longer than that), asleep until shortly before the predicted end, less a margin of 2% or
     * 5 us (whichever is larger) and the learned lateness of such sleeps, then spinning through the
     * prediction and the spin past it. A flag that lands early is delivered by the scanner
     * meanwhile, whose unpark ends the sleep. An interrupt or the deadline ends the spin (the park
     * that follows handles them).
     *
     * <p>Sleeps through most of a predicted wait; returns when the spin that follows ends. The sleep is ended by the scanner where it can be ({@link PreWake}: a post of
     * the wake-up time, which the scanner honours within its 1 us timer slack), so it is late by a
     * carrier's wake-up only; the waiter's own timed park is the backstop, and the whole sleep
     * where every cell is taken or pre-wakes are off, with its own (larger) learned lateness. Each
     * lateness is learned apart, from the sleeps that ended its way.
     */
    private long sleepThroughPrediction(Waiter waiter, long ticket, long predicted, boolean interruptible, boolean timed,
            long deadline) {
        long start = System.nanoTime();
        long end = start + Math.max(0L, predicted) + spinPolicy.spinNanos();
        if (predicted > 0) {
            long untilMargin = predicted - BackoffIdleStrategy.marginFor(predicted); // the scanner's margin, the same rule
            long wakeAt = wakeAt(start, untilMargin - preWokenLateNanos, timed, deadline);
            int cell = wakeAt - start > 0 ? preWake.post(waiter, wakeAt) : PreWake.NOT_POSTED;
            if (cell == PreWake.NOT_POSTED) {
                wakeAt = wakeAt(start, untilMargin - parkOvershootNanos, timed, deadline);
            }
            long remaining;
            // Uninterruptible, with the interrupt status set (a pool's shutdownNow()): every park
            // would return at once and this loop spin for the whole sleep, holding a carrier. So, as
            // acquire's park does, the status is cleared before each park (one that comes
            // during the sleep ends that park: cleared again, asleep again) and set again below
            // once the sleep ends. Interruptible: kept, and the loop ends on it.
            boolean interrupted = false;
            try {
                // A spurious or stale wake-up (an unpark meant for an earlier wait) sleeps again for the rest.
                while (!waiter.isDelivered(ticket) && (remaining = wakeAt - System.nanoTime()) > 0) {
                    boolean posted = cell != PreWake.NOT_POSTED;
                    if (!interruptible && Thread.interrupted()) {
                        interrupted = true;
                    }
                    LockSupport.parkNanos(parkBlocker, remaining); // posted: a backstop the scanner's unpark ends first
                    long now = System.nanoTime();
                    long late;
                    if (!waiter.isDelivered(ticket)) {
                        late = now - wakeAt; // woken at the planned time (the scanner's unpark or the timer): the lateness
                    } else {
                        // Woken by the delivery. If the work landed after the planned wake-up, nothing had
                        // woken this thread by then: the lateness is at least that (else a sleep that
                        // always overshoots the landing would never learn its lateness).
                        long landed = waiter.landedAt();
                        late = landed != 0L && landed - wakeAt > 0 ? landed - wakeAt + BackoffIdleStrategy.MIN_MARGIN_NANOS : -1L;
                    }
                    if (late >= 0 && late < BackoffIdleStrategy.MAX_OVERSHOOT_NANOS) {
                        if (posted) {
                            long old = preWokenLateNanos;
                            preWokenLateNanos = old + ((late - old) >> 2);
                        } else {
                            long old = parkOvershootNanos;
                            parkOvershootNanos = old + ((late - old) >> 2);
                        }
                    }
                    if (posted && !preWake.holds(cell, waiter)) {
                        // Taken by the scanner: its unpark woke us, or will leave a permit. Woken early
                        // all the same (an ABA of the cell, WakeBoard): post again for the rest.
                        cell = !waiter.isDelivered(ticket) && wakeAt - now > 0 ? preWake.post(waiter, wakeAt) : PreWake.NOT_POSTED;
                    }
                    if (interrupted(interruptible)) {
                        break; // the park that follows the spin handles it
                    }
                }
                if (cell != PreWake.NOT_POSTED) {
                    preWake.withdraw(cell, waiter); // fails only if the scanner took it: a permit may be left, re-checked
                }
            } finally {
                restoreInterrupt(interrupted); // the spin ignores it; the final park clears and restores it again
            }
        }
        return timed && deadline - end < 0 ? deadline : end;
    }

    private static long wakeAt(long start, long sleep, boolean timed, long deadline) {
        return start + (timed ? Math.min(sleep, deadline - start) : sleep);
    }

    /**
     * Counts a withdrawal in {@code counter}, if it was one; returns whether it was (the wait's and
     * the non-blocking registrations' withdrawals, {@link CallbackRegistrations}).
     */
    static boolean countIf(LongAdder counter, boolean withdrawn) {
        if (withdrawn) {
            counter.increment();
        }
        return withdrawn;
    }

    private static void restoreInterrupt(boolean interrupted) {
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The one step every wait and registration takes before registering (in the manner of AQS's
     * {@code tryAcquire} before it queues): the reactor is open, the stream is open, and the stream is
     * not already done or faulted; and, for a blocking wait, that the calling thread may block. A
     * fault found here becomes an exception through {@link DeviceFaults}, its one factory.
     *
     * <p>Nested here because they are {@link BlockingWait#acquire}'s first lines (its "check" step); the
     * non-blocking registrations ({@link CallbackRegistrations}) and the facade's looks at a stream
     * ({@link #query}, {@link #proveIfIdle}) use the same instance, built once by the facade.
     */
    public static final class Checks {
        private final LifecycleState state;
        /** The counters these checks increment, handed over once (SharedCounters.adder). */
        private final LongAdder immediate, completions, faults;
        private final String deviceName;
        /** The reactor's scanner thread (made after these checks, so asked for when needed). */
        private final Supplier<Thread> scannerThread;

        public Checks(LifecycleState state, SharedCounters counters, String deviceName, Supplier<Thread> scannerThread) {
            this.state = state;
            this.immediate = counters.adder(Counter.IMMEDIATE);
            this.completions = counters.adder(Counter.COMPLETIONS);
            this.faults = counters.adder(Counter.FAULTS);
            this.deviceName = deviceName;
            this.scannerThread = scannerThread;
        }

        /**
         * The stream's state: IDLE (the work is done, counted as an immediate completion) or BUSY; a
         * faulted stream throws. With {@code assumeBusy}, a stream with counted work submitted after
         * its last known completion is reported BUSY without a driver call (a fault is then found when
         * registering or by the scanner's probe).
         *
         * @throws io.cudaloom.ReactorClosedException if the reactor is closed
         * @throws IllegalStateException if the stream is closed
         * @throws io.cudaloom.GpuFaultException if the stream has faulted
         */
        StreamState precheck(ReactorStream stream, boolean assumeBusy) {
            state.checkOpen();
            if (stream.isClosed()) {
                throw new IllegalStateException("stream " + stream + " is closed");
            }
            return examine(stream, stream.submissionCount(), assumeBusy);
        }

        /**
         * {@link #precheck} after its open checks, for the blocking wait, which reads the reactor's and
         * the stream's state itself and routes a closed stream to its drain ({@link BlockingWait#acquire}).
         * With {@code assumeBusy}, the stream is BUSY without a query while the first {@code required}
         * counted submissions are not known complete ({@code required} is at most the stream's count:
         * the wait's own position, or the count itself from {@link #precheck}, which is then
         * {@link ReactorStream#hasWorkNotKnownComplete}). A wait whose own work is proven while later
         * work is not (without coalescing: with it, such a wait returned before this, but for a proof
         * raised in between) asks the driver instead: idle answers it at once, with no flag write.
         */
        StreamState examine(ReactorStream stream, long required, boolean assumeBusy) {
            if (assumeBusy && !stream.isKnownComplete(required)) {
                return StreamState.BUSY;
            }
            long counted = stream.submissionCount(); // before the query: an idle answer covers these
            StreamState state = stream.queryState();
            if (state == StreamState.IDLE) {
                stream.completedThrough(counted);
                immediate.increment();
                completions.increment();
            } else if (state == StreamState.FAULTED) {
                faults.increment();
                throw stream.faults().neverCompletes(); // the fault owner's one factory
            }
            return state;
        }

        /**
         * A look at the stream for {@code GpuEvent.isDone()} and the work-in-flight gauges: the
         * stream's state now, from one query ({@code cuStreamQuery} on CUDA; FAULTED with no driver
         * call once a fault is recorded), an IDLE answer recorded as a proof of the work counted
         * before the query, as {@link #precheck} does. Unlike it, this is no await: it counts nothing
         * and never throws.
         *
         * <p>Ordering: the count is read before the query. A submission is counted only after its
         * enqueue returned ({@code GpuStream.submissionCount}), so an IDLE answer that follows the read
         * covers every counted entry, and the proof it records ({@link ReactorStream#completedThrough()},
         * a compare-and-set that only raises) is never ahead of the work. The proof's volatile write is
         * what later readers of the counts (the gauges, {@code isKnownComplete}) observe.
         *
         * @return IDLE (the proof recorded), BUSY or FAULTED (the fault recorded by the fault owner);
         *     null where no query may be made: the reactor is closed, the caller runs on a host
         *     callback (CUDA forbids driver calls there; a recorded fault is still answered), or the
         *     backend's query threw
         */
        public @Nullable StreamState query(ReactorStream stream) {
            if (state.isClosed()) {
                return null;
            }
            if (FallbackRegistration.onHostCallback()) {
                return stream.faults().hasFaulted() ? StreamState.FAULTED : null;
            }
            long counted = stream.submissionCount(); // before the query: an idle answer covers these
            StreamState answer;
            try {
                answer = stream.queryState();
            } catch (RuntimeException e) {
                return null; // a look, not a wait: the waits and the scanner's probe report what the backend does
            }
            if (answer == StreamState.IDLE) {
                stream.completedThrough(counted);
            }
            return answer;
        }

        /**
         * The gauges' refresh ({@code GpuStream.workInFlight()}, {@code ReactorStats.workInFlight()}):
         * one {@link #query} of {@code stream} if its counts show work not yet proven complete, none
         * otherwise, so that work finished without anyone awaiting it leaves the gauge once the stream
         * is idle. Bounded: at most one query per stream per read.
         */
        public void proveIfIdle(ReactorStream stream) {
            if (stream.hasWorkNotKnownComplete() && !stream.isClosed()) {
                query(stream);
            }
        }

        /**
         * Work entries submitted to {@code stream} and not yet proven complete, after one
         * {@link #proveIfIdle} (positions appended, with combining): the gauges' value.
         */
        public long workInFlight(ReactorStream stream) {
            proveIfIdle(stream);
            return Math.max(0, stream.submissionCount() - stream.completedThrough());
        }

        /**
         * Refuses a blocking wait on a thread the reactor or the stream itself depends on: the scanner
         * (a completion callback run there with a direct executor), a host-callback thread (the same,
         * on a fallback), or the stream's own worker (a simulated kernel that awaits).
         */
        public void checkMayBlock(ReactorStream stream) {
            Thread current = Thread.currentThread();
            if (current.isVirtual()) {
                return; // the scanner, host callbacks and a stream's own work run on platform threads (the SPI's rule)
            }
            String where = null;
            if (current == scannerThread.get()) {
                where = "the scanner thread of " + deviceName + " (a completion callback run there)";
            } else if (FallbackRegistration.onHostCallback()) {
                where = "a host-callback thread (a completion callback run there)";
            } else if (stream.isOwnWorkerThread()) {
                where = "the thread that runs " + stream + "'s own work";
            }
            if (where != null) {
                throw new IllegalStateException("await() called on " + where + ": it would stall every waiter it "
                        + "serves; hand the wait to another thread (e.g. an executor for the callback)");
            }
        }
    }
}
