package io.cudaloom.outside;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.CompletionReactor;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuEvent;
import io.cudaloom.GpuKernel;
import io.cudaloom.GpuStream;
import io.cudaloom.KernelThread;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * Backend plumbing is not in the API package: a user can neither make nor run a
 * {@link KernelThread} (a kernel body only reads the one it is given), and the backends' argument
 * checks live in the unexported {@code io.cudaloom.internal}.
 */
class BackendPlumbingTest {
    @Test
    void kernelThreadHasNoPublicConstructorAndNoPublicRun() {
        assertEquals(0, KernelThread.class.getConstructors().length, "public constructors of KernelThread");
        assertTrue(Arrays.stream(KernelThread.class.getMethods()).noneMatch(m -> m.getName().equals("runAll")),
                "KernelThread.runAll is public");
        assertTrue(Arrays.stream(KernelThread.class.getMethods()).anyMatch(m -> m.getName().equals("index")
                && Modifier.isPublic(m.getModifiers())), "premise: what a body reads stays public");
    }

    /** One way to take an event ({@code GpuStream.event()}), and an event hands out no reactor. */
    @Test
    void anEventIsTakenFromItsStreamOnlyAndNamesNoReactor() {
        assertTrue(Arrays.stream(GpuEvent.class.getMethods()).noneMatch(m -> m.getName().equals("reactor")),
                "GpuEvent.reactor() is public");
        assertTrue(Arrays.stream(CompletionReactor.class.getMethods()).noneMatch(m -> m.getName().equals("event")),
                "CompletionReactor.event(GpuStream) is public");
        assertTrue(Arrays.stream(GpuStream.class.getMethods()).anyMatch(m -> m.getName().equals("event")
                && m.getParameterCount() == 0), "premise: GpuStream.event() stays public");
        assertTrue(Arrays.stream(CompletionReactor.class.getMethods()).anyMatch(m -> m.getName().equals("stats")),
                "premise: the reactor's operator view (stats) stays public");
    }

    @Test
    void theArgumentChecksAreNotInTheApiPackage() throws Exception {
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.cudaloom.WorkChecks"));
        assertEquals("io.cudaloom.internal", Class.forName("io.cudaloom.internal.WorkChecks").getPackageName());
    }

    @Test
    void aKernelsModuleAndBodyAreForBackendsOnly() {
        assertTrue(Arrays.stream(GpuKernel.class.getMethods()).noneMatch(m -> m.getName().equals("module")
                || m.getName().equals("body")), "GpuKernel.module()/body() are not public");
        assertTrue(Arrays.stream(GpuKernel.class.getMethods()).anyMatch(m -> m.getName().equals("params")),
                "premise: GpuKernel's public methods were read");
        // Not even protected on the API classes (a class could reach a protected static by declaring a
        // subclass it never instantiates): the backends read them through the unexported hooks.
        for (Class<?> base : new Class<?>[] {GpuDevice.class, GpuStream.class}) {
            for (java.lang.reflect.Method m : base.getDeclaredMethods()) {
                assertTrue(!m.getName().equals("kernelModule") && !m.getName().equals("kernelBody"), m.toString());
            }
        }
        assertEquals(2, Arrays.stream(io.cudaloom.internal.BackendAccess.Hooks.class.getMethods())
                .filter(m -> m.getName().equals("kernelModule") || m.getName().equals("kernelBody")).count(),
                "premise: the backends' way to them is BackendAccess.Hooks");
    }

    @Test
    void theTestFixturesAndTheReactorsPartsAreNotInTheLibrary() throws Exception {
        // The CUDA backend's raw kernel catalogue and its fault kernel are core's test fixtures.
        java.nio.file.Path main = java.nio.file.Path.of(GpuDevice.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertTrue(java.nio.file.Files.exists(main.resolve("io/cudaloom/cuda/CudaDevice.class")),
                "premise: the main classes are a directory here: " + main);
        assertTrue(!java.nio.file.Files.exists(main.resolve("io/cudaloom/cuda/Kernels.class")), "Kernels is in the main classes");
        assertTrue(Arrays.stream(io.cudaloom.cuda.CudaDevice.class.getMethods()).noneMatch(m -> m.getName().equals("loadKernels")
                || m.getName().equals("livePinnedBuffers")), "CudaDevice.loadKernels / livePinnedBuffers are gone");
        String ptx = new String(GpuKernel.class.getResourceAsStream("/io/cudaloom/kernels.ptx").readAllBytes(),
                java.nio.charset.StandardCharsets.US_ASCII);
        assertTrue(!ptx.contains("fault_kernel") && ptx.contains("spin_kernel"), "the shipped PTX has no fault kernel");
        // The reactor's parts: not in the API package, and their package is not exported.
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.cudaloom.Scanner"));
        assertEquals("io.cudaloom.reactor", Class.forName("io.cudaloom.reactor.Scanner").getPackageName());
        Module core = GpuDevice.class.getModule();
        if (core.isNamed()) {
            assertTrue(!core.getDescriptor().exports().stream().anyMatch(e -> e.source().equals("io.cudaloom.reactor")),
                    "io.cudaloom.reactor is exported");
        }
    }
}
