//! Sessions: virtual users, as many as the schedule says at each moment
//! (`--ramp`, `--spawn-rate`, `--stages`). A user holds one connection, sends
//! a request, waits for the response, thinks, and sends the next; after
//! `--session-requests` it closes, and with `--loop-sessions` starts again.

use super::{seed_for, Backoff, Io, Model};
use crate::record::ErrorClass;
use crate::schedule::Schedule;
use crate::units::Think;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Off,
    Active,
    Thinking,
    Done,
}

#[derive(Debug, Clone, Copy)]
struct User {
    state: State,
    /// Bumped when the user retires or arrives, so its old timers are ignored.
    generation: u32,
    /// Requests answered in the current session.
    sent: u64,
}

/// Sessions for one thread.
pub struct SessionsPlan {
    pub schedule: Schedule,
    /// This thread's share of the most users the schedule reaches.
    pub max_users: usize,
    pub session_requests: Option<u64>,
    pub think: Think,
    pub loop_sessions: bool,
    pub start: Instant,
    pub threads: usize,
    pub tid: usize,
    pub seed: u64,
}

pub struct Sessions {
    p: SessionsPlan,
    rng: Pcg64Mcg,
    /// User j owns connection slot j.
    users: Vec<User>,
    /// Thinking users' next send: (when, user, generation).
    timers: BinaryHeap<Reverse<(Instant, usize, u32)>>,
    /// Users 0..local are wanted now.
    local: usize,
    active: u64,
    backoff: Backoff,
}

/// A user whose connection failed tries again after a think time, and at
/// least this long (a timeout, a malformed response) or its back-off (a
/// refusal, a reset), so a failing server does not become a busy loop.
const RETRY_AFTER: Duration = Backoff::FIRST;

impl Sessions {
    pub fn new(p: SessionsPlan) -> Sessions {
        let rng = Pcg64Mcg::seed_from_u64(seed_for(p.seed, p.tid, 0x7417_7417_7417_7417));
        Sessions { p, rng, users: Vec::new(), timers: BinaryHeap::new(), local: 0, active: 0, backoff: Backoff::default() }
    }

    /// User `j` sends its next request, connecting first if needed.
    fn send<I: Io>(&mut self, io: &mut I, j: usize, now: Instant) {
        let Some(m) = io.take(now) else { return };
        self.users[j].state = State::Active;
        if !io.is_open(j) && !io.connect(j, now) {
            if m {
                io.connect_error(now);
            }
            self.failed(j, now, ErrorClass::Connect);
            return;
        }
        io.send(j, now, now, m);
    }

    /// User `j`'s connection failed: retry after a think time, or give up when
    /// its session has a fixed length.
    fn failed(&mut self, j: usize, now: Instant, class: ErrorClass) {
        let u = &mut self.users[j];
        if !matches!(u.state, State::Active | State::Thinking) {
            return;
        }
        if self.p.loop_sessions || self.p.session_requests.is_none() {
            let wait = self.backoff.failed(j, class).max(RETRY_AFTER);
            let d = self.p.think.sample(&mut self.rng).max(wait);
            u.state = State::Thinking;
            u.sent = 0;
            self.timers.push(Reverse((now + d, j, u.generation)));
        } else {
            u.state = State::Done;
            self.active -= 1;
        }
    }
}

impl Model for Sessions {
    fn start<I: Io>(&mut self, io: &mut I, _now: Instant) {
        for _ in 0..self.p.max_users {
            io.add_slot();
        }
        self.users = vec![User { state: State::Off, generation: 0, sent: 0 }; self.p.max_users];
    }

    fn tick<I: Io>(&mut self, io: &mut I, now: Instant) {
        let t = now.saturating_duration_since(self.p.start).as_secs_f64();
        let (threads, tid) = (self.p.threads, self.p.tid);
        let target = self.p.schedule.value_at(t).floor() as usize;
        // user j of this thread is user j * threads + tid overall
        let local = if target > tid { (target - tid).div_ceil(threads) } else { 0 };
        let local = local.min(self.users.len());
        if local > self.local {
            for j in self.local..local {
                let u = &mut self.users[j];
                if u.state == State::Off {
                    u.state = State::Active;
                    u.sent = 0;
                    u.generation = u.generation.wrapping_add(1);
                    self.active += 1;
                    self.send(io, j, now);
                }
            }
        } else {
            for j in local..self.local {
                let u = &mut self.users[j];
                if matches!(u.state, State::Active | State::Thinking) {
                    u.state = State::Off;
                    u.generation = u.generation.wrapping_add(1);
                    self.active -= 1;
                    io.discard(j);
                    io.close(j);
                }
            }
        }
        self.local = local;
        while let Some(&Reverse((t, j, g))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let u = &self.users[j];
            if u.generation == g && u.state == State::Thinking {
                self.send(io, j, now);
            }
        }
    }

    fn wake_at(&self, now: Instant) -> Option<Instant> {
        // follow ramps closely enough for users to arrive on time
        let ramp = now + Duration::from_millis(5);
        Some(self.timers.peek().map_or(ramp, |Reverse((t, _, _))| ramp.min(*t)))
    }

    fn on_response<I: Io>(&mut self, io: &mut I, j: usize, now: Instant, reuse: bool) -> bool {
        self.backoff.answered(j);
        let u = &mut self.users[j];
        u.sent += 1;
        let finished = self.p.session_requests.is_some_and(|k| u.sent >= k);
        let gone = !reuse || finished;
        if gone {
            io.close(j);
        }
        if finished && !self.p.loop_sessions {
            self.users[j].state = State::Done;
            self.active -= 1;
        } else {
            let d = self.p.think.sample(&mut self.rng);
            let u = &mut self.users[j];
            if finished {
                u.sent = 0;
            }
            u.state = State::Thinking;
            if d.is_zero() {
                self.send(io, j, now);
            } else {
                self.timers.push(Reverse((now + d, j, u.generation)));
            }
        }
        !gone && io.is_open(j)
    }

    fn on_closed<I: Io>(&mut self, _io: &mut I, j: usize, now: Instant, failure: Option<ErrorClass>) {
        // a server that closes between requests: the user reconnects for its next one
        if let Some(class) = failure {
            self.failed(j, now, class);
        }
    }

    fn exhausted(&self, now: Instant) -> bool {
        let t = now.saturating_duration_since(self.p.start).as_secs_f64();
        self.active == 0 && t > self.p.schedule.total_duration()
    }

    fn active_users(&self) -> u64 {
        self.active
    }

    /// User j's slot is connection slot j.
    fn fair_slots(&self) -> Option<usize> {
        Some(self.p.max_users)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::{Call, FakeIo};
    use super::*;

    fn plan(t0: Instant, session_requests: Option<u64>, think_ms: u64) -> SessionsPlan {
        SessionsPlan {
            // 0 -> 4 users over 4 s
            schedule: Schedule::stages(0.0, &[(4.0, 4.0)]),
            max_users: 4,
            session_requests,
            think: Think::Fixed(Duration::from_millis(think_ms), 0.0),
            loop_sessions: false,
            start: t0,
            threads: 1,
            tid: 0,
            seed: 1,
        }
    }

    #[test]
    fn users_arrive_with_the_ramp_and_think_between_requests() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut io = FakeIo::default();
        let mut m = Sessions::new(plan(t0, Some(2), 100));
        m.start(&mut io, t0);
        m.tick(&mut io, t0 + s / 2);
        assert!(io.calls.is_empty(), "no user yet at 0.5 s");
        m.tick(&mut io, t0 + s * 2);
        assert_eq!(io.calls, vec![Call::Connect(0), Call::Send(0), Call::Connect(1), Call::Send(1)]);
        assert_eq!(m.active_users(), 2);
        // user 0 is answered: it thinks 100 ms, then sends on the same connection
        io.answer(0);
        assert!(m.on_response(&mut io, 0, t0 + s * 2, true));
        assert_eq!(m.wake_at(t0 + s * 2), Some(t0 + s * 2 + Duration::from_millis(5)));
        m.tick(&mut io, t0 + s * 2 + Duration::from_millis(99));
        assert_eq!(io.sends(), vec![0, 1]);
        m.tick(&mut io, t0 + s * 2 + Duration::from_millis(100));
        assert_eq!(io.sends(), vec![0, 1, 0]);
        // its second answer ends its session: it closes and is done
        io.answer(0);
        assert!(!m.on_response(&mut io, 0, t0 + s * 3, true));
        assert_eq!(io.calls.last(), Some(&Call::Close(0)));
        assert_eq!(m.active_users(), 1);
    }

    #[test]
    fn a_failed_connection_retries_and_users_leave_with_the_schedule() {
        let t0 = Instant::now();
        let mut io = FakeIo::default();
        let mut p = plan(t0, None, 0);
        p.schedule = Schedule::stages(2.0, &[(1.0, 2.0), (0.0, 0.0)]);
        let mut m = Sessions::new(p);
        m.start(&mut io, t0);
        m.tick(&mut io, t0);
        assert_eq!(io.sends(), vec![0, 1]);
        // user 1's connection fails: it tries again no sooner than 10 ms later
        io.open[1] = false;
        m.on_closed(&mut io, 1, t0, Some(ErrorClass::Read));
        m.tick(&mut io, t0 + Duration::from_millis(9));
        assert_eq!(io.sends(), vec![0, 1]);
        m.tick(&mut io, t0 + Duration::from_millis(10));
        assert_eq!(io.calls[io.calls.len() - 2..], [Call::Connect(1), Call::Send(1)]);
        // the schedule drops to 0 users: both are retired, their requests forgotten
        m.tick(&mut io, t0 + Duration::from_secs(2));
        assert_eq!(m.active_users(), 0);
        assert!(io.calls.ends_with(&[Call::Discard(0), Call::Close(0), Call::Discard(1), Call::Close(1)]));
        assert!(m.exhausted(t0 + Duration::from_secs(2)));
    }
}
