package io.cudaloom.protocol;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * {@link LifetimeGuard}'s protocol for a handle that many threads use at once (a module whose
 * kernels every stream launches, memory that copies on every stream use): the same promise (every
 * call runs between {@link #enter()} and {@link #exit(int)}; the release runs exactly once, after
 * {@link #close} and after every call that entered has exited; no call enters once the guard is
 * closing; nobody waits: the last one out runs the release), without one word that every call of
 * every thread writes. {@code LifetimeGuard}'s single word is written twice per call by whichever
 * thread makes it, so with 16 carriers launching on 8 streams each write finds the cache line in
 * another core's cache (a JFR profile of the demo on an H100 put 4.7% of its Java samples in
 * {@code LifetimeGuard.enter} of the module's and the memory's guards).
 *
 * <h2>State</h2>
 * Parts, each a {@code long} as {@code LifetimeGuard}'s word (bit 62 {@code CLOSING}, bits 0 to
 * 61 the calls inside it): the <em>base</em>, and, once two calls have collided on the base (a
 * compare-and-set of an enter lost to another call), <em>cells</em>: one array, published once
 * from null and never replaced, of a power of two of parts at least the processors, each on 128
 * bytes of its own. A call enters one part and exits the same one: {@link #enter()} returns a
 * token naming it ({@code 0} the base, {@code i + 1} cell {@code i}), {@link #exit(int)} takes it.
 * A call enters the base while there are no cells, else the cell its thread hashes to (the next
 * one on a collision). Parts are entered and exited exactly as {@code LifetimeGuard}'s word
 * (enter: a compare-and-set from a value without {@code CLOSING}; exit: a get-and-add of -1).
 *
 * <h2>Orderings, and where each is enforced</h2>
 * <ol>
 *   <li><b>A call on a cell does not miss the close</b> (a Dekker pair: the jcstress
 *       {@code SharedLifetimeGuardTest}, and its generated broken twin without the re-check,
 *       {@code shared-guard-cell-skips-base.patch}, is caught). The closer sets {@code CLOSING}
 *       on the base (a get-and-bitwise-or), then reads {@link #cells}; the caller publishes the
 *       cells (or reads them published), enters its cell, then reads the base ({@link #enterCell}).
 *       All four accesses are volatile, so in their total order either the closer's read of the
 *       cells comes after they were published (it closes every cell, the caller's included, and
 *       waits for it), or the caller's read of the base comes after the base was closed (it sees
 *       {@code CLOSING}, exits its cell and is refused, having used nothing). Without the re-check,
 *       a caller that published the cells after the closer read none would use the handle after
 *       its release.
 *   <li><b>The release runs once, after every admitted call has exited.</b> The closer closes
 *       each part it knows (the base, and the cells if it read them) with a get-and-bitwise-or of
 *       {@code CLOSING}. Each closed part <em>drains</em> exactly once: in that or, if it held no
 *       call, else in the exit that takes it from "closing, one inside" to "closing, none inside"
 *       (one such transition per part, as in {@code LifetimeGuard}). {@link #pending} counts the
 *       parts still to drain, so that the last one runs the release: the closer first sets it to
 *       a bias larger than any count of parts (a volatile write before its first or, which every
 *       exit that drains a part reads after, through that part's read-modify-writes), each
 *       draining exit subtracts one, and the closer, having closed every part it knows, subtracts
 *       the bias less the number of parts, and the ones it drained itself. So {@code pending}
 *       reaches 0 once, by the read-modify-write of whoever drained last (or of the closer), and
 *       not before every known part drained. A cell the closer did not know holds no admitted
 *       call (ordering 1) and is never closed; its exits drain nothing.
 *   <li><b>What happens-before the release.</b> Each part's read-modify-writes are totally
 *       ordered, and its draining one reads the value every exit before it wrote; the draining
 *       ones and the closer's settlement are read-modify-writes of {@code pending}, and the
 *       release runs on the thread of the last. So everything every admitted call did before its
 *       exit happens-before the release. The release must publish its own effects for readers
 *       that do not enter, as with {@code LifetimeGuard}.
 * </ol>
 *
 * <p>Cost: while no two calls collide, {@code enter} is a volatile load of the cells, one of the
 * base and one compare-and-set, {@code exit} one get-and-add, as {@code LifetimeGuard}. With
 * cells, a call writes only its own cell's line and reads the base's, which only the close
 * writes. The cells take 128 bytes per processor, made only for a guard that calls collided on.
 *
 * <p>Rules for users: call {@link #exit(int)} exactly once for each {@code enter()} that returned
 * a token (not {@link #REFUSED}), with that token, on any thread; the release must not throw and
 * must not block for long, since it may run on any caller's thread, inside that caller's exit.
 */
public final class SharedLifetimeGuard {
    /** {@link #enter()}'s answer once the guard is closing: the call must not use the handle. */
    public static final int REFUSED = -1;
    /** The token of a call that entered the base. */
    private static final int BASE = 0;

    private static final long CLOSING = 1L << 62;
    private static final long COUNT = CLOSING - 1;
    /** Larger than any count of parts (ordering 2). */
    private static final long BIAS = 1L << 40;
    /** Longs between two cells: 128 bytes, so that no two cells share a cache line (or an adjacent-line prefetch pair). */
    private static final int STRIDE = 16;
    /** Cells: a power of two, at least the processors and 2, at most 256. */
    private static final int CELLS = Math.max(2, Math.min(256,
            Integer.highestOneBit(Math.max(1, Runtime.getRuntime().availableProcessors() - 1)) << 1));

    private static final VarHandle BASE_WORD;
    private static final VarHandle CELLS_REF;
    private static final VarHandle RELEASE;
    private static final VarHandle PENDING;
    private static final VarHandle CELL = MethodHandles.arrayElementVarHandle(long[].class);

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            BASE_WORD = lookup.findVarHandle(SharedLifetimeGuard.class, "base", long.class);
            CELLS_REF = lookup.findVarHandle(SharedLifetimeGuard.class, "cells", long[].class);
            RELEASE = lookup.findVarHandle(SharedLifetimeGuard.class, "release", Runnable.class);
            PENDING = lookup.findVarHandle(SharedLifetimeGuard.class, "pending", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through BASE_WORD
    private volatile long base;
    /** Null until two calls collide on the base; then published once (a compare-and-set from null). */
    @SuppressWarnings("unused") // through CELLS_REF
    private volatile long @Nullable [] cells;
    /** Written once, by the winning closer, before it closes any part; read by whoever runs it. */
    @SuppressWarnings("unused") // through RELEASE
    private volatile @Nullable Runnable release;
    /** The parts still to drain, plus the bias until the closer settles (ordering 2). */
    @SuppressWarnings("unused") // through PENDING
    private volatile long pending;

    /**
     * Admits a call that will use the handle: its token for {@link #exit(int)}, or {@link #REFUSED}
     * once the guard is closing (the handle is released or about to be: the call must not use it).
     */
    public int enter() {
        long[] c = (long[]) CELLS_REF.getVolatile(this);
        if (c == null) {
            long s = (long) BASE_WORD.getVolatile(this);
            if ((s & CLOSING) != 0) {
                return REFUSED;
            }
            long witness = (long) BASE_WORD.compareAndExchange(this, s, s + 1);
            if (witness == s) {
                return BASE;
            }
            if ((witness & CLOSING) != 0) {
                return REFUSED;
            }
            c = cells(); // two calls collided on the base: from now on every call has a cell
        }
        return enterCell(c);
    }

    /**
     * Enters through the cells, making them first if there are none: what {@link #enter()} does for
     * a call that found the base open and collided on it. Public for the jcstress model, which
     * races it with the close (ordering 1); callers use {@link #enter()}.
     */
    public int enterThroughCells() {
        if (isClosing()) {
            return REFUSED; // as enter() read the base before its compare-and-set
        }
        return enterCell(cells());
    }

    /** The cells, published once (a compare-and-set from null; the loser uses the winner's). */
    private long[] cells() {
        long[] c = (long[]) CELLS_REF.getVolatile(this);
        if (c != null) {
            return c;
        }
        long[] fresh = new long[(CELLS + 1) * STRIDE];
        long[] witness = (long[]) CELLS_REF.compareAndExchange(this, (long[]) null, fresh);
        return witness == null ? fresh : witness;
    }

    /** Enters one cell of {@code c}, then re-reads the base (ordering 1). */
    private int enterCell(long[] c) {
        int i = (int) (mix(Thread.currentThread().threadId()) & (CELLS - 1));
        for (;;) {
            int at = (i + 1) * STRIDE;
            long s = (long) CELL.getVolatile(c, at);
            if ((s & CLOSING) != 0) {
                return REFUSED;
            }
            long witness = (long) CELL.compareAndExchange(c, at, s, s + 1);
            if (witness == s) {
                break;
            }
            if ((witness & CLOSING) != 0) {
                return REFUSED;
            }
            i = (i + 1) & (CELLS - 1); // collided: the next cell
        }
        if (((long) BASE_WORD.getVolatile(this) & CLOSING) != 0) { // ordering 1: after the cell's increment
            exit(i + 1); // used nothing; drains the cell if the closer closed it meanwhile
            return REFUSED;
        }
        return i + 1;
    }

    private static long mix(long x) {
        long h = x * 0x9E3779B97F4A7C15L;
        return h ^ (h >>> 29);
    }

    /**
     * Ends a call admitted by {@link #enter()} with {@code token}. If the guard is closing and this
     * was the last call inside, the release runs here, on this thread, before this returns.
     *
     * @throws IllegalStateException if no call was inside the token's part (an exit without its
     *     enter, or with another token)
     */
    public void exit(int token) {
        long s;
        if (token == BASE) {
            s = (long) BASE_WORD.getAndAdd(this, -1L);
            if ((s & COUNT) == 0) {
                BASE_WORD.getAndAdd(this, 1L); // undo, so the guard's own state stays consistent
                throw unmatched(token);
            }
        } else {
            long[] c = (long[]) CELLS_REF.getVolatile(this);
            if (c == null || token < 1 || token > CELLS) {
                throw unmatched(token);
            }
            int at = token * STRIDE;
            s = (long) CELL.getAndAdd(c, at, -1L);
            if ((s & COUNT) == 0) {
                CELL.getAndAdd(c, at, 1L);
                throw unmatched(token);
            }
        }
        if (s == (CLOSING | 1L)) {
            drained(1); // ordering 2: this part's last call left after its close
        }
    }

    private static IllegalStateException unmatched(int token) {
        return new IllegalStateException("exit(" + token + ") without a matching enter()");
    }

    /**
     * Closes the guard: no call enters from now on, and {@code release} runs once every call
     * inside has exited: here, before this returns, if none is inside, else on the thread of the
     * last one to exit. Only the first close counts.
     *
     * @return false if the guard was already closing ({@code release} is then never run)
     */
    public boolean close(Runnable release) {
        if (!RELEASE.compareAndSet(this, null, release)) {
            return false;
        }
        PENDING.setVolatile(this, BIAS); // before any part is closed (ordering 2)
        int parts = 1;
        int drainedHere = 0;
        if ((((long) BASE_WORD.getAndBitwiseOr(this, CLOSING)) & COUNT) == 0) {
            drainedHere++;
        }
        long[] c = (long[]) CELLS_REF.getVolatile(this); // after the base's close (ordering 1)
        if (c != null) {
            for (int i = 1; i <= CELLS; i++) {
                parts++;
                if ((((long) CELL.getAndBitwiseOr(c, i * STRIDE, CLOSING)) & COUNT) == 0) {
                    drainedHere++;
                }
            }
        }
        drained(BIAS - parts + drainedHere); // the settlement: pending is now the parts still to drain
        return true;
    }

    /** {@code n} subtracted from the parts still to drain; whoever brings them to 0 runs the release. */
    private void drained(long n) {
        if ((long) PENDING.getAndAdd(this, -n) == n) {
            Runnable r = (Runnable) RELEASE.getVolatile(this);
            if (r == null) {
                throw new AssertionError("closing without a release"); // close sets the release first
            }
            r.run();
        }
    }

    /** Whether {@link #close} was called (the release may still be waiting for calls inside). */
    public boolean isClosing() {
        return ((long) BASE_WORD.getVolatile(this) & CLOSING) != 0;
    }

    /** Calls inside now, over every part (a snapshot, for tests and diagnostics). */
    public long callsInside() {
        long n = (long) BASE_WORD.getVolatile(this) & COUNT;
        long[] c = (long[]) CELLS_REF.getVolatile(this);
        if (c != null) {
            for (int i = 1; i <= CELLS; i++) {
                n += (long) CELL.getVolatile(c, i * STRIDE) & COUNT;
            }
        }
        return n;
    }

    /** Whether calls collided on the base and the cells were made (for tests and diagnostics). */
    public boolean hasCells() {
        return CELLS_REF.getVolatile(this) != null;
    }

    @Override
    public String toString() {
        return "SharedLifetimeGuard[" + (isClosing() ? "closing, " : "open, ") + callsInside() + " inside"
                + (hasCells() ? ", " + CELLS + " cells" : "") + "]";
    }
}
