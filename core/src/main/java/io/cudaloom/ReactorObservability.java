package io.cudaloom;

import java.lang.management.ManagementFactory;
import java.util.Objects;
import java.util.function.Supplier;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.StandardMBean;
import jdk.jfr.FlightRecorder;
import org.jspecify.annotations.Nullable;

/**
 * What a reactor publishes for operators while it is open: its {@link ReactorMXBean} on the
 * platform MBean server (unless {@link ReactorConfig#jmx()} is off) and its hook for the periodic
 * JFR event {@link ReactorCountersEvent}. Both are installed when the reactor opens and removed
 * when it closes (the hook's event is emitted once more as the close begins, with the final
 * counters), so a closed device leaves no hook or MBean holding on to it.
 *
 * <p>Monitoring never stops a device from opening or closing: a failure is logged and ignored.
 *
 * <p>Thread safety: {@link #open} (the constructing thread, last thing in the constructor) and
 * {@link #close} (whoever finishes the shutdown: the closing thread, or the scanner when it was
 * closed from its own thread or stopped by an Error, possibly before the constructor returned)
 * may race, so both hold this object's monitor, and a close that comes first makes the open
 * install nothing.
 */
final class ReactorObservability {
    private static final System.Logger LOG = System.getLogger("io.cudaloom");
    static final String DOMAIN = "io.cudaloom";

    private final CompletionReactor reactor;
    private final int id;
    private final Supplier<MBeanServer> mbeanServer;
    private final Runnable countersHook;
    private boolean hookAdded; // guarded by this
    private @Nullable ObjectName mbeanName; // guarded by this
    private boolean closed; // guarded by this

    ReactorObservability(CompletionReactor reactor, int id) {
        this(reactor, id, ManagementFactory::getPlatformMBeanServer);
    }

    /** With another MBean server than the platform's (tests: one that refuses). */
    ReactorObservability(CompletionReactor reactor, int id, Supplier<MBeanServer> mbeanServer) {
        this.reactor = reactor;
        this.id = id;
        this.mbeanServer = mbeanServer;
        this.countersHook = () -> ReactorEvents.counters(reactor);
    }

    /** The ObjectName this reactor's MXBean would have if its device's name were free. */
    static ObjectName objectName(String deviceName) throws JMException {
        return new ObjectName(DOMAIN + ":type=GpuDevice,name=" + ObjectName.quote(deviceName));
    }

    synchronized void open() {
        if (closed) {
            return;
        }
        try {
            FlightRecorder.addPeriodicEvent(ReactorCountersEvent.class, countersHook);
            hookAdded = true;
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: no periodic JFR counters for "
                    + reactor.device().name() + ": " + e, e);
        }
        if (reactor.config().jmx()) {
            mbeanName = registerMBean();
        }
    }

    private @Nullable ObjectName registerMBean() {
        String device = reactor.device().name();
        try {
            MBeanServer server = mbeanServer.get();
            StandardMBean bean = new StandardMBean(new Bean(reactor), ReactorMXBean.class, true);
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

    /**
     * Emits the counters event once more, as {@link CompletionReactor#close()} begins: the totals
     * of a run shorter than a period, taken before the shutdown holds back the free slots.
     */
    synchronized void closing() {
        if (hookAdded) {
            try {
                ReactorEvents.counters(reactor);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: the final JFR counters failed: " + e, e);
            }
        }
    }

    /** Removes the hook and the MXBean; idempotent. */
    synchronized void close() {
        closed = true;
        if (hookAdded) {
            hookAdded = false;
            try {
                FlightRecorder.removePeriodicEvent(countersHook);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: removing the periodic JFR hook failed: " + e, e);
            }
        }
        ObjectName name = mbeanName;
        if (name != null) {
            mbeanName = null;
            try {
                mbeanServer.get().unregisterMBean(name);
            } catch (JMException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: unregistering " + name + " failed: " + e, e);
            }
        }
    }

    /** The registered MXBean's name, or null (not registered, or closed). */
    synchronized @Nullable ObjectName mbeanName() {
        return mbeanName;
    }

    /** The periodic JFR hook (for tests: once closed, removing it again must find nothing). */
    Runnable countersHook() {
        return countersHook;
    }

    /** The MXBean: every attribute from a fresh snapshot. */
    private static final class Bean implements ReactorMXBean {
        private final CompletionReactor reactor;

        Bean(CompletionReactor reactor) {
            this.reactor = Objects.requireNonNull(reactor);
        }

        @Override public String getDeviceName() { return reactor.device().name(); }
        @Override public String getStrategy() { return reactor.config().strategy().name(); }
        @Override public int getCapacity() { return reactor.stats().capacity(); }
        @Override public long getArmedNow() { return reactor.stats().armedNow(); }
        @Override public int getFreeSlots() { return reactor.stats().freeSlots(); }
        @Override public int getQuarantined() { return reactor.stats().quarantined(); }
        @Override public long getRegistrations() { return reactor.stats().registrations(); }
        @Override public long getCompletions() { return reactor.stats().completions(); }
        @Override public long getInlineCompletions() { return reactor.stats().inlineCompletions(); }
        @Override public long getImmediate() { return reactor.stats().immediate(); }
        @Override public long getFallbacks() { return reactor.stats().fallbacks(); }
        @Override public long getAbandoned() { return reactor.stats().abandoned(); }
        @Override public long getFaults() { return reactor.stats().faults(); }
        @Override public long getCoalesced() { return reactor.stats().coalesced(); }
        @Override public long getScannerParks() { return reactor.stats().scannerParks(); }
        @Override public long getScannerTimedParks() { return reactor.stats().scannerTimedParks(); }
        @Override public long getScannerUnparks() { return reactor.stats().scannerUnparks(); }
        @Override public long getScanPasses() { return reactor.stats().scanPasses(); }
        @Override public long getFaultProbes() { return reactor.stats().faultProbes(); }
        @Override public long getScannerErrors() { return reactor.stats().scannerErrors(); }
        @Override public long getScannerCpuNanos() { return reactor.stats().scannerCpuNanos(); }
    }
}
