package io.cudaloom.reactor;

import io.cudaloom.spi.StreamState;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The one registration a stream's {@link io.cudaloom.GpuStream#close()} leaves behind, so that events taken
 * before the close can still be awaited for the work they stand for: registered with the reactor
 * like any {@link io.cudaloom.GpuEvent#subscribe} (a slot and a flag write, or a host callback) while the
 * stream still takes flag writes, and completed when that write lands, or failed
 * ({@link io.cudaloom.GpuFaultException}, {@link io.cudaloom.ReactorClosedException} when the device closes first,
 * {@link IllegalStateException} if the stream refused it). Once the stream is closed, every await
 * and registration of its events is served here instead of by a registration of its own (the
 * backend takes none any more).
 *
 * <h2>What it covers</h2>
 * {@link #covered} is the stream's submission count read before registering. A submission is
 * counted only after its driver call returned ({@link io.cudaloom.GpuStream#submissionCount()}), so the first
 * {@code covered} submissions are in stream order before the drain's flag write (or host callback),
 * and its completion proves them done. An event with {@code required <= covered} stands for no
 * other counted work, so the drain serves it; an event taken while the stream was closing may need
 * work the drain does not cover, and is refused. Uncounted work enqueued on the raw stream handle
 * before {@code close()} was called is covered too (the write follows it in stream order), which
 * is all such work that an event taken before the close can stand for. That is also why the close
 * asks the driver even when the counts say the stream is idle: without coalescing such work may be
 * uncounted. An idle answer completes the drain at once, with no registration (nothing counted in
 * the reactor's stats); a busy or faulted one registers (a fault then fails the drain).
 *
 * <h2>Access modes</h2>
 * <ol>
 * <li><b>The drain itself</b> is published by the compare-and-set of the stream's drain
 *     ({@code ReactorStream.drain}, by {@link ReactorStream#close()}) from null (a volatile write)
 *     and read by volatile loads of that field ({@link ReactorStream#isClosed()},
 *     {@link ReactorStream#drain()}; {@link io.cudaloom.GpuStream#isClosed()} reads it there). Everything the closing
 *     thread did before the compare-and-set (reading {@link #covered}, registering, the backend's
 *     enqueue of the flag write) happens-before whatever a thread that read the drain does with
 *     it. The backend stops taking flag writes and host callbacks only once {@code isClosed()} is
 *     true and in {@code StreamBackend.shutdown()}, both after the compare-and-set in the closing
 *     thread's program order: the close never refuses its own drain's write.
 * <li><b>The outcome</b> is written once, by whichever thread delivers the registration (the
 *     scanner, a host-callback thread, the closing thread of the device, or the stream's closing
 *     thread itself when the outcome was known at once): on success it first raises
 *     the stream's proof ({@link ReactorStream#completedThrough(long)}) to {@link #covered} (a volatile compare-and-set), then
 *     completes {@link #outcome} (a compare-and-set of the future's result field). Readers see it
 *     through the future's volatile reads of that field ({@code isDone}) or as its dependents,
 *     which the future runs after the result was written. That is enough: the delivering thread
 *     read the device's flag with acquire (SlotTable ordering 5) or runs after the stream's work (a
 *     host callback), so the device's results, the proof and the outcome are all visible to a
 *     reader that saw the result. A blocking waiter is enlisted as a dependent
 *     ({@link #enlist}) and parked on its own {@link Waiter}: the dependent stores its ticket with a
 *     volatile write and then unparks it (SlotTable ordering 9), so no wake-up is lost.
 * <li><b>A subscription</b> is one {@link AtomicReference} cell holding the delivery: the drain's
 *     completion takes it with a get-and-set, {@link io.cudaloom.Subscription#cancel()} with another,
 *     so exactly one of them gets it (as a slot's payload is taken by the scanner's get-and-set or
 *     withdrawn by a compare-and-set, SlotTable ordering 6).
 * </ol>
 * Nothing waits in {@link CompletableFuture#get()} (a thread there helps run the future's
 * dependents): a subscriber's executor is called by the delivering thread (or, once the outcome is
 * known, by the subscribing thread), never by an unrelated waiter, and a blocking wait is a
 * registration in the one wait's loop ({@link BlockingWait#acquire}), not a second blocking wait.
 *
 * <p>Not counted in {@link io.cudaloom.ReactorStats} beyond the drain's own registration: the waits and
 * subscriptions it serves arm nothing, so their completions, timeouts and cancellations are not
 * counted. A blocking wait it serves is timed for JFR like any other ({@link io.cudaloom.reactor.metrics.SlowAwaitEvent}, path
 * {@value SlowAwaitEvent#DRAIN}).
 *
 * <h2>The backend's release</h2>
 * Once the close has published the drain and the backend has shut down ({@link #published()}),
 * and the drain has completed without failure, its work is done: the backend is told so
 * ({@code StreamBackend.drained()}), once, by whichever of the two steps comes second (one
 * get-and-add on {@link #steps} each, so exactly one of them sees the other's bit), and may
 * release the stream. A drain that failed (a fault, the device's close) leaves the stream to the
 * device's close.
 *
 * <p>Never throws for the close: a backend whose query throws is taken as busy (the registration
 * then reports what the backend does), and what its shutdown or release hook throws is logged.
 */
public final class StreamDrain {
    /** The public stream's logger (named, not referenced: this part names no API class). */
    private static final System.Logger LOG = System.getLogger("io.cudaloom.GpuStream");
    /** {@link #steps}: the close published this drain (after the backend's shutdown). */
    private static final int PUBLISHED = 1;
    /** {@link #steps}: the drain completed without failure. */
    private static final int SUCCEEDED = 2;

    /** The stream's submission count when the drain was registered: the events it serves need no more. */
    public final long covered;
    private final Stream stream;
    /**
     * Completed with the outcome; the subscriptions and the blocking waits' enlistments depend on it,
     * nothing waits on it (a blocking wait parks on its own Waiter, {@link BlockingWait#acquire}).
     */
    private final CompletableFuture<@Nullable Void> outcome = new CompletableFuture<>();
    /** {@link #PUBLISHED} and {@link #SUCCEEDED}, each added once: the second tells the backend. */
    private final AtomicInteger steps = new AtomicInteger();

    private StreamDrain(Stream stream, long covered) {
        this.stream = stream;
        this.covered = covered;
    }

    /**
     * Registers a drain for the work submitted to {@code stream} so far. Never throws for the
     * registration itself: a refusal (a closed reactor, a stream that refused both the flag write
     * and the host callback) becomes the drain's outcome. The stream must still take flag writes.
     */
    public static StreamDrain register(Stream stream) {
        StreamDrain drain = new StreamDrain(stream, stream.submissionCount()); // before the query and the flag write
        StreamState state;
        try {
            state = stream.queryState();
        } catch (RuntimeException e) {
            state = StreamState.BUSY; // not known: register, and the registration reports what the backend does
        }
        if (state == StreamState.IDLE) {
            // Done already (the query covers the counted work and any raw work before it): no
            // registration, so an idle stream's close leaves nothing in the reactor's stats.
            drain.complete(null);
            return drain;
        }
        try {
            // Never withdrawn: the registration ends when its write lands, or when it is failed.
            stream.registerCompletion(drain::complete);
        } catch (RuntimeException refused) {
            drain.complete(refused); // the registration's callback will never run
        }
        return drain;
    }

    /**
     * The close's last step, after its compare-and-set published this drain and the backend shut
     * down: if the drain has already succeeded, the backend may release the stream now.
     */
    public void published() {
        if (steps.getAndAdd(PUBLISHED) == SUCCEEDED) {
            drained();
        }
    }

    /** The backend's shutdown, for the close: what it throws is logged, since close() never throws. */
    public static void shutDown(Stream stream, Runnable shutdown) {
        try {
            shutdown.run();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cuda-loom: the backend failed to shut down " + stream
                    + " of " + stream.deviceName() + " on close(); its resources may leak", e);
        }
    }

    private void drained() {
        try {
            stream.drained();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cuda-loom: the backend failed to release " + stream
                    + " of " + stream.deviceName() + " after its work was done", e);
        }
    }

    /** The registration's callback: called once, on the delivering thread (see the class comment, 2). */
    private void complete(@Nullable RuntimeException failure) {
        if (failure == null) {
            stream.completedThrough(covered); // a proof, as any await that returned normally
            outcome.complete(null);
            if (steps.getAndAdd(SUCCEEDED) == PUBLISHED) {
                drained();
            }
        } else {
            outcome.completeExceptionally(failure);
        }
    }

    /** Whether the outcome is known (no wait, no device query). */
    boolean isSettled() {
        return outcome.isDone();
    }

    /** The failure of a settled drain, null if it succeeded; read only once {@link #isSettled()}. */
    @Nullable RuntimeException failure() {
        return failureOf(outcome);
    }

    /**
     * A blocking wait's registration on this drain ({@link BlockingWait#acquire}, drain mode): the
     * waiter's record is delivered {@code ticket} and the outcome ({@link Waiter#complete}: the
     * volatile ticket store, then the unpark, SlotTable ordering 9) by the thread that completes the
     * drain, after the outcome's result was written; at once, on this thread, if it is known now.
     * The waiter parks on its own record, as on a slot; the returned registration withdraws it on
     * timeout or interrupt (one get-and-set against the delivery's, access mode 3).
     */
    Registration enlist(Waiter waiter, long ticket) {
        return subscribe(failure -> waiter.complete(ticket, failure));
    }

    /**
     * Hands {@code deliver} the outcome (null on success) once it is known: at once, on this
     * thread, if it is known now (then whatever {@code deliver} throws reaches the caller), else on
     * the delivering thread, which reports what {@code deliver} throws to its uncaught-exception
     * handler (as {@code Waiter.deliverGuarded} does). The returned registration withdraws it
     * (not counted in ReactorStats); {@link Registration#DELIVERED} if the outcome was handed over
     * at once.
     */
    public Registration subscribe(Consumer<@Nullable RuntimeException> deliver) {
        if (outcome.isDone()) {
            deliver.accept(failureOf(outcome));
            return Registration.DELIVERED;
        }
        AtomicReference<@Nullable Consumer<@Nullable RuntimeException>> cell = new AtomicReference<>(deliver);
        outcome.whenComplete((ignored, thrown) -> {
            Consumer<@Nullable RuntimeException> taken = cell.getAndSet(null);
            if (taken != null) {
                try {
                    taken.accept(thrown == null ? null : runtime(thrown));
                } catch (Throwable t) {
                    Thread self = Thread.currentThread();
                    self.getUncaughtExceptionHandler().uncaughtException(self, t);
                }
            }
        });
        return () -> cell.getAndSet(null) != null;
    }

    private static @Nullable RuntimeException failureOf(CompletableFuture<?> done) {
        return done.isCompletedExceptionally() ? runtime(done.exceptionNow()) : null;
    }

    /** The drain is only ever failed with a RuntimeException (see {@link #register}). */
    private static RuntimeException runtime(Throwable t) {
        Throwable cause = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
        return cause instanceof RuntimeException r ? r : new IllegalStateException(cause);
    }

    /**
     * What a drain asks of its stream ({@link ReactorStream} implements it): its count, its state, a
     * registration for its work so far, its proof, the backend's release, and names for messages.
     */
    interface Stream {
        long submissionCount();

        StreamState queryState();

        Registration registerCompletion(Consumer<@Nullable RuntimeException> onDone);

        void completedThrough(long count);

        void drained();

        String deviceName();
    }

    @Override
    public String toString() {
        return "StreamDrain[" + stream + ", covers " + covered + (isSettled() ? ", settled]" : "]");
    }
}
