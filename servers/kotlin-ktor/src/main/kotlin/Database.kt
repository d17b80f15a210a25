import com.zaxxer.hikari.HikariConfig
import com.zaxxer.hikari.HikariDataSource
import io.ktor.http.HttpStatusCode
import io.ktor.server.application.ApplicationCall
import io.ktor.server.html.respondHtml
import io.ktor.server.response.respond
import io.ktor.server.response.respondText
import io.ktor.server.routing.Route
import io.ktor.server.routing.get
import java.sql.Connection
import java.sql.PreparedStatement
import java.sql.SQLException
import java.util.concurrent.ThreadLocalRandom
import kotlin.system.exitProcess
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import kotlinx.html.body
import kotlinx.html.head
import kotlinx.html.table
import kotlinx.html.td
import kotlinx.html.th
import kotlinx.html.title
import kotlinx.html.tr
import kotlinx.serialization.Serializable

// The database paths of SPEC.md on plain JDBC (pgjdbc) behind a HikariCP pool of $DB_POOL connections,
// each call's queries in withContext(Dispatchers.IO) as Ktor's database guide does: the blocking JDBC
// calls take a thread of the IO dispatcher while the call's coroutine is suspended, so neither the
// Netty event loops nor the call group wait for PostgreSQL.

@Serializable
data class World(val id: Int, val randomNumber: Int)

data class Fortune(val id: Int, val message: String)

private const val SELECT_WORLD = "SELECT id, randomNumber FROM World WHERE id = ?"
private const val UPDATE_WORLD = "UPDATE World SET randomNumber = ? WHERE id = ?"
private const val SELECT_FORTUNES = "SELECT id, message FROM Fortune"

/**
 * A request borrows one connection for all its queries; each query is a PreparedStatement executed on
 * its own in auto-commit: its own transaction and one round trip (no pipelining). pgjdbc keeps the
 * statements per connection and, from their fifth execution there (prepareThreshold), runs them as
 * named server-side prepared statements.
 */
class Database(private val pool: HikariDataSource) {
    private suspend fun <T> query(block: (Connection) -> T): T =
        withContext(Dispatchers.IO) { pool.connection.use(block) }

    suspend fun world(): World = query { c -> c.prepareStatement(SELECT_WORLD).use { read(it, randomId()) } }

    /** n rows, each read with its own SELECT. */
    suspend fun worlds(n: Int): List<World> =
        query { c -> c.prepareStatement(SELECT_WORLD).use { select -> List(n) { read(select, randomId()) } } }

    /** n rows, each read with its own SELECT, given a new randomNumber and written back with its own UPDATE. */
    suspend fun updates(n: Int): List<World> = query { c ->
        c.prepareStatement(SELECT_WORLD).use { select ->
            c.prepareStatement(UPDATE_WORLD).use { update ->
                List(n) {
                    val w = World(read(select, randomId()).id, randomId())
                    update.setInt(1, w.randomNumber)
                    update.setInt(2, w.id)
                    update.executeUpdate()   // auto-commit: written before the response goes out
                    w
                }
            }
        }
    }

    /** Every Fortune row plus the one added at request time, sorted by message. */
    suspend fun fortunes(): List<Fortune> {
        val fortunes = query { c ->
            c.prepareStatement(SELECT_FORTUNES).use { select ->
                select.executeQuery().use { rows ->
                    buildList { while (rows.next()) add(Fortune(rows.getInt(1), rows.getString(2))) }
                }
            }
        }
        return (fortunes + Fortune(0, "Additional fortune added at request time.")).sortedBy { it.message }
    }

    private fun read(select: PreparedStatement, id: Int): World {
        select.setInt(1, id)
        return select.executeQuery().use { rows ->
            if (!rows.next()) throw SQLException("no World row with id $id")
            World(rows.getInt(1), rows.getInt(2))
        }
    }

    private fun randomId() = ThreadLocalRandom.current().nextInt(1, 10_001)
}

/**
 * The database $DATABASE_URL names, null without one (the paths answer 503). JDBC takes its parts
 * ($DB_HOST, $DB_PORT, $DB_NAME, $DB_USER, $DB_PASSWORD); HikariCP opens $DB_POOL connections, all
 * before the row listens. A missing setting or a refused first connection: one line, exit status 1.
 */
fun databaseFromEnv(): Database? {
    if (env("DATABASE_URL", "").isEmpty()) return null
    fun required(name: String) = env(name, "").ifEmpty {
        fail("DATABASE_URL is set but $name is not; set every part of it: DB_HOST, DB_PORT, DB_NAME, DB_USER, DB_PASSWORD")
    }
    val size = env("DB_POOL", "").trim().toIntOrNull()?.takeIf { it >= 1 }
        ?: fail("DB_POOL is '${env("DB_POOL", "")}'; set it to the most database connections this process may open (an integer >= 1)")
    val host = required("DB_HOST").let { if (it.contains(':')) "[$it]" else it }   // IPv6, bracketed as in a URL
    val config = HikariConfig().apply {
        poolName = "kotlin-ktor"
        jdbcUrl = "jdbc:postgresql://$host:${required("DB_PORT")}/${required("DB_NAME")}"
        username = required("DB_USER")
        password = required("DB_PASSWORD")
        maximumPoolSize = size   // minimumIdle left unset: HikariCP keeps this many open, a fixed pool
    }
    val pool = try {
        HikariDataSource(config)
    } catch (e: RuntimeException) {   // HikariCP's PoolInitializationException: no first connection
        fail("cannot open the database pool at ${config.jdbcUrl} (${(e.cause ?: e).message}); start PostgreSQL there " +
            "or fix DATABASE_URL and DB_HOST/DB_PORT/DB_NAME/DB_USER/DB_PASSWORD")
    }
    awaitFull(pool, size)
    return Database(pool)
}

/**
 * Waits until HikariCP has opened every connection (it opens the rest on a background thread): each
 * costs a SCRAM-SHA-256 login on cold code, which would otherwise run after the row says it is
 * listening, into its first checks. After 30 s the row serves with what it has.
 */
private fun awaitFull(pool: HikariDataSource, size: Int) {
    val deadline = System.nanoTime() + 30_000_000_000L
    while (pool.hikariPoolMXBean.totalConnections < size) {
        if (System.nanoTime() > deadline) {
            System.err.println("kotlin-ktor: the database pool has ${pool.hikariPoolMXBean.totalConnections} of " +
                "DB_POOL=$size connections after 30 s; serving with those (see PostgreSQL's max_connections)")
            return
        }
        Thread.sleep(10)
    }
}

private fun fail(message: String): Nothing {
    System.err.println("kotlin-ktor: $message")
    exitProcess(1)
}

/** ?queries=N clamped to 1..500; missing, empty, 0, negative or not a number -> 1. */
fun ApplicationCall.queries(): Int {
    val v = request.queryParameters["queries"] ?: return 1
    if (v.isEmpty() || !v.all { it in '0'..'9' }) return 1
    val digits = v.trimStart('0')
    return if (digits.length > 9) 500 else (digits.toIntOrNull() ?: 0).coerceIn(1, 500)
}

/** GET /db, /queries, /fortunes, /updates; 503 on every one of them without a database. */
fun Route.databaseRoutes(db: Database?) {
    suspend fun ApplicationCall.withDb(block: suspend (Database) -> Unit) =
        if (db == null) respondText("Service Unavailable", status = HttpStatusCode.ServiceUnavailable) else block(db)

    get("/db") { call.withDb { call.respond(it.world()) } }
    get("/queries") { call.withDb { call.respond(it.worlds(call.queries())) } }
    get("/updates") { call.withDb { call.respond(it.updates(call.queries())) } }
    get("/fortunes") {
        call.withDb { db ->
            val fortunes = db.fortunes()
            // Ktor's HTML DSL: kotlinx.html escapes the text it is given
            call.respondHtml {
                head { title { +"Fortunes" } }
                body {
                    table {
                        tr { th { +"id" }; th { +"message" } }
                        for (f in fortunes) tr { td { +f.id.toString() }; td { +f.message } }
                    }
                }
            }
        }
    }
}
