package io.cudaloom.bench;

import io.cudaloom.CompletionStrategy;
import io.cudaloom.ReactorConfig;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.cuda.Kernels;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * One waiter, one kernel at a time: launch, then wait by each method, side by side in one run.
 * Prints a Markdown table of p50/p90/p99 latency (launch to waiter running again) and the process
 * CPU time per wait. Each method runs twice (rounds A and B) to show the noise.
 *
 * <p>Usage: {@code WaitLatencyBench [iterations=3000] [warmup=2000]} (needs a CUDA device).
 */
public final class WaitLatencyBench {
    interface Waiter {
        void waitFor(CudaStream s) throws Exception;
    }

    /** How the benchmark thread waits. */
    enum Wait { AWAIT, SYNCHRONIZE, QUERY_SPIN }

    record Method(String name, ReactorConfig config, boolean virtualThread, Wait waitBy) {}

    public static void main(String[] args) throws Exception {
        int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
        int warmup = args.length > 1 ? Integer.parseInt(args[1]) : 2000;
        // Optional third argument: a CSV file that receives every empty-kernel sample of round A
        // (method,microseconds), for the latency-distribution plot (docs/plot_latency.py).
        java.io.PrintWriter csv = args.length > 2 ? new java.io.PrintWriter(args[2], "UTF-8") : null;
        if (csv != null) {
            csv.println("method,us");
        }
        List<Method> methods = List.of(
                new Method("await(), virtual thread, reactor defaults (waiter spin 50 us)", ReactorConfig.defaults(), true, Wait.AWAIT),
                new Method("await(), virtual thread, waiter spin 20 us (the earlier default)",
                        ReactorConfig.builder().waiterSpin(Duration.ofNanos(20_000)).build(), true, Wait.AWAIT),
                new Method("await(), virtual thread, no waiter spin (scanner wakes it)",
                        ReactorConfig.builder().waiterSpin(Duration.ZERO).build(), true, Wait.AWAIT),
                new Method("await(), no waiter spin, scanner spins 1 ms before backing off",
                        ReactorConfig.builder().waiterSpin(Duration.ZERO).scannerSpin(Duration.ofMillis(1)).build(), true, Wait.AWAIT),
                new Method("await(), no waiter spin, scanner parks at once (20 us..1 ms back-off)",
                        ReactorConfig.builder().waiterSpin(Duration.ZERO).scannerSpin(Duration.ZERO).build(), true, Wait.AWAIT),
                new Method("cuStreamSynchronize, platform thread", ReactorConfig.defaults(), false, Wait.SYNCHRONIZE),
                new Method("spin on cuStreamQuery, platform thread", ReactorConfig.defaults(), false, Wait.QUERY_SPIN),
                new Method("cuLaunchHostFunc + unpark, virtual thread",
                        ReactorConfig.builder().strategy(CompletionStrategy.HOST_CALLBACK).build(), true, Wait.AWAIT));
        long[] kernels = {0, 20_000, 200_000};
        System.out.printf("# Wait latency, one waiter (%d iterations, %d warm-up; microseconds)%n%n", iterations, warmup);
        System.out.println("| kernel | wait method | round | p50 | p90 | p99 | CPU per wait |");
        System.out.println("|---|---|---|---|---|---|---|");
        for (long kernelNanos : kernels) {
            for (String round : new String[] {"A", "B"}) {
                for (Method m : methods) {
                    double[] r = run(m, kernelNanos, iterations, warmup,
                            csv != null && kernelNanos == 0 && round.equals("A") ? csv : null);
                    System.out.printf("| %s | %s | %s | %.1f | %.1f | %.1f | %.1f us |%n",
                            kernelNanos == 0 ? "empty" : (kernelNanos / 1000) + " us",
                            m.name(), round, r[0], r[1], r[2], r[3]);
                }
            }
        }
        if (csv != null) {
            csv.close();
        }
    }

    /** Returns {p50, p90, p99, cpu-us-per-wait}. */
    static double[] run(Method m, long kernelNanos, int iterations, int warmup, java.io.PrintWriter csv)
            throws Exception {
        AtomicReference<double[]> result = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        try (CudaDevice device = CudaDevice.open(0, m.config()); Kernels k = device.loadKernels()) {
            CudaStream stream = device.newStream();
            Runnable body = () -> {
                try {
                    long[] samples = new long[iterations];
                    var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
                    long cpu0 = 0;
                    for (int i = -warmup; i < iterations; i++) {
                        if (i == 0) {
                            cpu0 = os.getProcessCpuTime();
                        }
                        long t0 = System.nanoTime();
                        if (kernelNanos == 0) {
                            k.launchEmpty(stream);
                        } else {
                            k.launchSpin(stream, kernelNanos);
                        }
                        if (m.waitBy() == Wait.QUERY_SPIN) {
                            device.makeCurrent();
                            int r;
                            while ((r = JCudaDriver.cuStreamQuery(stream.handle())) == CUresult.CUDA_ERROR_NOT_READY) {
                                Thread.onSpinWait();
                            }
                            if (r != CUresult.CUDA_SUCCESS) {
                                throw new IllegalStateException("cuStreamQuery: " + CUresult.stringFor(r));
                            }
                        } else if (m.waitBy() == Wait.SYNCHRONIZE) {
                            stream.synchronize();
                        } else {
                            stream.await();
                        }
                        if (i >= 0) {
                            samples[i] = System.nanoTime() - t0;
                        }
                    }
                    long cpu = os.getProcessCpuTime() - cpu0;
                    if (csv != null) {
                        synchronized (csv) {
                            for (long v : samples) {
                                csv.printf("\"%s\",%.2f%n", m.name(), v / 1e3);
                            }
                        }
                    }
                    Arrays.sort(samples);
                    result.set(new double[] {
                        samples[iterations / 2] / 1e3, samples[(int) (iterations * 0.9)] / 1e3,
                        samples[(int) (iterations * 0.99)] / 1e3, cpu / 1e3 / iterations});
                } catch (Throwable t) {
                    failure.set(t);
                }
            };
            Thread t = m.virtualThread() ? Thread.ofVirtual().start(body) : Thread.ofPlatform().start(body);
            t.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException(m.name() + " failed", failure.get());
        }
        return result.get();
    }
}
