'use strict';
// The serverbench request handler on Node's http module, shared by node-http and
// node-cluster (their server.toml `shares`); the database paths are in db.js.
const http = require('node:http');
const http2 = require('node:http2');
const https = require('node:https');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { dbRoutes } = require('./db.js');

const MAX_BODY = 1 << 20;
const MAX_DELAY_MS = 60000;
const helloFile = process.env.HELLO_FILE || path.resolve('../../assets/hello.html');
const xs = Buffer.alloc(MAX_BODY, 'x'); // /delay bodies are slices of this
let counter = 0; // one event loop per process: increments never interleave
let compressDoc = null; // $COMPRESS_FILE, read once at the first /compress

function send(res, status, type, body, close = false) {
  const headers = { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) };
  // Node closes the socket after this response. HTTP/1.x only: HTTP/2 has no Connection header
  // (RFC 9113 §8.2.2; node:http2's compatibility API throws ERR_HTTP2_INVALID_CONNECTION_HEADERS),
  // and its response ends only its own stream.
  if (close && res.req.httpVersionMajor === 1) headers.Connection = 'close';
  res.writeHead(status, headers);
  res.end(body);
}

const badRequest = (res) => send(res, 400, 'text/plain', 'Bad Request');

// Optional decimal parameter within [0, hi]; null when malformed or out of range.
function intParam(params, key, hi, def) {
  if (!params.has(key)) return def;
  const s = params.get(key);
  if (!/^[0-9]{1,9}$/.test(s)) return null;
  const n = Number(s);
  return n <= hi ? n : null;
}

function echo(req, res) {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > MAX_BODY) {
    send(res, 413, 'text/plain', 'Content Too Large', true);
    req.resume(); // discard what arrives until the socket closes
    return;
  }
  // Chunked bodies arrive already decoded by Node's parser; count them as they come.
  const chunks = [];
  let size = 0;
  let refused = false;
  req.on('data', (chunk) => {
    if (refused) return;
    size += chunk.length;
    if (size > MAX_BODY) {
      refused = true;
      send(res, 413, 'text/plain', 'Content Too Large', true);
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (!refused) send(res, 200, 'application/octet-stream', Buffer.concat(chunks, size));
  });
}

function handle(req, res, dbRoute) {
  // A malformed body makes Node's parser fail: its clientError handling answers 400
  // and destroys the socket; the request stream then errors, which we ignore here.
  req.on('error', () => {});
  // llhttp takes a request line without a version ("GET /") as HTTP/0.9 and would
  // answer it; SPEC.md calls that malformed. (HTTP/2 streams, from node:http2's
  // compatibility API, say 2.)
  if (req.httpVersionMajor === 0) return send(res, 400, 'text/plain', 'Bad Request', true);
  let target = req.url;
  if (target[0] !== '/') { // absolute-form (RFC 9112 §3.2.2): keep path and query
    try {
      const u = new URL(target);
      target = u.pathname + u.search;
    } catch {
      return badRequest(res);
    }
  }
  const q = target.indexOf('?');
  const pathname = q < 0 ? target : target.slice(0, q);
  const get = req.method === 'GET' || req.method === 'HEAD';
  const db = dbRoute(pathname);

  if (db && !get) {
    res.setHeader('Allow', 'GET, HEAD');
    return send(res, 405, 'text/plain', 'Method Not Allowed');
  }
  if (db) {
    req.resume(); // a GET may carry a body; drain it so the next request on the connection parses
    return db(res, new URLSearchParams(q < 0 ? '' : target.slice(q + 1)));
  }
  switch (pathname) {
    case '/':
    case '/json':
    case '/file':
    case '/delay':
    case '/tenth':
    case '/compress':
      if (!get) {
        res.setHeader('Allow', 'GET, HEAD');
        return send(res, 405, 'text/plain', 'Method Not Allowed');
      }
      break;
    case '/echo':
      if (req.method !== 'POST') {
        res.setHeader('Allow', 'POST');
        return send(res, 405, 'text/plain', 'Method Not Allowed');
      }
      return echo(req, res);
    default:
      return send(res, 404, 'text/plain', 'Not Found');
  }
  // A GET may carry a body; drain it so the next request on the connection parses.
  req.resume();
  const params = new URLSearchParams(q < 0 ? '' : target.slice(q + 1));

  switch (pathname) {
    case '/':
      return send(res, 200, 'text/plain', 'Hello, World!');
    case '/json':
      return send(res, 200, 'application/json', JSON.stringify({ message: 'Hello, World!' }));
    case '/file':
      return fs.readFile(helloFile, (err, data) => {
        if (err) send(res, 500, 'text/plain', 'Internal Server Error');
        else send(res, 200, 'text/html', data);
      });
    case '/delay': {
      const ms = intParam(params, 'ms', MAX_DELAY_MS, 0);
      const bytes = intParam(params, 'bytes', MAX_BODY, 0);
      if (ms === null || bytes === null) return badRequest(res);
      return setTimeout(() => send(res, 200, 'text/plain', xs.subarray(0, bytes)), ms);
    }
    case '/tenth': {
      const ms = intParam(params, 'ms', MAX_DELAY_MS, 2000);
      if (ms === null) return badRequest(res);
      const value = ++counter;
      const reply = () => send(res, 200, 'text/plain', String(value));
      return value % 10 === 0 ? setTimeout(reply, ms) : reply();
    }
    case '/compress': {
      const kb = intParam(params, 'kb', 4096, null);
      if (!kb) return badRequest(res); // missing, malformed, 0 or above 4096
      compressDoc ??= fs.readFileSync(process.env.COMPRESS_FILE);
      // The asynchronous zlib.gzip, as Node's docs recommend (zlib: "Threadpool usage and performance
      // considerations"; the "Don't block the event loop" guide): deflate runs on libuv's thread pool,
      // the event loop goes on serving. Compressed on every request, level 6 (zlib's default).
      return zlib.gzip(compressDoc.subarray(0, kb * 1024), { level: 6 }, (err, gz) => {
        if (err) return send(res, 500, 'text/plain', 'Internal Server Error');
        res.setHeader('Content-Encoding', 'gzip');
        send(res, 200, 'application/json', gz);
      });
    }
  }
}

// SPEC.md's TLS switch: with $TLS_CERT and $TLS_KEY (PEM files) set, the options for
// https.createServer; without either, null (plaintext). One of them alone exits.
function tlsOptions(label) {
  const certFile = process.env.TLS_CERT;
  const keyFile = process.env.TLS_KEY;
  if (!certFile && !keyFile) return null;
  if (!certFile || !keyFile) {
    console.error(`${label}: ${certFile ? 'TLS_CERT' : 'TLS_KEY'} is set but ` +
      `${certFile ? 'TLS_KEY' : 'TLS_CERT'} is not: set both (PEM certificate, PEM PKCS#8 key) or neither`);
    process.exit(2);
  }
  // Node's TLS defaults (OpenSSL underneath): minimum TLS 1.2, TLS 1.3 offered, its own cipher list.
  const read = (name, file) => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      console.error(`${label}: ${name} ${file}: ${err.message}: point it at a readable PEM file`);
      process.exit(2);
    }
  };
  return { cert: read('TLS_CERT', certFile), key: read('TLS_KEY', keyFile) };
}

// SPEC.md's HTTP/2 switch: $HTTP2=h2c (cleartext, prior knowledge) or h2 (over TLS, ALPN h2,
// with $TLS_CERT/$TLS_KEY); unset: HTTP/1.1 as before. Anything else, or a mode without its
// transport, exits: serving another protocol would quietly measure the wrong thing.
function http2Mode(label, tls) {
  const mode = process.env.HTTP2 || '';
  if (mode === '' || (mode === 'h2c' && !tls) || (mode === 'h2' && tls)) return mode;
  console.error(`${label}: ` + (mode === 'h2c'
    ? 'HTTP2=h2c is HTTP/2 over cleartext TCP: unset TLS_CERT/TLS_KEY, or use HTTP2=h2'
    : mode === 'h2'
      ? 'HTTP2=h2 is HTTP/2 over TLS: set TLS_CERT and TLS_KEY (PEM certificate, PEM PKCS#8 key), or use HTTP2=h2c'
      : `HTTP2=${JSON.stringify(mode)}: want h2c, h2 or unset`));
  process.exit(2);
}

// Creates the server and listens on $HOST:$PORT (over TLS when tlsOptions says so, HTTP/2 when
// $HTTP2 says so); a bind failure exits non-zero.
// `deps` ({ pg, escapeHtml }, from the row's node_modules) serves the database paths.
function start(label, deps) {
  const host = process.env.HOST || '127.0.0.1';
  const port = Number(process.env.PORT || 8080);
  const dbRoute = dbRoutes(label, deps, send);
  const tls = tlsOptions(label);
  const h2 = http2Mode(label, tls);
  const handler = (req, res) => handle(req, res, dbRoute);
  // HTTP/2 through node:http2's compatibility API (its req/res serve the same handler), nghttp2
  // underneath, Node's default settings. h2c: http2.createServer, which speaks HTTP/2 only (prior
  // knowledge). h2: http2.createSecureServer, ALPN h2 and, with allowHTTP1 as Node's docs show it,
  // http/1.1 to clients that do not offer h2.
  let server;
  if (h2 === 'h2c') server = http2.createServer(handler);
  else if (h2 === 'h2') server = http2.createSecureServer({ ...tls, allowHTTP1: true }, handler);
  else server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  // Keep idle keep-alive connections for 2 min (Node's default is 5 s); headers must
  // arrive within 60 s of a request starting, a whole request within 5 min.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 60_000;
  server.requestTimeout = 300_000;
  // Node's default reply to an unparsable request has no Content-Length; send our own.
  // Only when no response is pending on the socket, so nothing can interleave with it.
  server.on('clientError', (err, socket) => {
    if (socket.writable && !socket._httpMessage && err.code !== 'ECONNRESET') {
      const [status, text] = err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
      socket.write(`HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\n` +
        `Content-Length: ${text.length}\r\nConnection: close\r\n\r\n${text}`);
    }
    socket.destroy();
  });
  server.on('error', (err) => {
    console.error(`${label}: ${err.message}`);
    process.exit(1);
  });
  server.listen(port, host, () => console.log(`${label} listening on ${host}:${port}${h2 ? ` (${h2})` : ''}`));
  return server;
}

module.exports = { start };
