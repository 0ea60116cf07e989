package io.cudaloom.outside;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.GpuStream;
import io.cudaloom.HostMemory;
import io.cudaloom.sim.SimulatedDevice;
import java.lang.reflect.Modifier;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * GpuDevice and GpuStream are for cuda-loom's backends only (not sealed: see BackendSubclasses):
 * a class of another package (this one, on the class path like an application's) compiles against
 * the protected constructors, and constructing it fails. .ci/module-consumer-check checks the same
 * on the module path.
 */
class BackendSubclassTest {
    @Test
    void aDeviceOfAnotherPackageIsRefused() {
        IllegalCallerException e = assertThrows(IllegalCallerException.class, UserDevice::new);
        assertTrue(e.getMessage().contains(UserDevice.class.getName()), e.getMessage());
    }

    @Test
    void aStreamOfAnotherPackageIsRefusedBeforeTouchingTheDevice() {
        try (GpuDevice device = SimulatedDevice.create()) {
            assertThrows(IllegalCallerException.class, () -> new UserStream(device));
            assertTrue(device.liveResources().isEmpty(), "the refused stream was not counted");
        }
    }

    @Test
    void theConstructorsAreNotPublic() throws ReflectiveOperationException {
        assertTrue(Modifier.isProtected(GpuDevice.class.getDeclaredConstructor().getModifiers()));
        for (var c : GpuStream.class.getDeclaredConstructors()) {
            assertTrue(!Modifier.isPublic(c.getModifiers()), c.toString());
        }
    }

    @Test
    void theLibrarysBackendsPass() throws InterruptedException {
        try (GpuDevice device = GpuDevice.open(); GpuStream stream = device.newStream()) {
            stream.await();
        }
    }

    static final class UserDevice extends GpuDevice {
        @Override public String name() { return "user"; }
        @Override public boolean isSimulated() { return true; }
        @Override public io.cudaloom.LaunchLimits launchLimits() { throw new UnsupportedOperationException(); }
        @Override public GpuStream newStream() { throw new UnsupportedOperationException(); }
        @Override public DeviceMemory allocate(long bytes) { throw new UnsupportedOperationException(); }
        @Override public HostMemory allocateHost(long bytes) { throw new UnsupportedOperationException(); }
    }

    static final class UserStream extends GpuStream {
        UserStream(GpuDevice device) {
            super(device);
        }
        @Override public void launch(GpuKernel kernel, int gridX, int blockX, Object... args) {}
        @Override public void launchKernel(Duration duration) {}
        @Override public void copy(HostMemory src, long srcOffset, DeviceMemory dst, long dstOffset, long bytes) {}
        @Override public void copy(DeviceMemory src, long srcOffset, HostMemory dst, long dstOffset, long bytes) {}
        @Override public void memset32(DeviceMemory dst, int value, long count) {}
    }
}
