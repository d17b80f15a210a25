//! Closed load: a fixed set of connections, each with `pipeline` requests in
//! flight; a response sends the next request on the same connection.

use super::{Backoff, Io, Model};
use crate::record::ErrorClass;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

pub struct Closed {
    connections: usize,
    pipeline: usize,
    /// Connections to (re)open and when, soonest first.
    restart: BinaryHeap<Reverse<(Instant, usize)>>,
    backoff: Backoff,
}

impl Closed {
    /// `connections`: this thread's share.
    pub fn new(connections: usize, pipeline: usize) -> Closed {
        Closed { connections, pipeline, restart: BinaryHeap::new(), backoff: Backoff::default() }
    }

    fn start_conn<I: Io>(&mut self, io: &mut I, i: usize, now: Instant) {
        let Some(m) = io.take(now) else { return };
        if !io.connect(i, now) {
            if m {
                io.connect_error(now);
            }
            let wait = self.backoff.failed(i, ErrorClass::Connect);
            self.restart.push(Reverse((now + wait, i)));
            return;
        }
        io.send(i, now, now, m);
        for _ in 1..self.pipeline {
            match io.take(now) {
                Some(m) => io.send(i, now, now, m),
                None => break,
            }
        }
    }
}

impl Model for Closed {
    fn start<I: Io>(&mut self, io: &mut I, now: Instant) {
        for _ in 0..self.connections {
            let i = io.add_slot();
            self.start_conn(io, i, now);
        }
    }

    fn tick<I: Io>(&mut self, io: &mut I, now: Instant) {
        // a connect that fails again is pushed at least Backoff::FIRST later
        while let Some(&Reverse((t, i))) = self.restart.peek() {
            if t > now {
                break;
            }
            self.restart.pop();
            if !io.is_open(i) {
                self.start_conn(io, i, now);
            }
        }
    }

    fn wake_at(&self, _now: Instant) -> Option<Instant> {
        self.restart.peek().map(|Reverse((t, _))| *t)
    }

    fn on_response<I: Io>(&mut self, io: &mut I, i: usize, now: Instant, reuse: bool) -> bool {
        self.backoff.answered(i);
        if reuse {
            if let Some(m) = io.take(now) {
                io.send(i, now, now, m);
            }
            return true;
        }
        // requests pipelined behind this one fail when the server closes
        if io.in_flight(i) == 0 {
            io.close(i);
            self.restart.push(Reverse((now, i)));
        }
        false
    }

    fn on_closed<I: Io>(&mut self, _io: &mut I, i: usize, now: Instant, failure: Option<ErrorClass>) {
        let wait = failure.map_or(Duration::ZERO, |c| self.backoff.failed(i, c));
        self.restart.push(Reverse((now + wait, i)));
    }

    fn exhausted(&self, _now: Instant) -> bool {
        false
    }

    fn fair_slots(&self) -> Option<usize> {
        Some(self.connections)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::{Call, FakeIo};
    use super::*;

    #[test]
    fn keeps_pipeline_requests_in_flight_per_connection() {
        let t0 = Instant::now();
        let mut io = FakeIo::default();
        let mut m = Closed::new(2, 3);
        m.start(&mut io, t0);
        assert_eq!(io.sends(), vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(m.wake_at(t0), None, "nothing to do until a response");
        // a response: the next request goes on the same connection at once
        io.answer(1);
        assert!(m.on_response(&mut io, 1, t0, true));
        assert_eq!(io.sends().len(), 7);
        assert_eq!(io.calls.last(), Some(&Call::Send(1)));
        assert_eq!(io.in_flight, vec![3, 3]);
    }

    #[test]
    fn reconnects_after_a_close_and_stops_at_the_budget() {
        let t0 = Instant::now();
        let mut io = FakeIo { budget: Some(3), ..FakeIo::default() };
        let mut m = Closed::new(1, 1);
        m.start(&mut io, t0);
        // the server closes after its response: the model closes and reconnects on the next tick
        io.answer(0);
        assert!(!m.on_response(&mut io, 0, t0, false));
        assert_eq!(io.calls.last(), Some(&Call::Close(0)));
        assert_eq!(m.wake_at(t0), Some(t0), "at once");
        m.tick(&mut io, t0);
        assert_eq!(io.calls[io.calls.len() - 2..], [Call::Connect(0), Call::Send(0)]);
        // a reset: reconnect after a back-off; the budget of 3 ends it
        let ms = Duration::from_millis(1);
        io.open[0] = false;
        io.in_flight[0] = 0;
        m.on_closed(&mut io, 0, t0, Some(ErrorClass::Read));
        assert_eq!(m.wake_at(t0), Some(t0 + ms * 10));
        m.tick(&mut io, t0 + ms * 9);
        assert_eq!(io.sends().len(), 2, "not before the back-off");
        m.tick(&mut io, t0 + ms * 10);
        assert_eq!(io.sends().len(), 3);
        io.open[0] = false;
        m.on_closed(&mut io, 0, t0 + ms * 10, None);
        m.tick(&mut io, t0 + ms * 10);
        assert_eq!(io.sends().len(), 3);
    }

    #[test]
    fn a_refused_connect_is_an_error_and_retried_with_back_off() {
        let t0 = Instant::now();
        let mut io = FakeIo { refuse: true, ..FakeIo::default() };
        let mut m = Closed::new(1, 1);
        m.start(&mut io, t0);
        assert_eq!(io.calls, vec![Call::Connect(0), Call::ConnectError]);
        // one second of a refusing server: 10 + 20 + 40 + … ms apart, not a busy loop
        let mut t = t0;
        while t < t0 + Duration::from_secs(1) {
            m.tick(&mut io, t);
            t = m.wake_at(t).unwrap();
        }
        let errors = io.calls.iter().filter(|c| **c == Call::ConnectError).count();
        assert_eq!(errors, 7, "at 0, 10, 30, 70, 150, 310 and 630 ms");
    }
}
