package io.cudaloom.cuda;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuDeviceProvider;
import io.cudaloom.ReactorConfig;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** The CUDA backend's provider: device 0 of the CUDA driver, through JCuda. */
public final class CudaDeviceProvider implements GpuDeviceProvider {
    private volatile @Nullable String unavailableReason;

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

    @Override
    public boolean isAvailable() {
        try {
            if (Cuda.isAvailable()) {
                return true;
            }
            unavailableReason = Cuda.unavailableReason();
        } catch (LinkageError e) { // JCuda's classes or natives are not on this class path
            unavailableReason = "JCuda is not available: " + e;
        }
        return false;
    }

    @Override
    public @Nullable String unavailableReason() {
        return unavailableReason;
    }

    @Override
    public GpuDevice open(ReactorConfig config) {
        return CudaDevice.open(0, config);
    }
}
