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
            let l = libc::linger { l_onoff: 1, l_linger: 0 };
            // SAFETY: setsockopt on our own socket with a live linger struct
            unsafe {
                libc::setsockopt(
                    std::os::fd::AsRawFd::as_raw_fd(&s),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    &l as *const _ as *const libc::c_void,
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                )
            };
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
