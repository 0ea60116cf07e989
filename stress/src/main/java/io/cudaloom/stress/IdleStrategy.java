package io.cudaloom.stress;

import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * What the scanner does after a pass that retired nothing while something is still armed (when
 * nothing is armed it parks untimed, woken by the idle-to-active unpark: that part is not a
 * choice). Stateful: one instance per scanner. Not thread-safe.
 *
 * <p>Specs (for {@code --strategies}): {@code spin}; {@code yield}; {@code spin-yield:PASSES}
 * (the Rust original: spin-hint for PASSES idle passes, then yield between passes);
 * {@code park:SPIN:PARK} (spin for SPIN after the last retirement, then fixed timed parks);
 * {@code backoff:SPIN:MIN:MAX:DIV} (spin for SPIN, then park for waited/DIV clamped to
 * [MIN, MAX]: the reactor's policy, whose defaults are {@code backoff:250us:20us:1ms:8}; they were
 * {@code backoff:50us:20us:1ms:8} before core's commit 7ae5671).
 * Durations take the suffixes ns, us, ms.
 */
abstract class IdleStrategy {
    /** Timed parks and yields, for the report (read by the scanner's owner after it stopped). */
    long timedParks;
    long yields;

    /** The last pass retired something (or the scanner just woke from an idle park). */
    void onProgress() {}

    /** Nothing retired, something armed; {@code waitedNanos} since the last progress. */
    abstract void idle(long waitedNanos);

    abstract String label();

    /** A fresh instance of the same strategy (strategies hold per-scanner state). */
    abstract IdleStrategy copy();

    static IdleStrategy parse(String spec) {
        String[] p = spec.trim().split(":");
        try {
            return switch (p[0]) {
                case "spin" -> new Spin();
                case "yield" -> new Yield();
                case "spin-yield" -> new SpinYield(Integer.parseInt(p[1]));
                case "park" -> new SpinPark(nanos(p[1]), nanos(p[2]));
                case "backoff" -> new Backoff(nanos(p[1]), nanos(p[2]), nanos(p[3]), Integer.parseInt(p[4]));
                default -> throw new IllegalArgumentException("unknown idle strategy '" + p[0] + "'");
            };
        } catch (ArrayIndexOutOfBoundsException | NumberFormatException e) {
            throw new IllegalArgumentException("bad idle strategy spec '" + spec + "' (see IdleStrategy)", e);
        }
    }

    static long nanos(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        if (t.endsWith("ns")) {
            return Long.parseLong(t.substring(0, t.length() - 2));
        }
        if (t.endsWith("us")) {
            return Long.parseLong(t.substring(0, t.length() - 2)) * 1_000L;
        }
        if (t.endsWith("ms")) {
            return Long.parseLong(t.substring(0, t.length() - 2)) * 1_000_000L;
        }
        return Long.parseLong(t);
    }

    static String fmt(long nanos) {
        if (nanos % 1_000_000L == 0 && nanos != 0) {
            return nanos / 1_000_000L + "ms";
        }
        if (nanos % 1_000L == 0) {
            return nanos / 1_000L + "us";
        }
        return nanos + "ns";
    }

    /** Never sleeps while anything is armed: lowest latency, a whole core. */
    static final class Spin extends IdleStrategy {
        @Override void idle(long waitedNanos) {
            Thread.onSpinWait();
        }
        @Override String label() {
            return "spin";
        }
        @Override IdleStrategy copy() {
            return new Spin();
        }
    }

    /** Yields between passes: gives the core away only when another thread wants it. */
    static final class Yield extends IdleStrategy {
        @Override void idle(long waitedNanos) {
            yields++;
            Thread.yield();
        }
        @Override String label() {
            return "yield";
        }
        @Override IdleStrategy copy() {
            return new Yield();
        }
    }

    /** The Rust original: spin-hint for a number of idle passes, then yield between passes. */
    static final class SpinYield extends IdleStrategy {
        private final int spinPasses;
        private int idlePasses;

        SpinYield(int spinPasses) {
            this.spinPasses = spinPasses;
        }
        @Override void onProgress() {
            idlePasses = 0;
        }
        @Override void idle(long waitedNanos) {
            if (idlePasses++ < spinPasses) {
                Thread.onSpinWait();
            } else {
                yields++;
                Thread.yield();
            }
        }
        @Override String label() {
            return "spin-yield:" + spinPasses;
        }
        @Override IdleStrategy copy() {
            return new SpinYield(spinPasses);
        }
    }

    /** Spin for a while after the last retirement, then fixed timed parks. */
    static final class SpinPark extends IdleStrategy {
        private final long spinNanos;
        private final long parkNanos;

        SpinPark(long spinNanos, long parkNanos) {
            this.spinNanos = spinNanos;
            this.parkNanos = parkNanos;
        }
        @Override void idle(long waitedNanos) {
            if (waitedNanos < spinNanos) {
                Thread.onSpinWait();
            } else {
                timedParks++;
                LockSupport.parkNanos(parkNanos);
            }
        }
        @Override String label() {
            return "park:" + fmt(spinNanos) + ":" + fmt(parkNanos);
        }
        @Override IdleStrategy copy() {
            return new SpinPark(spinNanos, parkNanos);
        }
    }

    /**
     * The reactor's policy: spin for a while after the last retirement, then park for a fraction
     * of the time waited so far, within bounds. The detection delay of a completion is then at most
     * about waited/DIV (plus the OS's timer slack): a bounded share of the wait itself.
     */
    static final class Backoff extends IdleStrategy {
        private final long spinNanos;
        private final long minParkNanos;
        private final long maxParkNanos;
        private final int divisor;

        Backoff(long spinNanos, long minParkNanos, long maxParkNanos, int divisor) {
            if (divisor <= 0 || minParkNanos <= 0 || maxParkNanos < minParkNanos) {
                throw new IllegalArgumentException("backoff needs 0 < MIN <= MAX and DIV > 0");
            }
            this.spinNanos = spinNanos;
            this.minParkNanos = minParkNanos;
            this.maxParkNanos = maxParkNanos;
            this.divisor = divisor;
        }
        @Override void idle(long waitedNanos) {
            if (waitedNanos < spinNanos) {
                Thread.onSpinWait();
                return;
            }
            timedParks++;
            LockSupport.parkNanos(Math.max(minParkNanos, Math.min(maxParkNanos, waitedNanos / divisor)));
        }
        @Override String label() {
            return "backoff:" + fmt(spinNanos) + ":" + fmt(minParkNanos) + ":" + fmt(maxParkNanos) + ":" + divisor;
        }
        @Override IdleStrategy copy() {
            return new Backoff(spinNanos, minParkNanos, maxParkNanos, divisor);
        }
    }
}
