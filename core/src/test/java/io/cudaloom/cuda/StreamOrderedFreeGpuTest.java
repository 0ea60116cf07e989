package io.cudaloom.cuda;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuEvent;
import io.cudaloom.GpuKernel;
import io.cudaloom.HostMemory;
import io.cudaloom.LiveResources;
import io.cudaloom.junit.GpuTest;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Stream-ordered frees on the GPU: memory closed under queued work is freed once that work is done,
 * by the device's releaser thread, and the close returns at once (no {@code cuMemFree} or
 * {@code cuMemFreeHost} on the caller's thread while the GPU still uses the memory).
 */
@Tag("gpu")
@GpuTest
class StreamOrderedFreeGpuTest {
    private static final int N = 1 << 20;
    private static final Duration LONG = Duration.ofSeconds(60);

    private static int count(CudaDevice device, LiveResources.Kind kind) {
        return device.liveResources().count(kind);
    }

    /**
     * A 100 ms kernel, then a copy in and a copy out of 4 MiB: the input's host memory and the
     * device memory are closed while all of it is queued. Each close returns in under 1 ms; the
     * result, read through host memory that stayed open, is intact; the closed memory is freed
     * after the work.
     */
    @Test
    void closingMemoryUnderA100MsKernelReturnsAtOnceAndTheCopiesStayIntact(CudaDevice device) throws Exception {
        try (CudaStream s = device.newStream(); HostMemory out = device.allocateHost(4L * N)) {
            s.launchKernel(Duration.ZERO); // the spin kernel loaded and the stream warm before the clock
            s.await();
            HostMemory in = device.allocateHost(4L * N);
            DeviceMemory d = device.allocate(4L * N);
            IntBuffer src = in.ints();
            for (int i = 0; i < N; i++) {
                src.put(i, 3 * i + 11);
            }
            s.launchKernel(Duration.ofMillis(100));
            s.copy(in, d, 4L * N);
            s.copy(d, out, 4L * N);
            GpuEvent done = s.event();
            long t0 = System.nanoTime();
            d.close();
            long t1 = System.nanoTime();
            in.close();
            long t2 = System.nanoTime();
            System.out.printf("StreamOrderedFreeGpuTest: device memory closed in %.1f us, pinned host memory in"
                    + " %.1f us, under a 100 ms kernel%n", (t1 - t0) / 1e3, (t2 - t1) / 1e3);
            assertTrue(t1 - t0 < 1_000_000, "closing the device memory took " + (t1 - t0) / 1e3 + " us");
            assertTrue(t2 - t1 < 1_000_000, "closing the pinned host memory took " + (t2 - t1) / 1e3 + " us");
            assertEquals(2, count(device, LiveResources.Kind.FREEING_MEMORY), "both wait for the kernel and the copies");
            assertTrue(s.workInFlight() > 0, "the premise: the work is still queued");
            done.await();
            IntBuffer result = out.ints();
            for (int i = 0; i < N; i++) {
                if (result.get(i) != 3 * i + 11) {
                    throw new AssertionError("element " + i + " is " + result.get(i) + ": the copies ran on freed memory");
                }
            }
            await().atMost(LONG).until(() -> count(device, LiveResources.Kind.FREEING_MEMORY) == 0);
            assertEquals(0, count(device, LiveResources.Kind.DEVICE_MEMORY));
            assertNull(device.fault());
        }
    }

    /**
     * 20,000 requests, each on a virtual thread: try-with-resources around its device and host
     * memory, copy in, a kernel, copy out, and an await with a random timeout, so that many close
     * their memory with the work still queued. No fault, every piece of memory is freed, and no
     * free ran on a virtual thread (so none held a carrier in the driver).
     */
    @Test
    void twentyThousandRequestsWithTimeoutsNeverFaultAndFreeEverything(CudaDevice device) throws Exception {
        long virtualFreesBefore = io.cudaloom.internal.MemoryLifetime.freesOnVirtualThreads();
        LongAdder ok = new LongAdder();
        LongAdder timeouts = new LongAdder();
        List<CudaStream> streams = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            streams.add(device.newStream());
        }
        int n = 256;
        long t0 = System.nanoTime();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> done = new ArrayList<>();
            for (int r = 0; r < 20_000; r++) {
                CudaStream s = streams.get(r % streams.size());
                done.add(threads.submit(() -> {
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    try (DeviceMemory d = device.allocate(4L * n); HostMemory h = device.allocateHost(4L * n)) {
                        FloatBuffer in = h.floats();
                        for (int i = 0; i < n; i++) {
                            in.put(i, i);
                        }
                        s.copy(h, d, 4L * n);
                        s.launchKernel(Duration.ofNanos(rnd.nextInt(5_000, 60_000)));
                        s.launch(GpuKernel.SCALE_F32, 1, n, d, 2f, n);
                        s.copy(d, h, 4L * n);
                        if (!s.event().await(Duration.ofNanos(rnd.nextLong(1_000, 400_000)))) {
                            timeouts.increment();
                            return null;
                        }
                        FloatBuffer out = h.floats();
                        for (int i = 0; i < n; i++) {
                            if (out.get(i) != 2f * i) {
                                throw new AssertionError("element " + i + " is " + out.get(i));
                            }
                        }
                        ok.increment();
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        }
        for (CudaStream s : streams) {
            s.await();
            s.close();
        }
        await().atMost(LONG).until(() -> count(device, LiveResources.Kind.FREEING_MEMORY) == 0
                && count(device, LiveResources.Kind.DEVICE_MEMORY) == 0 && count(device, LiveResources.Kind.HOST_MEMORY) == 0);
        System.out.printf("StreamOrderedFreeGpuTest: 20,000 requests in %.1f s: %,d completed, %,d timed out and closed"
                + " their memory with work queued; no fault; every piece of memory freed%n",
                (System.nanoTime() - t0) / 1e9, ok.sum(), timeouts.sum());
        assertNull(device.fault(), "no fault");
        assertEquals(virtualFreesBefore, io.cudaloom.internal.MemoryLifetime.freesOnVirtualThreads(),
                "no cuMemFree or cuMemFreeHost ran on a virtual thread (none held a carrier in the driver)");
        assertTrue(timeouts.sum() > 0, "the premise: requests timed out with work queued");
        assertEquals(20_000, ok.sum() + timeouts.sum());
    }
}
