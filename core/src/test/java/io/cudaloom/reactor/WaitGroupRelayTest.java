package io.cudaloom.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
 * {@link Waiter.Group#relayOf} is run, round by round, as its thread would on waking.
 */
class WaitGroupRelayTest {

    /** Members of one group whose deliveries are counted; the woken ones queue for their relay. */
    private static final class Fixture {
        final Waiter.Group group;
        final AtomicIntegerArray deliveries;
        final List<Waiter.Member> members = new ArrayList<>();
        final ArrayDeque<Integer> woken = new ArrayDeque<>();

        Fixture(int n, boolean relay) {
            group = new Waiter.Group(0L, relay);
            deliveries = new AtomicIntegerArray(n);
            for (int i = 0; i < n; i++) {
                Waiter.Member m = new Waiter.Member((long ticket, @Nullable RuntimeException failure) -> {
                    deliveries.incrementAndGet((int) ticket);
                    woken.add((int) ticket);
                }, i);
                members.add(m);
                assertTrue(group.join(m));
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
                    Waiter.Group.relayOf(members.get(t));
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
}
