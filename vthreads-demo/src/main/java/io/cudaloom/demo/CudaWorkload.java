package io.cudaloom.demo;

import io.cudaloom.GpuDevice;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.cuda.DeviceBuffer;
import io.cudaloom.cuda.PinnedBuffer;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;

/**
 * {@link DemoWorkload} on a real GPU: copy the caller's vector into pinned memory, copy it to the
 * device, run the {@code scale_f32} PTX kernel, copy it back, and {@code await()} the stream (or,
 * made with {@link DemoWorkload.WaitBy#SYNCHRONIZE}, block in {@code cuStreamSynchronize}); then
 * read the result. Buffers come from a pool of fixed blocks of one device and one pinned
 * allocation (allocating per step would cost far more than the kernel).
 */
final class CudaWorkload implements DemoWorkload {
    /**
     * Host and device blocks, one per step in flight: enough that 10,000 threads never wait for one
     * (the servlet benchmark's blocking-sync server, {@link BlockingSyncWorkload}, has as many).
     */
    static final int BLOCKS = 16_384;
    private static final long BLOCK_BYTES = 4L * VECTOR_LENGTH;

    private final CudaDevice device;
    private final DemoKernels kernels;
    private final CudaStream[] streams;
    private final DeviceBuffer deviceBlocks;
    private final PinnedBuffer hostBlocks;
    private final long deviceBase;
    /**
     * The free blocks: a lock-free queue behind a (non-fair) semaphore of its size, so taking a
     * block is a compare-and-set while blocks are left and parks only when every block is in use.
     * It was an ArrayBlockingQueue, whose one lock 10,000 virtual threads contended on every step
     * (JFR on the H200: AbstractQueuedSynchronizer.acquire and ConditionObject.signal deoptimized
     * thousands of times in 20 s, the carriers busy in the demo's own code).
     */
    private final ConcurrentLinkedQueue<Integer> free = new ConcurrentLinkedQueue<>();
    private final Semaphore freeBlocks = new Semaphore(BLOCKS);
    private final StreamChoice choice;
    private final LatencyHistogram awaitLatency = new LatencyHistogram();
    private final WaitBy waitBy;

    CudaWorkload(CudaDevice device, int streams) {
        this(device, streams, WaitBy.AWAIT);
    }

    CudaWorkload(CudaDevice device, int streams, WaitBy waitBy) {
        if (streams < 1) {
            throw new IllegalArgumentException("streams must be >= 1, was " + streams);
        }
        this.waitBy = Objects.requireNonNull(waitBy, "waitBy");
        this.device = device;
        this.kernels = DemoKernels.load(device);
        this.choice = new StreamChoice(streams, waitBy);
        this.streams = new CudaStream[streams];
        for (int i = 0; i < streams; i++) {
            this.streams[i] = device.newStream();
        }
        this.deviceBlocks = device.allocate(BLOCKS * BLOCK_BYTES);
        this.hostBlocks = device.allocateHost(BLOCKS * BLOCK_BYTES);
        this.deviceBase = deviceBlocks.address();
        for (int i = 0; i < BLOCKS; i++) {
            free.add(i);
        }
    }

    @Override
    public String description() {
        return device.name() + " (compute " + device.computeCapability() + "), " + streams.length
                + " streams, PTX kernel scale_f32 on " + VECTOR_LENGTH + " floats per step"
                + (waitBy == WaitBy.SYNCHRONIZE ? ", waits in cuStreamSynchronize"
                        : waitBy == WaitBy.HOST_ONLY ? ", but no device work: scaled on the request's thread" : "");
    }

    @Override
    public GpuDevice device() {
        return device;
    }

    @Override
    public LatencyHistogram awaitLatency() {
        return awaitLatency;
    }

    @Override
    public void scale(float[] data, float factor) throws InterruptedException {
        if (data.length != VECTOR_LENGTH) {
            throw new IllegalArgumentException("vector length must be " + VECTOR_LENGTH + ", was " + data.length);
        }
        if (waitBy == WaitBy.HOST_ONLY) {
            DemoWorkload.scaleOnHost(data, factor);
            return;
        }
        freeBlocks.acquire();
        int block = Objects.requireNonNull(free.poll(), "a permit stands for a free block");
        boolean done = false;
        try {
            long offset = block * BLOCK_BYTES;
            ByteBuffer host = hostBlocks.byteBuffer();
            host.position((int) offset);
            host.asFloatBuffer().put(data);
            CudaStream stream = streams[choice.next()];
            stream.copy(hostBlocks, offset, deviceBlocks, offset, BLOCK_BYTES);
            stream.launch(kernels.scale(), 1, VECTOR_LENGTH, deviceBase + offset, factor, VECTOR_LENGTH);
            stream.copy(deviceBlocks, offset, hostBlocks, offset, BLOCK_BYTES);
            long start = System.nanoTime();
            if (waitBy == WaitBy.SYNCHRONIZE) {
                stream.synchronize();   // blocks this (platform) thread in cuStreamSynchronize
            } else {
                stream.event().await(); // parks this virtual thread; the scanner wakes it
            }
            awaitLatency.record(System.nanoTime() - start);
            host.position((int) offset);
            host.asFloatBuffer().get(data);
            done = true;
        } finally {
            // A step that failed or gave up may still have copies in flight into its block: the
            // block is then retired, not reused.
            if (done) {
                free.add(block);
                freeBlocks.release();
            }
        }
    }

    @Override
    public void close() {
        for (CudaStream s : streams) {
            s.close();
        }
        deviceBlocks.close();
        hostBlocks.close();
        kernels.close();
    }
}
