import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/** The SPEC.md endpoints: request in, response (possibly to be sent after a delay) out. */
final class Routes {
    static final byte[] XS = new byte[RequestParser.MAX_BODY];
    static final byte[] HELLO = "Hello, World!".getBytes(StandardCharsets.ISO_8859_1);
    static final AtomicLong TENTH = new AtomicLong();
    static volatile Path helloFile;

    static {
        Arrays.fill(XS, (byte) 'x');
    }

    static final class Response {
        final int status;
        final String type;
        final ByteBuffer body;
        final boolean keepAlive, http10;
        boolean headRequest;   // HEAD: headers only
        String extraHeaders = "";
        long delayMs;          // send after this long

        Response(int status, String type, ByteBuffer body, boolean keepAlive, boolean http10) {
            this.status = status;
            this.type = type;
            this.body = body;
            this.keepAlive = keepAlive;
            this.http10 = http10;
        }

        boolean sendBody() {
            return !headRequest && body.hasRemaining();
        }

        ByteBuffer head() {
            StringBuilder sb = new StringBuilder(128)
                    .append("HTTP/1.1 ").append(status).append(' ').append(reason(status))
                    .append("\r\nContent-Type: ").append(type)
                    .append("\r\nContent-Length: ").append(body.remaining())
                    .append(extraHeaders);
            if (!keepAlive) sb.append("\r\nConnection: close");
            else if (http10) sb.append("\r\nConnection: keep-alive");
            sb.append("\r\n\r\n");
            return ByteBuffer.wrap(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
        }
    }

    static Response handle(RequestParser.Request req) {
        boolean head = req.method().equals("HEAD");
        boolean get = head || req.method().equals("GET");
        Response r;
        switch (req.path()) {
            case "/":
                r = get ? ok(req, "text/plain", ByteBuffer.wrap(HELLO)) : notAllowed(req, "GET, HEAD");
                break;
            case "/json":
                // no JSON library in the JDK: serialize by hand, per request
                r = get ? ok(req, "application/json", ByteBuffer.wrap(
                        ("{\"message\":" + jsonString("Hello, World!") + "}").getBytes(StandardCharsets.UTF_8)))
                        : notAllowed(req, "GET, HEAD");
                break;
            case "/file":
                if (!get) {
                    r = notAllowed(req, "GET, HEAD");
                    break;
                }
                // Read from disk per request, on the completion thread: a small page-cached
                // file, as blocking as any event-loop server's file read.
                try {
                    r = ok(req, "text/html", ByteBuffer.wrap(Files.readAllBytes(helloFile)));
                } catch (IOException e) {
                    r = text(req, 500, "Internal Server Error");
                }
                break;
            case "/delay": {
                if (!get) {
                    r = notAllowed(req, "GET, HEAD");
                    break;
                }
                long ms = queryInt(req.query(), "ms", 0, 60_000, 0);
                long n = queryInt(req.query(), "bytes", 0, XS.length, 0);
                if (ms < 0 || n < 0) {
                    r = text(req, 400, "Bad Request");
                    break;
                }
                r = ok(req, "text/plain", ByteBuffer.wrap(XS, 0, (int) n));
                r.delayMs = ms;
                break;
            }
            case "/tenth": {
                if (!get) {
                    r = notAllowed(req, "GET, HEAD");
                    break;
                }
                long ms = queryInt(req.query(), "ms", 0, 60_000, 2000);
                if (ms < 0) {
                    r = text(req, 400, "Bad Request");
                    break;
                }
                long count = TENTH.incrementAndGet();
                r = ok(req, "text/plain", ByteBuffer.wrap(Long.toString(count).getBytes(StandardCharsets.ISO_8859_1)));
                if (count % 10 == 0) r.delayMs = ms;
                break;
            }
            case "/echo":
                r = req.method().equals("POST") ? ok(req, "application/octet-stream", ByteBuffer.wrap(req.body()))
                        : notAllowed(req, "POST");
                break;
            default:
                r = text(req, 404, "Not Found");
        }
        r.headRequest = head;
        return r;
    }

    private static Response ok(RequestParser.Request req, String type, ByteBuffer body) {
        return new Response(200, type, body, req.keepAlive(), req.http10());
    }

    private static Response text(RequestParser.Request req, int status, String msg) {
        return new Response(status, "text/plain", ByteBuffer.wrap(msg.getBytes(StandardCharsets.ISO_8859_1)),
                req.keepAlive(), req.http10());
    }

    private static Response notAllowed(RequestParser.Request req, String allow) {
        Response r = text(req, 405, "Method Not Allowed");
        r.extraHeaders = "\r\nAllow: " + allow;
        return r;
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

    static String reason(int status) {
        switch (status) {
            case 200: return "OK";
            case 400: return "Bad Request";
            case 404: return "Not Found";
            case 405: return "Method Not Allowed";
            case 413: return "Payload Too Large";
            case 431: return "Request Header Fields Too Large";
            case 500: return "Internal Server Error";
            case 505: return "HTTP Version Not Supported";
            default: return "Unknown";
        }
    }
}
