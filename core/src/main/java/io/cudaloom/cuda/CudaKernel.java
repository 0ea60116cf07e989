package io.cudaloom.cuda;

import io.cudaloom.GpuKernel;
import java.util.List;
import java.util.Objects;
import jcuda.driver.CUfunction;

/**
 * A kernel of a {@link CudaModule}; launch it with {@link CudaStream#launch}. Every launch checks its
 * arguments against {@code params} (read from the module's PTX, or declared at
 * {@link CudaModule#kernel(String, List)}) before enqueueing anything.
 */
public record CudaKernel(CudaModule module, CUfunction function, String name, List<GpuKernel.Param> params) {
    public CudaKernel {
        Objects.requireNonNull(module, "module");
        Objects.requireNonNull(function, "function");
        Objects.requireNonNull(name, "name");
        params = List.copyOf(params);
    }
}
