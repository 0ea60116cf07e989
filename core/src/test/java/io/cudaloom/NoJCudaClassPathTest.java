package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.NullMarked;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * JCuda, Kotlin, Micrometer and the JetBrains annotations are optional dependencies of core: a Java
 * user with only core, JSpecify and HdrHistogram on the class path opens the simulated device through
 * {@link GpuDevice#open()} and awaits work on it; and a user who picks the simulated device never
 * loads a JCuda class even when JCuda is there, nor a Micrometer class (nor the binder) when
 * Micrometer is there and not called, nor a Spring class (nor the auto-configuration) when Spring
 * Boot is there and the program is no Spring application. Each case runs {@link NoJCudaProbe} in a child JVM
 * with exactly the class path under test.
 */
class NoJCudaClassPathTest {
    @TempDir
    Path tmp;

    private static Path location(Class<?> type) throws Exception {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /**
     * core's classes, its two required dependencies (JSpecify, HdrHistogram), and the probe's own
     * directory (test classes: none of them is loaded but the probe).
     */
    private static String coreOnlyClassPath() throws Exception {
        return String.join(File.pathSeparator, location(GpuDevice.class).toString(),
                location(NullMarked.class).toString(), location(org.HdrHistogram.Histogram.class).toString(),
                location(NoJCudaProbe.class).toString());
    }

    private record Run(int exitCode, String out) {
        boolean has(String line) {
            return out.lines().anyMatch(line::equals);
        }
    }

    private Run probe(String classPath, List<String> jvmOptions, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(classPath);
        command.add(NoJCudaProbe.class.getName());
        command.addAll(List.of(args));
        Path output = tmp.resolve("probe-" + System.nanoTime() + ".txt");
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the probe JVM did not finish in 60 s: " + read(output));
        }
        Run run = new Run(p.exitValue(), read(output));
        assertEquals(0, run.exitCode(), "probe failed: " + run.out());
        return run;
    }

    private static String read(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.UTF_8);
    }

    @Test
    void withoutJCudaOrKotlinOpenPicksTheSimulatedDeviceAndAwaitsWork() throws Exception {
        Run run = probe(coreOnlyClassPath(), List.of("-Dcudaloom.device=auto"));
        assertTrue(run.has("jcuda.present=false"), "JCuda really is absent: " + run.out());
        assertTrue(run.has("kotlin.present=false"), "Kotlin really is absent: " + run.out());
        assertTrue(run.has("micrometer.present=false"), "Micrometer really is absent: " + run.out());
        assertTrue(run.has("spring.present=false"), "Spring Boot really is absent: " + run.out());
        assertTrue(run.has("latency.count=1"), "the latency histogram works without it: " + run.out());
        assertTrue(run.has("providers=[cuda, sim]"), "the CUDA provider still loads, without JCuda: " + run.out());
        assertTrue(run.has("simulated=true"), run.out());
        assertTrue(run.has("awaited=21"), run.out());
        assertTrue(run.has("subscribed=40"), run.out());
    }

    @Test
    void withoutJCudaTheCudaBackendSaysWhatIsMissing() throws Exception {
        Run probed = probe(coreOnlyClassPath(), List.of(), "probe-cuda");
        assertTrue(probed.has("cuda.available=false"), probed.out());
        assertTrue(probed.out().contains("cuda.reason=JCuda is not on the class path: the CUDA backend needs "
                + "org.jcuda:jcuda and org.jcuda:jcuda-natives"), probed.out());

        Run named = probe(coreOnlyClassPath(), List.of(), "open-cuda");
        assertTrue(named.out().contains("cuda.open.failure=java.lang.IllegalStateException: JCuda is not on the class path"),
                named.out());
        assertFalse(named.out().contains("NoClassDefFoundError"), named.out());

        // CudaDevice.open, as GpuExtension calls it under cudaloom.junit.device=cuda: the jar is
        // what is missing, not the driver.
        Run device = probe(coreOnlyClassPath(), List.of(), "open-cuda-device");
        assertTrue(device.out().contains(
                "cuda.device.failure=java.lang.IllegalStateException: JCuda is not on the class path"), device.out());
        assertFalse(device.out().contains("no CUDA driver"), device.out());
    }

    @Test
    void choosingTheSimulatedDeviceLoadsNoJCudaClassEvenWithJCudaPresent() throws Exception {
        Path classLog = tmp.resolve("classes.log");
        Run run = probe(System.getProperty("java.class.path"),
                List.of("-Dcudaloom.device=sim", "-Xlog:class+load=info:file=" + classLog));
        assertTrue(run.has("jcuda.present=true"), "this class path has JCuda: " + run.out());
        assertTrue(run.has("simulated=true") && run.has("awaited=21"), run.out());
        List<String> loaded = Files.readAllLines(classLog);
        assertTrue(loaded.stream().anyMatch(l -> l.contains(" io.cudaloom.sim.SimulatedDevice ")), "the log lists classes");
        assertEquals(List.of(), loaded.stream().filter(l -> l.contains(" jcuda.")).toList(), "JCuda classes loaded");
        assertTrue(run.has("micrometer.present=true"), "this class path has Micrometer: " + run.out());
        assertEquals(List.of(), loaded.stream().filter(l -> l.contains(" io.micrometer.")
                || l.contains(" io.cudaloom.micrometer.")).toList(), "Micrometer classes loaded without being called");
        // Spring Boot is there too (core's optional dependencies are on the test class path): a
        // program that is no Spring application loads none of it, nor the auto-configuration.
        assertTrue(run.has("spring.present=true"), "this class path has Spring Boot: " + run.out());
        assertEquals(List.of(), loaded.stream().filter(l -> l.contains(" org.springframework.")).toList(),
                "Spring classes loaded in a program that is no Spring application");
        assertEquals(List.of(), loaded.stream().filter(l -> l.contains(" io.cudaloom.spring.")).toList(),
                "the Spring Boot auto-configuration loaded without Spring Boot");
    }
}
