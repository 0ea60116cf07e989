package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The simulated device is as strict as a GPU at the launch: it reports an H100's launch limits and
 * refuses a launch over them before anything is enqueued, with the one-line message the CUDA
 * backend gives ({@code LaunchLimitsGpuTest} on a GPU compares the two). Before, it accepted
 * {@code launch(SCALE_F32, 1, 2048, ...)}, which a GPU refuses: CI was green where the GPU was red.
 * And a kernel body's exception names the kernel, the thread and the cause's message; before, the
 * fault said only {@code kernel failed: java.lang.IndexOutOfBoundsException}.
 */
class LaunchLimitsTest {
    @RegisterExtension
    final OpenedDevices devices = new OpenedDevices();

    /** What a launch of SCALE_F32 with 2,048 threads per block is refused with, on every backend. */
    static final String OVER_1024_THREADS =
            "a block of 2048 threads (2048,1,1) is over the device's limit of 1024 threads per block (launching scale_f32)";

    @Test
    void theSimulatedDeviceReportsAnH100sLimits() {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        assertEquals(new LaunchLimits(1024, 1024, 1024, 64, Integer.MAX_VALUE, 65_535, 65_535, 232_448),
                device.launchLimits());
    }

    @Test
    void aLaunchOverTheThreadsPerBlockIsRefusedBeforeAnythingIsEnqueued() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        try (DeviceMemory data = device.allocate(4L * 2048)) {
            long before = stream.submissionCount();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.SCALE_F32, 1, 2048, data, 2f, 2048));
            assertEquals(OVER_1024_THREADS, e.getMessage());
            assertEquals(before, stream.submissionCount(), "nothing was enqueued");
            assertEquals(0, stream.workInFlight());
            // The stream is usable: the same work at 1,024 threads per block runs.
            stream.launch(GpuKernel.SCALE_F32, 2, 1024, data, 2f, 2048);
            stream.await();
            // Combining counts queue positions: the launch and the await's flag write.
            boolean combining = device.reactor().config().submission() == Submission.COMBINING;
            assertEquals(before + (combining ? 2 : 1), stream.submissionCount());
        }
        assertEquals(false, device.isFaulted());
    }

    @Test
    void theLargestBlockIsAccepted() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        try (DeviceMemory data = device.allocate(4L * 1024); HostMemory host = device.allocateHost(4L * 1024)) {
            FloatBuffer in = host.floats();
            for (int i = 0; i < 1024; i++) {
                in.put(i, i);
            }
            stream.copy(host, data, 4L * 1024);
            stream.launch(GpuKernel.SCALE_F32, 1, 1024, data, 3f, 1024);
            stream.copy(data, host, 4L * 1024);
            stream.await();
            assertEquals(3f * 1023, host.floats().get(1023));
        }
    }

    @Test
    void eachLimitHasItsOneLineMessage() {
        LaunchLimits h100 = devices.track(SimulatedDevice.create()).launchLimits();
        record Case(int gx, int gy, int gz, int bx, int by, int bz, int shared, String message) {}
        List<Case> cases = List.of(
                new Case(1, 1, 1, 32, 32, 2, 0, "a block of 2048 threads (32,32,2) is over the device's limit of 1024"
                        + " threads per block (launching k)"),
                new Case(1, 1, 1, 1, 1, 65, 0, "a block z dimension of 65 is over the device's limit of 64 (launching k)"),
                new Case(1, 65_536, 1, 1, 1, 1, 0,
                        "a grid y dimension of 65536 is over the device's limit of 65535 (launching k)"),
                new Case(1, 1, 65_536, 1, 1, 1, 0,
                        "a grid z dimension of 65536 is over the device's limit of 65535 (launching k)"),
                new Case(1, 1, 1, 1, 1, 1, 232_449, "232449 bytes of dynamic shared memory per block is over the"
                        + " device's limit of 232448 (launching k)"),
                new Case(1, 1, 1, 1, 0, 1, 0, "grid and block dimensions must be >= 1, were grid (1,1,1) block (1,0,1)"
                        + " (launching k)"));
        for (Case c : cases) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> io.cudaloom.internal.WorkChecks
                    .dimensions(h100, "k", c.gx(), c.gy(), c.gz(), c.bx(), c.by(), c.bz(), c.shared()));
            assertEquals(c.message(), e.getMessage());
            assertTrue(e.getMessage().lines().count() == 1, "one line");
        }
        // At the limits: accepted.
        io.cudaloom.internal.WorkChecks.dimensions(h100, "k", Integer.MAX_VALUE, 65_535, 65_535, 1024, 1, 1, 232_448);
        io.cudaloom.internal.WorkChecks.dimensions(h100, "k", 1, 1, 1, 16, 1, 64, 0);
        assertThrows(IllegalArgumentException.class, () -> new LaunchLimits(0, 1, 1, 1, 1, 1, 1, 0),
                "a device's limits are positive");
    }

    /**
     * SCALE_F32 over 8 threads with {@code n = 8} on memory of 4 floats: thread 4 indexes out of
     * bounds. The fault names the stream (its subject), the kernel, the thread and the memory's
     * size; the cause is the body's exception.
     */
    @Test
    void aKernelIndexingOutOfBoundsNamesTheKernelTheStreamAndTheThread() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        try (DeviceMemory data = device.allocate(16)) {
            stream.launch(GpuKernel.SCALE_F32, 2, 4, data, 2f, 8);
            GpuFaultException e = assertThrows(GpuFaultException.class, stream::await);
            assertEquals(stream + " of " + device.name() + ": its work can never complete (kernel scale_f32 failed in"
                    + " thread 4 (block 1, thread 0 of a 2 x 4 launch): java.lang.IndexOutOfBoundsException"
                    + " (memory argument 0: 16 bytes))", e.getMessage());
            assertInstanceOf(IndexOutOfBoundsException.class, e.getCause(), "the body's own exception is the cause");
        }
    }

    @Test
    void aKernelsExceptionMessageIsInTheFault() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        IllegalStateException boom = new IllegalStateException("index 7 of 4 (test)");
        GpuKernel throwing = GpuKernel.of(GpuKernel.EMPTY.ptx(), "empty_kernel", t -> {
            if (t.index() == 7) {
                throw boom;
            }
        });
        stream.launch(throwing, 1, 8);
        GpuFaultException e = assertThrows(GpuFaultException.class, () -> stream.event().await(Duration.ofSeconds(30)));
        assertEquals(stream + " of " + device.name() + ": its work can never complete (kernel empty_kernel failed in"
                + " thread 7 (block 0, thread 7 of a 1 x 8 launch): " + boom + ")", e.getMessage());
        assertSame(boom, e.getCause());
        assertTrue(device.fault().startsWith("kernel empty_kernel failed in thread 7"), device.fault());
    }
}
