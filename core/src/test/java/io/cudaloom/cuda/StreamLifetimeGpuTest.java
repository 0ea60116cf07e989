package io.cudaloom.cuda;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.junit.GpuTest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Stream lifetimes on the GPU: a closed stream is destroyed once its work is done and leaves the
 * device's set, so a server that opens and closes streams for as long as the context lives holds
 * only the streams still working (before, a stream closed while busy was never destroyed and the
 * device's set only grew: the first test saw 100,000 of each); and a launch racing a close either
 * runs or is refused by name, never reaching a destroyed handle.
 */
@Tag("gpu")
@GpuTest
class StreamLifetimeGpuTest {
    private static final int STREAMS = 100_000;
    /** Far above what completes within the scanner's latency, far below the 100,000 a leak leaves. */
    private static final int BOUND = 2_000;

    /**
     * 100,000 streams, each closed while busy (a 20 us kernel behind the close): the library's
     * count of the driver's streams and the device's set stay bounded while it runs and come back
     * to where they started; the device's free memory tells the same from the driver's side.
     */
    @Test
    void aHundredThousandStreamsClosedWhileBusyAreAllDestroyed(CudaDevice device) throws Exception {
        int liveBefore = device.liveStreams();
        int driverBefore = device.driverStreams();
        try (Kernels k = Kernels.load(device)) {
            CudaStream warm = device.newStream();
            k.launchSpin(warm, 20_000L);
            warm.close();
            long freeBefore = freeDeviceMemory(device);
            int maxLive = 0;
            int maxDriver = 0;
            long start = System.nanoTime();
            for (int i = 0; i < STREAMS; i++) {
                CudaStream s = device.newStream();
                k.launchSpin(s, 20_000L); // still running when the close returns
                s.close();
                if (i % 500 == 0) {
                    maxLive = Math.max(maxLive, device.liveStreams());
                    maxDriver = Math.max(maxDriver, device.driverStreams());
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    device.liveStreams() == liveBefore && device.driverStreams() == driverBefore);
            long freeAfter = freeDeviceMemory(device);
            System.out.printf("StreamLifetimeGpuTest: %,d streams opened, busy-closed in %.1f s; peak live %d "
                    + "(set), %d (driver streams); after: %d / %d; device free memory %,d -> %,d bytes (%+,d)%n",
                    STREAMS, seconds, maxLive, maxDriver, device.liveStreams(), device.driverStreams(),
                    freeBefore, freeAfter, freeAfter - freeBefore);
            assertTrue(maxLive <= BOUND, "the device's set stayed bounded: peak " + maxLive);
            assertTrue(maxDriver <= BOUND, "the driver's streams stayed bounded: peak " + maxDriver);
            assertTrue(freeBefore - freeAfter < 256L << 20,
                    "the driver holds no memory for the closed streams: free memory fell by " + (freeBefore - freeAfter));
            assertEquals(0, device.callsAdmittedAfterRelease());
        }
    }

    /**
     * Launches on four virtual threads racing the stream's close: each launch runs or is refused
     * with the closed-stream exception, as one made after the close is; nothing else comes back from
     * the driver (a launch on a destroyed handle would fail with a driver error, or land elsewhere).
     */
    @Test
    void launchesRacingACloseRunOrAreRefusedByName(CudaDevice device) throws Exception {
        int rounds = 500;
        int liveBefore = device.liveStreams();
        int driverBefore = device.driverStreams();
        AtomicInteger ran = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        AtomicReference<Throwable> unexpected = new AtomicReference<>();
        try (Kernels k = Kernels.load(device)) {
            for (int round = 0; round < rounds; round++) {
                CudaStream s = device.newStream();
                CountDownLatch started = new CountDownLatch(4);
                List<Thread> launchers = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    launchers.add(Thread.ofVirtual().start(() -> {
                        started.countDown();
                        try {
                            while (true) {
                                k.launchEmpty(s);
                                ran.incrementAndGet();
                            }
                        } catch (IllegalStateException e) {
                            if (e.getMessage().equals("stream " + s + " is closed")) {
                                refused.incrementAndGet();
                            } else {
                                unexpected.compareAndSet(null, e);
                            }
                        } catch (Throwable e) {
                            unexpected.compareAndSet(null, e);
                        }
                    }));
                }
                started.await();
                s.close();
                for (Thread t : launchers) {
                    t.join();
                }
                assertNull(unexpected.get(), () -> "round: " + unexpected.get());
            }
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> device.driverStreams() == driverBefore
                && device.liveStreams() == liveBefore);
        System.out.printf("StreamLifetimeGpuTest: %d rounds, %,d launches ran, %d refused as closed%n", rounds, ran.get(),
                refused.get());
        assertEquals(4 * rounds, refused.get(), "every launcher ended on the closed stream's refusal");
        assertEquals(0, device.callsAdmittedAfterRelease());
    }

    /**
     * A module closed while launches of its kernels still wait in their stream's queue (behind a
     * 100 ms kernel, more launches than the stream's room in the driver): they all run, and the
     * module is unloaded after the last one was submitted, not under it (before this guard the
     * drainer's {@code cuLaunchKernel} on a function of the unloaded module crashed the process in
     * libcuda); a launch after the close is refused by name.
     */
    @Test
    void aModuleClosedUnderQueuedLaunchesIsUnloadedAfterThem(CudaDevice device) throws Exception {
        // Combining: well above the admission limit (256), so most wait in the queue, in Java. Direct:
        // below it, so none parks and all wait in the driver's queue behind the spinning kernel.
        boolean combining = device.reactor().config().submission() == io.cudaloom.Submission.COMBINING;
        int admission = device.reactor().config().admissionLimit();
        int launches = combining ? 2_000 : admission - 16;
        Kernels k = Kernels.load(device);
        try (CudaStream s = device.newStream()) {
            k.launchSpin(s, 100_000_000L);
            for (int i = 0; i < launches; i++) {
                k.launchEmpty(s);
            }
            long queued = s.workInFlight();
            k.close(); // the module's unload waits for the launches queued in it
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> k.launchEmpty(s));
            assertTrue(refused.getMessage().contains("its module was unloaded"), refused.getMessage());
            s.await();
            System.out.printf("StreamLifetimeGpuTest: module closed with %,d entries in flight on its stream; all ran%n",
                    queued);
            assertTrue(queued > launches, "premise: every launch was still queued at the close: " + queued);
            assertNull(device.fault());
        }
    }

    private static long freeDeviceMemory(CudaDevice device) {
        long[] free = new long[1];
        long[] total = new long[1];
        device.makeCurrent();
        int r = JCudaDriver.cuMemGetInfo(free, total);
        assertEquals(0, r, "cuMemGetInfo");
        return free[0];
    }
}
