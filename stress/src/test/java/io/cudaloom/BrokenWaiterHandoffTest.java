package io.cudaloom;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.stress.jcstress.VirtualThreadParkPermit;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * {@link WaiterHandoffTest} with the store the reactor used before the lost wake-up was fixed: the
 * ticket release-stored ({@code setRelease}) and acquire-loaded. jcstress must report the FORBIDDEN
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

    /** The old Waiter record: failure, then a release store of the ticket; acquire load to check. */
    static final class ReleaseStoreRecord {
        private static final VarHandle DELIVERED;

        static {
            try {
                DELIVERED = MethodHandles.lookup().findVarHandle(ReleaseStoreRecord.class, "delivered", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private volatile long delivered = Long.MIN_VALUE;
        private @Nullable RuntimeException failure;

        void publish(long ticket, @Nullable RuntimeException failure) {
            this.failure = failure;
            DELIVERED.setRelease(this, ticket); // the bug: not ordered before the unpark's read
        }

        boolean isDelivered(long ticket) {
            return (long) DELIVERED.getAcquire(this) == ticket;
        }
    }

    final ReleaseStoreRecord record = new ReleaseStoreRecord();
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
