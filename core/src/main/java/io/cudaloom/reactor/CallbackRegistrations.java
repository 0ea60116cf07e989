package io.cudaloom.reactor;

import io.cudaloom.GpuFaultException;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.StreamState;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Non-blocking registration: what futures and callbacks register instead of a parked thread; and
 * what becomes of a user's callback that throws ({@link #callbackThrew}).
 */
public final class CallbackRegistrations {
    /** The library's logger (named, not referenced: this part names no API class). */
    private static final System.Logger LOG = System.getLogger("io.cudaloom");

    private final BlockingWait.Checks checks;
    private final SlotTable<Completion> table;
    private final Registrar registrar;
    /** The counters this part increments, handed over once (as BlockingWait's; SharedCounters.adder). */
    private final LongAdder completions, faults, abandoned, callbackErrors;

    public CallbackRegistrations(BlockingWait.Checks checks, SlotTable<Completion> table, Registrar registrar,
            SharedCounters counters) {
        this.checks = checks;
        this.table = table;
        this.registrar = registrar;
        this.completions = counters.adder(Counter.COMPLETIONS);
        this.faults = counters.adder(Counter.FAULTS);
        this.abandoned = counters.adder(Counter.ABANDONED);
        this.callbackErrors = counters.adder(Counter.CALLBACK_ERRORS);
    }

    /**
     * Non-blocking registration of {@link io.cudaloom.GpuEvent#subscribe} (and through it
     * {@link io.cudaloom.GpuEvent#onComplete}) and {@link io.cudaloom.GpuEvent#toCompletableFuture}: either {@code onDone} runs exactly once (possibly before this
     * returns, on this thread; else on the scanner, a host-callback or the closing thread), or this
     * throws and {@code onDone} never runs.
     *
     * <p>Withdrawal ({@link Registration#cancel}) races delivery on one cell, exactly as a timed-out
     * await does: the slot's payload (SlotTable ordering 6: compare-and-set against the consumer's
     * get-and-set) or the fallback's target (compare-and-set against get-and-set), so exactly one
     * side wins. The {@code Completion} below is a new object per registration, which is what makes
     * the compare-and-set sound ({@link SlotTable#cancel}): it can never match the payload of a later
     * registration that reuses the slot. A withdrawn slot stays armed until its device write lands,
     * then the scanner retires it with a null payload and recycles it.
     *
     * @throws io.cudaloom.ReactorClosedException if this reactor is closed
     * @throws IllegalStateException if the stream is closed, or refuses both the flag write and the
     *     host callback
     */
    public Registration register(ReactorStream stream, Consumer<@Nullable RuntimeException> onDone) {
        StreamState state;
        try {
            state = checks.precheck(stream, false);
        } catch (GpuFaultException e) {
            onDone.accept(e); // a fault is an outcome, reported through onDone
            return Registration.DELIVERED;
        }
        if (state == StreamState.IDLE) {
            onDone.accept(null);
            return Registration.DELIVERED;
        }
        Completion completion = (ticket, failure) -> {
            if (failure == null) {
                completions.increment();
            } else if (failure instanceof GpuFaultException) {
                faults.increment();
            }
            onDone.accept(failure);
        };
        long ticket = registrar.tryArm(stream, completion);
        if (Registrar.armed(ticket)) {
            return () -> BlockingWait.countIf(abandoned, table.cancel(ticket, completion));
        }
        FallbackRegistration fb;
        try {
            fb = registrar.registerFallback(stream, completion, FallbackReason.of(ticket));
        } catch (GpuFaultException e) {
            // The stream faulted after the check above (the registrar counted it): report it the
            // way a fault seen by that check is reported, through onDone.
            onDone.accept(e);
            return Registration.DELIVERED;
        }
        return () -> BlockingWait.countIf(abandoned, fb.cancel());
    }

    /**
     * A user's completion callback ({@link io.cudaloom.GpuEvent#subscribe}'s {@code onDone}, and so
     * {@link io.cudaloom.GpuEvent#onComplete}'s) threw {@code thrown}, on whatever thread ran it (the caller's,
     * the scanner, a host callback, an executor's): the task that ran it caught it and calls this,
     * as Netty contains a listener that throws and as {@code CompletableFuture} captures a stage's
     * exception. Logged
     * once here, at WARNING with the stack trace, then counted
     * ({@link Counter#CALLBACK_ERRORS}: a reader that sees the count also finds the record); never
     * rethrown, so it reaches neither the registrant, the scanner's loop, the other callbacks of
     * the delivery, nor the thread's uncaught-exception handler. Never throws: a logger that fails
     * is ignored.
     */
    public void callbackThrew(ReactorStream stream, Throwable thrown) {
        try {
            LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: a completion callback for " + stream + " of "
                    + stream.deviceName() + " threw " + thrown + " on thread " + Thread.currentThread().getName()
                    + "; ignored (counted in ReactorStats.callbackErrors)", thrown);
        } catch (Throwable logFailed) {
            // the count below still tells; a failing logger must not take the delivering thread down
        }
        callbackErrors.increment();
    }
}
