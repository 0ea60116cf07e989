package io.cudaloom.reactor.lifecycle;

import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;

/**
 * The threads a reactor starts: its scanner and reclaimer (platform daemons) and the virtual
 * threads that run completion callbacks. They serve every user of the device, so, like the JDK's
 * poller threads, they inherit no inheritable thread-locals and no context class loader from
 * whoever opened it.
 */
public final class DaemonThreads {
    private DaemonThreads() {
    }

    /** An unstarted platform daemon thread. */
    public static Thread system(String name, Runnable task) {
        Thread t = Thread.ofPlatform().name(name).daemon(true).inheritInheritableThreadLocals(false).unstarted(task);
        t.setContextClassLoader(ClassLoader.getSystemClassLoader());
        return t;
    }

    /** Runs each task on a virtual thread of its own, named after the reactor. */
    public static Executor callbackExecutor(int reactorId) {
        ThreadFactory factory = Thread.ofVirtual().name("cuda-loom-callback-" + reactorId + "-", 0)
                .inheritInheritableThreadLocals(false).factory();
        return task -> {
            Thread t = factory.newThread(task);
            t.setContextClassLoader(ClassLoader.getSystemClassLoader());
            t.start();
        };
    }
}
