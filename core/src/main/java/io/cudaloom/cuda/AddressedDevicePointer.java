package io.cudaloom.cuda;

import jcuda.driver.CUdeviceptr;

/**
 * A device pointer that can say its numeric address: {@code cuMemAlloc} fills it as it fills any
 * {@link CUdeviceptr} (the native address is a field of the JCuda object), and, as a subclass, it
 * reads that address and its byte offset through JCuda's own protected accessors
 * ({@code NativePointerObject.getNativePointer}, {@code Pointer.getByteOffset}) rather than from
 * {@code toString()}'s text.
 */
final class AddressedDevicePointer extends CUdeviceptr {
    /** The device address this pointer designates: its base plus its byte offset. */
    long address() {
        return getNativePointer() + getByteOffset();
    }
}
