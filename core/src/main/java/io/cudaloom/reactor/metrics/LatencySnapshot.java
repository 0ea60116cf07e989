package io.cudaloom.reactor.metrics;

/**
 * The await-latency distribution at one instant, as {@link LatencyRecorder#snapshot()} reads it:
 * the values of the public {@link io.cudaloom.AwaitLatency}, which the facade builds from it (and
 * of the MXBean's {@code Await*} attributes and the counters event's latency fields, which
 * {@link Monitoring} and {@link JfrEvents} read from it). All times in nanoseconds; 0 while no await
 * was recorded.
 */
public record LatencySnapshot(long count, long p50Nanos, long p90Nanos, long p99Nanos, long p999Nanos, long maxNanos,
        double meanNanos, long recentP99Nanos, long slowAwaitThresholdNanos) {
}
