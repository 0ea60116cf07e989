package io.cudaloom.spi;

/**
 * A backend's own counters of what it still holds and of calls it should never have seen: read by
 * the library's tests and its GPU lifetime stress to prove that nothing leaks and no call reaches a
 * released handle. Not API (callers read {@code GpuDevice.liveResources()}); each backend answers
 * what it has and 0 for the rest. Reads only: no call blocks or changes anything.
 */
public interface DeviceProbes {
    /** The probes of a backend that keeps none. */
    DeviceProbes NONE = new DeviceProbes() {};

    /**
     * The name prefix of every reactor's scanner thread ({@code cuda-loom-scanner-<id> (<device>)},
     * named by the facade): a backend's probes tell the scanner's calls apart by it (the simulated
     * stream's {@code submissionsByScanner}).
     */
    String SCANNER_THREAD_PREFIX = "cuda-loom-scanner-";

    /** Streams the backend still holds (not yet released after their close and drain). */
    default int liveStreams() {
        return 0;
    }

    /** Driver streams not yet destroyed (CUDA). */
    default int driverStreams() {
        return 0;
    }

    /** Driver calls let through after the device's context was released: must stay 0 (CUDA). */
    default long callsAdmittedAfterRelease() {
        return 0;
    }

    /** Flag writes that landed after their flag memory was released: must stay 0 (simulated). */
    default long writesAfterRelease() {
        return 0;
    }

    /** Flag memories allocated and not yet released (simulated). */
    default int liveFlagMemories() {
        return 0;
    }

    /** Submissions that found the modelled driver queue full and waited in it (simulated). */
    default long queueFullWaits() {
        return 0;
    }

    /** CPU time spun by submitters waiting in the modelled driver queue (simulated). */
    default long queueFullSpinNanos() {
        return 0;
    }
}
