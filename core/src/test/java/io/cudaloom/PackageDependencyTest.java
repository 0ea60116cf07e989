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
 * project, the API package ({@code io.cudaloom}) on no backend ({@code cuda}, {@code sim}; those
 * are found through {@link GpuDeviceProvider}), and the backends on each other not at all. Checked
 * on the compiled classes' constant pools, which name every class a class refers to.
 */
class PackageDependencyTest {

    @Test
    void theApiNamesNoBackendAndTheProtocolNamesNothingOfOurs() throws Exception {
        Path root = Path.of(GpuDevice.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> offences = new ArrayList<>();
        check(root.resolve("io/cudaloom"), List.of("io/cudaloom/cuda/", "io/cudaloom/sim/"), offences);
        check(root.resolve("io/cudaloom/protocol"), List.of("io/cudaloom/"), offences);
        check(root.resolve("io/cudaloom/sim"), List.of("io/cudaloom/cuda/"), offences);
        check(root.resolve("io/cudaloom/cuda"), List.of("io/cudaloom/sim/"), offences);
        assertEquals(List.of(), offences);
    }

    /** Classes directly in {@code dir} must not name a class under any of {@code forbidden}. */
    private static void check(Path dir, List<String> forbidden, List<String> offences) throws IOException {
        String own = dir.getFileName().toString();
        int found = 0;
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".class"))::iterator) {
                found++;
                String text = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
                for (String prefix : forbidden) {
                    int i = -1;
                    while ((i = text.indexOf(prefix, i + 1)) >= 0) {
                        String rest = text.substring(i + prefix.length());
                        boolean sameSubpackage = prefix.equals("io/cudaloom/") && rest.startsWith(own + "/");
                        if (!sameSubpackage) {
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
