package io.cudaloom;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Closes after each test the devices it opened through {@link #track}, whatever the test's outcome:
 * {@code @RegisterExtension final OpenedDevices devices = new OpenedDevices();}.
 */
final class OpenedDevices implements AfterEachCallback {
    private final List<GpuDevice> devices = new CopyOnWriteArrayList<>();

    <D extends GpuDevice> D track(D device) {
        devices.add(device);
        return device;
    }

    @Override
    public void afterEach(ExtensionContext context) {
        try {
            devices.forEach(GpuDevice::close);
        } finally {
            devices.clear();
        }
    }
}
