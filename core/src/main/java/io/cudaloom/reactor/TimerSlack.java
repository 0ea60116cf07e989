package io.cudaloom.reactor;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Array;
import java.util.Locale;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The scanner thread's timer slack. Linux lets a timed sleep of a normal thread end up to its
 * "timer slack" late, 50 us by default ({@code prctl(2)}, {@code PR_SET_TIMERSLACK}), so every
 * timed park of the scanner returns about 55 us after the time asked for (measured on the H200
 * host with no project code: {@code io.cudaloom.bench.ParkOvershoot}, a platform thread's
 * {@code parkNanos} of 5 to 150 us returns 55-57 us late at p50). The idle strategy's predicted
 * park must then leave that much early and spin it away; with the slack at 1 us it spins a few
 * microseconds instead. This sets the calling thread's slack where it can, through the JDK's
 * foreign function API (JDK 22 or newer, looked up reflectively because the library is compiled
 * for 21), and only if native access is enabled for this module (as the CUDA backend needs
 * anyway: {@code --enable-native-access}); otherwise, and on any other OS, it does nothing and
 * says why at DEBUG. It never prints a warning and never throws.
 */
final class TimerSlack {
    private static final System.Logger LOG = System.getLogger("io.cudaloom");
    private static final int PR_SET_TIMERSLACK = 29;
    private static final int PR_GET_TIMERSLACK = 30;

    private TimerSlack() {}

    /** Sets the calling thread's timer slack to {@code nanos}; true if it was set. */
    static boolean setForCurrentThread(long nanos) {
        try {
            MethodHandle prctl = prctl();
            if (prctl == null) {
                return false;
            }
            int result = (int) prctl.invokeWithArguments(PR_SET_TIMERSLACK, nanos, 0L, 0L, 0L);
            if (result != 0) {
                return skipped("prctl(PR_SET_TIMERSLACK) returned " + result);
            }
            LOG.log(System.Logger.Level.DEBUG, "{0}: timer slack set to {1} ns", Thread.currentThread().getName(), nanos);
            return true;
        } catch (Throwable e) { // a best effort: the scanner works without it, only less precisely
            return skipped(e.toString());
        }
    }

    /** The calling thread's timer slack in nanoseconds, or -1 where it cannot be read (as for setting it). */
    static long ofCurrentThread() {
        try {
            MethodHandle prctl = prctl();
            return prctl == null ? -1L : (int) prctl.invokeWithArguments(PR_GET_TIMERSLACK, 0L, 0L, 0L, 0L);
        } catch (Throwable e) {
            return -1L;
        }
    }

    /** A handle on {@code int prctl(int, long, long, long, long)}, or null (logged at DEBUG: why not). */
    private static @Nullable MethodHandle prctl() throws ReflectiveOperationException {
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")) {
            skipped("not Linux");
            return null;
        }
        Module self = TimerSlack.class.getModule();
        MethodHandle enabled;
        try {
            enabled = MethodHandles.publicLookup().findVirtual(Module.class, "isNativeAccessEnabled",
                    MethodType.methodType(boolean.class));
        } catch (NoSuchMethodException e) {
            skipped("the JDK has no foreign function API (JDK 22 or newer)");
            return null;
        }
        try {
            if (!(boolean) enabled.invoke(self)) {
                skipped("native access is not enabled for " + self + " (--enable-native-access)");
                return null;
            }
        } catch (Throwable e) {
            skipped(e.toString());
            return null;
        }
        Class<?> linkerClass = Class.forName("java.lang.foreign.Linker");
        Class<?> symbolLookupClass = Class.forName("java.lang.foreign.SymbolLookup");
        Class<?> segmentClass = Class.forName("java.lang.foreign.MemorySegment");
        Class<?> layoutClass = Class.forName("java.lang.foreign.MemoryLayout");
        Class<?> descriptorClass = Class.forName("java.lang.foreign.FunctionDescriptor");
        Class<?> optionClass = Class.forName("java.lang.foreign.Linker$Option");
        Class<?> valueLayoutClass = Class.forName("java.lang.foreign.ValueLayout");
        Object linker = linkerClass.getMethod("nativeLinker").invoke(null);
        Object symbols = linkerClass.getMethod("defaultLookup").invoke(linker);
        Optional<?> symbol = (Optional<?>) symbolLookupClass.getMethod("find", String.class).invoke(symbols, "prctl");
        if (symbol.isEmpty()) {
            skipped("no prctl in the C library");
            return null;
        }
        Object jint = valueLayoutClass.getField("JAVA_INT").get(null);
        Object jlong = valueLayoutClass.getField("JAVA_LONG").get(null);
        Object args = Array.newInstance(layoutClass, 4);
        for (int i = 0; i < 4; i++) {
            Array.set(args, i, jlong);
        }
        Object argsWithOption = Array.newInstance(layoutClass, 5);
        Array.set(argsWithOption, 0, jint);
        System.arraycopy(args, 0, argsWithOption, 1, 4);
        Object descriptor = descriptorClass.getMethod("of", layoutClass, argsWithOption.getClass())
                .invoke(null, jint, argsWithOption);
        Object noOptions = Array.newInstance(optionClass, 0);
        return (MethodHandle) linkerClass.getMethod("downcallHandle", segmentClass, descriptorClass, noOptions.getClass())
                .invoke(linker, symbol.get(), descriptor, noOptions);
    }

    private static boolean skipped(String why) {
        LOG.log(System.Logger.Level.DEBUG, "{0}: timer slack left as it is: {1}", Thread.currentThread().getName(), why);
        return false;
    }
}
