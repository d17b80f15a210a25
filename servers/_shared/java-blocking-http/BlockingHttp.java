import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.function.Consumer;
import javax.net.ssl.SSLContext;

/**
 * One HTTP/1.1 connection served with blocking socket I/O: read until the shared
 * {@link RequestParser} has a request, answer it with the shared {@link Routes},
 * repeat until the client closes or asks to. Which thread runs {@link #run()} is
 * the only difference between java-threads (a new thread per connection),
 * java-threadpool (a fixed pool) and java-virtual-threads (a new virtual thread per
 * connection), so all three compile this folder (declared under `shares` in their
 * server.toml), along with the bind and accept loop they share.
 */
final class BlockingHttp implements Runnable {
    private final Socket socket;
    private InputStream in;
    private OutputStream out;
    private final RequestParser parser = new RequestParser();
    // Own small write buffer (kept small because the threads model holds 10k connections).
    private final byte[] wbuf = new byte[8192];
    private int wlen;

    BlockingHttp(Socket socket) {
        this.socket = socket;
    }

    /**
     * Binds $HOST:$PORT, or exits with a message. With $TLS_CERT/$TLS_KEY the socket is
     * JSSE's SSLServerSocket: accepted sockets are SSLSockets, whose handshake runs on the
     * connection's own thread at its first read, and whose close sends close_notify.
     */
    static ServerSocket listen(ServerEnv env) {
        SSLContext tls = ServerTls.context(env);   // null: plaintext
        try {
            ServerSocket server = tls == null ? new ServerSocket() : tls.getServerSocketFactory().createServerSocket();
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(env.host(), env.port()), ServerEnv.BACKLOG);
            return server;
        } catch (IOException e) {
            env.cannotListen(e.getMessage());
            return null;   // not reached: cannotListen exits
        }
    }

    /** Accepts connections for ever, handing each to {@code serve}: where the blocking rows differ. */
    static void acceptForever(ServerEnv env, ServerSocket server, Consumer<Socket> serve) {
        while (true) {
            Socket socket;
            try {
                socket = server.accept();
            } catch (IOException e) {
                // e.g. out of file descriptors: back off instead of spinning
                System.err.println(env.name() + ": accept failed: " + e.getMessage());
                try {
                    Thread.sleep(10);
                } catch (InterruptedException ignored) {
                }
                continue;
            }
            serve.accept(socket);
        }
    }

    static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
        }
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
            closeQuietly(socket);
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
            pause(r.delayMs);
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
            if (parser.takeContinue()) write(Response.CONTINUE, 0, Response.CONTINUE.length);   // client waits for it
            flush();   // everything read so far is answered: send it before blocking on the next read
            ByteBuffer b = parser.bufferForRead();
            int n = in.read(b.array(), b.arrayOffset() + b.position(), b.remaining());
            if (n <= 0) return null;
            b.position(b.position() + n);
        }
        return req;
    }

    /**
     * A blocking sleep: the natural wait when a thread serves the connection. On a
     * virtual thread it parks that thread; its carrier runs other connections meanwhile.
     */
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

    // ---------------------------------------------------------------- writing

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
     * Closing a socket with unread input makes the kernel send RST, which can
     * destroy the answer we just wrote. Half-close, then discard what the
     * client still sends, for a bounded time and amount.
     */
    private void drainBeforeClose() {
        try {
            socket.shutdownOutput();
            socket.setSoTimeout(1000);
            long deadline = System.nanoTime() + 2_000_000_000L;
            long left = 4L * Contract.MAX_BODY;
            byte[] sink = wbuf;   // nothing more is written
            int n;
            while (left > 0 && System.nanoTime() < deadline && (n = in.read(sink)) > 0) left -= n;
        } catch (SocketTimeoutException e) {
            // client kept the connection open: give up and close
        } catch (IOException ignored) {
        }
    }
}
