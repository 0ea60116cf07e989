package io.cudaloom.internal;

import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.GpuStream;
import io.cudaloom.LiveResources;
import io.cudaloom.ReactorConfig;
import io.cudaloom.spi.DeviceBackend;
import io.cudaloom.spi.DeviceProbes;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamSubmission;
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
         * The reactor's own object for {@code stream}, to which the backend's stream hands every work
         * call ({@link StreamSubmission#submit}: a launch, copy or memset made into one
         * {@link io.cudaloom.spi.StreamOp}), reports its faults ({@link StreamSubmission#faults()},
         * the device's fault owner: the first report wins, so the backend keeps no copy) and a
         * synchronize's proof. One per stream, for its whole life: a backend asks once, after
         * {@link GpuStream}'s constructor, and keeps it. Its mode (direct, or by combining) was chosen
         * from the device's configuration when the stream was made; the backend's code is the same for
         * both: with combining its flag write and host callback are submitted after the close for the
         * entries appended before it, so the backend refuses them only once {@link StreamBackend#shutdown()}
         * has run.
         */
        StreamSubmission submission(GpuStream stream);

        /** What a wait for the work submitted to {@code stream} so far requires (its count, or the position after its last work entry when combining). */
        long required(GpuStream stream);

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
