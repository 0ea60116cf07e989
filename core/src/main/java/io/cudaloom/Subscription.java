package io.cudaloom;

/**
 * A registration made by {@link GpuEvent#subscribe}, which {@link #cancel()} withdraws. Callable
 * from any thread, non-blocking, idempotent.
 */
@FunctionalInterface
public interface Subscription {
    /**
     * Withdraws the registration unless its delivery has begun.
     *
     * @return true if the callback will now never run (this call withdrew it; counted in
     *     {@link ReactorStats#abandoned()}); false if the delivery won, or an earlier
     *     {@code cancel()} already withdrew it
     */
    boolean cancel();
}
