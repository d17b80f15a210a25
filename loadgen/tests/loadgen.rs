//! End-to-end tests: the loadgen binary against tiny servers written here.

#[macro_use]
mod common;

use common::*;
use std::io::Write;
use std::net::{Shutdown, TcpListener};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[test]
fn version_prints_name_and_semver() {
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen")).arg("--version").output().unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert_eq!(s.trim(), format!("loadgen {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn bad_usage_is_one_line_and_exit_2() {
    for args in [
        vec!["https://127.0.0.1/"],
        vec!["http://127.0.0.1:1/", "--bogus"],
        vec!["http://127.0.0.1:1/", "-c", "10000000"],
        vec!["http://127.0.0.1:1/", "--rate", "x"],
        vec!["http://127.0.0.1:1/", "--io", "kqueue"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_loadgen")).args(&args).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("loadgen: "), "{err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen")).args(["http://127.0.0.1:1/", "-c", "10000000"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("open files"));
}

fn exact_request_count_across_threads() {
    let srv = hello_server();
    let o = loadgen(&[&srv.url("/"), "-n", "1237", "-c", "9", "-t", "2"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.summary("requests"), 1237);
    assert_eq!(o.summary("ok"), 1237);
    assert_eq!(o.summary("errors"), 0);
    assert_eq!(srv.counters.requests.load(Ordering::SeqCst), 1237, "server saw exactly N requests");
    assert_eq!(o.json["status_codes"]["200"], 1237);
    assert_eq!(o.json["schema"], "loadgen/1");
    assert_eq!(o.json["config"]["io"], io(), "the backend it ran on");
}

fn keepalive_reuses_connections_and_no_keepalive_does_not() {
    let srv = hello_server();
    let o = loadgen(&[&srv.url("/"), "-n", "300", "-c", "4"]);
    assert_eq!(o.summary("ok"), 300);
    assert_eq!(srv.counters.accepted.load(Ordering::SeqCst), 4);
    assert_eq!(o.summary("connections_opened"), 4);

    let srv = hello_server();
    let o = loadgen(&[&srv.url("/"), "-n", "300", "-c", "4", "--no-keepalive"]);
    assert_eq!(o.summary("ok"), 300, "{}", o.stderr);
    assert_eq!(srv.counters.accepted.load(Ordering::SeqCst), 300, "a connection per request");
    assert_eq!(srv.counters.conn_close_headers.load(Ordering::SeqCst), 300);
}

fn pipelined_requests_are_in_flight_together_and_answered_in_order() {
    // Answers each batch of pipelined requests in one write, alternating
    // Content-Length and chunked framing, with the request's sequence number.
    let srv = serve(|s, c| {
        let mut r = Requests::new(s);
        let mut seq = 0u64;
        while let Some(_head) = r.next(c) {
            seq += 1;
            let body = seq.to_string();
            let resp = if seq.is_multiple_of(2) {
                ok_response(&body)
            } else {
                format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n", body.len()).into_bytes()
            };
            if r.stream.write_all(&resp).is_err() {
                return;
            }
        }
    });
    let o = loadgen(&[&srv.url("/"), "-n", "2000", "-c", "2", "--pipeline", "8"]);
    assert_eq!(o.summary("ok"), 2000, "{}", o.stderr);
    assert_eq!(o.summary("errors"), 0);
    assert_eq!(srv.counters.requests.load(Ordering::SeqCst), 2000);
    let q = srv.counters.max_queued.load(Ordering::SeqCst);
    assert!(q >= 2, "server never saw pipelined requests (max queued {q})");
    assert!(q <= 8, "more than P requests in flight ({q})");
}

fn chunked_bodies_split_across_writes() {
    let srv = serve(|s, c| {
        let mut r = Requests::new(s);
        while r.next(c).is_some() {
            let parts: [&[u8]; 6] = [
                b"HTTP/1.1 200 OK\r\nTransfer-",
                b"Encoding: chunked\r\n\r\n5\r",
                b"\nhello\r\n1",
                b"0;ext=1\r\n0123456789abcdef\r\n0\r\n",
                b"Trailer: x\r\n",
                b"\r\n",
            ];
            for p in parts {
                if r.stream.write_all(p).is_err() {
                    return;
                }
                r.stream.flush().ok();
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    });
    let o = loadgen(&[&srv.url("/"), "-n", "100", "-c", "3"]);
    assert_eq!(o.summary("ok"), 100, "{}", o.stderr);
    assert_eq!(o.summary("errors"), 0);
    assert_eq!(srv.counters.accepted.load(Ordering::SeqCst), 3, "chunked keeps the connection");
}

fn close_delimited_bodies_complete_at_eof() {
    let srv = serve(|s, c| {
        let mut r = Requests::new(s);
        if r.next(c).is_some() {
            let _ = r.stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until the server closes");
        }
        let _ = r.stream.shutdown(Shutdown::Both);
    });
    let o = loadgen(&[&srv.url("/"), "-n", "60", "-c", "3"]);
    assert_eq!(o.summary("ok"), 60, "{}", o.stderr);
    assert_eq!(o.summary("errors"), 0);
    assert_eq!(srv.counters.accepted.load(Ordering::SeqCst), 60);
    assert_eq!(o.summary("bytes_read"), 60 * 73, "every body byte read to EOF");
}

fn stalling_server_shows_in_corrected_but_not_service_latency() {
    // Stalls for 1 s every 2 s: a request arriving in [2k, 2k+1) s is
    // answered at 2k+1 s.
    let t0 = Instant::now();
    let srv = serve(move |s, c| {
        let mut r = Requests::new(s);
        while r.next(c).is_some() {
            let e = t0.elapsed().as_secs_f64();
            if e % 2.0 < 1.0 {
                std::thread::sleep(Duration::from_secs_f64(1.0 - e % 2.0));
            }
            if r.stream.write_all(&ok_response("x")).is_err() {
                return;
            }
        }
    });
    // One connection, as wrk2 holds a fixed set: requests due during a stall
    // wait for it and are sent late.
    let o = loadgen(&[&srv.url("/"), "--rate", "100", "-d", "4s", "--max-connections", "1"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lat = &o.json["summary"]["latency_us"];
    let svc = &o.json["summary"]["service_us"];
    let (p90, s90) = (lat["p90"].as_u64().unwrap(), svc["p90"].as_u64().unwrap());
    assert!(p90 >= 500_000, "corrected p90 {p90} µs should show the 1 s stalls");
    assert!(s90 * 5 < p90, "uncorrected p90 {s90} µs should be far lower than corrected {p90} µs");
    assert!(o.summary("missed_sends") > 50, "requests due during stalls were late");
    assert!(o.json["histograms"]["service"].as_str().unwrap().starts_with("HISTF"));
    // the corrected histogram decodes and agrees with the summary; it holds
    // every due request, the answered-only one every response
    let h = loadgen::histo::decode(o.json["histograms"]["latency"].as_str().unwrap()).unwrap();
    assert_eq!(h.len(), o.summary("due"));
    assert_eq!(h.value_at_quantile(0.9), p90);
    let a = loadgen::histo::decode(o.json["histograms"]["answered"].as_str().unwrap()).unwrap();
    assert_eq!(a.len(), o.summary("responses"));
}

fn server_that_never_answers_times_out_on_time() {
    let srv = serve(|s, c| {
        let mut r = Requests::new(s);
        while r.next(c).is_some() {}
    });
    let o = loadgen(&[&srv.url("/"), "-d", "2s", "-c", "3", "--timeout", "400ms"]);
    assert_eq!(o.code, 0);
    assert!(o.wall < Duration::from_millis(3500), "run took {:?}", o.wall);
    let t = o.errors("timeout");
    assert!((6..=18).contains(&t), "3 connections × ~4 timeouts each, got {t}");
    assert_eq!(o.summary("responses"), 0);
    assert_eq!(o.summary("errors"), t, "only timeouts");
}

fn requests_still_waiting_at_the_end_are_reported_unanswered() {
    // A bounded pool that never gets to these connections: no response, no timeout
    // within the run — the stall must still show in the result.
    let srv = serve(|s, c| {
        let mut r = Requests::new(s);
        while r.next(c).is_some() {}
    });
    let o = loadgen(&[&srv.url("/"), "-d", "2s", "-c", "5", "--timeout", "30s"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.summary("responses"), 0);
    assert_eq!(o.summary("unanswered"), 5);
    let oldest = o.summary("unanswered_oldest_us");
    assert!((1_900_000..6_000_000).contains(&oldest), "oldest waited {oldest} µs");

    // A server that answers: the requests in flight at the end are not stalls.
    let srv = hello_server();
    let o = loadgen(&[&srv.url("/"), "-d", "1s", "-c", "5"]);
    assert!(o.summary("ok") > 100);
    assert_eq!(o.summary("unanswered"), 0);
}

fn resets_and_garbage_are_classified() {
    let reset = serve(|s, c| {
        let mut r = Requests::new(s);
        if r.next(c).is_some() {
            // SO_LINGER 0: close sends RST
            use std::os::fd::AsRawFd;
            let l = libc::linger { l_onoff: 1, l_linger: 0 };
            // SAFETY: setsockopt on a live socket with a correctly sized struct
            unsafe {
                libc::setsockopt(
                    r.stream.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    &l as *const libc::linger as *const libc::c_void,
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
        }
    });
    let o = loadgen(&[&reset.url("/"), "-d", "1s", "-c", "2"]);
    assert_eq!(o.code, 0);
    assert!(o.wall < Duration::from_millis(2500));
    assert!(o.errors("read") + o.errors("write") > 0, "{}", o.json["error_classes"]);
    assert_eq!(o.summary("responses"), 0);
    assert_eq!(o.errors("malformed") + o.errors("timeout"), 0);

    let garbage = serve(|s, c| {
        let mut r = Requests::new(s);
        while r.next(c).is_some() {
            if r.stream.write_all(b"SSH-2.0-OpenSSH_9.2\r\n\r\n").is_err() {
                return;
            }
        }
    });
    let o = loadgen(&[&garbage.url("/"), "-n", "40", "-c", "2"]);
    assert_eq!(o.errors("malformed"), 40, "{}", o.json["error_classes"]);
    assert_eq!(o.summary("requests"), 40);

    let status = serve(|s, c| {
        let mut r = Requests::new(s);
        while r.next(c).is_some() {
            if r.stream.write_all(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n").is_err() {
                return;
            }
        }
    });
    let o = loadgen(&[&status.url("/"), "-n", "25"]);
    assert_eq!((o.errors("status"), o.summary("responses"), o.summary("ok")), (25, 25, 0));
    assert_eq!(o.summary("requests"), 25, "a bad status is still one request");
}

fn refused_connections_are_connect_errors_and_end_on_time() {
    // bind then drop: a port with nothing listening
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/");
    let o = loadgen(&[&url, "-d", "1s", "-c", "2"]);
    assert_eq!(o.code, 0);
    assert!(o.wall < Duration::from_millis(2500));
    assert!(o.errors("connect") > 0);
    assert_eq!(o.summary("errors"), o.errors("connect"));
    let o = loadgen(&[&url, "-n", "77"]);
    assert_eq!(o.errors("connect"), 77, "exactly N attempts, each an error");
}

fn open_load_hits_its_rate_and_follows_stages() {
    let srv = hello_server();
    let o = loadgen(&[&srv.url("/"), "--rate", "300", "-d", "2s"]);
    // the rate is the schedule's (due); how many were answered inside the
    // window is the machine's, so answers get a bound (see two_shards…)
    assert_eq!(o.summary("due"), 600, "300/s for 2 s");
    let n = o.summary("responses");
    assert!(n >= 570, "300/s for 2 s: {n} answered");
    assert_eq!(o.summary("errors"), 0);
    assert_eq!(o.json["timeline"][0]["target_rate"], 300.0);

    // 0 -> 200/s over 1 s (100 requests), then 200/s for 1 s (200 requests)
    let o = loadgen(&[&srv.url("/"), "--rate", "0", "--stages", "1s:200,1s:200", "--poisson"]);
    let n = o.summary("responses") as i64;
    assert!((n - 300).abs() < 75, "ramp gave {n}, expected ~300 (Poisson)");
    let o = loadgen(&[&srv.url("/"), "--rate", "0", "--stages", "1s:200,1s:200"]);
    let n = o.summary("due") as i64;
    assert!((n - 300).abs() <= 2, "ramp was due {n}, expected 300");
    assert!(o.summary("responses") as i64 >= n - 30, "{}", o.json["summary"]);
}

fn sessions_send_k_requests_per_user_with_think_time() {
    let srv = hello_server();
    let o = loadgen(&[
        &srv.url("/"), "--users", "20", "--ramp", "500ms", "--session-requests", "3", "--think", "100ms",
        "--think-jitter", "20", "-d", "2s",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.summary("requests"), 60, "20 users × 3 requests");
    assert_eq!(srv.counters.accepted.load(Ordering::SeqCst), 20, "one connection per session");
    let tl = o.json["timeline"].as_array().unwrap();
    assert!(tl[0]["active_users"].as_u64().unwrap() <= 20);

    // looping sessions reconnect: 10 users, 2 requests per session, no think
    let srv = hello_server();
    let o = loadgen(&[&srv.url("/"), "--users", "10", "--session-requests", "2", "--loop-sessions", "-n", "400"]);
    assert_eq!(o.summary("ok"), 400);
    // 200 full sessions, or fewer plus up to 10 cut short when the budget ran out
    let acc = srv.counters.accepted.load(Ordering::SeqCst);
    assert!((200..=210).contains(&acc), "a new connection every 2 requests, got {acc}");
    assert_eq!(o.summary("connections_opened"), acc as u64);

    // users that finish before -n is used up end the run instead of hanging
    let o = loadgen(&[&srv.url("/"), "--users", "5", "--session-requests", "2", "-n", "1000"]);
    assert_eq!(o.summary("ok"), 10);
    assert!(o.wall < Duration::from_secs(3), "took {:?}", o.wall);
}

fn templates_draw_values_from_the_distribution() {
    use std::sync::Mutex;
    let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let srv = serve(move |s, c| {
        let mut r = Requests::new(s);
        while let Some(head) = r.next(c) {
            let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
            s2.lock().unwrap().push(path);
            if r.stream.write_all(&ok_response("ok")).is_err() {
                return;
            }
        }
    });
    let o = loadgen(&[&srv.url("/delay?ms={uniform:5..7}&bytes=1024"), "-n", "300", "-c", "1"]);
    assert_eq!(o.summary("ok"), 300);
    let seen = seen.lock().unwrap().clone();
    let mut values = std::collections::BTreeSet::new();
    for p in &seen {
        let ms: u32 = p.trim_start_matches("/delay?ms=").trim_end_matches("&bytes=1024").parse().unwrap();
        values.insert(ms);
    }
    assert_eq!(values.into_iter().collect::<Vec<_>>(), vec![5, 6, 7]);
    // same seed, same sequence (one connection, so the order is the send order)
    let seen2 = std::sync::Arc::new(Mutex::new(Vec::new()));
    let s3 = seen2.clone();
    let srv2 = serve(move |s, c| {
        let mut r = Requests::new(s);
        while let Some(head) = r.next(c) {
            s3.lock().unwrap().push(head.split_whitespace().nth(1).unwrap_or("").to_string());
            if r.stream.write_all(&ok_response("ok")).is_err() {
                return;
            }
        }
    });
    loadgen(&[&srv2.url("/delay?ms={uniform:5..7}&bytes=1024"), "-n", "300", "-c", "1"]);
    assert_eq!(*seen2.lock().unwrap(), seen);
}

fn histograms_from_two_processes_merge_exactly() {
    let srv = hello_server();
    let a = loadgen(&[&srv.url("/"), "-n", "500", "-c", "2"]);
    let b = loadgen(&[&srv.url("/"), "-n", "700", "-c", "3"]);
    let mut ha = loadgen::histo::decode(a.json["histograms"]["latency"].as_str().unwrap()).unwrap();
    let hb = loadgen::histo::decode(b.json["histograms"]["latency"].as_str().unwrap()).unwrap();
    let (max_a, max_b) = (ha.max(), hb.max());
    loadgen::histo::merge(&mut ha, &hb).unwrap();
    assert_eq!(ha.len(), 1200);
    assert_eq!(ha.max(), max_a.max(max_b));
    let tl: u64 = a.json["timeline"].as_array().unwrap().iter().map(|b| b["completed"].as_u64().unwrap()).sum();
    assert_eq!(tl, 500, "timeline counts add up to the summary");
}

fn two_shards_start_together_and_split_the_load_exactly() {
    let srv = hello_server();
    let url = srv.url("/");
    let at = std::time::SystemTime::now() + Duration::from_millis(600);
    let at = format!("{:.6}", at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64());
    let runs: Vec<_> = (0..2)
        .map(|i| {
            let (url, at, io) = (url.clone(), at.clone(), backend());
            std::thread::spawn(move || {
                set_io(io);
                loadgen(&[&url, "--rate", "400", "-d", "1s", "--shard", &format!("{i}/2"), "--start-at", &at])
            })
        })
        .collect();
    let outs: Vec<Outcome> = runs.into_iter().map(|h| h.join().unwrap()).collect();
    // The split is the schedule's: each shard is due exactly half of 400/s
    // for 1 s. How many of those were answered inside the second is the
    // machine's: on a loaded 2-core CI runner 197 of 200 were (the rest in
    // flight at the end), so answers get a bound and the split an equality.
    let (mut answered, mut sent) = (0, 0);
    for o in &outs {
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(o.summary("due"), 200, "each shard is due half of 400/s for 1 s");
        let n = o.summary("responses");
        assert!(n >= 180, "most of a shard's 200 requests answered within the second: {n}");
        answered += n;
        sent += o.summary("requests") + o.summary("in_flight");
        // late by a scheduler tick is load; late by the 600 ms lead would be a wake at the wrong instant
        assert!(o.json["start_late_us"].as_u64().unwrap() < 50_000, "woke late: {}", o.json["start_late_us"]);
        assert_eq!(o.json["timeline"][0]["target_rate"], 200.0);
        assert!(o.json["timeline"][0]["hist"].as_str().unwrap().starts_with("HISTF"), "encoded per-second histogram");
    }
    let seen = srv.counters.requests.load(Ordering::SeqCst) as u64;
    assert!((answered..=sent).contains(&seen), "the server saw the shards' sum: {seen}, answered {answered}, sent {sent}");
    assert_eq!(outs[0].json["started_at_unix_s"], outs[1].json["started_at_unix_s"]);
    assert_ne!(outs[0].json["config"]["shard"]["seed"], outs[1].json["config"]["shard"]["seed"]);
    let past = Command::new(env!("CARGO_BIN_EXE_loadgen")).args([&url, "-n", "1", "--start-at", "1000"]).output().unwrap();
    assert_eq!(past.status.code(), Some(2), "an instant in the past is a usage error");
}

per_backend!(
    exact_request_count_across_threads,
    keepalive_reuses_connections_and_no_keepalive_does_not,
    pipelined_requests_are_in_flight_together_and_answered_in_order,
    chunked_bodies_split_across_writes,
    close_delimited_bodies_complete_at_eof,
    stalling_server_shows_in_corrected_but_not_service_latency,
    server_that_never_answers_times_out_on_time,
    requests_still_waiting_at_the_end_are_reported_unanswered,
    resets_and_garbage_are_classified,
    refused_connections_are_connect_errors_and_end_on_time,
    open_load_hits_its_rate_and_follows_stages,
    sessions_send_k_requests_per_user_with_think_time,
    templates_draw_values_from_the_distribution,
    histograms_from_two_processes_merge_exactly,
    two_shards_start_together_and_split_the_load_exactly,
);
