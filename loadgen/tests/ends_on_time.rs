//! Ends on time (issue 29): whatever the server does, loadgen writes its JSON
//! and exits within a second of its plan's end (warm-up + duration).

#[macro_use]
mod common;

use clap::Parser;
use common::*;
use loadgen::cli::{Args, Config};
use loadgen::models::{Io, Model};
use loadgen::progress::Shared;
use loadgen::record::ErrorClass;
use loadgen::run::build_plan;
use loadgen::worker;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Plan: 1 s warm-up + 4 s measured, plus loadgen's 20 ms start lead.
const PLAN: Duration = Duration::from_millis(5_020);
/// What loadgen may take past its plan to stop and write its JSON.
const GRACE: Duration = Duration::from_secs(1);

/// A ramp of sessions like stressgrid-overload's, compressed: 0 -> 400
/// users over 3 s (warm-up included), then 2 s at 400; 100 requests a
/// session 90 ms apart, looped; a timeout longer than the run.
fn sessions_ramp(url: &str, extra: &[&str]) -> Outcome {
    let mut args = vec![
        url, "--users", "0", "--stages", "3s:400,2s:400", "--session-requests", "100", "--loop-sessions",
        "--think", "90ms", "--warmup", "1s", "-d", "4s", "--timeout", "5s", "-t", "2",
    ];
    args.extend_from_slice(extra);
    loadgen(&args)
}

fn assert_on_time(o: &Outcome, what: &str) {
    assert_eq!(o.code, 0, "{what}: {}", o.stderr);
    assert!(o.wall <= PLAN + GRACE, "{what}: loadgen took {:?} for a {PLAN:?} plan", o.wall);
}

/// A thread-per-connection server whose connections `stalled` (in the order
/// accepted) read their requests and never answer; the others answer at once.
fn stalls_some(stalled: std::ops::Range<usize>) -> TestServer {
    let seen = Arc::new(AtomicUsize::new(0));
    serve(move |s, c| {
        let k = seen.fetch_add(1, Ordering::SeqCst);
        let mut r = Requests::new(s);
        while r.next(c).is_some() {
            if !stalled.contains(&k) && r.stream.write_all(&ok_response("x")).is_err() {
                return;
            }
        }
    })
}

fn a_server_stalling_64_of_400_connections_does_not_overrun_the_plan() {
    // users 200..264 arrive about 1.5 s in, after the warm-up: their requests are measured
    let srv = stalls_some(200..264);
    let o = sessions_ramp(&srv.url("/"), &[]);
    assert_on_time(&o, "64 stalled connections");
    assert!(o.summary("ok") > 0, "the other connections were answered");
    // each stalled user's one request counts at its age, as unanswered
    assert_eq!(o.summary("unanswered"), 64, "{}", o.json["summary"]);
    assert!(o.summary("unanswered_oldest_us") >= 2_000_000, "{}", o.json["summary"]);
}

fn a_server_that_accepts_and_never_reads_does_not_overrun_the_plan() {
    let srv = serve(|s, _| {
        std::thread::sleep(Duration::from_secs(20));
        drop(s);
    });
    assert_on_time(&sessions_ramp(&srv.url("/"), &[]), "never reads");
}

fn a_server_that_drips_bytes_does_not_overrun_the_plan() {
    let srv = serve(|s, c| {
        let mut r = Requests::new(s);
        if r.next(c).is_none() {
            return;
        }
        for b in ok_response("0123456789").iter().cycle() {
            if r.stream.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    assert_on_time(&sessions_ramp(&srv.url("/"), &[]), "drips bytes");
}

fn a_server_that_resets_does_not_overrun_the_plan() {
    let srv = serve(|mut s: TcpStream, _| {
        let mut b = [0u8; 64];
        let _ = s.read(&mut b);
        // SO_LINGER 0: close sends a reset
        reset_on_close(&s);
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Len");
    });
    assert_on_time(&sessions_ramp(&srv.url("/"), &[]), "resets");
}

/// Like rust-threadpool: one thread accepts every connection into a queue;
/// `workers` threads each serve one connection until it goes idle.
fn thread_pool(workers: usize, delay: Duration) -> TestServer {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let counters = Arc::new(Counters::default());
    let (tx, rx) = std::sync::mpsc::channel::<TcpStream>();
    let rx = Arc::new(std::sync::Mutex::new(rx));
    for _ in 0..workers {
        let (rx, c) = (rx.clone(), counters.clone());
        std::thread::spawn(move || loop {
            let Ok(s) = rx.lock().unwrap().recv() else { return };
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let mut r = Requests::new(s);
            while r.next(&c).is_some() {
                std::thread::sleep(delay);
                if r.stream.write_all(&ok_response("x")).is_err() {
                    break;
                }
            }
        });
    }
    let c = counters.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            c.accepted.fetch_add(1, Ordering::SeqCst);
            if tx.send(s).is_err() {
                return;
            }
        }
    });
    TestServer { port, counters }
}

fn a_thread_pool_server_busy_with_64_sessions_does_not_overrun_the_plan() {
    let srv = thread_pool(64, Duration::ZERO);
    assert_on_time(&sessions_ramp(&srv.url("/"), &[]), "64-thread pool");
}

/// A load model whose every request costs its loop turn `per_request` (as
/// connects do when the client's ephemeral ports run short: 2 ms each were
/// seen against rust-threadpool at 10,000 users) and which starts requests
/// for as long as the machinery lets it, up to `cap`.
struct SlowTurn {
    per_request: Duration,
    cap: usize,
    started: usize,
}

impl Model for SlowTurn {
    fn start<I: Io>(&mut self, _io: &mut I, _now: Instant) {}
    fn tick<I: Io>(&mut self, io: &mut I, now: Instant) {
        while self.started < self.cap {
            let Some(measured) = io.take(now) else { return };
            self.started += 1;
            let i = io.add_slot();
            if io.connect(i, now) {
                io.send(i, now, now, measured);
            }
            std::thread::sleep(self.per_request);
        }
    }
    fn wake_at(&self, now: Instant) -> Option<Instant> {
        Some(now)
    }
    fn on_response<I: Io>(&mut self, _io: &mut I, _i: usize, _now: Instant, _reuse: bool) -> bool {
        true
    }
    fn on_closed<I: Io>(&mut self, _io: &mut I, _i: usize, _now: Instant, _failure: Option<ErrorClass>) {}
    fn exhausted(&self, _now: Instant) -> bool {
        false
    }
}

fn one_long_loop_turn_stops_at_the_plan_end() {
    // a listener that never accepts: connects complete in its backlog, nothing answers
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/", listener.local_addr().unwrap().port());
    let cfg = Config::from_args(Args::try_parse_from(["loadgen", url.as_str(), "-d", "1s", "--io", io()]).unwrap()).unwrap();
    let plan = build_plan(&cfg, Instant::now()).unwrap();
    let end = plan.end.unwrap();
    // 3,000 requests of 1 ms each: a 3 s turn for a 1 s plan
    let model = SlowTurn { per_request: Duration::from_millis(1), cap: 3000, started: 0 };
    let rec = worker::run(&plan, &Shared::new(1), 0, None, model).unwrap();
    let over = Instant::now().saturating_duration_since(end);
    assert!(over < Duration::from_millis(300), "the worker ran {over:?} past its plan");
    assert_eq!(rec.errors[ErrorClass::Connect as usize], 0, "the end is not a connect error");
    drop(listener);
}

per_backend!(
    a_server_stalling_64_of_400_connections_does_not_overrun_the_plan,
    a_server_that_accepts_and_never_reads_does_not_overrun_the_plan,
    a_server_that_drips_bytes_does_not_overrun_the_plan,
    a_server_that_resets_does_not_overrun_the_plan,
    a_thread_pool_server_busy_with_64_sessions_does_not_overrun_the_plan,
    one_long_loop_turn_stops_at_the_plan_end,
);

/// Noise (issue 31) ends with the plan too: 1 s warm-up + 1 s measured of
/// light open load, beside 200 noise connections of each shape at once, at
/// a server that accepts and never reads (slowloris's bytes, garbage's
/// requests and slow readers' requests go unanswered) and at a listener
/// that never accepts (connects past its backlog hang).
#[test]
fn noise_of_every_shape_ends_on_time() {
    const NOISE_PLAN: Duration = Duration::from_millis(2_020);
    let never_reads = serve(|s, _| {
        std::thread::sleep(Duration::from_secs(20));
        drop(s);
    });
    let never_accepts = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let backlog_url = format!("http://127.0.0.1:{}/", never_accepts.local_addr().unwrap().port());
    let urls = [(never_reads.url("/"), true), (backlog_url, false)];
    let backend = backend();
    std::thread::scope(|s| {
        for (url, accepts) in &urls {
            for shape in ["slowloris", "idle", "garbage", "slow-reader"] {
                s.spawn(move || {
                    set_io(backend);
                    let o = loadgen(&[url, "--rate", "20", "--warmup", "1s", "-d", "1s", "--noise", shape, "--noise-connections", "200", "--noise-interval", "100ms"]);
                    assert_eq!(o.code, 0, "{shape}: {}", o.stderr);
                    assert!(o.wall <= NOISE_PLAN + GRACE, "{shape} at {url}: loadgen took {:?} for a {NOISE_PLAN:?} plan", o.wall);
                    // the backlog is shared by all eight runs: some get none of it
                    if *accepts {
                        assert!(o.json["noise"]["opened"].as_u64().unwrap() > 0, "{shape}: {}", o.json["noise"]);
                    }
                });
            }
        }
    });
}
