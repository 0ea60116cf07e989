package io.cudaloom.reactor;

import io.cudaloom.ReactorConfig;
import io.cudaloom.spi.StreamOp;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.protocol.DrainHandOff;
import io.cudaloom.protocol.DrainerPermits;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.protocol.SubmissionQueue;
import io.cudaloom.protocol.SubmissionRoom;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;
import org.jspecify.annotations.Nullable;

/**
 * Submission by combining for one stream ({@link io.cudaloom.Submission#COMBINING}, issue #37): every entry of
 * the stream (work, the reactor's flag writes and host callbacks) is an {@link StreamOp} appended to
 * the stream's {@link SubmissionQueue}; the thread that wins the queue's drain submits everything
 * queued, in position order, while the stream has room; everyone else returns at once.
 *
 * <h2>One coordinate</h2>
 * The stream's {@link io.cudaloom.GpuStream#submissionCount()} is the queue's {@link SubmissionQueue#appended()}:
 * every entry takes one position. A requirement (an await's, an event's, a memory close's) is
 * {@link #workThrough()} read after the caller's last append: the position after the last work
 * entry, raised (a compare-and-set to the maximum) by each work append before it returns, so it
 * covers the caller's work and is not raised by the reactor's own entries behind it; a flag write or host callback reads the count before its own append (Registrar,
 * CoalescedWait, StreamDrain do), so its proof {@code c} is at most its position {@code p}, and the
 * drainer submits {@code p} only after every lower position: when it lands, the first {@code c}
 * positions are complete (sound). {@link #submitted} counts the positions whose driver call has
 * returned (or that were discarded), written only by the drainer, after the call: an idle answer of
 * the stream ({@code cuStreamQuery}) proves only what was submitted before it, so
 * {@code ReactorStream.queryState()} ({@link #hasUnsubmitted}) reads {@code appended()}, then {@link #submitted}, then asks the
 * backend, and answers BUSY, not IDLE, unless every position appended before the read was
 * submitted: every caller reads its count before the query, so an IDLE answer covers it.
 *
 * <h2>Room, without parking</h2>
 * {@link SubmissionRoom#hasRoom}: a work entry goes to the driver only while {@code drained - completedThrough <
 * admissionLimit}; a flag write or host callback while {@code drained - completedThrough <}
 * {@code entryLimit} (896 by default, below the driver's ~1,000-entry stream queue and the simulated
 * device's 1,024), so the driver's queue never fills and nobody spins in it. An entry without room
 * waits in the queue (in Java), never its caller. Every raise of the proof (the scanner's delivery,
 * a woken waiter's normal return, a host callback, an idle query, a synchronize) goes through
 * {@link #completedThrough(long)}, which raises it, then drains if entries are queued.
 *
 * <p><b>Ordering of the hand-over (no entry stranded when room comes back)</b>: the proof is
 * raised, then the queue read ({@link SubmissionRoom#proofRaised}); the drainer claims its position,
 * then reads the proof ({@link SubmissionRoom#hasRoom}); see {@link SubmissionRoom} for why that
 * suffices, and its jcstress test and broken twin.
 *
 * <h2>Progress while full (liveness)</h2>
 * A drainer that stops for want of room ({@link #stalled}) makes sure a proof is on its way: unless
 * one of its trackers is in flight, it submits one <em>directly</em> (it holds the stream exclusively, so
 * the flag write goes behind everything drained, with the proof {@link #submitted}, which exceeds
 * {@code completedThrough} since the stream is full); it must not queue behind the entry that waits
 * for room (it would never reach the driver). Argument: an entry waits for room only after a pass
 * of the drainer found none and ran {@code stalled()}; then at least one tracker is in flight. Each
 * landing takes itself off {@link #trackersInFlight} and then raises the proof (at least to its
 * own), and so calls {@link #completedThrough}, which drains: the drainer's next pass finds the
 * room, or finds none; then either another tracker is still in flight (its landing drains again)
 * or none is, and the pass makes the next (covering everything drained). A fault or the device's close ends the stream: then every queued entry is
 * discarded (its lifetimes exited), and the awaits covering them fail through the fault path.
 *
 * <h2>Proofs while the room is full (pacing)</h2>
 * Under load the reactor's flag writes (a waiter's own, or a group commit's) are appended behind
 * work that waits for room, so they reach the driver only after that work. The drainer therefore
 * places a tracker itself after every quarter of the work limit it submits with no flag write or
 * host callback behind it ({@link #paceProofs}): room comes back a quarter at a time while the
 * driver still has the rest queued. (With one tracker at a time the next would go behind
 * everything drained whenever the previous landed, and the queue would run empty again.) A tracker
 * takes no position and no room; at most about five are in flight (one per quarter of the work
 * limit, and the stalled pass's), which the driver's queue has headroom for above the entry limit.
 *
 * <h2>Registrations never wait</h2>
 * Flag writes and host callbacks are appended and answered at once: refused only if the stream is
 * closed or faulted at the append. The queue's one wait (a ring slot, SubmissionQueue's ordering 4)
 * is kept for work: a work entry is not appended while {@value #RING} / 2 entries are queued
 * ({@link #awaitWorkBound}: only a producer that launches that far ahead of the driver's room
 * without awaiting gets there, and it waits there, only there), so the other half of the ring is
 * the reactor's reserve: a registration meets the ring's bound only behind 32,768 queued
 * registrations.
 *
 * <h2>Memory</h2>
 * An entry holds the memory lifetimes its caller entered at the call until the drainer has made its
 * driver call (or discarded it): {@link StreamOp#finish} exits them, so a close of the memory waits
 * for queued work (stream-ordered frees, {@code MemoryLifetime}), and no memory is freed under it.
 * The CUDA entries make their call inside the stream handle's guard, so none runs on a handle
 * another thread has destroyed (an entry the guard refuses is dropped, as work that raced the
 * close).
 *
 * <h2>Writes and reads that publish</h2>
 * The entry itself: its caller's release store into the ring, the drainer's acquire load
 * (SubmissionQueue ordering 1-2), so everything the caller wrote before the append (the entry's
 * packed arguments, its entered lifetimes) is visible to the drainer. {@link #submitted}: a volatile
 * increment after each driver call returned, read by the idle query's guard before it asks the
 * backend. {@link #trackersInFlight}: incremented by the drainer before it arms a tracker and
 * decremented (atomically) by the tracker's landing before that raises the proof; the landing's
 * drain request (an increment of the queue's drain counter) follows, so a drainer still in its
 * pass goes round again and reads the decremented count. {@link #direct}: a plain field written and read by the drainer's
 * own thread (others read some other thread or null, never themselves).
 *
 * <h2>Threads that do not drain</h2>
 * A host callback and the stream's own worker never drain (CUDA forbids driver calls on a host
 * callback), and neither does the reactor's scanner: its deliveries raise the proofs of every
 * stream, so if it drained it would become the one submitting thread of the whole device, and the
 * waiters it is to wake would wait behind its driver calls (on an H100 that capped combining at
 * one thread's submission rate: 88 k demo steps/s against direct's 171 k). They
 * {@link SubmissionQueue#enqueue} and hand {@code drain()} to the reactor's callback executor
 * ({@link #drainSafely}), at most one hand-off pending per stream ({@link DrainHandOff}: a request
 * that finds one pending was made before that task's drain, which sees it; its jcstress test and
 * broken twin).
 *
 * <h2>A device-wide cap on drainers (optional)</h2>
 * With {@link io.cudaloom.ReactorConfig#drainers()} set, every drain made by a thread that may call
 * the driver ({@link #drainQueue}) goes through the device's {@link DrainerPermits}: at most that many
 * threads drain the device's streams at once; a thread that finds every permit taken lists its
 * stream and goes on, and a permit's holder drains it (DrainerPermits' ordering, with its jcstress
 * test and broken twin). The stream's own exclusion is unchanged: a holder drains through the same
 * {@link SubmissionQueue#drain}. Without the cap (the default) the caller's append drains in the
 * same call ({@link SubmissionQueue#append}).
 */
public final class CombinedSubmission extends ReactorStream implements SubmissionRoom.Driver<StreamOp> {
    /** The ring's size: half for work ({@link #awaitWorkBound}), half the reactor's reserve. */
    static final int RING = 1 << 16;

    private final SubmissionRoom<StreamOp> room;
    private final SubmissionQueue<StreamOp> queue;
    /** The proof's raise and the drain the hand-over runs, made once (no allocation per proof). */
    private final LongConsumer raise;
    private final Runnable drainSafely = this::drainSafely;
    /** Drains handed to the executor, at most one pending (class comment, threads that do not drain). */
    private final DrainHandOff handOff;
    /** This stream's place in the device-wide cap on drainers ({@link #drainQueue()}), or null for none. */
    private final DrainerPermits.@Nullable Lane lane;
    /** Positions submitted (or discarded): written by the drainer after each driver call returned. */
    private final AtomicLong submitted = new AtomicLong();
    /** Trackers armed and not yet landed or failed: incremented by the drainer, decremented by each landing or failure. */
    private final AtomicInteger trackersInFlight = new AtomicInteger();
    /**
     * The drainer while it submits its tracker: its flag write (or callback) goes to the driver
     * directly, and the stream's {@code submissionCount()} reads {@link #submitted} on that thread
     * then (the registration reads the proof it carries there: a host callback's is its own).
     */
    private @Nullable Thread direct;
    /** The position of the close's shutdown entry; {@code Long.MAX_VALUE} until the close publishes it. */
    private volatile long shutdownAt = Long.MAX_VALUE;
    /** The position after the last work entry appended: what a wait for the work so far requires. */
    private final AtomicLong workThrough = new AtomicLong();
    /** The flag-write entries, made once per slot, in chunks of 1,024 made on first use. */
    private final AtomicReferenceArray<FlagWrite @Nullable []> flagWrites;
    /** Trackers made (for tests and stats). */
    private final AtomicLong trackers = new AtomicLong();
    /** Drains handed to the callback executor (for tests: {@link #probe}). */
    private final AtomicLong handedDrains = new AtomicLong();
    /** Work entries submitted behind the newest proof-bearing entry before a tracker is placed (a quarter of the room). */
    private final int trackerSpacing;
    /**
     * Work entries the drainer submitted since the last entry that brings a proof back (a flag
     * write, a host callback, a tracker): written and read by the drainer only (the queue's drain
     * hands the drainer's role over with a volatile read-modify-write, SubmissionQueue ordering 2,
     * which orders the last drainer's writes before the next one's reads).
     */
    private int workSinceProof;

    public CombinedSubmission(ReactorConfig config, StreamBackend backend, DeviceFaults faultOwner, Reactor reactor,
            Object named) {
        super(config, backend, faultOwner, reactor, named, true);
        int workLimit = config.admissionLimit();
        this.room = new SubmissionRoom<>(RING, workLimit, Math.max(workLimit, ReactorConfig.MAX_ADMISSION_LIMIT),
                this::completedThrough, this);
        this.queue = room.queue();
        DrainerPermits permits = reactor.drainerPermits();
        this.lane = permits == null ? null : permits.lane(queue::drain);
        this.handOff = new DrainHandOff(this::drainQueue);
        this.trackerSpacing = Math.max(1, workLimit / 4);
        this.raise = this::raiseProof;
        this.flagWrites = new AtomicReferenceArray<>(
                (config.capacity() + (1 << FLAG_WRITE_CHUNK_BITS) - 1) >>> FLAG_WRITE_CHUNK_BITS);
    }

    // ---- the stream's submission (ReactorStream) --------------------------------------------------

    /** Appends {@code op} ({@link #append}): the backend's one path of work. */
    @Override
    public boolean submit(StreamOp op) {
        return append(op);
    }

    /**
     * The queue position: every position appended. The drainer arming its direct tracker reads the
     * proof its write carries: what it submitted.
     */
    @Override
    public long submissionCount() {
        return isDirect() ? submitted() : appended();
    }

    /** The position after the last work entry appended ({@link #workThrough()}). */
    @Override
    public long required() {
        return workThrough();
    }

    /** One position, behind the raw work enqueued before the call; no driver call, never parks. */
    @Override
    public void noteExternalSubmission() {
        append(EXTERNAL);
    }

    /**
     * An idle answer proves only what was submitted before the query: the count is read before this
     * ({@code appended}, then {@link #submitted}), so IDLE is answered only if every position appended
     * before these reads was submitted (one coordinate, class comment).
     */
    @Override
    boolean hasUnsubmitted() {
        long appended = appended();
        return submitted.get() < appended;
    }

    @Override
    public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
        if (isDirect()) {
            return backend.enqueueFlagWrite(memory, slot);
        }
        if (isClosed() || faults().hasFaulted()) {
            return false; // refused at the append only
        }
        return append(flagWrite(memory, slot)); // false: it raced the close and came after it
    }

    @Override
    public boolean enqueueHostCallback(Runnable callback) {
        if (isDirect()) {
            return backend.enqueueHostCallback(callback);
        }
        if (isClosed() || faults().hasFaulted()) {
            return false;
        }
        return append(hostCallback(callback));
    }

    /**
     * Behind every entry appended before the close (the drain's flag write among them); a call racing
     * the close finds itself behind it and is refused ({@link #appendShutdown}).
     */
    @Override
    void shutDown() {
        appendShutdown(() -> StreamDrain.shutDown(this, backend::shutdown));
        openGate();
    }

    @Override
    public long[] probe() {
        return new long[] {appended(), submitted(), queued(), trackers(), handedDrains.get()};
    }

    // ---- callers ------------------------------------------------------------------------------

    /**
     * Appends {@code op} (its checks done, its lifetimes entered) and returns; drains if nobody else
     * does. Returns false if the entry came after the close's shutdown: it is then discarded by the
     * drainer ({@link StreamOp#finish}{@code (false)}, no driver call), and the caller reports the
     * stream closed, as a call after the close (see {@link #appendShutdown} for the ordering).
     */
    public boolean append(StreamOp op) {
        if (op.isWork() && queue.queued() >= RING / 2) {
            awaitWorkBound();
        }
        long p;
        if (drainsElsewhere()) {
            p = queue.enqueue(op);
            drainSafely();
        } else if (lane != null) {
            p = queue.enqueue(op);
            lane.drain();
        } else {
            p = queue.append(op); // the append and its drain in one call
        }
        if (op.isWork()) { // counted even behind the shutdown: an event taken then is beyond the close's drain
            long seen;
            while ((seen = workThrough.get()) <= p && !workThrough.compareAndSet(seen, p + 1)) {
                // raced another work append of this stream: retry to the maximum
            }
        }
        return !(isClosed() && p > shutdownPosition()); // false: behind the shutdown, discarded
    }

    /**
     * The close's last entry (the backend's shutdown), appended after the stream was marked closed.
     * Ordering with a caller racing the close: the close marks the stream closed (a volatile write),
     * then claims the shutdown's position (XADD on the queue's tail) and publishes it
     * ({@link #shutdownAt}, volatile); a caller claims its position (XADD), then reads whether the
     * stream is closed. If the caller's position is above the shutdown's, its XADD came after the
     * close's in the tail's order, so after the closed mark: it reads closed, waits for the
     * shutdown's position (published a few instructions after the close's XADD; enqueue does not
     * drain) and finds itself behind it. A caller that reads open is ahead of the shutdown. The
     * drainer, which submits in position order, discards every entry behind the shutdown (it learns
     * the position from the shutdown entry itself, or from {@link #shutdownAt}).
     */
    public void appendShutdown(Runnable backendShutdown) {
        long s = queue.enqueue(new Shutdown(backendShutdown));
        shutdownAt = s;
        drainSafely();
    }

    /** The shutdown's position once the close has published it (a racing caller waits a few instructions for it). */
    private long shutdownPosition() {
        long s;
        while ((s = shutdownAt) == Long.MAX_VALUE) {
            Thread.onSpinWait();
        }
        return s;
    }

    /**
     * The position after the last work entry appended: a requirement that covers every work entry
     * appended before the read (its caller raised it before its append returned), and that the
     * reactor's own flag writes and callbacks behind it do not raise: a proof up to it covers the
     * work, whatever flag writes follow.
     */
    public long workThrough() {
        return workThrough.get();
    }

    /**
     * A producer {@value #RING} / 2 entries ahead of the driver's room: waits (parks, in steps of at
     * most a millisecond) until the queue holds fewer, or the stream can take nothing anyway. The
     * only wait of a caller before its await (class comment).
     */
    private void awaitWorkBound() {
        long park = 10_000;
        while (queue.queued() >= RING / 2 && !discarding()) {
            drainQueue();
            LockSupport.parkNanos(this, park);
            park = Math.min(park * 2, 1_000_000);
        }
    }

    /** Whether {@code thread} is now the drainer submitting its tracker: its entry goes to the driver directly. */
    public boolean isDirect() {
        return direct == Thread.currentThread();
    }

    /** The stream's submission count: every position appended (or being appended). */
    public long appended() {
        return queue.appended();
    }

    /** Positions submitted (or discarded) so far. */
    public long submitted() {
        return submitted.get();
    }

    public long queued() {
        return queue.queued();
    }

    public long trackers() {
        return trackers.get();
    }

    /**
     * Waits until everything appended before the call was submitted ({@code synchronize()},
     * {@code handle()}): drains, then parks in growing steps (at most a millisecond) while entries
     * wait for room; returns early once the stream can take nothing (faulted, device closed), when
     * the caller's own driver call then reports it.
     */
    public void flush() {
        long target = queue.appended();
        long park = 1_000;
        while (submitted.get() < target) {
            drainQueue();
            if (submitted.get() >= target || discarding()) {
                return;
            }
            LockSupport.parkNanos(this, park);
            park = Math.min(park * 2, 1_000_000);
        }
    }

    // ---- completions --------------------------------------------------------------------------

    /**
     * Raises the stream's proof to {@code count}, then drains if entries wait (SubmissionRoom's
     * hand-over: whoever raises reads the queue after its raise and drains).
     */
    @Override
    void proven(long count) {
        room.proofRaised(raise, count, drainSafely);
    }

    /** The stream's gate opened (a close, a fault, the device's close): drain, so that a dead stream's entries are discarded. */
    public void gateOpened() {
        if (queue.queued() == 0) {
            return;
        }
        if (discarding()) {
            queue.drain(); // no driver call is made for a discarded entry: any thread may
        } else {
            drainSafely();
        }
    }

    /**
     * Drains the queue on this thread, a thread that may call the driver; with a device-wide cap on
     * drainers ({@link io.cudaloom.ReactorConfig#drainers()}), under a permit, or, if every permit is
     * taken, by a thread that holds one ({@link DrainerPermits}: the stream is listed and this thread
     * goes on).
     */
    private void drainQueue() {
        if (lane != null) {
            lane.drain();
        } else {
            queue.drain();
        }
    }

    /** Drains here, or on the reactor's executor from a thread that does not drain (class comment). */
    private void drainSafely() {
        if (!drainsElsewhere()) {
            drainQueue();
            return;
        }
        try {
            if (handOff.request(reactor.callbackExecutor())) {
                handedDrains.incrementAndGet();
            }
        } catch (RejectedExecutionException e) {
            if (discarding()) {
                queue.drain(); // no driver call is made for a discarded entry: any thread may
            }
        }
    }

    /**
     * Whether the calling thread hands its drains to the executor: a host callback, the stream's
     * worker, the scanner. All three are platform threads, so a virtual thread, the caller of every
     * append under load, is answered by its own flag, with no call into the backend or the reactor.
     */
    private boolean drainsElsewhere() {
        Thread t = Thread.currentThread();
        if (t.isVirtual()) {
            return false;
        }
        return FallbackRegistration.onHostCallback() || isOwnWorkerThread() || t == reactor.scannerThread();
    }

    /** The stream can take nothing any more: its queued entries are discarded. */
    @Override
    public boolean discarding() {
        return faults().hasFaulted() || reactor.isClosed();
    }

    // ---- the drainer (SubmissionRoom.Driver) -------------------------------------------------

    @Override
    public boolean isWork(StreamOp op) {
        return op.isWork();
    }

    @Override
    public void submit(StreamOp op, long position) {
        boolean ok = false;
        if (op instanceof Shutdown) {
            shutdownAt = position; // the drainer's own record of it (the close publishes it too)
        }
        try {
            if (position > shutdownAt) {
                // behind the close's shutdown: a call that raced the close, told so at its append
            } else if (!discarding() || op instanceof Shutdown) {
                String fault = op.submit(position);
                if (fault == null) {
                    ok = true;
                } else {
                    faults().streamFaulted(fault, null); // the awaits covering it fail (GpuFaultException)
                }
            }
        } catch (RuntimeException | Error e) {
            faults().streamFaulted("submission failed: " + e, e);
        } finally {
            submitted.incrementAndGet(); // after the driver call returned (the one coordinate)
            try {
                op.finish(ok);
            } catch (RuntimeException e) {
                // an exit of a lifetime never throws; nothing of the stream depends on it
            }
        }
        if (ok) {
            paceProofs(op.isWork());
        }
    }

    /**
     * Pacing (class comment, "Proofs while the room is full"): after {@code trackerSpacing} work
     * entries with no proof-bearing entry behind them, the drainer places a tracker, so that room
     * comes back a quarter at a time while the driver still has the rest queued. Without it
     * the reactor's flag writes, appended behind work that waits for room, never reach the driver
     * while the stream is full; the only proof is the tracker of {@link #stalled}, placed behind
     * everything drained, and the driver's queue runs empty before room comes back (measured on
     * an H100: combining at half the rate of direct submission). Called by the drainer only.
     */
    private void paceProofs(boolean work) {
        if (!work) {
            workSinceProof = 0; // a flag write or host callback: a proof is on its way behind what went before
        } else if (++workSinceProof >= trackerSpacing) {
            placeTracker();
        }
    }

    /** No room: make sure a proof is on its way (class comment, progress while full). Called by the drainer only. */
    @Override
    public void stalled() {
        if (trackersInFlight.get() == 0) {
            placeTracker();
        }
    }

    /** Submits a tracker directly behind everything drained, its proof {@link #submitted}. Called by the drainer only. */
    private void placeTracker() {
        long proof = submitted.get(); // every position drained so far has returned from its driver call
        if (proof <= completedThrough()) {
            return; // everything submitted is proven (pacing); when stalled it cannot be: the stream is full of drained work
        }
        trackersInFlight.incrementAndGet();
        workSinceProof = 0;
        direct = Thread.currentThread();
        try {
            reactor.track(this, (ticket, failure) -> trackerDone(proof, failure == null));
            trackers.incrementAndGet();
        } catch (RuntimeException e) {
            trackersInFlight.decrementAndGet(); // closed or faulted: nothing will be submitted any more
        } finally {
            direct = null;
        }
    }

    /**
     * The tracker landed (proof recorded) or failed: clear the mark, then drain (class comment).
     *
     * <p>Always drains, through {@link #proven}, never {@link #completedThrough(long)}, whose
     * shortcut returns when the proof already covers {@code proof}: a drainer that found no room
     * while this tracker was in flight placed none of its own ({@link #stalled}) and left, relying
     * on this landing to run its room check again. The proof can be past this tracker's by then,
     * raised by a later proof-bearing entry that the scanner retired first (it retires the flags of
     * a pass in slot order, not in stream order), whose drain ran before the stall. Returning
     * there left a stream whose entries behind the room carry no proof of their own (work, a memory
     * close's wait) stalled for good (CombinedSubmissionTest's tracker landing behind a higher
     * proof). The mark is cleared first, so the drain's stall places the next tracker.
     */
    private void trackerDone(long proof, boolean landed) {
        trackersInFlight.decrementAndGet();
        if (landed) {
            proven(proof); // raises the proof if higher, then drains if entries wait (the hand-over)
        } else {
            gateOpened();
        }
    }

    /**
     * A flag write of the reactor, made by the drainer. One the backend refuses is made by a host
     * callback instead (it sets the flag from the host, in the same place in the stream); one refused
     * both ways faults the stream (its waiter then fails through the fault path). The entry is made
     * once per slot and kept ({@link #flagWrites}: immutable, so a stale read of the cache or the
     * same entry queued twice is harmless): an await allocates nothing for it.
     */
    public StreamOp flagWrite(FlagMemory memory, int slot) {
        int chunk = slot >>> FLAG_WRITE_CHUNK_BITS;
        if (slot < 0 || chunk >= flagWrites.length()) {
            return new FlagWrite(memory, slot);
        }
        FlagWrite[] ops = flagWrites.get(chunk);
        if (ops == null) {
            FlagWrite[] fresh = new FlagWrite[1 << FLAG_WRITE_CHUNK_BITS];
            ops = flagWrites.compareAndExchange(chunk, null, fresh);
            if (ops == null) {
                ops = fresh;
            }
        }
        int i = slot & ((1 << FLAG_WRITE_CHUNK_BITS) - 1);
        FlagWrite op = ops[i]; // racy by design: an immutable entry with final fields, or null
        if (op == null || op.memory != memory) {
            op = new FlagWrite(memory, slot);
            ops[i] = op;
        }
        return op;
    }

    private static final int FLAG_WRITE_CHUNK_BITS = 10;

    /** The flag write of one slot (see {@link #flagWrite}). */
    private final class FlagWrite extends StreamOp {
        final FlagMemory memory;
        final int slot;

        FlagWrite(FlagMemory memory, int slot) {
            super(false);
            this.memory = memory;
            this.slot = slot;
        }

        @Override
        public @Nullable String submit(long position) {
            if (backend.enqueueFlagWrite(memory, slot)) {
                return null;
            }
            // Refused (no stream memory operations, a transient error): the same write from the
            // host, by a host callback in the same place in the stream; refused too: a fault.
            if (!faults().hasFaulted()
                    && backend.enqueueHostCallback(() -> memory.flags().setRelease(slot, 1))) {
                return null;
            }
            return "cuStreamWriteValue32 and cuLaunchHostFunc refused by the driver";
        }
    }

    /** A host callback of the reactor, made by the drainer. */
    public StreamOp hostCallback(Runnable callback) {
        return new StreamOp(false) {
            @Override
            public @Nullable String submit(long position) {
                return backend.enqueueHostCallback(callback) ? null : "cuLaunchHostFunc refused by the driver";
            }
        };
    }

    private static final class Shutdown extends StreamOp {
        private final Runnable shutdown;

        Shutdown(Runnable shutdown) {
            super(false);
            this.shutdown = shutdown;
        }

        @Override
        public @Nullable String submit(long position) {
            shutdown.run();
            return null;
        }
    }

    /** Work enqueued on the raw handle ({@link io.cudaloom.GpuStream#noteExternalSubmission()}): a position, no driver call. */
    public static final StreamOp EXTERNAL = new StreamOp(true) {
        @Override
        public @Nullable String submit(long position) {
            return null;
        }
    };
}
