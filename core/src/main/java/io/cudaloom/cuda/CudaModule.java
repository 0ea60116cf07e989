package io.cudaloom.cuda;

import static io.cudaloom.cuda.Cuda.check;

import io.cudaloom.GpuKernel;
import io.cudaloom.protocol.LifetimeGuard;
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
    /**
     * The launches of this module's kernels from their call until their driver call has returned
     * (or they were discarded): with submission by combining a launch waits in its stream's queue
     * after the call returns, and the drainer calls {@code cuLaunchKernel} with the kernel's
     * function later, on its own thread. So {@link #close()} closes this guard, and the unload
     * (which invalidates every function of the module) runs only after the last launch in it has
     * left: no driver call uses a function of an unloaded module. A launch made after the close is
     * refused ({@link #enterLaunch}).
     */
    private final LifetimeGuard launches = new LifetimeGuard();

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

    /**
     * Admits a launch of one of this module's kernels, until its {@link #exitLaunch()} after its
     * driver call returned or it was discarded.
     *
     * @throws IllegalStateException if the module was unloaded (closed)
     */
    void enterLaunch(String kernel) {
        if (!launches.enter()) {
            throw new IllegalStateException("kernel " + kernel + ": its module was unloaded");
        }
    }

    /** Ends a launch admitted by {@link #enterLaunch}. */
    void exitLaunch() {
        launches.exit();
    }

    /**
     * Unloads the module: at once if no launch of its kernels is queued or inside its driver call,
     * else once the last one has left (on the device's releaser thread, never on the thread of the
     * drainer that made that launch, which may be the reactor's scanner). Idempotent.
     */
    @Override
    public void close() {
        if (!unloaded) {
            unloaded = true;
            Thread closer = Thread.currentThread();
            launches.close(() -> {
                if (Thread.currentThread() == closer) {
                    unload();
                } else {
                    CudaDevice.API.releaseOffCaller(device, this::unload);
                }
            });
        }
    }

    private void unload() {
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
