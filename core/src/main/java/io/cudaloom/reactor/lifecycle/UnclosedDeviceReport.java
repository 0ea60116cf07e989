package io.cudaloom.reactor.lifecycle;

import java.lang.ref.Cleaner;
import java.util.List;

/**
 * Reports a device that became unreachable without {@link io.cudaloom.GpuDevice#close()} (as Netty's leak
 * detector reports a buffer never released) and stops its threads, so they do not live until the
 * JVM exits. Registered with a {@link Cleaner} when the device's reactor starts.
 *
 * <p>Nothing here may reference the device, or it would never become unreachable: the action
 * holds the device's name, where it was opened, and clean-up actions that hold only the threads
 * and registrations to undo (the scanner thread, the MXBean and JFR hook, a simulated stream's
 * queue). The threads themselves hold the device only weakly while idle (see
 * {@code Scanner.task()}), and a device with work armed is reachable from its running scanner, so
 * an unclosed device is reported once it is idle and dropped.
 *
 * <p>What a cleaning does not do is free native memory (a GPU context, pinned flag memory, the
 * device's buffers): freeing them safely needs the device's own close, so the report says so.
 */
public final class UnclosedDeviceReport implements Runnable {
    private static final System.Logger LOG = System.getLogger("io.cudaloom");
    private static final Cleaner CLEANER = Cleaner.create(
            Thread.ofPlatform().daemon(true).name("cuda-loom-cleaner").inheritInheritableThreadLocals(false).factory());

    private final String deviceName;
    private final Throwable openedAt;
    private final List<Runnable> cleanups;
    /**
     * Set by {@link io.cudaloom.GpuDevice#close()} before it cleans the registration, so the action run by that
     * {@link Cleaner.Cleanable#clean()} reports nothing; read by the action on the same thread, or
     * by the cleaner's thread only after the device became unreachable (then close never ran).
     */
    private volatile boolean closed;

    private UnclosedDeviceReport(String deviceName, Throwable openedAt, List<Runnable> cleanups) {
        this.deviceName = deviceName;
        this.openedAt = openedAt;
        this.cleanups = cleanups;
    }

    /** Watches {@code device} (a {@link io.cudaloom.GpuDevice}, named {@code name}); {@code cleanups} must not reference it. */
    public static Registration watch(Object device, String name, List<Runnable> cleanups) {
        Throwable openedAt = new Throwable("the device was opened here, on thread \"" + Thread.currentThread().getName() + "\"");
        UnclosedDeviceReport report = new UnclosedDeviceReport(name, openedAt, List.copyOf(cleanups));
        return new Registration(report, CLEANER.register(device, report));
    }

    /** The device's handle on its report: {@link #closed()} when it is closed properly. */
    public record Registration(UnclosedDeviceReport report, Cleaner.Cleanable cleanable) {
        public void closed() {
            report.closed = true;
            cleanable.clean(); // deregisters: the device's own close does the rest
        }
    }

    @Override
    public void run() {
        if (closed) {
            return;
        }
        LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: " + deviceName + " was garbage-collected without "
                + "close(): its threads are stopped now, but its native memory (pinned flag memory, and on a GPU its "
                + "context and buffers) is only freed at JVM exit. Close every GpuDevice, e.g. with try-with-resources.",
                openedAt);
        for (Runnable cleanup : cleanups) {
            try {
                cleanup.run();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, () -> "cuda-loom: cleaning up after " + deviceName + " failed: " + e, e);
            }
        }
    }
}
