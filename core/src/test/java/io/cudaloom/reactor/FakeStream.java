package io.cudaloom.reactor;

import io.cudaloom.ReactorConfig;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamState;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/** A stream whose work is always running; its flag write is recorded for the test to land. */
final class FakeStream implements ReactorStream {
    final AtomicLong submissions = new AtomicLong();
    final AtomicInteger flagSlot = new AtomicInteger(-1);
    final StreamRecord record;
    final DeviceFaults.Sink faults;

    FakeStream(ReactorConfig config) {
        this.record = new StreamRecord(config);
        this.faults = new DeviceFaults().sink(this, record);
    }

    @Override
    public long submissionCount() {
        return submissions.get();
    }

    @Override
    public void completedThrough(long count) {
        record.completedThrough(count);
    }

    @Override
    public boolean isKnownComplete(long required) {
        return record.completedThrough() >= required;
    }

    @Override
    public boolean hasWorkNotKnownComplete() {
        return submissions.get() > record.completedThrough();
    }

    @Override
    public boolean isClosed() {
        return false;
    }

    @Override
    public boolean isOwnWorkerThread() {
        return false;
    }

    @Override
    public boolean mayParkForAdmission() {
        return true;
    }

    @Override
    public StreamState queryState() {
        return StreamState.BUSY;
    }

    @Override
    public DeviceFaults.Sink faults() {
        return faults;
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
    public void drained() {}

    @Override
    public StreamRecord record() {
        return record;
    }

    @Override
    public void track() {}

    @Override
    public Registration registerCompletion(Consumer<@Nullable RuntimeException> onDone) {
        throw new UnsupportedOperationException("no drain here");
    }

    @Override
    public String deviceName() {
        return "parts";
    }

    @Override
    public String toString() {
        return "fake stream";
    }
}
