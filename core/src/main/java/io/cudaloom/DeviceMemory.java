package io.cudaloom;

/**
 * Memory on a device ({@link GpuDevice#allocate}), the same type on a GPU and on the simulated
 * device: kernels read and write it, and {@link GpuStream#copy} moves data between it and
 * {@link HostMemory}. Close it when done (the GPU's memory is freed then); a device's close does
 * not free it for you.
 */
public interface DeviceMemory extends AutoCloseable {
    /** The device this memory belongs to; it is used only on that device's streams. */
    GpuDevice device();

    /** The size in bytes. */
    long bytes();

    /** Frees the memory; idempotent. Work still using it must be done first (await it). */
    @Override
    void close();
}
