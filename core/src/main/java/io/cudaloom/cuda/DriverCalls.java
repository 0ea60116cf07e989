package io.cudaloom.cuda;

import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The switch between the two bindings of the hot driver calls ({@link HotCalls}): the system
 * property {@value #PROPERTY}, {@code jcuda} (the default) or {@code ffm}. Shared by both versions
 * of {@link HotCalls} (the Java 21 one and the Java 22 overlay of the multi-release JAR), which read
 * it once, when the first CUDA stream, kernel or buffer of the process needs them; a device's open
 * checks it first ({@link #check()}), so a misspelt value fails there, with the property and the
 * value named, instead of leaving the calls on JCuda unnoticed.
 */
final class DriverCalls {
    /** The system property: {@code ffm} or {@code jcuda} (any case; unset or blank: {@code jcuda}). */
    static final String PROPERTY = "cudaloom.driverCalls";

    private DriverCalls() {}

    /**
     * Whether {@code value} (the property's) asks for the FFM downcalls.
     *
     * @throws IllegalArgumentException if it is neither {@code ffm} nor {@code jcuda} (nor blank)
     */
    static boolean ffmRequested(@Nullable String value) {
        if (value == null || value.isBlank()) {
            return false;
        }
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "ffm" -> true;
            case "jcuda" -> false;
            default -> throw new IllegalArgumentException(PROPERTY + " must be ffm or jcuda, was '" + value + "'");
        };
    }

    /** Checks the system property; see {@link #ffmRequested}. */
    static void check() {
        ffmRequested(System.getProperty(PROPERTY));
    }
}
