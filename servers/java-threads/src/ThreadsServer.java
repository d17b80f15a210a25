import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;

/** java-threads: blocking ServerSocket, a new platform thread for every connection. */
public final class ThreadsServer {
    public static void main(String[] args) {
        String host = env("HOST", "127.0.0.1");
        int port = Integer.parseInt(env("PORT", "8080"));
        BlockingHttp.helloFile = Path.of(env("HELLO_FILE", "../../assets/hello.html"));

        ServerSocket server;
        try {
            server = new ServerSocket();
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(host, port), 4096);
        } catch (IOException e) {
            System.err.println("java-threads: cannot listen on " + host + ":" + port + ": " + e.getMessage());
            System.exit(1);
            return;
        }
        System.out.println("java-threads listening on " + host + ":" + port + " (thread per connection)");

        while (true) {
            Socket socket;
            try {
                socket = server.accept();
            } catch (IOException e) {
                // e.g. out of file descriptors: back off instead of spinning
                System.err.println("java-threads: accept failed: " + e.getMessage());
                sleepQuietly(10);
                continue;
            }
            try {
                new Thread(new BlockingHttp(socket), "conn").start();
            } catch (OutOfMemoryError e) {   // the OS refused another thread
                System.err.println("java-threads: cannot start thread: " + e.getMessage());
                closeQuietly(socket);
            }
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

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
        }
    }
}
