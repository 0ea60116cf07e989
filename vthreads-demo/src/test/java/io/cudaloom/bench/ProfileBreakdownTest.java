package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.bench.ProfileBreakdown.Attribution;
import io.cudaloom.bench.ProfileBreakdown.Owner;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** ProfileBreakdown's attribution (who owns a sample) and its tables. */
class ProfileBreakdownTest {
    @Test
    void aSampleGoesToTheInnermostFrameWithAnOwner() {
        // ConcurrentHashMap.get called by the library: the library's
        assertEquals(new Attribution(Owner.LIBRARY, "Registrar.tryArm"), ProfileBreakdown.attribute(
                List.of("java.util.concurrent.ConcurrentHashMap", "io.cudaloom.reactor.Registrar", "io.cudaloom.GpuEvent"),
                List.of("get", "tryArm", "await")));
        // LockSupport.unpark reaching VirtualThread.unpark, called by the scanner: the scheduler's
        assertEquals(Owner.SCHEDULER, ProfileBreakdown.attribute(
                List.of("java.util.concurrent.locks.LockSupport", "java.lang.VirtualThread", "java.util.concurrent.locks.LockSupport",
                        "io.cudaloom.reactor.Waiter"),
                List.of("x", "unpark", "unpark", "complete")).owner());
        // a driver call through JCuda or the FFM downcalls, whoever calls it
        assertEquals(Owner.DRIVER, ProfileBreakdown.attribute(List.of("jcuda.driver.JCudaDriver", "io.cudaloom.cuda.CudaStream"),
                List.of("cuLaunchKernelNative", "launch")).owner());
        assertEquals(Owner.DRIVER, ProfileBreakdown.attribute(List.of("java.lang.invoke.LambdaForm$MH/0x1",
                "io.cudaloom.cuda.HotCalls", "io.cudaloom.cuda.CudaStream"), List.of("invoke", "launch", "launch")).owner());
        // the demo's own code, Jetty, the JDK's I/O
        assertEquals(Owner.BENCHMARK, ProfileBreakdown.attribute(List.of("io.cudaloom.demo.ScaleServlet"), List.of("doGet")).owner());
        assertEquals(Owner.JETTY, ProfileBreakdown.attribute(List.of("java.lang.String", "org.eclipse.jetty.http.HttpParser"),
                List.of("charAt", "parseNext")).owner());
        assertEquals(Owner.JDK_IO, ProfileBreakdown.attribute(List.of("sun.nio.ch.EPoll", "org.eclipse.jetty.io.ManagedSelector"),
                List.of("wait", "select")).owner());
        assertEquals(Owner.SIMULATED, ProfileBreakdown.attribute(List.of("io.cudaloom.sim.SimulatedStream"), List.of("spend")).owner());
        // nothing on the stack with an owner: the JDK's other code, named by its top frame
        assertEquals(new Attribution(Owner.OTHER, "Object.wait0"), ProfileBreakdown.attribute(
                List.of("java.lang.Object", "java.lang.ref.Reference"), List.of("wait0", "processPendingReferences")));
        assertEquals(Owner.OTHER, ProfileBreakdown.attribute(List.of(), List.of()).owner());
    }

    @Test
    void threadFamiliesDropTheNumbers() {
        assertEquals("ForkJoinPool-#-worker-#", ProfileBreakdown.threadFamily("ForkJoinPool-1-worker-13"));
        assertEquals("(unnamed: virtual threads, mostly)", ProfileBreakdown.threadFamily(""));
    }

    @Test
    void theTablesHaveARowPerOwnerSeenAndTheTopFrames() {
        ProfileBreakdown.Tally java = new ProfileBreakdown.Tally();
        ProfileBreakdown.Tally natives = new ProfileBreakdown.Tally();
        for (int i = 0; i < 3; i++) {
            java.add(new Attribution(Owner.LIBRARY, "SlotTable.scanOnce"), "cudaloom-scanner-1");
        }
        java.add(new Attribution(Owner.SCHEDULER, "VirtualThread.unpark"), "");
        natives.add(new Attribution(Owner.DRIVER, "HotCalls.launch"), "ForkJoinPool-1-worker-2");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProfileBreakdown.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), "x.jfr", java, natives, 5);
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("| cuda-loom (core) | 3 | 75.0% | 0 | 0.0% |"), text);
        assertTrue(text.contains("| driver binding (JCuda, FFM downcalls) | 0 | 0.0% | 1 | 100.0% |"), text);
        assertTrue(text.contains("| all | 4 | | 1 | |"), text);
        assertTrue(text.contains("| SlotTable.scanOnce | 3 | 0 |"), text);
        assertTrue(text.contains("| cudaloom-scanner-# | 3 | library 100.0% |"), text);
        assertTrue(!text.contains("| Jetty |"), "no row for an owner with no samples: " + text);
    }
}
