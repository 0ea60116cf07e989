package io.cudaloom;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The records logged on {@code io.cudaloom} (through JUL, System.Logger's default) while open. */
public final class LogCapture extends Handler implements AutoCloseable {
    /** Held: JUL keeps its loggers weakly, and the handler must stay on this one. */
    private final Logger logger = Logger.getLogger("io.cudaloom");
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();

    public LogCapture() {
        logger.addHandler(this);
    }

    public List<LogRecord> records() {
        return records;
    }

    @Override
    public void publish(LogRecord record) {
        records.add(record);
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        logger.removeHandler(this);
    }
}
