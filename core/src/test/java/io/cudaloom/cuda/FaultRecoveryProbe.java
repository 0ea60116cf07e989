package io.cudaloom.cuda;

import static jcuda.driver.JCudaDriver.*;

import jcuda.Pointer;
import jcuda.driver.*;

/**
 * Diagnostic main (run on a GPU machine): how long after a faulting kernel the error becomes
 * visible through cuStreamQuery, and which ways of getting a working context afterwards exist.
 * Prints one line per step with the driver's result.
 */
public final class FaultRecoveryProbe {
    public static void main(String[] args) {
        setExceptionsEnabled(false);
        p("cuInit", cuInit(0));
        CUdevice dev = new CUdevice();
        p("cuDeviceGet", cuDeviceGet(dev, 0));
        CUcontext ctx = new CUcontext();
        p("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(ctx, dev));
        p("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
        CUmodule m = new CUmodule();
        p("cuModuleLoadData", cuModuleLoadData(m, Kernels.ptx()));
        CUfunction spin = new CUfunction(), fault = new CUfunction();
        p("get spin", cuModuleGetFunction(spin, m, "spin_kernel"));
        p("get fault", cuModuleGetFunction(fault, m, "fault_kernel"));
        CUstream s = new CUstream();
        p("cuStreamCreate", cuStreamCreate(s, CUstream_flags.CU_STREAM_NON_BLOCKING));
        long t0 = System.nanoTime();
        p("launch spin 50ms", cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, s,
                Pointer.to(Pointer.to(new long[] {50_000_000L})), null));
        p("launch fault", cuLaunchKernel(fault, 1, 1, 1, 1, 1, 1, 0, s,
                Pointer.to(Pointer.to(new long[] {0xdead_0000_0000L})), null));
        long afterSpin = 0;
        int r;
        while ((r = cuStreamQuery(s)) == CUresult.CUDA_ERROR_NOT_READY) {
            Thread.onSpinWait();
        }
        long t1 = System.nanoTime();
        System.out.printf("cuStreamQuery -> %s after %.1f ms from launch (spin kernel: 50 ms)%n",
                CUresult.stringFor(r), (t1 - t0) / 1e6);
        p("cuCtxSynchronize (dead ctx)", cuCtxSynchronize());
        p("cuDevicePrimaryCtxReset", cuDevicePrimaryCtxReset(dev));
        CUcontext ctx2 = new CUcontext();
        p("cuDevicePrimaryCtxRetain after reset", cuDevicePrimaryCtxRetain(ctx2, dev));
        p("cuCtxSetCurrent(new primary)", cuCtxSetCurrent(ctx2));
        CUdeviceptr d = new CUdeviceptr();
        p("cuMemAlloc on new primary", cuMemAlloc(d, 4096));
        p("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(dev));
        p("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(dev));
        p("cuDevicePrimaryCtxReset again", cuDevicePrimaryCtxReset(dev));
        CUcontext ctx3 = new CUcontext();
        p("cuDevicePrimaryCtxRetain after release+reset", cuDevicePrimaryCtxRetain(ctx3, dev));
        p("cuCtxSetCurrent", cuCtxSetCurrent(ctx3));
        p("cuMemAlloc", cuMemAlloc(d, 4096));
        CUcontext ctx4 = new CUcontext();
        p("cuCtxCreate", cuCtxCreate(ctx4, 0, dev));
        p("cuMemAlloc on cuCtxCreate context", cuMemAlloc(d, 4096));
    }

    private static void p(String what, int result) {
        System.out.println(what + " -> " + CUresult.stringFor(result));
    }
}
