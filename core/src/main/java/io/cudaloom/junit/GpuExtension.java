package io.cudaloom.junit;

import io.cudaloom.GpuDevice;
import io.cudaloom.internal.GpuDeviceProvider;
import io.cudaloom.GpuStream;
import io.cudaloom.LiveResources;
import io.cudaloom.LiveResources.Kind;
import io.cudaloom.ReactorConfig;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.cuda.CudaStream;
import io.cudaloom.sim.SimulatedDevice;
import io.cudaloom.sim.SimulatedStream;
import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.platform.commons.support.AnnotationSupport;
import org.junit.platform.commons.support.HierarchyTraversalMode;
import org.junit.platform.commons.support.ReflectionSupport;

/**
 * The JUnit Jupiter extension behind {@link GpuTest}: the condition that skips a test without a
 * GPU, the resolver of device and stream parameters, and the check after each test and class.
 * Register it with {@link GpuTest} (or {@code @ExtendWith(GpuExtension.class)}, which behaves like
 * {@code @GpuTest} with its defaults); {@link GpuTest} documents what it does.
 *
 * <p>Stateless: devices and streams live in JUnit's {@link ExtensionContext.Store} (a class's
 * devices in the class's store, a test's streams in the test's), so one instance may serve tests
 * running in parallel.
 */
public final class GpuExtension
        implements ExecutionCondition, ParameterResolver, BeforeEachCallback, AfterEachCallback, AfterAllCallback {

    /**
     * JUnit configuration parameter (or system property) choosing where {@link GpuTest}s run:
     * {@code auto} (default: CUDA if present), {@code cuda} (a GPU is required: tests fail without
     * one) or {@code sim} (the simulated device, for the tests that allow it). Separate from
     * {@link GpuDevice#BACKEND_PROPERTY}, which a build may set to keep {@link GpuDevice#open()} off
     * the GPU in its ordinary tests while its GPU tests still find the GPU.
     */
    public static final String DEVICE_PARAMETER = "cudaloom.junit.device";

    /** JUnit configuration parameter: how long the leak check waits for a device to come to rest, in milliseconds. */
    public static final String LEAK_CHECK_TIMEOUT_PARAMETER = "cudaloom.junit.leakCheckTimeoutMillis";

    /**
     * JUnit configuration parameter: how long the leak check gives a leak that does not heal by
     * itself (memory or a stream not closed, a wait still pending) before it reports it, in
     * milliseconds (default 500): the time for completions already on their way to be delivered.
     * The grace starts again whenever the reactor delivers something, up to the
     * {@value #LEAK_CHECK_TIMEOUT_PARAMETER} bound.
     */
    public static final String LEAK_GRACE_PARAMETER = "cudaloom.junit.leakGraceMillis";

    /**
     * JUnit configuration parameter (or system property): {@code true} records where every
     * allocation, stream and wait of the injected devices is made, for every test, as
     * {@link GpuTest#captureSites()} does for one; the leak check's message then shows each leak's
     * site. The system property {@code cudaloom.leakSites} ({@code off}, {@code sampled},
     * {@code all}) does the same for every device of the JVM.
     */
    public static final String CAPTURE_SITES_PARAMETER = "cudaloom.junit.captureSites";

    /** Report entry key naming the device a class's tests run on (published when it is opened). */
    public static final String DEVICE_REPORT_KEY = "cudaloom.device";

    private static final Duration DEFAULT_LEAK_CHECK_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration DEFAULT_LEAK_GRACE = Duration.ofMillis(500);
    private static final Namespace NAMESPACE = Namespace.create(GpuExtension.class);
    private static final Set<Class<?>> INJECTED = Set.of(GpuDevice.class, CudaDevice.class, SimulatedDevice.class,
            GpuStream.class, CudaStream.class, SimulatedStream.class);
    private static final String PARALLEL_ENABLED = "junit.jupiter.execution.parallel.enabled";
    private static final String PARALLEL_MODE_DEFAULT = "junit.jupiter.execution.parallel.mode.default";

    /** Made by JUnit (through {@link GpuTest}'s {@code @ExtendWith}). */
    public GpuExtension() {}

    // ---- where a test runs ----------------------------------------------------------------------

    private enum Backend {
        CUDA,
        SIMULATED
    }

    /** Where a test runs ({@code backend}), or that it is skipped ({@code backend} null), and why. */
    private record Decision(@Nullable Backend backend, String reason) {}

    /**
     * The settings of one test or class: the defaults, refined by each {@link GpuTest} from the
     * outermost class in ({@link #settings}).
     */
    private record Settings(boolean simulatedFallback, String config, boolean checkLeaks, boolean captureSites) {
        static final Settings DEFAULTS = new Settings(false, "", true, false);

        /** These settings with the attributes that {@code a} (on {@code where}) sets changed, the others kept. */
        Settings refinedBy(GpuTest a, AnnotatedElement where) {
            String named = a.config().strip();
            return new Settings(flag(a.simulatedFallback(), simulatedFallback, "simulatedFallback", where),
                    named.isEmpty() ? config : named, flag(a.checkLeaks(), checkLeaks, "checkLeaks", where),
                    flag(a.captureSites(), captureSites, "captureSites", where));
        }

        /** An attribute's value: none set inherits {@code inherited}; more than one is refused. */
        private static boolean flag(boolean[] set, boolean inherited, String name, AnnotatedElement where) {
            if (set.length > 1) {
                throw new ExtensionConfigurationException("@GpuTest(" + name + " = " + Arrays.toString(set)
                        .replace('[', '{').replace(']', '}') + ") on " + where + ": give one value, or none to inherit");
            }
            return set.length == 0 ? inherited : set[0];
        }
    }

    /** Whether the CUDA backend can open a device, probed once per engine run (the root store). */
    private record CudaAvailability(boolean available, String reason) {
        static CudaAvailability probe() {
            for (GpuDeviceProvider p : GpuDeviceProvider.installed()) {
                if (p.name().equals("cuda")) {
                    boolean available = p.isAvailable();
                    return new CudaAvailability(available, available ? "" : String.valueOf(p.unavailableReason()));
                }
            }
            return new CudaAvailability(false, "no CUDA backend on the class path");
        }
    }

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        Settings settings = settings(context);
        Decision d = decide(context, settings);
        if (d.backend() == null && context.getTestMethod().isEmpty() && context.getTestClass().isPresent()
                && refinedRuns(context, settings, context.getTestClass().get(), new HashSet<>())) {
            // A method or @Nested class inside refines the class's settings to run: the class runs
            // for it, and each of its tests is decided on its own settings (the others skipped).
            return ConditionEvaluationResult.enabled(d.reason() + "; some of its tests run (their @GpuTest allows it)");
        }
        if (d.backend() == null) {
            // Printed as well as reported: build logs show skipped GPU tests without a report viewer.
            System.out.println("SKIPPED " + describe(context) + ": " + d.reason());
            return ConditionEvaluationResult.disabled(d.reason());
        }
        return ConditionEvaluationResult.enabled(d.reason());
    }

    private static Decision decide(ExtensionContext context, Settings settings) {
        String choice = context.getConfigurationParameter(DEVICE_PARAMETER)
                .map(v -> v.strip().toLowerCase(Locale.ROOT)).orElse("auto");
        switch (choice) {
            case "", "auto" -> {
                CudaAvailability cuda = context.getRoot().getStore(NAMESPACE)
                        .getOrComputeIfAbsent(CudaAvailability.class, k -> CudaAvailability.probe(),
                                CudaAvailability.class);
                if (cuda.available()) {
                    return new Decision(Backend.CUDA, "runs on CUDA device 0");
                }
                if (settings.simulatedFallback()) {
                    return new Decision(Backend.SIMULATED, "no CUDA device (" + cuda.reason()
                            + "): runs on the simulated device (simulatedFallback = true)");
                }
                return new Decision(null, "no CUDA device: " + cuda.reason());
            }
            case "cuda", "gpu" -> {
                return new Decision(Backend.CUDA, DEVICE_PARAMETER + "=" + choice + ": runs on CUDA device 0");
            }
            case "sim", "simulated" -> {
                if (settings.simulatedFallback()) {
                    return new Decision(Backend.SIMULATED, DEVICE_PARAMETER + "=" + choice
                            + ": runs on the simulated device");
                }
                return new Decision(null, DEVICE_PARAMETER + "=" + choice
                        + " asks for the simulated device, and this test needs a CUDA device (no simulatedFallback)");
            }
            default -> throw new ExtensionConfigurationException(DEVICE_PARAMETER + " must be auto, cuda or sim, was '"
                    + choice + "'");
        }
    }

    /**
     * A test's or class's settings: the defaults, refined by the {@link GpuTest} of the outermost
     * class enclosing a {@code @Nested} one, then of each class inwards, then of the test method;
     * each changes only the attributes it sets. A class's annotation is found as JUnit finds it
     * (on the class, meta-present, or inherited from a superclass).
     */
    private static Settings settings(ExtensionContext context) {
        Settings s = classSettings(context.getTestClass().orElse(null));
        Optional<Method> method = context.getTestMethod();
        return method.isPresent() ? refined(s, method.get()) : s;
    }

    private static Settings classSettings(@Nullable Class<?> c) {
        return c == null ? Settings.DEFAULTS : refined(classSettings(enclosingOfNested(c)), c);
    }

    /** {@code s} refined by the {@link GpuTest} of {@code element}, if it has one. */
    private static Settings refined(Settings s, AnnotatedElement element) {
        Optional<GpuTest> a = AnnotationSupport.findAnnotation(element, GpuTest.class);
        return a.isPresent() ? s.refinedBy(a.get(), element) : s;
    }

    /**
     * Whether a test method or {@code @Nested} class inside {@code c}, whose {@link GpuTest}
     * refines {@code classSettings}, would run: then the class must not be skipped as a whole.
     */
    private static boolean refinedRuns(ExtensionContext context, Settings classSettings, Class<?> c,
            Set<Class<?>> seen) {
        if (!seen.add(c)) {
            return false;
        }
        for (Method m : ReflectionSupport.findMethods(c, m -> AnnotationSupport.isAnnotated(m, GpuTest.class),
                HierarchyTraversalMode.TOP_DOWN)) {
            try {
                if (decide(context, refined(classSettings, m)).backend() != null) {
                    return true;
                }
            } catch (ExtensionConfigurationException e) {
                return true; // a malformed @GpuTest: the method runs its condition, and fails there naming it
            }
        }
        for (Class<?> nested : ReflectionSupport.findNestedClasses(c, n -> !Modifier.isStatic(n.getModifiers())
                && AnnotationSupport.isAnnotated(n, Nested.class))) {
            Settings s;
            try {
                s = refined(classSettings, nested);
            } catch (ExtensionConfigurationException e) {
                return true; // as above: the nested class fails, naming it
            }
            if (decide(context, s).backend() != null || refinedRuns(context, s, nested, seen)) {
                return true;
            }
        }
        return false;
    }

    /** The enclosing class of an inner ({@code @Nested}) class, whose extensions it inherits; else null. */
    private static @Nullable Class<?> enclosingOfNested(Class<?> c) {
        return Modifier.isStatic(c.getModifiers()) ? null : c.getEnclosingClass();
    }

    // ---- parameters -----------------------------------------------------------------------------

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return INJECTED.contains(parameter.getParameter().getType());
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        String what = type.getSimpleName() + " parameter of " + parameter.getDeclaringExecutable().getName();
        Settings settings = settings(context);
        Decision d = decide(context, settings);
        Backend backend = d.backend();
        if (backend == null) {
            throw new ParameterResolutionException("cannot resolve the " + what + ": " + d.reason());
        }
        GpuDevice device = device(context, settings, backend);
        boolean cudaWanted = type == CudaDevice.class || type == CudaStream.class;
        boolean simWanted = type == SimulatedDevice.class || type == SimulatedStream.class;
        if ((cudaWanted && !(device instanceof CudaDevice)) || (simWanted && !(device instanceof SimulatedDevice))) {
            throw new ParameterResolutionException("cannot resolve the " + what + ": the test runs on "
                    + device.name() + " (" + d.reason() + "); declare a GpuDevice or GpuStream parameter to run on"
                    + " either device");
        }
        if (!GpuStream.class.isAssignableFrom(type)) {
            return device;
        }
        GpuStream stream = device.newStream();
        context.getStore(NAMESPACE).getOrComputeIfAbsent(Streams.class, k -> new Streams(), Streams.class).add(stream);
        return stream;
    }

    /** The class's device for this test's configuration, opened on first use. */
    private static GpuDevice device(ExtensionContext context, Settings settings, Backend backend) {
        ExtensionContext classContext = classContext(context);
        return classDevices(classContext).get(settings.config(), () -> {
            ReactorConfig config = reactorConfig(classContext, settings.config());
            GpuDevice d = backend == Backend.CUDA ? CudaDevice.open(0, config) : SimulatedDevice.create(config);
            if (capturesSites(context, settings)) {
                d.captureLeakSites(true);
            }
            context.publishReportEntry(DEVICE_REPORT_KEY, d.name());
            return d;
        });
    }

    /** The test class's context: the nearest one whose element is a class. */
    private static ExtensionContext classContext(ExtensionContext context) {
        ExtensionContext c = context;
        while (!(c.getElement().orElse(null) instanceof Class<?>)) {
            c = c.getParent().orElseThrow(() -> new ExtensionConfigurationException(
                    "GpuExtension is used outside a test class: " + context.getUniqueId()));
        }
        return c;
    }

    private static ClassDevices classDevices(ExtensionContext classContext) {
        return classContext.getStore(NAMESPACE).getOrComputeIfAbsent(ClassDevices.class,
                k -> new ClassDevices(methodsMayOverlap(classContext)), ClassDevices.class);
    }

    /** Runs the static method that {@link GpuTest#config()} names. */
    private static ReactorConfig reactorConfig(ExtensionContext classContext, String name) {
        if (name.isEmpty()) {
            return ReactorConfig.defaults();
        }
        Class<?> testClass = classContext.getRequiredTestClass();
        String problem = "@GpuTest(config = \"" + name + "\") of " + testClass.getName() + ": ";
        int hash = name.indexOf('#');
        List<Class<?>> owners = new ArrayList<>();
        String methodName = hash < 0 ? name : name.substring(hash + 1);
        if (hash < 0) {
            for (Class<?> c = testClass; c != null; c = enclosingOfNested(c)) {
                owners.add(c);
            }
        } else {
            try {
                owners.add(Class.forName(name.substring(0, hash), false, testClass.getClassLoader()));
            } catch (ClassNotFoundException e) {
                throw new ExtensionConfigurationException(problem + "no class " + name.substring(0, hash), e);
            }
        }
        for (Class<?> owner : owners) {
            Optional<Method> m = ReflectionSupport.findMethod(owner, methodName);
            if (m.isPresent()) {
                Method method = m.get();
                if (!Modifier.isStatic(method.getModifiers())
                        || !ReactorConfig.class.isAssignableFrom(method.getReturnType())) {
                    throw new ExtensionConfigurationException(problem + method
                            + " must be static and return a ReactorConfig");
                }
                Object config = ReflectionSupport.invokeMethod(method, null);
                if (config == null) {
                    throw new ExtensionConfigurationException(problem + method + " returned null");
                }
                return (ReactorConfig) config;
            }
        }
        throw new ExtensionConfigurationException(problem + "no method " + methodName + "() without parameters in "
                + owners.stream().map(Class::getName).toList());
    }

    // ---- checks ---------------------------------------------------------------------------------

    @Override
    public void beforeEach(ExtensionContext context) {
        if (expectsFault(context) && mayOverlap(context, classDevices(classContext(context)))) {
            throw new ExtensionConfigurationException("@ExpectDeviceFault on " + describe(context)
                    + ": the methods of its class may run concurrently, and a fault would reach the other tests"
                    + " sharing the device; run that class's methods in one thread (@Execution(SAME_THREAD))");
        }
        // The devices opened from here on, until the test's after-each steps, are the test's own.
        context.getStore(NAMESPACE).put(DeviceMark.class, new DeviceMark(LiveResources.lastDeviceSequence()));
        ClassDevices devices = classContext(context).getStore(NAMESPACE).get(ClassDevices.class, ClassDevices.class);
        if (devices != null && capturesSites(context, settings(context))) {
            devices.snapshot().values().forEach(d -> d.captureLeakSites(true));
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        closeStreams(context);
        ClassDevices devices = classContext(context).getStore(NAMESPACE).get(ClassDevices.class, ClassDevices.class);
        boolean expectFault = expectsFault(context);
        String who = describe(context);
        Settings settings = settings(context);
        DeviceMark mark = context.getStore(NAMESPACE).remove(DeviceMark.class, DeviceMark.class);
        // Devices the test opened itself, when no other test can be opening devices meanwhile.
        String opened = settings.checkLeaks() && mark != null && !parallelEnabled(context)
                ? devicesLeftOpen(who, mark, devices) : null;
        if (devices == null) {
            if (expectFault) {
                throw new AssertionError("@ExpectDeviceFault on " + who + ": the test used no device of @GpuTest"
                        + " (inject a GpuDevice or GpuStream parameter)");
            }
            if (opened != null) {
                throw new AssertionError(opened);
            }
            return;
        }
        if (mayOverlap(context, devices)) {
            if (opened != null) {
                throw new AssertionError(opened);
            }
            return; // another test's work in flight would look like this one's leak: checked after the class
        }
        Duration timeout = leakCheckTimeout(context);
        List<String> failures = new ArrayList<>();
        if (opened != null) {
            failures.add(opened);
        }
        boolean faulted = false;
        for (Map.Entry<String, GpuDevice> e : devices.snapshot().entrySet()) {
            GpuDevice device = e.getValue();
            if (device.reactor().isClosed()) {
                devices.discard(e.getKey(), device); // closed by the test: the next test gets a fresh one
                continue;
            }
            if (expectFault && LeakCheck.fault(device) != null) {
                faulted = true;
                devices.discard(e.getKey(), device);
                if (!LeakCheck.awaitReleased(device, timeout)) {
                    failures.add(who + " faulted " + device.name() + " as expected, but once closed its reactor did not"
                            + " give back every completion slot and its flag memory within " + timeout.toMillis()
                            + " ms; reactor: " + LeakCheck.counters(device));
                }
                continue;
            }
            LeakCheck.Rest rest = problems(context, device, settings, timeout);
            if (!rest.problems().isEmpty()) {
                // The report first: closing the device changes the counters it shows.
                failures.add(LeakCheck.report(who, device, rest.problems(), timeout,
                        rest.afterGrace() ? leakGrace(context) : null)
                        + "\n  the device is closed; the class's next test gets a fresh one");
                devices.discard(e.getKey(), device);
            } else if (capturesSites(context, settings)) {
                device.captureLeakSites(false); // back to the system property's level for the next test
            }
        }
        if (expectFault && !faulted) {
            failures.add("@ExpectDeviceFault on " + who + ": no device of the class faulted");
        }
        if (!failures.isEmpty()) {
            throw new AssertionError(String.join("\n", failures));
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        closeStreams(context);
        ClassDevices devices = context.getStore(NAMESPACE).remove(ClassDevices.class, ClassDevices.class);
        if (devices == null) {
            return;
        }
        Settings settings = settings(context);
        Duration timeout = leakCheckTimeout(context);
        List<String> failures = new ArrayList<>();
        for (GpuDevice device : devices.snapshot().values()) {
            if (!device.reactor().isClosed()) {
                LeakCheck.Rest rest = problems(context, device, settings, timeout);
                if (!rest.problems().isEmpty()) {
                    failures.add(LeakCheck.report("the tests of " + describe(context), device, rest.problems(),
                            timeout, rest.afterGrace() ? leakGrace(context) : null));
                }
            }
        }
        devices.close();
        if (!failures.isEmpty()) {
            throw new AssertionError(String.join("\n", failures));
        }
    }

    /** What is wrong with {@code device}: everything, or with {@code checkLeaks = false} only a fault. */
    private static LeakCheck.Rest problems(ExtensionContext context, GpuDevice device, Settings settings,
            Duration timeout) {
        if (settings.checkLeaks()) {
            return LeakCheck.awaitRest(device, timeout, leakGrace(context));
        }
        String fault = LeakCheck.fault(device);
        return new LeakCheck.Rest(fault == null ? List.of() : List.of("the device faulted: " + fault), false);
    }

    /**
     * The devices opened since {@code mark} (the test's before-each step) and still open, but for
     * the extension's own: reported, and closed, so that their threads do not outlive the test.
     * Null if there are none.
     */
    private static @Nullable String devicesLeftOpen(String who, DeviceMark mark, @Nullable ClassDevices devices) {
        List<GpuDevice> injected = devices == null ? List.of() : List.copyOf(devices.snapshot().values());
        List<LiveResources.OpenDevice> left = new ArrayList<>();
        for (LiveResources.OpenDevice d : LiveResources.openDevices()) {
            GpuDevice device = d.device();
            if (d.sequence() > mark.sequence() && injected.stream().noneMatch(i -> i == device)) {
                left.add(d);
            }
        }
        if (left.isEmpty()) {
            return null;
        }
        StringBuilder b = new StringBuilder(who).append(" left open a device it opened itself:\n  - ")
                .append(Kind.DEVICE.noun()).append(": ").append(left.size()).append(" ").append(Kind.DEVICE.problem());
        for (LiveResources.OpenDevice d : left) {
            b.append("\n    ").append(d.name()).append(", ").append(d.openedAt().render("      ").strip());
            GpuDevice device = d.device();
            if (device != null) {
                device.close();
            }
        }
        b.append("\n  the extension has closed ").append(left.size() == 1 ? "it" : "them");
        return b.toString();
    }

    private static boolean capturesSites(ExtensionContext context, Settings settings) {
        return settings.captureSites() || context.getConfigurationParameter(CAPTURE_SITES_PARAMETER,
                v -> Boolean.parseBoolean(v.strip())).orElse(false);
    }

    private static Duration leakGrace(ExtensionContext context) {
        return context.getConfigurationParameter(LEAK_GRACE_PARAMETER,
                v -> Duration.ofMillis(Long.parseLong(v.strip()))).orElse(DEFAULT_LEAK_GRACE);
    }

    /** Whether tests other than this one may be using the class's devices right now. */
    private static boolean mayOverlap(ExtensionContext context, ClassDevices devices) {
        return devices.methodsMayOverlap()
                || (parallelEnabled(context) && context.getExecutionMode() == ExecutionMode.CONCURRENT);
    }

    private static void closeStreams(ExtensionContext context) {
        Streams streams = context.getStore(NAMESPACE).remove(Streams.class, Streams.class);
        if (streams != null) {
            streams.close();
        }
    }

    private static boolean expectsFault(ExtensionContext context) {
        return context.getTestMethod().map(m -> AnnotationSupport.isAnnotated(m, ExpectDeviceFault.class))
                .orElse(false);
    }

    private static Duration leakCheckTimeout(ExtensionContext context) {
        return context.getConfigurationParameter(LEAK_CHECK_TIMEOUT_PARAMETER,
                v -> Duration.ofMillis(Long.parseLong(v.strip()))).orElse(DEFAULT_LEAK_CHECK_TIMEOUT);
    }

    private static boolean parallelEnabled(ExtensionContext context) {
        return context.getConfigurationParameter(PARALLEL_ENABLED, Boolean::parseBoolean).orElse(false);
    }

    /**
     * Whether the class's test methods may run at the same time: parallel execution is enabled and
     * the class's methods run concurrently by default (its {@link Execution} or that of a class
     * enclosing it as {@code @Nested}, else the configured default mode) or one of them says so.
     * Decided from the declarations, before any test runs; erring towards true only moves the check
     * to the class's end.
     */
    private static boolean methodsMayOverlap(ExtensionContext classContext) {
        if (!parallelEnabled(classContext)) {
            return false;
        }
        Class<?> testClass = classContext.getRequiredTestClass();
        Optional<ExecutionMode> declared = Optional.empty();
        for (Class<?> c = testClass; declared.isEmpty() && c != null; c = enclosingOfNested(c)) {
            declared = AnnotationSupport.findAnnotation(c, Execution.class).map(Execution::value);
        }
        ExecutionMode methodsDefault = declared.orElseGet(() -> classContext
                .getConfigurationParameter(PARALLEL_MODE_DEFAULT)
                .filter(v -> v.strip().equalsIgnoreCase("concurrent"))
                .map(v -> ExecutionMode.CONCURRENT).orElse(ExecutionMode.SAME_THREAD));
        return methodsDefault == ExecutionMode.CONCURRENT
                || !ReflectionSupport.findMethods(testClass, GpuExtension::declaresConcurrent,
                        HierarchyTraversalMode.TOP_DOWN).isEmpty();
    }

    private static boolean declaresConcurrent(AnnotatedElement e) {
        return AnnotationSupport.findAnnotation(e, Execution.class).map(x -> x.value() == ExecutionMode.CONCURRENT)
                .orElse(false);
    }

    /** E.g. "LeakTest > leavesAnArmedSlot()" for a test, "LeakTest" for a class. */
    private static String describe(ExtensionContext context) {
        List<String> names = new ArrayList<>();
        for (ExtensionContext c = context; c.getParent().isPresent(); c = c.getParent().get()) {
            names.add(0, c.getDisplayName());
        }
        return String.join(" > ", names);
    }

    // ---- what the stores hold -------------------------------------------------------------------

    /**
     * The devices of one test class, one per configuration name, opened on first use; closed by
     * {@link #afterAll}, or by the store when the class ends (if the extension is registered only on
     * methods, JUnit 5.13 and newer close {@link AutoCloseable} store values).
     */
    static final class ClassDevices implements AutoCloseable {
        private final Map<String, GpuDevice> devices = new ConcurrentHashMap<>();
        private final boolean methodsMayOverlap;

        ClassDevices(boolean methodsMayOverlap) {
            this.methodsMayOverlap = methodsMayOverlap;
        }

        boolean methodsMayOverlap() {
            return methodsMayOverlap;
        }

        GpuDevice get(String config, Supplier<GpuDevice> open) {
            return devices.computeIfAbsent(config, k -> open.get());
        }

        Map<String, GpuDevice> snapshot() {
            return Map.copyOf(devices);
        }

        /** Closes {@code device} and forgets it: the next test of the class opens a fresh one. */
        void discard(String config, GpuDevice device) {
            devices.remove(config, device);
            device.close();
        }

        @Override
        public void close() {
            for (String config : List.copyOf(devices.keySet())) {
                GpuDevice d = devices.remove(config);
                if (d != null) {
                    d.close();
                }
            }
        }
    }

    /** The last device opened before a test began ({@link LiveResources#lastDeviceSequence()}). */
    record DeviceMark(long sequence) {}

    /** The streams injected in one context (a test, or a class for {@code @BeforeAll}); closed at its end. */
    static final class Streams implements AutoCloseable {
        private final List<GpuStream> streams = new CopyOnWriteArrayList<>();

        void add(GpuStream stream) {
            streams.add(stream);
        }

        @Override
        public void close() {
            for (GpuStream s : streams) {
                s.close();
            }
            streams.clear();
        }
    }
}
