package io.cudaloom.cuda;

import static jcuda.driver.JCudaDriver.*;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuFaultException;
import io.cudaloom.GpuKernel;
import io.cudaloom.HostMemory;
import io.cudaloom.GpuStream;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamState;
import io.cudaloom.internal.WorkChecks;
import io.cudaloom.protocol.LifetimeGuard;
import java.util.Objects;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;

/**
 * A CUDA stream ({@code cuStreamCreate(NON_BLOCKING)}) with the operations callers need around
 * {@link #await()}: kernel launches, async copies and memsets. Every method makes the device's
 * context current first (see {@link CudaDevice}).
 *
 * <p>{@link #close()} leaves the work already submitted running; the stream is destroyed
 * ({@code cuStreamDestroy}) once that work is done (when the close's drain completes), or by the
 * device's close. No driver call runs on the handle after that, not even one that raced the
 * close: every call on it is admitted by its {@link StreamHandle}'s guard, and one refused gets
 * the same exception as a call made after the close ({@link IllegalStateException}, or
 * {@link io.cudaloom.ReactorClosedException} once the device is closed).
 *
 * <p>A sticky error seen by any call on the stream (a work call, a flag write or host function, a
 * query) is reported to the device's fault owner ({@code BackendAccess.Hooks#faultSink}), which keeps it (this class
 * keeps no copy); from then on every call is refused with the owner's {@link GpuFaultException}.
 */
public final class CudaStream extends GpuStream {
    private final CudaDevice device;
    /** The driver's stream; every call on it is admitted by its guard ({@link StreamHandle}). */
    private final StreamHandle stream;

    CudaStream(CudaDevice device) {
        super(device);
        this.device = device;
        StreamHandle handle;
        try {
            handle = new StreamHandle(this, device); // cuStreamCreate, under the device's guard (newStream)
        } catch (RuntimeException | Error e) {
            CudaDevice.API.notCreated(this); // not a stream the caller could leak
            throw e;
        }
        this.stream = handle;
    }

    public CudaDevice cudaDevice() {
        return device;
    }

    /**
     * The raw JCuda handle, for callers mixing raw JCuda in (see CudaDevice on context currency).
     * Valid until {@link #close()}: the library destroys the stream once the work submitted before
     * the close is done, so enqueue nothing on it after the close.
     *
     * <p>With {@link io.cudaloom.Submission#COMBINING} launches, copies and memsets are appended to
     * the stream's submission queue and made later by whichever thread drains it: this method first
     * waits until everything appended before the call is in the driver's queue, so raw work enqueued
     * on the handle afterwards is behind it. Work appended by other threads after this call may
     * still go to the driver before or after yours: take the handle again before each raw batch,
     * and count raw work with {@link #noteExternalSubmission()}.
     */
    public CUstream handle() {
        CudaDevice.API.flush(this);
        return stream.raw();
    }

    /**
     * Launches {@code kernel} with a 1-D grid. Arguments may be {@link DeviceBuffer}s (passed as
     * device pointers), {@code Integer}, {@code Long}, {@code Float} or {@code Double}, as the
     * kernel's {@link CudaKernel#params()} say.
     *
     * @throws IllegalArgumentException if a dimension is below 1 or over the device's
     *     {@link CudaDevice#launchLimits() launch limits}, or an argument's count or type does not
     *     match the kernel's parameters (checked before anything is enqueued)
     */
    public void launch(CudaKernel kernel, int gridX, int blockX, Object... args) {
        launch(kernel, gridX, 1, 1, blockX, 1, 1, 0, args);
    }

    /**
     * Launches {@code kernel} with a 3-D grid and block and dynamic shared memory.
     *
     * @throws IllegalArgumentException as {@link #launch(CudaKernel, int, int, Object...)}
     */
    public void launch(CudaKernel kernel, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
            int sharedBytes, Object... args) {
        Objects.requireNonNull(kernel, "kernel");
        Objects.requireNonNull(args, "args");
        WorkChecks.dimensions(device.launchLimits(), kernel.name(), gridX, gridY, gridZ, blockX, blockY, blockZ,
                sharedBytes);
        WorkChecks.arguments(device, kernel.name(), kernel.params(), args);
        enqueueLaunch(kernel, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes, args);
    }

    /** The launch after the checks of its dimensions ({@link WorkChecks#dimensions}) and arguments. */
    private void enqueueLaunch(CudaKernel kernel, int gridX, int gridY, int gridZ, int blockX, int blockY,
            int blockZ, int sharedBytes, Object[] args) {
        if (kernel.module().device() != device) {
            throw new IllegalArgumentException("kernel " + kernel.name() + " was loaded on "
                    + kernel.module().device().name() + ", not on " + device.name());
        }
        if (CudaDevice.API.combining(this)) {
            appendLaunch(kernel, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes, args);
            return;
        }
        int entered = enterBuffers(args);
        try {
            Pointer params = KernelArgs.pack(kernel.name(), args);
            boolean admitted = admitWork();
            int r;
            try {
                r = cuLaunchKernel(kernel.function(), gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                        stream.raw(), params, null);
            } finally {
                stream.exit();
            }
            if (r != CUresult.CUDA_SUCCESS) {
                CudaDevice.API.submissionFailed(this, admitted);
                check(r, "cuLaunchKernel(" + kernel.name() + ")"); // the message is built on failure only
            }
            CudaDevice.API.noteSubmission(this);
            if (entered > 0) {
                for (Object a : args) {
                    if (a instanceof DeviceBuffer b) {
                        b.lifetime.usedOn(this);
                    }
                }
            }
        } finally {
            exitBuffers(args, entered);
        }
    }

    /**
     * Enters the lifetime of every {@link DeviceBuffer} argument (stream-ordered frees: a close then
     * waits for this launch), in order; if one is closed, exits those entered and throws its error.
     * Returns how many were entered.
     */
    private static int enterBuffers(Object[] args) {
        int entered = 0;
        for (Object a : args) {
            if (a instanceof DeviceBuffer b) {
                if (!b.lifetime.enter()) {
                    exitBuffers(args, entered);
                    throw b.closedError();
                }
                entered++;
            }
        }
        return entered;
    }

    /** Exits the first {@code entered} {@link DeviceBuffer} arguments' lifetimes. */
    private static void exitBuffers(Object[] args, int entered) {
        for (int i = 0, n = 0; i < args.length && n < entered; i++) {
            if (args[i] instanceof DeviceBuffer b) {
                b.lifetime.exit();
                n++;
            }
        }
    }

    /** Launches a device-agnostic kernel: its PTX, loaded on this device on first use. */
    @Override
    public void launch(GpuKernel kernel, int gridX, int blockX, Object... args) {
        WorkChecks.launch(device, kernel, gridX, blockX, args);
        enqueueLaunch(device.kernel(kernel), gridX, 1, 1, blockX, 1, 1, 0, args);
    }

    /** Launches the library's {@code spin_kernel} (one thread), which spins on %globaltimer. */
    @Override
    public void launchKernel(java.time.Duration duration) {
        long nanos = WorkChecks.durationNanos(duration);
        enqueueLaunch(device.kernel(CudaDevice.API.spinKernel()), 1, 1, 1, 1, 1, 1, 0, new Object[] {nanos});
    }

    /** Async copy host to device; {@code src} is pinned ({@link CudaDevice#allocateHost}). */
    @Override
    public void copy(HostMemory src, long srcOffset, DeviceMemory dst, long dstOffset, long bytes) {
        WorkChecks.copy(device, src, srcOffset, dst, dstOffset, bytes);
        PinnedBuffer host = (PinnedBuffer) src; // the checks above: allocated by this CUDA device
        DeviceBuffer memory = (DeviceBuffer) dst;
        if (CudaDevice.API.combining(this)) {
            appendCopy(host, memory, true, srcOffset, dstOffset, bytes);
            return;
        }
        enterBoth(host, memory);
        try {
            CUdeviceptr to = memory.rawPointer().withByteOffset(dstOffset);
            Pointer from = host.rawPointer().withByteOffset(srcOffset);
            boolean admitted = admitWork();
            int r;
            try {
                r = cuMemcpyHtoDAsync(to, from, bytes, stream.raw());
            } finally {
                stream.exit();
            }
            submitted(admitted, r, "cuMemcpyHtoDAsync");
            host.lifetime.usedOn(this);
            memory.lifetime.usedOn(this);
        } finally {
            memory.lifetime.exit();
            host.lifetime.exit();
        }
    }

    /**
     * Enters both buffers' lifetimes (stream-ordered frees: a close then waits for this copy);
     * throws the closed one's error, having entered neither, if one is closed.
     */
    private static void enterBoth(PinnedBuffer host, DeviceBuffer memory) {
        if (!host.lifetime.enter()) {
            throw host.closedError();
        }
        if (!memory.lifetime.enter()) {
            host.lifetime.exit();
            throw memory.closedError();
        }
    }

    /** Async copy device to host; {@code dst} is pinned ({@link CudaDevice#allocateHost}). */
    @Override
    public void copy(DeviceMemory src, long srcOffset, HostMemory dst, long dstOffset, long bytes) {
        WorkChecks.copy(device, dst, dstOffset, src, srcOffset, bytes);
        DeviceBuffer memory = (DeviceBuffer) src;
        PinnedBuffer host = (PinnedBuffer) dst;
        if (CudaDevice.API.combining(this)) {
            appendCopy(host, memory, false, dstOffset, srcOffset, bytes);
            return;
        }
        enterBoth(host, memory);
        try {
            Pointer to = host.rawPointer().withByteOffset(dstOffset);
            CUdeviceptr from = memory.rawPointer().withByteOffset(srcOffset);
            boolean admitted = admitWork();
            int r;
            try {
                r = cuMemcpyDtoHAsync(to, from, bytes, stream.raw());
            } finally {
                stream.exit();
            }
            submitted(admitted, r, "cuMemcpyDtoHAsync");
            host.lifetime.usedOn(this);
            memory.lifetime.usedOn(this);
        } finally {
            memory.lifetime.exit();
            host.lifetime.exit();
        }
    }

    /** Async fill of {@code count} 32-bit words of {@code dst} with {@code value}. */
    @Override
    public void memset32(DeviceMemory dst, int value, long count) {
        WorkChecks.memset32(device, dst, count);
        DeviceBuffer memory = (DeviceBuffer) dst;
        if (!memory.lifetime.enter()) {
            throw memory.closedError();
        }
        if (CudaDevice.API.combining(this)) {
            boolean appended = false;
            try {
                checkUsable();
                boolean taken = CudaDevice.API.append(this, new MemsetOp(memory, value, count));
                appended = true; // the entry exits the lifetime now, taken or not
                if (!taken) {
                    throw refusal(); // raced the close and came after it
                }
            } finally {
                if (!appended) {
                    memory.lifetime.exit();
                }
            }
            return;
        }
        try {
            CUdeviceptr to = memory.rawPointer();
            boolean admitted = admitWork();
            int r;
            try {
                r = cuMemsetD32Async(to, value, count, stream.raw());
            } finally {
                stream.exit();
            }
            submitted(admitted, r, "cuMemsetD32Async");
            memory.lifetime.usedOn(this);
        } finally {
            memory.lifetime.exit();
        }
    }

    /**
     * The backend's half of {@link #close()}, once, after the stream was marked closed: nothing to
     * do here, since every call checks {@link #isClosed()} once admitted, so the stream takes no
     * more work, flag writes or host functions. The destroy follows the drain ({@link #drained()}).
     */
    private void shutdown() {
        // see above
    }

    /** The close's drain completed without failure: destroy the stream once it is idle. */
    private void drained() {
        stream.destroyOnceIdle();
    }

    /** The device's release: destroy the stream now (see {@link StreamHandle#closeForRelease()}). */
    void closeForRelease() {
        stream.closeForRelease();
    }

    @Override
    public String toString() {
        return "cuda-stream@" + Integer.toHexString(System.identityHashCode(this));
    }

    // ---- backend side -------------------------------------------------------------------------

    private StreamState queryState() {
        if (CudaDevice.API.faultSink(this).hasFaulted()) {
            return StreamState.FAULTED;
        }
        LifetimeGuard admitted = stream.enterQuery();
        if (admitted == null) {
            return stateAfterDestroy();
        }
        int r;
        try {
            cuCtxSetCurrent(device.contextHandle());
            r = cuStreamQuery(stream.raw());
        } finally {
            admitted.exit();
        }
        if (r == CUresult.CUDA_SUCCESS) {
            return StreamState.IDLE;
        }
        if (r == CUresult.CUDA_ERROR_NOT_READY) {
            return StreamState.BUSY;
        }
        noteFault(r);
        return StreamState.FAULTED;
    }

    /**
     * The state of a stream whose handle is destroyed or about to be: idle if it was when destroyed;
     * else (its destroy still waits for work that raced the close, or it was destroyed busy by the
     * device's release) busy, or faulted once the device is.
     */
    private StreamState stateAfterDestroy() {
        if (CudaDevice.API.faultSink(this).hasFaulted()) {
            return StreamState.FAULTED;
        }
        if (stream.isDestroyed() && stream.wasIdleAtDestroy()) {
            return StreamState.IDLE;
        }
        String deviceFault = device.fault();
        if (deviceFault == null) {
            return StreamState.BUSY;
        }
        // Its work died with the context: reported as this stream's fault (FaultSink: before FAULTED).
        CudaDevice.API.faultSink(this).streamFaulted("the context faulted: " + deviceFault, null);
        return StreamState.FAULTED;
    }

    private boolean enqueueFlagWrite(FlagMemory memory, int slot) {
        CUdeviceptr target = device.flagPointer(memory, slot);
        if (target == null || !stream.enter()) {
            return false;
        }
        int r;
        try {
            // Combining: the closed check was made at the append (entries appended before a close are submitted after it).
            if ((isClosed() && !CudaDevice.API.combining(this)) || CudaDevice.API.faultSink(this).hasFaulted()) {
                return false;
            }
            cuCtxSetCurrent(device.contextHandle());
            // Flags 0 (default): the write is preceded by a memory fence, so everything the stream's
            // earlier work wrote is visible once the host observes the flag.
            r = cuStreamWriteValue32(stream.raw(), target, 1, 0);
        } finally {
            stream.exit();
        }
        if (r != CUresult.CUDA_SUCCESS) {
            if (Cuda.isStickyFault(r)) {
                noteFault(r);
            }
            return false; // refused: the reactor falls back to a host function
        }
        return true;
    }

    private boolean enqueueHostCallback(Runnable callback) {
        if (!stream.enter()) {
            return false;
        }
        int r;
        try {
            if ((isClosed() && !CudaDevice.API.combining(this)) || CudaDevice.API.faultSink(this).hasFaulted()) {
                return false;
            }
            cuCtxSetCurrent(device.contextHandle());
            r = cuLaunchHostFunc(stream.raw(), StreamHandle.hostFunction(callback), null);
        } finally {
            stream.exit();
        }
        if (r != CUresult.CUDA_SUCCESS) {
            if (Cuda.isStickyFault(r)) {
                noteFault(r);
            }
            return false;
        }
        return true;
    }

    /**
     * Blocks the calling thread in {@code cuStreamSynchronize} until the stream's work is done: the
     * classic way to wait, for baselines and interop. It cannot be interrupted and is not woken by
     * {@code close()}; on a virtual thread it pins the carrier for the whole wait. Use
     * {@link #await()} to wait without holding a thread.
     *
     * <p>A synchronize in flight keeps the handle alive: a {@link #close()} (or the device's) meanwhile
     * returns at once, and the destroy follows when the synchronize returns (when the work is done,
     * which is when the destroy would come anyway), run by the synchronizing thread.
     *
     * <p>With {@link io.cudaloom.Submission#COMBINING} it first waits until everything appended to
     * the stream's submission queue before the call has been submitted (which may wait for room,
     * that is for earlier work to complete), then synchronizes.
     *
     * @throws GpuFaultException if the stream's context has faulted
     * @throws IllegalStateException if the stream is closed
     * @throws io.cudaloom.ReactorClosedException if the device is closed
     */
    @org.jetbrains.annotations.Blocking
    public void synchronize() {
        long counted = submissionCount(); // before the call: all of it is done once it returns
        CudaDevice.API.flush(this); // combining: everything counted above is in the driver's queue first
        enter();
        int r;
        try {
            r = cuStreamSynchronize(stream.raw());
        } finally {
            stream.exit();
        }
        check(r, "cuStreamSynchronize");
        CudaDevice.API.noteCompletedThrough(this, counted); // a proof: returns the admission room of that work
    }

    private boolean flagWritesSettled() {
        if (device.isContextGone()) {
            return true; // nothing of the context can run any more
        }
        if (CudaDevice.API.faultSink(this).hasFaulted()) {
            return false; // dead context still allocated: wait for CudaDevice.close() to reset it
        }
        LifetimeGuard admitted = stream.enterQuery();
        if (admitted == null) {
            return stream.isDestroyed() && stream.wasIdleAtDestroy(); // else the destroy still waits for work
        }
        int r;
        try {
            cuCtxSetCurrent(device.contextHandle());
            r = cuStreamQuery(stream.raw());
        } finally {
            admitted.exit();
        }
        if (r == CUresult.CUDA_SUCCESS) {
            return true;
        }
        noteDriverResult(r);
        return false;
    }

    // ---- submission by combining ----------------------------------------------------------------

    /** Combining: the launch's checks done; enters the buffers' lifetimes, packs the arguments, appends. */
    private void appendLaunch(CudaKernel kernel, int gridX, int gridY, int gridZ, int blockX, int blockY,
            int blockZ, int sharedBytes, Object[] args) {
        int entered = enterBuffers(args);
        boolean appended = false;
        try {
            checkUsable();
            Pointer params = KernelArgs.pack(kernel.name(), args);
            boolean taken = CudaDevice.API.append(this, new LaunchOp(kernel, gridX, gridY, gridZ, blockX, blockY, blockZ,
                    sharedBytes, params, args, entered));
            appended = true; // the entry exits the lifetimes now, taken or not
            if (!taken) {
                throw refusal(); // raced the close and came after it
            }
        } finally {
            if (!appended) {
                exitBuffers(args, entered);
            }
        }
    }

    /** Combining: a copy's checks done; enters both lifetimes, appends. */
    private void appendCopy(PinnedBuffer host, DeviceBuffer memory, boolean toDevice, long hostOffset, long deviceOffset,
            long bytes) {
        enterBoth(host, memory);
        boolean appended = false;
        try {
            checkUsable();
            boolean taken = CudaDevice.API.append(this, new CopyOp(host, memory, toDevice, hostOffset, deviceOffset, bytes));
            appended = true; // the entry exits the lifetimes now, taken or not
            if (!taken) {
                throw refusal(); // raced the close and came after it
            }
        } finally {
            if (!appended) {
                memory.lifetime.exit();
                host.lifetime.exit();
            }
        }
    }

    /** A work call is refused at the call (nothing appended) once the device or stream is closed or the stream faulted. */
    private void checkUsable() {
        if (device.isClosed() || isClosed() || CudaDevice.API.faultSink(this).hasFaulted()) {
            throw refusal();
        }
    }

    /**
     * A work entry of the submission queue: made by the drainer inside the handle's guard with the
     * context current; a driver error is the stream's fault, naming the call and the error
     * ({@code cuLaunchKernel(scale_f32) failed: CUDA_ERROR_...}). A handle the guard refuses was
     * released (after the close's drain, or by the device's release): the entry is dropped, as work
     * that raced the close. The lifetimes entered at the call are exited in {@code finish}, after the
     * driver call (stream-ordered frees: queued work keeps its memory).
     */
    private abstract class CudaOp extends io.cudaloom.spi.StreamOp {
        private boolean made;

        CudaOp() {
            super(true);
        }

        /** The driver call itself (the context is current, the guard held). */
        abstract int call();

        /** The call's name for a fault's message. */
        abstract String name();

        @Override
        public @org.jspecify.annotations.Nullable String submit(long position) {
            if (!stream.enter()) {
                return null; // released: dropped (see above)
            }
            int r;
            try {
                r = cuCtxSetCurrent(device.contextHandle());
                if (r == CUresult.CUDA_SUCCESS) {
                    r = call();
                }
            } finally {
                stream.exit();
            }
            if (r != CUresult.CUDA_SUCCESS) {
                return name() + " failed: " + Cuda.errorName(r);
            }
            made = true;
            return null;
        }

        /** Whether the driver took the entry (so its memory was used on the stream). */
        final boolean made(boolean submitted) {
            return submitted && made;
        }
    }

    private final class LaunchOp extends CudaOp {
        private final CudaKernel kernel;
        private final int gridX;
        private final int gridY;
        private final int gridZ;
        private final int blockX;
        private final int blockY;
        private final int blockZ;
        private final int sharedBytes;
        private final Pointer params;
        private final Object[] args;
        private final int entered;

        LaunchOp(CudaKernel kernel, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
                int sharedBytes, Pointer params, Object[] args, int entered) {
            this.kernel = kernel;
            this.gridX = gridX;
            this.gridY = gridY;
            this.gridZ = gridZ;
            this.blockX = blockX;
            this.blockY = blockY;
            this.blockZ = blockZ;
            this.sharedBytes = sharedBytes;
            this.params = params;
            this.args = args;
            this.entered = entered;
        }

        @Override
        int call() {
            return cuLaunchKernel(kernel.function(), gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                    stream.raw(), params, null);
        }

        @Override
        String name() {
            return "cuLaunchKernel(" + kernel.name() + ")";
        }

        @Override
        public void finish(boolean submitted) {
            if (made(submitted) && entered > 0) {
                for (Object a : args) {
                    if (a instanceof DeviceBuffer b) {
                        b.lifetime.usedOn(CudaStream.this);
                    }
                }
            }
            exitBuffers(args, entered);
        }
    }

    private final class CopyOp extends CudaOp {
        private final PinnedBuffer host;
        private final DeviceBuffer memory;
        private final boolean toDevice;
        private final long hostOffset;
        private final long deviceOffset;
        private final long bytes;

        CopyOp(PinnedBuffer host, DeviceBuffer memory, boolean toDevice, long hostOffset, long deviceOffset, long bytes) {
            this.host = host;
            this.memory = memory;
            this.toDevice = toDevice;
            this.hostOffset = hostOffset;
            this.deviceOffset = deviceOffset;
            this.bytes = bytes;
        }

        @Override
        int call() {
            CUdeviceptr d = memory.rawPointer().withByteOffset(deviceOffset);
            Pointer h = host.rawPointer().withByteOffset(hostOffset);
            return toDevice ? cuMemcpyHtoDAsync(d, h, bytes, stream.raw()) : cuMemcpyDtoHAsync(h, d, bytes, stream.raw());
        }

        @Override
        String name() {
            return toDevice ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync";
        }

        @Override
        public void finish(boolean submitted) {
            if (made(submitted)) {
                host.lifetime.usedOn(CudaStream.this);
                memory.lifetime.usedOn(CudaStream.this);
            }
            memory.lifetime.exit();
            host.lifetime.exit();
        }
    }

    private final class MemsetOp extends CudaOp {
        private final DeviceBuffer memory;
        private final int value;
        private final long count;

        MemsetOp(DeviceBuffer memory, int value, long count) {
            this.memory = memory;
            this.value = value;
            this.count = count;
        }

        @Override
        int call() {
            return cuMemsetD32Async(memory.rawPointer(), value, count, stream.raw());
        }

        @Override
        String name() {
            return "cuMemsetD32Async";
        }

        @Override
        public void finish(boolean submitted) {
            if (made(submitted)) {
                memory.lifetime.usedOn(CudaStream.this);
            }
            memory.lifetime.exit();
        }
    }

    // ---- helpers ------------------------------------------------------------------------------

    /**
     * Before a work call: room in the stream's admission bound (which may park the caller, outside
     * the guard, so a parked caller never holds up a destroy), then {@link #enter()}. Returns what
     * {@code admit} returned, for {@link #submitted} (which hands it to
     * {@code submissionFailed} if the call fails). A close or fault lets parked callers through,
     * and enter() then refuses them as it refuses a call made after it.
     */
    private boolean admitWork() {
        if (device.isClosed() || isClosed() || CudaDevice.API.faultSink(this).hasFaulted()) {
            throw refusal(); // no room taken for a call that cannot run
        }
        boolean admitted = CudaDevice.API.admit(this);
        try {
            enter();
        } catch (RuntimeException e) {
            CudaDevice.API.submissionFailed(this, admitted);
            throw e;
        }
        return admitted;
    }

    /**
     * Admits a work call: the guard lets it in, then the device and the stream are open and have not
     * faulted, and the context is current. The caller then makes its driver call and calls
     * {@code stream.exit()} in a {@code finally}. A call the guard refuses lost the race to a close
     * (the handle is being destroyed, which follows the stream's close or the device's) and gets
     * the same exception as a call made after it.
     */
    private void enter() {
        if (!stream.enter()) {
            throw refusal();
        }
        RuntimeException refused = device.isClosed() || isClosed() || CudaDevice.API.faultSink(this).hasFaulted() ? refusal() : null;
        int r = refused == null ? cuCtxSetCurrent(device.contextHandle()) : CUresult.CUDA_SUCCESS;
        if (refused != null || r != CUresult.CUDA_SUCCESS) {
            stream.exit();
            if (refused != null) {
                throw refused;
            }
            check(r, "cuCtxSetCurrent");
        }
    }

    /** Why a work call is refused: the device closed, the stream closed, or an earlier fault, in that order. */
    private RuntimeException refusal() {
        if (device.isClosed()) {
            return new io.cudaloom.ReactorClosedException(device.name() + " is closed: no more work on " + this);
        }
        if (isClosed() || !CudaDevice.API.faultSink(this).hasFaulted()) {
            return new IllegalStateException("stream " + this + " is closed");
        }
        return CudaDevice.API.faultSink(this).failure("work refused, the stream faulted earlier");
    }

    /** Checks a submission's result, then counts it (after the driver call: see GpuStream.submissionCount). */
    private void submitted(boolean admitted, int result, String call) {
        if (result != CUresult.CUDA_SUCCESS) {
            CudaDevice.API.submissionFailed(this, admitted);
            check(result, call);
        }
        CudaDevice.API.noteSubmission(this);
    }

    private void check(int result, String call) {
        if (result == CUresult.CUDA_SUCCESS) {
            return; // no message built on the launch and await paths
        }
        if (Cuda.isStickyFault(result)) {
            noteFault(result);
            throw CudaDevice.API.faultSink(this).failure(call + " failed with " + Cuda.STICKY); // names the stream's (first) fault
        }
        Cuda.check(result, call + " on " + this); // a CudaDriverException
    }

    /** A driver result seen outside a call that reports it: a sticky fault is noted, anything else ignored. */
    void noteDriverResult(int result) {
        if (Cuda.isStickyFault(result)) {
            noteFault(result);
        }
    }

    /** Reports a sticky error to the device's fault owner: the stream's fault, and the device's first if none came before. */
    private void noteFault(int result) {
        CudaDevice.API.faultSink(this).streamFaulted(Cuda.errorName(result), null);
    }

    /** The reactor's side of this stream (the SPI), delegating to the private methods above. */
    /** The stream's side for the reactor; made by the device's stream factory (BackendAccess.Hooks#startReactor). */
    record Backend(CudaStream stream) implements StreamBackend {
        @Override
        public StreamState queryState() {
            return stream.queryState();
        }

        @Override
        public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
            return stream.enqueueFlagWrite(memory, slot);
        }

        @Override
        public boolean enqueueHostCallback(Runnable callback) {
            return stream.enqueueHostCallback(callback);
        }

        @Override
        public boolean flagWritesSettled() {
            return stream.flagWritesSettled();
        }

        @Override
        public void shutdown() {
            stream.shutdown();
        }

        @Override
        public void drained() {
            stream.drained();
        }
    }
}
