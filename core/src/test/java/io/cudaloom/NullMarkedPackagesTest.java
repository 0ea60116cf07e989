package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.jspecify.annotations.NullMarked;
import org.junit.jupiter.api.Test;

/** Every package of the library is @NullMarked, so Kotlin and nullness checkers see non-null types. */
class NullMarkedPackagesTest {
    @Test
    void everyPackageIsNullMarked() throws Exception {
        // Every package with a compiled class, found on disk, so that a new package cannot be forgotten.
        Path root = Path.of(GpuDevice.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Map<String, String> classOfPackage = new TreeMap<>();
        try (Stream<Path> files = Files.walk(root.resolve("io/cudaloom"))) {
            files.filter(f -> f.toString().endsWith(".class")).forEach(f -> {
                String name = root.relativize(f).toString().replace(f.getFileSystem().getSeparator(), ".");
                name = name.substring(0, name.length() - ".class".length());
                classOfPackage.putIfAbsent(name.substring(0, name.lastIndexOf('.')), name);
            });
        }
        assertTrue(classOfPackage.keySet().containsAll(List.of("io.cudaloom", "io.cudaloom.cuda", "io.cudaloom.junit",
                "io.cudaloom.internal", "io.cudaloom.kotlin", "io.cudaloom.micrometer", "io.cudaloom.protocol", "io.cudaloom.provider", "io.cudaloom.sim", "io.cudaloom.spi", "io.cudaloom.spring")), classOfPackage.keySet().toString());
        List<String> unmarked = classOfPackage.values().stream()
                .map(NullMarkedPackagesTest::load)
                .map(Class::getPackage)
                .filter(p -> !p.isAnnotationPresent(NullMarked.class))
                .map(Package::getName)
                .toList();
        assertEquals(List.of(), unmarked, "packages without @NullMarked");
    }

    private static Class<?> load(String name) {
        try {
            return Class.forName(name, false, NullMarkedPackagesTest.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new AssertionError(e);
        }
    }
}
