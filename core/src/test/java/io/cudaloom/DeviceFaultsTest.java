package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.LONG;
import static io.cudaloom.ReactorTestSupport.parked;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.InstantDevice.InstantStream;
import io.cudaloom.reactor.DeviceFaults;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The fault owner ({@link DeviceFaults}) on its own: the first report wins, on a stream and on the
 * device, also when reports race (threads released together by a latch, no sleeps); a recorded
 * fault shows in every await of its stream, with the one message shape and the fault's cause; the
 * probe's verdict and the quarantine rule.
 */
class DeviceFaultsTest {
    /** Rounds of the races: each a fresh device, whose first fault is still to be decided. */
    private static final int ROUNDS = 200;
    private static final int REPORTERS_PER_STREAM = 2;

    @RegisterExtension
    final OpenedDevices devices = new OpenedDevices();

    private InstantDevice instant() {
        return devices.track(InstantDevice.holding(ReactorConfig.builder()
                .faultProbeInterval(Duration.ofMillis(1)).coalesce(false).build()));
    }

    @Test
    void theFirstReportWinsOnTheStreamAndOnTheDeviceUnderConcurrentReports() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            InstantDevice device = InstantDevice.holding(ReactorConfig.builder().coalesce(false).build());
            try {
                InstantStream[] streams = {device.newStream(), device.newStream()};
                int n = streams.length * REPORTERS_PER_STREAM;
                CountDownLatch ready = new CountDownLatch(n);
                CountDownLatch go = new CountDownLatch(1);
                String[] errors = new String[n];
                boolean[] won = new boolean[n];
                Throwable[] causes = new Throwable[n];
                List<Thread> reporters = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    int me = i;
                    GpuStream stream = streams[i % streams.length];
                    errors[i] = "ERROR_" + i + " (round " + round + ")";
                    causes[i] = new IllegalStateException(errors[i]);
                    reporters.add(Thread.ofPlatform().start(() -> {
                        ready.countDown();
                        spinUntilOpen(go);
                        won[me] = stream.owner().faults().streamFaulted(errors[me], causes[me]);
                    }));
                }
                ready.await();
                go.countDown(); // every reporter at once
                for (Thread t : reporters) {
                    t.join();
                }
                DeviceFaults.Fault first = device.faults.first();
                assertNotNull(first, "the device has a first fault");
                for (int s = 0; s < streams.length; s++) {
                    DeviceFaults.Fault recorded = streams[s].owner().faults().fault();
                    assertNotNull(recorded);
                    int winners = 0;
                    for (int i = s; i < n; i += streams.length) {
                        if (won[i]) {
                            winners++;
                            assertEquals(errors[i], recorded.error(), "the winner's report is the one kept");
                            assertSame(causes[i], recorded.cause());
                        }
                    }
                    assertEquals(1, winners, "exactly one report wins on a stream");
                    assertSame(streams[s].owner().faults(), recorded.on());
                    if (first.on() == streams[s].owner().faults()) {
                        assertSame(first, recorded, "the device's first fault is its stream's fault");
                    }
                }
                assertEquals(first.error() + " on " + first.on().stream, device.fault());
                assertFalse(streams[0].owner().faults().streamFaulted("LATE", null), "a later report is dropped");
                assertSame(first, device.faults.first(), "and changes nothing");
            } finally {
                device.close();
            }
        }
    }

    @Test
    void whoeverSeesTheDeviceFaultedSeesTheStreamFaulted() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            InstantDevice device = InstantDevice.holding(ReactorConfig.builder().coalesce(false).build());
            try {
                InstantStream stream = device.newStream();
                CountDownLatch go = new CountDownLatch(1);
                AtomicBoolean sawStreamHealthy = new AtomicBoolean();
                Thread reader = Thread.ofPlatform().start(() -> {
                    spinUntilOpen(go);
                    while (device.faults.first() == null) {
                        Thread.onSpinWait();
                    }
                    if (!stream.owner().faults().hasFaulted()) {
                        sawStreamHealthy.set(true);
                    }
                });
                Thread reporter = Thread.ofPlatform().start(() -> {
                    spinUntilOpen(go);
                    stream.owner().faults().streamFaulted("RACED", null);
                });
                go.countDown();
                reporter.join();
                reader.join();
                assertFalse(sawStreamHealthy.get(), "round " + round + ": the device faulted but its stream did not");
            } finally {
                device.close();
            }
        }
    }

    /**
     * Spins (no park) until {@code go} opens, so that the threads released by it run their next
     * step together: a thread woken from a park would start microseconds after the others, and the
     * race would hardly ever be run.
     */
    private static void spinUntilOpen(CountDownLatch go) {
        while (go.getCount() > 0) {
            Thread.onSpinWait();
        }
    }

    @Test
    void aReportedFaultShowsInEveryAwaitOfItsStreamAndOnlyThere() throws Exception {
        InstantDevice device = instant();
        InstantStream faulty = device.newStream();
        InstantStream healthy = device.newStream();
        AtomicReference<Throwable> parkedOutcome = new AtomicReference<>();
        Thread waiter = Thread.ofVirtual().start(() -> {
            try {
                faulty.event().await();
                parkedOutcome.set(new AssertionError("await returned normally"));
            } catch (Throwable t) {
                parkedOutcome.set(t);
            }
        });
        await().atMost(LONG).until(() -> parked(waiter) && device.reactor().stats().armedNow() == 1);
        CompletableFuture<?> future = faulty.event().toCompletableFuture();
        IllegalArgumentException cause = new IllegalArgumentException("the kernel's exception (test)");

        assertTrue(faulty.owner().faults().streamFaulted("ILLEGAL_ADDRESS (test)", cause));
        String expected = faulty + " of " + device.name() + ": its work can never complete (ILLEGAL_ADDRESS (test))";

        assertTrue(waiter.join(LONG), "the parked waiter is woken by the fault probe");
        GpuFaultException woken = assertInstanceOf(GpuFaultException.class, parkedOutcome.get());
        assertEquals(expected, woken.getMessage());
        assertSame(cause, woken.getCause());
        ExecutionException viaFuture = assertThrows(ExecutionException.class, () -> future.get(LONG.toSeconds(), TimeUnit.SECONDS));
        assertEquals(expected, viaFuture.getCause().getMessage());
        GpuFaultException later = assertThrows(GpuFaultException.class, () -> faulty.event().await());
        assertEquals(expected, later.getMessage());
        assertSame(cause, later.getCause());
        GpuFaultException timed = assertThrows(GpuFaultException.class, () -> faulty.event().await(Duration.ofSeconds(1)));
        assertEquals(expected, timed.getMessage());

        assertEquals("ILLEGAL_ADDRESS (test) on " + faulty, device.fault());
        assertFalse(healthy.owner().faults().hasFaulted(), "the device's first fault is not its other streams'");
        assertNull(healthy.owner().faults().fault());
        assertTrue(healthy.owner().faults().streamFaulted("ANOTHER (test)", null), "another stream's own first fault");
        assertEquals("ILLEGAL_ADDRESS (test) on " + faulty, device.fault(), "the device's first stays");
        ReactorTestSupport.assertNothingLeaked(device); // the failed slot was quarantined, then recycled (settled)
    }

    @Test
    void aSimulatedKernelsFaultHasTheOneMessageShapeEverywhereWithTheKernelsException() throws Exception {
        SimulatedDevice device = devices.track(SimulatedDevice.create());
        SimulatedStream stream = device.newStream();
        IllegalStateException boom = new IllegalStateException("boom (test)");
        stream.launch(() -> {
            throw boom;
        });
        GpuFaultException awaited = assertThrows(GpuFaultException.class, () -> stream.event().await());
        String error = "kernel failed: " + boom;
        assertEquals(stream + " of " + device.name() + ": its work can never complete (" + error + ")", awaited.getMessage());
        assertSame(boom, awaited.getCause());
        GpuFaultException refused = assertThrows(GpuFaultException.class, () -> stream.launchKernel(Duration.ZERO));
        assertEquals(stream + " of " + device.name() + ": work refused, the stream faulted earlier (" + error + ")",
                refused.getMessage());
        assertSame(boom, refused.getCause(), "the refusal carries the first fault's cause too");
        assertEquals(error + " on " + stream, device.fault());
        assertTrue(device.isFaulted());
    }

    @Test
    void aReportOpensTheStreamsAdmissionGateAndAFailureNeedsAFault() {
        InstantDevice device = instant();
        InstantStream stream = device.newStream();
        assertThrows(IllegalStateException.class, () -> stream.owner().faults().failure("work refused"),
                "no exception for a fault nobody reported");
        assertFalse(stream.owner().gateOpen(), "healthy: the admission gate is closed");
        stream.owner().faults().streamFaulted("GATE (test)", null);
        assertTrue(stream.owner().gateOpen(), "faulted: the gate is open, no room is taken any more");
        GpuFaultException f = assertInstanceOf(GpuFaultException.class, stream.owner().faults().failure("work refused, the stream faulted earlier"));
        assertEquals(stream + " of " + device.name() + ": work refused, the stream faulted earlier (GATE (test))", f.getMessage());
        assertNull(f.getCause());
    }

    @Test
    void theProbesVerdictAndTheQuarantineRule() {
        InstantDevice device = instant();
        DeviceFaults faults = device.faults;
        List<RuntimeException> reported = new ArrayList<>();

        InstantStream healthy = device.newStream();
        assertNull(faults.probe(healthy.owner(), reported::add), "a busy stream's registrations stay");

        InstantStream faulted = device.newStream();
        faulted.faulted = true; // the "driver" says so; the query reports it
        DeviceFaults.Verdict verdict = faults.probe(faulted.owner(), reported::add);
        assertNotNull(verdict);
        assertEquals(InstantStream.FAULT, verdict.error());
        assertEquals(faulted + " of " + device.name() + ": its work can never complete (" + InstantStream.FAULT + ")",
                verdict.failure().getMessage());
        assertTrue(faulted.owner().faults().hasFaulted(), "the query's answer was recorded");

        InstantStream unqueryable = device.newStream();
        IllegalStateException queryFailure = new IllegalStateException("query failed (test)");
        unqueryable.queryFailureEverywhere = queryFailure;
        DeviceFaults.Verdict failedQuery = faults.probe(unqueryable.owner(), reported::add);
        assertNotNull(failedQuery);
        assertSame(queryFailure, failedQuery.failure().getCause());
        assertTrue(failedQuery.failure().getMessage().startsWith(unqueryable + " of " + device.name()
                + ": its work is taken as failed: the backend could not query it ("), failedQuery.failure().getMessage());
        assertEquals(List.of(queryFailure), reported, "the throwing hook is reported");
        assertFalse(unqueryable.owner().faults().hasFaulted(), "a failed query is not a recorded fault");
        assertTrue(unqueryable.owner().gateOpen(), "but its gate opens");
        unqueryable.queryFailureEverywhere = null;

        faulted.settled = false;
        assertFalse(faults.mayRecycle(faulted.owner(), reported::add), "a write of the stream may still land: keep the slot");
        faulted.settled = true;
        assertTrue(faults.mayRecycle(faulted.owner(), reported::add), "settled: the slot may be reused");
        assertEquals(1, reported.size());
    }
}
