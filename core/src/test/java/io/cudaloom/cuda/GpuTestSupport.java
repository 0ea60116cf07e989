package io.cudaloom.cuda;

import io.cudaloom.ReactorConfig;
import java.time.Duration;

/**
 * What the GPU tests share beyond {@link io.cudaloom.junit.GpuTest} (which skips them where there is
 * no CUDA device and injects their device): the reactor-only configuration, named by
 * {@code @GpuTest(config = "io.cudaloom.cuda.GpuTestSupport#reactorOnly")} and used by the child
 * JVM of the fault test ({@link FaultScenario}).
 */
public final class GpuTestSupport {
    private GpuTestSupport() {}

    /** The reactor path forced: no waiter spin, so every await parks and is woken by the scanner. */
    public static ReactorConfig reactorOnly() {
        return ReactorConfig.builder().waiterSpin(Duration.ZERO).build();
    }
}
