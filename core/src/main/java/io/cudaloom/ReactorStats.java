package io.cudaloom;

/**
 * A snapshot of a reactor's counters (each read separately, so a snapshot taken while awaits run
 * is not one instant).
 *
 * @param capacity completion slots
 * @param armedNow slots armed and not yet retired
 * @param freeSlots slots on the free list (exact only while quiescent)
 * @param registrations awaits that armed a slot
 * @param completions awaits that returned normally (any path)
 * @param inlineCompletions of those, completed by the waiter's own spin, without a wake-up
 * @param immediate awaits that found their stream already idle and registered nothing
 * @param fallbacks awaits completed through a host callback (pool exhausted, write refused, or
 *     the HOST_CALLBACK strategy)
 * @param abandoned awaits that gave up (timeout, interrupt) while their registration was in flight,
 *     and non-blocking registrations withdrawn before delivery (a cancelled future or coroutine,
 *     {@link GpuEvent.Subscription#cancel()} returning true)
 * @param faults awaits woken with a device fault
 * @param scannerParks times the scanner parked with nothing armed
 * @param scannerTimedParks timed parks of the scanner's back-off while slots stayed armed
 * @param scannerUnparks unparks of the scanner by registrants (idle-to-active transitions)
 * @param scanPasses scan passes
 * @param faultProbes fault-probe rounds (stream queries made by the scanner)
 * @param quarantined slots held back because a device write into them might still land
 * @param coalesced awaits that joined another waiter's slot instead of arming their own
 * @param scannerErrors exceptions and errors the scanner caught in its loop (a backend hook that
 *     threw, for example); each was reported to the scanner thread's uncaught-exception handler
 * @param scannerCpuNanos CPU time the scanner thread has used (-1 where the JVM cannot tell; 0
 *     once it has stopped)
 */
public record ReactorStats(
        int capacity,
        long armedNow,
        int freeSlots,
        long registrations,
        long completions,
        long inlineCompletions,
        long immediate,
        long fallbacks,
        long abandoned,
        long faults,
        long scannerParks,
        long scannerTimedParks,
        long scannerUnparks,
        long scanPasses,
        long faultProbes,
        int quarantined,
        long coalesced,
        long scannerErrors,
        long scannerCpuNanos) {}
