package io.cudaloom.reactor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * A registration served by a host callback on the stream instead of a slot (pool exhausted, flag
 * write refused, or the HOST_CALLBACK strategy). Its target is taken exactly once, with an atomic
 * get-and-set, by whichever comes first: the host callback ({@link #run}), the scanner's fault
 * probe, the closing thread, or the registrant withdrawing it ({@link #cancel}, a compare-and-set).
 */
public final class FallbackRegistration implements Runnable, Registration {
    private static final VarHandle TARGET;

    static {
        try {
            TARGET = MethodHandles.lookup().findVarHandle(FallbackRegistration.class, "target", Completion.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * Who keeps the live fallbacks ({@link Registrar}): told once, by whichever takes the target,
     * after the take. An interface of this class's own, so that the fallback names nothing above it.
     */
    interface Owner {
        void fallbackFinished(FallbackRegistration fb);
    }

    private final Owner owner;
    final ReactorStream stream;
    /** Negative, unique per reactor, never {@link Waiter#NONE}: distinct from every slot ticket. */
    final long ticket;
    @SuppressWarnings("unused") // accessed through TARGET
    private volatile @Nullable Completion target;

    /** The stream's submission count read before the callback was enqueued: proven when it runs. */
    final long proof;

    FallbackRegistration(Owner owner, ReactorStream stream, long ticket, Completion target, long proof) {
        this.owner = owner;
        this.proof = proof;
        this.stream = stream;
        this.ticket = ticket;
        this.target = target;
    }

    /** Set while a host callback runs on this thread (see {@link #onHostCallback}). */
    private static final ThreadLocal<Boolean> IN_CALLBACK = new ThreadLocal<>();

    /** The host callback: the stream's prior work is done. */
    @Override
    public void run() {
        IN_CALLBACK.set(Boolean.TRUE);
        try {
            stream.completedThrough(proof); // the stream's prior work is done, withdrawn or not
            complete(null);
        } finally {
            IN_CALLBACK.remove();
        }
    }

    /** Whether the current thread is running a host callback (where a blocking wait would stall the stream). */
    public static boolean onHostCallback() {
        // Callbacks run on platform threads (StreamBackend.enqueueHostCallback): a virtual thread,
        // the callers of every work call and await, is answered without the thread-local lookup,
        // which also made each virtual thread a ThreadLocalMap (ThreadLocal.get() creates one).
        return !Thread.currentThread().isVirtual() && IN_CALLBACK.get() != null;
    }

    /**
     * Deliver to the target unless someone else already took it; true if this call delivered.
     * Never throws: a failing target is reported to this thread's uncaught-exception handler (see
     * {@link Waiter#deliverGuarded}), since this runs on the scanner, the closing thread or the
     * stream's host-callback thread.
     */
    boolean complete(@Nullable RuntimeException failure) {
        Completion c = (Completion) TARGET.getAndSet(this, null);
        if (c == null) {
            return false;
        }
        owner.fallbackFinished(this);
        Waiter.deliverGuarded(c, ticket, failure);
        return true;
    }

    /**
     * Withdraw the target; true if it will never be delivered. The target is the one it was made
     * with until it is taken (set to null, never to another), so the compare-and-set against the
     * value just read is the compare-and-set against that target: it fails exactly when
     * {@link #complete} (or an earlier cancel) took it first.
     */
    @Override
    public boolean cancel() {
        Completion expected = (Completion) TARGET.getVolatile(this);
        if (expected != null && TARGET.compareAndSet(this, expected, null)) {
            owner.fallbackFinished(this);
            return true;
        }
        return false;
    }
}
