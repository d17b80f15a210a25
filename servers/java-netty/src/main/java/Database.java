import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.mustachejava.DefaultMustacheFactory;
import com.github.mustachejava.Mustache;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The database paths of SPEC.md (/db, /queries, /fortunes, /updates) on Vert.x's reactive
 * PostgreSQL client. Nothing here blocks: every method returns a Vert.x future that completes
 * on a Vert.x event loop; the Netty handler hands the result back to the connection's own loop.
 *
 * <p>One {@link Pool} of at most $DB_POOL connections. A request that runs several queries
 * borrows one connection and sends them all at once: the connection pipelines up to its
 * pipeliningLimit (256, the client's default), each query its own Bind/Execute/Sync, so each is
 * its own implicit transaction. Statements are prepared once per connection and cached.
 */
final class Database {
    private static final String SELECT_WORLD = "SELECT id, randomNumber FROM World WHERE id = $1";
    private static final String UPDATE_WORLD = "UPDATE World SET randomNumber = $1 WHERE id = $2";
    private static final String SELECT_FORTUNES = "SELECT id, message FROM Fortune";
    private static final int MAX_QUERIES = 500;
    private static final int START_TIMEOUT_S = 20;   // the harness waits 30 s for a first answer

    record World(int id, int randomNumber) {
    }

    record Fortune(int id, String message) {
    }

    private final Pool pool;
    private final ObjectMapper mapper;
    /** Compiled once; mustache.java escapes every {{value}} for HTML (& < > " ' and more). */
    private final Mustache fortunesPage = new DefaultMustacheFactory().compile("fortunes.mustache");

    private Database(Pool pool, ObjectMapper mapper) {
        this.pool = pool;
        this.mapper = mapper;
    }

    /**
     * The pool described by $DATABASE_URL and $DB_POOL, or null without $DATABASE_URL (the
     * database paths then answer 503). Vert.x gets $WORKERS event loops of its own for the
     * database sockets; connections open lazily, on the loop of the Netty thread that asks first.
     */
    static Database fromEnv(String name, int workers, ObjectMapper mapper) {
        String url = System.getenv("DATABASE_URL");
        if (url == null || url.isEmpty()) return null;
        int size = poolSize(name, System.getenv("DB_POOL"));
        PgConnectOptions connect;
        try {
            connect = PgConnectOptions.fromUri(url);
        } catch (IllegalArgumentException e) {
            throw fail(name, "DATABASE_URL is not a postgres:// URL (" + e.getMessage()
                    + "); set it to postgres://USER:PASSWORD@HOST:PORT/DATABASE");
        }
        connect.setCachePreparedStatements(true);   // prepare each statement once per connection
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(workers));
        Pool pool = PgBuilder.pool()
                .with(new PoolOptions().setMaxSize(size))
                .connectingTo(connect)
                .using(vertx)
                .build();
        openOne(name, pool);
        return new Database(pool, mapper);
    }

    /**
     * Opens one connection before the server listens (SPEC.md: "at start or lazily") and leaves it in
     * the pool: a wrong URL or password is one line at start, not a 500 on every request, and the first
     * request does not pay for connecting (measured: 2.3-2.7 s for the first /db on a loaded 2-CPU machine).
     */
    private static void openOne(String name, Pool pool) {
        try {
            pool.getConnection().compose(SqlConnection::close)
                    .toCompletionStage().toCompletableFuture().get(START_TIMEOUT_S, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw fail(name, "cannot connect to DATABASE_URL (" + e.getCause().getMessage()
                    + "); check that PostgreSQL listens there and the URL's user and password");
        } catch (TimeoutException | InterruptedException e) {
            throw fail(name, "no connection to DATABASE_URL within " + START_TIMEOUT_S
                    + " s; check that PostgreSQL listens there");
        }
    }

    private static int poolSize(String name, String value) {
        int size;
        try {
            size = Integer.parseInt(value == null ? "" : value.trim());
        } catch (NumberFormatException e) {
            size = 0;
        }
        if (size < 1) {
            throw fail(name, "DB_POOL is '" + (value == null ? "" : value)
                    + "'; set it to the most database connections this process may open (an integer >= 1)");
        }
        return size;
    }

    private static IllegalArgumentException fail(String name, String message) {
        return new IllegalArgumentException(name + ": " + message);
    }

    /** /queries and /updates ?queries=N: 1..500; missing, empty, 0, negative or not a number -> 1. */
    static int count(List<String> values) {
        String v = values == null || values.isEmpty() ? "" : values.get(0).trim();
        if (!v.matches("[0-9]+")) return 1;   // empty, negative or not a number
        String digits = v.replaceFirst("^0+(?=.)", "");
        // too long for an int is still a number "above 500"
        return digits.length() > 9 ? MAX_QUERIES : Math.max(1, Math.min(MAX_QUERIES, Integer.parseInt(digits)));
    }

    /** GET /db: one World row as a JSON object. */
    Future<byte[]> db() {
        return selectWorld(pool).map(this::json);
    }

    /** GET /queries: n rows, each its own SELECT, pipelined on one borrowed connection. */
    Future<byte[]> queries(int n) {
        return pool.withConnection(conn -> selectWorlds(conn, n)).map(this::json);
    }

    /** GET /updates: n rows read one by one, each given a new randomNumber and written back (one UPDATE per row). */
    Future<byte[]> updates(int n) {
        return pool.withConnection(conn -> selectWorlds(conn, n).compose(worlds -> {
            List<World> changed = new ArrayList<>(n);
            List<Future<RowSet<Row>>> writes = new ArrayList<>(n);
            for (World w : worlds) {
                World c = new World(w.id(), randomId());
                changed.add(c);
                writes.add(conn.preparedQuery(UPDATE_WORLD).execute(Tuple.of(c.randomNumber(), c.id())));
            }
            return Future.all(writes).map(done -> changed);   // answered only once every row is written
        })).map(this::json);
    }

    /** GET /fortunes: the rows plus one added here, sorted by message, rendered by Mustache. */
    Future<byte[]> fortunes() {
        return pool.preparedQuery(SELECT_FORTUNES).execute().map(rows -> {
            List<Fortune> fortunes = new ArrayList<>(rows.size() + 1);
            for (Row row : rows) fortunes.add(new Fortune(row.getInteger(0), row.getString(1)));
            fortunes.add(new Fortune(0, "Additional fortune added at request time."));
            fortunes.sort(Comparator.comparing(Fortune::message));
            StringWriter page = new StringWriter(2048);
            fortunesPage.execute(page, Map.of("fortunes", fortunes));
            return page.toString().getBytes(StandardCharsets.UTF_8);
        });
    }

    private Future<List<World>> selectWorlds(SqlConnection conn, int n) {
        List<Future<World>> reads = new ArrayList<>(n);
        for (int i = 0; i < n; i++) reads.add(selectWorld(conn));
        return Future.all(reads).map(all -> all.<World>list());
    }

    private static Future<World> selectWorld(io.vertx.sqlclient.SqlClient client) {
        return client.preparedQuery(SELECT_WORLD).execute(Tuple.of(randomId())).map(rows -> {
            Row row = rows.iterator().next();
            return new World(row.getInteger(0), row.getInteger(1));
        });
    }

    private static int randomId() {
        return ThreadLocalRandom.current().nextInt(1, 10_001);
    }

    private byte[] json(Object value) {
        try {
            return mapper.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
