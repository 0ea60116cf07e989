package io.cudaloom;

/** Reactor internals that tests in other packages (the CUDA backend's) may look at. Not API. */
public final class TestAccess {
    private TestAccess() {}

    public static Thread scannerThread(GpuDevice device) {
        return device.reactor().scannerThread();
    }
}
