package io.cudaloom.demo;

import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.lang.management.ThreadMXBean;

/** The process-wide figures the demo reports: platform threads, CPU time, file-descriptor limit. */
final class ProcessMetrics {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final OperatingSystemMXBean OS = ManagementFactory.getOperatingSystemMXBean();

    private ProcessMetrics() {}

    /** Starts a new peak: {@link #peakPlatformThreads()} then counts from the threads alive now. */
    static void resetPeakPlatformThreads() {
        THREADS.resetPeakThreadCount();
    }

    /** Most platform threads alive at once since the last reset (virtual threads are not counted). */
    static int peakPlatformThreads() {
        return THREADS.getPeakThreadCount();
    }

    static int platformThreads() {
        return THREADS.getThreadCount();
    }

    /** CPU time of the whole process (all threads, user + system), or -1 if the JVM cannot tell. */
    static long processCpuNanos() {
        if (OS instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return -1;
    }

    /** The process's open-file limit, or Long.MAX_VALUE if unknown (not a Unix JVM). */
    static long maxFileDescriptors() {
        if (OS instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
            return unix.getMaxFileDescriptorCount();
        }
        return Long.MAX_VALUE;
    }
}
