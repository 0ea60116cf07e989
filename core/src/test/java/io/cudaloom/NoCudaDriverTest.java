package io.cudaloom;

import static org.junit.jupiter.api.Assertions.*;

import io.cudaloom.cuda.Cuda;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaDriverException;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * On a machine without a CUDA driver (as CI's), forcing the CUDA backend fails with one clear line,
 * not with JCuda's UnsatisfiedLinkError and its pages of nested stack traces.
 */
class NoCudaDriverTest {

    /**
     * Whether the CUDA driver library, libcuda.so.1, is in a directory the dynamic loader searches
     * (LD_LIBRARY_PATH, /etc/ld.so.conf.d, the usual library directories); then this test does not
     * apply. Found without loading anything, so the library code under test is not involved.
     */
    private static boolean driverLibraryPresent() {
        List<String> dirs = new ArrayList<>(List.of("/lib", "/lib64", "/usr/lib", "/usr/lib64",
                "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                "/usr/lib/aarch64-linux-gnu", "/usr/lib/wsl/lib"));
        String ldPath = System.getenv("LD_LIBRARY_PATH");
        if (ldPath != null) {
            dirs.addAll(List.of(ldPath.split(File.pathSeparator)));
        }
        Path conf = Path.of("/etc/ld.so.conf.d");
        if (Files.isDirectory(conf)) {
            try (Stream<Path> files = Files.list(conf)) {
                for (Path f : files.filter(f -> f.toString().endsWith(".conf")).toList()) {
                    Files.readAllLines(f).stream().map(String::strip)
                            .filter(line -> line.startsWith("/")).forEach(dirs::add);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return dirs.stream().anyMatch(dir -> !dir.isEmpty() && Files.exists(Path.of(dir, "libcuda.so.1")));
    }

    @Test
    void forcingCudaWithoutADriverFailsWithOneLineNamingIt() {
        Assumptions.assumeTrue(System.getProperty("os.name").equals("Linux"), "written for Linux");
        Assumptions.assumeFalse(driverLibraryPresent(), "a CUDA driver is installed here");
        String old = System.getProperty(GpuDevice.BACKEND_PROPERTY);
        System.setProperty(GpuDevice.BACKEND_PROPERTY, "cuda");
        try {
            // Twice: the JVM reports a failed class initialisation differently the second time.
            for (int attempt = 1; attempt <= 2; attempt++) {
                CudaDriverException e = assertThrows(CudaDriverException.class, GpuDevice::open, "attempt " + attempt);
                assertNoDriver(e);
            }
            assertNoDriver(assertThrows(CudaDriverException.class, () -> CudaDevice.open(0)));
            assertNoDriver(assertThrows(CudaDriverException.class, CudaDevice::deviceCount));
        } finally {
            if (old == null) {
                System.clearProperty(GpuDevice.BACKEND_PROPERTY);
            } else {
                System.setProperty(GpuDevice.BACKEND_PROPERTY, old);
            }
        }
        assertFalse(Cuda.isAvailable());
        String reason = Cuda.unavailableReason();
        assertNotNull(reason);
        assertTrue(reason.startsWith("no CUDA driver: "), reason);
    }

    /**
     * JCuda is on this class path but the driver is not: {@code auto} falls back to the simulated
     * device, and says why in one WARNING (not only at DEBUG), since JCuda's being there means the
     * GPU was wanted.
     */
    @Test
    void autoWithJCudaButNoDriverWarnsOnceWhyAndOpensTheSimulatedDevice() {
        Assumptions.assumeTrue(System.getProperty("os.name").equals("Linux"), "written for Linux");
        Assumptions.assumeFalse(driverLibraryPresent(), "a CUDA driver is installed here");
        String old = System.getProperty(GpuDevice.BACKEND_PROPERTY);
        System.setProperty(GpuDevice.BACKEND_PROPERTY, "auto");
        try (LogCapture log = new LogCapture(); GpuDevice device = GpuDevice.open()) {
            assertTrue(device.isSimulated(), device.name());
            List<java.util.logging.LogRecord> warnings = log.records().stream()
                    .filter(r -> r.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()).toList();
            assertEquals(1, warnings.size(), "one WARNING: " + warnings.stream().map(r -> r.getMessage()).toList());
            String message = warnings.get(0).getMessage();
            assertTrue(message.contains("cuda") && message.contains("no CUDA driver: "), message);
            assertTrue(message.contains("libcuda"), "names the missing driver library: " + message);
            assertFalse(message.contains("\n") || message.contains("\r"), "one line: " + message);
        } finally {
            if (old == null) {
                System.clearProperty(GpuDevice.BACKEND_PROPERTY);
            } else {
                System.setProperty(GpuDevice.BACKEND_PROPERTY, old);
            }
        }
    }

    private static void assertNoDriver(CudaDriverException e) {
        String message = e.getMessage();
        assertTrue(message.startsWith("no CUDA driver: "), message);
        assertFalse(message.contains("\n") || message.contains("\r"), "one line: " + message);
        assertTrue(message.contains("JCudaDriver"), "names the library that failed to load: " + message);
        assertTrue(message.length() < 300, "short: " + message);
        assertInstanceOf(LinkageError.class, e.getCause(), "the load failure is kept as the cause");
        assertEquals(CudaDriverException.NO_DRIVER, e.result());
    }
}
