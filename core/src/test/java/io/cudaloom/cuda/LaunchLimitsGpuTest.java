package io.cudaloom.cuda;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuKernel;
import io.cudaloom.HostMemory;
import io.cudaloom.LaunchLimits;
import io.cudaloom.ReactorConfig;
import io.cudaloom.internal.WorkChecks;
import io.cudaloom.junit.GpuTest;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import jcuda.driver.CUresult;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The CUDA backend refuses a launch over the device's limits as the simulated device does: the
 * same {@link IllegalArgumentException}, the same one-line message, before anything is enqueued
 * (the stream stays usable and counts no submission). The driver would refuse it too
 * ({@code cuLaunchKernel} with 2,048 threads per block returns an error, checked here on the raw
 * handle), so the simulated device, which reports an H100's limits, now fails in CI what fails on
 * the GPU. On a compute capability 9.0 device (H100, H200) the limits read from the driver are the
 * simulated device's.
 */
@Tag("gpu")
@GpuTest
class LaunchLimitsGpuTest {
    private static final int N = 2048;

    /** The message the simulated device refuses {@code SCALE_F32} with 2,048 threads per block with. */
    private static String simulatedRefusal() {
        try (SimulatedDevice sim = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build());
                DeviceMemory data = sim.allocate(4L * N)) {
            SimulatedStream stream = sim.newStream();
            return assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.SCALE_F32, 1, 2048, data, 2f, N)).getMessage();
        }
    }

    @Test
    void aLaunchOver1024ThreadsPerBlockIsRefusedAsOnTheSimulatedDeviceBeforeAnythingIsEnqueued(CudaDevice device)
            throws Exception {
        String simulated = simulatedRefusal();
        LaunchLimits limits = device.launchLimits();
        System.out.println("LaunchLimitsGpuTest: " + device.name() + " (compute capability " + device.computeCapability()
                + "): " + limits);
        assertEquals(1024, limits.maxThreadsPerBlock(), "every CUDA device of compute capability 2.0 or later");
        if (device.computeCapability().equals("9.0")) {
            try (SimulatedDevice sim = SimulatedDevice.create(ReactorConfig.builder().jmx(false).build())) {
                assertEquals(sim.launchLimits(), limits, "the simulated device reports an H100/H200's limits");
            }
        }
        try (CudaStream stream = device.newStream(); DeviceMemory data = device.allocate(4L * N);
                HostMemory host = device.allocateHost(4L * N)) {
            for (int i = 0; i < N; i++) {
                host.floats().put(i, i);
            }
            stream.copy(host, data, 4L * N);
            stream.await();
            long before = stream.submissionCount();
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.SCALE_F32, 1, 2048, data, 2f, N));
            assertEquals(simulated, refused.getMessage(), "the same message on both backends");
            assertEquals(before, stream.submissionCount(), "nothing was enqueued");
            assertEquals(0, stream.workInFlight());

            // The driver refuses it too: the check says what the GPU would (an invalid launch
            // configuration is not a sticky error, so the stream goes on).
            try (Kernels kernels = Kernels.load(device)) {
                device.makeCurrent();
                int r = cuLaunchKernel(kernels.scale.function(), 1, 1, 1, 2048, 1, 1, 0, stream.handle(),
                        KernelArgs.pack("scale_f32", data, 2f, N), null);
                assertNotEquals(CUresult.CUDA_SUCCESS, r, "the driver accepted 2,048 threads per block");
                System.out.println("LaunchLimitsGpuTest: the driver answered " + CUresult.stringFor(r));

                // The 3-D launch of a raw CudaKernel is checked the same way.
                String gridY = assertThrows(IllegalArgumentException.class, () -> WorkChecks.dimensions(
                        limits, "scale_f32", 1, limits.maxGridDimY() + 1, 1, 32, 1, 1, 0)).getMessage();
                IllegalArgumentException raw = assertThrows(IllegalArgumentException.class, () -> stream.launch(
                        kernels.scale, 1, limits.maxGridDimY() + 1, 1, 32, 1, 1, 0, new Object[] {data, 2f, N}));
                assertEquals(gridY, raw.getMessage());
                assertEquals(before, stream.submissionCount(), "nothing was enqueued");
            }

            // The stream is usable: the same work at 1,024 threads per block runs.
            stream.launch(GpuKernel.SCALE_F32, 2, 1024, data, 2f, N);
            stream.copy(data, host, 4L * N);
            stream.await();
            assertEquals(2f * (N - 1), host.floats().get(N - 1));
            assertFalse(device.isFaulted(), device.fault());
        }
    }
}
