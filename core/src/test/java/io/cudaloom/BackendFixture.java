package io.cudaloom;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Assumptions;

/**
 * What the semantics suite's sections ({@link SemanticsSuite}) need of a backend and what differs
 * between backends: open a device, make a stream, hold a stream with work until the test opens a
 * gate, make the stream fault, submit real work whose result can be read back. One fixture per
 * backend and completion strategy (each backend's test names its fixture in one {@code @Nested}
 * class per section); a backend that cannot express something skips the test with
 * {@link #unsupported}, saying why.
 *
 * <p>A fixture keeps what it made: {@link #cleanup()} opens every gate still closed (so no stream
 * stays held) and closes every device. A watchdog opens a gate that stays closed longer than
 * {@link #GATE_LIMIT} (a test that hangs would otherwise hold a real GPU's stream forever, and with it
 * the device's close); cleanup then fails the test that let it happen.
 */
abstract class BackendFixture {
    /** The longest a gate may stay closed before the watchdog opens it (and cleanup fails the test). */
    static final Duration GATE_LIMIT = Duration.ofSeconds(60);
    private static final ScheduledExecutorService WATCHDOG = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "semantics-gate-watchdog");
        t.setDaemon(true);
        return t;
    });

    /** Holds its stream until opened; opening twice is harmless. */
    interface Gate {
        void open();
    }

    /** A fault made ready on a stream (behind a gate, so the stream is busy): it happens on {@link #trigger()}. */
    interface Fault {
        void trigger();

        /** What the {@link GpuFaultException}'s message must name. */
        String errorName();
    }

    private final CompletionStrategy strategy;
    private final List<GpuDevice> devices = new ArrayList<>();
    private final List<Gate> gates = new ArrayList<>();
    private final List<String> watchdogFired = new ArrayList<>();

    BackendFixture(CompletionStrategy strategy) {
        this.strategy = strategy;
    }

    /** The backend's name, for test names and skip messages. */
    abstract String backend();

    CompletionStrategy strategy() {
        return strategy;
    }

    /** A configuration builder with this fixture's strategy and otherwise the defaults. */
    ReactorConfig.Builder config() {
        return ReactorConfig.builder().strategy(strategy).coalesce(false); // rows check each registration's own path; coalescing rows opt in
    }

    /** Opens a device of this backend with {@code config}; closed by {@link #cleanup()}. */
    final GpuDevice open(ReactorConfig config) {
        GpuDevice d = openDevice(config);
        synchronized (this) {
            devices.add(d);
        }
        return d;
    }

    final GpuDevice open() {
        return open(config().build());
    }

    abstract GpuDevice openDevice(ReactorConfig config);

    GpuStream newStream(GpuDevice device) {
        return device.newStream();
    }

    /**
     * Submits work that holds {@code stream} until the returned gate opens: everything submitted
     * or enqueued on the stream after it (work, the reactor's flag writes and host callbacks) waits.
     */
    final Gate hold(GpuStream stream) {
        Gate gate = holdStream(stream);
        AtomicBoolean opened = new AtomicBoolean();
        Gate tracked = () -> {
            if (opened.compareAndSet(false, true)) {
                gate.open();
            }
        };
        synchronized (this) {
            gates.add(tracked);
        }
        WATCHDOG.schedule(() -> {
            if (!opened.get()) {
                synchronized (this) {
                    watchdogFired.add(stream.toString());
                }
                tracked.open();
            }
        }, GATE_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
        return tracked;
    }

    abstract Gate holdStream(GpuStream stream);

    /**
     * Makes a fault ready on {@code stream}: the stream is held (busy) until {@link Fault#trigger()},
     * which makes it fault the way this backend's device does.
     */
    abstract Fault fault(GpuStream stream);

    /**
     * Submits work that writes {@code value} on the device, then copies it where the host can read
     * it; the returned supplier reads it (call it only after an await covering the work).
     */
    abstract IntSupplier write(GpuStream stream, int value);

    /** Whether a stream with nothing in flight reports itself idle (an await then registers nothing). */
    boolean reportsIdle() {
        return true;
    }

    /** Makes {@code stream} refuse the reactor's flag writes from now on. */
    void refuseFlagWrites(GpuStream stream) {
        unsupported("its streams cannot be made to refuse a flag write");
    }

    /**
     * Flag writes that landed in flag memory after the reactor freed it, or -1 where the backend
     * cannot tell.
     */
    long writesAfterRelease(GpuDevice device) {
        return -1;
    }

    /** Skips the current test: this backend cannot express what it needs. */
    final void unsupported(String why) {
        String reason = backend() + " cannot run this test: " + why;
        System.out.println("SKIPPED semantics test on " + this + ": " + reason);
        Assumptions.abort(reason);
    }

    /** Opens every gate still closed and closes every device; fails if the watchdog had to open a gate. */
    void cleanup() {
        List<Gate> g;
        List<GpuDevice> d;
        List<String> fired;
        synchronized (this) {
            g = List.copyOf(gates);
            d = List.copyOf(devices);
            fired = List.copyOf(watchdogFired);
            gates.clear();
            devices.clear();
            watchdogFired.clear();
        }
        g.forEach(Gate::open);
        released();
        d.forEach(GpuDevice::close);
        if (!fired.isEmpty()) {
            throw new AssertionError("a gate stayed closed for " + GATE_LIMIT + " and the watchdog opened it, on "
                    + fired + ": the test hung");
        }
    }

    /** Called by cleanup once every gate is open, before the devices close (e.g. to free buffers). */
    void released() {}

    @Override
    public String toString() {
        return backend() + ", " + strategy;
    }
}
