package io.cudaloom.junit;

import io.cudaloom.GpuDevice;
import io.cudaloom.LiveResources;
import io.cudaloom.LiveResources.Kind;
import io.cudaloom.ReactorStats;
import io.cudaloom.cuda.CudaDevice;
import io.cudaloom.internal.BackendAccess;
import io.cudaloom.sim.SimulatedDevice;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * What a device still holds after a test, and a bounded wait for it to come to rest. Reads the
 * reactor's stats and the device's {@link GpuDevice#liveResources()} through their accessors only,
 * so it is the same check on every backend.
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

    /**
     * One thing left on a device. {@code heals}: the reactor gives it back by itself once the GPU
     * work it waits for ends (an abandoned await's slot, a closed stream's drain), so the check
     * waits for it up to the bound; the others (memory, streams, waits, a fault) never come back
     * unless the test's own code gives them back, so they are reported after a short grace.
     */
    record Problem(String text, boolean heals) {}

    /** Everything the device still holds that it should not, one line each; empty when at rest. */
    static List<String> problems(GpuDevice device) {
        return problemsOf(device).stream().map(Problem::text).toList();
    }

    private static List<Problem> problemsOf(GpuDevice device) {
        List<Problem> problems = new ArrayList<>();
        String fault = fault(device);
        if (fault != null) {
            problems.add(new Problem("the device faulted: " + fault
                    + " (mark a test that faults on purpose @ExpectDeviceFault)", false));
        }
        LiveResources live = device.liveResources();
        for (Kind kind : List.of(Kind.WAIT, Kind.DEVICE_MEMORY, Kind.HOST_MEMORY, Kind.STREAM)) {
            int n = live.count(kind);
            if (n > 0) {
                problems.add(new Problem(kind.noun() + ": " + n + " " + kind.problem() + sites(live, kind), false));
            }
        }
        int freeing = live.count(Kind.FREEING_MEMORY);
        if (freeing > 0) {
            // In flight, not leaked: freed once the work queued on it is done (stream-ordered frees).
            problems.add(new Problem(Kind.FREEING_MEMORY.noun() + ": " + freeing + " " + Kind.FREEING_MEMORY.problem()
                    + " (it is freed when that work is done; a stream held by unfinished work keeps it)", true));
        }
        ReactorStats s = device.reactor().stats();
        if (s.armedNow() > 0) {
            problems.add(new Problem(s.armedNow() + " completion slot(s) still armed: an await, future or onComplete"
                    + " callback, or a stream closed with work in flight (its close registers for that work), is still"
                    + " waiting for work that never finished (a stream held by unfinished work, or a waiter left"
                    + " running)", true));
        }
        if (s.quarantined() > 0) {
            problems.add(new Problem(s.quarantined() + " completion slot(s) quarantined: a device write into them may"
                    + " still land (a faulted stream not yet settled)", true));
        }
        if (s.freeSlots() != s.capacity()) {
            problems.add(new Problem("completion slots back on the free list: " + s.freeSlots() + " of "
                    + s.capacity(), true));
        }
        return problems;
    }

    /** Where the leaked ones of {@code kind} were made, or how to find out. */
    static String sites(LiveResources live, Kind kind) {
        List<LiveResources.Site> sites = live.sites(kind);
        if (sites.isEmpty()) {
            return live.capturing() ? " (none of them was in the sample of captured sites)"
                    : "; to see where each was " + kind.madeVerb() + ": " + CAPTURE_HINT;
        }
        StringBuilder b = new StringBuilder();
        int shown = Math.min(sites.size(), MAX_SITES);
        b.append("; ").append(shown == live.count(kind) ? "" : shown + " of them ").append("captured:");
        for (int i = 0; i < shown; i++) {
            b.append('\n').append(sites.get(i).render("      "));
        }
        if (sites.size() > shown) {
            b.append("\n      (").append(sites.size() - shown).append(" more)");
        }
        return b.toString();
    }

    /** How to turn site capture on, as the messages say it. */
    static final String CAPTURE_HINT = "@GpuTest(captureSites = true), or -D" + GpuExtension.CAPTURE_SITES_PARAMETER
            + "=true (tests), or -Dcudaloom.leakSites=all|sampled (any device)";
    private static final int MAX_SITES = 5;

    /** What {@link #awaitRest} found, and whether it stopped at the grace (nothing left would heal). */
    record Rest(List<String> problems, boolean afterGrace) {}

    /**
     * Polls {@link #problems} until there are none or {@code timeout} has passed: the scanner
     * recycles a retired slot shortly after the waiter returned, and an abandoned await's slot once
     * its work is done, so a state seen right after a test may be transient. A fault does not
     * heal: it ends the wait at once. Nor does unclosed memory, an unclosed stream or a wait still
     * pending: while one is left, the check stops once {@code grace} has passed without the
     * reactor delivering anything (its completion count and the pending waits unchanged), so a
     * leaked wait fails the test in about {@code grace}, not {@code timeout}.
     *
     * @return the problems at the end; empty if the device came to rest
     */
    static Rest awaitRest(GpuDevice device, Duration timeout, Duration grace) {
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        long graceEnd = start + Math.min(grace.toNanos(), timeout.toNanos());
        long pause = 1_000_000L;
        long lastCompletions = -1;
        int lastWaits = -1;
        while (true) {
            List<Problem> problems = problemsOf(device);
            long now = System.nanoTime();
            boolean stuck = problems.stream().anyMatch(p -> !p.heals());
            if (problems.isEmpty() || fault(device) != null || now - deadline >= 0) {
                return new Rest(texts(problems), false);
            }
            if (stuck) {
                long completions = device.reactor().stats().completions();
                int waits = device.liveResources().count(Kind.WAIT);
                if (completions != lastCompletions || waits != lastWaits) {
                    if (lastWaits >= 0) { // progress: a delivery may still be on its way
                        graceEnd = Math.min(now + grace.toNanos(), deadline);
                    }
                    lastCompletions = completions;
                    lastWaits = waits;
                } else if (now - graceEnd >= 0) {
                    return new Rest(texts(problems), true);
                }
            }
            LockSupport.parkNanos(pause);
            pause = Math.min(2 * pause, MAX_POLL_NANOS);
            if (Thread.currentThread().isInterrupted()) {
                List<String> texts = new ArrayList<>(problems(device));
                texts.add("the check was interrupted before the device came to rest");
                return new Rest(texts, false);
            }
        }
    }

    private static List<String> texts(List<Problem> problems) {
        return problems.stream().map(Problem::text).toList();
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
        while (!BackendAccess.hooks().isMemoryReleased(device)) {
            if (System.nanoTime() - deadline >= 0 || Thread.currentThread().isInterrupted()) {
                return false;
            }
            LockSupport.parkNanos(pause);
            pause = Math.min(2 * pause, MAX_POLL_NANOS);
        }
        return true;
    }

    /** The failure message: who, which device, for how long, what, and the reactor's counters. */
    static String report(String who, GpuDevice device, List<String> problems, Duration timeout,
            @Nullable Duration grace) {
        StringBuilder b = new StringBuilder();
        b.append(who).append(" left ").append(device.name()).append(" not at rest (");
        if (grace != null) {
            b.append("reported after a ").append(grace.toMillis()).append(" ms grace, not the ")
                    .append(timeout.toMillis()).append(" ms bound: what is left does not come back by itself");
        } else {
            b.append("checked for ").append(timeout.toMillis()).append(" ms");
        }
        b.append("):");
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
