package io.cudaloom.protocol;

import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A drain handed to an executor by a thread that does not drain itself (a host callback, a
 * stream's worker, the reactor's scanner), with at most one hand-off pending: however many raises
 * of a stream's proof a scanner pass makes, one task drains them.
 *
 * <h2>Ordering (no request lost)</h2>
 * {@link #request}: the caller has made what the drain must see (an entry enqueued, a proof raised:
 * volatile writes) and then compare-and-sets {@link #pending} from false to true; on success it
 * hands the task to the executor. The task ({@link #run}) first clears {@code pending}, then
 * drains. A request that finds {@code pending} set read a true that the pending task's clear has
 * not yet overwritten (the clear is later in the flag's order, since every write of the flag is a
 * read-modify-write or the one clear that follows it), so the request's writes, made before its
 * read, come before the clear, which comes before the task's drain: the drain sees them. Clearing
 * <em>after</em> the drain loses a request that falls between the two: it finds the flag set, the
 * task has already drained, and nobody drains again. The jcstress {@code DrainHandOffTest} checks
 * this, and its generated broken twin ({@code handoff-clears-after-drain.patch}) is caught.
 */
public final class DrainHandOff {
    private final AtomicBoolean pending = new AtomicBoolean();
    private final Runnable drain;
    private final Runnable task = this::run;

    /** A hand-off whose task runs {@code drain}. */
    public DrainHandOff(Runnable drain) {
        this.drain = Objects.requireNonNull(drain, "drain");
    }

    /**
     * Hands a drain to {@code executor} unless one is pending (whose drain then sees what the
     * caller did before this call). Returns whether a task was handed over.
     *
     * @throws RejectedExecutionException if the executor refused the task (nothing is then pending)
     */
    public boolean request(Executor executor) {
        if (!pending.compareAndSet(false, true)) {
            return false; // a pending task's clear and drain follow this read (class comment)
        }
        try {
            executor.execute(task);
            return true;
        } catch (RejectedExecutionException e) {
            pending.set(false);
            throw e;
        }
    }

    /** The handed-over task: clears the mark, then drains (in that order: class comment). */
    public void run() {
        pending.set(false);
        drain.run();
    }

    /** Whether a handed-over task has not begun yet. */
    public boolean pending() {
        return pending.get();
    }
}
