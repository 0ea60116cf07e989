/**
 * cuda-loom: wait on GPU work from virtual threads. The API is {@link io.cudaloom.GpuDevice},
 * {@link io.cudaloom.GpuStream} and {@link io.cudaloom.GpuEvent} (package {@code io.cudaloom}),
 * with the backends' own types ({@code io.cudaloom.cuda}, {@code io.cudaloom.sim}) and the optional
 * integrations ({@code io.cudaloom.junit}, {@code io.cudaloom.kotlin}, {@code io.cudaloom.micrometer},
 * {@code io.cudaloom.spring}).
 *
 * <p>Not exported: {@code io.cudaloom.reactor} (the completion reactor's parts, which the facade
 * {@code CompletionReactor} builds; its package-info is the maintainer's overview),
 * {@code io.cudaloom.protocol} (the lock-free slot protocol), {@code io.cudaloom.spi} (the backend
 * SPI), {@code io.cudaloom.internal} (what the backends share: the argument checks, the provider
 * interface, the API's hooks for its backends) and {@code io.cudaloom.provider} (the two backends'
 * service providers). On the module path no other module can name them; on
 * the class path they stay public classes, but are no API (the stress module uses them there).
 *
 * <p>The optional dependencies are {@code requires static}: JCuda ({@code jcuda}, an automatic
 * module named after its jar), Kotlin and kotlinx-coroutines, Micrometer, JUnit Jupiter, Spring Boot
 * (spring-boot-autoconfigure, spring-boot-actuator and the Spring Framework jars they bring). Each is
 * used when it is in the module graph (on the module path and resolved: automatic modules are
 * resolved together, or {@code --add-modules}); without JCuda in it
 * {@link io.cudaloom.GpuDevice#open()} opens the simulated device, as on the class path.
 *
 * <p>The build rewrites the compiled descriptor to class-file version 53
 * ({@code core/src/build/ModuleDescriptorVersion.java}), so that tools running on an older JDK
 * than the classes' (Maven on JDK 17) can read it.
 */
module io.cudaloom {
    exports io.cudaloom;
    exports io.cudaloom.cuda;
    exports io.cudaloom.sim;
    exports io.cudaloom.junit;
    exports io.cudaloom.kotlin;
    exports io.cudaloom.micrometer;
    exports io.cudaloom.spring;

    // Nullness annotations on the whole API: a compile dependency, read by every user of it.
    requires transitive org.jspecify;
    // The await-latency histogram (LatencyRecorder): always needed; no module name of its own
    // (HdrHistogram 2.2.2 has neither a descriptor nor an Automatic-Module-Name).
    requires HdrHistogram;
    requires jdk.jfr;
    requires java.management;

    // Optional dependencies: compile time only; read at run time only when resolved.
    requires static jcuda;
    requires static kotlin.stdlib;
    requires static kotlinx.coroutines.core;
    requires static micrometer.core;
    requires static org.junit.jupiter.api;
    // Spring Boot (io.cudaloom.spring): the auto-configuration, Spring's annotations and
    // @ConfigurationProperties, Health; automatic modules of their jars' Automatic-Module-Names.
    // Its classes are public with public constructors and accessors, in an exported package, so
    // Spring needs no opens (it reads the annotations from the class files, which no module hides).
    requires static spring.boot.autoconfigure;
    requires static spring.boot;
    requires static spring.context;
    requires static spring.boot.actuator;
    // @Blocking (class retention, compile time only)
    requires static org.jetbrains.annotations;

    uses io.cudaloom.internal.GpuDeviceProvider;
    provides io.cudaloom.internal.GpuDeviceProvider
            with io.cudaloom.provider.CudaDeviceProvider, io.cudaloom.provider.SimulatedDeviceProvider;
}
