package io.cudaloom;

import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;
import java.util.Objects;
import java.util.function.Supplier;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.StandardMBean;
import jdk.jfr.FlightRecorder;
import jdk.jfr.FlightRecorderListener;
import org.jspecify.annotations.Nullable;

/**
 * What a reactor publishes for operators while it is open: its {@link ReactorMXBean} (and the
 * {@link ReactorInternalsMXBean} beside it) on the platform MBean server (unless {@link ReactorConfig#jmx()} is off) and its hook for the periodic
 * JFR event {@link ReactorCountersEvent}. Both are installed when the reactor opens and removed
 * when it closes (the counters event is emitted once more as the close begins, with the final
 * counters), so a closed device leaves no hook, listener or MBean holding on to it.
 *
 * <p>The JFR hook waits for Flight Recorder: a {@link FlightRecorderListener} adds it once JFR is
 * initialized (at once if it already is), so a JVM that never records does not pay for
 * initializing JFR's metadata (about 0.1 s) when it opens a device.
 *
 * <p>Monitoring never stops a device from opening or closing: a failure is logged and ignored.
 *
 * <p>Thread safety: {@link #open} (the constructing thread, last thing in the constructor),
 * {@link #close} (whoever finishes the shutdown: the closing thread, or the scanner when it was
 * closed from its own thread or stopped by an Error, possibly before the constructor returned)
 * and {@link #addHook} (the thread that initializes Flight Recorder) may race. The flags are
 * guarded by this object's monitor, but no JFR method is called while holding it: JFR calls
 * {@code recorderInitialized} while holding its own lock, and {@code addListener} takes that lock,
 * so calling it under this monitor could deadlock. Instead each side sets its flag under the
 * monitor, makes its JFR call outside, and the adding side looks at {@code closed} again after
 * adding and undoes what it added if a close came in between; so whatever the interleaving, a
 * closed reactor keeps neither its listener nor its hook.
 */
final class ReactorObservability {
    private static final System.Logger LOG = System.getLogger("io.cudaloom");
    static final String DOMAIN = "io.cudaloom";

    /**
     * Weak: the MBean server and JFR's hook list are GC roots, and what they hold must not keep a
     * device its user dropped without closing reachable (see {@link UnclosedDeviceReport}).
     */
    private final WeakReference<CompletionReactor> reactor;
    private final String deviceName;
    private final boolean jmx;
    private final int id;
    private final Supplier<MBeanServer> mbeanServer;
    private final Runnable countersHook;
    private final FlightRecorderListener whenRecorderUp = new FlightRecorderListener() {
        @Override
        public void recorderInitialized(FlightRecorder recorder) {
            addHook();
        }
    };
    private boolean listening; // guarded by this
    private boolean hookAdded; // guarded by this
    private @Nullable ObjectName mbeanName; // guarded by this
    private @Nullable ObjectName internalsName; // guarded by this
    private boolean closed; // guarded by this

    ReactorObservability(CompletionReactor reactor, int id) {
        this(reactor, id, ManagementFactory::getPlatformMBeanServer);
    }

    /** With another MBean server than the platform's (tests: one that refuses). */
    ReactorObservability(CompletionReactor reactor, int id, Supplier<MBeanServer> mbeanServer) {
        this.reactor = new WeakReference<>(reactor);
        this.deviceName = reactor.device().name();
        this.jmx = reactor.config().jmx();
        this.id = id;
        this.mbeanServer = mbeanServer;
        WeakReference<CompletionReactor> weak = this.reactor;
        this.countersHook = () -> {
            CompletionReactor r = weak.get();
            if (r != null) {
                ReactorEvents.counters(r);
            }
        };
    }

    /** The ObjectName this reactor's MXBean would have if its device's name were free. */
    static ObjectName objectName(String deviceName) throws JMException {
        return new ObjectName(DOMAIN + ":type=GpuDevice,name=" + ObjectName.quote(deviceName));
    }

    /** The ObjectName of the {@link ReactorInternalsMXBean} beside the MXBean named {@code operator}. */
    static ObjectName internalsName(ObjectName operator) throws JMException {
        return new ObjectName(DOMAIN + ":type=GpuDeviceInternals,name=" + operator.getKeyProperty("name"));
    }

    void open() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (jmx) {
                mbeanName = registerMBean();
                internalsName = mbeanName == null ? null : registerInternals(mbeanName);
            }
            listening = true;
        }
        try {
            FlightRecorder.addListener(whenRecorderUp); // calls addHook now if JFR is initialized
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: no periodic JFR counters for "
                    + deviceName + ": " + e, e);
        }
        if (isClosed()) {
            FlightRecorder.removeListener(whenRecorderUp); // closed meanwhile: close may have missed it
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
            FlightRecorder.addPeriodicEvent(ReactorCountersEvent.class, countersHook);
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
    synchronized boolean hookAdded() {
        return hookAdded;
    }

    private @Nullable ObjectName registerMBean() {
        String device = deviceName;
        try {
            MBeanServer server = mbeanServer.get();
            StandardMBean bean = new StandardMBean(new Bean(reactor, device), ReactorMXBean.class, true);
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
            StandardMBean bean = new StandardMBean(new Internals(reactor, deviceName), ReactorInternalsMXBean.class, true);
            return mbeanServer.get().registerMBean(bean, internalsName(operator)).getObjectName();
        } catch (JMException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: the internals MXBean of " + deviceName
                    + " was not registered (the device works without it): " + e, e);
            return null;
        }
    }

    /**
     * Emits the counters event once more, as {@link CompletionReactor#close()} begins: the totals
     * of a run shorter than a period, taken before the shutdown holds back the free slots.
     */
    void closing() {
        if (FlightRecorder.isInitialized()) { // else no recording runs
            try {
                countersHook.run();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: the final JFR counters failed: " + e, e);
            }
        }
    }

    /** Removes the listener, the hook and the MXBean; idempotent (also the cleaning of an unclosed device). */
    void close() {
        boolean stopListening;
        boolean removeHook;
        ObjectName name;
        ObjectName internals;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            stopListening = listening;
            listening = false;
            removeHook = hookAdded;
            hookAdded = false;
            name = mbeanName;
            mbeanName = null;
            internals = internalsName;
            internalsName = null;
        }
        try {
            if (stopListening) {
                FlightRecorder.removeListener(whenRecorderUp);
            }
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
    synchronized @Nullable ObjectName mbeanName() {
        return mbeanName;
    }

    /** The registered internals MXBean's name, or null. */
    synchronized @Nullable ObjectName internalsName() {
        return internalsName;
    }

    /** The periodic JFR hook (for tests: once closed, removing it again must find nothing). */
    Runnable countersHook() {
        return countersHook;
    }

    /** The MXBean: every attribute from a fresh snapshot. */
    private static final class Bean implements ReactorMXBean {
        private final WeakReference<CompletionReactor> ref;
        private final String deviceName;

        Bean(WeakReference<CompletionReactor> ref, String deviceName) {
            this.ref = Objects.requireNonNull(ref);
            this.deviceName = deviceName;
        }

        /** The stats of a live reactor; a collected one (never closed) was unregistered by its cleaning, or is about to be. */
        private ReactorStats stats() {
            CompletionReactor r = ref.get();
            if (r == null) {
                throw new IllegalStateException(deviceName + " was garbage-collected without being closed");
            }
            return r.stats();
        }

        @Override public String getDeviceName() { return deviceName; }
        @Override public String getStrategy() {
            CompletionReactor r = ref.get();
            return r == null ? "collected" : r.config().strategy().name();
        }
        @Override public int getCapacity() { return stats().capacity(); }
        @Override public long getArmedNow() { return stats().armedNow(); }
        @Override public int getFreeSlots() { return stats().freeSlots(); }
        @Override public int getQuarantined() { return stats().quarantined(); }
        @Override public long getRegistrations() { return stats().registrations(); }
        @Override public long getCompletions() { return stats().completions(); }

        private AwaitLatency latency() {
            CompletionReactor r = ref.get();
            if (r == null) {
                throw new IllegalStateException(deviceName + " was garbage-collected without being closed");
            }
            return r.awaitLatency();
        }

        @Override public long getImmediate() { return stats().immediate(); }
        @Override public long getFallbacks() { return stats().fallbacks(); }
        @Override public long getAbandoned() { return stats().abandoned(); }
        @Override public long getFaults() { return stats().faults(); }
        @Override public long getTimeouts() { return stats().timeouts(); }
        @Override public int getWaitersNow() { return stats().waitersNow(); }
        @Override public long getWorkInFlight() { return stats().workInFlight(); }
        @Override public long getAdmissionWaits() { return stats().admissionWaits(); }
        @Override public long getAdmissionWaitNanos() { return stats().admissionWaitNanos(); }
        @Override public long getScannerErrors() { return stats().scannerErrors(); }
        @Override public long getAwaitCount() { return latency().count(); }
        @Override public long getAwaitP50Nanos() { return latency().p50Nanos(); }
        @Override public long getAwaitP90Nanos() { return latency().p90Nanos(); }
        @Override public long getAwaitP99Nanos() { return latency().p99Nanos(); }
        @Override public long getAwaitP999Nanos() { return latency().p999Nanos(); }
        @Override public long getAwaitMaxNanos() { return latency().maxNanos(); }
        @Override public double getAwaitMeanNanos() { return latency().meanNanos(); }
        @Override public long getAwaitRecentP99Nanos() { return latency().recentP99Nanos(); }
        @Override public long getSlowAwaitThresholdNanos() { return latency().slowAwaitThresholdNanos(); }
    }

    /** The internals MXBean: every attribute from a fresh snapshot. */
    private static final class Internals implements ReactorInternalsMXBean {
        private final WeakReference<CompletionReactor> ref;
        private final String deviceName;

        Internals(WeakReference<CompletionReactor> ref, String deviceName) {
            this.ref = Objects.requireNonNull(ref);
            this.deviceName = deviceName;
        }

        private ReactorStats.Internals internals() {
            CompletionReactor r = ref.get();
            if (r == null) {
                throw new IllegalStateException(deviceName + " was garbage-collected without being closed");
            }
            return r.stats().internals();
        }

        @Override public String getDeviceName() { return deviceName; }
        @Override public long getInlineCompletions() { return internals().inlineCompletions(); }
        @Override public long getCoalesced() { return internals().coalesced(); }
        @Override public long getFlagWrites() { return internals().flagWrites(); }
        @Override public long getTrackers() { return internals().trackers(); }
        @Override public long getScannerParks() { return internals().scannerParks(); }
        @Override public long getScannerTimedParks() { return internals().scannerTimedParks(); }
        @Override public long getScannerUnparks() { return internals().scannerUnparks(); }
        @Override public long getScanPasses() { return internals().scanPasses(); }
        @Override public long getFaultProbes() { return internals().faultProbes(); }
        @Override public long getScannerCpuNanos() { return internals().scannerCpuNanos(); }
    }
}
