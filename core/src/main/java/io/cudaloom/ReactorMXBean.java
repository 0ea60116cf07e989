package io.cudaloom;

/**
 * The management interface of an open {@link GpuDevice}'s completion reactor: the counters of
 * {@link ReactorStats}, by the same names, as read-only JMX attributes.
 *
 * <p>Each reactor registers one with the platform MBean server when its device opens, under
 * {@code io.cudaloom:type=GpuDevice,name="<device name>"} (the name quoted with
 * {@link javax.management.ObjectName#quote}; a name already registered by another open device
 * gets {@code " #<n>"} appended, n being the reactor's number), and unregisters it when the device
 * closes. {@link ReactorConfig.Builder#jmx(boolean)} turns this off. A registration that fails is
 * logged (System.Logger {@code io.cudaloom}) and the device opens anyway.
 *
 * <p>Each attribute is read from a fresh {@link CompletionReactor#stats()} snapshot, so two
 * attributes read one after the other may belong to different instants.
 */
public interface ReactorMXBean {
    /** The device's name, {@link GpuDevice#name()}. */
    String getDeviceName();

    /** The completion strategy, {@link ReactorConfig#strategy()}. */
    String getStrategy();

    /** {@link ReactorStats#capacity()}. */
    int getCapacity();

    /** {@link ReactorStats#armedNow()}. */
    long getArmedNow();

    /** {@link ReactorStats#freeSlots()}. */
    int getFreeSlots();

    /** {@link ReactorStats#quarantined()}. */
    int getQuarantined();

    /** {@link ReactorStats#registrations()}. */
    long getRegistrations();

    /** {@link ReactorStats#completions()}. */
    long getCompletions();

    /** {@link ReactorStats#inlineCompletions()}. */
    long getInlineCompletions();

    /** {@link ReactorStats#immediate()}. */
    long getImmediate();

    /** {@link ReactorStats#fallbacks()}. */
    long getFallbacks();

    /** {@link ReactorStats#abandoned()}. */
    long getAbandoned();

    /** {@link ReactorStats#faults()}. */
    long getFaults();

    /** {@link ReactorStats#coalesced()}. */
    long getCoalesced();

    /** {@link ReactorStats#flagWrites()}. */
    long getFlagWrites();

    /** {@link ReactorStats#admissionWaits()}. */
    long getAdmissionWaits();

    /** {@link ReactorStats#admissionWaitNanos()}. */
    long getAdmissionWaitNanos();

    /** {@link ReactorStats#trackers()}. */
    long getTrackers();

    /** {@link ReactorStats#scannerParks()}. */
    long getScannerParks();

    /** {@link ReactorStats#scannerTimedParks()}. */
    long getScannerTimedParks();

    /** {@link ReactorStats#scannerUnparks()}. */
    long getScannerUnparks();

    /** {@link ReactorStats#scanPasses()}. */
    long getScanPasses();

    /** {@link ReactorStats#faultProbes()}. */
    long getFaultProbes();

    /** {@link ReactorStats#scannerErrors()}. */
    long getScannerErrors();

    /** {@link ReactorStats#scannerCpuNanos()}. */
    long getScannerCpuNanos();
}
