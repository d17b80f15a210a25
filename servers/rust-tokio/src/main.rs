//! serverbench contestant: tokio's multi-threaded work-stealing runtime, one
//! task per connection, HTTP/1.1 handled by hand over tokio::net::TcpStream
//! with request heads parsed by `httparse`.

use std::env;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const MAX_HEAD: usize = 16 * 1024; // SPEC requires 8 KiB; allow some slack
const MAX_HEADERS: usize = MAX_HEAD / 4; // the shortest field line is 4 bytes
const MAX_BODY: usize = 1024 * 1024;
const MAX_MS: u64 = 60_000;

static TENTH_COUNTER: AtomicU64 = AtomicU64::new(0);

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

/// Why no request came out of the connection. `Status` is answered, then the connection closes.
enum Fail {
    Closed,
    Status(u16),
}

impl From<io::Error> for Fail {
    fn from(_: io::Error) -> Self {
        Fail::Closed
    }
}

/// The parts of a request head we keep once httparse's borrowed view is gone.
struct Head {
    method: String,
    target: String,
    http10: bool,
    keep_alive: bool,
    content_length: usize,
    chunked: bool,
    expect_continue: bool,
}

struct Response {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    allow: Option<&'static str>,
}

impl Response {
    fn new(status: u16, content_type: &'static str, body: Vec<u8>) -> Self {
        Response { status, content_type, body, allow: None }
    }
    fn error(status: u16) -> Self {
        Response::new(status, "text/plain", reason(status).as_bytes().to_vec())
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        _ => "Unknown",
    }
}

/// One client connection: the socket, bytes read but not yet consumed
/// (`inbuf[pos..]`), and responses not yet written (`out`).
struct Conn {
    stream: TcpStream,
    inbuf: Vec<u8>,
    pos: usize,
    out: Vec<u8>,
}

impl Conn {
    fn pending(&self) -> &[u8] {
        &self.inbuf[self.pos..]
    }

    /// Reads more bytes from the socket; Err(Closed) on EOF.
    async fn fill(&mut self) -> Result<(), Fail> {
        if self.pos == self.inbuf.len() {
            self.inbuf.clear();
            self.pos = 0;
        } else if self.pos > 64 * 1024 {
            self.inbuf.drain(..self.pos);
            self.pos = 0;
        }
        self.inbuf.reserve(16 * 1024);
        match self.stream.read_buf(&mut self.inbuf).await? {
            0 => Err(Fail::Closed),
            _ => Ok(()),
        }
    }

    async fn read_head(&mut self) -> Result<Head, Fail> {
        loop {
            if let Some((len, head)) = parse_head(self.pending())? {
                self.pos += len;
                return Ok(head);
            }
            if self.pending().len() > MAX_HEAD {
                return Err(Fail::Status(431));
            }
            self.fill().await?;
        }
    }

    async fn read_body(&mut self, head: &Head) -> Result<Vec<u8>, Fail> {
        if head.chunked {
            return self.read_chunked().await;
        }
        while self.pending().len() < head.content_length {
            self.fill().await?;
        }
        let body = self.pending()[..head.content_length].to_vec();
        self.pos += head.content_length;
        Ok(body)
    }

    async fn read_chunked(&mut self) -> Result<Vec<u8>, Fail> {
        let mut body = Vec::new();
        loop {
            let (skip, size) = loop {
                match httparse::parse_chunk_size(self.pending()) {
                    Ok(httparse::Status::Complete(found)) => break found,
                    Ok(httparse::Status::Partial) if self.pending().len() > 1024 => {
                        return Err(Fail::Status(400))
                    }
                    Ok(httparse::Status::Partial) => self.fill().await?,
                    Err(_) => return Err(Fail::Status(400)),
                }
            };
            self.pos += skip;
            if size == 0 {
                break;
            }
            if body.len() as u64 + size > MAX_BODY as u64 {
                return Err(Fail::Status(413));
            }
            // Chunk data, then exactly CRLF.
            let need = size as usize + 2;
            while self.pending().len() < need {
                self.fill().await?;
            }
            let data = &self.pending()[..need];
            if &data[size as usize..] != b"\r\n" {
                return Err(Fail::Status(400));
            }
            body.extend_from_slice(&data[..size as usize]);
            self.pos += need;
        }
        // Trailer fields are skipped, up to the empty line.
        let mut trailer_bytes = 0;
        loop {
            let Some(nl) = self.pending().iter().position(|&b| b == b'\n') else {
                if self.pending().len() > MAX_HEAD {
                    return Err(Fail::Status(400));
                }
                self.fill().await?;
                continue;
            };
            let empty = nl == 0 || (nl == 1 && self.pending()[0] == b'\r');
            self.pos += nl + 1;
            trailer_bytes += nl + 1;
            if empty {
                return Ok(body);
            }
            if trailer_bytes > MAX_HEAD {
                return Err(Fail::Status(400));
            }
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.stream.write_all(&self.out).await?;
        self.out.clear();
        Ok(())
    }

    /// Closing with unread input makes the kernel send RST, which can destroy
    /// the response just written; so half-close and drain briefly first.
    async fn linger_close(mut self) {
        let _ = self.stream.shutdown().await;
        let mut sink = [0u8; 16 * 1024];
        let drain = async {
            let mut total = 0;
            while total < 4 * 1024 * 1024 {
                match self.stream.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => total += n,
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_millis(500), drain).await;
    }
}

/// Parses a complete head from `buf`, or Ok(None) when more bytes are needed.
/// Kept synchronous so httparse's header array never lives in a task's state.
fn parse_head(buf: &[u8]) -> Result<Option<(usize, Head)>, Fail> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => Ok(Some((len, interpret(&req)?))),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            // Rare: many small fields. Retry with room for any head within MAX_HEAD.
            let mut headers = vec![httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(buf) {
                Ok(httparse::Status::Complete(len)) => Ok(Some((len, interpret(&req)?))),
                Ok(httparse::Status::Partial) => Ok(None),
                Err(httparse::Error::TooManyHeaders) => Err(Fail::Status(431)),
                Err(_) => Err(Fail::Status(400)),
            }
        }
        Err(_) => Err(Fail::Status(400)),
    }
}

/// Extracts what matters from a parsed head and rejects ambiguous framing.
fn interpret(req: &httparse::Request) -> Result<Head, Fail> {
    let http10 = req.version == Some(0);
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    let (mut conn_close, mut conn_keep_alive, mut expect_continue) = (false, false, false);
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value).map_err(|_| Fail::Status(400))?.trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Fail::Status(400));
            }
            // Anything above the limit is answered 413 without reading it.
            let n = value.parse::<usize>().unwrap_or(usize::MAX).min(MAX_BODY + 1);
            if content_length.is_some_and(|old| old != n) {
                return Err(Fail::Status(400));
            }
            content_length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // Only a lone "chunked" coding is supported.
            if !value.eq_ignore_ascii_case("chunked") || chunked {
                return Err(Fail::Status(400));
            }
            chunked = true;
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                conn_close |= token.eq_ignore_ascii_case("close");
                conn_keep_alive |= token.eq_ignore_ascii_case("keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("expect") {
            if !value.eq_ignore_ascii_case("100-continue") {
                return Err(Fail::Status(400));
            }
            expect_continue = true;
        }
    }
    // Both framings at once is a smuggling vector; HTTP/1.0 has no chunked.
    if chunked && (content_length.is_some() || http10) {
        return Err(Fail::Status(400));
    }
    let content_length = content_length.unwrap_or(0);
    if content_length > MAX_BODY {
        return Err(Fail::Status(413));
    }
    Ok(Head {
        method: req.method.unwrap_or("").to_string(),
        target: req.path.unwrap_or("").to_string(),
        http10,
        keep_alive: if http10 { conn_keep_alive && !conn_close } else { !conn_close },
        content_length,
        chunked,
        expect_continue: expect_continue && !http10,
    })
}

fn write_response(out: &mut Vec<u8>, resp: &Response, keep_alive: bool, http10: bool) {
    use std::io::Write;
    let _ = write!(
        out,
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
        resp.status,
        reason(resp.status),
        resp.content_type,
        resp.body.len()
    );
    if let Some(allow) = resp.allow {
        let _ = write!(out, "Allow: {allow}\r\n");
    }
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&resp.body);
}

// ---------------------------------------------------------------- handlers

/// The integer value of query parameter `name` in 0..=max (`default` when
/// absent); Err for a non-integer or out-of-range value.
fn int_param(query: &str, name: &str, max: u64, default: u64) -> Result<u64, ()> {
    let mut value = None;
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == name {
            value = Some(v);
        }
    }
    match value {
        None => Ok(default),
        Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
            v.parse::<u64>().ok().filter(|&n| n <= max).ok_or(())
        }
        Some(_) => Err(()),
    }
}

async fn route(head: &Head, body: Vec<u8>, hello_file: &PathBuf) -> Response {
    // Accept absolute-form targets too (RFC 9112 §3.2.2).
    let target = match head.target.strip_prefix("http://") {
        Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => head.target.as_str(),
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let allowed = match path {
        "/" | "/json" | "/file" | "/delay" | "/tenth" => "GET",
        "/echo" => "POST",
        _ => return Response::error(404),
    };
    if head.method != allowed {
        let mut resp = Response::error(405);
        resp.allow = Some(allowed);
        return resp;
    }
    match path {
        "/" => Response::new(200, "text/plain", b"Hello, World!".to_vec()),
        "/json" => {
            let json = serde_json::to_vec(&Message { message: "Hello, World!" }).expect("serialize");
            Response::new(200, "application/json", json)
        }
        "/file" => match tokio::fs::read(hello_file).await {
            Ok(bytes) => Response::new(200, "text/html", bytes),
            Err(e) => {
                eprintln!("reading {}: {e}", hello_file.display());
                Response::error(500)
            }
        },
        "/delay" => {
            let (Ok(ms), Ok(bytes)) =
                (int_param(query, "ms", MAX_MS, 0), int_param(query, "bytes", MAX_BODY as u64, 0))
            else {
                return Response::error(400);
            };
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await; // a timer, no thread held
            }
            Response::new(200, "text/plain", vec![b'x'; bytes as usize])
        }
        "/tenth" => {
            let Ok(ms) = int_param(query, "ms", MAX_MS, 2000) else {
                return Response::error(400);
            };
            let n = TENTH_COUNTER.fetch_add(1, Ordering::SeqCst) + 1;
            if n % 10 == 0 && ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            Response::new(200, "text/plain", n.to_string().into_bytes())
        }
        "/echo" => Response::new(200, "application/octet-stream", body),
        _ => unreachable!(),
    }
}

// ---------------------------------------------------------------- connection

async fn serve(stream: TcpStream, hello_file: Arc<PathBuf>) {
    let _ = stream.set_nodelay(true);
    let mut conn = Conn { stream, inbuf: Vec::with_capacity(16 * 1024), pos: 0, out: Vec::new() };
    loop {
        let result = match conn.read_head().await {
            Ok(head) => {
                if head.expect_continue && (head.chunked || head.content_length > 0) {
                    // Earlier pipelined responses go first.
                    conn.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                    if conn.flush().await.is_err() {
                        return;
                    }
                }
                conn.read_body(&head).await.map(|body| (head, body))
            }
            Err(e) => Err(e),
        };
        let (keep_alive, http10, resp) = match result {
            Ok((head, body)) => (head.keep_alive, head.http10, route(&head, body, &hello_file).await),
            Err(Fail::Closed) => break,
            Err(Fail::Status(status)) => (false, false, Response::error(status)),
        };
        write_response(&mut conn.out, &resp, keep_alive, http10);
        // Pipelined requests already buffered are answered in one write.
        if !keep_alive || conn.pending().is_empty() || conn.out.len() > 64 * 1024 {
            if conn.flush().await.is_err() {
                return;
            }
        }
        if !keep_alive {
            conn.linger_close().await;
            return;
        }
    }
    let _ = conn.flush().await;
}

// ---------------------------------------------------------------- main

fn main() {
    let host = env::var("HOST").unwrap_or_else(|_| "127.0.0.1".to_string());
    let port: u16 = match env::var("PORT").map(|p| p.parse()) {
        Err(_) => 8080,
        Ok(Ok(p)) => p,
        Ok(Err(_)) => {
            eprintln!("rust-tokio: invalid PORT");
            process::exit(2);
        }
    };
    let workers = env::var("WORKERS")
        .ok()
        .and_then(|w| w.parse::<usize>().ok())
        .filter(|&w| w > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let hello_file = Arc::new(PathBuf::from(
        env::var("HELLO_FILE").unwrap_or_else(|_| "../../assets/hello.html".to_string()),
    ));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("build tokio runtime");

    // SIGTERM keeps its default disposition (terminate the process at once);
    // tokio only installs a handler when tokio::signal is used.
    runtime.block_on(async move {
        let addr = match (host.as_str(), port).to_socket_addrs().map(|mut a| a.next()) {
            Ok(Some(addr)) => addr,
            _ => {
                eprintln!("rust-tokio: cannot resolve {host}:{port}");
                process::exit(1);
            }
        };
        let listener = match listen(addr) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("rust-tokio: cannot bind {addr}: {e}");
                process::exit(1);
            }
        };
        println!("rust-tokio listening on {addr} with {workers} worker threads");
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    tokio::spawn(serve(stream, Arc::clone(&hello_file)));
                }
                Err(e) => {
                    // e.g. EMFILE: back off instead of spinning.
                    eprintln!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });
}

/// A listener with a deep accept backlog, so bursts of thousands of connects queue up.
fn listen(addr: SocketAddr) -> io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}
