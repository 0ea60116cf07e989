package io.cudaloom;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A kernel that runs on any backend: its PTX entry point for a GPU, and a Java body, run once per
 * thread of the grid, for the simulated device (numba's CUDA simulator does the same with the
 * kernel's Python code). Launch it with {@link GpuStream#launch}; the same program then runs
 * unchanged with or without a GPU. The body must compute what the PTX does: the simulated device
 * is for running code paths and tests without a GPU, not for checking the PTX.
 *
 * <p>Kernel arguments are {@link DeviceMemory} (a device pointer), {@code Integer}, {@code Long},
 * {@code Float} or {@code Double}, in the order of the PTX entry's parameters.
 */
public final class GpuKernel {
    /** The library's own kernels (hand-written PTX, the CUDA C++ beside it in the sources). */
    private static final String BUILT_IN_PTX = "/io/cudaloom/kernels.ptx";
    private static final Ptx BUILT_IN = Ptx.builtIn(); // before the kernels below use it

    /** {@code empty_kernel()}: does nothing (the cost of a launch and its completion alone). */
    public static final GpuKernel EMPTY = builtIn("empty_kernel", t -> {});

    /**
     * {@code spin_kernel(u64 nanos)}: each thread spins for {@code nanos} on the GPU's global
     * timer (the simulated body spins on {@code System.nanoTime}); launch one thread.
     * {@link GpuStream#launchKernel(java.time.Duration)} is this kernel.
     */
    public static final GpuKernel SPIN = builtIn("spin_kernel", t -> {
        long end = System.nanoTime() + t.longArg(0);
        while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
        }
    });

    /**
     * {@code fill_u32(u32* out, u32 value, u32 n)}: {@code out[i] = value} for each thread index
     * {@code i < n}.
     */
    public static final GpuKernel FILL_U32 = builtIn("fill_u32", t -> {
        int n = t.intArg(2);
        if (t.index() < n) {
            t.ints(0).put(t.index(), t.intArg(1));
        }
    });

    /** {@code scale_f32(f32* data, f32 factor, u32 n)}: {@code data[i] *= factor} for each {@code i < n}. */
    public static final GpuKernel SCALE_F32 = builtIn("scale_f32", t -> {
        int n = t.intArg(2);
        int i = t.index();
        if (i < n) {
            t.floats(0).put(i, t.floats(0).get(i) * t.floatArg(1));
        }
    });

    private final String entry;
    private final Ptx ptx;
    private final Body body;

    private GpuKernel(String entry, Ptx ptx, Body body) {
        this.entry = entry;
        this.ptx = ptx;
        this.body = body;
    }

    /**
     * A kernel from PTX text and its Java equivalent.
     *
     * @param ptx the module's PTX text (for example the output of {@code nvcc -ptx})
     * @param entry the name of the {@code .entry} function in it
     * @param body what one thread of the kernel does, for the simulated device
     * @throws IllegalArgumentException if {@code entry} is blank or not an entry of {@code ptx}
     */
    public static GpuKernel of(String ptx, String entry, Body body) {
        Objects.requireNonNull(ptx, "ptx");
        Objects.requireNonNull(entry, "entry");
        Objects.requireNonNull(body, "body");
        if (entry.isBlank()) {
            throw new IllegalArgumentException("kernel entry name must not be blank");
        }
        if (!ptx.contains(".entry " + entry) && !ptx.contains(".entry\t" + entry)) {
            throw new IllegalArgumentException("the PTX has no .entry named '" + entry + "'");
        }
        return new GpuKernel(entry, new Ptx(ptx), body);
    }

    private static GpuKernel builtIn(String entry, Body body) {
        return new GpuKernel(entry, BUILT_IN, body);
    }

    /** The PTX entry point's name. */
    public String entry() {
        return entry;
    }

    /** The PTX text of the module that holds this kernel. */
    public String ptx() {
        return ptx.text();
    }

    /**
     * Identifies the PTX module (kernels of one module share it, so a backend loads it once per
     * device); for backends.
     */
    public Object module() {
        return ptx;
    }

    /** The Java body the simulated device runs; for backends. */
    public Body body() {
        return body;
    }

    @Override
    public String toString() {
        return "kernel " + entry;
    }

    /** What one thread of the kernel does (see {@link KernelThread}). */
    @FunctionalInterface
    public interface Body {
        void run(KernelThread thread);
    }

    /** A module's PTX, read once (the built-in module from its resource, lazily). */
    private static final class Ptx {
        private final String resource;
        private volatile @Nullable String text;

        Ptx(String text) {
            this.resource = "";
            this.text = text;
        }

        private Ptx() {
            this.resource = BUILT_IN_PTX;
        }

        String text() {
            String t = text;
            if (t == null) {
                try (InputStream in = GpuKernel.class.getResourceAsStream(resource)) {
                    if (in == null) {
                        throw new IllegalStateException("resource " + resource + " missing from the class path");
                    }
                    t = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                text = t; // racy but idempotent: every reader computes the same text
            }
            return t;
        }

        static Ptx builtIn() {
            return new Ptx();
        }
    }
}
