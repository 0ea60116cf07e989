package io.cudaloom.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuBatcher;
import io.cudaloom.GpuKernel;
import io.cudaloom.GpuStream;
import io.cudaloom.HostMemory;
import io.cudaloom.junit.GpuTest;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The batched call on a GPU: correct outputs for 10,000 concurrent callers in few launches, and a
 * first comparison with the same work done per call (copy in, launch, copy out, await per caller),
 * printed: completions/s and process CPU per completion for both, in one run.
 */
@Tag("gpu")
@GpuTest
class GpuBatcherGpuTest {
    private static final int CALLERS = 10_000;
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    /** x -> 3x with SCALE_F32 over the batch, in place. */
    static final class Triple implements GpuBatcher.Step<Float, Float> {
        @Override
        public void pack(Float x, ByteBuffer slot) {
            slot.putFloat(x);
        }

        @Override
        public void launch(GpuStream stream, DeviceMemory in, DeviceMemory out, int count) {
            stream.launch(GpuKernel.SCALE_F32, (count + 255) / 256, 256, in, 3f, count);
        }

        @Override
        public Float unpack(ByteBuffer slot) {
            return slot.getFloat();
        }
    }

    @Test
    void tenThousandCallersAreServedCorrectlyInFewBatchesAndCostLessThanPerCall(CudaDevice device) throws Exception {
        double[] batched = null;
        double[] perCall = null;
        for (int round = 0; round < 3; round++) { // the first round warms up (JIT, module load)
            batched = runBatched(device);
            perCall = runPerCall(device);
        }
        System.out.printf("GpuBatcherGpuTest: %,d callers: batched %,.0f calls/s, %.2f us CPU per call, %.0f batches;"
                + " per call (its own buffers in try-with-resources: allocate, copy, launch, copy, await, free) %,.0f calls/s, %.2f us CPU per call%n", CALLERS,
                batched[0], batched[1] / 1e3, batched[2], perCall[0], perCall[1] / 1e3);
        assertTrue(batched[2] < CALLERS / 4.0, "batched: " + batched[2] + " batches");
        assertNull(device.fault());
    }

    /** {calls/s, CPU ns per call, batches}. */
    private static double[] runBatched(CudaDevice device) throws Exception {
        try (GpuBatcher<Float, Float> b = GpuBatcher.builder(device, new Triple()).inPlace(4).maxBatch(256).streams(4)
                .maxDelay(Duration.ofMillis(1)).build();
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            long cpu0 = OS.getProcessCpuTime();
            long t0 = System.nanoTime();
            List<Future<Float>> out = new ArrayList<>(CALLERS);
            for (int i = 0; i < CALLERS; i++) {
                float x = i;
                out.add(threads.submit(() -> b.call(x)));
            }
            for (int i = 0; i < CALLERS; i++) {
                assertEquals(3f * i, out.get(i).get(), "call " + i);
            }
            long wall = System.nanoTime() - t0;
            long cpu = OS.getProcessCpuTime() - cpu0;
            return new double[] {CALLERS * 1e9 / wall, (double) cpu / CALLERS, b.stats().batches()};
        }
    }

    private static double[] runPerCall(CudaDevice device) throws Exception {
        List<GpuStream> streams = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            streams.add(device.newStream());
        }
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            long cpu0 = OS.getProcessCpuTime();
            long t0 = System.nanoTime();
            List<Future<Float>> out = new ArrayList<>(CALLERS);
            for (int i = 0; i < CALLERS; i++) {
                float x = i;
                GpuStream s = streams.get(i % streams.size());
                out.add(threads.submit(() -> {
                    try (DeviceMemory d = device.allocate(4); HostMemory h = device.allocateHost(4)) {
                        h.floats().put(0, x);
                        s.copy(h, d, 4);
                        s.launch(GpuKernel.SCALE_F32, 1, 256, d, 3f, 1);
                        s.copy(d, h, 4);
                        s.event().await();
                        return h.floats().get(0);
                    }
                }));
            }
            for (int i = 0; i < CALLERS; i++) {
                assertEquals(3f * i, out.get(i).get(), "call " + i);
            }
            long wall = System.nanoTime() - t0;
            long cpu = OS.getProcessCpuTime() - cpu0;
            return new double[] {CALLERS * 1e9 / wall, (double) cpu / CALLERS, CALLERS};
        } finally {
            for (GpuStream s : streams) {
                s.close();
            }
        }
    }
}
