package io.cudaloom.protocol;

import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A device-wide cap on the threads that drain streams at once, for submission by combining. Each
 * stream has at most one drainer (SubmissionQueue's ordering 3), so a device with eight streams
 * can have eight threads in the driver at once, and the driver's per-context lock makes every call
 * dearer the more threads contend for it (on an H100, the demo's step cost 9.9 us of CPU on one
 * submitting thread, 15.4 on two, 18.6 on four, 21.9 on eight: {@code DriverContention}). With a
 * cap of {@code K}, at most {@code K} threads drain at once, each draining every stream that wants
 * it, and a thread that finds every permit taken leaves its stream to them and goes on.
 *
 * <h2>How</h2>
 * A stream is a {@link Lane}. {@link Lane#drain()} lists the lane (once: its {@code listed} flag
 * goes from false to true with a compare-and-set, and only that thread adds it to the list), then,
 * while any lane is listed, takes a permit if one is free, drains every listed lane it takes from
 * the list (clearing each lane's flag before running its drain), and gives the permit back. A
 * thread that finds no permit free returns at once: the listed lanes are the permit holders'.
 *
 * <h2>Ordering (no lane left listed with nobody to drain it)</h2>
 * The lister adds its lane to the list (a volatile write), then reads {@link #free} (a volatile
 * read, or the compare-and-set that takes a permit). The holder gives its permit back (a volatile
 * increment of {@link #free}), then looks at the list again (a volatile read). In the one total
 * order of these accesses, either the lister's read of {@code free} comes after the give-back (it
 * finds the permit and drains) or the holder's look comes after the add (it finds the lane listed
 * and goes round again). A holder that looks at the list only before giving its permit back
 * strands the lane: the lister finds the permit taken, the holder found the list empty, and nobody
 * drains it until some later drain request. The jcstress {@code DrainerPermitsTest} checks this,
 * and its generated broken twin ({@code drainer-permits-no-look-after-release.patch}) is caught.
 *
 * <p>The flag is cleared before the lane's drain: an entry whose caller's compare-and-set found the
 * lane still listed was appended before that read, so before the clear, and the drain that follows
 * the clear sees it; an entry appended after the clear lists the lane again. The jcstress
 * {@code DrainerPermitsRelistTest} checks this, and its generated broken twin
 * ({@code drainer-permits-clear-after-drain.patch}: the clear after the drain) is caught.
 *
 * <p>A drain that runs, on a holder's thread, a drain request of its own (a proof raised inside a
 * driver call's completion) lists its lane and, finding no permit (the holder's own, with a cap
 * of one), leaves it to the holder's loop, which takes it from the list next: no thread waits for
 * a permit, so a nested request cannot deadlock.
 */
public final class DrainerPermits {
    /** Permits not taken: a holder takes one with a compare-and-set, gives it back with an increment. */
    private final AtomicInteger free;
    /** Lanes that want a drain, each at most once (its {@code listed} flag). */
    private final ConcurrentLinkedQueue<Lane> listed = new ConcurrentLinkedQueue<>();
    /** Drain requests that found every permit taken and left their lane to the holders. */
    private final LongAdder leftToHolders = new LongAdder();

    /**
     * At most {@code permits} threads draining at once.
     *
     * @throws IllegalArgumentException if {@code permits} is below 1
     */
    public DrainerPermits(int permits) {
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be at least 1, was " + permits);
        }
        this.free = new AtomicInteger(permits);
    }

    /** A lane whose {@link Lane#drain()} runs {@code drain} (a stream queue's drain) under a permit. */
    public Lane lane(Runnable drain) {
        return new Lane(drain);
    }

    /** One stream's place in the cap. */
    public final class Lane {
        private final AtomicBoolean listed = new AtomicBoolean();
        private final Runnable drain;

        private Lane(Runnable drain) {
            this.drain = Objects.requireNonNull(drain, "drain");
        }

        /**
         * Has the lane drained, here under a permit, or by a thread that holds one (class comment);
         * never waits.
         */
        public void drain() {
            DrainerPermits.this.drain(this);
        }
    }

    private void drain(Lane lane) {
        if (lane.listed.compareAndSet(false, true)) {
            listed.add(lane);
        }
        boolean first = true;
        while (!listed.isEmpty()) { // the look after the give-back (class comment)
            if (!tryTake()) {
                if (first) {
                    leftToHolders.increment();
                }
                return; // the listed lanes are a holder's: its look after its give-back follows our add
            }
            first = false;
            try {
                Lane l;
                while ((l = listed.poll()) != null) {
                    l.listed.set(false); // before the drain (class comment)
                    l.drain.run();
                }
            } finally {
                free.incrementAndGet(); // the give-back, then the look
            }
        }
    }

    private boolean tryTake() {
        int f;
        while ((f = free.get()) > 0) {
            if (free.compareAndSet(f, f - 1)) {
                return true;
            }
        }
        return false;
    }

    /** Drain requests that found every permit taken and left their lane to the holders (a count since made). */
    public long leftToHolders() {
        return leftToHolders.sum();
    }

    @Override
    public String toString() {
        return "DrainerPermits[free " + free.get() + ", left to holders " + leftToHolders.sum() + "]";
    }
}
