import io.ktor.http.ContentType
import io.ktor.http.HttpHeaders
import io.ktor.http.HttpStatusCode
import io.ktor.serialization.kotlinx.json.json
import io.ktor.server.application.Application
import io.ktor.server.application.ApplicationCall
import io.ktor.server.application.ServerReady
import io.ktor.server.application.install
import io.ktor.server.engine.applicationEnvironment
import io.ktor.server.engine.connector
import io.ktor.server.engine.embeddedServer
import io.ktor.server.engine.sslConnector
import io.ktor.server.netty.Netty
import io.ktor.server.plugins.contentnegotiation.ContentNegotiation
import io.ktor.server.plugins.defaultheaders.DefaultHeaders
import io.ktor.server.request.contentLength
import io.ktor.server.request.receiveChannel
import io.ktor.server.response.header
import io.ktor.server.response.respond
import io.ktor.server.response.respondBytes
import io.ktor.server.response.respondBytesWriter
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.post
import io.ktor.server.routing.routing
import io.ktor.utils.io.readRemaining
import io.ktor.utils.io.writeFully
import java.io.ByteArrayOutputStream
import java.io.File
import java.security.KeyStore
import java.util.concurrent.atomic.AtomicLong
import java.util.zip.GZIPOutputStream
import kotlin.system.exitProcess
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.delay
import kotlinx.coroutines.withContext
import kotlinx.io.readByteArray
import kotlinx.serialization.Serializable

// kotlin-ktor: Ktor on its Netty engine (the engine Ktor's project generator picks). Netty event
// loops accept and parse; calls run as coroutines on Ktor's call group. Group sizes follow Ktor's
// own defaults with $WORKERS in place of the CPU count; /delay and /tenth suspend with delay();
// the database paths (Database.kt) run their JDBC calls in withContext(Dispatchers.IO); /compress
// gzips in withContext(Dispatchers.Default).

@Serializable
data class Message(val message: String)

const val MAX_BODY = 1 shl 20        // POST /echo limit, and the most /delay?bytes= asks for
const val MAX_MS = 60_000L           // /delay and /tenth wait at most this long
val XS = ByteArray(MAX_BODY) { 'x'.code.toByte() }
val tenth = AtomicLong()             // the /tenth counter, shared by the whole process

fun env(name: String, default: String): String = System.getenv(name)?.takeIf { it.isNotEmpty() } ?: default

fun main() {
    val host = env("HOST", "127.0.0.1")
    val port = env("PORT", "8080").toInt()
    val helloFile = File(env("HELLO_FILE", "../../assets/hello.html"))
    val workers = env("WORKERS", Runtime.getRuntime().availableProcessors().toString()).toInt()
    val tls = tlsKeyStore()   // null: plaintext
    val http2 = http2Mode(tls != null)   // false: HTTP/1.1 only
    val database = databaseFromEnv()   // null without $DATABASE_URL; the pool is open before listening
    val compressDoc = compressDocFromEnv()   // null without $COMPRESS_FILE (/compress then answers 503)
    val server = embeddedServer(Netty, applicationEnvironment(), configure = {
        if (tls == null) {
            connector { this.host = host; this.port = port }
        } else {
            // Ktor's HTTPS connector; its Netty engine serves it with an SslHandler on the JDK's TLS
            sslConnector(tls, tls.aliases().toList().first { tls.isKeyEntry(it) },
                { tlsPassword().toCharArray() }, { tlsPassword().toCharArray() }) { this.host = host; this.port = port }
            // Without $HTTP2, HTTP/1.1 only (SPEC.md): with HTTP/2 on (Ktor's default) the engine offers h2 by ALPN.
            // With $HTTP2=h2, Ktor's default: ALPN offers h2 and http/1.1, and an h2 connection is served by the
            // engine's own HTTP/2 (Netty's Http2MultiplexCodec with Netty's default SETTINGS).
            enableHttp2 = http2
        }
        // Ktor's defaults for N CPUs (NettyApplicationEngine.Configuration), N = $WORKERS
        connectionGroupSize = workers / 2 + 1
        workerGroupSize = workers / 2 + 1
        callGroupSize = workers
    }) { module(helloFile, database, compressDoc) }
    server.monitor.subscribe(ServerReady) {
        println("kotlin-ktor listening on ${if (tls == null) "http" else "https"}://$host:$port (Netty engine, $workers workers${if (http2) ", HTTP/2 (h2)" else ""})")
    }
    try {
        server.start(wait = true)
    } catch (e: Exception) {
        System.err.println("kotlin-ktor: cannot listen on $host:$port: ${e.message}")
        exitProcess(1)
    }
}

/**
 * $HTTP2 (SPEC.md, HTTP/2): true for "h2" with the $TLS_* variables, false when unset. "h2c" exits with one line:
 * Ktor 3.1.3's Netty engine serves HTTP/2 only on an sslConnector, negotiated by ALPN; its plaintext connectors
 * are HTTP/1.1 only (Ktor's HTTP/2 guide: "An SSL certificate" is a key requirement). h2c (enableH2c) came with
 * Ktor 3.3.0 (KTOR-8862).
 */
fun http2Mode(tls: Boolean): Boolean {
    val mode = env("HTTP2", "")
    if (mode.isEmpty()) return false
    if (mode == "h2" && tls) return true
    System.err.println(
        if (mode == "h2c") "kotlin-ktor: \$HTTP2=h2c is not served: Ktor 3.1.3's Netty engine serves HTTP/2 only over TLS (ALPN); set \$HTTP2=h2 with \$TLS_*"
        else "kotlin-ktor: \$HTTP2=$mode is not served: h2 (with \$TLS_CERT, \$TLS_KEY and \$TLS_PKCS12) only"
    )
    exitProcess(1)
}

/** $COMPRESS_FILE, read once at start; null without it; an unreadable file exits with one line. */
fun compressDocFromEnv(): ByteArray? {
    val file = env("COMPRESS_FILE", "").ifEmpty { return null }
    return try {
        File(file).readBytes()
    } catch (e: Exception) {
        System.err.println("kotlin-ktor: cannot read \$COMPRESS_FILE $file ($e)")
        exitProcess(1)
    }
}

/** The JDK's GZIPOutputStream: a gzip header and trailer around Deflater.DEFAULT_COMPRESSION, zlib's level 6. */
fun gzip(data: ByteArray, length: Int): ByteArray {
    val out = ByteArrayOutputStream()
    GZIPOutputStream(out).use { it.write(data, 0, length) }
    return out.toByteArray()
}

fun tlsPassword(): String = System.getenv("TLS_PKCS12_PASSWORD") ?: ""

/**
 * With $TLS_CERT and $TLS_KEY set the row serves TLS instead of plaintext (SPEC.md). Ktor's
 * sslConnector takes a KeyStore, so the same key and certificate are read from $TLS_PKCS12
 * (password $TLS_PKCS12_PASSWORD); null without TLS; a bad key store exits with one line.
 */
fun tlsKeyStore(): KeyStore? {
    if (env("TLS_CERT", "").isEmpty() || env("TLS_KEY", "").isEmpty()) return null
    val file = env("TLS_PKCS12", "")
    if (file.isEmpty()) {
        System.err.println("kotlin-ktor: \$TLS_CERT and \$TLS_KEY are set but \$TLS_PKCS12 is not; set \$TLS_PKCS12 (the same key and certificate as PKCS#12) and \$TLS_PKCS12_PASSWORD")
        exitProcess(1)
    }
    return try {
        KeyStore.getInstance("PKCS12").apply { File(file).inputStream().use { load(it, tlsPassword().toCharArray()) } }
    } catch (e: Exception) {
        System.err.println("kotlin-ktor: cannot load \$TLS_PKCS12 $file ($e); check the file and \$TLS_PKCS12_PASSWORD")
        exitProcess(1)
    }
}

/** ?name=N: digits only, 0..max; the default when absent; null when invalid (answer 400). */
fun ApplicationCall.intParam(name: String, default: Long, max: Long): Long? {
    val v = request.queryParameters[name] ?: return default
    if (v.isEmpty() || v.length > 9 || !v.all { it in '0'..'9' }) return null
    return v.toLong().takeIf { it <= max }
}

suspend fun ApplicationCall.badRequest() = respondText("Bad Request", status = HttpStatusCode.BadRequest)

suspend fun ApplicationCall.tooLarge() {
    response.header(HttpHeaders.Connection, "close")   // the rest of the body is not read
    respondText("Payload Too Large", status = HttpStatusCode.PayloadTooLarge)
}

fun Application.module(helloFile: File, database: Database?, compressDoc: ByteArray?) {
    install(DefaultHeaders)                 // Date (formatted once a second) and Server
    install(ContentNegotiation) { json() }  // kotlinx.serialization
    routing {
        get("/") {
            call.respondText("Hello, World!", ContentType.Text.Plain)
        }
        get("/json") {
            call.respond(Message("Hello, World!"))
        }
        get("/file") {
            // from disk on every request, a blocking read on the call group's thread
            call.respondBytes(helloFile.readBytes(), ContentType.Text.Html)
        }
        get("/delay") {
            val ms = call.intParam("ms", 0, MAX_MS)
            val n = call.intParam("bytes", 0, MAX_BODY.toLong())?.toInt()
            if (ms == null || n == null) return@get call.badRequest()
            delay(ms)
            call.respondBytesWriter(ContentType.Text.Plain, contentLength = n.toLong()) { writeFully(XS, 0, n) }
        }
        get("/tenth") {
            val ms = call.intParam("ms", 2000, MAX_MS) ?: return@get call.badRequest()
            val count = tenth.incrementAndGet()
            if (count % 10 == 0L) delay(ms)
            call.respondText(count.toString(), ContentType.Text.Plain)
        }
        get("/compress") {
            val kb = call.intParam("kb", 0, 4096)?.takeIf { it >= 1 } ?: return@get call.badRequest()
            if (compressDoc == null) {
                return@get call.respondText("Service Unavailable", status = HttpStatusCode.ServiceUnavailable)
            }
            // CPU-bound work: the coroutines guide's Dispatchers.Default (Dispatchers.IO is for blocking I/O); the
            // call's coroutine suspends meanwhile, the call group goes on with other calls
            val body = withContext(Dispatchers.Default) { gzip(compressDoc, kb.toInt() * 1024) }
            call.response.header(HttpHeaders.ContentEncoding, "gzip")   // always gzip: Accept-Encoding is not consulted
            call.respondBytes(body, ContentType.Application.Json)
        }
        post("/echo") {
            if ((call.request.contentLength() ?: 0) > MAX_BODY) return@post call.tooLarge()
            // Content-Length or chunked (decoded by Netty's HttpServerCodec): read at most one byte past the limit
            val body = call.receiveChannel().readRemaining(MAX_BODY + 1L).readByteArray()
            if (body.size > MAX_BODY) return@post call.tooLarge()
            call.respondBytes(body, ContentType.Application.OctetStream)
        }
        databaseRoutes(database)
    }
}
