//! Tiny HTTP servers for the integration tests, on ports picked by binding 0.
#![allow(dead_code)]

use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Counters {
    pub accepted: AtomicUsize,
    pub requests: AtomicUsize,
    /// most requests seen waiting at once on one connection
    pub max_queued: AtomicUsize,
    pub conn_close_headers: AtomicUsize,
}

pub struct TestServer {
    pub port: u16,
    pub counters: Arc<Counters>,
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// Start a server; `handler` runs on its own thread for each connection.
pub fn serve<F>(handler: F) -> TestServer
where
    F: Fn(TcpStream, &Counters) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = listener.local_addr().unwrap().port();
    let counters = Arc::new(Counters::default());
    let handler = Arc::new(handler);
    let c = counters.clone();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { continue };
            c.accepted.fetch_add(1, Ordering::SeqCst);
            let (h, c) = (handler.clone(), c.clone());
            std::thread::spawn(move || h(s, &c));
        }
    });
    TestServer { port, counters }
}

/// Buffered request reader: returns complete request heads (GET, no body).
pub struct Requests {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Requests {
    pub fn new(stream: TcpStream) -> Requests {
        Requests { stream, buf: Vec::new() }
    }

    /// Heads already buffered, without reading.
    fn buffered(&self) -> usize {
        self.buf.windows(4).filter(|w| w == b"\r\n\r\n").count()
    }

    /// Next request head, or None at EOF/error.
    pub fn next(&mut self, c: &Counters) -> Option<String> {
        loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let queued = self.buffered();
                c.max_queued.fetch_max(queued, Ordering::SeqCst);
                let head: Vec<u8> = self.buf.drain(..i + 4).collect();
                let head = String::from_utf8_lossy(&head).to_string();
                c.requests.fetch_add(1, Ordering::SeqCst);
                if head.to_ascii_lowercase().contains("connection: close") {
                    c.conn_close_headers.fetch_add(1, Ordering::SeqCst);
                }
                return Some(head);
            }
            let mut tmp = [0u8; 4096];
            match self.stream.read(&mut tmp) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&tmp[..n]),
            }
        }
    }
}

pub fn ok_response(body: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// A keep-alive server answering every request with 200 "Hello, World!".
pub fn hello_server() -> TestServer {
    serve(|s, c| {
        let mut r = Requests::new(s);
        while let Some(head) = r.next(c) {
            let close = head.to_ascii_lowercase().contains("connection: close");
            if r.stream.write_all(&ok_response("Hello, World!")).is_err() || close {
                return;
            }
        }
    })
}

pub struct Outcome {
    pub json: serde_json::Value,
    pub wall: Duration,
    pub stderr: String,
    pub code: i32,
}

impl Outcome {
    pub fn summary(&self, key: &str) -> u64 {
        self.json["summary"][key].as_u64().unwrap_or_else(|| panic!("summary.{key} missing: {}", self.stderr))
    }
    pub fn errors(&self, class: &str) -> u64 {
        self.json["error_classes"][class].as_u64().unwrap()
    }
}

thread_local! {
    /// The --io backend this test thread's loadgen runs use.
    static IO: Cell<&'static str> = const { Cell::new("auto") };
    /// uring with single-shot receives (the path for kernels before 6.0).
    static SINGLE_SHOT: Cell<bool> = const { Cell::new(false) };
}

pub fn io() -> &'static str {
    IO.with(Cell::get)
}

/// Threads a test starts say which backend they test too.
pub fn set_io(io: (&'static str, bool)) {
    IO.with(|c| c.set(io.0));
    SINGLE_SHOT.with(|c| c.set(io.1));
}

/// The environment this test's loadgen runs get (single-shot receives).
pub fn io_env() -> Option<(&'static str, &'static str)> {
    SINGLE_SHOT.with(Cell::get).then_some(("LOADGEN_URING_SINGLE_SHOT", "1"))
}

/// This thread's backend, for `set_io` in threads a test starts.
pub fn backend() -> (&'static str, bool) {
    (io(), SINGLE_SHOT.with(Cell::get))
}

/// `--io` and this test's backend, for commands a test builds itself.
pub fn io_args() -> [&'static str; 2] {
    ["--io", io()]
}

/// Run `test` with every loadgen run on backend `io`. Where io_uring is not
/// available its tests say so and stop: there is nothing to test.
pub fn on_backend(io: &'static str, test: fn()) {
    let (io, single_shot) = match io {
        "uring-single-shot" => ("uring", true),
        other => (other, false),
    };
    SINGLE_SHOT.with(|c| c.set(single_shot));
    if io == "uring" {
        if let Some(why) = loadgen::uring::unavailable() {
            eprintln!("io_uring tests skipped: {why}");
            return;
        }
    }
    set_io((io, single_shot));
    test();
}

/// `#[test]`s `epoll::name`, `uring::name` and `uring_single_shot::name`
/// for each test function `name`.
#[macro_export]
macro_rules! per_backend {
    ($($t:ident),* $(,)?) => {
        mod epoll {
            $( #[test] fn $t() { $crate::common::on_backend("epoll", super::$t) } )*
        }
        mod uring {
            $( #[test] fn $t() { $crate::common::on_backend("uring", super::$t) } )*
        }
        mod uring_single_shot {
            $( #[test] fn $t() { $crate::common::on_backend("uring-single-shot", super::$t) } )*
        }
    };
}

/// Run the loadgen binary with `--json - --quiet` and parse its JSON.
pub fn loadgen(args: &[&str]) -> Outcome {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(args)
        .args(io_args())
        .args(["--json", "-", "--quiet"])
        .envs(io_env())
        .output()
        .expect("run loadgen");
    let wall = t.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("loadgen JSON unreadable ({e}); stderr: {stderr}"));
    Outcome { json, wall, stderr, code: out.status.code().unwrap_or(-1) }
}

/// SO_LINGER 0 on a test server's socket: closing it sends a reset.
pub fn reset_on_close(s: &TcpStream) {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: setsockopt on our own socket with a live linger struct
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(s),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}
