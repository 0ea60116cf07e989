package io.cudaloom;

import io.cudaloom.protocol.SlotTable;
import io.cudaloom.spi.DeviceBackend;
import io.cudaloom.spi.FlagMemory;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The completion reactor of one {@link GpuDevice}: a table of completion slots over the device's flag
 * memory and one scanner thread that wakes waiters whose flags the device has written. Users read
 * its {@link #stats()}, {@link #awaitLatency()} and {@link #isClosed()}; everything else about it
 * is the library's own.
 *
 * <h2>Close</h2>
 * {@link #close()} wakes every waiter with a {@link ReactorClosedException}, stops the scanner,
 * and frees the flag memory only once every slot is accounted for and no device write into it can
 * still land (at once if nothing is in flight, else from a short-lived reclaimer thread).
 */
public final class CompletionReactor implements ReactorObservability.Observed {
    /*
     * Maintainer's overview (an implementation comment, as in AbstractQueuedSynchronizer: not
     * part of the API). This class is the facade that wires the parts; each concern has its own class.
     *
     * The life of a registration. A waiter (or a callback, or a coalesced group) is
     * registered by the Registrar: a slot is claimed, its flag
     * reset, the device's flag write enqueued behind the stream's work, and the
     * payload published (the active bit; the first publish into an idle table unparks the
     * scanner). Without a free slot, or if the write is refused, a host callback serves it instead
     * (FallbackRegistration). It then ends in exactly one of three ways, each decided by one
     * atomic operation on one cell: retired by the Scanner when the flag reads 1 (its
     * get-and-set takes the payload, the waiter is delivered its ticket and unparked);
     * withdrawn by the registrant on timeout, interrupt, inline completion or a cancelled
     * future or subscription (a compare-and-set on the same cell, which the scanner's get-and-set then finds empty); or
     * failed by the scanner's fault probe or by close (the scanner's failArmed).
     * Finally the slot is recycled (retired slots at once, since the device's write has
     * landed), or quarantined while a write into it might still land (a faulted stream, or
     * close), and recycled or freed once the stream has settled.
     *
     * Who decides. The registrant decides claim, publish and withdrawal; the scanner (the
     * single consumer) decides retirement, failure and recycling; close decides the lifecycle (one
     * compare-and-set from OPEN) and then becomes the consumer after joining the scanner.
     *
     * Access modes. SlotTable's javadoc lists every ordering and where it is enforced. The
     * rules in short: what another thread must see is published by a volatile write or an atomic
     * read-modify-write (the active bit, the delivered ticket, the lifecycle state), and read by an
     * acquire or volatile load; a thread that will be unparked must have that write made before the
     * unpark (ordering 9); single-writer counters use opaque stores; nothing here takes a lock.
     *
     * Spin budgets, one reason each. The waiter spins up to 50 us on its own flag while few
     * threads wait: a short kernel then completes without any wake-up; when the stream's recent
     * waits were longer, it sleeps through most of the predicted wait and spins only its end
     * (BlockingWait). The scanner's idle strategy (BackoffIdleStrategy) predicts the next
     * retirement from the recent ones, parks until shortly before it (2% of it or 5 us) and spins
     * through it; without a prediction it spins 250 us after its last retirement, then backs off
     * with parks of 2% of the wait, at most 1 ms; with nothing armed it parks at once (no linger by
     * default, ReactorConfig.Builder.scannerLinger says why) until a registration's idle-to-active
     * wake-up.
     *
     * Where things are. RegistrationChecks: the checks before registering (open,
     * done, faulted, may this thread block); BlockingWait and CoalescedWait: the
     * blocking wait; CallbackRegistrations: the non-blocking registration of futures and
     * callbacks; Registrar: arming and fallback; Scanner: the loop, delivery, fault
     * probe and quarantine, and the consumer's half of shutdown; DeviceFaults (the device's, not
     * the reactor's): everything about faults, the first fault, each stream's, the probe's verdict,
     * the quarantine rule and the one factory of GpuFaultException; ReactorLifecycle: the one
     * lifecycle state, close and reclaim; ReactorThreads: the threads it starts;
     * Counter: every counter, declared once (its names, who writes it, where it is shown);
     * ReactorCounters: the multi-writer counters and the stats snapshot; ReactorEvents: the JFR
     * events, each allocation-free while disabled; ReactorObservability: the
     * ReactorMXBean and the periodic JFR hook, installed when the reactor opens and removed
     * when it closes. This class wires them together and is what the rest of the library calls.
     */
    private static final AtomicInteger IDS = new AtomicInteger();

    private final GpuDevice device;
    private final ReactorConfig config;
    private final SlotTable<Completion> table;
    private final ReactorCounters counters = new ReactorCounters();
    private final ReactorState state;
    private final ReactorLifecycle lifecycle;
    private final RegistrationChecks checks;
    private final Registrar registrar;
    private final BlockingWait blockingWait;
    private final CallbackRegistrations callbacks;
    private final Scanner scanner;
    private final Thread scannerThread;
    private final Executor callbackExecutor;
    private final ReactorObservability observability;
    /** The await-latency distribution (HdrHistogram) and the relative SlowAwait threshold. */
    private final LatencyRecorder latency;
    /** The records of this reactor's open streams, so that close can open their admission gates. */
    private final java.util.Set<StreamRecord> openStreams =
            java.util.Collections.synchronizedSet(java.util.Collections.newSetFromMap(new java.util.WeakHashMap<>()));

    CompletionReactor(GpuDevice device, ReactorConfig config, DeviceBackend backend) {
        this.device = Objects.requireNonNull(device, "device");
        this.config = Objects.requireNonNull(config, "config");
        int capacity = config.capacity();
        FlagMemory flagMemory = Objects.requireNonNull(backend.allocateFlags(capacity), "flag memory");
        if (flagMemory.flags().length() < capacity) {
            flagMemory.release().run();
            throw new IllegalStateException("device " + device.name() + " allocated "
                    + flagMemory.flags().length() + " flags, " + capacity + " requested");
        }
        this.table = new SlotTable<>(capacity, flagMemory.flags());
        this.latency = new LatencyRecorder(config.slowAwaitFactor());
        this.state = new ReactorState(device.name());
        this.lifecycle = new ReactorLifecycle(state, flagMemory);
        this.checks = new RegistrationChecks(state, counters, device.name(), this::scannerThread);
        this.registrar = new Registrar(state, this::wakeScanner, table, flagMemory, counters, config.strategy());
        int id = IDS.incrementAndGet();
        this.callbackExecutor = ReactorThreads.callbackExecutor(id);
        // The parts get what they use, never this facade; `this` is only the parks' blocker.
        this.blockingWait = new BlockingWait(state, checks, table, registrar, config, counters, latency, device.name(),
                this, callbackExecutor);
        this.callbacks = new CallbackRegistrations(checks, table, registrar, counters);
        this.scanner = new Scanner(lifecycle, registrar, table, config, device.faults, this);
        this.scannerThread = ReactorThreads.system("cuda-loom-scanner-" + id + " (" + device.name() + ")", scanner.task());
        this.observability = new ReactorObservability(this, device.name(), id);
        ReactorObservability o = observability;
        lifecycle.attach(scanner, scannerThread, o::closing, o::close);
        scannerThread.start();
        // Last: the MBean server and JFR's hook list publish this reactor to other threads.
        observability.open();
    }

    public GpuDevice device() {
        return device;
    }

    @Override
    public ReactorConfig config() {
        return config;
    }

    public boolean isClosed() {
        return state.isClosed();
    }

    /** True once the flag memory has been freed (after {@link #close()}, when nothing can land). */
    public boolean isMemoryReleased() {
        return state.isMemoryReleased();
    }

    /**
     * An event for the work submitted to {@code stream} so far: {@link GpuStream#event()}, the one
     * way users take an event (it passes its own stream, so the device check guards only misuse
     * from inside the library).
     *
     * @throws IllegalArgumentException if the stream belongs to another device
     * @throws IllegalStateException if the stream is closed
     * @throws ReactorClosedException if this reactor is closed
     */
    GpuEvent event(GpuStream stream) {
        Objects.requireNonNull(stream, "stream");
        state.checkOpen();
        if (stream.device() != device) {
            throw new IllegalArgumentException("stream " + stream + " belongs to device "
                    + stream.device().name() + ", not to this reactor's device " + device.name());
        }
        if (stream.isClosed()) {
            throw new IllegalStateException("stream " + stream + " is closed");
        }
        return new GpuEvent(this, stream);
    }

    /** A snapshot of this reactor's counters (readable after close too). */
    @Override
    public ReactorStats stats() {
        return counters.snapshot(table, scanner, scannerThread, blockingWait.waitersNow(), workInFlight());
    }

    /**
     * The await-latency distribution since the device opened (readable after close too): how long
     * blocking awaits that registered waited, in an HdrHistogram. Each call drains what awaits
     * recorded since the last one (a few microseconds); the awaits themselves only record.
     */
    @Override
    public AwaitLatency awaitLatency() {
        return latency.snapshot();
    }

    /**
     * Work entries submitted to this device's open streams and not yet proven complete: the sum of
     * {@link GpuStream#workInFlight()} (a closed stream's last work is not counted).
     */
    long workInFlight() {
        StreamRecord[] records;
        synchronized (openStreams) {
            records = openStreams.toArray(new StreamRecord[0]);
        }
        long sum = 0;
        for (StreamRecord r : records) {
            sum += Math.max(0, r.submissions.get() - r.completedThrough());
        }
        return sum;
    }

    /** Blocking wait of {@link GpuEvent}; returns false only when timed and the time ran out. */
    boolean await(GpuStream stream, long required, boolean interruptible, boolean timed, long nanos)
            throws InterruptedException {
        return blockingWait.await(stream.port(), required, interruptible, timed, nanos);
    }

    /** Non-blocking registration of {@link GpuEvent#subscribe}, {@link GpuEvent#toCompletableFuture} and {@link GpuEvent#onComplete}. */
    Registration register(GpuStream stream, Consumer<@Nullable RuntimeException> onDone) {
        return register(stream.port(), onDone);
    }

    /** The same, for a part that holds the stream's port (StreamDrain's registration). */
    Registration register(ReactorStream stream, Consumer<@Nullable RuntimeException> onDone) {
        return callbacks.register(stream, onDone);
    }

    /** The scanner's wake-up, made by a registrant after the volatile write that armed work (SlotTable ordering 9). */
    void wakeScanner() {
        counters.increment(Counter.SCANNER_UNPARKS);
        LockSupport.unpark(scannerThread);
    }

    /**
     * Wakes every waiter with a {@link ReactorClosedException}, stops the scanner and frees the flag
     * memory once no device write into it can land. Later awaits throw the same exception.
     * Idempotent; returns without waiting for GPU work. Called by {@link GpuDevice#close()}, the
     * only way to close a reactor.
     */
    void close() {
        lifecycle.close();
        StreamRecord[] records;
        synchronized (openStreams) {
            records = openStreams.toArray(new StreamRecord[0]);
        }
        for (StreamRecord r : records) {
            r.openGate(); // after the lifecycle CAS: a submitter let through sees the reactor closed
        }
    }

    /** A stream of this reactor's device was made (its record is admitted to close's gate opening). */
    void streamOpened(StreamRecord record) {
        openStreams.add(record);
        if (isClosed()) {
            record.openGate(); // raced with close: nothing will ever release its permits
        }
    }

    void streamClosed(StreamRecord record) {
        openStreams.remove(record);
    }

    void countAdmissionWait(long nanos) {
        counters.increment(Counter.ADMISSION_WAITS);
        counters.add(Counter.ADMISSION_WAIT_NANOS, nanos);
    }

    /**
     * Enqueues a tracker on {@code stream}: a flag write (or host callback) that nobody waits for,
     * whose landing proves the work ahead of it complete and so returns its admission permits
     * (StreamRecord's liveness rule). Best effort: a closed reactor or a faulted stream opens the
     * gate instead, so a failure here is dropped.
     */
    void track(ReactorStream stream) {
        if (FallbackRegistration.onHostCallback() || stream.isOwnWorkerThread()) {
            // CUDA forbids driver calls there (a tracker landing, or a group delivered, on a host callback)
            callbackExecutor().execute(() -> track(stream));
            return;
        }
        StreamRecord record = stream.record();
        long proof = stream.submissionCount(); // before the enqueue: everything counted is ahead of it
        Completion tracker = (ticket, failure) -> {
            if (failure == null) {
                record.completedThrough(proof);
                record.trackerLanded(stream);
            } else {
                record.trackerFailed();
            }
        };
        try {
            record.enqueuedProof(proof);
            long ticket = registrar.tryArm(stream, tracker, false);
            if (!Registrar.armed(ticket)) {
                registrar.registerFallback(stream, tracker, FallbackReason.of(ticket), false); // no one's outcome
            }
            counters.increment(Counter.TRACKERS);
        } catch (RuntimeException dropped) {
            record.trackerFailed();
            // closed or faulted: StreamRecord.openGate lets the parked submitters through
        }
    }



    /**
     * What to undo if the device is dropped unclosed ({@link UnclosedDeviceReport}): the MXBean and
     * the JFR hook go, and the scanner, parked idle and holding the reactor only weakly, is woken
     * to find it gone and end. Holds no reference to this reactor.
     */
    Runnable cleanupIfUnclosed() {
        ReactorObservability o = observability;
        Thread scanner = scannerThread;
        return () -> {
            o.close();
            LockSupport.unpark(scanner);
        };
    }

    // ---- the parts, for each other and for tests (not API) ---------------------------------------

    ReactorState state() {
        return state;
    }

    RegistrationChecks checks() {
        return checks;
    }

    Thread scannerThread() {
        return scannerThread;
    }

    ReactorObservability observability() {
        return observability;
    }

    /** Runs completion callbacks of {@link GpuEvent#toCompletableFuture()}: a virtual thread each. */
    Executor callbackExecutor() {
        return callbackExecutor;
    }

    @Override
    public String toString() {
        return "CompletionReactor[" + device.name() + ", " + config.strategy() + (isClosed() ? ", closed]" : "]");
    }
}
