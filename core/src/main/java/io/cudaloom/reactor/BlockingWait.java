package io.cudaloom.reactor;

import io.cudaloom.AwaitListener;
import io.cudaloom.GpuEvent;
import io.cudaloom.GpuFaultException;
import io.cudaloom.GpuStream;
import io.cudaloom.ReactorClosedException;
import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.BackoffIdleStrategy;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.spi.StreamState;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The blocking wait behind every {@link GpuEvent} await: one entry with mode flags ({@link #await},
 * as AQS's {@code acquire}), the checks before registering done once
 * ({@link RegistrationChecks#precheck}), then register, optionally spin on the waiter's own flag,
 * and park until the waiter's own ticket is delivered or the registration is withdrawn (timeout,
 * interrupt).
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
 * <p>Driver calls: a stream with counted work not yet proven complete
 * ({@link GpuStream#hasWorkNotKnownComplete}) is taken as busy without a query; registering on a
 * stream that turns out idle is still correct (its flag write lands at once). When coalescing
 * (every submission counted, raw-stream work included), an event whose work an earlier wait or
 * query proved complete ({@link GpuStream#isKnownComplete}) returns with no driver call at all.
 */
public final class BlockingWait implements CoalescedWait.Parking {
    /**
     * The parts a blocking wait uses, each built once by the facade ({@code CompletionReactor}).
     *
     * @param latency the await-latency histogram and the slow-await threshold
     * @param deviceName the device's name, for the JFR event
     * @param parkBlocker the blocker of every waiter's park (the reactor: what a thread dump names)
     * @param callbackExecutor where a shared write taken on a host callback is armed ({@link CoalescedWait})
     */
    public record Parts(ReactorState state, RegistrationChecks checks, SlotTable<Completion> table, Registrar registrar,
            PreWake preWake, ReactorConfig config, ReactorCounters counters, LatencyRecorder latency, String deviceName,
            Object parkBlocker, Executor callbackExecutor) {}

    private final ReactorState state;
    private final RegistrationChecks checks;
    /** The await-latency histogram and the slow-await threshold. */
    private final LatencyRecorder latency;
    private final String deviceName;
    /** The blocker of every waiter's park (the reactor: what a thread dump names). */
    private final Object parkBlocker;
    private final SlotTable<Completion> table;
    private final Registrar registrar;
    /** Where a sleep through a predicted wait asks the scanner to end it (see {@link #sleepThroughPrediction}). */
    private final PreWake preWake;
    private final ReactorCounters counters;
    private final @Nullable CoalescedWait coalesced;
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
        this.counters = parts.counters();
        this.spinPolicy = spinPolicy;
        ReactorConfig config = parts.config();
        this.coalesced = config.coalesce() && registrar.usesSlots()
                ? new CoalescedWait(checks, parts.callbackExecutor(), registrar, counters, this, config.relayWakeups())
                : null;
    }

    public int waitersNow() { return waiters.get(); } // read-only: the operator gauge of ReactorStats.waitersNow

    /** Returns false only when timed and the time ran out. */
    public boolean await(ReactorStream stream, long required, boolean interruptible, boolean timed, long nanos)
            throws InterruptedException {
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        // Counts are complete only when coalescing (the user counts raw-stream work then): only
        // then does an earlier proof answer for this event without asking the driver.
        checks.checkMayBlock(stream); // first: a kernel may run before its own launch is counted
        if (coalesced != null && stream.isKnownComplete(required) && !state.isClosed() && !stream.isClosed()) {
            counters.increment(Counter.IMMEDIATE);
            counters.increment(Counter.COMPLETIONS);
            return true;
        }
        boolean poll = timed && nanos <= 0; // "is it done?": ask the driver, whatever the hint says
        if (checks.precheck(stream, !poll) == StreamState.IDLE) {
            return true;
        }
        if (poll) {
            return false;
        }
        // Null unless a JFR recording has io.cudaloom.SlowAwait enabled: no allocation otherwise.
        // Begun before the clock starts, so that the event spans the whole wait (a timed one's
        // deadline included), however long beginning it took (the first one adds JFR hooks).
        SlowAwaitEvent slow = ReactorEvents.beginAwait();
        long start = System.nanoTime();
        AwaitListener.Outcome outcome = AwaitListener.Outcome.FAILED; // unless decided below
        Waiter waiter = Waiter.current(); // this thread's record, reused by every await
        int inside = waiters.incrementAndGet();
        try {
            boolean completed = register(waiter, stream, required, interruptible, timed, timed ? start + nanos : 0L, inside);
            if (completed) {
                stream.completedThrough(required); // a normal return proves the event's work done
            }
            outcome = completed ? AwaitListener.Outcome.COMPLETED : AwaitListener.Outcome.TIMEOUT;
            return completed;
        } catch (InterruptedException | GpuFaultException | ReactorClosedException e) {
            outcome = ReactorEvents.awaitOutcome(e);
            throw e;
        } finally {
            waiters.decrementAndGet();
            long now = System.nanoTime();
            // The spin's guide is when the work was seen done (the delivery or the waiter's own
            // look at its flag), not when this thread got to run again: a late wake-up must not
            // teach the next wait to sleep longer.
            long landed = waiter.landedAt();
            stream.record().recordWait((landed != 0L && landed - start > 0 && landed - now <= 0 ? landed : now) - start);
            latency.record(now - start);
            if (outcome == AwaitListener.Outcome.TIMEOUT) {
                counters.increment(Counter.TIMEOUTS);
            }
            // The path says what happened to this await (Waiter#path); the relative threshold too.
            if (slow != null && slow.endAwait(deviceName, stream, waiter.path, ReactorEvents.eventOutcome(outcome))
                    && latency.isSlow(System.nanoTime() - start)) {
                slow.commit(); // here, not in endAwait: the event's stack trace starts at the await
            }
            // Last: after every counter of this await (a listener reading stats() sees it counted),
            // its histogram record, and the JFR event's end (which a slow listener must not lengthen).
            latency.ended(now - start, outcome);
        }
    }

    /**
     * Registers and waits; the path taken is left in {@link Waiter#path} ({@link SlowAwaitEvent#PARKED}
     * unless the wait says otherwise: here, or in {@link CoalescedWait#await}).
     */
    private boolean register(Waiter waiter, ReactorStream stream, long required, boolean interruptible, boolean timed,
            long deadline, int inside) throws InterruptedException {
        waiter.reset();
        // NO_SPIN, SPIN (0) or a predicted wait to sleep through and spin at its end (SpinPolicy).
        long spin = spinPolicy.decide(stream.record().recentWaitNanos(), inside, table.armedCount());
        if (coalesced != null) { // the path: coalesced only if this await shared a write (CoalescedWait)
            return coalesced.await(stream, required, waiter, spin, interruptible, timed, deadline);
        }
        long ticket = registrar.tryArm(stream, waiter);
        FallbackRegistration fallback = null;
        if (!Registrar.armed(ticket)) {
            waiter.path = SlowAwaitEvent.FALLBACK;
            fallback = registrar.registerFallback(stream, waiter, FallbackReason.of(ticket));
            ticket = fallback.ticket;
        } else if (spin != SpinPolicy.NO_SPIN && spinOnOwnFlag(waiter, ticket, spin, interruptible, timed, deadline)) {
            waiter.path = SlowAwaitEvent.INLINE;
            return true;
        }
        return parkUntilDelivered(waiter, ticket, fallback, interruptible, timed, deadline);
    }

    /**
     * Bounded spin on the waiter's own flag; true if the work completed and the waiter withdrew its
     * payload (so this thread is not unparked later; the scanner still retires and recycles the
     * slot). The flag read may be stale (our slot already retired, recycled and re-armed by someone
     * else): then the withdrawal fails, because the payload is no longer ours, and the delivery we
     * were owed is waited for as usual. See SlotTable ordering 8.
     *
     * <p>A failed withdrawal means the scanner has taken our payload and is delivering it now; the
     * waiter spins on that delivery for a while ({@link #awaitImminentDelivery}), then parks if it
     * has not come, and the scanner's unpark (made after its volatile store of the ticket,
     * SlotTable ordering 9) wakes it.
     */
    private boolean spinOnOwnFlag(Waiter waiter, long ticket, long predicted, boolean interruptible, boolean timed,
            long deadline) {
        long end = sleepThroughPrediction(waiter, ticket, predicted, interruptible, timed, deadline);
        // Counted as watching only now, while it spins: asleep, it would see its flag only when it
        // wakes, and a scanner deferring to it would leave a kernel that landed early, or a sleep
        // that overran, to that late look (measured on the H200: docs/BENCHMARKS.md, sixth pass).
        preWake.watch(); // after the arm: this thread looks at its own armed flag (PreWake#watching)
        try {
            return watchOwnFlag(waiter, ticket, end, interruptible);
        } finally {
            preWake.unwatch();
        }
    }

    private boolean watchOwnFlag(Waiter waiter, long ticket, long end, boolean interruptible) {
        while (!waiter.isDelivered(ticket)) {
            if (table.flagSet(ticket)) {
                if (table.cancel(ticket, waiter)) {
                    waiter.landed();
                    counters.increment(Counter.INLINE_COMPLETIONS);
                    counters.increment(Counter.COMPLETIONS);
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
        return false; // delivered: parkUntilDelivered returns at once
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
     * How a waiter spins ({@link #spinOnOwnFlag}, {@link #spinOnGroupFlag}): for the policy's
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
            // parkUntilDelivered does, the status is cleared before each park (one that comes
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
     * The spin of a waiter that armed a shared group's write itself ({@link CoalescedWait}): as
     * {@link #spinOnOwnFlag}, but on seeing the flag it withdraws the group's payload and, if that
     * succeeds (the scanner has not taken it), delivers the group on this thread, its own
     * membership included; either way the membership is then delivered or about to be. True if
     * this thread delivered the group (the await's path is then {@code inline}).
     */
    @Override
    public boolean spinOnGroupFlag(Waiter waiter, long memberTicket, long slotTicket, Completion payload, long predicted,
            boolean interruptible, boolean timed, long deadline) {
        long end = sleepThroughPrediction(waiter, memberTicket, predicted, interruptible, timed, deadline);
        preWake.watch(); // after the group's arm and the sleep: it looks at the group's flag now (see spinOnOwnFlag)
        try {
            return watchGroupFlag(waiter, memberTicket, slotTicket, payload, end, interruptible);
        } finally {
            preWake.unwatch();
        }
    }

    private boolean watchGroupFlag(Waiter waiter, long memberTicket, long slotTicket, Completion payload, long end,
            boolean interruptible) {
        while (!waiter.isDelivered(memberTicket)) {
            if (table.flagSet(slotTicket)) {
                if (table.cancel(slotTicket, payload)) {
                    counters.increment(Counter.INLINE_COMPLETIONS);
                    payload.complete(slotTicket, null); // the scanner retires the slot, and records its proof
                    return true;
                }
                awaitImminentDelivery(waiter, memberTicket, end, interruptible); // the scanner took it
                return false;
            }
            if (System.nanoTime() - end >= 0 || interrupted(interruptible)) {
                return false;
            }
            Thread.onSpinWait();
        }
        return false; // delivered meanwhile: by the scanner (an early landing ended the sleep)
    }

    /**
     * Parks until the registration is delivered (or withdrawn on timeout/interrupt). The wake-up
     * is the completer's unpark, made after its volatile store of the ticket (SlotTable ordering
     * 9), so a park that consumed an earlier, stale permit re-checks, sees the ticket or parks
     * again with that unpark still to come. Spurious returns are re-checked by the loop. The park's
     * blocker is the reactor.
     *
     * @param registration what to withdraw on timeout or interrupt: a fallback or a group
     *     membership; null for the waiter's own slot (withdrawn from the table, no handle)
     */
    @Override
    public boolean parkUntilDelivered(Waiter waiter, long ticket, @Nullable Registration registration,
            boolean interruptible, boolean timed, long deadline) throws InterruptedException {
        boolean interrupted = false;
        while (!waiter.isDelivered(ticket)) {
            if (timed) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    if (counters.abandoned(withdraw(waiter, ticket, registration))) {
                        restoreInterrupt(interrupted);
                        return false;
                    }
                    timed = false; // lost the race to a delivery: it is imminent, wait for it
                    continue;
                }
                LockSupport.parkNanos(parkBlocker, remaining);
            } else {
                LockSupport.park(parkBlocker);
            }
            if (Thread.interrupted()) {
                if (interruptible && !interrupted && counters.abandoned(withdraw(waiter, ticket, registration))) {
                    throw new InterruptedException();
                }
                interrupted = true; // delivery imminent (or uninterruptible): finish, then re-assert
            }
        }
        if (registration != null) {
            WaitGroup.relayOf(registration); // a group member wakes its part of the group first
        }
        restoreInterrupt(interrupted);
        RuntimeException failure = waiter.failure();
        if (failure != null) {
            if (failure instanceof GpuFaultException) {
                counters.increment(Counter.FAULTS);
            }
            throw Failures.anew(failure); // thrown anew, so the stack trace is the waiter's
        }
        counters.increment(Counter.COMPLETIONS);
        return true;
    }

    private boolean withdraw(Waiter waiter, long ticket, @Nullable Registration registration) {
        return registration != null ? registration.cancel() : table.cancel(ticket, waiter);
    }

    private static void restoreInterrupt(boolean interrupted) {
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
