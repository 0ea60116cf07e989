package io.cudaloom.cuda;

import jcuda.driver.CUdeviceptr;

/**
 * A device pointer that can say its numeric address: {@code cuMemAlloc} fills it as it fills any
 * {@link CUdeviceptr} (the native address is a field of the JCuda object), and, as a subclass, it
 * reads that address and its byte offset through JCuda's own protected accessors
 * ({@code NativePointerObject.getNativePointer}, {@code Pointer.getByteOffset}) rather than from
 * {@code toString()}'s text.
 *
 * <p>Callers hold it as a plain {@link CUdeviceptr} ({@link #create}, {@link #addressOf}): where a
 * class's bytecode passes this subclass where a {@code CUdeviceptr} is expected, verifying that
 * class loads JCuda, and {@link CudaDevice} must load without JCuda on the class path (its absence
 * is reported, not thrown as a {@code NoClassDefFoundError}: {@code NoJCudaClassPathTest}).
 */
final class AddressedDevicePointer extends CUdeviceptr {
    private AddressedDevicePointer() {}

    /** A fresh pointer for {@code cuMemAlloc} to fill. */
    static CUdeviceptr create() {
        return new AddressedDevicePointer();
    }

    /** The device address {@code p} (made by {@link #create}) designates: its base plus its byte offset. */
    static long addressOf(CUdeviceptr p) {
        AddressedDevicePointer a = (AddressedDevicePointer) p;
        return a.getNativePointer() + a.getByteOffset();
    }
}
