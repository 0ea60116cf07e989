package io.cudaloom;

import io.cudaloom.LiveResources.Kind;
import io.cudaloom.LiveResources.Site;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * What one device has handed out and not had back: device and host memory, streams, and waits in
 * progress (a blocking await, or a future, callback or subscription not yet delivered or
 * withdrawn). Backend-independent: {@link GpuStream} and {@link GpuEvent} count streams and waits
 * themselves, and every backend's memory counts itself through {@code GpuDevice.tracked} (BackendAccess.Hooks#tracked), so
 * the counts mean the same on every device.
 *
 * <p>Cost: with site capture off (the default), an allocation costs one atomic increment and one
 * small handle, and an await one {@link LongAdder} increment and decrement and a volatile read;
 * nothing is allocated on the await path. With capture on ({@link #CAPTURE_PROPERTY}, or
 * {@link GpuDevice#captureLeakSites}), each allocation, stream and wait also records its caller's
 * frames.
 */
final class ResourceLedger {
    /** System property: {@code off} (default), {@code sampled} (1 in {@value #SAMPLE_EVERY}) or {@code all}. */
    static final String CAPTURE_PROPERTY = "cudaloom.leakSites";
    static final int SAMPLE_EVERY = 64;
    private static final int MAX_FRAMES = 12;

    enum Capture {
        OFF,
        SAMPLED,
        ALL
    }

    private static final Capture GLOBAL = parse(System.getProperty(CAPTURE_PROPERTY, "off"));

    private final EnumMap<Kind, AtomicInteger> counts = new EnumMap<>(Kind.class);
    private final LongAdder pendingWaits = new LongAdder();
    /** Captured handles still open (only those captured are here). */
    private final Set<Lease> captured = ConcurrentHashMap.newKeySet();
    /** Sites of blocking awaits in progress, by thread (a thread is in one await at a time); only when captured. */
    private final Map<Thread, Site> awaitSites = new ConcurrentHashMap<>();
    private final AtomicLong sampler = new AtomicLong();
    private volatile Capture capture = GLOBAL;

    ResourceLedger() {
        for (Kind k : Kind.values()) {
            counts.put(k, new AtomicInteger());
        }
    }

    static Capture parse(String value) {
        return switch (value.strip().toLowerCase(Locale.ROOT)) {
            case "", "off", "false", "none" -> Capture.OFF;
            case "sampled", "sample", "simple" -> Capture.SAMPLED;
            case "all", "on", "true", "paranoid" -> Capture.ALL;
            default -> throw new IllegalArgumentException(CAPTURE_PROPERTY + " must be off, sampled or all, was '"
                    + value + "'");
        };
    }

    /** Captures every site ({@code true}) or goes back to what {@link #CAPTURE_PROPERTY} says. */
    void captureAll(boolean all) {
        capture = all ? Capture.ALL : GLOBAL;
    }

    Capture capture() {
        return capture;
    }

    /** Sets the level directly (tests). */
    void capture(Capture level) {
        capture = level;
    }

    private boolean captureNow() {
        Capture c = capture;
        return c == Capture.ALL || (c == Capture.SAMPLED && sampler.getAndIncrement() % SAMPLE_EVERY == 0);
    }

    // ---- memory and streams -------------------------------------------------------------------

    /** Counts one {@code kind} handed out; running the returned handle (once, idempotent) counts it back. */
    Lease open(Kind kind) {
        if (kind == Kind.WAIT) {
            throw new IllegalArgumentException("waits are counted by the reactor's callers, not leased");
        }
        counts.get(kind).incrementAndGet();
        Lease lease = new Lease(this, kind, captureNow() ? Site.here(kind, MAX_FRAMES) : null);
        if (lease.site != null) {
            captured.add(lease);
        }
        return lease;
    }

    /** A handed-out resource; {@link #run()} gives it back. Extends AtomicBoolean (released) to save an object. */
    static final class Lease extends AtomicBoolean implements Runnable {
        private static final long serialVersionUID = 1L;
        private final transient ResourceLedger ledger;
        private final Kind kind;
        private final transient @Nullable Site site;

        Lease(ResourceLedger ledger, Kind kind, @Nullable Site site) {
            this.ledger = ledger;
            this.kind = kind;
            this.site = site;
        }

        @Override
        public void run() {
            if (compareAndSet(false, true)) {
                if (kind == Kind.WAIT) {
                    ledger.pendingWaits.decrement();
                } else {
                    ledger.counts.get(kind).decrementAndGet();
                }
                if (site != null) {
                    ledger.captured.remove(this);
                }
            }
        }
    }

    // ---- waits --------------------------------------------------------------------------------

    /** A blocking await begins on this thread; pair with {@link #awaitEnded()} in a finally block. */
    void awaitBegun() {
        pendingWaits.increment();
        if (capture != Capture.OFF && captureNow()) {
            awaitSites.put(Thread.currentThread(), Site.here(Kind.WAIT, MAX_FRAMES));
        }
    }

    void awaitEnded() {
        pendingWaits.decrement();
        if (!awaitSites.isEmpty()) {
            awaitSites.remove(Thread.currentThread());
        }
    }

    /**
     * A non-blocking registration (future, callback, subscription) is being made; running the
     * returned handle (once, idempotent) says it was delivered, withdrawn, or refused.
     */
    Lease callbackRegistered() {
        pendingWaits.increment();
        Lease lease = new Lease(this, Kind.WAIT, captureNow() ? Site.here(Kind.WAIT, MAX_FRAMES) : null);
        if (lease.site != null) {
            captured.add(lease);
        }
        return lease;
    }

    // ---- reading ------------------------------------------------------------------------------

    LiveResources snapshot() {
        EnumMap<Kind, Integer> now = new EnumMap<>(Kind.class);
        for (Kind k : Kind.values()) {
            now.put(k, k == Kind.WAIT ? (int) Math.max(0, pendingWaits.sum()) : counts.get(k).get());
        }
        List<Site> sites = new ArrayList<>();
        for (Lease l : captured) {
            if (!l.get() && l.site != null) {
                sites.add(l.site);
            }
        }
        sites.addAll(awaitSites.values());
        return new LiveResources(now, sites, capture != Capture.OFF);
    }
}
