package io.cudaloom;

/** A registration a waiter can take back when it gives up (timeout, interrupt). */
interface Withdrawable {
    /** True if the registration will never be delivered; false if its delivery has begun. */
    boolean withdraw(Waiter waiter);
}
