package io.cudaloom;

import io.cudaloom.protocol.SlotTable;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The completion reactor of one {@link GpuDevice}: a {@link SlotTable} over the device's flag
 * memory and one scanner platform thread that wakes waiters whose flags the device has written.
 *
 * <h2>Await</h2>
 * {@link GpuEvent#await()} comes here: if the stream is already idle it returns at once; otherwise
 * it claims a slot, resets its flag, has the stream write 1 into it behind the work already
 * submitted, publishes its thread's {@link Waiter}, wakes the scanner if the table went from idle
 * to active, optionally spins briefly on its own flag, and parks until its own ticket is delivered.
 * With no slot free, or the flag write refused, it completes through a host callback instead.
 *
 * <h2>Non-blocking registration</h2>
 * {@link GpuEvent#toCompletableFuture} and {@link GpuEvent#onComplete} take the same path with a
 * callback as the payload instead of a parked thread ({@link #register}). A cancelled future
 * withdraws its registration the way a timed-out await does: the payload (or fallback target) is
 * taken back with a compare-and-set that races the consumer's get-and-set, so it is either
 * delivered or withdrawn, never both; the slot stays armed until the device's write lands.
 * Completions never throw into the thread that runs them ({@link Scanner#completeGuarded}).
 *
 * <h2>Scanner</h2>
 * Scans the armed slots with plain acquire loads (no driver call on this path) and completes every
 * retired payload outside any lock. It parks when nothing is armed (a registration unparks it only
 * on the idle-to-active transition); while something is armed it spins for
 * {@link ReactorConfig#scannerSpinNanos()} after the last retirement, then parks for 1/8 of the time
 * waited so far, within the configured bounds, so a long wait costs a bounded, small share of a core.
 * At most once per {@link ReactorConfig#faultProbeIntervalNanos()} it queries the streams of slots
 * still pending: a faulted stream's waiters are woken with a {@link GpuFaultException}, and its slots
 * are quarantined until no write into them can land.
 *
 * <h2>Close</h2>
 * {@link #close()} wakes every waiter with a {@link ReactorClosedException}, stops the scanner,
 * and frees the flag memory only once every slot is accounted for and no device write into it can
 * still land (at once if nothing is in flight, else from a short-lived reclaimer thread).
 */
public final class CompletionReactor implements AutoCloseable {
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final VarHandle LAST_GROUP;
    private static final VarHandle STATE;
    /** Lifecycle: open; closed to new work (close() ran, or the scanner died of an Error); memory freed. */
    private static final int OPEN = 0;
    private static final int CLOSED = 1;
    private static final int RELEASED = 2;

    static {
        try {
            LAST_GROUP = MethodHandles.lookup().findVarHandle(GpuStream.class, "lastGroup", WaitGroup.class);
            STATE = MethodHandles.lookup().findVarHandle(CompletionReactor.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final GpuDevice device;
    private final ReactorConfig config;
    private final FlagMemory flagMemory;
    private final SlotTable<Completion> table;
    /**
     * The stream each slot was armed on. Written by the registrant before {@link SlotTable#publish}
     * (published with the payload by the active bit); read by the consumer for fault probes and
     * quarantine. Not cleared on retirement (that would race the next claim); the next use overwrites it.
     * Null only for a slot never armed, which the consumer never visits ({@link #streamOf}).
     */
    private final @Nullable GpuStream[] slotStream;
    private final Scanner scanner;
    private final Thread scannerThread;
    private final Executor callbackExecutor;

    /**
     * {@link #OPEN}, {@link #CLOSED} or {@link #RELEASED}; leaves OPEN by one compare-and-set, so
     * exactly one closer finishes the shutdown. Registrants re-check it after publishing (see
     * {@link #arm}); the scanner loop runs while it is OPEN.
     */
    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    /** The Error that stopped the scanner, if that is what closed the reactor; written before STATE. */
    private volatile @Nullable Throwable stopCause;

    private final Set<FallbackRegistration> fallbacks = ConcurrentHashMap.newKeySet();
    /** Outstanding fallbacks; its 0-to-1 transition wakes the scanner, which probes their streams. */
    private final AtomicLong fallbackOutstanding = new AtomicLong();
    private final AtomicLong fallbackSeq = new AtomicLong();

    private final LongAdder registrations = new LongAdder();
    private final LongAdder completions = new LongAdder();
    private final LongAdder inlineCompletions = new LongAdder();
    private final LongAdder immediate = new LongAdder();
    private final LongAdder fallbackCount = new LongAdder();
    private final LongAdder abandoned = new LongAdder();
    private final LongAdder faults = new LongAdder();
    private final LongAdder scannerUnparks = new LongAdder();
    private final LongAdder coalesced = new LongAdder();

    CompletionReactor(GpuDevice device, ReactorConfig config) {
        this.device = Objects.requireNonNull(device, "device");
        this.config = Objects.requireNonNull(config, "config");
        int capacity = config.capacity();
        this.flagMemory = Objects.requireNonNull(device.allocateFlags(capacity), "flag memory");
        if (flagMemory.flags().length() < capacity) {
            flagMemory.release().run();
            throw new IllegalStateException("device " + device.name() + " allocated "
                    + flagMemory.flags().length() + " flags, " + capacity + " requested");
        }
        this.table = new SlotTable<>(capacity, flagMemory.flags());
        this.slotStream = new GpuStream[capacity];
        this.scanner = new Scanner(this, table, config);
        int id = IDS.incrementAndGet();
        // The reactor's threads serve every user of the device: like the JDK's poller threads they
        // inherit no inheritable thread-locals and no context class loader from whoever opened it.
        ThreadFactory callbacks = Thread.ofVirtual().name("cuda-loom-callback-" + id + "-", 0)
                .inheritInheritableThreadLocals(false).factory();
        this.callbackExecutor = task -> {
            Thread t = callbacks.newThread(task);
            t.setContextClassLoader(ClassLoader.getSystemClassLoader());
            t.start();
        };
        this.scannerThread = systemThread("cuda-loom-scanner-" + id + " (" + device.name() + ")", scanner);
        scannerThread.start();
    }

    private static Thread systemThread(String name, Runnable task) {
        Thread t = Thread.ofPlatform().name(name).daemon(true).inheritInheritableThreadLocals(false).unstarted(task);
        t.setContextClassLoader(ClassLoader.getSystemClassLoader());
        return t;
    }

    public GpuDevice device() {
        return device;
    }

    public ReactorConfig config() {
        return config;
    }

    /** The scanner thread (for diagnostics and tests). */
    public Thread scannerThread() {
        return scannerThread;
    }

    /** Runs completion callbacks of {@link GpuEvent#toCompletableFuture()}: a virtual thread each. */
    public Executor callbackExecutor() {
        return callbackExecutor;
    }

    public boolean isClosed() {
        return state != OPEN;
    }

    /** True once the flag memory has been freed (after {@link #close()}, when nothing can land). */
    public boolean isMemoryReleased() {
        return state == RELEASED;
    }

    /**
     * An event for the work submitted to {@code stream} so far.
     *
     * @throws IllegalArgumentException if the stream belongs to another device
     * @throws IllegalStateException if the stream is closed
     * @throws ReactorClosedException if this reactor is closed
     */
    public GpuEvent event(GpuStream stream) {
        Objects.requireNonNull(stream, "stream");
        checkOpen();
        if (stream.device() != device) {
            throw new IllegalArgumentException("stream " + stream + " belongs to device "
                    + stream.device().name() + ", not to this reactor's device " + device.name());
        }
        if (stream.isClosed()) {
            throw new IllegalStateException("stream " + stream + " is closed");
        }
        return new GpuEvent(this, stream);
    }

    public ReactorStats stats() {
        return new ReactorStats(
                table.capacity(),
                table.armedCount(),
                table.freeCount(),
                registrations.sum(),
                completions.sum(),
                inlineCompletions.sum(),
                immediate.sum(),
                fallbackCount.sum(),
                abandoned.sum(),
                faults.sum(),
                scanner.count(Scanner.PARKS),
                scanner.count(Scanner.TIMED_PARKS),
                scannerUnparks.sum(),
                scanner.count(Scanner.PASSES),
                scanner.count(Scanner.PROBES),
                (int) scanner.count(Scanner.QUARANTINED),
                coalesced.sum(),
                scanner.count(Scanner.ERRORS));
    }

    // ---- await --------------------------------------------------------------------------------

    /** Blocking wait of {@link GpuEvent}; returns false only when timed and the time ran out. */
    boolean await(GpuStream stream, long required, boolean interruptible, boolean timed, long nanos)
            throws InterruptedException {
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        checkOpen();
        if (stream.isClosed()) {
            throw new IllegalStateException("stream " + stream + " is closed");
        }
        long deadline = timed ? System.nanoTime() + nanos : 0L;
        StreamState state = stream.queryState();
        if (state == StreamState.IDLE) {
            immediate.increment();
            completions.increment();
            return true;
        }
        if (state == StreamState.FAULTED) {
            faults.increment();
            throw faultOf(stream);
        }
        if (timed && nanos <= 0) {
            return false;
        }
        Waiter waiter = Waiter.current();
        waiter.reset();
        if (config.coalesce() && config.strategy() == CompletionStrategy.REACTOR) {
            return awaitCoalesced(stream, required, waiter, interruptible, timed, deadline);
        }
        // Spin only while few waiters are armed: on a busy reactor the carrier is better used by
        // other virtual threads, and the scanner is awake anyway.
        boolean spin = config.waiterSpinNanos() > 0 && table.armedCount() < config.waiterSpinMaxArmed();
        long ticket = config.strategy() == CompletionStrategy.REACTOR ? arm(stream, waiter) : SlotTable.NO_SLOT;
        FallbackRegistration fallback = null;
        if (ticket == SlotTable.NO_SLOT) {
            fallback = registerFallback(stream, waiter);
            ticket = fallback.ticket;
        } else if (spin && spinOnOwnFlag(waiter, ticket)) {
            return true;
        }
        return parkUntilDelivered(waiter, ticket, fallback, interruptible, timed, deadline);
    }

    /**
     * The coalescing await ({@link ReactorConfig#coalesce()}): join the stream's newest
     * {@link WaitGroup} if its flag write covers the work this waiter needs, else install a new
     * group (compare-and-set, so racing waiters end up in one) and arm it. See WaitGroup for why
     * {@code covered >= required} is enough. The group is installed before it is armed, so waiters
     * arriving meanwhile join it; its count was read before, so its write still covers them.
     */
    private boolean awaitCoalesced(GpuStream stream, long required, Waiter waiter, boolean interruptible,
            boolean timed, long deadline) throws InterruptedException {
        WaitGroup.Member member = new WaitGroup.Member(waiter, syntheticTicket());
        for (;;) {
            WaitGroup group = (WaitGroup) LAST_GROUP.getVolatile(stream);
            if (group != null && group.covered >= required) {
                if (group.join(member)) {
                    coalesced.increment();
                    return parkUntilDelivered(waiter, member.ticket, member, interruptible, timed, deadline);
                }
                if (group.deliveredFailure() == null) { // delivered: the work it covers, ours too, is done
                    completions.increment();
                    return true;
                }
                // A failed group (fault, close) says nothing about later ones: check afresh.
                checkOpen();
                if (stream.queryState() == StreamState.FAULTED) {
                    faults.increment();
                    throw faultOf(stream);
                }
            }
            // The count is read before the flag write is enqueued: everything counted is ahead of it.
            WaitGroup fresh = new WaitGroup(stream.submissionCount());
            fresh.join(member);
            if (LAST_GROUP.compareAndSet(stream, group, fresh)) {
                armGroup(stream, fresh);
                return parkUntilDelivered(waiter, member.ticket, member, interruptible, timed, deadline);
            }
            member = new WaitGroup.Member(waiter, syntheticTicket()); // lost the race: try theirs
        }
    }

    /** Arm an installed group: a slot, else a host callback; on failure every member gets the error. */
    private void armGroup(GpuStream stream, WaitGroup group) {
        try {
            if (arm(stream, group) == SlotTable.NO_SLOT) {
                registerFallback(stream, group);
            }
        } catch (RuntimeException e) {
            group.complete(0L, e); // members that already joined must not wait for a write never enqueued
        }
    }

    private long syntheticTicket() {
        return Long.MIN_VALUE + fallbackSeq.incrementAndGet(); // never Waiter.NONE, never a slot ticket
    }

    /**
     * A non-blocking registration, as {@link CompletionReactor#register} returns it:
     * {@link #withdraw} takes it back (a cancelled future) unless its delivery has already begun.
     */
    @FunctionalInterface
    interface Registration {
        /** Nothing to withdraw: the outcome was delivered during {@link CompletionReactor#register} itself. */
        Registration DELIVERED = () -> false;

        /**
         * Withdraws the registration: true if {@code onDone} will now never run (counted in
         * {@link ReactorStats#abandoned()}); false if it has run or is running. Non-blocking,
         * idempotent, callable from any thread.
         */
        boolean withdraw();
    }

    /**
     * Non-blocking registration of {@link GpuEvent#toCompletableFuture} and
     * {@link GpuEvent#onComplete}: either {@code onDone} runs exactly once (possibly before this
     * returns, on this thread; else on the scanner, a host-callback or the closing thread), or this
     * throws and {@code onDone} never runs.
     *
     * <p>Withdrawal ({@link Registration#withdraw}) races delivery on one cell, exactly as a timed-out
     * await does: the slot's payload (SlotTable ordering 6: compare-and-set against the consumer's
     * get-and-set) or the fallback's target (compare-and-set against get-and-set), so exactly one
     * side wins. The {@code Completion} below is a new object per registration, which is what makes
     * the compare-and-set sound ({@link SlotTable#cancel}): it can never match the payload of a later
     * registration that reuses the slot. A withdrawn slot stays armed until its device write lands,
     * then the scanner retires it with a null payload and recycles it.
     *
     * @throws ReactorClosedException if this reactor is closed
     * @throws IllegalStateException if the stream is closed, or refuses both the flag write and the
     *     host callback
     */
    Registration register(GpuStream stream, Consumer<@Nullable RuntimeException> onDone) {
        checkOpen();
        if (stream.isClosed()) {
            throw new IllegalStateException("stream " + stream + " is closed");
        }
        StreamState state = stream.queryState();
        if (state == StreamState.IDLE) {
            immediate.increment();
            completions.increment();
            onDone.accept(null);
            return Registration.DELIVERED;
        }
        if (state == StreamState.FAULTED) {
            faults.increment();
            onDone.accept(faultOf(stream));
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
        long ticket = config.strategy() == CompletionStrategy.REACTOR ? arm(stream, completion) : SlotTable.NO_SLOT;
        if (ticket != SlotTable.NO_SLOT) {
            return () -> countAbandoned(table.cancel(ticket, completion));
        }
        FallbackRegistration fallback;
        try {
            fallback = registerFallback(stream, completion);
        } catch (GpuFaultException e) {
            // The stream faulted after the query above (registerFallback counted it): report it
            // the way a fault seen by that query is reported, through onDone.
            onDone.accept(e);
            return Registration.DELIVERED;
        }
        return () -> countAbandoned(fallback.cancel(completion));
    }

    private boolean countAbandoned(boolean withdrawn) {
        if (withdrawn) {
            abandoned.increment();
        }
        return withdrawn;
    }

    /**
     * Claim, reset, enqueue the device write, publish. Returns the ticket, or NO_SLOT when the
     * caller must fall back (no slot free, or the device refused the write).
     */
    private long arm(GpuStream stream, Completion completion) {
        long ticket = table.claim();
        if (ticket == SlotTable.NO_SLOT) {
            return SlotTable.NO_SLOT;
        }
        int slot = SlotTable.slotOf(ticket);
        table.resetFlag(ticket); // before the device write: a stale 0 must not land after its 1
        boolean enqueued;
        try {
            enqueued = stream.enqueueFlagWrite(flagMemory, slot);
        } catch (RuntimeException e) {
            table.release(ticket);
            throw e;
        }
        if (!enqueued) {
            table.release(ticket);
            return SlotTable.NO_SLOT;
        }
        slotStream[slot] = stream; // published to the consumer by publish's bit update
        registrations.increment();
        if (table.publish(ticket, completion)) {
            wakeScanner();
        }
        // Dekker with close(): close writes the state then reads the bits; we wrote our bit (a
        // volatile read-modify-write) and now read the state. At least one of us sees the other:
        // either close() drains our slot and delivers the closed failure, or we see `closed` here.
        if (isClosed() && table.cancel(ticket, completion)) {
            throw closedFailure();
        }
        return ticket;
    }

    private FallbackRegistration registerFallback(GpuStream stream, Completion completion) {
        FallbackRegistration fb = new FallbackRegistration(
                this, stream, syntheticTicket(), completion);
        fallbacks.add(fb);
        if (fallbackOutstanding.getAndIncrement() == 0) {
            LockSupport.unpark(scannerThread); // so it probes this stream for faults
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
            fallbackCount.increment(); // only now: a refused callback is no fallback (it is an error)
        } else if (fb.cancel(completion)) {
            if (stream.queryState() == StreamState.FAULTED) {
                faults.increment();
                throw faultOf(stream);
            }
            IllegalStateException e = new IllegalStateException(
                    "stream " + stream + " refused both the flag write and the host callback");
            if (refusal != null) {
                e.initCause(refusal);
            }
            throw e;
        }
        // Same Dekker pairing as in arm(): the set insertion above is a volatile write.
        if (isClosed() && fb.cancel(completion)) {
            throw closedFailure();
        }
        return fb;
    }

    void fallbackFinished(FallbackRegistration fb) {
        fallbacks.remove(fb);
        fallbackOutstanding.decrementAndGet();
    }

    private void wakeScanner() {
        scannerUnparks.increment();
        LockSupport.unpark(scannerThread);
    }

    /**
     * Bounded spin on the waiter's own flag; true if the work completed and the waiter withdrew its
     * payload (so this thread is not unparked later; the scanner still retires and recycles the
     * slot). The flag read may be stale (our slot already retired, recycled and re-armed by someone
     * else): then the withdrawal fails, because the payload is no longer ours, and the delivery we
     * were owed is waited for as usual. See SlotTable ordering 8.
     *
     * <p>A failed withdrawal means the scanner has taken our payload and is delivering it now; the
     * waiter then parks, and the scanner's unpark (made after its volatile store of the ticket,
     * SlotTable ordering 9) wakes it.
     */
    private boolean spinOnOwnFlag(Waiter waiter, long ticket) {
        long end = System.nanoTime() + config.waiterSpinNanos();
        while (!waiter.isDelivered(ticket)) {
            if (table.flagSet(ticket)) {
                if (table.cancel(ticket, waiter)) {
                    inlineCompletions.increment();
                    completions.increment();
                    return true;
                }
                return false; // the scanner took the payload: its delivery and unpark follow
            }
            if (System.nanoTime() - end >= 0) {
                return false;
            }
            Thread.onSpinWait();
        }
        return false; // delivered: parkUntilDelivered returns at once
    }

    /**
     * Parks until the registration is delivered (or withdrawn on timeout/interrupt). The wake-up
     * is the completer's unpark, made after its volatile store of the ticket (SlotTable ordering
     * 9), so a park that consumed an earlier, stale permit re-checks, sees the ticket or parks
     * again with that unpark still to come. Spurious returns are re-checked by the loop.
     */
    boolean parkUntilDelivered(Waiter waiter, long ticket, @Nullable Withdrawable registration,
            boolean interruptible, boolean timed, long deadline) throws InterruptedException {
        boolean interrupted = false;
        while (!waiter.isDelivered(ticket)) {
            if (timed) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    if (withdraw(waiter, ticket, registration)) {
                        abandoned.increment();
                        restoreInterrupt(interrupted);
                        return false;
                    }
                    timed = false; // lost the race to a delivery: it is imminent, wait for it
                    continue;
                }
                LockSupport.parkNanos(this, remaining);
            } else {
                LockSupport.park(this);
            }
            if (Thread.interrupted()) {
                if (interruptible && !interrupted && withdraw(waiter, ticket, registration)) {
                    abandoned.increment();
                    throw new InterruptedException();
                }
                interrupted = true; // delivery imminent (or uninterruptible): finish, then re-assert
            }
        }
        restoreInterrupt(interrupted);
        RuntimeException failure = waiter.failure();
        if (failure != null) {
            // Thrown anew, so the stack trace is the waiter's; the delivered ones always have a message.
            String message = Objects.requireNonNullElse(failure.getMessage(), failure.toString());
            if (failure instanceof GpuFaultException) {
                faults.increment();
                throw new GpuFaultException(message, failure);
            }
            if (failure instanceof ReactorClosedException) {
                throw new ReactorClosedException(message, failure);
            }
            throw new IllegalStateException(message, failure); // e.g. a shared registration refused
        }
        completions.increment();
        return true;
    }

    /** Take back a registration: a fallback or group membership, else (null) the waiter's own slot. */
    private boolean withdraw(Waiter waiter, long ticket, @Nullable Withdrawable registration) {
        return registration != null ? registration.withdraw(waiter) : table.cancel(ticket, waiter);
    }

    private static void restoreInterrupt(boolean interrupted) {
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- for the scanner ------------------------------------------------------------------------

    /**
     * The stream of a slot the consumer saw armed or holds in quarantine: written by its registrant
     * before the publish whose bit the consumer observed, so never null here.
     */
    GpuStream streamOf(int slot) {
        GpuStream stream = slotStream[slot];
        if (stream == null) {
            throw new AssertionError("slot " + slot + " is armed or quarantined but was never armed on a stream");
        }
        return stream;
    }

    @Nullable GpuStream slotStream(int slot) {
        return slotStream[slot];
    }

    boolean fallbacksOutstanding() {
        return fallbackOutstanding.get() != 0;
    }

    void forEachFallbackStream(Consumer<GpuStream> action) {
        for (FallbackRegistration fb : fallbacks) {
            action.accept(fb.stream);
        }
    }

    /** Completes the fallbacks of {@code stream} (all of them if null) with {@code failure}. */
    void failFallbacks(@Nullable GpuStream stream, RuntimeException failure) {
        for (FallbackRegistration fb : fallbacks) {
            if (stream == null || fb.stream == stream) {
                fb.complete(failure);
            }
        }
    }

    GpuFaultException faultOf(GpuStream stream) {
        return faultOf(stream, stream.faultDescription());
    }

    GpuFaultException faultOf(GpuStream stream, String description) {
        return new GpuFaultException("GPU work on " + stream + " of " + device.name()
                + " can never complete: " + description);
    }

    private ReactorClosedException closedFailure() {
        Throwable cause = stopCause;
        if (cause != null) {
            return new ReactorClosedException("the completion reactor of " + device.name()
                    + " stopped: its scanner failed with " + cause, cause);
        }
        return new ReactorClosedException("the completion reactor of " + device.name() + " is closed");
    }

    private void checkOpen() {
        if (state != OPEN) {
            throw closedFailure();
        }
    }

    // ---- close --------------------------------------------------------------------------------

    /**
     * Wakes every waiter with a {@link ReactorClosedException}, stops the scanner and frees the flag
     * memory once no device write into it can land. Later awaits throw the same exception.
     * Idempotent; returns without waiting for GPU work.
     *
     * <p>Called on the scanner thread itself (by a callback run there through a direct executor), it
     * only stops the scanner: the scanner finishes the delivery it is in, leaves its loop and then
     * wakes the rest. Running the shutdown right there would re-enter the delivery in progress (its
     * batch delivered twice) and, once a reclaimer took over, leave two consumers at once.
     */
    @Override
    public void close() {
        if (!beginClose()) {
            return;
        }
        if (Thread.currentThread() == scannerThread) {
            scanner.finishCloseOnExit(); // the scanner finishes it when it leaves its loop
            return;
        }
        boolean interrupted = false;
        while (true) {
            try {
                scannerThread.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        restoreInterrupt(interrupted);
        // The scanner has stopped (join: happens-before): this thread is now the consumer.
        finishClose();
    }

    /**
     * OPEN to CLOSED, once: true for the caller that did it (who must then see the shutdown
     * through). Registrants that publish from now on see it (Dekker, see {@link #arm}).
     */
    private boolean beginClose() {
        if (!STATE.compareAndSet(this, OPEN, CLOSED)) {
            return false;
        }
        // The Dekker pairing with arm()/registerFallback() needs this write ordered before the
        // consumer's later reads of the active bits and the fallback set (reclaimStep). Those are
        // acquire loads, and a volatile write is ordered only before later volatile loads: the
        // fence gives the store-load order for them too. The unpark follows a volatile write
        // (SlotTable ordering 9); on the scanner itself it leaves a permit, so it does not park.
        VarHandle.fullFence();
        LockSupport.unpark(scannerThread);
        return true;
    }

    /**
     * Called on the scanner after an {@link Error} in its loop: closes the reactor with the error
     * as the cause. True if this closed it (the scanner then finishes the shutdown itself).
     */
    boolean closeAfterScannerError(Error error) {
        stopCause = error; // before the state change that publishes it
        return beginClose();
    }

    /** Shutdown as the consumer: one reclaim step now, the rest (if any) on a reclaimer thread. */
    void finishClose() {
        if (!reclaimStep()) {
            systemThread(scannerThread.getName().replace("scanner", "reclaimer"), () -> {
                // Streams settle within milliseconds, unless dead or a backend keeps failing:
                // then look again less and less often (at most once a second).
                for (long pause = 1_000_000L; !reclaimStep(); pause = Math.min(pause << 1, 1_000_000_000L)) {
                    LockSupport.parkNanos(this, pause);
                }
            }).start();
        }
    }

    private boolean reclaimStep() {
        if (!scanner.reclaimStep(closedFailure())) {
            return false;
        }
        state = RELEASED;
        flagMemory.release().run();
        return true;
    }

    @Override
    public String toString() {
        return "CompletionReactor[" + device.name() + ", " + config.strategy() + (isClosed() ? ", closed]" : "]");
    }
}
