package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

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
 * at once, by every form).
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
}
