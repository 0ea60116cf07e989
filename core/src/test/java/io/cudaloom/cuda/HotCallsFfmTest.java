package io.cudaloom.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java 22 version of {@link HotCalls} (the FFM downcalls), without a GPU. Run only by core's
 * surefire execution {@code ffm}: its class path has target/classes/META-INF/versions/22 before
 * target/classes (so this JVM loads the overlay, as a JVM of 22 or later does from core's JAR), with
 * {@code -Dcudaloom.driverCalls=ffm} and {@code --enable-native-access=ALL-UNNAMED}. Without
 * libcuda.so.1 (CI) the binding falls back to JCuda and says so; with it, it is {@code ffm}. The
 * kernel-parameter block is checked by reading it back, for 0, 1 and 3 arguments of each type
 * {@link KernelArgs} takes but {@link DeviceBuffer} (which needs a device: {@code HotCallsGpuTest}
 * passes one), whose value is its address, a long, as a {@code Long} argument's is.
 */
class HotCallsFfmTest {
    /** Where the driver installs libcuda.so.1 on the usual distributions. */
    private static final List<String> LIBCUDA = List.of("/usr/lib/x86_64-linux-gnu/libcuda.so.1",
            "/usr/lib64/libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1", "/usr/lib/libcuda.so.1",
            "/usr/lib/wsl/lib/libcuda.so.1");

    @BeforeAll
    static void theOverlayIsLoaded() {
        assumeTrue(Runtime.version().feature() >= 22, "the Java 22 version needs Java 22: this is Java "
                + Runtime.version().feature());
        assumeTrue("ffm".equals(System.getProperty(DriverCalls.PROPERTY)),
                "run by core's surefire execution ffm (-Dtest runs it in the others too)");
        assertEquals(22, HotCalls.implementation(), "this execution's class path has the overlay first");
    }

    @Test
    void askedForFfmItBindsTheDowncallsOrSaysWhyNot() {
        String binding = HotCalls.binding();
        System.out.println("HotCallsFfmTest: driver calls: " + binding);
        assertEquals(binding, CudaDevice.driverCalls());
        boolean libcuda = LIBCUDA.stream().map(Path::of).anyMatch(Files::exists);
        if (libcuda) {
            assertEquals("ffm", binding);
        } else {
            assertEquals("jcuda (libcuda.so.1 cannot be loaded by name: Cannot open library: libcuda.so.1)", binding);
        }
    }

    @Test
    void withTheDowncallsOffTheArgumentsArePackedWithJCudaAndBadOnesRefusedAsThere() {
        Object[] args = {1, 2L, 3f, 4d};
        if (HotCalls.binding().equals("ffm")) {
            assertNull(HotCalls.params("k", args), "the launch packs them into its block");
        } else {
            assertNotNull(HotCalls.params("k", args));
            assertEquals(0, HotCalls.handleAddress(new jcuda.Pointer()));
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> HotCalls.params("k", new Object[] {1, "two"}));
        assertEquals("argument 1 of k has unsupported type java.lang.String (use DeviceBuffer, Integer, Long, Float or"
                + " Double)", e.getMessage());
    }

    @Test
    void noArgumentIsAnEmptyBlock() {
        assertArrayEquals(new long[0], HotCalls.paramsLayout());
    }

    @Test
    void oneArgumentIsOnePointerToTheSlotAfterIt() {
        assertArrayEquals(new long[] {8, 0x1122334455667788L}, HotCalls.paramsLayout(0x1122334455667788L));
        assertArrayEquals(new long[] {8, 0xFFFF_FFFEL}, HotCalls.paramsLayout(-2));
        assertArrayEquals(new long[] {8, Integer.toUnsignedLong(Float.floatToRawIntBits(1.5f))},
                HotCalls.paramsLayout(1.5f));
        assertArrayEquals(new long[] {8, Double.doubleToRawLongBits(-0.25)}, HotCalls.paramsLayout(-0.25));
    }

    /** scale_f32(data, factor, n): 3 pointers, then 3 slots of 8 bytes; pointer i points at slot i. */
    @Test
    void threeArgumentsAreThreePointersThenThreeSlots() {
        long address = 0x7f00_1234_5000L;
        assertArrayEquals(new long[] {24, 32, 40, address, Integer.toUnsignedLong(Float.floatToRawIntBits(3f)), 256},
                HotCalls.paramsLayout(address, 3f, 256));
        long[] mixed = HotCalls.paramsLayout(7, 8d, 9L);
        assertArrayEquals(new long[] {24, 32, 40, 7, Double.doubleToRawLongBits(8d), 9}, mixed);
    }

    /** Each argument type on its own, in every position of three. */
    @Test
    void everyTypeInEveryPosition() {
        Object[] values = {-7, Long.MIN_VALUE, Float.MIN_VALUE, Double.MAX_VALUE};
        long[] bits = {Integer.toUnsignedLong(-7), Long.MIN_VALUE, Integer.toUnsignedLong(Float.floatToRawIntBits(Float.MIN_VALUE)),
                Double.doubleToRawLongBits(Double.MAX_VALUE)};
        for (int v = 0; v < values.length; v++) {
            for (int pos = 0; pos < 3; pos++) {
                Object[] args = {0L, 0L, 0L};
                args[pos] = values[v];
                long[] expected = {24, 32, 40, 0, 0, 0};
                expected[3 + pos] = bits[v];
                assertArrayEquals(expected, HotCalls.paramsLayout(args), values[v].getClass() + " at " + pos);
            }
        }
    }

    /** Without --enable-native-access the JDK would warn at the first downcall: the binding stays on JCuda and says why. */
    @Test
    void withoutNativeAccessItStaysOnJCudaAndSaysHowToEnableIt() throws Exception {
        GpuTestSupport.ChildResult child = GpuTestSupport.runChild(HotCallsProbe.class,
                List.of("-Dcudaloom.driverCalls=ffm"), Map.of(), Duration.ofSeconds(60));
        assertEquals(0, child.exitCode(), child.output());
        assertEquals("22", child.get("implementation"), "the child has this class path: " + child.output());
        assertEquals("jcuda (native access is not enabled for the class path: run java with"
                + " --enable-native-access=ALL-UNNAMED)", child.get("binding"), child.output());
        assertTrue(Stream.of(child.output().split("\\R")).noneMatch(l -> l.contains("restricted method")),
                "no restricted method called, so no JDK warning: " + child.output());
    }

    /** The property unset (the default): the downcalls are tried; where they cannot be made, JCuda, with no warning. */
    @Test
    void unsetWithoutNativeAccessItStaysOnJCudaQuietly() throws Exception {
        GpuTestSupport.ChildResult child = GpuTestSupport.runChild(HotCallsProbe.class, List.of(), Map.of("JAVA_TOOL_OPTIONS", ""),
                Duration.ofSeconds(60));
        assertEquals(0, child.exitCode(), child.output());
        assertEquals("22", child.get("implementation"), child.output());
        assertEquals("jcuda (native access is not enabled for the class path: run java with"
                + " --enable-native-access=ALL-UNNAMED)", child.get("binding"), child.output());
        assertTrue(Stream.of(child.output().split("\\R")).noneMatch(l -> l.contains("WARNING")
                || l.contains("restricted method")), "quiet: " + child.output());
    }

    @Test
    void askedForJcudaItMakesNoDowncall() throws Exception {
        GpuTestSupport.ChildResult child = GpuTestSupport.runChild(HotCallsProbe.class,
                List.of("--enable-native-access=ALL-UNNAMED", "-Dcudaloom.driverCalls=jcuda"), Map.of(),
                Duration.ofSeconds(60));
        assertEquals(0, child.exitCode(), child.output());
        assertEquals("jcuda (asked for: cudaloom.driverCalls=jcuda)", child.get("binding"), child.output());
    }
}
