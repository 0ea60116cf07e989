package io.cudaloom.reactor;

import java.util.concurrent.Executor;

/**
 * The coalescing wait's group commit, one flag write for many waiters (on by default,
 * {@link io.cudaloom.ReactorConfig#coalesce()}): the arming of a stream's groups (their delivery is
 * the stream's, {@link ReactorStream.GroupDelivery}, which hands the next group taken to {@link #armNext}). The waiter's
 * side, which group to join, is a mode of the one wait ({@link BlockingWait#acquire}, which parks
 * on the membership). A waiter that needs the first {@code required} counted submissions of its
 * stream, in this order:
 * <ol>
 *   <li>joins the stream's newest armed group ({@link ReactorStream#lastGroup}) if its flag write
 *       covers that work ({@code covered >= required}, see {@link Waiter.Group});
 *   <li>else joins the stream's open group (the stream's open group), not yet armed, if
 *       there is one;
 *   <li>else, while fewer than {@link io.cudaloom.ReactorConfig#flagWritesInFlight()} groups of the stream are
 *       armed and undelivered , arms a group of its own at once
 *       (a lone waiter's latency is that of its own flag write);
 *   <li>else installs a new open group (compare-and-set, so racing waiters end up in one) and joins it.
 * </ol>
 * An open group is armed when a pending group of its stream is delivered (the stream's
 * {@link ReactorStream.GroupDelivery} takes it and hands it to {@link #armNext}), or by
 * a waiter that finds room ({@link #armOpenIfRoom}; where each ordering is enforced on the waiter's
 * side, {@link BlockingWait#acquire} says): one flag write then serves every waiter that arrived
 * while the earlier ones were in flight.
 *
 * <h2>Orderings, and where each is enforced</h2>
 * <ol>
 *   <li><b>An open group covers whoever joined it.</b> The arming thread takes the group from
 *       {@code OPEN} to {@code ARMING} (a compare-and-set, {@link Waiter.Group#startArming}), then
 *       reads the submission count and enqueues the write. A waiter joins an open group only after
 *       a volatile read of {@code OPEN} ({@link Waiter.Group#isOpen}), and its {@code required} was read
 *       before that. That read precedes the compare-and-set in the synchronization order, which
 *       precedes the count read, so {@code required <= covered}: the write covers every member,
 *       also one whose push lands after the compare-and-set. A push after the delivery fails
 *       (the group's sentinel) and the member finds the covered work done.
 *   <li><b>No open group is left unarmed</b>: {@link io.cudaloom.protocol.GroupCommit}'s
 *       ordering 2, a Dekker pair between a waiter that installs the open group and then looks for
 *       room, and a delivery that returns its reservation and then looks for the open group.
 *   <li><b>Armed before visible.</b> A group is published as {@code lastGroup} (a volatile write)
 *       only after its {@code covered} was written, so a waiter that reads it there compares
 *       against a real count.
 * </ol>
 * Guarded by the jcstress {@code GroupCommitTest} and its broken twin (a delivery that reads the
 * open group before it decrements the pending count leaves members waiting forever).
 */
final class CoalescedWait implements ReactorStream.NextGroup {
    /** {@link #armFresh}'s ticket when registering threw: neither a ticket nor a fallback's reason. */
    static final long ARM_FAILED = Long.MIN_VALUE;

    /** Where a taken shared write is armed when this thread may not make driver calls (a host callback). */
    private final Executor callbackExecutor;
    private final Registrar registrar;
    /** Whether woken members relay the wake-ups of their group ({@link Waiter.Group}'s wake tree). */
    final boolean relay;

    CoalescedWait(Executor callbackExecutor, Registrar registrar, boolean relay) {
        this.callbackExecutor = callbackExecutor;
        this.relay = relay;
        this.registrar = registrar;
    }

    /**
     * A waiter that holds its stream's reservation arms a group of its own, with {@code member} in
     * it: the count is read before the flag write is enqueued, so everything counted is ahead of it.
     * Returns the group's payload, whose {@link ReactorStream.GroupDelivery#ticket} is the slot's ticket, or a negative
     * value: the reason a host callback serves it ({@link Registrar#armed}), or {@link #ARM_FAILED}.
     */
    ReactorStream.GroupDelivery armFresh(ReactorStream stream, Waiter.Member member) {
        Waiter.Group fresh = new Waiter.Group(stream.submissionCount(), relay, member); // its founder: it settles the delivery
        ReactorStream.GroupDelivery delivery = new ReactorStream.GroupDelivery(stream, fresh, this);
        delivery.ticket = arm(stream, fresh, delivery, true);
        return delivery;
    }

    /** Arms the stream's open group if there is room for its write (ordering 2); any thread but a host callback. */
    void armOpenIfRoom(ReactorStream stream) {
        Waiter.Group taken = stream.commit.takeIfRoom(Waiter.Group::startArming);
        if (taken != null) {
            armTaken(stream, taken);
        }
    }

    /** Arms a group taken from open (its reservation held); the count is read now, after its compare-and-set. */
    private void armTaken(ReactorStream stream, Waiter.Group group) {
        group.armedAt(stream.submissionCount()); // ordering 1: after startArming's compare-and-set
        // Not a registration of its own: every member, the one that opened it too, counted as coalesced.
        arm(stream, group, new ReactorStream.GroupDelivery(stream, group, this), false);
    }

    /**
     * Registers a group whose {@code covered} is set and whose reservation is held, with
     * {@code delivery} as its payload; returns the slot's ticket, or a negative value: the reason a
     * host callback serves it ({@link Registrar#armed}), or {@link #ARM_FAILED}. On failure every
     * member that joined gets the error.
     */
    private long arm(ReactorStream stream, Waiter.Group group, ReactorStream.GroupDelivery delivery, boolean counted) {
        stream.lastGroup = group; // ordering 3: covered was written before
        try {
            long ticket = registrar.tryArm(stream, delivery, counted);
            if (!Registrar.armed(ticket)) {
                registrar.registerFallback(stream, delivery, FallbackReason.of(ticket), false); // members count a fault
            }
            return ticket;
        } catch (RuntimeException e) {
            delivery.complete(0L, e); // members must not wait for a write that was never enqueued
            return ARM_FAILED;
        }
    }

    /**
     * A group's delivery took the stream's open group for arming, with a reservation held for it
     * ({@link ReactorStream.GroupDelivery}'s settle, on the delivered group's founder or the
     * delivering thread: the delivered group's reservation returned, then the open group taken): arms
     * it now. Not armed on a
     * host-callback thread or the stream's own worker, where CUDA forbids driver calls: there the
     * arming is handed to the reactor's callback executor.
     */
    @Override
    public void armNext(ReactorStream stream, Waiter.Group taken) {
        if (FallbackRegistration.onHostCallback() || stream.isOwnWorkerThread()) {
            callbackExecutor.execute(() -> armTaken(stream, taken));
        } else {
            armTaken(stream, taken);
        }
    }
}
