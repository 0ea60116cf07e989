package io.cudaloom;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;

/**
 * Host memory that a device's copies read and write ({@link GpuDevice#allocateHost}): pinned
 * (page-locked) memory on a GPU, so copies run asynchronously; ordinary memory on the simulated
 * device. The buffers are views in the platform's native byte order, as kernels see the data.
 *
 * <p>Visibility: data a copy wrote is visible to a thread once an await covering the copy has
 * returned (the completion flag's release and acquire order it), and data written by a thread
 * before it enqueues a copy is what the copy reads.
 *
 * <p>Closing is stream-ordered, as {@link DeviceMemory#close()} is: the memory is freed once the
 * copies queued on it are done, and the close does not wait for them.
 */
public interface HostMemory extends AutoCloseable {
    /** The device whose copies use this memory. */
    GpuDevice device();

    /** The size in bytes. */
    long bytes();

    /** A new view of the whole memory (position 0, limit {@link #bytes()}, native byte order). */
    ByteBuffer byteBuffer();

    /** A new view of the memory as 32-bit integers. */
    default IntBuffer ints() {
        return byteBuffer().asIntBuffer();
    }

    /** A new view of the memory as 32-bit floats. */
    default FloatBuffer floats() {
        return byteBuffer().asFloatBuffer();
    }

    /**
     * Closes the memory: no copy may use it from now on ({@link IllegalStateException} at the call);
     * it is freed once the copies already queued on it are done, without waiting here. Idempotent.
     */
    @Override
    void close();
}
