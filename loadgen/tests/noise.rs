//! --noise on the wire (issue 31): what each shape sends, as a server sees
//! it, and how loadgen counts what the server did with it.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A noise connection as the test server saw it: each read and its time.
#[derive(Default, Clone)]
struct Seen {
    reads: Vec<(Instant, Vec<u8>)>,
}

impl Seen {
    fn bytes(&self) -> Vec<u8> {
        self.reads.iter().flat_map(|r| r.1.clone()).collect()
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// Is this connection the legitimate load's? It sends `GET / ` at once;
/// noise sends something else, or nothing.
fn is_legit(s: &TcpStream) -> bool {
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let mut b = [0u8; 6];
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(100) {
        match s.peek(&mut b) {
            Ok(6) | Ok(0) | Err(_) => break,
            Ok(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    let _ = s.set_read_timeout(None);
    &b == b"GET / "
}

/// Legitimate connections get "Hello"; each noise connection gets a log
/// entry and runs `noise` with it.
fn split_server<F>(noise: F) -> (TestServer, Log)
where
    F: Fn(TcpStream, &Log, usize) + Send + Sync + 'static,
{
    let log: Log = Arc::default();
    let l = log.clone();
    let srv = serve(move |s, c| {
        if is_legit(&s) {
            let mut r = Requests::new(s);
            while r.next(c).is_some() {
                if r.stream.write_all(&ok_response("Hello")).is_err() {
                    return;
                }
            }
            return;
        }
        let k = {
            let mut g = l.lock().unwrap();
            g.push(Seen::default());
            g.len() - 1
        };
        noise(s, &l, k);
    });
    (srv, log)
}

/// Read connection `k` to EOF (or an error), logging every read.
fn record(mut s: TcpStream, log: &Log, k: usize) {
    let mut b = [0u8; 4096];
    while let Ok(n @ 1..) = s.read(&mut b) {
        log.lock().unwrap()[k].reads.push((Instant::now(), b[..n].to_vec()));
    }
}

/// loadgen with a light legitimate load (20 req/s) beside `noise`.
fn with_noise(srv: &TestServer, d: &str, noise: &[&str]) -> Outcome {
    let mut args = vec![srv.url("/"), "--rate".into(), "20".into(), "-d".into(), d.into()];
    args.extend(noise.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = loadgen(&args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // the server's threads see the closes
    std::thread::sleep(Duration::from_millis(150));
    o
}

fn n(o: &Outcome, key: &str) -> u64 {
    let v = key.split('.').fold(&o.json["noise"], |v, k| &v[k]);
    v.as_u64().unwrap_or_else(|| panic!("noise.{key} missing: {}", o.json["noise"]))
}

/// Every connection opened ended one way, or was open at the end.
fn assert_ends_add_up(o: &Outcome) {
    let ended: u64 = ["closed", "reset", "timeout", "open_at_end"].iter().map(|k| n(o, &format!("ended.{k}"))).sum();
    assert_eq!(n(o, "opened"), ended, "{}", o.json["noise"]);
    assert_eq!(n(o, "held_at_end"), n(o, "ended.open_at_end"));
}

#[test]
fn slowloris_sends_a_request_line_then_a_header_byte_per_interval() {
    let (srv, log) = split_server(record);
    let o = with_noise(&srv, "2s", &["--noise", "slowloris", "--noise-connections", "4", "--noise-interval", "250ms"]);
    assert!(o.summary("ok") > 0, "the legitimate load ran beside it");
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 4, "4 noise connections");
    let head = format!("GET /hello HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", srv.port);
    for seen in &log {
        let bytes = seen.bytes();
        assert!(bytes.starts_with(head.as_bytes()), "{:?}", String::from_utf8_lossy(&bytes));
        let header = &bytes[head.len()..];
        assert!(header.starts_with(b"X-a: b") || b"X-a: b".starts_with(header), "{header:?}");
        assert!(!bytes.windows(4).any(|w| w == b"\r\n\r\n"), "the request never ends");
        // 2 s at one byte per 250 ms, the first within one interval
        assert!((5..=9).contains(&header.len()), "{} header bytes in 2 s", header.len());
        let mut gaps: Vec<Duration> = seen.reads.windows(2).skip(1).map(|w| w[1].0 - w[0].0).collect();
        gaps.sort();
        let median = gaps[gaps.len() / 2];
        assert!(median >= Duration::from_millis(200) && median <= Duration::from_millis(350), "gaps {gaps:?}");
    }
    let sent: usize = log.iter().map(|s| s.bytes().len()).sum();
    assert_eq!(n(&o, "bytes_sent"), sent as u64, "bytes_sent is what arrived");
    assert_eq!((n(&o, "opened"), n(&o, "held_peak"), n(&o, "held_at_end"), n(&o, "requests_sent")), (4, 4, 4, 4));
    assert_eq!(n(&o, "connections"), 4);
    assert_eq!(o.json["noise"]["shape"], "slowloris");
    assert_ends_add_up(&o);
}

#[test]
fn idle_connections_send_nothing_and_a_run_without_noise_has_no_noise_key() {
    let (srv, log) = split_server(record);
    let o = with_noise(&srv, "1s", &["--noise", "idle", "--noise-connections", "3"]);
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 3, "{} {}", o.json["noise"], o.json["summary"]);
    assert!(log.iter().all(|s| s.reads.is_empty()), "idle connections are silent");
    assert_eq!((n(&o, "opened"), n(&o, "held_peak"), n(&o, "bytes_sent"), n(&o, "requests_sent")), (3, 3, 0, 0));
    assert_eq!(n(&o, "ended.open_at_end"), 3);
    let quiet = with_noise(&srv, "300ms", &[]);
    assert!(quiet.json.get("noise").is_none(), "no --noise, no \"noise\"");
    assert!(quiet.summary("ok") > 0);
}

/// A server that ends each noise connection after 300 ms, with a FIN or
/// (SO_LINGER 0) a reset.
fn ends_after_300ms(reset: bool) -> (TestServer, Log) {
    split_server(move |s, _log, _k| {
        std::thread::sleep(Duration::from_millis(300));
        if reset {
            reset_on_close(&s);
        }
        drop(s);
    })
}

#[test]
fn connections_the_server_ends_are_counted_by_how_and_replaced() {
    for reset in [false, true] {
        let (srv, log) = ends_after_300ms(reset);
        let o = with_noise(&srv, "2s", &["--noise", "idle", "--noise-connections", "3"]);
        let accepted = log.lock().unwrap().len() as u64;
        let (closed, resets) = (n(&o, "ended.closed"), n(&o, "ended.reset"));
        // each slot: 300 ms held, 100 ms back-off: about 5 connections in 2 s
        let ended = if reset { resets } else { closed };
        assert!((9..=18).contains(&ended), "reset {reset}: {}", o.json["noise"]);
        assert_eq!(if reset { closed } else { resets }, 0, "{}", o.json["noise"]);
        assert_eq!(n(&o, "ended.timeout"), 0);
        assert_eq!(n(&o, "held_peak"), 3, "never more than asked");
        assert!(accepted >= n(&o, "opened") && accepted <= n(&o, "opened") + 3, "server accepted {accepted}: {}", o.json["noise"]);
        assert_ends_add_up(&o);
    }
}

/// What a garbage test server saw and answered.
#[derive(Default, Debug, Clone)]
struct Tally {
    /// Requests by kind: path, method, no-body, binary, te-cl.
    kinds: std::collections::BTreeMap<&'static str, u64>,
    /// Answers: 404s and 400s, and (close mode) non-HTTP answers.
    http: u64,
    not_http: u64,
    /// Connections the server closed after answering.
    closed: u64,
}

/// The next whole request in `buf`: its kind and length. None: more bytes needed.
fn next_garbage(buf: &[u8]) -> Option<(&'static str, usize)> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let text = |p: &[u8]| buf.starts_with(p);
    match head {
        Some(h) if text(b"GET /no-such-path-") => Some(("path", h)),
        Some(h) if text(b"G(E)T / ") => Some(("method", h)),
        Some(h) if text(b"POST /echo") && buf[..h].windows(18).any(|w| w == b"Transfer-Encoding:") => {
            (buf.len() >= h + 5).then_some(("te-cl", h + 5))
        }
        // Content-Length: 10 and no body: it waits for the body, which never comes
        Some(h) if text(b"POST /echo") => Some(("no-body", h)),
        _ if buf.len() >= 256 && !text(b"GET ") && !text(b"G(E)T") && !text(b"POST") => Some(("binary", 256)),
        _ => None,
    }
}

/// Answers each malformed request with 404 (a missing path) or 400,
/// keeping the connection, or (`close`) closing it after each answer, the
/// binary one answered with bytes that are not HTTP.
fn garbage_server(close: bool) -> (TestServer, Arc<Mutex<Tally>>) {
    let tally: Arc<Mutex<Tally>> = Arc::default();
    let t = tally.clone();
    let (srv, _log) = split_server(move |mut s, _log, _k| {
        let mut buf = Vec::new();
        let mut b = [0u8; 4096];
        loop {
            while let Some((kind, len)) = next_garbage(&buf) {
                *t.lock().unwrap().kinds.entry(kind).or_default() += 1;
                if kind == "no-body" {
                    // wait for a body that never comes, until loadgen gives up
                    while let Ok(1..) = s.read(&mut b) {}
                    return;
                }
                buf.drain(..len);
                let answer = match (kind, close) {
                    ("binary", true) => "what?\r\n".to_string(),
                    _ => format!(
                        "HTTP/1.1 {}\r\nContent-Length: 0\r\n{}\r\n",
                        if kind == "path" { "404 Not Found" } else { "400 Bad Request" },
                        if close { "Connection: close\r\n" } else { "" }
                    ),
                };
                if s.write_all(answer.as_bytes()).is_err() {
                    return;
                }
                let mut g = t.lock().unwrap();
                if answer.starts_with("HTTP/") { g.http += 1 } else { g.not_http += 1 }
                if close {
                    g.closed += 1;
                    return;
                }
            }
            match s.read(&mut b) {
                Ok(n @ 1..) => buf.extend_from_slice(&b[..n]),
                _ => return,
            }
        }
    });
    (srv, tally)
}

fn garbage_run(close: bool) -> (Outcome, Tally) {
    let (srv, tally) = garbage_server(close);
    let o = with_noise(&srv, "3s", &["--noise", "garbage", "--noise-connections", "2"]);
    let t = tally.lock().unwrap().clone();
    // every kind, whichever ones the server closes on (a 2 s wait for the missing body included)
    assert_eq!(t.kinds.keys().copied().collect::<Vec<_>>(), ["binary", "method", "no-body", "path", "te-cl"], "{t:?}");
    assert_eq!(n(&o, "requests_sent"), t.kinds.values().sum::<u64>(), "{t:?} {}", o.json["noise"]);
    // the answers loadgen read: all the server sent but the last one per connection at most
    let answered = n(&o, "responses.4xx") + n(&o, "responses.other");
    let sent = t.http + t.not_http;
    assert!(answered <= sent && answered + 2 >= sent, "{t:?} {}", o.json["noise"]);
    assert_eq!(n(&o, "responses.2xx") + n(&o, "responses.5xx"), 0);
    // each missing body is given up on after 2 s (one per connection may still wait at the end)
    let waits = t.kinds["no-body"];
    assert!(n(&o, "ended.timeout") <= waits && n(&o, "ended.timeout") + 2 >= waits && waits >= 2, "{t:?} {}", o.json["noise"]);
    assert!(n(&o, "bytes_received") > 0 && n(&o, "bytes_sent") > 0);
    assert_eq!(n(&o, "ended.reset"), 0);
    assert_ends_add_up(&o);
    (o, t)
}

#[test]
fn garbage_sends_each_malformed_kind_and_counts_answers_on_a_kept_connection() {
    let (o, t) = garbage_run(false);
    assert_eq!(n(&o, "ended.closed"), 0, "the server closed nothing");
    assert_eq!(n(&o, "responses.other"), 0);
    assert_eq!(n(&o, "held_peak"), 2);
    // 404s and 400s in turn, on connections replaced only after a timeout
    assert!(t.kinds["path"] >= 2 && t.kinds["method"] >= 2, "{t:?}");
}

#[test]
fn garbage_counts_closes_and_answers_that_are_not_http() {
    let (o, t) = garbage_run(true);
    let closed = n(&o, "ended.closed");
    assert!(closed <= t.closed && closed + 2 >= t.closed, "{t:?} {}", o.json["noise"]);
    assert!(closed >= 4, "a connection per answer: {}", o.json["noise"]);
    let other = n(&o, "responses.other");
    assert!(other <= t.not_http && other + 2 >= t.not_http && t.not_http >= 1, "{t:?} {}", o.json["noise"]);
}

/// Answers `GET /big` with 1 MiB and `GET /small` with 3000 bytes, keep-alive,
/// written 4 KiB at a time; counts requests and body bytes written.
fn big_server() -> (TestServer, Arc<Mutex<(u64, u64)>>) {
    let written: Arc<Mutex<(u64, u64)>> = Arc::default();
    let w = written.clone();
    let (srv, _log) = split_server(move |s, _log, _k| {
        let c = Counters::default();
        let mut r = Requests::new(s);
        while let Some(head) = r.next(&c) {
            let size = if head.starts_with("GET /big ") { 1 << 20 } else { 3000 };
            w.lock().unwrap().0 += 1;
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
            if r.stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            let chunk = [b'x'; 4096];
            let mut left = size;
            while left > 0 {
                let k = left.min(chunk.len());
                if r.stream.write_all(&chunk[..k]).is_err() {
                    return;
                }
                left -= k;
                w.lock().unwrap().1 += k as u64;
            }
        }
    });
    (srv, written)
}

#[test]
fn a_slow_reader_reads_at_its_rate_and_the_server_feels_it() {
    let (srv, written) = big_server();
    let rate = 8192u64;
    let o = with_noise(&srv, "2s", &["--noise", "slow-reader", "--noise-connections", "2", "--noise-path", "/big", "--noise-read-rate", &rate.to_string()]);
    let per_conn = n(&o, "bytes_received") / 2;
    // 2 s at 8 KiB/s, read every 500 ms from the first tick on
    assert!(per_conn >= rate && per_conn <= rate * 5 / 2, "{per_conn} B per connection: {}", o.json["noise"]);
    let (requests, body) = *written.lock().unwrap();
    assert_eq!((requests, n(&o, "requests_sent")), (2, 2), "one request each, its answer still unread");
    // the rest stays in the server: its writes block (socket buffers only)
    assert!(body < 1 << 20, "the server wrote {body} of 2 MiB: its writes should block on the slow readers");
    assert_eq!(n(&o, "responses.2xx"), 0, "nothing answered in full");
    assert_eq!((n(&o, "held_at_end"), n(&o, "ended.timeout")), (2, 0));
    assert_ends_add_up(&o);
}

#[test]
fn a_slow_reader_asks_again_once_it_has_read_a_whole_response() {
    let (srv, written) = big_server();
    // 4 KiB per 500 ms tick: a 3000-byte answer (and its head) a tick
    let o = with_noise(&srv, "2s", &["--noise", "slow-reader", "--noise-connections", "1", "--noise-path", "/small", "--noise-read-rate", "8192"]);
    let (requests, _) = *written.lock().unwrap();
    assert_eq!(n(&o, "requests_sent"), requests, "{}", o.json["noise"]);
    assert!((3..=5).contains(&requests), "a request a tick: {}", o.json["noise"]);
    let ok = n(&o, "responses.2xx");
    assert!(ok + 1 == requests, "every answer read but the last: {}", o.json["noise"]);
    assert_eq!(n(&o, "opened"), 1, "keep-alive");
}

#[test]
fn bad_noise_flags_are_one_line_and_exit_2() {
    for (args, says) in [
        (vec!["--noise", "loud"], "--noise `loud`"),
        (vec!["--noise-connections", "5"], "needs --noise"),
        (vec!["--noise", "slowloris", "--noise-interval", "soon"], "--noise-interval"),
        (vec!["--noise", "idle", "--noise-connections", "100000000"], "open files"),
        (vec!["--noise-lead", "1s"], "--noise-lead needs --noise"),
        (vec!["--noise", "idle", "--noise-lead", "61s"], "at most 60s"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen")).arg("http://127.0.0.1:1/").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.trim().lines().count() == 1 && err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn noise_stops_with_a_run_that_ends_by_its_request_count() {
    let (srv, _log) = split_server(record);
    let o = loadgen(&[&srv.url("/"), "-n", "50", "-c", "1", "--noise", "idle", "--noise-connections", "2"]);
    assert_eq!((o.code, o.summary("ok")), (0, 50), "{}", o.stderr);
    assert!(o.wall < Duration::from_secs(1), "took {:?}", o.wall);
    assert_eq!(n(&o, "connections"), 2);
    assert_ends_add_up(&o);
}

#[test]
fn noise_lead_puts_every_noise_connection_in_place_before_the_legitimate_load_connects() {
    // (accepted at, legitimate?) per connection, in accept order
    let seen: Arc<Mutex<Vec<(Instant, bool)>>> = Arc::default();
    let s2 = seen.clone();
    let srv = serve(move |s, c| {
        let at = Instant::now();
        let legit = is_legit(&s);
        s2.lock().unwrap().push((at, legit));
        if legit {
            let mut r = Requests::new(s);
            while r.next(c).is_some() {
                if r.stream.write_all(&ok_response("Hello")).is_err() {
                    return;
                }
            }
        } else {
            record(s, &Arc::default(), 0);
        }
    });
    let o = with_noise(&srv, "1s", &["--noise", "idle", "--noise-connections", "6", "--noise-lead", "400ms"]);
    assert!(o.summary("ok") > 0, "the legitimate load ran after the lead");
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by_key(|x| x.0);
    let first_legit = seen.iter().position(|x| x.1).expect("a legitimate connection");
    assert!(seen[..first_legit].iter().all(|x| !x.1) && first_legit == 6, "accept order {:?}",
            seen.iter().map(|x| x.1).collect::<Vec<_>>());
    let waited = seen[first_legit].0 - seen[0].0;
    assert!(waited >= Duration::from_millis(300), "the legitimate load connected {waited:?} after the noise");
    assert_eq!(n(&o, "held_peak"), 6);
}
