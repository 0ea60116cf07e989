package io.cudaloom;

import static io.cudaloom.ReactorTestSupport.assertNothingLeaked;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * docs/SEMANTICS.md, "Semantics", its bullet "Under load waiting stays free", the part on shared flag
 * writes:
 * <blockquote><b>Shared flag writes (group commit, on by default).</b> A waiter joins a device write
 * that already covers all the work it needs; [...] beyond that newcomers gather behind one write,
 * armed when a pending one lands.</blockquote>
 * {@link #coalescedWaitersBehindTheSameWorkShareOneSlot},
 * {@link #aCoalescedWaiterJoinsOnlyAWriteThatCoversAllTheWorkItNeeds}. Coalescing at scale and with
 * members that time out, fail or close is {@link CoalescingTest}'s (simulated device); the bullet's
 * other parts (admission, the scanner's sleep, relayed wake-ups, the lone waiter's sleep) are not
 * part of the semantics suite.
 *
 * <p>A section of the semantics suite, run by every backend and strategy ({@link SemanticsSuite});
 * the {@code HOST_CALLBACK} strategy uses no slot, so its rows are skipped, saying so.
 */
abstract class CoalescingSemantics extends SemanticsSuite {
    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void coalescedWaitersBehindTheSameWorkShareOneSlot(BackendFixture b) throws Exception {
        requireSlots(b);
        // One shared write in flight: racing waiters then never arm a second one (with the default
        // of 2, two that both found no armed group may each arm one, as the H200 showed).
        GpuDevice device = b.open(b.config().coalesce(true).flagWritesInFlight(1).build());
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate gate = b.hold(stream);
        final int n = 64;
        List<Pending> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            waiters.add(start(i % 8 == 0 ? Kind.PLATFORM : Kind.VIRTUAL, "waiter " + i, () -> {
                stream.event().await();
                return "returned";
            }));
        }
        awaitParked(device, n, waiters);
        ReactorStats s = device.reactor().stats();
        assertEquals(1, s.registrations(), "one slot, one device write: " + s);
        assertEquals(n - 1, s.coalesced(), "everyone else joined it: " + s);
        assertEquals(0, s.fallbacks(), s.toString());
        assertEquals(1, s.armedNow(), s.toString());

        gate.open();
        for (Pending w : waiters) {
            assertEquals("returned", w.result(), w.toString());
        }
        assertEquals(n, device.reactor().stats().completions());
        assertNothingLeaked(device);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aCoalescedWaiterJoinsOnlyAWriteThatCoversAllTheWorkItNeeds(BackendFixture b) throws Exception {
        requireSlots(b);
        // Room for two writes, so that the later waiter can arm its own (with one it gathers for the next).
        GpuDevice device = b.open(b.config().coalesce(true).flagWritesInFlight(2).build());
        GpuStream stream = b.newStream(device);
        BackendFixture.Gate first = b.hold(stream);
        Pending early = start(Kind.VIRTUAL, "needs the first work", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 1, List.of(early));
        BackendFixture.Gate second = b.hold(stream); // submitted after the first group's write
        Pending late = start(Kind.PLATFORM, "needs the second work", () -> {
            stream.event().await();
            return "returned";
        });
        awaitParked(device, 2, List.of(early, late));
        ReactorStats s = device.reactor().stats();
        assertEquals(2, s.registrations(), "the later waiter armed its own slot: " + s);
        assertEquals(0, s.coalesced(), "it did not join a write that misses the second work: " + s);

        first.open();
        assertEquals("returned", early.result());
        stays("the later waiter waits for the second work", () -> !late.ended());
        second.open();
        assertEquals("returned", late.result());
        assertNothingLeaked(device);
    }

    // ---- helpers -----------------------------------------------------------------------------------

    static void requireSlots(BackendFixture b) {
        if (!usesSlots(b)) {
            String reason = "coalesced waiters share a slot; " + b.strategy() + " uses none (coalescing is off there)";
            System.out.println("SKIPPED semantics test on " + b + ": " + reason);
            org.junit.jupiter.api.Assumptions.abort(reason);
        }
    }
}
