/**
 * The reactor's parts: the maintainer's overview. Not API: the module {@code io.cudaloom} does not
 * export this package (on the class path its public classes are public only so that the facade,
 * {@code io.cudaloom.CompletionReactor}, can build them). The facade builds every part and hands each
 * what it uses; no part names the facade, a device, a stream, an event or a kernel (ClassCycleTest),
 * and no two parts are in a class cycle. Of the API a part imports only the exceptions, ReactorConfig
 * and ReactorStats, and no file of core reaches itself through its imports (FileImportCycleTest): a
 * part reaches what sits above it through an interface it declares, or is handed a value.
 *
 * <p>Three packages. This one: the registration, the wait, the scanner and the reactor's object for each stream
 * (ReactorStream).
 * {@code reactor.metrics} (below it: it names no other part, every part reports through it): the
 * counters (Counter, CounterSnapshot, SharedCounters), the await latency (LatencyRecorder,
 * LatencySnapshot, AwaitOutcome), the JFR events (JfrEvents and the event classes,
 * FlightRecorderWatch) and the MXBeans (Monitoring). {@code reactor.lifecycle} (above it): the
 * shutdown (Shutdown), the threads the reactor starts (DaemonThreads) and the report of a device
 * dropped unclosed (UnclosedDeviceReport). The state they drive, LifecycleState, stays here, with
 * the parts that read it.
 *
 * <p>The life of a registration. A waiter (or a callback, or a coalesced group) is
 * registered by the Registrar: a slot is claimed, its flag
 * reset, the device's flag write enqueued behind the stream's work, and the
 * payload published (the active bit; the first publish into an idle table unparks the
 * scanner). Without a free slot, or if the write is refused, a host callback serves it instead
 * (FallbackRegistration). It then ends in exactly one of three ways, each decided by one
 * atomic operation on one cell: retired by the Scanner when the flag reads 1 (its
 * get-and-set takes the payload, the waiter is delivered its ticket and unparked);
 * withdrawn by the registrant on timeout, interrupt, inline completion or a cancelled
 * future or subscription (a compare-and-set on the same cell, which the scanner's get-and-set then
 * finds empty); or
 * failed by the scanner's fault probe or by close (the scanner's failArmed).
 * Finally the slot is recycled (retired slots at once, since the device's write has
 * landed), or quarantined while a write into it might still land (a faulted stream, or
 * close), and recycled or freed once the stream has settled.
 *
 * <p>Who decides. The registrant decides claim, publish and withdrawal; the scanner (the
 * single consumer) decides retirement, failure and recycling; close decides the lifecycle (one
 * compare-and-set from OPEN) and then becomes the consumer after joining the scanner.
 *
 * <p>Access modes. SlotTable's javadoc lists every ordering and where it is enforced. The
 * rules in short: what another thread must see is published by a volatile write or an atomic
 * read-modify-write (the active bit, the delivered ticket, the lifecycle state), and read by an
 * acquire or volatile load; a thread that will be unparked must have that write made before the
 * unpark (ordering 9); single-writer counters use opaque stores; nothing here takes a lock.
 *
 * <p>Spin budgets, one reason each. The waiter spins up to 50 us on its own flag while few
 * threads wait: a short kernel then completes without any wake-up; when the stream's recent
 * waits were longer, it sleeps through most of the predicted wait and spins only its end
 * (SpinPolicy decides, SpinPolicy.Predictive by default; BlockingWait carries it out). The
 * scanner's idle strategy (an IdleStrategy, BackoffIdleStrategy by default) predicts the next
 * retirement from the recent ones, parks until shortly before it (2% of it or 5 us), in parks of
 * at most 1 ms (scannerPark's maximum: an earlier completion is seen within it), and spins
 * through it (a prediction of 25 minimum parks or more, 500 us by default, is polled with parks
 * of 1% of it instead); without a prediction it spins 250 us after its last retirement, then backs off
 * with parks of 2% of the wait, at most 1 ms; with nothing armed it parks at once (no linger by
 * default, ReactorConfig.Builder.scannerLinger says why) until a registration's idle-to-active
 * wake-up. The strategy only decides; the scanner's runner (Scanner.Runner) makes every park, and
 * boxes the untimed one in 1 s: a box that runs out onto armed work is a wake-up that did not
 * come, counted (scannerMissedWakeups) and served then.
 *
 * <p>Where things are. BlockingWait.Checks (nested in the wait whose first lines they are; the
 * non-blocking registrations use them too): the checks before registering (open,
 * done, faulted, may this thread block); BlockingWait: the one blocking wait, BlockingWait.acquire
 * (as AQS's acquire: one method with mode flags, timed, interruptible, the waiter's own slot or
 * coalesced, a closed stream's drain; its algorithm as pseudo-code at the loop head); CoalescedWait:
 * the group commit's arming (which group a waiter joins is decided in acquire; a group's delivery
 * is its stream's, ReactorStream.GroupDelivery, which raises the proof and wakes the members and
 * hands the rest, the settle, to the group's founder: Waiter's item 5);
 * CallbackRegistrations: the non-blocking registration of futures and
 * callbacks; SpinPolicy: whether and how a waiter spins; Registrar: arming and fallback; Scanner:
 * the work step (doWork: delivery, fault probe and quarantine), the park gate, the consumer's half
 * of shutdown, and its Runner, the loop that makes every park; DeviceFaults (the device's, not
 * the reactor's): everything about faults, the first fault, each stream's, the probe's verdict,
 * the quarantine rule and the one factory of GpuFaultException; LifecycleState: the one
 * lifecycle state; lifecycle.Shutdown: close and reclaim; lifecycle.DaemonThreads: the threads it starts;
 * metrics.Counter: every counter, declared once (its names, who writes it, where it is shown);
 * metrics.SharedCounters: the multi-writer counters and the stats snapshot; metrics.JfrEvents: the JFR
 * events, each allocation-free while disabled; metrics.Monitoring: the
 * ReactorMXBean and the periodic JFR hook, installed when the reactor opens and removed
 * when it closes; metrics.LatencyRecorder: the await-latency histogram, the await listeners and the
 * SlowAwait event's begin and commit (the waiter's one metrics call, awaitEnded); ReactorStream: the
 * reactor's one object per stream, made with it and chosen once from the config as
 * CombinedSubmission (the default, Submission.COMBINING: a queue and one drainer, no parks) or
 * DirectSubmission (the caller submits, within an admission semaphore that parks it while the
 * stream is full), holding the completion proof, the group commit, the wait
 * average, the fault state, the close's drain and the backend's StreamBackend, which it calls
 * directly (the backend's stream hands it every work call as a StreamOp); StreamDrain: the one
 * registration a stream's close leaves (a blocking wait on a closed stream enlists its Waiter there
 * and parks in acquire, as on a slot); Waiter: the hand-offs, in one file with the invariant of each
 * in its class comment (the per-thread record itself, Waiter.Group: waiters sharing one flag write,
 * Waiter.Member: one waiter's membership, and the relayed wake-ups); PreWake: the waiters'
 * planned wake-ups, which the scanner serves (over the protocol's WakeBoard); TimerSlack: the
 * scanner's timer slack; lifecycle.UnclosedDeviceReport: the Cleaner of a device dropped unclosed. The facade
 * (io.cudaloom.CompletionReactor) wires them together and is what the API classes call.
 *
 * <p>The await path, in the order a blocking await runs it: GpuEvent.await() (the API: the ticket it
 * waits for; the event holds its stream's ReactorStream and its device's ledger, so the public
 * stream is not on the path; GpuStream.await() is the same await with no event made,
 * GpuEvent.awaitAll) → ResourceLedger.awaitBegun (a wait in progress, LiveResources.Kind.WAIT) →
 * BlockingWait.awaitEvent (the event holds the reactor's one wait, so the facade is not on the path
 * either: the stream's state read once, its drain or none) → BlockingWait.acquire, which runs the
 * whole wait in one method
 * (BlockingWait.Checks.checkMayBlock and examine: open, done, faulted, the event's own position
 * not known complete taken as busy with no read of the stream's count; a closed stream routed to
 * its drain by its state; the registration: with coalescing a Waiter.Member joined to the
 * stream's armed or open group, which watches no flag and parks at once, or a group of its own
 * armed through CoalescedWait.armFresh after SpinPolicy.decide; else SpinPolicy.decide and
 * Registrar.tryArm: SlotTable.claim, the flag reset, the stream's flag write through its
 * ReactorStream (combining, the default: appended to the stream's queue, CombinedSubmission),
 * SlotTable.publish, the first publish into an idle table waking the scanner; the spin, sleeping
 * through a prediction with PreWake; then LockSupport.park until Waiter.isDelivered; last, the
 * proof of what landed, ReactorStream.completedThrough, which returns at once where the scanner
 * raised it already; the one metrics call, LatencyRecorder.awaitEnded, the counters written
 * through the adders the wait holds), woken by the scanner's Runner.turn →
 * Scanner.doWork (SlotTable.scanOnce: the flag read 1, the payload taken; Scanner.deliver: the
 * group's ReactorStream.GroupDelivery, the stream's: its proof raised, then Waiter.Group.deliver,
 * the founder first, handed the settle, then the rest, Waiter.complete: the volatile ticket write,
 * then LockSupport.unpark); a founder, woken, runs the settle before its await returns
 * (Waiter.Group.afterDelivery: the room's drain, the group commit's reservation, the next group's
 * arming, on its own thread, which may call the driver).
 *
 * <p>The classes whose code runs in a default await() on a virtual thread (default ReactorConfig:
 * combining submission, coalescing on) that joins another waiter's armed group and parks, as
 * AwaitPathTest measures and prints them (JDI: every method entry of io.cudaloom on the thread; a
 * nested, anonymous or lambda class counted as its top-level class), in the order first entered. The
 * waiter's thread, from the call to its return (7): GpuEvent, ResourceLedger (the pending-wait
 * count), BlockingWait, ReactorStream, LifecycleState, metrics.LatencyRecorder, Waiter (with its
 * Group and Member). The scanner's
 * thread, for that group's one retirement, from the scan that finds its flag through the return of
 * its delivery (4): protocol.SlotTable (with its flag memory and the scan's RetiredBatch, nested in
 * it), Scanner, Waiter (Waiter.deliverGuarded, the delivery's hand-off, the group's delivery) and
 * ReactorStream (the group's delivery is the stream's: its proof raised). What the landed write
 * changes of the stream's submission beyond the proof (CombinedSubmission, protocol.SubmissionRoom,
 * protocol.SubmissionQueue: the room's drain; protocol.GroupCommit: the reservation returned, the
 * open group taken and armed) is the settle, which the delivery hands to the group's founder
 * (Waiter's item 5, with its jcstress test and broken twin): a joined waiter is not the founder,
 * so neither side of its await passes through them; the scanner runs a settle itself only for a
 * group whose founder withdrew (a timeout, an interrupt) or that has none.
 * A lone await (no other waiter: it arms a group of its own, AwaitPathTest's second scenario)
 * passes through up to 23 classes on the waiter's side (20 where it does not sleep through a
 * prediction): the above, and the registration it makes
 * (protocol.GroupCommit, protocol.SlotTable with its flag memory, SpinPolicy, CoalescedWait,
 * Registrar), the flag write appended and, this thread being the stream's drainer, submitted
 * (CombinedSubmission, protocol.SubmissionQueue, protocol.SubmissionRoom, spi.StreamOp,
 * DeviceFaults, the facade's stream hooks in
 * CompletionReactor, the backend: sim.SimulatedStream and sim.SimulatedDevice here), the scanner
 * woken on the table's idle-to-active publish (the facade's wake-up, which holds the adder it
 * counts in) and the sleep through the prediction (its margin from
 * protocol.BackoffIdleStrategy, its planned wake-up with PreWake over protocol.WakeBoard); as the
 * group's founder it also runs its delivery's settle (classes it passed through already). The
 * scanner's side of its retirement is the same 4.
 * Issue #41's targets are at most 8 and 4: the joined await meets both, the lone await's waiter's
 * side does not (it arms and submits a write of its own), and AwaitPathTest asserts all four
 * counts as upper bounds. Issue #41 took CompletionReactor (the event calls the
 * one wait it holds, BlockingWait.awaitEvent, which routes a closed stream to its drain),
 * metrics.SharedCounters (the wait holds the adders it increments, as Agrona hands an agent its
 * counters), CombinedSubmission and protocol.SubmissionQueue (the busy check compares the event's
 * own position with the proof instead of reading the stream's count; the woken waiter's proof, if
 * already raised, returns in ReactorStream.completedThrough before the mode's part, proven) off the
 * waiter's side as well; off the scanner's, CoalescedWait (a group's delivery, which changes only
 * the stream, is ReactorStream.GroupDelivery; CoalescedWait arms, and is called only to arm a
 * group the delivery took from open), Completion (a pure interface: its guard is
 * Waiter.deliverGuarded), protocol.RetiredBatch and the flag arrays (nested in SlotTable, whose
 * output and memory they are), and last the per-stream submission protocol that issue #37 had put on
 * the retirement (CombinedSubmission, protocol.SubmissionRoom, protocol.SubmissionQueue,
 * protocol.GroupCommit): the settle handed to the group's founder, whose own thread drains what
 * waited for room and arms the next group, as the woken threads of MinimalReactor drain (not moved
 * by nesting: the protocol package's pieces stay apart, jcstress checks them one class at a time,
 * each with a broken twin generated as a copy of its file). Issue #41 took FallbackRegistration and the backend's stream (checkMayBlock answers a
 * virtual thread at once: the scanner, host callbacks and a stream's own work run on platform
 * threads), Registrar (the tickets without a slot are Waiter's), SubmissionRoom (a return whose
 * proof was already raised raises nothing and drains nothing), RegistrationChecks (nested into BlockingWait), SpinPolicy and
 * SlotTable (the spin decision, asked only by an await that arms a write of its own), JfrEvents
 * (the SlowAwait event begun and committed by LatencyRecorder) and GpuStream (the event holds what
 * its await uses) off the waiter's side; its item 1 earlier took CoalescedWait.Parking (the
 * interface the coalesced wait parked through) off this path, and CompletableFuture off a closed
 * stream's; issue #37 item 3 took GpuStream's Port (the reactor's adapter of the stream,
 * forwarding each call to the stream), the StreamRecord beside it and the backends' Backend records
 * (forwarding to the stream's private methods) off it. Issue #41 also merged WaitGroup (and its
 * Member) into Waiter, the hand-offs' one file, which took one class off each side; CoalescedWait
 * stays apart, since it uses ReactorStream and Registrar, which name Waiter, and nested there it
 * would put the parts in a cycle (ClassCycleTest).
 */
@NullMarked
package io.cudaloom.reactor;

import org.jspecify.annotations.NullMarked;
