import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One HTTP/1.1 connection served with blocking socket I/O: parse a request,
 * answer it, repeat until the client closes or asks to. Which thread runs
 * {@link #run()} is the only difference between java-threads (a new thread per
 * connection) and java-threadpool (a fixed pool), so both compile this one file
 * (declared under `shares` in their server.toml).
 */
final class BlockingHttp implements Runnable {
    static final int MAX_HEAD = 16 * 1024;   // request line + headers (SPEC: accept 8 KiB)
    static final int MAX_BODY = 1 << 20;     // POST /echo limit
    static final byte[] XS = new byte[MAX_BODY];
    static final byte[] HELLO = bytes("Hello, World!");
    static final byte[] CONTINUE = bytes("HTTP/1.1 100 Continue\r\n\r\n");
    static final AtomicLong TENTH = new AtomicLong();
    static volatile Path helloFile;

    static {
        Arrays.fill(XS, (byte) 'x');
    }

    /** A request we refuse; the connection is closed after the answer. */
    static final class HttpError extends Exception {
        final int status;
        HttpError(int status, String msg) {
            super(msg, null, false, false);
            this.status = status;
        }
    }

    private final Socket socket;
    private InputStream in;
    private OutputStream out;
    // Own small buffers (BufferedInputStream.read() is synchronized per byte);
    // kept small because the threads model holds 10k connections.
    private final byte[] rbuf = new byte[4096];
    private int rpos, rlim;
    private final byte[] wbuf = new byte[8192];
    private int wlen;
    private final StringBuilder line = new StringBuilder(128);
    private int headBudget;
    // state of the request being answered
    private boolean http10, keepAlive, head;

    BlockingHttp(Socket socket) {
        this.socket = socket;
    }

    @Override
    public void run() {
        boolean linger = false;
        try {
            socket.setTcpNoDelay(true);
            in = socket.getInputStream();
            out = socket.getOutputStream();
            while (true) {
                boolean open;
                try {
                    open = serveOne();
                } catch (HttpError e) {
                    keepAlive = open = false;
                    head = false;
                    respond(e.status, "text/plain", bytes(e.getMessage()), 0, -1);
                    linger = true;
                }
                if (!open) {
                    linger |= rpos < rlim;   // unread pipelined bytes: drain so our answer isn't reset
                    break;
                }
                // Flush once the pipelined batch already read has been answered.
                if (rpos == rlim) flush();
            }
            flush();
            if (linger) drainBeforeClose();
        } catch (IOException e) {
            // client went away or reset: nothing to answer
        } finally {
            try {
                socket.close();
            } catch (IOException ignored) {
            }
        }
    }

    /** Reads and answers one request; returns whether the connection stays open. */
    private boolean serveOne() throws IOException, HttpError {
        headBudget = MAX_HEAD;
        String requestLine;
        do {   // tolerate stray CRLFs between requests (RFC 9112 §2.2)
            requestLine = readLine(true);
            if (requestLine == null) return false;   // clean EOF between requests
        } while (requestLine.isEmpty());

        int sp1 = requestLine.indexOf(' ');
        int sp2 = sp1 < 0 ? -1 : requestLine.indexOf(' ', sp1 + 1);
        if (sp1 <= 0 || sp2 < 0 || sp2 == sp1 + 1 || requestLine.indexOf(' ', sp2 + 1) >= 0)
            throw new HttpError(400, "Bad Request");
        String method = requestLine.substring(0, sp1);
        String target = requestLine.substring(sp1 + 1, sp2);
        String version = requestLine.substring(sp2 + 1);
        if (!isToken(method)) throw new HttpError(400, "Bad Request");
        if (version.equals("HTTP/1.1")) http10 = false;
        else if (version.equals("HTTP/1.0")) http10 = true;
        else if (version.matches("HTTP/[0-9]\\.[0-9]")) throw new HttpError(505, "HTTP Version Not Supported");
        else throw new HttpError(400, "Bad Request");

        long contentLength = -1;
        boolean chunked = false, hasTE = false, closeToken = false, keepAliveToken = false, expectContinue = false;
        String h;
        while (!(h = readLine(false)).isEmpty()) {
            int colon = h.indexOf(':');
            if (colon <= 0 || !isToken(h.substring(0, colon))) throw new HttpError(400, "Bad Request");
            String name = h.substring(0, colon);
            String value = h.substring(colon + 1).strip();
            if (name.equalsIgnoreCase("Content-Length")) {
                long n = parseLength(value);
                if (contentLength >= 0 && contentLength != n) throw new HttpError(400, "Bad Request");
                contentLength = n;
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
        if (hasTE && (!chunked || contentLength >= 0 || http10)) throw new HttpError(400, "Bad Request");
        if (contentLength > MAX_BODY) throw new HttpError(413, "Payload Too Large");
        if (expectContinue && !http10 && (chunked || contentLength > 0)) {   // client waits for this before sending the body
            write(CONTINUE, 0, CONTINUE.length);
            flush();
        }

        byte[] body = chunked ? readChunked() : readFully((int) Math.max(contentLength, 0));
        // HTTP/1.1 is persistent unless "close"; HTTP/1.0 only with "keep-alive".
        keepAlive = !closeToken && (!http10 || keepAliveToken);

        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        String query = q < 0 ? "" : target.substring(q + 1);
        if (!path.startsWith("/")) throw new HttpError(400, "Bad Request");
        head = method.equals("HEAD");
        boolean get = head || method.equals("GET");

        switch (path) {
            case "/": {
                if (!get) return notAllowed("GET, HEAD");
                respond(200, "text/plain", HELLO, 0, HELLO.length);
                return keepAlive;
            }
            case "/json": {
                if (!get) return notAllowed("GET, HEAD");
                // no JSON library in the JDK: serialize by hand, per request
                byte[] json = ("{\"message\":" + jsonString("Hello, World!") + "}").getBytes(StandardCharsets.UTF_8);
                respond(200, "application/json", json, 0, json.length);
                return keepAlive;
            }
            case "/file": {
                if (!get) return notAllowed("GET, HEAD");
                byte[] file;
                try {
                    file = Files.readAllBytes(helloFile);
                } catch (IOException e) {
                    respond(500, "text/plain", bytes("Internal Server Error"), 0, -1);
                    return keepAlive;
                }
                respond(200, "text/html", file, 0, file.length);
                return keepAlive;
            }
            case "/delay": {
                if (!get) return notAllowed("GET, HEAD");
                long ms = queryInt(query, "ms", 0, 60_000, 0);
                long n = queryInt(query, "bytes", 0, MAX_BODY, 0);
                if (ms < 0 || n < 0) return badParam();
                pause(ms);
                respond(200, "text/plain", XS, 0, (int) n);
                return keepAlive;
            }
            case "/tenth": {
                if (!get) return notAllowed("GET, HEAD");
                long ms = queryInt(query, "ms", 0, 60_000, 2000);
                if (ms < 0) return badParam();
                long count = TENTH.incrementAndGet();
                if (count % 10 == 0) pause(ms);
                byte[] b = bytes(Long.toString(count));
                respond(200, "text/plain", b, 0, b.length);
                return keepAlive;
            }
            case "/echo": {
                if (!method.equals("POST")) return notAllowed("POST");
                respond(200, "application/octet-stream", body, 0, body.length);
                return keepAlive;
            }
            default:
                respond(404, "text/plain", bytes("Not Found"), 0, -1);
                return keepAlive;
        }
    }

    private boolean notAllowed(String allow) throws IOException {
        respond(405, "text/plain", bytes("Method Not Allowed"), 0, -1, "\r\nAllow: " + allow);
        return keepAlive;
    }

    /** A bad query parameter leaves the framing intact, so the connection stays usable. */
    private boolean badParam() throws IOException {
        respond(400, "text/plain", bytes("Bad Request"), 0, -1);
        return keepAlive;
    }

    /** A blocking sleep: the natural wait when a thread serves the connection. */
    private void pause(long ms) throws IOException {
        if (ms <= 0) return;
        flush();   // don't hold earlier pipelined answers behind the sleep
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
    }

    // ---------------------------------------------------------------- parsing

    /** Reads one line (LF-terminated, CR stripped) charged to the header budget; null on EOF before any byte. */
    private String readLine(boolean eofOk) throws IOException, HttpError {
        line.setLength(0);
        boolean any = false;
        while (true) {
            if (rpos == rlim && !fill()) {
                if (eofOk && !any) return null;
                throw new EOFException();
            }
            int b = rbuf[rpos++] & 0xff;
            any = true;
            if (--headBudget < 0) throw new HttpError(431, "Request Header Fields Too Large");
            if (b == '\n') break;
            line.append((char) b);   // ISO-8859-1 per RFC 9110
        }
        int n = line.length();
        if (n > 0 && line.charAt(n - 1) == '\r') line.setLength(n - 1);
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if ((c < 0x20 && c != '\t') || c == 0x7f) throw new HttpError(400, "Bad Request");
        }
        return line.toString();
    }

    private byte[] readFully(int n) throws IOException {
        byte[] b = new byte[n];
        int off = 0;
        while (off < n) {
            if (rpos == rlim && !fill()) throw new EOFException();
            int k = Math.min(n - off, rlim - rpos);
            System.arraycopy(rbuf, rpos, b, off, k);
            rpos += k;
            off += k;
        }
        return b;
    }

    private byte[] readChunked() throws IOException, HttpError {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        while (true) {
            headBudget = 1024;   // one chunk-size line
            String sizeLine = readLine(false);
            int semi = sizeLine.indexOf(';');
            String hex = (semi < 0 ? sizeLine : sizeLine.substring(0, semi)).strip();
            if (hex.isEmpty() || hex.length() > 8) throw new HttpError(400, "Bad Request");
            long size;
            try {
                size = Long.parseLong(hex, 16);
            } catch (NumberFormatException e) {
                throw new HttpError(400, "Bad Request");
            }
            if (size < 0) throw new HttpError(400, "Bad Request");
            if (size == 0) break;
            if (body.size() + size > MAX_BODY) throw new HttpError(413, "Payload Too Large");
            body.write(readFully((int) size));
            headBudget = 2;
            if (!readLine(false).isEmpty()) throw new HttpError(400, "Bad Request");
        }
        headBudget = MAX_HEAD;   // trailer section: read and ignore
        while (!readLine(false).isEmpty()) {
        }
        return body.toByteArray();
    }

    private boolean fill() throws IOException {
        rpos = 0;
        rlim = 0;
        int n = in.read(rbuf);
        if (n <= 0) return false;
        rlim = n;
        return true;
    }

    private static long parseLength(String v) throws HttpError {
        if (v.isEmpty() || v.length() > 15) throw new HttpError(v.isEmpty() ? 400 : 413, "Bad Content-Length");
        for (int i = 0; i < v.length(); i++)
            if (v.charAt(i) < '0' || v.charAt(i) > '9') throw new HttpError(400, "Bad Request");
        return Long.parseLong(v);
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

    // ---------------------------------------------------------------- writing

    private void respond(int status, String type, byte[] body, int off, int len) throws IOException {
        respond(status, type, body, off, len, "");
    }

    /** Writes one response; {@code extra} is additional header lines, each starting with CRLF. */
    private void respond(int status, String type, byte[] body, int off, int len, String extra) throws IOException {
        if (len < 0) len = body.length;
        StringBuilder sb = new StringBuilder(128)
                .append("HTTP/1.1 ").append(status).append(' ').append(reason(status))
                .append("\r\nContent-Type: ").append(type)
                .append("\r\nContent-Length: ").append(len);
        sb.append(extra);
        if (!keepAlive) sb.append("\r\nConnection: close");
        else if (http10) sb.append("\r\nConnection: keep-alive");
        sb.append("\r\n\r\n");
        write(bytes(sb.toString()), 0, sb.length());
        if (!head) write(body, off, len);
    }

    private void write(byte[] b, int off, int len) throws IOException {
        if (len > wbuf.length - wlen) {
            flush();
            if (len > wbuf.length) {   // large body: straight to the socket
                out.write(b, off, len);
                return;
            }
        }
        System.arraycopy(b, off, wbuf, wlen, len);
        wlen += len;
    }

    private void flush() throws IOException {
        if (wlen > 0) {
            out.write(wbuf, 0, wlen);
            wlen = 0;
        }
    }

    /**
     * Closing a socket with unread input makes the kernel send RST, which can
     * destroy the answer we just wrote. Half-close, then discard what the
     * client still sends, for a bounded time and amount.
     */
    private void drainBeforeClose() {
        try {
            socket.shutdownOutput();
            socket.setSoTimeout(1000);
            long deadline = System.nanoTime() + 2_000_000_000L;
            long left = 4L * MAX_BODY;
            byte[] sink = rbuf;
            int n;
            while (left > 0 && System.nanoTime() < deadline && (n = in.read(sink)) > 0) left -= n;
        } catch (SocketTimeoutException e) {
            // client kept the connection open: give up and close
        } catch (IOException ignored) {
        }
    }

    private static String reason(int status) {
        switch (status) {
            case 200: return "OK";
            case 400: return "Bad Request";
            case 404: return "Not Found";
            case 405: return "Method Not Allowed";
            case 411: return "Length Required";
            case 413: return "Payload Too Large";
            case 431: return "Request Header Fields Too Large";
            case 500: return "Internal Server Error";
            case 505: return "HTTP Version Not Supported";
            default: return "Unknown";
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }
}
