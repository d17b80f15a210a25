//! serverbench contestant: tokio's multi-threaded work-stealing runtime, one
//! task per connection, HTTP/1.1 handled by hand over tokio::net::TcpStream
//! with request heads parsed by `httparse`.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process;
use std::sync::Arc;
use std::time::Duration;

use rust_contract::http::{self, Framing, HeadFields, Response, MAX_HEAD};
use rust_contract::{Delay, Env, Tenth, MAX_BODY};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const MAX_HEADERS: usize = MAX_HEAD / 4; // the shortest field line is 4 bytes

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
        "/file" => match tokio::fs::read(hello_file).await {
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
                tokio::time::sleep(wait).await; // a timer, no thread held
            }
            Response::new(200, "text/plain", delay.body())
        }
        "/tenth" => {
            let Ok(tenth) = Tenth::next(query) else {
                return Response::error(400);
            };
            if let Some(wait) = tenth.wait {
                tokio::time::sleep(wait).await;
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
    let mut conn = Conn { stream, inbuf: Vec::with_capacity(16 * 1024), pos: 0, out: Vec::new() };
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
        resp.write_to(&mut conn.out, keep_alive, http10);
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
    let Env { host, port, workers, hello_file } = Env::from_env("rust-tokio");
    let hello_file = Arc::new(hello_file);

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
