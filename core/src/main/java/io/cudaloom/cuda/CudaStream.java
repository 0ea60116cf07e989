package io.cudaloom.cuda;

import static jcuda.driver.JCudaDriver.*;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuFaultException;
import io.cudaloom.GpuKernel;
import io.cudaloom.HostMemory;
import io.cudaloom.GpuStream;
import io.cudaloom.ReactorClosedException;
import io.cudaloom.spi.FaultSink;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamOp;
import io.cudaloom.spi.StreamSubmission;
import io.cudaloom.spi.StreamState;
import io.cudaloom.internal.WorkChecks;
import io.cudaloom.protocol.LifetimeGuard;
import java.time.Duration;
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
 * query) is reported to the device's fault owner ({@code StreamSubmission#faults()}), which keeps it (this class
 * keeps no copy); from then on every call is refused with the owner's {@link GpuFaultException}.
 */
public final class CudaStream extends GpuStream {
    private final CudaDevice device;
    /** The driver's stream; every call on it is admitted by its guard ({@link StreamHandle}). */
    private final StreamHandle stream;
    /** The reactor's object for this stream: every work call is handed to it ({@link StreamSubmission#submit}). */
    private final StreamSubmission submission;
    /** Set once by {@link Backend#shutdown()}: no flag write or host function is taken after it. */
    private volatile boolean shutDown;

    CudaStream(CudaDevice device) {
        super(device);
        this.device = device;
        this.submission = CudaDevice.API.submission(this);
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
        submission.flush();
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
        int entered = enterBuffers(args);
        boolean handedOver = false;
        boolean inModule = false;
        try {
            checkUsable();
            Pointer params = HotCalls.params(kernel.name(), args);
            kernel.module().enterLaunch(kernel.name()); // exited by the entry once made or discarded (finish)
            inModule = true;
            LaunchOp op = new LaunchOp(kernel, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes, params, args,
                    entered);
            handedOver = true; // the entry exits the lifetimes now, whatever happens
            if (!submission.submit(op)) {
                throw refusal(); // raced the close and came after it (combining)
            }
        } finally {
            if (!handedOver) {
                exitBuffers(args, entered);
                if (inModule) {
                    kernel.module().exitLaunch();
                }
            }
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
    public void launchKernel(Duration duration) {
        long nanos = WorkChecks.durationNanos(duration);
        enqueueLaunch(device.kernel(CudaDevice.API.spinKernel()), 1, 1, 1, 1, 1, 1, 0, new Object[] {nanos});
    }

    /** Async copy host to device; {@code src} is pinned ({@link CudaDevice#allocateHost}). */
    @Override
    public void copy(HostMemory src, long srcOffset, DeviceMemory dst, long dstOffset, long bytes) {
        WorkChecks.copy(device, src, srcOffset, dst, dstOffset, bytes);
        PinnedBuffer host = (PinnedBuffer) src; // the checks above: allocated by this CUDA device
        DeviceBuffer memory = (DeviceBuffer) dst;
        submitCopy(host, memory, true, srcOffset, dstOffset, bytes);
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
        submitCopy(host, memory, false, dstOffset, srcOffset, bytes);
    }

    /** Async fill of {@code count} 32-bit words of {@code dst} with {@code value}. */
    @Override
    public void memset32(DeviceMemory dst, int value, long count) {
        WorkChecks.memset32(device, dst, count);
        DeviceBuffer memory = (DeviceBuffer) dst;
        if (!memory.lifetime.enter()) {
            throw memory.closedError();
        }
        boolean handedOver = false;
        try {
            checkUsable();
            MemsetOp op = new MemsetOp(memory, value, count);
            handedOver = true; // the entry exits the lifetime now, whatever happens
            if (!submission.submit(op)) {
                throw refusal(); // raced the close and came after it (combining)
            }
        } finally {
            if (!handedOver) {
                memory.lifetime.exit();
            }
        }
    }

    /** The device's release: destroy the stream now (see {@link StreamHandle#closeForRelease()}). */
    void closeForRelease() {
        stream.closeForRelease();
    }

    @Override
    public String toString() {
        return "cuda-stream@" + Integer.toHexString(System.identityHashCode(this));
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
        submission.flush(); // combining: everything counted above is in the driver's queue first
        enter();
        int r;
        try {
            r = cuStreamSynchronize(stream.raw());
        } finally {
            stream.exit();
        }
        check(r, "cuStreamSynchronize");
        submission.completedThrough(counted); // a proof: returns the admission room of that work
    }

    /** A copy's checks done: enters both lifetimes, makes the entry, hands it over ({@link StreamSubmission#submit}). */
    private void submitCopy(PinnedBuffer host, DeviceBuffer memory, boolean toDevice, long hostOffset, long deviceOffset,
            long bytes) {
        enterBoth(host, memory);
        boolean handedOver = false;
        try {
            checkUsable();
            CopyOp op = new CopyOp(host, memory, toDevice, hostOffset, deviceOffset, bytes);
            handedOver = true; // the entry exits the lifetimes now, whatever happens
            if (!submission.submit(op)) {
                throw refusal(); // raced the close and came after it (combining)
            }
        } finally {
            if (!handedOver) {
                memory.lifetime.exit();
                host.lifetime.exit();
            }
        }
    }

    /** A work call is refused at the call (nothing appended) once the device or stream is closed or the stream faulted. */
    private void checkUsable() {
        if (device.isClosed() || isClosed() || faults().hasFaulted()) {
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
    private abstract class CudaOp extends StreamOp {
        private boolean made;

        CudaOp() {
            super(true);
        }

        /** The driver call itself (the context is current, the guard held). */
        abstract int driverCall();

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
                    r = driverCall();
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

        /**
         * Direct submission: the driver call on the caller's thread, admitted as every work call
         * ({@link #enter()}: the guard, the device and the stream still open and unfaulted, the context
         * current); a driver error is thrown to the caller ({@link #check}: a sticky one is the
         * stream's fault, anything else a {@code CudaDriverException}, the stream unharmed).
         */
        @Override
        public void call() {
            enter();
            int r;
            try {
                r = driverCall();
            } finally {
                stream.exit();
            }
            if (r != CUresult.CUDA_SUCCESS) {
                check(r, name()); // the message is built on failure only
            }
            made = true;
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
        private final @org.jspecify.annotations.Nullable Pointer params;
        private final Object[] args;
        private final int entered;

        LaunchOp(CudaKernel kernel, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
                int sharedBytes, @org.jspecify.annotations.Nullable Pointer params, Object[] args, int entered) {
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
        int driverCall() {
            return HotCalls.launchKernel(kernel, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes, stream,
                    params, args);
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
            kernel.module().exitLaunch(); // after the driver call returned: the module may be unloaded now
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
        int driverCall() {
            return toDevice ? HotCalls.memcpyHtoDAsync(memory, deviceOffset, host, hostOffset, bytes, stream)
                    : HotCalls.memcpyDtoHAsync(host, hostOffset, memory, deviceOffset, bytes, stream);
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
        int driverCall() {
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
        RuntimeException refused = device.isClosed() || isClosed() || faults().hasFaulted() ? refusal() : null;
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
            return new ReactorClosedException(device.name() + " is closed: no more work on " + this);
        }
        if (isClosed() || !faults().hasFaulted()) {
            return new IllegalStateException("stream " + this + " is closed");
        }
        return faults().failure("work refused, the stream faulted earlier");
    }

    /** Where this stream's faults are kept (the device's fault owner, through the reactor's object for the stream). */
    private FaultSink faults() {
        return submission.faults();
    }

    private void check(int result, String call) {
        if (result == CUresult.CUDA_SUCCESS) {
            return; // no message built on the launch and await paths
        }
        if (Cuda.isStickyFault(result)) {
            noteFault(result);
            throw faults().failure(call + " failed with " + Cuda.STICKY); // names the stream's (first) fault
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
        faults().streamFaulted(Cuda.errorName(result), null);
    }

    /**
     * The stream's side for the reactor (the SPI), made by the device's stream factory
     * (BackendAccess.Hooks#startReactor) and held by the reactor's object for the stream, which calls
     * it directly: the driver calls on the stream's handle that the reactor makes (its queries, flag
     * writes and host functions) and the stream's end.
     */
    final class Backend implements StreamBackend {

        @Override
        public StreamState queryState() {
            if (faults().hasFaulted()) {
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
            if (faults().hasFaulted()) {
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
            faults().streamFaulted("the context faulted: " + deviceFault, null);
            return StreamState.FAULTED;
        }

        @Override
        public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
            CUdeviceptr target = device.flagPointer(memory, slot);
            if (target == null || !stream.enter()) {
                return false;
            }
            int r;
            try {
                // Refused once shut down, not once closed: with combining the entries appended before the
                // close are submitted after it (the closed check was made at the append).
                if (shutDown || faults().hasFaulted()) {
                    return false;
                }
                cuCtxSetCurrent(device.contextHandle());
                // Flags 0 (default): the write is preceded by a memory fence, so everything the stream's
                // earlier work wrote is visible once the host observes the flag.
                r = HotCalls.streamWriteValue32(stream, target, 1, 0);
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

        @Override
        public boolean enqueueHostCallback(Runnable callback) {
            if (!stream.enter()) {
                return false;
            }
            int r;
            try {
                if (shutDown || faults().hasFaulted()) {
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

        @Override
        public boolean flagWritesSettled() {
            if (device.isContextGone()) {
                return true; // nothing of the context can run any more
            }
            if (faults().hasFaulted()) {
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

        /**
         * The backend's half of {@link #close()}, once, after the stream was marked closed and behind
         * everything submitted before the close: no flag write or host function is taken after it
         * (work calls check {@link #isClosed()} once admitted). The destroy follows the drain
         * ({@link #drained()}).
         */
        @Override
        public void shutdown() {
            shutDown = true;
        }

        /** The close's drain completed without failure: destroy the stream once it is idle. */
        @Override
        public void drained() {
            stream.destroyOnceIdle();
        }
    }
}
