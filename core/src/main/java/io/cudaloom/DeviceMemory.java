package io.cudaloom;

/**
 * Memory on a device ({@link GpuDevice#allocate}), the same type on a GPU and on the simulated
 * device: kernels read and write it, and {@link GpuStream#copy} moves data between it and
 * {@link HostMemory}. Close it when done; a device's close does not free it for you.
 *
 * <p>Closing is stream-ordered: {@link #close()} returns at once, and the memory is freed once the
 * work queued on it (copies, memsets, launches that take it) is done, on a thread of the
 * library's; at once if no queued work uses it. So closing it after an await that timed out (a
 * try-with-resources block around a timed await) frees nothing under the GPU.
 */
public interface DeviceMemory extends AutoCloseable {
    /** The device this memory belongs to; it is used only on that device's streams. */
    GpuDevice device();

    /** The size in bytes. */
    long bytes();

    /**
     * Closes the memory: no work may use it from now on ({@link IllegalStateException} at the call);
     * it is freed once the work already queued on it is done, without waiting here. Idempotent.
     */
    @Override
    void close();
}
