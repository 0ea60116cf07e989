package io.cudaloom.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The JDK's own floor for a blocking call served in batches, with no project code and no GPU: what
 * it costs in CPU to park a virtual thread and unpark it again when its batch is done, at the
 * scale of the demo's batched run.
 *
 * <p>{@code threads} virtual threads each make {@code perThread} calls; a call appends a request
 * (its thread and a volatile done flag) to a {@link ConcurrentLinkedQueue} and parks until the
 * flag is set. One platform thread (the "delivery", as {@code GpuBatcher}'s) takes up to
 * {@code batch} requests at a time, sets each one's flag (a volatile write before the unpark) and
 * unparks its thread; with the queue empty it parks for 20 us. The delivery thread is a platform
 * thread (as {@code GpuBatcher}'s) or, in the {@code virtual} rows, a virtual thread: an unpark
 * made on a carrier queues the woken thread on that carrier's own queue, one made elsewhere submits
 * it from outside the scheduler. Nothing else happens: no GPU, no
 * copy, no launch. So CPU per call here is what the JDK's scheduler spends per park and unpark of
 * a virtual thread, woken in batches, on this machine's carriers (one per core unless
 * {@code -Djdk.virtualThreadScheduler.parallelism} says otherwise): any batched blocking call on
 * virtual threads pays at least this per call, on top of its own work.
 *
 * <p>CPU per call is the process CPU time over the calls (every thread of the JVM: carriers, the
 * delivery thread, GC); the delivery thread's own CPU is shown apart. Each row follows a warm-up
 * run of the same shape.
 *
 * <p>{@code rate} paces the delivery (calls per second; 0, the default: as fast as it can): at
 * the rates of long kernels (8,000 completions a second for 8 streams of 1 ms kernels) the
 * carriers are idle between hand-offs, and each unpark wakes one from its own park.
 *
 * <p>{@code bash .gpu/java io.cudaloom.bench.VirtualThreadHandOff [threads=10000] [perThread=20] [batch=1,64,256]
 * [delivery=platform,virtual] [rate=0]}
 */
public final class VirtualThreadHandOff {
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private VirtualThreadHandOff() {}

    /** One call: its thread, and the flag the delivery sets (volatile: written before the unpark). */
    private static final class Request {
        final Thread thread = Thread.currentThread();
        volatile boolean done;
    }

    /** One row: calls, wall and CPU time, and the delivery thread's CPU time. */
    record Row(String delivery, int batch, long calls, long wallNanos, long cpuNanos, long deliveryCpuNanos, long batches) {
        double callsPerSecond() {
            return calls * 1e9 / wallNanos;
        }

        double cpuPerCallMicros() {
            return cpuNanos / 1e3 / calls;
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> v;
        int threads;
        int perThread;
        List<Integer> batches;
        List<String> deliveries;
        List<Integer> rates;
        try {
            v = BenchArgs.bind(args, 0, List.of(new BenchArgs.Param("threads", "10000"),
                    new BenchArgs.Param("perThread", "20"), new BenchArgs.Param("batch", "1,64,256"),
                    new BenchArgs.Param("delivery", "platform,virtual"), new BenchArgs.Param("rate", "0")));
            threads = BenchArgs.intValue("threads", v.get("threads"), 1, 1_000_000);
            perThread = BenchArgs.intValue("perThread", v.get("perThread"), 1, 1_000_000);
            batches = BenchArgs.intList("batch", v.get("batch"), 1, 1 << 20);
            deliveries = List.of(v.get("delivery").split(",", -1));
            rates = BenchArgs.intList("rate", v.get("rate"), 0, 100_000_000);
            for (String d : deliveries) {
                if (!d.equals("platform") && !d.equals("virtual")) {
                    throw new IllegalArgumentException("delivery must be platform or virtual, was " + d);
                }
            }
        } catch (IllegalArgumentException e) {
            System.err.println("VirtualThreadHandOff: " + e.getMessage());
            System.err.println("usage: VirtualThreadHandOff [threads=10000] [perThread=20] [batch=1,64,256]"
                    + " [delivery=platform,virtual] [rate=0]");
            System.exit(2);
            return;
        }
        System.out.printf(Locale.ROOT, "## VirtualThreadHandOff: %,d virtual threads x %,d calls, each parked until a"
                + " delivery thread unparks it in its batch (no project code, no GPU); %d cores, carriers: %s; Java %s%n%n",
                threads, perThread, Runtime.getRuntime().availableProcessors(),
                System.getProperty("jdk.virtualThreadScheduler.parallelism", "one per core (default)"),
                Runtime.version());
        System.out.println("| delivery thread | batch (most calls unparked per take) | paced at (calls/s) | calls | calls/s |"
                + " cores busy | CPU per call | delivery thread CPU per call | CPU per call, the delivery thread's excluded | mean batch |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|");
        for (int rate : rates) {
            for (String delivery : deliveries) {
                for (int batch : batches) {
                    run(threads, perThread, batch, delivery, rate); // warm-up, not reported
                    Row r = run(threads, perThread, batch, delivery, rate);
                    System.out.printf(Locale.ROOT, "| %s | %d | %s | %,d | %,.0f | %.2f | %.2f us | %s | %s | %.1f |%n", delivery,
                            batch, rate == 0 ? "-" : String.format(Locale.ROOT, "%,d", rate), r.calls(), r.callsPerSecond(),
                            (double) r.cpuNanos() / r.wallNanos(), r.cpuPerCallMicros(),
                            r.deliveryCpuNanos() < 0 ? "- (a virtual thread's CPU time is not measured)"
                                    : String.format(Locale.ROOT, "%.2f us", r.deliveryCpuNanos() / 1e3 / r.calls()),
                            r.deliveryCpuNanos() < 0 ? "-" : String.format(Locale.ROOT, "%.2f us",
                                    (r.cpuNanos() - r.deliveryCpuNanos()) / 1e3 / r.calls()),
                            (double) r.calls() / Math.max(1, r.batches()));
                }
            }
        }
        System.out.println();
        System.out.println("CPU per call: process CPU time (every thread: carriers, the delivery thread, GC) over the"
                + " calls; the floor under any batched blocking call on virtual threads, before its own work. With the"
                + " delivery thread's excluded (a platform one: its CPU is measured), what the carriers and the rest of"
                + " the JVM spend per park and unpark; paced, the delivery thread also parks until each batch is due.");
    }

    static Row run(int threads, int perThread, int batch, String kind, int rate) throws InterruptedException {
        ConcurrentLinkedQueue<Request> queue = new ConcurrentLinkedQueue<>();
        long total = (long) threads * perThread;
        AtomicLong deliveryCpu = new AtomicLong();
        AtomicLong batchCount = new AtomicLong();
        CountDownLatch start = new CountDownLatch(1);
        Thread.Builder builder = kind.equals("virtual") ? Thread.ofVirtual() : Thread.ofPlatform();
        Thread delivery = builder.name("handoff-delivery").start(() -> {
            long cpu0 = THREADS.getCurrentThreadCpuTime();
            long paceFrom = System.nanoTime();
            long served = 0;
            long taken = 0;
            Request[] take = new Request[batch];
            while (served < total) {
                int n = 0;
                Request r;
                while (n < batch && (r = queue.poll()) != null) {
                    take[n++] = r;
                }
                if (n == 0) {
                    LockSupport.parkNanos(20_000);
                    continue;
                }
                if (rate > 0) { // paced: the next batch is due when the calls served so far are due
                    long due = paceFrom + served * 1_000_000_000L / rate;
                    for (long now = System.nanoTime(); now < due; now = System.nanoTime()) {
                        LockSupport.parkNanos(due - now);
                    }
                }
                taken++;
                for (int i = 0; i < n; i++) {
                    take[i].done = true; // volatile: before the unpark, so the woken thread sees it
                    LockSupport.unpark(take[i].thread);
                    take[i] = null;
                }
                served += n;
            }
            deliveryCpu.set(Thread.currentThread().isVirtual() ? -1 : THREADS.getCurrentThreadCpuTime() - cpu0);
            batchCount.set(taken);
        });
        Thread[] callers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            callers[t] = Thread.ofVirtual().unstarted(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < perThread; i++) {
                    Request r = new Request();
                    queue.add(r);
                    while (!r.done) {
                        LockSupport.park();
                    }
                }
            });
            callers[t].start();
        }
        long cpu0 = OS.getProcessCpuTime();
        long t0 = System.nanoTime();
        start.countDown();
        for (Thread c : callers) {
            c.join();
        }
        delivery.join();
        long wall = System.nanoTime() - t0;
        long cpu = OS.getProcessCpuTime() - cpu0;
        return new Row(kind, batch, total, wall, cpu, deliveryCpu.get(), batchCount.get());
    }
}
