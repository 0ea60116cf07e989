package io.cudaloom.reactor;

import io.cudaloom.ReactorConfig;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamOp;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Direct submission for one stream ({@link io.cudaloom.Submission#DIRECT}, the default): the caller
 * of a work call makes the driver call itself, on its own thread ({@link StreamOp#call()}), within
 * the stream's admission bound, and the reactor's flag writes and host callbacks go to the backend at
 * once. The admission semaphore, and the parking of a caller that finds the stream full, live here
 * and nowhere else.
 *
 * <h2>Counts</h2>
 * {@link #submissions} counts the work entries enqueued on the stream (launches, copies, memsets,
 * and raw-stream work reported with {@link io.cudaloom.GpuStream#noteExternalSubmission()}), each
 * counted only after its driver call returned, so every entry counted when a flag write is enqueued
 * is ahead of that write in stream order: a flag write or host callback enqueued after reading the
 * count is a proof of it (see {@link ReactorStream}).
 *
 * <h2>Admission (a bounded number of entries in flight)</h2>
 * Before the driver call ({@link #submit}) the caller takes one permit of {@link #room}
 * ({@link #admit}); the permits of counted entries come back when a proof covers them: each raise of
 * {@code completedThrough} by {@code d} releases {@code d} permits. An entry whose call failed was
 * never counted, so no proof covers it: its permit is returned at once ({@link #admissionUnused}).
 * Hence permits held = entries admitted and not yet proven complete &lt;= the limit, and the driver's
 * own queue (about 1,000 entries on CUDA) never fills with work: a caller that finds the stream full
 * parks here, FIFO ({@link Semaphore} in fair mode, so a virtual thread unmounts), instead of
 * spinning inside the driver on its carrier.
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
 * lands (or fails) and the stream is still full, the next is made at once ({@link #trackerLanded}).
 * Argument: a submitter parks only after seeing no permit and calling ensureProgress; then either a
 * tracker is in flight (its landing returns the permits of what it covers, or finds the stream still
 * full and makes the next, covering more), or every entry holding a permit is counted and one was
 * just enqueued, or some entry is still inside its driver call, and that call runs ensureProgress
 * after counting, with the stream still full. Trackers and shared flag writes take no permits: a
 * few are pending per stream (one tracker plus {@link ReactorConfig#flagWritesInFlight()} groups),
 * which the admission limit leaves room for. Without coalescing every await's own write is
 * unbounded by admission (see {@link ReactorConfig.Builder#coalesce}).
 *
 * <p><b>The gate.</b> A stream that closes or faults, or whose device closes, will never release
 * permits again: {@link #openGate} marks the stream (a volatile write) and then releases enough
 * permits for every parked submitter ({@link #gateOpened}), each of which then re-checks the stream
 * and throws the same exception as a submission that came after the close or fault.
 */
public final class DirectSubmission extends ReactorStream {
    /** Raising the proof by more than this releases this many permits (the gate is open by then anyway). */
    private static final int MAX_RELEASE = Integer.MAX_VALUE / 4;

    /** Work entries counted, each after its driver call returned (class comment). */
    private final AtomicLong submissions = new AtomicLong();
    /** The highest proof any flag write or host callback enqueued on this stream carries. */
    private final AtomicLong maxEnqueuedProof = new AtomicLong();

    private final int limit;
    private final int trackerSpacing;
    private final int halfLimit;
    private final Room room;
    /** Trackers enqueued and not yet landed: at most one per stream (it is never withdrawn, so its landing is a proof). */
    private final AtomicBoolean trackerInFlight = new AtomicBoolean();

    public DirectSubmission(ReactorConfig config, StreamBackend backend, DeviceFaults faultOwner, Reactor reactor,
            Object named) {
        super(config, backend, faultOwner, reactor, named, false);
        this.limit = config.admissionLimit();
        this.trackerSpacing = Math.max(1, limit / 4);
        this.halfLimit = Math.max(1, limit / 2);
        this.room = new Room(limit);
    }

    // ---- submission -----------------------------------------------------------------------------

    /**
     * Makes {@code op}'s driver call on this thread, within admission: takes a permit (may park), calls
     * ({@link StreamOp#call()}, which re-checks the stream, since a close or fault lets parked callers
     * through, and throws what the caller gets), counts the entry once the call returned and makes sure
     * a proof is on its way; a call that threw gives its permit back. {@code op} is finished either way.
     */
    @Override
    public boolean submit(StreamOp op) {
        boolean called = false;
        long waited = -1L;
        try {
            waited = admit();
            op.call();
            called = true;
            submissions.incrementAndGet(); // after the driver call returned (class comment, counts)
            afterSubmission();
        } finally {
            try {
                if (!called && waited >= 0) {
                    admissionUnused();
                }
            } finally {
                op.finish(called);
            }
        }
        return true;
    }

    @Override
    public long submissionCount() {
        return submissions.get();
    }

    @Override
    public long required() {
        return submissionCount();
    }

    @Override
    public void noteExternalSubmission() {
        admit();
        submissions.incrementAndGet();
        afterSubmission();
    }

    @Override
    public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
        return backend.enqueueFlagWrite(memory, slot);
    }

    @Override
    public boolean enqueueHostCallback(Runnable callback) {
        return backend.enqueueHostCallback(callback);
    }

    @Override
    void shutDown() {
        openGate(); // closed: let submitters parked for room through, to find out
        StreamDrain.shutDown(this, backend::shutdown); // what it throws is logged: close() never throws
    }

    // ---- admission ----------------------------------------------------------------------------

    /**
     * Takes a permit for one entry, parking (FIFO, uninterruptibly: the interrupt status is kept)
     * while the stream has {@link ReactorConfig#admissionLimit()} entries in flight; a caller that
     * may not park ({@link #mayParkForAdmission}) takes it on credit. Returns the nanoseconds waited
     * (0 without waiting), or -1 if no permit was taken because the gate is open: then there is
     * nothing to give back.
     */
    long admit() {
        if (gateOpen()) {
            return -1L;
        }
        if (!room.hasQueuedThreads() && room.tryAcquire()) {
            return 0L;
        }
        if (!mayParkForAdmission()) {
            // A thread the stream's completions depend on (the scanner, a stream's own worker) must
            // not park: it takes the permit on credit (the count may go below 0), returned as usual.
            room.takeOnCredit();
            ensureProgress();
            return 0L;
        }
        long start = System.nanoTime();
        ensureProgress();
        room.acquireUninterruptibly();
        if (gateOpen()) {
            room.release(); // woken by the gate: the caller re-checks the stream and throws
            return -1L;
        }
        long waited = Math.max(1L, System.nanoTime() - start);
        reactor.countAdmissionWait(waited);
        return waited;
    }

    /** Whether the calling thread may park for admission: not one the stream's completions depend on. */
    private boolean mayParkForAdmission() {
        return !isOwnWorkerThread() && !FallbackRegistration.onHostCallback()
                && Thread.currentThread() != reactor.scannerThread();
    }

    /** Gives back the permit of an entry that was admitted but never enqueued (so never counted). */
    void admissionUnused() {
        if (!gateOpen()) {
            room.release();
        }
    }

    /** After an entry was counted: once half the room is taken, make sure a proof is on its way (class comment). */
    private void afterSubmission() {
        if (!gateOpen() && room.availablePermits() < halfLimit) {
            ensureProgress();
        }
    }

    /**
     * Enqueues a tracker unless one is in flight, when the stream is full, or when more than a
     * quarter of the limit is counted behind the newest flag write (class comment). Each count read
     * here only grows, so a stale read errs towards one more tracker, never towards none.
     */
    private void ensureProgress() {
        long proven = completedThrough();
        long counted = submissions.get();
        if (counted <= proven || trackerInFlight.get() || commit.pending() > 0) {
            return; // nothing unproven, or a proof is on its way (a tracker, or a shared write: see groupDelivered)
        }
        long covered = Math.max(proven, maxEnqueuedProof.get());
        if (room.availablePermits() > 0 && counted - covered < trackerSpacing) {
            return; // room left, and a pending flag write covers most of what is in flight
        }
        if (trackerInFlight.compareAndSet(false, true)) { // the one tracker of this stream
            track(); // clears the mark when it lands or fails
        }
    }

    /**
     * Enqueues a tracker on the stream: a flag write (or host callback) that nobody waits for, whose
     * landing proves the work ahead of it complete and so returns its admission permits (the
     * liveness rule). Best effort: a closed reactor or a faulted stream opens the gate instead, so a
     * failure here is dropped.
     */
    private void track() {
        if (FallbackRegistration.onHostCallback() || isOwnWorkerThread()) {
            // CUDA forbids driver calls there (a tracker landing, or a group delivered, on a host callback)
            reactor.callbackExecutor().execute(this::track);
            return;
        }
        long proof = submissions.get(); // before the enqueue: everything counted is ahead of it
        Completion tracker = (ticket, failure) -> {
            if (failure == null) {
                completedThrough(proof);
                trackerLanded();
            } else {
                trackerFailed();
            }
        };
        try {
            reactor.track(this, tracker); // the registrar records the enqueued proof, after the enqueue (enqueuedProof)
        } catch (RuntimeException dropped) {
            trackerFailed(); // closed or faulted: openGate lets the parked submitters through
        }
    }

    /**
     * The tracker landed (its proof already recorded): if the stream is still full, the next proof
     * must be made now, since only the tracker in flight stopped the others from making it.
     */
    private void trackerLanded() {
        trackerInFlight.set(false);
        if (!gateOpen() && room.availablePermits() <= 0) {
            ensureProgress();
        }
    }

    /**
     * A shared flag write was delivered (or failed) and armed no next one: it was a proof on its
     * way that let {@link #ensureProgress} make no tracker, so the rule is applied again now, as
     * after a submission. A submitter that saw it pending parked only after that read, and this
     * check follows the delivery's release of permits and its return of the reservation, so the
     * submitter either finds the permits released or the next proof made here.
     */
    @Override
    void groupDelivered() {
        afterSubmission(); // the same rule
    }

    /** The tracker could not be enqueued or failed (a close or a fault, which open the gate): no retry. */
    private void trackerFailed() {
        trackerInFlight.set(false);
    }

    /** Permits free now (for tests and stats). */
    int freePermits() {
        return gateOpen() ? limit : room.availablePermits();
    }

    @Override
    void gateOpened() {
        room.release(MAX_RELEASE);
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

    /**
     * Records a proof that the first {@code count} counted entries are complete; releases the
     * permits of the entries it newly covers. Only the compare-and-set that raised the value
     * releases, so each entry's permit comes back once.
     */
    @Override
    void proven(long count) {
        long seen;
        while ((seen = completedThrough()) < count) {
            if (compareAndSetProof(seen, count)) {
                if (!gateOpen()) {
                    room.release((int) Math.min(count - seen, MAX_RELEASE));
                }
                return;
            }
        }
    }

    /** A flag write or host callback carrying {@code proof} was enqueued on the stream. */
    @Override
    void enqueuedProof(long proof) {
        long seen;
        while ((seen = maxEnqueuedProof.get()) < proof) {
            if (maxEnqueuedProof.compareAndSet(seen, proof)) {
                return;
            }
        }
    }
}
