// deno: Deno.serve — one JavaScript event loop; HTTP/1.1 parsing, keep-alive and
// chunked decoding are done by Deno's Rust HTTP stack underneath. The database paths are in db.ts.
import { dbRoutes } from "./db.ts";

const MAX_BODY = 1 << 20;
const MAX_DELAY_MS = 60000;
const helloFile = Deno.env.get("HELLO_FILE") || "../../assets/hello.html";
const xs = new Uint8Array(MAX_BODY).fill(0x78); // /delay bodies are views of this ("x")
let counter = 0; // single-threaded: increments never interleave
let compressDoc: Uint8Array<ArrayBuffer> | null = null; // $COMPRESS_FILE, read once at the first /compress

// String and Uint8Array bodies get a Content-Length from Deno (not chunked framing).
// No "connection: close" on refusals: Deno.serve would send the header but not act on
// it; it drains an unread request body itself, so the next request is never misread.
function send(status: number, type: string, body: BodyInit, headers: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { "content-type": type, ...headers } });
}

const dbRoute = dbRoutes(send);

const badRequest = () => send(400, "text/plain", "Bad Request");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Optional decimal parameter within [0, hi]; null when malformed or out of range.
function intParam(params: URLSearchParams, key: string, hi: number, def: number): number | null {
  const s = params.get(key);
  if (s === null) return def;
  if (!/^[0-9]{1,9}$/.test(s)) return null;
  const n = Number(s);
  return n <= hi ? n : null;
}

async function echo(req: Request): Promise<Response> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > MAX_BODY) {
    return send(413, "text/plain", "Content Too Large");
  }
  const chunks: Uint8Array[] = [];
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
  const body = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    body.set(c, off);
    off += c.length;
  }
  return send(200, "application/octet-stream", body);
}

async function handle(req: Request): Promise<Response> {
  const url = new URL(req.url);
  const get = req.method === "GET" || req.method === "HEAD";
  const db = dbRoute(url.pathname);
  if (db) return get ? await db(url.searchParams) : send(405, "text/plain", "Method Not Allowed");
  switch (url.pathname) {
    case "/":
    case "/json":
    case "/file":
    case "/delay":
    case "/tenth":
    case "/compress":
      if (!get) return send(405, "text/plain", "Method Not Allowed");
      break;
    case "/echo":
      if (req.method !== "POST") return send(405, "text/plain", "Method Not Allowed");
      return await echo(req);
    default:
      return send(404, "text/plain", "Not Found");
  }

  switch (url.pathname) {
    case "/":
      return send(200, "text/plain", "Hello, World!");
    case "/json":
      return send(200, "application/json", JSON.stringify({ message: "Hello, World!" }));
    case "/file":
      return send(200, "text/html", await Deno.readFile(helloFile));
    case "/delay": {
      const ms = intParam(url.searchParams, "ms", MAX_DELAY_MS, 0);
      const bytes = intParam(url.searchParams, "bytes", MAX_BODY, 0);
      if (ms === null || bytes === null) return badRequest();
      if (ms > 0) await sleep(ms);
      return send(200, "text/plain", xs.subarray(0, bytes));
    }
    case "/compress": {
      const kb = intParam(url.searchParams, "kb", 4096, 0);
      if (!kb) return badRequest(); // missing, malformed, 0 or above 4096
      compressDoc ??= await Deno.readFile(Deno.env.get("COMPRESS_FILE")!);
      // The web-standard CompressionStream, as Deno's docs show it ("Compress and decompress data",
      // docs.deno.com/examples/compress_decompress/): gzip at flate2's default level (6, not settable),
      // compressed on every request, on the JavaScript thread (Deno's op is synchronous).
      const gzip = new Blob([compressDoc.subarray(0, kb * 1024)]).stream().pipeThrough(new CompressionStream("gzip"));
      // A Content-Encoding of its own also keeps Deno.serve's automatic compression off this response.
      return send(200, "application/json", await new Response(gzip).bytes(), { "content-encoding": "gzip" });
    }
    default: { // "/tenth"
      const ms = intParam(url.searchParams, "ms", MAX_DELAY_MS, 2000);
      if (ms === null) return badRequest();
      const value = ++counter;
      if (value % 10 === 0 && ms > 0) await sleep(ms);
      return send(200, "text/plain", String(value));
    }
  }
}

// SPEC.md's TLS switch: with $TLS_CERT and $TLS_KEY (PEM files), Deno.serve's cert/key options
// (Deno's TLS: rustls with its defaults); neither set: plaintext. One of them alone exits.
function tlsOptions(): { cert: string; key: string } | Record<string, never> {
  const certFile = Deno.env.get("TLS_CERT");
  const keyFile = Deno.env.get("TLS_KEY");
  if (!certFile && !keyFile) return {};
  if (!certFile || !keyFile) {
    const [given, missing] = certFile ? ["TLS_CERT", "TLS_KEY"] : ["TLS_KEY", "TLS_CERT"];
    console.error(`deno: ${given} is set but ${missing} is not: set both (PEM certificate, PEM PKCS#8 key) or neither`);
    Deno.exit(2);
  }
  const read = (name: string, file: string): string => {
    try {
      return Deno.readTextFileSync(file);
    } catch (err) {
      console.error(`deno: ${name} ${file}: ${err}: point it at a readable PEM file`);
      Deno.exit(2);
    }
  };
  return { cert: read("TLS_CERT", certFile), key: read("TLS_KEY", keyFile) };
}

// SPEC.md's HTTP/2 switch, served by Deno.serve as it is, with nothing to turn on: over TLS it always offers
// ALPN h2 and http/1.1, and on plaintext it serves a connection that opens with the HTTP/2 preface as h2c
// (prior knowledge) beside HTTP/1.1. $HTTP2 is only checked: h2c without the TLS variables, h2 with them,
// or unset; anything else exits, since serving another protocol would quietly measure the wrong thing.
function checkHttp2(tls: boolean) {
  const mode = Deno.env.get("HTTP2") ?? "";
  if (mode === "" || (mode === "h2c" && !tls) || (mode === "h2" && tls)) return;
  console.error("deno: " + (mode === "h2c"
    ? "HTTP2=h2c is HTTP/2 over cleartext TCP: unset TLS_CERT/TLS_KEY, or use HTTP2=h2"
    : mode === "h2"
    ? "HTTP2=h2 is HTTP/2 over TLS: set TLS_CERT and TLS_KEY (PEM certificate, PEM PKCS#8 key), or use HTTP2=h2c"
    : `HTTP2=${JSON.stringify(mode)}: want h2c, h2 or unset`));
  Deno.exit(2);
}

const hostname = Deno.env.get("HOST") || "127.0.0.1";
const port = Number(Deno.env.get("PORT") || 8080);
const tls = tlsOptions();
checkHttp2("cert" in tls);
try {
  Deno.serve({
    hostname,
    port,
    ...tls,
    onListen: (addr) => console.log(`deno listening on ${addr.hostname}:${addr.port}`),
    onError: (err) => {
      console.error("deno: handler error:", err);
      return send(500, "text/plain", "Internal Server Error");
    },
  }, handle);
} catch (err) {
  console.error(`deno: cannot listen on ${hostname}:${port}: ${err}`);
  Deno.exit(1);
}
