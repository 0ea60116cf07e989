package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.junit.GpuTest;
import io.cudaloom.sim.SimulatedDevice;
import java.time.Duration;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * One program, written against the device-agnostic API only ({@link GpuDevice},
 * {@link GpuStream}, {@link DeviceMemory}, {@link HostMemory}, {@link GpuKernel}), run unchanged on
 * the simulated device (in CI) and on a GPU (tagged {@code gpu}): the same results on both.
 */
class SameProgramOnEveryBackendTest {
    /** A user's own kernel: {@code data[i] += delta} for {@code i < n}; PTX and its Java twin. */
    static final GpuKernel ADD_U32 = GpuKernel.of("""
            .version 7.0
            .target sm_70
            .address_size 64
            .visible .entry add_u32(.param .u64 data, .param .u32 delta, .param .u32 n)
            {
                .reg .pred %p;
                .reg .b32 %r<8>;
                .reg .b64 %rd<4>;
                ld.param.u64 %rd1, [data];
                ld.param.u32 %r1, [delta];
                ld.param.u32 %r2, [n];
                mov.u32 %r3, %ctaid.x;
                mov.u32 %r4, %ntid.x;
                mov.u32 %r5, %tid.x;
                mad.lo.s32 %r3, %r3, %r4, %r5;
                setp.ge.u32 %p, %r3, %r2;
                @%p bra DONE;
                cvta.to.global.u64 %rd1, %rd1;
                mul.wide.u32 %rd2, %r3, 4;
                add.s64 %rd3, %rd1, %rd2;
                ld.global.u32 %r6, [%rd3];
                add.s32 %r7, %r6, %r1;
                st.global.u32 [%rd3], %r7;
            DONE:
                ret;
            }
            """, "add_u32", t -> {
        if (t.index() < t.intArg(2)) {
            t.ints(0).put(t.index(), t.ints(0).get(t.index()) + t.intArg(1));
        }
    });

    static final int N = 100_000;

    /** The program: upload, scale on the device, fill, add with a user kernel, download, await. */
    static void program(GpuDevice device) throws InterruptedException {
        try (GpuStream stream = device.newStream();
                DeviceMemory floats = device.allocate(4L * N);
                DeviceMemory ints = device.allocate(4L * N);
                HostMemory host = device.allocateHost(4L * N)) {
            for (int i = 0; i < N; i++) {
                host.floats().put(i, i);
            }
            int blocks = (N + 255) / 256;
            stream.copy(host, floats, 4L * N);
            stream.launch(GpuKernel.SCALE_F32, blocks, 256, floats, 2.5f, N);
            stream.copy(floats, host, 4L * N);
            stream.await();
            float[] scaled = new float[N];
            host.floats().get(scaled);
            for (int i = 0; i < N; i++) {
                assertEquals(i * 2.5f, scaled[i], "scaled[" + i + "] on " + device);
            }

            stream.memset32(ints, 7, N);
            stream.launch(ADD_U32, blocks, 256, ints, 35, N / 2); // only the first half
            stream.launch(GpuKernel.FILL_U32, 1, 32, ints, -1, 3); // then the first three words
            stream.copy(ints, 0, host, 0, 4L * N);
            stream.launchKernel(Duration.ofMillis(2)); // something for the event to wait behind
            GpuEvent done = stream.event();
            assertTrue(done.await(Duration.ofSeconds(30)), "done within 30 s on " + device);
            int[] expected = IntStream.range(0, N).map(i -> i < 3 ? -1 : i < N / 2 ? 42 : 7).toArray();
            int[] got = new int[N];
            host.ints().get(got);
            assertArrayEquals(expected, got, "memset, user kernel and fill on " + device);
        }
    }

    @Test
    void runsOnTheSimulatedDevice() throws InterruptedException {
        try (GpuDevice device = SimulatedDevice.create()) {
            program(device);
        }
    }

    @Test
    @Tag("gpu")
    @GpuTest // skipped, with the reason printed, where there is no CUDA device
    void runsUnchangedOnAGpu(GpuDevice device) throws InterruptedException {
        assertFalse(device.isSimulated(), "the extension gave the GPU: " + device);
        program(device); // typed GpuDevice: the program sees no CUDA type
    }

    @Test
    void badInputIsNamedTheSameWayOnEveryBackend() {
        try (GpuDevice a = SimulatedDevice.create(); GpuDevice b = SimulatedDevice.create();
                GpuStream stream = a.newStream(); DeviceMemory mem = a.allocate(64);
                DeviceMemory other = b.allocate(64); HostMemory host = a.allocateHost(64)) {
            assertMessage("belongs to", assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.FILL_U32, 1, 16, other, 1, 16)));
            assertMessage("argument 1 must be Integer (parameter INT), was a String (1)", assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.FILL_U32, 1, 16, mem, "1", 16)));
            assertMessage("grid and block sizes", assertThrows(IllegalArgumentException.class,
                    () -> stream.launch(GpuKernel.FILL_U32, 0, 16, mem, 1, 16)));
            assertMessage("out of the 64 bytes", assertThrows(IllegalArgumentException.class,
                    () -> stream.copy(host, 8, mem, 0, 64)));
            assertMessage("does not fit", assertThrows(IllegalArgumentException.class,
                    () -> stream.memset32(mem, 0, 17)));
            assertMessage("size must be 1..", assertThrows(IllegalArgumentException.class, () -> a.allocate(0)));
            assertMessage("no .entry named 'nope'", assertThrows(IllegalArgumentException.class,
                    () -> GpuKernel.of(".visible .entry add_u32()", "nope", t -> {})));
        }
    }

    private static void assertMessage(String part, Throwable t) {
        assertTrue(String.valueOf(t.getMessage()).contains(part), "message names the problem: " + t.getMessage());
    }
}
