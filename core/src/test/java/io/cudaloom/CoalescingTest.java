package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.LONG;
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
 * Waiters that share one slot and one device write (ReactorConfig.coalesce), at scale and with
 * members that time out, fail or close, on the simulated device. The rule itself (one slot for
 * waiters behind the same work; a waiter joins only a write covering all it needs) is the
 * semantics suite's ({@link CoalescingSemantics}), on every backend.
 */
class CoalescingTest {
    private final List<SimulatedDevice> devices = new ArrayList<>();

    private SimulatedDevice device(ReactorConfig.Builder config) {
        SimulatedDevice d = SimulatedDevice.create(config.coalesce(true).build());
        devices.add(d);
        return d;
    }

    @AfterEach
    void close() {
        devices.forEach(SimulatedDevice::close);
    }

    private static List<Thread> waiters(int n, SimulatedStream stream, AtomicInteger done,
            AtomicReference<Throwable> failure) {
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await();
                    done.incrementAndGet();
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }));
        }
        return threads;
    }

    @Test
    void manyWaitersBehindTheSameWorkShareOneSlot() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().capacity(16));
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        AtomicInteger done = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = waiters(10_000, stream, done, failure);
        await().atMost(LONG).until(() -> device.reactor().stats().coalesced() + device.reactor().stats().registrations()
                + device.reactor().stats().fallbacks() >= 10_000);
        ReactorStats s = device.reactor().stats();
        assertTrue(s.registrations() <= 16, "a handful of slots, not one per waiter: " + s);
        assertEquals(0, s.fallbacks(), "capacity 16 is enough for 10,000 coalesced waiters: " + s);
        gate.countDown();
        for (Thread t : threads) {
            t.join();
        }
        assertNull(failure.get());
        assertEquals(10_000, done.get());
        assertNothingLeaked(device);
    }

    @Test
    void aMemberThatTimesOutLeavesTheOthersWaitingAndNothingLeaks() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        AtomicInteger done = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = waiters(50, stream, done, failure);
        await().atMost(LONG).until(() -> registeredOrJoined(device) >= 50);
        assertFalse(stream.event().await(Duration.ofMillis(20)), "times out behind the gate");
        assertEquals(1, device.reactor().stats().abandoned());
        gate.countDown();
        for (Thread t : threads) {
            t.join();
        }
        assertNull(failure.get());
        assertEquals(50, done.get());
        assertNothingLeaked(device);
    }

    @Test
    void faultAndCloseReachEveryMember() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().faultProbeInterval(Duration.ofMillis(1)));
        SimulatedStream faulty = device.newStream();
        CountDownLatch gate = gate(faulty);
        faulty.injectFault("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)");
        AtomicInteger done = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = waiters(100, faulty, done, failure);
        // Every waiter registered: it armed a shared write (at most flagWritesInFlight of them race to) or joined one.
        await().atMost(LONG).until(() -> registeredOrJoined(device) >= 100);
        gate.countDown();
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(0, done.get());
        assertInstanceOf(GpuFaultException.class, failure.get());
        assertEquals(100, device.reactor().stats().faults(), "every member got the fault");

        SimulatedStream held = device.newStream();
        CountDownLatch heldGate = gate(held);
        AtomicReference<Throwable> closed = new AtomicReference<>();
        AtomicInteger heldDone = new AtomicInteger();
        List<Thread> heldThreads = waiters(100, held, heldDone, closed);
        await().atMost(LONG).until(() -> registeredOrJoined(device) >= 200);
        device.close();
        for (Thread t : heldThreads) {
            t.join();
        }
        assertEquals(0, heldDone.get());
        assertInstanceOf(ReactorClosedException.class, closed.get());
        heldGate.countDown();
        await().atMost(LONG).until(() -> device.reactor().isMemoryReleased());
        assertEquals(0, TestAccess.probes(device).writesAfterRelease());
    }

    @Test
    void manyThreadsLaunchingAndAwaitingOnFewStreamsAllSeeTheirOwnWork() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().capacity(64));
        List<SimulatedStream> streams = List.of(device.newStream(), device.newStream());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 2_000; t++) {
            SimulatedStream s = streams.get(t % 2);
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    for (int i = 0; i < 5; i++) {
                        int[] cell = {0};
                        s.launch(() -> cell[0] = 1);
                        s.event().await();
                        assertEquals(1, cell[0], "own work visible after await (never less)");
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        assertNull(failure.get(), () -> String.valueOf(failure.get()));
        System.out.println("coalescing, 2,000 threads x 5 on 2 streams: " + device.reactor().stats());
        assertNothingLeaked(device);
    }

    private static long registeredOrJoined(SimulatedDevice device) {
        ReactorStats s = device.reactor().stats();
        return s.registrations() + s.coalesced();
    }
}
