package io.cudaloom;

import io.cudaloom.protocol.DrainerPermits;
import io.cudaloom.protocol.SlotTable;
import io.cudaloom.reactor.BlockingWait;
import io.cudaloom.reactor.CallbackRegistrations;
import io.cudaloom.reactor.CombinedSubmission;
import io.cudaloom.reactor.Completion;
import io.cudaloom.reactor.DirectSubmission;
import io.cudaloom.reactor.FallbackReason;
import io.cudaloom.reactor.LifecycleState;
import io.cudaloom.reactor.PreWake;
import io.cudaloom.reactor.ReactorStream;
import io.cudaloom.reactor.Registrar;
import io.cudaloom.reactor.Registration;
import io.cudaloom.reactor.Scanner;
import io.cudaloom.reactor.lifecycle.DaemonThreads;
import io.cudaloom.reactor.lifecycle.Shutdown;
import io.cudaloom.reactor.metrics.AwaitOutcome;
import io.cudaloom.reactor.metrics.Counter;
import io.cudaloom.reactor.metrics.CounterSnapshot;
import io.cudaloom.reactor.metrics.LatencyRecorder;
import io.cudaloom.reactor.metrics.LatencySnapshot;
import io.cudaloom.reactor.metrics.Monitoring;
import io.cudaloom.reactor.metrics.SharedCounters;
import io.cudaloom.spi.DeviceBackend;
import io.cudaloom.spi.DeviceProbes;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import java.util.Arrays;
import java.util.Collections;
import java.util.Objects;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
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
public final class CompletionReactor {
    /*
     * The facade: it builds the reactor's parts (package io.cudaloom.reactor, whose package-info is
     * the maintainer's overview: the life of a registration, who decides what, the access modes,
     * the spin budgets and where each concern lives), hands each part what it uses, and is what the
     * API classes call. No part names it.
     */
    private static final AtomicInteger IDS = new AtomicInteger();
    /** The API's MXBean interfaces, which the reactor's monitoring part implements (it names neither). */
    static final Monitoring.MXBeanTypes MXBEANS = new Monitoring.MXBeanTypes(ReactorMXBean.class, ReactorInternalsMXBean.class);

    private final GpuDevice device;
    private final ReactorConfig config;
    private final SlotTable<Completion> table;
    private final SharedCounters counters = new SharedCounters();
    /** The scanner's wake-ups, held as the adder itself: every lone registration and pre-wake counts one. */
    private final LongAdder scannerUnparks = counters.adder(Counter.SCANNER_UNPARKS);
    private final LifecycleState state;
    private final Shutdown lifecycle;
    private final BlockingWait.Checks checks;
    private final Registrar registrar;
    private final BlockingWait blockingWait;
    private final CallbackRegistrations callbacks;
    private final Scanner scanner;
    private final Thread scannerThread;
    private final Executor callbackExecutor;
    /** The cap on threads draining this device's streams at once (ReactorConfig.drainers), or null for none. */
    private final @Nullable DrainerPermits drainerPermits;
    private final Monitoring observability;
    /**
     * What the MXBeans and the counters event read of this reactor. Held here: observability
     * holds it only weakly, so it lives exactly as long as this reactor is reachable.
     */
    private final Monitoring.Observed observed = new Observed();
    /** What its streams need of this reactor (ReactorStream.Reactor): one for all of them. */
    private final ReactorStream.Reactor streamHooks = new StreamHooks();
    /** The await-latency distribution (HdrHistogram) and the relative SlowAwait threshold. */
    private final LatencyRecorder latency;
    /**
     * This reactor's open streams (their ports, held weakly: a stream dropped unclosed is not kept),
     * so that close can open their admission gates and the work-in-flight gauge can sum them.
     */
    private final Set<ReactorStream> openStreams =
            Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

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
        this.state = new LifecycleState(device.name());
        this.lifecycle = new Shutdown(state, flagMemory);
        this.checks = new BlockingWait.Checks(state, counters, device.name(), this::scannerThread);
        this.registrar = new Registrar(state, this::wakeScanner, table, flagMemory, counters,
                config.strategy() == CompletionStrategy.REACTOR);
        int id = IDS.incrementAndGet();
        this.callbackExecutor = DaemonThreads.callbackExecutor(id);
        this.drainerPermits = config.drainers() > 0 ? new DrainerPermits(config.drainers()) : null;
        // The parts get what they use, never this facade; `this` is only the parks' blocker.
        PreWake preWake = new PreWake(config, this::wakeScanner);
        this.blockingWait = new BlockingWait(new BlockingWait.Parts(state, checks, table, registrar, preWake, config,
                counters, latency, device.name(), this, callbackExecutor));
        this.callbacks = new CallbackRegistrations(checks, table, registrar, counters);
        this.scanner = new Scanner(lifecycle, registrar, table, config, device.faults, preWake, this);
        this.scannerThread = DaemonThreads.system(DeviceProbes.SCANNER_THREAD_PREFIX + id + " (" + device.name() + ")", scanner.task());
        this.observability = new Monitoring(observed, device.name(), id, MXBEANS);
        Monitoring o = observability;
        lifecycle.attach(scanner, scannerThread, o::closing, o::close);
        scannerThread.start();
        // Last: the MBean server and JFR's hook list publish this reactor to other threads.
        observability.open();
    }

    public GpuDevice device() {
        return device;
    }

    public ReactorConfig config() {
        return config;
    }

    public boolean isClosed() {
        return state.isClosed();
    }

    /** True once the flag memory has been freed (after {@link #close()}, when nothing can land). */
    boolean isMemoryReleased() {
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
    public ReactorStats stats() {
        return new ReactorStats(counterSnapshot());
    }

    private CounterSnapshot counterSnapshot() {
        return counters.snapshot(table, scanner, scannerThread, blockingWait.waitersNow(), workInFlight());
    }

    /**
     * The await-latency distribution since the device opened (readable after close too): how long
     * blocking awaits that registered waited, in an HdrHistogram. Each call drains what awaits
     * recorded since the last one (a few microseconds); the awaits themselves only record.
     */
    public AwaitLatency awaitLatency() {
        LatencySnapshot s = latency.snapshot();
        return new AwaitLatency(s.count(), s.p50Nanos(), s.p90Nanos(), s.p99Nanos(), s.p999Nanos(), s.maxNanos(),
                s.meanNanos(), s.recentP99Nanos(), s.slowAwaitThresholdNanos());
    }

    /**
     * Calls {@code listener} as each blocking await that registered ends, with its outcome and how
     * long it waited: the awaits {@link #awaitLatency()} counts, one call each, on the awaiting
     * thread, after the await is counted in {@link #stats()} and recorded in
     * {@link #awaitLatency()} and before it returns ({@link AwaitListener} says when exactly, and
     * what a throwing listener does). For a metrics library's timer: the Micrometer binder
     * ({@code io.cudaloom.micrometer.CudaLoomMetrics}) adds one and removes it when closed. Adding
     * the same listener twice calls it twice. Allowed on a closed reactor (no await ends there any
     * more).
     *
     * @throws NullPointerException if {@code listener} is null
     */
    public void addAwaitListener(AwaitListener listener) {
        latency.addListener(new Listening(Objects.requireNonNull(listener, "listener")));
    }

    /**
     * Stops calling {@code listener} (one addition of it, by identity): awaits that end after this
     * returns do not call it (one ending meanwhile may still call it once).
     *
     * @return true if it was added and is now removed; false if it was not added
     */
    public boolean removeAwaitListener(AwaitListener listener) {
        return latency.removeListener(listener);
    }

    /**
     * Work entries submitted to this device's open streams and not yet proven complete: the sum of
     * {@link GpuStream#workInFlight()} (a closed stream's last work is not counted). Like it, a
     * stream whose counts show unproven work is asked once whether it is idle
     * ({@link BlockingWait.Checks#proveIfIdle}), so work that finished unawaited leaves the sum.
     * The streams are copied under the set's lock and queried outside it.
     */
    long workInFlight() {
        ReactorStream[] streams;
        synchronized (openStreams) {
            streams = openStreams.toArray(new ReactorStream[0]);
        }
        long sum = 0;
        for (ReactorStream s : streams) {
            sum += checks.workInFlight(s);
        }
        return sum;
    }

    /**
     * The one blocking wait (BlockingWait): an event holds it from its making, so that an await
     * goes from the event to the wait with nothing in between.
     */
    BlockingWait blockingWait() {
        return blockingWait;
    }

    /** Non-blocking registration on an open stream ({@link GpuStream}'s own, which route a closed stream themselves). */
    Registration register(GpuStream stream, Consumer<@Nullable RuntimeException> onDone) {
        return register(stream.owner(), onDone);
    }

    /**
     * Non-blocking registration of {@link GpuEvent#subscribe}, {@link GpuEvent#toCompletableFuture}
     * and {@link GpuEvent#onComplete}, routed by the stream's state: null when the stream is closed
     * (read before registering, or found closed by a registration its backend refused), and the
     * caller then subscribes to its drain, published before that state.
     *
     * @throws ReactorClosedException if this reactor is closed
     */
    @Nullable Registration registerEvent(GpuStream stream, Consumer<@Nullable RuntimeException> onDone) {
        if (stream.isClosed()) {
            return null;
        }
        try {
            return register(stream.owner(), onDone);
        } catch (ReactorClosedException closed) {
            throw closed;
        } catch (IllegalStateException refused) {
            // Registrar reports a refused flag write and host callback by this exception: a stream
            // that closed while registering is routed by its state, as above.
            if (stream.isClosed()) {
                return null;
            }
            throw refused;
        }
    }

    /** The same, for a part that holds the stream's port (StreamDrain's registration). */
    Registration register(ReactorStream stream, Consumer<@Nullable RuntimeException> onDone) {
        return callbacks.register(stream, onDone);
    }

    /** A callback of {@link GpuEvent#subscribe} on {@code stream} threw: logged once and counted, never rethrown. */
    void callbackThrew(GpuStream stream, Throwable thrown) {
        callbacks.callbackThrew(stream.owner(), thrown);
    }

    /** The scanner's wake-up, made by a registrant after the volatile write that armed work (SlotTable ordering 9). */
    void wakeScanner() {
        scannerUnparks.increment();
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
        ReactorStream[] streams;
        synchronized (openStreams) {
            streams = openStreams.toArray(new ReactorStream[0]);
        }
        for (ReactorStream s : streams) {
            s.openGate(); // after the lifecycle CAS: a submitter let through sees the reactor closed
        }
    }

    /**
     * The reactor's object for a new stream of this device ({@link GpuStream}'s constructor), its
     * submission chosen once, from the configuration: {@link Submission#COMBINING} or
     * {@link Submission#DIRECT}.
     *
     * @param named the public stream, for its name only
     */
    ReactorStream openStream(StreamBackend backend, GpuStream named) {
        ReactorStream stream = config.submission() == Submission.COMBINING
                ? new CombinedSubmission(config, backend, device.faults, streamHooks, named)
                : new DirectSubmission(config, backend, device.faults, streamHooks, named);
        streamOpened(stream);
        return stream;
    }

    /** A stream of this reactor's device was made (admitted to close's gate opening and to the gauge). */
    private void streamOpened(ReactorStream stream) {
        openStreams.add(stream);
        if (isClosed()) {
            stream.openGate(); // raced with close: nothing will ever release its permits
        }
    }

    void streamClosed(ReactorStream stream) {
        openStreams.remove(stream);
    }

    void countAdmissionWait(long nanos) {
        counters.increment(Counter.ADMISSION_WAITS);
        counters.add(Counter.ADMISSION_WAIT_NANOS, nanos);
    }

    /**
     * Arms a tracker on {@code stream} (ReactorStream.Reactor#track): a registration nobody waits for,
     * whose landing is a proof. Direct submission's liveness rule makes one; so does the combining
     * drainer, which holds the stream exclusively and whose flag write (or host callback) then goes to
     * the driver directly (the stream's flag-write path sees the drainer's thread and bypasses the
     * queue). The proof is the caller's, passed in through {@code tracker}. Throws what the
     * registration throws.
     */
    private void track(ReactorStream stream, Completion tracker) {
        long ticket = registrar.tryArm(stream, tracker, false);
        if (!Registrar.armed(ticket)) {
            registrar.registerFallback(stream, tracker, FallbackReason.of(ticket), false); // no one's outcome
        }
        counters.increment(Counter.TRACKERS);
    }

    /**
     * What to undo if the device is dropped unclosed ({@link io.cudaloom.reactor.lifecycle.UnclosedDeviceReport}): the MXBean and
     * the JFR hook go, and the scanner, parked idle and holding the reactor only weakly, is woken
     * to find it gone and end. Holds no reference to this reactor.
     */
    Runnable cleanupIfUnclosed() {
        Monitoring o = observability;
        Thread scanner = scannerThread;
        return () -> {
            o.close();
            LockSupport.unpark(scanner);
        };
    }

    // ---- the parts, for each other and for tests (not API) ---------------------------------------

    LifecycleState state() {
        return state;
    }

    BlockingWait.Checks checks() {
        return checks;
    }

    /** The cap on threads draining this device's streams at once, or null for none (tests). */
    @Nullable DrainerPermits drainerPermits() {
        return drainerPermits;
    }

    Thread scannerThread() {
        return scannerThread;
    }

    Monitoring observability() {
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

    /** This reactor as its streams see it: the trackers, the drain's registration, the threads. */
    private final class StreamHooks implements ReactorStream.Reactor {
        @Override
        public void track(ReactorStream stream, Completion tracker) {
            CompletionReactor.this.track(stream, tracker);
        }

        @Override
        public Registration register(ReactorStream stream, Consumer<@Nullable RuntimeException> onDone) {
            return callbacks.register(stream, onDone);
        }

        @Override
        public boolean isClosed() {
            return state.isClosed();
        }

        @Override
        public Executor callbackExecutor() {
            return callbackExecutor;
        }

        @Override
        public Thread scannerThread() {
            return scannerThread;
        }

        @Override
        public void countAdmissionWait(long nanos) {
            CompletionReactor.this.countAdmissionWait(nanos);
        }

        @Override
        public String deviceName() {
            return device.name();
        }

        @Override
        public @Nullable DrainerPermits drainerPermits() {
            return drainerPermits;
        }
    }

    /** What the MXBeans and the counters event read (tests make a second observability part of it). */
    Monitoring.Observed observed() {
        return observed;
    }

    /** This reactor as its observability part sees it (the public accessors, and the raw counters). */
    private final class Observed implements Monitoring.Observed {
        @Override
        public CounterSnapshot counters() {
            return counterSnapshot();
        }

        @Override
        public LatencySnapshot awaitLatency() {
            return latency.snapshot();
        }

        @Override
        public ReactorConfig config() {
            return config;
        }

        @Override
        public String strategy() {
            return config.strategy().name();
        }
    }

    /**
     * An {@link AwaitListener} as the latency recorder calls it: the reactor's outcome mapped to the
     * listener's by name, once per call, allocation-free. Removed by the listener it wraps
     * ({@link #added()}), and shown as it in the log of a listener that threw.
     */
    private record Listening(AwaitListener listener) implements LatencyRecorder.Listener {
        /** {@link AwaitListener.Outcome} by {@link AwaitOutcome#ordinal()}, matched by name (a missing one fails here). */
        private static final AwaitListener.Outcome[] OUTCOMES = Arrays.stream(AwaitOutcome.values())
                .map(o -> AwaitListener.Outcome.valueOf(o.name())).toArray(AwaitListener.Outcome[]::new);

        @Override
        public void awaitEnded(AwaitOutcome outcome, long nanos) {
            listener.awaitEnded(OUTCOMES[outcome.ordinal()], nanos);
        }

        @Override
        public Object added() {
            return listener;
        }

        @Override
        public String toString() {
            return listener.toString();
        }
    }
}
