package io.cudaloom.cuda;

import io.cudaloom.ReactorConfig;
import org.junit.jupiter.api.Assumptions;

/** Opens a CUDA device for a gpu-tagged test, or skips the test with a printed reason. */
public final class GpuTestSupport {
    private GpuTestSupport() {}

    public static CudaDevice openOrSkip(ReactorConfig config) {
        if (!Cuda.isAvailable()) {
            String reason = "no CUDA device: " + Cuda.unavailableReason();
            System.out.println("SKIPPED gpu test: " + reason);
            Assumptions.abort(reason);
        }
        return CudaDevice.open(0, config);
    }

    /** The reactor path forced: no waiter spin, so every await parks and is woken by the scanner. */
    public static ReactorConfig reactorOnly() {
        return ReactorConfig.builder().waiterSpin(java.time.Duration.ZERO).build();
    }
}
