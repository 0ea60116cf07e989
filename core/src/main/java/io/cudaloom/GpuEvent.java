package io.cudaloom;

import io.cudaloom.reactor.BlockingWait;
import io.cudaloom.reactor.ReactorStream;
import io.cudaloom.reactor.Registration;
import io.cudaloom.reactor.StreamDrain;
import io.cudaloom.spi.StreamState;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jetbrains.annotations.Blocking;
import org.jspecify.annotations.Nullable;

/**
 * Stands for all work submitted to a {@link GpuStream} before the event was taken
 * ({@link GpuStream#event()}). Awaiting it may also wait for work submitted to that stream later,
 * never for less.
 *
 * <p>{@link #await()} parks the calling thread, virtual or platform, until the work is done; while
 * parked it costs no platform thread and no spinning core: one scanner thread per reactor watches
 * completion flags that the device writes into pinned host memory. Conventions follow
 * {@code java.util.concurrent}: interruptible {@link #await()}, timed {@link #await(Duration)}
 * returning whether the work completed, and {@link #awaitUninterruptibly()}.
 *
 * <p>The awaits block the calling thread: annotated {@code @org.jetbrains.annotations.Blocking},
 * so IntelliJ flags a call in a Kotlin suspend function ("Possibly blocking call in non-blocking
 * context"). A coroutine calls {@code awaitSuspending()} ({@code io.cudaloom.kotlin}) instead;
 * a Kotlin extension cannot be named {@code await}, since the member would always win.
 *
 * <p>An event may be awaited any number of times, from any threads; once one await has completed,
 * later ones return at once.
 *
 * <p>Without parking a thread: {@link #subscribe} (a callback on an executor, with a handle that
 * withdraws it), {@link #onComplete} and {@link #toCompletableFuture}, all served by the same
 * reactor and slots. From Kotlin coroutines, {@code awaitSuspending()} (in
 * {@code io.cudaloom.kotlin}) suspends on {@link #subscribe}.
 *
 * <p>Failures: {@link GpuFaultException} if the stream faulted (the work will never complete),
 * {@link ReactorClosedException} if the device was closed.
 *
 * <p><b>After the stream's close.</b> An event taken before {@link GpuStream#close()} can still
 * be awaited, blocking or not, for the work it stands for: the close leaves one registration behind
 * (its <em>drain</em>, covering all work submitted before the close), and every form waits on that
 * with the same conventions and outcomes. Only an event taken while the stream was being closed
 * (on another thread), which may stand for work the close does not cover, is refused with
 * {@link IllegalStateException}. These waits arm nothing of their own, so {@link ReactorStats}
 * counts only the close's registration (a timeout or a cancel there is not counted as abandoned).
 */
public final class GpuEvent {
    /**
     * The one handle of a subscription whose outcome was known while subscribing (a done event, an
     * idle stream, a fault, a closed device, a settled drain): nothing to withdraw, so
     * {@code cancel()} is always false. The reactor's {@code Registration.DELIVERED}, as the API
     * hands it out; compared by identity.
     */
    static final Subscription DELIVERED = () -> false;

    private final CompletionReactor reactor;
    /** The reactor's one blocking wait, which every await of this event calls directly. */
    private final BlockingWait wait;
    private final GpuStream stream;
    /** The reactor's object for the stream ({@code GpuStream.owner()}), which the await hands to the parts. */
    private final ReactorStream owner;
    /** The device's count of what it handed out: an await is a wait in progress until it returns. */
    private final ResourceLedger ledger;
    /** The stream's submission count when the event was taken: the work this event stands for. */
    private final long required;
    /**
     * Set once the work is known done (an await returned, a delivery succeeded, or
     * {@link #isDone()} saw a proof or an idle stream); later awaits and {@link #isDone()} return
     * at once. Volatile: whoever reads it true also sees what the setter saw (the device's results
     * behind the proof).
     */
    private volatile boolean done;

    GpuEvent(CompletionReactor reactor, GpuStream stream) {
        this.reactor = reactor;
        this.wait = reactor.blockingWait();
        this.stream = stream;
        this.owner = stream.owner();
        this.ledger = stream.device().ledger;
        this.required = stream.required();
    }

    public GpuStream stream() {
        return stream;
    }

    /**
     * Whether the work this event stands for is done, awaited or not: once true, every await
     * returns at once and the work's results are there. Never blocks and never throws.
     *
     * <p>Where the reactor already knows, no driver call is made: an await or a successful
     * callback of this event, or a proof that covers it (a flag write that landed, an earlier idle
     * answer; trusted only when waiters are coalesced, the default, since only then is raw-stream
     * work counted: {@link ReactorConfig.Builder#coalesce}). Otherwise one query of the stream's
     * state ({@code cuStreamQuery} on CUDA, about a microsecond); an idle answer is recorded as the
     * proof of the stream's work, so {@link GpuStream#workInFlight()} and
     * {@link ReactorStats#workInFlight()} fall with it. A poll is not an await: nothing is counted.
     *
     * <p>Unlike {@link java.util.concurrent.Future#isDone()}, work that failed is not done: an
     * event has no {@code get()} that would throw, and its results are read from memory, so true
     * always means the results are there. After a fault of the stream, or once the device is
     * closed, it stays false and an await throws ({@link GpuFaultException},
     * {@link ReactorClosedException}). A poll that must end on those too polls
     * {@code await(Duration.ZERO)}, which returns whether the work is done and throws them.
     *
     * <p>The query answers for the stream, not for this event alone: a poll
     * ({@code while (!e.isDone())}) ends once the stream is idle, but on a stream that later work
     * keeps busy it may stay false after this event's own work is done, until a proof covers it.
     * To be told as soon as the work is done, use {@link #subscribe}, {@link #onComplete} or
     * {@link #toCompletableFuture}, or await. On a host-callback thread, where CUDA allows no
     * driver call, it answers from what is known without a query.
     */
    public boolean isDone() {
        if (done) {
            return true;
        }
        if (knownComplete()) {
            done = true;
            return true;
        }
        // The stream's state now (open or closed: a closed stream's backend still answers queries);
        // none once the device is closed (null), and FAULTED is work that will never be done.
        if (reactor.checks().query(stream.owner()) == StreamState.IDLE) {
            done = true; // everything submitted before the query is done, this event's work included
            return true;
        }
        return false;
    }

    /**
     * Waits until the work is done, parking the calling thread (a virtual thread's carrier is
     * freed). Blocking: in a Kotlin coroutine call {@code awaitSuspending()} instead.
     *
     * @throws InterruptedException if interrupted before or while waiting, also when the work is
     *     already done (as {@code CountDownLatch.await}); the interrupt status is cleared
     * @throws GpuFaultException if the stream faulted
     * @throws ReactorClosedException if the device was closed
     * @throws IllegalStateException if called on a thread of the reactor itself (its scanner, or a
     *     completion callback run there), which would stall every waiter of the device; or if the
     *     event was taken while its stream was being closed (see the class comment)
     */
    @Blocking
    public void await() throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (!done) {
            awaitWork(true, false, 0L);
            done = true;
        }
    }

    /**
     * Waits until the work is done or the timeout elapses, with {@code java.util.concurrent}'s
     * conventions: a zero or negative timeout does not wait (it answers whether the work is done),
     * and a timeout too long to count in nanoseconds (about 292 years) waits as long as that.
     *
     * @return true if the work completed, false if the timeout elapsed first
     * @throws InterruptedException if interrupted before or while waiting
     */
    @Blocking
    public boolean await(Duration timeout) throws InterruptedException {
        Objects.requireNonNull(timeout, "timeout");
        return awaitNanos(saturatedNanos(timeout));
    }

    /**
     * Waits until the work is done or the timeout elapses; conventions as {@link #await(Duration)}.
     *
     * @return true if the work completed, false if the timeout elapsed first
     * @throws InterruptedException if interrupted before or while waiting
     */
    @Blocking
    public boolean await(long timeout, TimeUnit unit) throws InterruptedException {
        Objects.requireNonNull(unit, "unit");
        return awaitNanos(unit.toNanos(timeout)); // toNanos saturates
    }

    /** Waits until the work is done, ignoring interrupts (the interrupt status is kept). */
    @Blocking
    public void awaitUninterruptibly() {
        if (!done) {
            try {
                awaitWork(false, false, 0L);
            } catch (InterruptedException e) {
                throw new AssertionError("uninterruptible await was interrupted", e);
            }
            done = true;
        }
    }

    /**
     * A future completed when the work is done (exceptionally with {@link GpuFaultException} or
     * {@link ReactorClosedException}), served by the same reactor and slots as {@link #await()} but
     * parking no thread at all. Dependent stages run on {@code executor}, never on the scanner.
     *
     * <p>Non-blocking in its failures too: on a closed reactor it returns a future already completed
     * exceptionally with {@link ReactorClosedException}, and a fault is reported through the future.
     * Only bad arguments and misuse throw at once.
     *
     * <p>Cancelling the future (as a cancelled Kotlin coroutine does from {@code await()}), or
     * completing it by any other means (e.g. {@link CompletableFuture#orTimeout}), withdraws the
     * registration, as a timed-out {@link #await(Duration)} does: the GPU work goes on, but its
     * completion is no longer delivered (nothing runs on {@code executor}); it is counted in
     * {@link ReactorStats#abandoned()}. A slot it held is recycled once the device's write lands.
     *
     * @throws NullPointerException if {@code executor} is null
     * @throws IllegalStateException if the event was taken while its stream was being closed (see
     *     the class comment)
     */
    public CompletableFuture<@Nullable Void> toCompletableFuture(Executor executor) {
        Objects.requireNonNull(executor, "executor");
        CompletableFuture<@Nullable Void> future = new CompletableFuture<>();
        if (done) {
            future.complete(null);
            return future;
        }
        Subscription registration;
        try {
            registration = register(delivery(executor, failure -> {
                if (failure == null) {
                    future.complete(null);
                } else {
                    future.completeExceptionally(failure);
                }
            }));
        } catch (ReactorClosedException closed) {
            future.completeExceptionally(closed); // register threw: its callback will never run
            return future;
        }
        if (registration != DELIVERED) {
            // Runs once the future completes, whoever completes it. After our own delivery the
            // payload is already taken, so the withdrawal fails and counts nothing; after a cancel
            // (or any other completion by the caller) it succeeds unless delivery won the race.
            future.whenComplete((ignored, failure) -> registration.cancel());
        }
        return future;
    }

    /**
     * {@link #toCompletableFuture(Executor)} with the reactor's default callback executor.
     *
     * @throws IllegalStateException if the event was taken while its stream was being closed
     */
    public CompletableFuture<@Nullable Void> toCompletableFuture() {
        return toCompletableFuture(reactor.callbackExecutor());
    }

    /**
     * Runs {@code onDone} on {@code executor} once the work is done, or {@code onError} with the
     * failure ({@link GpuFaultException}, or {@link ReactorClosedException}, also when the reactor
     * is already closed); parks no thread. Exactly one of them runs, once. To be able to withdraw
     * the registration, use {@link #subscribe}.
     *
     * <p>The executor may run them on the reactor's scanner thread (a direct executor such as
     * {@code Runnable::run} does): then they must be short and must never block or await GPU work,
     * or every waiter of the reactor waits with them. Pass a real executor for anything longer.
     * What they throw is logged and counted, never rethrown (see {@link #subscribe}).
     *
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if the event was taken while its stream was being closed
     */
    public void onComplete(Executor executor, Runnable onDone, Consumer<? super RuntimeException> onError) {
        Objects.requireNonNull(onDone, "onDone");
        Objects.requireNonNull(onError, "onError");
        subscribe(executor, failure -> {
            if (failure == null) {
                onDone.run();
            } else {
                onError.accept(failure);
            }
        });
    }

    /**
     * What the reactor runs on delivery of a non-blocking registration: on the scanner, record the
     * proof of completion ({@code ReactorStream#completedThrough}); then, on {@code executor}, mark the
     * event done and hand {@code onDone} the outcome (null on success).
     */
    private Consumer<@Nullable RuntimeException> delivery(Executor executor,
            Consumer<? super @Nullable RuntimeException> onDone) {
        return failure -> {
            if (failure == null) {
                owner.completedThrough(required); // delivered without failure: proven
            }
            executor.execute(task(onDone, failure));
        };
    }

    /**
     * What {@code executor} runs for a subscription: marks the event done on success, then hands
     * {@code onDone} the outcome, containing whatever it throws: logged once and counted
     * ({@link ReactorStats#callbackErrors()}), never rethrown (see {@link #subscribe}).
     */
    private Runnable task(Consumer<? super @Nullable RuntimeException> onDone, @Nullable RuntimeException failure) {
        return () -> {
            if (failure == null) {
                done = true;
            }
            try {
                onDone.accept(failure);
            } catch (Throwable thrown) {
                reactor.callbackThrew(stream, thrown);
            }
        };
    }

    /**
     * The non-blocking primitive beneath the other non-blocking forms: calls {@code onDone} on
     * {@code executor} once the work is done, with {@code null}, or with the failure
     * ({@link GpuFaultException}, or {@link ReactorClosedException}, also when the reactor is
     * already closed). Parks no thread and creates none: {@code onDone} runs as a task of
     * {@code executor}, handed to it by whichever thread delivers the outcome (usually the reactor's
     * scanner thread; the calling thread if the outcome is known at once; a host-callback or the
     * closing thread otherwise). The returned {@link Subscription} withdraws the registration.
     *
     * <p><b>Exactly one outcome.</b> Unless {@link Subscription#cancel()} returns true,
     * {@code onDone} is handed to {@code executor} exactly once. {@code cancel()} and the delivery
     * race on one atomic cell of the reactor (a compare-and-set against the deliverer's
     * get-and-set, as for a timed-out {@link #await(Duration)}), so exactly one of them wins:
     * <ul>
     * <li>{@code cancel()} returns true: the registration is withdrawn and {@code onDone} will
     *     never run, nor will {@code executor} be called for it; counted in
     *     {@link ReactorStats#abandoned()}. The GPU work goes on; a slot it held is recycled once
     *     the device's write lands.</li>
     * <li>{@code cancel()} returns false: the delivery won (or the outcome was known when
     *     subscribing, or the subscription was already cancelled): {@code onDone} has been or is
     *     about to be handed to {@code executor}. It may not have run yet when {@code cancel()}
     *     returns.</li>
     * </ul>
     * A successful delivery happens-before {@code onDone} runs (through the executor's hand-off),
     * and {@link #isDone()} is true in {@code onDone} when it is given {@code null}.
     *
     * <p><b>Where {@code onDone} runs.</b> With a direct executor such as {@code Runnable::run} it
     * runs on the delivering thread, usually the scanner: it must then be short and must never
     * block or await GPU work, or every waiter of the reactor waits with it (an await there throws
     * {@link IllegalStateException}). Handing a task to a queue (a thread pool, or a coroutine
     * dispatcher, as Kotlin's {@code awaitSuspending} does) is short. If {@code executor} throws
     * (e.g. rejects the task), {@code onDone} does not run and the exception is reported to the
     * delivering thread's uncaught-exception handler, or thrown to the caller of this method when
     * the outcome was known at once.
     *
     * <p><b>If {@code onDone} throws.</b> What it throws is contained, as Netty does for a
     * listener that throws and as {@link CompletableFuture#thenRun} captures its action's
     * exception: it is logged once, at WARNING with its stack trace, on the
     * {@link System.Logger} {@code io.cudaloom}, and counted in
     * {@link ReactorStats#callbackErrors()} (also the MXBean's {@code CallbackErrors} and the
     * Micrometer counter {@code cudaloom.callback.errors}); nothing else sees it. It never
     * escapes this method (even when a direct executor runs {@code onDone} here, the outcome being
     * known at once), nor reaches the executor, the scanner or the uncaught-exception handler of
     * the thread that ran it, and the other callbacks of the device are delivered as usual. The
     * same holds for {@link #onComplete}'s {@code onDone} and {@code onError}.
     *
     * @param executor runs {@code onDone}; called at most once per subscription
     * @param onDone given {@code null} on success, else the failure
     * @return the handle that withdraws the registration
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if the event was taken while its stream was being closed (see
     *     the class comment)
     */
    public Subscription subscribe(Executor executor, Consumer<? super @Nullable RuntimeException> onDone) {
        Objects.requireNonNull(executor, "executor");
        Objects.requireNonNull(onDone, "onDone");
        if (done) {
            executor.execute(task(onDone, null));
            return DELIVERED;
        }
        try {
            return register(delivery(executor, onDone));
        } catch (ReactorClosedException closed) {
            executor.execute(task(onDone, closed)); // register threw: its callback never runs
            return DELIVERED;
        }
    }

    // ---- open stream or closed: the reactor, or the stream's drain ---------------------------------

    /**
     * The blocking wait: the one wait of the reactor ({@code BlockingWait.acquire}), which serves a
     * closed stream's events from its drain, routed by the stream's state. Returns false only when
     * timed and the time ran out.
     */
    private boolean awaitWork(boolean interruptible, boolean timed, long nanos) throws InterruptedException {
        return awaitWork(wait, owner, ledger, required, false, interruptible, timed, nanos);
    }

    /**
     * {@link GpuStream#await()}: this class's await for all of the stream's work so far, with no
     * event made (so a loop of launches and awaits allocates nothing), on an open stream only (a
     * closed one throws {@link IllegalStateException}, as its other methods do).
     */
    static void awaitAll(BlockingWait wait, ReactorStream owner, ResourceLedger ledger) throws InterruptedException {
        awaitWork(wait, owner, ledger, owner.required(), true, true, false, 0L);
    }

    /**
     * Every blocking await of an event, or of a stream's work ({@link #awaitAll}): counted as a wait
     * in progress until it returns ({@code LiveResources.Kind.WAIT}), the one call into the reactor's
     * wait in between: an event's routed by the stream's state there (its drain once closed), a
     * stream's ({@code openOnly}) on the open stream only.
     */
    private static boolean awaitWork(BlockingWait wait, ReactorStream owner, ResourceLedger ledger,
            long required, boolean openOnly, boolean interruptible, boolean timed, long nanos)
            throws InterruptedException {
        ledger.awaitBegun();
        try {
            return openOnly ? wait.await(owner, required, interruptible, timed, nanos)
                    : wait.awaitEvent(owner, required, interruptible, timed, nanos);
        } finally {
            ledger.awaitEnded();
        }
    }

    /**
     * The non-blocking registration: the reactor's while the stream is open, else a subscription
     * to the drain, routed by the stream's state (CompletionReactor.registerEvent).
     *
     * @throws ReactorClosedException if the reactor is closed ({@code deliver} will never run)
     * @throws IllegalStateException if the reactor refuses, or the drain does not cover this event
     */
    private Subscription register(Consumer<@Nullable RuntimeException> deliver) {
        // A wait in progress (LiveResources.Kind.WAIT) until delivered, withdrawn or refused.
        ResourceLedger.Lease pending = stream.device().ledger.callbackRegistered();
        Registration s;
        try {
            s = registerCounted(failure -> {
                pending.run();
                deliver.accept(failure);
            });
        } catch (RuntimeException | Error e) {
            pending.run();
            throw e;
        }
        if (s == Registration.DELIVERED) {
            return DELIVERED; // the reactor's "already delivered", as the API hands it out
        }
        return () -> {
            boolean withdrawn = s.cancel();
            if (withdrawn) {
                pending.run();
            }
            return withdrawn;
        };
    }

    private Registration registerCounted(Consumer<@Nullable RuntimeException> deliver) {
        StreamDrain drain = owner.drain(); // the stream's state, read once
        if (drain == null) {
            Registration registered = reactor.registerEvent(stream, deliver);
            if (registered != null) {
                return registered;
            }
            // Closed since that read (the facade read its state): the drain was published before.
            drain = Objects.requireNonNull(owner.drain(), "a closed stream's drain");
        }
        if (reactor.isClosed()) {
            throw reactor.state().closedFailure();
        }
        if (knownComplete()) {
            deliver.accept(null);
            return Registration.DELIVERED;
        }
        checkCovered(drain);
        return drain.subscribe(deliver);
    }

    /**
     * Whether an earlier proof already covers this event, trusted only when waiters are coalesced:
     * only then are the counts complete (raw-stream work is counted by the user), as in
     * {@code BlockingWait}. Otherwise the drain, whose write follows all the stream's work, decides.
     */
    private boolean knownComplete() {
        return reactor.config().coalesce() && owner.isKnownComplete(required);
    }

    /** An event taken while its stream was being closed may need work that the drain does not cover. */
    private void checkCovered(StreamDrain drain) {
        if (required > drain.covered) {
            throw new IllegalStateException("stream " + stream + " is closed: this event was taken while it was"
                    + " closing, after the work the close covers");
        }
    }

    private boolean awaitNanos(long nanos) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (done) {
            return true;
        }
        boolean completed = awaitWork(true, true, Math.max(0L, nanos));
        if (completed) {
            done = true;
        }
        return completed;
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException overflow) {
            return d.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
    }

    @Override
    public String toString() {
        return "GpuEvent[" + stream + (done ? ", done]" : "]");
    }
}
