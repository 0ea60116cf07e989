package io.cudaloom.reactor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.cudaloom.ReactorConfig;
import io.cudaloom.spi.FlagMemory;
import io.cudaloom.spi.StreamBackend;
import io.cudaloom.spi.StreamState;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;

/**
 * Admission ({@link DirectSubmission}, the direct mode of the reactor's object for a stream): two proofs recorded at once (the scanner retiring one slot, a
 * waiter returning from another) must return each covered entry's permit exactly once and leave
 * the highest proof: 5 permits for proofs 5 and 3, whatever the order. More would let the stream
 * exceed its bound (the driver's queue fills again); fewer would leak permits until the stream
 * stalls.
 *
 * <p>r1 = permits returned; r2 = the proof recorded.
 */
@JCStressTest
@Description("Admission: concurrent proofs return each entry's permit exactly once and keep the highest.")
@Outcome(id = "5, 5", expect = ACCEPTABLE, desc = "Five permits back, proof 5.")
@Outcome(expect = FORBIDDEN, desc = "Permits returned twice or lost, or the proof went backwards.")
@State
public class AdmissionProofTest {
    static final ReactorConfig CONFIG = ReactorConfig.builder().admissionLimit(8).build();
    final DirectSubmission record = new DirectSubmission(CONFIG, QUIET, new DeviceFaults(), QUIET, "jcstress stream");

    @Actor
    public void scanner() {
        record.completedThrough(5);
    }

    @Actor
    public void waiter() {
        record.completedThrough(3);
    }

    @Arbiter
    public void arbiter(JJ_Result r) {
        r.r1 = record.freePermits() - 8;
        r.r2 = record.completedThrough();
    }

    /** A backend and a reactor that are never called here: the proofs touch neither. */
    static final Quiet QUIET = new Quiet();

    static final class Quiet implements StreamBackend, ReactorStream.Reactor {
        private final Thread noScanner = new Thread(() -> { });

        @Override
        public StreamState queryState() {
            return StreamState.BUSY;
        }

        @Override
        public boolean enqueueFlagWrite(FlagMemory memory, int slot) {
            return false;
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

        @Override
        public void track(ReactorStream stream, Completion tracker) {
            throw new UnsupportedOperationException("no tracker in a trial");
        }

        @Override
        public Registration register(ReactorStream stream, Consumer<@Nullable RuntimeException> onDone) {
            throw new UnsupportedOperationException("no registration in a trial");
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
            return "jcstress";
        }
    }
}
