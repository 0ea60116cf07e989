package io.cudaloom.demo;

import static io.cudaloom.GpuKernel.Param.FLOAT;
import static io.cudaloom.GpuKernel.Param.INT;
import static io.cudaloom.GpuKernel.Param.LONG;
import static io.cudaloom.GpuKernel.Param.POINTER_OR_LONG;

import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaKernel;
import io.cudaloom.cuda.CudaModule;
import io.cudaloom.cuda.CudaStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The library's built-in kernels as raw {@link CudaKernel}s, for the demo's CUDA workload and the
 * benchmarks, which launch on a {@link CudaStream} directly (the anchors they compare against do
 * not go through the reactor). Everything here is library API: the PTX is core's own resource
 * ({@value #PTX}, the one {@code GpuKernel} loads), loaded with {@link CudaDevice#loadModule}.
 * Application code launches the same kernels through {@code GpuKernel.EMPTY}, {@code FILL_U32},
 * {@code SCALE_F32} and {@code GpuStream.launchKernel(Duration)} instead.
 *
 * @param module the loaded module; closed by {@link #close()}
 * @param empty {@code empty_kernel()}: does nothing
 * @param spin {@code spin_kernel(u64 nanos)}: spins on %globaltimer for {@code nanos}
 * @param fill {@code fill_u32(u32* out, u32 value, u32 n)}
 * @param scale {@code scale_f32(f32* data, f32 factor, u32 n)}
 */
public record DemoKernels(CudaModule module, CudaKernel empty, CudaKernel spin, CudaKernel fill, CudaKernel scale)
        implements AutoCloseable {
    /** Core's resource holding the built-in kernels' PTX. */
    public static final String PTX = "/io/cudaloom/kernels.ptx";

    /** An address no allocation has: a store through it faults the context (CUDA_ERROR_ILLEGAL_ADDRESS). */
    public static final long UNMAPPED_ADDRESS = 0xdead_0000_0000L;

    /** Loads the built-in kernels into {@code device}'s context; close them before the device. */
    public static DemoKernels load(CudaDevice device) {
        CudaModule m = device.loadModule(ptxText());
        try {
            return new DemoKernels(m, m.kernel("empty_kernel", List.of()), m.kernel("spin_kernel", List.of(LONG)),
                    m.kernel("fill_u32", List.of(POINTER_OR_LONG, INT, INT)),
                    m.kernel("scale_f32", List.of(POINTER_OR_LONG, FLOAT, INT)));
        } catch (RuntimeException | Error e) {
            m.close();
            throw e;
        }
    }

    /** The PTX text of the built-in kernels, read from core's jar. */
    public static String ptxText() {
        try (InputStream in = CudaDevice.class.getResourceAsStream(PTX)) {
            if (in == null) {
                throw new IllegalStateException(PTX + " is missing from the class path (core's jar holds it)");
            }
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Launches {@code empty_kernel} on one thread. */
    public void launchEmpty(CudaStream stream) {
        stream.launch(empty, 1, 1);
    }

    /** Launches {@code spin_kernel} (one thread) for {@code nanos}. */
    public void launchSpin(CudaStream stream, long nanos) {
        stream.launch(spin, 1, 1, nanos);
    }

    /**
     * Launches a kernel that stores through {@link #UNMAPPED_ADDRESS}: {@code fill_u32} of one
     * element there. The context faults with CUDA_ERROR_ILLEGAL_ADDRESS, a sticky error.
     */
    public void launchFault(CudaStream stream) {
        stream.launch(fill, 1, 1, UNMAPPED_ADDRESS, 1, 1);
    }

    @Override
    public void close() {
        module.close();
    }
}
