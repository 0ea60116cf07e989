package io.cudaloom;

import static io.cudaloom.GpuKernel.Param.DOUBLE;
import static io.cudaloom.GpuKernel.Param.FLOAT;
import static io.cudaloom.GpuKernel.Param.INT;
import static io.cudaloom.GpuKernel.Param.LONG;
import static io.cudaloom.GpuKernel.Param.POINTER;
import static io.cudaloom.GpuKernel.Param.POINTER_OR_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.cuda.DeviceBuffer;
import io.cudaloom.cuda.Kernels;
import io.cudaloom.cuda.PinnedBuffer;
import io.cudaloom.internal.WorkChecks;
import io.cudaloom.junit.GpuTest;
import io.cudaloom.sim.SimulatedDevice;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Typed kernel parameters (issue #23, item 5): a kernel knows its parameters, read from its PTX
 * or declared, and a launch with the wrong count or types throws at the launch, on every backend,
 * before anything is enqueued, leaving the stream usable. Before, the launch was accepted and the
 * await failed with "kernel argument 1 is a Integer, not Float", the stream faulted for good.
 */
class KernelParamsTest {
    /** From a class-path resource (src/test/resources/io/cudaloom/twice_u32.ptx): data[i] *= 2. */
    static final GpuKernel TWICE = GpuKernel.fromResource(KernelParamsTest.class, "twice_u32.ptx", "twice_u32",
            List.of(POINTER, INT), t -> {
                if (t.index() < t.intArg(1)) {
                    t.ints(0).put(t.index(), 2 * t.ints(0).get(t.index()));
                }
            });

    /** The program, on any device: bad launches throw at once, then the same stream does the work. */
    static void wrongLaunchesThrowAndTheStreamStaysUsable(GpuDevice device) throws InterruptedException {
        int n = 1024;
        try (GpuStream stream = device.newStream();
                DeviceMemory data = device.allocate(4L * n);
                HostMemory host = device.allocateHost(4L * n)) {
            for (int i = 0; i < n; i++) {
                host.floats().put(i, i);
            }
            stream.copy(host, data, 4L * n);
            long submitted = stream.submissionCount();

            IllegalArgumentException type = assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.SCALE_F32, 4, 256, data, 2, n)); // 2, not 2f
            assertMessage(type, "kernel scale_f32", "argument 1", "must be Float", "was an Integer (2)");
            IllegalArgumentException count = assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.SCALE_F32, 4, 256, data, 2f));
            assertMessage(count, "kernel scale_f32", "takes 3 argument(s) [POINTER, FLOAT, INT]", "was given 2");
            IllegalArgumentException tooMany = assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.EMPTY, 1, 1, 7));
            assertMessage(tooMany, "kernel empty_kernel", "takes 0 argument(s)", "was given 1");
            IllegalArgumentException pointer = assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.FILL_U32, 1, 32, 0xdead_0000L, 1, 32));
            assertMessage(pointer, "kernel fill_u32", "argument 0", "must be DeviceMemory", "was a Long");
            IllegalArgumentException nul = assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.FILL_U32, 1, 32, data, null, 32));
            assertMessage(nul, "argument 1", "must be Integer", "was null");
            assertEquals(submitted, stream.submissionCount(), "nothing was enqueued by the refused launches");

            stream.launch(GpuKernel.SCALE_F32, (n + 255) / 256, 256, data, 2f, n); // the same stream, right types
            stream.copy(data, host, 4L * n);
            assertTrue(stream.event().await(Duration.ofSeconds(30)), "the correct launch completed on " + device);
            assertEquals(2f * (n - 1), host.floats().get(n - 1), "scaled on " + device);
            assertEquals(0, device.reactor().stats().faults(), "no fault on " + device);
        }
    }

    @Test
    void onTheSimulatedDeviceAWrongLaunchThrowsAtTheLaunchAndTheStreamStaysUsable() throws InterruptedException {
        try (GpuDevice device = SimulatedDevice.create()) {
            wrongLaunchesThrowAndTheStreamStaysUsable(device);
        }
    }

    @Test
    @Tag("gpu")
    @GpuTest
    void onAGpuAWrongLaunchThrowsAtTheLaunchAndTheStreamStaysUsable(GpuDevice device) throws InterruptedException {
        assertFalse(device.isSimulated());
        wrongLaunchesThrowAndTheStreamStaysUsable(device);
    }

    /** The CUDA backend's own kernels ({@link Kernels}) are checked the same way. */
    @Test
    @Tag("gpu")
    @GpuTest
    void cudaKernelsCheckTheirArgumentsAtTheLaunch(CudaDevice gpu, CudaStream stream) throws InterruptedException {
        try (Kernels k = Kernels.load(gpu); DeviceBuffer buf = gpu.allocate(4096);
                PinnedBuffer host = gpu.allocateHost(4096)) {
            assertEquals(List.of(POINTER_OR_LONG, INT, INT), k.fill.params());
            assertMessage(assertThrows(IllegalArgumentException.class, () -> stream.launch(k.fill, 1, 1024, buf, 4f, 1024)),
                    "kernel fill_u32", "argument 1", "must be Integer", "was a Float");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> stream.launch(k.fill, 1, 1024, buf, 4)),
                    "takes 3 argument(s)", "was given 2");
            stream.launch(k.fill, 1, 1024, buf, 42, 1024);
            stream.copy(buf, host, 4096);
            stream.await();
            assertEquals(42, host.ints().get(1023));
        }
    }

    /** A kernel from a class-path resource runs on the simulated device without reading it. */
    @Test
    void aResourceKernelRunsOnTheSimulatedDeviceWithoutItsPtx() throws InterruptedException {
        GpuKernel missing = GpuKernel.fromResource(KernelParamsTest.class, "no-such.ptx", "twice_u32",
                List.of(POINTER, INT), TWICE.body());
        try (GpuDevice device = SimulatedDevice.create(); GpuStream stream = device.newStream();
                DeviceMemory data = device.allocate(64); HostMemory host = device.allocateHost(64)) {
            stream.memset32(data, 21, 16);
            stream.launch(missing, 1, 16, data, 16);
            assertMessage(assertThrows(IllegalArgumentException.class, () -> stream.launch(missing, 1, 16, data, 16L)),
                    "kernel twice_u32", "argument 1", "must be Integer", "was a Long (16)");
            stream.copy(data, host, 64);
            stream.await();
            assertEquals(42, host.ints().get(15));
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, missing::ptx);
        assertMessage(e, "kernel twice_u32", "'no-such.ptx'", KernelParamsTest.class.getName(), "not on the class path",
                "a CUDA device needs it");
        assertTrue(TWICE.ptx().contains(".entry twice_u32("), "a present resource is read: " + TWICE.ptx());
        GpuKernel.checkMatches("twice_u32", TWICE.params(), GpuKernel.paramsOf(TWICE.ptx(), "twice_u32"), "test");
    }

    @Test
    void theBuiltInKernelsDeclareTheParametersOfTheirPtx() {
        assertEquals(List.of(), GpuKernel.EMPTY.params());
        assertEquals(List.of(LONG), GpuKernel.SPIN.params());
        assertEquals(List.of(POINTER, INT, INT), GpuKernel.FILL_U32.params());
        assertEquals(List.of(POINTER, FLOAT, INT), GpuKernel.SCALE_F32.params());
        String ptx = GpuKernel.EMPTY.ptx();
        for (GpuKernel k : List.of(GpuKernel.EMPTY, GpuKernel.SPIN, GpuKernel.FILL_U32, GpuKernel.SCALE_F32)) {
            GpuKernel.checkMatches(k.entry(), k.params(), GpuKernel.paramsOf(ptx, k.entry()), "kernels.ptx");
        }
        assertEquals(List.of(POINTER_OR_LONG), GpuKernel.paramsOf(io.cudaloom.cuda.Kernels.faultPtx(), "fault_kernel"));
        assertThrows(IllegalArgumentException.class, () -> GpuKernel.paramsOf(ptx, "fault_kernel"),
                "the shipped PTX has no fault kernel (a test fixture's)");
        assertEquals(List.of(POINTER_OR_LONG, FLOAT, INT), GpuKernel.paramsOf(ptx, "scale_f32"));
    }

    @Test
    void parametersAreReadFromThePtxEntry() {
        String ptx = """
                // .entry commented_out(.param .f32 x)
                .visible .entry add(.param .u64 .ptr .global .align 4 add_param_0, .param .s32 add_param_1)
                { ret; }
                /* .entry also_commented(.param .f64 x) */
                .visible .entry add_more(
                    .param .b64 p,      // a pointer
                    .param .f64 scale,
                    .param .f32 bias,
                    .param .u16 small,
                    .param .b32 bits
                )
                .maxntid 256, 1, 1
                { ret; }
                .entry bare
                { ret; }
                .visible .entry none() { ret; }
                .visible .entry with_struct(.param .align 8 .b8 s[16]) { ret; }
                .visible .entry half(.param .f16 h) { ret; }
                """;
        assertEquals(List.of(POINTER_OR_LONG, INT), GpuKernel.paramsOf(ptx, "add"), "not add_more's");
        assertEquals(List.of(POINTER_OR_LONG, DOUBLE, FLOAT, INT, INT), GpuKernel.paramsOf(ptx, "add_more"));
        assertEquals(List.of(), GpuKernel.paramsOf(ptx, "bare"));
        assertEquals(List.of(), GpuKernel.paramsOf(ptx, "none"));
        assertMessage(assertThrows(IllegalArgumentException.class, () -> GpuKernel.paramsOf(ptx, "commented_out")),
                "no .entry named 'commented_out'");
        assertMessage(assertThrows(IllegalArgumentException.class, () -> GpuKernel.paramsOf(ptx, "ad")),
                "no .entry named 'ad'");
        assertMessage(assertThrows(IllegalArgumentException.class, () -> GpuKernel.paramsOf(ptx, "with_struct")),
                "parameter 0 of .entry 'with_struct'", ".b8 s[16]", "no launch can pass");
        assertMessage(assertThrows(IllegalArgumentException.class, () -> GpuKernel.of(ptx, "half", t -> {})),
                "parameter 0 of .entry 'half'", ".f16");

        GpuKernel read = GpuKernel.of(ptx, "add_more", t -> {});
        assertEquals(List.of(POINTER_OR_LONG, DOUBLE, FLOAT, INT, INT), read.params());
        GpuKernel declared = GpuKernel.of(ptx, "add_more", List.of(POINTER, DOUBLE, FLOAT, INT, INT), t -> {});
        assertEquals(List.of(POINTER, DOUBLE, FLOAT, INT, INT), declared.params());
    }

    @Test
    void aDeclarationThatContradictsThePtxIsRefused() {
        String ptx = ".visible .entry k(.param .u64 p, .param .f32 x) { ret; }";
        assertMessage(assertThrows(IllegalArgumentException.class, () -> GpuKernel.of(ptx, "k", List.of(POINTER, INT), t -> {})),
                "parameter 1 of kernel k is declared INT", "has FLOAT");
        assertMessage(assertThrows(IllegalArgumentException.class, () -> GpuKernel.of(ptx, "k", List.of(POINTER), t -> {})),
                "kernel k is declared with 1 parameter(s)", "has 2");
        assertMessage(assertThrows(IllegalArgumentException.class,
                () -> GpuKernel.of(ptx, "k", java.util.Arrays.asList(POINTER, null), t -> {})), "parameter 1 of kernel k is null");
        assertSame(LONG, GpuKernel.of(ptx, "k", List.of(LONG, FLOAT), t -> {}).params().get(0));
    }

    /** The checks are a loop over the kernel's own array: no allocation per launch. */
    @Test
    void theLaunchChecksAllocateNothing() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (GpuDevice device = SimulatedDevice.create(); DeviceMemory data = device.allocate(64)) {
            Object[] args = {data, 2f, 16};
            for (int i = 0; i < 20_000; i++) { // warm up (compiled)
                WorkChecks.launch(device, GpuKernel.SCALE_F32, 1, 16, args);
            }
            long allocated = Long.MAX_VALUE;
            for (int round = 0; round < 5 && allocated != 0; round++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 10_000; i++) {
                    WorkChecks.launch(device, GpuKernel.SCALE_F32, 1, 16, args);
                }
                allocated = threads.getCurrentThreadAllocatedBytes() - before;
            }
            assertEquals(0, allocated, "bytes allocated by 10,000 launch checks");
        }
    }

    private static void assertMessage(Throwable t, String... parts) {
        for (String part : parts) {
            assertTrue(String.valueOf(t.getMessage()).contains(part),
                    "message should contain '" + part + "': " + t.getMessage());
        }
    }
}
