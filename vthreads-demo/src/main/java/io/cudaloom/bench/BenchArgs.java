package io.cudaloom.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Command-line arguments of the benchmark modes: each parameter is given either by position
 * ({@code sweep 10000 100 10,50}) or by name ({@code sweep kernelsUs=200,1000 rounds=1}); a name
 * also accepts an alias. Whole numbers may use {@code _} as a separator ({@code 10_000}); lists are
 * comma-separated. A bad argument is an {@link IllegalArgumentException} saying what was wrong.
 */
final class BenchArgs {
    private BenchArgs() {}

    /** One parameter: its name, aliases accepted after it, and its default as text. */
    record Param(String name, List<String> aliases, String dflt) {
        Param(String name, String dflt, String... aliases) {
            this(name, List.of(aliases), dflt);
        }

        boolean answersTo(String given) {
            return name.equalsIgnoreCase(given) || aliases.stream().anyMatch(a -> a.equalsIgnoreCase(given));
        }
    }

    /**
     * Binds {@code args[from..]} to {@code params}: a {@code name=value} argument to the parameter
     * of that name, any other to the next parameter by position not yet given. Parameters not given
     * get their default. The map is in the order of {@code params}.
     */
    static Map<String, String> bind(String[] args, int from, List<Param> params) {
        Map<String, String> given = new LinkedHashMap<>();
        int position = 0;
        for (int i = from; i < args.length; i++) {
            String a = args[i].trim();
            if (a.isEmpty()) {
                throw new IllegalArgumentException("empty argument");
            }
            int eq = a.indexOf('=');
            Param p;
            String value;
            if (eq >= 0) {
                String name = a.substring(0, eq).trim();
                p = params.stream().filter(q -> q.answersTo(name)).findFirst().orElseThrow(
                        () -> new IllegalArgumentException("unknown parameter '" + name + "' (known: " + names(params) + ")"));
                value = a.substring(eq + 1).trim();
            } else {
                while (position < params.size() && given.containsKey(params.get(position).name())) {
                    position++;
                }
                if (position >= params.size()) {
                    throw new IllegalArgumentException("too many arguments: '" + a + "' (parameters: " + names(params) + ")");
                }
                p = params.get(position++);
                value = a;
            }
            if (value.isEmpty()) {
                throw new IllegalArgumentException(p.name() + " needs a value");
            }
            if (given.putIfAbsent(p.name(), value) != null) {
                throw new IllegalArgumentException(p.name() + " given twice");
            }
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (Param p : params) {
            out.put(p.name(), given.getOrDefault(p.name(), p.dflt()));
        }
        return out;
    }

    private static String names(List<Param> params) {
        List<String> n = new ArrayList<>();
        for (Param p : params) {
            n.add(p.name());
        }
        return String.join(", ", n);
    }

    /** A whole number in {@code [min, max]}; {@code _} separators allowed. */
    static int intValue(String name, String text, int min, int max) {
        String v = text.trim().replace("_", "");
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a whole number, was '" + text + "'");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "%s must be between %d and %d, was %d",
                    name, min, max, n));
        }
        return n;
    }

    /** A non-empty comma-separated list of whole numbers, each in {@code [min, max]}, no repeats. */
    static List<Integer> intList(String name, String text, int min, int max) {
        List<Integer> out = new ArrayList<>();
        for (String part : text.split(",", -1)) {
            if (part.isBlank()) {
                throw new IllegalArgumentException(name + " must be a comma-separated list of whole numbers, was '" + text + "'");
            }
            int n = intValue(name, part, min, max);
            if (out.contains(n)) {
                throw new IllegalArgumentException(name + " lists " + n + " twice");
            }
            out.add(n);
        }
        return List.copyOf(out);
    }
}
