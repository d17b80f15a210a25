//! The live one-line progress display on stderr (only when it is a terminal).

use crate::histo::fmt_us;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Live figures the workers publish for the progress line.
pub struct Shared {
    pub requests: Vec<AtomicU64>,
    pub errors: Vec<AtomicU64>,
    pub p99_us: Vec<AtomicU64>,
    pub stop: AtomicBool,
    /// How late the latest thread woke for the planned start (µs): what
    /// start skew between shards is measured from.
    pub start_late_us: AtomicU64,
}

impl Shared {
    pub fn new(threads: usize) -> Shared {
        let v = || (0..threads).map(|_| AtomicU64::new(0)).collect();
        Shared { requests: v(), errors: v(), p99_us: v(), stop: AtomicBool::new(false), start_late_us: AtomicU64::new(0) }
    }
}

pub struct Progress {
    shared: Arc<Shared>,
    handle: JoinHandle<()>,
}

impl Progress {
    pub fn start(shared: Arc<Shared>, measure_start: Instant, end: Option<Instant>) -> Progress {
        let s = shared.clone();
        let handle = std::thread::spawn(move || {
            let mut last = (Instant::now(), 0u64);
            while !s.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                let now = Instant::now();
                let req: u64 = s.requests.iter().map(|a| a.load(Ordering::Relaxed)).sum();
                let err: u64 = s.errors.iter().map(|a| a.load(Ordering::Relaxed)).sum();
                let p99 = s.p99_us.iter().map(|a| a.load(Ordering::Relaxed)).max().unwrap_or(0);
                let dt = now.duration_since(last.0).as_secs_f64();
                if dt < 0.9 {
                    continue;
                }
                let rate = req.saturating_sub(last.1) as f64 / dt;
                last = (now, req);
                let elapsed = if now < measure_start {
                    format!("warm-up {:.0}s", (measure_start - now).as_secs_f64().ceil())
                } else {
                    let e = (now - measure_start).as_secs_f64();
                    match end {
                        Some(end) => format!("{e:.0}/{:.0}s", (end - measure_start).as_secs_f64()),
                        None => format!("{e:.0}s"),
                    }
                };
                let mut err_out = std::io::stderr().lock();
                let _ = write!(
                    err_out,
                    "\r\x1b[2K[{elapsed}] {req} requests, {rate:.0} req/s, p99 {}, errors {err}",
                    fmt_us(p99)
                );
                let _ = err_out.flush();
            }
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        });
        Progress { shared, handle }
    }

    pub fn stop(self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }
}
