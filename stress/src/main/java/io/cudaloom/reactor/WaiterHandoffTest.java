package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.stress.jcstress.VirtualThreadParkPermit;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * The wake-up hand-off of {@link Waiter} (SlotTable ordering 9): the scanner delivers with the real
 * {@link Waiter#publish} (failure, then a volatile store of the ticket) and unparks; the waiter,
 * which holds a stale park permit, parks (consuming it, so park returns at once) and reads its
 * ticket with the real {@link Waiter#isDelivered}. The permit is {@link VirtualThreadParkPermit},
 * the JDK's own logic with its fast path: an unpark that finds the permit set writes nothing.
 *
 * <p>If the unpark took that fast path (it read the stale permit before the waiter consumed it) and
 * the waiter, after consuming, did not see the ticket, the waiter parks again with no permit and no
 * unpark to come: parked for good. With a volatile ticket store that outcome is impossible (the
 * store and the unpark's read, and the waiter's read-modify-write and its load, are two Dekker
 * pairs). {@code BrokenWaiterHandoffTest} (test sources) is the same with the release store the
 * reactor used before, and jcstress shows the forbidden outcome there.
 *
 * <p>r1 = the waiter saw its ticket after its park returned (1) or not (0); r2 = the unpark set
 * the permit (1) or found it already set and wrote nothing (0).
 */
@JCStressTest
@Description("Waiter hand-off: volatile ticket store, then unpark with the JDK's permit fast path.")
@Outcome(id = "1, 0", expect = ACCEPTABLE,
        desc = "Unpark found the stale permit (fast path); the waiter consumed it and saw the ticket.")
@Outcome(id = "1, 1", expect = ACCEPTABLE,
        desc = "The waiter consumed the stale permit first; the unpark set it again; the ticket was seen.")
@Outcome(id = "0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The waiter looked before the delivery; the unpark set the permit, so its next park returns.")
@Outcome(id = "0, 0", expect = FORBIDDEN,
        desc = "Lost wake-up: stale permit consumed, ticket not seen, unpark wrote nothing: parked for good.")
@State
public class WaiterHandoffTest {
    static final long TICKET = 42L;

    final Waiter record = new Waiter(Thread.currentThread()); // never really unparked here
    final VirtualThreadParkPermit permit = new VirtualThreadParkPermit(true);
    int sawTicket;
    int unparkSetPermit;

    @Actor
    public void scanner() {
        record.publish(TICKET, null);
        unparkSetPermit = permit.unpark() ? 1 : 0;
    }

    @Actor
    public void waiter() {
        permit.park(); // consumes the stale permit: returns at once
        sawTicket = record.isDelivered(TICKET) ? 1 : 0;
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = sawTicket;
        r.r2 = unparkSetPermit;
    }
}
