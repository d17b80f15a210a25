//! serverbench contestant: a fixed pool of worker threads doing blocking I/O,
//! in the style of the Rust book's final chapter. Each job is one whole
//! connection, so at most $WORKERS connections are served at once; the rest
//! wait in the channel until a worker is free. HTTP with std only (and the
//! std-only `rust-contract`, SPEC rules shared by the Rust rows); the
//! database paths, in `db`, use the blocking `postgres` driver through r2d2.
//! With `$TLS_CERT` and `$TLS_KEY` each connection is served over rustls'
//! blocking `StreamOwned` on its pool thread instead. `/compress` is gzipped
//! with flate2 inline, on the pool thread serving the connection.

mod db;

use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process;
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rust_contract::compress::{self, Compress};
use rust_contract::db::{Database, DbQuery};
use rust_contract::http::{self, HeadFields, Response};
use rust_contract::{Delay, Env, Tenth, MAX_BODY};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

const MAX_HEAD: u64 = http::MAX_HEAD as u64;

// ---------------------------------------------------------------- thread pool

type Job = Box<dyn FnOnce() + Send + 'static>;

struct ThreadPool {
    _workers: Vec<thread::JoinHandle<()>>,
    sender: mpsc::Sender<Job>,
}

impl ThreadPool {
    fn new(size: usize) -> ThreadPool {
        assert!(size > 0);
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let workers = (0..size)
            .map(|id| {
                let receiver = Arc::clone(&receiver);
                thread::Builder::new()
                    .name(format!("worker-{id}"))
                    .spawn(move || loop {
                        // The lock is released as soon as recv() returns, so
                        // other workers can pick up jobs while this one runs.
                        let job = receiver.lock().unwrap().recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => break, // sender dropped: pool shutting down
                        }
                    })
                    .expect("spawn worker thread")
            })
            .collect();
        ThreadPool { _workers: workers, sender }
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        self.sender.send(Box::new(f)).expect("pool receiver alive");
    }
}

// ---------------------------------------------------------------- HTTP types

struct Request {
    method: String,
    target: String,
    http10: bool,
    keep_alive: bool,
    body: Vec<u8>,
}

/// Why a request could not be read. `Status` is answered, then the connection closes.
enum ReadError {
    Closed,
    Status(u16),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Closed
    }
}

// ---------------------------------------------------------------- parsing

/// Reads one line (up to `limit` bytes including the newline) without the line ending.
/// Ok(None) = EOF before any byte.
fn read_line<S: Read>(reader: &mut BufReader<S>, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
    let mut line = Vec::new();
    let n = reader.by_ref().take(limit).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        // Either the limit was hit or the peer closed mid-line.
        return Err(if n as u64 >= limit { ReadError::Status(431) } else { ReadError::Closed });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(line))
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Reads one request, head and body. `out` holds responses not yet written;
/// it is flushed (through the reader's stream) before an interim 100 Continue
/// so the order stays right.
fn read_request<S: Read + Write>(reader: &mut BufReader<S>, out: &mut Vec<u8>) -> Result<Request, ReadError> {
    // Request line; a few empty lines before it are tolerated (RFC 9112 §2.2).
    let mut budget = MAX_HEAD;
    let request_line = loop {
        let line = match read_line(reader, budget)? {
            Some(line) => line,
            None => return Err(ReadError::Closed),
        };
        budget = budget.saturating_sub(line.len() as u64 + 2).max(1);
        if !line.is_empty() {
            break line;
        }
    };
    let request_line = String::from_utf8(request_line).map_err(|_| ReadError::Status(400))?;
    let mut parts = request_line.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) => (m, t, v),
        _ => return Err(ReadError::Status(400)),
    };
    if !is_token(method) || target.is_empty() {
        return Err(ReadError::Status(400));
    }
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        v if v.starts_with("HTTP/") => return Err(ReadError::Status(505)),
        _ => return Err(ReadError::Status(400)),
    };

    // Header fields: only the framing and connection ones matter to us.
    let mut fields = HeadFields::default();
    loop {
        let line = read_line(reader, budget)?.ok_or(ReadError::Closed)?;
        if line.is_empty() {
            break;
        }
        budget = budget.saturating_sub(line.len() as u64 + 2).max(1);
        let line = String::from_utf8(line).map_err(|_| ReadError::Status(400))?;
        let (name, value) = line.split_once(':').ok_or(ReadError::Status(400))?;
        // No whitespace before the colon, no obsolete line folding.
        if !is_token(name) {
            return Err(ReadError::Status(400));
        }
        fields.field(name, value).map_err(ReadError::Status)?;
    }
    let framing = fields.finish(http10).map_err(ReadError::Status)?;

    // Tell a waiting client to go on sending the body (curl does this above 1 KiB).
    if framing.send_continue {
        out.extend_from_slice(http::CONTINUE);
        reader.get_mut().write_all(out)?;
        out.clear();
    }
    let body = if framing.chunked {
        read_chunked(reader)?
    } else {
        let mut body = vec![0; framing.content_length];
        reader.read_exact(&mut body)?;
        body
    };
    let keep_alive = framing.keep_alive;
    Ok(Request { method: method.to_string(), target: target.to_string(), http10, keep_alive, body })
}

fn read_chunked<S: Read>(reader: &mut BufReader<S>) -> Result<Vec<u8>, ReadError> {
    // An over-long line inside the body is a framing error, not a header one.
    let bad_line = |e| match e {
        ReadError::Status(_) => ReadError::Status(400),
        e => e,
    };
    let mut body = Vec::new();
    loop {
        let line = read_line(reader, 1024).map_err(bad_line)?.ok_or(ReadError::Closed)?;
        let line = String::from_utf8(line).map_err(|_| ReadError::Status(400))?;
        // chunk-size [; extensions]
        let size_str = line.split(';').next().unwrap_or("").trim_end_matches([' ', '\t']);
        if size_str.is_empty() || size_str.len() > 16 || !size_str.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ReadError::Status(400));
        }
        let size = u64::from_str_radix(size_str, 16).map_err(|_| ReadError::Status(400))?;
        if size == 0 {
            break;
        }
        if body.len() as u64 + size > MAX_BODY as u64 {
            return Err(ReadError::Status(413));
        }
        let start = body.len();
        body.resize(start + size as usize, 0);
        reader.read_exact(&mut body[start..])?;
        // Each chunk's data is followed by exactly CRLF.
        if !read_line(reader, 2).map_err(bad_line)?.ok_or(ReadError::Closed)?.is_empty() {
            return Err(ReadError::Status(400));
        }
    }
    // Trailer fields are read and ignored, up to the empty line.
    let mut budget = MAX_HEAD;
    loop {
        let line = read_line(reader, budget)?.ok_or(ReadError::Closed)?;
        if line.is_empty() {
            return Ok(body);
        }
        budget = budget.saturating_sub(line.len() as u64 + 2).max(1);
    }
}

// ---------------------------------------------------------------- handlers

struct Ctx {
    hello_file: PathBuf,
    /// None without `$DATABASE_URL`.
    pool: Option<db::Pool>,
}

/// {"message": msg}, serialized per request with serde_json: the row depends on it for its
/// database paths, so /json uses it too (SPEC excuses a hand-written writer only in a std-only row).
#[derive(serde::Serialize)]
struct Message<'a> {
    message: &'a str,
}

fn json_message(msg: &str) -> Vec<u8> {
    serde_json::to_vec(&Message { message: msg }).expect("a struct of one string always serializes")
}

fn route(req: Request, ctx: &Ctx) -> Response {
    match DbQuery::route(&req.method, &req.target) {
        Some(Ok(query)) => return db::answer(query, ctx.pool.as_ref()).with_server("rust-threadpool"),
        Some(Err(wrong_method)) => return wrong_method.with_server("rust-threadpool"),
        None => {}
    }
    let (path, query) = match http::resolve(&req.method, &req.target) {
        Ok(found) => found,
        Err(not_found_or_405) => return not_found_or_405,
    };
    match path {
        "/" => Response::text(200, "Hello, World!"),
        "/json" => Response::new(200, "application/json", json_message("Hello, World!")),
        "/file" => match fs::read(&ctx.hello_file) {
            Ok(bytes) => Response::new(200, "text/html", bytes),
            Err(e) => {
                eprintln!("reading {}: {e}", ctx.hello_file.display());
                Response::error(500)
            }
        },
        "/delay" => {
            let Ok(delay) = Delay::parse(query) else {
                return Response::error(400);
            };
            if let Some(wait) = delay.wait {
                thread::sleep(wait); // blocks this pool thread
            }
            Response::new(200, "text/plain", delay.body())
        }
        "/tenth" => {
            let Ok(tenth) = Tenth::next(query) else {
                return Response::error(400);
            };
            if let Some(wait) = tenth.wait {
                thread::sleep(wait);
            }
            Response::text(200, &tenth.count.to_string())
        }
        "/echo" => Response::new(200, "application/octet-stream", req.body),
        // Compressed inline: this pool thread serves only this connection (the row's model), so
        // the CPU work holds no other connection, as /file's read and the database calls do not.
        "/compress" => match Compress::parse(query) {
            Ok(compress) => compress.response(),
            Err(_) => Response::error(400),
        },
        _ => unreachable!(),
    }
}

// ---------------------------------------------------------------- connection

/// A connection's byte stream: the TCP socket itself, or rustls over it.
trait Transport: Read + Write {
    fn tcp(&self) -> &TcpStream;

    /// Ends the sending side (the TCP half-close).
    fn close_write(&mut self) {
        let _ = self.tcp().shutdown(Shutdown::Write);
    }
}

impl Transport for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

/// rustls' blocking stream: the handshake runs on this pool thread at the first read.
impl Transport for StreamOwned<ServerConnection, TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    /// close_notify first (queued by rustls, written by the flush), then the TCP half-close.
    fn close_write(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush();
        let _ = self.sock.shutdown(Shutdown::Write);
    }
}

fn handle_connection(stream: TcpStream, ctx: &Ctx) {
    let _ = stream.set_nodelay(true);
    serve(stream, ctx);
}

/// The same connection over TLS (SPEC's TLS), with rustls' ServerConnection.
fn handle_tls_connection(stream: TcpStream, config: Arc<ServerConfig>, ctx: &Ctx) {
    let _ = stream.set_nodelay(true);
    if let Ok(conn) = ServerConnection::new(config) {
        serve(StreamOwned::new(conn, stream), ctx);
    }
}

/// HTTP/1.1 on one connection until it ends; reads go through the BufReader,
/// writes through the stream it owns.
fn serve<S: Transport>(stream: S, ctx: &Ctx) {
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    let mut out = Vec::with_capacity(4096);
    loop {
        let (keep_alive, resp, http10) = match read_request(&mut reader, &mut out) {
            Ok(req) => {
                let (keep_alive, http10) = (req.keep_alive, req.http10);
                (keep_alive, route(req, ctx), http10)
            }
            Err(ReadError::Closed) => break,
            Err(ReadError::Status(status)) => (false, Response::error(status), false),
        };
        resp.write_to(&mut out, keep_alive, http10);
        // Pipelined requests already buffered are answered in one write.
        if !keep_alive || reader.buffer().is_empty() || out.len() > 64 * 1024 {
            if reader.get_mut().write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
        if !keep_alive {
            linger_close(&mut reader);
            return;
        }
    }
    let _ = reader.get_mut().write_all(&out);
}

/// Closing with unread input makes the kernel send RST, which can destroy the
/// response we just wrote; so half-close and drain briefly before closing.
fn linger_close<S: Transport>(reader: &mut BufReader<S>) {
    reader.get_mut().close_write();
    let _ = reader.get_ref().tcp().set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 16 * 1024];
    let mut drained = 0usize;
    let deadline = Instant::now() + Duration::from_secs(1);
    while drained < 4 * 1024 * 1024 && Instant::now() < deadline {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

// ---------------------------------------------------------------- main

fn main() {
    let Env { host, port, workers, hello_file } = Env::from_env("rust-threadpool");
    compress::load("rust-threadpool"); // $COMPRESS_FILE, read once (/compress)
    // The pool opens its connections before the row listens.
    let db_pool = Database::from_env("rust-threadpool").as_ref().map(db::pool);

    let listener = match TcpListener::bind((host.as_str(), port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rust-threadpool: cannot bind {host}:{port}: {e}");
            process::exit(1);
        }
    };
    // SPEC's TLS: with $TLS_CERT/$TLS_KEY, every connection is served over rustls instead.
    let tls = rust_contract::tls::server_config("rust-threadpool").map(Arc::new);
    let scheme = if tls.is_some() { "TLS" } else { "plaintext" };
    println!("rust-threadpool listening on {host}:{port} ({scheme}) with {workers} worker threads");

    // SIGTERM keeps its default disposition (terminate), which no blocked
    // worker can delay, so no signal handling is needed.
    let ctx = Arc::new(Ctx { hello_file, pool: db_pool });
    let pool = ThreadPool::new(workers);
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                let ctx = Arc::clone(&ctx);
                match &tls {
                    None => pool.execute(move || handle_connection(stream, &ctx)),
                    Some(config) => {
                        let config = Arc::clone(config);
                        pool.execute(move || handle_tls_connection(stream, config, &ctx))
                    }
                }
            }
            Err(e) => {
                // e.g. EMFILE: back off instead of spinning.
                eprintln!("accept: {e}");
                thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
