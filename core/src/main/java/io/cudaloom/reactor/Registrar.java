package io.cudaloom.reactor;

import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.JfrEvents;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamState;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Arming and fallback: how a registration (a parked waiter, a coalesced group, a callback) gets the
 * device to tell the reactor that the stream's work is done. With slots (the
 * {@link io.cudaloom.CompletionStrategy#REACTOR} strategy) it arms a slot ({@link #arm}: claim, reset the flag,
 * enqueue the device's flag write, publish) and falls back to a host callback when no slot is free or
 * the write is refused; without ({@link io.cudaloom.CompletionStrategy#HOST_CALLBACK}) it always takes the
 * host callback. The choice is made once, at construction ({@code useSlots}).
 *
 * <p>Both paths pair with {@link io.cudaloom.CompletionReactor#close()} as a Dekker pair: the registrant makes a
 * volatile write (the slot's active bit, a read-modify-write; or the fallback set's insertion) and
 * then reads the reactor's state; close writes the state, fences, and then reads the bits and the
 * fallback set. At least one sees the other, so a registration either is failed by close or sees
 * the reactor closed and withdraws itself.
 */
public final class Registrar implements FallbackRegistration.Owner {
    private final LifecycleState state;
    /** Unparks the scanner (and counts it): on the idle-to-active transitions below. */
    private final Runnable wakeScanner;
    private final SlotTable<Completion> table;
    private final FlagMemory flagMemory;
    /** The counters this part increments, handed over once (as BlockingWait's; SharedCounters.adder). */
    private final LongAdder flagWrites, registrations, fallbackCount, faults;
    private final boolean useSlots;
    /**
     * The stream each slot was armed on. Written by the registrant before {@link SlotTable#publish}
     * (published with the payload by the active bit); read by the consumer for fault probes and
     * quarantine. Not cleared on retirement (that would race the next claim); the next use
     * overwrites it. Null only for a slot never armed, which the consumer never visits.
     */
    private final @Nullable ReactorStream[] slotStream;

    private final Set<FallbackRegistration> fallbacks = ConcurrentHashMap.newKeySet();
    /** Outstanding fallbacks; its 0-to-1 transition wakes the scanner, which probes their streams. */
    private final AtomicLong fallbackOutstanding = new AtomicLong();

    /**
     * @param useSlots whether registrations arm slots ({@link io.cudaloom.CompletionStrategy#REACTOR}), or
     *     always take a host callback ({@link io.cudaloom.CompletionStrategy#HOST_CALLBACK})
     */
    public Registrar(LifecycleState state, Runnable wakeScanner, SlotTable<Completion> table, FlagMemory flagMemory,
            SharedCounters counters, boolean useSlots) {
        this.state = state;
        this.wakeScanner = wakeScanner;
        this.table = table;
        this.flagMemory = flagMemory;
        this.flagWrites = counters.adder(Counter.FLAG_WRITES);
        this.registrations = counters.adder(Counter.REGISTRATIONS);
        this.fallbackCount = counters.adder(Counter.FALLBACKS);
        this.faults = counters.adder(Counter.FAULTS);
        this.useSlots = useSlots;
        this.slotStream = new ReactorStream[table.capacity()];
    }

    /*
     * Registering takes two calls, so that the common case allocates nothing: tryArm, and when it
     * returns no ticket, registerFallback with the reason its answer encodes
     * (FallbackReason.of(answer); the encoding is FallbackReason's). Both throw
     * ReactorClosedException if the reactor closed while registering; registerFallback throws
     * GpuFaultException (the stream faulted) or IllegalStateException (refused for another reason)
     * when the stream refuses the callback too.
     */

    /**
     * Whether {@link #tryArm}'s answer is a ticket (never negative); if not, it is a
     * {@link FallbackReason#answer()}, the reason to fall back ({@link FallbackReason#of}).
     */
    public static boolean armed(long answer) {
        return answer >= 0;
    }

    boolean usesSlots() {
        return useSlots;
    }

    /**
     * Claim, reset, enqueue the device write, publish. Returns the ticket, or, when the caller must
     * fall back, why, as {@link FallbackReason#answer()}: {@link FallbackReason#HOST_CALLBACK_STRATEGY},
     * {@link FallbackReason#POOL_EXHAUSTED} or {@link FallbackReason#WRITE_REFUSED} (the device
     * refused the write). {@link #armed} tells which.
     */
    long tryArm(ReactorStream stream, Completion completion) {
        return tryArm(stream, completion, true);
    }

    /** {@link #tryArm(ReactorStream, Completion)}; {@code counted} is false for a tracker, which is no registration. */
    public long tryArm(ReactorStream stream, Completion completion, boolean counted) {
        if (!useSlots) {
            return FallbackReason.HOST_CALLBACK_STRATEGY.answer();
        }
        long ticket = table.claim();
        if (ticket == SlotTable.NO_SLOT) {
            return FallbackReason.POOL_EXHAUSTED.answer();
        }
        int slot = SlotTable.slotOf(ticket);
        table.resetFlag(ticket); // before the device write: a stale 0 must not land after its 1
        long proof = stream.submissionCount(); // before the enqueue: every entry counted is ahead of the write
        boolean enqueued;
        try {
            enqueued = stream.enqueueFlagWrite(flagMemory, slot);
        } catch (RuntimeException e) {
            table.release(ticket);
            throw e;
        }
        if (!enqueued) {
            table.release(ticket);
            return FallbackReason.WRITE_REFUSED.answer();
        }
        slotStream[slot] = stream; // published to the consumer by publish's bit update
        stream.enqueuedProof(proof);
        flagWrites.increment();
        if (counted) {
            registrations.increment();
        }
        if (table.publish(ticket, completion)) {
            wakeScanner.run(); // idle-to-active: the bit's read-modify-write came first
        }
        // Dekker with close() (class comment): our bit is written; now read the state.
        if (state.isClosed() && table.cancel(ticket, completion)) {
            throw state.closedFailure();
        }
        return ticket;
    }

    /**
     * Serves {@code completion} by a host callback on the stream; {@code reason} is why
     * ({@link FallbackReason#of} of what {@link #tryArm} answered instead of a ticket). A fault
     * found here is thrown, and counted as a faulted await or callback (ReactorStats.faults) for the
     * caller whose outcome it is.
     */
    FallbackRegistration registerFallback(ReactorStream stream, Completion completion, FallbackReason reason) {
        return registerFallback(stream, completion, reason, true);
    }

    /**
     * As {@link #registerFallback(ReactorStream, Completion, FallbackReason)}; {@code countFault} false
     * where the fault thrown is not an outcome of its own: a shared write's (each member counts the
     * fault it is delivered) or a tracker's (no one waits for it).
     */
    public FallbackRegistration registerFallback(ReactorStream stream, Completion completion, FallbackReason reason,
            boolean countFault) {
        FallbackRegistration fb = new FallbackRegistration(this, stream, Waiter.syntheticTicket(), completion,
                stream.submissionCount()); // before the enqueue: the callback's proof
        fallbacks.add(fb);
        if (fallbackOutstanding.getAndIncrement() == 0) {
            wakeScanner.run(); // so it probes this stream for faults
        }
        boolean enqueued;
        RuntimeException refusal = null;
        try {
            enqueued = stream.enqueueHostCallback(fb);
        } catch (RuntimeException e) {
            enqueued = false;
            refusal = e;
        }
        if (enqueued) {
            stream.enqueuedProof(fb.proof);
            fallbackCount.increment(); // only now: a refused callback is no fallback (it is an error)
            if (JfrEvents.fallbackEnabled()) { // asked first: the event's values are gathered only for a recording
                JfrEvents.fallback(stream.deviceName(), stream, reason.eventReason);
            }
        } else if (fb.cancel()) {
            if (stream.queryState() == StreamState.FAULTED) {
                if (countFault) {
                    faults.increment();
                }
                throw stream.faults().neverCompletes();
            }
            IllegalStateException e = new IllegalStateException(
                    "stream " + stream + " refused both the flag write and the host callback");
            if (refusal != null) {
                e.initCause(refusal);
            }
            throw e;
        }
        // Dekker with close() (class comment): the set insertion above is a volatile write.
        if (state.isClosed() && fb.cancel()) {
            throw state.closedFailure();
        }
        return fb;
    }

    @Override
    public void fallbackFinished(FallbackRegistration fb) {
        fallbacks.remove(fb);
        fallbackOutstanding.decrementAndGet();
    }

    // ---- for the scanner ----------------------------------------------------------------------

    /**
     * The stream of a slot the consumer saw armed or holds in quarantine: written by its registrant
     * before the publish whose bit the consumer observed, so never null here.
     */
    ReactorStream streamOf(int slot) {
        ReactorStream stream = slotStream[slot];
        if (stream == null) {
            throw new AssertionError("slot " + slot + " is armed or quarantined but was never armed on a stream");
        }
        return stream;
    }

    @Nullable ReactorStream slotStream(int slot) {
        return slotStream[slot];
    }

    boolean fallbacksOutstanding() {
        return fallbackOutstanding.get() != 0;
    }

    void forEachFallbackStream(Consumer<ReactorStream> action) {
        for (FallbackRegistration fb : fallbacks) {
            action.accept(fb.stream);
        }
    }

    /**
     * Completes the fallbacks of {@code stream} (all of them if null) with {@code failure}; returns
     * how many this call completed (not those a host callback or withdrawal took first).
     */
    int failFallbacks(@Nullable ReactorStream stream, RuntimeException failure) {
        int failed = 0;
        for (FallbackRegistration fb : fallbacks) {
            if ((stream == null || fb.stream == stream) && fb.complete(failure)) {
                failed++;
            }
        }
        return failed;
    }
}
