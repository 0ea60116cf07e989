package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.reactor.metrics.CountersEvent;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What of {@code jdk.jfr} the library loads in a JVM that never records, counted with
 * {@code -Xlog:class+load} in a fresh JVM ({@link Probe}: open the simulated device, await a 2 ms
 * kernel, close). Before, opening a device registered a {@code FlightRecorderListener}, which loads
 * JFR's recorder classes ({@code JVM}, {@code JVMSupport}, {@code PlatformRecorder}, ...): 8
 * classes of {@code jdk.jfr} with {@code jmx(false)}, where now only {@code jdk.jfr.FlightRecorder}
 * loads (asked whether it is initialized); with the defaults, 5 more than the platform MBean server
 * loads by itself (the JDK's diagnostic commands and its {@code FlightRecorderMXBean}: about 50
 * classes of {@code jdk.jfr}, which registering the MXBean costs any JVM), where now none. And a
 * recording started after the device opened still gets the periodic counters.
 */
class JfrClassLoadingTest {
    @TempDir
    Path dir;

    @Test
    void withoutJmxAJvmThatNeverRecordsLoadsOnlyFlightRecorderItself() throws Exception {
        assertEquals(Set.of("jdk.jfr.FlightRecorder"), jfrClasses(run("no-jmx")));
    }

    @Test
    void withTheDefaultsTheLibraryLoadsNoJfrClassThePlatformMBeanServerDoesNotLoadItself() throws Exception {
        Set<String> serverAlone = jfrClasses(run("mbean-server-only"));
        Set<String> device = jfrClasses(run("defaults"));
        Set<String> extra = new TreeSet<>(device);
        extra.removeAll(serverAlone);
        extra.remove("jdk.jfr.FlightRecorder"); // asked whether it is initialized (the server loads it too)
        assertEquals(Set.of(), extra, "jdk.jfr classes the library loaded beyond the platform MBean server's "
                + serverAlone.size());
    }

    @Test
    void aRecordingStartedAfterTheDeviceOpenedGetsThePeriodicCounters() throws Exception {
        List<String> out = run("record-later");
        assertTrue(out.contains("counters seen"), "the counters event of the device came: " + out);
    }

    /** Runs {@link Probe} in a fresh JVM; returns its output lines and, first, the log of class loads. */
    private List<String> run(String mode) throws Exception {
        Path log = dir.resolve(mode + ".classes");
        Path output = dir.resolve(mode + ".out");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xlog:class+load=info:file=" + log, "-cp", System.getProperty("java.class.path") + File.pathSeparator
                + Path.of(Probe.class.getProtectionDomain().getCodeSource().getLocation().toURI()),
                Probe.class.getName(), mode)
                .redirectErrorStream(true).redirectOutput(output.toFile()).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(mode + ": the probe JVM did not end in 60 s: " + Files.readString(output));
        }
        String text = Files.readString(output, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), mode + ": " + text);
        assertTrue(text.contains("done"), mode + ": " + text);
        List<String> lines = new ArrayList<>(Files.readAllLines(log));
        assertTrue(lines.stream().anyMatch(l -> l.contains(" java.lang.Object ")), "the log lists classes");
        lines.add("--- output");
        lines.addAll(text.lines().toList());
        return lines;
    }

    /** The jdk.jfr classes of a class-load log, lambdas by their host class. */
    private static Set<String> jfrClasses(List<String> log) {
        Set<String> classes = new TreeSet<>();
        for (String line : log) {
            if (line.equals("--- output")) {
                break;
            }
            String[] parts = line.split(" ");
            for (String part : parts) {
                if (part.startsWith("jdk.jfr.")) {
                    int lambda = part.indexOf("$$Lambda");
                    classes.add(lambda < 0 ? part : part.substring(0, lambda));
                    break;
                }
            }
        }
        return classes;
    }

    /** The child JVM's program; loads nothing of JFR itself but in {@code record-later}. */
    static final class Probe {
        public static void main(String[] args) throws Exception {
            String mode = args[0];
            if (mode.equals("mbean-server-only")) {
                System.out.println("mbeans=" + ManagementFactory.getPlatformMBeanServer().getMBeanCount());
                System.out.println("done");
                return;
            }
            ReactorConfig config = mode.equals("defaults") ? ReactorConfig.defaults()
                    : ReactorConfig.builder().jmx(false).build();
            try (SimulatedDevice device = SimulatedDevice.create(config)) {
                SimulatedStream stream = device.newStream();
                stream.launchKernel(Duration.ofMillis(2));
                stream.await();
                if (mode.equals("record-later")) {
                    recordLater(device, stream);
                }
            }
            System.out.println("done");
        }

        /** Starts a recording now, awaits once more, and waits for a counters event of {@code device}. */
        private static void recordLater(SimulatedDevice device, SimulatedStream stream) throws Exception {
            CountDownLatch seen = new CountDownLatch(1);
            try (RecordingStream rs = new RecordingStream()) {
                rs.enable(CountersEvent.NAME).withPeriod(Duration.ofMillis(10));
                rs.onEvent(CountersEvent.NAME, e -> {
                    if (e.getString("device").equals(device.name())) {
                        seen.countDown();
                    }
                });
                rs.startAsync();
                stream.launchKernel(Duration.ofMillis(2));
                stream.await(); // finds Flight Recorder initialized: adds the hook
                if (seen.await(30, TimeUnit.SECONDS)) {
                    System.out.println("counters seen");
                }
            }
        }
    }
}
