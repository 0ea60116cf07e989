package io.cudaloom.cuda;

import io.cudaloom.HostMemory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;
import jcuda.Pointer;
import jcuda.driver.JCudaDriver;

/** Pinned host memory ({@code cuMemHostAlloc(PORTABLE)}) for async copies; freed by {@link #close()}. */
public final class PinnedBuffer implements HostMemory {
    private final CudaDevice device;
    private final Pointer pointer;
    private final long bytes;
    private final ByteBuffer view;
    /** Set once by the first close: a second close (any thread) neither frees nor counts again. */
    private final AtomicBoolean freed = new AtomicBoolean();
    /** Counts this buffer back in the device's live resources (idempotent). */
    private final Runnable release;

    PinnedBuffer(CudaDevice device, Pointer pointer, long bytes, Runnable release) {
        this.release = release;
        this.device = device;
        this.pointer = pointer;
        this.bytes = bytes;
        this.view = pointer.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
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

    private void checkLive() {
        if (freed.get()) {
            throw new IllegalStateException("pinned buffer of " + bytes + " bytes was freed");
        }
    }

    @Override
    public void close() {
        if (!freed.compareAndSet(false, true)) {
            return;
        }
        release.run();
        if (device.enterToFree()) { // else the context's release (or reset) frees it
            try {
                JCudaDriver.cuCtxSetCurrent(device.contextHandle());
                JCudaDriver.cuMemFreeHost(pointer);
            } finally {
                device.exitContext();
            }
        }
    }
}
