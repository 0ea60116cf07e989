package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.jspecify.annotations.Nullable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * Relayed wake-ups ({@link Waiter.Group}'s wake tree): the deliverer wakes two members of a group of
 * five and hands each a part of the rest; a woken member wakes its part. One of those heads
 * withdraws (a timeout) while the group is delivered. Whatever the order, every member that did
 * not withdraw must be delivered exactly once: the withdrawn head cannot relay, so its part must
 * be delivered by the deliverer. The arbiter plays the woken members: it runs
 * {@link Waiter.Group#relayOf} for each delivered member until no delivery is left to relay.
 *
 * <p>Members join in the order a, b, c, d, e, so the list is e, d, c, b, a: e is handed [d] and c
 * is handed [b, a]; c withdraws. r1 = c withdrew (1) or was delivered (0); r2 = members that did
 * not withdraw and were never delivered; r3 = deliveries beyond one per such member, plus any to
 * the withdrawn one.
 */
@JCStressTest
@Description("Relayed wake-ups: a head of a part withdrawing during delivery strands no member.")
@Outcome(id = "1, 0, 0", expect = ACCEPTABLE_INTERESTING, desc = "c withdrew first; the deliverer woke its part itself.")
@Outcome(id = "0, 0, 0", expect = ACCEPTABLE, desc = "c was delivered and relayed its part.")
@Outcome(expect = FORBIDDEN, desc = "A member never woken (it hangs), or woken twice.")
@State
public class WaitGroupRelayTest {
    static final int N = 5;
    static final int WITHDRAWN = 2; // c (tickets 0..4 are a..e)

    final Waiter.Group group = new Waiter.Group(0L, true);
    final AtomicIntegerArray deliveries = new AtomicIntegerArray(N);
    final ConcurrentLinkedQueue<Integer> woken = new ConcurrentLinkedQueue<>();
    final Waiter.Member[] members = new Waiter.Member[N];
    int withdrew;

    public WaitGroupRelayTest() {
        for (int i = 0; i < N; i++) {
            members[i] = new Waiter.Member((long ticket, @Nullable RuntimeException failure) -> {
                deliveries.incrementAndGet((int) ticket);
                woken.add((int) ticket);
            }, i);
            group.join(members[i]);
        }
    }

    @Actor
    public void scanner() {
        group.complete(0L, null);
    }

    @Actor
    public void timeout() {
        withdrew = members[WITHDRAWN].cancel() ? 1 : 0;
    }

    @Arbiter
    public void arbiter(III_Result r) {
        for (Integer t; (t = woken.poll()) != null; ) {
            Waiter.Group.relayOf(members[t]); // what the woken member's own thread does
        }
        int never = 0;
        int extra = 0;
        for (int i = 0; i < N; i++) {
            int d = deliveries.get(i);
            if (i == WITHDRAWN && withdrew == 1) {
                extra += d;
            } else if (d == 0) {
                never++;
            } else {
                extra += d - 1;
            }
        }
        r.r1 = withdrew;
        r.r2 = never;
        r.r3 = extra;
    }
}
