package io.cudaloom.cuda;

import static io.cudaloom.cuda.Cuda.check;

import java.util.Objects;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;

/** A module loaded from PTX text ({@code cuModuleLoadData}). */
public final class CudaModule implements AutoCloseable {
    private final CudaDevice device;
    private final CUmodule module = new CUmodule();
    private volatile boolean unloaded;

    CudaModule(CudaDevice device, String ptx) {
        this.device = device;
        check(JCudaDriver.cuModuleLoadData(module, ptx), "cuModuleLoadData");
    }

    public CudaDevice device() {
        return device;
    }

    /** The kernel named {@code name} (its {@code .entry} name). */
    public CudaKernel kernel(String name) {
        Objects.requireNonNull(name, "name");
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
        return new CudaKernel(this, f, name);
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
