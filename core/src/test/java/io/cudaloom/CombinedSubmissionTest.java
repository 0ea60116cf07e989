package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static io.cudaloom.ReactorTestSupport.gate;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.internal.BackendAccess;
import io.cudaloom.spi.StreamOp;
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
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Submission by combining ({@link Submission#COMBINING}, issue #37 items 2 and 4) on the simulated
 * device, whose every submission holds a modelled per-context driver lock: with many virtual threads
 * per stream at most one is ever inside a submission of a stream, nobody parks for admission or spins
 * on a full queue, every entry runs once and in position order, a lone waiter still makes one flag
 * write per await, and registrations behind a held stream never block.
 */
class CombinedSubmissionTest {
    private static final Duration LONG = Duration.ofSeconds(120);
    /** The modelled cost of one submission, spent holding the device-wide driver lock. */
    private static final Duration SUBMISSION_COST = Duration.ofNanos(2_000);
    private final List<SimulatedDevice> devices = new ArrayList<>();

    @AfterEach
    void close() {
        devices.forEach(SimulatedDevice::close);
    }

    private SimulatedDevice device(ReactorConfig.Builder config) {
        SimulatedDevice d = SimulatedDevice.create(config.submission(Submission.COMBINING).build(),
                SimulatedDevice.DEFAULT_QUEUE_ENTRIES, SUBMISSION_COST);
        devices.add(d);
        return d;
    }

    @Test
    void tenThousandVirtualThreadsOnEightStreamsNeverParkToSubmitAndOneThreadPerStreamIsInTheDriver() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().capacity(16_384));
        int threads = 10_000;
        int iterations = 2;
        List<SimulatedStream> streams = launchAndAwait(device, 8, threads, iterations);
        ReactorStats s = device.reactor().stats();
        System.out.println("combining, 10,000 virtual threads x 2 on 8 streams: " + s);
        assertEquals(0, s.admissionWaits(), "no submitter parked for admission: " + s);
        assertEquals(0, TestAccess.probes(device).queueFullWaits(), "no thread spun in a full queue");
        assertEquals((long) threads * iterations, s.completions(), "every await completed: " + s);
        long launches = (long) threads * iterations / streams.size();
        for (SimulatedStream stream : streams) {
            assertEquals(1, stream.maxThreadsInSubmission(), "one thread at a time in the driver for " + stream);
            assertEquals(0, stream.submissionsByScanner(), "the scanner hands its drains off on " + stream);
            assertEquals(launches, stream.queuedWorkRun(), "every launch ran once on " + stream);
            assertEquals(0, stream.queuedWorkOutOfOrder(), "in position order on " + stream);
            assertEverythingSubmitted(stream);
            long[] probe = probe(stream);
            System.out.println("  " + stream + ": trackers " + probe[3] + ", drains handed to the executor " + probe[4]);
        }
        assertTrue(s.flagWrites() * 10 < (long) threads * iterations, "shared flag writes under load: " + s);
        assertNothingLeaked(device);
    }

    /**
     * {@code threads} virtual threads on {@code streamCount} new streams of {@code device} (round robin),
     * each launching a 20 us kernel and awaiting it {@code iterations} times; fails if one fails or hangs.
     */
    private static List<SimulatedStream> launchAndAwait(SimulatedDevice device, int streamCount, int threads,
            int iterations) throws InterruptedException {
        List<SimulatedStream> streams = new ArrayList<>();
        for (int i = 0; i < streamCount; i++) {
            streams.add(device.newStream());
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            SimulatedStream stream = streams.get(t % streams.size());
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
        return streams;
    }

    /**
     * A device-wide cap of one drainer (ReactorConfig.drainers): 10,000 virtual threads on 8 streams
     * all complete, every entry runs once and in order, and at most one thread is ever inside a
     * submission to any of the device's streams. Its premise, checked: threads did find the permit
     * taken and left their streams to its holder (else the cap was never tested).
     */
    @Test
    void aCapOfOneDrainerLeavesOneThreadInTheDriverAndNoStreamUndrained() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().capacity(16_384).drainers(1));
        int threads = 10_000;
        int iterations = 2;
        List<SimulatedStream> streams = launchAndAwait(device, 8, threads, iterations);
        ReactorStats s = device.reactor().stats();
        assertEquals((long) threads * iterations, s.completions(), "every await completed: " + s);
        assertEquals(1, device.maxThreadsInSubmission(), "one thread at a time in the driver, device-wide");
        assertEquals(0, s.admissionWaits(), s.toString());
        assertEquals(0, TestAccess.probes(device).queueFullWaits(), "no thread spun in a full queue");
        for (SimulatedStream stream : streams) {
            assertEquals((long) threads * iterations / streams.size(), stream.queuedWorkRun(), "every launch ran once on " + stream);
            assertEquals(0, stream.queuedWorkOutOfOrder(), "in position order on " + stream);
            assertEverythingSubmitted(stream);
        }
        var permits = device.reactor().drainerPermits();
        assertNotNull(permits, "the cap is set");
        assertTrue(permits.leftToHolders() > 0, "premise: threads found the permit taken: " + permits);
        assertNothingLeaked(device);
    }

    @Test
    void aLoneWaiterMakesOneFlagWritePerAwait() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder());
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
        assertEquals(2L * n, stream.submissionCount(), "positions: a launch and a flag write per await");
    }

    @Test
    void tenThousandRegistrationsBehindAHeldStreamAllReturnAtOnce() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder());
        SimulatedStream stream = device.newStream();
        CountDownLatch held = gate(stream);
        List<CompletableFuture<?>> futures = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
            stream.launchKernel(Duration.ZERO);
            futures.add(stream.event().toCompletableFuture()); // returns at once: appended, never spun
        }
        assertTrue(futures.stream().noneMatch(CompletableFuture::isDone), "the stream is held");
        assertEquals(0, TestAccess.probes(device).queueFullWaits(), "nobody spun in the full queue");
        assertEquals(0, device.reactor().stats().admissionWaits());
        assertTrue(probe(stream)[2] > 0, "premise: entries wait in the queue for room: " + stream.submissionCount());
        held.countDown();
        CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0])).get(LONG.toSeconds(), TimeUnit.SECONDS);
        assertEquals(0, TestAccess.probes(device).queueFullWaits());
        assertEquals(1, stream.maxThreadsInSubmission());
        assertEquals(0, stream.queuedWorkOutOfOrder());
        assertNothingLeaked(device);
    }

    @Test
    void fiveThousandWaitersOnSixteenSlotsWithoutCoalescingAllComplete() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().capacity(16).coalesce(false));
        SimulatedStream stream = device.newStream();
        AtomicInteger done = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < 5_000; t++) {
            all.add(Thread.ofVirtual().start(() -> {
                try {
                    stream.launchKernel(Duration.ofNanos(5_000));
                    stream.await();
                    done.incrementAndGet();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        for (Thread t : all) {
            assertTrue(t.join(LONG), "a waiter did not finish: " + device.reactor().stats());
        }
        if (failure.get() != null) {
            throw new AssertionError("a waiter failed", failure.get());
        }
        assertEquals(5_000, done.get());
        assertEquals(0, TestAccess.probes(device).queueFullWaits());
        assertEquals(0, device.reactor().stats().admissionWaits());
        assertEquals(1, stream.maxThreadsInSubmission());
        assertNothingLeaked(device);
    }

    @Test
    void aStreamNobodyAwaitsNeverParksItsLauncherAndItsQueuedWorkIsDrainedByCompletions() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().admissionLimit(4));
        SimulatedStream stream = device.newStream();
        CountDownLatch held = gate(stream);
        for (int i = 0; i < 1_000; i++) {
            stream.launchKernel(Duration.ZERO); // returns: the entries beyond the room wait in the queue
        }
        long[] probe = probe(stream);
        assertTrue(probe[2] >= 1_000 - 8, "premise: the work waits in the queue, not its caller: " + probe[2]);
        assertTrue(probe[3] >= 1, "the drainer that stopped for room made a tracker");
        held.countDown();
        // Only completions (trackers' landings) drain the rest: nobody awaits.
        await().atMost(LONG).until(() -> probe(stream)[2] == 0 && stream.workInFlight() == 0);
        assertEquals(1_000, stream.queuedWorkRun() - 1); // and the gate
        assertEquals(0, stream.queuedWorkOutOfOrder());
        assertEquals(0, device.reactor().stats().admissionWaits());
        assertNothingLeaked(device);
    }

    /**
     * Pacing: the drainer places a tracker after every quarter of the work limit, so room comes
     * back a quarter at a time while the driver still has work queued. With only the stalled
     * pass's tracker (behind everything drained) the driver's queue ran empty before room came
     * back; on an H100 that halved combining's rate.
     */
    @Test
    void theDrainerPlacesATrackerEveryQuarterOfTheRoomSoRoomComesBackBeforeTheDriverRunsDry() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().admissionLimit(16));
        SimulatedStream stream = device.newStream();
        CountDownLatch held = gate(stream); // one work entry, then the drainer's pass fills the room
        for (int i = 0; i < 200; i++) {
            stream.launchKernel(Duration.ZERO);
        }
        long[] held1 = probe(stream);
        assertTrue(held1[2] >= 200 - 16, "premise: the room is full and the rest waits in the queue: " + held1[2]);
        // 16 work entries drained behind the held one: trackers after the 4th, 8th, 12th and 16th
        // (the stalled pass then finds them in flight). Only the stalled pass's would be 1.
        assertEquals(4, held1[3], "one tracker per quarter of the room: " + stream);
        held.countDown();
        await().atMost(LONG).until(() -> probe(stream)[2] == 0 && stream.workInFlight() == 0);
        long trackers = probe(stream)[3];
        assertTrue(trackers >= 200 / 4, "a tracker per quarter of the room as it refills: " + trackers);
        assertEquals(200, stream.queuedWorkRun() - 1); // and the gate
        assertEquals(0, stream.queuedWorkOutOfOrder());
        assertNothingLeaked(device);
    }

    @Test
    void aDriverErrorFaultsTheStreamNamingTheCallAndTheEntriesAfterItAreDiscarded() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder());
        SimulatedStream stream = device.newStream();
        CountDownLatch held = gate(stream);
        AtomicInteger discarded = new AtomicInteger();
        AtomicInteger made = new AtomicInteger();
        StreamOp failing = new StreamOp(true) {
            @Override
            public @Nullable String submit(long position) {
                return "cuLaunchKernel(scale_f32) failed: CUDA_ERROR_LAUNCH_FAILED";
            }
        };
        StreamOp after = new StreamOp(true) {
            @Override
            public @Nullable String submit(long position) {
                made.incrementAndGet();
                return null;
            }

            @Override
            public void finish(boolean submitted) {
                if (!submitted) {
                    discarded.incrementAndGet();
                }
            }
        };
        BackendAccess.hooks().submission(stream).submit(failing);
        BackendAccess.hooks().submission(stream).submit(after);
        GpuFaultException e = assertThrows(GpuFaultException.class, stream::await);
        assertTrue(String.valueOf(e.getMessage()).contains("cuLaunchKernel(scale_f32) failed: CUDA_ERROR_LAUNCH_FAILED"),
                e.getMessage());
        assertEquals(0, made.get(), "nothing after the failed call reaches the driver");
        assertEquals(1, discarded.get(), "and its lifetimes are exited");
        assertThrows(GpuFaultException.class, () -> stream.launchKernel(Duration.ZERO), "refused at the call");
        held.countDown();
    }

    @Test
    void aRegistrationOnAHostCallbackThreadIsDrainedElsewhere() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder());
        SimulatedStream stream = device.newStream();
        AtomicReference<@Nullable CompletableFuture<?>> inner = new AtomicReference<>();
        CountDownLatch registered = new CountDownLatch(1);
        stream.launch(() -> { // on the stream's own thread: no driver call may be made here
            inner.set(stream.event().toCompletableFuture());
            registered.countDown();
        });
        assertTrue(registered.await(LONG.toSeconds(), TimeUnit.SECONDS));
        CompletableFuture<?> f = inner.get();
        assertNotNull(f);
        f.get(LONG.toSeconds(), TimeUnit.SECONDS);
        assertEquals(1, stream.maxThreadsInSubmission());
    }

    @Test
    void theCloseSubmitsWhatWasQueuedBeforeIt() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().admissionLimit(2));
        SimulatedStream stream = device.newStream();
        CountDownLatch held = gate(stream);
        AtomicInteger ran = new AtomicInteger();
        for (int i = 0; i < 100; i++) {
            stream.launch(ran::incrementAndGet);
        }
        GpuEvent last = stream.event();
        stream.close();
        assertFalse(last.isDone());
        held.countDown();
        assertTrue(last.await(LONG), "the event taken before the close completes");
        assertEquals(100, ran.get(), "every entry appended before the close ran");
        await().atMost(LONG).until(() -> TestAccess.probes(device).liveStreams() == 0);
        assertNothingLeaked(device);
    }

    @Test
    void theDevicesCloseDiscardsQueuedWorkAndFailsItsWaiters() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().admissionLimit(2));
        SimulatedStream stream = device.newStream();
        CountDownLatch held = gate(stream);
        for (int i = 0; i < 100; i++) {
            stream.launchKernel(Duration.ZERO);
        }
        CompletableFuture<?> f = stream.event().toCompletableFuture();
        device.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(ReactorClosedException.class, e.getCause());
        assertEquals(0, probe(stream)[2], "nothing left queued");
        held.countDown();
    }

    /**
     * A tracker whose proof is already covered when it lands still drains. The drainer that finds
     * no room places no tracker while one is in flight ({@code stalled}), relying on that tracker's
     * landing to run the room check again. But the scanner retires the flags of one pass in slot
     * order, not in stream order, so a later proof-bearing entry can raise the proof past a
     * tracker's before the tracker is retired; its landing then raises nothing, and must drain
     * all the same. When it returned early instead, a stream whose entries behind its room were
     * work and the flag writes of callbacks (which carry no proof) hung for good: in CI,
     * StreamOrderedFreeTest's stream held 3,854 entries queued behind 256 unproven ones on an idle
     * device (its memory closes' callbacks waiting for work that was never submitted).
     *
     * <p>Made deterministic here: the stream held, the first pass fills the room and paces its
     * trackers; the proof is then raised to what that pass submitted, as a later proof-bearing
     * entry retired before those trackers would raise it (its drain submits the next room's worth:
     * work and callbacks' flag writes, which reset the pacing, so it places no tracker, and stalls
     * with the first pass's trackers still in flight). Released, those trackers land behind the
     * raised proof: each must drain, or the rest of the queue waits forever.
     */
    @Test
    void aTrackerLandingBehindAHigherProofStillDrainsSoAStalledStreamNeverHangs() throws Exception {
        SimulatedDevice device = device(ReactorConfig.builder().admissionLimit(16));
        SimulatedStream stream = device.newStream();
        CountDownLatch held = gate(stream);
        for (int i = 0; i < 15; i++) {
            stream.launchKernel(Duration.ZERO); // the first pass: the room (16, the gate's included) filled, trackers paced
        }
        // Behind it: work, and every third entry the flag write of a registration that carries no proof
        // (a memory close's wait for the work that used it, as in StreamOrderedFreeTest).
        AtomicInteger registrationsDone = new AtomicInteger();
        int registrations = 0;
        for (int i = 0; i < 300; i++) {
            stream.launchKernel(Duration.ZERO);
            if (i % 3 == 2) {
                GpuStream s = stream;
                s.whenWorkDone(s.owner().required(), registrationsDone::incrementAndGet);
                registrations++;
            }
        }
        long[] first = probe(stream);
        assertTrue(first[3] >= 1 && first[2] > 300, "premise: the first pass stalled with trackers in flight: "
                + java.util.Arrays.toString(first));
        // What a later proof-bearing entry (an await's shared flag write, an event's callback), retired
        // by the scanner before the first pass's trackers, would do.
        ((GpuStream) stream).owner().completedThrough(first[1]);
        long[] second = probe(stream);
        assertTrue(second[1] > first[1] && second[2] > 0 && second[3] == first[3],
                "premise: the raise drained the next room's worth and stalled again, placing no tracker: "
                        + java.util.Arrays.toString(first) + " then " + java.util.Arrays.toString(second));
        held.countDown();
        // Only the stream's own proofs may drain it: no query of the stream while waiting (workInFlight
        // asks the stream, and an idle answer is a proof that drains).
        await().atMost(Duration.ofSeconds(30)).until(() -> probe(stream)[2] == 0);
        int expected = registrations;
        await().atMost(LONG).until(() -> registrationsDone.get() == expected);
        await().atMost(LONG).until(() -> stream.workInFlight() == 0);
        assertEquals(315, stream.queuedWorkRun() - 1); // and the gate
        assertEquals(0, stream.queuedWorkOutOfOrder());
        assertNothingLeaked(device);
    }

    /**
     * Every entry appended to {@code stream} gets submitted, within {@link #LONG}: a drain lost for
     * good fails it. Waited for, not read once: the waiters' joins do not order the last drain's
     * count (a flag write whose waiters an earlier proof already woke may still be in its driver
     * call on the callback executor, and the drainer counts a position after its call returns).
     */
    private static void assertEverythingSubmitted(SimulatedStream stream) {
        await("every appended entry was submitted on " + stream).atMost(LONG)
                .until(() -> probe(stream)[0] == probe(stream)[1]);
        long[] probe = probe(stream);
        assertEquals(probe[0], probe[1], "every appended entry was submitted on " + stream);
    }

    private static long[] probe(SimulatedStream stream) {
        long[] p = ((GpuStream) stream).owner().probe();
        assertNotNull(p, "a combining stream");
        return p;
    }
}
