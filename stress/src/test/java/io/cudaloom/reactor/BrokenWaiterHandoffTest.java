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
 * {@link WaiterHandoffTest} on {@link BrokenReleaseStoreWaiter}: the real {@link Waiter} with the
 * store the reactor used before the lost wake-up was fixed, the ticket release-stored
 * ({@code setRelease}) instead of the volatile write, generated at build time from
 * {@code stress/src/mutations/waiter-release-store.patch}. jcstress must report the FORBIDDEN
 * "parked for good" outcome: the release store and the unpark's volatile read of the permit are
 * reordered (store-load) on x86, which is exactly the lost wake-up seen on the H200.
 *
 * <p>r1 = the waiter saw its ticket after its park returned (1) or not (0); r2 = the unpark set
 * the permit (1) or found it already set and wrote nothing (0).
 */
@JCStressTest
@Description("BROKEN VARIANT, expected to FAIL: waiter hand-off with a release store before unpark.")
@Outcome(id = "1, 0", expect = ACCEPTABLE,
        desc = "Unpark found the stale permit (fast path); the waiter consumed it and saw the ticket.")
@Outcome(id = "1, 1", expect = ACCEPTABLE,
        desc = "The waiter consumed the stale permit first; the unpark set it again; the ticket was seen.")
@Outcome(id = "0, 1", expect = ACCEPTABLE_INTERESTING,
        desc = "The waiter looked before the delivery; the unpark set the permit, so its next park returns.")
@Outcome(id = "0, 0", expect = FORBIDDEN,
        desc = "Lost wake-up: stale permit consumed, ticket not seen, unpark wrote nothing: parked for good.")
@State
public class BrokenWaiterHandoffTest {
    static final long TICKET = 42L;

    final BrokenReleaseStoreWaiter record = new BrokenReleaseStoreWaiter(Thread.currentThread()); // never really unparked here
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
