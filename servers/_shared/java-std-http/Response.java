import java.nio.charset.StandardCharsets;

/**
 * One answer of the std-only java-* rows: status line and headers built here, the
 * body a slice of a byte array (never copied), sent after {@link #delayMs} the way
 * the serving model waits (a blocking sleep, a timer).
 */
final class Response {
    static final byte[] CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);

    final int status;
    final String type;
    final byte[] body;
    final int off, len;
    final boolean keepAlive, http10;
    boolean headRequest;   // HEAD: headers only
    String extraHeaders = "";   // additional header lines, each starting with CRLF
    long delayMs;          // send after this long

    Response(int status, String type, byte[] body, int off, int len, boolean keepAlive, boolean http10) {
        this.status = status;
        this.type = type;
        this.body = body;
        this.off = off;
        this.len = len;
        this.keepAlive = keepAlive;
        this.http10 = http10;
    }

    /** The answer to a request we refuse: the connection closes after it. */
    static Response refusal(HttpError e) {
        byte[] msg = e.getMessage().getBytes(StandardCharsets.ISO_8859_1);
        return new Response(e.status, "text/plain", msg, 0, msg.length, false, false);
    }

    boolean sendBody() {
        return !headRequest && len > 0;
    }

    /** Status line and header fields, ISO-8859-1; Date is this second's cached {@link HttpDate}. */
    byte[] head() {
        StringBuilder sb = new StringBuilder(192)
                .append("HTTP/1.1 ").append(status).append(' ').append(reason(status))
                .append("\r\nContent-Type: ").append(type)
                .append("\r\nContent-Length: ").append(len)
                .append("\r\nDate: ").append(HttpDate.now())
                .append(extraHeaders);
        if (!keepAlive) sb.append("\r\nConnection: close");
        else if (http10) sb.append("\r\nConnection: keep-alive");
        sb.append("\r\n\r\n");
        return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    static String reason(int status) {
        switch (status) {
            case 200: return "OK";
            case 400: return "Bad Request";
            case 404: return "Not Found";
            case 405: return "Method Not Allowed";
            case 411: return "Length Required";
            case 413: return "Payload Too Large";
            case 431: return "Request Header Fields Too Large";
            case 500: return "Internal Server Error";
            case 503: return "Service Unavailable";
            case 505: return "HTTP Version Not Supported";
            default: return "Unknown";
        }
    }
}
