package io.cudaloom.cuda;

import io.cudaloom.GpuFaultException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs in a child JVM for the fault test (a sticky CUDA error poisons the whole process: on driver
 * 580 neither a primary-context reset nor cuCtxCreate gives a working context afterwards, see
 * FaultRecoveryProbe). Faults a kernel under 8 waiting virtual threads and prints one
 * {@code RESULT key=value} line per measurement; exits 0 when every waiter woke with the named error.
 */
public final class FaultScenario {
    public static void main(String[] args) throws Exception {
        List<Long> wakeNanos = new ArrayList<>();
        AtomicInteger namedErrors = new AtomicInteger();
        AtomicReference<Long> visibleAt = new AtomicReference<>();
        long start;
        CudaDevice device = CudaDevice.open(0, GpuTestSupport.reactorOnly());
        Kernels k = Kernels.load(device);
        CudaStream stream = device.newStream();
        start = System.nanoTime();
        k.launchSpin(stream, 50_000_000L);
        stream.launch(k.fault, 1, 1, 0xdead_0000_0000L); // illegal address, after 50 ms
        Thread observer = Thread.ofPlatform().start(() -> {
            device.makeCurrent();
            while (jcuda.driver.JCudaDriver.cuStreamQuery(stream.handle()) == jcuda.driver.CUresult.CUDA_ERROR_NOT_READY) {
                Thread.onSpinWait();
            }
            visibleAt.set(System.nanoTime());
        });
        List<Thread> waiters = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            waiters.add(Thread.ofVirtual().start(() -> {
                try {
                    stream.event().await();
                } catch (GpuFaultException e) {
                    synchronized (wakeNanos) {
                        wakeNanos.add(System.nanoTime());
                    }
                    if (e.getMessage().contains("CUDA_ERROR_ILLEGAL_ADDRESS")) {
                        namedErrors.incrementAndGet();
                    }
                    System.out.println("waiter woke with: " + e.getMessage());
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        int hung = 0;
        for (Thread w : waiters) {
            w.join(60_000);
            if (w.isAlive()) {
                hung++;
            }
        }
        observer.join(60_000);
        System.out.println("RESULT hung=" + hung);
        System.out.println("RESULT namedErrors=" + namedErrors.get());
        System.out.printf("RESULT faultObservableMsAfterLaunch=%.1f%n", (visibleAt.get() - start) / 1e6);
        double worst = 0;
        for (long t : wakeNanos) {
            worst = Math.max(worst, (t - visibleAt.get()) / 1e6);
        }
        System.out.printf("RESULT worstWakeMsAfterObservable=%.2f%n", worst);
        System.out.println("RESULT faulted=" + device.isFaulted());
        try {
            CudaDevice.open(0).close();
            System.out.println("RESULT reopenInSameProcess=ok");
        } catch (GpuFaultException e) {
            System.out.println("RESULT reopenInSameProcess=refused: " + e.getMessage());
        }
        device.close();
        System.out.println("RESULT closed=true");
        System.exit(hung == 0 && namedErrors.get() == 8 ? 0 : 1);
    }
}
