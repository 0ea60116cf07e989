package io.cudaloom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The load path on the simulated device, whose streams queue at most
 * {@link SimulatedDevice#DEFAULT_QUEUE_ENTRIES} commands and spin a submitter on a full queue as
 * the CUDA driver does ({@link SimulatedDevice#queueFullWaits()}): admission keeps every thread out
 * of a full queue, shared flag writes stay far below one per await under load and are exactly one
 * for a lone waiter, and a stream nobody awaits still returns its permits (trackers). The admission
 * tests pin {@link Submission#DIRECT} (the path that parks for admission); the combining path's
 * counterparts are {@link CombinedSubmissionTest}'s.
 */
class LoadPathTest {
    private static final Duration LONG = Duration.ofSeconds(120);
    private final List<SimulatedDevice> devices = new ArrayList<>();

    @AfterEach
    void close() {
        devices.forEach(SimulatedDevice::close);
    }

    private SimulatedDevice device(ReactorConfig config, int queueEntries) {
        SimulatedDevice d = SimulatedDevice.create(config, queueEntries);
        devices.add(d);
        return d;
    }

    /** {@code threads} virtual threads, each {@code iterations} times: launch a 20 us kernel on its stream, await it. */
    private static void load(SimulatedDevice device, int threads, int iterations, int streams) throws Exception {
        List<SimulatedStream> s = new ArrayList<>();
        for (int i = 0; i < streams; i++) {
            s.add(device.newStream());
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            SimulatedStream stream = s.get(t % streams);
            all.add(Thread.ofVirtual().start(() -> {
                try {
                    for (int i = 0; i < iterations; i++) {
                        stream.launchKernel(Duration.ofNanos(20_000));
                        stream.await();
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        for (Thread t : all) {
            assertTrue(t.join(LONG), "a waiter did not finish");
        }
        if (failure.get() != null) {
            throw new AssertionError("a waiter failed", failure.get());
        }
    }

    @Test
    void tenThousandVirtualThreadsOnEightStreamsNeverWaitInAFullQueueAndShareFlagWrites() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().capacity(16_384).submission(Submission.DIRECT).build(),
                SimulatedDevice.DEFAULT_QUEUE_ENTRIES); // admission: the direct path (CombinedSubmissionTest: combining)
        int threads = 10_000;
        load(device, threads, 2, 8);
        ReactorStats s = device.reactor().stats();
        System.out.println("10,000 virtual threads x 2 on 8 streams: " + s + ", queue-full waits "
                + TestAccess.probes(device).queueFullWaits());
        assertTrue(s.admissionWaits() > 0, "premise: the load reached the admission bound: " + s);
        assertEquals(0, TestAccess.probes(device).queueFullWaits(), "no thread ever waited inside a full queue");
        long awaits = 2L * threads;
        assertTrue(s.flagWrites() * 10 < awaits, "far fewer flag writes than awaits (< 0.1 per await): " + s);
        assertEquals(awaits, s.completions() , "every await completed: " + s);
    }

    @Test
    void withoutAdmissionTheSameLoadSpinsSubmittersInTheFullQueue() throws Exception {
        // The check above can fail: a queue smaller than the admission bound fills, and the
        // simulated driver spins the submitting threads, as CUDA's does.
        SimulatedDevice device = device(ReactorConfig.builder().capacity(16_384).admissionLimit(896)
                .submission(Submission.DIRECT).build(), 64);
        load(device, 2_000, 1, 2);
        assertTrue(TestAccess.probes(device).queueFullWaits() > 0, "the small queue filled: " + TestAccess.probes(device).queueFullWaits());
    }

    @Test
    void aLoneWaiterMakesOneFlagWritePerAwait() throws Exception {
        SimulatedDevice device = device(ReactorConfig.defaults(), SimulatedDevice.DEFAULT_QUEUE_ENTRIES);
        SimulatedStream stream = device.newStream();
        int n = 50;
        for (int i = 0; i < n; i++) {
            stream.launchKernel(Duration.ofNanos(200_000)); // longer than the waiter's spin: it registers
            stream.await();
        }
        ReactorStats s = device.reactor().stats();
        assertEquals(n, s.completions(), s.toString());
        assertEquals(0, s.immediate(), "premise: every await registered: " + s);
        assertEquals(n, s.flagWrites(), "one flag write per await, none shared, no tracker: " + s);
        assertEquals(0, s.trackers(), s.toString());
        assertEquals(0, s.admissionWaits(), s.toString());
    }

    @Test
    void aLoneWaiterWokenByTheScannerArmsItsOwnWriteAtOnceNextTime() throws Exception {
        // No waiter spin: the scanner delivers every write and wakes the waiter. The delivery returns
        // the write's reservation before that wake-up, so the next await finds room and arms its own
        // write at once instead of gathering in an open group behind nothing (and waiting for a
        // delivery to arm it: with one write in flight, that was the lone waiter's extra wake-up).
        SimulatedDevice device = device(ReactorConfig.builder().waiterSpin(Duration.ZERO).build(),
                SimulatedDevice.DEFAULT_QUEUE_ENTRIES);
        SimulatedStream stream = device.newStream();
        int n = 200;
        for (int i = 0; i < n; i++) {
            stream.launchKernel(Duration.ofNanos(20_000));
            stream.await();
        }
        ReactorStats s = device.reactor().stats();
        assertEquals(n, s.completions(), s.toString());
        assertEquals(0, s.inlineCompletions(), "premise: no waiter spun, the scanner delivered every write: " + s);
        assertEquals(n, s.registrations(), "every await armed its own write: " + s);
        assertEquals(0, s.coalesced(), "none gathered in an open group: " + s);
    }

    @Test
    void aStreamNobodyAwaitsStaysWithinItsBoundAndReturnsItsPermits() throws Exception {
        int limit = 16;
        SimulatedDevice device = device(ReactorConfig.builder().admissionLimit(limit).submission(Submission.DIRECT).build(),
                SimulatedDevice.DEFAULT_QUEUE_ENTRIES);
        SimulatedStream stream = device.newStream();
        AtomicLong executed = new AtomicLong();
        AtomicLong maxInFlight = new AtomicLong();
        int n = 2_000;
        for (int i = 0; i < n; i++) {
            stream.launch(() -> {
                long done = executed.incrementAndGet();
                // counted (launched) minus run so far, this one included: in flight at this moment
                maxInFlight.accumulateAndGet(stream.submissionCount() - done + 1, Math::max);
            });
        }
        await().atMost(LONG).until(() -> executed.get() == n);
        ReactorStats s = device.reactor().stats();
        assertTrue(maxInFlight.get() <= limit, "at most " + limit + " in flight, was " + maxInFlight.get());
        assertTrue(s.admissionWaits() > 0, "premise: the launcher reached the bound: " + s);
        assertTrue(s.trackers() > 0, "no waiter, so trackers returned the permits: " + s);
        assertTrue(s.trackers() < n / 2, "a tracker covers several launches, not one each: " + s);
    }

    @Test
    void aSubmitterParkedForRoomIsLetThroughByCloseAndKeepsItsInterruptStatus() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().admissionLimit(1).submission(Submission.DIRECT).build(),
                SimulatedDevice.DEFAULT_QUEUE_ENTRIES);
        SimulatedStream stream = device.newStream();
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        stream.launch(() -> {
            running.countDown();
            ReactorTestSupport.awaitUninterruptibly(release);
        });
        running.await();
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        AtomicReference<Boolean> interruptKept = new AtomicReference<>();
        Thread submitter = Thread.ofVirtual().start(() -> {
            try {
                stream.launchKernel(Duration.ZERO);
            } catch (Throwable t) {
                outcome.set(t);
            }
            interruptKept.set(Thread.currentThread().isInterrupted());
        });
        await().atMost(LONG).until(() -> submitter.getState() == Thread.State.WAITING);
        submitter.interrupt(); // admission ignores it, as the driver's own wait does
        await().during(Duration.ofMillis(50)).atMost(LONG).until(() -> submitter.getState() == Thread.State.WAITING);
        stream.close();
        assertTrue(submitter.join(LONG), "let through by the close");
        assertInstanceOf(IllegalStateException.class, outcome.get(), "the close's own exception");
        assertTrue(outcome.get().getMessage().contains("closed"), outcome.get().getMessage());
        assertEquals(Boolean.TRUE, interruptKept.get(), "the interrupt status is kept");
        release.countDown();
    }

    @Test
    void aSubmitterParkedForRoomIsLetThroughByTheDevicesClose() throws Exception {
        SimulatedDevice device = SimulatedDevice.create(ReactorConfig.builder().admissionLimit(1)
                .submission(Submission.DIRECT).build());
        SimulatedStream stream = device.newStream();
        CountDownLatch release = new CountDownLatch(1);
        stream.launch(() -> ReactorTestSupport.awaitUninterruptibly(release));
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread submitter = Thread.ofVirtual().start(() -> {
            try {
                stream.launchKernel(Duration.ZERO);
            } catch (Throwable t) {
                outcome.set(t);
            }
        });
        await().atMost(LONG).until(() -> submitter.getState() == Thread.State.WAITING);
        device.close();
        assertTrue(submitter.join(LONG), "let through by the device's close");
        assertInstanceOf(ReactorClosedException.class, outcome.get());
        release.countDown();
    }

    @Test
    void theScannersIdleStrategyLearnsTheGapAndParksThroughMostOfALongWait() throws Exception {
        SimulatedDevice device = device(ReactorConfig.defaults(), SimulatedDevice.DEFAULT_QUEUE_ENTRIES);
        SimulatedStream stream = device.newStream();
        for (int i = 0; i < 20; i++) { // learn the gap
            stream.launchKernel(Duration.ofMillis(2));
            stream.await();
        }
        long passesBefore = device.reactor().stats().scanPasses();
        int n = 20;
        for (int i = 0; i < n; i++) {
            stream.launchKernel(Duration.ofMillis(2));
            stream.await();
        }
        long passes = device.reactor().stats().scanPasses() - passesBefore;
        // Spinning through a 2 ms wait is some 20,000 passes (about 100 ns each); parking until
        // shortly before the predicted retirement leaves the margin's spin and a late kernel's.
        assertTrue(passes < n * 5_000L, "scan passes per 2 ms wait: " + passes / n);
    }
    /** {@code n} awaits of 2 ms kernels on one stream after 20 that teach the stream its wait; returns the pre-wakes they made. */
    private long preWakesOfALoneWaiterOnLongKernels(ReactorConfig config, int n) throws Exception {
        SimulatedDevice device = device(config, SimulatedDevice.DEFAULT_QUEUE_ENTRIES);
        SimulatedStream stream = device.newStream();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread waiter = Thread.ofVirtual().start(() -> {
            try {
                for (int i = 0; i < 20 + n; i++) {
                    stream.launchKernel(Duration.ofMillis(2));
                    stream.await();
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        assertTrue(waiter.join(LONG), "the waiter did not finish");
        if (failure.get() != null) {
            throw new AssertionError("the waiter failed", failure.get());
        }
        return device.reactor().stats().preWakes();
    }

    @Test
    void aLoneWaiterSleepingThroughAPredictedWaitIsWokenByTheScannerAtTheTimeItAsked() throws Exception {
        int n = 20;
        long preWakes = preWakesOfALoneWaiterOnLongKernels(ReactorConfig.defaults(), n);
        assertTrue(preWakes >= 1 && preWakes <= 20 + n, "pre-wakes: " + preWakes);
    }

    @Test
    void withPreWakesOffTheScannerWakesNobodyBeforeTheirWork() throws Exception {
        long preWakes = preWakesOfALoneWaiterOnLongKernels(ReactorConfig.builder().waiterPreWake(false).build(), 20);
        assertEquals(0, preWakes, "pre-wakes with the setting off");
    }
}
