"""python-stdlib: http.server.ThreadingHTTPServer, a thread per connection.

BaseHTTPRequestHandler with protocol_version "HTTP/1.1" keeps connections alive; it
parses request lines and headers and writes the status line, Date and Server headers.
It does not decode chunked request bodies, so /echo does that itself below.
There is no worker knob: every connection gets its own (daemon) thread, $WORKERS is unused.
The database endpoints (db.py) use psycopg 3, the row's one third-party package.
"""
import gzip
import json
import os
import re
import ssl
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import psycopg

import db

MAX_BODY = 1 << 20
MAX_DELAY_MS = 60000
HELLO_FILE = os.environ.get("HELLO_FILE") or os.path.join(os.path.dirname(__file__), "../../assets/hello.html")
COMPRESS_FILE = os.environ.get("COMPRESS_FILE") or os.path.join(os.path.dirname(__file__), "../../assets/compress.json")
XS = b"x" * MAX_BODY  # /delay bodies are slices of this
DIGITS = re.compile(r"[0-9]{1,9}")
COMPRESS_KB_MAX = 4096
compress_doc = None  # $COMPRESS_FILE's bytes, read once in main()

counter = 0
counter_lock = threading.Lock()
pool = None  # psycopg_pool.ConnectionPool, opened in main() when $DATABASE_URL is set


class BadBody(Exception):
    """A request body that cannot be read as declared."""


def int_param(params, key, hi, default):
    """Optional decimal parameter within [0, hi]; None when malformed or out of range."""
    values = params.get(key)
    if values is None:
        return default
    s = values[-1]
    if not DIGITS.fullmatch(s):
        return None
    n = int(s)
    return n if n <= hi else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive: one thread serves the connection's requests in turn
    disable_nagle_algorithm = True  # headers and body are two writes; don't let Nagle hold the second

    # http.server answers a request line without a version ("GET /") as HTTP/0.9: a bare
    # body, and its 400 for a garbled line bare too. SPEC.md calls both malformed: treat
    # versionless lines as HTTP/1.0 for the status line, and refuse them with 400.
    default_request_version = "HTTP/1.0"

    def parse_request(self):
        if not super().parse_request():
            return False
        if len(self.requestline.split()) != 3:
            self.send_error(HTTPStatus.BAD_REQUEST, "HTTP/0.9 is not supported")
            return False
        return True

    def log_message(self, format, *args):
        pass  # no per-request logging

    def send(self, status, content_type, body, close=False, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        elif self.request_version == "HTTP/1.0" and not self.close_connection:
            # http.server keeps an HTTP/1.0 connection open when the client asks for keep-alive, but
            # does not say so; an HTTP/1.0 client then waits for a close that never comes (ab -k)
            self.send_header("Connection", "keep-alive")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        """The request body (Content-Length or chunked), or BadBody / a 413 marker."""
        te = self.headers.get("Transfer-Encoding")
        cl = self.headers.get("Content-Length")
        if te is not None:
            if cl is not None or te.strip().lower() != "chunked":
                raise BadBody(400)
            return self.read_chunked()
        if cl is None:
            return b""
        if not cl.isascii() or not cl.strip().isdigit():
            raise BadBody(400)
        n = int(cl)
        if n > MAX_BODY:
            raise BadBody(413)
        body = self.rfile.read(n)
        if len(body) != n:
            raise BadBody(400)  # the client went away mid-body
        return body

    def read_chunked(self):
        parts = []
        size = 0
        while True:
            line = self.rfile.readline(1024)
            if not line.endswith(b"\r\n"):
                raise BadBody(400)
            hex_size = line[:-2].split(b";", 1)[0].strip()
            if not hex_size or not all(c in b"0123456789abcdefABCDEF" for c in hex_size) or len(hex_size) > 8:
                raise BadBody(400)
            n = int(hex_size, 16)
            if n == 0:
                break
            size += n
            if size > MAX_BODY:
                raise BadBody(413)
            data = self.rfile.read(n + 2)
            if len(data) != n + 2 or not data.endswith(b"\r\n"):
                raise BadBody(400)
            parts.append(data[:-2])
        while True:  # trailer fields, up to the empty line
            line = self.rfile.readline(8192)
            if line == b"\r\n":
                return b"".join(parts)
            if not line.endswith(b"\r\n"):
                raise BadBody(400)

    def route(self):
        path, _, query = self.path.partition("?")
        get = self.command in ("GET", "HEAD")
        try:
            body = self.read_body()
        except BadBody as e:
            status = e.args[0]
            text = b"Content Too Large" if status == 413 else b"Bad Request"
            self.send(status, "text/plain", text, close=True)  # the rest of the stream is unreadable
            return

        if path == "/echo":
            if self.command != "POST":
                self.send(405, "text/plain", b"Method Not Allowed")
            else:
                self.send(200, "application/octet-stream", body)
            return
        if path not in ("/", "/json", "/file", "/delay", "/tenth", "/compress") + db.PATHS:
            self.send(404, "text/plain", b"Not Found")
            return
        if not get:
            self.send(405, "text/plain", b"Method Not Allowed")
            return

        if path in db.PATHS:
            self.serve_db(path, query)
        elif path == "/":
            self.send(200, "text/plain", b"Hello, World!")
        elif path == "/json":
            self.send(200, "application/json", json.dumps({"message": "Hello, World!"}).encode())
        elif path == "/file":
            with open(HELLO_FILE, "rb") as f:
                data = f.read()
            self.send(200, "text/html", data)
        elif path == "/compress":
            self.serve_compress(query)
        elif path == "/delay":
            params = parse_qs(query, keep_blank_values=True)
            ms = int_param(params, "ms", MAX_DELAY_MS, 0)
            nbytes = int_param(params, "bytes", MAX_BODY, 0)
            if ms is None or nbytes is None:
                self.send(400, "text/plain", b"Bad Request")
                return
            if ms:
                time.sleep(ms / 1000)  # this connection's thread blocks; the others go on
            self.send(200, "text/plain", XS[:nbytes])
        else:  # /tenth
            global counter
            ms = int_param(parse_qs(query, keep_blank_values=True), "ms", MAX_DELAY_MS, 2000)
            if ms is None:
                self.send(400, "text/plain", b"Bad Request")
                return
            with counter_lock:
                counter += 1
                value = counter
            if value % 10 == 0 and ms:
                time.sleep(ms / 1000)
            self.send(200, "text/plain", str(value).encode())

    def serve_compress(self, query):
        kb = int_param(parse_qs(query, keep_blank_values=True), "kb", COMPRESS_KB_MAX, None)
        if not kb:  # missing, malformed, 0 or above 4096
            self.send(400, "text/plain", b"Bad Request")
            return
        # Compressed on this request, inline on the connection's own thread (its model: a thread per
        # connection). gzip.compress → zlib.compress, whose deflate() runs with the GIL released
        # (CPython's Modules/zlibmodule.c, Py_BEGIN_ALLOW_THREADS around deflate()).
        body = gzip.compress(compress_doc[:kb * 1024], compresslevel=6)
        self.send(200, "application/json", body, headers=(("Content-Encoding", "gzip"),))

    def serve_db(self, path, query):
        if pool is None:
            self.send(503, "text/plain", b"Service Unavailable: no DATABASE_URL")
            return
        try:
            content_type, body = db.respond(pool, path, parse_qs(query))
        except psycopg.Error as e:  # the database is down, or no connection came within the pool's timeout
            print(f"python-stdlib: {path}: {e}", file=sys.stderr)
            self.send(503, "text/plain", b"Service Unavailable")
            return
        self.send(200, content_type, body)

    # Every method goes through route(), so known paths answer 405 rather than 501.
    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = route


class Server(ThreadingHTTPServer):
    daemon_threads = True      # connection threads don't keep the process alive at exit
    request_queue_size = 1024  # listen backlog (socketserver's default is 5)

    def shutdown_request(self, request):
        # SSLSocket.shutdown() drops the TLS layer without a close_notify; unwrap() sends one.
        # Non-blocking, so it does not go on to wait for the client's close_notify (a client
        # reading to EOF would wait for our TCP close): close_notify, then the close, as nginx does.
        if isinstance(request, ssl.SSLSocket):
            request.setblocking(False)
            try:
                request.unwrap()
            except (ssl.SSLError, OSError):
                pass  # the client's close_notify has not come (SSLWantReadError), or it is gone
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        # socketserver prints a traceback for every failed connection; a client that
        # resets or goes away, or fails the TLS handshake (TLS 1.1, an unknown CA), is
        # routine, not worth a log line.
        if not isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError)):
            super().handle_error(request, client_address)


def tls_context():
    """SPEC.md's TLS switch: an SSLContext from $TLS_CERT/$TLS_KEY, or None when neither is set."""
    cert, key = os.environ.get("TLS_CERT"), os.environ.get("TLS_KEY")
    if not cert and not key:
        return None
    if not cert or not key:
        given, missing = ("TLS_CERT", "TLS_KEY") if cert else ("TLS_KEY", "TLS_CERT")
        sys.exit(f"python-stdlib: {given} is set but {missing} is not: set both (PEM certificate, PEM PKCS#8 key) or neither")
    # The ssl module's server defaults (OpenSSL's): minimum TLS 1.2, TLS 1.3 offered, no ALPN.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        sys.exit(f"python-stdlib: TLS_CERT {cert} / TLS_KEY {key}: {e}: point them at a PEM certificate and its PEM key")
    return context


def main():
    host = os.environ.get("HOST") or "127.0.0.1"
    port = int(os.environ.get("PORT") or 8080)
    tls = tls_context()
    try:
        server = Server((host, port), Handler)
    except OSError as e:
        print(f"python-stdlib: cannot listen on {host}:{port}: {e}", file=sys.stderr)
        sys.exit(1)
    if tls is not None:
        # The ssl docs' way for http.server: wrap the listening socket, so accept() hands out
        # SSLSockets. Without the handshake on accept: it runs at the connection's first read,
        # on its own thread, rather than every handshake on the one accepting thread.
        server.socket = tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    global pool, compress_doc
    pool = db.open_pool()
    with open(COMPRESS_FILE, "rb") as f:  # /compress's document, read once
        compress_doc = f.read()
    scheme = "https" if tls else "http"
    print(f"python-stdlib listening on {host}:{port} ({scheme}, a thread per connection)", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
