package io.cudaloom;

import io.cudaloom.reactor.DeviceFaults;
import io.cudaloom.reactor.Registration;
import io.cudaloom.reactor.lifecycle.UnclosedDeviceReport;
import io.cudaloom.spi.DeviceBackend;
import io.cudaloom.spi.DeviceProbes;
import io.cudaloom.spi.StreamBackend;
import java.util.List;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A GPU (or the simulated device) with its {@link CompletionReactor}. Open one with
 * {@link #open()}, make streams with {@link #newStream()}, close it when done ({@code use {}} in
 * Kotlin, try-with-resources in Java).
 *
 * <p>Only cuda-loom's own backends subclass it (a CUDA GPU, {@code io.cudaloom.cuda.CudaDevice}; the
 * simulated device, {@code io.cudaloom.sim.SimulatedDevice}); any other subclass is refused.
 */
public abstract class GpuDevice implements AutoCloseable {
    /** System property choosing the backend of {@link #open()}: {@code auto} (default), {@code cuda}, {@code sim}. */
    public static final String BACKEND_PROPERTY = "cudaloom.device";

    private volatile @Nullable CompletionReactor reactor;
    /** Reports this device if it becomes unreachable unclosed; set with the reactor. */
    private volatile UnclosedDeviceReport.@Nullable Registration unclosed;
    /** What this device has handed out and not had back (see {@link #liveResources()}). */
    final ResourceLedger ledger = new ResourceLedger();
    /** This device's fault owner: its first fault, each stream's, the one exception factory (DeviceFaults). */
    final DeviceFaults faults = new DeviceFaults();
    /** Its entry in {@link LiveResources#openDevices()}; 0 until the reactor starts. */
    private volatile long openSequence;
    /** The backend's side of each new stream; set with the reactor, before any stream exists. */
    private volatile @Nullable Function<? super GpuStream, ? extends StreamBackend> streamBackends;
    /** The backend's side of this device; set with the reactor. */
    private volatile @Nullable DeviceBackend backend;

    static {
        // What the backends may do to devices, streams and kernels, and nobody else (BackendHooks).
        BackendHooks.install();
    }

    /**
     * For the library's backends only ({@code io.cudaloom.sim}, {@code io.cudaloom.cuda}).
     *
     * @throws IllegalCallerException for a subclass of any other package or module
     */
    protected GpuDevice() {
        BackendSubclasses.check(getClass(), GpuDevice.class);
    }

    /** {@link #open(ReactorConfig)} with the default configuration. */
    public static GpuDevice open() {
        return open(ReactorConfig.defaults());
    }

    /**
     * Opens a device of the best backend available: a CUDA device if JCuda is on the class path and
     * the driver finds a device, else the embedded simulated device. Backends are
     * backends found through {@link ServiceLoader}; the system property
     * {@value #BACKEND_PROPERTY} names one to use instead ({@code cuda}, {@code sim}, or
     * {@code auto}, the default): a named backend is opened even if it says it is unavailable, so
     * its own error says why, and no other backend is asked whether it is available.
     *
     * <p>The CUDA backend needs JCuda ({@code org.jcuda:jcuda} and its natives), an optional
     * dependency: without it, {@code auto} opens the simulated device (the reason is logged at
     * DEBUG by the {@code System.Logger} named after this class), and no JCuda class is loaded
     * unless the CUDA backend is asked for ({@code auto} or {@code cuda}). When JCuda is there but
     * the backend cannot open a device (no driver, no device), {@code auto} still falls back, and
     * logs one WARNING saying why.
     *
     * @throws RuntimeException from the backend: with {@code cuda}, a {@code CudaDriverException}
     *     if the driver cannot be loaded ("no CUDA driver: ...") or initialised
     * @throws IllegalStateException with {@code cuda} when JCuda is not on the class path (the
     *     message names the artifacts to add), or when no backend at all is available
     * @throws IllegalArgumentException if there is no CUDA device with {@code cuda}, or the property
     *     names no known backend
     */
    public static GpuDevice open(ReactorConfig config) {
        return open(System.getProperty(BACKEND_PROPERTY, "auto"), config);
    }

    /**
     * {@link #open(ReactorConfig)} with the backend named here instead of by the system property
     * {@value #BACKEND_PROPERTY}: {@code auto}, {@code cuda} or {@code sim} (any case; blank is
     * {@code auto}), for a framework or an application that reads the choice from its own
     * configuration (the Spring Boot auto-configuration, {@code io.cudaloom.spring}, reads
     * {@code cudaloom.device}). The system property is not read.
     *
     * @throws IllegalArgumentException if {@code backend} names no known backend
     *     ("cudaloom.device must be auto or one of [cuda, sim], was 'x'"), or as {@link #open(ReactorConfig)}
     * @throws IllegalStateException as {@link #open(ReactorConfig)}
     */
    public static GpuDevice open(String backend, ReactorConfig config) {
        return BackendChoice.open(backend, config);
    }

    /**
     * Starts this device's reactor, with flag memory from {@code backend}; called once by the
     * backend's factory after construction, through {@link io.cudaloom.internal.BackendAccess.Hooks#startReactor}.
     */
    void startReactor(ReactorConfig config, DeviceBackend backend,
            Function<? super GpuStream, ? extends StreamBackend> streams) {
        if (reactor != null) {
            throw new IllegalStateException("reactor of " + name() + " already started");
        }
        this.streamBackends = Objects.requireNonNull(streams, "streams");
        this.backend = backend;
        CompletionReactor r = new CompletionReactor(this, config, backend);
        reactor = r;
        long seq = LiveResources.deviceOpened(this);
        openSequence = seq;
        unclosed = UnclosedDeviceReport.watch(this, name(), List.of(r.cleanupIfUnclosed(), backend.cleanupIfUnclosed(),
                () -> LiveResources.deviceClosed(seq)));
    }

    /** The backend side of a new stream of this device (from the stream's constructor). */
    StreamBackend streamBackendOf(GpuStream stream) {
        Function<? super GpuStream, ? extends StreamBackend> streams = streamBackends;
        if (streams == null) {
            throw new IllegalStateException("reactor of " + name() + " was never started");
        }
        return Objects.requireNonNull(streams.apply(stream), "stream backend");
    }

    /** The backend's own counters (tests, the lifetime stress). */
    DeviceProbes probes() {
        DeviceBackend b = backend;
        return b == null ? DeviceProbes.NONE : b.probes();
    }

    /**
     * This device's completion reactor (also once the device is closed: then
     * {@link CompletionReactor#isClosed()} is true and its stats stay readable).
     */
    public final CompletionReactor reactor() {
        CompletionReactor r = reactor;
        if (r == null) {
            throw new IllegalStateException("reactor of " + name() + " was never started");
        }
        return r;
    }

    /**
     * Counts one piece of memory ({@link LiveResources.Kind#DEVICE_MEMORY} or
     * {@link LiveResources.Kind#HOST_MEMORY}) handed out by {@link #allocate} or
     * {@link #allocateHost}, once the allocation has succeeded, or one closed and waiting for its
     * free ({@link LiveResources.Kind#FREEING_MEMORY}). Run the returned action when it is closed
     * (or freed); it counts the memory back once, however often it runs. Streams and waits are
     * counted by {@link GpuStream} and {@link GpuEvent} themselves.
     *
     * @throws IllegalArgumentException for another kind
     */
    final Runnable tracked(LiveResources.Kind kind) {
        if (kind != LiveResources.Kind.DEVICE_MEMORY && kind != LiveResources.Kind.HOST_MEMORY
                && kind != LiveResources.Kind.FREEING_MEMORY) {
            throw new IllegalArgumentException("backends count only memory, not " + kind);
        }
        return ledger.open(kind);
    }

    /**
     * The first fault of any of this device's streams, {@code "<error> on <stream>"}
     * (e.g. {@code "CUDA_ERROR_ILLEGAL_ADDRESS (700) on cuda-stream@1b6d3586"}), or null while none
     * has faulted; the same on every backend. Once set it stays (the first one reported is kept):
     * on a GPU the fault is sticky, the context is unusable and {@link #close()} resets it; the
     * simulated device's other streams keep working, but it reports the fault the same way, so
     * that code and health checks tested on it read the same. A health check reads it (the Spring
     * Boot health indicator, {@code io.cudaloom.spring.CudaLoomHealthIndicator}); a plain field
     * read, no driver call. Backends report their streams' faults through
     * {@code StreamSubmission#faults()}.
     */
    public final @Nullable String fault() {
        return faults.firstDescription();
    }

    /** Whether any stream of this device has faulted: {@link #fault()} is not null. */
    public final boolean isFaulted() {
        return fault() != null;
    }

    /**
     * What this device has handed out and not had back now: memory and streams not closed, waits
     * in progress, with where each was made if site capture is on. Counted the same way on every
     * backend. {@code io.cudaloom.junit.GpuTest}'s leak check reads it after each test.
     */
    public final LiveResources liveResources() {
        return ledger.snapshot();
    }

    /**
     * Whether to record where each allocation, stream and wait of this device is made from now on
     * ({@code true}), or to go back to what the system property {@value ResourceLedger#CAPTURE_PROPERTY}
     * says ({@code off}, the default, {@code sampled}: 1 in {@value ResourceLedger#SAMPLE_EVERY}, or
     * {@code all}). Capturing walks the caller's stack each time: for finding a leak, not for
     * production.
     */
    public final void captureLeakSites(boolean all) {
        ledger.captureAll(all);
    }

    /** A human-readable name, e.g. "NVIDIA H200 (cuda:0)" or "simulated device 3". */
    public abstract String name();

    /** Whether this is the embedded simulated device rather than a real GPU. */
    public abstract boolean isSimulated();

    /** A new stream on this device. */
    public abstract GpuStream newStream();

    /**
     * What a kernel launch on this device may ask for: every launch is checked against it before
     * anything is enqueued ({@link GpuStream#launch}). A CUDA device's, read from the driver when it
     * opened; the simulated device's, those of an H100/H200, so that CI refuses what a GPU would.
     */
    public abstract LaunchLimits launchLimits();

    /**
     * Device memory of {@code bytes} bytes, for kernels and copies (on a GPU {@code cuMemAlloc}).
     *
     * @throws IllegalArgumentException if {@code bytes} is not positive (or too large for the backend)
     * @throws ReactorClosedException if the device is closed
     */
    public abstract DeviceMemory allocate(long bytes);

    /**
     * Host memory of {@code bytes} bytes that this device's copies use (pinned on a GPU, so the
     * copies are asynchronous).
     *
     * @throws IllegalArgumentException if {@code bytes} is not positive or above {@link Integer#MAX_VALUE}
     * @throws ReactorClosedException if the device is closed
     */
    public abstract HostMemory allocateHost(long bytes);

    /**
     * Wakes every waiter with {@link ReactorClosedException}, stops the reactor and releases the
     * device. Work already submitted still runs; flag memory is freed once it cannot be written.
     */
    @Override
    public void close() {
        LiveResources.deviceClosed(openSequence);
        UnclosedDeviceReport.Registration u = unclosed;
        if (u != null) {
            u.closed();
        }
        CompletionReactor r = reactor;
        if (r != null) {
            r.close();
        }
    }

    /**
     * Runs the free of memory closed under queued work once that work is done (stream-ordered
     * frees): on a platform thread of this device's own, never on a caller's (a free may wait in
     * the driver, {@code cuMemFreeHost} for one, which would hold a virtual thread's carrier).
     * One thread, started when the first free comes and ended after a second without one.
     */
    private final ThreadPoolExecutor releaser = new ThreadPoolExecutor(0, 1,
            1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
            Thread.ofPlatform().daemon(true).name("cuda-loom-free (" + getClass().getSimpleName() + ")").factory());

    /** Runs {@code free} on this device's releaser thread (see {@link #releaser}). */
    final void releaseOffCaller(Runnable free) {
        releaser.execute(free);
    }

    @Override
    public String toString() {
        return name();
    }
}
