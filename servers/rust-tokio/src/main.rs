//! serverbench contestant: tokio's multi-threaded work-stealing runtime, one
//! task per connection, HTTP/1.1 handled by hand over tokio::net::TcpStream.
//! Request heads are parsed with `httparse` by rust-contract's `Connection`,
//! which holds a connection's HTTP state without its socket; this row does
//! the I/O, waiting and file reading the tokio way. The database paths are
//! in `db` (tokio-postgres through deadpool-postgres). With `$TLS_CERT` and
//! `$TLS_KEY` the same connections are served over rustls through tokio-rustls.
//! `/compress` is gzipped with flate2 on tokio's blocking pool (spawn_blocking).

mod db;

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rust_contract::db::{Database, DbQuery};
use rust_contract::http::Response;
use rust_contract::request::{Connection, Drain, Event, Request, LINGER, READ_CHUNK};
use rust_contract::route::{self, Action};
use rust_contract::Env;
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
    http(stream, &ctx).await
}

/// The same connection over TLS: tokio-rustls' handshake, then the same HTTP.
/// A failed handshake (say a TLS 1.1 client, refused by rustls) just ends it.
async fn serve_tls(acceptor: TlsAcceptor, stream: TcpStream, ctx: Arc<Ctx>) {
    let _ = stream.set_nodelay(true);
    if let Ok(stream) = acceptor.accept(stream).await {
        http(stream, &ctx).await
    }
}

/// HTTP/1.1 over a plain or a TLS stream. Over TLS, `shutdown` sends
/// `close_notify` before the TCP half-close.
async fn http<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, ctx: &Ctx) {
    let mut conn = Connection::default();
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
    let tls = rust_contract::tls::server_config("rust-tokio").map(|config| TlsAcceptor::from(Arc::new(config)));

    // SIGTERM keeps its default disposition (terminate the process at once);
    // tokio only installs a handler when tokio::signal is used.
    runtime.block_on(async move {
        let addr = env.socket_addr("rust-tokio");
        let listener = Env::bound("rust-tokio", addr, listen(addr));
        let scheme = if tls.is_some() { "TLS" } else { "plaintext" };
        println!("rust-tokio listening on {addr} ({scheme}) with {} worker threads", env.workers);
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let ctx = Arc::clone(&ctx);
                    match &tls {
                        None => tokio::spawn(serve(stream, ctx)),
                        Some(acceptor) => tokio::spawn(serve_tls(acceptor.clone(), stream, ctx)),
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
