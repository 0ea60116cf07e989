package io.cudaloom;

import io.cudaloom.spi.StreamState;

/**
 * The coalescing wait ({@link ReactorConfig#coalesce()}): join the stream's newest
 * {@link WaitGroup} if its flag write covers the work this waiter needs, else install a new group
 * (compare-and-set on {@link GpuStream#LAST_GROUP}, so racing waiters end up in one) and register
 * it. See WaitGroup for why {@code covered >= required} is enough. The group is installed before
 * it is registered, so waiters arriving meanwhile join it; its count was read before, so its write
 * still covers them.
 */
final class CoalescedWait {
    private final CompletionReactor reactor;
    private final Registrar registrar;
    private final ReactorCounters counters;
    private final BlockingWait blocking;

    CoalescedWait(CompletionReactor reactor, Registrar registrar, ReactorCounters counters, BlockingWait blocking) {
        this.reactor = reactor;
        this.registrar = registrar;
        this.counters = counters;
        this.blocking = blocking;
    }

    boolean await(GpuStream stream, long required, Waiter waiter, boolean interruptible, boolean timed,
            long deadline) throws InterruptedException {
        WaitGroup.Member member = new WaitGroup.Member(waiter, registrar.syntheticTicket());
        for (;;) {
            WaitGroup group = (WaitGroup) GpuStream.LAST_GROUP.getVolatile(stream);
            if (group != null && group.covered >= required) {
                if (group.join(member)) {
                    counters.coalesced.increment();
                    return blocking.parkUntilDelivered(waiter, member.ticket, member, interruptible, timed, deadline);
                }
                if (group.deliveredFailure() == null) { // delivered: the work it covers, ours too, is done
                    counters.completions.increment();
                    return true;
                }
                // A failed group (fault, close) says nothing about later ones: check afresh.
                if (reactor.checks().precheck(stream, false) == StreamState.IDLE) {
                    return true;
                }
            }
            // The count is read before the flag write is enqueued: everything counted is ahead of it.
            WaitGroup fresh = new WaitGroup(stream.submissionCount());
            fresh.join(member);
            if (GpuStream.LAST_GROUP.compareAndSet(stream, group, fresh)) {
                register(stream, fresh);
                return blocking.parkUntilDelivered(waiter, member.ticket, member, interruptible, timed, deadline);
            }
            member = new WaitGroup.Member(waiter, registrar.syntheticTicket()); // lost the race: try theirs
        }
    }

    /** Register an installed group; on failure every member that joined gets the error. */
    private void register(GpuStream stream, WaitGroup group) {
        try {
            long ticket = registrar.tryArm(stream, group);
            if (!Registrar.armed(ticket)) {
                registrar.registerFallback(stream, group, ticket);
            }
        } catch (RuntimeException e) {
            group.complete(0L, e); // members must not wait for a write that was never enqueued
        }
    }
}
