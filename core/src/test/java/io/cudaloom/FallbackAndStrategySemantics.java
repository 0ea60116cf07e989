package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * docs/SEMANTICS.md, "Semantics", its bullets on the paths that serve an await:
 * <blockquote>No slot free, or the flag write refused: the await completes through a host callback
 * ({@code cuLaunchHostFunc}), counted in {@code reactor().stats().fallbacks()}.</blockquote>
 * {@link #withNoSlotFreeAnAwaitCompletesThroughAHostCallbackAndIsCounted},
 * {@link #aRefusedFlagWriteFallsBackToAHostCallback}.
 * <blockquote>The strategies ({@code ReactorConfig.builder().strategy(...)}: {@code REACTOR}, the
 * default, or {@code HOST_CALLBACK}) all keep this contract.</blockquote>
 * Every test of every section runs under each strategy; here
 * {@link #theConfiguredStrategyIsThePathThatServesTheAwaits} checks that the strategy is really the
 * one used.
 *
 * <p>A section of the semantics suite, run by every backend and strategy ({@link SemanticsSuite}).
 */
abstract class FallbackAndStrategySemantics extends SemanticsSuite {
    // ---- no slot free, or the write refused: a host callback, counted ---------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void withNoSlotFreeAnAwaitCompletesThroughAHostCallbackAndIsCounted(BackendFixture b) throws Exception {
        GpuDevice device = b.open(b.config().capacity(2).build());
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        final int n = 12;
        List<Pending> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            waiters.add(start(Kind.values()[i % 2], "waiter " + i, () -> {
                stream.event().await();
                return "returned";
            }));
        }
        awaitParked(device, n, waiters);
        ReactorStats s = device.reactor().stats();
        int slotted = usesSlots(b) ? 2 : 0;
        assertEquals(slotted, s.registrations(), "the two slots, and no more: " + s);
        assertEquals(n - slotted, s.fallbacks(), "everyone else through a host callback: " + s);
        assertEquals(slotted, s.armedNow(), s.toString());
        CompletableFuture<?> future = stream.event().toCompletableFuture(Runnable::run);
        assertEquals(n - slotted + 1, device.reactor().stats().fallbacks(), "a future falls back the same way");

        gate.open();
        for (Pending w : waiters) {
            assertEquals("returned", w.result(), w.toString());
        }
        future.get(LONG.toSeconds(), TimeUnit.SECONDS);
        s = device.reactor().stats();
        assertEquals(n + 1, s.completions(), s.toString());
        assertEquals(0, s.abandoned(), s.toString());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aRefusedFlagWriteFallsBackToAHostCallback(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        GpuStream stream = b.newStream(device);
        b.refuseFlagWrites(stream);
        BackendFixture.Gate gate = b.hold(stream);
        Pending waiter = start(Kind.VIRTUAL, "waiter", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 1, List.of(waiter));
        ReactorStats s = device.reactor().stats();
        if (device.reactor().config().submission() == Submission.COMBINING
                && device.reactor().config().strategy() == CompletionStrategy.REACTOR) {
            // Combining takes the write at its append (armed); the drainer, refused by the backend,
            // makes the same write from the host by a host callback in its place in the stream.
            assertEquals(1, s.registrations(), "the write was taken at its append: " + s);
            assertEquals(0, s.fallbacks(), s.toString());
        } else {
            assertEquals(0, s.registrations(), "the refused write armed nothing: " + s);
            assertEquals(1, s.fallbacks(), s.toString());
            assertEquals(0, s.armedNow(), "the claimed slot went back: " + s);
        }
        gate.open();
        assertEquals("returned", waiter.result());
        assertEquals(1, device.reactor().stats().completions());
        assertNothingLeaked(device);
    }

    // ---- every strategy keeps the contract ------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void theConfiguredStrategyIsThePathThatServesTheAwaits(BackendFixture b) throws Exception {
        GpuDevice device = b.open();
        assertEquals(b.strategy(), device.reactor().config().strategy());
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        Pending waiter = start(Kind.VIRTUAL, "waiter", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 1, List.of(waiter));
        CompletableFuture<?> future = stream.event().toCompletableFuture(Runnable::run);
        ReactorStats s = device.reactor().stats();
        assertRegisteredThrough(b, s, 2);
        assertEquals(usesSlots(b) ? 2 : 0, s.armedNow(), s.toString());
        gate.open();
        assertEquals("returned", waiter.result());
        future.get(LONG.toSeconds(), TimeUnit.SECONDS);
        s = device.reactor().stats();
        assertEquals(2, s.completions(), s.toString());
        assertEquals(0, s.inlineCompletions(), "parked, so woken by the completer, not by its own spin: " + s);
        assertNothingLeaked(device);
    }
}
