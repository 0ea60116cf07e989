package io.cudaloom.reactor;

import org.jspecify.annotations.Nullable;

/**
 * What a slot wakes: the payload of the slot table. Called exactly once per registration, never
 * while any lock is held: by the scanner (slot retired or faulted), a host callback (fallback path)
 * or the closing thread, each through {@link Waiter#deliverGuarded} (the delivery's hand-off, with
 * the others in Waiter's file), or by the registrant itself (a waiter that saw its flag and
 * withdrew its slot, an arming that failed). Implementations must be quick: they run on the
 * scanner thread.
 */
public interface Completion {
    /**
     * @param ticket the registration being completed
     * @param failure null on success, else why the work can never complete
     */
    void complete(long ticket, @Nullable RuntimeException failure);
}
