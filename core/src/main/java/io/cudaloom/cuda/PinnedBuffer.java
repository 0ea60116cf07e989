package io.cudaloom.cuda;

import io.cudaloom.HostMemory;
import io.cudaloom.LiveResources;
import io.cudaloom.internal.MemoryLifetime;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jcuda.Pointer;
import jcuda.driver.JCudaDriver;

/**
 * Pinned host memory ({@code cuMemHostAlloc(PORTABLE)}) for async copies. {@link #close()} is
 * stream-ordered: it returns at once, and the memory is freed ({@code cuMemFreeHost}) once the
 * copies queued on it are done, on the device's releaser thread; at once if none is queued
 * ({@link MemoryLifetime}).
 */
public final class PinnedBuffer implements HostMemory {
    private final CudaDevice device;
    private final Pointer pointer;
    /** The memory's native address, for the downcalls of {@link HotCalls} (0 where JCuda makes them). */
    final long address;
    private final long bytes;
    private final ByteBuffer view;
    /** Who uses the buffer and when it is freed. */
    final MemoryLifetime lifetime;

    PinnedBuffer(CudaDevice device, Pointer pointer, long bytes) {
        this.device = device;
        this.pointer = pointer;
        this.address = HotCalls.handleAddress(pointer);
        this.bytes = bytes;
        this.view = pointer.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
        this.lifetime = new MemoryLifetime(device, LiveResources.Kind.HOST_MEMORY);
    }

    @Override
    public CudaDevice device() {
        return device;
    }

    @Override
    public long bytes() {
        return bytes;
    }

    /** The memory as a native-order byte buffer (do not use after {@link #close()}). */
    public ByteBuffer byteBuffer() {
        checkLive();
        return view.duplicate().order(ByteOrder.nativeOrder());
    }

    Pointer pointer() {
        checkLive();
        return pointer;
    }

    /** The pointer for an operation inside the buffer's lifetime ({@link MemoryLifetime#enter()}): no open check. */
    Pointer rawPointer() {
        return pointer;
    }

    private void checkLive() {
        if (lifetime.isClosed()) {
            throw closedError();
        }
    }

    IllegalStateException closedError() {
        return new IllegalStateException("pinned buffer of " + bytes + " bytes was freed");
    }

    @Override
    public void close() {
        lifetime.close(this::free);
    }

    /** The free itself, once: after the close, once no queued copy uses the buffer. */
    private void free() {
        if (device.enterToFree()) { // else the context's release (or reset) frees it
            try {
                JCudaDriver.cuCtxSetCurrent(device.contextHandle());
                JCudaDriver.cuMemFreeHost(pointer);
            } finally {
                device.exitContext();
            }
        }
    }

    @Override
    public String toString() {
        return "pinned buffer (" + bytes + " bytes) of " + device.name();
    }
}
