package io.cudaloom.reactor;

import io.cudaloom.ReactorConfig;
import io.cudaloom.protocol.DrainerPermits;
import io.cudaloom.protocol.GroupCommit;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamOp;
import io.cudaloom.spi.StreamState;
import io.cudaloom.spi.StreamSubmission;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The reactor's own object for one stream: the one owner of everything the reactor keeps per
 * stream. One per {@link io.cudaloom.GpuStream}, made with it (by the facade, {@code CompletionReactor}), for the stream's whole life; the
 * public stream keeps only its API and hands every call to it, the reactor's parts name it (never
 * the public stream), and the backend's stream hands it its work ({@link StreamSubmission}) and
 * implements {@link StreamBackend}, which this object holds and calls directly. It holds:
 * <ul>
 *   <li>the <b>submission</b>: how work reaches the driver and is counted, chosen once, at the
 *       stream's construction, from the device's configuration ({@link ReactorConfig#submission()}),
 *       as one of two subclasses: {@link DirectSubmission} (the caller makes the driver call itself,
 *       within the admission bound, a fair {@code Semaphore} that parks it while the stream is full)
 *       or {@link CombinedSubmission} (every entry is appended to the stream's submission queue and
 *       one drainer submits it while the stream has room; nobody parks);
 *   <li>the <b>completion proof</b> ({@link #completedThrough()}), raised by whatever learns that a
 *       flag write, host callback, query or synchronize proved work complete;
 *   <li>the <b>group commit</b> ({@link #commit}, {@link #lastGroup}: the shared flag writes of
 *       coalesced waiters, see {@link CoalescedWait});
 *   <li>the <b>wait average</b> ({@link #recentWaitNanos}), the spin budget's guide;
 *   <li>the <b>fault state</b> ({@link #faults()}: the stream's record with the device's fault owner)
 *       and the <b>gate</b> ({@link #openGate}), opened once when the stream can take nothing any more;
 *   <li>the <b>close</b>: the drain that serves the events taken before it ({@link #drain()}).
 * </ul>
 *
 * <p>Why one abstract class with two subclasses, not one class holding a strategy: the mode never
 * changes for a stream's life, each mode has state the other has none of (the admission semaphore
 * and its trackers; the queue, its drainer and its room), and the hot paths call
 * {@link #submissionCount()}, {@link #proven} and the flag write on it: a subclass's
 * override is one monomorphic call where the stream's mode is the only one the JVM sees, where a
 * strategy object would add a hop and a field of every shared piece to each. What the two share
 * (the proof, the group commit, the wait average, the gate, the close, the backend) is here, once.
 *
 * <h2>Counts and proofs</h2>
 * A flag write or host callback enqueued after reading the count {@code c} ({@link #submissionCount()},
 * each mode says how it counts) is a <em>proof</em>: when it lands, at least {@code c} counted entries
 * are complete. {@link #completedThrough()} is the highest proof seen (a compare-and-set to the
 * maximum, {@link #raiseProof}, {@link #compareAndSetProof}); it is raised by whatever learns that a write landed, from the payload
 * that carries the count (never from per-slot state, which the next registration of a recycled slot
 * may already have overwritten): a shared group's delivery (its covered count), a tracker's landing, a
 * host callback, a closed stream's drain, an idle query, a {@code cuStreamSynchronize} that returned,
 * and a normal return from await. A withdrawn registration proves nothing (its payload is gone); a
 * later proof covers its work too. Each mode's {@link #proven} (behind {@link #completedThrough(long)}) raises it and then
 * gives back the room the newly proven entries held.
 *
 * <h2>Shared flag writes (group commit)</h2>
 * With coalescing (the default), a blocking waiter joins a {@link Waiter.Group} whose flag write
 * covers its work instead of arming its own. {@link #lastGroup} is the newest group whose write is
 * enqueued; {@link #commit} holds the open group (not yet armed, which any waiter may join, because
 * it will read the count only when it is armed) and the count of armed groups not yet delivered.
 * While fewer than {@code flagWritesInFlight} are pending a new group is armed at once (a lone
 * waiter's latency is unchanged); otherwise waiters gather in the open group, which is armed when a
 * pending one is delivered: under load one flag write serves every waiter that arrived while the
 * previous one was in flight, as one fsync serves a database's group commit. See
 * {@link CoalescedWait} for the orderings.
 *
 * <h2>The gate</h2>
 * A stream that closes or faults, or whose device closes, will never see its room come back:
 * {@link #openGate} marks it (a volatile write, once) and then lets each mode release whoever waits
 * for room ({@link #gateOpened}): the direct mode's parked submitters, which then re-check the stream
 * and throw the same exception as a submission that came after the close or fault; the combining
 * mode's queued entries, which the drainer then discards.
 *
 * <h2>The close</h2>
 * {@link #drain} is null while the stream is open; set once, by {@link #close}, with a
 * compare-and-set from null: the closed flag and the drain that serves the events taken before the
 * close, published together (StreamDrain's ordering 1). Read with volatile loads.
 */
public abstract class ReactorStream implements StreamSubmission, DeviceFaults.Stream, StreamDrain.Stream {
    /**
     * What a stream needs of its device's reactor (the facade implements it, once per reactor): the
     * trackers, the registration of a close's drain, whether the reactor is closed, and where work
     * goes that a thread may not do itself.
     */
    public interface Reactor {
        /**
         * Arms {@code tracker} on the stream: a registration nobody waits for, whose flag write (or host
         * callback) the stream enqueues as any other (the combining drainer's goes to the driver
         * directly), counted as a tracker. Throws what the registration throws.
         */
        void track(ReactorStream stream, Completion tracker);

        /** Registers {@code onDone} for the stream's work so far (the close's drain). */
        Registration register(ReactorStream stream, Consumer<@Nullable RuntimeException> onDone);

        boolean isClosed();

        /** Where work goes from a thread that must not make it (a host callback, the stream's own worker). */
        Executor callbackExecutor();

        /** The reactor's scanner: a thread that must never park for room. */
        Thread scannerThread();

        /** A direct submitter parked {@code nanos} for room. */
        void countAdmissionWait(long nanos);

        String deviceName();

        /**
         * The device-wide cap on threads draining its streams at once (combining), or null for none
         * ({@link io.cudaloom.ReactorConfig#drainers()}).
         */
        default @Nullable DrainerPermits drainerPermits() {
            return null;
        }
    }

    private static final VarHandle DRAIN;

    static {
        try {
            DRAIN = MethodHandles.lookup().findVarHandle(ReactorStream.class, "drain", StreamDrain.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The backend's stream: what the reactor asks of the driver. */
    final StreamBackend backend;
    final Reactor reactor;
    /** The public stream, for its name only ({@link #toString()}): this part calls nothing on it. */
    private final Object named;
    /** This stream's fault, kept by the device's fault owner (the backend's {@link io.cudaloom.spi.FaultSink}). */
    private final DeviceFaults.Sink faults;
    /** The highest proof seen (see the class comment); raised only by {@link #raiseProof}. */
    private final AtomicLong completedThrough = new AtomicLong();
    /** Set once by {@link #openGate}: the stream can take nothing any more. */
    private volatile boolean gateOpen;
    /** The close's drain; null while open (the class comment, the close). */
    private volatile @Nullable StreamDrain drain;

    /** Who arms the next shared write: the pending count and the open group (GroupCommit's orderings). */
    final GroupCommit<Waiter.Group> commit;
    /** The newest armed group; racy by design: any armed group that covers a waiter will do. */
    volatile Waiter.@Nullable Group lastGroup;
    /** Recent awaits' durations (an exponential moving average, racy by design): the spin budget's guide. */
    private volatile long recentWaitNanos;
    /**
     * Whether the proof alone measures the room, so that a group's delivery may raise it before the
     * wake-ups and leave the rest of the settle to the group's founder ({@link GroupDelivery}):
     * combining, whose room is {@code drained - proof}. Not direct, whose room comes back as permits
     * released by the compare-and-set that raises the proof ({@link DirectSubmission#proven}): a raise
     * made apart from that would leave them unreleased.
     */
    final boolean roomIsTheProof;

    @SuppressWarnings("this-escape") // the fault owner's sink only keeps the reference
    ReactorStream(ReactorConfig config, StreamBackend backend, DeviceFaults faultOwner, Reactor reactor, Object named,
            boolean roomIsTheProof) {
        this.roomIsTheProof = roomIsTheProof;
        this.backend = backend;
        this.reactor = reactor;
        this.named = named;
        this.commit = new GroupCommit<>(config.flagWritesInFlight());
        this.faults = faultOwner.sink(this);
    }

    // ---- submission: each mode's ------------------------------------------------------------------

    /**
     * Submissions so far ({@link io.cudaloom.GpuStream#submissionCount()}): direct, the work entries counted after
     * their driver call returned; combining, the queue positions appended (or, on the drainer's thread
     * while it arms its own tracker, the positions submitted).
     */
    @Override
    public abstract long submissionCount();

    /** What an await, event or memory close made now requires: every work entry submitted so far. */
    public abstract long required();

    /**
     * One submission made on the raw stream outside the library ({@link io.cudaloom.GpuStream#noteExternalSubmission()}):
     * direct, takes its room (may park) and counts it; combining, appends one position.
     */
    public abstract void noteExternalSubmission();

    /**
     * Records a proof that the first {@code count} counted submissions are complete, then gives back
     * their room ({@link #proven}). A proof already known returns here: whoever raised the proof
     * this far gave back that room and drained after its raise (each mode's ordering), and room
     * changes only with the proof, so this call would find nothing new. A woken waiter's return,
     * the common case, stops here. Not a landing that a stalled drainer relied on to check its room
     * again (combining's tracker): that calls {@link #proven} itself, since the drainer may have
     * stalled after that raise's drain.
     */
    @Override
    public final void completedThrough(long count) {
        if (isKnownComplete(count)) {
            return;
        }
        proven(count);
    }

    /**
     * A proof of {@code count} beyond the one read known ({@link #completedThrough(long)}): each mode
     * raises the proof to it and gives back the room of the entries its raise newly covers.
     */
    abstract void proven(long count);

    /** A flag write or host callback carrying {@code proof} was enqueued on the stream (direct's tracker spacing). */
    void enqueuedProof(long proof) {}

    /** A shared flag write was delivered (or failed) and armed no next one (direct's liveness rule). */
    void groupDelivered() {}

    /** The gate opened ({@link #openGate}): release whoever waits for room. */
    abstract void gateOpened();

    /**
     * Whether some entry counted before this call is not yet in the driver's queue, read before the
     * backend is asked whether the stream is idle (combining: see {@link CombinedSubmission}).
     */
    boolean hasUnsubmitted() {
        return false;
    }

    @Override
    public void flush() {}

    /**
     * For tests: {appended, submitted, queued, trackers, drains handed to the callback executor} of a
     * combining stream, null for a direct one.
     */
    public long @Nullable [] probe() {
        return null;
    }

    // ---- the proof ------------------------------------------------------------------------------

    public final long completedThrough() {
        return completedThrough.get();
    }

    /**
     * Raises the proof to {@code count}: a compare-and-set to the maximum, so it never moves back and
     * concurrent proofs keep the highest.
     */
    final void raiseProof(long count) {
        long seen;
        while ((seen = completedThrough.get()) < count) {
            if (completedThrough.compareAndSet(seen, count)) {
                return;
            }
        }
    }

    /**
     * One step of a raise to the maximum, for a mode that gives back room as it raises: only the
     * compare-and-set that raised the value from {@code seen} counts the entries it newly covers, so
     * each entry's room comes back once.
     */
    final boolean compareAndSetProof(long seen, long count) {
        return completedThrough.compareAndSet(seen, count);
    }

    /** Whether the first {@code required} counted submissions are proven complete (no driver call). */
    public final boolean isKnownComplete(long required) {
        return completedThrough.get() >= required;
    }

    /**
     * True if counted work was submitted after the last proof of completion, so the stream is
     * probably busy and a waiter may register without asking the driver first (registering on an
     * idle stream is correct too: its flag write lands at once).
     */
    public final boolean hasWorkNotKnownComplete() {
        return submissionCount() > completedThrough.get(); // combining: positions, so an idle query proves the trailing flag write too
    }

    // ---- the wait average -------------------------------------------------------------------------

    final long recentWaitNanos() {
        return recentWaitNanos;
    }

    /** Folds one await's duration into the average (weight 1/4); lost updates are harmless. */
    final void recordWait(long nanos) {
        long old = recentWaitNanos;
        recentWaitNanos = old + ((nanos - old) >> 2);
    }

    // ---- the gate and the faults ----------------------------------------------------------------

    /**
     * The stream closed or faulted, or its device closed: no room will come back, so whoever waits for
     * it is let through to find out (class comment). Idempotent.
     */
    @Override
    public final void openGate() {
        if (!gateOpen) {
            gateOpen = true; // volatile: a submitter that finds room after this sees it
            gateOpened();
        }
    }

    /** Whether the gate is open: the stream closed or faulted, or its device closed. */
    public final boolean gateOpen() {
        return gateOpen;
    }

    @Override
    public final DeviceFaults.Sink faults() {
        return faults;
    }

    /**
     * The stream's state: FAULTED at once, with no driver call, once a fault is recorded; else the
     * backend's answer. A FAULTED answer is always recorded by the time it is returned (a backend
     * reports first; one that did not gets {@link DeviceFaults#UNREPORTED}), so that whoever sees it
     * can build the exception ({@link DeviceFaults.Sink#neverCompletes}). An idle answer proves only
     * what was in the driver's queue before the query: it is BUSY while an entry counted before it is
     * not ({@link #hasUnsubmitted()}, read first).
     */
    @Override
    public final StreamState queryState() {
        if (faults.hasFaulted()) {
            return StreamState.FAULTED;
        }
        boolean unsubmitted = hasUnsubmitted();
        StreamState state = backend.queryState();
        if (state == StreamState.FAULTED) {
            faults.answeredFaulted();
        }
        if (state == StreamState.IDLE && unsubmitted) {
            return StreamState.BUSY;
        }
        return state;
    }

    // ---- the reactor's flag writes and callbacks: each mode's -------------------------------------

    /** Enqueues, behind the stream's work, a device write of 1 into {@code slot}; false if refused. */
    public abstract boolean enqueueFlagWrite(FlagMemory memory, int slot);

    /** Enqueues {@code callback} to run once the stream's prior work is done; false if refused. */
    public abstract boolean enqueueHostCallback(Runnable callback);

    // ---- the backend, asked directly --------------------------------------------------------------

    @Override
    public final boolean flagWritesSettled() {
        return backend.flagWritesSettled();
    }

    @Override
    public final void drained() {
        backend.drained();
    }

    /** Whether the calling thread is the one that runs this stream's own work (a simulated kernel). */
    public final boolean isOwnWorkerThread() {
        return backend.runsOnCurrentThread();
    }

    // ---- the reactor ------------------------------------------------------------------------------

    @Override
    public final Registration registerCompletion(Consumer<@Nullable RuntimeException> onDone) {
        return reactor.register(this, onDone);
    }

    @Override
    public final String deviceName() {
        return reactor.deviceName();
    }

    // ---- the close ----------------------------------------------------------------------------------

    public final boolean isClosed() {
        return drain != null;
    }

    /** The drain that serves this stream's events once it is closed; null while it is open. */
    public final @Nullable StreamDrain drain() {
        return drain;
    }

    /**
     * The stream's close ({@link io.cudaloom.GpuStream#close()}): registers the drain while the backend still takes
     * flag writes, publishes it (the compare-and-set that closes the stream), then has the backend shut
     * down behind everything submitted before it and opens the gate. Returns the published drain, on
     * which the caller calls {@link StreamDrain#published()} once it is done with the close; null if
     * the stream was closed already (by this call's racing twin, which serves the events). Never throws.
     */
    public final @Nullable StreamDrain close() {
        if (drain != null) {
            return null;
        }
        StreamDrain d = StreamDrain.register(this);
        if (!DRAIN.compareAndSet(this, null, d)) {
            // A concurrent close won and serves the events; this registration completes unobserved
            // (or was refused, if the winner's backend had stopped taking flag writes): nothing leaks.
            return null;
        }
        shutDown();
        return d;
    }

    /** The backend's shutdown after the close's compare-and-set, and the gate: each mode's order. */
    abstract void shutDown();

    @Override
    public final String toString() {
        return String.valueOf(named);
    }

    // ---- the group commit's delivery ------------------------------------------------------------

    /** Who arms a group that a delivery took from open ({@link CoalescedWait}, the coalescing wait's arming). */
    interface NextGroup {
        /**
         * Arms {@code taken}, for which the delivery took a reservation (GroupCommit.delivered returned
         * the delivered group's, then took one for the open group); on any thread a completion runs on.
         */
        void armNext(ReactorStream stream, Waiter.Group taken);
    }

    /**
     * The payload of a group's shared flag write (its slot's, or the host callback's that serves it):
     * the stream's, since what a landed write changes is the stream's (the proof, the room, the
     * group commit's reservation), then the members' wake-ups. The delivery ({@link #complete}, on
     * the scanner, or on whatever thread a completion runs on) does only what the members need
     * before they wake, and hands the rest, the <em>settle</em> ({@link #run}), to the group's
     * founder, whose own thread runs it once woken, before its await returns ({@link Waiter}'s class
     * comment, item 5: its orderings, its jcstress test and broken twin); if the group has no founder
     * or the founder withdrew, the delivery runs it itself. So the scanner only scans, raises the
     * proof and wakes, and the drain the settle may make (the entries that waited for room, the next
     * group's flag write) runs on a thread that may call the driver, not on the callback executor.
     * In this order:
     * <ol>
     *   <li>the write landed: where the proof alone is the room ({@link #roomIsTheProof}, combining),
     *       the delivery raises the proof to what the group covers ({@link #raiseProof}) before the
     *       wake-ups, so that a woken member, who may submit again, finds that room, and its await's
     *       own proof check returns at once;
     *   <li>the members are delivered ({@link Waiter.Group#deliver}), the founder first, handed the
     *       settle;
     *   <li>the settle (with combining, this step last: {@link #run}): the proof raised through the
     *       mode ({@link #proven}, never the shortcut of
     *       {@link #completedThrough(long)}, which would return since step 1 raised it: combining's
     *       room hand-over reads the queue after the raise, and a drainer that found no room may
     *       rely on this landing to drain, SubmissionRoom's ordering), which gives back the room
     *       (direct: its permits) and drains what waits for it;
     *   <li>the reservation is returned and the open group, if any, taken for arming
     *       ({@link io.cudaloom.protocol.GroupCommit#delivered}, GroupCommit's ordering 2: the return
     *       before the look for an open group), also when the write failed, so that a waiter
     *       arriving later is never left behind a reservation nobody returns;
     *   <li>the group taken is armed ({@link NextGroup#armNext}), or, if none was open, the direct
     *       mode's progress rule applied once more ({@link #groupDelivered}).
     * </ol>
     * A woken member that submits again before the founder's settle returned the reservation finds it
     * held and gathers in the open group, which the settle then takes and arms at once (step 4): it
     * waits for the founder's settle, not for the next write to land.
     */
    static final class GroupDelivery implements Completion, Runnable {
        private final ReactorStream stream;
        private final Waiter.Group group;
        private final NextGroup next;
        /** The slot's ticket, or why a host callback serves it (CoalescedWait.armFresh); written and read by the arming thread. */
        long ticket;
        /**
         * The delivery's failure, for the settle: written by {@link #complete} before the founder's
         * delivering compare-and-set (read by the founder after its ticket read), or read by the
         * delivering thread itself.
         */
        private @Nullable RuntimeException failure;

        GroupDelivery(ReactorStream stream, Waiter.Group group, NextGroup next) {
            this.stream = stream;
            this.group = group;
            this.next = next;
        }

        @Override
        public void complete(long ticket, @Nullable RuntimeException failure) {
            this.failure = failure;
            if (failure == null && stream.roomIsTheProof) {
                stream.raiseProof(group.coveredCount()); // step 1 (a compare-and-set loop: throws nothing)
            }
            boolean handed = false;
            try {
                handed = group.deliver(failure, this); // step 2
            } finally {
                if (!handed) {
                    run(); // no founder to take it, or it withdrew
                }
            }
        }

        /**
         * The settle, steps 3 to 5: on the founder's thread, or the delivering thread's (class
         * comment). Where the proof alone is the room (combining), step 3 comes last: the next group's
         * flag write is appended first, so that it takes its queue position before whatever others
         * append while this thread drains the entries that waited for room (a drain submits in
         * position order: the write then lands right behind the work it covers, not behind that
         * drain's newcomers too); the drain of step 3 reads the queue after the raise all the same.
         * Direct: step 3 first, its permits back before the next write is armed.
         */
        @Override
        public void run() {
            long covered = group.coveredCount();
            boolean drainLast = stream.roomIsTheProof;
            Waiter.Group taken;
            try {
                if (failure == null && !drainLast) {
                    stream.proven(covered); // step 3 (direct)
                }
            } finally {
                taken = stream.commit.delivered(Waiter.Group::startArming); // step 4
            }
            try {
                if (taken != null) {
                    next.armNext(stream, taken); // step 5
                } else {
                    stream.groupDelivered();
                }
            } finally {
                if (failure == null && drainLast) {
                    stream.proven(covered); // step 3 (combining): the room hand-over's read of the queue
                }
            }
        }
    }
}
