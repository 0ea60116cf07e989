package io.cudaloom.cuda;

import static io.cudaloom.cuda.Cuda.check;

import io.cudaloom.GpuKernel;
import java.util.List;
import java.util.Objects;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;

/** A module loaded from PTX text ({@code cuModuleLoadData}). */
public final class CudaModule implements AutoCloseable {
    private final CudaDevice device;
    private final CUmodule module = new CUmodule();
    /** The module's PTX, where each kernel's parameters are read. */
    private final String ptx;
    private volatile boolean unloaded;

    CudaModule(CudaDevice device, String ptx) {
        this.device = device;
        this.ptx = ptx;
        check(JCudaDriver.cuModuleLoadData(module, ptx), "cuModuleLoadData");
    }

    public CudaDevice device() {
        return device;
    }

    /**
     * The kernel named {@code name} (its {@code .entry} name), with the parameters its PTX declares
     * (a 64-bit integer parameter takes a {@link DeviceBuffer} or a {@code Long} address).
     *
     * @throws IllegalArgumentException if there is no such kernel, or it has a parameter of a type
     *     no launch can pass
     */
    public CudaKernel kernel(String name) {
        Objects.requireNonNull(name, "name");
        return load(name, CudaDevice.API.paramsOf(ptx, name));
    }

    /**
     * The kernel named {@code name}, with declared parameters, checked against its PTX (they may be
     * narrower: {@code POINTER} or {@code LONG} for a {@code .u64}).
     *
     * @throws IllegalArgumentException if there is no such kernel or {@code params} does not match it
     */
    public CudaKernel kernel(String name, List<GpuKernel.Param> params) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(params, "params");
        CudaDevice.API.checkMatches(name, params, CudaDevice.API.paramsOf(ptx, name), "the module's PTX");
        return load(name, params);
    }

    private CudaKernel load(String name, List<GpuKernel.Param> params) {
        if (unloaded) {
            throw new IllegalStateException("module was unloaded");
        }
        device.ensureOpen();
        if (!device.enterToFree()) {
            throw new IllegalStateException(device.name() + " is closed");
        }
        CUfunction f = new CUfunction();
        int r;
        try {
            JCudaDriver.cuCtxSetCurrent(device.contextHandle());
            r = JCudaDriver.cuModuleGetFunction(f, module, name);
        } finally {
            device.exitContext();
        }
        if (r == jcuda.driver.CUresult.CUDA_ERROR_NOT_FOUND) {
            throw new IllegalArgumentException("no kernel named '" + name + "' in this module");
        }
        check(r, "cuModuleGetFunction(" + name + ")");
        return new CudaKernel(this, f, name, params);
    }

    @Override
    public void close() {
        if (!unloaded) {
            unloaded = true;
            if (device.enterToFree()) { // else the context's release (or reset) unloads it
                try {
                    JCudaDriver.cuCtxSetCurrent(device.contextHandle());
                    JCudaDriver.cuModuleUnload(module);
                } finally {
                    device.exitContext();
                }
            }
        }
    }
}
