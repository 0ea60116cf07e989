package io.cudaloom;

/**
 * The reactor's internals of an open {@link GpuDevice}, beside its {@link ReactorMXBean}: the
 * counters of {@link ReactorStats.Internals}, by the same names, as read-only JMX attributes. They
 * say how the reactor served the awaits (the scanner's parks, passes and CPU, fault probes, inline
 * completions, shared and tracker flag writes): for tuning and bug reports, not for alerts.
 *
 * <p>Registered and unregistered with the device's {@link ReactorMXBean}, under
 * {@code io.cudaloom:type=GpuDeviceInternals,name=<the same quoted name>}. Each attribute is read
 * from a fresh {@link CompletionReactor#stats()} snapshot.
 */
public interface ReactorInternalsMXBean {
    /** The device's name, {@link GpuDevice#name()}. */
    String getDeviceName();

    /** {@link ReactorStats.Internals#inlineCompletions()}. */
    long getInlineCompletions();

    /** {@link ReactorStats.Internals#coalesced()}. */
    long getCoalesced();

    /** {@link ReactorStats.Internals#flagWrites()}. */
    long getFlagWrites();

    /** {@link ReactorStats.Internals#trackers()}. */
    long getTrackers();

    /** {@link ReactorStats.Internals#scannerParks()}. */
    long getScannerParks();

    /** {@link ReactorStats.Internals#scannerTimedParks()}. */
    long getScannerTimedParks();

    /** {@link ReactorStats.Internals#scannerUnparks()}. */
    long getScannerUnparks();

    /** {@link ReactorStats.Internals#scannerMissedWakeups()}. */
    long getScannerMissedWakeups();

    /** {@link ReactorStats.Internals#preWakes()}. */
    long getPreWakes();

    /** {@link ReactorStats.Internals#scanPasses()}. */
    long getScanPasses();

    /** {@link ReactorStats.Internals#faultProbes()}. */
    long getFaultProbes();

    /** {@link ReactorStats.Internals#scannerCpuNanos()}. */
    long getScannerCpuNanos();
}
