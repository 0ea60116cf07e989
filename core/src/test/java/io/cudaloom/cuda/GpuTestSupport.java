package io.cudaloom.cuda;

import io.cudaloom.ReactorConfig;
import java.io.File;
import java.net.URISyntaxException;
import java.net.URLClassLoader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What the GPU tests share beyond {@link io.cudaloom.junit.GpuTest} (which skips them where there is
 * no CUDA device and injects their device): the reactor-only configuration, named by
 * {@code @GpuTest(config = "io.cudaloom.cuda.GpuTestSupport#reactorOnly")} and used by the child
 * JVM of the fault test ({@link FaultScenario}), and the child JVMs themselves ({@link #runChild}).
 */
public final class GpuTestSupport {
    private GpuTestSupport() {}

    /** The reactor path forced: no waiter spin, so every await parks and is woken by the scanner. */
    public static ReactorConfig reactorOnly() {
        return ReactorConfig.builder().waiterSpin(Duration.ZERO).build();
    }

    /** What a child JVM printed and how it ended: its {@code RESULT key=value} lines, its exit code, all its output. */
    public record ChildResult(int exitCode, Map<String, String> results, String output) {
        /** The value of {@code RESULT key=...}, or null. */
        public String get(String key) {
            return results.get(key);
        }
    }

    /**
     * Runs {@code main} in a child JVM (this JVM's java binary, class path and native library path,
     * {@code --enable-native-access=ALL-UNNAMED}) with {@code env} added to its environment, for
     * what must not run in the test's own process: a sticky CUDA fault poisons the process's
     * context, and variables such as {@code CUDA_DEVICE_MAX_CONNECTIONS} are read when the context
     * is created. Kills it after {@code timeout}.
     */
    public static ChildResult runChild(Class<?> main, Map<String, String> env, Duration timeout, String... args)
            throws Exception {
        return runChild(main, List.of("--enable-native-access=ALL-UNNAMED"), env, timeout, args);
    }

    /** {@link #runChild(Class, Map, Duration, String...)} with {@code jvmOptions} instead of {@code --enable-native-access=ALL-UNNAMED}. */
    public static ChildResult runChild(Class<?> main, List<String> jvmOptions, Map<String, String> env, Duration timeout,
            String... args) throws Exception {
        return runChild(main, jvmOptions, classPath(), env, timeout, args);
    }

    /** {@link #runChild(Class, List, Map, Duration, String...)} on {@code classPath} instead of this JVM's. */
    public static ChildResult runChild(Class<?> main, List<String> jvmOptions, String classPath, Map<String, String> env,
            Duration timeout, String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(jvmOptions);
        cmd.add("-Djava.library.path=" + System.getProperty("java.library.path"));
        cmd.add("-cp");
        cmd.add(classPath);
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process child = pb.start();
        StringBuilder out = new StringBuilder();
        Thread reader = Thread.ofPlatform().daemon(true).start(() -> {
            try {
                out.append(new String(child.getInputStream().readAllBytes()));
            } catch (java.io.IOException e) {
                out.append("(output lost: ").append(e).append(')');
            }
        });
        boolean ended = child.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (!ended) {
            child.destroyForcibly().waitFor();
        }
        reader.join(10_000);
        String output = out.toString(); // the reader has ended: join() orders its appends before this
        Map<String, String> results = new HashMap<>();
        for (String line : output.split("\\R")) {
            if (line.startsWith("RESULT ")) {
                String[] kv = line.substring(7).split("=", 2);
                results.put(kv[0], kv.length > 1 ? kv[1] : "");
            }
        }
        return new ChildResult(ended ? child.exitValue() : -1, results, output + (ended ? "" : "\n(killed after " + timeout + ")"));
    }

    /**
     * This JVM's class path, with what the class loaders of the tests add (the JUnit console
     * launcher of the GPU bundle loads the tests through a URLClassLoader of its own).
     */
    public static String classPath() {
        ClassLoader cl = GpuTestSupport.class.getClassLoader();
        StringBuilder cp = new StringBuilder(System.getProperty("java.class.path"));
        for (; cl != null; cl = cl.getParent()) {
            if (cl instanceof URLClassLoader u) {
                for (java.net.URL url : u.getURLs()) {
                    try {
                        cp.append(File.pathSeparator).append(new File(url.toURI()).getPath());
                    } catch (URISyntaxException e) {
                        throw new IllegalStateException(e);
                    }
                }
            }
        }
        return cp.toString();
    }
}
