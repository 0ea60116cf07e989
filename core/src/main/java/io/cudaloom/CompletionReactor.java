package io.cudaloom;

import io.cudaloom.protocol.RetiredBatch;
import io.cudaloom.protocol.SlotTable;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
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
 * Completions never throw into the thread that runs them ({@link #completeGuarded}).
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
    /** The longest timed park of an otherwise idle scanner that still holds quarantined slots. */
    private static final long MAX_QUARANTINE_PARK_NANOS = 100_000_000L;
    private static final java.lang.invoke.VarHandle LAST_GROUP;

    static {
        try {
            LAST_GROUP = java.lang.invoke.MethodHandles.lookup()
                    .findVarHandle(GpuStream.class, "lastGroup", WaitGroup.class);
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
    private final Thread scanner;
    private final Executor callbackExecutor;

    /** Set first by close(); registrants re-check it after publishing (see {@link #arm}). */
    private volatile boolean closed;
    private final AtomicBoolean closing = new AtomicBoolean();
    private volatile boolean stopScanner;
    private volatile boolean memoryReleased;
    /** Set by close() when called on the scanner thread; read by that thread only. */
    private boolean closedOnScanner;

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
    // Written by the consumer only; volatile so stats() sees recent values.
    private volatile long scannerParks;
    private volatile long scannerTimedParks;
    private volatile long scanPasses;
    private volatile long faultProbes;

    // ---- consumer-owned state (scanner thread; after it stops, the closing or reclaimer thread) --
    private final RetiredBatch<Completion> batch;
    private final RetiredBatch<Completion> failBatch;
    /** Slots taken out of service: faulted (until their stream settles) or held by close. */
    private final List<Integer> quarantine = new ArrayList<>();
    /** Free slots taken out of circulation by close(), so no registrant can claim them any more. */
    private int heldFree;
    private volatile int quarantinedCount;
    /** The idle scanner's next timed park while {@link #quarantine} is not empty. */
    private long quarantineParkNanos;
    private final Set<GpuStream> probeStreams = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
    private final IntConsumer collectProbeStream;

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
        this.batch = new RetiredBatch<>(capacity);
        this.failBatch = new RetiredBatch<>(capacity);
        this.collectProbeStream = slot -> probeStreams.add(streamOf(slot));
        this.quarantineParkNanos = firstQuarantineParkNanos();
        int id = IDS.incrementAndGet();
        ThreadFactory callbacks = Thread.ofVirtual().name("cuda-loom-callback-" + id + "-", 0).factory();
        this.callbackExecutor = task -> callbacks.newThread(task).start();
        this.scanner = Thread.ofPlatform()
                .name("cuda-loom-scanner-" + id + " (" + device.name() + ")")
                .daemon(true)
                .unstarted(this::scanLoop);
        scanner.start();
    }

    public GpuDevice device() {
        return device;
    }

    public ReactorConfig config() {
        return config;
    }

    /** The scanner thread (for diagnostics and tests). */
    public Thread scannerThread() {
        return scanner;
    }

    /** Runs completion callbacks of {@link GpuEvent#toCompletableFuture()}: a virtual thread each. */
    public Executor callbackExecutor() {
        return callbackExecutor;
    }

    public boolean isClosed() {
        return closed;
    }

    /** True once the flag memory has been freed (after {@link #close()}, when nothing can land). */
    public boolean isMemoryReleased() {
        return memoryReleased;
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
                scannerParks,
                scannerTimedParks,
                scannerUnparks.sum(),
                scanPasses,
                faultProbes,
                quarantinedCount,
                coalesced.sum());
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
        // Dekker with close(): close writes `closed` then reads the bits; we wrote our bit (a
        // volatile read-modify-write) and now read `closed`. At least one of us sees the other:
        // either close() drains our slot and delivers the closed failure, or we see `closed` here.
        if (closed && table.cancel(ticket, completion)) {
            throw closedFailure();
        }
        return ticket;
    }

    private FallbackRegistration registerFallback(GpuStream stream, Completion completion) {
        FallbackRegistration fb = new FallbackRegistration(
                this, stream, syntheticTicket(), completion);
        fallbacks.add(fb);
        if (fallbackOutstanding.getAndIncrement() == 0) {
            LockSupport.unpark(scanner); // so it probes this stream for faults
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
        if (closed && fb.cancel(completion)) {
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
        LockSupport.unpark(scanner);
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
                throw new ReactorClosedException(message);
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

    // ---- scanner ------------------------------------------------------------------------------

    private void scanLoop() {
        long lastProgress = System.nanoTime();
        long lastProbe = lastProgress;
        while (!stopScanner) {
            table.scanOnce(batch);
            scanPasses++;
            if (!batch.isEmpty()) {
                deliver(batch, null);
                lastProgress = System.nanoTime();
                continue;
            }
            if (table.isIdle() && fallbackOutstanding.get() == 0) {
                // Park gate: the armed count, not this pass's bits. A registration that raced
                // ahead of this check made its volatile read-modify-write of the count, then its
                // unpark (SlotTable orderings 3 and 9): that unpark is our permit, so park
                // returns at once.
                if (quarantine.isEmpty()) {
                    scannerParks++;
                    LockSupport.park(this);
                    quarantineParkNanos = firstQuarantineParkNanos();
                } else {
                    // Nothing armed, but slots of a faulted stream wait for its writes to settle:
                    // nobody else would bring them back, so look again on a timer that doubles
                    // up to MAX_QUARANTINE_PARK_NANOS (a registration still wakes us at once).
                    recycleSettledQuarantine();
                    if (!quarantine.isEmpty()) {
                        scannerTimedParks++;
                        LockSupport.parkNanos(this, quarantineParkNanos);
                        quarantineParkNanos = Math.min(quarantineParkNanos << 1, MAX_QUARANTINE_PARK_NANOS);
                    }
                }
                lastProgress = lastProbe = System.nanoTime();
                continue;
            }
            long now = System.nanoTime();
            if (now - lastProbe >= config.faultProbeIntervalNanos()) {
                probeForFaults();
                lastProbe = now;
            }
            long waited = now - lastProgress;
            if (waited < config.scannerSpinNanos()) {
                Thread.onSpinWait();
                continue;
            }
            long park = Math.max(config.scannerMinParkNanos(), Math.min(config.scannerMaxParkNanos(), waited >>> 3));
            scannerTimedParks++;
            LockSupport.parkNanos(this, park);
        }
        if (closedOnScanner) {
            finishClose(); // close() was called on this thread, by a completion (see close)
        }
    }

    private void deliver(RetiredBatch<Completion> retired, @Nullable RuntimeException failure) {
        for (int i = 0; i < retired.size(); i++) {
            Completion c = retired.payload(i);
            if (c != null) {
                completeGuarded(c, retired.ticket(i), failure);
            }
        }
        retired.clear();
    }

    /**
     * Runs a completion, reporting anything it throws (e.g. a caller's executor that rejects the
     * callback) to the current thread's uncaught-exception handler instead of letting it escape:
     * completions run on the scanner, which serves every waiter, on the closing thread, which must
     * go on waking the others, and on a stream's host-callback thread, where an escaping exception
     * would be taken for a fault of the stream.
     */
    static void completeGuarded(Completion c, long ticket, @Nullable RuntimeException failure) {
        try {
            c.complete(ticket, failure);
        } catch (Throwable t) {
            Thread.UncaughtExceptionHandler h = Thread.currentThread().getUncaughtExceptionHandler();
            h.uncaughtException(Thread.currentThread(), t);
        }
    }

    /** Query the streams of pending slots and fallbacks; fail the waiters of faulted streams. */
    private void probeForFaults() {
        faultProbes++;
        probeStreams.clear();
        table.forEachArmed(true, collectProbeStream);
        for (FallbackRegistration fb : fallbacks) {
            probeStreams.add(fb.stream);
        }
        for (GpuStream stream : probeStreams) {
            if (stream.queryState() == StreamState.FAULTED) {
                failStream(stream);
            }
        }
        probeStreams.clear();
        recycleSettledQuarantine();
    }

    private void failStream(GpuStream stream) {
        GpuFaultException failure = faultOf(stream);
        table.forEachArmed(true, slot -> {
            if (slotStream[slot] == stream && table.failArmed(slot, failBatch)) {
                quarantine.add(slot); // the dead stream's write must not land in a reused slot
            }
        });
        quarantinedCount = quarantine.size();
        deliver(failBatch, failure);
        for (FallbackRegistration fb : fallbacks) {
            if (fb.stream == stream) {
                fb.complete(failure);
            }
        }
    }

    private void recycleSettledQuarantine() {
        if (quarantine.isEmpty() || closed) {
            return;
        }
        quarantine.removeIf(slot -> {
            if (streamOf(slot).flagWritesSettled()) {
                table.recycle(slot);
                return true;
            }
            return false;
        });
        quarantinedCount = quarantine.size();
    }

    /**
     * The stream of a slot the consumer saw armed or holds in quarantine: written by its registrant
     * before the publish whose bit the consumer observed, so never null here.
     */
    private long firstQuarantineParkNanos() {
        return Math.max(100_000L, config.faultProbeIntervalNanos());
    }

    private GpuStream streamOf(int slot) {
        GpuStream stream = slotStream[slot];
        if (stream == null) {
            throw new AssertionError("slot " + slot + " is armed or quarantined but was never armed on a stream");
        }
        return stream;
    }

    private GpuFaultException faultOf(GpuStream stream) {
        return new GpuFaultException("GPU work on " + stream + " of " + device.name()
                + " can never complete: " + stream.faultDescription());
    }

    private ReactorClosedException closedFailure() {
        return new ReactorClosedException("the completion reactor of " + device.name() + " is closed");
    }

    private void checkOpen() {
        if (closed) {
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
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        closed = true; // first: registrants that publish from now on see it (Dekker, see arm)
        // The Dekker pairing with arm()/registerFallback() needs this store ordered before the
        // consumer's later reads of the active bits and the fallback set (reclaimStep). Those are
        // acquire loads, and a volatile store is ordered only before later volatile loads: the
        // fence gives the store-load order for them too.
        VarHandle.fullFence();
        stopScanner = true;
        LockSupport.unpark(scanner); // on the scanner itself: a permit, so it does not park again
        if (Thread.currentThread() == scanner) {
            closedOnScanner = true; // read by this same thread when it leaves scanLoop
            return;
        }
        boolean interrupted = false;
        while (true) {
            try {
                scanner.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        restoreInterrupt(interrupted);
        // The scanner has stopped (join: happens-before): this thread is now the consumer.
        finishClose();
    }

    /** Shutdown as the consumer: one reclaim step now, the rest (if any) on a reclaimer thread. */
    private void finishClose() {
        if (!reclaimStep()) {
            Thread.ofPlatform().name(scanner.getName().replace("scanner", "reclaimer")).daemon(true).start(() -> {
                while (!reclaimStep()) {
                    LockSupport.parkNanos(1_000_000L);
                }
            });
        }
    }

    /**
     * One step of shutdown as the consumer: wake whatever is still registered, take every free slot
     * out of circulation, and free the flag memory once all slots are held here and every stream that
     * was armed has settled. A registrant between claim and publish holds its slot out of our reach;
     * it will publish (then see `closed`) or release it, and a later step collects it.
     */
    private boolean reclaimStep() {
        ReactorClosedException failure = closedFailure();
        table.forEachArmed(false, slot -> {
            if (table.failArmed(slot, failBatch)) {
                quarantine.add(slot);
            }
        });
        deliver(failBatch, failure);
        for (FallbackRegistration fb : fallbacks) {
            fb.complete(failure);
        }
        int held = quarantine.size();
        while (table.claim() != SlotTable.NO_SLOT) {
            held++;
        }
        // Claimed free slots are not kept in `quarantine`: they were never armed since their last
        // retirement, so no write is pending into them.
        heldFree += held - quarantine.size();
        quarantinedCount = quarantine.size();
        if (heldFree + quarantine.size() < table.capacity()) {
            return false;
        }
        for (int slot : quarantine) {
            if (!streamOf(slot).flagWritesSettled()) {
                return false;
            }
        }
        memoryReleased = true;
        flagMemory.release().run();
        return true;
    }

    @Override
    public String toString() {
        return "CompletionReactor[" + device.name() + ", " + config.strategy() + (closed ? ", closed]" : "]");
    }
}
