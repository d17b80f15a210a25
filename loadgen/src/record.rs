//! Per-thread measurements, merged once at the end of a run.

use crate::histo::{self, Hist};
use std::time::{Duration, Instant};

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

/// One second of the run.
#[derive(Debug, Clone)]
pub struct Bucket {
    pub completed: u64,
    pub ok: u64,
    pub errors: [u64; CLASSES],
    pub hist: Hist,
    pub active_connections: u64,
    pub active_users: u64,
}

impl Bucket {
    fn new() -> Bucket {
        Bucket { completed: 0, ok: 0, errors: [0; CLASSES], hist: histo::new_bucket_hist(), active_connections: 0, active_users: 0 }
    }
}

/// How long a request still in flight at the end must have waited to count as unanswered.
pub const STALLED_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct Recorder {
    pub measure_start: Instant,
    pub latency: Hist,
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
    /// Requests that, when the run ended, had waited at least STALLED_AFTER for a
    /// response (a server that holds connections without serving them shows here,
    /// not in the latency histogram).
    pub unanswered: u64,
    /// Age of the oldest of those, from its intended send time.
    pub unanswered_oldest_us: u64,
    pub timeline: Vec<Bucket>,
}

impl Recorder {
    pub fn new(measure_start: Instant, with_service: bool) -> Recorder {
        Recorder {
            measure_start,
            latency: histo::new_hist(),
            service: with_service.then(histo::new_hist),
            responses: 0,
            ok: 0,
            errors: [0; CLASSES],
            status: vec![0; 1000],
            bytes_read: 0,
            connections_opened: 0,
            missed_sends: 0,
            unanswered: 0,
            unanswered_oldest_us: 0,
            timeline: vec![],
        }
    }

    #[inline]
    fn bucket(&mut self, now: Instant) -> &mut Bucket {
        let i = now.saturating_duration_since(self.measure_start).as_secs() as usize;
        while self.timeline.len() <= i {
            self.timeline.push(Bucket::new());
        }
        &mut self.timeline[i]
    }

    /// Index of the current second, creating buckets up to it.
    pub fn touch(&mut self, now: Instant, active_connections: u64, active_users: u64) -> usize {
        let b = self.bucket(now);
        b.active_connections = active_connections;
        b.active_users = active_users;
        self.timeline.len() - 1
    }

    /// A response arrived. `latency` is from the intended send time, `service`
    /// from the actual send.
    #[inline]
    pub fn response(&mut self, now: Instant, status: u16, latency: Duration, service: Duration) {
        let lat = latency.as_micros() as u64;
        histo::record(&mut self.latency, lat);
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
        let b = self.bucket(now);
        b.completed += 1;
        histo::record(&mut b.hist, lat);
        if ok {
            b.ok += 1;
        } else {
            b.errors[ErrorClass::Status as usize] += 1;
        }
    }

    /// A request ended without a response.
    pub fn error(&mut self, now: Instant, class: ErrorClass) {
        self.errors[class as usize] += 1;
        let b = self.bucket(now);
        b.completed += 1;
        b.errors[class as usize] += 1;
    }

    /// Requests that ended (a response of any status, or a transport error).
    pub fn requests(&self) -> u64 {
        self.responses + self.transport_errors()
    }

    pub fn transport_errors(&self) -> u64 {
        self.errors.iter().sum::<u64>() - self.errors[ErrorClass::Status as usize]
    }

    pub fn merge(&mut self, o: &Recorder) -> Result<(), String> {
        histo::merge(&mut self.latency, &o.latency)?;
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
        self.unanswered += o.unanswered;
        self.unanswered_oldest_us = self.unanswered_oldest_us.max(o.unanswered_oldest_us);
        while self.timeline.len() < o.timeline.len() {
            self.timeline.push(Bucket::new());
        }
        for (a, b) in self.timeline.iter_mut().zip(&o.timeline) {
            a.completed += b.completed;
            a.ok += b.ok;
            for i in 0..CLASSES {
                a.errors[i] += b.errors[i];
            }
            histo::merge(&mut a.hist, &b.hist)?;
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
        a.merge(&b).unwrap();
        assert_eq!(a.responses, 2);
        assert_eq!(a.ok, 1);
        assert_eq!(a.requests(), 3);
        assert_eq!(a.errors[ErrorClass::Status as usize], 1);
        assert_eq!(a.errors[ErrorClass::Timeout as usize], 1);
        assert_eq!(a.timeline.len(), 3);
        assert_eq!(a.timeline[1].errors[ErrorClass::Status as usize], 1);
        assert_eq!(a.timeline[2].completed, 1);
        assert_eq!(a.service.as_ref().unwrap().len(), 2);
    }
}
