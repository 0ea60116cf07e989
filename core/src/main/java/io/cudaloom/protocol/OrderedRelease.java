package io.cudaloom.protocol;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A release (a free of memory) that must wait for work on several streams: it runs exactly once,
 * after every stream it waits for has reported that the work in question is done, and never before.
 * Whoever arrives last runs it; nobody waits.
 *
 * <h2>Protocol</h2>
 * A count of the parties still to arrive, one {@link AtomicInteger}:
 * <ol>
 *   <li>It starts at 1: the <em>arming</em> party, the thread that sets the release up. For each
 *       stream whose work is not yet known to be done, that thread first calls {@link #expect()}
 *       (an increment), then registers {@link #arrive()} with the stream, to be called once its
 *       work completes, which may happen at once, on the registering thread, if the work is
 *       already done by then. When every stream is registered it calls {@link #armed()}, its own
 *       arrival.
 *   <li>{@link #arrive()} is a decrement; the arrival that takes the count to 0 runs the release.
 * </ol>
 * <b>Exactly once, never early.</b> The count reaches 0 exactly once if every party arrives once
 * (a second arrival of one party would take it below 0, which {@link #arrive()} refuses loudly).
 * It cannot reach 0 before the arming party arrives, which it does only after it has expected
 * every stream, so every stream's arrival has been counted in before the count can drop to 0: the
 * release cannot run while a stream's work is still pending, not even when an earlier stream's
 * work was done at registration and arrived at once. (Without the arming party, that early
 * arrival would take the count from 1 to 0 while the next stream was not yet expected: the
 * jcstress {@code OrderedReleaseTest} checks the protocol, and its broken twin, which starts the
 * count at 0, is caught.)
 *
 * <p><b>What happens-before the release.</b> Every arrival is a read-modify-write of the one
 * count, so the release runs on a thread whose decrement read the value written by every other
 * party's decrement: everything each party did before arriving (the stream's completion proof,
 * the arming thread's bookkeeping) happens-before the release.
 */
public final class OrderedRelease {
    private final AtomicInteger parties = new AtomicInteger(1); // the arming party
    private final Runnable release;

    /** A release that runs {@code release} once every expected stream and the arming party have arrived. */
    public OrderedRelease(Runnable release) {
        this.release = release;
    }

    /** One more stream to wait for: call on the arming thread, before registering its {@link #arrive()}. */
    public void expect() {
        if (parties.getAndIncrement() <= 0) {
            throw new IllegalStateException("expect() after the release ran");
        }
    }

    /** A stream's work is done (or will never run): its one arrival. The last arrival runs the release. */
    public void arrive() {
        int left = parties.decrementAndGet();
        if (left == 0) {
            release.run();
        } else if (left < 0) {
            throw new IllegalStateException("more arrivals than parties: " + left);
        }
    }

    /** The arming thread has expected and registered every stream: its own arrival. */
    public void armed() {
        arrive();
    }

    /** Parties still to arrive (a snapshot, for tests and diagnostics). */
    public int pending() {
        return parties.get();
    }

    @Override
    public String toString() {
        return "OrderedRelease[" + parties.get() + " to arrive]";
    }
}
