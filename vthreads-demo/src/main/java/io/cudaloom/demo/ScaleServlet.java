package io.cudaloom.demo;

import io.cudaloom.GpuFaultException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Objects;

/**
 * {@code GET /scale?seed=S&n=N&factor=F}: builds the vector {@code S, S+1, ..., S+N-1} (padded
 * with zeros to {@link DemoWorkload#VECTOR_LENGTH}), scales it by {@code F} on the device in plain
 * blocking style ({@link DemoWorkload#scale}, which {@code await()}s the stream on this request's
 * virtual thread), and answers {@code sum=<sum of the scaled vector>}, which a client can check:
 * {@code F * (N*S + N*(N-1)/2)}.
 *
 * <p>Ranges keep every value exact in float: 0 <= S <= 10000, 1 <= N <= 256 (default 256),
 * -100 <= F <= 100 (default 2). Bad input: 400. Device fault: 500. Device closed
 * ({@link io.cudaloom.ReactorClosedException}, or a stream closed with it): 503.
 */
public final class ScaleServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private final transient DemoWorkload workload;

    public ScaleServlet(DemoWorkload workload) {
        this.workload = Objects.requireNonNull(workload, "workload");
    }

    /** What a correct response body is for these parameters. */
    public static String expectedBody(int seed, int n, int factor) {
        return "sum=" + expectedSum(seed, n, factor) + "\n";
    }

    static long expectedSum(int seed, int n, int factor) {
        return (long) factor * ((long) n * seed + (long) n * (n - 1) / 2);
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        int seed, n, factor;
        try {
            seed = param(req, "seed", 0, 0, 10_000);
            n = param(req, "n", DemoWorkload.VECTOR_LENGTH, 1, DemoWorkload.VECTOR_LENGTH);
            factor = param(req, "factor", 2, -100, 100);
        } catch (IllegalArgumentException e) {
            reply(resp, HttpServletResponse.SC_BAD_REQUEST, "bad request: " + e.getMessage() + "\n");
            return;
        }
        float[] data = new float[DemoWorkload.VECTOR_LENGTH]; // zeros beyond n
        for (int i = 0; i < n; i++) {
            data[i] = seed + i;
        }
        try {
            workload.scale(data, factor);       // launch, await (parks this virtual thread), copy back
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reply(resp, HttpServletResponse.SC_SERVICE_UNAVAILABLE, "interrupted\n");
            return;
        } catch (GpuFaultException e) {
            reply(resp, HttpServletResponse.SC_INTERNAL_SERVER_ERROR, "GPU fault: " + e.getMessage() + "\n");
            return;
        } catch (IllegalStateException e) {    // ReactorClosedException, or a stream closed with its device
            reply(resp, HttpServletResponse.SC_SERVICE_UNAVAILABLE, "device unavailable: " + e.getMessage() + "\n");
            return;
        }
        long sum = 0;
        for (float v : data) {
            sum += (long) v;                    // exact: every value is an integer below 2^24
        }
        reply(resp, HttpServletResponse.SC_OK, "sum=" + sum + "\n");
    }

    private static int param(HttpServletRequest req, String name, int dflt, int min, int max) {
        String v = req.getParameter(name);
        if (v == null) {
            return dflt;
        }
        int n;
        try {
            n = Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a whole number, was '" + v + "'");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", was " + n);
        }
        return n;
    }

    private static void reply(HttpServletResponse resp, int status, String body) throws IOException {
        resp.setStatus(status);
        resp.setContentType("text/plain;charset=utf-8");
        resp.getWriter().write(body);
    }
}
