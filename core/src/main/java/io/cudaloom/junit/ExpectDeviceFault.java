package io.cudaloom.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a {@link GpuTest} method that faults its device on purpose (e.g. with
 * {@link io.cudaloom.sim.SimulatedStream#injectFault}). After it, instead of failing on the fault,
 * the extension checks that a device of the class did fault, closes it, and checks that its
 * reactor then gave back all of its completion slots and flag memory (within the leak-check bound);
 * the next test gets a fresh device.
 *
 * <p>Refused in a class whose methods may run concurrently: a fault would reach the other tests
 * sharing the device. On a real GPU a fault is a sticky error of the CUDA context, and on some
 * drivers it leaves the whole process unable to use the GPU again; such tests belong in a child JVM.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface ExpectDeviceFault {}
