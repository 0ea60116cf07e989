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
     * Prepares a {@code gridX} x {@code blockX} launch of {@code kernel} now ({@code memory} maps a
     * memory argument to its bytes); the returned task runs {@code body} for every thread of it, in
     * index order. If the body throws, the task throws a {@link KernelFailed} that names the kernel
     * and the thread, whose cause is the body's exception as it was thrown.
     */
    public static Runnable prepare(String kernel, int gridX, int blockX, Object[] args,
            Function<DeviceMemory, ByteBuffer> memory, GpuKernel.Body body) {
        KernelThread threads;
        try {
            threads = (KernelThread) NEW.invokeExact(gridX, blockX, args, memory);
        } catch (Throwable e) {
            throw unchecked(e);
        }
        long[] sizes = memorySizes(args); // now: a close after the launch does not change what it saw
        return () -> {
            try {
                RUN_ALL.invokeExact(threads, body);
            } catch (RuntimeException | Error e) {
                throw new KernelFailed(describe(kernel, threads, gridX, blockX, sizes, e), e);
            } catch (Throwable e) {
                throw unchecked(e);
            }
        };
    }

    /**
     * A kernel body threw, on the simulated device: the message names the kernel and the thread,
     * and the cause is the body's own exception (the stream's fault carries that cause).
     */
    public static final class KernelFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        KernelFailed(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    private static long[] memorySizes(Object[] args) {
        long[] sizes = new long[args.length];
        for (int i = 0; i < args.length; i++) {
            sizes[i] = args[i] instanceof DeviceMemory m ? m.bytes() : -1L;
        }
        return sizes;
    }

    /**
     * E.g. {@code "kernel scale_f32 failed in thread 2048 (block 2, thread 0 of a 3 x 1024 launch):
     * java.lang.IndexOutOfBoundsException (memory argument 0: 8192 bytes)"}; the memory arguments'
     * sizes only for an index out of bounds (whose JDK message, from a buffer, is often none).
     */
    private static String describe(String kernel, KernelThread t, int gridX, int blockX, long[] sizes, Throwable e) {
        StringBuilder sb = new StringBuilder("kernel ").append(kernel).append(" failed in thread ").append(t.index())
                .append(" (block ").append(t.blockIndex()).append(", thread ").append(t.threadIndex()).append(" of a ")
                .append(gridX).append(" x ").append(blockX).append(" launch): ").append(e);
        if (e instanceof IndexOutOfBoundsException) {
            String sep = " (";
            for (int i = 0; i < sizes.length; i++) {
                if (sizes[i] >= 0) {
                    sb.append(sep).append("memory argument ").append(i).append(": ").append(sizes[i]).append(" bytes");
                    sep = ", ";
                }
            }
            if (!sep.equals(" (")) {
                sb.append(')');
            }
        }
        return sb.toString();
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
