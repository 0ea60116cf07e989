package io.cudaloom.reactor;

import io.cudaloom.ReactorConfig;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamState;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A stream whose work is always running, for the parts' own tests: the backend (its flag write is
 * recorded for the test to land) and the reactor under a real {@link DirectSubmission}, the
 * reactor's object for the stream ({@link #stream}).
 */
final class FakeStream implements StreamBackend, ReactorStream.Reactor {
    final AtomicInteger flagSlot = new AtomicInteger(-1);
    /** The reactor's object for this fake stream: what the parts are handed. */
    final DirectSubmission stream;
    private final Thread noScanner = new Thread(() -> { });

    /** A fake stream with {@code submissions} work entries submitted (reported as raw work), still running. */
    FakeStream(ReactorConfig config, int submissions) {
        this.stream = new DirectSubmission(config, this, new DeviceFaults(), this, "fake stream");
        for (int i = 0; i < submissions; i++) {
            stream.noteExternalSubmission();
        }
    }

    // ---- the backend ----------------------------------------------------------------------------

    @Override
    public StreamState queryState() {
        return StreamState.BUSY;
    }

    @Override
    public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
        flagSlot.set(slot);
        return true;
    }

    @Override
    public boolean enqueueHostCallback(Runnable callback) {
        return false;
    }

    @Override
    public boolean flagWritesSettled() {
        return true;
    }

    @Override
    public void shutdown() {}

    // ---- the reactor ----------------------------------------------------------------------------

    @Override
    public void track(ReactorStream s, Completion tracker) {
        throw new UnsupportedOperationException("no tracker here");
    }

    @Override
    public Registration register(ReactorStream s, Consumer<@Nullable RuntimeException> onDone) {
        throw new UnsupportedOperationException("no drain here");
    }

    @Override
    public boolean isClosed() {
        return false;
    }

    @Override
    public Executor callbackExecutor() {
        return Runnable::run;
    }

    @Override
    public Thread scannerThread() {
        return noScanner;
    }

    @Override
    public void countAdmissionWait(long nanos) {}

    @Override
    public String deviceName() {
        return "parts";
    }
}
