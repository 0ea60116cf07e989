package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaDriverException;
import io.cudaloom.junit.GpuTest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.driver.CUcontext;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The servlet benchmark's blocking-sync pool workload ({@link BlockingSyncWorkload}: raw JCuda on a
 * {@code CU_CTX_SCHED_BLOCKING_SYNC} context of its own) on a real GPU: every step's result
 * checked from many platform threads, the creating thread left as it was, the close, and a driver
 * error's one-line message, no device memory left behind. {@link GpuTest} skips the class, with a
 * printed reason, where there is no CUDA device.
 */
@Tag("gpu")
@GpuTest
class BlockingSyncWorkloadGpuTest {

    @Test
    void everyStepIsScaledOnTheBlockingSyncContextFromManyPlatformThreads() throws Exception {
        String before = currentContext();
        BlockingSyncWorkload w = new BlockingSyncWorkload(0, "device 0", 4);
        try {
            assertEquals(before, currentContext(), "the constructor leaves its thread's context as it was");
            assertTrue(w.description().contains("CU_CTX_SCHED_BLOCKING_SYNC") && w.description().contains("4 streams"),
                    w.description());
            assertThrows(UnsupportedOperationException.class, w::device);
            assertThrows(IllegalArgumentException.class, () -> w.scale(new float[DemoWorkload.VECTOR_LENGTH - 1], 2));
            int threads = 32;
            int steps = 200;
            AtomicInteger wrong = new AtomicInteger();
            List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
            List<Thread> pool = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int index = t;
                pool.add(Thread.ofPlatform().name("blocking-sync-" + t).start(() -> {
                    try {
                        for (int i = 0; i < steps; i++) {
                            if (!w.runOnce(index, i)) {
                                wrong.incrementAndGet();
                            }
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }));
            }
            for (Thread t : pool) {
                t.join(60_000);
                assertTrue(!t.isAlive(), t.getName() + " still running after 60 s");
            }
            assertEquals(List.of(), errors);
            assertEquals(0, wrong.get(), "every element of every step scaled");
            assertEquals((long) threads * steps, w.awaitLatency().count(), "one synchronize per step");

            // the servlet's own request: sum of the scaled vector as the client checks it
            float[] data = new float[DemoWorkload.VECTOR_LENGTH];
            for (int i = 0; i < 100; i++) {
                data[i] = 7 + i;
            }
            onAPlatformThread(() -> {
                w.scale(data, -3);
                return null;
            });
            long sum = 0;
            for (float v : data) {
                sum += (long) v;
            }
            assertEquals("sum=" + sum + "\n", ScaleServlet.expectedBody(7, 100, -3));
            assertEquals(before, currentContext(), "steps on other threads leave this one as it was");
        } finally {
            w.close();
        }
        assertEquals(before, currentContext(), "the close leaves its thread's context as it was");
        w.close(); // a second close does nothing
        IllegalStateException closed = assertThrows(IllegalStateException.class,
                () -> w.scale(new float[DemoWorkload.VECTOR_LENGTH], 2));
        assertEquals("the blocking-sync workload is closed", closed.getMessage());
    }

    @Test
    void aDriverErrorIsOneLineNamingTheCall() {
        CudaDriverException e = assertThrows(CudaDriverException.class, () -> new BlockingSyncWorkload(9_999, "none", 1));
        assertTrue(e.getMessage().startsWith("cuDeviceGet(9999) failed: "), e.getMessage());
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
    }

    @Test
    void workloadsOneAfterAnotherLeaveNoDeviceMemoryBehind(CudaDevice gpu) throws Exception {
        gpu.makeCurrent(); // cuMemGetInfo reads the device's free memory through the current context
        String primary = currentContext();
        new BlockingSyncWorkload(gpu.ordinal(), gpu.name(), 8).close(); // the driver's one-time allocations
        long before = freeDeviceBytes();
        for (int i = 0; i < 10; i++) {
            int step = i;
            try (BlockingSyncWorkload w = new BlockingSyncWorkload(gpu.ordinal(), gpu.name(), 8)) {
                assertTrue(onAPlatformThread(() -> w.runOnce(step, step)), "step " + i);
            }
        }
        assertEquals(primary, currentContext(), "each workload leaves the primary context current, as it was");
        // A step on the closing thread makes the context current there (replacing the primary, as the
        // library's own calls do); the close then pops it rather than leave a destroyed context current.
        try (BlockingSyncWorkload w = new BlockingSyncWorkload(gpu.ordinal(), gpu.name(), 8)) {
            assertTrue(w.runOnce(0, 0), "a step on the closing thread");
        }
        CUcontext current = new CUcontext();
        BlockingSyncWorkload.check(JCudaDriver.cuCtxGetCurrent(current), "cuCtxGetCurrent");
        assertEquals(new CUcontext(), current, "no context current: not the destroyed one");
        gpu.makeCurrent();
        long after = freeDeviceBytes();
        // each made a context and 16 MiB of device memory: ten leaked would be far more than 64 MiB
        // (other processes may use the GPU meanwhile, a little)
        assertTrue(Math.abs(before - after) < 64L << 20, before + " then " + after + " bytes free");
    }

    /** {@code c}'s result, run on a platform thread of its own (the pool's threads are). */
    private static <T> T onAPlatformThread(java.util.concurrent.Callable<T> c) throws Exception {
        java.util.concurrent.FutureTask<T> task = new java.util.concurrent.FutureTask<>(c);
        Thread.ofPlatform().name("blocking-sync-step").start(task);
        return task.get(60, java.util.concurrent.TimeUnit.SECONDS);
    }

    private static long freeDeviceBytes() {
        long[] free = new long[1];
        long[] total = new long[1];
        BlockingSyncWorkload.check(JCudaDriver.cuMemGetInfo(free, total), "cuMemGetInfo");
        return free[0];
    }

    /** The calling thread's current context as JCuda prints it (its address; 0 if none). */
    private static String currentContext() {
        BlockingSyncWorkload.check(JCudaDriver.cuInit(0), "cuInit");
        CUcontext c = new CUcontext();
        BlockingSyncWorkload.check(JCudaDriver.cuCtxGetCurrent(c), "cuCtxGetCurrent");
        return c.toString();
    }
}
