//! serverbench contestant: async-std's global executor (work-stealing, one
//! thread per worker), one task per connection, HTTP/1.1 handled by hand over
//! async_std::net::TcpStream. Request heads are parsed with `httparse` by
//! rust-contract's `Connection`, which holds a connection's HTTP state
//! without its socket; this row does the I/O, waiting and file reading the
//! async-std way.

use std::net::Shutdown;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_std::net::{TcpListener, TcpStream};
use async_std::prelude::*;
use async_std::task;
use rust_contract::http::Response;
use rust_contract::request::{Connection, Drain, Event, Request, LINGER, READ_CHUNK};
use rust_contract::route::{self, Action};
use rust_contract::Env;

// ---------------------------------------------------------------- handlers

async fn answer(req: Request, hello_file: &Path) -> Response {
    match route::action(&req.method, &req.target, req.body) {
        Action::Respond(resp) => resp,
        // async-std runs the read on its blocking thread pool.
        Action::File => Response::file(async_std::fs::read(hello_file).await, hello_file),
        Action::Wait(wait, later) => later.after(task::sleep(wait)).await, // a timer, no thread held
    }
}

// ---------------------------------------------------------------- connection

async fn serve(mut stream: TcpStream, hello_file: Arc<Path>) {
    let _ = stream.set_nodelay(true);
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
                    return; // the client is gone
                }
            }
            Event::Write => match stream.write_all(conn.output()).await {
                Ok(()) => conn.written(),
                Err(_) => return,
            },
            Event::Request(req) => conn.respond(answer(req, &hello_file).await),
            Event::Close => break,
        }
    }
    // Half-close, then read what the client still sends for a while, so that
    // unread input does not turn the close into a RST.
    let _ = stream.shutdown(Shutdown::Write);
    let (mut drain, mut sink) = (Drain::default(), vec![0u8; READ_CHUNK]);
    let draining = async { while drain.more(stream.read(&mut sink).await) {} };
    let _ = async_std::future::timeout(LINGER, draining).await;
}

// ---------------------------------------------------------------- main

fn main() {
    let env = Env::from_env("rust-async-std");
    // async-std sizes its executor from this variable when its runtime first
    // starts (the first task below); set while the process is still single-threaded.
    std::env::set_var("ASYNC_STD_THREAD_COUNT", env.workers.to_string());
    let hello_file: Arc<Path> = Arc::from(env.hello_file.as_path());

    // SIGTERM keeps its default disposition (terminate the process at once).
    task::block_on(async move {
        let addr = env.socket_addr("rust-async-std");
        let listener = Env::bound("rust-async-std", addr, TcpListener::bind(addr).await);
        println!("rust-async-std listening on {addr} with {} executor threads", env.workers);
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
