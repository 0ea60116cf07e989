package io.cudaloom.cuda;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuLaunchHostFunc;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamQuery;

import io.cudaloom.protocol.LifetimeGuard;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * A {@link CudaStream}'s driver handle and its lifetime: no driver call ever runs on the handle
 * once it is destroyed (the driver may hand the same handle to a new stream, and a call on a
 * destroyed one can land on someone else's stream or crash the process), and the handle is
 * destroyed once the stream's work is done.
 *
 * <h2>Two guards</h2>
 * <ol>
 *   <li>{@link #calls}: every call that uses the handle while the stream takes work (launches,
 *       copies, memsets, flag writes, host functions, queries, {@code cuStreamSynchronize}) runs
 *       inside it ({@link #enter()}, {@link #exit()}). It is closed when the close's drain
 *       completed without failure ({@link #destroyOnceIdle()}: the work submitted before the close
 *       is done), or by the device's release ({@link #closeForRelease()}). Its release,
 *       {@link #whenQuiet()}, runs once no call is inside and none can enter.
 *   <li>{@link #queries}: work that raced the close (a call admitted before it, enqueued behind the
 *       drain's flag write) may still run then. The handle is then kept alive, for queries only
 *       (the reactor's fault probe and settlement checks still ask about such work), until a host
 *       function behind all of it says it is done; {@link #destroyNow()} is its release.
 * </ol>
 * A call refused by both answers from what the destroy recorded ({@link #idleAtDestroy}).
 *
 * <p>{@code cuStreamSynchronize} runs inside {@link #calls} like every call, so a stream's destroy
 * (and the device's release, which waits for every stream's destroy) follows a synchronize still in
 * flight: the destroy runs on that thread as it returns, which it does when the stream's work is
 * done, the same moment the destroy waits for anyway. Nobody blocks on it: a close never waits.
 *
 * <p>The context: a live handle holds one entry of its device's context guard, taken when the
 * stream is made ({@link CudaDevice#newStream()}) and given back by {@link #destroyNow()}, so the
 * context outlives every call on every stream and every destroy ({@link CudaDevice}, "Lifetimes").
 *
 * <p>No driver call may be made on a CUDA host-function thread, so a drain delivered there (a
 * fallback registration) and a host function's "work done" hand the next step to a virtual thread.
 */
final class StreamHandle {
    /** Set while one of this library's host functions runs on the current thread (a driver thread). */
    private static final ThreadLocal<Boolean> ON_HOST_FUNCTION = new ThreadLocal<>();

    private final CudaStream owner;
    private final CudaDevice device;
    private final CUstream stream = new CUstream();
    /** The stream's native address, for the downcalls of {@link HotCalls} (0 where JCuda makes them). */
    private final long address;
    private final LifetimeGuard calls = new LifetimeGuard();
    private final LifetimeGuard queries = new LifetimeGuard();
    /** Set by the device's release before it closes the guards: destroy at once, wait for nothing. */
    private volatile boolean releasing;
    /** Set by {@link #whenQuiet()} before it reads {@link #releasing} (their Dekker pair, see there). */
    private volatile boolean quiet;
    /** Written by {@link #destroyNow()} before it gives the context entry back. */
    private volatile boolean destroyed;
    /** Whether the stream had no work left when it was destroyed (no flag write of it can land). */
    private volatile boolean idleAtDestroy;

    /** Creates the driver's stream; the caller holds the device's context guard (see the class comment). */
    StreamHandle(CudaStream owner, CudaDevice device) {
        this.owner = owner;
        this.device = device;
        Cuda.check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        this.address = HotCalls.handleAddress(stream);
        device.driverStreamCreated();
    }

    /** The raw handle, for callers mixing raw JCuda in; valid until the stream is closed. */
    CUstream raw() {
        return stream;
    }

    /** {@link #raw()}'s native address for {@link HotCalls}'s downcalls (0 where JCuda makes the calls). */
    long address() {
        return address;
    }

    // ---- calls ---------------------------------------------------------------------------------

    /**
     * Admits a call on the handle; false once the stream is being destroyed (the caller must not
     * touch the handle then). Pair a true answer with {@link #exit()}, in a {@code finally}.
     */
    boolean enter() {
        if (!calls.enter()) {
            return false;
        }
        if (device.isContextGone()) { // cannot happen: the context outlives every admitted call
            calls.exit();
            device.callAdmittedAfterRelease();
            return false;
        }
        return true;
    }

    void exit() {
        calls.exit();
    }

    /**
     * Admits a query: while the stream takes calls as any call, after that while it waits for the
     * work that raced its close. Returns the guard to exit, or null if refused (then answer from
     * {@link #isDestroyed()} and {@link #wasIdleAtDestroy()}).
     */
    LifetimeGuard enterQuery() {
        if (enter()) {
            return calls;
        }
        if (queries.enter()) {
            if (device.isContextGone()) {
                queries.exit();
                device.callAdmittedAfterRelease();
                return null;
            }
            return queries;
        }
        return null;
    }

    boolean isDestroyed() {
        return destroyed;
    }

    boolean wasIdleAtDestroy() {
        return idleAtDestroy;
    }

    /** Whether the current thread is running one of this library's host functions (no driver call allowed). */
    static boolean onHostFunction() {
        return ON_HOST_FUNCTION.get() != null;
    }

    /** Runs a host function behind the stream's work: {@code body} runs marked as on a host-function thread. */
    static jcuda.driver.CUhostFn hostFunction(Runnable body) {
        return userData -> {
            ON_HOST_FUNCTION.set(Boolean.TRUE);
            try {
                body.run();
            } finally {
                ON_HOST_FUNCTION.remove();
            }
        };
    }

    // ---- the destroy ----------------------------------------------------------------------------

    /**
     * The close's drain completed without failure: the work submitted before the close is done.
     * Closes the calls guard; the handle is destroyed once no call is inside and the stream is idle.
     */
    void destroyOnceIdle() {
        calls.close(this::whenQuiet);
    }

    /** {@code step} now, or on a virtual thread when this is a host-function thread (no driver call there). */
    private boolean deferredOffHostFunction(Runnable step) {
        if (!onHostFunction()) {
            return false;
        }
        Thread.ofVirtual().name("cuda-loom destroy " + owner).start(step);
        return true;
    }

    /**
     * The device's release: destroy now, busy or not (the release follows the reactor's settlement,
     * so no flag write of this stream can still land; kernels may still run, which the driver
     * finishes after the destroy). Waits for nothing: a call inside delays the destroy until it exits.
     */
    void closeForRelease() {
        releasing = true; // before the close and before reading `quiet` (Dekker with whenQuiet)
        if (!calls.close(this::whenQuiet) && quiet) {
            // whenQuiet already ran and may be waiting for a host function that a dead context
            // will never run: take the destroy over (the first close of `queries` wins).
            queries.close(this::destroyNow);
        }
        // Otherwise whenQuiet has still to run (it will see `releasing`) or has just run.
    }

    /**
     * The release of {@link #calls}: no call is inside and none can enter, so this thread may use
     * the handle alone, except for queries (which enter {@link #queries}, as this does). Idle:
     * destroy. Busy (work that raced the close): a host function behind that work says when it is
     * done, and the handle is destroyed then. The device's release skips the wait.
     *
     * <p>{@link #quiet} and {@link #releasing} are a Dekker pair: this writes {@code quiet} and then
     * reads {@code releasing}, {@link #closeForRelease()} writes {@code releasing} and then reads
     * {@code quiet} (all volatile), so at least one of them sees the other, and a destroy waiting
     * for a host function is always either skipped here or taken over there.
     */
    private void whenQuiet() {
        if (deferredOffHostFunction(this::whenQuiet)) {
            return; // e.g. a drain delivered by a fallback's host function; still the only user of the handle
        }
        quiet = true;
        if (!queries.enter()) {
            return; // the device's release took the destroy over
        }
        boolean destroy = true;
        try {
            if (!releasing && !device.isContextGone()) {
                cuCtxSetCurrent(device.contextHandle());
                int r = cuStreamQuery(stream);
                if (r == CUresult.CUDA_ERROR_NOT_READY) {
                    // No driver call in a host function: its body hands the destroy to a virtual thread.
                    r = cuLaunchHostFunc(stream, hostFunction(() -> Thread.ofVirtual()
                            .name("cuda-loom destroy " + owner).start(this::destroyWhenDone)), null);
                    destroy = r != CUresult.CUDA_SUCCESS;
                }
                if (r != CUresult.CUDA_SUCCESS && r != CUresult.CUDA_ERROR_NOT_READY) {
                    owner.noteDriverResult(r); // a sticky fault: the device's close resets the context
                }
            }
        } finally {
            queries.exit();
        }
        if (destroy) {
            queries.close(this::destroyNow);
        }
    }

    private void destroyWhenDone() {
        queries.close(this::destroyNow);
    }

    /**
     * The release of {@link #queries}: no call of any kind is inside or can enter; the last use of
     * the handle. Records whether the stream was idle, destroys it, and gives the context entry back
     * (which may release the context, on this thread, if the device's release waits for it).
     */
    private void destroyNow() {
        if (deferredOffHostFunction(this::destroyNow)) {
            return;
        }
        boolean idle = false;
        try {
            if (!device.isContextGone()) {
                cuCtxSetCurrent(device.contextHandle());
                idle = cuStreamQuery(stream) == CUresult.CUDA_SUCCESS;
                cuStreamDestroy(stream); // a busy stream's work still runs; the driver frees it after
            }
        } finally {
            idleAtDestroy = idle;
            destroyed = true;
            device.streamDestroyed(owner, idle);
        }
    }

    @Override
    public String toString() {
        return "StreamHandle[" + owner + ", calls " + calls + ", queries " + queries
                + (destroyed ? ", destroyed]" : "]");
    }
}
