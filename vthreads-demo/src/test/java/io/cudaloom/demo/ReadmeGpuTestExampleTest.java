package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.cuda.DeviceBuffer;
import io.cudaloom.cuda.PinnedBuffer;
import io.cudaloom.junit.GpuTest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The example of docs/USER-GUIDE.md's "Testing with a GPU (JUnit 5)", kept compiling and passing here: in CI
 * the first test runs on the simulated device and the second is skipped; on a GPU both run there.
 */
@GpuTest(simulatedFallback = true)          // no CUDA device: run on the simulated one instead of skipping
class ReadmeGpuTestExampleTest {
    @Test
    void scalesFromAThousandVirtualThreads(GpuDevice device) throws Exception {
        try (DemoWorkload work = DemoWorkload.forDevice(device, 8, Duration.ofMillis(1));
             var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Boolean>> checks = new ArrayList<>();
            for (int t = 0; t < 1_000; t++) {
                int id = t;
                checks.add(threads.submit(() -> work.runOnce(id, 0)));  // copy in, launch, await(), verify
            }
            for (Future<Boolean> ok : checks) {
                assertTrue(ok.get());
            }
        }
    }   // then the extension checks: memory, streams and devices closed, no wait pending, every slot back, no fault

    @Test
    @GpuTest(simulatedFallback = false)     // needs the GPU itself: skipped (and says why) without one
    void fillsOnTheGpu(CudaDevice gpu, CudaStream stream) throws Exception {   // a fresh stream per test
        try (DeviceBuffer buf = gpu.allocate(4096);
             PinnedBuffer host = gpu.allocateHost(4096)) {
            stream.launch(GpuKernel.FILL_U32, 1, 1024, buf, 42, 1024);
            stream.copy(buf, host, 4096);
            stream.await();
            assertEquals(42, host.ints().get(1023));
        }
    }
}
