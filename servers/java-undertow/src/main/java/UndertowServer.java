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
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.xnio.Options;

/**
 * java-undertow: Undertow on XNIO, $WORKERS IO threads each running its own
 * selector loop. Non-blocking work (/, /json, /echo, timers for /delay and
 * /tenth) stays on the IO thread; the blocking disk read of /file is dispatched
 * to Undertow's worker pool.
 */
public final class UndertowServer implements HttpHandler {
    static final ObjectMapper MAPPER = new ObjectMapper();

    record Message(String message) {
    }

    private final Path helloFile;

    UndertowServer(Path helloFile) {
        this.helloFile = helloFile;
    }

    public static void main(String[] args) {
        ServerEnv env = ServerEnv.read("java-undertow");
        SSLContext tls = ServerTls.context(env);   // null: plaintext
        Undertow.Builder builder = Undertow.builder();
        if (tls == null) builder.addHttpListener(env.port(), env.host());
        else builder.addHttpsListener(env.port(), env.host(), tls);   // HTTP/2 stays off (Undertow's default): no ALPN
        Undertow server = builder
                .setIoThreads(env.workers())           // one event loop per core
                .setWorkerThreads(env.workers() * 8)   // Undertow's default ratio; runs the dispatched /file reads
                .setSocketOption(Options.BACKLOG, ServerEnv.BACKLOG)
                // answers "Expect: 100-continue" when the handler starts reading the body
                .setHandler(Handlers.httpContinueRead(new UndertowServer(env.helloFile())))
                .build();
        try {
            server.start();
        } catch (RuntimeException e) {
            env.cannotListen(e.getCause() != null ? e.getCause() : e);   // exits: XNIO's threads are already running
        }
        env.listening(env.workers() + " IO threads");
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
