import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.AsynchronousChannelGroup;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.AsynchronousServerSocketChannel;
import java.nio.channels.AsynchronousSocketChannel;
import java.nio.channels.CompletionHandler;
import java.nio.file.Path;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * java-async: NIO.2 AsynchronousServerSocketChannel with CompletionHandlers. The
 * channel group is a fixed pool of $WORKERS threads sharing one epoll port (on
 * Linux): whichever thread is free runs the next completion, and no handler ever
 * blocks on the network; /delay and /tenth wait on a timer.
 */
public final class AsyncServer {
    public static void main(String[] args) throws Exception {
        String host = env("HOST", "127.0.0.1");
        int port = Integer.parseInt(env("PORT", "8080"));
        int workers = Integer.parseInt(env("WORKERS", Integer.toString(Runtime.getRuntime().availableProcessors())));
        Routes.helloFile = Path.of(env("HELLO_FILE", "../../assets/hello.html"));

        AsynchronousChannelGroup group = AsynchronousChannelGroup.withFixedThreadPool(workers, Executors.defaultThreadFactory());
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "delay-timer");
            t.setDaemon(true);
            return t;
        });
        AsynchronousServerSocketChannel server;
        try {
            server = AsynchronousServerSocketChannel.open(group);
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(new InetSocketAddress(host, port), 4096);
        } catch (IOException e) {
            System.err.println("java-async: cannot listen on " + host + ":" + port + ": " + e.getMessage());
            System.exit(1);
            return;
        }
        System.out.println("java-async listening on " + host + ":" + port + " (" + workers + " completion threads)");

        server.accept(null, new CompletionHandler<AsynchronousSocketChannel, Void>() {
            @Override
            public void completed(AsynchronousSocketChannel ch, Void v) {
                server.accept(null, this);   // keep accepting while this one is set up
                try {
                    ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                } catch (IOException ignored) {
                }
                new Connection(ch, timer).start();
            }

            @Override
            public void failed(Throwable e, Void v) {
                if (e instanceof AsynchronousCloseException) return;
                // e.g. out of file descriptors: retry shortly instead of spinning
                System.err.println("java-async: accept failed: " + e);
                timer.schedule(() -> server.accept(null, this), 10, TimeUnit.MILLISECONDS);
            }
        });
        Thread.currentThread().join();   // the group's threads do the work
    }

    static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? dflt : v;
    }
}
