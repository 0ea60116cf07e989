package io.cudaloom.bench;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemHostAlloc;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * What one submission to the driver costs the submitting thread's CPU as more threads submit at
 * once: JCuda and the driver only, no project code (the PTX text is the library's kernels resource,
 * read as data). For 1, 2, 4, 8 and 16 platform threads (each on a stream of its own up to 8; 16
 * share 8 streams two by two), each submits {@code perThread} operations back to back in batches
 * of 128 (far below the driver's queue of about 1,000 entries, so no submission waits for room)
 * with a {@code cuStreamSynchronize} after each batch; the CPU of the submissions alone is each
 * thread's CPU time over the batch's submissions, the synchronize excluded. Operations: an empty
 * kernel, a 10 us spin kernel, a 1 KiB host-to-device copy from pinned memory.
 *
 * <p>{@code bash .gpu/java io.cudaloom.bench.DriverContention [perThread]}
 */
public final class DriverContention {
    private static final int BATCH = 128;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private DriverContention() {}

    enum Op { EMPTY_KERNEL, SPIN_10US, COPY_1KIB }

    public static void main(String[] args) throws Exception {
        int perThread = args.length > 0 ? Integer.parseInt(args[0]) : 50_000;
        JCudaDriver.setExceptionsEnabled(true);
        cuInit(0);
        CUdevice dev = new CUdevice();
        cuDeviceGet(dev, 0);
        CUcontext ctx = new CUcontext();
        cuDevicePrimaryCtxRetain(ctx, dev);
        cuCtxSetCurrent(ctx);
        String ptx;
        try (InputStream in = DriverContention.class.getResourceAsStream("/io/cudaloom/kernels.ptx")) {
            ptx = new String(in.readAllBytes(), StandardCharsets.US_ASCII) + "\0";
        }
        CUmodule module = new CUmodule();
        cuModuleLoadData(module, ptx.getBytes(StandardCharsets.US_ASCII));
        CUfunction empty = new CUfunction();
        cuModuleGetFunction(empty, module, "empty_kernel");
        CUfunction spin = new CUfunction();
        cuModuleGetFunction(spin, module, "spin_kernel");
        CUstream[] streams = new CUstream[8];
        for (int i = 0; i < streams.length; i++) {
            streams[i] = new CUstream();
            cuStreamCreate(streams[i], 0);
        }
        Pointer host = new Pointer();
        cuMemHostAlloc(host, 16L * 1024, 0);
        CUdeviceptr deviceMem = new CUdeviceptr();
        cuMemAlloc(deviceMem, 16L * 1024);

        System.out.printf(Locale.ROOT, "## DriverContention: %,d submissions per thread, batches of %d, %d cores; Java %s%n%n",
                perThread, BATCH, Runtime.getRuntime().availableProcessors(), Runtime.version());
        System.out.println("| operation | threads | streams | submissions/s | CPU per submission (submitting threads, sync excluded) | cores busy in submissions |");
        System.out.println("|---|---|---|---|---|---|");
        for (Op op : Op.values()) {
            for (int threads : new int[] {1, 2, 4, 8, 16}) {
                run(false, op, threads, Math.max(BATCH, perThread / 4), ctx, streams, empty, spin, host, deviceMem); // warm-up
                run(true, op, threads, perThread, ctx, streams, empty, spin, host, deviceMem);
            }
        }
        cuMemFree(deviceMem);
        cuMemFreeHost(host);
        for (CUstream s : streams) {
            cuStreamDestroy(s);
        }
        cuModuleUnload(module);
        cuDevicePrimaryCtxRelease(dev);
    }

    private static void run(boolean print, Op op, int threads, int perThread, CUcontext ctx, CUstream[] streams, CUfunction empty,
            CUfunction spin, Pointer host, CUdeviceptr deviceMem) throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        AtomicLong submitCpu = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            CUstream stream = streams[t % streams.length];
            CUdeviceptr dst = deviceMem.withByteOffset((t % 16) * 1024L);
            Pointer src = host.withByteOffset((t % 16) * 1024L);
            Thread th = Thread.ofPlatform().start(() -> {
                try {
                    cuCtxSetCurrent(ctx);
                    Pointer spinArgs = Pointer.to(Pointer.to(new long[] {10_000L}));
                    start.await();
                    long cpu = 0;
                    for (int done = 0; done < perThread; ) {
                        int n = Math.min(BATCH, perThread - done);
                        long c0 = THREADS.getCurrentThreadCpuTime();
                        for (int i = 0; i < n; i++) {
                            switch (op) {
                                case EMPTY_KERNEL -> cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, null, null);
                                case SPIN_10US -> cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, stream, spinArgs, null);
                                case COPY_1KIB -> cuMemcpyHtoDAsync(dst, src, 1024, stream);
                            }
                        }
                        cpu += THREADS.getCurrentThreadCpuTime() - c0;
                        cuStreamSynchronize(stream);
                        done += n;
                    }
                    submitCpu.addAndGet(cpu);
                    start.await();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            ts.add(th);
        }
        start.await();
        long t0 = System.nanoTime();
        start.await();
        long wall = System.nanoTime() - t0;
        for (Thread th : ts) {
            th.join();
        }
        if (print) {
            long total = (long) threads * perThread;
            System.out.printf(Locale.ROOT, "| %s | %d | %d | %,.0f | %.2f us | %.2f |%n", op, threads,
                    Math.min(threads, streams.length), total * 1e9 / wall, submitCpu.get() / 1e3 / total,
                    submitCpu.get() / (double) wall);
        }
    }
}
