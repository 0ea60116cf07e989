package io.cudaloom.sim;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuDevice;
import io.cudaloom.HostMemory;
import io.cudaloom.LiveResources;
import io.cudaloom.internal.MemoryLifetime;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Memory of the simulated device: device memory and host memory are both ordinary off-heap
 * buffers. The stream's thread reads and writes them in stream order; a caller sees the results
 * once an await covering the work returned (the completion flag orders it, see {@link HostMemory}).
 *
 * <p>Closing is stream-ordered ({@link MemoryLifetime}): the memory is freed once the work queued on
 * it is done. Freed here means marked freed: a command that runs on freed memory anyway (a broken
 * deferral) faults its stream with a message naming the command and the memory, as a GPU would
 * fault or corrupt memory, so that CI catches it without a GPU.
 */
final class SimulatedMemory implements DeviceMemory, HostMemory {
    private final SimulatedDevice device;
    private final ByteBuffer buffer;
    private final boolean host;
    /** Who uses the memory and when it is freed. */
    final MemoryLifetime lifetime;
    /** Set once, by the free (after the close, once the work queued on the memory is done). */
    private volatile boolean freed;

    SimulatedMemory(SimulatedDevice device, long bytes, boolean host) {
        this.device = device;
        this.buffer = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
        this.host = host;
        this.lifetime = new MemoryLifetime(device, host ? LiveResources.Kind.HOST_MEMORY : LiveResources.Kind.DEVICE_MEMORY);
    }

    @Override
    public GpuDevice device() {
        return device;
    }

    @Override
    public long bytes() {
        return buffer.capacity();
    }

    @Override
    public ByteBuffer byteBuffer() {
        checkOpen();
        return commandBuffer();
    }

    /** A view for a command whose submission entered the memory's lifetime (no open check: a close may be under way). */
    ByteBuffer commandBuffer() {
        return buffer.duplicate().order(ByteOrder.nativeOrder());
    }


    boolean isHost() {
        return host;
    }

    void checkOpen() {
        if (lifetime.isClosed()) {
            throw closedError();
        }
    }

    IllegalStateException closedError() {
        return new IllegalStateException((host ? "host" : "device") + " memory of " + device.name() + " is closed");
    }

    /**
     * On the stream's thread, before a command touches the memory: throws if it was freed, which a
     * correct close never lets happen (the free waits for the command).
     */
    void checkNotFreed(String command, String stream) {
        if (freed) {
            throw new UseAfterFree(command + " on " + stream + " touched " + this
                    + " after it was freed (closed with the command still queued, and not kept until it ran)");
        }
    }

    /** Whether the free has run (for tests). */
    boolean isFreed() {
        return freed;
    }

    @Override
    public void close() {
        lifetime.close(() -> freed = true); // the buffer itself goes with the garbage collector
    }

    /** A command ran on freed memory: the stream faults with this message. */
    static final class UseAfterFree extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UseAfterFree(String message) {
            super(message, null, false, false);
        }
    }

    @Override
    public String toString() {
        return (host ? "host" : "device") + " memory (" + bytes() + " bytes) of " + device.name();
    }
}
