//! Honest numbers (issue 14): every due request counts, no self-made errors,
//! a run can be ended early and still reports.

#[macro_use]
mod common;

use common::*;
use std::io::Write;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Answers the first `n` requests (over all connections), then reads and
/// never answers. The shared slot holds when the stall began.
fn answers_then_stalls(n: usize) -> (TestServer, Arc<Mutex<Option<Instant>>>) {
    let answered = Arc::new(AtomicUsize::new(0));
    let stalled = Arc::new(Mutex::new(None));
    let s2 = stalled.clone();
    let srv = serve(move |s, c| {
        let mut r = Requests::new(s);
        while r.next(c).is_some() {
            let k = answered.fetch_add(1, Ordering::SeqCst) + 1;
            if k > n {
                continue;
            }
            if r.stream.write_all(&ok_response("x")).is_err() {
                return;
            }
            if k == n {
                *s2.lock().unwrap() = Some(Instant::now());
            }
        }
    });
    (srv, stalled)
}

fn hist(o: &Outcome, name: &str) -> loadgen::histo::Hist {
    loadgen::histo::decode(o.json["histograms"][name].as_str().unwrap()).unwrap()
}

fn open_load_against_a_stall_counts_every_due_request() {
    let (srv, stalled) = answers_then_stalls(100);
    let o = loadgen(&[&srv.url("/"), "--rate", "200", "-d", "3s", "--max-connections", "5"]);
    let end = Instant::now();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let stall = end - stalled.lock().unwrap().expect("the server stalled");
    let stall_us = stall.as_micros() as u64;
    let s = &o.json["summary"];
    assert_eq!(o.summary("responses"), 100);
    // due = sent (answered + still in flight) + never sent
    let sent = srv.counters.requests.load(Ordering::SeqCst) as u64;
    assert_eq!(o.summary("in_flight"), 5, "the pool is stuck");
    assert_eq!(sent, 100 + 5);
    assert_eq!(o.summary("due"), sent + o.summary("never_sent"));
    assert_eq!(o.summary("dropped"), 0);
    let due = o.summary("due") as i64;
    assert!((due - 600).abs() <= 2, "200/s for 3 s, got {due}");
    // the oldest due requests waited the whole stall: p99 is (nearly) all of it
    let p99 = s["latency_us"]["p99"].as_u64().unwrap();
    assert!(p99 * 10 >= stall_us * 9, "corrected p99 {p99} µs hides a {stall:?} stall");
    assert!(s["latency_us"]["max"].as_u64().unwrap() + 100_000 >= stall_us);
    let answered_p99 = s["answered_latency_us"]["p99"].as_u64().unwrap();
    assert!(answered_p99 < 100_000, "answered requests were quick: {answered_p99} µs");
    assert_eq!(hist(&o, "latency").len(), o.summary("due"));
    assert_eq!(hist(&o, "answered").len(), 100);
    assert_eq!(o.json["interrupted"], false);
}

fn closed_load_timeouts_sit_in_the_histogram_at_their_timeout() {
    let (srv, _) = answers_then_stalls(50);
    let o = loadgen(&[&srv.url("/"), "-c", "4", "-d", "3s", "--timeout", "1s"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let timeouts = o.errors("timeout");
    assert!(timeouts >= 4, "every connection timed out at least once: {timeouts}");
    assert_eq!(o.summary("errors"), timeouts);
    let h = hist(&o, "latency");
    assert_eq!(h.len(), o.summary("responses") + timeouts + o.summary("in_flight"));
    assert_eq!(h.len(), o.summary("due"));
    let slow = h.count_between(999_000, u64::MAX);
    assert!(slow >= timeouts, "{slow} latencies ≥ 1 s for {timeouts} timeouts");
    assert!(o.json["summary"]["latency_us"]["p99"].as_u64().unwrap() >= 999_000);
    assert!(o.json["summary"]["answered_latency_us"]["p99"].as_u64().unwrap() < 999_000);
    // the timeline's seconds show them too
    let worst = o.json["timeline"].as_array().unwrap().iter().map(|b| b["max_us"].as_u64().unwrap()).max();
    assert!(worst.unwrap() >= 999_000);
}

fn a_full_backlog_drops_requests_and_still_counts_them() {
    let blackhole = serve(|s, c| {
        let mut r = Requests::new(s);
        while r.next(c).is_some() {}
    });
    let o = loadgen(&[&blackhole.url("/"), "--rate", "1000", "-d", "1s", "--max-connections", "2", "--max-backlog", "100"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.summary("in_flight"), 2);
    assert_eq!(o.summary("never_sent"), 100, "the backlog is capped");
    let dropped = o.summary("dropped");
    assert!((890..=900).contains(&dropped), "the rest of 1000 due: {dropped}");
    assert_eq!(o.summary("due"), 2 + 100 + dropped);
    let h = hist(&o, "latency");
    assert_eq!(h.len(), o.summary("due"));
    // dropped requests count at their age at the end: uniform over the second
    let p50 = h.value_at_quantile(0.5);
    assert!((400_000..600_000).contains(&p50), "median age {p50} µs");
}

fn a_refusing_port_backs_off_instead_of_counting_retries() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/");
    let o = loadgen(&[&url, "-d", "2s", "-c", "10"]);
    assert_eq!(o.code, 0);
    let e = o.errors("connect");
    // 10 connections retrying 10, 20, 40 … ms apart: about 8 tries each in 2 s
    assert!((10..=100).contains(&e), "{e} connect errors in 2 s");
    let per_second: Vec<u64> =
        o.json["timeline"].as_array().unwrap().iter().map(|b| b["errors"]["connect"].as_u64().unwrap()).collect();
    assert!(per_second.iter().all(|&n| n <= 80), "{per_second:?}");
}

fn sigint_ends_the_run_and_still_writes_the_json() {
    let srv = hello_server();
    let child = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args([&srv.url("/"), "-c", "2", "-d", "30s", "--json", "-", "--quiet"])
        .args(io_args())
        .envs(io_env())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    // SAFETY: signalling our own child by pid
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "took {:?} to stop", t.elapsed());
    assert_eq!(out.status.code(), Some(130));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON written");
    assert_eq!(json["interrupted"], true);
    let d = json["duration_s"].as_f64().unwrap();
    assert!((0.8..3.0).contains(&d), "measured {d} s");
    assert!(json["summary"]["ok"].as_u64().unwrap() > 0);
}

fn die_with_parent_leaves_no_loadgen_behind() {
    let srv = hello_server();
    let lg = env!("CARGO_BIN_EXE_loadgen");
    let env = io_env().map_or(String::new(), |(k, v)| format!("{k}={v} "));
    let script = format!("{env}'{lg}' '{}' -c 1 -d 20s --quiet --die-with-parent --io {} >/dev/null & echo $!; wait", srv.url("/"), io());
    let mut sh = Command::new("sh").args(["-c", &script]).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(sh.stdout.take().unwrap()), &mut line).unwrap();
    let pid: i32 = line.trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
            .unwrap_or(false)
    };
    assert!(alive(), "loadgen runs");
    sh.kill().unwrap(); // SIGKILL: sh cannot pass anything on
    let _ = sh.wait();
    let t = Instant::now();
    while alive() && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(), "loadgen outlived its parent");
}

per_backend!(
    open_load_against_a_stall_counts_every_due_request,
    closed_load_timeouts_sit_in_the_histogram_at_their_timeout,
    a_full_backlog_drops_requests_and_still_counts_them,
    a_refusing_port_backs_off_instead_of_counting_retries,
    sigint_ends_the_run_and_still_writes_the_json,
    die_with_parent_leaves_no_loadgen_behind,
);
