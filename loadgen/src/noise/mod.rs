//! Noise: misbehaving clients beside the legitimate load (issue 31), from
//! connections of their own, on the same clock and plan. One thread per
//! process runs them on its own small epoll loop (`driver`), so the workers'
//! request path is untouched; what the noise saw is counted here, never in
//! the legitimate histograms.

mod driver;
mod garbage;
mod rapid_reset;
mod sock;

use crate::units::flag_duration;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the noise connections misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A request line, then one byte of an endless header every interval.
    Slowloris,
    /// Connected and silent.
    Idle,
    /// Malformed requests, one after another, as fast as the server answers.
    Garbage,
    /// A large response read at a few KB/s.
    SlowReader,
    /// HTTP/2 streams opened and reset at once, in bursts (h2c).
    RapidReset,
}

impl Shape {
    pub const ALL: [Shape; 5] = [Shape::Slowloris, Shape::Idle, Shape::Garbage, Shape::SlowReader, Shape::RapidReset];

    pub fn name(self) -> &'static str {
        match self {
            Shape::Slowloris => "slowloris",
            Shape::Idle => "idle",
            Shape::Garbage => "garbage",
            Shape::SlowReader => "slow-reader",
            Shape::RapidReset => "rapid-reset",
        }
    }

    pub fn parse(s: &str) -> Result<Shape, String> {
        Shape::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("--noise `{s}` must be slowloris, idle, garbage, slow-reader or rapid-reset"))
    }
}

/// The noise of one process (its shard's share of the connections).
#[derive(Debug, Clone)]
pub struct NoiseConfig {
    pub shape: Shape,
    /// Connections this process holds at once.
    pub connections: u64,
    /// Slowloris: the gap between header bytes.
    pub interval: Duration,
    /// Slow reader: bytes per second read on each connection.
    pub read_rate: u64,
    /// Slow reader: the request target.
    pub path: String,
    /// The Host header value.
    pub authority: String,
    /// Slow reader: how long a request may wait for the first byte of its
    /// answer (the legitimate --timeout).
    pub timeout: Duration,
    /// How long a connect may take (the legitimate --connect-timeout).
    pub connect_timeout: Duration,
    /// How long the noise runs before the legitimate load starts.
    pub lead: Duration,
    /// Rapid reset: the header block every stream sends.
    pub h2_block: Vec<u8>,
}

/// The --noise flags (flattened into the command line).
#[derive(clap::Args, Debug, Clone)]
pub struct NoiseArgs {
    /// Noise beside the load, from connections of its own, on the same clock:
    /// slowloris (a request line, then one header byte every
    /// --noise-interval, never finished), idle (connected, silent), garbage
    /// (malformed requests, one after another: a missing path, a bad method,
    /// a Content-Length with no body, 256 binary bytes, Transfer-Encoding
    /// with Content-Length), slow-reader (--noise-path read at
    /// --noise-read-rate) or rapid-reset (h2c: every --noise-interval, 100
    /// streams of GET --noise-path each reset at once, CVE-2023-44487).
    /// Counted apart, in the JSON's "noise"
    #[arg(long)]
    pub noise: Option<String>,
    /// Noise connections held at once (a shard holds its share); one that
    /// ends is replaced after 100 ms [default: 256]
    #[arg(long, value_name = "N")]
    pub noise_connections: Option<usize>,
    /// Slowloris: the gap between header bytes [default: 2s]; rapid reset:
    /// between bursts [default: 10ms]
    #[arg(long, value_name = "DURATION")]
    pub noise_interval: Option<String>,
    /// Slow reader: bytes per second read on each connection [default: 4096]
    #[arg(long, value_name = "BYTES_PER_S")]
    pub noise_read_rate: Option<u64>,
    /// Slow reader: what it requests, keep-alive, again once read [default:
    /// /delay?bytes=1048576]; rapid reset: what each stream asks [default: /]
    #[arg(long, value_name = "PATH")]
    pub noise_path: Option<String>,
    /// How long the noise runs before the legitimate load (its warm-up
    /// included) starts, so the bad clients hold their connections when the
    /// good ones arrive; without it both connect at once and a bounded
    /// server serves whichever came first [default: 0s]
    #[arg(long, value_name = "DURATION")]
    pub noise_lead: Option<String>,
}

impl NoiseConfig {
    /// The noise `a` asks for (None without --noise) at the legitimate
    /// target's `authority`, with its `timeout` and `connect_timeout`.
    /// `share` is this shard's part of --noise-connections.
    pub fn from_args(
        a: &NoiseArgs,
        authority: &str,
        timeout: Duration,
        connect_timeout: Duration,
        share: impl Fn(u64) -> u64,
    ) -> Result<Option<NoiseConfig>, String> {
        let Some(shape) = a.noise.as_deref() else {
            let given = [
                (a.noise_connections.is_some(), "--noise-connections"),
                (a.noise_interval.is_some(), "--noise-interval"),
                (a.noise_read_rate.is_some(), "--noise-read-rate"),
                (a.noise_path.is_some(), "--noise-path"),
                (a.noise_lead.is_some(), "--noise-lead"),
            ];
            return match given.iter().find(|g| g.0) {
                Some((_, flag)) => Err(format!("{flag} needs --noise SHAPE (slowloris, idle, garbage, slow-reader or rapid-reset)")),
                None => Ok(None),
            };
        };
        let shape = Shape::parse(shape)?;
        let connections = a.noise_connections.unwrap_or(256);
        if connections == 0 {
            return Err("--noise-connections must be at least 1".into());
        }
        let rapid = shape == Shape::RapidReset;
        let interval_flag = a.noise_interval.as_deref().unwrap_or(if rapid { rapid_reset::DEFAULT_INTERVAL } else { "2s" });
        let interval = flag_duration("--noise-interval", interval_flag)?;
        if interval < Duration::from_millis(1) {
            return Err(format!("--noise-interval {interval_flag} must be at least 1ms"));
        }
        let read_rate = a.noise_read_rate.unwrap_or(4096);
        if read_rate == 0 {
            return Err("--noise-read-rate must be at least 1 byte/s".into());
        }
        let path = a.noise_path.as_deref().unwrap_or(if rapid { rapid_reset::DEFAULT_PATH } else { "/delay?bytes=1048576" });
        if !path.starts_with('/') || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!("--noise-path `{path}` must start with / and hold no spaces or control bytes"));
        }
        let lead_flag = a.noise_lead.as_deref().unwrap_or("0s");
        let lead = flag_duration("--noise-lead", lead_flag)?;
        if lead > Duration::from_secs(60) {
            return Err(format!("--noise-lead {lead_flag} must be at most 60s"));
        }
        Ok(Some(NoiseConfig {
            lead,
            shape,
            connections: share(connections as u64),
            interval,
            read_rate,
            path: path.to_string(),
            authority: authority.to_string(),
            timeout,
            connect_timeout,
            h2_block: if rapid { rapid_reset::header_block(path, authority) } else { Vec::new() },
        }))
    }
}

/// Status classes of the answers noise connections got.
pub const CLASSES: [&str; 5] = ["2xx", "3xx", "4xx", "5xx", "other"];

/// What the noise saw. Every connection established ends in exactly one of
/// closed, reset, timeout or open_at_end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub opened: u64,
    pub connect_errors: u64,
    pub held_peak: u64,
    pub held_at_end: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub requests_sent: u64,
    /// By `CLASSES`.
    pub responses: [u64; 5],
    /// The server closed (FIN).
    pub closed: u64,
    /// ECONNRESET or EPIPE.
    pub reset: u64,
    /// loadgen gave up waiting for an answer.
    pub timeout: u64,
    pub open_at_end: u64,
}

impl Counters {
    /// Count an answer with status `code` (0: not an HTTP response).
    pub fn response(&mut self, code: u16) {
        let k = match code {
            200..=299 => 0,
            300..=399 => 1,
            400..=499 => 2,
            500..=599 => 3,
            _ => 4,
        };
        self.responses[k] += 1;
    }
}

#[derive(Debug, Clone)]
pub struct Report {
    pub shape: Shape,
    /// This process's target of connections held.
    pub connections: u64,
    pub counters: Counters,
}

impl Report {
    /// The `"noise"` object of the JSON result.
    pub fn json(&self) -> Value {
        let c = &self.counters;
        let responses: serde_json::Map<String, Value> =
            CLASSES.iter().zip(c.responses).map(|(k, n)| (k.to_string(), json!(n))).collect();
        json!({
            "shape": self.shape.name(),
            "connections": self.connections,
            "opened": c.opened,
            "connect_errors": c.connect_errors,
            "held_peak": c.held_peak,
            "held_at_end": c.held_at_end,
            "bytes_sent": c.bytes_sent,
            "bytes_received": c.bytes_received,
            "requests_sent": c.requests_sent,
            "responses": responses,
            "ended": {"closed": c.closed, "reset": c.reset, "timeout": c.timeout, "open_at_end": c.open_at_end},
        })
    }

    /// One line for the human summary.
    pub fn line(&self) -> String {
        let c = &self.counters;
        let answers: Vec<String> = CLASSES.iter().zip(c.responses).filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
        format!(
            "  Noise      {} × {}: {} opened ({} connect errors), held peak {}, at end {}; {} requests, answers [{}]; ended: closed {}, reset {}, timeout {}",
            self.connections,
            self.shape.name(),
            c.opened,
            c.connect_errors,
            c.held_peak,
            c.held_at_end,
            c.requests_sent,
            answers.join(", "),
            c.closed,
            c.reset,
            c.timeout
        )
    }
}

/// The noise thread: from `start` until `end` (or until `stop` is set,
/// for runs without a planned end), at `addr`.
pub struct Noise {
    handle: JoinHandle<std::io::Result<Report>>,
    stop: Arc<AtomicBool>,
}

impl Noise {
    pub fn spawn(cfg: &NoiseConfig, addr: SocketAddr, start: Instant, end: Option<Instant>) -> std::io::Result<Noise> {
        let stop = Arc::new(AtomicBool::new(false));
        let (cfg, flag) = (cfg.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("loadgen-noise".into())
            .spawn(move || driver::run(&cfg, addr, start, end, &flag))?;
        Ok(Noise { handle, stop })
    }

    /// Stop (if the plan had no end) and collect the counts.
    pub fn finish(self) -> Result<Report, String> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        match self.handle.join() {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(format!("noise: {e}")),
            Err(_) => Err("the noise thread panicked".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(shape: &str, n: usize, interval: &str, rate: u64, path: &str) -> NoiseArgs {
        NoiseArgs {
            noise: Some(shape.into()),
            noise_connections: Some(n),
            noise_interval: Some(interval.into()),
            noise_read_rate: Some(rate),
            noise_path: Some(path.into()),
            noise_lead: None,
        }
    }

    #[test]
    fn flags_validate_and_shard() {
        let s = Duration::from_secs;
        let c = NoiseConfig::from_args(&flags("slow-reader", 10, "2s", 4096, "/delay?bytes=9"), "h:1", s(3), s(4), |n| n / 2);
        let c = c.unwrap().unwrap();
        assert_eq!((c.shape, c.connections, c.interval, c.timeout), (Shape::SlowReader, 5, s(2), s(3)));
        let mut none = flags("idle", 1, "2s", 1, "/");
        none.noise = None;
        let e = NoiseConfig::from_args(&none, "h", s(1), s(1), |n| n).unwrap_err();
        assert!(e.starts_with("--noise-connections needs --noise"), "{e}");
        let none = NoiseArgs { noise: None, noise_connections: None, noise_interval: None, noise_read_rate: None, noise_path: None, noise_lead: None };
        assert!(NoiseConfig::from_args(&none, "h", s(1), s(1), |n| n).unwrap().is_none());
        let mut defaults = none.clone();
        defaults.noise = Some("slowloris".into());
        let d = NoiseConfig::from_args(&defaults, "h", s(1), s(1), |n| n).unwrap().unwrap();
        assert_eq!((d.connections, d.interval, d.read_rate, d.path.as_str()), (256, s(2), 4096, "/delay?bytes=1048576"));
        for bad in [
            flags("loud", 1, "2s", 1, "/"),
            flags("idle", 0, "2s", 1, "/"),
            flags("idle", 1, "soon", 1, "/"),
            flags("idle", 1, "2s", 0, "/"),
            flags("idle", 1, "2s", 1, "x y"),
        ] {
            let e = NoiseConfig::from_args(&bad, "h", s(1), s(1), |n| n).unwrap_err();
            assert!(e.starts_with("--noise") && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn json_has_every_counter() {
        let mut c = Counters { opened: 3, closed: 1, open_at_end: 2, ..Default::default() };
        c.response(404);
        c.response(0);
        c.response(200);
        let j = Report { shape: Shape::Garbage, connections: 3, counters: c }.json();
        assert_eq!(j["shape"], "garbage");
        assert_eq!(j["responses"], json!({"2xx": 1, "3xx": 0, "4xx": 1, "5xx": 0, "other": 1}));
        assert_eq!(j["ended"], json!({"closed": 1, "reset": 0, "timeout": 0, "open_at_end": 2}));
        assert_eq!(j.as_object().unwrap().len(), 11);
    }
}
