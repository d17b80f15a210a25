import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.undertow.Handlers;
import io.undertow.Undertow;
import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;
import io.undertow.util.Methods;
import io.undertow.util.SameThreadExecutor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.xnio.Options;

/**
 * java-undertow: Undertow on XNIO, $WORKERS IO threads each running its own
 * selector loop. Non-blocking work (/, /json, /echo, timers for /delay and
 * /tenth) stays on the IO thread; the blocking disk read of /file is dispatched
 * to Undertow's worker pool.
 */
public final class UndertowServer implements HttpHandler {
    static final int MAX_BODY = 1 << 20;
    static final ObjectMapper MAPPER = new ObjectMapper();
    static final byte[] HELLO = "Hello, World!".getBytes(StandardCharsets.ISO_8859_1);
    static final byte[] XS = new byte[MAX_BODY];
    static final AtomicLong TENTH = new AtomicLong();

    static {
        Arrays.fill(XS, (byte) 'x');
    }

    record Message(String message) {
    }

    private final Path helloFile;

    UndertowServer(Path helloFile) {
        this.helloFile = helloFile;
    }

    public static void main(String[] args) {
        String host = env("HOST", "127.0.0.1");
        int port = Integer.parseInt(env("PORT", "8080"));
        int workers = Integer.parseInt(env("WORKERS", Integer.toString(Runtime.getRuntime().availableProcessors())));
        Path helloFile = Path.of(env("HELLO_FILE", "../../assets/hello.html"));

        Undertow server = Undertow.builder()
                .addHttpListener(port, host)
                .setIoThreads(workers)           // one event loop per core
                .setWorkerThreads(workers * 8)   // Undertow's default ratio; runs the dispatched /file reads
                .setSocketOption(Options.BACKLOG, 4096)
                // answers "Expect: 100-continue" when the handler starts reading the body
                .setHandler(Handlers.httpContinueRead(new UndertowServer(helloFile)))
                .build();
        try {
            server.start();
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.err.println("java-undertow: cannot listen on " + host + ":" + port + ": " + cause);
            System.exit(1);   // XNIO's threads are already running
        }
        System.out.println("java-undertow listening on " + host + ":" + port + " (" + workers + " IO threads)");
    }

    @Override
    public void handleRequest(HttpServerExchange ex) throws Exception {
        boolean get = ex.getRequestMethod().equals(Methods.GET) || ex.getRequestMethod().equals(Methods.HEAD);
        switch (ex.getRequestPath()) {
            case "/":
                if (!get) notAllowed(ex, "GET, HEAD");
                else send(ex, 200, "text/plain", ByteBuffer.wrap(HELLO));
                return;
            case "/json":
                if (!get) notAllowed(ex, "GET, HEAD");
                else send(ex, 200, "application/json", ByteBuffer.wrap(json()));
                return;
            case "/file":
                if (!get) {
                    notAllowed(ex, "GET, HEAD");
                } else if (ex.isInIoThread()) {
                    ex.dispatch(this);   // disk I/O blocks: run again on a worker thread
                } else {
                    sendFile(ex);
                }
                return;
            case "/delay": {
                if (!get) {
                    notAllowed(ex, "GET, HEAD");
                    return;
                }
                long ms = queryInt(ex.getQueryString(), "ms", 0, 60_000, 0);
                long n = queryInt(ex.getQueryString(), "bytes", 0, MAX_BODY, 0);
                if (ms < 0 || n < 0) badRequest(ex);
                else later(ex, ms, "text/plain", ByteBuffer.wrap(XS, 0, (int) n));
                return;
            }
            case "/tenth": {
                if (!get) {
                    notAllowed(ex, "GET, HEAD");
                    return;
                }
                long ms = queryInt(ex.getQueryString(), "ms", 0, 60_000, 2000);
                if (ms < 0) {
                    badRequest(ex);
                    return;
                }
                long count = TENTH.incrementAndGet();
                later(ex, count % 10 == 0 ? ms : 0, "text/plain",
                        ByteBuffer.wrap(Long.toString(count).getBytes(StandardCharsets.ISO_8859_1)));
                return;
            }
            case "/echo":
                if (!ex.getRequestMethod().equals(Methods.POST)) {
                    notAllowed(ex, "POST");
                    return;
                }
                receiveBody(ex);
                return;
            default:
                text(ex, 404, "Not Found");
        }
    }

    /**
     * Reads the body without blocking (Content-Length or chunked, decoded by Undertow).
     * The 1 MiB limit is ours, not MAX_ENTITY_SIZE: on an oversized chunked body
     * Undertow would drop the connection instead of answering 413.
     */
    private static void receiveBody(HttpServerExchange ex) {
        if (ex.getRequestContentLength() > MAX_BODY) {   // -1 when chunked
            tooLarge(ex);
            return;
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        ex.getRequestReceiver().receivePartialBytes((e, part, last) -> {
            if (e.isResponseStarted()) return;   // already refused
            if (body.size() + part.length > MAX_BODY) {
                tooLarge(e);
                return;
            }
            body.writeBytes(part);
            if (last) send(e, 200, "application/octet-stream", ByteBuffer.wrap(body.toByteArray()));
        }, (e, err) -> {
            e.setPersistent(false);   // framing of the rest is unknown: close after
            text(e, 400, "Bad Request");
        });
    }

    private static void tooLarge(HttpServerExchange ex) {
        ex.setPersistent(false);   // don't read the rest of the body: close after answering
        text(ex, 413, "Payload Too Large");
    }

    /** Per request, with Jackson. */
    private static byte[] json() throws JsonProcessingException {
        return MAPPER.writeValueAsBytes(new Message("Hello, World!"));
    }

    private void sendFile(HttpServerExchange ex) {
        byte[] file;
        try {
            file = Files.readAllBytes(helloFile);   // from disk on every request
        } catch (IOException e) {
            text(ex, 500, "Internal Server Error");
            return;
        }
        send(ex, 200, "text/html", ByteBuffer.wrap(file));
    }

    /** Answers after ms milliseconds on an IO-thread timer: nothing sleeps. */
    private static void later(HttpServerExchange ex, long ms, String type, ByteBuffer body) {
        if (ms == 0) {
            send(ex, 200, type, body);
            return;
        }
        // dispatch() keeps the exchange open after handleRequest returns.
        ex.dispatch(SameThreadExecutor.INSTANCE, () ->
                ex.getIoThread().executeAfter(() -> send(ex, 200, type, body), ms, TimeUnit.MILLISECONDS));
    }

    private static void send(HttpServerExchange ex, int status, String type, ByteBuffer body) {
        ex.setStatusCode(status);
        ex.getResponseHeaders()
                .put(Headers.CONTENT_TYPE, type)
                .put(Headers.CONTENT_LENGTH, body.remaining());   // explicit, so Undertow never chunks
        ex.getResponseSender().send(body);
    }

    private static void text(HttpServerExchange ex, int status, String msg) {
        send(ex, status, "text/plain", ByteBuffer.wrap(msg.getBytes(StandardCharsets.ISO_8859_1)));
    }

    private static void badRequest(HttpServerExchange ex) {
        text(ex, 400, "Bad Request");
    }

    private static void notAllowed(HttpServerExchange ex, String allow) {
        ex.getResponseHeaders().put(Headers.ALLOW, allow);
        text(ex, 405, "Method Not Allowed");
    }

    /** Value of query parameter {@code key} in [min, max]; {@code dflt} if absent; -1 if invalid. */
    static long queryInt(String query, String key, long min, long max, long dflt) {
        long result = dflt;
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            String k = eq < 0 ? pair : pair.substring(0, eq);
            if (!k.equals(key)) continue;
            String v = eq < 0 ? "" : pair.substring(eq + 1);
            if (v.isEmpty() || v.length() > 9) return -1;
            for (int i = 0; i < v.length(); i++)
                if (v.charAt(i) < '0' || v.charAt(i) > '9') return -1;
            result = Long.parseLong(v);
            if (result < min || result > max) return -1;
        }
        return result;
    }

    static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? dflt : v;
    }
}
