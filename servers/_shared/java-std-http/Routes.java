import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Function;

/**
 * The SPEC.md endpoints for the std-only java-* rows: request in, response out.
 * Nothing here waits: a response to be sent later carries its delay, and the
 * connection code waits the way its model does.
 */
final class Routes {
    static volatile Path helloFile;
    /**
     * A row's own paths, asked before answering 404; null = none. The db rows set it to their
     * database paths, which wait for their queries on the serving thread: only rows whose
     * serving thread may block (java-threadpool, java-virtual-threads) set it.
     */
    static volatile Function<Request, Response> rowPaths;

    private Routes() {
    }

    static Response handle(Request req) {
        boolean head = req.method().equals("HEAD");
        boolean get = head || req.method().equals("GET");
        Response r;
        switch (req.path()) {
            case "/":
                r = get ? ok(req, "text/plain", Contract.HELLO) : notAllowed(req, "GET, HEAD");
                break;
            case "/json":
                // no JSON library in the JDK: serialize by hand, per request
                r = get ? ok(req, "application/json",
                        ("{\"message\":" + jsonString("Hello, World!") + "}").getBytes(StandardCharsets.UTF_8))
                        : notAllowed(req, "GET, HEAD");
                break;
            case "/file":
                if (!get) {
                    r = notAllowed(req, "GET, HEAD");
                    break;
                }
                // From disk per request, on the serving thread (in java-async a completion
                // thread: a small page-cached file, as blocking as any event-loop server's file read).
                try {
                    r = ok(req, "text/html", Files.readAllBytes(helloFile));
                } catch (IOException e) {
                    r = text(req, 500, "Internal Server Error");
                }
                break;
            case "/delay": {
                if (!get) {
                    r = notAllowed(req, "GET, HEAD");
                    break;
                }
                long ms = Contract.delayMs(req.query());
                int n = Contract.delayBytes(req.query());
                if (ms < 0 || n < 0) {   // the framing is intact, so the connection stays usable
                    r = text(req, 400, "Bad Request");
                    break;
                }
                r = new Response(200, "text/plain", Contract.XS, 0, n, req.keepAlive(), req.http10());
                r.delayMs = ms;
                break;
            }
            case "/tenth": {
                if (!get) {
                    r = notAllowed(req, "GET, HEAD");
                    break;
                }
                long ms = Contract.tenthMs(req.query());
                if (ms < 0) {
                    r = text(req, 400, "Bad Request");
                    break;
                }
                long count = Contract.nextTenth();
                r = ok(req, "text/plain", Long.toString(count).getBytes(StandardCharsets.ISO_8859_1));
                if (Contract.tenthWaits(count)) r.delayMs = ms;
                break;
            }
            case "/compress": {
                if (!get) {
                    r = notAllowed(req, "GET, HEAD");
                    break;
                }
                int kb = Contract.compressKb(req.query());
                if (kb < 0) {
                    r = text(req, 400, "Bad Request");
                    break;
                }
                // CPU work (~0.1 s for 4 MiB) on the thread that called handle: the connection's own
                // thread in the blocking rows; java-async calls handle for /compress on a CPU pool.
                byte[] gz = Contract.compressGzip(kb);
                if (gz == null) {
                    r = text(req, 500, "Internal Server Error");
                    break;
                }
                r = ok(req, "application/json", gz);
                r.extraHeaders = "\r\nContent-Encoding: gzip";
                break;
            }
            case "/echo":
                r = req.method().equals("POST") ? ok(req, "application/octet-stream", req.body())
                        : notAllowed(req, "POST");
                break;
            default:
                Function<Request, Response> more = rowPaths;
                r = more == null ? null : more.apply(req);
                if (r == null) r = text(req, 404, "Not Found");
        }
        r.headRequest = head;
        return r;
    }

    private static Response ok(Request req, String type, byte[] body) {
        return new Response(200, type, body, 0, body.length, req.keepAlive(), req.http10());
    }

    private static Response text(Request req, int status, String msg) {
        byte[] b = msg.getBytes(StandardCharsets.ISO_8859_1);
        return new Response(status, "text/plain", b, 0, b.length, req.keepAlive(), req.http10());
    }

    private static Response notAllowed(Request req, String allow) {
        Response r = text(req, 405, "Method Not Allowed");
        r.extraHeaders = "\r\nAllow: " + allow;
        return r;
    }

    /** JSON string literal: no JSON library in the JDK, so escape by hand. */
    static String jsonString(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
            }
        }
        return sb.append('"').toString();
    }
}
