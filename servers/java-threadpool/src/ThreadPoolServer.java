import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * java-threadpool: blocking ServerSocket whose connections are served by a fixed
 * pool of $WORKERS threads. A connection keeps its pool thread until the client
 * closes it, so at most $WORKERS connections are served at once; later ones wait
 * in the executor's queue (server.toml declares max_connections = "workers").
 */
public final class ThreadPoolServer {
    public static void main(String[] args) {
        String host = env("HOST", "127.0.0.1");
        int port = Integer.parseInt(env("PORT", "8080"));
        int workers = Integer.parseInt(env("WORKERS", Integer.toString(Runtime.getRuntime().availableProcessors())));
        BlockingHttp.helloFile = Path.of(env("HELLO_FILE", "../../assets/hello.html"));

        ServerSocket server;
        try {
            server = new ServerSocket();
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(host, port), 4096);
        } catch (IOException e) {
            System.err.println("java-threadpool: cannot listen on " + host + ":" + port + ": " + e.getMessage());
            System.exit(1);
            return;
        }
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        System.out.println("java-threadpool listening on " + host + ":" + port + " (" + workers + " pool threads)");

        while (true) {
            Socket socket;
            try {
                socket = server.accept();
            } catch (IOException e) {
                // e.g. out of file descriptors: back off instead of spinning
                System.err.println("java-threadpool: accept failed: " + e.getMessage());
                sleepQuietly(10);
                continue;
            }
            pool.execute(new BlockingHttp(socket));
        }
    }

    static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? dflt : v;
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException ignored) {
        }
    }
}
