package io.cudaloom.protocol;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * How a batched call forms its batches (CUDA-free): callers {@link #arrive} and go on to wait for
 * their own outcome; one thread at a time (the <em>dispatcher</em>) takes the waiting requests into
 * batches and launches them on free lanes. A batch closes
 * <ul>
 *   <li>at once when nothing of this batcher is in flight (a lone caller pays no added latency),
 *   <li>when {@code maxBatch} requests wait,
 *   <li>when the oldest waiting request has waited {@code maxDelay} (a timer calls {@link #drain}
 *       at {@link #nextDeadline()});
 * </ul>
 * so that under load, while a batch is in flight, the next one fills itself: the group-commit rule
 * of the reactor's shared flag writes, as Triton's dynamic batcher forms its batches.
 *
 * <h2>Orderings</h2>
 * <ol>
 *   <li><b>Arrive</b>: the request is offered to {@link #queue} (a volatile write), counted in
 *       {@link #waiting}, and the caller calls {@link #drain}.
 *   <li><b>Drain</b>: the wip counter of {@link SubmissionQueue}: the thread whose increment of
 *       {@link #wip} took it from 0 dispatches; it subtracts the increments it saw and dispatches
 *       again if more came. An arrival (or a lane that came free, or the timer) whose increment
 *       follows the dispatcher's last subtraction dispatches itself; one before it is seen by the
 *       dispatcher's next pass. So no request is stranded when the dispatcher goes idle as another
 *       arrives (the jcstress {@code BatchFormationTest} checks it; the same loop's broken twin,
 *       which leaves after reading the counter, is {@link SubmissionQueue}'s).
 *   <li><b>Take or leave</b>: a request is in a batch only if the dispatcher's compare-and-set took
 *       it from {@code WAITING} to {@code TAKEN}; a caller that gives up (a timeout, an interrupt,
 *       a cancelled future, the batcher's close) takes it from {@code WAITING} to {@code LEFT}. So
 *       exactly one side wins: a request that left is never launched, and one that was taken keeps
 *       its place in its batch (its result is then dropped). {@link #waiting} is decremented by the
 *       winner only. (The jcstress {@code BatchLeaveTest} checks it; its broken twin, whose take is
 *       a check-then-set, launches a request that left, and is caught.) A caller leaves only after
 *       its {@link #arrive} returned.
 * </ol>
 *
 * @param <R> the request type
 */
public final class BatchFormation<R extends BatchFormation.Request> {
    /** One caller's place in the queue; extend it with the input and the outcome. */
    public abstract static class Request {
        private static final int WAITING = 0;
        private static final int TAKEN = 1;
        private static final int LEFT = 2;
        final AtomicInteger state = new AtomicInteger(WAITING);
        private final long arrivedNanos;
        volatile @Nullable BatchFormation<?> formation;

        /** A request that arrives now ({@code nanoTime} of the batcher's clock). */
        protected Request(long arrivedNanos) {
            this.arrivedNanos = arrivedNanos;
        }

        /** When it arrived, on the batcher's clock. */
        public final long arrivedNanos() {
            return arrivedNanos;
        }

        /**
         * The caller gives up its place: true if it was still waiting (it will never be launched);
         * false if a batch took it first (it stays in the batch; its result is dropped) or it left
         * already. Ordering 3.
         */
        public final boolean leave() {
            if (state.compareAndSet(WAITING, LEFT)) {
                BatchFormation<?> f = formation;
                if (f != null) {
                    f.waiting.decrementAndGet();
                }
                return true;
            }
            return false;
        }

        /** Whether a batch took it. */
        public final boolean taken() {
            return state.get() == TAKEN;
        }

        boolean take() {
            return state.compareAndSet(WAITING, TAKEN);
        }
    }

    /** The lanes batches run on, and how a batch is launched. */
    public interface Lanes<R> {
        /** A lane that can take a batch now, or -1 if every lane is busy. Called by the dispatcher only. */
        int freeLane();

        /** Batches in flight now. */
        int inFlight();

        /**
         * Launches {@code batch} (1 to {@code maxBatch} requests, in arrival order) on {@code lane},
         * which is busy from now until the launcher says it is free again (and calls
         * {@link BatchFormation#drain}). Called by the dispatcher only; must not throw: a failure
         * is the batch's callers' outcome.
         */
        void launch(int lane, List<R> batch);
    }

    private final ConcurrentLinkedQueue<R> queue = new ConcurrentLinkedQueue<>();
    /** Requests arrived and neither taken nor left. */
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicInteger wip = new AtomicInteger();
    private final Lanes<R> lanes;
    private final int maxBatch;
    private final long maxDelayNanos;
    private final LongSupplier clock;

    /**
     * @param maxBatch the most requests in one batch (at least 1)
     * @param maxDelayNanos how long the oldest request may wait for its batch to fill while another
     *     batch is in flight (at least 0)
     * @param clock {@code System::nanoTime}, or a test's
     */
    public BatchFormation(Lanes<R> lanes, int maxBatch, long maxDelayNanos, LongSupplier clock) {
        if (maxBatch < 1) {
            throw new IllegalArgumentException("maxBatch must be >= 1, was " + maxBatch);
        }
        if (maxDelayNanos < 0) {
            throw new IllegalArgumentException("maxDelay must be >= 0, was " + maxDelayNanos + " ns");
        }
        this.lanes = Objects.requireNonNull(lanes, "lanes");
        this.maxBatch = maxBatch;
        this.maxDelayNanos = maxDelayNanos;
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /** A caller arrives (ordering 1); it then waits for its own outcome. */
    public void arrive(R request) {
        request.formation = this;
        waiting.incrementAndGet();
        queue.offer(request);
        drain();
    }

    /**
     * Dispatches if no other thread is dispatching, else records that there is more to do
     * (ordering 2). Called after an arrival, when a lane comes free, and by the timer.
     */
    public void drain() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        while (true) {
            dispatch();
            missed = wip.addAndGet(-missed);
            if (missed == 0) {
                return;
            }
        }
    }

    /** One dispatcher pass: launches batches while a lane is free and a batch should close. */
    private void dispatch() {
        while (true) {
            R oldest = firstWaiting();
            if (oldest == null) {
                return;
            }
            boolean close = lanes.inFlight() == 0 || waiting.get() >= maxBatch
                    || clock.getAsLong() - oldest.arrivedNanos() >= maxDelayNanos;
            if (!close) {
                return; // the timer (nextDeadline) or a lane coming free drains again
            }
            int lane = lanes.freeLane();
            if (lane < 0) {
                return; // a lane coming free drains again
            }
            List<R> batch = new ArrayList<>(Math.min(maxBatch, Math.max(1, waiting.get())));
            R r;
            while (batch.size() < maxBatch && (r = queue.poll()) != null) {
                if (r.take()) {
                    waiting.decrementAndGet();
                    batch.add(r);
                }
            }
            if (!batch.isEmpty()) {
                lanes.launch(lane, batch);
            }
        }
    }

    /** The first request still waiting (those that left are dropped from the head); null if none. */
    private @Nullable R firstWaiting() {
        R r;
        while ((r = queue.peek()) != null) {
            if (r.state.get() == Request.WAITING) {
                return r;
            }
            queue.remove(r); // it left (or the close took it): drop it from the head
        }
        return null;
    }

    /**
     * When the oldest request in the queue reaches its {@code maxDelay} ({@code clock} units), or
     * {@link Long#MAX_VALUE} if the queue is empty: the batcher's timer drains then. Read-only, and
     * so callable on every arrival: the head may be a request a batch or a leave has just taken
     * (then the deadline is early, and the timer's drain finds nothing to close and asks again);
     * removing it here would race the dispatcher's {@code poll}, and {@code remove} of a node
     * already polled scans the whole queue (the H100's profile of the batched demo found it on
     * its hot path, with 10,000 callers waiting).
     */
    public long nextDeadline() {
        R oldest = queue.peek();
        return oldest == null ? Long.MAX_VALUE : oldest.arrivedNanos() + maxDelayNanos;
    }

    /** Requests waiting for a batch now. */
    public int waiting() {
        return waiting.get();
    }

    /**
     * Takes every request still waiting out of the queue, for the batcher's close: each is returned
     * taken (so no batch takes it) for the closer to fail.
     */
    public List<R> drainWaiting() {
        List<R> out = new ArrayList<>();
        R r;
        while ((r = queue.poll()) != null) {
            if (r.take()) {
                waiting.decrementAndGet();
                out.add(r);
            }
        }
        return out;
    }

    @Override
    public String toString() {
        return "BatchFormation[waiting " + waiting.get() + ", in flight " + lanes.inFlight() + ", maxBatch " + maxBatch
                + ", maxDelay " + maxDelayNanos + " ns]";
    }
}
