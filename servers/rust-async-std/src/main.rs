//! serverbench contestant: async-std's global executor (work-stealing, one
//! thread per worker), one task per connection, HTTP/1.1 handled by hand over
//! async_std::net::TcpStream with request heads parsed by `httparse`.

use std::io;
use std::net::{Shutdown, ToSocketAddrs};
use std::path::PathBuf;
use std::process;
use std::sync::Arc;
use std::time::Duration;

use async_std::net::{TcpListener, TcpStream};
use async_std::prelude::*;
use async_std::task;
use rust_contract::http::{self, Framing, HeadFields, Response, MAX_HEAD};
use rust_contract::{Delay, Env, Tenth, MAX_BODY};
use serde::Serialize;

const MAX_HEADERS: usize = MAX_HEAD / 4; // the shortest field line is 4 bytes
const READ_CHUNK: usize = 16 * 1024;

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

// ---------------------------------------------------------------- writing responses

/// Response serialization, in a module of its own so std's `io::Write` (for
/// `write!` into a Vec) does not clash with async-std's `WriteExt`.
mod wire {
    use std::cell::RefCell;
    use std::io::Write;
    use std::time::{SystemTime, UNIX_EPOCH};

    use rust_contract::http::{self, Response};

    thread_local! {
        /// This thread's `Date` value and the second it was formatted for:
        /// formatted at most once a second per executor thread, reused in between.
        static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }

    fn append_date(out: &mut Vec<u8>) {
        let now = SystemTime::now();
        let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        DATE.with(|cell| {
            let mut cached = cell.borrow_mut();
            if cached.0 != secs {
                *cached = (secs, httpdate::fmt_http_date(now));
            }
            out.extend_from_slice(b"Date: ");
            out.extend_from_slice(cached.1.as_bytes());
            out.extend_from_slice(b"\r\n");
        });
    }

    /// Appends the whole response to `out`. `Connection` is written only where it
    /// differs from the version's default: close on 1.1, keep-alive on 1.0.
    pub fn write_response(out: &mut Vec<u8>, resp: &Response, keep_alive: bool, http10: bool) {
        // Writing to a Vec cannot fail.
        let _ = write!(
            out,
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            resp.status,
            http::reason(resp.status),
            resp.content_type,
            resp.body.len()
        );
        append_date(out);
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
}

// ---------------------------------------------------------------- reading requests

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
    framing: Framing,
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
        let filled = self.inbuf.len();
        self.inbuf.resize(filled + READ_CHUNK, 0);
        let result = self.stream.read(&mut self.inbuf[filled..]).await;
        let n = *result.as_ref().unwrap_or(&0);
        self.inbuf.truncate(filled + n);
        match result? {
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
        if head.framing.chunked {
            return self.read_chunked().await;
        }
        let len = head.framing.content_length;
        while self.pending().len() < len {
            self.fill().await?;
        }
        let body = self.pending()[..len].to_vec();
        self.pos += len;
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
            // The chunk's data, then exactly CRLF.
            let size = size as usize;
            while self.pending().len() < size + 2 {
                self.fill().await?;
            }
            let data = &self.pending()[..size + 2];
            if &data[size..] != b"\r\n" {
                return Err(Fail::Status(400));
            }
            body.extend_from_slice(&data[..size]);
            self.pos += size + 2;
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
        let _ = self.stream.shutdown(Shutdown::Write);
        let mut sink = vec![0u8; READ_CHUNK];
        let stream = &mut self.stream;
        let drain = async {
            let mut total = 0;
            while total < 4 * 1024 * 1024 {
                match stream.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => total += n,
                }
            }
        };
        let _ = async_std::future::timeout(Duration::from_millis(500), drain).await;
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
    let mut fields = HeadFields::default();
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value).map_err(|_| Fail::Status(400))?;
        fields.field(h.name, value).map_err(Fail::Status)?;
    }
    Ok(Head {
        method: req.method.unwrap_or("").to_string(),
        target: req.path.unwrap_or("").to_string(),
        http10,
        framing: fields.finish(http10).map_err(Fail::Status)?,
    })
}

// ---------------------------------------------------------------- handlers

async fn route(head: &Head, body: Vec<u8>, hello_file: &PathBuf) -> Response {
    let (path, query) = match http::resolve(&head.method, &head.target) {
        Ok(found) => found,
        Err(not_found_or_405) => return not_found_or_405,
    };
    match path {
        "/" => Response::new(200, "text/plain", b"Hello, World!".to_vec()),
        "/json" => {
            let json = serde_json::to_vec(&Message { message: "Hello, World!" }).expect("serialize");
            Response::new(200, "application/json", json)
        }
        // async-std runs the read on its blocking thread pool.
        "/file" => match async_std::fs::read(hello_file).await {
            Ok(bytes) => Response::new(200, "text/html", bytes),
            Err(e) => {
                eprintln!("reading {}: {e}", hello_file.display());
                Response::error(500)
            }
        },
        "/delay" => {
            let Ok(delay) = Delay::parse(query) else {
                return Response::error(400);
            };
            if let Some(wait) = delay.wait {
                task::sleep(wait).await; // a timer, no thread held
            }
            Response::new(200, "text/plain", delay.body())
        }
        "/tenth" => {
            let Ok(tenth) = Tenth::next(query) else {
                return Response::error(400);
            };
            if let Some(wait) = tenth.wait {
                task::sleep(wait).await;
            }
            Response::new(200, "text/plain", tenth.count.to_string().into_bytes())
        }
        "/echo" => Response::new(200, "application/octet-stream", body),
        _ => unreachable!(),
    }
}

// ---------------------------------------------------------------- connection

async fn serve(stream: TcpStream, hello_file: Arc<PathBuf>) {
    let _ = stream.set_nodelay(true);
    let mut conn = Conn { stream, inbuf: Vec::with_capacity(READ_CHUNK), pos: 0, out: Vec::new() };
    loop {
        let result = match conn.read_head().await {
            Ok(head) => {
                if head.framing.send_continue {
                    // Earlier pipelined responses go first.
                    conn.out.extend_from_slice(http::CONTINUE);
                    if conn.flush().await.is_err() {
                        return;
                    }
                }
                conn.read_body(&head).await.map(|body| (head, body))
            }
            Err(e) => Err(e),
        };
        let (keep_alive, http10, resp) = match result {
            Ok((head, body)) => (head.framing.keep_alive, head.http10, route(&head, body, &hello_file).await),
            Err(Fail::Closed) => break,
            Err(Fail::Status(status)) => (false, false, Response::error(status)),
        };
        wire::write_response(&mut conn.out, &resp, keep_alive, http10);
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
    let Env { host, port, workers, hello_file } = Env::from_env("rust-async-std");
    // async-std sizes its executor from this variable when its runtime first
    // starts (the first task below); set while the process is still single-threaded.
    std::env::set_var("ASYNC_STD_THREAD_COUNT", workers.to_string());
    let hello_file = Arc::new(hello_file);

    // SIGTERM keeps its default disposition (terminate the process at once).
    task::block_on(async move {
        let addr = match (host.as_str(), port).to_socket_addrs().map(|mut a| a.next()) {
            Ok(Some(addr)) => addr,
            _ => {
                eprintln!("rust-async-std: cannot resolve {host}:{port}");
                process::exit(1);
            }
        };
        let listener = match TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("rust-async-std: cannot bind {addr}: {e}");
                process::exit(1);
            }
        };
        println!("rust-async-std listening on {addr} with {workers} executor threads");
        let mut incoming = listener.incoming();
        while let Some(accepted) = incoming.next().await {
            match accepted {
                Ok(stream) => {
                    task::spawn(serve(stream, Arc::clone(&hello_file)));
                }
                Err(e) => {
                    // e.g. EMFILE: back off instead of spinning.
                    eprintln!("accept: {e}");
                    task::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });
}
