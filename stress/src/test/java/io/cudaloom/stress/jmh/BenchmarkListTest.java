package io.cudaloom.stress.jmh;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The JMH benchmarks compile into runnable ones: JMH's annotation processor ran beside jcstress's
 * (proc=full) and listed every benchmark method in META-INF/BenchmarkList, which is what
 * {@code java -jar stress/target/benchmarks.jar} runs. Runs no benchmark (CI only compiles them).
 */
class BenchmarkListTest {

    @Test
    void everyLifetimeGuardBenchmarkIsListed() throws IOException {
        StringBuilder lists = new StringBuilder();
        List<URL> urls = Collections.list(getClass().getClassLoader().getResources("META-INF/BenchmarkList"));
        for (URL url : urls) {
            try (InputStream in = url.openStream()) {
                lists.append(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            }
        }
        assertTrue(!urls.isEmpty(), "no META-INF/BenchmarkList: JMH's annotation processor did not run");
        for (String method : List.of("workAlone", "enterExit", "oneAtomicIncrement", "enterExitSharedGuard",
                "oneAtomicIncrementShared")) {
            // each entry names the benchmark class, its generated harness and the method
            assertTrue(lists.toString().contains("jmh_generated.LifetimeGuardBenchmark_" + method + "_jmhTest S "
                    + method.length() + " " + method + " "),
                    "META-INF/BenchmarkList lacks LifetimeGuardBenchmark." + method);
        }
    }
}
