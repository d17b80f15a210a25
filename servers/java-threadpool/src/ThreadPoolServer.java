import java.net.ServerSocket;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * java-threadpool: blocking ServerSocket whose connections are served by a fixed
 * pool of $WORKERS threads. A connection keeps its pool thread until the client
 * closes it, so at most $WORKERS connections are served at once; later ones wait
 * in the executor's queue (server.toml declares max_connections = "workers"). The
 * database paths ({@link JdbcDatabase}) wait for PostgreSQL on that pool thread.
 */
public final class ThreadPoolServer {
    public static void main(String[] args) {
        ServerEnv env = ServerEnv.read("java-threadpool");
        Routes.helloFile = env.helloFile();
        Routes.rowPaths = JdbcDatabase.fromEnv(env.name())::handle;   // 503 without $DATABASE_URL
        ServerSocket server = BlockingHttp.listen(env);
        ExecutorService pool = Executors.newFixedThreadPool(env.workers());
        env.listening(env.workers() + " pool threads");

        BlockingHttp.acceptForever(env, server, socket -> pool.execute(new BlockingHttp(socket)));
    }
}
