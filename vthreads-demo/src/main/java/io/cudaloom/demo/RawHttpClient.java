package io.cudaloom.demo;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;

/**
 * The {@link LoadGenerator}'s HTTP/1.1 client: one persistent keep-alive connection to
 * {@code 127.0.0.1:port} that sends {@code GET /scale?seed=S&n=N&factor=F} and reads each answer
 * before the next request (no pipelining). It is as cheap as a client can be, so that a
 * benchmark's client costs less CPU than the server it loads: blocking {@link Socket} I/O (on a
 * virtual thread a blocked read parks it, no platform thread per connection), the request written
 * as ASCII into a reused buffer in one write, the response parsed from bytes ({@link Response}).
 *
 * <p>The connection opens on the first request, and again on the next request after the server
 * said {@code Connection: close}, closed a response delimited by its end, or after any I/O error
 * (which closes the connection and is thrown). Every connect and every read is bounded by the
 * timeout given ({@code SO_TIMEOUT}); a request whose answer dribbles in slower than that per read
 * is not bounded here (the load generator's join bound ends it).
 *
 * <p>Not thread-safe: one worker owns one instance and closes it.
 */
final class RawHttpClient implements LoadGenerator.Client {
    private static final byte[] SEED = ascii("GET /scale?seed="), N = ascii("&n="), FACTOR = ascii("&factor=");

    private final InetSocketAddress address;
    private final int timeoutMillis;
    /** {@code " HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n"}: what follows the parameters. */
    private final byte[] tail;
    /** The request, rebuilt in place: room for the fixed parts and three ints of up to 11 characters. */
    private final byte[] request;
    private final Response response = new Response();
    private Socket socket;          // null: not connected
    private OutputStream out;
    private int status;

    /**
     * @param timeout bounds each connect and each read; at least 1 ms (a timeout of 0 would mean
     *     none, so shorter ones are rounded up)
     */
    RawHttpClient(int port, Duration timeout) {
        if (port < 1 || port > 65_535) {
            throw new IllegalArgumentException("port must be between 1 and 65535, was " + port);
        }
        address = new InetSocketAddress(DemoServer.HOST, port);
        timeoutMillis = (int) Math.clamp(timeout.toMillis(), 1, Integer.MAX_VALUE);
        tail = ascii(" HTTP/1.1\r\nHost: " + DemoServer.HOST + ":" + port + "\r\n\r\n");
        request = new byte[SEED.length + N.length + FACTOR.length + 3 * 11 + tail.length];
    }

    /**
     * Sends {@code GET /scale?seed=..&n=..&factor=..} and reads the whole answer; returns its
     * status, the body is then {@link #response()}'s.
     *
     * @throws IOException if no complete answer came (the connection is closed then)
     */
    int get(int seed, int n, int factor) throws IOException {
        int length = requestBytes(seed, n, factor);
        if (socket == null) {
            connect();
        }
        try {
            out.write(request, 0, length);
            response.read();
        } catch (IOException | RuntimeException e) {
            closeSocket();
            throw e;
        }
        if (!response.keepAlive()) {
            closeSocket();
        }
        return status = response.status();
    }

    /** The last answer (its body stays until the next request). */
    Response response() {
        return response;
    }

    /** The request for these parameters, as sent (for tests). */
    String requestText(int seed, int n, int factor) {
        return new String(request, 0, requestBytes(seed, n, factor), StandardCharsets.US_ASCII);
    }

    /** Whether a connection is open now. */
    boolean connected() {
        return socket != null;
    }

    @Override
    public void send(int seed, int n, int factor) throws IOException {
        get(seed, n, factor);
    }

    @Override
    public String mismatch(int seed, int n, int factor) {
        return status == 200 && response.bodyEquals(ScaleServlet.expectedBody(seed, n, factor)) ? null
                : "HTTP " + status + ": " + response.bodyText().strip();
    }

    @Override
    public String protocol() {
        return LoadGenerator.RAW_HTTP_1_1;
    }

    @Override
    public void close() {
        closeSocket();
    }

    private void connect() throws IOException {
        Socket s = new Socket();
        try {
            s.setTcpNoDelay(true);
            s.setSoTimeout(timeoutMillis);
            s.connect(address, timeoutMillis);
            out = s.getOutputStream();
            response.attach(s.getInputStream());
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e;
        }
        socket = s;
    }

    private void closeSocket() {
        Socket s = socket;
        socket = null;
        out = null;
        if (s != null) {
            try {
                s.close();
            } catch (IOException e) {
                // closed either way: nothing left to release
            }
        }
    }

    private int requestBytes(int seed, int n, int factor) {
        int at = put(SEED, 0);
        at = putInt(seed, at);
        at = put(N, at);
        at = putInt(n, at);
        at = put(FACTOR, at);
        at = putInt(factor, at);
        return put(tail, at);
    }

    private int put(byte[] part, int at) {
        System.arraycopy(part, 0, request, at, part.length);
        return at + part.length;
    }

    private int putInt(int value, int at) {
        long v = value;                                  // long: -Integer.MIN_VALUE fits
        if (v < 0) {
            request[at++] = '-';
            v = -v;
        }
        int digits = 1;
        for (long p = 10; p <= v; p *= 10) {
            digits++;
        }
        for (int i = at + digits - 1; i >= at; i--, v /= 10) {
            request[i] = (byte) ('0' + v % 10);
        }
        return at + digits;
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * One HTTP/1.1 response, parsed from the bytes of a stream with buffers that are reused from
     * one response to the next: the status line, the headers ({@code Content-Length},
     * {@code Transfer-Encoding: chunked}, {@code Connection}), then the body: chunked (trailer
     * read and dropped), of its {@code Content-Length}, none (1xx, 204, 304; interim 1xx
     * responses are skipped), or up to the end of the stream. A malformed response is a
     * {@link ProtocolException} naming what was wrong; a stream that ends before the response
     * does, an {@link EOFException}.
     */
    static final class Response {
        /** The longest status line, header line or chunk-size line read. */
        static final int MAX_LINE = 8192;
        /** The largest body read. */
        static final int MAX_BODY = 1 << 20;

        private final byte[] buf = new byte[MAX_LINE];
        private int pos, lim;                // buf[pos, lim): read from the stream, not yet parsed
        private int lineStart;               // of the line line() returned
        private InputStream in;
        private byte[] body = new byte[256];
        private int bodyLength;
        private int status;
        private boolean keepAlive;

        /** Reads from {@code in} from now on (a new connection: nothing left of the previous one). */
        void attach(InputStream in) {
            this.in = in;
            pos = lim = 0;
        }

        int status() {
            return status;
        }

        /** Whether the connection may carry the next request. */
        boolean keepAlive() {
            return keepAlive;
        }

        int bodyLength() {
            return bodyLength;
        }

        /** Whether the body is exactly {@code expected}'s characters, each one byte (ASCII). */
        boolean bodyEquals(String expected) {
            if (expected.length() != bodyLength) {
                return false;
            }
            for (int i = 0; i < bodyLength; i++) {
                if ((body[i] & 0xff) != expected.charAt(i)) {
                    return false;
                }
            }
            return true;
        }

        /** The body as text (for an error message). */
        String bodyText() {
            return new String(body, 0, bodyLength, StandardCharsets.UTF_8);
        }

        /** Reads the next response to its end. */
        void read() throws IOException {
            long contentLength;
            boolean chunked;
            do {
                statusLine();
                contentLength = -1;
                chunked = false;
                for (int end; (end = line()) > lineStart; ) {
                    int colon = indexOf(':', lineStart, end);
                    if (colon < 0) {
                        throw new ProtocolException("malformed header line (no ':'): '" + text(lineStart, end) + "'");
                    }
                    int v = trimStart(colon + 1, end), ve = trimEnd(v, end);
                    if (nameIs("content-length", lineStart, colon)) {
                        contentLength = contentLength(v, ve);
                    } else if (nameIs("transfer-encoding", lineStart, colon)) {
                        if (!endsWithIgnoreCase("chunked", v, ve)) {
                            throw new ProtocolException("unsupported Transfer-Encoding: '" + text(v, ve) + "'");
                        }
                        chunked = true;
                    } else if (nameIs("connection", lineStart, colon)) {
                        if (containsIgnoreCase("close", v, ve)) {
                            keepAlive = false;
                        } else if (containsIgnoreCase("keep-alive", v, ve)) {
                            keepAlive = true;
                        }
                    }
                }
            } while (status / 100 == 1);          // an interim response: the real one follows
            bodyLength = 0;
            if (status == 204 || status == 304) {
                return;
            }
            if (chunked) {                        // chunked wins over a Content-Length (RFC 9112, 6.3)
                for (int size; (size = chunkSize()) > 0; ) {
                    readBody(size);
                    if (line() != lineStart) {
                        throw new ProtocolException("chunk of " + size + " bytes not followed by CRLF");
                    }
                }
                while (line() > lineStart) {
                    // a trailer field: dropped
                }
            } else if (contentLength >= 0) {
                if (contentLength > MAX_BODY) {
                    throw new ProtocolException("Content-Length " + contentLength + " above " + MAX_BODY);
                }
                readBody((int) contentLength);
            } else {                              // delimited by the end of the connection
                keepAlive = false;
                while (true) {
                    if (pos == lim) {
                        pos = lim = 0;
                        int n = in.read(buf, 0, buf.length);
                        if (n < 0) {
                            return;
                        }
                        lim = n;
                    }
                    readBody(lim - pos);
                }
            }
        }

        /** {@code HTTP/1.x SSS[ reason]}: sets the status and the version's default keep-alive. */
        private void statusLine() throws IOException {
            int end = line(), s = lineStart;
            if (end - s < 12 || !startsWith("HTTP/1.", s) || buf[s + 8] != ' ' || (end > s + 12 && buf[s + 12] != ' ')
                    || !digit(buf[s + 9]) || !digit(buf[s + 10]) || !digit(buf[s + 11])) {
                throw new ProtocolException("malformed status line: '" + text(s, end) + "'");
            }
            status = (buf[s + 9] - '0') * 100 + (buf[s + 10] - '0') * 10 + (buf[s + 11] - '0');
            keepAlive = buf[s + 7] != '0';        // HTTP/1.0 closes unless it says keep-alive
        }

        private long contentLength(int from, int to) throws ProtocolException {
            if (from == to || to - from > 10) {
                throw new ProtocolException("bad Content-Length: '" + text(from, to) + "'");
            }
            long n = 0;
            for (int i = from; i < to; i++) {
                if (!digit(buf[i])) {
                    throw new ProtocolException("bad Content-Length: '" + text(from, to) + "'");
                }
                n = n * 10 + buf[i] - '0';
            }
            return n;
        }

        /** A chunk-size line: hex digits, optionally {@code ;extensions}. */
        private int chunkSize() throws IOException {
            int end = line(), s = lineStart, e = indexOf(';', s, end);
            e = trimEnd(s, e < 0 ? end : e);
            long size = 0;
            for (int i = s; i < e; i++) {
                int d = Character.digit(buf[i], 16);
                if (d < 0 || size > MAX_BODY) {
                    throw new ProtocolException("bad chunk size: '" + text(s, end) + "'");
                }
                size = size * 16 + d;
            }
            if (s == e) {
                throw new ProtocolException("bad chunk size: '" + text(s, end) + "'");
            }
            if (bodyLength + size > MAX_BODY) {
                throw new ProtocolException("chunked body above " + MAX_BODY + " bytes");
            }
            return (int) size;
        }

        /**
         * Reads up to the next LF: the line, without its CR LF (or bare LF), is
         * {@code buf[lineStart, returned end)}, and stays there until the next read from the stream.
         */
        private int line() throws IOException {
            for (int scan = pos; ; ) {
                for (; scan < lim; scan++) {
                    if (buf[scan] == '\n') {
                        lineStart = pos;
                        pos = scan + 1;
                        return scan > lineStart && buf[scan - 1] == '\r' ? scan - 1 : scan;
                    }
                }
                if (lim == buf.length) {          // full: move the unparsed bytes to the front
                    if (pos == 0) {
                        throw new ProtocolException("a response line is longer than " + MAX_LINE + " bytes");
                    }
                    System.arraycopy(buf, pos, buf, 0, lim - pos);
                    scan -= pos;
                    lim -= pos;
                    pos = 0;
                }
                int n = in.read(buf, lim, buf.length - lim);
                if (n < 0) {
                    throw new EOFException("the server closed the connection before the response ended");
                }
                lim += n;
            }
        }

        /** Appends the next {@code count} bytes of the stream to the body. */
        private void readBody(int count) throws IOException {
            if (count > MAX_BODY - bodyLength) {
                throw new ProtocolException("response body above " + MAX_BODY + " bytes");
            }
            if (body.length < bodyLength + count) {
                body = Arrays.copyOf(body, (int) Math.min(MAX_BODY, Math.max(bodyLength + count, 2L * body.length)));
            }
            int buffered = Math.min(count, lim - pos);
            System.arraycopy(buf, pos, body, bodyLength, buffered);
            pos += buffered;
            bodyLength += buffered;
            for (int left = count - buffered, n; left > 0; left -= n, bodyLength += n) {
                n = in.read(body, bodyLength, left);
                if (n < 0) {
                    throw new EOFException("the server closed the connection " + left + " bytes before the body ended");
                }
            }
        }

        private int indexOf(char c, int from, int to) {
            for (int i = from; i < to; i++) {
                if (buf[i] == c) {
                    return i;
                }
            }
            return -1;
        }

        private int trimStart(int from, int to) {
            while (from < to && (buf[from] == ' ' || buf[from] == '\t')) {
                from++;
            }
            return from;
        }

        private int trimEnd(int from, int to) {
            while (to > from && (buf[to - 1] == ' ' || buf[to - 1] == '\t')) {
                to--;
            }
            return to;
        }

        private boolean startsWith(String s, int at) {
            for (int i = 0; i < s.length(); i++) {
                if (buf[at + i] != s.charAt(i)) {
                    return false;
                }
            }
            return true;
        }

        /** Whether {@code buf[from, to)} is {@code lower}, ignoring case (ASCII). */
        private boolean nameIs(String lower, int from, int to) {
            return to - from == lower.length() && regionIgnoreCase(lower, from);
        }

        private boolean endsWithIgnoreCase(String lower, int from, int to) {
            return to - from >= lower.length() && regionIgnoreCase(lower, to - lower.length());
        }

        private boolean containsIgnoreCase(String lower, int from, int to) {
            for (int i = from; i + lower.length() <= to; i++) {
                if (regionIgnoreCase(lower, i)) {
                    return true;
                }
            }
            return false;
        }

        private boolean regionIgnoreCase(String lower, int at) {
            for (int i = 0; i < lower.length(); i++) {
                int b = buf[at + i];
                if ((b >= 'A' && b <= 'Z' ? b + ('a' - 'A') : b) != lower.charAt(i)) {
                    return false;
                }
            }
            return true;
        }

        private static boolean digit(byte b) {
            return b >= '0' && b <= '9';
        }

        private String text(int from, int to) {
            return new String(buf, from, to - from, StandardCharsets.ISO_8859_1);
        }
    }
}
