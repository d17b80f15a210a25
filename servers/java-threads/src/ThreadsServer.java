import java.net.ServerSocket;

/**
 * java-threads: blocking ServerSocket, a new platform thread for every connection. The
 * database paths ({@link JdbcDatabase}) wait for PostgreSQL on that connection's thread.
 */
public final class ThreadsServer {
    public static void main(String[] args) {
        ServerEnv env = ServerEnv.read("java-threads");
        Routes.helloFile = env.helloFile();
        Routes.rowPaths = JdbcDatabase.fromEnv(env.name())::handle;   // 503 without $DATABASE_URL
        ServerSocket server = BlockingHttp.listen(env);
        env.listening("thread per connection");

        BlockingHttp.acceptForever(env, server, socket -> {
            try {
                new Thread(new BlockingHttp(socket), "conn").start();
            } catch (OutOfMemoryError e) {   // the OS refused another thread
                System.err.println("java-threads: cannot start thread: " + e.getMessage());
                BlockingHttp.closeQuietly(socket);
            }
        });
    }
}
