package io.cudaloom.bench;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.cudaloom.bench.BindingCostReport.Path;
import io.cudaloom.bench.BindingCostReport.Sample;
import io.cudaloom.bench.BindingCostReport.Settings;
import io.cudaloom.bench.BindingCostReport.Summary;
import io.cudaloom.bench.BindingCostReport.Variant;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * What the Java binding itself adds to a kernel launch: the same {@code cuLaunchKernel} of libcuda
 * reached through JCuda (JNI) and through a {@code java.lang.foreign} downcall, no project code (the
 * PTX text is the library's kernels resource {@code /io/cudaloom/kernels.ptx}, read as data).
 *
 * <p>Three kernels: {@code empty_kernel()} (0 arguments, 1 thread), {@code spin_kernel(0)} (1
 * argument, u64, 1 thread) and {@code scale_f32(data, 1.0f, 256)} (3 arguments, 1 block of 256 on
 * 1 KiB of device memory). Four paths ({@link Path}): JCuda with the arguments packed per launch as
 * the library's {@code KernelArgs} does ({@code jcuda-Narg}); JCuda with them packed once
 * ({@code jcuda-prebuilt-Narg}); the FFM downcall with the argument values written per launch into
 * a reused native block ({@code ffm-Narg}); the same downcall linked {@code critical} (no
 * thread-state transition; {@code ffm-critical-Narg}). The FFM path is self-contained: libcuda is
 * found with {@code SymbolLookup.libraryLookup("libcuda.so.1", ...)}, and its context, module,
 * functions, stream and memory come from FFM calls too ({@code cuInit}, {@code cuDeviceGet},
 * {@code cuDevicePrimaryCtxRetain}, {@code cuCtxSetCurrent}, {@code cuModuleLoadData},
 * {@code cuModuleGetFunction}, {@code cuStreamCreate}, {@code cuMemAlloc_v2},
 * {@code cuMemsetD32_v2}; the {@code _v2} entry points are the ones cuda.h maps those names to, as
 * JCuda's natives, compiled against it, call them); JCuda's path has its
 * own module, stream and memory. Both retain device 0's primary context, and each has one
 * {@code CU_STREAM_NON_BLOCKING} stream.
 *
 * <p>One thread (main) launches: per variant a warm-up of {@code warmup} launches, then
 * {@code rounds} rounds of {@code launches} launches (variants in order in odd rounds, reversed in
 * even ones), each in batches of {@value #BATCH} with a {@code cuStreamSynchronize} after each
 * batch. CPU per launch: the thread's own CPU time ({@link ThreadMXBean}) over the batches'
 * launches, the synchronizes excluded; launches/s includes them. Every result code is checked, on
 * both paths (JCuda's exceptions stay off). The tables: per variant the median, min and max over
 * the rounds of CPU per launch; per argument count the ratios of the medians (jcuda / ffm, and
 * their difference: what the binding adds per launch).
 *
 * <p>Compiled for Java 22 ({@code java.lang.foreign} is final there) from {@code src/main/java22}
 * by a compiler execution of its own (vthreads-demo/pom.xml), into the module's classes; its pure
 * part is {@link BindingCostReport}, tested with the module's other tests.
 *
 * <p>{@code bash .gpu/java io.cudaloom.bench.BindingCost [launches] [rounds] [warmup]} (defaults
 * 50,000, 5, 20,000; {@code .gpu/java} passes {@code --enable-native-access=ALL-UNNAMED})
 */
@SuppressWarnings("restricted") // libraryLookup, downcallHandle, reinterpret: run with --enable-native-access=ALL-UNNAMED
public final class BindingCost {
    /** Launches between two synchronizes. */
    static final int BATCH = 128;
    /** Floats {@code scale_f32} scales: one block. */
    static final int SCALE_FLOATS = 256;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private BindingCost() {}

    /** libcuda through {@code java.lang.foreign}: handles made once, in static finals so that the JIT inlines them. */
    static final class Cuda {
        static final Linker LINKER = Linker.nativeLinker();
        /** libcuda stays loaded for the process (JCuda has it loaded anyway). */
        static final SymbolLookup LIB = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());

        static final MethodHandle cuInit = handle("cuInit", JAVA_INT);
        static final MethodHandle cuDeviceGet = handle("cuDeviceGet", ADDRESS, JAVA_INT);
        static final MethodHandle cuDevicePrimaryCtxRetain = handle("cuDevicePrimaryCtxRetain", ADDRESS, JAVA_INT);
        static final MethodHandle cuDevicePrimaryCtxRelease = handle("cuDevicePrimaryCtxRelease_v2", JAVA_INT);
        static final MethodHandle cuCtxSetCurrent = handle("cuCtxSetCurrent", ADDRESS);
        static final MethodHandle cuModuleLoadData = handle("cuModuleLoadData", ADDRESS, ADDRESS);
        static final MethodHandle cuModuleGetFunction = handle("cuModuleGetFunction", ADDRESS, ADDRESS, ADDRESS);
        static final MethodHandle cuModuleUnload = handle("cuModuleUnload", ADDRESS);
        static final MethodHandle cuStreamCreate = handle("cuStreamCreate", ADDRESS, JAVA_INT);
        static final MethodHandle cuStreamSynchronize = handle("cuStreamSynchronize", ADDRESS);
        static final MethodHandle cuStreamDestroy = handle("cuStreamDestroy_v2", ADDRESS);
        static final MethodHandle cuMemAlloc = handle("cuMemAlloc_v2", ADDRESS, JAVA_LONG);
        static final MethodHandle cuMemFree = handle("cuMemFree_v2", JAVA_LONG);
        static final MethodHandle cuMemsetD32 = handle("cuMemsetD32_v2", JAVA_LONG, JAVA_INT, JAVA_LONG);
        static final MethodHandle cuGetErrorName = handle("cuGetErrorName", JAVA_INT, ADDRESS);
        /** {@code CUresult cuLaunchKernel(CUfunction f, uint gridXYZ, uint blockXYZ, uint sharedBytes, CUstream, void** params, void** extra)}. */
        static final FunctionDescriptor LAUNCH = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
        static final MethodHandle cuLaunchKernel = LINKER.downcallHandle(symbol("cuLaunchKernel"), LAUNCH);
        static final MethodHandle cuLaunchKernelCritical = LINKER.downcallHandle(symbol("cuLaunchKernel"), LAUNCH,
                Linker.Option.critical(false));

        private Cuda() {}

        private static MemorySegment symbol(String name) {
            return LIB.find(name).orElseThrow(() -> new IllegalStateException("libcuda.so.1 has no symbol " + name));
        }

        /** A downcall returning CUresult (int). */
        private static MethodHandle handle(String name, MemoryLayout... args) {
            return LINKER.downcallHandle(symbol(name), FunctionDescriptor.of(JAVA_INT, args));
        }

        /** Throws, naming the call and the driver's error name, unless {@code result} is CUDA_SUCCESS. */
        static void check(int result, String what) {
            if (result == 0) {
                return;
            }
            String name = "CUresult " + result;
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(ADDRESS);
                if ((int) cuGetErrorName.invokeExact(result, out) == 0) {
                    name = out.get(ADDRESS, 0).reinterpret(128).getString(0);
                }
            } catch (Throwable t) {
                // keep the number
            }
            throw new IllegalStateException(what + " failed: " + name);
        }
    }

    /** One variant's launches, prepared before the measurement. */
    private interface Launcher {
        void launch() throws Throwable;

        void sync() throws Throwable;
    }

    public static void main(String[] args) throws Throwable {
        Settings s;
        try {
            s = Settings.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("BindingCost: " + e.getMessage());
            System.err.println("usage: BindingCost [launches] [rounds] [warmup]");
            System.exit(2);
            return;
        }
        String ptx;
        try (InputStream in = BindingCost.class.getResourceAsStream("/io/cudaloom/kernels.ptx")) {
            if (in == null) {
                throw new IllegalStateException("/io/cudaloom/kernels.ptx is not on the class path (core's classes hold it)");
            }
            ptx = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        }

        // ---- JCuda's handles ----
        jcudaCheck(JCudaDriver.cuInit(0), "cuInit");
        CUdevice dev = new CUdevice();
        jcudaCheck(JCudaDriver.cuDeviceGet(dev, 0), "cuDeviceGet");
        byte[] nameBytes = new byte[256];
        jcudaCheck(JCudaDriver.cuDeviceGetName(nameBytes, nameBytes.length, dev), "cuDeviceGetName");
        String device = new String(nameBytes, StandardCharsets.UTF_8).replace("\0", "").strip();
        int[] driverVersion = new int[1];
        jcudaCheck(JCudaDriver.cuDriverGetVersion(driverVersion), "cuDriverGetVersion");
        CUcontext jctx = new CUcontext();
        jcudaCheck(JCudaDriver.cuDevicePrimaryCtxRetain(jctx, dev), "cuDevicePrimaryCtxRetain");
        jcudaCheck(JCudaDriver.cuCtxSetCurrent(jctx), "cuCtxSetCurrent");
        CUmodule jmodule = new CUmodule();
        jcudaCheck(JCudaDriver.cuModuleLoadData(jmodule, (ptx + "\0").getBytes(StandardCharsets.US_ASCII)), "cuModuleLoadData");
        CUfunction[] jfunctions = new CUfunction[4];
        String[] kernelNames = {"empty_kernel", "spin_kernel", null, "scale_f32"};
        for (int a : BindingCostReport.ARITIES) {
            jfunctions[a] = new CUfunction();
            jcudaCheck(JCudaDriver.cuModuleGetFunction(jfunctions[a], jmodule, kernelNames[a]), "cuModuleGetFunction");
        }
        CUstream jstream = new CUstream();
        jcudaCheck(JCudaDriver.cuStreamCreate(jstream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        CUdeviceptr jdata = new CUdeviceptr();
        jcudaCheck(JCudaDriver.cuMemAlloc(jdata, 4L * SCALE_FLOATS), "cuMemAlloc");
        jcudaCheck(JCudaDriver.cuMemsetD32(jdata, 0, SCALE_FLOATS), "cuMemsetD32");

        // ---- FFM's handles: the same primary context, its own module, stream and memory ----
        Arena arena = Arena.ofConfined();
        Cuda.check((int) Cuda.cuInit.invokeExact(0), "cuInit (FFM)");
        MemorySegment out = arena.allocate(JAVA_LONG); // room for an int, a pointer or a CUdeviceptr
        Cuda.check((int) Cuda.cuDeviceGet.invokeExact(out, 0), "cuDeviceGet (FFM)");
        int fdev = out.get(JAVA_INT, 0);
        Cuda.check((int) Cuda.cuDevicePrimaryCtxRetain.invokeExact(out, fdev), "cuDevicePrimaryCtxRetain (FFM)");
        MemorySegment fctx = out.get(ADDRESS, 0);
        Cuda.check((int) Cuda.cuCtxSetCurrent.invokeExact(fctx), "cuCtxSetCurrent (FFM)");
        Cuda.check((int) Cuda.cuModuleLoadData.invokeExact(out, arena.allocateFrom(ptx)), "cuModuleLoadData (FFM)");
        MemorySegment fmodule = out.get(ADDRESS, 0);
        MemorySegment[] ffunctions = new MemorySegment[4];
        for (int a : BindingCostReport.ARITIES) {
            Cuda.check((int) Cuda.cuModuleGetFunction.invokeExact(out, fmodule, arena.allocateFrom(kernelNames[a])),
                    "cuModuleGetFunction (FFM)");
            ffunctions[a] = out.get(ADDRESS, 0);
        }
        Cuda.check((int) Cuda.cuStreamCreate.invokeExact(out, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate (FFM)");
        MemorySegment fstream = out.get(ADDRESS, 0);
        Cuda.check((int) Cuda.cuMemAlloc.invokeExact(out, 4L * SCALE_FLOATS), "cuMemAlloc_v2 (FFM)");
        long fdata = out.get(JAVA_LONG, 0);
        Cuda.check((int) Cuda.cuMemsetD32.invokeExact(fdata, 0, (long) SCALE_FLOATS), "cuMemsetD32_v2 (FFM)");

        System.out.printf(Locale.ROOT, "## BindingCost: %s, driver %d.%d; %d rounds x %,d launches per variant after %,d"
                + " warm-up launches, batches of %d; Java %s%n%n", device, driverVersion[0] / 1000,
                driverVersion[0] % 1000 / 10, s.rounds(), s.launches(), s.warmup(), BATCH, Runtime.version());
        System.out.println("One thread launches; CPU per launch: its own CPU time over the launches of each batch, the"
                + " cuStreamSynchronize after each batch excluded (launches/s includes it). Kernels: empty_kernel()"
                + " (0 arguments), spin_kernel(0) (1, u64), scale_f32(data, 1.0f, 256) as 1 block of 256 (3). Paths:");
        System.out.println();
        for (Path p : Path.values()) {
            System.out.printf("- `%s`: %s%n", p.label, p.description);
        }
        System.out.println();

        List<Sample> samples = new ArrayList<>();
        for (int round = 0; round <= s.rounds(); round++) { // round 0: the warm-up, not kept
            for (Variant v : BindingCostReport.order(Math.max(1, round))) {
                Launcher l = launcher(v, jfunctions[v.args()], jstream, jdata, ffunctions[v.args()], fstream, fdata, arena);
                if (round == 0) {
                    if (s.warmup() > 0) {
                        measure(l, s.warmup());
                    }
                    continue;
                }
                long[] cpuWall = measure(l, s.launches());
                samples.add(new Sample(v, round, s.launches(), cpuWall[0], cpuWall[1]));
                System.err.printf(Locale.ROOT, "BindingCost: round %d, %s: %.3f us per launch%n", round, v.label(),
                        samples.get(samples.size() - 1).cpuMicrosPerLaunch());
            }
        }
        List<Summary> summaries = BindingCostReport.summarize(samples);
        System.out.println(BindingCostReport.tableHeader());
        for (Summary sum : summaries) {
            System.out.println(BindingCostReport.markdown(sum));
        }
        System.out.println();
        System.out.println("Ratios of the medians of CPU per launch (jcuda - ffm: what JCuda adds per launch over the"
                + " downcall; ffm / ffm-critical: what the downcall's thread-state transition costs):");
        System.out.println();
        System.out.println(BindingCostReport.ratiosHeader());
        for (String line : BindingCostReport.ratioLines(summaries)) {
            System.out.println(line);
        }

        Cuda.check((int) Cuda.cuMemFree.invokeExact(fdata), "cuMemFree_v2 (FFM)");
        Cuda.check((int) Cuda.cuStreamDestroy.invokeExact(fstream), "cuStreamDestroy_v2 (FFM)");
        Cuda.check((int) Cuda.cuModuleUnload.invokeExact(fmodule), "cuModuleUnload (FFM)");
        Cuda.check((int) Cuda.cuDevicePrimaryCtxRelease.invokeExact(fdev), "cuDevicePrimaryCtxRelease_v2 (FFM)");
        arena.close();
        jcudaCheck(JCudaDriver.cuMemFree(jdata), "cuMemFree");
        jcudaCheck(JCudaDriver.cuStreamDestroy(jstream), "cuStreamDestroy");
        jcudaCheck(JCudaDriver.cuModuleUnload(jmodule), "cuModuleUnload");
        jcudaCheck(JCudaDriver.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
    }

    /** The launches of {@code v}: its kernel through its path, arguments packed as the path packs them. */
    private static Launcher launcher(Variant v, CUfunction jf, CUstream jstream, CUdeviceptr jdata, MemorySegment ff,
            MemorySegment fstream, long fdata, Arena arena) {
        int args = v.args();
        int block = args == 3 ? SCALE_FLOATS : 1;
        return switch (v.path()) {
            case JCUDA -> new Launcher() {
                @Override
                public void launch() {
                    // as the library's KernelArgs.pack: one Pointer per argument, made per launch
                    Pointer params = switch (args) {
                        case 0 -> Pointer.to(new NativePointerObject[0]);
                        case 1 -> Pointer.to(Pointer.to(new long[] {0L}));
                        default -> Pointer.to(Pointer.to(jdata), Pointer.to(new float[] {1.0f}),
                                Pointer.to(new int[] {SCALE_FLOATS}));
                    };
                    jcudaCheck(JCudaDriver.cuLaunchKernel(jf, 1, 1, 1, block, 1, 1, 0, jstream, params, null), "cuLaunchKernel");
                }

                @Override
                public void sync() {
                    jcudaCheck(JCudaDriver.cuStreamSynchronize(jstream), "cuStreamSynchronize");
                }
            };
            case JCUDA_PREBUILT -> {
                Pointer params = switch (args) {
                    case 0 -> null;
                    case 1 -> Pointer.to(Pointer.to(new long[] {0L}));
                    default -> Pointer.to(Pointer.to(jdata), Pointer.to(new float[] {1.0f}), Pointer.to(new int[] {SCALE_FLOATS}));
                };
                yield new Launcher() {
                    @Override
                    public void launch() {
                        jcudaCheck(JCudaDriver.cuLaunchKernel(jf, 1, 1, 1, block, 1, 1, 0, jstream, params, null), "cuLaunchKernel");
                    }

                    @Override
                    public void sync() {
                        jcudaCheck(JCudaDriver.cuStreamSynchronize(jstream), "cuStreamSynchronize");
                    }
                };
            }
            case FFM, FFM_CRITICAL -> {
                // void* params[3] pointing at the values' block: [0, 8) u64 or pointer, [8, 12) f32, [12, 16) u32
                MemorySegment values = arena.allocate(16, 8);
                MemorySegment params = args == 0 ? MemorySegment.NULL : arena.allocate(ADDRESS, 3);
                if (args > 0) {
                    params.setAtIndex(ADDRESS, 0, values);
                    params.setAtIndex(ADDRESS, 1, values.asSlice(8));
                    params.setAtIndex(ADDRESS, 2, values.asSlice(12));
                }
                boolean critical = v.path() == Path.FFM_CRITICAL;
                yield new Launcher() {
                    @Override
                    public void launch() throws Throwable {
                        // the values written per launch, as a binding packs each launch's arguments
                        if (args == 1) {
                            values.set(JAVA_LONG, 0, 0L);
                        } else if (args == 3) {
                            values.set(JAVA_LONG, 0, fdata);
                            values.set(JAVA_FLOAT, 8, 1.0f);
                            values.set(JAVA_INT, 12, SCALE_FLOATS);
                        }
                        int r = critical
                                ? (int) Cuda.cuLaunchKernelCritical.invokeExact(ff, 1, 1, 1, block, 1, 1, 0, fstream, params,
                                        MemorySegment.NULL)
                                : (int) Cuda.cuLaunchKernel.invokeExact(ff, 1, 1, 1, block, 1, 1, 0, fstream, params,
                                        MemorySegment.NULL);
                        if (r != 0) {
                            Cuda.check(r, "cuLaunchKernel (FFM)");
                        }
                    }

                    @Override
                    public void sync() throws Throwable {
                        Cuda.check((int) Cuda.cuStreamSynchronize.invokeExact(fstream), "cuStreamSynchronize (FFM)");
                    }
                };
            }
        };
    }

    /** {@code n} launches in batches of {@link #BATCH}; returns {CPU of the launches, wall of it all} in ns. */
    private static long[] measure(Launcher l, int n) throws Throwable {
        long cpu = 0;
        long t0 = System.nanoTime();
        for (int done = 0; done < n; ) {
            int b = Math.min(BATCH, n - done);
            long c0 = THREADS.getCurrentThreadCpuTime();
            for (int i = 0; i < b; i++) {
                l.launch();
            }
            cpu += THREADS.getCurrentThreadCpuTime() - c0;
            l.sync();
            done += b;
        }
        return new long[] {cpu, System.nanoTime() - t0};
    }

    private static void jcudaCheck(int result, String what) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new IllegalStateException(what + " failed: " + CUresult.stringFor(result));
        }
    }
}
