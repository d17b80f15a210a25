import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousSocketChannel;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.TimeUnit;

/**
 * The byte stream a {@link Connection} reads requests from and writes answers to: the
 * accepted socket itself ({@link Plain}), or TLS over it ({@link TlsTransport}, with
 * $TLS_CERT/$TLS_KEY). The operations are AsynchronousSocketChannel's, and like
 * Connection they assume at most one is outstanding at a time.
 */
interface Transport {
    <A> void read(ByteBuffer dst, long timeout, TimeUnit unit, A att, CompletionHandler<Integer, ? super A> handler);

    /** A gathering write; like a socket's, it may complete having written only part of {@code srcs}. */
    <A> void write(ByteBuffer[] srcs, int offset, int length, A att, CompletionHandler<Long, ? super A> handler);

    /** Ends the output side (TLS: close_notify, then the TCP half-close) and runs {@code next}; closes on failure. */
    void shutdownOutput(Runnable next);

    /** Closes the connection (TLS: close_notify first, when the connection still takes it). */
    void close();

    /** Plaintext: the socket's own operations. */
    record Plain(AsynchronousSocketChannel ch) implements Transport {
        @Override
        public <A> void read(ByteBuffer dst, long timeout, TimeUnit unit, A att, CompletionHandler<Integer, ? super A> handler) {
            ch.read(dst, timeout, unit, att, handler);
        }

        @Override
        public <A> void write(ByteBuffer[] srcs, int offset, int length, A att, CompletionHandler<Long, ? super A> handler) {
            ch.write(srcs, offset, length, 0, TimeUnit.MILLISECONDS, att, handler);
        }

        @Override
        public void shutdownOutput(Runnable next) {
            try {
                ch.shutdownOutput();
            } catch (IOException e) {
                close();
                return;
            }
            next.run();
        }

        @Override
        public void close() {
            try {
                ch.close();
            } catch (IOException ignored) {
            }
        }
    }
}
