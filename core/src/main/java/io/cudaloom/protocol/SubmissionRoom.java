package io.cudaloom.protocol;

import java.util.Objects;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * The room of one stream in the driver, for submission by combining: a {@link SubmissionQueue}
 * whose drainer submits an entry only while the stream has room, and the hand-over by which the
 * completion that frees room drains the entries that waited for it. Nobody parks for room: an
 * entry without room waits in the queue (in Java), never its caller.
 *
 * <h2>Room</h2>
 * {@link #hasRoom}: a work entry goes to the driver while {@code drained - proven < workLimit}, any
 * other entry (the reactor's flag writes and host callbacks) while {@code drained - proven <
 * entryLimit}; {@code drained} is the queue's {@link SubmissionQueue#drained()} (the entries before
 * this one), {@code proven} the stream's completion proof (the highest count of entries known
 * complete). A stream that can take nothing any more ({@link Driver#discarding()}: faulted, its
 * device closed) has room for everything: its entries are discarded at once. A drainer that finds
 * no room calls {@link Driver#stalled()} first (the stream's liveness: a proof must be on its way).
 *
 * <h2>Ordering of the hand-over (no entry stranded when room comes back)</h2>
 * {@link #proofRaised}: the completion first raises the proof (a volatile write: the stream's
 * compare-and-set to the maximum), then reads the queue ({@link SubmissionQueue#queued()}: its
 * {@code tail}, then {@code head}) and, if entries are queued, drains. The drainer first claims its
 * entry's position (the XADD on {@code tail}), then, in {@link #hasRoom}, reads the proof. All four
 * accesses are volatile, so in their one total order either the drainer's read of the proof comes
 * after the raise (it sees the room and submits), or the completion's read of {@code tail} comes
 * after the XADD (it sees the entry queued and calls {@code drain()}, whose increment of the drain
 * counter either makes it the drainer or sends the drainer round again: SubmissionQueue's
 * ordering 2, and that pass reads the raised proof). Reading the queue <em>before</em> raising
 * loses the entry: the completion finds nothing queued, the drainer then finds no room, and nobody
 * drains again. The jcstress {@code SubmissionRoomTest} checks the hand-over, and its generated
 * broken twin ({@code room-reads-queue-before-raise.patch}: the queue read before the raise) is
 * caught.
 *
 * @param <T> the entry type
 */
public final class SubmissionRoom<T> implements SubmissionQueue.Sink<T> {
    /** What the stream does with its entries: their kind, the driver call, and what a full stream needs. */
    public interface Driver<T> {
        /** Whether {@code op} is work (bounded by the work limit) or the reactor's (bounded by the entry limit). */
        boolean isWork(T op);

        /** Submits (or, on a stream that can take nothing, discards) {@code op}; must not throw. */
        void submit(T op, long position);

        /** Whether the stream can take nothing any more: its entries are then discarded, whatever the room. */
        boolean discarding();

        /** The drainer found no room: make sure a proof is on its way (called by the drainer only). */
        void stalled();
    }

    private final SubmissionQueue<T> queue;
    private final LongSupplier proven;
    private final int workLimit;
    private final int entryLimit;
    private final Driver<T> driver;

    /**
     * A room of {@code workLimit} work entries and {@code entryLimit} entries in all not yet proven
     * complete, with a queue of {@code capacity} slots; {@code proven} reads the stream's proof.
     */
    public SubmissionRoom(int capacity, int workLimit, int entryLimit, LongSupplier proven, Driver<T> driver) {
        if (workLimit < 1 || entryLimit < workLimit) {
            throw new IllegalArgumentException("limits must be 1 <= workLimit <= entryLimit, were " + workLimit
                    + " and " + entryLimit);
        }
        this.queue = new SubmissionQueue<>(capacity, this);
        this.proven = Objects.requireNonNull(proven, "proven");
        this.workLimit = workLimit;
        this.entryLimit = entryLimit;
        this.driver = Objects.requireNonNull(driver, "driver");
    }

    /** The queue (append, enqueue, drain, counts). */
    public SubmissionQueue<T> queue() {
        return queue;
    }

    /**
     * Raises the stream's proof to {@code count} with {@code raise}, then, if entries are queued,
     * runs {@code drain} (which drains the queue, here or on a thread that may call the driver):
     * the order is the hand-over's (class comment).
     */
    public void proofRaised(LongConsumer raise, long count, Runnable drain) {
        raise.accept(count);
        if (queue.queued() > 0) {
            drain.run();
        }
    }

    @Override
    public boolean hasRoom(T op) {
        if (driver.discarding()) {
            return true; // discarded at once by the driver's submit
        }
        long inFlight = queue.drained() - proven.getAsLong();
        if (inFlight < (driver.isWork(op) ? workLimit : entryLimit)) {
            return true;
        }
        driver.stalled();
        return false;
    }

    @Override
    public void submit(T op, long position) {
        driver.submit(op, position);
    }
}
