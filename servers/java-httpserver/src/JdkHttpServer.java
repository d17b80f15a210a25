import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Executors;
import javax.net.ssl.SSLContext;

/**
 * java-httpserver: the JDK's own HttpServer with a fixed pool of $WORKERS threads as
 * its executor. The HttpServer's dispatcher thread accepts and waits for readable
 * connections; a pool thread then reads the request (blocking) and runs this handler,
 * which sleeps for /delay and /tenth the blocking way, and waits for PostgreSQL on the
 * database paths ({@link JdbcPaths}: pgjdbc + HikariCP) the same way.
 */
public final class JdkHttpServer implements HttpHandler {
    private final Path helloFile;
    private final JdbcPaths db;

    JdkHttpServer(Path helloFile, JdbcPaths db) {
        this.helloFile = helloFile;
        this.db = db;
    }

    public static void main(String[] args) {
        ServerEnv env = ServerEnv.read("java-httpserver");
        SSLContext tls = ServerTls.context(env);   // null: plaintext
        JdbcPaths db = JdbcPaths.fromEnv(env.name());   // 503 without $DATABASE_URL
        HttpServer server = null;
        try {
            InetSocketAddress address = new InetSocketAddress(env.host(), env.port());
            if (tls == null) {
                server = HttpServer.create(address, ServerEnv.BACKLOG);
            } else {   // the JDK's HTTPS flavour of the same server, configured with the JDK's defaults
                HttpsServer https = HttpsServer.create(address, ServerEnv.BACKLOG);
                https.setHttpsConfigurator(new HttpsConfigurator(tls));
                server = https;
            }
        } catch (IOException e) {
            env.cannotListen(e.getMessage());   // exits
        }
        server.setExecutor(Executors.newFixedThreadPool(env.workers()));
        server.createContext("/", new JdkHttpServer(env.helloFile(), db));   // every path: routed below
        server.start();
        env.listening(env.workers() + " pool threads");
    }

    @Override
    public void handle(HttpExchange ex) throws IOException {
        try (ex) {
            route(ex);
        }
    }

    private void route(HttpExchange ex) throws IOException {
        String method = ex.getRequestMethod();
        boolean get = method.equals("GET") || method.equals("HEAD");
        URI uri = ex.getRequestURI();
        String query = uri.getRawQuery() == null ? "" : uri.getRawQuery();
        switch (uri.getRawPath()) {
            case "/":
                if (!get) notAllowed(ex, "GET, HEAD");
                else send(ex, 200, "text/plain", Contract.HELLO, Contract.HELLO.length);
                return;
            case "/json":
                if (!get) notAllowed(ex, "GET, HEAD");
                else send(ex, 200, "application/json", json());
                return;
            case "/file":
                if (!get) notAllowed(ex, "GET, HEAD");
                else sendFile(ex);
                return;
            case "/delay": {
                if (!get) {
                    notAllowed(ex, "GET, HEAD");
                    return;
                }
                long ms = Contract.delayMs(query);
                int n = Contract.delayBytes(query);
                if (ms < 0 || n < 0) {
                    text(ex, 400, "Bad Request");
                    return;
                }
                sleep(ms);
                send(ex, 200, "text/plain", Contract.XS, n);
                return;
            }
            case "/tenth": {
                if (!get) {
                    notAllowed(ex, "GET, HEAD");
                    return;
                }
                long ms = Contract.tenthMs(query);
                if (ms < 0) {
                    text(ex, 400, "Bad Request");
                    return;
                }
                long count = Contract.nextTenth();
                if (Contract.tenthWaits(count)) sleep(ms);
                send(ex, 200, "text/plain", Long.toString(count).getBytes(StandardCharsets.ISO_8859_1));
                return;
            }
            case "/compress": {
                if (!get) {
                    notAllowed(ex, "GET, HEAD");
                    return;
                }
                int kb = Contract.compressKb(query);
                if (kb < 0) {
                    text(ex, 400, "Bad Request");
                    return;
                }
                // CPU work (~0.1 s for 4 MiB) right here, on the executor's pool thread running this
                // exchange, like the blocking database paths: the dispatcher keeps selecting meanwhile.
                byte[] gz = Contract.compressGzip(kb);
                if (gz == null) {
                    text(ex, 500, "Internal Server Error");
                    return;
                }
                ex.getResponseHeaders().set("Content-Encoding", "gzip");
                send(ex, 200, "application/json", gz);
                return;
            }
            case "/echo":
                if (!method.equals("POST")) notAllowed(ex, "POST");
                else echo(ex);
                return;
            case "/db", "/queries", "/fortunes", "/updates":
                database(ex, method, uri.getRawPath(), query);
                return;
            default:
                text(ex, 404, "Not Found");
        }
    }

    /**
     * A database path: JdbcPaths runs its queries right here, on the executor's pool thread that
     * runs this exchange, which blocks until PostgreSQL answers (the HttpServer's dispatcher thread
     * keeps selecting meanwhile).
     */
    private void database(HttpExchange ex, String method, String path, String query) throws IOException {
        JdbcPaths.Answer a = db.answer(method, path, query);
        ex.getResponseHeaders().set("Server", db.name());
        if (a.allow() != null) ex.getResponseHeaders().set("Allow", a.allow());
        send(ex, a.status(), a.type(), a.body());
    }

    /** The body, Content-Length or chunked (the HttpServer decodes both), up to 1 MiB. */
    private static void echo(HttpExchange ex) throws IOException {
        String length = ex.getRequestHeaders().getFirst("Content-Length");
        if (length != null && length.length() > 7) {   // ≥ 10,000,000 (or not a number: the server refuses those itself)
            tooLarge(ex);
            return;
        }
        if (length != null && Long.parseLong(length.strip()) > Contract.MAX_BODY) {
            tooLarge(ex);
            return;
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        InputStream in = ex.getRequestBody();
        byte[] buf = new byte[16 * 1024];
        int n;
        while ((n = in.read(buf)) > 0) {
            if (body.size() + n > Contract.MAX_BODY) {   // a chunked body over the limit
                tooLarge(ex);
                return;
            }
            body.write(buf, 0, n);
        }
        send(ex, 200, "application/octet-stream", body.toByteArray());
    }

    /** 413, then close: the rest of the body is not read. */
    private static void tooLarge(HttpExchange ex) throws IOException {
        ex.getResponseHeaders().set("Connection", "close");
        text(ex, 413, "Payload Too Large");
    }

    /** No JSON library in the JDK: the document is built per request with a small escaping function. */
    private static byte[] json() {
        return ("{\"message\":" + jsonString("Hello, World!") + "}").getBytes(StandardCharsets.UTF_8);
    }

    static String jsonString(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }

    private void sendFile(HttpExchange ex) throws IOException {
        byte[] file;
        try {
            file = Files.readAllBytes(helloFile);   // from disk on every request
        } catch (IOException e) {
            text(ex, 500, "Internal Server Error");
            return;
        }
        send(ex, 200, "text/html", file);
    }

    /** A blocking sleep on the pool thread: the natural wait of a thread pool. */
    private static void sleep(long ms) throws IOException {
        if (ms <= 0) return;
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
    }

    private static void send(HttpExchange ex, int status, String type, byte[] body) throws IOException {
        send(ex, status, type, body, body.length);
    }

    /** Fixed-length answer: for sendResponseHeaders 0 means chunked and -1 means no body. */
    private static void send(HttpExchange ex, int status, String type, byte[] body, int len) throws IOException {
        ex.getResponseHeaders().set("Content-Type", type);
        boolean head = ex.getRequestMethod().equals("HEAD");
        ex.sendResponseHeaders(status, len == 0 || head ? -1 : len);
        if (len > 0 && !head) {
            OutputStream out = ex.getResponseBody();
            out.write(body, 0, len);
        }
    }

    private static void text(HttpExchange ex, int status, String msg) throws IOException {
        send(ex, status, "text/plain", msg.getBytes(StandardCharsets.ISO_8859_1));
    }

    private static void notAllowed(HttpExchange ex, String allow) throws IOException {
        ex.getResponseHeaders().set("Allow", allow);
        text(ex, 405, "Method Not Allowed");
    }
}
