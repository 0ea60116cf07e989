package io.cudaloom.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.cudaloom.GpuDevice;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.cuda.DeviceBuffer;
import io.cudaloom.cuda.Kernels;
import io.cudaloom.cuda.PinnedBuffer;
import java.nio.IntBuffer;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;

/**
 * {@link GpuTest} on a real GPU: the CUDA types are injected and work, and the leak check reports
 * every kind of leak with the same lines as on the simulated device ({@link LeakCheckTest}'s fixtures). Everything else the extension does is
 * checked on the simulated device by {@link GpuExtensionTest}.
 */
@Tag("gpu")
@GpuTest
class GpuExtensionGpuTest {
    static final Queue<Object> SEEN = new ConcurrentLinkedQueue<>();

    @BeforeEach
    void reset() {
        SEEN.clear();
    }

    @Test
    void theCudaDeviceAndAStreamOfItAreInjectedAndRunKernels(CudaDevice device, GpuDevice same, CudaStream stream)
            throws Exception {
        assertSame(device, same, "one device for the class, whatever the declared type");
        assertSame(device, stream.cudaDevice());
        try (Kernels k = Kernels.load(device);
                DeviceBuffer buf = device.allocate(4096);
                PinnedBuffer host = device.allocateHost(4096)) {
            stream.launch(k.fill, 1, 1024, buf, 77, 1024);
            stream.copy(buf, host, 4096);
            stream.await();
            IntBuffer ints = host.ints();
            for (int i = 0; i < 1024; i++) {
                assertEquals(77, ints.get(i), "element " + i);
            }
        }
    }

    @GpuTest
    static class LeavesAPinnedBufferOpen {
        @Test
        void leaks(CudaDevice device) {
            SEEN.add(device);
            device.allocateHost(64);
        }
    }

    @Test
    void aPinnedBufferLeftOpenFailsTheTestNamingIt() {
        EngineExecutionResults results = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(LeavesAPinnedBufferOpen.class))
                .configurationParameter(GpuExtension.DEVICE_PARAMETER, "cuda")
                .configurationParameter(GpuExtension.LEAK_CHECK_TIMEOUT_PARAMETER, "300")
                .execute();
        results.testEvents().assertStatistics(s -> s.started(1).failed(1));
        TestExecutionResult r = results.testEvents().finished().stream().findFirst().orElseThrow()
                .getRequiredPayload(TestExecutionResult.class);
        String m = r.getThrowable().orElseThrow().getMessage();
        // The same line as for the simulated device's host memory (LeakCheckTest): one count, every backend.
        assertTrue(m.contains("HostMemory: 1 not closed (HostMemory.close())"), m);
        CudaDevice leaked = assertInstanceOf(CudaDevice.class, SEEN.peek());
        assertTrue(m.contains(leaked.name()), m);
        assertFalse(leaked.isFaulted());
    }

    @Test
    void everyKindOfLeakFailsTheSameWayOnTheGpu() {
        // LeakCheckTest's fixtures, run on CUDA device 0: the same lines as on the simulated device.
        LeakCheckTest.SEEN.clear();
        LeakCheckTest.assertContains(LeakCheckTest.failureOf(LeakCheckTest.LeavesDeviceMemory.class, "cuda"),
                "\n  - DeviceMemory: 1 not closed (DeviceMemory.close())");
        LeakCheckTest.SEEN.clear();
        LeakCheckTest.assertContains(LeakCheckTest.failureOf(LeakCheckTest.LeavesHostMemory.class, "cuda"),
                "\n  - HostMemory: 2 not closed (HostMemory.close())");
        LeakCheckTest.SEEN.clear();
        LeakCheckTest.assertContains(LeakCheckTest.failureOf(LeakCheckTest.LeavesAStream.class, "cuda"),
                "\n  - GpuStream: 1 not closed (GpuStream.close())");
        LeakCheckTest.SEEN.clear();
        LeakCheckTest.assertContains(LeakCheckTest.failureOf(LeakCheckTest.OpensItsOwnDevice.class, "cuda"),
                "\n  - GpuDevice: 1 opened in the test and not closed (GpuDevice.close())");
        // Last: its kernel holds the GPU for LeakCheckTest.HOLD after the report, and the next
        // fixture's CUDA device would wait for it (on the H200 the next report then took 5.8 s).
        LeakCheckTest.SEEN.clear();
        LeakCheckTest.assertContains(LeakCheckTest.failureOf(LeakCheckTest.LeavesAFuture.class, "cuda"),
                "\n  - wait: 1 still pending");
    }
}
