package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.spi.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * The blocking waits, and only they, carry {@code org.jetbrains.annotations.Blocking} (class
 * retention: read from the class files with javap), so IntelliJ flags them in Kotlin suspend
 * functions.
 */
class BlockingAnnotationTest {

    @Test
    void theBlockingWaitsAndOnlyTheyAreAnnotatedBlocking() throws Exception {
        Set<String> annotated = new TreeSet<>();
        for (String type : new String[] {"io/cudaloom/GpuEvent", "io/cudaloom/GpuStream",
                "io/cudaloom/cuda/CudaStream", "io/cudaloom/cuda/CudaDevice"}) {
            annotated.addAll(blockingMethods(type));
        }
        assertEquals(new TreeSet<>(Set.of(
                "io/cudaloom/GpuEvent.await()",
                "io/cudaloom/GpuEvent.await(java.time.Duration)",
                "io/cudaloom/GpuEvent.await(long, java.util.concurrent.TimeUnit)",
                "io/cudaloom/GpuEvent.awaitUninterruptibly()",
                "io/cudaloom/GpuStream.await()",
                "io/cudaloom/cuda/CudaStream.synchronize()",
                "io/cudaloom/cuda/CudaDevice.synchronize()")), annotated);
    }

    /** The methods of {@code type} (a class-file path without .class) annotated @Blocking. */
    private static Set<String> blockingMethods(String type) throws Exception {
        Path root = Path.of(GpuDevice.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ToolProvider javap = ToolProvider.findFirst("javap").orElseThrow(() -> new AssertionError("no javap in this JDK"));
        StringWriter out = new StringWriter();
        int rc = javap.run(new PrintWriter(out), new PrintWriter(out), "-v", "-p",
                root.resolve(type + ".class").toString());
        assertEquals(0, rc, out.toString());
        Set<String> found = new TreeSet<>();
        String method = null;
        for (String line : out.toString().split("\\R")) {
            // A member header: two spaces of indent, a declaration ending in ';'.
            if (line.startsWith("  ") && !line.startsWith("   ") && line.endsWith(";")) {
                int paren = line.indexOf('(');
                method = paren < 0 ? null : line.substring(line.lastIndexOf(' ', paren) + 1, line.indexOf(')') + 1);
            } else if (method != null && line.strip().equals("org.jetbrains.annotations.Blocking")) {
                found.add(type + "." + method);
            }
        }
        assertTrue(out.toString().contains("RuntimeInvisibleAnnotations"), "javap shows annotations: " + type);
        return found;
    }
}
