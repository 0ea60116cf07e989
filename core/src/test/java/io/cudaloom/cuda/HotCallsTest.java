package io.cudaloom.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import jcuda.Pointer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The hot calls' binding as core's tests see it: from target/classes, a directory, which has no
 * multi-release overlay, so the Java 21 version of {@link HotCalls} (JCuda) is loaded whatever the
 * JVM; asked for ffm it says why not. The Java 22 version has its own test ({@code HotCallsFfmTest},
 * run by the surefire execution {@code ffm}, which puts the overlay first on the class path).
 */
class HotCallsTest {
    @BeforeAll
    static void notInTheFfmExecution() {
        assumeFalse("ffm".equals(System.getProperty(DriverCalls.PROPERTY)),
                "the surefire execution ffm (which -Dtest runs this in too) puts the Java 22 overlay first");
    }

    @Test
    void theJava21VersionIsLoadedFromTheClassDirectoryAndUsesJCuda() {
        assertEquals(21, HotCalls.implementation());
        if (System.getProperty(DriverCalls.PROPERTY) == null) { // unset: tried, and this version says why not
            assertTrue(HotCalls.binding().startsWith("jcuda (Java ") || HotCalls.binding().startsWith("jcuda (the Java 21"),
                    HotCalls.binding());
        }
        assertTrue(HotCalls.binding().startsWith("jcuda ("), HotCalls.binding());
        assertEquals(HotCalls.binding(), CudaDevice.driverCalls());
        assertNull(HotCalls.paramsLayout(1, 2L), "no parameter block: JCuda packs them");
        assertEquals(0, HotCalls.handleAddress(new Pointer()));
    }

    @Test
    void theJava21VersionPacksTheArgumentsWithJCuda() {
        assertNotNull(HotCalls.params("k", new Object[] {1, 2L, 3f, 4d}));
    }

    @Test
    void askedForFfmTheJava21VersionSaysWhyItStaysOnJCuda() throws Exception {
        GpuTestSupport.ChildResult child = GpuTestSupport.runChild(HotCallsProbe.class,
                List.of("--enable-native-access=ALL-UNNAMED", "-Dcudaloom.driverCalls=ffm"), Map.of(),
                Duration.ofSeconds(60));
        assertEquals(0, child.exitCode(), child.output());
        assertEquals("21", child.get("implementation"), child.output());
        int feature = Runtime.version().feature();
        String expected = feature < 22
                ? "jcuda (Java " + feature + " has no java.lang.foreign (the downcalls need Java 22 or later))"
                : "jcuda (the Java 21 version of io.cudaloom.cuda.HotCalls is loaded on Java " + feature
                        + ": core's classes are not read from its multi-release JAR (a directory of classes has no"
                        + " META-INF/versions overlay))";
        assertEquals(expected, child.get("binding"), child.output());
        assertTrue(child.output().contains("cuda-loom: the driver calls go through JCuda, not FFM downcalls: "),
                "said once, on the System.Logger: " + child.output());
    }

    @Test
    void unsetTheJava21VersionStaysOnJCudaQuietly() throws Exception {
        GpuTestSupport.ChildResult child = GpuTestSupport.runChild(HotCallsProbe.class, List.of(), Map.of("JAVA_TOOL_OPTIONS", ""),
                Duration.ofSeconds(60));
        assertEquals(0, child.exitCode(), child.output());
        assertTrue(child.get("binding").startsWith("jcuda ("), child.output());
        assertFalse(child.output().contains("cuda-loom: the driver calls go through JCuda"),
                "the default is not a warning: " + child.output());
    }
}
