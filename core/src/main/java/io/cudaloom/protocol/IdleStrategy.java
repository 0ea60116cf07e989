package io.cudaloom.protocol;

/**
 * What the single consumer of a {@link SlotTable} does after a cycle that retired nothing (in the
 * manner of Agrona's {@code IdleStrategy}, with one difference: a strategy here never parks, spins
 * or yields itself. It returns what to do, and the consumer's loop does it, so that every park of
 * the consumer is made in one place, which owns the park gate, the time box of the untimed park
 * and the count of missed wake-ups: the reactor's {@code Scanner.Runner}).
 *
 * <p>The answer of {@link #idle} is one {@code long}, so that a decision allocates nothing:
 * <ul>
 *   <li>{@link #CONTINUE}: go round at once (not an idle step: the consumer's own answer after a
 *       cycle that did work; a strategy may return it too);
 *   <li>{@link #SPIN}: one {@link Thread#onSpinWait()}, then go round;
 *   <li>{@link #YIELD}: one {@link Thread#yield()}, then go round;
 *   <li>{@link #PARK}: park untimed, until a registration's idle-to-active unpark. Returned only
 *       when the caller said nothing is armed and gave no deadline; the caller must have checked
 *       "nothing armed" with the table's {@link SlotTable#isIdle()} right before (SlotTable
 *       ordering 3: a registration that raced ahead of that check left an unpark, which is then
 *       this park's permit). The loop bounds it with a time box of its own;
 *   <li>a positive number: park for at most that many nanoseconds (an unpark ends it sooner).
 * </ul>
 * After any park the loop calls {@link #parked} with the time it woke, so the strategy can learn
 * from it (e.g. how late its timed parks return). Single-threaded: one instance per consumer.
 */
public interface IdleStrategy {
    /** Go round at once. */
    long CONTINUE = 0L;
    /** One {@link Thread#onSpinWait()}, then go round. */
    long SPIN = -1L;
    /** One {@link Thread#yield()}, then go round. */
    long YIELD = -2L;
    /** Park untimed (the loop bounds it with its time box). */
    long PARK = -3L;

    /** No deadline: {@link #idle} may answer {@link #PARK}. */
    long NO_DEADLINE = Long.MAX_VALUE;

    /** Whether {@code action} is a timed park (of {@code action} nanoseconds). */
    static boolean isTimedPark(long action) {
        return action > 0;
    }

    /**
     * One idle step's decision.
     *
     * @param armed whether anything is still armed (if not, the caller has just checked the table
     *     idle: see the class comment)
     * @param watched whether every armed registration has another thread looking at its flag
     *     (a waiter spinning on its own flag): a hint, never needed for liveness
     * @param now the current {@link System#nanoTime()}
     * @param deadlineNanos a time no park may outlast, or {@link #NO_DEADLINE}
     * @return what the loop does: {@link #CONTINUE}, {@link #SPIN}, {@link #YIELD}, {@link #PARK},
     *     or a timed park's nanoseconds (positive)
     */
    long idle(boolean armed, boolean watched, long now, long deadlineNanos);

    /** The park that the last {@link #idle} asked for has ended at {@code now} (timed or not, however woken). */
    void parked(long now);

    /** The consumer retired something at {@code now}. */
    void progress(long now);

    /** The consumer was started, or woken for new work, at {@code now}. */
    void reset(long now);
}
