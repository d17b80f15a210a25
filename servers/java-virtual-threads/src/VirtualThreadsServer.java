import java.net.ServerSocket;

/**
 * java-virtual-threads: blocking ServerSocket, a new virtual thread for every
 * connection, running the blocking connection code java-threads and
 * java-threadpool run on platform threads ({@link BlockingHttp}). That code blocks
 * in socket reads, writes and sleeps; the JDK unmounts the virtual thread from its
 * carrier while it waits, so $WORKERS carrier threads serve any number of
 * connections. The database paths ({@link JdbcDatabase}) wait for PostgreSQL on the
 * connection's virtual thread the same way.
 */
public final class VirtualThreadsServer {
    public static void main(String[] args) {
        ServerEnv env = ServerEnv.read("java-virtual-threads");
        Routes.helloFile = env.helloFile();
        Routes.rowPaths = JdbcDatabase.fromEnv(env.name())::handle;   // 503 without $DATABASE_URL
        ServerSocket server = BlockingHttp.listen(env);
        Thread.Builder threads = Thread.ofVirtual().name("conn");
        env.listening("virtual thread per connection, "
                + System.getProperty("jdk.virtualThreadScheduler.parallelism",
                        Integer.toString(Runtime.getRuntime().availableProcessors()))
                + " carrier threads");

        BlockingHttp.acceptForever(env, server, socket -> threads.start(new BlockingHttp(socket)));
    }
}
