package io.cudaloom.cuda;

import io.cudaloom.GpuKernel;
import java.util.List;
import java.util.Objects;
import jcuda.driver.CUfunction;

/**
 * A kernel of a {@link CudaModule} ({@link CudaModule#kernel}); launch it with
 * {@link CudaStream#launch}. Every launch checks its arguments against {@link #params()} (read from
 * the module's PTX, or declared at {@link CudaModule#kernel(String, List)}) before enqueueing
 * anything. Only a module makes one: its function handle lives as long as the module.
 */
public final class CudaKernel {
    private final CudaModule module;
    private final CUfunction function;
    /** The function's native address, for the downcalls of {@link HotCalls} (0 where JCuda makes them). */
    private final long functionAddress;
    private final String name;
    private final List<GpuKernel.Param> params;

    CudaKernel(CudaModule module, CUfunction function, String name, List<GpuKernel.Param> params) {
        this.module = Objects.requireNonNull(module, "module");
        this.function = Objects.requireNonNull(function, "function");
        this.functionAddress = HotCalls.handleAddress(function);
        this.name = Objects.requireNonNull(name, "name");
        this.params = List.copyOf(params);
    }

    /** The module that holds it. */
    public CudaModule module() {
        return module;
    }

    /**
     * The driver's function handle, for callers mixing raw JCuda in ({@code cuLaunchKernel} on
     * {@link CudaStream#handle()}); valid while the module is open.
     */
    public CUfunction function() {
        return function;
    }

    /** {@link #function()}'s native address for {@link HotCalls}'s downcalls (0 where JCuda makes the calls). */
    long functionAddress() {
        return functionAddress;
    }

    /** The PTX entry point's name. */
    public String name() {
        return name;
    }

    /** Its parameters, in order: what each launch's arguments are checked against. */
    public List<GpuKernel.Param> params() {
        return params;
    }

    @Override
    public String toString() {
        return "CudaKernel[" + name + params + "]";
    }
}
