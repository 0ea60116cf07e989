package io.cudaloom;

/**
 * A non-blocking registration, as {@link CallbackRegistrations#register} returns it:
 * {@link #withdraw} takes it back (a cancelled future) unless its delivery has already begun.
 */
@FunctionalInterface
interface Registration {
    /** Nothing to withdraw: the outcome was delivered during {@link CallbackRegistrations#register} itself. */
    Registration DELIVERED = () -> false;

    /**
     * Withdraws the registration: true if {@code onDone} will now never run (counted in
     * {@link ReactorStats#abandoned()}); false if it has run or is running. Non-blocking,
     * idempotent, callable from any thread.
     */
    boolean withdraw();
}
