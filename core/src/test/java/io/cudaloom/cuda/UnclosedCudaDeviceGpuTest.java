package io.cudaloom.cuda;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.GpuStream;
import io.cudaloom.LogCapture;
import io.cudaloom.TestAccess;
import io.cudaloom.junit.GpuTest;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The CUDA backend's side of {@code io.cudaloom.UnclosedDeviceTest}: nothing of it keeps an idle, dropped device reachable. */
@Tag("gpu")
@GpuTest
class UnclosedCudaDeviceGpuTest {
    private static final Duration LONG = Duration.ofSeconds(60);

    private record Dropped(String name, WeakReference<CudaDevice> device, Thread scanner) {
    }

    private static Dropped useAndDrop() throws Exception {
        CudaDevice device = CudaDevice.open(0);
        GpuStream stream = device.newStream();
        stream.launchKernel(Duration.ofMillis(1));
        stream.event().await();
        return new Dropped(device.name(), new WeakReference<>(device), TestAccess.scannerThread(device));
    }

    @Test
    void aCudaDeviceDroppedUnclosedIsReportedAndItsScannerEnds() throws Exception {
        try (LogCapture log = new LogCapture()) {
            List<LogRecord> records = log.records();
            Dropped d = useAndDrop();
            await().atMost(LONG).until(() -> {
                System.gc();
                return d.device().refersTo(null) && records.stream().anyMatch(r -> r.getMessage().contains(d.name()));
            });
            d.scanner().join(LONG);
            assertFalse(d.scanner().isAlive(), "the scanner ended");
            assertTrue(records.stream().anyMatch(r -> r.getThrown() != null
                    && r.getThrown().getMessage().startsWith("the device was opened here")), records.toString());
        }
    }
}
