package io.cudaloom.reactor.metrics;

/**
 * How a blocking await ended, as the one blocking wait decides it and hands it to the await
 * listeners ({@link LatencyRecorder#ended}) and to the {@link SlowAwaitEvent}
 * ({@link JfrEvents#eventOutcome}). The reactor's own copy of the public
 * {@link io.cudaloom.AwaitListener.Outcome}, constant for constant and by the same names (the
 * facade maps one to the other by name; {@code FileImportCycleTest} checks the two agree), so that
 * no part imports the listener API. {@link io.cudaloom.AwaitListener.Outcome} documents each.
 */
public enum AwaitOutcome {
    COMPLETED,
    TIMEOUT,
    INTERRUPTED,
    FAULT,
    CLOSED,
    FAILED
}
