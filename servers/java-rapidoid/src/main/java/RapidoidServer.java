import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.sql.Connection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.rapidoid.buffer.Buf;
import org.rapidoid.data.BufRange;
import org.rapidoid.env.Env;
import org.rapidoid.http.AbstractHttpServer;
import org.rapidoid.http.HttpStatus;
import org.rapidoid.http.MediaType;
import org.rapidoid.jdbc.JdbcClient;
import org.rapidoid.job.Jobs;
import org.rapidoid.net.ServerBuilder;
import org.rapidoid.net.TCP;
import org.rapidoid.net.abstracts.Channel;
import org.rapidoid.net.impl.RapidoidHelper;

/**
 * Rapidoid's low-level HTTP server (rapidoid-http-fast, the API Stressgrid and
 * TechEmpower ran): $WORKERS NIO event loops, each connection on one; Rapidoid
 * parses the request and keeps the connection alive, this class routes and writes
 * the answer with Rapidoid's response helpers (which add Server and a cached Date).
 * /delay and /tenth answer later from a timer thread (HttpStatus.ASYNC + resume);
 * the database paths likewise, from Rapidoid's JDBC workers (Database), and /compress
 * from Rapidoid's job executor (Jobs), where its managed handlers run.
 */
public final class RapidoidServer extends AbstractHttpServer {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final MediaType TEXT = MediaType.TEXT_PLAIN;
    private static final Set<String> DB_PATHS = Set.of("/db", "/queries", "/fortunes", "/updates");
    private static final byte[] CONTENT_ENCODING_GZIP = "Content-Encoding: gzip\r\n".getBytes(StandardCharsets.ISO_8859_1);
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "delay-timer");
        t.setDaemon(true);
        return t;
    });
    private final ServerEnv env;
    private final JdbcClient jdbc;   // null without $DATABASE_URL: the database paths answer 503

    private RapidoidServer(ServerEnv env, JdbcClient jdbc) {
        this.env = env;
        this.jdbc = jdbc;
    }

    /** The work of a database path on a JDBC worker's connection: the response body. */
    private interface Query {
        byte[] run(Connection c) throws Exception;
    }

    public static void main(String[] args) {
        // Rapidoid's start-up arguments (server.toml's run passes `profiles=production`): without a
        // mode, Rapidoid infers DEV whenever the classpath holds a folder (target/classes here).
        Env.setArgs(args);
        ServerEnv env = ServerEnv.read("java-rapidoid");
        SSLContext tls = ServerTls.context(env);   // null: plaintext
        JdbcClient jdbc = Database.fromEnv("java-rapidoid");   // opens the pool before listening
        try {
            ServerBuilder server = TCP.server().protocol(new RapidoidServer(env, jdbc)).address(env.host()).port(env.port())
                    .workers(env.workers());
            if (tls != null) server.tls(true).tlsContext(tls);   // Rapidoid's own TLS layer (RapidoidTLS, an SSLEngine per connection)
            server.build().start();
        } catch (RuntimeException e) {
            env.cannotListen(e.getCause() != null ? e.getCause() : e);
        }
        env.listening(env.workers() + " Rapidoid I/O workers");
    }

    @Override
    protected HttpStatus handle(Channel ctx, Buf buf, RapidoidHelper req) {
        boolean keepAlive = req.isKeepAlive.value;
        String path = req.path.str(buf);
        String verb = req.verb.str(buf);
        if (path.equals("/echo")) {
            return verb.equals("POST") ? echo(ctx, buf, req, keepAlive) : text(ctx, 405, keepAlive, "Method Not Allowed");
        }
        if (DB_PATHS.contains(path)) {
            return req.isGet.value ? database(ctx, keepAlive, path, req.query.str(buf))
                    : text(ctx, 405, keepAlive, "Method Not Allowed");
        }
        if (path.equals("/compress")) {
            return req.isGet.value ? compress(ctx, keepAlive, req.query.str(buf)) : text(ctx, 405, keepAlive, "Method Not Allowed");
        }
        if (!path.equals("/") && !path.equals("/json") && !path.equals("/file")
                && !path.equals("/delay") && !path.equals("/tenth")) {
            return text(ctx, 404, keepAlive, "Not Found");
        }
        if (!req.isGet.value) return text(ctx, 405, keepAlive, "Method Not Allowed");
        String query = req.query.str(buf);
        switch (path) {
            case "/":
                return plain(ctx, keepAlive, Contract.HELLO);
            case "/json":
                return json(ctx, keepAlive, serialize(Map.of("message", "Hello, World!")));
            case "/file":
                return file(ctx, keepAlive);
            case "/delay": {
                long ms = Contract.delayMs(query);
                int bytes = Contract.delayBytes(query);
                if (ms < 0 || bytes < 0) return text(ctx, 400, keepAlive, "Bad Request");
                return later(ctx, keepAlive, ms, Contract.XS, bytes);
            }
            default: { // "/tenth"
                long ms = Contract.tenthMs(query);
                if (ms < 0) return text(ctx, 400, keepAlive, "Bad Request");
                long count = Contract.nextTenth();
                byte[] body = Long.toString(count).getBytes(StandardCharsets.ISO_8859_1);
                return later(ctx, keepAlive, Contract.tenthWaits(count) ? ms : 0, body, body.length);
            }
        }
    }

    private static byte[] serialize(Object value) {
        try {
            return JSON.writeValueAsBytes(value);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** /file: read from disk on the connection's event loop, every time. */
    private HttpStatus file(Channel ctx, boolean keepAlive) {
        try {
            return html(ctx, keepAlive, Files.readAllBytes(env.helloFile()));
        } catch (IOException e) {
            return text(ctx, 500, keepAlive, "cannot read " + env.helloFile());
        }
    }

    /**
     * Answers 200 text/plain with body[0, length) after ms: a timer task resumes the
     * connection (Rapidoid's asynchronous answer), the event loop goes on meanwhile.
     */
    private HttpStatus later(Channel ctx, boolean keepAlive, long ms, byte[] body, int length) {
        if (ms == 0) return ok(ctx, keepAlive, body, 0, length, TEXT);
        long connId = ctx.connId();
        long handle = ctx.async();
        timer.schedule(() -> ctx.resume(connId, handle, () -> {
            ok(ctx, keepAlive, body, 0, length, TEXT);
            ctx.send();
            return true;
        }), ms, TimeUnit.MILLISECONDS);
        return HttpStatus.ASYNC;
    }

    /**
     * /compress: $COMPRESS_FILE's first kb KiB gzipped on every request by java-http-contract's compressGzip
     * (the JDK's GZIPOutputStream at zlib's level 6; null, answered 500, if the file is unreadable), on
     * Rapidoid's job executor (Jobs, the pool its managed
     * handlers run on: HttpManagedHandlerDecorator hands them to Jobs.executeInContext), not on the I/O
     * worker, which goes on serving its other connections; answered asynchronously as /delay is.
     */
    private HttpStatus compress(Channel ctx, boolean keepAlive, String query) {
        int kb = Contract.compressKb(query);
        if (kb < 0) return text(ctx, 400, keepAlive, "Bad Request");
        long connId = ctx.connId();
        long handle = ctx.async();
        Jobs.execute(() -> {
            byte[] body = Contract.compressGzip(kb);
            ctx.resume(connId, handle, () -> {
                if (body == null) {
                    text(ctx, 500, keepAlive, "Internal Server Error");
                    ctx.send();
                    return true;
                }
                startResponse(ctx, keepAlive);   // as ok() does, then one header more before the body's
                ctx.write(CONTENT_ENCODING_GZIP);
                writeBody(ctx, body, MediaType.JSON);
                ctx.send();
                return true;
            });
        });
        return HttpStatus.ASYNC;
    }

    private HttpStatus database(Channel ctx, boolean keepAlive, String path, String query) {
        if (jdbc == null) return text(ctx, 503, keepAlive, "Service Unavailable");
        switch (path) {
            case "/db":
                return later(ctx, keepAlive, MediaType.JSON, c -> serialize(Database.db(c)));
            case "/queries":
                return later(ctx, keepAlive, MediaType.JSON, c -> serialize(Database.queries(c, Database.count(query))));
            case "/updates":
                return later(ctx, keepAlive, MediaType.JSON, c -> serialize(Database.updates(c, Database.count(query))));
            default: // "/fortunes"
                return later(ctx, keepAlive, MediaType.HTML_UTF_8, Database::fortunes);
        }
    }

    /**
     * Runs query on one of Rapidoid's JDBC workers (JdbcClient.execute, with the pooled connection
     * that worker holds) and answers from there, as /delay does from its timer: the I/O worker goes
     * on meanwhile. A failed query answers 500 and is thrown on, so the worker drops its connection.
     */
    private HttpStatus later(Channel ctx, boolean keepAlive, MediaType type, Query query) {
        long connId = ctx.connId();
        long handle = ctx.async();
        jdbc.execute(c -> {
            byte[] body = null;
            try {
                body = query.run(c);
            } finally {
                byte[] answer = body;
                ctx.resume(connId, handle, () -> {
                    if (answer == null) text(ctx, 500, keepAlive, "Internal Server Error");
                    else ok(ctx, keepAlive, answer, type);
                    ctx.send();
                    return true;
                });
            }
        });
        return HttpStatus.ASYNC;
    }

    /**
     * POST /echo. Rapidoid frames a body by Content-Length only: a chunked body would
     * be read as the next request, so Transfer-Encoding (and a repeated
     * Content-Length) is refused with 400 and the connection closed.
     */
    private HttpStatus echo(Channel ctx, Buf buf, RapidoidHelper req, boolean keepAlive) {
        req.headersKV.reset();   // the helper is reused by every request on this I/O worker
        req.cookies.reset();
        HTTP_PARSER.parseHeadersIntoKV(buf, req.headers, req.headersKV, req.cookies, req);
        int lengths = 0;
        for (int i = 0; i < req.headersKV.count; i++) {
            String name = req.headersKV.keys[i].str(buf);
            if (name.equalsIgnoreCase("Transfer-Encoding")) lengths += 2;
            if (name.equalsIgnoreCase("Content-Length")) lengths++;
        }
        if (lengths > 1) return refuse(ctx, buf, 400, "Bad Request");
        BufRange body = req.body;
        if (body.length > Contract.MAX_BODY) return refuse(ctx, buf, 413, "Content Too Large");
        return ok(ctx, keepAlive, body.bytes(buf), MediaType.APPLICATION_OCTET_STREAM);
    }

    /**
     * Answers with Connection: close and closes. Rapidoid goes on parsing what is left
     * in the input buffer even on a closing connection, so that is discarded first.
     */
    private HttpStatus refuse(Channel ctx, Buf buf, int code, String body) {
        text(ctx, code, false, body);
        buf.position(buf.limit());
        ctx.close();
        return HttpStatus.DONE;
    }

    private HttpStatus text(Channel ctx, int code, boolean keepAlive, String body) {
        startResponse(ctx, code, keepAlive);
        writeBody(ctx, body.getBytes(StandardCharsets.ISO_8859_1), TEXT);
        return HttpStatus.DONE;
    }
}
