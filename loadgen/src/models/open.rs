//! Open load: requests are due on a schedule whatever the server does
//! (constant or Poisson spacing, ramps from `--stages`). A due request goes on
//! an idle connection, or a new one while the pool has room; otherwise it
//! waits in the backlog, and its latency still counts from when it was due.
//! The backlog is bounded (`--max-backlog`): requests due while it is full are
//! dropped, counted, and at the end recorded at their age, as are those still
//! waiting — every due request is in the corrected histogram.

use super::{seed_for, Io, Model};
use crate::record::{ErrorClass, Recorder};
use crate::schedule::Schedule;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub struct Open {
    schedule: Schedule,
    poisson: bool,
    /// The schedule counts from here.
    start: Instant,
    measure_start: Instant,
    end: Option<Instant>,
    /// Threads share the schedule: this one takes every `threads`-th request.
    threads: f64,
    /// The send timer wakes at most once per quantum.
    quantum: Duration,
    rng: Pcg64Mcg,
    /// Connections open or opening, and the most allowed.
    pool: usize,
    pool_max: usize,
    /// Connections with room for a request (entries are stale when `is_idle`
    /// is false): none in flight, or under HTTP/2 a free stream of `streams`.
    idle: Vec<usize>,
    /// Requests one connection carries at once (--streams; 1 over HTTP/1.1).
    streams: usize,
    is_idle: Vec<bool>,
    /// Closed slots to reuse before adding new ones.
    free: Vec<usize>,
    /// Due requests waiting for a connection, oldest first.
    backlog: VecDeque<Instant>,
    /// The first `counted` of them are already counted in `missed_sends`.
    counted: usize,
    max_backlog: usize,
    /// Measured requests dropped, as (10 ms slot since `start`, count) runs:
    /// their age at the end to 10 ms, in bounded memory.
    dropped: Vec<(u32, u32)>,
    next_n: f64,
    next_due: Option<Instant>,
    /// When a tick last sent something.
    last_send: Option<Instant>,
    missed_sends: u64,
}

/// Open load for one thread.
pub struct OpenPlan {
    pub schedule: Schedule,
    pub poisson: bool,
    pub start: Instant,
    pub measure_start: Instant,
    pub end: Option<Instant>,
    pub threads: usize,
    pub tid: usize,
    pub seed: u64,
    pub quantum: Duration,
    /// This thread's share of --max-connections.
    pub pool_max: usize,
    /// This thread's share of --max-backlog.
    pub max_backlog: usize,
    /// --streams: requests one connection carries at once (HTTP/2).
    pub streams: usize,
}

const DROP_SLOT: Duration = Duration::from_millis(10);

impl Open {
    pub fn new(p: OpenPlan) -> Open {
        let mut o = Open {
            schedule: p.schedule,
            poisson: p.poisson,
            start: p.start,
            measure_start: p.measure_start,
            end: p.end,
            threads: p.threads as f64,
            quantum: p.quantum,
            rng: Pcg64Mcg::seed_from_u64(seed_for(p.seed, p.tid, 0x5EED_5EED_5EED_5EED)),
            pool: 0,
            pool_max: p.pool_max.max(1),
            idle: Vec::new(),
            streams: p.streams.max(1),
            is_idle: Vec::new(),
            free: Vec::new(),
            backlog: VecDeque::new(),
            counted: 0,
            max_backlog: p.max_backlog.max(1),
            dropped: Vec::new(),
            next_n: 0.0,
            next_due: None,
            last_send: None,
            missed_sends: 0,
        };
        o.next_n = if o.poisson { o.exp_step() } else { p.tid as f64 };
        o.next_due = o.due_of(o.next_n);
        o
    }

    fn exp_step(&mut self) -> f64 {
        let e: f64 = Exp1.sample(&mut self.rng);
        e * self.threads
    }

    /// When the n-th request (counted over all threads) is due.
    fn due_of(&self, n: f64) -> Option<Instant> {
        let t = self.schedule.time_of_count(n)?;
        let due = self.start + Duration::from_secs_f64(t);
        match self.end {
            Some(e) if due >= e => None,
            _ => Some(due),
        }
    }

    fn pop_idle(&mut self) -> Option<usize> {
        while let Some(i) = self.idle.pop() {
            if self.is_idle[i] {
                self.is_idle[i] = false;
                return Some(i);
            }
        }
        None
    }

    fn pop_front(&mut self) {
        self.backlog.pop_front();
        self.counted = self.counted.saturating_sub(1);
    }

    /// A measured request due while the backlog is full: never sent.
    fn drop_request(&mut self, due: Instant) {
        self.missed_sends += 1;
        let slot = (due.saturating_duration_since(self.start).as_millis() / DROP_SLOT.as_millis()) as u32;
        match self.dropped.last_mut() {
            Some((s, n)) if *s == slot => *n += 1,
            _ => self.dropped.push((slot, 1)),
        }
    }

    /// Move the requests due by `now` into the backlog (or drop them when it is full).
    fn enqueue_due<I: Io>(&mut self, io: &mut I, now: Instant) {
        while let Some(due) = self.next_due {
            if due > now {
                break;
            }
            if io.take(due).is_none() {
                self.next_due = None;
                break;
            }
            if self.backlog.len() < self.max_backlog {
                self.backlog.push_back(due);
            } else if due >= self.measure_start {
                self.drop_request(due);
            }
            self.next_n += if self.poisson { self.exp_step() } else { self.threads };
            self.next_due = self.due_of(self.next_n);
        }
    }

    /// Requests due in the warm-up and still waiting for a connection when the measured window
    /// starts are never sent: they are the warm-up's, and an overloaded server would spend the window
    /// on them while every measured request waited behind (python-fastapi on tfb-fortunes at 80 %:
    /// 0 of 86,448 measured requests sent, the window taken by the 0.5 s warm-up's 10,800). The
    /// backlog is in due order, so they are at its front.
    fn drop_warmup_backlog(&mut self, now: Instant) {
        if now < self.measure_start {
            return;
        }
        while matches!(self.backlog.front(), Some(&due) if due < self.measure_start) {
            self.pop_front();
        }
    }

    fn slot_gone(&mut self, i: usize) {
        self.is_idle[i] = false;
        self.pool -= 1;
        self.free.push(i);
    }
}

impl Model for Open {
    const SERVICE_TIME: bool = true;

    fn start<I: Io>(&mut self, _io: &mut I, _now: Instant) {}

    fn tick<I: Io>(&mut self, io: &mut I, now: Instant) {
        self.enqueue_due(io, now);
        self.drop_warmup_backlog(now);
        while let Some(&intended) = self.backlog.front() {
            let measured = intended >= self.measure_start;
            let i = match self.pop_idle() {
                Some(i) => i,
                None if self.pool < self.pool_max => {
                    let i = self.free.pop().unwrap_or_else(|| {
                        self.is_idle.push(false);
                        io.add_slot()
                    });
                    self.pool += 1;
                    if !io.connect(i, now) {
                        self.pop_front();
                        if measured {
                            io.connect_error(now);
                        }
                        self.pool -= 1;
                        self.free.push(i);
                        continue;
                    }
                    i
                }
                None => break,
            };
            self.pop_front();
            io.send(i, intended, now, measured);
            self.last_send = Some(now);
            // HTTP/2: a connection with a free stream takes the next request too
            if io.in_flight(i) < self.streams {
                self.is_idle[i] = true;
                self.idle.push(i);
            }
        }
        // requests still waiting for a connection were not sent on schedule
        let fresh = self.backlog.range(self.counted..).filter(|&&t| t >= self.measure_start).count();
        self.missed_sends += fresh as u64;
        self.counted = self.backlog.len();
    }

    fn wake_at(&self, _now: Instant) -> Option<Instant> {
        // A timer wake-up (sleep, hrtimer interrupt, wake, epoll_wait,
        // timerfd_settime) costs more than the send it triggers, so the timer
        // wakes at most once per send quantum and every request due by then
        // goes out in that pass; a wake-up for a response sends what is due at
        // once. The delay is bounded by the quantum and counted: latency runs
        // from the intended time.
        let d = self.next_due?;
        Some(self.last_send.map_or(d, |t| d.max(t + self.quantum)))
    }

    fn on_response<I: Io>(&mut self, io: &mut I, i: usize, _now: Instant, reuse: bool) -> bool {
        if !reuse {
            io.close(i);
            self.slot_gone(i);
            return false;
        }
        if io.in_flight(i) < self.streams && !self.is_idle[i] {
            self.is_idle[i] = true;
            self.idle.push(i);
        }
        true
    }

    fn on_closed<I: Io>(&mut self, _io: &mut I, i: usize, _now: Instant, _failure: Option<ErrorClass>) {
        self.slot_gone(i);
    }

    fn queued(&self) -> usize {
        self.backlog.len()
    }

    fn exhausted(&self, _now: Instant) -> bool {
        self.next_due.is_none() && self.backlog.is_empty()
    }

    fn catch_up<I: Io>(&mut self, io: &mut I, end: Instant) {
        let before = self.backlog.len();
        self.enqueue_due(io, end);
        let late = self.backlog.range(before..).filter(|&&t| t >= self.measure_start).count();
        self.missed_sends += late as u64;
        self.counted = self.backlog.len();
    }

    fn finish(&mut self, rec: &mut Recorder, end: Instant) {
        rec.missed_sends += self.missed_sends;
        for &t in self.backlog.iter().filter(|&&t| t >= self.measure_start) {
            rec.never_sent += 1;
            rec.unserved(end.saturating_duration_since(t), 1);
        }
        for &(slot, n) in &self.dropped {
            // the middle of its 10 ms slot
            let t = self.start + DROP_SLOT * slot + DROP_SLOT / 2;
            rec.dropped += n as u64;
            rec.unserved(end.saturating_duration_since(t), n as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::{Call, FakeIo};
    use super::*;

    fn plan(rate: f64, pool_max: usize, t0: Instant) -> OpenPlan {
        OpenPlan {
            schedule: Schedule::constant(rate),
            poisson: false,
            start: t0,
            measure_start: t0,
            end: Some(t0 + Duration::from_secs(1)),
            threads: 1,
            tid: 0,
            seed: 1,
            quantum: Duration::from_micros(50),
            pool_max,
            max_backlog: 1000,
            streams: 1,
        }
    }

    #[test]
    fn the_warmups_unsent_requests_do_not_take_the_measured_window() {
        // one connection, never answered: everything due in the 100 ms warm-up waits behind it
        let t0 = Instant::now();
        let ms = Duration::from_millis(1);
        let mut p = plan(1000.0, 1, t0);
        p.measure_start = t0 + 100 * ms;
        let mut io = FakeIo::default();
        let mut m = Open::new(p);
        m.start(&mut io, t0);
        m.tick(&mut io, t0 + 99 * ms);
        assert_eq!(io.sends().len(), 1, "the pool's one connection took the first request");
        assert!(m.queued() > 90, "the warm-up's requests wait: {}", m.queued());
        // the window opens and the connection is free: the next request sent is a measured one
        io.answer(0);
        m.on_response(&mut io, 0, t0 + 101 * ms, true);
        m.tick(&mut io, t0 + 101 * ms);
        assert_eq!(io.sends().len(), 2);
        assert!(io.intended[1] >= t0 + 100 * ms, "a warm-up request was sent in the window");
        assert!(m.queued() <= 2, "only the window's own requests wait: {}", m.queued());
    }

    #[test]
    fn sends_on_schedule_reusing_idle_connections() {
        let t0 = Instant::now();
        let ms = Duration::from_millis(1);
        let mut io = FakeIo::default();
        let mut m = Open::new(plan(1000.0, 10, t0));
        m.start(&mut io, t0);
        assert_eq!(m.wake_at(t0), Some(t0), "the first request is due at the start");
        m.tick(&mut io, t0 + ms / 2);
        assert_eq!(io.calls, vec![Call::Connect(0), Call::Send(0)]);
        // the response makes connection 0 idle; the next two due go on 0 and a new 1
        io.answer(0);
        assert!(m.on_response(&mut io, 0, t0 + ms / 2, true));
        assert_eq!(m.wake_at(t0 + ms / 2), Some(t0 + ms));
        m.tick(&mut io, t0 + ms * 2);
        assert_eq!(io.sends(), vec![0, 0, 1]);
        assert_eq!(io.intended, vec![t0, t0 + ms, t0 + ms * 2], "latency counts from when each was due");
        // the timer waits at least one quantum after a send
        assert_eq!(m.wake_at(t0 + ms * 2), Some(t0 + ms * 3));
    }

    #[test]
    fn a_full_pool_leaves_requests_in_the_backlog() {
        let t0 = Instant::now();
        let ms = Duration::from_millis(1);
        let mut io = FakeIo::default();
        let mut m = Open::new(plan(1000.0, 2, t0));
        m.tick(&mut io, t0 + ms * 4);
        assert_eq!(io.sends(), vec![0, 1], "two connections, two requests out");
        assert_eq!(m.queued(), 3);
        // a connection frees up: the oldest waiting request goes, with its own intended time
        io.answer(1);
        m.on_response(&mut io, 1, t0 + ms * 5, true);
        m.tick(&mut io, t0 + ms * 5);
        assert_eq!(io.sends(), vec![0, 1, 1]);
        assert_eq!(io.intended[2], t0 + ms * 2);
        let mut rec = Recorder::new(t0, true);
        m.finish(&mut rec, t0 + ms * 5);
        assert_eq!(rec.missed_sends, 4, "due at 2, 3, 4 and 5 ms, all late");
        assert_eq!(rec.never_sent, 3, "due at 3, 4 and 5 ms, still waiting at the end");
        assert_eq!(rec.unanswered_hist.len(), 3);
        assert_eq!(rec.unanswered_hist.max(), rec.unanswered_hist.highest_equivalent(2000), "the oldest was due 2 ms before the end");
    }

    #[test]
    fn a_full_backlog_drops_and_counts_every_due_request() {
        let t0 = Instant::now();
        let ms = Duration::from_millis(1);
        let mut io = FakeIo::default();
        let mut p = plan(1000.0, 1, t0);
        p.max_backlog = 5;
        let mut m = Open::new(p);
        // a stalled server: one request out, 5 waiting, the rest of the 100 due dropped
        for k in 0..100 {
            m.tick(&mut io, t0 + ms * k);
        }
        assert_eq!(io.sends().len(), 1);
        assert_eq!(m.queued(), 5);
        let mut rec = Recorder::new(t0, true);
        m.finish(&mut rec, t0 + ms * 100);
        assert_eq!((rec.never_sent, rec.dropped, rec.missed_sends), (5, 94, 99));
        assert_eq!(rec.unanswered_hist.len(), 99, "each at its age");
        let median = rec.unanswered_hist.value_at_quantile(0.5);
        assert!((40_000..=60_000).contains(&median), "dropped due 6..99 ms, median age {median} µs");
    }

    #[test]
    fn a_closed_connection_frees_its_pool_slot() {
        let t0 = Instant::now();
        let mut io = FakeIo::default();
        let mut m = Open::new(plan(1000.0, 1, t0));
        m.tick(&mut io, t0);
        io.open[0] = false;
        m.on_closed(&mut io, 0, t0, Some(ErrorClass::Read));
        m.tick(&mut io, t0 + Duration::from_millis(1));
        assert_eq!(io.calls[2..], [Call::Connect(0), Call::Send(0)], "slot 0 reused");
    }
}
