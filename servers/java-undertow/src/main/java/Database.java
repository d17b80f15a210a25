import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The queries of SPEC.md's database paths on pgjdbc behind a HikariCP pool of $DB_POOL connections,
 * the JDBC stack Undertow users (and TechEmpower's undertow row) deploy. Every method blocks its
 * thread until PostgreSQL answers, so UndertowServer calls them on a worker thread, never on an IO
 * thread.
 *
 * <p>A request borrows one connection for all its queries; each query is a PreparedStatement executed
 * on its own in auto-commit: its own transaction and one round trip (no pipelining). pgjdbc keeps the
 * statements per connection and, from their fifth execution there (prepareThreshold), runs them as
 * named server-side prepared statements.
 */
final class Database {
    record World(int id, int randomNumber) {
    }

    record Fortune(int id, String message) {
    }

    private static final String SELECT_WORLD = "SELECT id, randomNumber FROM World WHERE id = ?";
    private static final String UPDATE_WORLD = "UPDATE World SET randomNumber = ? WHERE id = ?";
    private static final String SELECT_FORTUNES = "SELECT id, message FROM Fortune";

    private final HikariDataSource pool;   // null without $DATABASE_URL: the paths answer 503

    private Database(HikariDataSource pool) {
        this.pool = pool;
    }

    boolean configured() {
        return pool != null;
    }

    /**
     * $DATABASE_URL says whether there is a database; pgjdbc takes its parts ($DB_HOST, $DB_PORT,
     * $DB_NAME, $DB_USER, $DB_PASSWORD). HikariCP opens $DB_POOL connections, all before the row
     * listens. A missing setting, or a database refusing the first connection, is one line on stderr
     * and exit status 1.
     */
    static Database fromEnv(String name) {
        String url = System.getenv("DATABASE_URL");
        if (url == null || url.isEmpty()) return new Database(null);
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
        return new Database(pool);
    }

    /**
     * Waits until HikariCP has opened every connection (it opens the rest on a background thread):
     * each costs a SCRAM-SHA-256 login on cold code, which would otherwise run after the row says it
     * is listening, into its first checks. After 30 s the row serves with what it has.
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
        try {
            int size = Integer.parseInt(v == null ? "" : v.trim());
            if (size >= 1) return size;
        } catch (NumberFormatException ignored) {
            // reported below
        }
        exit(name, "DB_POOL is '" + (v == null ? "" : v)
                + "'; set it to the most database connections this process may open (an integer >= 1)");
        return 0;
    }

    private static void exit(String name, String message) {
        System.err.println(name + ": " + message);
        System.exit(1);
    }

    // ------------------------------------------------------------------ queries

    World db() throws SQLException {
        try (Connection c = pool.getConnection(); PreparedStatement select = c.prepareStatement(SELECT_WORLD)) {
            return read(select, randomId());
        }
    }

    /** n rows, each read with its own SELECT on one borrowed connection. */
    List<World> queries(int n) throws SQLException {
        List<World> worlds = new ArrayList<>(n);
        try (Connection c = pool.getConnection(); PreparedStatement select = c.prepareStatement(SELECT_WORLD)) {
            for (int i = 0; i < n; i++) worlds.add(read(select, randomId()));
        }
        return worlds;
    }

    /** n rows, each read with its own SELECT, given a new randomNumber and written back with its own UPDATE. */
    List<World> updates(int n) throws SQLException {
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

    /** Every Fortune row plus the one added at request time, sorted by message. */
    List<Fortune> fortunes() throws SQLException {
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

    /** The value of ?queries= clamped to 1..500; missing, empty, 0, negative or not a number -> 1. */
    static int count(String value) {
        if (value == null || value.isEmpty() || !value.chars().allMatch(ch -> ch >= '0' && ch <= '9')) return 1;
        String digits = value.replaceFirst("^0+(?=.)", "");
        // too long for an int is still a number above 500
        return digits.length() > 9 ? 500 : Math.max(1, Math.min(500, Integer.parseInt(digits)));
    }

    // ---------------------------------------------------------------- rendering

    /**
     * The fortunes page. Undertow has no template engine nor an HTML escaper, so the five characters
     * SPEC.md names are escaped here.
     */
    static String fortunesPage(List<Fortune> fortunes) {
        StringBuilder sb = new StringBuilder(2048).append("<!DOCTYPE html><html><head><title>Fortunes</title></head>"
                + "<body><table><tr><th>id</th><th>message</th></tr>");
        for (Fortune f : fortunes) {
            sb.append("<tr><td>").append(f.id()).append("</td><td>");
            for (char ch : f.message().toCharArray()) {
                switch (ch) {
                    case '&' -> sb.append("&amp;");
                    case '<' -> sb.append("&lt;");
                    case '>' -> sb.append("&gt;");
                    case '"' -> sb.append("&quot;");
                    case '\'' -> sb.append("&#39;");
                    default -> sb.append(ch);
                }
            }
            sb.append("</td></tr>");
        }
        return sb.append("</table></body></html>").toString();
    }
}
