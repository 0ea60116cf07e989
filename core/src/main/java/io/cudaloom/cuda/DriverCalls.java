package io.cudaloom.cuda;

import java.util.Locale;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The switch between the two bindings of the hot driver calls ({@link HotCalls}): the system
 * property {@value #PROPERTY}, {@code ffm} or {@code jcuda}; unset, the downcalls are made where
 * they can be (Java 22 or later, native access enabled, libcuda found) and JCuda is used
 * elsewhere, quietly (the binding's text says why). Asked for explicitly, ffm that cannot be made
 * is said with a WARNING. In one run on an H200 (s13-run20) the downcalls cut the demo's CPU per
 * completion from 49.5-50.0 us to 43.0-43.1 us and the 10 us sweep's from 22.8 to 16.6 us. Shared by both versions
 * of {@link HotCalls} (the Java 21 one and the Java 22 overlay of the multi-release JAR), which read
 * it once, when the first CUDA stream, kernel or buffer of the process needs them; a device's open
 * checks it first ({@link #check()}), so a misspelt value fails there, with the property and the
 * value named, instead of leaving the calls on JCuda unnoticed.
 */
final class DriverCalls {
    /** The system property: {@code ffm} or {@code jcuda} (any case; unset or blank: {@link Choice#UNSET}). */
    static final String PROPERTY = "cudaloom.driverCalls";

    /** What the property asks for. */
    enum Choice {
        /** Unset or blank: the downcalls where they can be made, JCuda elsewhere, quietly. */
        UNSET,
        /** {@code ffm}: the downcalls; a fallback to JCuda is a WARNING. */
        FFM,
        /** {@code jcuda}: JCuda only. */
        JCUDA;

        /** Whether the downcalls are to be tried. */
        boolean triesFfm() {
            return this != JCUDA;
        }
    }

    /**
     * The binding's choice, made once per process by either version of {@link HotCalls}: what the
     * property asks for, and why the downcalls cannot be made here if they were tried and cannot.
     */
    record Decision(Choice choice, @Nullable String whyNot) {
        /** Reads the property; tries the downcalls (asks {@code unavailable} why not) unless it says jcuda. */
        static Decision make(Supplier<@Nullable String> unavailable) {
            try {
                Choice c = DriverCalls.choice();
                return new Decision(c, c.triesFfm() ? unavailable.get() : null);
            } catch (IllegalArgumentException e) {
                return new Decision(Choice.JCUDA, e.getMessage()); // a device's open throws it (check())
            }
        }

        /** Whether the calls go through the downcalls. */
        boolean ffm() {
            return choice.triesFfm() && whyNot == null;
        }

        /**
         * The binding's text ({@code ffm}, or {@code jcuda (why)}), said once on {@code log}: asked
         * for with {@code ffm}, at INFO when on and at WARNING when not; the property unset, at
         * DEBUG either way (JCuda where the downcalls cannot be made is the documented default).
         * {@code onMessage} is read only when the downcalls are on.
         */
        String binding(System.Logger log, Supplier<String> onMessage) {
            boolean explicit = choice == Choice.FFM;
            if (ffm()) {
                log.log(explicit ? System.Logger.Level.INFO : System.Logger.Level.DEBUG, onMessage.get());
                return "ffm";
            }
            if (whyNot == null) {
                return "jcuda (asked for: " + PROPERTY + "=jcuda)";
            }
            log.log(explicit ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
                    "cuda-loom: the driver calls go through JCuda, not FFM downcalls: " + whyNot);
            return "jcuda (" + whyNot + ")";
        }
    }

    private DriverCalls() {}

    /**
     * What {@code value} (the property's) asks for.
     *
     * @throws IllegalArgumentException if it is neither {@code ffm} nor {@code jcuda} (nor blank)
     */
    static Choice choice(@Nullable String value) {
        if (value == null || value.isBlank()) {
            return Choice.UNSET;
        }
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "ffm" -> Choice.FFM;
            case "jcuda" -> Choice.JCUDA;
            default -> throw new IllegalArgumentException(PROPERTY + " must be ffm or jcuda, was '" + value + "'");
        };
    }

    /** The property's choice now. */
    static Choice choice() {
        return choice(System.getProperty(PROPERTY));
    }

    /**
     * Whether {@code value} (the property's) asks explicitly for the FFM downcalls.
     *
     * @throws IllegalArgumentException if it is neither {@code ffm} nor {@code jcuda} (nor blank)
     */
    static boolean ffmRequested(@Nullable String value) {
        return choice(value) == Choice.FFM;
    }

    /** Checks the system property; see {@link #choice(String)}. */
    static void check() {
        choice();
    }
}
