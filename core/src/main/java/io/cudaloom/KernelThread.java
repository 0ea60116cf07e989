package io.cudaloom;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.Objects;
import java.util.function.Function;

/**
 * One thread of a kernel run by the simulated device ({@link GpuKernel.Body}): its index in a 1-D
 * grid and the launch's arguments. Memory arguments are seen as buffers over the device memory,
 * in native byte order, indexed absolutely ({@code ints(0).put(i, v)}). The threads of a launch
 * run one after another on the stream's thread, so a body needs no synchronisation; it must not
 * rely on an order between threads either, as on a GPU.
 */
public final class KernelThread {
    private final int gridX;
    private final int blockX;
    private final Object[] args;
    private final Object[] views;
    private int index;

    /**
     * The view of one launch; {@code memory} maps a memory argument to its bytes. Private: the
     * simulated device reaches it through {@code io.cudaloom.internal.KernelRuns} (a private
     * lookup inside this module), so that the API has no constructor users could call.
     */
    private KernelThread(int gridX, int blockX, Object[] args, Function<DeviceMemory, ByteBuffer> memory) {
        this.gridX = gridX;
        this.blockX = blockX;
        this.args = args.clone();
        this.views = new Object[args.length];
        for (int i = 0; i < args.length; i++) {
            if (args[i] instanceof DeviceMemory m) {
                views[i] = memory.apply(m).duplicate().order(ByteOrder.nativeOrder());
            }
        }
    }

    /** Runs {@code body} once for every thread of the grid, in index order. */
    private void runAll(GpuKernel.Body body) {
        long threads = (long) gridX * blockX;
        for (long i = 0; i < threads; i++) {
            index = (int) i;
            body.run(this);
        }
    }

    /** This thread's global index: {@code blockIdx.x * blockDim.x + threadIdx.x}. */
    public int index() {
        return index;
    }

    /** {@code blockIdx.x}. */
    public int blockIndex() {
        return index / blockX;
    }

    /** {@code threadIdx.x}. */
    public int threadIndex() {
        return index % blockX;
    }

    /** {@code gridDim.x}. */
    public int gridSize() {
        return gridX;
    }

    /** {@code blockDim.x}. */
    public int blockSize() {
        return blockX;
    }

    /** Argument {@code i}, a {@link DeviceMemory}, as bytes. */
    public ByteBuffer bytes(int i) {
        if (!(views[i] instanceof ByteBuffer b)) {
            throw new IllegalArgumentException("kernel argument " + i + " is " + describe(i) + ", not device memory");
        }
        return b;
    }

    /** Argument {@code i}, a {@link DeviceMemory}, as 32-bit integers. */
    public IntBuffer ints(int i) {
        return bytes(i).asIntBuffer();
    }

    /** Argument {@code i}, a {@link DeviceMemory}, as 32-bit floats. */
    public FloatBuffer floats(int i) {
        return bytes(i).asFloatBuffer();
    }

    /** Argument {@code i}, an {@code Integer}. */
    public int intArg(int i) {
        return arg(i, Integer.class);
    }

    /** Argument {@code i}, a {@code Long}. */
    public long longArg(int i) {
        return arg(i, Long.class);
    }

    /** Argument {@code i}, a {@code Float}. */
    public float floatArg(int i) {
        return arg(i, Float.class);
    }

    /** Argument {@code i}, a {@code Double}. */
    public double doubleArg(int i) {
        return arg(i, Double.class);
    }

    private <T> T arg(int i, Class<T> type) {
        Objects.checkIndex(i, args.length);
        if (!type.isInstance(args[i])) {
            throw new IllegalArgumentException("kernel argument " + i + " is " + describe(i) + ", not " + type.getSimpleName());
        }
        return type.cast(args[i]);
    }

    private String describe(int i) {
        Objects.checkIndex(i, args.length);
        return args[i] instanceof DeviceMemory ? "device memory" : "a " + args[i].getClass().getSimpleName();
    }
}
