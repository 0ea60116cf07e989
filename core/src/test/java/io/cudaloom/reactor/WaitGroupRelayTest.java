package io.cudaloom.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The wake tree of a shared flag write ({@link Waiter.Group}, relayed wake-ups), driven without
 * threads: the deliverer's direct wake-ups are counted, then each woken member's own
 * {@link Waiter.Group#afterDelivery} (its relay, and a founder's settle) is run, round by round,
 * as its thread would on waking.
 */
class WaitGroupRelayTest {

    /** Members of one group whose deliveries are counted; the woken ones queue for their relay. */
    private static final class Fixture {
        final Waiter.Group group;
        final AtomicIntegerArray deliveries;
        final List<Waiter.Member> members = new ArrayList<>();
        final ArrayDeque<Integer> woken = new ArrayDeque<>();

        Fixture(int n, boolean relay) {
            this(n, relay, false);
        }

        /** With {@code founded}, member 0 founds the group (it joins in the constructor, Waiter item 5). */
        Fixture(int n, boolean relay, boolean founded) {
            deliveries = new AtomicIntegerArray(n);
            for (int i = 0; i < n; i++) {
                members.add(new Waiter.Member((long ticket, @Nullable RuntimeException failure) -> {
                    deliveries.incrementAndGet((int) ticket);
                    woken.add((int) ticket);
                }, i));
            }
            group = new Waiter.Group(0L, relay, founded ? members.get(0) : null);
            for (int i = founded ? 1 : 0; i < n; i++) {
                assertTrue(group.join(members.get(i)));
            }
        }

        /** Runs the woken members' relays a round at a time; returns the number of rounds. */
        int relayAll() {
            int rounds = 0;
            while (!woken.isEmpty()) {
                rounds++;
                List<Integer> now = new ArrayList<>(woken);
                woken.clear();
                for (int t : now) {
                    Waiter.Group.afterDelivery(members.get(t)); // relays, then settles if handed the settle
                }
            }
            return rounds;
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 7, 100, 1_000, 10_000})
    void theDelivererWakesAtMostTwoAndEveryMemberIsWokenOnceInLogarithmicRounds(int n) {
        Fixture f = new Fixture(n, true);
        f.group.complete(0L, null);
        assertEquals(Math.min(n, 2), f.woken.size(), "woken by the deliverer itself");
        int rounds = f.relayAll();
        for (int i = 0; i < n; i++) {
            assertEquals(1, f.deliveries.get(i), "deliveries of member " + i);
        }
        int log2 = 32 - Integer.numberOfLeadingZeros(n); // ceil-ish log2(n + 1)
        assertTrue(rounds <= log2 + 1, n + " members woke in " + rounds + " rounds, expected <= " + (log2 + 1));
    }

    @ParameterizedTest
    @ValueSource(ints = {3, 10, 1_000})
    void withoutRelayTheDelivererWakesEveryMember(int n) {
        Fixture f = new Fixture(n, false);
        f.group.complete(0L, null);
        assertEquals(n, f.woken.size());
        assertEquals(1, f.relayAll(), "nothing left to relay after the deliverer's round");
    }

    @ParameterizedTest
    @ValueSource(longs = {1L, 2L, 3L})
    void membersThatWithdrewStrandNobody(long seed) {
        int n = 2_000;
        Fixture f = new Fixture(n, true);
        Random random = new Random(seed);
        boolean[] withdrawn = new boolean[n];
        for (int i = 0; i < n; i++) {
            withdrawn[i] = random.nextInt(3) == 0 && f.members.get(i).cancel();
        }
        RuntimeException failure = new IllegalStateException("closed");
        f.group.complete(0L, failure);
        f.relayAll();
        for (int i = 0; i < n; i++) {
            assertEquals(withdrawn[i] ? 0 : 1, f.deliveries.get(i), "deliveries of member " + i);
        }
    }

    /**
     * Waiter item 5: the settle is handed to the founder, woken first by the deliverer itself, and
     * runs once, on the founder's own turn; the founder is in no relayed part, so every member is
     * still delivered once, and the deliverer's own wake-ups are the founder's and at most two more.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 7, 100, 10_000})
    void theFounderIsWokenFirstAndRunsTheSettleOnce(int n) {
        for (boolean relay : new boolean[] {true, false}) {
            Fixture f = new Fixture(n, relay, true);
            int[] settles = new int[1];
            assertTrue(f.group.deliver(null, () -> settles[0]++), "the founder took the settle");
            assertEquals(0, f.woken.peekFirst(), "the founder is woken first");
            assertEquals(relay ? Math.min(n, 3) : n, f.woken.size(), "woken by the deliverer itself");
            assertEquals(0, settles[0], "the deliverer does not run it");
            f.relayAll();
            assertEquals(1, settles[0], "the founder's thread ran it once");
            for (int i = 0; i < n; i++) {
                assertEquals(1, f.deliveries.get(i), "deliveries of member " + i + " (relay " + relay + ")");
            }
        }
    }

    /** A founder that withdrew takes no settle: deliver says so, and the caller runs it (nobody else does). */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 5, 1_000})
    void aFounderThatWithdrewLeavesTheSettleToTheDeliverer(int n) {
        Fixture f = new Fixture(n, true, true);
        assertTrue(f.members.get(0).cancel(), "premise: the founder withdrew before the delivery");
        int[] settles = new int[1];
        assertFalse(f.group.deliver(new IllegalStateException("closed"), () -> settles[0]++));
        f.relayAll();
        assertEquals(0, settles[0], "no member ran the settle: it is the deliverer's to run");
        assertEquals(0, f.deliveries.get(0), "the founder withdrew");
        for (int i = 1; i < n; i++) {
            assertEquals(1, f.deliveries.get(i), "deliveries of member " + i);
        }
    }

    /** Without a settle ({@code complete}), the founder is delivered as any member, in the relayed parts. */
    @ParameterizedTest
    @ValueSource(ints = {1, 3, 100})
    void withoutASettleTheFounderIsDeliveredAsAnyMember(int n) {
        Fixture f = new Fixture(n, true, true);
        f.group.complete(0L, null);
        f.relayAll();
        for (int i = 0; i < n; i++) {
            assertEquals(1, f.deliveries.get(i), "deliveries of member " + i);
        }
    }
}
