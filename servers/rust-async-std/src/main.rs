//! serverbench contestant: async-std's global executor (work-stealing, one
//! thread per worker), one task per connection, HTTP/1.1 handled by hand over
//! async_std::net::TcpStream. Request heads are parsed with `httparse` by
//! rust-contract's `Connection`, which holds a connection's HTTP state
//! without its socket; this row does the I/O, waiting and file reading the
//! async-std way. The database paths are in `db` (sqlx's PgPool on its
//! async-std runtime). With `$TLS_CERT` and `$TLS_KEY` the same connections
//! are served over rustls through futures-rustls (rustls' crate for
//! futures-io runtimes such as async-std). `/compress` is gzipped with flate2
//! on async-std's blocking pool (task::spawn_blocking).

mod db;

use std::future::poll_fn;
use std::net::Shutdown;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_std::io::{Read, Write};
use async_std::net::{TcpListener, TcpStream};
use async_std::prelude::*;
use async_std::task;
use futures_rustls::TlsAcceptor;
use rust_contract::db::{Database, DbQuery};
use rust_contract::http::Response;
use rust_contract::request::{Connection, Drain, Event, Request, LINGER, READ_CHUNK};
use rust_contract::route::{self, Action};
use rust_contract::Env;

// ---------------------------------------------------------------- handlers

/// What every connection task shares: the file of `/file` and the database pool.
struct Ctx {
    hello_file: Box<Path>,
    /// None without `$DATABASE_URL`.
    pool: Option<sqlx::PgPool>,
}

async fn answer(req: Request, ctx: &Ctx) -> Response {
    match DbQuery::route(&req.method, &req.target) {
        Some(Ok(query)) => return db::answer(query, ctx.pool.as_ref()).await.with_server("rust-async-std"),
        Some(Err(wrong_method)) => return wrong_method.with_server("rust-async-std"),
        None => {}
    }
    let hello_file = &*ctx.hello_file;
    match route::action(&req.method, &req.target, req.body) {
        Action::Respond(resp) => resp,
        // async-std runs the read on its blocking thread pool.
        Action::File => Response::file(async_std::fs::read(hello_file).await, hello_file),
        Action::Wait(wait, later) => later.after(task::sleep(wait)).await, // a timer, no thread held
        // CPU-heavy work goes to async-std's blocking pool, off the executor's threads: its docs
        // (async_std::task::spawn_blocking: "useful to prevent long-running synchronous operations
        // from blocking the main futures executor").
        Action::Compress(compress) => task::spawn_blocking(move || compress.response()).await,
    }
}

// ---------------------------------------------------------------- connection

async fn serve(mut stream: TcpStream, ctx: Arc<Ctx>) {
    let _ = stream.set_nodelay(true);
    if http(&mut stream, &ctx).await {
        let _ = stream.shutdown(Shutdown::Write);
        linger(&mut stream).await;
    }
}

/// The same connection over TLS: futures-rustls' handshake, then the same
/// HTTP. A failed handshake (say a TLS 1.1 client, refused by rustls) just ends it.
async fn serve_tls(acceptor: TlsAcceptor, stream: TcpStream, ctx: Arc<Ctx>) {
    let _ = stream.set_nodelay(true);
    let Ok(mut stream) = acceptor.accept(stream).await else { return };
    if http(&mut stream, &ctx).await {
        // futures-rustls' close sends close_notify; async-std's TcpStream only
        // flushes on close, so the TCP half-close is asked for as in `serve`.
        let _ = poll_fn(|cx| Pin::new(&mut stream).poll_close(cx)).await;
        let _ = stream.get_ref().0.shutdown(Shutdown::Write);
        linger(&mut stream).await;
    }
}

/// HTTP/1.1 over a plain or a TLS stream until the client leaves (false) or
/// the connection is to be closed after the last response (true).
async fn http<S: Read + Write + Unpin>(stream: &mut S, ctx: &Ctx) -> bool {
    let mut conn = Connection::default();
    loop {
        match conn.next_event() {
            Event::Read => {
                // async-std reads into an initialized slice: grow, read, keep what came.
                let buf = conn.buffer();
                let filled = buf.len();
                buf.resize(filled + READ_CHUNK, 0);
                let n = stream.read(&mut buf[filled..]).await.unwrap_or(0);
                buf.truncate(filled + n);
                if n == 0 {
                    return false; // the client is gone
                }
            }
            Event::Write => match stream.write_all(conn.output()).await {
                Ok(()) => conn.written(),
                Err(_) => return false,
            },
            Event::Request(req) => conn.respond(answer(req, ctx).await),
            Event::Close => return true,
        }
    }
}

/// After the half-close, read what the client still sends for a while, so
/// that unread input does not turn the close into a RST.
async fn linger<S: Read + Unpin>(stream: &mut S) {
    let (mut drain, mut sink) = (Drain::default(), vec![0u8; READ_CHUNK]);
    let draining = async { while drain.more(stream.read(&mut sink).await) {} };
    let _ = async_std::future::timeout(LINGER, draining).await;
}

// ---------------------------------------------------------------- main

fn main() {
    let env = Env::from_env("rust-async-std");
    rust_contract::compress::load("rust-async-std"); // $COMPRESS_FILE, read once (/compress)
    // async-std sizes its executor from this variable when its runtime first
    // starts (the first task below); set while the process is still single-threaded.
    std::env::set_var("ASYNC_STD_THREAD_COUNT", env.workers.to_string());
    let ctx = Arc::new(Ctx {
        hello_file: env.hello_file.clone().into_boxed_path(),
        pool: Database::from_env("rust-async-std").as_ref().map(db::pool),
    });

    // SPEC's TLS: with $TLS_CERT/$TLS_KEY, every connection is served over rustls instead.
    let tls = rust_contract::tls::server_config("rust-async-std").map(|config| TlsAcceptor::from(Arc::new(config)));

    // SIGTERM keeps its default disposition (terminate the process at once).
    task::block_on(async move {
        let addr = env.socket_addr("rust-async-std");
        let listener = Env::bound("rust-async-std", addr, TcpListener::bind(addr).await);
        let scheme = if tls.is_some() { "TLS" } else { "plaintext" };
        println!("rust-async-std listening on {addr} ({scheme}) with {} executor threads", env.workers);
        let mut incoming = listener.incoming();
        while let Some(accepted) = incoming.next().await {
            match accepted {
                Ok(stream) => {
                    let ctx = Arc::clone(&ctx);
                    match &tls {
                        None => task::spawn(serve(stream, ctx)),
                        Some(acceptor) => task::spawn(serve_tls(acceptor.clone(), stream, ctx)),
                    };
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
