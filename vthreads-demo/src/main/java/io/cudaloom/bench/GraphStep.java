package io.cudaloom.bench;

import static jcuda.driver.JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuDriverGetVersion;
import static jcuda.driver.JCudaDriver.cuGraphDestroy;
import static jcuda.driver.JCudaDriver.cuGraphExecDestroy;
import static jcuda.driver.JCudaDriver.cuGraphInstantiate;
import static jcuda.driver.JCudaDriver.cuGraphLaunch;
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
import static jcuda.driver.JCudaDriver.cuStreamBeginCapture;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamEndCapture;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;
import static jcuda.driver.JCudaDriver.cuStreamWriteValue32;

import io.cudaloom.demo.DemoKernels;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumMap;
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
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.CUstreamCaptureMode;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * CUDA graphs for the demo's fixed step (#39 item 3), in raw JCuda: no project code beyond the PTX
 * text of the built-in kernels ({@link DemoKernels#ptxText()}), on device 0's primary context.
 *
 * <p>The step: {@code cuMemcpyHtoDAsync} of 1 KiB from pinned memory, {@code scale_f32(data, 2.0f,
 * 256)} as one block of 256, {@code cuMemcpyDtoHAsync} of the 1 KiB back to pinned memory, and
 * {@code cuStreamWriteValue32} of a flag word in pinned host memory mapped for the device (the
 * reactor's completion flag). Each thread has its own {@code CU_STREAM_NON_BLOCKING} stream, its own
 * 1 KiB slots (pinned in, pinned out, device) and flag word. Three ways to submit it ({@link Mode}):
 * <ol>
 *   <li>{@link Mode#OPS}: the four operations, one driver call each, the flag's value the step's
 *       number;
 *   <li>{@link Mode#GRAPH}: the four captured once per thread into a CUDA graph
 *       ({@code cuStreamBeginCapture} in thread-local mode, the same four calls,
 *       {@code cuStreamEndCapture}, {@code cuGraphInstantiate}), then one {@code cuGraphLaunch} per
 *       step. The graph always reads and writes the same buffers: the per-step arguments travel
 *       through a descriptor in the pinned input slot that the host writes before the launch (the
 *       copy takes it to the device with the data). The flag write's value is the capture's
 *       constant (1): a graph cannot say "this step's number" without a node update, so a reactor
 *       waiting on graphs would need a flag word per launch or a reset by the host;
 *   <li>{@link Mode#GRAPH_AND_FLAG}: the three data operations as a graph, the flag write outside
 *       it, per step, with the step's number: what a reactor that keeps its per-launch flag values
 *       would submit (two driver calls per step).
 * </ol>
 * In every mode the host writes the step's descriptor (its number, one int) into the pinned input
 * before submitting, and calls {@code cuCtxSetCurrent} before every step, as the library does.
 * Each thread submits its steps back to back in batches of {@value #BATCH}, a
 * {@code cuStreamSynchronize} after each; CPU per step is the submitting threads' own CPU time
 * ({@link ThreadMXBean}) over their submissions, the synchronizes excluded (as
 * {@link DriverContention}); steps/s and wall include them. Each row follows a warm-up of a quarter
 * of the steps (at least one batch) run the same way; the graphs are captured and instantiated
 * before the warm-up, not measured.
 *
 * <p>{@code bash .gpu/java io.cudaloom.bench.GraphStep [perThread=50000] [threads=1,8]}
 */
public final class GraphStep {
    /** Steps between two synchronizes of a thread's stream. */
    static final int BATCH = 128;
    /** Bytes of each copy: the demo's vector of 256 floats. */
    static final int COPY_BYTES = 1024;
    static final int FLOATS = COPY_BYTES / Float.BYTES;
    static final float FACTOR = 2.0f;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private GraphStep() {}

    /** How a thread submits a step. */
    enum Mode {
        OPS("op by op: H2D copy, scale_f32, D2H copy, cuStreamWriteValue32 (4 driver calls)", 4),
        GRAPH("one cuGraphLaunch of the four captured once (flag value constant)", 1),
        GRAPH_AND_FLAG("cuGraphLaunch of the three data ops, then cuStreamWriteValue32 (per-step flag value)", 2);

        final String description;
        /** Driver calls per step, cuCtxSetCurrent not counted. */
        final int calls;

        Mode(String description, int calls) {
            this.description = description;
            this.calls = calls;
        }
    }

    /** The program's arguments. */
    record Settings(int perThread, List<Integer> threads) {
        static final List<BenchArgs.Param> PARAMS = List.of(
                new BenchArgs.Param("perThread", "50000", "steps"),
                new BenchArgs.Param("threads", "1,8"));

        /** Parses {@code args} ({@link BenchArgs}: by position or {@code name=value}). */
        static Settings parse(String[] args) {
            Map<String, String> v = BenchArgs.bind(args, 0, PARAMS);
            return new Settings(BenchArgs.intValue("perThread", v.get("perThread"), 1, 100_000_000),
                    BenchArgs.intList("threads", v.get("threads"), 1, 64));
        }
    }

    /** One measurement: {@code threads} threads of {@code mode}, {@code steps} steps in all. */
    record Result(Mode mode, int threads, long steps, long cpuNanos, long wallNanos) {
        double stepsPerSecond() {
            return wallNanos <= 0 ? 0 : steps * 1e9 / wallNanos;
        }

        double cpuMicrosPerStep() {
            return steps <= 0 ? 0 : cpuNanos / 1e3 / steps;
        }

        double coresBusy() {
            return wallNanos <= 0 ? 0 : (double) cpuNanos / wallNanos;
        }
    }

    /** Steps of the warm-up before a measurement of {@code perThread} steps per thread. */
    static int warmUpSteps(int perThread) {
        return Math.max(BATCH, perThread / 4);
    }

    static String tableHeader() {
        return "| mode | threads | driver calls per step | steps/s | CPU per step (submitting threads, sync excluded)"
                + " | cores busy in submissions | wall s | CPU per step / op by op | steps/s / op by op |\n"
                + "|---|---|---|---|---|---|---|---|---|";
    }

    /** A row; {@code ops}: the op-by-op row at the same thread count, or null. */
    static String markdown(Result r, Result ops) {
        String cpuRatio = ops == null || ops.cpuMicrosPerStep() <= 0 ? "-"
                : String.format(Locale.ROOT, "%.2f", r.cpuMicrosPerStep() / ops.cpuMicrosPerStep());
        String rateRatio = ops == null || ops.stepsPerSecond() <= 0 ? "-"
                : String.format(Locale.ROOT, "%.2f", r.stepsPerSecond() / ops.stepsPerSecond());
        return String.format(Locale.ROOT, "| %s | %d | %d + cuCtxSetCurrent | %,.0f | %.2f us | %.2f | %.2f | %s | %s |",
                r.mode(), r.threads(), r.mode().calls, r.stepsPerSecond(), r.cpuMicrosPerStep(), r.coresBusy(),
                r.wallNanos() / 1e9, cpuRatio, rateRatio);
    }

    /** The summary line of one thread count: graph over op by op, CPU per step and steps/s. */
    static String ratioLine(Map<Mode, Result> rows) {
        Result ops = rows.get(Mode.OPS), graph = rows.get(Mode.GRAPH);
        if (ops == null || graph == null || ops.cpuMicrosPerStep() <= 0 || ops.stepsPerSecond() <= 0) {
            return "-";
        }
        String s = String.format(Locale.ROOT, "%d threads: graph / op by op: CPU per step %.2f x, steps/s %.2f x",
                ops.threads(), graph.cpuMicrosPerStep() / ops.cpuMicrosPerStep(),
                graph.stepsPerSecond() / ops.stepsPerSecond());
        Result both = rows.get(Mode.GRAPH_AND_FLAG);
        if (both != null) {
            s += String.format(Locale.ROOT, "; graph + flag write / op by op: CPU per step %.2f x, steps/s %.2f x",
                    both.cpuMicrosPerStep() / ops.cpuMicrosPerStep(), both.stepsPerSecond() / ops.stepsPerSecond());
        }
        return s;
    }

    // ---- on the GPU ---------------------------------------------------------------------------

    /** One thread's stream, buffers and graphs. */
    private static final class Lane {
        final CUstream stream = new CUstream();
        final Pointer hostIn = new Pointer();
        final Pointer hostOut = new Pointer();
        final Pointer flagHost = new Pointer();
        final CUdeviceptr flagDevice = new CUdeviceptr();
        final CUdeviceptr data = new CUdeviceptr();
        final Pointer scaleArgs;
        ByteBuffer descriptor;
        CUgraph fullGraph;
        CUgraphExec full;
        CUgraph dataGraph;
        CUgraphExec dataOnly;

        Lane() {
            cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING);
            cuMemHostAlloc(hostIn, COPY_BYTES, 0);
            cuMemHostAlloc(hostOut, COPY_BYTES, 0);
            cuMemHostAlloc(flagHost, 4, CU_MEMHOSTALLOC_DEVICEMAP);
            cuMemHostGetDevicePointer(flagDevice, flagHost, 0);
            cuMemAlloc(data, COPY_BYTES);
            descriptor = hostIn.getByteBuffer(0, COPY_BYTES).order(ByteOrder.nativeOrder());
            for (int i = 0; i < FLOATS; i++) {
                descriptor.putFloat(4 * i, 1.0f);
            }
            scaleArgs = Pointer.to(Pointer.to(data), Pointer.to(new float[] {FACTOR}), Pointer.to(new int[] {FLOATS}));
        }

        void copyScaleCopy(CUfunction scale) {
            cuMemcpyHtoDAsync(data, hostIn, COPY_BYTES, stream);
            cuLaunchKernel(scale, 1, 1, 1, FLOATS, 1, 1, 0, stream, scaleArgs, null);
            cuMemcpyDtoHAsync(hostOut, data, COPY_BYTES, stream);
        }

        /** Captures the step (with or without the flag write) into a graph, instantiated. */
        CUgraph capture(CUfunction scale, boolean withFlag, CUgraphExec exec) {
            CUgraph g = new CUgraph();
            cuStreamBeginCapture(stream, CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
            copyScaleCopy(scale);
            if (withFlag) {
                cuStreamWriteValue32(stream, flagDevice, 1, 0);
            }
            cuStreamEndCapture(stream, g);
            cuGraphInstantiate(exec, g, 0);
            return g;
        }

        void prepareGraphs(CUfunction scale) {
            full = new CUgraphExec();
            fullGraph = capture(scale, true, full);
            dataOnly = new CUgraphExec();
            dataGraph = capture(scale, false, dataOnly);
        }

        void submit(Mode m, int step, CUcontext ctx, CUfunction scale) {
            cuCtxSetCurrent(ctx);
            descriptor.putInt(0, step); // this step's argument, in the pinned slot the graph copies from
            switch (m) {
                case OPS -> {
                    copyScaleCopy(scale);
                    cuStreamWriteValue32(stream, flagDevice, step + 1, 0);
                }
                case GRAPH -> cuGraphLaunch(full, stream);
                case GRAPH_AND_FLAG -> {
                    cuGraphLaunch(dataOnly, stream);
                    cuStreamWriteValue32(stream, flagDevice, step + 1, 0);
                }
            }
        }

        void close() {
            cuStreamSynchronize(stream);
            if (full != null) {
                cuGraphExecDestroy(full);
                cuGraphDestroy(fullGraph);
            }
            if (dataOnly != null) {
                cuGraphExecDestroy(dataOnly);
                cuGraphDestroy(dataGraph);
            }
            cuStreamDestroy(stream);
            cuMemFree(data);
            cuMemFreeHost(flagHost);
            cuMemFreeHost(hostOut);
            cuMemFreeHost(hostIn);
        }
    }

    public static void main(String[] args) throws Exception {
        Settings s;
        try {
            s = Settings.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("GraphStep: " + e.getMessage());
            System.err.println("usage: GraphStep [perThread=50000] [threads=1,8]");
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
        CUmodule module = new CUmodule();
        cuModuleLoadData(module, DemoKernels.ptxText());
        CUfunction scale = new CUfunction();
        cuModuleGetFunction(scale, module, "scale_f32");
        int most = s.threads().stream().mapToInt(Integer::intValue).max().orElse(1);
        List<Lane> lanes = new ArrayList<>();
        for (int i = 0; i < most; i++) {
            Lane l = new Lane();
            l.prepareGraphs(scale);
            lanes.add(l);
        }
        // the graphs do the step: one launch of each, checked
        for (Lane l : lanes) {
            cuGraphLaunch(l.full, l.stream);
            cuStreamSynchronize(l.stream);
            float got = l.hostOut.getByteBuffer(0, COPY_BYTES).order(ByteOrder.nativeOrder()).getFloat(4 * (FLOATS - 1));
            int flag = l.flagHost.getByteBuffer(0, 4).order(ByteOrder.nativeOrder()).getInt(0);
            if (got != FACTOR || flag != 1) {
                throw new IllegalStateException("the graph's step went wrong: last float " + got + " (expected " + FACTOR
                        + "), flag " + flag + " (expected 1)");
            }
        }

        System.out.printf(Locale.ROOT, "## GraphStep: %s, driver %d.%d; %,d steps per thread, batches of %d; %d cores;"
                + " Java %s%n%n", name, driverVersion[0] / 1000, driverVersion[0] % 1000 / 10, s.perThread(), BATCH,
                Runtime.getRuntime().availableProcessors(), Runtime.version());
        System.out.printf(Locale.ROOT, "The demo's step (1 KiB H2D from pinned memory, scale_f32 on 256 floats, 1 KiB"
                + " D2H, cuStreamWriteValue32 of a mapped flag word), raw JCuda, device 0's primary context, a"
                + " CU_STREAM_NON_BLOCKING stream per thread; cuCtxSetCurrent and the host's write of the step's"
                + " descriptor into pinned memory before every step. OPS: op by op; GRAPH: captured once, one"
                + " cuGraphLaunch per step (the flag value is the capture's constant); GRAPH_AND_FLAG: the data ops"
                + " as a graph, the flag write per step outside it. CPU per step: the submitting threads' own CPU"
                + " over their submissions, a cuStreamSynchronize after every %d steps excluded; each row after a"
                + " warm-up of %,d steps per thread.%n%n%s%n", BATCH, warmUpSteps(s.perThread()), tableHeader());
        List<String> summary = new ArrayList<>();
        for (int threads : s.threads()) {
            Map<Mode, Result> rows = new EnumMap<>(Mode.class);
            for (Mode m : Mode.values()) {
                run(m, threads, warmUpSteps(s.perThread()), lanes, ctx, scale);
                Result r = run(m, threads, s.perThread(), lanes, ctx, scale);
                rows.put(m, r);
                System.out.println(markdown(r, m == Mode.OPS ? null : rows.get(Mode.OPS)));
                System.out.flush();
            }
            summary.add(ratioLine(rows));
        }
        System.out.println();
        for (String line : summary) {
            System.out.println("- " + line);
        }
        for (Lane l : lanes) {
            l.close();
        }
        cuModuleUnload(module);
        cuDevicePrimaryCtxRelease(dev);
    }

    /** {@code threads} platform threads, {@code perThread} steps each, from one start. */
    private static Result run(Mode m, int threads, int perThread, List<Lane> lanes, CUcontext ctx, CUfunction scale)
            throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        AtomicLong submitCpu = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Lane lane = lanes.get(t);
            ts.add(Thread.ofPlatform().name("graph-step-" + t).start(() -> {
                try {
                    cuCtxSetCurrent(ctx);
                    start.await();
                    long cpu = 0;
                    for (int done = 0; done < perThread; ) {
                        int n = Math.min(BATCH, perThread - done);
                        long c0 = THREADS.getCurrentThreadCpuTime();
                        for (int i = 0; i < n; i++) {
                            lane.submit(m, done + i, ctx, scale);
                        }
                        cpu += THREADS.getCurrentThreadCpuTime() - c0;
                        cuStreamSynchronize(lane.stream);
                        done += n;
                    }
                    submitCpu.addAndGet(cpu);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                    start.reset();
                }
            }));
        }
        long t0;
        try {
            start.await();
            t0 = System.nanoTime();
        } catch (BrokenBarrierException e) {
            for (Thread t : ts) {
                t.join();
            }
            throw new IllegalStateException("a submitting thread failed before the start", failure.get());
        }
        for (Thread t : ts) {
            t.join();
        }
        long wall = System.nanoTime() - t0;
        if (failure.get() != null) {
            throw new IllegalStateException(m + " at " + threads + " threads failed", failure.get());
        }
        return new Result(m, threads, (long) threads * perThread, submitCpu.get(), wall);
    }
}
