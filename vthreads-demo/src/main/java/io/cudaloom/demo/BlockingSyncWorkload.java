package io.cudaloom.demo;

import static jcuda.driver.JCudaDriver.CU_MEMHOSTALLOC_PORTABLE;
import static jcuda.driver.JCudaDriver.cuCtxCreate;
import static jcuda.driver.JCudaDriver.cuCtxDestroy;
import static jcuda.driver.JCudaDriver.cuCtxGetCurrent;
import static jcuda.driver.JCudaDriver.cuCtxPopCurrent;
import static jcuda.driver.JCudaDriver.cuCtxPushCurrent;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemHostAlloc;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import io.cudaloom.GpuDevice;
import io.cudaloom.cuda.CudaDriverException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUctx_flags;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * The servlet benchmark's honest CPU competitor of {@code await()} (issues #37, #39): the
 * {@link CudaWorkload}'s step with {@link DemoWorkload.WaitBy#SYNCHRONIZE}, in raw JCuda on a CUDA
 * context of its own created with {@code CU_CTX_SCHED_BLOCKING_SYNC}, so that a thread waiting in
 * {@code cuStreamSynchronize} sleeps in the driver instead of spinning. The library's
 * {@link io.cudaloom.cuda.CudaDevice} retains the primary context, whose default scheduling
 * ({@code CU_CTX_SCHED_AUTO}) spins while the process has fewer active contexts than cores, and
 * takes no scheduling flags; {@code GpuBench sweep}'s {@code POOL_BLOCKING} row does the same for
 * its spin kernels.
 *
 * <p>The work per {@link #scale} is the CUDA workload's exactly: the caller's
 * {@value DemoWorkload#VECTOR_LENGTH} floats put into a pinned block, {@code cuMemcpyHtoDAsync} to
 * the device block, {@code scale_f32(block, factor, VECTOR_LENGTH)} on one block of
 * {@value DemoWorkload#VECTOR_LENGTH} threads (the built-in kernels' PTX,
 * {@link DemoKernels#ptxText()}, loaded as a module of this context), {@code cuMemcpyDtoHAsync}
 * back, {@code cuStreamSynchronize}, the result read from the pinned block. Blocks come from a pool
 * of {@link CudaWorkload#BLOCKS} fixed blocks of one device ({@code cuMemAlloc}) and one pinned
 * ({@code cuMemHostAlloc(PORTABLE)}) allocation, as there; the streams are
 * {@code CU_STREAM_NON_BLOCKING}, as the library's, and a thread keeps to the stream it was given
 * on its first step ({@link StreamChoice}, as the synchronize() workload). Each step makes the
 * context current on its thread first ({@code cuCtxSetCurrent}, a thread-local store, as the
 * library's wrappers do before their driver calls), and leaves it current there.
 *
 * <p>Every driver call's result is checked: a failure throws a {@link CudaDriverException} whose
 * one-line message names the call (e.g. {@code cuStreamSynchronize failed: CUDA_ERROR_...}); a step
 * that failed retires its block (copies may still be in flight into it). JCuda's own exceptions
 * stay off (a process-wide switch the library relies on being off). {@link #close()} waits for the
 * steps in flight, then frees everything and destroys the context. There is no {@link GpuDevice}
 * and no reactor here: {@link #device()} throws.
 */
final class BlockingSyncWorkload implements DemoWorkload {
    private static final long BLOCK_BYTES = 4L * VECTOR_LENGTH;
    private static final int BLOCKS = CudaWorkload.BLOCKS;
    /** How long {@link #close()} waits for the steps in flight before it gives up (and leaves the context). */
    static final Duration CLOSE_WAIT = Duration.ofSeconds(10);

    private final String description;
    private final CUcontext context = new CUcontext();
    private final CUmodule module = new CUmodule();
    private final CUfunction scale = new CUfunction();
    private final CUstream[] streams;
    private final AddressedPointer deviceBlocks = new AddressedPointer();
    private final Pointer hostBlocks = new Pointer();
    private final ByteBuffer hostView;
    private final long deviceBase;
    private final StreamChoice choice;
    private final LatencyHistogram awaitLatency = new LatencyHistogram();
    /** The free blocks behind a semaphore of their number, as the CUDA workload's. */
    private final ConcurrentLinkedQueue<Integer> free = new ConcurrentLinkedQueue<>();
    private final Semaphore freeBlocks = new Semaphore(BLOCKS);
    /** Blocks of failed steps, never reused (and never given back to {@link #freeBlocks}). */
    private final AtomicInteger retired = new AtomicInteger();
    private final AtomicBoolean closed = new AtomicBoolean();
    // What the constructor made, for the release (volatile: close() may run on another thread).
    private volatile boolean moduleLoaded;
    private volatile int streamsCreated;
    private volatile boolean deviceAllocated;
    private volatile boolean hostAllocated;

    /**
     * Creates the context on device {@code ordinal} (made current on this thread while the
     * constructor runs, then popped: the thread is left as it was), loads the module, creates
     * {@code streams} streams, allocates the blocks. On a failure, everything made so far is
     * released and the context destroyed before the exception is thrown.
     *
     * @param deviceName for {@link #description()}, e.g. the library's name of the device
     * @throws CudaDriverException if a driver call fails (its message names the call)
     */
    BlockingSyncWorkload(int ordinal, String deviceName, int streams) {
        if (streams < 1) {
            throw new IllegalArgumentException("streams must be >= 1, was " + streams);
        }
        this.choice = new StreamChoice(streams, WaitBy.SYNCHRONIZE);
        this.streams = new CUstream[streams];
        this.description = deviceName + ", " + streams + " streams, PTX kernel scale_f32 on " + VECTOR_LENGTH
                + " floats per step, waits in cuStreamSynchronize on a context of its own created with"
                + " CU_CTX_SCHED_BLOCKING_SYNC (raw JCuda; no reactor)";
        long bytes = BLOCKS * BLOCK_BYTES;
        check(cuInit(0), "cuInit");
        CUdevice dev = new CUdevice();
        check(cuDeviceGet(dev, ordinal), "cuDeviceGet(" + ordinal + ")");
        check(cuCtxCreate(context, CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC, dev),
                "cuCtxCreate(CU_CTX_SCHED_BLOCKING_SYNC)"); // current on this thread (pushed) from here
        boolean made = false;
        try {
            check(cuModuleLoadData(module, DemoKernels.ptxText()), "cuModuleLoadData");
            moduleLoaded = true;
            check(cuModuleGetFunction(scale, module, "scale_f32"), "cuModuleGetFunction(scale_f32)");
            for (int i = 0; i < streams; i++) {
                CUstream st = new CUstream();
                check(cuStreamCreate(st, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate(CU_STREAM_NON_BLOCKING)");
                this.streams[i] = st;
                streamsCreated = i + 1;
            }
            check(cuMemAlloc(deviceBlocks, bytes), "cuMemAlloc(" + bytes + ")");
            deviceAllocated = true;
            check(cuMemHostAlloc(hostBlocks, bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc(PORTABLE, " + bytes + ")");
            hostAllocated = true;
            this.hostView = hostBlocks.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
            this.deviceBase = deviceBlocks.address();
            for (int i = 0; i < BLOCKS; i++) {
                free.add(i);
            }
            check(cuCtxPopCurrent(new CUcontext()), "cuCtxPopCurrent"); // this thread as before the create
            made = true;
        } finally {
            if (!made) {
                release(); // the context is current here; its destroy pops it
            }
        }
    }

    @Override
    public String description() {
        return description;
    }

    /** None: this workload has a raw context of its own, no {@link GpuDevice} and no reactor. */
    @Override
    public GpuDevice device() {
        throw new UnsupportedOperationException("the blocking-sync workload has a raw CUDA context of its own,"
                + " no GpuDevice");
    }

    @Override
    public LatencyHistogram awaitLatency() {
        return awaitLatency;
    }

    /**
     * The CUDA workload's step, waiting in {@code cuStreamSynchronize} on the blocking-sync context
     * (this platform thread sleeps in the driver until the stream's work is done). The context is
     * left current on this thread ({@code cuCtxSetCurrent}: it replaces the thread's current one).
     *
     * @throws CudaDriverException if a driver call fails (its message names the call)
     * @throws IllegalStateException if the workload is closed
     */
    @Override
    public void scale(float[] data, float factor) throws InterruptedException {
        if (data.length != VECTOR_LENGTH) {
            throw new IllegalArgumentException("vector length must be " + VECTOR_LENGTH + ", was " + data.length);
        }
        freeBlocks.acquire();
        if (closed.get()) {
            freeBlocks.release();
            throw new IllegalStateException("the blocking-sync workload is closed");
        }
        int block = Objects.requireNonNull(free.poll(), "a permit stands for a free block");
        boolean done = false;
        try {
            long offset = block * BLOCK_BYTES;
            FloatBuffer host = hostView.slice((int) offset, (int) BLOCK_BYTES).order(ByteOrder.nativeOrder())
                    .asFloatBuffer();
            host.put(0, data);
            Pointer hostBlock = hostBlocks.withByteOffset(offset);
            CUdeviceptr deviceBlock = deviceBlocks.withByteOffset(offset);
            CUstream stream = streams[choice.next()];
            check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
            check(cuMemcpyHtoDAsync(deviceBlock, hostBlock, BLOCK_BYTES, stream), "cuMemcpyHtoDAsync");
            Pointer args = Pointer.to(Pointer.to(new long[] {deviceBase + offset}), Pointer.to(new float[] {factor}),
                    Pointer.to(new int[] {VECTOR_LENGTH}));
            check(cuLaunchKernel(scale, 1, 1, 1, VECTOR_LENGTH, 1, 1, 0, stream, args, null), "cuLaunchKernel(scale_f32)");
            check(cuMemcpyDtoHAsync(hostBlock, deviceBlock, BLOCK_BYTES, stream), "cuMemcpyDtoHAsync");
            long start = System.nanoTime();
            check(cuStreamSynchronize(stream), "cuStreamSynchronize"); // sleeps: CU_CTX_SCHED_BLOCKING_SYNC
            awaitLatency.record(System.nanoTime() - start);
            host.get(0, data);
            done = true;
        } finally {
            if (done) {
                free.add(block);
                freeBlocks.release();
            } else {
                retired.incrementAndGet(); // copies may still be in flight into it: never reused
            }
        }
    }

    /**
     * Waits (up to {@link #CLOSE_WAIT}) for the steps in flight, then synchronizes the context,
     * destroys the streams, unloads the module, frees both allocations and destroys the context,
     * leaving the calling thread's current context as it was (if a step on this thread made the
     * context current there, the destroy pops it: the thread then has the context below it, if any). Steps after the close throw
     * {@link IllegalStateException}. A second close does nothing.
     *
     * @throws CudaDriverException naming the first driver call that failed (everything else is
     *     still released)
     * @throws IllegalStateException if steps were still in flight after {@link #CLOSE_WAIT} (then
     *     nothing is released: the steps still use it)
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        // Every block not retired back in the pool: no step in flight; later steps see `closed`.
        long deadline = System.nanoTime() + CLOSE_WAIT.toNanos();
        int drained = 0;
        try {
            while (true) {
                drained += freeBlocks.drainPermits();
                int inFlight = BLOCKS - retired.get() - drained;
                if (inFlight <= 0) {
                    break;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException(inFlight + " steps of the blocking-sync workload still in flight after "
                            + CLOSE_WAIT.toSeconds() + " s: its context is left as it is");
                }
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while the blocking-sync workload waited for "
                            + inFlight + " steps in flight: its context is left as it is");
                }
            }
            // Current here for the frees: pushed, and popped again by the destroy. Unless a step on
            // this thread left it current (its cuCtxSetCurrent replaced the thread's context): then the
            // destroy pops that, rather than leave the destroyed context current on this thread.
            CUcontext current = new CUcontext();
            if (cuCtxGetCurrent(current) != CUresult.CUDA_SUCCESS || !context.equals(current)) {
                int r = cuCtxPushCurrent(context);
                if (r != CUresult.CUDA_SUCCESS) {
                    destroyContext(); // not current here, but destroyed all the same, its resources with it
                    throw new CudaDriverException("cuCtxPushCurrent", r);
                }
            }
            // Nothing left in flight (a failed step's copies included) before the frees.
            Failure first = first(null, cuCtxSynchronize(), "cuCtxSynchronize");
            Failure released = release(); // ends with the destroy, which pops the context pushed above
            first = first != null ? first : released;
            if (first != null) {
                throw new CudaDriverException(first.call(), first.result());
            }
        } finally {
            freeBlocks.release(drained); // steps waiting for a block wake, see `closed` and throw
        }
    }

    private record Failure(String call, int result) {}

    /**
     * Releases what the constructor made and destroys the context, which must be current on this
     * thread (the destroy pops it); returns the first call that failed, or null.
     */
    private Failure release() {
        Failure first = null;
        for (int i = 0; i < streamsCreated; i++) {
            first = first(first, cuStreamDestroy(streams[i]), "cuStreamDestroy");
        }
        if (moduleLoaded) {
            first = first(first, cuModuleUnload(module), "cuModuleUnload");
        }
        if (deviceAllocated) {
            first = first(first, cuMemFree(deviceBlocks), "cuMemFree");
        }
        if (hostAllocated) {
            first = first(first, cuMemFreeHost(hostBlocks), "cuMemFreeHost");
        }
        Failure destroy = destroyContext();
        return first != null ? first : destroy;
    }

    /** {@code cuCtxDestroy}: the failure, or null. */
    private Failure destroyContext() {
        int r = cuCtxDestroy(context);
        return r == CUresult.CUDA_SUCCESS ? null : new Failure("cuCtxDestroy", r);
    }

    private static Failure first(Failure first, int result, String call) {
        return first != null || result == CUresult.CUDA_SUCCESS ? first : new Failure(call, result);
    }

    /** Throws a {@link CudaDriverException} naming {@code call} unless {@code result} is CUDA_SUCCESS. */
    static void check(int result, String call) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new CudaDriverException(call, result);
        }
    }

    /**
     * A device pointer that can say its address (for the kernel's pointer argument, packed as a
     * {@code long} as the CUDA workload packs it), through JCuda's protected accessor.
     */
    private static final class AddressedPointer extends CUdeviceptr {
        long address() {
            return getNativePointer() + getByteOffset();
        }
    }
}
