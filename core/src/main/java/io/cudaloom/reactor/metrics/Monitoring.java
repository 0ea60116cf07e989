package io.cudaloom.reactor.metrics;

import io.cudaloom.ReactorConfig;
import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.StandardMBean;
import jdk.jfr.FlightRecorder;
import org.jspecify.annotations.Nullable;

/**
 * What a reactor publishes for operators while it is open: its {@link io.cudaloom.ReactorMXBean} (and the
 * {@link io.cudaloom.ReactorInternalsMXBean} beside it) on the platform MBean server (unless {@link ReactorConfig#jmx()} is off) and its hook for the periodic
 * JFR event {@link CountersEvent}. Both are installed when the reactor opens and removed
 * when it closes (the counters event is emitted once more as the close begins, with the final
 * counters), so a closed device leaves no hook or MBean holding on to it.
 *
 * <p>The JFR hook waits for Flight Recorder, and nothing of JFR is loaded for it before: a JVM that
 * never records loads one class of {@code jdk.jfr} for the library ({@link FlightRecorder}, to ask
 * whether it is initialized: one static field) and initializes nothing of JFR (its metadata: about
 * 0.1 s; a {@code FlightRecorderListener} alone loads its recorder's classes). The hook is added
 * when the device opens if Flight Recorder is initialized then, else by the first await, on any
 * device, that finds it initialized ({@link FlightRecorderWatch}; a recording started with
 * {@code jcmd JFR.start} on a JVM whose devices then never await gets no counters event until one
 * does).
 *
 * <p>Monitoring never stops a device from opening or closing: a failure is logged and ignored.
 *
 * <p>Thread safety: {@link #open} (the constructing thread, last thing in the constructor),
 * {@link #close} (whoever finishes the shutdown: the closing thread, or the scanner when it was
 * closed from its own thread or stopped by an Error, possibly before the constructor returned)
 * and {@link #addHook} (the opening thread, or the awaiting thread that first saw Flight Recorder
 * initialized) may race. The flags are guarded by this object's monitor, but no JFR method is
 * called while holding it (JFR takes locks of its own, and runs the hook while holding one): each
 * side sets its flag under the monitor, makes its JFR call outside, and the adding side looks at
 * {@code closed} again after adding and undoes what it added if a close came in between; so
 * whatever the interleaving, a closed reactor keeps no hook.
 */
public final class Monitoring {
    /**
     * What the MXBeans and the periodic JFR event show of a reactor (the facade,
     * {@code io.cudaloom.CompletionReactor}, implements it, with the public methods of the same
     * names): this part names no facade.
     */
    public interface Observed {
        CounterSnapshot counters();

        LatencySnapshot awaitLatency();

        ReactorConfig config();

        /** The completion strategy's name ({@code config().strategy().name()}): a value, so this part names no strategy type. */
        String strategy();
    }

    /**
     * The MXBean interfaces this part implements, by proxy ({@link #mbean}): the API's
     * {@link io.cudaloom.ReactorMXBean} and {@link io.cudaloom.ReactorInternalsMXBean}, handed in by
     * the facade as values, so that this part names neither. Each getter is answered by name
     * (a counter of the group, or one of {@code Attributes.OTHERS}).
     */
    public record MXBeanTypes(Class<?> operator, Class<?> internals) {}

    private static final System.Logger LOG = System.getLogger("io.cudaloom");
    static final String DOMAIN = "io.cudaloom";

    /**
     * Weak: the MBean server and JFR's hook list are GC roots, and what they hold must not keep a
     * device its user dropped without closing reachable (see {@link io.cudaloom.reactor.lifecycle.UnclosedDeviceReport}).
     */
    private final WeakReference<Observed> reactor;
    private final String deviceName;
    private final boolean jmx;
    private final int id;
    private final Supplier<MBeanServer> mbeanServer;
    private final MXBeanTypes types;
    private final Runnable countersHook;
    /** What {@link FlightRecorderWatch} runs to add the hook; one object, so that it can be removed. */
    private final Runnable hookAdder = this::addHook;
    private boolean hookAdded; // guarded by this
    private @Nullable ObjectName mbeanName; // guarded by this
    private @Nullable ObjectName internalsName; // guarded by this
    private boolean closed; // guarded by this

    public Monitoring(Observed reactor, String deviceName, int id, MXBeanTypes types) {
        this(reactor, deviceName, id, types, ManagementFactory::getPlatformMBeanServer);
    }

    /** With another MBean server than the platform's (tests: one that refuses). */
    public Monitoring(Observed reactor, String deviceName, int id, MXBeanTypes types, Supplier<MBeanServer> mbeanServer) {
        this.types = Objects.requireNonNull(types, "types");
        this.reactor = new WeakReference<>(reactor);
        this.deviceName = deviceName;
        this.jmx = reactor.config().jmx();
        this.id = id;
        this.mbeanServer = mbeanServer;
        WeakReference<Observed> weak = this.reactor;
        String name = this.deviceName; // captured alone: the hook holds nothing of this reactor strongly
        this.countersHook = () -> {
            Observed r = weak.get();
            if (r != null) {
                JfrEvents.counters(name, r::counters, r::awaitLatency);
            }
        };
    }

    /** The ObjectName this reactor's MXBean would have if its device's name were free. */
    public static ObjectName objectName(String deviceName) throws JMException {
        return new ObjectName(DOMAIN + ":type=GpuDevice,name=" + ObjectName.quote(deviceName));
    }

    /** The ObjectName of the {@link io.cudaloom.ReactorInternalsMXBean} beside the MXBean named {@code operator}. */
    public static ObjectName internalsName(ObjectName operator) throws JMException {
        return new ObjectName(DOMAIN + ":type=GpuDeviceInternals,name=" + operator.getKeyProperty("name"));
    }

    public void open() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (jmx) {
                mbeanName = registerMBean();
                internalsName = mbeanName == null ? null : registerInternals(mbeanName);
            }
        }
        FlightRecorderWatch.opened(hookAdder); // adds the hook now, or once Flight Recorder is initialized
        if (isClosed()) {
            FlightRecorderWatch.closed(hookAdder); // closed meanwhile: close may have run before the add
        }
    }

    /** Adds the periodic hook, once, unless closed (see the class comment for the races). */
    private void addHook() {
        synchronized (this) {
            if (closed || hookAdded) {
                return;
            }
            hookAdded = true;
        }
        try {
            FlightRecorder.addPeriodicEvent(CountersEvent.class, countersHook);
        } catch (RuntimeException e) {
            synchronized (this) {
                hookAdded = false;
            }
            LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: no periodic JFR counters for "
                    + deviceName + ": " + e, e);
            return;
        }
        if (isClosed()) {
            FlightRecorder.removePeriodicEvent(countersHook); // closed meanwhile: close may have missed it
        }
    }

    private synchronized boolean isClosed() {
        return closed;
    }

    /** Whether the periodic hook is in JFR's list (or being added) now (for tests). */
    public synchronized boolean hookAdded() {
        return hookAdded;
    }

    private @Nullable ObjectName registerMBean() {
        String device = deviceName;
        try {
            MBeanServer server = mbeanServer.get();
            StandardMBean bean = mbean(types.operator(), Counter.Group.OPERATOR, reactor, device);
            try {
                return server.registerMBean(bean, objectName(device)).getObjectName();
            } catch (InstanceAlreadyExistsException taken) { // another open device of that name
                return server.registerMBean(bean, objectName(device + " #" + id)).getObjectName();
            }
        } catch (JMException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: the MXBean of " + device
                    + " was not registered (the device works without it): " + e, e);
            return null;
        }
    }

    private @Nullable ObjectName registerInternals(ObjectName operator) {
        try {
            StandardMBean bean = mbean(types.internals(), Counter.Group.INTERNAL, reactor, deviceName);
            return mbeanServer.get().registerMBean(bean, internalsName(operator)).getObjectName();
        } catch (JMException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: the internals MXBean of " + deviceName
                    + " was not registered (the device works without it): " + e, e);
            return null;
        }
    }

    /**
     * Emits the counters event once more, as the reactor's close begins: the totals
     * of a run shorter than a period, taken before the shutdown holds back the free slots.
     */
    public void closing() {
        if (FlightRecorder.isInitialized()) { // else no recording runs
            try {
                countersHook.run();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: the final JFR counters failed: " + e, e);
            }
        }
    }

    /** Removes the hook and the MXBean; idempotent (also the cleaning of an unclosed device). */
    public void close() {
        boolean removeHook;
        ObjectName name;
        ObjectName internals;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            removeHook = hookAdded;
            hookAdded = false;
            name = mbeanName;
            mbeanName = null;
            internals = internalsName;
            internalsName = null;
        }
        FlightRecorderWatch.closed(hookAdder);
        try {
            if (removeHook) {
                FlightRecorder.removePeriodicEvent(countersHook);
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: removing the periodic JFR hook failed: " + e, e);
        }
        for (ObjectName n : new @Nullable ObjectName[] {name, internals}) {
            if (n != null) {
                try {
                    mbeanServer.get().unregisterMBean(n);
                } catch (JMException | RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: unregistering " + n + " failed: " + e, e);
                }
            }
        }
    }

    /** The registered MXBean's name, or null (not registered, or closed). */
    public synchronized @Nullable ObjectName mbeanName() {
        return mbeanName;
    }

    /** The registered internals MXBean's name, or null. */
    public synchronized @Nullable ObjectName internalsName() {
        return internalsName;
    }

    /** The periodic JFR hook (for tests: once closed, removing it again must find nothing). */
    public Runnable countersHook() {
        return countersHook;
    }

    /**
     * The MXBean of {@code type} ({@link io.cudaloom.ReactorMXBean} for the {@link Counter.Group#OPERATOR}
     * counters, {@link io.cudaloom.ReactorInternalsMXBean} for the {@link Counter.Group#INTERNAL} ones), each
     * attribute from a fresh snapshot, with the counter's {@link Counter#description} as the
     * attribute's description.
     */
    private static <T> StandardMBean mbean(Class<T> type, Counter.Group group, WeakReference<Observed> ref,
            String deviceName) {
        T attributes = type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
                new Attributes(type, group, ref, deviceName)));
        return new StandardMBean(attributes, type, true) {
            @Override
            protected String getDescription(MBeanAttributeInfo info) {
                Counter c = Counter.ofAttribute(info.getName());
                return c != null ? c.description : super.getDescription(info);
            }
        };
    }

    /**
     * What the MXBeans' getters answer. A getter named after a counter of the bean's group
     * ({@code get} + {@link Counter#attribute()}) answers that counter of {@link Observed#counters()};
     * {@code getDeviceName}, {@code getStrategy} and the {@code Await*} attributes
     * ({@link Observed#awaitLatency()}) are answered here by name. Each getter of the
     * interface is resolved once, when the bean is made: one that is neither fails the
     * registration (and CounterSurfacesTest), so a counter's getter needs no code here.
     */
    private static final class Attributes implements InvocationHandler {
        /** The attributes that are no counter, by getter name. */
        private static final Map<String, Function<Observed, Object>> OTHERS = Map.ofEntries(
                Map.entry("getStrategy", Observed::strategy),
                Map.entry("getAwaitCount", r -> r.awaitLatency().count()),
                Map.entry("getAwaitP50Nanos", r -> r.awaitLatency().p50Nanos()),
                Map.entry("getAwaitP90Nanos", r -> r.awaitLatency().p90Nanos()),
                Map.entry("getAwaitP99Nanos", r -> r.awaitLatency().p99Nanos()),
                Map.entry("getAwaitP999Nanos", r -> r.awaitLatency().p999Nanos()),
                Map.entry("getAwaitMaxNanos", r -> r.awaitLatency().maxNanos()),
                Map.entry("getAwaitMeanNanos", r -> r.awaitLatency().meanNanos()),
                Map.entry("getAwaitRecentP99Nanos", r -> r.awaitLatency().recentP99Nanos()),
                Map.entry("getSlowAwaitThresholdNanos", r -> r.awaitLatency().slowAwaitThresholdNanos()));

        private final WeakReference<Observed> ref;
        private final String deviceName;
        /** Every getter of the interface but getDeviceName, and how it is answered. */
        private final Map<Method, Function<Observed, Object>> getters = new HashMap<>();

        Attributes(Class<?> type, Counter.Group group, WeakReference<Observed> ref, String deviceName) {
            this.ref = Objects.requireNonNull(ref);
            this.deviceName = deviceName;
            for (Method m : type.getMethods()) {
                String name = m.getName();
                if (name.equals("getDeviceName")) {
                    continue;
                }
                Counter c = name.startsWith("get") ? Counter.ofAttribute(name.substring(3)) : null;
                Function<Observed, Object> answer;
                if (c != null && c.group == group) {
                    answer = c.type == Counter.Type.INT ? r -> (int) r.counters().get(c) : r -> r.counters().get(c);
                } else {
                    answer = OTHERS.get(name);
                }
                if (answer == null) {
                    throw new IllegalStateException(type.getSimpleName() + "." + name
                            + " is neither a counter of the " + group + " group nor an attribute Monitoring knows");
                }
                getters.put(m, answer);
            }
        }

        @Override
        public Object invoke(Object proxy, Method method, Object @Nullable [] args) {
            String name = method.getName();
            if (method.getDeclaringClass() == Object.class) {
                return switch (name) {
                    case "equals" -> args != null && proxy == args[0];
                    case "hashCode" -> System.identityHashCode(proxy);
                    default -> "MXBean of " + deviceName;
                };
            }
            if (name.equals("getDeviceName")) {
                return deviceName;
            }
            Observed r = ref.get();
            if (r == null) {
                // a collected reactor (never closed) was unregistered by its cleaning, or is about to be
                if (name.equals("getStrategy")) {
                    return "collected";
                }
                throw new IllegalStateException(deviceName + " was garbage-collected without being closed");
            }
            return Objects.requireNonNull(getters.get(method), name).apply(r);
        }
    }
}
