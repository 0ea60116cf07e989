package io.cudaloom.protocol;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * The lifetime of a native handle (a CUDA stream, a CUDA context) that calls on many threads use
 * and one release ends: every call that uses the handle runs between {@link #enter()} and
 * {@link #exit()}, and the release runs exactly once, after {@link #close} and after every call
 * that entered has exited. No call can enter once the guard is closing. Nobody waits: the release
 * is run by whoever leaves last, the closer itself if no call is inside, else the thread of the
 * last call to {@link #exit()} ("the last one out turns off the light"). So a close never blocks,
 * not even behind a call that blocks for long (a {@code cuStreamSynchronize}): the release then
 * follows that call when it returns.
 *
 * <h2>State</h2>
 * One {@code long}: bit 62 {@code CLOSING}, bits 0 to 61 the number of calls inside. Every change
 * is an atomic read-modify-write of that word, so all of them are totally ordered (the word's
 * modification order), and each reads the value the one before it wrote:
 * <ol>
 *   <li><b>Enter</b> is a compare-and-set from a value without {@code CLOSING} to that value plus
 *       one, retried while the bit stays clear. So once {@code CLOSING} is set the count can only
 *       go down: a call that read the word before the bit was set fails its compare-and-set, reads
 *       it again and is refused. (Checking the bit and then incrementing in two steps is the bug
 *       this guard exists to remove: a call could pass the check, the closer see no call inside
 *       and release the handle, and the call then use it. The jcstress {@code LifetimeGuardTest}
 *       checks the guard; its broken twin, which checks then increments, is caught.)
 *   <li><b>Close</b> first publishes the release with a compare-and-set of its own field from null
 *       (only one closer wins), then sets {@code CLOSING} with a get-and-bitwise-or. If that saw no
 *       call inside, the closer runs the release; otherwise the {@code exit} that takes the word
 *       from "closing, one inside" to "closing, none inside" runs it. There is exactly one such
 *       transition, and exactly one of the two cases holds, so the release runs once.
 *   <li><b>Exit</b> is a get-and-add of -1.
 * </ol>
 * <b>What happens-before the release.</b> Every access of the word is volatile, and the release
 * runs on a thread whose read-modify-write read a value written, directly or through the chain of
 * read-modify-writes in between, by every call's exit (and by the close). So everything every
 * admitted call did before its {@code exit} (its driver call on the handle) happens-before the
 * release; and a call refused by {@code enter} does nothing with the handle. The release itself
 * must publish its effects (e.g. a volatile "gone" flag) for readers that do not enter.
 *
 * <p>Cost on the hot path: {@code enter} is a volatile load and one compare-and-set,
 * {@code exit} one get-and-add, both on a word shared only by the calls on the same handle
 * (measured by the JMH benchmark {@code LifetimeGuardBenchmark} in the stress module).
 *
 * <p>Rules for users: call {@link #exit()} exactly once for each {@code enter()} that returned
 * true (in a {@code finally}); the release must not throw and must not block for long, since it may
 * run on any caller's thread, inside that caller's {@code exit}.
 */
public final class LifetimeGuard {
    /** Set once by {@link #close}: no call enters from then on. */
    private static final long CLOSING = 1L << 62;
    private static final long COUNT = CLOSING - 1;
    private static final VarHandle STATE;
    private static final VarHandle RELEASE;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            STATE = lookup.findVarHandle(LifetimeGuard.class, "state", long.class);
            RELEASE = lookup.findVarHandle(LifetimeGuard.class, "release", Runnable.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through STATE
    private volatile long state;
    /** Written once, by the winning closer, before it sets CLOSING; read by whoever runs it. */
    @SuppressWarnings("unused") // through RELEASE
    private volatile @Nullable Runnable release;

    /**
     * Admits a call that will use the handle; false once the guard is closing (the handle is
     * released or about to be: the call must not use it).
     */
    public boolean enter() {
        long s = (long) STATE.getVolatile(this);
        while ((s & CLOSING) == 0) {
            long witness = (long) STATE.compareAndExchange(this, s, s + 1);
            if (witness == s) {
                return true;
            }
            s = witness;
        }
        return false;
    }

    /**
     * Ends a call admitted by {@link #enter()}. If the guard is closing and this was the last call
     * inside, the release runs here, on this thread, before this returns.
     *
     * @throws IllegalStateException if no call was inside (an exit without its enter)
     */
    public void exit() {
        long s = (long) STATE.getAndAdd(this, -1L);
        if ((s & COUNT) == 0) {
            STATE.getAndAdd(this, 1L); // undo, so the guard's own state stays consistent
            throw new IllegalStateException("exit() without a matching enter()");
        }
        if (s == (CLOSING | 1L)) {
            runRelease();
        }
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
        long s = (long) STATE.getAndBitwiseOr(this, CLOSING);
        if ((s & COUNT) == 0) {
            runRelease();
        }
        return true;
    }

    /** Whether {@link #close} was called (the release may still be waiting for calls inside). */
    public boolean isClosing() {
        return ((long) STATE.getVolatile(this) & CLOSING) != 0;
    }

    /** Calls inside now (a snapshot, for tests and diagnostics). */
    public long callsInside() {
        return (long) STATE.getVolatile(this) & COUNT;
    }

    private void runRelease() {
        Runnable r = (Runnable) RELEASE.getVolatile(this);
        if (r == null) {
            throw new AssertionError("closing without a release"); // close sets the release first
        }
        r.run();
    }

    @Override
    public String toString() {
        long s = (long) STATE.getVolatile(this);
        return "LifetimeGuard[" + ((s & CLOSING) != 0 ? "closing, " : "open, ") + (s & COUNT) + " inside]";
    }
}
