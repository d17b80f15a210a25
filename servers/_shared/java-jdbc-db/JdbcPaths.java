import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The database paths of SPEC.md (/db, /queries, /fortunes, /updates) for the std-only java-* rows:
 * pgjdbc behind a HikariCP pool of at most $DB_POOL connections. Everything here blocks the
 * calling thread until PostgreSQL answers: the thread that serves the connection (a pool thread
 * in java-threadpool, the connection's platform thread in java-threads, its virtual thread in
 * java-virtual-threads, the HttpServer's executor thread in java-httpserver), or in java-async a
 * thread of its own the completion handler hands the request to; no other connection waits.
 * The answers are HTTP-neutral ({@link Answer}), so a row on another HTTP stack uses this file
 * alone; {@link JdbcDatabase} turns them into java-std-http's Responses.
 *
 * <p>A request borrows one connection for all its queries; each query is a PreparedStatement
 * executed on its own, in auto-commit, so it is its own transaction and one round trip (no
 * pipelining). pgjdbc keeps prepared statements per connection and, from the fifth execution of
 * a statement on a connection (its default prepareThreshold), runs it as a named server-side
 * prepared statement.
 */
final class JdbcPaths {
    private static final String SELECT_WORLD = "SELECT id, randomNumber FROM World WHERE id = ?";
    private static final String UPDATE_WORLD = "UPDATE World SET randomNumber = ? WHERE id = ?";
    private static final String SELECT_FORTUNES = "SELECT id, message FROM Fortune";
    private static final int MAX_QUERIES = 500;
    private static final String HTML = "text/html; charset=utf-8";
    private static final String JSON = "application/json";

    private record World(int id, int randomNumber) {
    }

    private record Fortune(int id, String message) {
    }

    private final String name;        // the row: its Server header and its messages
    private final HikariDataSource pool;   // null without $DATABASE_URL: the paths answer 503

    private JdbcPaths(String name, HikariDataSource pool) {
        this.name = name;
        this.pool = pool;
    }

    /**
     * The database of row {@code name} as the harness describes it: $DATABASE_URL says whether
     * there is one; pgjdbc takes its parts ($DB_HOST, $DB_PORT, $DB_NAME, $DB_USER, $DB_PASSWORD),
     * HikariCP opens $DB_POOL connections at start, all of them before the row listens. A missing or bad setting, or a database that
     * refuses the first connection, is one line on stderr and exit status 1.
     */
    static JdbcPaths fromEnv(String name) {
        String url = System.getenv("DATABASE_URL");
        if (url == null || url.isEmpty()) return new JdbcPaths(name, null);
        HikariConfig config = new HikariConfig();
        config.setPoolName(name);
        String host = required(name, "DB_HOST");
        if (host.contains(":")) host = "[" + host + "]";   // an IPv6 address, bracketed as in a URL
        config.setJdbcUrl("jdbc:postgresql://" + host + ":" + required(name, "DB_PORT") + "/" + required(name, "DB_NAME"));
        config.setUsername(required(name, "DB_USER"));
        config.setPassword(required(name, "DB_PASSWORD"));
        // minimumIdle is left unset, so HikariCP keeps this many connections open: a fixed pool
        config.setMaximumPoolSize(poolSize(name));
        HikariDataSource pool = null;
        try {
            pool = new HikariDataSource(config);
        } catch (RuntimeException e) {   // HikariCP's PoolInitializationException: no first connection
            Throwable why = e.getCause() == null ? e : e.getCause();
            exit(name, "cannot open the database pool at " + config.getJdbcUrl() + " (" + why.getMessage()
                    + "); start PostgreSQL there or fix DATABASE_URL and DB_HOST/DB_PORT/DB_NAME/DB_USER/DB_PASSWORD");
        }
        awaitFull(name, pool, config.getMaximumPoolSize());
        return new JdbcPaths(name, pool);
    }

    /**
     * Waits until HikariCP has opened every connection. It opens the first one in the constructor
     * and the rest on a background thread; each costs a SCRAM-SHA-256 login (4,096 PBKDF2 rounds),
     * cold code for the JIT: measured 1.9 s of CPU over 5 s for 15 connections on the 2-core dev
     * machine, which would otherwise run after the row says it is listening, into its first checks
     * and loads. A pool that does not fill in 30 s (PostgreSQL refusing more connections) is
     * reported and used as it is: HikariCP keeps trying.
     */
    private static void awaitFull(String name, HikariDataSource pool, int size) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (pool.getHikariPoolMXBean().getTotalConnections() < size) {
            if (System.nanoTime() > deadline) {
                System.err.println(name + ": the database pool has " + pool.getHikariPoolMXBean().getTotalConnections()
                        + " of DB_POOL=" + size + " connections after 30 s; serving with those (see PostgreSQL's max_connections)");
                return;
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static String required(String name, String variable) {
        String v = System.getenv(variable);
        if (v == null || v.isEmpty()) {
            exit(name, "DATABASE_URL is set but " + variable + " is not; set every part of it: "
                    + "DB_HOST, DB_PORT, DB_NAME, DB_USER, DB_PASSWORD");
        }
        return v;
    }

    private static int poolSize(String name) {
        String v = System.getenv("DB_POOL");
        int size = 0;
        try {
            size = Integer.parseInt(v == null ? "" : v.trim());
        } catch (NumberFormatException ignored) {
            // reported below
        }
        if (size < 1) {
            exit(name, "DB_POOL is '" + (v == null ? "" : v)
                    + "'; set it to the most database connections this process may open (an integer >= 1)");
        }
        return size;
    }

    private static void exit(String name, String message) {
        System.err.println(name + ": " + message);
        System.exit(1);
    }

    /**
     * A database path's answer, whatever serves the HTTP (java-std-http's Response in
     * {@link JdbcDatabase}, an HttpExchange in java-httpserver): {@code allow} is the Allow header
     * of a 405, else null; every answer also carries {@code Server: } {@link #name}.
     */
    record Answer(int status, String type, byte[] body, String allow) {
    }

    /** Whether {@code path} is one of the database paths, answered by {@link #answer}. */
    static boolean serves(String path) {
        return path.equals("/db") || path.equals("/queries") || path.equals("/fortunes") || path.equals("/updates");
    }

    /** The row's name, for the Server header of the database paths. */
    String name() {
        return name;
    }

    /**
     * The most connections the pool opens ($DB_POOL), 0 without a database: for a row that runs the
     * queries on threads of its own (java-async), one thread per connection.
     */
    int connections() {
        return pool == null ? 0 : pool.getMaximumPoolSize();
    }

    /**
     * The answer to database path {@code path} ({@link #serves}), its queries run on the calling
     * thread, which blocks until PostgreSQL answers.
     */
    Answer answer(String method, String path, String query) {
        if (!method.equals("GET") && !method.equals("HEAD")) {
            return new Answer(405, "text/plain", latin1("Method Not Allowed"), "GET, HEAD");
        }
        if (pool == null) return new Answer(503, "text/plain", latin1("Service Unavailable"), null);
        try {
            return switch (path) {
                case "/db" -> ok(JSON, json(new StringBuilder(32), db()).toString());
                case "/queries" -> ok(JSON, json(queries(count(query))));
                case "/updates" -> ok(JSON, json(updates(count(query))));
                default -> ok(HTML, fortunesPage(fortunes()));
            };
        } catch (SQLException e) {
            System.err.println(name + ": " + path + ": " + e);
            return new Answer(500, "text/plain", latin1("Internal Server Error"), null);
        }
    }

    // ------------------------------------------------------------------ queries

    private World db() throws SQLException {
        try (Connection c = pool.getConnection(); PreparedStatement select = c.prepareStatement(SELECT_WORLD)) {
            return read(select, randomId());
        }
    }

    /** n rows, each read with its own SELECT on one borrowed connection. */
    private List<World> queries(int n) throws SQLException {
        List<World> worlds = new ArrayList<>(n);
        try (Connection c = pool.getConnection(); PreparedStatement select = c.prepareStatement(SELECT_WORLD)) {
            for (int i = 0; i < n; i++) worlds.add(read(select, randomId()));
        }
        return worlds;
    }

    /** n rows, each read with its own SELECT, given a new randomNumber and written back with its own UPDATE. */
    private List<World> updates(int n) throws SQLException {
        List<World> worlds = new ArrayList<>(n);
        try (Connection c = pool.getConnection();
             PreparedStatement select = c.prepareStatement(SELECT_WORLD);
             PreparedStatement update = c.prepareStatement(UPDATE_WORLD)) {
            for (int i = 0; i < n; i++) {
                World w = new World(read(select, randomId()).id(), randomId());
                update.setInt(1, w.randomNumber());
                update.setInt(2, w.id());
                update.executeUpdate();   // auto-commit: written before the response goes out
                worlds.add(w);
            }
        }
        return worlds;
    }

    private List<Fortune> fortunes() throws SQLException {
        List<Fortune> fortunes = new ArrayList<>(16);
        try (Connection c = pool.getConnection();
             PreparedStatement select = c.prepareStatement(SELECT_FORTUNES);
             ResultSet rows = select.executeQuery()) {
            while (rows.next()) fortunes.add(new Fortune(rows.getInt(1), rows.getString(2)));
        }
        fortunes.add(new Fortune(0, "Additional fortune added at request time."));
        fortunes.sort(Comparator.comparing(Fortune::message));
        return fortunes;
    }

    private static World read(PreparedStatement select, int id) throws SQLException {
        select.setInt(1, id);
        try (ResultSet rows = select.executeQuery()) {
            if (!rows.next()) throw new SQLException("no World row with id " + id);
            return new World(rows.getInt(1), rows.getInt(2));
        }
    }

    private static int randomId() {
        return ThreadLocalRandom.current().nextInt(1, 10_001);
    }

    /** ?queries=N clamped to 1..500; missing, empty, 0, negative or not a number -> 1. */
    static int count(String query) {
        String v = "";
        for (String pair : query.split("&")) {
            if (pair.startsWith("queries=")) {
                v = pair.substring("queries=".length());
                break;
            }
        }
        if (v.isEmpty() || !v.chars().allMatch(ch -> ch >= '0' && ch <= '9')) return 1;
        String digits = v.replaceFirst("^0+(?=.)", "");
        // too long for an int is still a number above 500
        return digits.length() > 9 ? MAX_QUERIES : Math.max(1, Math.min(MAX_QUERIES, Integer.parseInt(digits)));
    }

    // ---------------------------------------------------------------- rendering

    /** A JSON array of World objects; no JSON library in the JDK, so written by hand like /json's. */
    private static String json(List<World> worlds) {
        StringBuilder sb = new StringBuilder(32 * worlds.size() + 2).append('[');
        for (World w : worlds) {
            if (sb.length() > 1) sb.append(',');
            json(sb, w);
        }
        return sb.append(']').toString();
    }

    private static StringBuilder json(StringBuilder sb, World w) {
        return sb.append("{\"id\":").append(w.id()).append(",\"randomNumber\":").append(w.randomNumber()).append('}');
    }

    private static String fortunesPage(List<Fortune> fortunes) {
        StringBuilder sb = new StringBuilder(2048).append("<!DOCTYPE html><html><head><title>Fortunes</title></head>"
                + "<body><table><tr><th>id</th><th>message</th></tr>");
        for (Fortune f : fortunes) {
            sb.append("<tr><td>").append(f.id()).append("</td><td>");
            escapeHtml(sb, f.message());
            sb.append("</td></tr>");
        }
        return sb.append("</table></body></html>").toString();
    }

    /**
     * HTML escaping of text content: the JDK has no escaping function (nor a template engine),
     * and these rows use nothing beyond it but the driver and the pool, so the five characters
     * SPEC.md names are escaped here.
     */
    private static void escapeHtml(StringBuilder sb, String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&': sb.append("&amp;"); break;
                case '<': sb.append("&lt;"); break;
                case '>': sb.append("&gt;"); break;
                case '"': sb.append("&quot;"); break;
                case '\'': sb.append("&#39;"); break;
                default: sb.append(c);
            }
        }
    }

    private static Answer ok(String type, String body) {
        return new Answer(200, type, body.getBytes(StandardCharsets.UTF_8), null);
    }

    private static byte[] latin1(String msg) {
        return msg.getBytes(StandardCharsets.ISO_8859_1);
    }
}
