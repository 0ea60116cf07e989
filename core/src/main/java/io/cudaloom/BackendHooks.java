package io.cudaloom;

import io.cudaloom.internal.BackendAccess;
import io.cudaloom.spi.DeviceBackend;
import io.cudaloom.spi.DeviceProbes;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamSubmission;
import java.util.List;
import java.util.function.Function;

/**
 * The API package's side of {@link BackendAccess}: forwards each hook to the package-private member
 * of the device, stream or kernel that implements it (documented on {@link BackendAccess.Hooks}).
 * Installed once, by {@link GpuDevice}'s static initialiser ({@link #install()}): here, so that
 * {@code GpuDevice} imports nothing of the {@code internal} package, whose hooks name it.
 */
final class BackendHooks implements BackendAccess.Hooks {
    /** Installs the API's hooks ({@link BackendAccess#install}); once, from GpuDevice's static initialiser. */
    static void install() {
        BackendAccess.install(new BackendHooks());
    }

    @Override
    public void startReactor(GpuDevice device, ReactorConfig config, DeviceBackend backend,
            Function<? super GpuStream, ? extends StreamBackend> streams) {
        device.startReactor(config, backend, streams);
    }

    @Override
    public Runnable tracked(GpuDevice device, LiveResources.Kind kind) {
        return device.tracked(kind);
    }

    @Override
    public boolean isMemoryReleased(GpuDevice device) {
        return device.reactor().isMemoryReleased();
    }

    @Override
    public DeviceProbes probes(GpuDevice device) {
        return device.probes();
    }

    @Override
    public Object kernelModule(GpuKernel kernel) {
        return kernel.module();
    }

    @Override
    public GpuKernel spinKernel() {
        return GpuKernel.SPIN;
    }

    @Override
    public GpuKernel.Body kernelBody(GpuKernel kernel) {
        return kernel.body();
    }

    @Override
    public List<GpuKernel.Param> paramsOf(String ptx, String entry) {
        return GpuKernel.paramsOf(ptx, entry);
    }

    @Override
    public void checkMatches(String entry, List<GpuKernel.Param> declared, List<GpuKernel.Param> ptxParams,
            String where) {
        GpuKernel.checkMatches(entry, declared, ptxParams, where);
    }

    @Override
    public void notCreated(GpuStream stream) {
        stream.notCreated();
    }

    @Override
    public StreamSubmission submission(GpuStream stream) {
        return stream.owner();
    }

    @Override
    public long required(GpuStream stream) {
        return stream.required();
    }

    @Override
    public void whenWorkDone(GpuStream stream, long required, Runnable done) {
        stream.whenWorkDone(required, done);
    }

    @Override
    public void releaseOffCaller(GpuDevice device, Runnable free) {
        device.releaseOffCaller(free);
    }

    @Override
    public boolean isKnownComplete(GpuStream stream, long required) {
        return stream.owner().isKnownComplete(required);
    }
}
