package io.cudaloom;

import io.cudaloom.protocol.SlotTable;
import io.cudaloom.spi.DeviceBackend;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamState;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The completion reactor of one {@link GpuDevice}: a {@link SlotTable} over the device's flag
 * memory and one scanner thread that wakes waiters whose flags the device has written. This class
 * is the facade; each concern has its own class.
 *
 * <h2>Maintainer's overview</h2>
 * <b>The life of a registration.</b> A waiter (or a callback, or a coalesced group) is
 * <em>registered</em> by the {@link Registrar}: a slot is <em>claimed</em>, its flag
 * <em>reset</em>, the device's flag write <em>enqueued</em> behind the stream's work, and the
 * payload <em>published</em> (the active bit; the first publish into an idle table unparks the
 * scanner). Without a free slot, or if the write is refused, a host callback serves it instead
 * ({@link FallbackRegistration}). It then ends in exactly one of three ways, each decided by one
 * atomic operation on one cell: <em>retired</em> by the {@link Scanner} when the flag reads 1 (its
 * get-and-set takes the payload, the waiter is delivered its ticket and unparked);
 * <em>withdrawn</em> by the registrant on timeout, interrupt, inline completion or a cancelled
 * future or subscription (a compare-and-set on the same cell, which the scanner's get-and-set then finds empty); or
 * <em>failed</em> by the scanner's fault probe or by close (the scanner's {@code failArmed}).
 * Finally the slot is <em>recycled</em> (retired slots at once, since the device's write has
 * landed), or <em>quarantined</em> while a write into it might still land (a faulted stream, or
 * close), and recycled or freed once the stream has settled.
 *
 * <p><b>Who decides.</b> The registrant decides claim, publish and withdrawal; the scanner (the
 * single consumer) decides retirement, failure and recycling; close decides the lifecycle (one
 * compare-and-set from OPEN) and then becomes the consumer after joining the scanner.
 *
 * <p><b>Access modes.</b> SlotTable's javadoc lists every ordering and where it is enforced. The
 * rules in short: what another thread must see is published by a volatile write or an atomic
 * read-modify-write (the active bit, the delivered ticket, the lifecycle state), and read by an
 * acquire or volatile load; a thread that will be unparked must have that write made before the
 * {@code unpark} (ordering 9); single-writer counters use opaque stores; nothing here takes a lock.
 *
 * <p><b>Spin budgets, one reason each.</b> The waiter spins up to 50 us on its own flag while few
 * slots are armed: a short kernel then completes without any wake-up ({@link BlockingWait}). The
 * scanner spins 250 us after its last retirement, then backs off to parks of 1/8 of the wait, at
 * most 1 ms: kernels up to 250 us are seen at spin latency, long ones cost a few percent of a core
 * ({@link io.cudaloom.protocol.BackoffIdleStrategy}, chosen with the A/B harness).
 *
 * <p><b>Where things are.</b> {@link BlockingWait} and {@link CoalescedWait}: the blocking wait;
 * {@link CallbackRegistrations}: the non-blocking registration of futures and callbacks;
 * {@link Registrar}: arming and fallback; {@link Scanner}: the loop, delivery, fault probe and
 * quarantine, and the consumer's half of shutdown; {@link ReactorCounters}: the counters;
 * {@link ReactorEvents}: the JFR events (slow awaits, fallbacks, faults, periodic counters), each
 * allocation-free while disabled; {@link ReactorObservability}: the {@link ReactorMXBean} and the
 * periodic JFR hook, installed when the reactor opens and removed when it closes; this class: the
 * checks before registering, the lifecycle and close.
 *
 * <h2>Close</h2>
 * {@link #close()} wakes every waiter with a {@link ReactorClosedException}, stops the scanner,
 * and frees the flag memory only once every slot is accounted for and no device write into it can
 * still land (at once if nothing is in flight, else from a short-lived reclaimer thread).
 */
public final class CompletionReactor {
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final VarHandle STATE;
    /** Lifecycle: open; closed to new work (close() ran, or the scanner died of an Error); memory freed. */
    private static final int OPEN = 0;
    private static final int CLOSED = 1;
    private static final int RELEASED = 2;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(CompletionReactor.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final GpuDevice device;
    private final ReactorConfig config;
    private final FlagMemory flagMemory;
    private final SlotTable<Completion> table;
    private final ReactorCounters counters = new ReactorCounters();
    private final Registrar registrar;
    private final BlockingWait blockingWait;
    private final CallbackRegistrations callbacks;
    private final Scanner scanner;
    private final Thread scannerThread;
    private final Executor callbackExecutor;
    /** The MXBean and the periodic JFR hook: installed at the end of construction, removed by finishClose. */
    private final ReactorObservability observability;

    /**
     * {@link #OPEN}, {@link #CLOSED} or {@link #RELEASED}; leaves OPEN by one compare-and-set, so
     * exactly one closer finishes the shutdown. Registrants re-check it after publishing (see
     * {@link Registrar}); the scanner loop runs while it is OPEN.
     */
    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    /** The Error that stopped the scanner, if that is what closed the reactor; written before STATE. */
    private volatile @Nullable Throwable stopCause;

    CompletionReactor(GpuDevice device, ReactorConfig config, DeviceBackend backend) {
        this.device = Objects.requireNonNull(device, "device");
        this.config = Objects.requireNonNull(config, "config");
        int capacity = config.capacity();
        this.flagMemory = Objects.requireNonNull(backend.allocateFlags(capacity), "flag memory");
        if (flagMemory.flags().length() < capacity) {
            flagMemory.release().run();
            throw new IllegalStateException("device " + device.name() + " allocated "
                    + flagMemory.flags().length() + " flags, " + capacity + " requested");
        }
        this.table = new SlotTable<>(capacity, flagMemory.flags());
        this.registrar = new Registrar(this, table, flagMemory, counters, config.strategy());
        this.blockingWait = new BlockingWait(this, table, registrar, config, counters);
        this.callbacks = new CallbackRegistrations(this, table, registrar, counters);
        this.scanner = new Scanner(this, registrar, table, config);
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
        this.observability = new ReactorObservability(this, id);
        scannerThread.start();
        // Last: the MBean server and JFR's hook list publish this reactor to other threads.
        observability.open();
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

    /** The scanner thread (for tests and the device's own diagnostics; not API). */
    Thread scannerThread() {
        return scannerThread;
    }

    /** The MXBean registration and the JFR hook (for tests; not API). */
    ReactorObservability observability() {
        return observability;
    }

    /** Runs completion callbacks of {@link GpuEvent#toCompletableFuture()}: a virtual thread each. */
    Executor callbackExecutor() {
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

    /** A snapshot of this reactor's counters (readable after close too). */
    public ReactorStats stats() {
        return ReactorStats.builder()
                .capacity(table.capacity())
                .armedNow(table.armedCount())
                .freeSlots(table.freeCount())
                .registrations(counters.registrations.sum())
                .completions(counters.completions.sum())
                .inlineCompletions(counters.inlineCompletions.sum())
                .immediate(counters.immediate.sum())
                .fallbacks(counters.fallbacks.sum())
                .abandoned(counters.abandoned.sum())
                .faults(counters.faults.sum())
                .scannerParks(scanner.count(Scanner.PARKS))
                .scannerTimedParks(scanner.count(Scanner.TIMED_PARKS))
                .scannerUnparks(counters.scannerUnparks.sum())
                .scanPasses(scanner.count(Scanner.PASSES))
                .faultProbes(scanner.count(Scanner.PROBES))
                .quarantined((int) scanner.count(Scanner.QUARANTINED))
                .coalesced(counters.coalesced.sum())
                .scannerErrors(scanner.count(Scanner.ERRORS))
                .scannerCpuNanos(scannerCpuNanos())
                .build();
    }

    private long scannerCpuNanos() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        if (!threads.isThreadCpuTimeSupported()) {
            return -1L;
        }
        long nanos = threads.getThreadCpuTime(scannerThread.threadId());
        // -1 for a terminated thread: then the total it recorded on its way out (isAlive() false
        // orders that write before this read).
        return nanos >= 0 || scannerThread.isAlive() ? nanos : scanner.cpuNanosAtExit();
    }

    // ---- waiting and registering ----------------------------------------------------------------

    /** Blocking wait of {@link GpuEvent}; returns false only when timed and the time ran out. */
    boolean await(GpuStream stream, long required, boolean interruptible, boolean timed, long nanos)
            throws InterruptedException {
        return blockingWait.await(stream, required, interruptible, timed, nanos);
    }

    /**
     * The checks every wait and registration makes before registering: the reactor is open, the
     * stream is open, and the stream's state. IDLE (the work is done, counted as an immediate
     * completion) or BUSY; a faulted stream throws. With {@code assumeBusy}, a stream with counted
     * work submitted after its last landed flag write is reported BUSY without a driver call (a
     * fault is then found when registering or by the scanner's probe).
     *
     * @throws ReactorClosedException if this reactor is closed
     * @throws IllegalStateException if the stream is closed
     * @throws GpuFaultException if the stream has faulted
     */
    StreamState precheck(GpuStream stream, boolean assumeBusy) {
        checkOpen();
        if (stream.isClosed()) {
            throw new IllegalStateException("stream " + stream + " is closed");
        }
        if (assumeBusy && stream.hasWorkNotKnownComplete()) {
            return StreamState.BUSY;
        }
        long counted = stream.submissionCount(); // before the query: an idle answer covers these
        StreamState state = stream.queryState();
        if (state == StreamState.IDLE) {
            stream.completedThrough(counted);
            counters.immediate.increment();
            counters.completions.increment();
        } else if (state == StreamState.FAULTED) {
            counters.faults.increment();
            throw faultOf(stream);
        }
        return state;
    }

    /** Non-blocking registration of {@link GpuEvent#subscribe}, {@link GpuEvent#toCompletableFuture} and {@link GpuEvent#onComplete}. */
    Registration register(GpuStream stream, Consumer<@Nullable RuntimeException> onDone) {
        return callbacks.register(stream, onDone);
    }

    void wakeScanner() {
        counters.scannerUnparks.increment();
        LockSupport.unpark(scannerThread);
    }

    GpuFaultException faultOf(GpuStream stream) {
        return faultOf(stream, stream.faultDescription());
    }

    GpuFaultException faultOf(GpuStream stream, String description) {
        String message = "GPU work on " + stream + " of " + device.name() + " can never complete: " + description;
        Throwable cause = stream.kernelFaultCause();
        return cause != null ? new GpuFaultException(message, cause) : new GpuFaultException(message);
    }

    /**
     * Refuses a blocking wait on a thread the reactor or the stream itself depends on: the scanner
     * (a completion callback run there with a direct executor), a host-callback thread (the same,
     * on a fallback), or the stream's own worker (a simulated kernel that awaits).
     */
    void checkMayBlock(GpuStream stream) {
        String where = null;
        if (Thread.currentThread() == scannerThread) {
            where = "the scanner thread of " + device.name() + " (a completion callback run there)";
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

    ReactorClosedException closedFailure() {
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

    // ---- lifecycle ------------------------------------------------------------------------------

    /**
     * Wakes every waiter with a {@link ReactorClosedException}, stops the scanner and frees the flag
     * memory once no device write into it can land. Later awaits throw the same exception.
     * Idempotent; returns without waiting for GPU work. Called by {@link GpuDevice#close()}, the
     * only way to close a reactor.
     *
     * <p>Called on the scanner thread itself (by a callback run there through a direct executor), it
     * only stops the scanner: the scanner finishes the delivery it is in, leaves its loop and then
     * wakes the rest. Running the shutdown right there would re-enter the delivery in progress (its
     * batch delivered twice) and, once a reclaimer took over, leave two consumers at once.
     */
    void close() {
        if (!beginClose()) {
            return;
        }
        observability.closing(); // the final JFR counters, before the shutdown changes them
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
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        // The scanner has stopped (join: happens-before): this thread is now the consumer.
        finishClose();
    }

    /**
     * OPEN to CLOSED, once: true for the caller that did it (who must then see the shutdown
     * through). Registrants that publish from now on see it (the Dekker pair of {@link Registrar}).
     */
    private boolean beginClose() {
        if (!STATE.compareAndSet(this, OPEN, CLOSED)) {
            return false;
        }
        // The Dekker pairing with the registrar needs this write ordered before the consumer's
        // later reads of the active bits and the fallback set (reclaimStep). Those are acquire
        // loads, and a volatile write is ordered only before later volatile loads: the fence gives
        // the store-load order for them too. The unpark follows a volatile write (SlotTable
        // ordering 9); on the scanner itself it leaves a permit, so it does not park.
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

    /**
     * Shutdown as the consumer: one reclaim step now, the rest (if any) on a reclaimer thread; then
     * the MXBean and the JFR hook go (last, so nothing they do can keep a waiter from being woken).
     */
    void finishClose() {
        try {
            if (!reclaimStep()) {
                systemThread(scannerThread.getName().replace("scanner", "reclaimer"), () -> {
                    // Streams settle within milliseconds, unless dead or a backend keeps failing:
                    // then look again less and less often (at most once a second).
                    for (long pause = 1_000_000L; !reclaimStep(); pause = Math.min(pause << 1, 1_000_000_000L)) {
                        LockSupport.parkNanos(this, pause);
                    }
                }).start();
            }
        } finally {
            observability.close();
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
