import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousSocketChannel;
import java.nio.channels.CompletionHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One client connection as a chain of completion handlers: read → parse →
 * answer → write → parse/read again. At most one operation (read, write, timer
 * or database query) is outstanding at a time, so the fields need no locking, and
 * pipelined requests are answered in order.
 */
final class Connection {
    private static final int MAX_BATCH = 256 * 1024;   // answered-but-unwritten bytes before we write

    private final AsynchronousSocketChannel ch;
    private final Transport io;   // the HTTP bytes: ch itself, or TLS over it
    private final ScheduledExecutorService timer;
    private final Executor database;   // runs the database paths: JDBC blocks
    private final Executor cpu;        // runs /compress: ~0.1 s of CPU for 4 MiB
    private final RequestParser parser = new RequestParser();
    private final List<ByteBuffer> out = new ArrayList<>();
    private int outBytes;
    private Runnable afterWrite;

    Connection(AsynchronousSocketChannel ch, Transport io, ScheduledExecutorService timer, Executor database,
               Executor cpu) {
        this.ch = ch;
        this.io = io;
        this.timer = timer;
        this.database = database;
        this.cpu = cpu;
    }

    void start() {
        read();
    }

    private void read() {
        io.read(parser.bufferForRead(), 0, TimeUnit.MILLISECONDS, this, READ);
    }

    private static final CompletionHandler<Integer, Connection> READ = new CompletionHandler<>() {
        @Override
        public void completed(Integer n, Connection c) {
            if (n < 0) c.close();   // client closed
            else c.pump();
        }

        @Override
        public void failed(Throwable e, Connection c) {
            c.close();
        }
    };

    /** Answers every complete request in the buffer, then writes and reads on. */
    private void pump() {
        while (true) {
            Request req;
            try {
                req = parser.next();
            } catch (HttpError e) {
                queue(Response.refusal(e));
                writeThen(this::lingerClose);
                return;
            }
            if (req == null) {   // need more bytes: send what we have, then read
                if (parser.takeContinue()) {
                    out.add(ByteBuffer.wrap(Response.CONTINUE));
                    outBytes += Response.CONTINUE.length;
                }
                writeThen(this::read);
                return;
            }
            if (JdbcPaths.serves(req.path())) {
                // JDBC blocks until PostgreSQL answers, and a completion handler should complete
                // in a timely manner (CompletionHandler's contract): the request goes to a
                // database thread, which answers it. Earlier pipelined answers go out first.
                writeThen(() -> database.execute(() -> answerLater(Routes.handle(req))));
                return;
            }
            if (req.path().equals("/compress")) {
                // The gzip is CPU work (~0.1 s for 4 MiB), not timely either: the same hand-off, to
                // the CPU pool, whose thread compresses and answers (Routes → Contract.compressGzip).
                writeThen(() -> cpu.execute(() -> answerLater(Routes.handle(req))));
                return;
            }
            Response resp = Routes.handle(req);
            if (resp.delayMs > 0) {
                // Natural async wait: a timer, never a sleeping completion thread. Earlier
                // pipelined answers go out first; the write completion resumes us on the group.
                writeThen(() -> timer.schedule(() -> answerLater(resp), resp.delayMs, TimeUnit.MILLISECONDS));
                return;
            }
            queue(resp);
            if (!resp.keepAlive) {
                writeThen(this::closeAfterAnswer);
                return;
            }
            if (outBytes >= MAX_BATCH) {
                writeThen(this::pump);
                return;
            }
        }
    }

    /** An answer made off the chain (the timer, a database or CPU thread): send it, then go on. */
    private void answerLater(Response resp) {
        queue(resp);
        writeThen(resp.keepAlive ? this::pump : this::closeAfterAnswer);
    }

    private void queue(Response r) {
        byte[] head = r.head();
        out.add(ByteBuffer.wrap(head));
        outBytes += head.length;
        if (r.sendBody()) {
            out.add(ByteBuffer.wrap(r.body, r.off, r.len));
            outBytes += r.len;
        }
    }

    /** Writes everything queued (gathering write), then runs {@code next}. */
    private void writeThen(Runnable next) {
        if (out.isEmpty()) {
            next.run();
            return;
        }
        afterWrite = next;
        ByteBuffer[] bufs = out.toArray(new ByteBuffer[0]);
        out.clear();
        outBytes = 0;
        io.write(bufs, 0, bufs.length, bufs, new CompletionHandler<Long, ByteBuffer[]>() {
            @Override
            public void completed(Long n, ByteBuffer[] b) {
                for (int i = 0; i < b.length; i++) {
                    if (b[i].hasRemaining()) {   // partial write: continue from the first unsent buffer
                        io.write(b, i, b.length - i, b, this);
                        return;
                    }
                }
                Runnable k = afterWrite;
                afterWrite = null;
                k.run();
            }

            @Override
            public void failed(Throwable e, ByteBuffer[] b) {
                close();
            }
        });
    }

    private void closeAfterAnswer() {
        if (parser.hasUnread()) lingerClose();
        else close();
    }

    /**
     * Closing with unread input makes the kernel send RST, which can destroy the
     * answer just written. Half-close, discard what the client still sends for a
     * bounded time, then close. The discarded bytes are read from the socket itself:
     * over TLS they need no decrypting.
     */
    private void lingerClose() {
        io.shutdownOutput(this::drain);
    }

    private void drain() {
        ByteBuffer sink = ByteBuffer.allocate(8192);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        ch.read(sink, 1, TimeUnit.SECONDS, null, new CompletionHandler<Integer, Void>() {
            @Override
            public void completed(Integer n, Void v) {
                if (n < 0 || System.nanoTime() > deadline) {
                    close();
                    return;
                }
                sink.clear();
                ch.read(sink, 1, TimeUnit.SECONDS, null, this);
            }

            @Override
            public void failed(Throwable e, Void v) {   // includes the read timeout
                close();
            }
        });
    }

    private void close() {
        io.close();
    }
}
