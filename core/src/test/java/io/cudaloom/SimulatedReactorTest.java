package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static io.cudaloom.ReactorTestSupport.gate;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The reactor and GpuEvent.await() end to end on the simulated device: scale, the scanner's parking,
 * and what only this backend shows. The semantics of docs/SEMANTICS.md, the same on every backend,
 * are the semantics suite's ({@link SemanticsSuite} and its section suites;
 * {@link SimulatedSemanticsTest} here).
 */
class SimulatedReactorTest {
    private static final Duration LONG = Duration.ofSeconds(30);

    private final List<SimulatedDevice> devices = new ArrayList<>();

    private SimulatedDevice device(ReactorConfig config) {
        SimulatedDevice d = SimulatedDevice.create(config);
        devices.add(d);
        return d;
    }

    private SimulatedDevice device() {
        return device(ReactorConfig.defaults());
    }

    @AfterEach
    void closeDevices() {
        devices.forEach(SimulatedDevice::close);
    }


    @Test
    void tenThousandVirtualThreadsAwaitingSeveralKernelsOnFewStreamsAllComplete() throws Exception {
        SimulatedDevice device = device();
        List<SimulatedStream> streams = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            streams.add(device.newStream());
        }
        final int threads = 10_000, kernelsEach = 3;
        AtomicInteger completed = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long start = System.nanoTime();
        List<Thread> vts = new ArrayList<>(threads);
        for (int t = 0; t < threads; t++) {
            SimulatedStream stream = streams.get(t % streams.size());
            vts.add(Thread.ofVirtual().start(() -> {
                try {
                    for (int k = 0; k < kernelsEach; k++) {
                        int[] cell = new int[1];
                        stream.launch(() -> cell[0] = 42); // "device" writes a result
                        stream.event().await();
                        assertEquals(42, cell[0], "work visible after await");
                        completed.incrementAndGet();
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        for (Thread vt : vts) {
            vt.join();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        assertNull(failure.get(), () -> "a waiter failed: " + failure.get());
        assertEquals(threads * kernelsEach, completed.get());
        assertNothingLeaked(device);
        ReactorStats s = device.reactor().stats();
        assertTrue(s.registrations() > 0, "the slot path was used: " + s);
        System.out.printf("10,000 virtual threads x %d awaits on 4 simulated streams: %.0f awaits/s (%s)%n",
                kernelsEach, threads * kernelsEach / seconds, s);
    }

    /** Close: every stream thread ends once its work ran, and the one flag memory is freed, nothing written after. */
    @Test
    void closeEndsTheStreamThreadsOnceTheirWorkRanAndFreesTheFlagMemory() throws Exception {
        SimulatedDevice device = SimulatedDevice.create(); // closed by the test itself
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread waiter = Thread.ofVirtual().start(() -> {
            try {
                stream.event().await();
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        await().atMost(LONG).until(() -> device.reactor().stats().armedNow() == 1);
        assertEquals(1, TestAccess.probes(device).liveFlagMemories());
        device.close();
        assertTrue(waiter.join(LONG));
        assertInstanceOf(ReactorClosedException.class, thrown.get());
        assertEquals(1, TestAccess.probes(device).liveStreams(), "the held stream's thread still runs its work");
        assertThrows(ReactorClosedException.class, () -> stream.launchKernel(Duration.ZERO), "no work after close");
        assertThrows(ReactorClosedException.class, device::newStream);
        gate.countDown();
        await().atMost(LONG).until(() -> TestAccess.probes(device).liveStreams() == 0 && TestAccess.probes(device).liveFlagMemories() == 0);
        assertEquals(0, TestAccess.probes(device).writesAfterRelease());
    }

    /**
     * A faulted simulated stream refuses launches, as CUDA does after a sticky error; other streams
     * go on; the device says it faulted, and where.
     */
    @Test
    void aFaultedStreamRefusesLaunchesAndOtherStreamsGoOn() throws Exception {
        SimulatedDevice device = device();
        SimulatedStream faulty = device.newStream();
        SimulatedStream healthy = device.newStream();
        assertFalse(device.isFaulted());
        assertNull(device.fault());
        faulty.injectFault("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)");
        GpuFaultException e = assertThrows(GpuFaultException.class, () -> faulty.event().await());
        assertTrue(e.getMessage().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), e.getMessage());
        assertTrue(device.isFaulted(), "the device saw its stream fault before the waiter did");
        assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS (simulated) on " + faulty, device.fault());
        GpuFaultException launch = assertThrows(GpuFaultException.class, () -> faulty.launchKernel(Duration.ZERO));
        assertTrue(launch.getMessage().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), launch.getMessage());
        assertThrows(GpuFaultException.class, () -> faulty.launch(() -> {}));
        healthy.launchKernel(Duration.ofMillis(1));
        healthy.event().await();
        assertNothingLeaked(device);
    }

    @Test
    void scannerParksWhenIdleAndIsUnparkedOnlyOnIdleToActive() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().coalesce(false).build()); // a slot per waiter
        SimulatedStream stream = device.newStream();
        Thread scanner = device.reactor().scannerThread();
        await().atMost(LONG).until(() -> TestAccess.scannerParkedIdle(scanner));
        long parksBefore = device.reactor().stats().scannerParks();

        CountDownLatch gate = gate(stream);
        final int burst = 200;
        List<Thread> waiters = new ArrayList<>();
        for (int i = 0; i < burst; i++) {
            waiters.add(Thread.ofVirtual().start(() -> stream.event().awaitUninterruptibly()));
        }
        await().atMost(LONG).until(() -> device.reactor().stats().armedNow() == burst);
        assertEquals(1, device.reactor().stats().scannerUnparks(),
                "a burst that keeps the table active wakes the scanner once");
        gate.countDown();
        for (Thread w : waiters) {
            w.join();
        }
        await().atMost(LONG).until(() -> TestAccess.scannerParkedIdle(scanner)
                && device.reactor().stats().armedNow() == 0);
        assertTrue(device.reactor().stats().scannerParks() > parksBefore, "parked again once idle");
    }

    /**
     * Regression (found on the H200 with 1,000 virtual threads): spinning waiters on a tiny, busy
     * table whose slots are retired and re-armed under them. A waiter that acted on a stale view of
     * its flag once destroyed another registration, which then waited forever. Every await must
     * complete and every slot come back.
     */
    @Test
    void spinningWaitersOnAFastRecyclingTableNeverLoseARegistration() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().capacity(4)
                .waiterSpin(Duration.ofNanos(50_000), 1_000).build());
        List<SimulatedStream> streams = List.of(device.newStream(), device.newStream());
        AtomicInteger done = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 16; t++) {
            SimulatedStream s = streams.get(t % 2);
            threads.add(Thread.ofVirtual().start(() -> {
                for (int i = 0; i < 1_000; i++) {
                    s.launchKernel(Duration.ZERO);
                    s.event().awaitUninterruptibly();
                    done.incrementAndGet();
                }
            }));
        }
        for (Thread t : threads) {
            t.join(LONG.toMillis());
        }
        assertEquals(16_000, done.get(), "a waiter hangs: " + device.reactor().stats());
        assertNothingLeaked(device);
    }
}
