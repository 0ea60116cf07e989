package io.cudaloom;

import java.util.Set;

/**
 * The guard that keeps {@link GpuDevice} and {@link GpuStream} to the library's own backends: their
 * constructors call {@link #check} first. Not a {@code sealed} class: the backends are in other
 * packages ({@code io.cudaloom.sim}, {@code io.cudaloom.cuda}), which a sealed class allows only
 * inside one named module; on the class path (the unnamed module) the JVM refuses to load such a
 * backend (JVMS 5.3.5), so sealing would break every class-path user.
 *
 * <p>A subclass is accepted when it is in the same run-time module as {@code GpuDevice}, defined
 * by the same class loader, and in one of the packages below. On the module path no other module
 * can define a class in these packages (a package belongs to one module), so only the library's
 * classes pass. On the class path the same holds for every class outside these packages; a class
 * that an application deliberately puts into {@code io.cudaloom.*} on the class path is inside the
 * library's packages anyway (the stress module and core's own tests do that on purpose: a test
 * backend, {@code InstantDevice}).
 */
final class BackendSubclasses {
    /** The packages a backend may live in: the API's own (test backends) and the two shipped. */
    private static final Set<String> PACKAGES = Set.of("io.cudaloom", "io.cudaloom.sim", "io.cudaloom.cuda");

    private BackendSubclasses() {}

    /**
     * @throws IllegalCallerException when {@code subclass} is not one of the library's backends
     */
    static void check(Class<?> subclass, Class<?> base) {
        if (subclass.getModule() == base.getModule() && subclass.getClassLoader() == base.getClassLoader()
                && PACKAGES.contains(subclass.getPackageName())) {
            return;
        }
        throw new IllegalCallerException(base.getSimpleName() + " is subclassed by cuda-loom's backends only "
                + "(io.cudaloom.sim, io.cudaloom.cuda), not by " + subclass.getName()
                + ": open a device with GpuDevice.open() and make streams with GpuDevice.newStream()");
    }
}
