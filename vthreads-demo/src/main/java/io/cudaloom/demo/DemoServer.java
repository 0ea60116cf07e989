package io.cudaloom.demo;

import java.io.IOException;
import java.net.BindException;
import java.net.URI;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.http2.server.HTTP2CServerConnectionFactory;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ThreadPool;
import org.eclipse.jetty.util.thread.VirtualThreadPool;

/**
 * Embedded Jetty (ee10 servlets) whose requests run on virtual threads, serving
 * {@link ScaleServlet} at {@code /scale} on 127.0.0.1 only. HTTP/1.1 and cleartext HTTP/2 (h2c,
 * by upgrade) on one port. For the servlet benchmark, {@link RequestThreads#PLATFORM_200} runs the
 * same servlet on Jetty's classic pool of platform threads instead.
 */
public final class DemoServer implements AutoCloseable {
    /** Loopback only: this is a demo, not a service. */
    public static final String HOST = "127.0.0.1";
    /** Enough for the load generator's 10,000 concurrent requests. */
    static final int MAX_CONCURRENT = 20_000;

    /** Which threads run the requests. */
    public enum RequestThreads {
        /** Jetty's {@code VirtualThreadPool}: a virtual thread per request (the demo's server). */
        VIRTUAL,
        /**
         * Jetty's default {@code QueuedThreadPool} of 200 platform
         * threads: the classic servlet container, for the servlet benchmark's baseline.
         */
        PLATFORM_200;

        /** Threads of {@link #PLATFORM_200} (Jetty's default maximum). */
        public static final int PLATFORM_POOL_SIZE = 200;
    }

    private final Server server;
    private final ServerConnector connector;

    private DemoServer(Server server, ServerConnector connector) {
        this.server = server;
        this.connector = connector;
    }

    /**
     * Starts the server on {@code port} (0: any free port) and returns once it accepts requests.
     *
     * @throws PortInUseException if something else already listens on {@code port}
     */
    public static DemoServer start(DemoWorkload workload, int port) throws Exception {
        return start(workload, port, RequestThreads.VIRTUAL);
    }

    /**
     * {@link #start(DemoWorkload, int)} with the requests run by {@code requestThreads}; everything
     * else (connector, protocols, servlet) is the same.
     */
    public static DemoServer start(DemoWorkload workload, int port, RequestThreads requestThreads) throws Exception {
        ThreadPool threads;
        if (requestThreads == RequestThreads.PLATFORM_200) {
            QueuedThreadPool pool = new QueuedThreadPool(RequestThreads.PLATFORM_POOL_SIZE);
            pool.setName("demo-http-platform");
            threads = pool;
        } else {
            VirtualThreadPool pool = new VirtualThreadPool();
            pool.setName("demo-http");
            pool.setMaxThreads(MAX_CONCURRENT);          // bounds concurrent tasks, not platform threads
            threads = pool;
        }
        Server server = new Server(threads);

        HttpConfiguration http = new HttpConfiguration();
        http.setSendServerVersion(false);
        HTTP2CServerConnectionFactory h2c = new HTTP2CServerConnectionFactory(http);
        h2c.setMaxConcurrentStreams(MAX_CONCURRENT);
        ServerConnector connector = new ServerConnector(server, new HttpConnectionFactory(http), h2c);
        connector.setHost(HOST);
        connector.setPort(port);
        connector.setAcceptQueueSize(10_000);            // the kernel caps it at net.core.somaxconn
        server.addConnector(connector);

        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        context.addServlet(new ServletHolder("scale", new ScaleServlet(workload)), "/scale");
        server.setHandler(context);
        server.setStopAtShutdown(true);          // Ctrl-C on --serve stops Jetty cleanly
        server.setStopTimeout(0);                // stop at once: no graceful wait for idle keep-alive connections
        try {
            server.start();
        } catch (Exception e) {
            server.stop();
            if (causedByBindException(e)) {
                throw new PortInUseException(port, e);
            }
            throw e;
        }
        return new DemoServer(server, connector);
    }

    private static boolean causedByBindException(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof BindException) {
                return true;
            }
            for (Throwable s : c.getSuppressed()) {
                if (causedByBindException(s)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The port asked for is taken (e.g. another server already listens on it). */
    public static final class PortInUseException extends IOException {
        private static final long serialVersionUID = 1L;
        private final int port;

        PortInUseException(int port, Throwable cause) {
            super("port " + port + " on " + HOST + " is already in use", cause);
            this.port = port;
        }

        public int port() {
            return port;
        }
    }

    public int port() {
        return connector.getLocalPort();
    }

    /** {@code http://127.0.0.1:<port>/} */
    public URI baseUri() {
        return URI.create("http://" + HOST + ":" + port() + "/");
    }

    /** Blocks until the server stops (for --serve). */
    public void join() throws InterruptedException {
        server.join();
    }

    @Override
    public void close() throws Exception {
        server.stop();
    }
}
