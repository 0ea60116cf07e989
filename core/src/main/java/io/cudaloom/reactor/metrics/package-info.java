/**
 * What the reactor counts and shows: its counters (Counter declares each one once;
 * SharedCounters holds the multi-writer ones, CounterSnapshot a reading of all), the await
 * latency (LatencyRecorder, its LatencySnapshot, and the listeners it calls with an AwaitOutcome),
 * the JDK Flight Recorder events (JfrEvents emits them, each allocation-free while disabled;
 * SlowAwaitEvent, FallbackEvent, DeviceFaultEvent, CountersEvent; FlightRecorderWatch adds the
 * periodic hooks once Flight Recorder is initialized) and the MXBeans with the periodic hook
 * (Monitoring). Not API (the module does not export it). The bottom of the reactor: it names no
 * other part (PackageDependencyTest); the parts report through it, and the facade
 * ({@code io.cudaloom.CompletionReactor}) turns its values into the API's ({@code ReactorStats},
 * {@code AwaitLatency}, {@code AwaitListener}). The reactor's overview is
 * {@code io.cudaloom.reactor}'s package-info.
 */
@NullMarked
package io.cudaloom.reactor.metrics;

import org.jspecify.annotations.NullMarked;
