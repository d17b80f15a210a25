//! One worker thread: a hand-written mio event loop over its share of the
//! connections. Hot path per request: copy the pre-serialized request into a
//! reused write buffer, one write, one read into a reused buffer, in-place
//! parse, one histogram record — no allocation.

use crate::record::{ErrorClass, Recorder};
use crate::request::RequestBytes;
use crate::response::{ParseError, Response, ResponseParser, MAX_HEAD};
use crate::schedule::Schedule;
use crate::template::Dist;
use crate::timer::TimerFd;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use rand_pcg::Pcg64Mcg;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const TIMER: Token = Token(usize::MAX - 1);
const RBUF_START: usize = 4096;
const RBUF_MAX: usize = MAX_HEAD * 2;

/// Think time between a user's requests.
#[derive(Debug, Clone, PartialEq)]
pub enum Think {
    /// base ± jitter (fraction, 0.1 = ±10 %)
    Fixed(Duration, f64),
    /// a distribution of milliseconds
    Dist(Dist),
}

impl Think {
    fn sample(&self, rng: &mut Pcg64Mcg) -> Duration {
        match self {
            Think::Fixed(d, j) if *j > 0.0 => d.mul_f64(rng.gen_range((1.0 - j).max(0.0)..=1.0 + j)),
            Think::Fixed(d, _) => *d,
            Think::Dist(dist) => Duration::from_millis(dist.sample(rng).max(0) as u64),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Kind {
    Closed { connections: usize, pipeline: usize },
    Open { schedule: Schedule, poisson: bool, max_connections: usize },
    Sessions { schedule: Schedule, max_users: usize, session_requests: Option<u64>, think: Think, loop_sessions: bool },
}

/// Everything the workers share, read-only.
#[derive(Debug, Clone)]
pub struct Plan {
    pub addr: SocketAddr,
    pub req: RequestBytes,
    pub kind: Kind,
    pub keepalive: bool,
    /// Open load: the send timer wakes at most once per quantum.
    pub send_quantum: Duration,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub threads: usize,
    pub seed: u64,
    /// Load starts (warm-up included); schedules count from here.
    pub start: Instant,
    pub measure_start: Instant,
    /// None: run until the request budget is used up.
    pub end: Option<Instant>,
}

/// Live figures for the progress line.
pub struct Shared {
    pub requests: Vec<AtomicU64>,
    pub errors: Vec<AtomicU64>,
    pub p99_us: Vec<AtomicU64>,
    pub stop: AtomicBool,
}

impl Shared {
    pub fn new(threads: usize) -> Shared {
        let v = || (0..threads).map(|_| AtomicU64::new(0)).collect();
        Shared { requests: v(), errors: v(), p99_us: v(), stop: AtomicBool::new(false) }
    }
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    intended: Instant,
    sent: Instant,
    measured: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    Off,
    Active,
    Thinking,
    Done,
}

struct Conn {
    sock: Option<TcpStream>,
    connected: bool,
    opened_at: Instant,
    wbuf: Vec<u8>,
    wpos: usize,
    rbuf: Vec<u8>,
    rlen: usize,
    parser: ResponseParser,
    inflight: VecDeque<Pending>,
    /// open load: in the idle list
    idle: bool,
    user: User,
    user_gen: u32,
    session_sent: u64,
}

impl Conn {
    fn new(now: Instant) -> Conn {
        Conn {
            sock: None,
            connected: false,
            opened_at: now,
            wbuf: Vec::new(),
            wpos: 0,
            rbuf: Vec::new(),
            rlen: 0,
            parser: ResponseParser::new(),
            inflight: VecDeque::new(),
            idle: false,
            user: User::Off,
            user_gen: 0,
            session_sent: 0,
        }
    }
}

pub struct Worker<'a> {
    plan: &'a Plan,
    shared: &'a Shared,
    tid: usize,
    poll: Poll,
    timer: TimerFd,
    conns: Vec<Conn>,
    rec: Recorder,
    rng: Pcg64Mcg,
    sched_rng: Pcg64Mcg,
    scratch: Vec<u8>,
    done: Vec<Response>,
    budget: Option<u64>,
    inflight_total: usize,
    active_conns: u64,
    active_users: u64,
    // closed load: connections to (re)open at the top of the loop
    restart: Vec<usize>,
    // open load
    idle: Vec<usize>,
    free_slots: Vec<usize>,
    pool: usize,
    pool_max: usize,
    backlog: VecDeque<(Instant, bool)>,
    next_n: f64,
    next_due: Option<Instant>,
    /// when open_tick last sent something
    last_send: Option<Instant>,
    // sessions
    timers: BinaryHeap<Reverse<(Instant, usize, u32)>>,
    local_users: usize,
    scan_every: Duration,
    second: usize,
}

/// This thread's share of `total` when split over `threads`.
pub fn share(total: u64, threads: usize, tid: usize) -> u64 {
    let t = threads as u64;
    total / t + u64::from((tid as u64) < total % t)
}

impl<'a> Worker<'a> {
    pub fn new(plan: &'a Plan, shared: &'a Shared, tid: usize, budget: Option<u64>) -> io::Result<Worker<'a>> {
        let poll = Poll::new()?;
        let timer = TimerFd::new(poll.registry(), TIMER)?;
        let with_service = matches!(plan.kind, Kind::Open { .. });
        let base = plan.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(tid as u64);
        let shortest = plan.timeout.min(plan.connect_timeout);
        Ok(Worker {
            plan,
            shared,
            tid,
            poll,
            timer,
            conns: Vec::new(),
            rec: Recorder::new(plan.measure_start, with_service),
            rng: Pcg64Mcg::seed_from_u64(base),
            sched_rng: Pcg64Mcg::seed_from_u64(base ^ 0x5EED_5EED_5EED_5EED),
            scratch: Vec::new(),
            done: Vec::with_capacity(64),
            budget,
            inflight_total: 0,
            active_conns: 0,
            active_users: 0,
            restart: Vec::new(),
            idle: Vec::new(),
            free_slots: Vec::new(),
            pool: 0,
            pool_max: 0,
            backlog: VecDeque::new(),
            next_n: 0.0,
            next_due: None,
            last_send: None,
            timers: BinaryHeap::new(),
            local_users: 0,
            scan_every: (shortest / 10).clamp(Duration::from_millis(1), Duration::from_millis(100)),
            second: usize::MAX,
        })
    }

    pub fn run(mut self) -> Recorder {
        let now = Instant::now();
        if self.plan.start > now {
            std::thread::sleep(self.plan.start - now);
        }
        let now = Instant::now();
        let plan = self.plan;
        let threads = plan.threads;
        match &plan.kind {
            Kind::Closed { connections, pipeline } => {
                let n = share(*connections as u64, threads, self.tid) as usize;
                let pipeline = *pipeline;
                for i in 0..n {
                    self.conns.push(Conn::new(now));
                    self.start_closed(i, now, pipeline);
                }
            }
            Kind::Open { poisson, max_connections, .. } => {
                self.pool_max = share(*max_connections as u64, threads, self.tid).max(1) as usize;
                self.next_n = if *poisson { self.exp_step() } else { self.tid as f64 };
                self.next_due = self.due_of(self.next_n);
            }
            Kind::Sessions { max_users, .. } => {
                let n = share(*max_users as u64, threads, self.tid) as usize;
                self.conns = (0..n).map(|_| Conn::new(now)).collect();
            }
        }
        let mut events = Events::with_capacity(1024);
        let mut next_scan = now + self.scan_every;
        loop {
            let now = Instant::now();
            if self.plan.end.is_some_and(|e| now >= e) {
                break;
            }
            if self.budget == Some(0) && self.inflight_total == 0 && self.backlog.is_empty() {
                break;
            }
            match self.plan.kind {
                Kind::Closed { pipeline, .. } => self.closed_tick(now, pipeline),
                Kind::Open { .. } => self.open_tick(now),
                Kind::Sessions { .. } => self.sessions_tick(now),
            }
            if self.plan.end.is_none() && self.inflight_total == 0 && self.nothing_more(now) {
                break; // -n without -d, but the schedule or the users are done first
            }
            if now >= next_scan {
                self.scan_timeouts(now);
                next_scan = now + self.scan_every;
                self.publish();
            }
            let sec = self.rec.touch(now, self.active_conns, self.active_users);
            if sec != self.second {
                if sec > 0 && self.second != usize::MAX {
                    let p99 = self.rec.timeline[sec - 1].hist.value_at_quantile(0.99);
                    self.shared.p99_us[self.tid].store(p99, Ordering::Relaxed);
                }
                self.second = sec;
            }
            let mut wake = next_scan;
            if let Some(e) = self.plan.end {
                wake = wake.min(e);
            }
            if let Some(d) = self.next_due {
                // Open load: a timer wake-up (sleep, hrtimer interrupt, wake,
                // epoll_wait, timerfd_settime) costs more than the send it
                // triggers, so the timer wakes at most once per send quantum
                // and every request due by then goes out in that pass. Any
                // wake-up for a response sends what is due at once. The delay
                // is bounded by the quantum and counted: latency runs from the
                // intended time.
                let q = self.last_send.map_or(d, |t| t + self.plan.send_quantum);
                wake = wake.min(d.max(q));
            }
            if let Some(Reverse((t, _, _))) = self.timers.peek() {
                wake = wake.min(*t);
            }
            if matches!(self.plan.kind, Kind::Sessions { .. }) {
                // follow ramps closely enough for users to arrive on time
                wake = wake.min(now + Duration::from_millis(5));
            }
            let timeout = if self.restart.is_empty() {
                self.timer.arm(wake, now);
                None
            } else {
                Some(Duration::ZERO)
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    eprintln!("loadgen: poll failed: {e}");
                    break;
                }
            }
            let now = Instant::now();
            if self.plan.end.is_some_and(|e| now >= e) {
                break; // responses after the end are not part of the run
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    self.timer.fired();
                    continue;
                }
                let i = ev.token().0;
                let drain = ev.is_read_closed() || ev.is_error();
                self.on_event(i, now, ev.is_readable() || drain, ev.is_writable() || drain, drain);
            }
        }
        // Requests in flight at the end are normal (closed load always has C of them);
        // only those already waiting a long time mean a stalled connection.
        let end = Instant::now();
        for p in self.conns.iter().flat_map(|c| c.inflight.iter()).filter(|p| p.measured) {
            let age = end.saturating_duration_since(p.intended);
            if age >= crate::record::STALLED_AFTER {
                self.rec.unanswered += 1;
                self.rec.unanswered_oldest_us = self.rec.unanswered_oldest_us.max(age.as_micros() as u64);
            }
        }
        self.publish();
        // sockets close as the worker drops
        self.rec
    }

    /// Open load or sessions that will never issue another request.
    fn nothing_more(&self, now: Instant) -> bool {
        match &self.plan.kind {
            Kind::Closed { .. } => false,
            Kind::Open { .. } => self.next_due.is_none() && self.backlog.is_empty(),
            Kind::Sessions { schedule, .. } => {
                let t = now.saturating_duration_since(self.plan.start).as_secs_f64();
                self.active_users == 0 && t > schedule.total_duration()
            }
        }
    }

    fn publish(&self) {
        self.shared.requests[self.tid].store(self.rec.requests(), Ordering::Relaxed);
        self.shared.errors[self.tid].store(self.rec.errors.iter().sum(), Ordering::Relaxed);
    }

    fn exp_step(&mut self) -> f64 {
        let e: f64 = Exp1.sample(&mut self.sched_rng);
        e * self.plan.threads as f64
    }

    fn due_of(&self, n: f64) -> Option<Instant> {
        let Kind::Open { schedule, .. } = &self.plan.kind else { return None };
        let t = schedule.time_of_count(n)?;
        let due = self.plan.start + Duration::from_secs_f64(t);
        match self.plan.end {
            Some(e) if due >= e => None,
            _ => Some(due),
        }
    }

    /// May a request start now? Returns whether it is measured.
    fn take(&mut self, intended: Instant) -> Option<bool> {
        if self.plan.end.is_some_and(|e| intended >= e) {
            return None;
        }
        let measured = intended >= self.plan.measure_start;
        if measured {
            if let Some(b) = &mut self.budget {
                if *b == 0 {
                    return None;
                }
                *b -= 1;
            }
        }
        Some(measured)
    }

    // ---- connections -------------------------------------------------

    /// Start connecting slot `i`. On failure, the caller's requests error.
    fn open(&mut self, i: usize, now: Instant) -> bool {
        match TcpStream::connect(self.plan.addr) {
            Ok(mut s) => {
                let _ = s.set_nodelay(true);
                if self.poll.registry().register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE).is_err() {
                    return false;
                }
                let c = &mut self.conns[i];
                c.sock = Some(s);
                c.connected = false;
                c.opened_at = now;
                c.rlen = 0;
                c.parser.reset();
                if c.rbuf.is_empty() {
                    c.rbuf.resize(RBUF_START, 0);
                }
                self.active_conns += 1;
                true
            }
            Err(_) => false,
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.sock.take() {
            let _ = self.poll.registry().deregister(&mut s);
            self.active_conns -= 1;
        }
        c.connected = false;
        c.idle = false;
        c.wbuf.clear();
        c.wpos = 0;
        c.rlen = 0;
        c.parser.reset();
    }

    /// Drop requests in flight without counting them (a retired user).
    fn discard(&mut self, i: usize) {
        let n = self.conns[i].inflight.len();
        self.conns[i].inflight.clear();
        self.inflight_total -= n;
    }

    /// The connection failed: every request on it ends with `class`.
    fn fail(&mut self, i: usize, class: ErrorClass, now: Instant) {
        let c = &mut self.conns[i];
        while let Some(p) = c.inflight.pop_front() {
            self.inflight_total -= 1;
            if p.measured {
                self.rec.error(now, class);
            }
        }
        self.close(i);
        self.after_close(i, now, true);
    }

    /// What a mode does once connection `i` is gone.
    fn after_close(&mut self, i: usize, now: Instant, failed: bool) {
        let plan = self.plan;
        match plan.kind {
            Kind::Closed { .. } => self.restart.push(i),
            Kind::Open { .. } => {
                self.pool -= 1;
                self.free_slots.push(i);
            }
            Kind::Sessions { ref think, session_requests, loop_sessions, .. } => {
                if !failed {
                    return;
                }
                let c = &mut self.conns[i];
                if !matches!(c.user, User::Active | User::Thinking) {
                    return;
                }
                if loop_sessions || session_requests.is_none() {
                    // try again after a think time (at least 10 ms, so a refusing
                    // server does not turn into a busy loop)
                    let d = think.sample(&mut self.rng).max(Duration::from_millis(10));
                    let c = &mut self.conns[i];
                    c.user = User::Thinking;
                    c.session_sent = 0;
                    self.timers.push(Reverse((now + d, i, c.user_gen)));
                } else {
                    c.user = User::Done;
                    self.active_users -= 1;
                }
            }
        }
    }

    /// Append one request to connection `i`'s write buffer.
    #[inline]
    fn issue(&mut self, i: usize, intended: Instant, now: Instant, measured: bool) {
        let c = &mut self.conns[i];
        self.plan.req.write_to(&mut self.rng, &mut c.wbuf, &mut self.scratch);
        c.inflight.push_back(Pending { intended, sent: now, measured });
        self.inflight_total += 1;
    }

    /// Write what is buffered. Returns false if the connection failed.
    fn flush(&mut self, i: usize, now: Instant) -> bool {
        let c = &mut self.conns[i];
        if !c.connected {
            return true;
        }
        let mut failed = false;
        while c.wpos < c.wbuf.len() {
            let Some(s) = c.sock.as_mut() else { return true };
            match s.write(&c.wbuf[c.wpos..]) {
                Ok(0) => {
                    failed = true;
                    break;
                }
                Ok(n) => c.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if !failed {
            c.wbuf.clear();
            c.wpos = 0;
            return true;
        }
        self.fail(i, ErrorClass::Write, now);
        false
    }

    fn on_event(&mut self, i: usize, now: Instant, readable: bool, writable: bool, drain: bool) {
        if i >= self.conns.len() || self.conns[i].sock.is_none() {
            return; // stale event for a closed connection
        }
        if !self.conns[i].connected {
            let s = self.conns[i].sock.as_ref().expect("checked above");
            let state = match s.take_error() {
                Ok(Some(_)) | Err(_) => Err(()),
                Ok(None) => match s.peer_addr() {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
                    Err(_) => Err(()),
                },
            };
            match state {
                Ok(false) => return,
                Err(()) => return self.fail(i, ErrorClass::Connect, now),
                Ok(true) => {
                    self.conns[i].connected = true;
                    // counted during warm-up too: warm connections serve the measured run
                    self.rec.connections_opened += 1;
                    if !self.flush(i, now) {
                        return;
                    }
                }
            }
        } else if writable && !self.flush(i, now) {
            return;
        }
        if readable {
            self.read(i, now, drain);
        }
    }

    fn read(&mut self, i: usize, now: Instant, drain: bool) {
        loop {
            let c = &mut self.conns[i];
            if c.rbuf.len() - c.rlen < 512 && c.rbuf.len() < RBUF_MAX {
                let n = (c.rbuf.len() * 2).clamp(RBUF_START, RBUF_MAX);
                c.rbuf.resize(n, 0);
            }
            let space = c.rbuf.len() - c.rlen;
            let Some(s) = c.sock.as_mut() else { return };
            match s.read(&mut c.rbuf[c.rlen..]) {
                Ok(0) => return self.on_eof(i, now),
                Ok(n) => {
                    c.rlen += n;
                    if now >= self.plan.measure_start {
                        self.rec.bytes_read += n as u64;
                    }
                    if !self.parse(i, now) {
                        return;
                    }
                    // A short read drained the socket; epoll reports new data
                    // as a new edge. Only a pending close must be read to EOF.
                    if n < space && !drain {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail(i, ErrorClass::Read, now),
            }
        }
    }

    fn on_eof(&mut self, i: usize, now: Instant) {
        match self.conns[i].parser.eof() {
            Ok(Some(r)) => {
                self.done.clear();
                self.done.push(r);
                if !self.deliver(i, now) {
                    return;
                }
                if self.conns[i].sock.is_none() {
                    return;
                }
                self.eof_idle(i, now)
            }
            Ok(None) => self.eof_idle(i, now),
            Err(ParseError::Truncated) | Err(ParseError::Malformed(_)) => self.fail(i, ErrorClass::Read, now),
        }
    }

    /// The server closed a connection between responses.
    fn eof_idle(&mut self, i: usize, now: Instant) {
        if !self.conns[i].inflight.is_empty() {
            return self.fail(i, ErrorClass::Read, now);
        }
        self.close(i);
        // closed load reconnects; a session user reconnects on its next request
        self.after_close(i, now, false);
    }

    /// Parse buffered bytes; returns false if the connection is gone.
    fn parse(&mut self, i: usize, now: Instant) -> bool {
        let is_head = self.plan.req.is_head;
        let c = &mut self.conns[i];
        self.done.clear();
        let mut off = 0;
        let mut bad = false;
        while off < c.rlen {
            match c.parser.advance(&c.rbuf[off..c.rlen], is_head) {
                Ok((n, Some(r))) => {
                    off += n;
                    self.done.push(r);
                    if !r.keep_alive {
                        break;
                    }
                }
                Ok((n, None)) => {
                    off += n;
                    break;
                }
                Err(_) => {
                    bad = true;
                    break;
                }
            }
        }
        if off > 0 {
            c.rbuf.copy_within(off..c.rlen, 0);
            c.rlen -= off;
        }
        if !self.deliver(i, now) {
            return false;
        }
        if bad {
            self.fail(i, ErrorClass::Malformed, now);
            return false;
        }
        if self.conns[i].sock.is_none() {
            return false;
        }
        self.flush(i, now)
    }

    /// Hand the parsed responses in `self.done` to the mode. Returns false if
    /// the connection is gone.
    fn deliver(&mut self, i: usize, now: Instant) -> bool {
        for k in 0..self.done.len() {
            let r = self.done[k];
            let Some(p) = self.conns[i].inflight.pop_front() else {
                // a response nobody asked for
                self.fail(i, ErrorClass::Malformed, now);
                return false;
            };
            self.inflight_total -= 1;
            if p.measured {
                self.rec.response(now, r.status, now - p.intended, now - p.sent);
            }
            let plan = self.plan;
            let reuse = r.keep_alive && plan.keepalive;
            match plan.kind {
                Kind::Closed { .. } => {
                    if reuse {
                        if let Some(m) = self.take(now) {
                            self.issue(i, now, now, m);
                        }
                    } else {
                        // requests pipelined behind this one fail when the server closes
                        if self.conns[i].inflight.is_empty() {
                            self.close(i);
                            self.restart.push(i);
                        }
                        return false;
                    }
                }
                Kind::Open { .. } => {
                    if reuse {
                        let c = &mut self.conns[i];
                        if c.inflight.is_empty() && !c.idle {
                            c.idle = true;
                            self.idle.push(i);
                        }
                    } else {
                        self.close(i);
                        self.after_close(i, now, false);
                        return false;
                    }
                }
                Kind::Sessions { ref think, session_requests, loop_sessions, .. } => {
                    let c = &mut self.conns[i];
                    c.session_sent += 1;
                    let finished = session_requests.is_some_and(|k| c.session_sent >= k);
                    let gone = !reuse || finished;
                    if gone {
                        self.close(i);
                    }
                    if finished && !loop_sessions {
                        self.conns[i].user = User::Done;
                        self.active_users -= 1;
                    } else {
                        let d = think.sample(&mut self.rng);
                        let c = &mut self.conns[i];
                        if finished {
                            c.session_sent = 0;
                        }
                        c.user = User::Thinking;
                        if d.is_zero() {
                            self.user_send(i, now);
                        } else {
                            self.timers.push(Reverse((now + d, i, c.user_gen)));
                        }
                    }
                    if gone || self.conns[i].sock.is_none() {
                        return false;
                    }
                }
            }
        }
        true
    }

    // ---- timeouts ------------------------------------------------------

    fn scan_timeouts(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.sock.is_none() {
                continue;
            }
            if !c.connected {
                if now.saturating_duration_since(c.opened_at) > self.plan.connect_timeout {
                    self.fail(i, ErrorClass::Connect, now);
                }
            } else if let Some(p) = c.inflight.front() {
                if now.saturating_duration_since(p.sent) > self.plan.timeout {
                    self.fail(i, ErrorClass::Timeout, now);
                }
            }
        }
    }

    // ---- closed load ---------------------------------------------------

    fn start_closed(&mut self, i: usize, now: Instant, pipeline: usize) {
        let Some(m) = self.take(now) else { return };
        if !self.open(i, now) {
            if m {
                self.rec.error(now, ErrorClass::Connect);
            }
            self.restart.push(i);
            return;
        }
        self.issue(i, now, now, m);
        for _ in 1..pipeline {
            match self.take(now) {
                Some(m) => self.issue(i, now, now, m),
                None => break,
            }
        }
    }

    fn closed_tick(&mut self, now: Instant, pipeline: usize) {
        if self.restart.is_empty() {
            return;
        }
        let list = std::mem::take(&mut self.restart);
        for &i in &list {
            if self.conns[i].sock.is_none() {
                self.start_closed(i, now, pipeline);
            }
        }
        // restart is refilled only by failed connects; keep its allocation
        let mut list = list;
        list.clear();
        if self.restart.is_empty() {
            self.restart = list;
        }
    }

    // ---- open load -----------------------------------------------------

    fn open_tick(&mut self, now: Instant) {
        let poisson = matches!(self.plan.kind, Kind::Open { poisson: true, .. });
        while let Some(due) = self.next_due {
            if due > now {
                break;
            }
            if due >= self.plan.measure_start && self.budget == Some(0) {
                self.next_due = None;
                break;
            }
            if let Some(b) = &mut self.budget {
                if due >= self.plan.measure_start {
                    *b -= 1;
                }
            }
            self.backlog.push_back((due, false));
            self.next_n += if poisson { self.exp_step() } else { self.plan.threads as f64 };
            self.next_due = self.due_of(self.next_n);
        }
        while let Some(&(intended, _)) = self.backlog.front() {
            let i = match self.pop_idle() {
                Some(i) => i,
                None if self.pool < self.pool_max => {
                    let i = self.free_slots.pop().unwrap_or_else(|| {
                        self.conns.push(Conn::new(now));
                        self.conns.len() - 1
                    });
                    self.pool += 1;
                    if !self.open(i, now) {
                        self.backlog.pop_front();
                        if intended >= self.plan.measure_start {
                            self.rec.error(now, ErrorClass::Connect);
                        }
                        self.pool -= 1;
                        self.free_slots.push(i);
                        continue;
                    }
                    i
                }
                None => break,
            };
            self.backlog.pop_front();
            let measured = intended >= self.plan.measure_start;
            self.issue(i, intended, now, measured);
            self.flush(i, now);
            self.last_send = Some(now);
        }
        // requests still waiting for a connection were not sent on schedule
        for e in self.backlog.iter_mut().rev() {
            if e.1 {
                break;
            }
            e.1 = true;
            if e.0 >= self.plan.measure_start {
                self.rec.missed_sends += 1;
            }
        }
    }

    fn pop_idle(&mut self) -> Option<usize> {
        while let Some(i) = self.idle.pop() {
            let c = &mut self.conns[i];
            if c.idle && c.sock.is_some() {
                c.idle = false;
                return Some(i);
            }
        }
        None
    }

    // ---- sessions ------------------------------------------------------

    fn sessions_tick(&mut self, now: Instant) {
        let plan = self.plan;
        let Kind::Sessions { ref schedule, max_users, .. } = plan.kind else { return };
        let t = now.saturating_duration_since(self.plan.start).as_secs_f64();
        let target = (schedule.value_at(t).floor() as usize).min(max_users);
        let (threads, tid) = (self.plan.threads, self.tid);
        let local = if target > tid { (target - tid).div_ceil(threads) } else { 0 };
        let local = local.min(self.conns.len());
        if local > self.local_users {
            for j in self.local_users..local {
                let c = &mut self.conns[j];
                if c.user == User::Off {
                    c.user = User::Active;
                    c.session_sent = 0;
                    c.user_gen = c.user_gen.wrapping_add(1);
                    self.active_users += 1;
                    self.user_send(j, now);
                }
            }
        } else {
            for j in local..self.local_users {
                let c = &mut self.conns[j];
                if matches!(c.user, User::Active | User::Thinking) {
                    c.user = User::Off;
                    c.user_gen = c.user_gen.wrapping_add(1);
                    self.active_users -= 1;
                    self.discard(j);
                    self.close(j);
                }
            }
        }
        self.local_users = local;
        while let Some(&Reverse((t, j, g))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let c = &self.conns[j];
            if c.user_gen == g && c.user == User::Thinking {
                self.user_send(j, now);
            }
        }
    }

    /// User `j` sends its next request, connecting first if needed.
    fn user_send(&mut self, j: usize, now: Instant) {
        let Some(m) = self.take(now) else { return };
        self.conns[j].user = User::Active;
        if self.conns[j].sock.is_none() && !self.open(j, now) {
            if m {
                self.rec.error(now, ErrorClass::Connect);
            }
            self.after_close(j, now, true);
            return;
        }
        self.issue(j, now, now, m);
        self.flush(j, now);
    }
}
