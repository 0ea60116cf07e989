package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The Java example of README.md, kept compiling and passing here. */
class ReadmeExampleTest {

    @Test
    void javaExample() {
        AtomicInteger checked = new AtomicInteger();
        // --- README: Java example ---
        try (SimulatedDevice device = SimulatedDevice.create();
             SimulatedStream stream = device.newStream();
             var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 10_000; i++) {
                threads.submit(() -> {
                    float[] v = {1, 2, 3};
                    stream.launch(() -> {              // the "kernel": runs on the device, in stream order
                        for (int k = 0; k < v.length; k++) v[k] *= 2;
                    });
                    stream.event().await();            // parks this virtual thread; no platform thread waits
                    if (v[2] == 6) checked.incrementAndGet();
                    return null;                       // a Callable, since await() throws InterruptedException
                });
            }
        }                                              // waits for the threads, then closes stream and device
        // --- end ---
        assertEquals(10_000, checked.get());
    }
}
