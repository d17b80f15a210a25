import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;

/**
 * One HTTP/1.1 connection on its own virtual thread, in plain blocking style: read
 * until the shared {@link RequestParser} has a request, answer it with the shared
 * {@link Routes} (sleeping for /delay and /tenth), repeat until the client closes or
 * asks to. The shared {@link Response} carries the cached Date.
 */
final class VirtualConnection implements Runnable {
    private final Socket socket;
    private InputStream in;
    private OutputStream out;
    private final RequestParser parser = new RequestParser();
    private final byte[] wbuf = new byte[8192];
    private int wlen;

    VirtualConnection(Socket socket) {
        this.socket = socket;
    }

    @Override
    public void run() {
        try {
            socket.setTcpNoDelay(true);
            in = socket.getInputStream();
            out = socket.getOutputStream();
            serve();
        } catch (IOException e) {
            // client went away or reset: nothing to answer
        } finally {
            BlockingHttp.closeQuietly(socket);
        }
    }

    private void serve() throws IOException {
        while (true) {
            Request req;
            try {
                req = nextRequest();
            } catch (HttpError e) {
                write(Response.refusal(e));
                flush();
                drainBeforeClose();
                return;
            }
            if (req == null) return;   // the client closed
            Response r = Routes.handle(req);
            if (r.delayMs > 0) {
                flush();   // don't hold earlier pipelined answers behind the sleep
                sleep(r.delayMs);
            }
            write(r);
            if (!r.keepAlive) {
                flush();
                if (parser.hasUnread()) drainBeforeClose();   // pipelined bytes: drain so our answer isn't reset
                return;
            }
        }
    }

    /** Reads until a whole request is parsed; null when the client closes first. */
    private Request nextRequest() throws IOException, HttpError {
        Request req;
        while ((req = parser.next()) == null) {
            if (parser.takeContinue()) write(Response.CONTINUE, 0, Response.CONTINUE.length);
            flush();   // everything read so far is answered: send it before blocking on the next read
            ByteBuffer b = parser.bufferForRead();
            int n = in.read(b.array(), b.arrayOffset() + b.position(), b.remaining());
            if (n <= 0) return null;
            b.position(b.position() + n);
        }
        return req;
    }

    /** Thread.sleep parks the virtual thread; its carrier runs other connections meanwhile. */
    private static void sleep(long ms) throws IOException {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
    }

    private void write(Response r) throws IOException {
        byte[] head = r.head();
        write(head, 0, head.length);
        if (r.sendBody()) write(r.body, r.off, r.len);
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
     * Closing with unread input makes the kernel send RST, which can destroy the
     * answer just written: half-close, then discard what the client still sends,
     * for a bounded time and amount.
     */
    private void drainBeforeClose() {
        try {
            socket.shutdownOutput();
            socket.setSoTimeout(1000);
            long deadline = System.nanoTime() + 2_000_000_000L;
            long left = 4L * Contract.MAX_BODY;
            int n;
            while (left > 0 && System.nanoTime() < deadline && (n = in.read(wbuf)) > 0) left -= n;
        } catch (SocketTimeoutException e) {
            // client kept the connection open: give up and close
        } catch (IOException ignored) {
        }
    }
}
