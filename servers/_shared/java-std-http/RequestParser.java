import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Incremental HTTP/1.1 request parser over one connection's read buffer, shared by
 * the std-only java-* rows: the blocking ones fill the buffer from the socket's
 * InputStream on their own thread, java-async from completion handlers. Bytes
 * arrive in any split; {@link #next()} returns a complete request or null (read
 * more), so the parser itself never waits for input.
 */
final class RequestParser {
    static final int MAX_HEAD = 16 * 1024;   // request line + headers (SPEC: accept 8 KiB)
    static final int MAX_BUFFER = 64 * 1024;
    private static final byte[] NO_BODY = new byte[0];

    private enum State { HEAD, BODY, CHUNK_SIZE, CHUNK_DATA, CHUNK_END, TRAILER }

    // Unconsumed bytes are [start, buf.position()). Kept small: the threads model holds 10k connections.
    private ByteBuffer buf = ByteBuffer.allocate(4096);
    private int start;
    private int lineStart;   // HEAD: where the current unterminated header line begins
    private int scanned;     // HEAD: bytes before this were already searched for LF
    private State state = State.HEAD;

    // the request whose body is still to come
    private String method, path, query;
    private boolean http10, keepAlive;
    private long contentLength;
    private byte[] body;
    private int bodyLen;
    private ByteArrayOutputStream chunks;
    private long chunkLeft;
    private int trailerBudget;
    private boolean continuePending;   // client sent "Expect: 100-continue" and waits for it

    /** The buffer to read into (a heap buffer): unconsumed bytes moved to the front, room guaranteed. */
    ByteBuffer bufferForRead() {
        if (start > 0) {
            byte[] a = buf.array();
            int n = buf.position() - start;
            System.arraycopy(a, start, a, 0, n);
            lineStart -= start;
            scanned -= start;
            buf.position(n);
            start = 0;
        }
        if (!buf.hasRemaining()) {   // a long header block or body: grow, bounded
            ByteBuffer bigger = ByteBuffer.allocate(Math.min(buf.capacity() * 2, MAX_BUFFER));
            buf.flip();
            bigger.put(buf);
            buf = bigger;
        }
        return buf;
    }

    /** Whether to send "100 Continue" now (once per request, only while its body is awaited). */
    boolean takeContinue() {
        boolean c = continuePending;
        continuePending = false;
        return c;
    }

    /** Bytes received but not yet consumed (e.g. pipelined requests behind a "close"). */
    boolean hasUnread() {
        return start < buf.position();
    }

    /** The next complete request, or null when more bytes are needed. */
    Request next() throws HttpError {
        byte[] a = buf.array();
        int end = buf.position();
        while (true) {
            switch (state) {
                case HEAD: {
                    if (lineStart == start) {   // tolerate stray CRLFs between requests (RFC 9112 §2.2)
                        while (start < end && (a[start] == '\r' || a[start] == '\n')) start++;
                        lineStart = Math.max(lineStart, start);
                        scanned = Math.max(scanned, start);
                    }
                    // Find the empty line that ends the header block.
                    int headEnd = -1;
                    for (int i = scanned; i < end; i++) {
                        if (a[i] != '\n') continue;
                        int len = i - lineStart;
                        if (len == 0 || (len == 1 && a[lineStart] == '\r')) {
                            headEnd = i + 1;
                            break;
                        }
                        lineStart = i + 1;
                    }
                    if (headEnd < 0) {
                        scanned = end;
                        if (end - start > MAX_HEAD) throw new HttpError(431, "Request Header Fields Too Large");
                        return null;
                    }
                    if (headEnd - start > MAX_HEAD) throw new HttpError(431, "Request Header Fields Too Large");
                    parseHead(a, start, headEnd);
                    start = lineStart = scanned = headEnd;
                    if (state == State.HEAD) return finish(NO_BODY);
                    break;
                }
                case BODY: {
                    int k = (int) Math.min(contentLength - bodyLen, end - start);
                    System.arraycopy(a, start, body, bodyLen, k);
                    bodyLen += k;
                    start += k;
                    if (bodyLen < contentLength) return null;
                    return finish(body);
                }
                case CHUNK_SIZE: {
                    String line = takeLine(a, end, 1024);
                    if (line == null) return null;
                    int semi = line.indexOf(';');
                    String hex = (semi < 0 ? line : line.substring(0, semi)).strip();
                    if (hex.isEmpty() || hex.length() > 8) throw new HttpError(400, "Bad Request");
                    long size;
                    try {
                        size = Long.parseLong(hex, 16);
                    } catch (NumberFormatException e) {
                        throw new HttpError(400, "Bad Request");
                    }
                    if (size < 0) throw new HttpError(400, "Bad Request");
                    if (chunks.size() + size > Contract.MAX_BODY) throw new HttpError(413, "Payload Too Large");
                    chunkLeft = size;
                    state = size == 0 ? State.TRAILER : State.CHUNK_DATA;
                    trailerBudget = MAX_HEAD;
                    break;
                }
                case CHUNK_DATA: {
                    int k = (int) Math.min(chunkLeft, end - start);
                    chunks.write(a, start, k);
                    start += k;
                    chunkLeft -= k;
                    if (chunkLeft > 0) return null;
                    state = State.CHUNK_END;
                    break;
                }
                case CHUNK_END: {
                    String line = takeLine(a, end, 2);
                    if (line == null) return null;
                    if (!line.isEmpty()) throw new HttpError(400, "Bad Request");
                    state = State.CHUNK_SIZE;
                    break;
                }
                case TRAILER: {   // trailer fields are read and ignored
                    String line = takeLine(a, end, trailerBudget);
                    if (line == null) return null;
                    trailerBudget -= line.length() + 2;
                    if (line.isEmpty()) return finish(chunks.toByteArray());
                    break;
                }
            }
        }
    }

    /** One LF-terminated line (CR stripped) from [start, end), consumed; null if incomplete. */
    private String takeLine(byte[] a, int end, int limit) throws HttpError {
        for (int i = start; i < end; i++) {
            if (a[i] == '\n') {
                int len = i - start;
                if (len > 0 && a[i - 1] == '\r') len--;
                String s = new String(a, start, len, StandardCharsets.ISO_8859_1);
                start = i + 1;
                return s;
            }
        }
        if (end - start > limit) throw new HttpError(400, "Bad Request");
        return null;
    }

    private Request finish(byte[] b) {
        state = State.HEAD;
        lineStart = scanned = start;
        body = null;
        chunks = null;
        continuePending = false;   // the body is here: no "100 Continue" owed (RFC 9110 §10.1.1)
        return new Request(method, path, query, http10, keepAlive, b);
    }

    /** Request line and header fields in a[from, to), which ends with the empty line; sets the body state. */
    private void parseHead(byte[] a, int from, int to) throws HttpError {
        int lf = indexOfLf(a, from, to);
        String requestLine = headLine(a, from, lf);
        int sp1 = requestLine.indexOf(' ');
        int sp2 = sp1 < 0 ? -1 : requestLine.indexOf(' ', sp1 + 1);
        if (sp1 <= 0 || sp2 < 0 || sp2 == sp1 + 1 || requestLine.indexOf(' ', sp2 + 1) >= 0)
            throw new HttpError(400, "Bad Request");
        String method = requestLine.substring(0, sp1);
        String target = requestLine.substring(sp1 + 1, sp2);
        String version = requestLine.substring(sp2 + 1);
        if (!isToken(method)) throw new HttpError(400, "Bad Request");
        boolean http10;
        if (version.equals("HTTP/1.1")) http10 = false;
        else if (version.equals("HTTP/1.0")) http10 = true;
        else if (version.matches("HTTP/[0-9]\\.[0-9]")) throw new HttpError(505, "HTTP Version Not Supported");
        else throw new HttpError(400, "Bad Request");

        long length = -1;
        boolean chunked = false, hasTE = false, closeToken = false, keepAliveToken = false, expectContinue = false;
        while (true) {   // header fields up to the empty line that ends a[from, to)
            int lineFrom = lf + 1;
            lf = indexOfLf(a, lineFrom, to);
            String h = headLine(a, lineFrom, lf);
            if (h.isEmpty()) break;
            int colon = h.indexOf(':');
            String name = colon <= 0 ? "" : h.substring(0, colon);
            if (!isToken(name)) throw new HttpError(400, "Bad Request");
            String value = h.substring(colon + 1).strip();
            if (name.equalsIgnoreCase("Content-Length")) {
                long n = parseLength(value);
                if (length >= 0 && length != n) throw new HttpError(400, "Bad Request");
                length = n;
            } else if (name.equalsIgnoreCase("Transfer-Encoding")) {
                hasTE = true;
                chunked = value.equalsIgnoreCase("chunked");
            } else if (name.equalsIgnoreCase("Connection")) {
                for (String tok : value.split(",")) {
                    tok = tok.strip();
                    if (tok.equalsIgnoreCase("close")) closeToken = true;
                    else if (tok.equalsIgnoreCase("keep-alive")) keepAliveToken = true;
                }
            } else if (name.equalsIgnoreCase("Expect")) {
                expectContinue = value.equalsIgnoreCase("100-continue");
            }
        }
        // Ambiguous framing is how requests get smuggled: refuse it and close.
        if (hasTE && (!chunked || length >= 0 || http10)) throw new HttpError(400, "Bad Request");
        if (length > Contract.MAX_BODY) throw new HttpError(413, "Payload Too Large");

        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        if (!path.startsWith("/")) throw new HttpError(400, "Bad Request");
        this.method = method;
        this.path = path;
        this.query = q < 0 ? "" : target.substring(q + 1);
        this.http10 = http10;
        // HTTP/1.1 is persistent unless "close"; HTTP/1.0 only with "keep-alive".
        this.keepAlive = !closeToken && (!http10 || keepAliveToken);

        continuePending = expectContinue && !http10 && (chunked || length > 0);
        if (chunked) {
            chunks = new ByteArrayOutputStream();
            state = State.CHUNK_SIZE;
        } else if (length > 0) {
            contentLength = length;
            body = new byte[(int) length];
            bodyLen = 0;
            state = State.BODY;
        }
    }

    private static int indexOfLf(byte[] a, int from, int to) {
        for (int i = from; i < to; i++)
            if (a[i] == '\n') return i;
        return to;   // not reached: the header block ends with LF
    }

    /** Header-block line a[from, lf) without its CR, as ISO-8859-1 (RFC 9110); control characters refused. */
    private static String headLine(byte[] a, int from, int lf) throws HttpError {
        int end = lf > from && a[lf - 1] == '\r' ? lf - 1 : lf;
        for (int i = from; i < end; i++) {
            int c = a[i] & 0xff;
            if ((c < 0x20 && c != '\t') || c == 0x7f) throw new HttpError(400, "Bad Request");
        }
        return new String(a, from, end - from, StandardCharsets.ISO_8859_1);
    }

    private static long parseLength(String v) throws HttpError {
        if (v.isEmpty() || v.length() > 15) throw new HttpError(v.isEmpty() ? 400 : 413, "Bad Content-Length");
        for (int i = 0; i < v.length(); i++)
            if (v.charAt(i) < '0' || v.charAt(i) > '9') throw new HttpError(400, "Bad Request");
        return Long.parseLong(v);
    }

    private static boolean isToken(String s) {
        if (s.isEmpty()) return false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
            if (!ok) return false;
        }
        return true;
    }
}
