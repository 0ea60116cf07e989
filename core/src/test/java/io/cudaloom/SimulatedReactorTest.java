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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The reactor and GpuEvent.await() end to end on the simulated device. */
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

    @Test
    void spuriousUnparksDoNotReturnEarly() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().waiterSpin(Duration.ZERO).build());
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        AtomicInteger returned = new AtomicInteger();
        Thread waiter = Thread.ofVirtual().start(() -> {
            stream.event().awaitUninterruptibly();
            returned.incrementAndGet();
        });
        await().atMost(LONG).until(() -> device.reactor().stats().armedNow() == 1 && ReactorTestSupport.parked(waiter));
        for (int i = 0; i < 1_000; i++) {
            java.util.concurrent.locks.LockSupport.unpark(waiter);
        }
        await().during(Duration.ofMillis(200)).atMost(LONG).until(() -> returned.get() == 0);
        assertTrue(waiter.isAlive());
        gate.countDown();
        waiter.join();
        assertEquals(1, returned.get());
        assertNothingLeaked(device);
    }

    @Test
    void lateCompletionOfATimedOutAwaitNeverCompletesTheThreadsNextAwait() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().waiterSpin(Duration.ZERO).build());
        SimulatedStream first = device.newStream();
        SimulatedStream second = device.newStream();
        CountDownLatch firstGate = gate(first);
        CountDownLatch secondGate = gate(second);
        AtomicReference<Boolean> timedOut = new AtomicReference<>();
        AtomicInteger secondReturned = new AtomicInteger();
        CountDownLatch secondArmed = new CountDownLatch(1);
        Thread waiter = Thread.ofVirtual().start(() -> {
            try {
                timedOut.set(!first.event().await(Duration.ofMillis(20)));
                secondArmed.countDown();
                second.event().await();
                secondReturned.incrementAndGet();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        secondArmed.await();
        assertEquals(Boolean.TRUE, timedOut.get(), "the first await timed out");
        await().atMost(LONG).until(() -> device.reactor().stats().armedNow() == 2);

        firstGate.countDown(); // the abandoned registration completes late, same thread parked again
        await().atMost(LONG).until(() -> device.reactor().stats().armedNow() == 1);
        await().during(Duration.ofMillis(200)).atMost(LONG).until(() -> secondReturned.get() == 0);
        assertTrue(waiter.isAlive(), "the late completion must not complete the next await");

        secondGate.countDown();
        waiter.join();
        assertEquals(1, secondReturned.get());
        assertEquals(1, device.reactor().stats().abandoned());
        assertNothingLeaked(device);
    }

    @Test
    void interruptThrowsAndTheSlotIsRecycledOnceTheWriteLands() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().waiterSpin(Duration.ZERO).build());
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
        await().atMost(LONG).until(() -> device.reactor().stats().armedNow() == 1 && ReactorTestSupport.parked(waiter));
        waiter.interrupt();
        waiter.join();
        assertInstanceOf(InterruptedException.class, thrown.get());
        assertEquals(1, device.reactor().stats().armedNow(), "the write is still in flight: slot stays armed");
        gate.countDown();
        assertNothingLeaked(device);
        assertEquals(1, device.reactor().stats().abandoned());
    }

    @Test
    void interruptedBeforeAwaitThrowsAtOnce() {
        SimulatedDevice device = device();
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, () -> stream.event().await());
        assertFalse(Thread.interrupted(), "status cleared, as j.u.c does");
        gate.countDown();
        assertNothingLeaked(device);
    }

    @Test
    void awaitUninterruptiblyKeepsTheInterruptStatus() throws Exception {
        SimulatedDevice device = device();
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        AtomicReference<Boolean> stillInterrupted = new AtomicReference<>();
        Thread waiter = Thread.ofVirtual().start(() -> {
            stream.event().awaitUninterruptibly();
            stillInterrupted.set(Thread.currentThread().isInterrupted());
        });
        await().atMost(LONG).until(() -> ReactorTestSupport.parked(waiter));
        waiter.interrupt();
        await().during(Duration.ofMillis(100)).atMost(LONG).until(waiter::isAlive);
        gate.countDown();
        waiter.join();
        assertEquals(Boolean.TRUE, stillInterrupted.get());
        assertNothingLeaked(device);
    }

    @Test
    void closeWakesParkedWaitersAndFreesFlagMemoryOnlyAfterTheWritesLand() throws Exception {
        SimulatedDevice device = SimulatedDevice.create(); // closed by the test itself
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        final int n = 50;
        List<Thread> waiters = new ArrayList<>();
        AtomicInteger closedErrors = new AtomicInteger();
        for (int i = 0; i < n; i++) {
            waiters.add(Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await();
                } catch (ReactorClosedException e) {
                    closedErrors.incrementAndGet();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        await().atMost(LONG).until(() -> device.reactor().stats().armedNow() == n);
        device.close();
        for (Thread w : waiters) {
            w.join();
        }
        assertEquals(n, closedErrors.get(), "every parked waiter woke with ReactorClosedException");
        assertFalse(device.reactor().scannerThread().isAlive(), "scanner stopped");
        assertFalse(device.reactor().isMemoryReleased(), "writes still in flight: memory kept");
        assertThrows(ReactorClosedException.class, () -> stream.event(), "use after close");

        gate.countDown();
        await().atMost(LONG).until(() -> device.reactor().isMemoryReleased());
        assertEquals(0, device.liveFlagMemories());
        assertEquals(0, device.writesAfterRelease(), "no write landed in freed flag memory");
        await().atMost(LONG).until(() -> device.liveStreams() == 0);
    }

    @Test
    void closeWithNothingInFlightFreesAtOnce() {
        SimulatedDevice device = SimulatedDevice.create();
        device.close();
        assertTrue(device.reactor().isMemoryReleased());
        device.close(); // idempotent
        assertEquals(0, device.liveFlagMemories());
    }

    @Test
    void deviceFaultWakesWaitersWithTheNamedError() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().faultProbeInterval(Duration.ofMillis(1)).build());
        SimulatedStream stream = device.newStream();
        SimulatedStream healthy = device.newStream();
        CountDownLatch gate = gate(stream);
        stream.injectFault("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)");
        final int n = 20;
        List<Thread> waiters = new ArrayList<>();
        AtomicInteger faults = new AtomicInteger();
        for (int i = 0; i < n; i++) {
            waiters.add(Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await();
                } catch (GpuFaultException e) {
                    if (e.getMessage().contains("CUDA_ERROR_ILLEGAL_ADDRESS")) {
                        faults.incrementAndGet();
                    }
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        await().atMost(LONG).until(() -> device.reactor().stats().armedNow() == n);
        gate.countDown(); // the fault command runs now; the flag writes behind it never land
        for (Thread w : waiters) {
            w.join();
        }
        assertEquals(n, faults.get(), "every waiter woke with the named error");
        assertThrows(GpuFaultException.class, () -> stream.event().await(), "later awaits fail at once");
        assertThrows(GpuFaultException.class, () -> stream.launchKernel(Duration.ZERO), "launches are refused");
        healthy.launchKernel(Duration.ofMillis(1));
        healthy.event().await(); // other streams keep working
        assertNothingLeaked(device); // quarantined slots recycled once the dead stream settled
    }

    @Test
    void poolExhaustionCompletesEveryoneThroughTheFallback() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().capacity(8).build());
        List<SimulatedStream> streams = List.of(device.newStream(), device.newStream());
        CountDownLatch gate0 = gate(streams.get(0));
        CountDownLatch gate1 = gate(streams.get(1));
        final int n = 1_000;
        AtomicInteger done = new AtomicInteger();
        List<Thread> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            SimulatedStream s = streams.get(i % 2);
            waiters.add(Thread.ofVirtual().start(() -> {
                s.event().awaitUninterruptibly();
                done.incrementAndGet();
            }));
        }
        await().atMost(LONG).until(() -> {
            ReactorStats st = device.reactor().stats();
            return st.armedNow() + st.fallbacks() == n;
        });
        gate0.countDown();
        gate1.countDown();
        for (Thread w : waiters) {
            w.join();
        }
        assertEquals(n, done.get());
        ReactorStats s = device.reactor().stats();
        assertEquals(8, s.registrations(), "the 8 slots were used");
        assertEquals(n - 8, s.fallbacks(), "everyone else completed through host callbacks");
        assertNothingLeaked(device);
    }

    @Test
    void scannerParksWhenIdleAndIsUnparkedOnlyOnIdleToActive() throws Exception {
        SimulatedDevice device = device();
        SimulatedStream stream = device.newStream();
        Thread scanner = device.reactor().scannerThread();
        await().atMost(LONG).until(() -> scanner.getState() == Thread.State.WAITING);
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
        await().atMost(LONG).until(() -> scanner.getState() == Thread.State.WAITING
                && device.reactor().stats().armedNow() == 0);
        assertTrue(device.reactor().stats().scannerParks() > parksBefore, "parked again once idle");
    }

    @Test
    void awaitReturnsAtOnceWhenTheStreamIsIdle() throws Exception {
        SimulatedDevice device = device();
        SimulatedStream stream = device.newStream();
        GpuEvent event = stream.event();
        event.await();
        assertTrue(event.isDone());
        ReactorStats s = device.reactor().stats();
        assertEquals(1, s.immediate());
        assertEquals(0, s.registrations(), "nothing registered for idle work");
    }

    @Test
    void platformThreadsCanAwaitToo() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().waiterSpin(Duration.ZERO).build());
        SimulatedStream stream = device.newStream();
        for (int i = 0; i < 100; i++) {
            stream.launchKernel(Duration.ofNanos(50_000));
            stream.event().await();
        }
        assertTrue(device.reactor().stats().completions() >= 100);
        assertNothingLeaked(device);
    }

    @Test
    void timedAwaitCompletesWhenTheWorkFinishesInTime() throws Exception {
        SimulatedDevice device = device();
        SimulatedStream stream = device.newStream();
        stream.launchKernel(Duration.ofMillis(2));
        assertTrue(stream.event().await(10, TimeUnit.SECONDS));
        stream.launchKernel(Duration.ofMillis(2));
        assertTrue(stream.event().await(Duration.ofSeconds(10)));
        CountDownLatch gate = gate(stream);
        assertFalse(stream.event().await(Duration.ZERO), "zero timeout on busy work");
        gate.countDown();
        assertNothingLeaked(device);
    }

    @Test
    void completableFutureParksNoThreadAndFollowsFaultAndCloseRules() throws Exception {
        SimulatedDevice device = device();
        SimulatedStream stream = device.newStream();
        CountDownLatch gate = gate(stream);
        CompletableFuture<Void> ok = stream.event().toCompletableFuture();
        assertFalse(ok.isDone());
        gate.countDown();
        ok.get(30, TimeUnit.SECONDS);

        SimulatedStream faulty = device.newStream();
        faulty.injectFault("simulated illegal address");
        CompletableFuture<Void> failed = faulty.event().toCompletableFuture();
        ExecutionException e = assertThrows(ExecutionException.class, () -> failed.get(30, TimeUnit.SECONDS));
        assertInstanceOf(GpuFaultException.class, e.getCause());

        SimulatedStream held = device.newStream();
        CountDownLatch heldGate = gate(held);
        CompletableFuture<Void> pending = held.event().toCompletableFuture();
        device.close();
        ExecutionException closed = assertThrows(ExecutionException.class, () -> pending.get(30, TimeUnit.SECONDS));
        assertInstanceOf(ReactorClosedException.class, closed.getCause());
        heldGate.countDown();
    }

    @Test
    void hostCallbackAndSynchronizeStrategiesComplete() throws Exception {
        for (CompletionStrategy strategy : CompletionStrategy.values()) {
            SimulatedDevice device = device(ReactorConfig.builder().strategy(strategy).build());
            SimulatedStream stream = device.newStream();
            for (int i = 0; i < 20; i++) {
                stream.launchKernel(Duration.ofNanos(100_000));
                stream.event().await();
            }
            ReactorStats s = device.reactor().stats();
            assertEquals(20, s.completions(), strategy + ": " + s);
            if (strategy == CompletionStrategy.HOST_CALLBACK) {
                assertTrue(s.fallbacks() > 0, "host callbacks used: " + s);
            }
            assertNothingLeaked(device);
        }
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
