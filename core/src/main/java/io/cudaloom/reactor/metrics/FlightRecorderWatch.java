package io.cudaloom.reactor.metrics;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import jdk.jfr.FlightRecorder;

/**
 * Adds the open devices' periodic JFR hooks once Flight Recorder is initialized, without loading
 * anything of JFR before: no {@code FlightRecorderListener} (registering one loads JFR's recorder
 * classes), only {@link FlightRecorder#isInitialized()} (one class, one static field). A device
 * that opens while Flight Recorder is initialized adds its hook at once ({@link #opened}); the
 * others are hooked by the first await, on any device, that finds it initialized
 * ({@link #recorderUp}, from {@link LatencyRecorder#beginAwait}).
 *
 * <p>No open device is left without its hook once Flight Recorder is initialized: the hooks of the
 * open devices ({@link #OPEN}) and whether they were added ({@link #hooksUp}) change under the one
 * monitor of {@link #OPEN}. {@link #opened} adds a device's hook and reads {@code hooksUp} in one
 * section; {@link #recorderUp} sets it and copies the set in one section. Whichever section comes
 * first, the device is hooked: by the copy if it was in the set, else by itself, having read
 * {@code hooksUp} true. The hooks run outside the monitor (adding one takes JFR's locks).
 */
final class FlightRecorderWatch {
    /**
     * What adds each open device's hook (its {@code Monitoring}: strongly, which holds its
     * reactor weakly); guarded by itself.
     */
    private static final Set<Runnable> OPEN = new HashSet<>();
    /**
     * Whether the open devices' hooks were added, Flight Recorder having been seen initialized;
     * written under {@link #OPEN}'s monitor, read without it by every await that finds Flight
     * Recorder initialized (then true for good: Flight Recorder is never uninitialized).
     */
    private static volatile boolean hooksUp;

    private FlightRecorderWatch() {}

    /** A device opened: runs {@code addHook} now if Flight Recorder is initialized, else once it is. */
    static void opened(Runnable addHook) {
        boolean up;
        synchronized (OPEN) {
            OPEN.add(addHook);
            up = hooksUp;
        }
        if (up || FlightRecorder.isInitialized()) {
            addHook.run();
        }
    }

    /** A device closed: its hook is not added any more (the device removes one it added). */
    static void closed(Runnable addHook) {
        synchronized (OPEN) {
            OPEN.remove(addHook);
        }
    }

    /**
     * Flight Recorder was found initialized: the first call adds every open device's hook (a
     * volatile read on later ones). Only from a thread that may block (an await): adding a hook
     * takes JFR's locks, so not from the scanner or a host callback.
     */
    static void recorderUp() {
        if (hooksUp) {
            return;
        }
        List<Runnable> open;
        synchronized (OPEN) {
            if (hooksUp) {
                return;
            }
            hooksUp = true;
            open = List.copyOf(OPEN);
        }
        for (Runnable addHook : open) {
            addHook.run();
        }
    }
}
