import java.nio.file.Path;

/**
 * The process settings SPEC.md gives every row, read from the environment:
 * {@code $HOST}, {@code $PORT}, {@code $WORKERS} (default: the CPUs this process may
 * run on) and {@code $HELLO_FILE}; plus the start-up messages and the exit on a
 * bind failure, so all java-* rows start and fail alike.
 */
record ServerEnv(String name, String host, int port, int workers, Path helloFile) {
    /** Listen backlog of every java-* row. */
    static final int BACKLOG = 4096;

    /** The settings of the row called {@code name} (used in its messages). */
    static ServerEnv read(String name) {
        return new ServerEnv(name,
                get("HOST", "127.0.0.1"),
                Integer.parseInt(get("PORT", "8080")),
                Integer.parseInt(get("WORKERS", Integer.toString(Runtime.getRuntime().availableProcessors()))),
                Path.of(get("HELLO_FILE", "../../assets/hello.html")));
    }

    private static String get(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? dflt : v;
    }

    /** Bind failure: a message on stderr and a non-zero exit (SPEC.md, Process). */
    void cannotListen(Object why) {
        System.err.println(name + ": cannot listen on " + host + ":" + port + ": " + why);
        System.exit(1);
    }

    void listening(String how) {
        String scheme = ServerTls.requested() ? "https" : "http";
        System.out.println(name + " listening on " + scheme + "://" + host + ":" + port + " (" + how + ")");
    }
}
