package io.cudaloom.reactor;

import java.util.List;

/**
 * Why a registration is served by a host callback ({@link FallbackRegistration}) instead of a
 * completion slot: one constant per reason a {@link io.cudaloom.reactor.metrics.FallbackEvent} records, whose
 * {@link #eventReason} is the event's {@code reason} field.
 *
 * <h2>The answer of {@link Registrar#tryArm}</h2>
 * Arming is allocation-free, so {@code tryArm} answers one {@code long}: a slot's ticket (never
 * negative), or, when the caller must fall back, a negative value that is this enum's
 * {@link #answer()}. The encoding lives here alone: {@link #answer()} is {@code -1 - ordinal()},
 * {@link #of(long)} reads it back (an array load, no allocation), and
 * {@link Registrar#armed(long)} tells the two apart by the sign. The answer is only ever passed
 * from {@code tryArm} to its caller, which decodes it before calling
 * {@link Registrar#registerFallback}; no ticket, slot or synthetic one, can be mistaken for it,
 * since slot tickets are never negative and a synthetic ticket (a fallback's,
 * {@link Waiter#syntheticTicket()}) is never an answer of {@code tryArm}.
 */
public enum FallbackReason {
    /** No completion slot was free. */
    POOL_EXHAUSTED("pool exhausted"),
    /** The stream refused the device's flag write. */
    WRITE_REFUSED("write refused"),
    /** The reactor uses no slots: {@link io.cudaloom.CompletionStrategy#HOST_CALLBACK}. */
    HOST_CALLBACK_STRATEGY("HOST_CALLBACK strategy");

    /** {@link #values()}, made once (values() copies its array on every call). */
    private static final List<FallbackReason> ALL = List.of(values());

    /** The {@link io.cudaloom.reactor.metrics.FallbackEvent#reason} this fallback records. */
    final String eventReason;
    private final long answer;

    FallbackReason(String eventReason) {
        this.eventReason = eventReason;
        this.answer = -1L - ordinal();
    }

    /** {@link Registrar#tryArm}'s answer for this reason: negative, so never a ticket. */
    long answer() {
        return answer;
    }

    /**
     * The reason {@code answer} encodes: an answer of {@link Registrar#tryArm} for which
     * {@link Registrar#armed(long)} is false. Allocation-free.
     *
     * @throws IllegalArgumentException if {@code answer} is no reason's answer (a ticket, say)
     */
    public static FallbackReason of(long answer) {
        long ordinal = -1L - answer;
        if (ordinal < 0 || ordinal >= ALL.size()) {
            throw new IllegalArgumentException(answer + " is no fallback reason (a ticket?)");
        }
        return ALL.get((int) ordinal);
    }
}
