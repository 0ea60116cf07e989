package io.cudaloom.cuda;

import io.cudaloom.DeviceMemory;
import io.cudaloom.LiveResources;
import io.cudaloom.internal.MemoryLifetime;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;

/**
 * Device memory ({@code cuMemAlloc}). {@link #close()} is stream-ordered: it returns at once, and
 * the memory is freed ({@code cuMemFree}) once the work queued on it through this library (copies,
 * memsets, launches that take this buffer as an argument) is done, on the device's releaser
 * thread; at once if none is queued ({@link MemoryLifetime}). A raw address ({@link #address()})
 * passed as a {@code Long} is no use the library can see: await such work before closing.
 */
public final class DeviceBuffer implements DeviceMemory {
    private final CudaDevice device;
    /** Made by {@link AddressedDevicePointer#create}. */
    private final CUdeviceptr pointer;
    private final long bytes;
    /** Who uses the buffer and when it is freed. */
    final MemoryLifetime lifetime;

    DeviceBuffer(CudaDevice device, CUdeviceptr pointer, long bytes) {
        this.device = device;
        this.pointer = pointer;
        this.bytes = bytes;
        this.lifetime = new MemoryLifetime(device, LiveResources.Kind.DEVICE_MEMORY);
    }

    @Override
    public CudaDevice device() {
        return device;
    }

    @Override
    public long bytes() {
        return bytes;
    }

    /** The raw device pointer (valid until {@link #close()}). */
    public CUdeviceptr pointer() {
        checkOpen();
        return pointer;
    }

    /** The pointer for an operation inside the buffer's lifetime ({@link MemoryLifetime#enter()}): no open check. */
    CUdeviceptr rawPointer() {
        return pointer;
    }

    /** The device address, e.g. to pass {@code address() + offset} as a kernel argument (a Long). */
    public long address() {
        checkOpen();
        return AddressedDevicePointer.addressOf(pointer);
    }

    private void checkOpen() {
        if (lifetime.isClosed()) {
            throw closedError();
        }
    }

    IllegalStateException closedError() {
        return new IllegalStateException("device buffer of " + bytes + " bytes was freed");
    }

    @Override
    public void close() {
        lifetime.close(this::free);
    }

    /** The free itself, once: after the close, once no queued work uses the buffer. */
    private void free() {
        if (device.enterToFree()) { // else the context's release (or reset) frees it
            try {
                JCudaDriver.cuCtxSetCurrent(device.contextHandle());
                JCudaDriver.cuMemFree(pointer); // the context may have faulted: nothing more to do then
            } finally {
                device.exitContext();
            }
        }
    }

    @Override
    public String toString() {
        return "device buffer (" + bytes + " bytes) of " + device.name();
    }
}
