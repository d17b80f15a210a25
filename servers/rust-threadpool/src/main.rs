//! serverbench contestant: a fixed pool of worker threads doing blocking I/O,
//! in the style of the Rust book's final chapter. Each job is one whole
//! connection, so at most $WORKERS connections are served at once; the rest
//! wait in the channel until a worker is free. std only, no crates.

use std::env;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const MAX_HEAD: u64 = 16 * 1024; // SPEC requires 8 KiB; allow some slack
const MAX_BODY: u64 = 1024 * 1024;
const MAX_MS: u64 = 60_000;

static TENTH_COUNTER: AtomicU64 = AtomicU64::new(0);

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

struct Response {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    allow: Option<&'static str>,
}

impl Response {
    fn new(status: u16, content_type: &'static str, body: Vec<u8>) -> Response {
        Response { status, content_type, body, allow: None }
    }

    fn text(status: u16, body: &str) -> Response {
        Response::new(status, "text/plain", body.as_bytes().to_vec())
    }

    fn error(status: u16) -> Response {
        Response::text(status, reason(status))
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

fn write_response(out: &mut Vec<u8>, resp: &Response, keep_alive: bool, http10: bool) {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
        resp.status,
        reason(resp.status),
        resp.content_type,
        resp.body.len()
    );
    if let Some(allow) = resp.allow {
        head.push_str(&format!("Allow: {allow}\r\n"));
    }
    if !keep_alive {
        head.push_str("Connection: close\r\n");
    } else if http10 {
        head.push_str("Connection: keep-alive\r\n");
    }
    head.push_str("\r\n");
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(&resp.body);
}

// ---------------------------------------------------------------- parsing

/// Reads one line (up to `limit` bytes including the newline) without the line ending.
/// Ok(None) = EOF before any byte.
fn read_line(reader: &mut BufReader<TcpStream>, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
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
/// it is flushed before an interim 100 Continue so the order stays right.
fn read_request(
    reader: &mut BufReader<TcpStream>,
    stream: &mut TcpStream,
    out: &mut Vec<u8>,
) -> Result<Request, ReadError> {
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
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut has_te = false;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    let mut expect_continue = false;
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
        let value = value.trim_matches(|c| c == ' ' || c == '\t');
        if name.eq_ignore_ascii_case("content-length") {
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ReadError::Status(400));
            }
            let n: u64 = value.parse().map_err(|_| ReadError::Status(400))?;
            if content_length.is_some_and(|old| old != n) {
                return Err(ReadError::Status(400));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            has_te = true;
            // Only "chunked" alone is supported; anything else is refused.
            chunked = value.eq_ignore_ascii_case("chunked");
            if !chunked {
                return Err(ReadError::Status(400));
            }
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    conn_close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    conn_keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case("expect") {
            if !value.eq_ignore_ascii_case("100-continue") {
                return Err(ReadError::Status(400));
            }
            expect_continue = true;
        }
    }
    // Both framings at once is a smuggling vector; HTTP/1.0 has no chunked.
    if has_te && (content_length.is_some() || http10) {
        return Err(ReadError::Status(400));
    }
    if content_length.is_some_and(|n| n > MAX_BODY) {
        return Err(ReadError::Status(413));
    }
    let keep_alive = if http10 { conn_keep_alive && !conn_close } else { !conn_close };

    // Tell a waiting client to go on sending the body (curl does this above 1 KiB).
    if expect_continue && !http10 && (chunked || content_length.unwrap_or(0) > 0) {
        out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        stream.write_all(out)?;
        out.clear();
    }
    let body = if chunked {
        read_chunked(reader)?
    } else {
        let mut body = vec![0; content_length.unwrap_or(0) as usize];
        reader.read_exact(&mut body)?;
        body
    };
    Ok(Request { method: method.to_string(), target: target.to_string(), http10, keep_alive, body })
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> Result<Vec<u8>, ReadError> {
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
        if body.len() as u64 + size > MAX_BODY {
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
}

/// Returns the value of `name` parsed as an integer in 0..=max (default 0 when
/// absent); Err for a non-integer or out-of-range value.
fn int_param(query: &str, name: &str, max: u64, default: u64) -> Result<u64, ()> {
    let raw = query
        .split('&')
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then_some(v)
        })
        .last();
    match raw {
        None => Ok(default),
        Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
            v.parse::<u64>().ok().filter(|n| *n <= max).ok_or(())
        }
        Some(_) => Err(()),
    }
}

/// Serializes {"message": msg}. Rust's std has no JSON library, so this is a
/// minimal serializer with correct string escaping, run on every request.
fn json_message(msg: &str) -> Vec<u8> {
    let mut s = String::with_capacity(msg.len() + 16);
    s.push_str("{\"message\":\"");
    for c in msg.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => s.push_str(&format!("\\u{:04x}", c as u32)),
            c => s.push(c),
        }
    }
    s.push_str("\"}");
    s.into_bytes()
}

fn route(req: Request, ctx: &Ctx) -> Response {
    let (path, query) = {
        // Accept absolute-form targets too (RFC 9112 §3.2.2).
        let t = req.target.as_str();
        let t = match t.strip_prefix("http://") {
            Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
            None => t,
        };
        t.split_once('?').unwrap_or((t, ""))
    };
    let allowed = match path {
        "/" | "/json" | "/file" | "/delay" | "/tenth" => "GET",
        "/echo" => "POST",
        _ => return Response::error(404),
    };
    if req.method != allowed {
        let mut resp = Response::error(405);
        resp.allow = Some(allowed);
        return resp;
    }
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
            let (Ok(ms), Ok(bytes)) =
                (int_param(query, "ms", MAX_MS, 0), int_param(query, "bytes", MAX_BODY, 0))
            else {
                return Response::error(400);
            };
            if ms > 0 {
                thread::sleep(Duration::from_millis(ms)); // blocks this pool thread
            }
            Response::new(200, "text/plain", vec![b'x'; bytes as usize])
        }
        "/tenth" => {
            let Ok(ms) = int_param(query, "ms", MAX_MS, 2000) else {
                return Response::error(400);
            };
            let n = TENTH_COUNTER.fetch_add(1, Ordering::SeqCst) + 1;
            if n % 10 == 0 && ms > 0 {
                thread::sleep(Duration::from_millis(ms));
            }
            Response::text(200, &n.to_string())
        }
        "/echo" => Response::new(200, "application/octet-stream", req.body),
        _ => unreachable!(),
    }
}

// ---------------------------------------------------------------- connection

fn handle_connection(mut stream: TcpStream, ctx: &Ctx) {
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::with_capacity(16 * 1024, read_half);
    let mut out = Vec::with_capacity(4096);
    loop {
        let (keep_alive, resp, http10) = match read_request(&mut reader, &mut stream, &mut out) {
            Ok(req) => {
                let (keep_alive, http10) = (req.keep_alive, req.http10);
                (keep_alive, route(req, ctx), http10)
            }
            Err(ReadError::Closed) => break,
            Err(ReadError::Status(status)) => (false, Response::error(status), false),
        };
        write_response(&mut out, &resp, keep_alive, http10);
        // Pipelined requests already buffered are answered in one write.
        if !keep_alive || reader.buffer().is_empty() || out.len() > 64 * 1024 {
            if stream.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
        if !keep_alive {
            linger_close(&mut stream, &mut reader);
            return;
        }
    }
    let _ = stream.write_all(&out);
}

/// Closing with unread input makes the kernel send RST, which can destroy the
/// response we just wrote; so half-close and drain briefly before closing.
fn linger_close(stream: &mut TcpStream, reader: &mut BufReader<TcpStream>) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
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
    let host = env::var("HOST").unwrap_or_else(|_| "127.0.0.1".to_string());
    let port: u16 = match env::var("PORT").map(|p| p.parse()) {
        Err(_) => 8080,
        Ok(Ok(p)) => p,
        Ok(Err(_)) => {
            eprintln!("invalid PORT");
            process::exit(2);
        }
    };
    let workers = env::var("WORKERS")
        .ok()
        .and_then(|w| w.parse::<usize>().ok())
        .filter(|&w| w > 0)
        .unwrap_or_else(|| thread::available_parallelism().map_or(1, |n| n.get()));
    let hello_file =
        PathBuf::from(env::var("HELLO_FILE").unwrap_or_else(|_| "../../assets/hello.html".to_string()));

    let listener = match TcpListener::bind((host.as_str(), port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rust-threadpool: cannot bind {host}:{port}: {e}");
            process::exit(1);
        }
    };
    println!("rust-threadpool listening on {host}:{port} with {workers} worker threads");

    // SIGTERM keeps its default disposition (terminate), which no blocked
    // worker can delay, so no signal handling is needed.
    let ctx = Arc::new(Ctx { hello_file });
    let pool = ThreadPool::new(workers);
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                let ctx = Arc::clone(&ctx);
                pool.execute(move || handle_connection(stream, &ctx));
            }
            Err(e) => {
                // e.g. EMFILE: back off instead of spinning.
                eprintln!("accept: {e}");
                thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
