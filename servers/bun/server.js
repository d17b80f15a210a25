// bun: Bun.serve — one JavaScript event loop; HTTP/1.1 parsing, keep-alive,
// chunked decoding and the Date header are done by Bun's native server (uWebSockets).
// The database paths are in db.js.
import { dbRoutes } from "./db.js";

const MAX_BODY = 1 << 20;
const MAX_DELAY_MS = 60000;
const helloFile = process.env.HELLO_FILE || "../../assets/hello.html";
const xs = new Uint8Array(MAX_BODY).fill(0x78); // /delay bodies are views of this ("x")
let counter = 0; // one thread: increments never interleave
let compressDoc = null; // $COMPRESS_FILE, read once at the first /compress

const PAGES = new Set(["/", "/json", "/file", "/delay", "/tenth", "/compress"]);

function send(status, type, body, headers = {}) {
  return new Response(body, { status, headers: { "content-type": type, ...headers } });
}

const dbRoute = dbRoutes(send);

const badRequest = () => send(400, "text/plain", "Bad Request");

// Optional decimal parameter within [0, hi]; null when malformed or out of range.
function intParam(params, key, hi, def) {
  const s = params.get(key);
  if (s === null) return def;
  if (!/^[0-9]{1,9}$/.test(s)) return null;
  const n = Number(s);
  return n <= hi ? n : null;
}

// Bun answers 413 itself past maxRequestBodySize (below) for a declared
// Content-Length; a chunked body is counted here as it arrives.
async function echo(req) {
  const chunks = [];
  let size = 0;
  try {
    for await (const chunk of req.body ?? []) {
      size += chunk.length;
      if (size > MAX_BODY) return send(413, "text/plain", "Content Too Large");
      chunks.push(chunk);
    }
  } catch {
    return badRequest(); // body framing broke mid-way
  }
  return send(200, "application/octet-stream", Buffer.concat(chunks, size));
}

async function handle(req, server) {
  // An HTTP/1.0 request without Host reaches the handler with a relative req.url ("/"), which
  // new URL() alone rejects; server.url supplies the server's authority (RFC 9112 §3.3) and is
  // ignored when req.url is absolute (upstream: oven-sh/bun pull request 33721, open).
  const url = new URL(req.url, server.url);
  const path = url.pathname;
  if (path === "/echo") {
    return req.method === "POST" ? echo(req) : send(405, "text/plain", "Method Not Allowed");
  }
  const db = dbRoute(path);
  if (!db && !PAGES.has(path)) return send(404, "text/plain", "Not Found");
  if (req.method !== "GET") return send(405, "text/plain", "Method Not Allowed");
  if (db) return db(url.searchParams);
  switch (path) {
    case "/":
      return send(200, "text/plain", "Hello, World!");
    case "/json":
      return send(200, "application/json", JSON.stringify({ message: "Hello, World!" }));
    case "/file": // Bun.file(...).bytes(): read off the JavaScript thread, awaited
      return send(200, "text/html", await Bun.file(helloFile).bytes());
    case "/delay": {
      const ms = intParam(url.searchParams, "ms", MAX_DELAY_MS, 0);
      const bytes = intParam(url.searchParams, "bytes", MAX_BODY, 0);
      if (ms === null || bytes === null) return badRequest();
      if (ms > 0) await Bun.sleep(ms);
      return send(200, "text/plain", xs.subarray(0, bytes));
    }
    case "/compress": {
      const kb = intParam(url.searchParams, "kb", 4096, 0);
      if (!kb) return badRequest(); // missing, malformed, 0 or above 4096
      compressDoc ??= await Bun.file(process.env.COMPRESS_FILE).bytes();
      // Bun.gzipSync, the way Bun's docs gzip ("Compress and decompress data with gzip", bun.sh/guides/util/gzip):
      // its default library, zlib (Bun's zlib-ng), at level 6, on every request, synchronously on the event loop.
      const gzip = Bun.gzipSync(compressDoc.subarray(0, kb * 1024), { level: 6 });
      return send(200, "application/json", gzip, { "content-encoding": "gzip" });
    }
    default: { // "/tenth"
      const ms = intParam(url.searchParams, "ms", MAX_DELAY_MS, 2000);
      if (ms === null) return badRequest();
      const value = ++counter;
      if (value % 10 === 0 && ms > 0) await Bun.sleep(ms);
      return send(200, "text/plain", String(value));
    }
  }
}

// SPEC.md's TLS switch: with $TLS_CERT and $TLS_KEY (PEM files), Bun.serve's tls option (Bun's
// BoringSSL with its defaults); neither set: plaintext. One of them alone exits.
function tlsOption() {
  const cert = process.env.TLS_CERT;
  const key = process.env.TLS_KEY;
  if (!cert && !key) return undefined;
  if (!cert || !key) {
    const [given, missing] = cert ? ["TLS_CERT", "TLS_KEY"] : ["TLS_KEY", "TLS_CERT"];
    console.error(`bun: ${given} is set but ${missing} is not: set both (PEM certificate, PEM PKCS#8 key) or neither`);
    process.exit(2);
  }
  return { cert: Bun.file(cert), key: Bun.file(key) };
}

// SPEC.md's HTTP/2 switch: Bun.serve's own HTTP/2 server, its documented `http2: true` option, with the same
// fetch handler: on plaintext (HTTP2=h2c) a connection that opens with the HTTP/2 preface is HTTP/2 (prior
// knowledge), anything else stays HTTP/1.1; with tls (HTTP2=h2) ALPN offers h2 and http/1.1. Unset: HTTP/1.1
// only, as before. Anything else, or a mode without its transport, exits: serving another protocol would
// quietly measure the wrong thing.
function http2Option(tls) {
  const mode = process.env.HTTP2 || "";
  if (mode === "") return undefined;
  if ((mode === "h2c" && !tls) || (mode === "h2" && tls)) return true;
  console.error("bun: " + (mode === "h2c"
    ? "HTTP2=h2c is HTTP/2 over cleartext TCP: unset TLS_CERT/TLS_KEY, or use HTTP2=h2"
    : mode === "h2"
    ? "HTTP2=h2 is HTTP/2 over TLS: set TLS_CERT and TLS_KEY (PEM certificate, PEM PKCS#8 key), or use HTTP2=h2c"
    : `HTTP2=${JSON.stringify(mode)}: want h2c, h2 or unset`));
  process.exit(2);
}

const hostname = process.env.HOST || "127.0.0.1";
const port = Number(process.env.PORT || 8080);
const tls = tlsOption();
const http2 = http2Option(tls);
try {
  const server = Bun.serve({
    hostname,
    port,
    tls,
    http2,
    maxRequestBodySize: MAX_BODY,
    fetch: handle,
    error(err) {
      console.error("bun: handler error:", err);
      return send(500, "text/plain", "Internal Server Error");
    },
  });
  const h2 = http2 ? `, ${process.env.HTTP2}` : "";
  console.log(`bun listening on ${server.hostname}:${server.port} (Bun ${Bun.version}, one event loop${h2})`);
} catch (err) {
  const files = tls ? ` (TLS_CERT ${process.env.TLS_CERT}, TLS_KEY ${process.env.TLS_KEY})` : "";
  console.error(`bun: cannot listen on ${hostname}:${port}${files}: ${err}`);
  process.exit(1);
}
