package io.cudaloom.stress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The stress module's models say which core code they stand for, in javadoc code or link tags
 * naming a core class and its member (e.g. {@code SlotTable#publish}): every such name of a core class's method or field must still
 * exist there, so a model cannot go on describing a method that was renamed or removed (one once
 * named {@code CompletionReactor.arm} long after it had gone). Checked by reflection on the core
 * classes, over the module's main sources.
 */
class ModelReferencesTest {
    private static final Pattern REFERENCE = Pattern.compile(
            "\\{@(?:code|link|linkplain)\\s+(?:io\\.cudaloom\\.(?:[a-z]+\\.)*)?([A-Z]\\w*)[#.]([a-z]\\w*)");
    private static final List<String> CORE_PACKAGES = List.of("io.cudaloom.", "io.cudaloom.reactor.", "io.cudaloom.protocol.",
            "io.cudaloom.spi.", "io.cudaloom.cuda.", "io.cudaloom.sim.");

    @Test
    void everyCoreMethodAModelNamesExists() throws IOException {
        Path sources = Path.of("src/main/java");
        assertTrue(Files.isDirectory(sources), "run from the stress module's directory: " + sources.toAbsolutePath());
        List<String> missing = new ArrayList<>();
        int checked = 0;
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
                Matcher m = REFERENCE.matcher(Files.readString(f));
                while (m.find()) {
                    Class<?> core = coreClass(m.group(1));
                    if (core == null) {
                        continue; // a JDK or stress class: not ours to check here
                    }
                    checked++;
                    if (!hasMember(core, m.group(2))) {
                        missing.add(sources.relativize(f) + ": " + m.group(1) + "." + m.group(2));
                    }
                }
            }
        }
        assertTrue(checked >= 10, "the models name core members in {@code}/{@link} (found " + checked + ")");
        assertEquals(List.of(), missing, "models naming core members that do not exist");
    }

    @Test
    void aNameThatIsGoneIsFound() {
        assertTrue(hasMember(coreClass("SlotTable"), "publish") || hasMember(coreClass("SlotTable"), "claim"),
                "premise: a real member is found");
        assertTrue(!hasMember(coreClass("CompletionReactor"), "arm"), "a removed method is reported missing");
    }

    private static Class<?> coreClass(String simpleName) {
        for (String p : CORE_PACKAGES) {
            try {
                return Class.forName(p + simpleName, false, ModelReferencesTest.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                // try the next package
            }
        }
        return null;
    }

    private static boolean hasMember(Class<?> c, String name) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            if (Arrays.stream(k.getDeclaredMethods()).map(Method::getName).anyMatch(name::equals)
                    || Arrays.stream(k.getDeclaredFields()).map(Field::getName).anyMatch(name::equals)) {
                return true;
            }
            for (Class<?> i : k.getInterfaces()) {
                if (Arrays.stream(i.getDeclaredMethods()).map(Method::getName).anyMatch(name::equals)) {
                    return true;
                }
            }
        }
        return false;
    }
}
