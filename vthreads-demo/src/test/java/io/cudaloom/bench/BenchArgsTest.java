package io.cudaloom.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cudaloom.bench.BenchArgs.Param;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BenchArgsTest {
    private static final List<Param> PARAMS = List.of(
            new Param("threads", "10000"), new Param("awaitsPerThread", "100", "awaits"), new Param("kernelsUs", "10,50"));

    private static Map<String, String> bind(String... args) {
        return BenchArgs.bind(args, 1, PARAMS);
    }

    @Test
    void positionalNamedAndDefaults() {
        assertEquals(Map.of("threads", "10000", "awaitsPerThread", "100", "kernelsUs", "10,50"), bind("sweep"));
        assertEquals(Map.of("threads", "5", "awaitsPerThread", "7", "kernelsUs", "10,50"), bind("sweep", "5", "7"));
        assertEquals(Map.of("threads", "10000", "awaitsPerThread", "100", "kernelsUs", "200"), bind("sweep", "kernelsUs=200"));
        assertEquals(Map.of("threads", "10000", "awaitsPerThread", "3", "kernelsUs", "10,50"), bind("sweep", "AWAITS=3"),
                "aliases, any case");
        // a positional argument takes the next parameter not given by name
        assertEquals(Map.of("threads", "9", "awaitsPerThread", "2", "kernelsUs", "1"), bind("sweep", "threads=9", "2", "1"));
        assertEquals(List.of("threads", "awaitsPerThread", "kernelsUs"), List.copyOf(bind("sweep", "kernelsUs=1", "4").keySet()),
                "in parameter order");
    }

    @Test
    void badArgumentsSayWhatIsWrong() {
        assertEquals("unknown parameter 'thread' (known: threads, awaitsPerThread, kernelsUs)",
                assertThrows(IllegalArgumentException.class, () -> bind("sweep", "thread=4")).getMessage());
        assertEquals("too many arguments: '4' (parameters: threads, awaitsPerThread, kernelsUs)",
                assertThrows(IllegalArgumentException.class, () -> bind("sweep", "1", "2", "3", "4")).getMessage());
        assertEquals("threads given twice",
                assertThrows(IllegalArgumentException.class, () -> bind("sweep", "5", "threads=6")).getMessage());
        assertEquals("kernelsUs needs a value",
                assertThrows(IllegalArgumentException.class, () -> bind("sweep", "kernelsUs=")).getMessage());
    }

    @Test
    void numbersAndLists() {
        assertEquals(10_000, BenchArgs.intValue("threads", "10_000", 1, 1_000_000));
        assertEquals(List.of(10, 50, 200, 1000), BenchArgs.intList("kernelsUs", "10,50, 200,1_000", 0, 1_000_000));
        assertEquals("threads must be between 1 and 100, was 0",
                assertThrows(IllegalArgumentException.class, () -> BenchArgs.intValue("threads", "0", 1, 100)).getMessage());
        assertEquals("threads must be a whole number, was '1e4'",
                assertThrows(IllegalArgumentException.class, () -> BenchArgs.intValue("threads", "1e4", 1, 100)).getMessage());
        assertEquals("kernelsUs must be a comma-separated list of whole numbers, was '10,,50'",
                assertThrows(IllegalArgumentException.class, () -> BenchArgs.intList("kernelsUs", "10,,50", 0, 100)).getMessage());
        assertEquals("kernelsUs lists 10 twice",
                assertThrows(IllegalArgumentException.class, () -> BenchArgs.intList("kernelsUs", "10,10", 0, 100)).getMessage());
    }
}
