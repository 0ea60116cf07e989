package io.cudaloom;

import io.cudaloom.sim.SimulatedStream;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs in a child JVM started by {@link NoJCudaClassPathTest}, on a class path of its choosing:
 * opens a device with {@link GpuDevice#open()}, awaits work on it (blocking, on a virtual thread,
 * and through {@link GpuEvent#subscribe}) and prints what it saw, one {@code key=value} a line.
 * Exits with 1 and the failure's stack trace on anything unexpected. Names no backend class, so
 * loading it loads none.
 */
public final class NoJCudaProbe {
    private NoJCudaProbe() {}

    public static void main(String[] args) throws Exception {
        System.out.println("jcuda.present=" + present("jcuda.driver.JCudaDriver"));
        System.out.println("kotlin.present=" + present("kotlin.Unit"));
        System.out.println("micrometer.present=" + present("io.micrometer.core.instrument.MeterRegistry"));
        System.out.println("spring.present=" + present("org.springframework.boot.autoconfigure.AutoConfiguration"));
        List<io.cudaloom.internal.GpuDeviceProvider> providers = io.cudaloom.internal.GpuDeviceProvider.installed();
        System.out.println("providers=" + providers.stream().map(io.cudaloom.internal.GpuDeviceProvider::name).toList());
        if (args.length > 0 && args[0].equals("probe-cuda")) {
            for (io.cudaloom.internal.GpuDeviceProvider p : providers) {
                if (p.name().equals("cuda")) {
                    System.out.println("cuda.available=" + p.isAvailable());
                    System.out.println("cuda.reason=" + p.unavailableReason());
                }
            }
        }
        if (args.length > 0 && args[0].equals("open-cuda-device")) {
            // What GpuExtension does with cudaloom.junit.device=cuda; reflective, so that loading
            // this class loads no backend class.
            try {
                Class.forName("io.cudaloom.cuda.CudaDevice").getMethod("open", int.class, ReactorConfig.class)
                        .invoke(null, 0, ReactorConfig.defaults());
                System.out.println("cuda.device.opened");
            } catch (java.lang.reflect.InvocationTargetException e) {
                Throwable t = e.getCause();
                System.out.println("cuda.device.failure=" + t.getClass().getName() + ": " + t.getMessage());
            }
            return;
        }
        if (args.length > 0 && args[0].equals("open-cuda")) {
            System.setProperty(GpuDevice.BACKEND_PROPERTY, "cuda");
            try (GpuDevice device = GpuDevice.open()) {
                System.out.println("cuda.opened=" + device.name());
            } catch (RuntimeException e) {
                System.out.println("cuda.open.failure=" + e.getClass().getName() + ": " + e.getMessage());
            }
            return;
        }
        try (GpuDevice device = GpuDevice.open()) {
            System.out.println("simulated=" + device.isSimulated());
            SimulatedStream stream = (SimulatedStream) device.newStream();
            int[] data = {1, 2, 3};
            stream.launch(() -> data[2] *= 7);
            GpuEvent event = stream.event();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    event.await();
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            if (!waiter.join(java.time.Duration.ofSeconds(30)) || failure.get() != null) {
                throw new AssertionError("await failed or hung", failure.get());
            }
            System.out.println("awaited=" + data[2]);
            System.out.println("latency.count=" + device.reactor().awaitLatency().count());
            stream.launch(() -> data[0] = 40);
            CountDownLatch delivered = new CountDownLatch(1);
            AtomicReference<RuntimeException> outcome = new AtomicReference<>();
            stream.event().subscribe(Runnable::run, e -> {
                outcome.set(e);
                delivered.countDown();
            });
            if (!delivered.await(30, TimeUnit.SECONDS) || outcome.get() != null) {
                throw new AssertionError("subscribe failed or hung", outcome.get());
            }
            System.out.println("subscribed=" + data[0]);
        }
    }

    /** Whether the class file is on the class path; found as a resource, so the class is not loaded. */
    private static boolean present(String className) {
        return ClassLoader.getSystemResource(className.replace('.', '/') + ".class") != null;
    }
}
