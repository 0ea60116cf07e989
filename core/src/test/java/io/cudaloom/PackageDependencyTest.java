package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The package layering has no cycle: the protocol core depends on no other package of the
 * project, the backend SPI ({@code spi}) only on the protocol core, the API package ({@code io.cudaloom}) on no backend ({@code cuda}, {@code sim}; those
 * are found through {@code internal.GpuDeviceProvider}) and not on the Kotlin support ({@code kotlin}, which
 * needs kotlin-stdlib, an optional dependency), the Kotlin support only on the API, and the backends
 * on each other not at all. The JUnit extension ({@code junit}) sits on top: nothing else names it,
 * it names only the public API and the backends, and no other package names JUnit (an optional
 * dependency, there for it alone). What the backends share ({@code internal}, not exported: the
 * argument checks, the provider interface, the API's hooks for its backends) names the API package
 * and no backend. The service providers ({@code provider}, not exported) name both backends, and
 * nothing of the library names them: only the service loader does. The reactor's parts ({@code reactor}, not exported) name the
 * protocol core, the SPI and the API package's values and exceptions (which classes exactly:
 * {@link ClassCycleTest}), and no backend, integration or optional dependency; the API package's
 * facade wires them. Of the reactor's own packages, {@code reactor.metrics} (counters, latency, JFR
 * events, MXBeans) names no other, and nothing below the facade names {@code reactor.lifecycle}
 * (shutdown, threads, the unclosed-device report). The Micrometer binder ({@code micrometer}) likewise: nothing else
 * names it or Micrometer (an optional dependency), so its classes load only when an application
 * calls it; it names only the public API. The Spring Boot auto-configuration ({@code spring}) sits on
 * top too: nothing else names it or Spring (optional dependencies), it names only the public API and
 * the Micrometer binder (no backend: it opens the device through {@code GpuDevice.open}). Checked
 * on the compiled classes' constant pools, which name every class a class refers to.
 */
class PackageDependencyTest {
    /** JUnit is an optional dependency, for {@code io.cudaloom.junit} only. */
    private static final String JUNIT = "org/junit/";
    /** Micrometer is an optional dependency, for {@code io.cudaloom.micrometer} only. */
    private static final String MICROMETER = "io/micrometer/";
    /** Spring (Boot) is an optional dependency, for {@code io.cudaloom.spring} only. */
    private static final String SPRING = "org/springframework/";

    @Test
    void theApiNamesNoBackendAndTheProtocolNamesNothingOfOurs() throws Exception {
        Path root = Path.of(GpuDevice.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> offences = new ArrayList<>();
        check(root.resolve("io/cudaloom"), List.of("io/cudaloom/cuda/", "io/cudaloom/sim/", "io/cudaloom/kotlin/",
                "io/cudaloom/junit/", "io/cudaloom/micrometer/", JUNIT, MICROMETER, SPRING), List.of(), offences);
        check(root.resolve("io/cudaloom/protocol"), List.of("io/cudaloom/", JUNIT, MICROMETER, SPRING), List.of("protocol/"), offences);
        check(root.resolve("io/cudaloom/spi"), List.of("io/cudaloom/", JUNIT, MICROMETER, SPRING), List.of("spi/", "protocol/"), offences);
        check(root.resolve("io/cudaloom/internal"), List.of("io/cudaloom/cuda/", "io/cudaloom/sim/", "io/cudaloom/kotlin/",
                "io/cudaloom/junit/", "io/cudaloom/micrometer/", JUNIT, MICROMETER, SPRING), List.of(), offences);
        for (String reactor : List.of("reactor", "reactor/metrics", "reactor/lifecycle")) {
            check(root.resolve("io/cudaloom/" + reactor), List.of("io/cudaloom/cuda/", "io/cudaloom/sim/",
                    "io/cudaloom/kotlin/", "io/cudaloom/junit/", "io/cudaloom/micrometer/", "io/cudaloom/internal/", JUNIT,
                    MICROMETER, SPRING, "kotlin/"), List.of(), offences);
        }
        // The reactor's metrics (its counters, latency histogram, JFR events and MXBeans) are the
        // bottom of the reactor: they name none of its other parts, which all report through them.
        check(root.resolve("io/cudaloom/reactor/metrics"), List.of("io/cudaloom/reactor/"), List.of("metrics/"), offences);
        // Its lifecycle (shutdown, threads, the unclosed-device report) sits above the parts: none names it.
        for (String below : List.of("reactor", "reactor/metrics")) {
            check(root.resolve("io/cudaloom/" + below), List.of("io/cudaloom/reactor/lifecycle/"), List.of(), offences);
        }
        check(root.resolve("io/cudaloom/sim"), List.of("io/cudaloom/cuda/", "io/cudaloom/junit/", "io/cudaloom/kotlin/",
                "io/cudaloom/micrometer/", JUNIT, MICROMETER, SPRING), List.of(), offences);
        check(root.resolve("io/cudaloom/cuda"), List.of("io/cudaloom/sim/", "io/cudaloom/junit/", "io/cudaloom/kotlin/",
                "io/cudaloom/micrometer/", JUNIT, MICROMETER, SPRING), List.of(), offences);
        check(root.resolve("io/cudaloom/kotlin"), List.of("io/cudaloom/cuda/", "io/cudaloom/sim/",
                "io/cudaloom/protocol/", "io/cudaloom/spi/", "io/cudaloom/junit/", "io/cudaloom/micrometer/", JUNIT,
                MICROMETER, SPRING), List.of(), offences);
        check(root.resolve("io/cudaloom/junit"), List.of("io/cudaloom/protocol/", "io/cudaloom/spi/",
                "io/cudaloom/kotlin/", "io/cudaloom/micrometer/", MICROMETER, SPRING), List.of(), offences);
        // The providers name both backends and the provider interface; nothing names them (ServiceLoader does).
        check(root.resolve("io/cudaloom/provider"), List.of("io/cudaloom/junit/", "io/cudaloom/kotlin/",
                "io/cudaloom/micrometer/", "io/cudaloom/protocol/", "io/cudaloom/reactor/", JUNIT, MICROMETER, SPRING),
                List.of(), offences);
        for (String pkg : List.of("", "/cuda", "/sim", "/internal", "/spi", "/protocol", "/reactor", "/reactor/metrics",
                "/reactor/lifecycle", "/junit", "/kotlin", "/micrometer")) {
            check(root.resolve("io/cudaloom" + pkg), List.of("io/cudaloom/provider/"), List.of(), offences);
        }
        check(root.resolve("io/cudaloom/micrometer"), List.of("io/cudaloom/cuda/", "io/cudaloom/sim/",
                "io/cudaloom/protocol/", "io/cudaloom/spi/", "io/cudaloom/junit/", "io/cudaloom/kotlin/", JUNIT, SPRING),
                List.of(), offences);
        // The Spring Boot auto-configuration: the public API and the binder; no backend, no internals.
        check(root.resolve("io/cudaloom/spring"), List.of("io/cudaloom/cuda/", "io/cudaloom/sim/",
                "io/cudaloom/protocol/", "io/cudaloom/spi/", "io/cudaloom/internal/", "io/cudaloom/reactor/",
                "io/cudaloom/provider/", "io/cudaloom/junit/", "io/cudaloom/kotlin/", JUNIT), List.of(), offences);
        // Nothing names it.
        for (String pkg : List.of("", "/cuda", "/sim", "/internal", "/spi", "/protocol", "/reactor", "/reactor/metrics",
                "/reactor/lifecycle", "/junit", "/kotlin", "/micrometer", "/provider")) {
            check(root.resolve("io/cudaloom" + pkg), List.of("io/cudaloom/spring/"), List.of(), offences);
        }
        assertEquals(List.of(), offences);
    }

    /**
     * Classes directly in {@code dir} must not name a class under any of {@code forbidden}, except
     * under the sub-packages {@code allowed} (relative to the forbidden prefix).
     */
    private static void check(Path dir, List<String> forbidden, List<String> allowed, List<String> offences)
            throws IOException {
        int found = 0;
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".class"))::iterator) {
                found++;
                String text = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
                for (String prefix : forbidden) {
                    int i = -1;
                    while ((i = text.indexOf(prefix, i + 1)) >= 0) {
                        String rest = text.substring(i + prefix.length());
                        if (allowed.stream().noneMatch(rest::startsWith)) {
                            offences.add(f.getFileName() + " refers to " + text.substring(i, Math.min(text.length(),
                                    i + prefix.length() + 40)).split("[;\\x00-\\x1f]")[0]);
                            break;
                        }
                    }
                }
            }
        }
        assertTrue(found > 0, "no classes in " + dir);
    }
}
