//! Per-thread measurements, merged once at the end of a run.
//!
//! Owns the request figures every run has (latency histograms, counts, error
//! classes, the timeline). A layer below the load models that keeps figures of
//! its own (TLS handshakes, later HTTP/2 streams) hands them over as an opaque
//! `LayerStats` object: the recorder merges it across threads without knowing
//! its type, and the output asks for it back by type. May use: `histo`,
//! `fairness`; nothing of the transport, protocol or model layers.

use crate::fairness::Fairness;
use crate::histo::{self, Hist, Sparse};
use std::any::Any;
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// Figures a layer keeps beside the recorder's own (the transport's TLS
/// handshakes): merged per thread like the rest, serialized by whoever knows
/// the concrete type. Touched per connection, never per request.
pub trait LayerStats: Any + Debug + Send {
    /// Add another thread's figures (of the same type) to these.
    fn merge(&mut self, other: &dyn LayerStats) -> Result<(), String>;
    fn clone_box(&self) -> Box<dyn LayerStats>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl Clone for Box<dyn LayerStats> {
    fn clone(&self) -> Box<dyn LayerStats> {
        self.clone_box()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    Connect = 0,
    Read = 1,
    Write = 2,
    Timeout = 3,
    Status = 4,
    Malformed = 5,
}

/// Number of error classes: the length of every per-class array.
pub const CLASSES: usize = ErrorClass::ALL.len();

impl ErrorClass {
    pub const ALL: [ErrorClass; ErrorClass::Malformed as usize + 1] = [
        ErrorClass::Connect,
        ErrorClass::Read,
        ErrorClass::Write,
        ErrorClass::Timeout,
        ErrorClass::Status,
        ErrorClass::Malformed,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Read => "read",
            ErrorClass::Write => "write",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Status => "status",
            ErrorClass::Malformed => "malformed",
        }
    }
}

/// One second of the run. Its latencies (answered and timed-out requests
/// that ended in it) are kept sparse once the second is over, so a long run's
/// timeline stays small.
#[derive(Debug, Clone)]
pub struct Bucket {
    pub completed: u64,
    pub ok: u64,
    pub errors: [u64; CLASSES],
    pub hist: Sparse,
    pub active_connections: u64,
    pub active_users: u64,
}

impl Bucket {
    fn new() -> Bucket {
        Bucket { completed: 0, ok: 0, errors: [0; CLASSES], hist: Sparse::new(), active_connections: 0, active_users: 0 }
    }
}

/// How long a request still in flight at the end must have waited to count as unanswered.
pub const STALLED_AFTER: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct Recorder {
    pub measure_start: Instant,
    /// Corrected latency (from the intended send time) of answered requests.
    pub answered: Hist,
    /// Corrected latency of due requests that got no answer: timed out (at
    /// their timeout), in flight at the end or never sent (at their age when
    /// the run ended). With `answered`: every due request.
    pub unanswered_hist: Hist,
    /// Uncorrected (from the actual send) — kept for open load only.
    pub service: Option<Hist>,
    pub responses: u64,
    pub ok: u64,
    pub errors: [u64; CLASSES],
    /// Index = status code (0..=999).
    pub status: Vec<u64>,
    pub bytes_read: u64,
    pub connections_opened: u64,
    pub missed_sends: u64,
    /// Requests sent and still waiting for their response at the end.
    pub in_flight: u64,
    /// Open load: requests due but still waiting for a connection at the end.
    pub never_sent: u64,
    /// Open load: requests due while the backlog was full, never sent.
    pub dropped: u64,
    /// Requests that, when the run ended, had waited at least STALLED_AFTER
    /// for a response (a server that holds connections without serving them).
    pub unanswered: u64,
    /// Age of the oldest of those, from its intended send time.
    pub unanswered_oldest_us: u64,
    pub timeline: Vec<Bucket>,
    /// 2xx/3xx responses per second of the `--warmup` before the measured window (second i covers
    /// [i, i+1) s after `warmup_start`): what a harness judges steady state from when its warm-up must
    /// keep its connections (opening them costs, as TLS handshakes do), so it cannot be rounds of runs.
    pub warmup_ok: Vec<u64>,
    pub warmup_start: Instant,
    /// Completions per connection slot (closed load and sessions), set when the run ends.
    pub fairness: Option<Fairness>,
    /// The transport's own figures (https: handshakes and their failures).
    pub transport: Option<Box<dyn LayerStats>>,
    /// The current second's latencies, dense while it lasts.
    current: Hist,
    current_sec: usize,
    /// p99 of the last completed second (progress line).
    pub last_p99_us: u64,
}

impl Recorder {
    pub fn new(measure_start: Instant, with_service: bool) -> Recorder {
        Recorder {
            measure_start,
            answered: histo::new_hist(),
            unanswered_hist: histo::new_hist(),
            service: with_service.then(histo::new_hist),
            responses: 0,
            ok: 0,
            errors: [0; CLASSES],
            status: vec![0; 1000],
            bytes_read: 0,
            connections_opened: 0,
            missed_sends: 0,
            in_flight: 0,
            never_sent: 0,
            dropped: 0,
            unanswered: 0,
            unanswered_oldest_us: 0,
            timeline: vec![],
            warmup_ok: vec![],
            warmup_start: measure_start,
            fairness: None,
            transport: None,
            current: histo::new_bucket_hist(),
            current_sec: 0,
            last_p99_us: 0,
        }
    }

    /// The bucket of `now`, creating buckets up to it; a new second stores
    /// the last one's latencies sparse.
    #[inline]
    fn bucket(&mut self, now: Instant) -> usize {
        let i = now.saturating_duration_since(self.measure_start).as_secs() as usize;
        if i > self.current_sec {
            self.end_second();
            self.current_sec = i;
        }
        while self.timeline.len() <= i {
            self.timeline.push(Bucket::new());
        }
        i
    }

    fn end_second(&mut self) {
        if self.current.is_empty() {
            return;
        }
        self.last_p99_us = self.current.value_at_quantile(0.99);
        if let Some(b) = self.timeline.get_mut(self.current_sec) {
            b.hist = histo::to_sparse(&self.current);
        }
        self.current.reset();
    }

    #[inline]
    fn record_in_second(&mut self, i: usize, lat: u64) {
        if i == self.current_sec {
            histo::record(&mut self.current, lat);
        } else {
            // an earlier second (the clock is monotonic, so only by a caller's older `now`)
            self.timeline[i].hist.push((lat.clamp(histo::LOWEST_US, histo::HIGHEST_US) as u32, 1));
        }
    }

    /// Index of the current second, creating buckets up to it.
    pub fn touch(&mut self, now: Instant, active_connections: u64, active_users: u64) -> usize {
        let i = self.bucket(now);
        let b = &mut self.timeline[i];
        b.active_connections = active_connections;
        b.active_users = active_users;
        i
    }

    /// A response arrived. `latency` is from the intended send time, `service`
    /// from the actual send.
    #[inline]
    pub fn response(&mut self, now: Instant, status: u16, latency: Duration, service: Duration) {
        let lat = latency.as_micros() as u64;
        histo::record(&mut self.answered, lat);
        if let Some(s) = &mut self.service {
            histo::record(s, service.as_micros() as u64);
        }
        self.responses += 1;
        self.status[(status as usize).min(999)] += 1;
        let ok = (200..400).contains(&status);
        if ok {
            self.ok += 1;
        } else {
            self.errors[ErrorClass::Status as usize] += 1;
        }
        let i = self.bucket(now);
        self.record_in_second(i, lat);
        let b = &mut self.timeline[i];
        b.completed += 1;
        if ok {
            b.ok += 1;
        } else {
            b.errors[ErrorClass::Status as usize] += 1;
        }
    }

    /// A response to a request of the warm-up (not measured): counted per second only.
    #[inline]
    pub fn warmup_response(&mut self, now: Instant, status: u16) {
        if !(200..400).contains(&status) {
            return;
        }
        let i = now.saturating_duration_since(self.warmup_start).as_secs() as usize;
        if self.warmup_ok.len() <= i {
            self.warmup_ok.resize(i + 1, 0);
        }
        self.warmup_ok[i] += 1;
    }

    /// A request ended without a response.
    pub fn error(&mut self, now: Instant, class: ErrorClass) {
        self.errors[class as usize] += 1;
        let i = self.bucket(now);
        let b = &mut self.timeline[i];
        b.completed += 1;
        b.errors[class as usize] += 1;
    }

    /// A request timed out after `latency` (from its intended send time):
    /// an error, and a latency it took at least.
    pub fn timeout(&mut self, now: Instant, latency: Duration) {
        self.error(now, ErrorClass::Timeout);
        let lat = latency.as_micros() as u64;
        histo::record(&mut self.unanswered_hist, lat);
        let i = self.bucket(now);
        self.record_in_second(i, lat);
    }

    /// `n` due requests without an answer when the run ended, `age` old.
    pub fn unserved(&mut self, age: Duration, n: u64) {
        let us = (age.as_micros() as u64).clamp(histo::LOWEST_US, histo::HIGHEST_US);
        let _ = self.unanswered_hist.record_n(us, n);
    }

    /// The run is over: store the last second.
    pub fn finish(&mut self) {
        self.end_second();
    }

    /// The transport's figures, if they are a `T`.
    pub fn transport_stats<T: LayerStats>(&self) -> Option<&T> {
        self.transport.as_deref().and_then(|s| s.as_any().downcast_ref())
    }

    /// Corrected latency of every due request.
    pub fn latency(&self) -> Hist {
        let mut h = self.answered.clone();
        let _ = h.add(&self.unanswered_hist);
        h
    }

    /// Requests that ended (a response of any status, or a transport error).
    pub fn requests(&self) -> u64 {
        self.responses + self.transport_errors()
    }

    /// Every request that was due: ended, in flight at the end, never sent.
    pub fn due(&self) -> u64 {
        self.requests() + self.in_flight + self.never_sent + self.dropped
    }

    pub fn transport_errors(&self) -> u64 {
        self.errors.iter().sum::<u64>() - self.errors[ErrorClass::Status as usize]
    }

    pub fn merge(&mut self, o: &Recorder) -> Result<(), String> {
        histo::merge(&mut self.answered, &o.answered)?;
        histo::merge(&mut self.unanswered_hist, &o.unanswered_hist)?;
        if let (Some(a), Some(b)) = (&mut self.service, &o.service) {
            histo::merge(a, b)?;
        }
        self.responses += o.responses;
        self.ok += o.ok;
        for i in 0..CLASSES {
            self.errors[i] += o.errors[i];
        }
        for (a, b) in self.status.iter_mut().zip(&o.status) {
            *a += b;
        }
        self.bytes_read += o.bytes_read;
        self.connections_opened += o.connections_opened;
        self.missed_sends += o.missed_sends;
        self.in_flight += o.in_flight;
        self.never_sent += o.never_sent;
        self.dropped += o.dropped;
        self.unanswered += o.unanswered;
        self.unanswered_oldest_us = self.unanswered_oldest_us.max(o.unanswered_oldest_us);
        // threads own disjoint slots: their figures add up
        match (&mut self.fairness, &o.fairness) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.fairness = Some(b.clone()),
            _ => {}
        }
        match (&mut self.transport, &o.transport) {
            (Some(a), Some(b)) => a.merge(b.as_ref())?,
            (None, Some(b)) => self.transport = Some(b.clone()),
            _ => {}
        }
        if self.warmup_ok.len() < o.warmup_ok.len() {
            self.warmup_ok.resize(o.warmup_ok.len(), 0);
        }
        for (a, b) in self.warmup_ok.iter_mut().zip(&o.warmup_ok) {
            *a += b;
        }
        while self.timeline.len() < o.timeline.len() {
            self.timeline.push(Bucket::new());
        }
        for (a, b) in self.timeline.iter_mut().zip(&o.timeline) {
            a.completed += b.completed;
            a.ok += b.ok;
            for i in 0..CLASSES {
                a.errors[i] += b.errors[i];
            }
            a.hist.extend_from_slice(&b.hist);
            a.active_connections += b.active_connections;
            a.active_users += b.active_users;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_merge() {
        let t0 = Instant::now();
        let mut a = Recorder::new(t0, true);
        let mut b = Recorder::new(t0, true);
        a.response(t0, 200, Duration::from_micros(100), Duration::from_micros(50));
        a.response(t0 + Duration::from_millis(1500), 500, Duration::from_micros(300), Duration::from_micros(300));
        b.error(t0 + Duration::from_millis(2500), ErrorClass::Timeout);
        b.timeout(t0 + Duration::from_millis(2600), Duration::from_secs(2));
        b.unserved(Duration::from_secs(3), 4);
        a.finish();
        b.finish();
        a.merge(&b).unwrap();
        assert_eq!(a.responses, 2);
        assert_eq!(a.ok, 1);
        assert_eq!(a.requests(), 4);
        assert_eq!(a.errors[ErrorClass::Status as usize], 1);
        assert_eq!(a.errors[ErrorClass::Timeout as usize], 2);
        assert_eq!(a.answered.len(), 2);
        assert_eq!(a.latency().len(), 2 + 1 + 4, "answered, timed out, unserved");
        assert_eq!(a.latency().max(), a.latency().highest_equivalent(3_000_000));
        assert_eq!(a.timeline.len(), 3);
        assert_eq!(a.timeline[1].errors[ErrorClass::Status as usize], 1);
        assert_eq!(a.timeline[2].completed, 2);
        let mut h = histo::new_bucket_hist();
        histo::add_sparse(&mut h, &a.timeline[2].hist);
        assert_eq!(h.len(), 1, "the timed-out request in its second");
        assert!(h.value_at_quantile(0.5) >= 1_990_000);
        assert_eq!(a.service.as_ref().unwrap().len(), 2);
    }

    #[test]
    fn warmup_seconds_count_successes_apart_from_the_measured_window() {
        let t0 = Instant::now();
        let measure = t0 + Duration::from_secs(3);
        let mut a = Recorder::new(measure, false);
        a.warmup_start = t0;
        let mut b = a.clone();
        a.warmup_response(t0 + Duration::from_millis(100), 200);
        a.warmup_response(t0 + Duration::from_millis(2100), 200);
        a.warmup_response(t0 + Duration::from_millis(2200), 503);
        b.warmup_response(t0 + Duration::from_millis(2900), 304);
        a.merge(&b).unwrap();
        assert_eq!(a.warmup_ok, vec![1, 0, 2], "per second of the warm-up; a 503 is not a success");
        assert_eq!(a.responses, 0, "warm-up responses stay out of the measured figures");
        assert!(a.timeline.is_empty());
    }
}
