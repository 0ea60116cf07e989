package io.cudaloom;

/**
 * The launch limits of a device ({@link GpuDevice#launchLimits()}): what a kernel launch may ask
 * for. Every launch is checked against them before anything is enqueued, on every backend, and one
 * over a limit is refused with an {@link IllegalArgumentException} whose one-line message is the
 * same on every backend (it names the kernel, the dimension and the limit, not the device). A CUDA
 * device reads them from the driver once, when it opens ({@code cuDeviceGetAttribute}); the
 * simulated device reports those of an H100 or H200 (compute capability 9.0), so a launch that a
 * GPU would refuse fails in CI on the simulated device too.
 *
 * <p>These are the device's limits; a kernel may have tighter ones of its own (a kernel that uses
 * many registers may run fewer threads per block), which only the CUDA driver checks, at the launch.
 *
 * @param maxThreadsPerBlock threads in one block, all dimensions together (1,024 on an H100)
 * @param maxBlockDimX a block's x dimension (1,024)
 * @param maxBlockDimY a block's y dimension (1,024)
 * @param maxBlockDimZ a block's z dimension (64)
 * @param maxGridDimX a grid's x dimension, in blocks (2^31 - 1)
 * @param maxGridDimY a grid's y dimension (65,535)
 * @param maxGridDimZ a grid's z dimension (65,535)
 * @param maxSharedMemoryPerBlock bytes of dynamic shared memory one block may ask for (232,448, the
 *     driver's {@code MAX_SHARED_MEMORY_PER_BLOCK_OPTIN}: beyond 48 KB a kernel must opt in first, which the
 *     driver checks per kernel)
 */
public record LaunchLimits(int maxThreadsPerBlock, int maxBlockDimX, int maxBlockDimY, int maxBlockDimZ,
        int maxGridDimX, int maxGridDimY, int maxGridDimZ, int maxSharedMemoryPerBlock) {
    /**
     * @throws IllegalArgumentException if a limit is below 1 (shared memory: below 0)
     */
    public LaunchLimits {
        positive("maxThreadsPerBlock", maxThreadsPerBlock);
        positive("maxBlockDimX", maxBlockDimX);
        positive("maxBlockDimY", maxBlockDimY);
        positive("maxBlockDimZ", maxBlockDimZ);
        positive("maxGridDimX", maxGridDimX);
        positive("maxGridDimY", maxGridDimY);
        positive("maxGridDimZ", maxGridDimZ);
        if (maxSharedMemoryPerBlock < 0) {
            throw new IllegalArgumentException("maxSharedMemoryPerBlock must be >= 0, was " + maxSharedMemoryPerBlock);
        }
    }

    private static void positive(String name, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be >= 1, was " + value);
        }
    }
}
