package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.cudaloom.micrometer.CudaLoomMetrics;
import io.cudaloom.spi.StreamState;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * docs/SEMANTICS.md, "Semantics", its bullet on what an event stands for:
 * <blockquote>A {@code GpuEvent} stands for all work submitted to its stream before it was taken; it
 * may also wait for later work on that stream, never for less.</blockquote>
 * {@link #anEventNeverCompletesBeforeTheWorkSubmittedBeforeIt},
 * {@link #workWrittenByTheDeviceIsVisibleAfterTheAwait} (what the work wrote is visible after the
 * await), {@link #anEventOfAnIdleStreamCompletesAtOnceAndRegistersNothing} (nothing before it: done
 * at once, by every form). And its bullet on {@code isDone()}:
 * <blockquote>{@code event.isDone()} reports the work, awaited or not: true once it is done (then
 * every await returns at once), never for work that failed (a fault, the device's close: an await
 * throws, and {@code await(Duration.ZERO)} is the poll that ends on those too). It answers from
 * what the reactor knows, else from one query of the stream, whose idle answer is recorded; the
 * work in flight ({@code workInFlight()} of the stream and of {@code stats()}, the
 * {@code cudaloom.work.in.flight} gauge) falls to 0 once the work is done, awaited or
 * not.</blockquote>
 * {@link #isDoneAndTheWorkInFlightReportWorkThatFinishedUnawaited} (the fault and the close:
 * {@code EventIsDoneTest}, on the simulated device).
 *
 * <p>A section of the semantics suite, run by every backend and strategy ({@link SemanticsSuite}).
 */
abstract class EventCoverageSemantics extends SemanticsSuite {
    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void anEventNeverCompletesBeforeTheWorkSubmittedBeforeIt(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate first = b.hold(stream);
        Pending early = start(Kind.VIRTUAL, "waits for the first work", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 1, List.of(early));
        GpuEvent takenBeforeSecond = stream.event();
        BackendFixture.Gate second = b.hold(stream);
        GpuEvent takenAfterSecond = stream.event();
        Pending late = start(Kind.PLATFORM, "waits for the second work", () -> {
            takenAfterSecond.await();
            return "returned";
        });
        Pending lateTaken = start(Kind.VIRTUAL, "event taken before the second work, awaited after it", () -> {
            takenBeforeSecond.await();
            return "returned";
        });
        List<Pending> all = List.of(early, late, lateTaken);
        awaitParked(device, 3, all);
        stays("nothing completes while all its work is held", () -> noneEnded(all));

        first.open();
        assertEquals("returned", early.result(), "registered before the second work: completes without it");
        stays("an event taken after the second work never completes before it", () -> !late.ended());

        second.open();
        assertEquals("returned", late.result());
        assertEquals("returned", lateTaken.result());
        ReactorStats s = device.reactor().stats();
        assertEquals(3, s.completions(), s.toString());
        assertEquals(0, s.abandoned(), s.toString());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void workWrittenByTheDeviceIsVisibleAfterTheAwait(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream held = b.newStream(device);
        BackendFixture.Gate gate = b.hold(held);
        IntSupplier behindTheGate = b.write(held, 42);
        Pending parked = start(Kind.VIRTUAL, "parked until the write is done", () -> {
            held.event().await();
            return behindTheGate.getAsInt();
        });
        awaitParked(device, 1, List.of(parked));
        gate.open();
        assertEquals(42, parked.result(), "the device's write is visible after a parked await");

        // Then awaits on both kinds of thread, whatever path each takes (idle, inline spin, parked).
        List<Pending> rounds = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            GpuStream own = b.newStream(device);
            rounds.add(start(kind, "write and await", () -> {
                for (int i = 0; i < 20; i++) {
                    int value = kind.ordinal() * 1_000 + i;
                    IntSupplier result = b.write(own, value);
                    own.event().await();
                    int seen = result.getAsInt();
                    if (seen != value) {
                        return "round " + i + ": read " + seen + ", the device wrote " + value;
                    }
                }
                return "all seen";
            }));
        }
        for (Pending r : rounds) {
            assertEquals("all seen", r.result(), r.toString());
        }
        assertEquals(41, device.reactor().stats().completions());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void anEventOfAnIdleStreamCompletesAtOnceAndRegistersNothing(BackendFixture b) throws Exception {
        if (!b.reportsIdle()) {
            b.unsupported("its streams report themselves busy even with nothing in flight, so no await"
                    + " takes the immediate path");
        }
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        GpuEvent event = stream.event();
        event.await();
        assertTrue(event.isDone());
        stream.await();
        assertTrue(stream.event().await(Duration.ZERO), "zero timeout on idle work: completed");
        CompletableFuture<?> future = stream.event().toCompletableFuture(Runnable::run);
        assertTrue(future.isDone() && !future.isCompletedExceptionally(), "completed before it was returned");
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        stream.event().onComplete(Runnable::run, () -> ranOn.set(Thread.currentThread()), e -> fail(e));
        assertSame(Thread.currentThread(), ranOn.get(), "ran at once, on the caller");
        ReactorStats s = device.reactor().stats();
        assertEquals(5, s.immediate(), s.toString());
        assertEquals(5, s.completions(), s.toString());
        assertEquals(0, s.registrations() + s.fallbacks() + s.coalesced(), "nothing registered: " + s);
    }

    /**
     * The report: 200 ms after a 1 ms kernel finished, {@code isDone()} was false, a new
     * event's too, and the work in flight 1, until someone awaited. Here the kernels finish while
     * nobody looks (the test asks the backend itself, {@link GpuStream#queryState}, which records
     * no proof), then {@code isDone()} on one stream and the gauge on the other each find their
     * work done. Both with coalescing (proofs trusted) and without (each answer from a query).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void isDoneAndTheWorkInFlightReportWorkThatFinishedUnawaited(BackendFixture b) throws Exception {
        if (!b.reportsIdle()) {
            b.unsupported("its streams report themselves busy even with nothing in flight, so only an await's"
                    + " own flag write proves their work done");
        }
        for (boolean coalesce : new boolean[] {false, true}) {
            String mode = coalesce ? "coalescing: " : "not coalescing: ";
            GpuDevice device = b.open(b.config().coalesce(coalesce).build());
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            CudaLoomMetrics.of(device).bindTo(registry);
            Gauge gauge = registry.get("cudaloom.work.in.flight").gauge();
            GpuStream polled = b.newStream(device);
            GpuStream gauged = b.newStream(device);

            // Held work: not done, in flight; a poll ends once it is done.
            BackendFixture.Gate gate = b.hold(polled);
            GpuEvent held = polled.event();
            assertFalse(held.isDone(), mode + "held work is not done");
            assertTrue(polled.workInFlight() > 0, mode + "held work is in flight");
            assertTrue(gauge.value() > 0, mode + "and in the gauge");
            gate.open();
            awaitUntil(mode + "a poll of isDone() ends once the work is done", held::isDone);
            assertTrue(held.isDone(), mode + "and stays done");

            // A 1 ms kernel on each stream, finished while nobody awaits or looks.
            polled.launchKernel(Duration.ofMillis(1));
            gauged.launchKernel(Duration.ofMillis(1));
            GpuEvent event = polled.event();
            awaitUntil(mode + "the backend reports both streams idle",
                    () -> polled.owner().queryState() == StreamState.IDLE && gauged.owner().queryState() == StreamState.IDLE);
            assertTrue(polled.owner().completedThrough() < polled.submissionCount(),
                    mode + "the premise: no proof of the kernel recorded yet");
            assertTrue(gauged.owner().completedThrough() < gauged.submissionCount(),
                    mode + "the premise: no proof of the other kernel recorded yet");

            assertTrue(event.isDone(), mode + "the kernel finished: its event is done, though nobody awaited it");
            assertTrue(polled.event().isDone(), mode + "a new event of the idle stream is done");
            assertEquals(0, polled.workInFlight(), mode + "the stream's work in flight fell with it");
            assertEquals(0.0, gauge.value(), mode + "the gauge reads 0 on idle streams whose work nobody awaited");
            assertEquals(gauged.submissionCount(), gauged.owner().completedThrough(),
                    mode + "the gauge's read recorded the other stream's proof");
            assertEquals(0, gauged.workInFlight(), mode);
            ReactorStats s = device.reactor().stats();
            assertEquals(0, s.workInFlight(), mode + s);
            assertEquals(0, s.registrations() + s.fallbacks() + s.immediate() + s.completions(),
                    mode + "polls and gauge reads are no awaits: nothing counted: " + s);
            assertNothingLeaked(device);
        }
    }
}
