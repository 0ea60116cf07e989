package io.cudaloom.internal;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuKernel;
import io.cudaloom.KernelThread;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.util.function.Function;

/**
 * How a backend that runs kernel bodies on the host (the simulated device) runs one launch:
 * {@link GpuKernel.Body} once per thread of the grid, each seeing its {@link KernelThread}. The
 * launch is prepared on the launching thread (the arguments copied, memory arguments resolved to
 * their bytes then) and run later, on the stream's thread.
 *
 * <p>{@code KernelThread} is API (a kernel body reads its thread through it) but its constructor
 * and {@code runAll} are private: no user can make or run one. They are reached here through a
 * private lookup, which the module {@code io.cudaloom} grants itself (on the class path, the
 * unnamed module likewise), so the dependency runs one way, from this package to the API, and
 * the API package names nothing of it.
 */
public final class KernelRuns {
    private static final MethodHandle NEW;
    private static final MethodHandle RUN_ALL;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(KernelThread.class, MethodHandles.lookup());
            NEW = lookup.findConstructor(KernelThread.class,
                    MethodType.methodType(void.class, int.class, int.class, Object[].class, Function.class));
            RUN_ALL = lookup.findVirtual(KernelThread.class, "runAll",
                    MethodType.methodType(void.class, GpuKernel.Body.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private KernelRuns() {}

    /**
     * Prepares a {@code gridX} x {@code blockX} launch now ({@code memory} maps a memory argument
     * to its bytes); the returned task runs {@code body} for every thread of it, in index order.
     */
    public static Runnable prepare(int gridX, int blockX, Object[] args, Function<DeviceMemory, ByteBuffer> memory,
            GpuKernel.Body body) {
        KernelThread threads;
        try {
            threads = (KernelThread) NEW.invokeExact(gridX, blockX, args, memory);
        } catch (Throwable e) {
            throw unchecked(e);
        }
        return () -> {
            try {
                RUN_ALL.invokeExact(threads, body);
            } catch (Throwable e) {
                throw unchecked(e); // a body's own exception passes as it is: the stream handles it as before
            }
        };
    }

    /** Neither handle throws a checked exception: anything else is rethrown as it is. */
    private static RuntimeException unchecked(Throwable e) {
        if (e instanceof RuntimeException r) {
            return r;
        }
        if (e instanceof Error err) {
            throw err;
        }
        return new IllegalStateException(e);
    }
}
