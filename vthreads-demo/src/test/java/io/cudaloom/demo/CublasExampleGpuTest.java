package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.cuda.DeviceBuffer;
import io.cudaloom.cuda.PinnedBuffer;
import io.cudaloom.junit.GpuTest;
import jcuda.Pointer;
import jcuda.jcublas.JCublas2;
import jcuda.jcublas.cublasHandle;
import jcuda.runtime.cudaStream_t;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The cuBLAS example of docs/USER-GUIDE.md ("Java"): a library call enqueued on a
 * {@link CudaStream}'s raw handle is awaited like any other work. Needs the GPU and cuBLAS (libcublas
 * of the CUDA toolkit): skipped, with the reason printed, where either is missing.
 */
@Tag("gpu")
@GpuTest
class CublasExampleGpuTest {
    @Test
    void aCublasCallOnTheStreamIsAwaitedLikeAnyWork(CudaDevice gpu, CudaStream stream) throws Exception {
        int n = 1 << 20;
        cublasHandle cublas = new cublasHandle();
        gpu.makeCurrent(); // cuBLAS works in the current context: the device's primary context
        try {
            JCublas2.setExceptionsEnabled(true);
            JCublas2.cublasCreate(cublas);
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            String why = "cuBLAS cannot be used on this machine (" + e + ")";
            System.out.println("SKIPPED CublasExampleGpuTest: " + why);
            Assumptions.abort(why);
        }
        try (DeviceBuffer x = gpu.allocate(4L * n); DeviceBuffer y = gpu.allocate(4L * n);
             PinnedBuffer host = gpu.allocateHost(4L * n)) {
            for (int i = 0; i < n; i++) host.floats().put(i, i);
            stream.copy(host, x, 4L * n);
            stream.memset32(y, Float.floatToRawIntBits(1f), n);
            // the example of docs/USER-GUIDE.md, from here:
            JCublas2.cublasSetStream(cublas, new cudaStream_t(stream.handle())); // cuBLAS enqueues on our stream
            JCublas2.cublasSaxpy(cublas, n, Pointer.to(new float[] {2f}), x.pointer(), 1, y.pointer(), 1); // y += 2x
            stream.noteExternalSubmission();                // count the work cuBLAS put on the stream
            stream.copy(y, host, 4L * n);
            stream.await();                                 // parks this thread until saxpy and the copy are done
            // to here.
            assertEquals(2f * (n - 1) + 1f, host.floats().get(n - 1));
            assertEquals(1f, host.floats().get(0));
        } finally {
            JCublas2.cublasDestroy(cublas);
        }
    }
}
