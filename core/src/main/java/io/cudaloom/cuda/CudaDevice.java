package io.cudaloom.cuda;

import static io.cudaloom.cuda.Cuda.check;
import static jcuda.driver.CUdevice_attribute.*;
import static jcuda.driver.JCudaDriver.*;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.LaunchLimits;
import io.cudaloom.LiveResources;
import io.cudaloom.ReactorClosedException;
import io.cudaloom.ReactorConfig;
import io.cudaloom.internal.BackendAccess;
import io.cudaloom.internal.WorkChecks;
import io.cudaloom.protocol.LifetimeGuard;
import io.cudaloom.protocol.SlotTable.OffHeapFlagArray;
import io.cudaloom.spi.DeviceBackend;
import io.cudaloom.spi.DeviceProbes;
import io.cudaloom.spi.FlagMemory;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import org.jspecify.annotations.Nullable;

/**
 * One CUDA device through the driver API (JCuda), using the device's primary context, with its own
 * {@link io.cudaloom.CompletionReactor}: one reactor, one scanner thread and one pinned flag slab
 * per device. The slab is {@code cuMemHostAlloc(PORTABLE | DEVICEMAP)}, so it is valid in every
 * context of the process; the device writes flags through its device alias.
 *
 * <h2>Context currency</h2>
 * The CUDA context is current per OS thread, and a virtual thread can move to another carrier at
 * every park. So every driver call this library makes, and every launch, copy or allocation made
 * through this wrapper, first makes this device's context current on the carrier it runs on
 * ({@link #makeCurrent()}, a cheap {@code cuCtxSetCurrent}); a JNI call pins the virtual thread to
 * its carrier for its duration, so the context stays current for that call. Callers who use raw
 * JCuda next to this library must do the same: call {@link #makeCurrent()} immediately before
 * their own driver calls, with no blocking operation (no await, no lock, no I/O) in between.
 *
 * <h2>Faults</h2>
 * A kernel fault (e.g. an illegal address) is sticky: the context is unusable, pending flag writes
 * and host functions never run. The reactor's fault probe sees the error through
 * {@code cuStreamQuery} and wakes the waiters with a {@link io.cudaloom.GpuFaultException}; the
 * quarantined flag slots are only reused after {@link #close()} has reset the dead context.
 * Open a new CudaDevice to continue. Whichever call sees a sticky error reports it to the device's
 * fault owner (through its stream's {@code FaultSink}), which keeps the stream's fault and the
 * device's first ({@link #fault()}); this class and {@link CudaStream} keep no copy.
 *
 * <h2>Lifetimes</h2>
 * No driver call runs on a destroyed stream or on a released context, not even one that raced the
 * close. Every call on the context runs inside its guard ({@link LifetimeGuard}: a count of calls
 * in flight and a closing bit, taken with one compare-and-set per call and left with one
 * get-and-add): allocations and frees, module loads, {@code cuCtxSynchronize}, stream creation; and
 * every live stream holds one entry of it from its creation until its destroy, so calls on a
 * stream, guarded by the stream's own guard ({@link StreamHandle}), need no second one. The
 * context is released ({@code cuMemFreeHost} of the flags and {@code cuDevicePrimaryCtxRelease}, or
 * {@code cuDevicePrimaryCtxReset} after a fault) by whoever leaves last once the release has begun:
 * it begins when the reactor may free its flags (healthy) or in {@link #close()} (faulted), closes
 * the context's guard and destroys every stream still alive; a call still inside delays it until
 * it returns, and nobody waits for it. A call refused by a guard gets the same exception as one
 * made after the close. A stream closed by its user is destroyed once its work is done and leaves
 * {@link #liveStreams()} then; the device's close destroys the rest.
 */
public final class CudaDevice extends GpuDevice {
    /** What the API lets its backends do (BackendAccess): start the reactor, count memory, read faults. */
    static final BackendAccess.Hooks API = BackendAccess.hooks();

    private final Set<CudaStream> streams = ConcurrentHashMap.newKeySet();
    /** Modules loaded for device-agnostic kernels ({@link GpuKernel#module()}), unloaded on close. */
    private final ConcurrentHashMap<Object, CudaModule> modules = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<GpuKernel, CudaKernel> kernels = new ConcurrentHashMap<>();
    private final int ordinal;
    private final CUdevice device = new CUdevice();
    private final CUcontext context = new CUcontext();
    private final String name;
    private final int computeMajor;
    private final int computeMinor;
    /** Read from the driver once, at open (cuDeviceGetAttribute); every launch is checked against it. */
    private final LaunchLimits launchLimits;
    private volatile boolean closed;
    /** Set once the context has been released or reset: nothing of it can run any more. */
    private volatile boolean contextGone;
    private volatile CUdeviceptr[] flagPointers = new CUdeviceptr[0];
    private volatile @Nullable FlagMemory flagMemory;
    /**
     * Calls on the context, and one entry per live stream (see "Lifetimes"); its release ends the
     * context ({@link #releaseNow()}).
     */
    private final LifetimeGuard contextCalls = new LifetimeGuard();
    /** Driver streams created and not yet destroyed ({@code cuStreamCreate} minus {@code cuStreamDestroy}). */
    private final AtomicInteger driverStreams = new AtomicInteger();
    /** Calls a guard admitted after the context was released: a self-check of the guards, always 0. */
    private final AtomicLong callsAfterRelease = new AtomicLong();
    /** A stream destroyed while it still had work: the context's release then runs on a thread of its own. */
    private volatile boolean busyAtRelease;
    /** The flags' pinned memory, once the reactor has said it may be freed: freed with the context. */
    private volatile @Nullable Pointer flagsToFree;

    private CudaDevice(int ordinal) {
        this.ordinal = ordinal;
        check(cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
        byte[] buf = new byte[256];
        check(cuDeviceGetName(buf, buf.length, device), "cuDeviceGetName");
        int len = 0;
        while (len < buf.length && buf[len] != 0) {
            len++;
        }
        this.name = new String(buf, 0, len, StandardCharsets.UTF_8) + " (cuda:" + ordinal + ")";
        int[] v = new int[1];
        check(cuDeviceGetAttribute(v, jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "cuDeviceGetAttribute");
        this.computeMajor = v[0];
        check(cuDeviceGetAttribute(v, jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "cuDeviceGetAttribute");
        this.computeMinor = v[0];
        this.launchLimits = new LaunchLimits(attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
                attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z), attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y), attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
                attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
        check(cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain");
    }

    /** One {@code cuDeviceGetAttribute} of this device (no context needed). */
    private int attribute(int attribute) {
        int[] v = new int[1];
        check(cuDeviceGetAttribute(v, attribute, device), "cuDeviceGetAttribute(" + attribute + ")");
        return v[0];
    }

    /** Number of CUDA devices (initialises the driver). */
    public static int deviceCount() {
        return Cuda.init();
    }

    /**
     * Which binding makes the driver calls of every kernel launch, async copy and flag write of a
     * {@link CudaStream}: {@code "ffm"} ({@code java.lang.foreign} downcalls to libcuda) or
     * {@code "jcuda (why)"}, e.g. {@code "jcuda (asked for: cudaloom.driverCalls=jcuda)"}. Unset,
     * the system property {@code cudaloom.driverCalls} means the downcalls wherever they can be
     * made; {@code jcuda} or {@code ffm} asks for one. The choice is made once per process, by the
     * first CUDA stream, kernel or pinned buffer, or by this method if it comes first; downcalls
     * that cannot be made (Java 21, native access not enabled, no libcuda.so.1) leave the calls on
     * JCuda, logged once (a WARNING if {@code ffm} was asked for). For headers of benchmark output
     * and for tests; docs/TUNING.md, "Driver calls: JCuda or FFM downcalls". Never throws.
     */
    public static String driverCalls() {
        if (!Cuda.isInstalled()) {
            return "jcuda (JCuda is not on the class path: no CUDA backend)";
        }
        try {
            return HotCalls.binding();
        } catch (LinkageError e) {
            return "jcuda (" + e + ")";
        }
    }

    /** {@link #open(int, ReactorConfig)} with the default configuration. */
    public static CudaDevice open(int ordinal) {
        return open(ordinal, ReactorConfig.defaults());
    }

    /**
     * Opens CUDA device {@code ordinal} (its primary context) and starts its reactor.
     *
     * @throws IllegalArgumentException if there is no such device, or the system property
     *     {@code cudaloom.driverCalls} is neither {@code ffm} nor {@code jcuda}
     * @throws CudaDriverException if the driver cannot be initialised, or not even loaded (then the
     *     message is one line, "no CUDA driver: ...", and the cause the {@link LinkageError})
     * @throws IllegalStateException if JCuda is not on the class path (the message names its artifacts)
     */
    public static CudaDevice open(int ordinal, ReactorConfig config) {
        Objects.requireNonNull(config, "config");
        DriverCalls.check(); // a bad cudaloom.driverCalls fails here, not as a silent fallback
        int count = Cuda.init();
        if (ordinal < 0 || ordinal >= count) {
            throw new IllegalArgumentException("CUDA device ordinal " + ordinal + " out of range: "
                    + count + " device(s) present");
        }
        CudaDevice d = new CudaDevice(ordinal);
        try {
            API.startReactor(d, config, d.new Backend(), s -> ((CudaStream) s).new Backend());
        } catch (RuntimeException e) {
            d.closed = true;
            d.startRelease(); // no stream yet: released here
            throw e;
        }
        return d;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public boolean isSimulated() {
        return false;
    }

    public int ordinal() {
        return ordinal;
    }

    /** Read from the driver when this device opened ({@code cuDeviceGetAttribute}). */
    @Override
    public LaunchLimits launchLimits() {
        return launchLimits;
    }

    /** E.g. "9.0" for an H100/H200. */
    public String computeCapability() {
        return computeMajor + "." + computeMinor;
    }

    /**
     * Makes this device's context current on the calling OS thread (the carrier, for a virtual
     * thread). Called by every wrapper method before its driver call; see the class comment.
     */
    public void makeCurrent() {
        ensureOpen();
        if (!contextCalls.enter()) {
            throw new IllegalStateException(name + " is closed"); // lost the race to the close: as after it
        }
        int r;
        try {
            r = cuCtxSetCurrent(context);
        } finally {
            contextCalls.exit();
        }
        check(r, "cuCtxSetCurrent");
    }

    /**
     * {@inheritDoc}
     *
     * @throws ReactorClosedException if the device is closed
     */
    @Override
    public CudaStream newStream() {
        enterContext("makes no new streams");
        CudaStream s;
        try {
            check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
            s = new CudaStream(this); // cuStreamCreate
        } catch (RuntimeException e) {
            contextCalls.exit();
            throw e;
        }
        // Success: this call's entry of the context guard is now the stream's, until its destroy.
        streams.add(s);
        // Dekker with startRelease(): it closes the guard, then destroys the streams it finds in the
        // set; this adds to the set, then reads the guard. At least one of the two sees the other.
        if (contextCalls.isClosing()) {
            s.closeForRelease();
            throw new ReactorClosedException(name + " is closed: it makes no new streams");
        }
        if (closed) {
            s.close(); // the device's close, which closes the open streams, may have missed it
            throw new ReactorClosedException(name + " is closed: it makes no new streams");
        }
        return s;
    }

    /** Admits a call on the context, or throws as a call after the close does. Pair with {@code contextCalls.exit()}. */
    private void enterContext(String what) {
        checkOpen(what);
        if (!contextCalls.enter()) {
            throw new ReactorClosedException(name + " is closed: it " + what);
        }
        if (closed) {
            contextCalls.exit();
            throw new ReactorClosedException(name + " is closed: it " + what);
        }
    }

    /**
     * Admits a call on the context for one of its buffers or modules (a free, an unload, a function
     * lookup): false once the context is released or about to be (which frees everything of it:
     * then free nothing). Pair a true answer with {@link #exitContext()}.
     */
    boolean enterToFree() {
        if (!contextCalls.enter()) {
            return false;
        }
        if (contextGone) { // cannot happen: the release waits for every call inside
            contextCalls.exit();
            callAdmittedAfterRelease();
            return false;
        }
        return true;
    }

    void exitContext() {
        contextCalls.exit();
    }

    /** Device memory of {@code bytes} bytes ({@code cuMemAlloc}). */
    @Override
    public DeviceBuffer allocate(long bytes) {
        WorkChecks.allocation("device memory", bytes, Long.MAX_VALUE);
        enterContext("allocates no memory");
        CUdeviceptr p = AddressedDevicePointer.create(); // can say its address (DeviceBuffer.address)
        int r;
        try {
            cuCtxSetCurrent(context);
            r = cuMemAlloc(p, bytes);
        } finally {
            contextCalls.exit();
        }
        check(r, "cuMemAlloc(" + bytes + ")");
        return new DeviceBuffer(this, p, bytes);
    }

    /** Pinned host memory of {@code bytes} bytes, for async copies ({@code cuMemHostAlloc}, portable). */
    @Override
    public PinnedBuffer allocateHost(long bytes) {
        WorkChecks.allocation("host memory", bytes, Integer.MAX_VALUE);
        enterContext("allocates no memory");
        Pointer p = new Pointer();
        int r;
        try {
            cuCtxSetCurrent(context);
            r = cuMemHostAlloc(p, bytes, CU_MEMHOSTALLOC_PORTABLE);
        } finally {
            contextCalls.exit();
        }
        check(r, "cuMemHostAlloc(" + bytes + ")");
        return new PinnedBuffer(this, p, bytes);
    }

    /** Loads a module from PTX text ({@code cuModuleLoadData}). */
    public CudaModule loadModule(String ptx) {
        Objects.requireNonNull(ptx, "ptx");
        ensureOpen();
        if (!contextCalls.enter()) {
            throw new IllegalStateException(name + " is closed");
        }
        try {
            check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
            return new CudaModule(this, ptx); // cuModuleLoadData
        } finally {
            contextCalls.exit();
        }
    }

    /**
     * The loaded form of a device-agnostic kernel: its module is loaded on first use and kept
     * (one per module per device) until the device closes; its declared parameters are checked
     * against the PTX then.
     *
     * @throws IllegalStateException if the kernel's PTX resource is missing
     * @throws IllegalArgumentException if its declared parameters do not match its PTX
     */
    CudaKernel kernel(GpuKernel kernel) {
        CudaKernel k = kernels.get(kernel);
        if (k == null) {
            checkOpen("loads no kernels");
            CudaModule module = modules.computeIfAbsent(API.kernelModule(kernel), m -> loadModule(kernel.ptx()));
            k = kernels.computeIfAbsent(kernel, g -> module.kernel(g.entry(), g.params()));
        }
        return k;
    }

    private void checkOpen(String what) {
        if (closed) {
            throw new ReactorClosedException(name + " is closed: it " + what);
        }
    }

    /**
     * Blocks the calling thread until all work on the device is done ({@code cuCtxSynchronize}). A
     * synchronize in flight keeps the context alive: the device's close returns at once, and the
     * context's release follows when the synchronize returns.
     *
     * @throws IllegalStateException if the device is closed
     */
    @org.jetbrains.annotations.Blocking
    public void synchronize() {
        ensureOpen();
        if (!contextCalls.enter()) {
            throw new IllegalStateException(name + " is closed");
        }
        int r;
        try {
            cuCtxSetCurrent(context);
            r = cuCtxSynchronize();
        } finally {
            contextCalls.exit();
        }
        check(r, "cuCtxSynchronize");
    }

    /**
     * Streams made on this device and not yet destroyed: open ones, and closed ones whose work is
     * not done yet. A closed stream leaves once its work is done; none is left once the device's
     * close has released the context. A leak check (the set this device keeps).
     */
    int liveStreams() {
        return streams.size();
    }

    /**
     * Driver streams this device created ({@code cuStreamCreate}) and has not destroyed
     * ({@code cuStreamDestroy}): what the driver holds for it. Equals {@link #liveStreams()} except
     * while a stream is being made or destroyed.
     */
    int driverStreams() {
        return driverStreams.get();
    }

    /**
     * Driver calls a lifetime guard admitted after the context was released: always 0 (a guard
     * refuses every call from the moment the release begins, and the release waits for the calls
     * inside). A self-check, read by tests and the lifetime stress.
     */
    long callsAdmittedAfterRelease() {
        return callsAfterRelease.get();
    }

    /**
     * Wakes all waiters, stops the reactor, and releases the primary context (resetting it if it
     * faulted, so that a new CudaDevice gets a fresh, working context). Work already submitted to a
     * healthy context still completes; pinned flag memory is freed once no write can land.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true; // first: work, allocations and new streams are refused from now on
        super.close(); // reactor: waiters woken, scanner stopped
        // Not unloaded here: kernels of busy streams may still run; the modules go with the
        // primary context when its last user releases it (below).
        modules.clear();
        kernels.clear();
        for (CudaStream s : streams) {
            s.close(); // their drains are refused (the reactor is closed): the release destroys them
        }
        if (isFaulted()) {
            // The dead context's work will never run: tear it down (once the calls inside have
            // left) so nothing of it can land; then the reclaimer sees the quarantined slots settled.
            startRelease();
        }
        // A healthy context is released once the reclaimer may free the flags (see allocateFlags),
        // when its pending flag writes have landed.
    }

    boolean isClosed() {
        return closed;
    }

    CUcontext contextHandle() {
        return context;
    }

    boolean isContextGone() {
        return contextGone;
    }

    void driverStreamCreated() {
        driverStreams.incrementAndGet();
    }

    /**
     * {@code s}'s handle was destroyed ({@link StreamHandle}): it leaves the set, and gives back its
     * entry of the context guard, which may release the context here, on this thread.
     */
    void streamDestroyed(CudaStream s, boolean idle) {
        streams.remove(s);
        driverStreams.decrementAndGet();
        if (!idle) {
            busyAtRelease = true;
        }
        contextCalls.exit();
    }

    void callAdmittedAfterRelease() {
        callsAfterRelease.incrementAndGet();
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(name + " is closed");
        }
    }

    /** The device pointer of flag {@code slot}, or null if {@code memory} is not this device's flag memory. */
    @Nullable CUdeviceptr flagPointer(FlagMemory memory, int slot) {
        return memory == flagMemory ? flagPointers[slot] : null;
    }

    /** The device's side for the reactor: flag memory, and the counters the tests read. */
    private final class Backend implements DeviceBackend, DeviceProbes {
        @Override
        public FlagMemory allocateFlags(int count) {
            return CudaDevice.this.allocateFlags(count);
        }

        @Override
        public DeviceProbes probes() {
            return this;
        }

        @Override
        public int liveStreams() {
            return CudaDevice.this.liveStreams();
        }

        @Override
        public int driverStreams() {
            return CudaDevice.this.driverStreams();
        }

        @Override
        public long callsAdmittedAfterRelease() {
            return CudaDevice.this.callsAdmittedAfterRelease();
        }
    }

    private FlagMemory allocateFlags(int count) {
        makeCurrent();
        long bytes = 4L * count;
        Pointer host = new Pointer();
        check(cuMemHostAlloc(host, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                "cuMemHostAlloc(PORTABLE|DEVICEMAP, " + bytes + ")");
        CUdeviceptr alias = new CUdeviceptr();
        int r = cuMemHostGetDevicePointer(alias, host, 0);
        if (r != jcuda.driver.CUresult.CUDA_SUCCESS) {
            cuMemFreeHost(host);
            check(r, "cuMemHostGetDevicePointer");
        }
        OffHeapFlagArray flags = new OffHeapFlagArray(
                host.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder()), count);
        flags.clear();
        // One CUdeviceptr per slot, made once: arming a slot allocates nothing.
        CUdeviceptr[] pointers = new CUdeviceptr[count];
        for (int i = 0; i < count; i++) {
            pointers[i] = alias.withByteOffset(4L * i);
        }
        this.flagPointers = pointers;
        FlagMemory memory = new FlagMemory(flags, () -> freeFlagsAndContext(host));
        this.flagMemory = memory;
        return memory;
    }

    /**
     * The reactor's final step: nothing can write the flags any more. {@code cuMemFreeHost}
     * synchronizes the context (it waits for all of its work, such as a stream blocked in
     * {@code cuStreamWaitValue32} or a long kernel), so while a stream still has work the free and
     * the context's release run on a thread of their own: {@link #close()} never waits for GPU work.
     */
    private void freeFlagsAndContext(Pointer host) {
        if (contextGone) {
            return; // the reset context took its pinned allocations with it
        }
        flagsToFree = host; // before the release begins: it reads it once every call has left
        startRelease();
    }

    /**
     * Begins the context's release, once: no call enters the context from now on, every stream
     * still alive is destroyed (busy or not: see {@link StreamHandle#closeForRelease()}), and the
     * release itself ({@link #releaseNow()}) runs when the last of them, and of the calls inside,
     * has left. Waits for nothing.
     */
    private void startRelease() {
        if (!contextCalls.close(this::releaseNow)) {
            return;
        }
        for (CudaStream s : streams) {
            s.closeForRelease();
        }
    }

    /**
     * The context guard's release: no call is inside the context and none can enter, no stream is
     * alive. A faulted context is reset; a healthy one frees the flags and is released, on a
     * thread of its own if a stream still had work when it was destroyed ({@code cuMemFreeHost}
     * then waits for it): the device's close never waits for GPU work.
     */
    private void releaseNow() {
        if (StreamHandle.onHostFunction()) { // the last one out was a host function: no driver call there
            Thread.ofVirtual().name("cuda-loom release " + name).start(this::releaseNow);
            return;
        }
        contextGone = true; // before the calls that end it; every reader that may touch it checks it
        if (isFaulted()) {
            int r = cuDevicePrimaryCtxReset(device);
            if (r != jcuda.driver.CUresult.CUDA_SUCCESS) {
                System.err.println("cuda-loom: resetting the faulted context of " + name + " failed: " + Cuda.errorName(r));
            }
            return;
        }
        Pointer host = flagsToFree;
        if (!busyAtRelease) {
            freeAndRelease(host);
            return;
        }
        Thread t = Thread.ofPlatform().daemon(true).inheritInheritableThreadLocals(false)
                .name("cuda-loom release " + name).unstarted(() -> freeAndRelease(host));
        t.setContextClassLoader(ClassLoader.getSystemClassLoader()); // pin no application's loader
        t.start();
    }

    private void freeAndRelease(@Nullable Pointer host) {
        cuCtxSetCurrent(context);
        if (host != null) {
            cuMemFreeHost(host);
        }
        cuDevicePrimaryCtxRelease(device);
    }

    @Override
    public String toString() {
        return name;
    }
}
