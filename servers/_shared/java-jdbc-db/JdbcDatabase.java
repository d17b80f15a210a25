/**
 * The database paths ({@link JdbcPaths}) for the rows on java-std-http: java-threadpool,
 * java-threads, java-virtual-threads (on {@link Routes#rowPaths}) and java-async. Kept apart from
 * JdbcPaths so that java-httpserver, which has its own HTTP stack, compiles without java-std-http.
 */
final class JdbcDatabase {
    private final JdbcPaths paths;

    private JdbcDatabase(JdbcPaths paths) {
        this.paths = paths;
    }

    /** See {@link JdbcPaths#fromEnv}: 503 answers without $DATABASE_URL, exit status 1 on a bad setting. */
    static JdbcDatabase fromEnv(String name) {
        return new JdbcDatabase(JdbcPaths.fromEnv(name));
    }

    JdbcPaths paths() {
        return paths;
    }

    /** The answer to a database path (null for any other path): for {@link Routes#rowPaths}. */
    Response handle(Request req) {
        if (!JdbcPaths.serves(req.path())) return null;
        JdbcPaths.Answer a = paths.answer(req.method(), req.path(), req.query());
        Response r = new Response(a.status(), a.type(), a.body(), 0, a.body().length, req.keepAlive(), req.http10());
        if (a.allow() != null) r.extraHeaders = "\r\nAllow: " + a.allow();
        r.extraHeaders += "\r\nServer: " + paths.name();
        return r;
    }
}
