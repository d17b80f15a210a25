import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.rapidoid.config.Conf;
import org.rapidoid.jdbc.JDBC;
import org.rapidoid.jdbc.JdbcClient;
import org.rapidoid.writable.ReusableWritable;
import org.rapidoid.writable.WritableUtils;

/**
 * The database of SPEC.md's database paths through Rapidoid's own JDBC API (rapidoid-sql, which
 * rapidoid-http-fast already brings): JDBC.api() over pgjdbc, with HikariCP as its pool (Rapidoid's
 * default pool provider). Queries run on Rapidoid's JDBC workers (JdbcClient.execute), each handed a
 * pooled connection, never on an I/O worker; RapidoidServer answers when they are done.
 *
 * <p>A request's queries run on the one connection its JDBC worker holds; each query is a
 * PreparedStatement executed on its own in auto-commit: its own transaction and one round trip (no
 * pipelining). pgjdbc keeps the statements per connection and, from their fifth execution there
 * (prepareThreshold), runs them as named server-side prepared statements.
 */
final class Database {
    /** Public fields: what the JSON mapper (Jackson 2.8, from before records) reads. */
    static final class World {
        public final int id;
        public final int randomNumber;

        World(int id, int randomNumber) {
            this.id = id;
            this.randomNumber = randomNumber;
        }
    }

    static final class Fortune {
        public final int id;
        public final String message;

        Fortune(int id, String message) {
            this.id = id;
            this.message = message;
        }
    }

    private static final String SELECT_WORLD = "SELECT id, randomNumber FROM World WHERE id = ?";
    private static final String UPDATE_WORLD = "UPDATE World SET randomNumber = ? WHERE id = ?";
    private static final String SELECT_FORTUNES = "SELECT id, message FROM Fortune";

    private Database() {
    }

    /**
     * Rapidoid's default JDBC client for the database $DATABASE_URL names, null without one (the paths
     * answer 503). pgjdbc takes its parts ($DB_HOST, $DB_PORT, $DB_NAME, $DB_USER, $DB_PASSWORD).
     * Rapidoid's `hikari` and `jdbc` config sections size the pool and its JDBC workers at $DB_POOL
     * (a worker holds one connection while it works, so there is one per connection); the pool is
     * opened and filled before the row listens. A missing setting or a refused first connection:
     * one line on stderr, exit status 1.
     */
    static JdbcClient fromEnv(String name) {
        String url = System.getenv("DATABASE_URL");
        if (url == null || url.isEmpty()) return null;
        int size = poolSize(name);
        String host = required(name, "DB_HOST");
        if (host.contains(":")) host = "[" + host + "]";   // an IPv6 address, bracketed as in a URL
        Conf.HIKARI.set("maximumPoolSize", size);   // minimumIdle unset: HikariCP keeps this many open
        Conf.JDBC.set("workers", size);             // default: the CPU count
        JdbcClient jdbc = JDBC.api()
                .driver("org.postgresql.Driver")   // Rapidoid's built-in config says UNKNOWN outside its `postgres` profile
                .url("jdbc:postgresql://" + host + ":" + required(name, "DB_PORT") + "/" + required(name, "DB_NAME"))
                .username(required(name, "DB_USER"))
                .password(required(name, "DB_PASSWORD"))
                .pooled();
        try {
            jdbc.init();   // opens the pool now rather than at the first query
        } catch (RuntimeException e) {   // HikariCP's PoolInitializationException: no first connection
            Throwable why = e.getCause() == null ? e : e.getCause();
            exit(name, "cannot open the database pool at " + jdbc.url() + " (" + why.getMessage()
                    + "); start PostgreSQL there or fix DATABASE_URL and DB_HOST/DB_PORT/DB_NAME/DB_USER/DB_PASSWORD");
        }
        awaitFull(name, (HikariDataSource) jdbc.dataSource(), size);
        return jdbc;
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

    // ------------------------------------------------------------------ queries (on a JDBC worker)

    static World db(Connection c) throws SQLException {
        try (PreparedStatement select = c.prepareStatement(SELECT_WORLD)) {
            return read(select, randomId());
        }
    }

    /** n rows, each read with its own SELECT. */
    static List<World> queries(Connection c, int n) throws SQLException {
        List<World> worlds = new ArrayList<>(n);
        try (PreparedStatement select = c.prepareStatement(SELECT_WORLD)) {
            for (int i = 0; i < n; i++) worlds.add(read(select, randomId()));
        }
        return worlds;
    }

    /** n rows, each read with its own SELECT, given a new randomNumber and written back with its own UPDATE. */
    static List<World> updates(Connection c, int n) throws SQLException {
        List<World> worlds = new ArrayList<>(n);
        try (PreparedStatement select = c.prepareStatement(SELECT_WORLD);
             PreparedStatement update = c.prepareStatement(UPDATE_WORLD)) {
            for (int i = 0; i < n; i++) {
                World w = new World(read(select, randomId()).id, randomId());
                update.setInt(1, w.randomNumber);
                update.setInt(2, w.id);
                update.executeUpdate();   // auto-commit: written before the response goes out
                worlds.add(w);
            }
        }
        return worlds;
    }

    /**
     * The fortunes page: every Fortune row plus the one added at request time, sorted by message,
     * each message written with Rapidoid's HTML escaping (WritableUtils.writeUTF8HtmlEscaped, the
     * function its template engine calls for ${...}). The engine itself (rapidoid-render) cannot run
     * here: it compiles each template with javassist 3.22, which fails on JDK 17 (NullPointerException
     * in javassist's DefineClassHelper, with or without --add-opens java.base/java.lang=ALL-UNNAMED).
     */
    static byte[] fortunes(Connection c) throws SQLException {
        List<Fortune> fortunes = new ArrayList<>(16);
        try (PreparedStatement select = c.prepareStatement(SELECT_FORTUNES); ResultSet rows = select.executeQuery()) {
            while (rows.next()) fortunes.add(new Fortune(rows.getInt(1), rows.getString(2)));
        }
        fortunes.add(new Fortune(0, "Additional fortune added at request time."));
        fortunes.sort(Comparator.comparing((Fortune f) -> f.message));
        ReusableWritable page = new ReusableWritable(2048);
        WritableUtils.writeAscii(page, "<!DOCTYPE html><html><head><title>Fortunes</title></head>"
                + "<body><table><tr><th>id</th><th>message</th></tr>");
        for (Fortune f : fortunes) {
            WritableUtils.writeAscii(page, "<tr><td>");
            WritableUtils.putNumAsText(page, f.id);
            WritableUtils.writeAscii(page, "</td><td>");
            WritableUtils.writeUTF8HtmlEscaped(page, f.message);
            WritableUtils.writeAscii(page, "</td></tr>");
        }
        WritableUtils.writeAscii(page, "</table></body></html>");
        return page.copy();
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
        return digits.length() > 9 ? 500 : Math.max(1, Math.min(500, Integer.parseInt(digits)));
    }
}
