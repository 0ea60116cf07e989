package io.cudaloom.internal;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.GpuStream;
import io.cudaloom.LiveResources;
import io.cudaloom.ReactorConfig;
import io.cudaloom.spi.DeviceBackend;
import io.cudaloom.spi.DeviceProbes;
import io.cudaloom.spi.FaultSink;
import io.cudaloom.spi.StreamBackend;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * What the API package lets the library's backends do to its devices, streams and kernels, and
 * nobody else: start a device's reactor, count what it hands out, admit and count submissions,
 * report faults, read a kernel's Java body. The JDK's {@code SharedSecrets} pattern
 * ({@code jdk.internal.access}): the API package implements {@link Hooks} in a package-private
 * class and {@link #install installs} it when {@link GpuDevice} is initialised; a backend calls
 * {@link #hooks()}. So the API classes carry no member for backends (no protected method a class
 * could reach by declaring a subclass, none in the javadoc), and the backends are still ordinary
 * subclasses in their own packages.
 *
 * <p>Not API: this package is not exported, so on the module path no other module can name it; on
 * the class path it is public but no API, like every unexported package.
 */
public final class BackendAccess {
    /** Set once, by {@link #install}, from GpuDevice's static initialiser; volatile: read by any thread. */
    private static volatile @Nullable Hooks hooks;

    private BackendAccess() {}

    /** The API package's hooks; initialises {@link GpuDevice} (which installs them) if need be. */
    public static Hooks hooks() {
        Hooks h = hooks;
        if (h == null) {
            try {
                Class.forName(GpuDevice.class.getName(), true, GpuDevice.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new AssertionError(e);
            }
            h = hooks;
            if (h == null) {
                throw new IllegalStateException("GpuDevice's initialisation installed no backend hooks");
            }
        }
        return h;
    }

    /**
     * Called once, by {@link GpuDevice}'s static initialiser.
     *
     * @throws IllegalCallerException if {@code h} is not the API package's own
     * @throws IllegalStateException if hooks were installed already
     */
    public static synchronized void install(Hooks h) {
        Class<?> c = h.getClass();
        if (c.getModule() != GpuDevice.class.getModule() || c.getClassLoader() != GpuDevice.class.getClassLoader()
                || !c.getPackageName().equals(GpuDevice.class.getPackageName())) {
            throw new IllegalCallerException("backend hooks are installed by io.cudaloom only, not " + c.getName());
        }
        if (hooks != null) {
            throw new IllegalStateException("backend hooks installed twice");
        }
        hooks = h;
    }

    /** The API package's side: what a backend may do to a device, a stream or a kernel. */
    public interface Hooks {
        // ---- devices --------------------------------------------------------------------------

        /**
         * Starts {@code device}'s reactor, with flag memory from {@code backend}; called once by the
         * backend's factory after construction. {@code streams} gives each stream of the device,
         * from the stream's constructor (not yet fully constructed: keep the reference, call
         * nothing on it), the backend side the reactor will use.
         *
         * @throws IllegalStateException if the reactor was started already
         */
        void startReactor(GpuDevice device, ReactorConfig config, DeviceBackend backend,
                Function<? super GpuStream, ? extends StreamBackend> streams);

        /**
         * Counts one piece of memory ({@link LiveResources.Kind#DEVICE_MEMORY} or
         * {@link LiveResources.Kind#HOST_MEMORY}) handed out by {@code allocate} or
         * {@code allocateHost}, once the allocation has succeeded. Run the returned action from the
         * memory's {@code close()}; it counts the memory back once, however often it runs. Streams
         * and waits are counted by {@link GpuStream} and {@code GpuEvent} themselves.
         *
         * @throws IllegalArgumentException for another kind
         */
        Runnable tracked(GpuDevice device, LiveResources.Kind kind);

        /** Whether {@code device} is closed and its flag memory freed (no flag write can land any more). */
        boolean isMemoryReleased(GpuDevice device);

        /** The backend's own counters, for tests and the lifetime stress ({@link DeviceBackend#probes()}). */
        DeviceProbes probes(GpuDevice device);

        // ---- kernels ----------------------------------------------------------------------------

        /** What identifies {@code kernel}'s PTX module (kernels of one module share it: load it once). */
        Object kernelModule(GpuKernel kernel);

        /** The kernel a GPU runs for {@code GpuStream.launchKernel(Duration)}: {@code spin_kernel(u64 nanos)}. */
        GpuKernel spinKernel();

        /** The Java body of {@code kernel}, which the simulated device runs. */
        GpuKernel.Body kernelBody(GpuKernel kernel);

        /**
         * The parameters of the {@code .entry} named {@code entry} in {@code ptx}.
         *
         * @throws IllegalArgumentException if there is no such entry, or a parameter is of a type
         *     no launch can pass
         */
        List<GpuKernel.Param> paramsOf(String ptx, String entry);

        /**
         * Checks that {@code declared} fits the parameters {@code ptxParams} read from {@code where},
         * one for one (the three 64-bit kinds are all a 64-bit word).
         *
         * @throws IllegalArgumentException naming the kernel and the first parameter that differs
         */
        void checkMatches(String entry, List<GpuKernel.Param> declared, List<GpuKernel.Param> ptxParams, String where);

        // ---- streams ----------------------------------------------------------------------------

        /**
         * For a backend whose stream constructor fails after {@link GpuStream}'s (e.g. the driver
         * refused to create the stream): the stream was never handed out, so it is not counted in
         * the device's {@code liveResources()}. Call it before rethrowing.
         */
        void notCreated(GpuStream stream);

        /**
         * Before every call that enqueues work on the stream (launch, copy, memset): takes room for
         * one entry in the stream's admission bound ({@link ReactorConfig#admissionLimit()}),
         * parking the calling thread (FIFO, keeping its interrupt status) while the stream is full,
         * so no thread ever waits for room inside the driver. Returns whether room was taken: if
         * the enqueue then fails, hand that to {@link #submissionFailed}. After a successful
         * enqueue call {@link #noteSubmission}. A thread the stream's completions depend on (the
         * reactor's scanner, a host callback, the stream's own worker) never parks here. After it
         * returns the backend must check again that the stream is open and unfaulted: a close or
         * fault lets parked callers through.
         */
        boolean admit(GpuStream stream);

        /** The enqueue after {@link #admit} failed; {@code admitted} is what admit returned. */
        void submissionFailed(GpuStream stream, boolean admitted);

        /** After each submission's driver call (or enqueue) has returned. */
        void noteSubmission(GpuStream stream);

        /**
         * The first {@code count} counted submissions are known complete (e.g. a blocking
         * synchronize returned after {@code submissionCount()} read {@code count}): a proof, which
         * returns their admission room.
         */
        void noteCompletedThrough(GpuStream stream, long count);

        /**
         * Whether {@code stream} submits by combining ({@code Submission.COMBINING}): then a work call,
         * after its checks and with its memory lifetimes entered, makes a {@link io.cudaloom.spi.StreamOp} and
         * {@link #append}s it instead of calling the driver ({@link #admit} and
         * {@link #noteSubmission} are not used), and the backend's flag write and host callback skip
         * their closed check (the stream checked it at the append; the drainer submits the entries
         * appended before a close after it).
         */
        boolean combining(GpuStream stream);

        /** What a wait for the work appended to {@code stream} so far requires (its count, or the position after its last work entry when combining). */
        long required(GpuStream stream);

        /**
         * Appends {@code op} to the stream's submission queue and returns (combining only); never parks
         * for room. False: the call raced the stream's close and came after it; the entry is discarded
         * by the drainer (its {@code finish(false)} exits its lifetimes: the caller must not), and the
         * caller throws the closed stream's exception.
         */
        boolean append(GpuStream stream, io.cudaloom.spi.StreamOp op);

        /** Waits until everything appended to the stream before the call is submitted (combining; no-op otherwise). */
        void flush(GpuStream stream);

        /** For tests: {appended, submitted, queued, trackers} of a combining stream, null for a direct one. */
        long @org.jspecify.annotations.Nullable [] submissionProbe(GpuStream stream);

        /**
         * Where to report that {@code stream} faulted, and ask whether it has: the device's fault
         * owner keeps the fault (the first report wins), so the backend keeps no copy. Report a
         * fault before {@link StreamBackend#queryState()} answers {@code FAULTED}; throw
         * {@link FaultSink#failure}{@code ("work refused, ...")} for a call refused after it.
         */
        FaultSink faultSink(GpuStream stream);

        // ---- memory -----------------------------------------------------------------------------

        /**
         * Runs {@code done} once the first {@code required} counted submissions of {@code stream}
         * are complete or will never run (a fault, the device's close): at once if a proof already
         * covers them, else later, on any thread. Exactly once; {@code done} must not block.
         */
        void whenWorkDone(GpuStream stream, long required, Runnable done);

        /** Whether a proof already covers the first {@code required} counted submissions of {@code stream} (no driver call). */
        boolean isKnownComplete(GpuStream stream, long required);

        /** Runs {@code free} on {@code device}'s own releaser thread, never the caller's (see {@link MemoryLifetime}). */
        void releaseOffCaller(GpuDevice device, Runnable free);
    }
}
