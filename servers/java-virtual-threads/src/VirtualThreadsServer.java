import java.net.ServerSocket;

/**
 * java-virtual-threads: blocking ServerSocket, a new virtual thread for every
 * connection, running the blocking connection code java-threads and
 * java-threadpool run on platform threads ({@link BlockingHttp}). That code blocks
 * in socket reads, writes and sleeps; the JDK unmounts the virtual thread from its
 * carrier while it waits, so $WORKERS carrier threads serve any number of
 * connections.
 */
public final class VirtualThreadsServer {
    public static void main(String[] args) {
        ServerEnv env = ServerEnv.read("java-virtual-threads");
        Routes.helloFile = env.helloFile();
        ServerSocket server = BlockingHttp.listen(env);
        Thread.Builder threads = Thread.ofVirtual().name("conn");
        env.listening("virtual thread per connection, "
                + System.getProperty("jdk.virtualThreadScheduler.parallelism",
                        Integer.toString(Runtime.getRuntime().availableProcessors()))
                + " carrier threads");

        BlockingHttp.acceptForever(env, server, socket -> threads.start(new BlockingHttp(socket)));
    }
}
