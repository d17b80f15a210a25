//! The noise thread's event loop: non-blocking sockets on a mio poll of its
//! own, edge-triggered, with one timer per connection in a heap (slowloris's
//! next byte, a slow reader's next read, an answer's deadline, a reconnect).
//! Every connection that ends is counted by how, and replaced after
//! `BACKOFF`, so the shape keeps its connections held.

use super::garbage::{self, Kind};
use super::rapid_reset;
use super::sock;
use super::{Counters, NoiseConfig, Report, Shape};
use crate::protocol::response::ResponseParser;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Wait before replacing a connection that ended, so a server that closes
/// at once is not hammered by reconnects.
const BACKOFF: Duration = Duration::from_millis(100);
/// Garbage: how long an answer (or, after `Connection: close`, the close) may take.
pub const NO_ANSWER: Duration = Duration::from_secs(2);
/// Slow reader: it reads every this often, its rate's share of a second.
pub const READ_TICK: Duration = Duration::from_millis(500);
/// Slow reader: SO_RCVBUF, small so the server feels the slow reads at once.
const SLOW_RCVBUF: usize = 4096;
/// The loop looks at the stop flag at least this often.
const CHECK_STOP: Duration = Duration::from_millis(50);
/// A batch of connects or timers reads the clock every this many.
const CLOCK_EVERY: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting to reconnect.
    Down,
    Connecting,
    Open,
}

#[derive(Debug, Clone, Copy)]
enum End {
    Closed,
    Reset,
    Timeout,
}

struct Conn {
    sock: Option<TcpStream>,
    phase: Phase,
    /// The connect started, or the request in flight was sent.
    since: Instant,
    /// Timers carry the generation they were set in; older ones are stale.
    gen: u32,
    out: Vec<u8>,
    wpos: usize,
    /// Unparsed bytes of an answer (a partial head).
    rbuf: Vec<u8>,
    parser: ResponseParser,
    /// A request is in flight and no byte of its answer has arrived.
    waiting: bool,
    /// The answer is not HTTP: what follows is dropped until the end.
    unreadable: bool,
    /// Slowloris: header bytes dripped on this connection.
    sent: u64,
    /// Garbage: requests this slot sent, over all its connections (so each
    /// slot goes through every kind, whichever ones the server closes on).
    kinds: u64,
    /// Rapid reset: the next stream id.
    stream: u32,
}

impl Conn {
    fn new(now: Instant) -> Conn {
        Conn {
            sock: None,
            phase: Phase::Down,
            since: now,
            gen: 0,
            out: Vec::new(),
            wpos: 0,
            rbuf: Vec::new(),
            parser: ResponseParser::new(),
            waiting: false,
            unreadable: false,
            sent: 0,
            kinds: 0,
            stream: 1,
        }
    }
}

struct Driver<'a> {
    cfg: &'a NoiseConfig,
    addr: SocketAddr,
    poll: Poll,
    conns: Vec<Conn>,
    timers: BinaryHeap<Reverse<(Instant, usize, u32)>>,
    c: Counters,
    held: u64,
    /// Garbage requests sent by all connections (varies paths and bytes).
    seq: u64,
    scratch: Vec<u8>,
    end: Option<Instant>,
    ended: bool,
}

/// Run the noise from `start` until `end` (or `stop`, or a signal).
pub fn run(cfg: &NoiseConfig, addr: SocketAddr, start: Instant, end: Option<Instant>, stop: &AtomicBool) -> io::Result<Report> {
    let mut d = Driver {
        cfg,
        addr,
        poll: Poll::new()?,
        conns: Vec::new(),
        timers: BinaryHeap::new(),
        c: Counters::default(),
        held: 0,
        seq: 0,
        scratch: vec![0; 64 * 1024],
        end,
        ended: false,
    };
    let now = Instant::now();
    if start > now {
        std::thread::sleep(start - now);
    }
    let now = Instant::now();
    for i in 0..cfg.connections as usize {
        d.conns.push(Conn::new(now));
        if i % CLOCK_EVERY == 0 && d.past_end() {
            break;
        }
        d.connect(i, now);
    }
    let mut events = Events::with_capacity(1024);
    loop {
        let now = Instant::now();
        if d.past_end() || stop.load(Ordering::Relaxed) || crate::signals::interrupted() {
            break;
        }
        d.fire_timers(now);
        let mut wake = now + CHECK_STOP;
        if let Some(Reverse((t, _, _))) = d.timers.peek() {
            wake = wake.min(*t);
        }
        if let Some(e) = end {
            wake = wake.min(e);
        }
        match d.poll.poll(&mut events, Some(wake.saturating_duration_since(now))) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => r?,
        }
        if d.past_end() {
            break; // what arrives after the end is not part of the run
        }
        let now = Instant::now();
        for ev in events.iter() {
            let readable = ev.is_readable() || ev.is_read_closed() || ev.is_error();
            d.on_event(ev.token().0, now, readable, ev.is_writable());
        }
    }
    Ok(d.finish())
}

impl Driver<'_> {
    fn past_end(&mut self) -> bool {
        if !self.ended && self.end.is_some_and(|e| Instant::now() >= e) {
            self.ended = true;
        }
        self.ended
    }

    fn set_timer(&mut self, i: usize, at: Instant) {
        let c = &mut self.conns[i];
        c.gen = c.gen.wrapping_add(1);
        self.timers.push(Reverse((at, i, c.gen)));
    }

    /// Handle every timer due by `now`.
    fn fire_timers(&mut self, now: Instant) {
        let mut fired = 0;
        while let Some(&Reverse((at, i, gen))) = self.timers.peek() {
            if at > now {
                return;
            }
            self.timers.pop();
            if self.conns[i].gen != gen {
                continue; // replaced by a later timer
            }
            fired += 1;
            if fired % CLOCK_EVERY == 0 && self.past_end() {
                return;
            }
            self.on_timer(i, now);
        }
    }

    fn on_timer(&mut self, i: usize, now: Instant) {
        match self.conns[i].phase {
            Phase::Down => self.connect(i, now),
            Phase::Connecting => {
                self.c.connect_errors += 1;
                self.back_off(i, now);
            }
            Phase::Open => match self.cfg.shape {
                Shape::Slowloris => {
                    let c = &mut self.conns[i];
                    c.out.push(garbage::slowloris_byte(c.sent));
                    c.sent += 1;
                    self.set_timer(i, now + self.cfg.interval);
                    self.flush(i, now);
                }
                Shape::Idle => {}
                Shape::Garbage => self.end(i, End::Timeout, now),
                Shape::SlowReader => self.slow_read(i, now),
                Shape::RapidReset => {
                    let c = &mut self.conns[i];
                    rapid_reset::burst(&mut c.out, &self.cfg.h2_block, &mut c.stream);
                    self.c.requests_sent += u64::from(rapid_reset::BURST);
                    self.set_timer(i, now + self.cfg.interval);
                    self.flush(i, now);
                }
            },
        }
    }

    /// Start connecting slot `i`; a failure is counted and retried later.
    fn connect(&mut self, i: usize, now: Instant) {
        let rcvbuf = (self.cfg.shape == Shape::SlowReader).then_some(SLOW_RCVBUF);
        let s = sock::connect(self.addr, rcvbuf).and_then(|mut s| {
            self.poll.registry().register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)?;
            Ok(s)
        });
        match s {
            Ok(s) => {
                let c = &mut self.conns[i];
                c.sock = Some(s);
                c.phase = Phase::Connecting;
                c.since = now;
                self.set_timer(i, now + self.cfg.connect_timeout);
            }
            Err(_) => {
                self.c.connect_errors += 1;
                self.back_off(i, now);
            }
        }
    }

    /// Drop `i`'s socket (if any) and reconnect after the back-off.
    fn back_off(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.sock.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.phase = Phase::Down;
        self.set_timer(i, now + BACKOFF);
    }

    /// An established connection ended: count how, and replace it.
    fn end(&mut self, i: usize, how: End, now: Instant) {
        match how {
            End::Closed => self.c.closed += 1,
            End::Reset => self.c.reset += 1,
            End::Timeout => self.c.timeout += 1,
        }
        self.held -= 1;
        self.back_off(i, now);
    }

    fn on_event(&mut self, i: usize, now: Instant, readable: bool, writable: bool) {
        let Some(c) = self.conns.get(i) else { return };
        match c.phase {
            Phase::Down => return, // a stale event
            Phase::Connecting => {
                let Some(s) = c.sock.as_ref() else { return };
                let state = crate::transport::tcp::connect_state(s);
                match state {
                    Ok(false) => return,
                    Err(()) => {
                        self.c.connect_errors += 1;
                        return self.back_off(i, now);
                    }
                    Ok(true) => {
                        if !self.opened(i, now) {
                            return;
                        }
                    }
                }
            }
            Phase::Open => {
                if writable && !self.flush(i, now) {
                    return;
                }
            }
        }
        // a slow reader reads on its timer only, at its rate
        if readable && self.cfg.shape != Shape::SlowReader {
            self.read_all(i, now);
        }
    }

    /// Connection `i` is established: it begins to misbehave. False if it
    /// failed at once.
    fn opened(&mut self, i: usize, now: Instant) -> bool {
        self.c.opened += 1;
        self.held += 1;
        self.c.held_peak = self.c.held_peak.max(self.held);
        let c = &mut self.conns[i];
        c.phase = Phase::Open;
        c.out.clear();
        c.wpos = 0;
        c.rbuf.clear();
        c.parser.reset();
        c.unreadable = false;
        c.waiting = false;
        c.sent = 0;
        match self.cfg.shape {
            Shape::Slowloris => {
                garbage::slowloris_head(&mut c.out, &self.cfg.authority);
                self.c.requests_sent += 1;
                // spread the connections' bytes over the interval
                let phase = (i as f64 * 0.618_034).fract();
                self.set_timer(i, now + self.cfg.interval.mul_f64(1.0 - phase));
            }
            Shape::Idle => {}
            Shape::Garbage => self.send_garbage(i, now),
            Shape::SlowReader => {
                self.send_get(i, now);
                self.set_timer(i, now + READ_TICK);
            }
            Shape::RapidReset => {
                rapid_reset::start(&mut c.out);
                c.stream = 1;
                self.set_timer(i, now + self.cfg.interval);
            }
        }
        self.flush(i, now)
    }

    /// Queue the connection's next malformed request, with its deadline.
    fn send_garbage(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        garbage::write(&mut c.out, Kind::nth(c.kinds), self.seq, &self.cfg.authority);
        c.kinds += 1;
        c.waiting = true;
        c.since = now;
        self.seq += 1;
        self.c.requests_sent += 1;
        self.set_timer(i, now + NO_ANSWER);
    }

    /// Queue a slow reader's request.
    fn send_get(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        garbage::get(&mut c.out, &self.cfg.path, &self.cfg.authority);
        c.waiting = true;
        c.since = now;
        self.c.requests_sent += 1;
    }

    /// Write what is queued on `i`. False if the connection ended.
    fn flush(&mut self, i: usize, now: Instant) -> bool {
        let c = &mut self.conns[i];
        let Some(s) = c.sock.as_mut() else { return false };
        while c.wpos < c.out.len() {
            match s.write(&c.out[c.wpos..]) {
                Ok(0) => break,
                Ok(n) => {
                    c.wpos += n;
                    self.c.bytes_sent += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if c.wpos < c.out.len() {
            self.end(i, End::Reset, now);
            return false;
        }
        c.out.clear();
        c.wpos = 0;
        true
    }

    /// Read until `i` would block (edge-triggered) or ends.
    fn read_all(&mut self, i: usize, now: Instant) {
        while self.read_some(i, now, usize::MAX).is_some_and(|n| n > 0) {}
    }

    /// One read of at most `most` bytes, parsed. Some(bytes) or, if the
    /// connection ended, None; Some(0): nothing to read now.
    fn read_some(&mut self, i: usize, now: Instant, most: usize) -> Option<usize> {
        let n = most.min(self.scratch.len());
        let s = self.conns[i].sock.as_mut()?;
        let r = loop {
            match s.read(&mut self.scratch[..n]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => break r,
            }
        };
        match r {
            Ok(0) => {
                self.on_eof(i, now);
                None
            }
            Ok(n) => {
                self.c.bytes_received += n as u64;
                self.received(i, now, n).then_some(n)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Some(0),
            Err(_) => {
                self.end(i, End::Reset, now);
                None
            }
        }
    }

    /// `n` bytes of an answer are in `scratch`: count the responses they
    /// complete and go on. False if the connection ended.
    fn received(&mut self, i: usize, now: Instant, n: usize) -> bool {
        let c = &mut self.conns[i];
        c.waiting = false;
        if c.unreadable {
            return true;
        }
        c.rbuf.extend_from_slice(&self.scratch[..n]);
        if self.cfg.shape == Shape::RapidReset {
            // HTTP/2 frames: SETTINGS and PING answered, a GOAWAY counted (as an answer of class "other")
            let (used, goaways) = rapid_reset::scan(&c.rbuf, &mut c.out);
            c.rbuf.drain(..used);
            for _ in 0..goaways {
                self.c.response(0);
            }
            return self.flush(i, now);
        }
        let mut last = None;
        loop {
            match c.parser.advance(&c.rbuf, false) {
                Ok((used, done)) => {
                    c.rbuf.drain(..used);
                    if let Some(r) = done {
                        self.c.response(r.status);
                        last = Some(r.keep_alive);
                    } else if used == 0 || c.rbuf.is_empty() {
                        break;
                    }
                }
                Err(_) => {
                    // not HTTP: counted once; the rest is dropped
                    self.c.response(0);
                    c.unreadable = true;
                    c.rbuf.clear();
                    break;
                }
            }
        }
        if c.rbuf.capacity() > 16 * 1024 && c.rbuf.is_empty() {
            c.rbuf = Vec::new();
        }
        match last {
            Some(keep_alive) => self.answered(i, now, keep_alive),
            None => true,
        }
    }

    /// A whole response arrived on `i`: the next request, where the shape
    /// has one. False if the connection ended.
    fn answered(&mut self, i: usize, now: Instant, keep_alive: bool) -> bool {
        match self.cfg.shape {
            Shape::Garbage if keep_alive => {
                self.send_garbage(i, now);
                self.flush(i, now)
            }
            // the server is closing: wait for its FIN, at most NO_ANSWER
            Shape::Garbage => {
                self.set_timer(i, now + NO_ANSWER);
                true
            }
            Shape::SlowReader if keep_alive => {
                self.send_get(i, now);
                self.flush(i, now)
            }
            _ => true,
        }
    }

    /// The server closed `i` (FIN): a close-delimited answer ends here.
    fn on_eof(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        if !c.unreadable {
            match c.parser.eof() {
                Ok(Some(r)) => self.c.response(r.status),
                // bytes that never made a response head
                Ok(None) if !c.rbuf.is_empty() => self.c.response(0),
                _ => {}
            }
        }
        self.end(i, End::Closed, now);
    }

    /// A slow reader's turn: read its rate's share, then wait a tick.
    fn slow_read(&mut self, i: usize, now: Instant) {
        let c = &self.conns[i];
        if c.waiting && now.saturating_duration_since(c.since) > self.cfg.timeout {
            return self.end(i, End::Timeout, now);
        }
        let mut left = ((self.cfg.read_rate as f64 * READ_TICK.as_secs_f64()).round() as usize).max(1);
        while left > 0 {
            match self.read_some(i, now, left) {
                None => return, // it ended
                Some(0) => break,
                Some(n) => left = left.saturating_sub(n),
            }
        }
        self.set_timer(i, now + READ_TICK);
    }

    /// The run is over: what is still held is counted so.
    fn finish(mut self) -> Report {
        self.c.held_at_end = self.held;
        self.c.open_at_end = self.held;
        for c in &mut self.conns {
            if let Some(mut s) = c.sock.take() {
                let _ = self.poll.registry().deregister(&mut s);
            }
        }
        Report { shape: self.cfg.shape, connections: self.cfg.connections, counters: self.c }
    }
}
