package io.cudaloom.stress.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.protocol.GroupCommit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * Shared flag writes ({@link GroupCommit}, ordering 2): with one write allowed in flight and one
 * pending, a waiter installs an open group and looks for room while the pending write's delivery
 * returns its reservation and looks for the open group. Exactly one of them must arm the group:
 * none leaves its members waiting for a write nobody enqueues; two would enqueue it twice.
 *
 * <p>r1 = times the group was armed (taken for arming by either side); r2 = writes pending at the end.
 */
@JCStressTest
@Description("Group commit: an open group installed while the pending write is delivered is armed exactly once.")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "Armed once, by the waiter or by the delivery; it is now the pending write.")
@Outcome(id = "0, 0", expect = FORBIDDEN, desc = "Nobody armed it: its members wait forever.")
@Outcome(expect = FORBIDDEN, desc = "Anything else (armed twice, a reservation lost or leaked).")
@State
public class GroupCommitTest {
    final GroupCommit<Object> commit = new GroupCommit<>(1);
    final Object group = new Object();
    final AtomicInteger state = new AtomicInteger(); // 0 open, 1 arming: the group's own compare-and-set
    final AtomicInteger armed = new AtomicInteger();

    public GroupCommitTest() {
        if (!commit.tryReserve()) { // the write in flight
            throw new AssertionError("no room for the first write");
        }
    }

    private boolean startArming(Object g) {
        return state.compareAndSet(0, 1);
    }

    @Actor
    public void waiter() {
        commit.installOpen(null, group);
        if (commit.takeIfRoom(this::startArming) != null) {
            armed.incrementAndGet();
        }
    }

    @Actor
    public void delivery() {
        if (commit.delivered(this::startArming) != null) {
            armed.incrementAndGet();
        }
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = armed.get();
        r.r2 = commit.pending();
    }
}
