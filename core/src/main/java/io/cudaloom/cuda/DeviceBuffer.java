package io.cudaloom.cuda;

import io.cudaloom.DeviceMemory;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;

/** Device memory ({@code cuMemAlloc}); freed by {@link #close()}. */
public final class DeviceBuffer implements DeviceMemory {
    private final CudaDevice device;
    /** Made by {@link AddressedDevicePointer#create}. */
    private final CUdeviceptr pointer;
    private final long bytes;
    private volatile boolean freed;
    /** Counts this buffer back in the device's live resources (idempotent). */
    private final Runnable release;

    DeviceBuffer(CudaDevice device, CUdeviceptr pointer, long bytes, Runnable release) {
        this.release = release;
        this.device = device;
        this.pointer = pointer;
        this.bytes = bytes;
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
        if (freed) {
            throw new IllegalStateException("device buffer of " + bytes + " bytes was freed");
        }
        return pointer;
    }

    /** The device address, e.g. to pass {@code address() + offset} as a kernel argument (a Long). */
    public long address() {
        if (freed) {
            throw new IllegalStateException("device buffer of " + bytes + " bytes was freed");
        }
        return AddressedDevicePointer.addressOf(pointer);
    }

    @Override
    public void close() {
        if (freed) {
            return;
        }
        freed = true;
        release.run();
        if (device.enterToFree()) { // else the context's release (or reset) frees it
            try {
                JCudaDriver.cuCtxSetCurrent(device.contextHandle());
                JCudaDriver.cuMemFree(pointer); // the context may have faulted: nothing more to do then
            } finally {
                device.exitContext();
            }
        }
    }
}
