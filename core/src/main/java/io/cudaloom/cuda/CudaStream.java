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
import io.cudaloom.WorkChecks;
import java.util.Objects;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import org.jspecify.annotations.Nullable;

/**
 * A CUDA stream ({@code cuStreamCreate(NON_BLOCKING)}) with the operations callers need around
 * {@link #await()}: kernel launches, async copies and memsets. Every method makes the device's
 * context current first (see {@link CudaDevice}).
 *
 * <p>{@link #close()} destroys the stream ({@code cuStreamDestroy}) at once if it is idle, else
 * when the device closes; the work already submitted still runs.
 */
public final class CudaStream extends GpuStream {
    private final CudaDevice device;
    private final CUstream stream = new CUstream();
    private volatile boolean destroyed;
    /** The first sticky error seen on this stream, named. */
    private volatile @Nullable String fault;

    CudaStream(CudaDevice device) {
        super(device, s -> new Backend((CudaStream) s));
        this.device = device;
        check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    }

    public CudaDevice cudaDevice() {
        return device;
    }

    /** The raw JCuda handle, for callers mixing raw JCuda in (see CudaDevice on context currency). */
    public CUstream handle() {
        return stream;
    }

    /**
     * Launches {@code kernel} with a 1-D grid. Arguments may be {@link DeviceBuffer}s (passed as
     * device pointers), {@code Integer}, {@code Long}, {@code Float} or {@code Double}.
     */
    public void launch(CudaKernel kernel, int gridX, int blockX, Object... args) {
        launch(kernel, gridX, 1, 1, blockX, 1, 1, 0, args);
    }

    /** Launches {@code kernel} with a 3-D grid and block and dynamic shared memory. */
    public void launch(CudaKernel kernel, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
            int sharedBytes, Object... args) {
        Objects.requireNonNull(kernel, "kernel");
        Objects.requireNonNull(args, "args");
        if (gridX < 1 || gridY < 1 || gridZ < 1 || blockX < 1 || blockY < 1 || blockZ < 1) {
            throw new IllegalArgumentException("grid and block dimensions must be >= 1, were grid ("
                    + gridX + "," + gridY + "," + gridZ + ") block (" + blockX + "," + blockY + "," + blockZ + ")");
        }
        if (kernel.module().device() != device) {
            throw new IllegalArgumentException("kernel " + kernel.name() + " was loaded on "
                    + kernel.module().device().name() + ", not on " + device.name());
        }
        Pointer params = KernelArgs.pack(kernel.name(), args);
        boolean admitted = ready();
        int r = cuLaunchKernel(kernel.function(), gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                stream, params, null);
        if (r != CUresult.CUDA_SUCCESS) {
            submissionFailed(admitted);
            check(r, "cuLaunchKernel(" + kernel.name() + ")"); // the message is built on failure only
        }
        noteSubmission();
    }

    /** Launches a device-agnostic kernel: its PTX, loaded on this device on first use. */
    @Override
    public void launch(GpuKernel kernel, int gridX, int blockX, Object... args) {
        WorkChecks.launch(device, kernel, gridX, blockX, args);
        launch(device.kernel(kernel), gridX, 1, 1, blockX, 1, 1, 0, args);
    }

    /** Launches the library's {@code spin_kernel} (one thread), which spins on %globaltimer. */
    @Override
    public void launchKernel(java.time.Duration duration) {
        long nanos = WorkChecks.durationNanos(duration);
        launch(device.kernel(GpuKernel.SPIN), 1, 1, 1, 1, 1, 1, 0, new Object[] {nanos});
    }

    /** Async copy host to device; {@code src} is pinned ({@link CudaDevice#allocateHost}). */
    @Override
    public void copy(HostMemory src, long srcOffset, DeviceMemory dst, long dstOffset, long bytes) {
        WorkChecks.copy(device, src, srcOffset, dst, dstOffset, bytes);
        PinnedBuffer host = (PinnedBuffer) src; // the checks above: allocated by this CUDA device
        DeviceBuffer memory = (DeviceBuffer) dst;
        boolean admitted = ready();
        submitted(admitted, cuMemcpyHtoDAsync(memory.pointer().withByteOffset(dstOffset),
                host.pointer().withByteOffset(srcOffset), bytes, stream), "cuMemcpyHtoDAsync");
    }

    /** Async copy device to host; {@code dst} is pinned ({@link CudaDevice#allocateHost}). */
    @Override
    public void copy(DeviceMemory src, long srcOffset, HostMemory dst, long dstOffset, long bytes) {
        WorkChecks.copy(device, dst, dstOffset, src, srcOffset, bytes);
        DeviceBuffer memory = (DeviceBuffer) src;
        PinnedBuffer host = (PinnedBuffer) dst;
        boolean admitted = ready();
        submitted(admitted, cuMemcpyDtoHAsync(host.pointer().withByteOffset(dstOffset),
                memory.pointer().withByteOffset(srcOffset), bytes, stream), "cuMemcpyDtoHAsync");
    }

    /** Async fill of {@code count} 32-bit words of {@code dst} with {@code value}. */
    @Override
    public void memset32(DeviceMemory dst, int value, long count) {
        WorkChecks.memset32(device, dst, count);
        boolean admitted = ready();
        submitted(admitted, cuMemsetD32Async(((DeviceBuffer) dst).pointer(), value, count, stream), "cuMemsetD32Async");
    }

    /**
     * The backend's half of {@link #close()}, once, after the stream was marked closed (so it takes
     * no more work, flag writes or host functions) and its drain's flag write or host function was
     * enqueued: the stream is destroyed now if it is idle, else when the device closes.
     */
    private void shutdown() {
        if (!device.isContextGone() && queryState() != StreamState.BUSY) {
            destroy();
        }
    }

    /** Whether this stream may still hold work: not destroyed, and not reporting idle. */
    boolean mayHaveWork() {
        if (destroyed || device.isContextGone()) {
            return false;
        }
        cuCtxSetCurrent(device.contextHandle()); // not makeCurrent: the device is closed by now
        return cuStreamQuery(stream) != CUresult.CUDA_SUCCESS;
    }

    void destroy() {
        if (!destroyed && !device.isContextGone()) {
            destroyed = true;
            cuCtxSetCurrent(device.contextHandle());
            cuStreamDestroy(stream);
        }
    }

    @Override
    public String toString() {
        return "cuda-stream@" + Integer.toHexString(System.identityHashCode(this));
    }

    // ---- backend side -------------------------------------------------------------------------

    private StreamState queryState() {
        if (fault != null) {
            return StreamState.FAULTED;
        }
        if (destroyed || device.isContextGone()) {
            return StreamState.IDLE;
        }
        cuCtxSetCurrent(device.contextHandle());
        int r = cuStreamQuery(stream);
        if (r == CUresult.CUDA_SUCCESS) {
            return StreamState.IDLE;
        }
        if (r == CUresult.CUDA_ERROR_NOT_READY) {
            return StreamState.BUSY;
        }
        noteFault(r);
        return StreamState.FAULTED;
    }

    private String faultDescription() {
        String f = fault;
        return f != null ? f : "no fault";
    }

    private boolean enqueueFlagWrite(FlagMemory memory, int slot) {
        CUdeviceptr target = device.flagPointer(memory, slot);
        if (target == null || isClosed() || fault != null) {
            return false;
        }
        cuCtxSetCurrent(device.contextHandle());
        // Flags 0 (default): the write is preceded by a memory fence, so everything the stream's
        // earlier work wrote is visible once the host observes the flag.
        int r = cuStreamWriteValue32(stream, target, 1, 0);
        if (r != CUresult.CUDA_SUCCESS) {
            if (Cuda.isStickyFault(r)) {
                noteFault(r);
            }
            return false; // refused: the reactor falls back to a host function
        }
        return true;
    }

    private boolean enqueueHostCallback(Runnable callback) {
        if (isClosed() || fault != null) {
            return false;
        }
        cuCtxSetCurrent(device.contextHandle());
        int r = cuLaunchHostFunc(stream, userData -> callback.run(), null);
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
     * @throws GpuFaultException if the stream's context has faulted
     */
    @org.jetbrains.annotations.Blocking
    public void synchronize() {
        checkUsable();
        device.makeCurrent();
        long counted = submissionCount(); // before the call: all of it is done once it returns
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
        noteCompletedThrough(counted);
    }

    private boolean flagWritesSettled() {
        if (device.isContextGone() || destroyed) {
            return true; // nothing of the context can run any more (or the stream was idle)
        }
        if (fault != null) {
            return false; // dead context still allocated: wait for CudaDevice.close() to reset it
        }
        return queryState() == StreamState.IDLE;
    }

    // ---- helpers ------------------------------------------------------------------------------

    /** The checks before any call on the stream: the device and stream open, no earlier fault. */
    private void checkUsable() {
        if (device.isClosed()) {
            throw new io.cudaloom.ReactorClosedException(device.name() + " is closed: no more work on " + this);
        }
        if (isClosed()) {
            throw new IllegalStateException("stream " + this + " is closed");
        }
        String f = fault;
        if (f != null) {
            throw new GpuFaultException("stream " + this + " faulted earlier: " + f);
        }
    }

    /**
     * Before enqueueing work: the checks, then room in the stream's admission bound (which may
     * park; a close or fault lets the caller through, so the checks run again), then the context.
     * Returns what {@link #admit()} returned, for {@link #submitted} or {@link #submissionFailed}.
     */
    private boolean ready() {
        checkUsable();
        boolean admitted = admit();
        try {
            checkUsable();
            device.makeCurrent();
        } catch (RuntimeException e) {
            submissionFailed(admitted);
            throw e;
        }
        return admitted;
    }

    /** Checks a submission's result, then counts it (after the driver call: see GpuStream.submissionCount). */
    private void submitted(boolean admitted, int result, String call) {
        if (result != CUresult.CUDA_SUCCESS) {
            submissionFailed(admitted);
            check(result, call);
        }
        noteSubmission();
    }

    private void check(int result, String call) {
        if (result == CUresult.CUDA_SUCCESS) {
            return; // no message built on the launch and await paths
        }
        if (Cuda.isStickyFault(result)) {
            noteFault(result);
        }
        Cuda.check(result, call + " on " + this);
    }

    private void noteFault(int result) {
        if (fault == null) {
            fault = Cuda.errorName(result);
        }
        device.markFaulted(Cuda.errorName(result) + " on " + this);
    }

    /** The reactor's side of this stream (the SPI), delegating to the private methods above. */
    private record Backend(CudaStream stream) implements StreamBackend {
        @Override
        public StreamState queryState() {
            return stream.queryState();
        }

        @Override
        public String faultDescription() {
            return stream.faultDescription();
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
    }
}
