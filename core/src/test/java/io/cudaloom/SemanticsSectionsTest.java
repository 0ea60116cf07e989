package io.cudaloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestTemplate;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The semantics suite's layout ({@link SemanticsSuite}): every backend's test runs every section
 * suite, once, through a {@code @Nested} class, and the shared base holds no test. Read from the
 * compiled classes, so the GPU backend's list is checked where there is no GPU to run it.
 */
class SemanticsSectionsTest {
    private static final List<Class<?>> BACKENDS =
            List.of(InstantSemanticsTest.class, SimulatedSemanticsTest.class, CudaSemanticsGpuTest.class);

    @Test
    void everyBackendRunsEverySectionSuiteOnce() throws Exception {
        Set<String> sections = sectionSuites();
        assertFalse(sections.isEmpty(), "no section suite found next to SemanticsSuite");
        for (Class<?> backend : BACKENDS) {
            List<String> run = new ArrayList<>();
            for (Class<?> c : backend.getDeclaredClasses()) {
                if (SemanticsSuite.class.isAssignableFrom(c)) {
                    assertTrue(c.isAnnotationPresent(Nested.class) && !Modifier.isStatic(c.getModifiers()),
                            c + " extends a section suite but is no @Nested inner class: JUnit would not run it here");
                    run.add(c.getSuperclass().getSimpleName());
                }
            }
            assertEquals(run.size(), Set.copyOf(run).size(), backend.getSimpleName() + " runs a section twice: " + run);
            assertEquals(sections, new TreeSet<>(run), backend.getSimpleName() + "'s @Nested section suites");
        }
    }

    /** A test in the base would run once per section suite and backend, and belong to no section. */
    @Test
    void theSharedBaseHoldsNoTest() {
        List<String> tests = Arrays.stream(SemanticsSuite.class.getDeclaredMethods())
                .filter(m -> AnnotationSupport.isAnnotated(m, Test.class)
                        || AnnotationSupport.isAnnotated(m, TestTemplate.class))
                .map(Method::getName)
                .toList();
        assertEquals(List.of(), tests, "tests declared in SemanticsSuite: they belong in a section suite");
    }

    /** The abstract classes of this package that extend {@link SemanticsSuite} directly. */
    private static Set<String> sectionSuites() throws Exception {
        Path dir = Path.of(SemanticsSuite.class.getResource("SemanticsSuite.class").toURI()).getParent();
        Set<String> found = new TreeSet<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) {
                String name = f.getFileName().toString();
                if (!name.endsWith(".class") || name.contains("$")) {
                    continue;
                }
                Class<?> c = Class.forName(SemanticsSuite.class.getPackageName() + "."
                        + name.substring(0, name.length() - ".class".length()), false, SemanticsSuite.class.getClassLoader());
                if (c.getSuperclass() == SemanticsSuite.class) {
                    assertTrue(Modifier.isAbstract(c.getModifiers()), c + " extends SemanticsSuite directly: a section"
                            + " suite is abstract, and a backend runs it through a @Nested class");
                    found.add(c.getSimpleName());
                }
            }
        }
        return found;
    }
}
