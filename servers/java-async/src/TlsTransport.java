import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousSocketChannel;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLEngineResult.HandshakeStatus;
import javax.net.ssl.SSLException;

/**
 * TLS over one accepted socket with JSSE's SSLEngine, the JDK's way to run TLS on
 * channels it does not own (the JDK has no TLS AsynchronousSocketChannel): a read
 * unwraps ciphertext from the socket into the caller's buffer, a write wraps the
 * caller's buffers into TLS records and writes them. The handshake runs inside reads,
 * step by step as the engine asks (NEED_TASK: run its tasks here; NEED_WRAP: write
 * its records; otherwise unwrap, reading more when a record is incomplete). Like
 * {@link Connection} it assumes one operation at a time, so it needs no locking.
 */
final class TlsTransport implements Transport {
    private static final ByteBuffer NOTHING = ByteBuffer.allocate(0);

    private final AsynchronousSocketChannel ch;
    private final SSLEngine engine;
    /** Ciphertext read, not yet unwrapped, in [0, position). Small at first: most records are; grows to a whole record. */
    private ByteBuffer netIn = ByteBuffer.allocate(4096);
    /** Records to write. The engine wraps only into room for a whole record (its packet buffer size). */
    private ByteBuffer netOut;
    /** Plaintext of a record larger than the caller's buffer had room for, handed out by the next reads. */
    private ByteBuffer appIn = NOTHING;
    private boolean closing;
    // One completion handler for every socket write: one operation at a time, so it is reused.
    private Runnable afterWrite;
    private Consumer<Throwable> writeFailed;
    private final CompletionHandler<Integer, Void> netWritten = new CompletionHandler<>() {
        @Override
        public void completed(Integer n, Void v) {
            if (netOut.hasRemaining()) ch.write(netOut, null, this);
            else afterWrite.run();
        }

        @Override
        public void failed(Throwable e, Void v) {
            writeFailed.accept(e);
        }
    };

    TlsTransport(AsynchronousSocketChannel ch, SSLContext context) {
        this.ch = ch;
        engine = context.createSSLEngine();
        engine.setUseClientMode(false);
        netOut = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
    }

    // ------------------------------------------------------------------ reading

    @Override
    public <A> void read(ByteBuffer dst, long timeout, TimeUnit unit, A att, CompletionHandler<Integer, ? super A> handler) {
        int n;
        try {
            n = unwrapInto(dst);
        } catch (SSLException e) {   // a bad record or a refused handshake (close() sends the engine's alert)
            handler.failed(e, att);
            return;
        }
        if (n != 0) {
            handler.completed(n, att);
            return;
        }
        Runnable again = () -> read(dst, timeout, unit, att, handler);
        Consumer<Throwable> fail = e -> handler.failed(e, att);
        if (engine.getHandshakeStatus() == HandshakeStatus.NEED_WRAP) {
            wrapHandshake(again, fail);
            return;
        }
        if (!netIn.hasRemaining()) {   // a record longer than the buffer: make room for a whole one
            netIn = grow(netIn, engine.getSession().getPacketBufferSize());
        }
        ch.read(netIn, timeout, unit, null, new CompletionHandler<Integer, Void>() {
            @Override
            public void completed(Integer got, Void v) {
                if (got < 0) handler.completed(-1, att);   // the client closed the TCP connection
                else again.run();
            }

            @Override
            public void failed(Throwable e, Void v) {
                fail.accept(e);
            }
        });
    }

    /**
     * Unwraps what {@link #netIn} holds into {@code dst}: the plaintext bytes moved, -1 once
     * the client's close_notify came, 0 when the engine first needs socket I/O (a write of
     * handshake records, or more ciphertext).
     */
    private int unwrapInto(ByteBuffer dst) throws SSLException {
        while (true) {
            if (appIn.hasRemaining()) return move(appIn, dst);
            if (engine.isInboundDone()) return -1;
            HandshakeStatus hs = engine.getHandshakeStatus();
            if (hs == HandshakeStatus.NEED_TASK) {
                runTasks();
                continue;
            }
            if (hs == HandshakeStatus.NEED_WRAP) return 0;
            SSLEngineResult r = unwrap(dst);
            switch (r.getStatus()) {
                case OK:
                    if (r.bytesProduced() > 0) return r.bytesProduced();
                    break;   // a handshake or session record: go on with the next
                case CLOSED:
                    return -1;
                case BUFFER_UNDERFLOW:
                    return 0;   // an incomplete record: read more
                case BUFFER_OVERFLOW: {
                    // The record may hold more plaintext than dst has room for (JSSE says so before it
                    // checks that the record is complete, and for a header not yet whole): unwrap into
                    // appIn, which holds any record, and hand it out from there.
                    int size = engine.getSession().getApplicationBufferSize();
                    ByteBuffer big = appIn.capacity() >= size ? appIn.clear() : ByteBuffer.allocate(size);
                    SSLEngineResult again = unwrap(big);
                    appIn = big.flip();
                    if (again.getStatus() == SSLEngineResult.Status.BUFFER_UNDERFLOW) return 0;   // read more
                    if (again.getStatus() == SSLEngineResult.Status.CLOSED) return -1;
                    break;
                }
            }
        }
    }

    private SSLEngineResult unwrap(ByteBuffer dst) throws SSLException {
        netIn.flip();
        try {
            return engine.unwrap(netIn, dst);
        } finally {
            netIn.compact();
        }
    }

    private void runTasks() {
        Runnable task;
        while ((task = engine.getDelegatedTask()) != null) task.run();   // on this completion thread: CPU only
    }

    private static int move(ByteBuffer from, ByteBuffer to) {
        int n = Math.min(from.remaining(), to.remaining());
        int limit = from.limit();
        from.limit(from.position() + n);
        to.put(from);
        from.limit(limit);
        return n;
    }

    // ------------------------------------------------------------------ writing

    @Override
    public <A> void write(ByteBuffer[] srcs, int offset, int length, A att, CompletionHandler<Long, ? super A> handler) {
        long total = remaining(srcs, offset, length);
        wrapAndWrite(srcs, offset, length, () -> handler.completed(total, att), e -> handler.failed(e, att));
    }

    /** Wraps as many records as {@link #netOut} holds, writes them, and goes on until {@code srcs} are sent. */
    private void wrapAndWrite(ByteBuffer[] srcs, int offset, int length, Runnable done, Consumer<Throwable> fail) {
        netOut.clear();
        try {
            while (remaining(srcs, offset, length) > 0) {
                SSLEngineResult r = engine.wrap(srcs, offset, length, netOut);
                if (r.getStatus() == SSLEngineResult.Status.BUFFER_OVERFLOW) {
                    if (netOut.position() > 0) break;   // full: write these records, then wrap the rest
                    netOut = grow(netOut, engine.getSession().getPacketBufferSize());
                } else if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                    throw new SSLException("TLS output already closed");
                } else if (r.bytesConsumed() == 0 && r.bytesProduced() == 0) {
                    throw new SSLException("TLS engine made no progress wrapping (" + r + ")");
                }
            }
        } catch (SSLException e) {
            fail.accept(e);
            return;
        }
        netOut.flip();
        writeNet(() -> {
            if (remaining(srcs, offset, length) > 0) wrapAndWrite(srcs, offset, length, done, fail);
            else done.run();
        }, fail);
    }

    /** Writes the engine's handshake records (what NEED_WRAP asks for), then runs {@code next}. */
    private void wrapHandshake(Runnable next, Consumer<Throwable> fail) {
        netOut.clear();
        try {
            while (engine.getHandshakeStatus() == HandshakeStatus.NEED_WRAP) {
                SSLEngineResult r = engine.wrap(NOTHING, netOut);
                if (r.getStatus() == SSLEngineResult.Status.BUFFER_OVERFLOW) {
                    if (netOut.position() > 0) break;   // write these, come back for the rest
                    netOut = grow(netOut, engine.getSession().getPacketBufferSize());
                } else if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                    break;
                }
            }
        } catch (SSLException e) {
            fail.accept(e);
            return;
        }
        netOut.flip();
        writeNet(next, fail);
    }

    private void writeNet(Runnable next, Consumer<Throwable> fail) {
        if (!netOut.hasRemaining()) {
            next.run();
            return;
        }
        afterWrite = next;
        writeFailed = fail;
        ch.write(netOut, null, netWritten);
    }

    // ------------------------------------------------------------------ closing

    @Override
    public void shutdownOutput(Runnable next) {
        engine.closeOutbound();
        sendClosing(() -> {
            try {
                ch.shutdownOutput();
            } catch (IOException e) {
                closeSocket();
                return;
            }
            next.run();
        });
    }

    @Override
    public void close() {
        if (closing) {   // a second close while close_notify is on its way: just close
            closeSocket();
            return;
        }
        closing = true;
        engine.closeOutbound();
        sendClosing(this::closeSocket);
    }

    /**
     * After closeOutbound: wraps and writes what the engine still has to say (a close_notify,
     * or the alert of a failed handshake), best effort, then runs {@code next}.
     */
    private void sendClosing(Runnable next) {
        netOut.clear();
        // A handshake that failed in a delegated task throws its exception from the next wrap,
        // once; the wrap after it yields the alert. A few tries are enough for either.
        for (int tries = 0; tries < 4 && !engine.isOutboundDone(); tries++) {
            try {
                SSLEngineResult r = engine.wrap(NOTHING, netOut);
                if (r.getStatus() == SSLEngineResult.Status.BUFFER_OVERFLOW && netOut.position() == 0) {
                    netOut = grow(netOut, engine.getSession().getPacketBufferSize());
                } else if (r.bytesProduced() == 0) {
                    break;
                }
            } catch (SSLException e) {
                // already reported to the reader; go on for the alert
            }
        }
        netOut.flip();
        writeNet(next, e -> closeSocket());
    }

    private void closeSocket() {
        try {
            ch.close();
        } catch (IOException ignored) {
        }
    }

    // ------------------------------------------------------------------ buffers

    private static long remaining(ByteBuffer[] bufs, int offset, int length) {
        long n = 0;
        for (int i = offset; i < offset + length; i++) n += bufs[i].remaining();
        return n;
    }

    /** A buffer of at least {@code size} bytes (twice the old one if that is already as big), same contents. */
    private static ByteBuffer grow(ByteBuffer b, int size) {
        ByteBuffer bigger = ByteBuffer.allocate(Math.max(size, b.capacity() * 2));
        return bigger.put(b.flip());
    }
}
