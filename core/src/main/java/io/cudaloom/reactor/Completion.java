package io.cudaloom.reactor;

import org.jspecify.annotations.Nullable;

/**
 * What a slot wakes: the payload of the slot table. Called exactly once per registration, by the
 * scanner (slot retired or faulted), a host callback (fallback path) or the closing thread, never
 * while any lock is held. Implementations must be quick: they run on the scanner thread.
 */
public interface Completion {
    /**
     * @param ticket the registration being completed
     * @param failure null on success, else why the work can never complete
     */
    void complete(long ticket, @Nullable RuntimeException failure);

    /**
     * Runs a completion, reporting anything it throws (e.g. a caller's executor that rejects the
     * callback; a user's callback itself never throws this far: it is contained, logged and
     * counted where it runs, {@link CallbackRegistrations#callbackThrew}) to the current thread's
     * uncaught-exception handler instead of letting it escape:
     * completions run on the scanner, which serves every waiter, on the closing thread, which must
     * go on waking the others, and on a stream's host-callback thread, where an escaping exception
     * would be taken for a fault of the stream.
     */
    static void deliverGuarded(Completion c, long ticket, @Nullable RuntimeException failure) {
        try {
            c.complete(ticket, failure);
        } catch (Throwable t) {
            Thread.UncaughtExceptionHandler h = Thread.currentThread().getUncaughtExceptionHandler();
            h.uncaughtException(Thread.currentThread(), t);
        }
    }
}
