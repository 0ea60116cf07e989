package io.cudaloom.cuda;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuDeviceProvider;
import io.cudaloom.ReactorConfig;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The CUDA backend's provider: device 0 of the CUDA driver, through JCuda. JCuda is an optional
 * dependency of cuda-loom-core: this class names no JCuda class itself, and looks for JCuda before
 * touching anything that needs it, so without JCuda it is simply unavailable.
 */
public final class CudaDeviceProvider implements GpuDeviceProvider {
    /** What a user of the CUDA backend adds; README.md ("Use it") gives the coordinates. */
    static final String JCUDA_MISSING = "JCuda is not on the class path: the CUDA backend needs "
            + "org.jcuda:jcuda and org.jcuda:jcuda-natives (classifier of the platform, e.g. linux-x86_64)";

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
        return jcudaPresent();
    }

    @Override
    public boolean isAvailable() {
        if (!jcudaPresent()) {
            unavailableReason = JCUDA_MISSING;
            return false;
        }
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
     * @throws CudaDriverException if the driver cannot be loaded or initialised
     */
    @Override
    public GpuDevice open(ReactorConfig config) {
        if (!jcudaPresent()) {
            throw new IllegalStateException(JCUDA_MISSING);
        }
        return CudaDevice.open(0, config);
    }

    /** Whether JCuda's driver binding is on this class's class path; loads nothing, initialises nothing. */
    static boolean jcudaPresent() {
        ClassLoader loader = CudaDeviceProvider.class.getClassLoader();
        String resource = "jcuda/driver/JCudaDriver.class";
        return loader != null ? loader.getResource(resource) != null : ClassLoader.getSystemResource(resource) != null;
    }
}
