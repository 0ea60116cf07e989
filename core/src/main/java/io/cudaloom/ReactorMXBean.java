package io.cudaloom;

/**
 * The management interface of an open {@link GpuDevice}'s completion reactor, for operators: the
 * operator metrics of {@link ReactorStats}, by the same names, and the await-latency distribution
 * ({@link AwaitLatency}) as {@code Await*} attributes, all read-only. The reactor's internals (the
 * scanner's parks and passes, fault probes, flag writes...) are a second MXBean beside it,
 * {@link ReactorInternalsMXBean}, under {@code io.cudaloom:type=GpuDeviceInternals,name=<the same name>}.
 *
 * <p>Each reactor registers one with the platform MBean server when its device opens, under
 * {@code io.cudaloom:type=GpuDevice,name="<device name>"} (the name quoted with
 * {@link javax.management.ObjectName#quote}; a name already registered by another open device
 * gets {@code " #<n>"} appended, n being the reactor's number), and unregisters it when the device
 * closes. {@link ReactorConfig.Builder#jmx(boolean)} turns this off. A registration that fails is
 * logged (System.Logger {@code io.cudaloom}) and the device opens anyway.
 *
 * <p>Each attribute is read from a fresh {@link CompletionReactor#stats()} (or
 * {@link CompletionReactor#awaitLatency()}) snapshot, so two attributes read one after the other
 * may belong to different instants.
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

    /** {@link ReactorStats#immediate()}. */
    long getImmediate();

    /** {@link ReactorStats#fallbacks()}. */
    long getFallbacks();

    /** {@link ReactorStats#abandoned()}. */
    long getAbandoned();

    /** {@link ReactorStats#faults()}. */
    long getFaults();

    /** {@link ReactorStats#timeouts()}. */
    long getTimeouts();

    /** {@link ReactorStats#waitersNow()}. */
    int getWaitersNow();

    /** {@link ReactorStats#workInFlight()}. */
    long getWorkInFlight();

    /** {@link ReactorStats#admissionWaits()}. */
    long getAdmissionWaits();

    /** {@link ReactorStats#admissionWaitNanos()}. */
    long getAdmissionWaitNanos();

    /** {@link ReactorStats#scannerErrors()}. */
    long getScannerErrors();

    /** {@link ReactorStats#callbackErrors()}. */
    long getCallbackErrors();

    /** {@link AwaitLatency#count()}: awaits in the latency distribution. */
    long getAwaitCount();

    /** {@link AwaitLatency#p50Nanos()}. */
    long getAwaitP50Nanos();

    /** {@link AwaitLatency#p90Nanos()}. */
    long getAwaitP90Nanos();

    /** {@link AwaitLatency#p99Nanos()}. */
    long getAwaitP99Nanos();

    /** {@link AwaitLatency#p999Nanos()}. */
    long getAwaitP999Nanos();

    /** {@link AwaitLatency#maxNanos()}. */
    long getAwaitMaxNanos();

    /** {@link AwaitLatency#meanNanos()}. */
    double getAwaitMeanNanos();

    /** {@link AwaitLatency#recentP99Nanos()}: the p99 of the last 10 to 20 s. */
    long getAwaitRecentP99Nanos();

    /** {@link AwaitLatency#slowAwaitThresholdNanos()}: the relative SlowAwait threshold now. */
    long getSlowAwaitThresholdNanos();
}
