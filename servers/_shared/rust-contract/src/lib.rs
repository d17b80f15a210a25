//! What SPEC.md asks of every Rust row, written once instead of four times:
//! the environment the harness passes (`Env`), the `/delay` and `/tenth`
//! query rules (`Delay`, `Tenth`), in `http` the pieces of HTTP/1.1 that
//! the three hand-written rows (rust-threadpool, rust-tokio, rust-async-std)
//! share, and in `date` the `Date` header value (IMF-fixdate, formatted at
//! most once a second). For the two async rows (rust-tokio, rust-async-std),
//! which differ only in their runtime's I/O, timers and file reads: with the
//! `httparse` feature `request` reads requests out of a connection's bytes,
//! and with the `serde` feature `route` decides what answers them. `db`
//! has SPEC's database endpoints apart from any driver (which each row
//! brings in its own src). With the `rustls` feature, `tls` reads SPEC's TLS
//! switch and builds the rustls server configuration all of them serve it with.
//! `compress` has SPEC's `/compress` (its document, its `kb` rule and, with the
//! `flate2` feature, the gzip itself); where a row runs the compression is the row's.
//! `http2` reads SPEC's HTTP/2 switch (`$HTTP2`); each row serves HTTP/2 with
//! its own stack's server.
//!
//! std only by default, because rust-threadpool is a std-only row. How a row
//! waits, reads and writes (its concurrency model) stays in the row: this
//! crate only decides *what* to answer, never blocks, and allocates nothing
//! per request except the request and the bodies it is asked for.

use std::env;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub mod compress;
pub mod date;
pub mod db;
pub mod http;
pub mod http2;
#[cfg(any(feature = "httparse", test))]
pub mod request;
#[cfg(any(feature = "serde", test))]
pub mod route;
#[cfg(any(feature = "rustls", test))]
pub mod tls;

/// Largest request body (`POST /echo`) and `/delay` body: 1 MiB.
pub const MAX_BODY: usize = 1024 * 1024;
/// Largest `ms` of `/delay` and `/tenth`: 60 s.
pub const MAX_MS: u64 = 60_000;
/// `/tenth` waits this long on every tenth request when no `ms` is given.
pub const TENTH_DEFAULT_MS: u64 = 2000;

// ---------------------------------------------------------------- environment

/// The process settings SPEC.md defines, read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    pub host: String,
    pub port: u16,
    /// `$WORKERS`, or the CPUs of the affinity mask (what `taskset` allows).
    pub workers: usize,
    pub hello_file: PathBuf,
}

impl Env {
    /// Reads HOST, PORT, WORKERS and HELLO_FILE with SPEC.md's defaults. A PORT
    /// that is not a port number exits with status 2 and `<row>: invalid PORT`
    /// on stderr, rather than silently listening somewhere else.
    pub fn from_env(row: &str) -> Env {
        match Env::from_lookup(|key| env::var(key).ok()) {
            Ok(e) => e,
            Err(msg) => {
                eprintln!("{row}: {msg}");
                std::process::exit(2);
            }
        }
    }

    /// HOST:PORT resolved to the address to listen on; one that does not
    /// resolve exits with status 1 and `<row>: cannot resolve HOST:PORT`.
    pub fn socket_addr(&self, row: &str) -> SocketAddr {
        match (self.host.as_str(), self.port).to_socket_addrs().map(|mut a| a.next()) {
            Ok(Some(addr)) => addr,
            _ => {
                eprintln!("{row}: cannot resolve {}:{}", self.host, self.port);
                std::process::exit(1);
            }
        }
    }

    /// The listener bound to `addr`, or exit with status 1 and
    /// `<row>: cannot bind ADDR: why` on stderr.
    pub fn bound<L>(row: &str, addr: SocketAddr, listener: std::io::Result<L>) -> L {
        listener.unwrap_or_else(|e| {
            eprintln!("{row}: cannot bind {addr}: {e}");
            std::process::exit(1);
        })
    }

    /// `from_env` over any lookup, so the defaults can be tested without
    /// touching the process environment. A missing or non-UTF-8 variable
    /// counts as unset; an unusable WORKERS falls back to the CPU count.
    fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Env, &'static str> {
        let port = match var("PORT") {
            None => 8080,
            Some(p) => p.parse().map_err(|_| "invalid PORT")?,
        };
        let workers = var("WORKERS")
            .and_then(|w| w.parse::<usize>().ok())
            .filter(|&w| w > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Ok(Env {
            host: var("HOST").unwrap_or_else(|| "127.0.0.1".to_string()),
            port,
            workers,
            // Run from servers/<id>/, this is the repository's assets/hello.html.
            hello_file: PathBuf::from(var("HELLO_FILE").unwrap_or_else(|| "../../assets/hello.html".to_string())),
        })
    }
}

// ---------------------------------------------------------------- query parameters

/// A query parameter that is not a whole number in range: the request gets 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadRequest;

/// The value of query parameter `name` as an integer in 0..=max, `default`
/// when absent; the last one wins when repeated. Only plain ASCII digits
/// count as an integer (no sign, no spaces, no empty value). Allocation-free.
pub fn int_param(query: &str, name: &str, max: u64, default: u64) -> Result<u64, BadRequest> {
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
            v.parse::<u64>().ok().filter(|&n| n <= max).ok_or(BadRequest)
        }
        Some(_) => Err(BadRequest),
    }
}

/// `GET /delay?ms=N&bytes=B`: how long to wait (`None` for 0 ms: answer at
/// once) and how many bytes of `x` to send. Each row waits its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delay {
    pub wait: Option<Duration>,
    pub bytes: usize,
}

impl Delay {
    pub fn parse(query: &str) -> Result<Delay, BadRequest> {
        let ms = int_param(query, "ms", MAX_MS, 0)?;
        let bytes = int_param(query, "bytes", MAX_BODY as u64, 0)?;
        Ok(Delay { wait: wait(ms), bytes: bytes as usize })
    }

    /// The response body: `bytes` times `x`.
    pub fn body(&self) -> Vec<u8> {
        vec![b'x'; self.bytes]
    }
}

/// The process-wide `/tenth` counter (SPEC: shared, no lost updates).
static TENTH_COUNTER: AtomicU64 = AtomicU64::new(0);

/// `GET /tenth?ms=N`: the counter's new value (the body, in decimal) and,
/// on every tenth request, how long to wait before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tenth {
    pub count: u64,
    pub wait: Option<Duration>,
}

impl Tenth {
    /// Validates `ms` first, so a 400 does not count, then bumps the counter.
    pub fn next(query: &str) -> Result<Tenth, BadRequest> {
        Tenth::next_of(&TENTH_COUNTER, query)
    }

    fn next_of(counter: &AtomicU64, query: &str) -> Result<Tenth, BadRequest> {
        let ms = int_param(query, "ms", MAX_MS, TENTH_DEFAULT_MS)?;
        let count = counter.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Tenth { count, wait: if count.is_multiple_of(10) { wait(ms) } else { None } })
    }
}

fn wait(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> Result<Env, &'static str> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Env::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn env_defaults() {
        let e = env_of(&[]).unwrap();
        assert_eq!((e.host.as_str(), e.port), ("127.0.0.1", 8080));
        assert!(e.workers >= 1);
        assert_eq!(e.hello_file, PathBuf::from("../../assets/hello.html"));
    }

    #[test]
    fn env_values() {
        let e = env_of(&[("HOST", "0.0.0.0"), ("PORT", "9000"), ("WORKERS", "3"), ("HELLO_FILE", "/h.html")])
            .unwrap();
        assert_eq!(e, Env { host: "0.0.0.0".into(), port: 9000, workers: 3, hello_file: "/h.html".into() });
    }

    #[test]
    fn env_socket_addr() {
        let e = env_of(&[("HOST", "127.0.0.1"), ("PORT", "9001")]).unwrap();
        assert_eq!(e.socket_addr("test"), SocketAddr::from(([127, 0, 0, 1], 9001)));
    }

    #[test]
    fn env_bad_port_is_an_error_bad_workers_the_default() {
        assert_eq!(env_of(&[("PORT", "http")]), Err("invalid PORT"));
        assert_eq!(env_of(&[("PORT", "70000")]), Err("invalid PORT"));
        let default = env_of(&[]).unwrap().workers;
        assert_eq!(env_of(&[("WORKERS", "0")]).unwrap().workers, default);
        assert_eq!(env_of(&[("WORKERS", "many")]).unwrap().workers, default);
    }

    #[test]
    fn int_param_rules() {
        assert_eq!(int_param("", "ms", 10, 7), Ok(7));
        assert_eq!(int_param("bytes=3", "ms", 10, 7), Ok(7));
        assert_eq!(int_param("ms=0", "ms", 10, 7), Ok(0));
        assert_eq!(int_param("ms=10", "ms", 10, 7), Ok(10));
        assert_eq!(int_param("a=1&ms=4&b", "ms", 10, 7), Ok(4));
        assert_eq!(int_param("ms=1&ms=2", "ms", 10, 7), Ok(2)); // last wins
        for bad in ["ms=11", "ms=", "ms", "ms=-1", "ms=+1", "ms=1.5", "ms=abc", "ms= 1", "ms=99999999999999999999999"] {
            assert_eq!(int_param(bad, "ms", 10, 7), Err(BadRequest), "{bad}");
        }
    }

    #[test]
    fn delay_ranges() {
        assert_eq!(Delay::parse(""), Ok(Delay { wait: None, bytes: 0 }));
        let d = Delay::parse("ms=200&bytes=1000").unwrap();
        assert_eq!(d, Delay { wait: Some(Duration::from_millis(200)), bytes: 1000 });
        assert_eq!(d.body(), vec![b'x'; 1000]);
        assert!(Delay::parse("ms=60000&bytes=1048576").is_ok());
        for bad in ["ms=abc", "ms=-1", "ms=60001", "bytes=1048577", "bytes=2000000", "bytes=1.5"] {
            assert_eq!(Delay::parse(bad), Err(BadRequest), "{bad}");
        }
    }

    #[test]
    fn tenth_waits_on_every_tenth_and_rejects_without_counting() {
        let counter = AtomicU64::new(0);
        let waits: Vec<bool> = (1..=20).map(|_| Tenth::next_of(&counter, "ms=5").unwrap().wait.is_some()).collect();
        assert_eq!(waits.iter().filter(|&&w| w).count(), 2);
        assert!(waits[9] && waits[19]);
        assert_eq!(Tenth::next_of(&counter, "ms=60001"), Err(BadRequest));
        assert_eq!(counter.load(Ordering::SeqCst), 20);
        counter.store(9, Ordering::SeqCst);
        let t = Tenth::next_of(&counter, "").unwrap();
        assert_eq!(t, Tenth { count: 10, wait: Some(Duration::from_millis(TENTH_DEFAULT_MS)) });
        counter.store(9, Ordering::SeqCst);
        assert_eq!(Tenth::next_of(&counter, "ms=0").unwrap().wait, None);
    }
}
