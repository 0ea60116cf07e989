package io.cudaloom;

import io.cudaloom.cuda.Cuda;
import io.cudaloom.cuda.CudaDevice;
import org.jspecify.annotations.Nullable;

/** Where {@link GpuDevice#open} finds the CUDA backend (kept apart so the choice is in one place). */
final class Backends {
    private Backends() {}

    static GpuDevice openCuda(int ordinal, ReactorConfig config) {
        return CudaDevice.open(ordinal, config);
    }

    /** The first CUDA device, or null when there is none (no driver, no device, no native library). */
    static @Nullable GpuDevice tryOpenCuda(ReactorConfig config) {
        return Cuda.isAvailable() ? CudaDevice.open(0, config) : null;
    }
}
