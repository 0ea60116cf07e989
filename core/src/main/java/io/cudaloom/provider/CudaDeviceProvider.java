package io.cudaloom.provider;

import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorConfig;
import io.cudaloom.cuda.Cuda;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.internal.GpuDeviceProvider;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The CUDA backend's provider: device 0 of the CUDA driver, through JCuda. JCuda is an optional
 * dependency of cuda-loom-core: this class names no JCuda class, and {@link Cuda} looks for JCuda
 * before touching anything that needs it, so without JCuda the backend is simply unavailable.
 * Public for {@link java.util.ServiceLoader} only; its package is not exported.
 */
public final class CudaDeviceProvider implements GpuDeviceProvider {
    private volatile @Nullable String unavailableReason;

    /** Made by {@link java.util.ServiceLoader} ({@code GpuDevice.open()}). */
    public CudaDeviceProvider() {}

    @Override
    public String name() {
        return "cuda";
    }

    @Override
    public List<String> aliases() {
        return List.of("gpu");
    }

    @Override
    public int priority() {
        return 100;
    }

    /** Whether JCuda is on the class path (then an unusable driver is worth a WARNING in auto mode). */
    @Override
    public boolean isInstalled() {
        return Cuda.isInstalled();
    }

    @Override
    public boolean isAvailable() {
        try {
            if (Cuda.isAvailable()) {
                return true;
            }
            unavailableReason = Cuda.unavailableReason();
        } catch (LinkageError e) { // JCuda's classes are there but broken or incomplete
            unavailableReason = "JCuda is not usable: " + e;
        }
        return false;
    }

    @Override
    public @Nullable String unavailableReason() {
        return unavailableReason;
    }

    /**
     * Opens CUDA device 0.
     *
     * @throws IllegalStateException if JCuda is not on the class path
     * @throws io.cudaloom.cuda.CudaDriverException if the driver cannot be loaded or initialised
     */
    @Override
    public GpuDevice open(ReactorConfig config) {
        Cuda.init(); // throws IllegalStateException naming the artifacts when JCuda is not there
        return CudaDevice.open(0, config);
    }
}
