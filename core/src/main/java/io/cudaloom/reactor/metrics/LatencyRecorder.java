package io.cudaloom.reactor.metrics;

import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.jspecify.annotations.Nullable;

/**
 * A device's await-latency distribution (HdrHistogram): every blocking await that registered
 * records how long it waited, from registering to returning, whatever its outcome (the duration
 * {@link io.cudaloom.reactor.BlockingWait} already measures for {@code ReactorStream.recordWait}, and the same span the
 * JFR event {@code io.cudaloom.SlowAwait} times). Awaits that found their work done register
 * nothing and are not recorded.
 *
 * <p><b>Writers</b> ({@link #record}, on the await's thread) are wait-free and allocate nothing:
 * one {@link Recorder#recordValue} into a fixed-range histogram (1 ns to 1 h, 2 significant digits,
 * so every percentile is within 1%; a longer wait is recorded as 1 h).
 *
 * <p><b>Readers</b> ({@link #snapshot}, {@link #isSlow}) take the lock, move what was recorded since
 * the last read into the lifetime histogram and into the recent window, and compute from those. The
 * recent window is two halves of {@value #WINDOW_SECONDS} s each: what was drained in the current
 * half and in the previous one (so it covers the last 10 to 20 s of reads). Every read also
 * refreshes the relative {@code SlowAwait} threshold ({@link #isSlow}).
 *
 * <p><b>Await listeners</b> ({@link Listener}, {@link #ended}): a copy-on-write array in one
 * volatile field, replaced whole by {@link #addListener} and {@link #removeListener} (serialized by
 * {@code listenersLock}; the volatile write publishes the new array and the listeners in it). Each
 * await reads the field once, as it ends, and calls what that array holds: with none added,
 * that read and an empty loop are the whole cost (no allocation). A removal is seen by every await
 * whose read comes after its write; one that read before may still call the removed listener once.
 */
public final class LatencyRecorder {
    /** The largest wait recorded as itself; longer ones count as this. */
    static final long HIGHEST_NANOS = TimeUnit.HOURS.toNanos(1);
    private static final int DIGITS = 2;
    static final int WINDOW_SECONDS = 10;
    private static final long WINDOW_NANOS = TimeUnit.SECONDS.toNanos(WINDOW_SECONDS);
    /** Until the recent window holds this many awaits, no relative threshold applies. */
    static final int MIN_SAMPLES = 10;
    /** How often {@link #isSlow} refreshes the threshold (a read of the stats refreshes it too). */
    private static final long REFRESH_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private static final System.Logger LOG = System.getLogger("io.cudaloom");
    private static final Listener[] NO_LISTENERS = {};

    private final Recorder recorder = new Recorder(1, HIGHEST_NANOS, DIGITS);
    /** The await listeners: replaced whole under {@link #listenersLock}, read once per await (class comment). */
    private volatile Listener[] listeners = NO_LISTENERS;
    private final ReentrantLock listenersLock = new ReentrantLock();
    /** Whether a listener's exception was logged at WARNING yet (racy by design). */
    private volatile boolean listenerFailureLogged;
    private final double slowFactor;
    private final ReentrantLock lock = new ReentrantLock();
    // guarded by lock:
    private final Histogram interval = new Histogram(1, HIGHEST_NANOS, DIGITS);
    private final Histogram lifetime = new Histogram(1, HIGHEST_NANOS, DIGITS);
    private Histogram currentHalf = new Histogram(1, HIGHEST_NANOS, DIGITS);
    private Histogram previousHalf = new Histogram(1, HIGHEST_NANOS, DIGITS);
    private final Histogram window = new Histogram(1, HIGHEST_NANOS, DIGITS);
    private long currentHalfStart = System.nanoTime();
    private long recentP99;
    /** The relative SlowAwait threshold: slowFactor x the recent p99; 0 while unknown (or off). */
    private volatile long threshold;
    private volatile long refreshedAt = System.nanoTime() - REFRESH_NANOS;

    /**
     * Told of every await that ended ({@link #ended}): the facade adapts each
     * {@link io.cudaloom.AwaitListener} added to it, so that this part names no listener API.
     */
    public interface Listener {
        /** One await ended, with its outcome and how long it waited (see {@link #ended}). */
        void awaitEnded(AwaitOutcome outcome, long nanos);

        /** What was added, which {@link #removeListener} compares by identity: this listener itself by default. */
        default Object added() {
            return this;
        }
    }

    /** @param slowFactor {@link io.cudaloom.ReactorConfig#slowAwaitFactor()}: 0 turns the relative threshold off */
    public LatencyRecorder(double slowFactor) {
        this.slowFactor = slowFactor;
    }

    /**
     * The {@link SlowAwaitEvent} type; looked up (holder idiom) on first use, after Flight Recorder
     * is initialized (JfrEvents' class comment: the cost when disabled, and what loads when).
     */
    private static final class SlowAwaitType {
        static final EventType TYPE = EventType.getEventType(SlowAwaitEvent.class);
    }

    /**
     * A begun {@link SlowAwaitEvent} if a recording has it enabled, else null (and nothing
     * allocated): the start of an await's metrics, whose end is {@link #awaitEnded}. The first await
     * that finds Flight Recorder initialized also adds the open devices' periodic counters hooks
     * ({@link FlightRecorderWatch#recorderUp}; a volatile read on later awaits).
     */
    public static @Nullable SlowAwaitEvent beginAwait() {
        if (!FlightRecorder.isInitialized()) {
            return null;
        }
        FlightRecorderWatch.recorderUp();
        if (!SlowAwaitType.TYPE.isEnabled()) {
            return null;
        }
        SlowAwaitEvent event = new SlowAwaitEvent();
        event.begin();
        return event;
    }

    /**
     * One blocking await ended: the waiter's one metrics call, made last by
     * {@link io.cudaloom.reactor.BlockingWait#acquire} (every mode), after every counter of the
     * await. In this order: its wait {@link #record recorded} (counted awaits: the drain's waits
     * are not in the histogram); its {@link SlowAwaitEvent}, if begun ({@link #beginAwait}), ended
     * with the path and the outcome and committed if a recording wants it and it is slow
     * ({@link #isSlow}; every drain's wait is slow enough); then the listeners ({@link #ended},
     * counted awaits), whose time a slow listener must not add to the event. The event's stack
     * trace starts here, one frame above the await's.
     *
     * @param path what happened to the await ({@code Waiter#path}, or {@link SlowAwaitEvent#DRAIN})
     */
    public void awaitEnded(long nanos, AwaitOutcome outcome, boolean counted, @Nullable SlowAwaitEvent slow,
            String device, Object stream, String path) {
        if (counted) {
            record(nanos);
        }
        if (slow != null && slow.endAwait(device, stream, path, JfrEvents.eventOutcome(outcome))
                && (!counted || isSlow(nanos))) {
            slow.commit();
        }
        if (counted) {
            ended(nanos, outcome);
        }
    }

    /** Records one await's wait; allocation-free. */
    public void record(long nanos) {
        recorder.recordValue(nanos < 0 ? 0 : Math.min(nanos, HIGHEST_NANOS));
    }

    /**
     * One await ended ({@link io.cudaloom.reactor.BlockingWait}, last: after counting it in the stats and
     * {@link #record recording} its wait): calls the listeners added (the array the volatile read
     * returns), in the order added. A listener's exception is logged and changes nothing of the
     * await's outcome.
     */
    private void ended(long nanos, AwaitOutcome outcome) {
        Listener[] ls = listeners; // the one volatile read (see the class comment)
        for (Listener l : ls) {
            try {
                l.awaitEnded(outcome, nanos);
            } catch (RuntimeException e) {
                listenerFailed(l, e);
            }
        }
    }

    private void listenerFailed(Listener l, RuntimeException e) {
        boolean first = !listenerFailureLogged;
        listenerFailureLogged = true; // racy by design: at worst two WARNINGs
        LOG.log(first ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
                "await listener " + l + " threw; the await's outcome is unchanged"
                        + (first ? " (later failures of this device's listeners are logged at DEBUG)" : ""), e);
    }

    /** Adds {@code listener} (a second add of the same one calls it twice). */
    public void addListener(Listener listener) {
        Objects.requireNonNull(listener, "listener");
        listenersLock.lock();
        try {
            Listener[] old = listeners;
            Listener[] grown = Arrays.copyOf(old, old.length + 1);
            grown[old.length] = listener;
            listeners = grown; // publishes the array and the listener (see the class comment)
        } finally {
            listenersLock.unlock();
        }
    }

    /**
     * Removes one listener whose {@link Listener#added()} is {@code added} (by identity); false if
     * none was added.
     */
    public boolean removeListener(Object added) {
        listenersLock.lock();
        try {
            Listener[] old = listeners;
            for (int i = 0; i < old.length; i++) {
                if (old[i].added() == added) {
                    Listener[] shrunk = new Listener[old.length - 1];
                    System.arraycopy(old, 0, shrunk, 0, i);
                    System.arraycopy(old, i + 1, shrunk, i, old.length - i - 1);
                    listeners = shrunk.length == 0 ? NO_LISTENERS : shrunk;
                    return true;
                }
            }
            return false;
        } finally {
            listenersLock.unlock();
        }
    }

    /**
     * Whether an await that waited {@code nanos}, already over the recording's {@code SlowAwait}
     * threshold, is also over the relative one: {@code slowFactor} x the recent window's p99. Judged
     * against the threshold computed before this await was drained, so an outlier does not raise
     * the bar it is judged by. While the window has fewer than {@link #MIN_SAMPLES} awaits (or the
     * factor is 0) every await is slow (the recording's threshold alone applies). Called only for
     * awaits a running recording would commit, so the refresh (at most every 100 ms once known)
     * costs nothing on the ordinary path.
     */
    public boolean isSlow(long nanos) {
        if (slowFactor <= 0) {
            return true;
        }
        long t = threshold;
        if (t == 0 || System.nanoTime() - refreshedAt >= REFRESH_NANOS) {
            if (lock.tryLock()) { // another reader refreshing: its result will do
                try {
                    drain();
                } finally {
                    lock.unlock();
                }
            }
        }
        return t == 0 || nanos >= t;
    }

    /** The distribution now (the lifetime since the device opened, and the recent window). */
    public LatencySnapshot snapshot() {
        lock.lock();
        try {
            drain();
            Histogram h = lifetime;
            long count = h.getTotalCount();
            return new LatencySnapshot(count,
                    count == 0 ? 0 : h.getValueAtPercentile(50.0),
                    count == 0 ? 0 : h.getValueAtPercentile(90.0),
                    count == 0 ? 0 : h.getValueAtPercentile(99.0),
                    count == 0 ? 0 : h.getValueAtPercentile(99.9),
                    count == 0 ? 0 : h.getMaxValue(),
                    count == 0 ? 0.0 : h.getMean(),
                    recentP99, threshold);
        } finally {
            lock.unlock();
        }
    }

    /** Moves the recorded values into the lifetime and the window, and recomputes the threshold. */
    private void drain() {
        long now = System.nanoTime();
        recorder.getIntervalHistogramInto(interval); // overwrites interval
        lifetime.add(interval);
        if (now - currentHalfStart >= WINDOW_NANOS) {
            Histogram old = previousHalf;
            old.reset();
            previousHalf = currentHalf;
            currentHalf = old;
            currentHalfStart = now;
        }
        currentHalf.add(interval);
        window.reset();
        window.add(previousHalf);
        window.add(currentHalf);
        if (window.getTotalCount() >= MIN_SAMPLES) {
            recentP99 = window.getValueAtPercentile(99.0);
            threshold = slowFactor <= 0 ? 0 : Math.max(1, (long) Math.min(HIGHEST_NANOS, slowFactor * recentP99));
        } else {
            recentP99 = 0;
            threshold = 0;
        }
        refreshedAt = now;
    }
}
