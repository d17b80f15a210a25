//! Load models. Each decides *when* and *on which connection* the next
//! request goes, and what a response or a failure means for it; the
//! connection machinery (`net`) does all I/O. A model sees the machinery only
//! through `Io`, so a test can drive it with a fake `Io` and a made-up clock.
//! Stages are a `Schedule` the open and session models read.
//!
//! Owns: `Io` (the port a model drives; `net` implements it), `Model`, the
//! reconnect back-off. May use: `record` (error classes, its own counts at
//! the end), `schedule`, `units`; never a socket, a transport or a protocol
//! type: whether bytes go over TCP or TLS, HTTP/1.1 or later HTTP/2, a model
//! cannot tell.

pub mod closed;
pub mod open;
pub mod sessions;

use crate::record::{ErrorClass, Recorder};
use std::time::{Duration, Instant};

pub use closed::Closed;
pub use open::Open;
pub use sessions::Sessions;

/// What a model may ask of the connection machinery. None of these calls
/// back into the model: writes queued by `send` happen after it returns.
pub trait Io {
    /// May a request intended at `intended` start? `Some(measured)`, or None
    /// when the request budget (-n) is spent or `intended` is past the end.
    fn take(&mut self, intended: Instant) -> Option<bool>;
    /// Add an unconnected connection slot; returns its index.
    fn add_slot(&mut self) -> usize;
    /// Start connecting slot `i`. False: it failed at once (nothing is open).
    fn connect(&mut self, i: usize, now: Instant) -> bool;
    fn is_open(&self, i: usize) -> bool;
    /// Requests in flight on `i`.
    fn in_flight(&self, i: usize) -> usize;
    /// Put one request on open connection `i` (written once the model returns).
    fn send(&mut self, i: usize, intended: Instant, now: Instant, measured: bool);
    /// Close `i` at the model's request (the model hears nothing back).
    fn close(&mut self, i: usize);
    /// Forget the requests in flight on `i` without counting them.
    fn discard(&mut self, i: usize);
    /// A measured request failed because its connection could not be opened.
    fn connect_error(&mut self, now: Instant);
}

/// One load model, driven by the worker loop and by the machinery's events.
pub trait Model {
    /// Keep a service-time histogram (from the actual send) beside the
    /// corrected one: only where the two differ.
    const SERVICE_TIME: bool = false;
    /// Load begins.
    fn start<I: Io>(&mut self, io: &mut I, now: Instant);
    /// Send whatever is due by `now`.
    fn tick<I: Io>(&mut self, io: &mut I, now: Instant);
    /// When `tick` next has work (None: only after an event); at or before
    /// `now` means at once.
    fn wake_at(&self, now: Instant) -> Option<Instant>;
    /// A response ended a request on `i`; `reuse`: the connection may carry
    /// another. Returns false when `i` is not to be read further now.
    fn on_response<I: Io>(&mut self, io: &mut I, i: usize, now: Instant, reuse: bool) -> bool;
    /// Connection `i` is gone without the model asking: the server closed it
    /// between responses (`failure` None), or it failed and the machinery
    /// counted its requests as errors of that class.
    fn on_closed<I: Io>(&mut self, io: &mut I, i: usize, now: Instant, failure: Option<ErrorClass>);
    /// Requests due but not yet on a connection.
    fn queued(&self) -> usize {
        0
    }
    /// No request will ever be issued again (ends -n runs whose schedule or
    /// users are done first).
    fn exhausted(&self, now: Instant) -> bool;
    fn active_users(&self) -> u64 {
        0
    }
    /// The connection slots whose completions the fairness figures count
    /// (slots 0..n, all added by `start`, each kept across reconnects); None
    /// where slots come and go with the load (open load).
    fn fair_slots(&self) -> Option<usize> {
        None
    }
    /// The run ended at `end`: whatever became due since the last tick is
    /// queued (not sent), so that it counts.
    fn catch_up<I: Io>(&mut self, _io: &mut I, _end: Instant) {}
    /// The run ended at `end`: add the model's own counts to `rec`.
    fn finish(&mut self, _rec: &mut Recorder, _end: Instant) {}
}

/// Per-connection reconnect back-off. A connection refused, reset or cut
/// before its response waits 10 ms, then 20 ms, … up to 1 s before it tries
/// again, so an error count measures the server rather than how fast the
/// client retries. A response starts it over.
#[derive(Default)]
pub struct Backoff {
    /// Consecutive failures per slot.
    failures: Vec<u8>,
}

impl Backoff {
    pub const FIRST: Duration = Duration::from_millis(10);
    pub const MAX: Duration = Duration::from_secs(1);

    /// How long slot `i` waits after a failure of `class`: zero for failures
    /// that are not refusals or resets (a timeout, a malformed response).
    pub fn failed(&mut self, i: usize, class: ErrorClass) -> Duration {
        if !matches!(class, ErrorClass::Connect | ErrorClass::Read | ErrorClass::Write) {
            return Duration::ZERO;
        }
        if self.failures.len() <= i {
            self.failures.resize(i + 1, 0);
        }
        let k = self.failures[i];
        self.failures[i] = k.saturating_add(1);
        Self::FIRST.saturating_mul(1 << k.min(16)).min(Self::MAX)
    }

    #[inline]
    pub fn answered(&mut self, i: usize) {
        if let Some(k) = self.failures.get_mut(i) {
            *k = 0;
        }
    }
}

/// This thread's share of `total` when split over `threads`.
pub fn share(total: u64, threads: usize, tid: usize) -> u64 {
    let t = threads as u64;
    total / t + u64::from((tid as u64) < total % t)
}

/// A seed for thread `tid`'s stream `stream` of random numbers.
pub fn seed_for(seed: u64, tid: usize, stream: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(tid as u64) ^ stream
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_bound_and_resets_on_an_answer() {
        let mut b = Backoff::default();
        let ms = Duration::from_millis;
        let waits: Vec<Duration> = (0..9).map(|_| b.failed(3, ErrorClass::Connect)).collect();
        assert_eq!(waits[..4], [ms(10), ms(20), ms(40), ms(80)]);
        assert_eq!(waits[8], ms(1000));
        assert_eq!(b.failed(0, ErrorClass::Timeout), Duration::ZERO, "a timeout is not a refusal");
        b.answered(3);
        assert_eq!(b.failed(3, ErrorClass::Read), ms(10));
    }
}

#[cfg(test)]
pub mod fake {
    //! An `Io` without sockets that logs what a model asks for.
    use super::Io;
    use std::time::Instant;

    #[derive(Debug, Clone, PartialEq)]
    pub enum Call {
        Connect(usize),
        Send(usize),
        Close(usize),
        Discard(usize),
        ConnectError,
    }

    #[derive(Default)]
    pub struct FakeIo {
        pub calls: Vec<Call>,
        /// intended time of every send, in order
        pub intended: Vec<Instant>,
        pub open: Vec<bool>,
        pub in_flight: Vec<usize>,
        pub refuse: bool,
        pub budget: Option<u64>,
    }

    impl FakeIo {
        pub fn sends(&self) -> Vec<usize> {
            self.calls.iter().filter_map(|c| if let Call::Send(i) = c { Some(*i) } else { None }).collect()
        }
        /// The server answers on `i`: one request fewer in flight.
        pub fn answer(&mut self, i: usize) {
            self.in_flight[i] -= 1;
        }
    }

    impl Io for FakeIo {
        fn take(&mut self, _intended: Instant) -> Option<bool> {
            match &mut self.budget {
                Some(0) => None,
                Some(b) => {
                    *b -= 1;
                    Some(true)
                }
                None => Some(true),
            }
        }
        fn add_slot(&mut self) -> usize {
            self.open.push(false);
            self.in_flight.push(0);
            self.open.len() - 1
        }
        fn connect(&mut self, i: usize, _now: Instant) -> bool {
            self.calls.push(Call::Connect(i));
            self.open[i] = !self.refuse;
            !self.refuse
        }
        fn is_open(&self, i: usize) -> bool {
            self.open[i]
        }
        fn in_flight(&self, i: usize) -> usize {
            self.in_flight[i]
        }
        fn send(&mut self, i: usize, intended: Instant, _now: Instant, _measured: bool) {
            assert!(self.open[i], "send on closed connection {i}");
            self.calls.push(Call::Send(i));
            self.intended.push(intended);
            self.in_flight[i] += 1;
        }
        fn close(&mut self, i: usize) {
            self.calls.push(Call::Close(i));
            self.open[i] = false;
            self.in_flight[i] = 0;
        }
        fn discard(&mut self, i: usize) {
            self.calls.push(Call::Discard(i));
            self.in_flight[i] = 0;
        }
        fn connect_error(&mut self, _now: Instant) {
            self.calls.push(Call::ConnectError);
        }
    }
}
