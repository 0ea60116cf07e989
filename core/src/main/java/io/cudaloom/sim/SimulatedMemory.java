package io.cudaloom.sim;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuDevice;
import io.cudaloom.HostMemory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Memory of the simulated device: device memory and host memory are both ordinary off-heap
 * buffers. The stream's thread reads and writes them in stream order; a caller sees the results
 * once an await covering the work returned (the completion flag orders it, see {@link HostMemory}).
 */
final class SimulatedMemory implements DeviceMemory, HostMemory {
    private final SimulatedDevice device;
    private final ByteBuffer buffer;
    private final boolean host;
    private volatile boolean closed;
    /** Counts this memory back in the device's live resources; set right after construction. */
    private volatile Runnable release = () -> { };

    SimulatedMemory(SimulatedDevice device, long bytes, boolean host) {
        this.device = device;
        this.buffer = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
        this.host = host;
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
        return buffer.duplicate().order(ByteOrder.nativeOrder());
    }


    void tracked(Runnable release) {
        this.release = release;
    }

    boolean isHost() {
        return host;
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException((host ? "host" : "device") + " memory of " + device.name() + " is closed");
        }
    }

    @Override
    public void close() {
        closed = true; // the buffer itself goes with the garbage collector
        release.run(); // idempotent
    }

    @Override
    public String toString() {
        return (host ? "host" : "device") + " memory (" + bytes() + " bytes) of " + device.name();
    }
}
