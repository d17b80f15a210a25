//! serverbench contestant: tokio's multi-threaded work-stealing runtime, one
//! task per connection, HTTP/1.1 handled by hand over tokio::net::TcpStream.
//! Request heads are parsed with `httparse` by rust-contract's `Connection`,
//! which holds a connection's HTTP state without its socket; this row does
//! the I/O, waiting and file reading the tokio way. The database paths are
//! in `db` (tokio-postgres through deadpool-postgres). With `$TLS_CERT` and
//! `$TLS_KEY` the same connections are served over rustls through tokio-rustls.
//! `/compress` is gzipped with flate2 on tokio's blocking pool (spawn_blocking).
//! With `$HTTP2` (SPEC's HTTP/2), HTTP/2 connections are served by hyper 1's
//! http2 server on the same runtime, each stream answered by the same `answer`
//! as a hand-written HTTP/1.1 request: `h2c` with prior knowledge (a connection
//! whose first bytes are not the HTTP/2 preface gets the hand-written HTTP/1.1),
//! `h2` over TLS when ALPN chose `h2` (else the hand-written HTTP/1.1).

mod db;

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_ENCODING, CONTENT_TYPE, SERVER};
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rust_contract::db::{Database, DbQuery};
use rust_contract::http::Response;
use rust_contract::http2::Http2;
use rust_contract::request::{Connection, Drain, Event, Request, LINGER, READ_CHUNK};
use rust_contract::route::{self, Action};
use rust_contract::{Env, MAX_BODY};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsAcceptor;

// ---------------------------------------------------------------- handlers

/// What every connection task shares: the file of `/file` and the database pool.
struct Ctx {
    hello_file: Box<Path>,
    /// None without `$DATABASE_URL`.
    pool: Option<deadpool_postgres::Pool>,
}

async fn answer(req: Request, ctx: &Ctx) -> Response {
    match DbQuery::route(&req.method, &req.target) {
        Some(Ok(query)) => return db::answer(query, ctx.pool.as_ref()).await.with_server("rust-tokio"),
        Some(Err(wrong_method)) => return wrong_method.with_server("rust-tokio"),
        None => {}
    }
    let hello_file = &*ctx.hello_file;
    match route::action(&req.method, &req.target, req.body) {
        Action::Respond(resp) => resp,
        Action::File => Response::file(tokio::fs::read(hello_file).await, hello_file),
        Action::Wait(wait, later) => later.after(tokio::time::sleep(wait)).await, // a timer, no thread held
        // CPU-bound work goes to tokio's blocking threads, off the runtime's workers: tokio's crate
        // docs, "CPU-bound tasks and blocking code" ("you should use the spawn_blocking function").
        Action::Compress(compress) => {
            tokio::task::spawn_blocking(move || compress.response()).await.unwrap_or_else(|_| Response::error(500))
        }
    }
}

// ---------------------------------------------------------------- connection

async fn serve(stream: TcpStream, ctx: Arc<Ctx>) {
    let _ = stream.set_nodelay(true);
    http(stream, &ctx, Connection::default()).await
}

/// The same connection over TLS: tokio-rustls' handshake, then the same HTTP.
/// A failed handshake (say a TLS 1.1 client, refused by rustls) just ends it.
/// With `HTTP2=h2` the acceptor offers ALPN `h2` and `http/1.1`: a client that
/// chose `h2` gets hyper's HTTP/2, any other the hand-written HTTP/1.1.
async fn serve_tls(acceptor: TlsAcceptor, stream: TcpStream, ctx: Arc<Ctx>) {
    let _ = stream.set_nodelay(true);
    if let Ok(stream) = acceptor.accept(stream).await {
        if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
            return h2(stream, ctx).await;
        }
        http(stream, &ctx, Connection::default()).await
    }
}

/// `HTTP2=h2c`: HTTP/2 with prior knowledge on cleartext TCP. The first bytes
/// decide, as hyper-util's auto builder decides: the HTTP/2 connection preface
/// goes to hyper's HTTP/2 server (the bytes read so far put back in front of
/// the stream), anything else to the hand-written HTTP/1.1 with those bytes
/// already in its buffer.
async fn serve_h2c(mut stream: TcpStream, ctx: Arc<Ctx>) {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let _ = stream.set_nodelay(true);
    let mut conn = Connection::default();
    loop {
        let read = conn.buffer();
        let n = read.len().min(PREFACE.len());
        if read[..n] != PREFACE[..n] {
            return http(stream, &ctx, conn).await; // not HTTP/2: HTTP/1.1 by hand
        }
        if n == PREFACE.len() {
            break;
        }
        match stream.read_buf(read).await {
            Ok(0) | Err(_) => return, // the client is gone
            Ok(_) => {}
        }
    }
    let first = std::mem::take(conn.buffer());
    let (reader, writer) = stream.into_split();
    h2(tokio::io::join(io::Cursor::new(first).chain(reader), writer), ctx).await
}

/// HTTP/1.1 over a plain or a TLS stream, from `conn` (the bytes already read
/// in its buffer). Over TLS, `shutdown` sends `close_notify` before the TCP
/// half-close.
async fn http<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, ctx: &Ctx, mut conn: Connection) {
    loop {
        match conn.next_event() {
            // read_buf fills the buffer's spare capacity, uninitialized memory included.
            Event::Read => match stream.read_buf(conn.buffer()).await {
                Ok(0) | Err(_) => return, // the client is gone
                Ok(_) => {}
            },
            Event::Write => match stream.write_all(conn.output()).await {
                Ok(()) => conn.written(),
                Err(_) => return,
            },
            Event::Request(req) => conn.respond(answer(req, ctx).await),
            Event::Close => break,
        }
    }
    // Half-close, then read what the client still sends for a while, so that
    // unread input does not turn the close into a RST.
    let _ = stream.shutdown().await;
    let (mut drain, mut sink) = (Drain::default(), [0u8; READ_CHUNK]);
    let draining = async { while drain.more(stream.read(&mut sink).await) {} };
    let _ = tokio::time::timeout(LINGER, draining).await;
}

// ---------------------------------------------------------------- HTTP/2

/// One HTTP/2 connection served by hyper 1's http2 server with its defaults
/// (SETTINGS_MAX_CONCURRENT_STREAMS 200, 1 MiB stream and connection windows,
/// 16 KiB frames, its own cached `date` header and its reset-stream limits);
/// TokioExecutor runs each stream as a task on the runtime. A protocol error
/// ends the connection with GOAWAY inside hyper (h2); the error it returns
/// then, or a client gone, just ends the task.
async fn h2<S>(io: S, ctx: Arc<Ctx>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| stream(req, Arc::clone(&ctx)));
    let _ = http2::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(io), service).await;
}

/// One HTTP/2 stream: the request as the hand-written path sees it (method,
/// `:path` as the target, the whole body), answered by the same `answer`.
async fn stream(req: hyper::Request<Incoming>, ctx: Arc<Ctx>) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let (head, body) = req.into_parts();
    // SPEC's 1 MiB body limit (413 beyond), with http-body-util's Limited.
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(e) if e.is::<LengthLimitError>() => return Ok(h2_response(Response::error(413))),
        Err(_) => return Ok(h2_response(Response::error(400))), // the stream broke off mid-body
    };
    let target = head.uri.path_and_query().map_or("/", |target| target.as_str()).to_string();
    let req = Request { method: head.method.as_str().to_string(), target, http10: false, keep_alive: true, body };
    Ok(h2_response(answer(req, &ctx).await))
}

/// `answer`'s response as hyper's: hyper adds `content-length` (the body's
/// exact size) and `date`.
fn h2_response(resp: Response) -> hyper::Response<Full<Bytes>> {
    let mut builder = hyper::Response::builder().status(resp.status).header(CONTENT_TYPE, resp.content_type);
    let optional = [(CONTENT_ENCODING, resp.content_encoding), (SERVER, resp.server), (ALLOW, resp.allow)];
    for (name, value) in optional {
        if let Some(value) = value {
            builder = builder.header(name, value);
        }
    }
    builder.body(Full::new(Bytes::from(resp.body))).expect("a valid status and header values")
}

// ---------------------------------------------------------------- main

fn main() {
    let env = Env::from_env("rust-tokio");
    rust_contract::compress::load("rust-tokio"); // $COMPRESS_FILE, read once (/compress)
    let ctx = Arc::new(Ctx {
        hello_file: env.hello_file.clone().into_boxed_path(),
        pool: Database::from_env("rust-tokio").as_ref().map(db::pool),
    });

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(env.workers)
        .enable_all()
        .build()
        .expect("build tokio runtime");

    // SPEC's TLS: with $TLS_CERT/$TLS_KEY, every connection is served over rustls instead.
    let mut tls = rust_contract::tls::server_config("rust-tokio");
    // SPEC's HTTP/2: HTTP2=h2 offers ALPN h2 (then http/1.1) over that TLS; HTTP2=h2c is cleartext.
    let http2 = Http2::from_env("rust-tokio", tls.is_some());
    if let (Http2::H2, Some(config)) = (http2, tls.as_mut()) {
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    }
    let tls = tls.map(|config| TlsAcceptor::from(Arc::new(config)));

    // SIGTERM keeps its default disposition (terminate the process at once);
    // tokio only installs a handler when tokio::signal is used.
    runtime.block_on(async move {
        let addr = env.socket_addr("rust-tokio");
        let listener = Env::bound("rust-tokio", addr, listen(addr));
        let scheme = if tls.is_some() { "TLS" } else { "plaintext" };
        let protocol = http2.label();
        println!("rust-tokio listening on {addr} ({scheme}, {protocol}) with {} worker threads", env.workers);
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let ctx = Arc::clone(&ctx);
                    match (&tls, http2) {
                        (Some(acceptor), _) => tokio::spawn(serve_tls(acceptor.clone(), stream, ctx)),
                        (None, Http2::H2c) => tokio::spawn(serve_h2c(stream, ctx)),
                        (None, _) => tokio::spawn(serve(stream, ctx)),
                    };
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
