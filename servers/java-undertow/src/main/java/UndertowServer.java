import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.undertow.Handlers;
import io.undertow.Undertow;
import io.undertow.UndertowOptions;
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
import java.sql.SQLException;
import java.util.Deque;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.xnio.Options;

/**
 * java-undertow: Undertow on XNIO, $WORKERS IO threads each running its own
 * selector loop. Non-blocking work (/, /json, /echo, timers for /delay and
 * /tenth) stays on the IO thread; the blocking disk read of /file and the
 * blocking JDBC queries of the database paths are dispatched to Undertow's
 * worker pool, as Undertow's documentation says to do with blocking work; so is
 * the CPU-heavy gzip of /compress, which would hold the IO thread as long.
 */
public final class UndertowServer implements HttpHandler {
    static final ObjectMapper MAPPER = new ObjectMapper();

    record Message(String message) {
    }

    private final Path helloFile;
    private final Database database;

    UndertowServer(Path helloFile, Database database) {
        this.helloFile = helloFile;
        this.database = database;
    }

    public static void main(String[] args) {
        ServerEnv env = ServerEnv.read("java-undertow");
        SSLContext tls = ServerTls.context(env);   // null: plaintext
        Database database = Database.fromEnv("java-undertow");   // opens the pool before listening
        String http2 = http2Mode(env);   // "", "h2c" or "h2"
        Undertow.Builder builder = Undertow.builder();
        if (tls == null) builder.addHttpListener(env.port(), env.host());
        else builder.addHttpsListener(env.port(), env.host(), tls);   // without $HTTP2, HTTP/2 stays off (Undertow's default): no ALPN
        // $HTTP2 (SPEC.md, HTTP/2): Undertow's own HTTP/2, switched on as its documentation says, with
        // UndertowOptions.ENABLE_HTTP2. On the HTTPS listener it offers h2 and http/1.1 by ALPN; on the HTTP
        // listener it serves HTTP/2 with prior knowledge (and the h2c Upgrade) beside HTTP/1.1. Its HTTP/2
        // SETTINGS stay Undertow's defaults.
        if (!http2.isEmpty()) builder.setServerOption(UndertowOptions.ENABLE_HTTP2, true);
        Undertow server = builder
                .setIoThreads(env.workers())           // one event loop per core
                // Undertow's default ratio; runs the dispatched /file reads and database queries
                .setWorkerThreads(env.workers() * 8)
                .setSocketOption(Options.BACKLOG, ServerEnv.BACKLOG)
                // answers "Expect: 100-continue" when the handler starts reading the body
                .setHandler(Handlers.httpContinueRead(new UndertowServer(env.helloFile(), database)))
                .build();
        try {
            server.start();
        } catch (RuntimeException e) {
            env.cannotListen(e.getCause() != null ? e.getCause() : e);   // exits: XNIO's threads are already running
        }
        env.listening(env.workers() + " IO threads" + (http2.isEmpty() ? "" : ", HTTP/2 (" + http2 + ")"));
    }

    /** $HTTP2: "" (unset: HTTP/1.1 only), "h2c", or "h2" (which needs the $TLS_* variables); anything else exits. */
    private static String http2Mode(ServerEnv env) {
        String mode = System.getenv("HTTP2");
        if (mode == null || mode.isEmpty()) return "";
        if (mode.equals("h2c") && !ServerTls.requested() || mode.equals("h2") && ServerTls.requested()) return mode;
        System.err.println(env.name() + ": $HTTP2=" + mode + " is not served: h2c (without $TLS_*) or h2 (with $TLS_*)");
        System.exit(1);
        return null;
    }

    @Override
    public void handleRequest(HttpServerExchange ex) throws Exception {
        boolean get = ex.getRequestMethod().equals(Methods.GET) || ex.getRequestMethod().equals(Methods.HEAD);
        switch (ex.getRequestPath()) {
            case "/":
                if (!get) notAllowed(ex, "GET, HEAD");
                else send(ex, 200, "text/plain", ByteBuffer.wrap(Contract.HELLO));
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
                long ms = Contract.delayMs(ex.getQueryString());
                int n = Contract.delayBytes(ex.getQueryString());
                if (ms < 0 || n < 0) badRequest(ex);
                else later(ex, ms, "text/plain", ByteBuffer.wrap(Contract.XS, 0, n));
                return;
            }
            case "/tenth": {
                if (!get) {
                    notAllowed(ex, "GET, HEAD");
                    return;
                }
                long ms = Contract.tenthMs(ex.getQueryString());
                if (ms < 0) {
                    badRequest(ex);
                    return;
                }
                long count = Contract.nextTenth();
                later(ex, Contract.tenthWaits(count) ? ms : 0, "text/plain",
                        ByteBuffer.wrap(Long.toString(count).getBytes(StandardCharsets.ISO_8859_1)));
                return;
            }
            case "/db":
            case "/queries":
            case "/fortunes":
            case "/updates":
                ex.getResponseHeaders().put(Headers.SERVER, "java-undertow");   // SPEC.md: on database paths
                if (!get) notAllowed(ex, "GET, HEAD");
                else if (!database.configured()) text(ex, 503, "Service Unavailable");
                else if (ex.isInIoThread()) ex.dispatch(this);   // JDBC blocks: run again on a worker thread
                else query(ex);
                return;
            case "/compress": {
                if (!get) {
                    notAllowed(ex, "GET, HEAD");
                    return;
                }
                int kb = Contract.compressKb(ex.getQueryString());
                if (kb < 0) badRequest(ex);
                else if (ex.isInIoThread()) ex.dispatch(this);   // gzip holds the thread: run again on a worker thread
                else compress(ex, kb);
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

    /** A database path, on a worker thread: the JDBC calls block it until PostgreSQL answers. */
    private void query(HttpServerExchange ex) throws JsonProcessingException {
        try {
            switch (ex.getRequestPath()) {
                case "/db" -> send(ex, 200, "application/json", ByteBuffer.wrap(MAPPER.writeValueAsBytes(database.db())));
                case "/queries" -> send(ex, 200, "application/json",
                        ByteBuffer.wrap(MAPPER.writeValueAsBytes(database.queries(queries(ex)))));
                case "/updates" -> send(ex, 200, "application/json",
                        ByteBuffer.wrap(MAPPER.writeValueAsBytes(database.updates(queries(ex)))));
                default -> send(ex, 200, "text/html; charset=utf-8",
                        ByteBuffer.wrap(Database.fortunesPage(database.fortunes()).getBytes(StandardCharsets.UTF_8)));
            }
        } catch (SQLException e) {
            System.err.println("java-undertow: " + ex.getRequestPath() + ": " + e);
            text(ex, 500, "Internal Server Error");
        }
    }

    /** ?queries=N as Undertow decodes it, clamped by SPEC.md's rule. */
    private static int queries(HttpServerExchange ex) {
        Deque<String> values = ex.getQueryParameters().get("queries");
        return Database.count(values == null ? null : values.peekFirst());
    }

    /**
     * Reads the body without blocking (Content-Length or chunked, decoded by Undertow).
     * The 1 MiB limit is ours, not MAX_ENTITY_SIZE: on an oversized chunked body
     * Undertow would drop the connection instead of answering 413.
     */
    private static void receiveBody(HttpServerExchange ex) {
        if (ex.getRequestContentLength() > Contract.MAX_BODY) {   // -1 when chunked
            tooLarge(ex);
            return;
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        ex.getRequestReceiver().receivePartialBytes((e, part, last) -> {
            if (e.isResponseStarted()) return;   // already refused
            if (body.size() + part.length > Contract.MAX_BODY) {
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

    /**
     * /compress on a worker thread: $COMPRESS_FILE's first kb KiB gzipped on every request by
     * java-http-contract's compressGzip (the JDK's GZIPOutputStream at zlib's level 6); 500 if unreadable.
     */
    private static void compress(HttpServerExchange ex, int kb) {
        byte[] body = Contract.compressGzip(kb);
        if (body == null) {
            text(ex, 500, "Internal Server Error");
            return;
        }
        ex.getResponseHeaders().put(Headers.CONTENT_ENCODING, "gzip");
        send(ex, 200, "application/json", ByteBuffer.wrap(body));
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
}
