package io.cudaloom.cuda;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.DeviceMemory;
import io.cudaloom.HostMemory;
import io.cudaloom.ReactorStats;
import io.cudaloom.junit.GpuTest;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The four hot driver calls through the binding in use ({@link HotCalls}) give what the same calls
 * through JCuda give: a copy in with offsets, kernels of 0, 1 and 3 arguments (a device buffer, a
 * float and an int among them), a second 3-argument kernel, two copies out with offsets, and the
 * await's flag write, all made through {@link CudaStream}; then the same work through JCuda on the
 * stream's raw handle into other memory, synchronized. Both results must be the expected values and
 * equal, and the await must have been completed by a flag write (no host-function fallback).
 *
 * <p>In this JVM the binding is whatever it was started with ({@code ffm} by default where the downcalls can be made, {@code jcuda} unless
 * {@code -Dcudaloom.driverCalls=ffm}); {@link #theFfmBindingGivesWhatJCudaGives()} runs the
 * comparison in a child JVM with {@code -Dcudaloom.driverCalls=ffm}, whose class path puts core's
 * Java 22 overlay first when core's classes are a directory (as in the GPU bundle and under Maven),
 * and checks that the binding there is {@code ffm}.
 */
@Tag("gpu")
@GpuTest(config = "io.cudaloom.cuda.GpuTestSupport#reactorOnly")
class HotCallsGpuTest {
    private static final int N = 4096;
    /** Floats the copy in skips at the host and at the device, and the copy out at the device and at the host. */
    private static final int IN_HOST = 16;
    private static final int IN_DEVICE = 32;
    private static final int OUT_DEVICE = 8;
    private static final int OUT_HOST = 24;
    private static final float FACTOR = 3f;
    private static final int FILL = 0x5A5A_1234;

    @Test
    void thisJvmsBindingGivesWhatJCudaGives(CudaDevice device) throws Exception {
        System.out.println("HotCallsGpuTest: driver calls in this JVM: " + CudaDevice.driverCalls());
        Map<String, String> r = compare(device);
        System.out.println("HotCallsGpuTest: " + r);
        assertResults(r);
    }

    @Test
    void theFfmBindingGivesWhatJCudaGives() throws Exception {
        GpuTestSupport.ChildResult child = GpuTestSupport.runChild(HotCallsProbe.class,
                List.of("--enable-native-access=ALL-UNNAMED", "-Dcudaloom.driverCalls=ffm",
                        "-Dcudaloom.submission=" + System.getProperty("cudaloom.submission", "combining")),
                overlayFirst(), Map.of(), Duration.ofSeconds(120), "gpu");
        System.out.println("HotCallsGpuTest (child, -Dcudaloom.driverCalls=ffm): " + child.results());
        assertEquals(0, child.exitCode(), child.output());
        assertEquals("ffm", child.get("binding"), child.output());
        assertResults(child.results());
    }

    private static void assertResults(Map<String, String> r) {
        assertEquals("true", r.get("expected"), "the library's results are the expected values: " + r);
        assertEquals("true", r.get("jcudaExpected"), "JCuda's results are the expected values: " + r);
        assertEquals("true", r.get("same"), "the library's results equal JCuda's: " + r);
        assertTrue(Long.parseLong(r.get("flagWrites")) > 0, "the await registered a flag write: " + r);
        assertEquals("0", r.get("fallbacks"), "no host-function fallback: the flag write landed: " + r);
    }

    /**
     * The class path for the child JVM: this one's, with core's Java 22 overlay first when core's
     * classes are a directory (a JAR brings its overlay itself).
     */
    private static String overlayFirst() throws Exception {
        String cp = GpuTestSupport.classPath();
        java.nio.file.Path classes = java.nio.file.Path.of(HotCalls.class.getProtectionDomain().getCodeSource()
                .getLocation().toURI());
        if (HotCalls.implementation() == 21 && java.nio.file.Files.isDirectory(classes)) {
            java.nio.file.Path overlay = classes.resolve("META-INF/versions/22");
            if (java.nio.file.Files.isDirectory(overlay)) {
                return overlay + java.io.File.pathSeparator + cp;
            }
        }
        return cp;
    }

    /**
     * The work through the library and through JCuda on {@code device} (its reactor without waiter
     * spin, so the await registers a flag); the results as {@code key=value} for the parent's checks.
     */
    static Map<String, String> compare(CudaDevice device) throws Exception {
        Map<String, String> out = new LinkedHashMap<>();
        out.put("binding", CudaDevice.driverCalls());
        try (Kernels k = Kernels.load(device); CudaStream s = device.newStream();
                HostMemory in = device.allocateHost(4L * N); HostMemory scaled = device.allocateHost(4L * N);
                HostMemory filled = device.allocateHost(4L * N); HostMemory scaledJ = device.allocateHost(4L * N);
                HostMemory filledJ = device.allocateHost(4L * N); DeviceMemory d = device.allocate(4L * N);
                DeviceMemory f = device.allocate(4L * N); DeviceMemory dJ = device.allocate(4L * N);
                DeviceMemory fJ = device.allocate(4L * N)) {
            FloatBuffer src = in.floats();
            for (int i = 0; i < N; i++) {
                src.put(i, i * 0.5f + 1);
            }
            // Zeroed device memory and poisoned output, so that every checked element was written.
            s.memset32(d, 0, N);
            s.memset32(f, 0, N);
            s.memset32(dJ, 0, N);
            s.memset32(fJ, 0, N);
            for (HostMemory h : List.of(scaled, filled, scaledJ, filledJ)) {
                IntBuffer b = h.ints();
                for (int i = 0; i < N; i++) {
                    b.put(i, -1);
                }
            }
            s.await();
            int bytes = 4 * (N - IN_DEVICE); // the copy in: floats IN_HOST.. of the host to IN_DEVICE.. of the device

            ReactorStats before = device.reactor().stats();
            // The library: HotCalls' binding
            s.copy(in, 4L * IN_HOST, d, 4L * IN_DEVICE, bytes);
            s.launch(k.empty, 1, 1);
            s.launch(k.spin, 1, 1, 0L);
            s.launch(k.scale, N / 256, 256, d, FACTOR, N);
            s.launch(k.fill, N / 256, 256, f, FILL, N);
            s.copy(d, 4L * OUT_DEVICE, scaled, 4L * OUT_HOST, 4L * (N - OUT_HOST));
            s.copy(f, 0, filled, 0, 4L * N);
            s.await(); // a flag write behind the work
            ReactorStats after = device.reactor().stats();
            out.put("flagWrites", Long.toString(after.flagWrites() - before.flagWrites()));
            out.put("fallbacks", Long.toString(after.fallbacks() - before.fallbacks()));

            // JCuda on the raw handle (the same calls as JCuda's side of HotCalls)
            CUstream h = s.handle();
            device.makeCurrent();
            PinnedBuffer inP = (PinnedBuffer) in;
            DeviceBuffer dB = (DeviceBuffer) dJ;
            DeviceBuffer fB = (DeviceBuffer) fJ;
            check(cuMemcpyHtoDAsync(dB.pointer().withByteOffset(4L * IN_DEVICE), inP.pointer().withByteOffset(4L * IN_HOST),
                    bytes, h), "cuMemcpyHtoDAsync");
            check(cuLaunchKernel(k.scale.function(), N / 256, 1, 1, 256, 1, 1, 0, h,
                    KernelArgs.pack("scale_f32", dB, FACTOR, N), null), "cuLaunchKernel(scale_f32)");
            check(cuLaunchKernel(k.fill.function(), N / 256, 1, 1, 256, 1, 1, 0, h,
                    KernelArgs.pack("fill_u32", fB, FILL, N), null), "cuLaunchKernel(fill_u32)");
            check(cuMemcpyDtoHAsync(((PinnedBuffer) scaledJ).pointer().withByteOffset(4L * OUT_HOST),
                    dB.pointer().withByteOffset(4L * OUT_DEVICE), 4L * (N - OUT_HOST), h), "cuMemcpyDtoHAsync");
            check(cuMemcpyDtoHAsync(((PinnedBuffer) filledJ).pointer(), fB.pointer(), 4L * N, h), "cuMemcpyDtoHAsync");
            check(cuStreamSynchronize(h), "cuStreamSynchronize");

            out.put("expected", Boolean.toString(expected(scaled, filled, out, "")));
            out.put("jcudaExpected", Boolean.toString(expected(scaledJ, filledJ, out, "jcuda")));
            out.put("same", Boolean.toString(scaled.byteBuffer().equals(scaledJ.byteBuffer())
                    && filled.byteBuffer().equals(filledJ.byteBuffer())));
        }
        return out;
    }

    private static void check(int result, String call) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new AssertionError(call + " failed: " + CUresult.stringFor(result));
        }
    }

    /**
     * Whether the outputs are what the work computes: device float j is 0 below {@link #IN_DEVICE}
     * and {@code FACTOR * in[j - IN_DEVICE + IN_HOST]} from there; host float i of the scaled
     * output is device float {@code i - OUT_HOST + OUT_DEVICE} from {@link #OUT_HOST} on and the
     * poison (-1 as an int) below; the fill is {@link #FILL} everywhere. The first mismatch is
     * recorded under {@code prefix + "mismatch"}.
     */
    private static boolean expected(HostMemory scaled, HostMemory filled, Map<String, String> out, String prefix) {
        FloatBuffer s = scaled.floats();
        IntBuffer si = scaled.ints();
        for (int i = 0; i < N; i++) {
            boolean ok;
            String want;
            if (i < OUT_HOST) {
                ok = si.get(i) == -1;
                want = "untouched";
            } else {
                int j = i - OUT_HOST + OUT_DEVICE; // the device float copied to host float i
                float w = j < IN_DEVICE ? 0f : FACTOR * ((j - IN_DEVICE + IN_HOST) * 0.5f + 1);
                ok = Float.floatToRawIntBits(s.get(i)) == Float.floatToRawIntBits(w);
                want = Float.toString(w);
            }
            if (!ok) {
                out.put(prefix + "mismatch", "scaled[" + i + "] = " + s.get(i) + ", expected " + want);
                return false;
            }
        }
        IntBuffer fi = filled.ints();
        for (int i = 0; i < N; i++) {
            if (fi.get(i) != FILL) {
                out.put(prefix + "mismatch", "filled[" + i + "] = " + fi.get(i));
                return false;
            }
        }
        return true;
    }
}
