package io.cudaloom.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks a test class or test method that needs a GPU, for machines with and without one, the way
 * Testcontainers' {@code @Testcontainers(disabledWithoutDocker = true)} does for Docker.
 *
 * <pre>{@code
 * @GpuTest(simulatedFallback = true)
 * class ScaleTest {
 *     @Test
 *     void scales(GpuDevice device, GpuStream stream) throws InterruptedException {
 *         ... launch work on the stream ...
 *         stream.await();
 *     }
 * }
 * }</pre>
 *
 * <h2>Where it runs</h2>
 * With a CUDA device present, on CUDA device 0. Without one, the test (or the whole class) is
 * skipped, with the reason printed and reported to JUnit ("no CUDA device: ..."), unless
 * {@link #simulatedFallback()} allows it to run on the {@link io.cudaloom.sim.SimulatedDevice}. The
 * JUnit configuration parameter or system property {@value GpuExtension#DEVICE_PARAMETER} overrides
 * the choice: {@code cuda} runs on the GPU and fails (rather than skips) where there is none, so a
 * GPU runner cannot pass by skipping everything; {@code sim} runs the tests that allow the fallback
 * on the simulated device and skips the others; {@code auto} is the default. (The system property
 * {@value io.cudaloom.GpuDevice#BACKEND_PROPERTY}, which steers {@link io.cudaloom.GpuDevice#open()},
 * does not change where these tests run.)
 *
 * <h2>What it injects</h2>
 * A parameter of type {@link io.cudaloom.GpuDevice} (of a test, lifecycle method or constructor)
 * gets the class's device: one per test class and {@link #config()}, opened on first use and closed
 * after the class. {@link io.cudaloom.cuda.CudaDevice} and {@link io.cudaloom.sim.SimulatedDevice}
 * parameters get the same device where it is of that type; where it is not, the parameter cannot
 * be resolved and the error says on which device the test runs. Each {@link io.cudaloom.GpuStream}
 * parameter ({@link io.cudaloom.cuda.CudaStream}, {@link io.cudaloom.sim.SimulatedStream}) gets a new
 * stream of that device, closed after the test (after the class, for {@code @BeforeAll}). Do not
 * close the injected device; a test that does gets a fresh one for the next test.
 *
 * <h2>What it checks</h2>
 * After each test (after its {@code @AfterEach} methods and its streams' close), unless
 * {@link #checkLeaks()} is false, that it gave back everything the library handed it, counted the
 * same way on every backend ({@link io.cudaloom.GpuDevice#liveResources()}):
 * <ul>
 * <li>every {@link io.cudaloom.DeviceMemory} and {@link io.cudaloom.HostMemory} of the injected
 *     device closed (pinned buffers on a GPU, ordinary memory on the simulated device: a leak
 *     fails on both);</li>
 * <li>every stream it opened on that device closed;</li>
 * <li>no wait left pending: no {@code await} still parked, no future, callback or subscription
 *     neither delivered nor withdrawn;</li>
 * <li>every device the test opened itself closed (the extension closes it, and the message says
 *     where it was opened; not checked with JUnit's parallel execution enabled, where another
 *     class's test may be opening devices at the same time);</li>
 * <li>the injected device at rest: no completion slot armed, none quarantined, every slot back on
 *     the free list, and no fault.</li>
 * </ul>
 * Slots come back by themselves once the GPU work they wait for ends (an abandoned await's, a
 * closed stream's drain), so the check waits for them up to a bound (10 s; the configuration
 * parameter {@value GpuExtension#LEAK_CHECK_TIMEOUT_PARAMETER} sets it, in milliseconds). The
 * others never do: while one is left, the check gives completions already on their way a short
 * grace (500 ms without any delivery; {@value GpuExtension#LEAK_GRACE_PARAMETER}) and then fails.
 * The test fails with an {@link AssertionError} naming each leak's kind and count, and where each
 * was made if {@link #captureSites()} is on; the device is closed so the next test gets a fresh
 * one. A test that faults the device on purpose says so with {@link ExpectDeviceFault}. The same
 * check runs once more after the class, when this annotation is on the class.
 *
 * <h2>Parallel execution</h2>
 * Devices and streams live in JUnit's {@code ExtensionContext.Store}; the extension keeps no state
 * of its own, so test classes may run concurrently (each with its own device). When the methods of
 * one class may run concurrently (JUnit's parallel execution enabled, and the class, its methods
 * or the default mode {@code concurrent}), one test's in-flight work would look like another's
 * leak: the check then runs only once, after the class, when every method has finished. Put the
 * annotation on the class to get that check. {@link ExpectDeviceFault} is refused in such a class.
 *
 * <h2>On a class and on a method</h2>
 * On a class, applies to every test method in it and in its {@code @Nested} classes. On a method
 * (or on a {@code @Nested} class) it <em>refines</em> the settings around it: only the attributes
 * it sets change, the others are inherited. Method over class, a {@code @Nested} class over its
 * enclosing class, a class over the defaults:
 *
 * <pre>{@code
 * @GpuTest(simulatedFallback = true, config = "small")
 * class ScaleTest {
 *     @Test
 *     @GpuTest(captureSites = true)        // still simulatedFallback = true and config = "small"
 *     void leaksNothing(GpuDevice device) { ... }
 *
 *     @Test
 *     @GpuTest(simulatedFallback = false)  // this one needs the GPU itself: skipped without one
 *     void fillsOnTheGpu(CudaDevice gpu) { ... }
 * }
 * }</pre>
 *
 * A bare {@code @GpuTest} on a method sets nothing, so it changes nothing. The three switches
 * ({@link #simulatedFallback()}, {@link #checkLeaks()}, {@link #captureSites()}) are declared as
 * {@code boolean[]} with an empty default only so that "not set" can be told from "set to its
 * default" (an annotation cannot tell otherwise): write each as one value, as before
 * ({@code simulatedFallback = true}; in Kotlin {@code simulatedFallback = [true]}); more than one
 * value fails the test with a one-line message. {@link #config()} is inherited while empty. A class
 * without a {@code @GpuTest} of its own inherits its superclass's, as for any {@code @Inherited}
 * annotation.
 *
 * <p>A class that its own settings would skip still runs where one of its methods (or
 * {@code @Nested} classes) allows the simulated device: that method runs and the others are
 * skipped, each with its reason.
 */
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.ANNOTATION_TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(GpuExtension.class)
public @interface GpuTest {
    /**
     * Whether the test may run on the simulated device where no CUDA device is present (true), or
     * must be skipped there (false, the default). Not set (empty): inherited from the class (see
     * "On a class and on a method"); write it as one value.
     *
     * @return whether the simulated device may stand in for a GPU: one value, or none to inherit
     */
    boolean[] simulatedFallback() default {};

    /**
     * The {@link io.cudaloom.ReactorConfig} of the injected device: the name of a static method
     * without parameters returning one, in the test class (or a superclass, or the class enclosing a
     * {@code @Nested} class), or in another class as {@code "com.example.Configs#reactorOnly"}. Empty
     * (the default): inherited from the class (see "On a class and on a method"), and where no
     * enclosing {@code @GpuTest} names one, {@link io.cudaloom.ReactorConfig#defaults()}; a method
     * that wants the defaults under a class that names a configuration names a method returning
     * them. Each configuration gets its own device.
     *
     * @return the name of the configuration's factory method, or empty to inherit
     */
    String config() default "";

    /**
     * Whether to check after each test that everything was given back and the device came back to
     * rest (see the class comment): false for a test that leaks on purpose. A device that faulted
     * is replaced either way. Not set (empty): inherited, true where nothing around sets it; write
     * it as one value.
     *
     * @return whether leaks fail the test: one value, or none to inherit
     */
    boolean[] checkLeaks() default {};

    /**
     * Whether to record where each allocation, stream and wait of the injected device is made
     * during the test, so that the leak check's message shows where each leaked one came from
     * (the caller's frames). Off by default: capturing walks the stack at every allocation and
     * await. The configuration parameter {@value GpuExtension#CAPTURE_SITES_PARAMETER} turns it on
     * for every test; the system property {@code cudaloom.leakSites} ({@code sampled} or
     * {@code all}) for every device of the JVM. Not set (empty): inherited, false where nothing
     * around sets it; write it as one value.
     *
     * @return whether to capture the sites of allocations, streams and waits: one value, or none to inherit
     */
    boolean[] captureSites() default {};
}
