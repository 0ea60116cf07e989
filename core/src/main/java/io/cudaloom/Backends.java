package io.cudaloom;

import org.jspecify.annotations.Nullable;

/** Where {@link GpuDevice#open} finds the CUDA backend (kept apart so the choice is in one place). */
final class Backends {
    private Backends() {}

    static GpuDevice openCuda(int ordinal, ReactorConfig config) {
        throw new UnsupportedOperationException("the CUDA backend is not built yet");
    }

    static @Nullable GpuDevice tryOpenCuda(ReactorConfig config) {
        return null;
    }
}
