package io.cudaloom.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ProtocolException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The load generator's HTTP/1.1 client: its parser on bytes, then the client against a plain socket server. */
@Timeout(value = 1, unit = TimeUnit.MINUTES)
class RawHttpClientTest {
    private static final String CONTENT_LENGTH = "HTTP/1.1 200 OK\r\nContent-Type: text/plain;charset=utf-8\r\n"
            + "content-length: 11\r\n\r\nsum=101760\n";
    /** Three chunks (one with an extension, one of a bare LF), then a trailer field. */
    private static final String CHUNKED = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "4\r\nsum=\r\n6;name=value\r\n101760\r\n1\r\n\n\r\n0\r\nX-Checksum: 42\r\n\r\n";

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** A stream that returns {@code bytes[0, split)} on its first reads and the rest after, never more. */
    private static InputStream splitAt(byte[] bytes, int split) {
        return new InputStream() {
            private int pos;

            @Override
            public int read() {
                return pos < bytes.length ? bytes[pos++] & 0xff : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (pos == bytes.length) {
                    return -1;
                }
                int end = pos < split ? split : bytes.length;
                int n = Math.min(len, end - pos);
                System.arraycopy(bytes, pos, b, off, n);
                pos += n;
                return n;
            }
        };
    }

    private static RawHttpClient.Response parser(InputStream in) {
        RawHttpClient.Response r = new RawHttpClient.Response();
        r.attach(in);
        return r;
    }

    @Test
    void aContentLengthBodyIsReadExactlyAndKeepsTheConnection() throws IOException {
        RawHttpClient.Response r = parser(new ByteArrayInputStream(ascii(CONTENT_LENGTH)));
        r.read();
        assertEquals(200, r.status());
        assertTrue(r.bodyEquals("sum=101760\n"), r.bodyText());
        assertFalse(r.bodyEquals("sum=101761\n"));
        assertFalse(r.bodyEquals("sum=101760"));
        assertTrue(r.keepAlive());
    }

    @Test
    void chunksAreJoinedAndTheTrailerIsConsumed() throws IOException {
        // The Content-Length response after it parses only if the chunked one, trailer included, was read to its end.
        RawHttpClient.Response r = parser(new ByteArrayInputStream(ascii(CHUNKED + CONTENT_LENGTH)));
        r.read();
        assertEquals(200, r.status());
        assertEquals("sum=101760\n", r.bodyText());
        assertTrue(r.keepAlive());
        r.read();
        assertEquals("sum=101760\n", r.bodyText());
    }

    @Test
    void aResponseSplitAcrossReadsAtEveryBytePositionParsesTheSame() throws IOException {
        byte[] both = ascii(CHUNKED + CONTENT_LENGTH);
        for (int split = 0; split <= both.length; split++) {
            RawHttpClient.Response r = parser(splitAt(both, split));
            for (int response = 0; response < 2; response++) {
                r.read();
                assertEquals(200, r.status(), "split at " + split);
                assertTrue(r.bodyEquals("sum=101760\n"), "split at " + split + ": '" + r.bodyText() + "'");
            }
        }
        // and one byte per read
        RawHttpClient.Response r = parser(new InputStream() {
            private final InputStream in = new ByteArrayInputStream(both);

            @Override
            public int read() throws IOException {
                return in.read();
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                return in.read(b, off, Math.min(len, 1));
            }
        });
        r.read();
        r.read();
        assertEquals("sum=101760\n", r.bodyText());
    }

    @Test
    void aNon200StatusIsReadWithItsBody() throws IOException {
        RawHttpClient.Response r = parser(new ByteArrayInputStream(ascii(
                "HTTP/1.1 500 Server Error\r\nContent-Length: 16\r\n\r\nGPU fault: boom\n")));
        r.read();
        assertEquals(500, r.status());
        assertEquals("GPU fault: boom\n", r.bodyText());
        assertTrue(r.keepAlive());
    }

    @Test
    void connectionCloseAndABodyToTheEndOfTheStreamEndTheConnection() throws IOException {
        RawHttpClient.Response r = parser(new ByteArrayInputStream(ascii(
                "HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 3\r\n\r\nabc")));
        r.read();
        assertEquals("abc", r.bodyText());
        assertFalse(r.keepAlive(), "Connection: close");

        r = parser(new ByteArrayInputStream(ascii("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end\n")));
        r.read();
        assertEquals("to the end\n", r.bodyText());
        assertFalse(r.keepAlive(), "a body delimited by the end of the connection");

        r = parser(new ByteArrayInputStream(ascii("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx"
                + "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\ny")));
        r.read();
        assertFalse(r.keepAlive(), "HTTP/1.0 closes by default");
        r.read();
        assertTrue(r.keepAlive(), "unless it says keep-alive");
    }

    @Test
    void interimAndBodylessResponses() throws IOException {
        RawHttpClient.Response r = parser(new ByteArrayInputStream(ascii("HTTP/1.1 100 Continue\r\n\r\n"
                + "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n" + CONTENT_LENGTH)));
        r.read();
        assertEquals(204, r.status(), "the 100 is skipped");
        assertEquals(0, r.bodyLength(), "204 has no body, whatever its headers say");
        r.read();
        assertEquals("sum=101760\n", r.bodyText());
    }

    @Test
    void malformedResponsesNameWhatWasWrong() {
        assertEquals("malformed status line: 'HTTP/2 200 OK'", malformed("HTTP/2 200 OK\r\n\r\n"));
        assertEquals("malformed status line: 'HTTP/1.1 20x OK'", malformed("HTTP/1.1 20x OK\r\n\r\n"));
        assertEquals("malformed header line (no ':'): 'Content-Length 3'",
                malformed("HTTP/1.1 200 OK\r\nContent-Length 3\r\n\r\nabc"));
        assertEquals("bad Content-Length: '-3'", malformed("HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\nabc"));
        assertEquals("Content-Length 2000000 above 1048576",
                malformed("HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n"));
        assertEquals("bad chunk size: 'zz'", malformed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"));
        assertEquals("chunk of 2 bytes not followed by CRLF",
                malformed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n"));
        assertEquals("unsupported Transfer-Encoding: 'gzip'",
                malformed("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"));
        assertEquals("a response line is longer than 8192 bytes",
                malformed("HTTP/1.1 200 OK\r\nX: " + "y".repeat(RawHttpClient.Response.MAX_LINE) + "\r\n\r\n"));

        EOFException eof = assertThrows(EOFException.class,
                () -> parser(new ByteArrayInputStream(ascii("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))).read());
        assertEquals("the server closed the connection 7 bytes before the body ended", eof.getMessage());
        eof = assertThrows(EOFException.class,
                () -> parser(new ByteArrayInputStream(ascii("HTTP/1.1 200 OK\r\nContent-"))).read());
        assertEquals("the server closed the connection before the response ended", eof.getMessage());
    }

    private static String malformed(String response) {
        return assertThrows(ProtocolException.class, () -> parser(new ByteArrayInputStream(ascii(response))).read())
                .getMessage();
    }

    // ---- against a socket ------------------------------------------------------------------------

    /**
     * A plain HTTP/1.1 server on 127.0.0.1, one connection at a time: for the i-th request it
     * writes {@code answers.apply(i)}, or closes the connection without an answer for null, and
     * closes after an answer that says {@code Connection: close}.
     */
    private static final class ScriptedServer implements AutoCloseable {
        final ServerSocket listener;
        final List<String> requests = new CopyOnWriteArrayList<>();
        volatile int connections;
        private final Thread thread;

        ScriptedServer(IntFunction<String> answers) throws IOException {
            listener = new ServerSocket(0, 50, InetAddress.getByName(DemoServer.HOST));
            thread = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        try (Socket s = listener.accept()) {
                            connections++;
                            InputStream in = s.getInputStream();
                            OutputStream out = s.getOutputStream();
                            for (String request; (request = readRequest(in)) != null; ) {
                                String answer = answers.apply(requests.size());
                                requests.add(request);
                                if (answer == null) {
                                    break;
                                }
                                out.write(ascii(answer));
                                out.flush();
                                if (answer.contains("Connection: close")) {
                                    break;
                                }
                            }
                        }
                    }
                } catch (IOException closed) {
                    // the listener closed: the test is over
                }
            });
        }

        /** Up to and with the blank line; null at the end of the stream. */
        private static String readRequest(InputStream in) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            for (int c; (c = in.read()) >= 0; ) {
                b.write(c);
                if (b.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
                    return b.toString(StandardCharsets.US_ASCII);
                }
            }
            return null;
        }

        int port() {
            return listener.getLocalPort();
        }

        @Override
        public void close() throws Exception {
            listener.close();
            thread.join(Duration.ofSeconds(10));
        }
    }

    private static String ok(String body, String extraHeader) {
        return "HTTP/1.1 200 OK\r\n" + extraHeader + "Content-Length: " + body.length() + "\r\n\r\n" + body;
    }

    @Test
    void theRequestIsTheExactGetAndKeepAliveReusesOneConnection() throws Exception {
        String right = ScaleServlet.expectedBody(7, 256, -3);
        try (ScriptedServer server = new ScriptedServer(i -> ok(right, ""));
             RawHttpClient client = new RawHttpClient(server.port(), Duration.ofSeconds(10))) {
            String expected = "GET /scale?seed=7&n=256&factor=-3 HTTP/1.1\r\nHost: 127.0.0.1:" + server.port() + "\r\n\r\n";
            assertEquals(expected, client.requestText(7, 256, -3));
            for (int i = 0; i < 3; i++) {
                assertEquals(200, client.get(7, 256, -3));
                assertNull(client.mismatch(7, 256, -3));
            }
            assertEquals(List.of(expected, expected, expected), server.requests);
            assertEquals(1, server.connections, "keep-alive: one connection for the three");
            assertTrue(client.connected());
            assertEquals("GET /scale?seed=0&n=1&factor=100 HTTP/1.1\r\nHost: 127.0.0.1:" + server.port() + "\r\n\r\n",
                    client.requestText(0, 1, 100), "the buffer is rebuilt, shorter numbers leave nothing behind");
        }
    }

    @Test
    void connectionCloseAndABrokenConnectionReconnectForTheNextRequest() throws Exception {
        String right = ScaleServlet.expectedBody(1, 4, 3);
        // 0: answered, then closed by Connection: close; 1: no answer, the connection dropped;
        // 2: a wrong body; 3: a 503
        IntFunction<String> script = i -> switch (i) {
            case 0 -> ok(right, "Connection: close\r\n");
            case 1 -> null;
            case 2 -> ok("sum=0\n", "");
            default -> "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 19\r\n\r\ndevice unavailable\n";
        };
        try (ScriptedServer server = new ScriptedServer(script);
             RawHttpClient client = new RawHttpClient(server.port(), Duration.ofSeconds(10))) {
            client.send(1, 4, 3);
            assertNull(client.mismatch(1, 4, 3));
            assertFalse(client.connected(), "Connection: close closed it");

            assertThrows(EOFException.class, () -> client.send(1, 4, 3), "the server dropped it unanswered");
            assertFalse(client.connected(), "a broken connection is closed");

            client.send(1, 4, 3);
            assertEquals("HTTP 200: sum=0", client.mismatch(1, 4, 3));
            client.send(1, 4, 3);
            assertEquals("HTTP 503: device unavailable", client.mismatch(1, 4, 3));
            assertEquals(3, server.connections, "a new connection after the close and after the break");
            assertEquals(4, server.requests.size());
        }
    }

    @Test
    void aServerThatDoesNotAnswerTimesTheReadOut() throws Exception {
        // A listener that never accepts: the kernel completes the connect, nobody ever reads or answers.
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getByName(DemoServer.HOST));
             RawHttpClient client = new RawHttpClient(silent.getLocalPort(), Duration.ofMillis(300))) {
            long t0 = System.nanoTime();
            assertThrows(java.net.SocketTimeoutException.class, () -> client.get(1, 4, 3));
            long tookMs = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(tookMs >= 250 && tookMs < 10_000, "timed out after " + tookMs + " ms for 300 ms");
            assertFalse(client.connected());
        }
        assertThrows(IllegalArgumentException.class, () -> new RawHttpClient(0, Duration.ofSeconds(1)));
    }
}
