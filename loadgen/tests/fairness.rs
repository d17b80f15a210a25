//! Connection fairness (issue 35): completions per connection slot, against
//! a server that serves every connection and one that starves most of them.

#[macro_use]
mod common;

use common::*;
use serde_json::Value;
use std::io::Write;
use std::net::TcpListener;

fn fairness(o: &Outcome) -> &Value {
    let f = &o.json["fairness"];
    assert!(f.is_object(), "no fairness object: {}; stderr: {}", o.json, o.stderr);
    f
}

fn num(f: &Value, key: &str) -> u64 {
    f[key].as_u64().unwrap_or_else(|| panic!("fairness.{key} missing: {f}"))
}

fn whole_seconds(o: &Outcome) -> usize {
    o.json["duration_s"].as_f64().unwrap().floor() as usize
}

/// Accepts the first `k` connections and serves them (keep-alive), each
/// answer 5 ms after its request; never accepts another, so the rest sit in
/// the listen queue unanswered. The listener is returned so it stays open for
/// the test. The pause sets every served connection's pace: unpaced, the k
/// serving threads share 2 cores with the load generator and the tests beside
/// them, and how the scheduler split them (jain 0.297 against 0.375 in the
/// project's CI of stop 61) is not what the test is about.
fn serves_first(k: usize) -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/", listener.local_addr().unwrap().port());
    let accepting = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        for _ in 0..k {
            let Ok((s, _)) = accepting.accept() else { return };
            std::thread::spawn(move || {
                let c = Counters::default();
                let mut r = Requests::new(s);
                while r.next(&c).is_some() {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    if r.stream.write_all(&ok_response("x")).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (listener, url)
}

fn a_server_that_serves_k_of_c_connections_starves_the_rest() {
    let (c, k) = (8u64, 3u64);
    let (_listener, url) = serves_first(k as usize);
    let o = loadgen(&[&url, "-c", &c.to_string(), "-d", "2s", "--timeout", "500ms"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let f = fairness(&o);
    assert_eq!(num(f, "slots"), c);
    assert_eq!(num(f, "served"), k, "{f}");
    assert_eq!(num(f, "waited_over_timeout"), c - k, "{f}");
    assert_eq!(num(f, "completed_sum"), o.summary("responses"), "without warm-up every response is in the window");
    // k equal slots of c: Jain's index is k/c, never more
    let jain = f["jain"].as_f64().unwrap();
    let ideal = k as f64 / c as f64;
    assert!(jain <= ideal + 1e-9 && jain > ideal * 0.9, "jain {jain}, ideal {ideal}: {f}");
    let sum = num(f, "completed_sum") as f64;
    assert!((f["completed_sum_sq"].as_f64().unwrap() - sum * sum / (c as f64 * jain)).abs() < 1.0);
    // a starved slot waited the whole window
    let window_us = o.json["duration_s"].as_f64().unwrap() * 1e6;
    let longest = num(f, "longest_wait_us") as f64;
    assert!(longest > window_us - 50_000.0 && longest <= window_us + 50_000.0, "{longest} of {window_us} µs");
    let per_s: Vec<u64> = f["served_per_s"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(per_s, vec![k; whole_seconds(&o)], "the k served slots complete every second");
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args([&url, "-c", "4", "-d", "1s", "--timeout", "300ms", "--quiet"])
        .args(io_args())
        .envs(io_env())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    // the k accepted connections are still open and served: the new run's 4 wait in the queue
    assert!(text.contains("Fairness   0 of 4 connections served, Jain – (nothing completed), longest wait 1.0"), "{text}");
}

fn an_even_server_serves_every_slot_every_second() {
    // each answer 5 ms after its request: every connection's pace is the
    // server's, not how the test machine's scheduler shares its cores
    let srv = serve(|s, c| {
        let mut r = Requests::new(s);
        while r.next(c).is_some() {
            std::thread::sleep(std::time::Duration::from_millis(5));
            if r.stream.write_all(&ok_response("x")).is_err() {
                return;
            }
        }
    });
    let o = loadgen(&[&srv.url("/"), "-c", "8", "-t", "2", "-d", "2s"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let f = fairness(&o);
    assert_eq!((num(f, "slots"), num(f, "served"), num(f, "waited_over_timeout")), (8, 8, 0), "{f}");
    assert_eq!(num(f, "completed_sum"), o.summary("responses"));
    let jain = f["jain"].as_f64().unwrap();
    assert!(jain > 0.98 && jain <= 1.0 + 1e-12, "jain {jain}: {f}");
    assert!(num(f, "longest_wait_us") < 500_000, "{f}");
    assert_eq!(f["served_per_s"], serde_json::json!(vec![8; whole_seconds(&o)]));
}

fn pipelined_connections_count_per_connection() {
    let srv = hello_server();
    let o = loadgen(&[&srv.url("/"), "-c", "3", "--pipeline", "4", "-d", "1s"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let f = fairness(&o);
    assert_eq!((num(f, "slots"), num(f, "served")), (3, 3), "{f}");
    assert_eq!(num(f, "completed_sum"), o.summary("responses"));
    assert!(num(f, "completed_sum") > 3 * 4, "{f}");
}

fn sessions_count_users_and_open_load_has_none() {
    let srv = hello_server();
    let o = loadgen(&[&srv.url("/"), "--users", "5", "--think", "10ms", "-d", "1s", "--shard", "0/2"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let f = fairness(&o);
    assert_eq!((num(f, "slots"), num(f, "served")), (3, 3), "shard 0 of 2 has 3 of the 5 users: {f}");
    let o = loadgen(&[&srv.url("/"), "--rate", "50", "-d", "1s"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.json["fairness"].is_null(), "{}", o.json["fairness"]);
}

per_backend!(
    a_server_that_serves_k_of_c_connections_starves_the_rest,
    an_even_server_serves_every_slot_every_second,
    pipelined_connections_count_per_connection,
    sessions_count_users_and_open_load_has_none,
);
