package io.cudaloom.reactor;

import io.cudaloom.ReactorConfig;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Everything the reactor keeps per stream, in one place: the submission count, the completion
 * proof, admission, the shared flag writes (group commit) and the recent-wait average. One per
 * {@link io.cudaloom.GpuStream}, made with it; the public {@code GpuStream} only forwards to it.
 *
 * <h2>Counts and proofs</h2>
 * {@link #submissions} counts the work entries enqueued on the stream (launches, copies, memsets,
 * and raw-stream work reported with {@link io.cudaloom.GpuStream#noteExternalSubmission()}), each counted only
 * after its driver call returned, so every entry counted when a flag write is enqueued is ahead of
 * that write in stream order. A flag write or host callback enqueued after reading the count
 * {@code c} is therefore a <em>proof</em>: when it lands, at least {@code c} counted entries are
 * complete. {@link #completedThrough} is the highest proof seen (a compare-and-set to the
 * maximum); it is raised by whatever learns that a write landed, from the payload that carries
 * the count (never from per-slot state, which the next registration of a recycled slot may already
 * have overwritten): a shared group's delivery (its covered count), a tracker's landing, a host
 * callback, a closed stream's drain, an idle query, a {@code cuStreamSynchronize} that returned,
 * and a normal return from await. A withdrawn registration proves nothing (its payload is gone);
 * a later proof covers its work too.
 *
 * <h2>Admission (a bounded number of entries in flight)</h2>
 * Before a backend enqueues work it takes one permit of {@link #room} ({@link #admit}); the
 * permits of counted entries come back when a proof covers them: each raise of
 * {@code completedThrough} by {@code d} releases {@code d} permits. An entry whose enqueue failed
 * was never counted, so no proof covers it: its permit is returned at once
 * ({@link #admissionUnused}). Hence permits held = entries admitted and not yet proven complete
 * &lt;= the limit, and the driver's own queue (about 1,000 entries on CUDA) never fills with work: a
 * caller that finds the stream full parks here, FIFO ({@link Semaphore} in fair mode, so a virtual
 * thread unmounts), instead of spinning inside the driver on its carrier.
 *
 * <p><b>Liveness: a proof is always on its way while someone waits.</b> Permits come back only
 * through proofs, so a stream full of work that nobody awaits (or whose waiters withdrew) would
 * stall its submitters. The rule ({@link #ensureProgress}): once half the permits are taken, every
 * submitter after counting its entry, and every submitter about to park, makes sure a
 * <em>tracker</em> (a flag write with no waiter, never withdrawn) is in flight if the stream is
 * full, or if more than a quarter of the limit is counted behind the newest flag write, unless a
 * shared flag write is pending: that write is a proof on its way, and its delivery applies the
 * rule again if it arms no next write ({@link #groupDelivered}); under load, where a group is
 * always pending, no tracker is made at all. At most one tracker is in flight per stream; when it
 * lands (or fails) and the stream is still full, the next is made at once ({@link #trackerLanded}). Argument: a submitter parks only after seeing no permit
 * and calling ensureProgress; then either a tracker is in flight (its landing returns the permits
 * of what it covers, or finds the stream still full and makes the next, covering more), or every
 * entry holding a permit is counted and one was just enqueued, or some entry is still inside its
 * driver call, and that call runs ensureProgress after counting, with the stream still full.
 * Trackers and shared flag writes take no permits: a few are pending per stream (one tracker plus
 * {@link ReactorConfig#flagWritesInFlight()} groups), which the admission limit leaves room for.
 * Without coalescing every await's own write is unbounded by admission (see
 * {@link ReactorConfig.Builder#coalesce}).
 *
 * <p><b>The gate.</b> A stream that closes or faults, or whose device closes, will never release
 * permits again: {@link #openGate} marks the record (a volatile write) and releases enough permits
 * for every parked submitter, each of which then re-checks the stream and throws the same
 * exception as a submission that came after the close or fault.
 *
 * <h2>Shared flag writes (group commit)</h2>
 * With coalescing (the default), a blocking waiter joins a {@link WaitGroup} whose flag write
 * covers its work instead of arming its own. {@link #lastGroup} is the newest group whose write is
 * enqueued; {@link #commit} holds the open group (not yet armed, which any waiter may join, because
 * it will read the count only when it is armed) and the count of armed groups not yet delivered. While fewer than {@code flagWritesInFlight} are pending a new group is armed at once
 * (a lone waiter's latency is unchanged); otherwise waiters gather in the open group, which is armed
 * when a pending one is delivered: under load one flag write serves every waiter that arrived while
 * the previous one was in flight, as one fsync serves a database's group commit. See
 * {@link CoalescedWait} for the orderings.
 */
public final class StreamRecord {
    /** Raising the proof by more than this releases this many permits (the gate is open by then anyway). */
    private static final int MAX_RELEASE = Integer.MAX_VALUE / 4;

    public final AtomicLong submissions = new AtomicLong();
    /** The highest proof seen (see the class comment); raised only by {@link #completedThrough(long)}. */
    private final AtomicLong completedThrough = new AtomicLong();
    /** The highest proof any flag write or host callback enqueued on this stream carries. */
    private final AtomicLong maxEnqueuedProof = new AtomicLong();

    private final int limit;
    private final int trackerSpacing;
    private final Room room;
    /** Set once by {@link #openGate}: admission takes no permits any more (the stream is done for). */
    private volatile boolean gateOpen;
    /** Trackers enqueued and not yet landed: at most one per stream (it is never withdrawn, so its landing is a proof). */
    private final java.util.concurrent.atomic.AtomicBoolean trackerInFlight = new java.util.concurrent.atomic.AtomicBoolean();
    private final int halfLimit;

    /** Who arms the next shared write: the pending count and the open group (GroupCommit's orderings). */
    final io.cudaloom.protocol.GroupCommit<WaitGroup> commit;
    /** The newest armed group; racy by design: any armed group that covers a waiter will do. */
    volatile @Nullable WaitGroup lastGroup;

    /** Recent awaits' durations (an exponential moving average, racy by design): the spin budget's guide. */
    private volatile long recentWaitNanos;

    public StreamRecord(ReactorConfig config) {
        this.limit = config.admissionLimit();
        this.trackerSpacing = Math.max(1, limit / 4);
        this.halfLimit = Math.max(1, limit / 2);
        this.room = new Room(limit);
        this.commit = new io.cudaloom.protocol.GroupCommit<>(config.flagWritesInFlight());
    }

    // ---- admission ----------------------------------------------------------------------------

    /**
     * Takes a permit for one entry, parking (FIFO, uninterruptibly: the interrupt status is kept)
     * while the stream has {@link ReactorConfig#admissionLimit()} entries in flight; a caller that
     * may not park ({@link io.cudaloom.GpuStream#mayParkForAdmission}) takes it on credit. Returns the
     * nanoseconds waited (0 without waiting), or -1 if no permit was taken because the gate is
     * open: then there is nothing to give back.
     */
    public long admit(Stream stream) {
        if (gateOpen) {
            return -1L;
        }
        if (!room.hasQueuedThreads() && room.tryAcquire()) {
            return 0L;
        }
        if (!stream.mayParkForAdmission()) {
            // A thread the stream's completions depend on (the scanner, a stream's own worker) must
            // not park: it takes the permit on credit (the count may go below 0), returned as usual.
            room.takeOnCredit();
            ensureProgress(stream);
            return 0L;
        }
        long start = System.nanoTime();
        ensureProgress(stream);
        room.acquireUninterruptibly();
        if (gateOpen) {
            room.release(); // woken by the gate: the caller re-checks the stream and throws
            return -1L;
        }
        return Math.max(1L, System.nanoTime() - start);
    }

    /** Gives back the permit of an entry that was admitted but never enqueued (so never counted). */
    public void admissionUnused() {
        if (!gateOpen) {
            room.release();
        }
    }

    /** After an entry was counted: once half the room is taken, make sure a proof is on its way (class comment). */
    public void afterSubmission(Stream stream) {
        if (!gateOpen && room.availablePermits() < halfLimit) {
            ensureProgress(stream);
        }
    }

    /**
     * Enqueues a tracker unless one is in flight, when the stream is full, or when more than a
     * quarter of the limit is counted behind the newest flag write (class comment). Each count read
     * here only grows, so a stale read errs towards one more tracker, never towards none.
     */
    private void ensureProgress(Stream stream) {
        long proven = completedThrough.get();
        long counted = submissions.get();
        if (counted <= proven || trackerInFlight.get() || commit.pending() > 0) {
            return; // nothing unproven, or a proof is on its way (a tracker, or a shared write: see groupDelivered)
        }
        long covered = Math.max(proven, maxEnqueuedProof.get());
        if (room.availablePermits() > 0 && counted - covered < trackerSpacing) {
            return; // room left, and a pending flag write covers most of what is in flight
        }
        if (trackerInFlight.compareAndSet(false, true)) { // the one tracker of this stream
            stream.track(); // the reactor tracks it, which clears the mark when it lands or fails
        }
    }

    /**
     * The tracker landed (its proof already recorded): if the stream is still full, the next proof
     * must be made now, since only the tracker in flight stopped the others from making it.
     */
    public void trackerLanded(Stream stream) {
        trackerInFlight.set(false);
        if (!gateOpen && room.availablePermits() <= 0) {
            ensureProgress(stream);
        }
    }

    /**
     * A shared flag write was delivered (or failed) and armed no next one: it was a proof on its
     * way that let {@link #ensureProgress} make no tracker, so the rule is applied again now, as
     * after a submission. A submitter that saw it pending parked only after that read, and this
     * check follows the delivery's release of permits and its return of the reservation, so the
     * submitter either finds the permits released or the next proof made here.
     */
    void groupDelivered(Stream stream) {
        if (!gateOpen && room.availablePermits() < halfLimit) {
            ensureProgress(stream);
        }
    }

    /** The tracker could not be enqueued or failed (a close or a fault, which open the gate): no retry. */
    public void trackerFailed() {
        trackerInFlight.set(false);
    }

    /** Permits free now (for tests and stats). */
    int freePermits() {
        return gateOpen ? limit : room.availablePermits();
    }

    /**
     * The stream closed or faulted, or its device closed: no permit will come back, so parked
     * submitters are let through to find out (class comment). Idempotent.
     */
    public void openGate() {
        if (!gateOpen) {
            gateOpen = true; // volatile: a submitter that acquires after this release sees it
            room.release(MAX_RELEASE);
            Runnable listener = gateListener;
            if (listener != null) {
                listener.run();
            }
        }
    }

    /** Run once by {@link #openGate}, after the gate opened (submission by combining drains then). */
    private volatile @Nullable Runnable gateListener;

    /** Has {@code listener} run when the gate opens (once; set before the stream is handed out). */
    public void onGateOpen(Runnable listener) {
        this.gateListener = listener;
    }

    /** Whether the gate is open: the stream closed or faulted, or its device closed. */
    public boolean gateOpen() {
        return gateOpen;
    }

    /** A fair semaphore that can also lend a permit it does not have. */
    private static final class Room extends Semaphore {
        private static final long serialVersionUID = 1L;

        Room(int permits) {
            super(permits, true);
        }

        void takeOnCredit() {
            reducePermits(1);
        }
    }

    // ---- proofs -------------------------------------------------------------------------------

    public long completedThrough() {
        return completedThrough.get();
    }

    /**
     * Records a proof that the first {@code count} counted entries are complete; releases the
     * permits of the entries it newly covers. Only the compare-and-set that raised the value
     * releases, so each entry's permit comes back once.
     */
    public void completedThrough(long count) {
        long seen;
        while ((seen = completedThrough.get()) < count) {
            if (completedThrough.compareAndSet(seen, count)) {
                if (!gateOpen) {
                    room.release((int) Math.min(count - seen, MAX_RELEASE));
                }
                return;
            }
        }
    }

    /** A flag write or host callback carrying {@code proof} was enqueued on the stream. */
    public void enqueuedProof(long proof) {
        long seen;
        while ((seen = maxEnqueuedProof.get()) < proof) {
            if (maxEnqueuedProof.compareAndSet(seen, proof)) {
                return;
            }
        }
    }

    // ---- the wait average ---------------------------------------------------------------------

    long recentWaitNanos() {
        return recentWaitNanos;
    }

    /** Folds one await's duration into the average (weight 1/4); lost updates are harmless. */
    void recordWait(long nanos) {
        long old = recentWaitNanos;
        recentWaitNanos = old + ((nanos - old) >> 2);
    }

    /**
     * What the record asks of its stream ({@link ReactorStream} extends it): whether the calling
     * thread may park for room there, and the one tracker when progress needs proving.
     */
    interface Stream {
        boolean mayParkForAdmission();

        /** Has the device's reactor track the work so far; the record's mark is cleared when it lands or fails. */
        void track();
    }
}
