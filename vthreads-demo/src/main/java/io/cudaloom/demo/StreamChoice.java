package io.cudaloom.demo;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which of a workload's streams a step goes to. A step that awaits takes the next stream
 * round-robin (waiting parks only its virtual thread, so any stream will do). A step that blocks in
 * a synchronize ({@link DemoWorkload.WaitBy#SYNCHRONIZE}) keeps to the stream its thread was given
 * on its first step, as a pool user gives each worker a stream of its own: threads are handed
 * streams round-robin, so a pool of as many threads as streams has one stream each.
 */
final class StreamChoice {
    private final int streams;
    private final boolean perThread;
    private final AtomicInteger next = new AtomicInteger();
    private final ThreadLocal<Integer> own;

    StreamChoice(int streams, DemoWorkload.WaitBy waitBy) {
        if (streams < 1) {
            throw new IllegalArgumentException("streams must be >= 1, was " + streams);
        }
        this.streams = streams;
        this.perThread = waitBy == DemoWorkload.WaitBy.SYNCHRONIZE;
        this.own = ThreadLocal.withInitial(this::roundRobin);
    }

    /** The index of the stream for the calling thread's next step. */
    int next() {
        return perThread ? own.get() : roundRobin();
    }

    private int roundRobin() {
        return Math.floorMod(next.getAndIncrement(), streams);
    }
}
