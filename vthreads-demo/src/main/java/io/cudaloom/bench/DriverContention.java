package io.cudaloom.bench;

import static jcuda.driver.JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuDriverGetVersion;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemHostAlloc;
import static jcuda.driver.JCudaDriver.cuMemHostGetDevicePointer;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;
import static jcuda.driver.JCudaDriver.cuStreamWriteValue32;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * The CUDA driver's floor: what one step of submissions costs the submitting thread's CPU as more
 * threads submit at once. JCuda and the driver only, no project code (the PTX text is the
 * library's kernels resource {@code /io/cudaloom/kernels.ptx}, read as data), on device 0's
 * primary context.
 *
 * <p>Every operation ({@link Op}) is counted in steps. The single operations (one driver call per
 * step: an empty kernel, a 10 us spin kernel, a 1 KiB host-to-device copy from pinned memory) run
 * at 1, 2, 4, 8 and 16 platform threads, each on a stream of its own up to 8 (16 share 8 streams
 * two by two), created with flags 0 as before. The library's own mixes run at 1, 2, 4 and 8
 * threads, each on a {@code CU_STREAM_NON_BLOCKING} stream of its own (as the library's streams
 * are), and each thread calls {@code cuCtxSetCurrent(ctx)} before every step, as the library does
 * before its driver calls:
 * <ul>
 *   <li>{@link Op#DEMO_STEP}: {@code cuMemcpyHtoDAsync} of 1 KiB from pinned memory,
 *       {@code scale_f32(data, 1.0f, 256)} as 1 block of 256, {@code cuMemcpyDtoHAsync} of the
 *       1 KiB back to pinned memory, then {@code cuStreamWriteValue32} (flags 0, value = the
 *       thread's step count) of the thread's own flag word in pinned host memory mapped for the
 *       device ({@code cuMemHostAlloc(DEVICEMAP)}, device address from
 *       {@code cuMemHostGetDevicePointer}): the demo's workload and the reactor's completion flag;
 *   <li>{@link Op#SWEEP_STEP}: {@code spin_kernel(0)} (1 argument) then the same flag write: what
 *       {@code GpuBench sweep} and the reactor submit per awaited launch.
 * </ul>
 * Kernel arguments are packed once per thread, so the figures are the driver's (and JCuda's call)
 * cost, not the library's argument packing. Each thread submits {@code perThread} steps back to
 * back in batches of {@value #BATCH} steps (far below the driver's queue of about 1,000 entries, so
 * no submission waits for room) with a {@code cuStreamSynchronize} after each batch. The CPU of the
 * submissions alone is each submitting thread's own CPU time ({@link ThreadMXBean}) over its
 * batches' submissions, the synchronize excluded; steps/s and wall include the synchronizes. Each
 * measurement follows a warm-up of a quarter of the steps (at least one batch) run the same way.
 * One table per operation: threads, streams, steps/s over all threads, CPU per step, CPU per
 * driver call ({@code cuCtxSetCurrent} counted as a call), cores busy in submissions (their CPU /
 * wall), wall.
 *
 * <p>{@code bash .gpu/java io.cudaloom.bench.DriverContention [perThread] [ops=EMPTY_KERNEL,DEMO_STEP,...]}
 * (defaults: 50,000 steps per thread, every operation)
 */
public final class DriverContention {
    /** Steps between two synchronizes of a thread's stream. */
    static final int BATCH = 128;
    /** Streams of the single operations (16 threads share them two by two), and of the mixes. */
    static final int STREAMS = 8;
    /** Bytes copied by {@link Op#COPY_1KIB} and by each copy of {@link Op#DEMO_STEP}. */
    static final int COPY_BYTES = 1024;
    /** Floats {@code scale_f32} scales in {@link Op#DEMO_STEP} (one block). */
    static final int SCALE_FLOATS = COPY_BYTES / Float.BYTES;
    /** A 1 KiB slot per thread index modulo this, in pinned and device memory. */
    private static final int SLOTS = 16;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private DriverContention() {}

    /** What one thread submits as one step. */
    enum Op {
        EMPTY_KERNEL("an empty kernel (0 arguments)", 1, false),
        SPIN_10US("a 10 us spin kernel (1 argument)", 1, false),
        COPY_1KIB("a 1 KiB host-to-device copy from pinned memory", 1, false),
        DEMO_STEP("the demo's step: 1 KiB copy to the device, scale_f32 on 256 floats (1 block of 256, 3 arguments),"
                + " 1 KiB copy back, cuStreamWriteValue32 of a mapped flag word", 4, true),
        SWEEP_STEP("the sweep's step: spin_kernel(0) (1 argument), cuStreamWriteValue32 of a mapped flag word", 2, true);

        final String description;
        /** Driver calls per step, {@code cuCtxSetCurrent} not counted. */
        final int submissions;
        /** A mix of the library's: {@code cuCtxSetCurrent} before each step, non-blocking streams, at most 8 threads. */
        final boolean mix;

        Op(String description, int submissions, boolean mix) {
            this.description = description;
            this.submissions = submissions;
            this.mix = mix;
        }

        /** The thread counts it runs at. */
        List<Integer> threadCounts() {
            return mix ? List.of(1, 2, 4, 8) : List.of(1, 2, 4, 8, 16);
        }

        /** Driver calls per step, {@code cuCtxSetCurrent} included. */
        int callsPerStep() {
            return submissions + (mix ? 1 : 0);
        }

        /** E.g. "4 + cuCtxSetCurrent". */
        String callsText() {
            return mix ? submissions + " + cuCtxSetCurrent" : Integer.toString(submissions);
        }

        /** Its name, or the same with '-' for '_', any case. */
        static Op parse(String text) {
            String t = text.strip().replace('-', '_').toUpperCase(Locale.ROOT);
            for (Op op : values()) {
                if (op.name().equals(t)) {
                    return op;
                }
            }
            throw new IllegalArgumentException("unknown operation '" + text.strip() + "' (known: "
                    + String.join(", ", Arrays.stream(values()).map(Enum::name).toList()) + ")");
        }
    }

    /** The program's arguments. */
    record Settings(int perThread, List<Op> ops) {
        static final List<BenchArgs.Param> PARAMS = List.of(
                new BenchArgs.Param("perThread", "50000", "steps"),
                new BenchArgs.Param("ops", "all", "op"));

        /** Parses {@code args} ({@link BenchArgs}: by position or {@code name=value}). */
        static Settings parse(String[] args) {
            Map<String, String> v = BenchArgs.bind(args, 0, PARAMS);
            int perThread = BenchArgs.intValue("perThread", v.get("perThread"), 1, 100_000_000);
            String opsText = v.get("ops").strip();
            List<Op> ops = new ArrayList<>();
            if (opsText.equalsIgnoreCase("all")) {
                ops.addAll(List.of(Op.values()));
            } else {
                for (String part : opsText.split(",", -1)) {
                    if (part.isBlank()) {
                        throw new IllegalArgumentException("ops must be a comma-separated list of operations, was '" + opsText + "'");
                    }
                    Op op = Op.parse(part);
                    if (ops.contains(op)) {
                        throw new IllegalArgumentException("ops lists " + op + " twice");
                    }
                    ops.add(op);
                }
            }
            return new Settings(perThread, List.copyOf(ops));
        }
    }

    /** One measurement: {@code threads} threads of {@code perThread} steps each. */
    record Result(Op op, int threads, int streams, long steps, long cpuNanos, long wallNanos) {
        double stepsPerSecond() {
            return wallNanos <= 0 ? 0 : steps * 1e9 / wallNanos;
        }

        double cpuMicrosPerStep() {
            return steps <= 0 ? 0 : cpuNanos / 1e3 / steps;
        }

        double cpuMicrosPerCall() {
            return cpuMicrosPerStep() / op.callsPerStep();
        }

        double coresBusy() {
            return wallNanos <= 0 ? 0 : (double) cpuNanos / wallNanos;
        }
    }

    /** Streams {@code threads} threads of {@code op} use: one each, up to {@link #STREAMS}. */
    static int streamsFor(int threads) {
        return Math.min(threads, STREAMS);
    }

    /** Steps of the warm-up before a measurement of {@code perThread} steps per thread. */
    static int warmUpSteps(int perThread) {
        return Math.max(BATCH, perThread / 4);
    }

    /** The heading and table header of one operation's table. */
    static String tableHead(Op op) {
        return String.format(Locale.ROOT, "### %s: %s%n%nDriver calls per step: %s.%n%n", op, op.description,
                op.callsText())
                + "| threads | streams | steps/s | CPU per step (submitting threads, sync excluded) | CPU per driver call"
                + " | cores busy in submissions | wall s |\n"
                + "|---|---|---|---|---|---|---|";
    }

    static String markdown(Result r) {
        return String.format(Locale.ROOT, "| %d | %d | %,.0f | %.2f us | %.2f us | %.2f | %.2f |", r.threads(), r.streams(),
                r.stepsPerSecond(), r.cpuMicrosPerStep(), r.cpuMicrosPerCall(), r.coresBusy(), r.wallNanos() / 1e9);
    }

    // ---- on the GPU ---------------------------------------------------------------------------

    /** What the threads share: the context, kernels, streams and memory. */
    private record Gpu(CUcontext ctx, CUfunction empty, CUfunction spin, CUfunction scale, CUstream[] streams,
            CUstream[] mixStreams, Pointer hostIn, Pointer hostOut, CUdeviceptr deviceMem, CUdeviceptr flagsDevice) {}

    public static void main(String[] args) throws Exception {
        Settings s;
        try {
            s = Settings.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("DriverContention: " + e.getMessage());
            System.err.println("usage: DriverContention [perThread] [ops=" + String.join(",",
                    Arrays.stream(Op.values()).map(Enum::name).toList()) + "]");
            System.exit(2);
            return;
        }
        JCudaDriver.setExceptionsEnabled(true);
        cuInit(0);
        CUdevice dev = new CUdevice();
        cuDeviceGet(dev, 0);
        byte[] nameBytes = new byte[256];
        cuDeviceGetName(nameBytes, nameBytes.length, dev);
        String name = new String(nameBytes, StandardCharsets.UTF_8).replace("\0", "").strip();
        int[] driverVersion = new int[1];
        cuDriverGetVersion(driverVersion);
        CUcontext ctx = new CUcontext();
        cuDevicePrimaryCtxRetain(ctx, dev);
        cuCtxSetCurrent(ctx);
        String ptx;
        try (InputStream in = DriverContention.class.getResourceAsStream("/io/cudaloom/kernels.ptx")) {
            if (in == null) {
                throw new IllegalStateException("/io/cudaloom/kernels.ptx is not on the class path (core's classes hold it)");
            }
            ptx = new String(in.readAllBytes(), StandardCharsets.US_ASCII) + "\0";
        }
        CUmodule module = new CUmodule();
        cuModuleLoadData(module, ptx.getBytes(StandardCharsets.US_ASCII));
        CUfunction empty = new CUfunction();
        cuModuleGetFunction(empty, module, "empty_kernel");
        CUfunction spin = new CUfunction();
        cuModuleGetFunction(spin, module, "spin_kernel");
        CUfunction scale = new CUfunction();
        cuModuleGetFunction(scale, module, "scale_f32");
        CUstream[] streams = new CUstream[STREAMS];
        CUstream[] mixStreams = new CUstream[STREAMS];
        for (int i = 0; i < STREAMS; i++) {
            streams[i] = new CUstream();
            cuStreamCreate(streams[i], 0);
            mixStreams[i] = new CUstream();
            cuStreamCreate(mixStreams[i], CUstream_flags.CU_STREAM_NON_BLOCKING);
        }
        Pointer hostIn = new Pointer();
        cuMemHostAlloc(hostIn, (long) SLOTS * COPY_BYTES, 0);
        hostIn.getByteBuffer(0, (long) SLOTS * COPY_BYTES).put(new byte[SLOTS * COPY_BYTES]); // zeros: floats 0.0f
        Pointer hostOut = new Pointer();
        cuMemHostAlloc(hostOut, (long) SLOTS * COPY_BYTES, 0);
        CUdeviceptr deviceMem = new CUdeviceptr();
        cuMemAlloc(deviceMem, (long) SLOTS * COPY_BYTES);
        Pointer flagsHost = new Pointer();
        cuMemHostAlloc(flagsHost, 4L * SLOTS, CU_MEMHOSTALLOC_DEVICEMAP);
        CUdeviceptr flagsDevice = new CUdeviceptr();
        cuMemHostGetDevicePointer(flagsDevice, flagsHost, 0);
        Gpu gpu = new Gpu(ctx, empty, spin, scale, streams, mixStreams, hostIn, hostOut, deviceMem, flagsDevice);

        System.out.printf(Locale.ROOT, "## DriverContention: %s, driver %d.%d; %,d steps per thread, batches of %d,"
                + " %d cores; Java %s%n%n", name, driverVersion[0] / 1000, driverVersion[0] % 1000 / 10, s.perThread(),
                BATCH, Runtime.getRuntime().availableProcessors(), Runtime.version());
        System.out.printf(Locale.ROOT, "JCuda and the driver only, device 0's primary context. Each thread submits its"
                + " steps back to back on its own stream (16 threads: two per stream), a cuStreamSynchronize after"
                + " every %d steps. CPU per step: the submitting threads' own CPU time over their submissions, the"
                + " synchronizes excluded (ThreadMXBean); steps/s and wall include them. Mixes (DEMO_STEP,"
                + " SWEEP_STEP): cuCtxSetCurrent before every step, CU_STREAM_NON_BLOCKING streams. Each row"
                + " follows a warm-up of %,d steps per thread run the same way.%n", BATCH, warmUpSteps(s.perThread()));
        for (Op op : s.ops()) {
            System.out.printf("%n%s%n", tableHead(op));
            for (int threads : op.threadCounts()) {
                run(op, threads, warmUpSteps(s.perThread()), gpu);
                System.out.println(markdown(run(op, threads, s.perThread(), gpu)));
            }
        }
        cuMemFreeHost(flagsHost);
        cuMemFree(deviceMem);
        cuMemFreeHost(hostOut);
        cuMemFreeHost(hostIn);
        for (int i = 0; i < STREAMS; i++) {
            cuStreamDestroy(streams[i]);
            cuStreamDestroy(mixStreams[i]);
        }
        cuModuleUnload(module);
        cuDevicePrimaryCtxRelease(dev);
    }

    /** One thread's steps, prepared before the start (arguments packed once). */
    @FunctionalInterface
    private interface Steps {
        /** Submits step {@code step} (0-based). */
        void submit(int step);
    }

    private static Steps steps(Op op, int t, Gpu g) {
        CUstream stream = (op.mix ? g.mixStreams() : g.streams())[t % STREAMS];
        int slot = t % SLOTS;
        CUdeviceptr dst = g.deviceMem().withByteOffset((long) slot * COPY_BYTES);
        Pointer src = g.hostIn().withByteOffset((long) slot * COPY_BYTES);
        Pointer back = g.hostOut().withByteOffset((long) slot * COPY_BYTES);
        CUdeviceptr flag = g.flagsDevice().withByteOffset(4L * slot);
        CUcontext ctx = g.ctx();
        return switch (op) {
            case EMPTY_KERNEL -> {
                CUfunction f = g.empty();
                yield i -> cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, null, null);
            }
            case SPIN_10US -> {
                CUfunction f = g.spin();
                Pointer spinArgs = Pointer.to(Pointer.to(new long[] {10_000L}));
                yield i -> cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, spinArgs, null);
            }
            case COPY_1KIB -> i -> cuMemcpyHtoDAsync(dst, src, COPY_BYTES, stream);
            case DEMO_STEP -> {
                CUfunction f = g.scale();
                Pointer scaleArgs = Pointer.to(Pointer.to(dst), Pointer.to(new float[] {1.0f}),
                        Pointer.to(new int[] {SCALE_FLOATS}));
                yield i -> {
                    cuCtxSetCurrent(ctx);
                    cuMemcpyHtoDAsync(dst, src, COPY_BYTES, stream);
                    cuLaunchKernel(f, 1, 1, 1, SCALE_FLOATS, 1, 1, 0, stream, scaleArgs, null);
                    cuMemcpyDtoHAsync(back, dst, COPY_BYTES, stream);
                    cuStreamWriteValue32(stream, flag, i + 1, 0);
                };
            }
            case SWEEP_STEP -> {
                CUfunction f = g.spin();
                Pointer spinArgs = Pointer.to(Pointer.to(new long[] {0L}));
                yield i -> {
                    cuCtxSetCurrent(ctx);
                    cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, spinArgs, null);
                    cuStreamWriteValue32(stream, flag, i + 1, 0);
                };
            }
        };
    }

    /** {@code threads} threads, {@code perThread} steps each, from one start. */
    private static Result run(Op op, int threads, int perThread, Gpu g) throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        AtomicLong submitCpu = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int index = t;
            CUstream stream = (op.mix ? g.mixStreams() : g.streams())[t % STREAMS];
            ts.add(Thread.ofPlatform().name("submit-" + t).start(() -> {
                try {
                    cuCtxSetCurrent(g.ctx());
                    Steps steps = steps(op, index, g);
                    start.await();
                    long cpu = 0;
                    for (int done = 0; done < perThread; ) {
                        int n = Math.min(BATCH, perThread - done);
                        long c0 = THREADS.getCurrentThreadCpuTime();
                        for (int i = 0; i < n; i++) {
                            steps.submit(done + i);
                        }
                        cpu += THREADS.getCurrentThreadCpuTime() - c0;
                        cuStreamSynchronize(stream);
                        done += n;
                    }
                    submitCpu.addAndGet(cpu);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                    start.reset(); // whoever waits at the start (the main thread included) stops waiting
                }
            }));
        }
        long t0;
        try {
            start.await();
            t0 = System.nanoTime();
        } catch (BrokenBarrierException e) {
            t0 = System.nanoTime();
        }
        for (Thread th : ts) {
            th.join();
        }
        long wall = System.nanoTime() - t0;
        if (failure.get() != null) {
            throw new IllegalStateException(op + " with " + threads + " threads failed", failure.get());
        }
        return new Result(op, threads, streamsFor(threads), (long) threads * perThread, submitCpu.get(), wall);
    }
}
