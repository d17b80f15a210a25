import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.AsynchronousChannelGroup;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.AsynchronousServerSocketChannel;
import java.nio.channels.AsynchronousSocketChannel;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;

/**
 * java-async: NIO.2 AsynchronousServerSocketChannel with CompletionHandlers. The
 * channel group is a fixed pool of $WORKERS threads sharing one epoll port (on
 * Linux): whichever thread is free runs the next completion, and no handler ever
 * blocks on the network; /delay and /tenth wait on a timer, and the database paths
 * ({@link JdbcDatabase}: pgjdbc + HikariCP, blocking) and /compress (CPU-bound gzip) run on
 * threads of their own. With
 * $TLS_CERT/$TLS_KEY each connection runs TLS through a JSSE SSLEngine ({@link TlsTransport}).
 */
public final class AsyncServer {
    public static void main(String[] args) throws Exception {
        ServerEnv env = ServerEnv.read("java-async");
        Routes.helloFile = env.helloFile();
        JdbcDatabase db = JdbcDatabase.fromEnv(env.name());
        Routes.rowPaths = db::handle;   // 503 without $DATABASE_URL
        SSLContext tls = ServerTls.context(env);   // null: plaintext

        AsynchronousChannelGroup group = AsynchronousChannelGroup.withFixedThreadPool(env.workers(), Executors.defaultThreadFactory());
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "delay-timer");
            t.setDaemon(true);
            return t;
        });
        // One thread per pool connection: more would only wait in HikariCP's getConnection
        // (without a database, one thread answers the 503s).
        Executor database = Executors.newFixedThreadPool(Math.max(1, db.paths().connections()), r -> {
            Thread t = new Thread(r, "database");
            t.setDaemon(true);
            return t;
        });
        // /compress: the gzip is CPU-bound, so a fixed pool of one thread per CPU runs it (more
        // threads would only share the same cores); requests beyond it wait in its queue.
        Executor cpu = Executors.newFixedThreadPool(Runtime.getRuntime().availableProcessors(), r -> {
            Thread t = new Thread(r, "compress");
            t.setDaemon(true);
            return t;
        });
        AsynchronousServerSocketChannel server;
        try {
            server = AsynchronousServerSocketChannel.open(group);
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(new InetSocketAddress(env.host(), env.port()), ServerEnv.BACKLOG);
        } catch (IOException e) {
            env.cannotListen(e.getMessage());
            return;
        }
        env.listening(env.workers() + " completion threads");

        server.accept(null, new CompletionHandler<AsynchronousSocketChannel, Void>() {
            @Override
            public void completed(AsynchronousSocketChannel ch, Void v) {
                server.accept(null, this);   // keep accepting while this one is set up
                try {
                    ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                } catch (IOException ignored) {
                }
                Transport io = tls == null ? new Transport.Plain(ch) : new TlsTransport(ch, tls);
                new Connection(ch, io, timer, database, cpu).start();
            }

            @Override
            public void failed(Throwable e, Void v) {
                if (e instanceof AsynchronousCloseException) return;
                // e.g. out of file descriptors: retry shortly instead of spinning
                System.err.println(env.name() + ": accept failed: " + e);
                timer.schedule(() -> server.accept(null, this), 10, TimeUnit.MILLISECONDS);
            }
        });
        Thread.currentThread().join();   // the group's threads do the work
    }
}
