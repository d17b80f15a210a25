//! The JSON result (schema `loadgen/1`, see docs/DESIGN.md) and the human summary.

use crate::cli::{Config, Mode};
use crate::histo::{self, fmt_us, Hist};
use crate::record::ErrorClass;
use crate::run::RunResult;
use crate::transport::tls::TlsStats;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

pub const SCHEMA: &str = "loadgen/1";

fn secs(d: Option<std::time::Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_secs_f64()))
}

pub fn config_json(cfg: &Config) -> Value {
    let (open, sessions) = (&cfg.open, &cfg.sessions);
    json!({
        "url": cfg.url,
        "mode": cfg.mode.name(),
        "method": cfg.request.method,
        "headers": cfg.header_flags,
        "body_bytes": match &cfg.request.body {
            None => 0,
            Some(crate::protocol::request::Body::Text(t)) => t.len(),
            Some(crate::protocol::request::Body::Bytes(b)) => b.len(),
        },
        "connections": if cfg.mode == Mode::Closed { json!(cfg.closed.connections) } else { Value::Null },
        "threads": cfg.threads,
        "io": cfg.io.name(),
        "rate": open.rate,
        "poisson": open.poisson,
        "max_connections": if cfg.mode == Mode::Open { json!(open.max_connections) } else { Value::Null },
        "max_backlog": if cfg.mode == Mode::Open { json!(open.max_backlog) } else { Value::Null },
        "send_quantum_us": if cfg.mode == Mode::Open { json!(open.send_quantum.as_micros() as u64) } else { Value::Null },
        "users": sessions.users,
        "ramp_s": secs(sessions.ramp),
        "spawn_rate": sessions.spawn_rate,
        "session_requests": sessions.session_requests,
        "think": sessions.think_flag,
        "think_jitter": sessions.think_jitter_pct,
        "loop_sessions": sessions.loop_sessions,
        "stages": cfg.stages.as_ref().map(|s| s.iter().map(|(d, v)| json!({"duration_s": d, "value": v})).collect::<Vec<_>>()),
        "duration_s": secs(cfg.duration),
        "requests": cfg.requests,
        "pipeline": if cfg.h2.is_some() { 1 } else { cfg.closed.pipeline },
        "protocol": match (cfg.h2.is_some(), cfg.tls.is_some()) {
            (false, _) => "http/1.1",
            (true, true) => "h2",
            (true, false) => "h2c",
        },
        "streams": cfg.h2.map(|_| cfg.streams),
        "h2_window": cfg.h2.map(|o| o.window.unwrap_or(crate::protocol::http2::DEFAULT_WINDOW)),
        "keepalive": cfg.request.keepalive,
        "connect_timeout_s": cfg.connect_timeout.as_secs_f64(),
        "timeout_s": cfg.timeout.as_secs_f64(),
        "warmup_s": cfg.warmup.as_secs_f64(),
        "seed": cfg.base_seed,
        "shard": if cfg.shard.1 > 1 { json!({"index": cfg.shard.0, "count": cfg.shard.1, "seed": cfg.seed()}) } else { Value::Null },
        "start_at": cfg.start_at.map(|t| humantime::format_rfc3339_micros(t).to_string()),
        "tls_ca": cfg.tls.as_ref().map(|t| t.ca.clone()),
        "tls_resume": cfg.tls.as_ref().is_some_and(|t| t.resume),
        "tls_ciphers": cfg.tls.as_ref().map(|t| t.ciphers.clone()),
    })
}

fn per_sec(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        (n as f64 / s * 10.0).round() / 10.0
    } else {
        0.0
    }
}

/// One object per second of the measured window.
fn timeline_json(cfg: &Config, rec: &crate::record::Recorder) -> Vec<Value> {
    let mut second = histo::new_bucket_hist();
    rec
        .timeline
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mut errs = Map::new();
            for c in ErrorClass::ALL {
                errs.insert(c.name().into(), json!(b.errors[c as usize]));
            }
            // the schedule value in the middle of this second
            let t_mid = cfg.warmup.as_secs_f64() + i as f64 + 0.5;
            // this shard's share of the schedule (all of it when not sharded)
            let target = cfg.schedule.as_ref().map(|s| s.value_at(t_mid) / cfg.shard.1 as f64);
            second.reset();
            histo::add_sparse(&mut second, &b.hist);
            let q = |p: f64| if second.is_empty() { 0 } else { second.value_at_quantile(p) };
            json!({
                "t": i + 1,
                "completed": b.completed,
                "ok": b.ok,
                "errors": errs,
                "p50_us": q(0.5), "p90_us": q(0.9), "p99_us": q(0.99),
                "max_us": if second.is_empty() { 0 } else { second.max() },
                "active_connections": b.active_connections,
                "active_users": b.active_users,
                "target_rate": if cfg.mode == Mode::Open { json!(target) } else { Value::Null },
                "target_users": if cfg.mode == Mode::Sessions { json!(target.map(f64::floor)) } else { Value::Null },
                // this second's latencies, so timelines merge exactly across processes
                "hist": histo::encode(&second),
            })
        })
        .collect()
}

pub fn result_json(cfg: &Config, r: &RunResult) -> Value {
    let rec = &r.rec;
    let errors: u64 = rec.errors.iter().sum();
    let mut classes = Map::new();
    for c in ErrorClass::ALL {
        classes.insert(c.name().into(), json!(rec.errors[c as usize]));
    }
    let mut status = Map::new();
    for (code, &n) in rec.status.iter().enumerate() {
        if n > 0 {
            status.insert(code.to_string(), json!(n));
        }
    }
    let latency = rec.latency();
    let timeline = timeline_json(cfg, rec);
    let mut doc = json!({
        "schema": SCHEMA,
        "loadgen_version": crate::VERSION,
        "config": config_json(cfg),
        "started_at": humantime::format_rfc3339_millis(r.started_at).to_string(),
        "started_at_unix_s": r.started_at.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()),
        "start_late_us": r.start_late_us,
        "duration_s": (r.duration_s * 1000.0).round() / 1000.0,
        "interrupted": r.interrupted,
        "summary": {
            "requests": rec.requests(),
            "responses": rec.responses,
            "ok": rec.ok,
            "errors": errors,
            "rps": per_sec(rec.responses, r.duration_s),
            "bytes_read": rec.bytes_read,
            "bytes_per_s": per_sec(rec.bytes_read, r.duration_s),
            "connections_opened": rec.connections_opened,
            "missed_sends": rec.missed_sends,
            "due": rec.due(),
            "in_flight": rec.in_flight,
            "never_sent": rec.never_sent,
            "dropped": rec.dropped,
            "unanswered": rec.unanswered,
            "unanswered_oldest_us": rec.unanswered_oldest_us,
            "latency_us": histo::summarize(&latency),
            "answered_latency_us": histo::summarize(&rec.answered),
            "service_us": rec.service.as_ref().map(histo::summarize),
        },
        "error_classes": classes,
        "status_codes": status,
        "histograms": {
            "latency": histo::encode(&latency),
            "answered": histo::encode(&rec.answered),
            "service": rec.service.as_ref().map(histo::encode),
        },
        // per connection slot (closed load, sessions); null for open load
        "fairness": rec.fairness.as_ref().map(|f| f.json()),
        "timeline": timeline,
        // 2xx/3xx per second of --warmup (empty without one): a harness judges steady state from it
        "warmup_ok": rec.warmup_ok,
        // https: handshakes (counted in the measured window), their latency and failures
        "tls": match (&cfg.tls, rec.transport_stats::<TlsStats>()) {
            (Some(opts), Some(t)) => t.json(opts),
            (Some(opts), None) => TlsStats::default().json(opts),
            _ => Value::Null,
        },
    });
    // only with --noise: the JSON of a run without it is unchanged
    if let (Some(n), Some(m)) = (&r.noise, doc.as_object_mut()) {
        m.insert("noise".into(), n.json());
    }
    doc
}

fn fmt_bytes(b: f64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.2} {}", U[i])
}

fn latency_lines(out: &mut String, name: &str, h: &Hist) {
    if h.is_empty() {
        let _ = writeln!(out, "  {name:<10} (none)");
        return;
    }
    let s = histo::summarize(h);
    let _ = writeln!(
        out,
        "  {name:<10} min {}  mean {}  stdev {}  max {}",
        fmt_us(s.min),
        fmt_us(s.mean as u64),
        fmt_us(s.stdev as u64),
        fmt_us(s.max)
    );
    let _ = writeln!(
        out,
        "  {:<10} p50 {}  p75 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}",
        "",
        fmt_us(s.p50),
        fmt_us(s.p75),
        fmt_us(s.p90),
        fmt_us(s.p99),
        fmt_us(s.p99_9),
        fmt_us(s.p99_99)
    );
}

/// Log-spaced (doubling) bars from the smallest to the largest latency.
pub fn ascii_histogram(h: &Hist) -> String {
    let mut out = String::new();
    if h.is_empty() {
        return out;
    }
    let (lo, hi) = (h.min().max(1), h.max().max(1));
    let mut edges = vec![lo.next_power_of_two() / if lo.is_power_of_two() { 1 } else { 2 }];
    while *edges.last().unwrap_or(&1) <= hi {
        let next = edges.last().unwrap_or(&1).saturating_mul(2);
        edges.push(next);
    }
    // merge pairs until it fits in 16 rows
    while edges.len() > 17 {
        edges = edges.iter().step_by(2).copied().collect();
        if *edges.last().unwrap_or(&0) <= hi {
            let next = edges.last().unwrap_or(&1).saturating_mul(4);
            edges.push(next);
        }
    }
    let total = h.len() as f64;
    // bucket each recorded value once (count_between would double-count
    // histogram bins that straddle an edge)
    let mut counts = vec![0u64; edges.len() - 1];
    for v in h.iter_recorded() {
        let x = h.lowest_equivalent(v.value_iterated_to());
        let k = edges.windows(2).position(|w| x < w[1]).unwrap_or(counts.len() - 1);
        counts[k] += v.count_at_value();
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    for (w, &c) in edges.windows(2).zip(&counts) {
        let bar = "#".repeat(((c as f64 / top) * 40.0).round() as usize);
        let _ = writeln!(
            out,
            "  {:>9} – {:<9} {:>6.2}% |{bar}",
            fmt_us(w[0]),
            fmt_us(w[1]),
            100.0 * c as f64 / total
        );
    }
    out
}

/// The error classes and status codes that occurred.
fn count_lines(out: &mut String, rec: &crate::record::Recorder, errors: u64) {
    if errors > 0 {
        let list: Vec<String> = ErrorClass::ALL
            .iter()
            .filter(|c| rec.errors[**c as usize] > 0)
            .map(|c| format!("{} {}", c.name(), rec.errors[*c as usize]))
            .collect();
        let _ = writeln!(out, "  Errors     {}", list.join(", "));
    }
    let codes: Vec<String> = rec
        .status
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    if !codes.is_empty() {
        let _ = writeln!(out, "  Status     {}", codes.join(", "));
    }
}

/// The load's shape, in words (the summary's first line).
fn shape(cfg: &Config) -> String {
    let (closed, open) = (&cfg.closed, &cfg.open);
    match cfg.mode {
        Mode::Closed => format!(
            "closed load, {} connection(s){}{}",
            closed.connections,
            if closed.pipeline > 1 { format!(", pipeline {}", closed.pipeline) } else { String::new() },
            if cfg.request.keepalive { "" } else { ", new connection per request" }
        ),
        Mode::Open => format!(
            "open load, {} req/s{}{}, up to {} connections",
            open.rate.unwrap_or(0.0),
            if open.poisson { " (Poisson)" } else { "" },
            if cfg.stages.is_some() { " then --stages" } else { "" },
            open.max_connections
        ),
        Mode::Sessions => format!("sessions, {} user(s)", cfg.max_sockets),
    }
}

pub fn summary_text(cfg: &Config, r: &RunResult) -> String {
    let rec = &r.rec;
    let mut out = String::new();
    let shape = shape(cfg);
    let _ = writeln!(out, "loadgen {} — {shape}, {} thread(s) @ {}", crate::VERSION, cfg.threads, cfg.url);
    let errors: u64 = rec.errors.iter().sum();
    let _ = writeln!(
        out,
        "  Requests   {} in {:.2}s = {:.1} responses/s  (ok {}, errors {})",
        rec.requests(),
        r.duration_s,
        per_sec(rec.responses, r.duration_s),
        rec.ok,
        errors
    );
    let _ = writeln!(
        out,
        "  Transfer   {} read = {}/s; {} connection(s) opened",
        fmt_bytes(rec.bytes_read as f64),
        fmt_bytes(per_sec(rec.bytes_read, r.duration_s)),
        rec.connections_opened
    );
    if r.interrupted {
        let _ = writeln!(out, "  Interrupted by a signal: the figures cover the {:.2}s measured", r.duration_s);
    }
    let latency = rec.latency();
    let unserved = !rec.unanswered_hist.is_empty();
    if unserved {
        let _ = writeln!(
            out,
            "  Due        {} request(s): {} ended, {} in flight at the end, {} never sent, {} dropped",
            rec.due(),
            rec.requests(),
            rec.in_flight,
            rec.never_sent,
            rec.dropped
        );
    }
    latency_lines(&mut out, "Latency", &latency);
    if rec.service.is_some() {
        let _ = writeln!(out, "  {:<10} (from intended send time; coordinated-omission corrected)", "");
    }
    if unserved {
        let _ = writeln!(out, "  {:<10} (every due request: timed out at its timeout, unanswered at its age at the end)", "");
        latency_lines(&mut out, "Answered", &rec.answered);
    }
    if let Some(s) = &rec.service {
        latency_lines(&mut out, "Service", s);
        let _ = writeln!(out, "  {:<10} (answered, from actual send time; uncorrected)", "");
        let _ = writeln!(out, "  Missed     {} request(s) not sent on schedule (connection pool exhausted)", rec.missed_sends);
    }
    if rec.unanswered > 0 {
        let _ = writeln!(out, "  Unanswered {} request(s) waiting ≥ 1 s when the run ended, the oldest for {:.2} s",
                         rec.unanswered, rec.unanswered_oldest_us as f64 / 1e6);
    }
    count_lines(&mut out, rec, errors);
    if let Some(f) = &rec.fairness {
        let what = if cfg.mode == Mode::Sessions { "users" } else { "connections" };
        let _ = writeln!(out, "{}", f.line(what));
    }
    if let Some(n) = &r.noise {
        let _ = writeln!(out, "{}", n.line());
    }
    if let (Some(opts), Some(t)) = (&cfg.tls, rec.transport_stats::<TlsStats>()) {
        let _ = writeln!(out, "{}", t.line(opts));
    }
    if !latency.is_empty() {
        let _ = writeln!(out, "  Latency histogram:");
        out.push_str(&ascii_histogram(&latency));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_us(999), "999µs");
        assert_eq!(fmt_us(1500), "1.50ms");
        assert_eq!(fmt_us(2_500_000), "2.50s");
        assert_eq!(fmt_bytes(2048.0), "2.00 KiB");
    }

    #[test]
    fn histogram_bars_cover_every_value() {
        let mut h = histo::new_hist();
        for v in [3u64, 90, 100, 120, 5000, 5100, 70_000] {
            histo::record(&mut h, v);
        }
        let s = ascii_histogram(&h);
        let total: f64 = s
            .lines()
            .map(|l| l.split('%').next().unwrap().split_whitespace().last().unwrap().parse::<f64>().unwrap())
            .sum();
        assert!((total - 100.0).abs() < 0.1, "{s}");
        assert!(s.lines().count() <= 17);
    }
}
