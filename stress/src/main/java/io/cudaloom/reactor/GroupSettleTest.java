package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
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
 * The settle handed to a group's founder ({@link Waiter}'s class comment, item 5): the deliverer
 * delivers a group founded by a, which b, c and d joined (relayed wake-ups on), and hands the
 * delivery's settle to a, running it itself if a did not take it (as
 * {@code ReactorStream.GroupDelivery#complete} does); a withdraws (a timeout) while the group is
 * delivered. Whatever the order, the settle must run exactly once (by a's thread if its delivery
 * won, by the deliverer if the withdrawal did: never, and the stream's next group is never armed
 * nor its room drained; twice, and a reservation is returned twice), and every member that did not
 * withdraw must be delivered exactly once (the founder is in no relayed part). The arbiter plays the
 * woken members: it runs {@link Waiter.Group#afterDelivery} for each delivered member until no
 * delivery is left to relay.
 *
 * <p>r1 = a withdrew (1) or was delivered (0); r2 = runs of the settle; r3 = members that did not
 * withdraw and were never delivered, plus deliveries beyond one per such member, plus any to a
 * withdrawn a.
 */
@JCStressTest
@Description("The settle handed to a group's founder runs exactly once, whether or not the founder withdraws.")
@Outcome(id = "1, 1, 0", expect = ACCEPTABLE_INTERESTING, desc = "a withdrew first; the deliverer settled itself.")
@Outcome(id = "0, 1, 0", expect = ACCEPTABLE, desc = "a was delivered and settled on its own thread.")
@Outcome(expect = FORBIDDEN, desc = "The settle never ran or ran twice, or a member was never woken or woken twice.")
@State
public class GroupSettleTest {
    static final int N = 4;
    static final int FOUNDER = 0; // a (tickets 0..3 are a..d)

    final AtomicIntegerArray deliveries = new AtomicIntegerArray(N);
    final ConcurrentLinkedQueue<Integer> woken = new ConcurrentLinkedQueue<>();
    final Waiter.Member[] members = new Waiter.Member[N];
    final AtomicInteger settles = new AtomicInteger();
    final Runnable settle = settles::incrementAndGet;
    final Waiter.Group group;
    int withdrew;

    public GroupSettleTest() {
        for (int i = 0; i < N; i++) {
            members[i] = new Waiter.Member((long ticket, @Nullable RuntimeException failure) -> {
                deliveries.incrementAndGet((int) ticket);
                woken.add((int) ticket);
            }, i);
        }
        group = new Waiter.Group(0L, true, members[FOUNDER]);
        for (int i = 0; i < N; i++) {
            if (i != FOUNDER) {
                group.join(members[i]);
            }
        }
    }

    @Actor
    public void scanner() {
        if (!group.deliver(null, settle)) {
            settle.run(); // GroupDelivery.complete: no founder took it
        }
    }

    @Actor
    public void timeout() {
        withdrew = members[FOUNDER].cancel() ? 1 : 0;
    }

    @Arbiter
    public void arbiter(III_Result r) {
        for (Integer t; (t = woken.poll()) != null; ) {
            Waiter.Group.afterDelivery(members[t]); // what the woken member's own thread does
        }
        int wrong = 0;
        for (int i = 0; i < N; i++) {
            int d = deliveries.get(i);
            if (i == FOUNDER && withdrew == 1) {
                wrong += d;
            } else {
                wrong += Math.abs(d - 1);
            }
        }
        r.r1 = withdrew;
        r.r2 = settles.get();
        r.r3 = wrong;
    }
}
