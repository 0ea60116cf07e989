package io.cudaloom.reactor;

/**
 * A registration that can be withdrawn: the one handle type of the reactor's registrations that
 * are not a blocking waiter's own slot. {@link #cancel()} withdraws it unless its delivery has
 * begun: true if this call withdrew it (its delivery will now never run), false if the delivery
 * won or an earlier {@code cancel()} already withdrew it. Non-blocking, idempotent, callable from
 * any thread. Each implementation decides with one atomic operation on one cell, racing the
 * deliverer's on the same cell (see each one for its cell).
 *
 * <p>What implements it:
 * <ul>
 *   <li>the non-blocking registrations handed out by {@link CallbackRegistrations#register} (a
 *       slot's payload, or a {@link FallbackRegistration}), which count a successful withdrawal in
 *       {@link io.cudaloom.ReactorStats#abandoned()};
 *   <li>a subscription to a closed stream's {@link StreamDrain} (not counted);
 *   <li>what a blocking waiter withdraws on timeout or interrupt (the park loop of {@link BlockingWait#acquire}):
 *       a {@link FallbackRegistration} or a {@link Waiter.Member}; the waiter counts it. A waiter
 *       on its own slot has no handle: it withdraws with the slot table's compare-and-set, so that
 *       the common await allocates nothing.
 * </ul>
 * {@link io.cudaloom.GpuEvent#subscribe} hands it out as an {@link io.cudaloom.Subscription} (one that also
 * counts the wait in the device's live resources until it ends); {@link #DELIVERED} as the API's own
 * delivered handle. This interface names no API type.
 */
@FunctionalInterface
public interface Registration {
    /**
     * Withdraws the registration unless its delivery has begun (see the class comment).
     *
     * @return true if this call withdrew it; false if the delivery won, or an earlier call withdrew it
     */
    boolean cancel();

    /**
     * The one "already delivered" handle: nothing to withdraw, since the outcome was delivered (or
     * handed to the executor) while registering; {@link #cancel()} is always false. Compared by
     * identity, to skip the work a withdrawable registration needs.
     */
    Registration DELIVERED = () -> false;
}
