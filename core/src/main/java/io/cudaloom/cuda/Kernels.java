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
 * The library's own kernels (resource {@value #PTX_RESOURCE}, hand-written PTX; the CUDA C++
 * equivalent is kernels.cu beside it), used by the tests, the demo and the benchmarks. Each declares
 * its parameters (checked against the PTX when loaded); a pointer parameter takes a
 * {@link DeviceBuffer} or a raw device address as a {@code Long}.
 */
public final class Kernels implements AutoCloseable {
    public static final String PTX_RESOURCE = "/io/cudaloom/kernels.ptx";

    private final CudaModule module;
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

    Kernels(CudaModule module) {
        this.module = module;
        this.empty = module.kernel("empty_kernel", List.of());
        this.spin = module.kernel("spin_kernel", List.of(LONG));
        this.fill = module.kernel("fill_u32", List.of(POINTER_OR_LONG, INT, INT));
        this.scale = module.kernel("scale_f32", List.of(POINTER_OR_LONG, FLOAT, INT));
        this.fault = module.kernel("fault_kernel", List.of(POINTER_OR_LONG));
    }

    /** The PTX text. */
    public static String ptx() {
        try (InputStream in = Kernels.class.getResourceAsStream(PTX_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource " + PTX_RESOURCE + " missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

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
        module.close();
    }
}
