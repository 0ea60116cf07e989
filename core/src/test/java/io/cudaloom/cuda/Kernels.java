package io.cudaloom.cuda;

import static io.cudaloom.GpuKernel.Param.FLOAT;
import static io.cudaloom.GpuKernel.Param.INT;
import static io.cudaloom.GpuKernel.Param.LONG;
import static io.cudaloom.GpuKernel.Param.POINTER_OR_LONG;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A test fixture (core's test-jar, never shipped): the library's built-in kernels as raw
 * {@link CudaKernel}s of one loaded module, for the GPU tests, the demo and the benchmarks that
 * launch on a {@link CudaStream} directly, plus the kernel that faults the context on purpose.
 * Users launch the same built-ins through the API ({@code GpuKernel.EMPTY}, {@code FILL_U32},
 * {@code SCALE_F32}, and the spin kernel as {@code GpuStream.launchKernel(Duration)}); this class reads the same PTX ({@value #PTX_RESOURCE}), so
 * the catalogue is {@code GpuKernel}'s alone. Each declares its parameters (checked against the PTX
 * when loaded); a pointer parameter takes a {@link DeviceBuffer} or a raw device address as a {@code Long}.
 */
public final class Kernels implements AutoCloseable {
    /** The built-in kernels' PTX (core's main resource, which {@code GpuKernel} loads too). */
    public static final String PTX_RESOURCE = "/io/cudaloom/kernels.ptx";
    /** The fault kernel's PTX (a test resource beside this class). */
    public static final String FAULT_PTX_RESOURCE = "/io/cudaloom/cuda/fault-kernel.ptx";

    private final CudaModule module;
    private final CudaModule faultModule;
    /** Does nothing. */
    public final CudaKernel empty;
    /** {@code spin_kernel(u64 nanos)}: spins on %globaltimer for {@code nanos}. */
    public final CudaKernel spin;
    /** {@code fill_u32(u32* out, u32 value, u32 n)}. */
    public final CudaKernel fill;
    /** {@code scale_f32(f32* data, f32 factor, u32 n)}. */
    public final CudaKernel scale;
    /** {@code fault_kernel(u32* bogus)}: stores through {@code bogus}; pass an unmapped address. */
    public final CudaKernel fault;

    private Kernels(CudaModule module, CudaModule faultModule) {
        this.module = module;
        this.faultModule = faultModule;
        this.empty = module.kernel("empty_kernel", List.of());
        this.spin = module.kernel("spin_kernel", List.of(LONG));
        this.fill = module.kernel("fill_u32", List.of(POINTER_OR_LONG, INT, INT));
        this.scale = module.kernel("scale_f32", List.of(POINTER_OR_LONG, FLOAT, INT));
        this.fault = faultModule.kernel("fault_kernel", List.of(POINTER_OR_LONG));
    }

    /** Loads the kernels into {@code device}'s context; close them before the device. */
    public static Kernels load(CudaDevice device) {
        CudaModule main = device.loadModule(ptx());
        try {
            return new Kernels(main, device.loadModule(faultPtx()));
        } catch (RuntimeException | Error e) {
            main.close();
            throw e;
        }
    }

    /** The built-in kernels' PTX text. */
    public static String ptx() {
        return resource(PTX_RESOURCE);
    }

    /** The fault kernel's PTX text. */
    public static String faultPtx() {
        return resource(FAULT_PTX_RESOURCE);
    }

    private static String resource(String name) {
        try (InputStream in = Kernels.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("resource " + name + " missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The module of the built-in kernels. */
    public CudaModule module() {
        return module;
    }

    /** Launches {@code empty_kernel} on one thread. */
    public void launchEmpty(CudaStream stream) {
        stream.launch(empty, 1, 1);
    }

    /** Launches {@code spin_kernel} (one thread) for {@code nanos}. */
    public void launchSpin(CudaStream stream, long nanos) {
        stream.launch(spin, 1, 1, nanos);
    }

    @Override
    public void close() {
        try {
            faultModule.close();
        } finally {
            module.close();
        }
    }
}
