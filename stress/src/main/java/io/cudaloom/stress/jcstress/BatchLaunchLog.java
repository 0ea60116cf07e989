package io.cudaloom.stress.jcstress;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The lanes of a {@code BatchFormation} as the batch formation tests see them: one lane, and what
 * the formation's {@link io.cudaloom.protocol.BatchFormation.Lanes} is asked, recorded. The tests'
 * lanes call {@link #freeLane}, {@link #inFlight} and {@link #launch} (a class of its own, not a
 * {@code Lanes}, so that the real formation and its generated broken twin, whose {@code Lanes} is a
 * different nested type, record into the same model). The lane starts free or busy (a batch in
 * flight) and is freed by {@link #freeTheLane}; a launch records the batch and leaves the lane as it
 * was (the batch is done at once). It never blocks and has no race of its own: every field is
 * atomic or volatile, so a FORBIDDEN outcome of a test that uses it is the formation's.
 *
 * <p>Recorded: how many times each of the test's requests was launched, how many batches, how many
 * requests were launched by a thread other than the one that made them arrive (combining: the
 * dispatcher took another caller's request), how many launches overlapped (a thread entered
 * {@link #launch} while another was inside: two dispatchers at once), malformed batches (empty,
 * above {@code maxBatch}, on a lane that was not free, or holding a request that is not the test's),
 * and how many times the dispatcher was given the free lane (it had decided to close a batch).
 */
public final class BatchLaunchLog {
    private final Object[] requests;
    private final AtomicReferenceArray<Thread> arrivers;
    private final AtomicIntegerArray launched;
    private final int maxBatch;
    private final AtomicInteger batches = new AtomicInteger();
    private final AtomicInteger foreign = new AtomicInteger();
    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger overlaps = new AtomicInteger();
    private final AtomicInteger malformed = new AtomicInteger();
    private final AtomicInteger grants = new AtomicInteger();
    private volatile boolean busy;

    /**
     * A log of one lane for batches of up to {@code maxBatch} of {@code requests} (the test's, by
     * identity); the lane is free from the start unless {@code busy}.
     */
    public BatchLaunchLog(int maxBatch, boolean busy, Object... requests) {
        this.maxBatch = maxBatch;
        this.busy = busy;
        this.requests = requests.clone();
        this.arrivers = new AtomicReferenceArray<>(requests.length);
        this.launched = new AtomicIntegerArray(requests.length);
    }

    /** Marks the calling thread as the one that makes {@code request} arrive; call just before arriving. */
    public <R> R arrivingByMe(R request) {
        arrivers.set(index(request), Thread.currentThread());
        return request;
    }

    /** The lane's batch is done: the lane is free again (before the formation's {@code drain()}). */
    public void freeTheLane() {
        busy = false;
    }

    /** {@code Lanes.freeLane}: lane 0 if it is free (counted: the dispatcher closes a batch), else -1. */
    public int freeLane() {
        if (busy) {
            return -1;
        }
        grants.incrementAndGet();
        return 0;
    }

    /** {@code Lanes.inFlight}: 1 while the lane is busy, else 0. */
    public int inFlight() {
        return busy ? 1 : 0;
    }

    /** {@code Lanes.launch}: records the batch, overlaps, and who launched whose request. */
    public void launch(int lane, List<?> batch) {
        if (inside.incrementAndGet() != 1) {
            overlaps.incrementAndGet();
        }
        batches.incrementAndGet();
        if (lane != 0 || busy || batch.isEmpty() || batch.size() > maxBatch) {
            malformed.incrementAndGet();
        }
        for (Object r : batch) {
            int i = indexOrMinusOne(r);
            if (i < 0) {
                malformed.incrementAndGet();
                continue;
            }
            launched.incrementAndGet(i);
            if (arrivers.get(i) != Thread.currentThread()) {
                foreign.incrementAndGet();
            }
        }
        Thread.onSpinWait(); // a little time inside the launch, for an overlap to show
        inside.decrementAndGet();
    }

    /** How many times the test's {@code request} was launched. */
    public int launched(Object request) {
        return launched.get(index(request));
    }

    /** The number of batches launched. */
    public int batches() {
        return batches.get();
    }

    /** Requests launched by a thread other than the one that made them arrive. */
    public int foreign() {
        return foreign.get();
    }

    /** Launches that began while another was inside {@link #launch}. */
    public int overlaps() {
        return overlaps.get();
    }

    /** Batches empty, too large or on a lane not free, and launched requests that are not the test's. */
    public int malformed() {
        return malformed.get();
    }

    /** How many times {@link #freeLane} gave the dispatcher the lane. */
    public int grants() {
        return grants.get();
    }

    private int index(Object request) {
        int i = indexOrMinusOne(request);
        if (i < 0) {
            throw new IllegalArgumentException("not one of the test's requests: " + request);
        }
        return i;
    }

    private int indexOrMinusOne(Object request) {
        for (int i = 0; i < requests.length; i++) {
            if (requests[i] == request) {
                return i;
            }
        }
        return -1;
    }
}
