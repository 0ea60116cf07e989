package io.cudaloom.cuda;

import static jcuda.driver.JCudaDriver.*;

import io.cudaloom.GpuFaultException;
import io.cudaloom.GpuStream;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamState;
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
 */
public final class CudaStream extends GpuStream {
    private final CudaDevice device;
    private final CUstream stream = new CUstream();
    private volatile boolean closed;
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
        ready();
        int r = cuLaunchKernel(kernel.function(), gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                stream, params, null);
        if (r != CUresult.CUDA_SUCCESS) {
            check(r, "cuLaunchKernel(" + kernel.name() + ")"); // the message is built on failure only
        }
        noteSubmission();
    }

    /** Async copy host to device; {@code src} must be pinned (a {@link PinnedBuffer}). */
    public void copy(PinnedBuffer src, DeviceBuffer dst, long bytes) {
        checkCopy(src.bytes(), dst.bytes(), bytes, dst);
        ready();
        submitted(cuMemcpyHtoDAsync(dst.pointer(), src.pointer(), bytes, stream), "cuMemcpyHtoDAsync");
    }

    /** Async copy device to host; {@code dst} must be pinned (a {@link PinnedBuffer}). */
    public void copy(DeviceBuffer src, PinnedBuffer dst, long bytes) {
        checkCopy(src.bytes(), dst.bytes(), bytes, src);
        ready();
        submitted(cuMemcpyDtoHAsync(dst.pointer(), src.pointer(), bytes, stream), "cuMemcpyDtoHAsync");
    }

    /** Async copy of a range, host to device; {@code src} must be pinned. */
    public void copy(PinnedBuffer src, long srcOffset, DeviceBuffer dst, long dstOffset, long bytes) {
        checkRange(src.bytes(), srcOffset, dst.bytes(), dstOffset, bytes, dst);
        ready();
        submitted(cuMemcpyHtoDAsync(dst.pointer().withByteOffset(dstOffset), src.pointer().withByteOffset(srcOffset),
                bytes, stream), "cuMemcpyHtoDAsync");
    }

    /** Async copy of a range, device to host; {@code dst} must be pinned. */
    public void copy(DeviceBuffer src, long srcOffset, PinnedBuffer dst, long dstOffset, long bytes) {
        checkRange(src.bytes(), srcOffset, dst.bytes(), dstOffset, bytes, src);
        ready();
        submitted(cuMemcpyDtoHAsync(dst.pointer().withByteOffset(dstOffset), src.pointer().withByteOffset(srcOffset),
                bytes, stream), "cuMemcpyDtoHAsync");
    }

    private void checkRange(long srcBytes, long srcOffset, long dstBytes, long dstOffset, long bytes, DeviceBuffer deviceSide) {
        if (srcOffset < 0 || dstOffset < 0 || bytes < 0 || srcOffset + bytes > srcBytes || dstOffset + bytes > dstBytes) {
            throw new IllegalArgumentException("copy of " + bytes + " bytes from offset " + srcOffset + " of "
                    + srcBytes + " to offset " + dstOffset + " of " + dstBytes + " is out of range");
        }
        checkSameDevice(deviceSide);
    }

    /** Async fill of {@code count} 32-bit words of {@code dst} with {@code value}. */
    public void memset32(DeviceBuffer dst, int value, long count) {
        Objects.requireNonNull(dst, "dst");
        if (count < 0 || count * 4 > dst.bytes()) {
            throw new IllegalArgumentException("memset of " + count + " words does not fit a buffer of "
                    + dst.bytes() + " bytes");
        }
        checkSameDevice(dst);
        ready();
        submitted(cuMemsetD32Async(dst.pointer(), value, count, stream), "cuMemsetD32Async");
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    /**
     * Stops taking work. The stream is destroyed now if it is idle, else when the device closes
     * (work already submitted still runs). Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (!device.isContextGone() && queryState() != StreamState.BUSY) {
            destroy();
        }
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
        if (target == null || closed || fault != null) {
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
        if (closed || fault != null) {
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
    public void synchronize() {
        ready();
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
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

    private void ready() {
        if (device.isClosed()) {
            throw new io.cudaloom.ReactorClosedException(device.name() + " is closed: no more work on " + this);
        }
        if (closed) {
            throw new IllegalStateException("stream " + this + " is closed");
        }
        String f = fault;
        if (f != null) {
            throw new GpuFaultException("stream " + this + " faulted earlier: " + f);
        }
        device.makeCurrent();
    }

    /** Checks a submission's result, then counts it (after the driver call: see GpuStream.submissionCount). */
    private void submitted(int result, String call) {
        check(result, call);
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

    private void checkCopy(long srcBytes, long dstBytes, long bytes, DeviceBuffer deviceSide) {
        if (bytes < 0 || bytes > srcBytes || bytes > dstBytes) {
            throw new IllegalArgumentException("copy of " + bytes + " bytes does not fit source (" + srcBytes
                    + " bytes) and destination (" + dstBytes + " bytes)");
        }
        checkSameDevice(deviceSide);
    }

    private void checkSameDevice(DeviceBuffer b) {
        if (b.device() != device) {
            throw new IllegalArgumentException("buffer on " + b.device().name() + " used on a stream of " + device.name());
        }
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
    }
}
