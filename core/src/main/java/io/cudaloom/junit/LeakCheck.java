package io.cudaloom.junit;

import io.cudaloom.GpuDevice;
import io.cudaloom.ReactorStats;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.sim.SimulatedDevice;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * What a device still holds after a test, and a bounded wait for it to come to rest. Reads the
 * reactor's stats through their accessors only.
 */
final class LeakCheck {
    /** Polls start at 1 ms and back off to this: a passing check costs a few polls at most. */
    private static final long MAX_POLL_NANOS = 20_000_000L;

    private LeakCheck() {}

    /** The device's fault (what and on which stream), or null if it has not faulted. */
    static @Nullable String fault(GpuDevice device) {
        if (device instanceof CudaDevice cuda && cuda.isFaulted()) {
            return Objects.requireNonNullElse(cuda.fault(), "a sticky CUDA error");
        }
        if (device instanceof SimulatedDevice sim && sim.isFaulted()) {
            return Objects.requireNonNullElse(sim.fault(), "a stream fault");
        }
        return null;
    }

    /** Everything the device still holds that it should not, one line each; empty when at rest. */
    static List<String> problems(GpuDevice device) {
        List<String> problems = new ArrayList<>();
        String fault = fault(device);
        if (fault != null) {
            problems.add("the device faulted: " + fault + " (mark a test that faults on purpose @ExpectDeviceFault)");
        }
        ReactorStats s = device.reactor().stats();
        if (s.armedNow() > 0) {
            problems.add(s.armedNow() + " completion slot(s) still armed: an await, future or onComplete callback,"
                    + " or a stream closed with work in flight (its close registers for that work), is still"
                    + " waiting for work that never finished (a stream held by unfinished work, or a waiter left"
                    + " running)");
        }
        if (s.quarantined() > 0) {
            problems.add(s.quarantined() + " completion slot(s) quarantined: a device write into them may still"
                    + " land (a faulted stream not yet settled)");
        }
        if (s.freeSlots() != s.capacity()) {
            problems.add("completion slots back on the free list: " + s.freeSlots() + " of " + s.capacity());
        }
        if (device instanceof CudaDevice cuda && cuda.livePinnedBuffers() > 0) {
            problems.add(cuda.livePinnedBuffers() + " pinned buffer(s) not closed (PinnedBuffer.close())");
        }
        return problems;
    }

    /**
     * Polls {@link #problems} until there are none or {@code timeout} has passed: the scanner
     * recycles a retired slot shortly after the waiter returned, and an abandoned await's slot once
     * its work is done, so a state seen right after a test may be transient. A fault does not
     * heal: it ends the wait at once.
     *
     * @return the problems at the end; empty if the device came to rest
     */
    static List<String> awaitRest(GpuDevice device, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long pause = 1_000_000L;
        while (true) {
            List<String> problems = problems(device);
            if (problems.isEmpty() || fault(device) != null || System.nanoTime() - deadline >= 0) {
                return problems;
            }
            LockSupport.parkNanos(pause);
            pause = Math.min(2 * pause, MAX_POLL_NANOS);
            if (Thread.currentThread().isInterrupted()) {
                problems = new ArrayList<>(problems(device));
                problems.add("the check was interrupted before the device came to rest");
                return problems;
            }
        }
    }

    /**
     * Polls until the closed device's reactor has freed its flag memory, which it does once every
     * slot is accounted for and no device write can land.
     *
     * @return whether it did within {@code timeout}
     */
    static boolean awaitReleased(GpuDevice device, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long pause = 1_000_000L;
        while (!device.reactor().isMemoryReleased()) {
            if (System.nanoTime() - deadline >= 0 || Thread.currentThread().isInterrupted()) {
                return false;
            }
            LockSupport.parkNanos(pause);
            pause = Math.min(2 * pause, MAX_POLL_NANOS);
        }
        return true;
    }

    /** The failure message: who, which device, for how long, what, and the reactor's counters. */
    static String report(String who, GpuDevice device, List<String> problems, Duration timeout) {
        StringBuilder b = new StringBuilder();
        b.append(who).append(" left ").append(device.name()).append(" not at rest (checked for ")
                .append(timeout.toMillis()).append(" ms):");
        for (String p : problems) {
            b.append("\n  - ").append(p);
        }
        b.append("\n  reactor: ").append(counters(device));
        return b.toString();
    }

    /** The reactor's counters that say where the slots are and how the awaits ended, in one line. */
    static String counters(GpuDevice device) {
        ReactorStats s = device.reactor().stats();
        return "capacity " + s.capacity() + ", free " + s.freeSlots() + ", armed " + s.armedNow() + ", quarantined "
                + s.quarantined() + "; registrations " + s.registrations() + ", completions " + s.completions()
                + ", abandoned " + s.abandoned() + ", fallbacks " + s.fallbacks() + ", faults " + s.faults();
    }
}
