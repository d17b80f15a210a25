//! The connection machinery of one worker thread: sockets, buffers, response
//! parsing, timeouts and reconnects, for whichever load model drives it. Hot
//! path per request: copy the pre-serialized request into a reused write
//! buffer, one write, one read into a reused buffer, in-place parse, one
//! histogram record — no allocation.

use crate::models::{Io, Model};
use crate::record::{ErrorClass, Recorder};
use crate::request::RequestBytes;
use crate::response::{ParseError, Response, ResponseParser, MAX_HEAD};
use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const RBUF_START: usize = 4096;
const RBUF_MAX: usize = MAX_HEAD * 2;

/// Everything the workers share, read-only.
#[derive(Debug, Clone)]
pub struct Plan {
    pub addr: SocketAddr,
    pub req: RequestBytes,
    pub keepalive: bool,
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

#[derive(Debug, Clone, Copy)]
struct Pending {
    intended: Instant,
    sent: Instant,
    measured: bool,
}

struct Conn {
    sock: Option<TcpStream>,
    connected: bool,
    opened_at: Instant,
    wbuf: Vec<u8>,
    wpos: usize,
    /// In `Net::dirty`: has bytes to write once the model returns.
    dirty: bool,
    rbuf: Vec<u8>,
    rlen: usize,
    parser: ResponseParser,
    inflight: VecDeque<Pending>,
}

pub struct Net<'a> {
    plan: &'a Plan,
    /// A handle on the worker's poll (a dup of its epoll fd).
    registry: Registry,
    conns: Vec<Conn>,
    pub rec: Recorder,
    rng: Pcg64Mcg,
    scratch: Vec<u8>,
    done: Vec<Response>,
    dirty: Vec<usize>,
    /// Requests the -n budget still allows this thread (None: no budget).
    pub budget: Option<u64>,
    pub inflight_total: usize,
    pub active_conns: u64,
    /// The plan's end has passed (read from the clock within a loop turn).
    pub ended: bool,
    takes: u32,
}

/// `take` reads the clock every this many calls: one loop turn may start
/// thousands of requests (users due together, each connect slow when the
/// ephemeral ports run short), and must not run past the plan's end.
const CLOCK_EVERY: u32 = 64;

impl<'a> Io for Net<'a> {
    fn take(&mut self, intended: Instant) -> Option<bool> {
        if self.plan.end.is_some_and(|e| intended >= e) || self.ended {
            return None;
        }
        self.takes = self.takes.wrapping_add(1);
        if self.takes % CLOCK_EVERY == 0 && self.past_end() {
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

    fn add_slot(&mut self) -> usize {
        self.conns.push(Conn {
            sock: None,
            connected: false,
            opened_at: self.plan.start,
            wbuf: Vec::new(),
            wpos: 0,
            dirty: false,
            rbuf: Vec::new(),
            rlen: 0,
            parser: ResponseParser::new(),
            inflight: VecDeque::new(),
        });
        self.conns.len() - 1
    }

    fn connect(&mut self, i: usize, now: Instant) -> bool {
        // a connect costs far more than a clock reading (milliseconds when ports run short)
        if self.past_end() {
            return false;
        }
        let Ok(mut s) = TcpStream::connect(self.plan.addr) else { return false };
        let _ = s.set_nodelay(true);
        if self.registry.register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE).is_err() {
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

    fn is_open(&self, i: usize) -> bool {
        self.conns[i].sock.is_some()
    }

    fn in_flight(&self, i: usize) -> usize {
        self.conns[i].inflight.len()
    }

    #[inline]
    fn send(&mut self, i: usize, intended: Instant, now: Instant, measured: bool) {
        let c = &mut self.conns[i];
        self.plan.req.write_to(&mut self.rng, &mut c.wbuf, &mut self.scratch);
        c.inflight.push_back(Pending { intended, sent: now, measured });
        self.inflight_total += 1;
        if !c.dirty {
            c.dirty = true;
            self.dirty.push(i);
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.sock.take() {
            let _ = self.registry.deregister(&mut s);
            self.active_conns -= 1;
        }
        c.connected = false;
        c.wbuf.clear();
        c.wpos = 0;
        c.rlen = 0;
        c.parser.reset();
    }

    fn discard(&mut self, i: usize) {
        let n = self.conns[i].inflight.len();
        self.conns[i].inflight.clear();
        self.inflight_total -= n;
    }

    fn connect_error(&mut self, now: Instant) {
        if self.ended {
            return; // not a failure: the run ended before the connect
        }
        self.rec.error(now, ErrorClass::Connect);
    }
}

impl<'a> Net<'a> {
    pub fn new(plan: &'a Plan, registry: Registry, rec: Recorder, rng: Pcg64Mcg, budget: Option<u64>) -> Net<'a> {
        Net {
            plan,
            registry,
            conns: Vec::new(),
            rec,
            rng,
            scratch: Vec::new(),
            done: Vec::with_capacity(64),
            dirty: Vec::new(),
            budget,
            inflight_total: 0,
            active_conns: 0,
            ended: false,
            takes: 0,
        }
    }

    /// Has the plan's end passed? Sticky: once true, nothing more starts.
    pub fn past_end(&mut self) -> bool {
        if !self.ended && self.plan.end.is_some_and(|e| Instant::now() >= e) {
            self.ended = true;
        }
        self.ended
    }

    /// Write what models queued; a failed write fails its connection, which
    /// the model hears about (and may queue more).
    pub fn flush_dirty<M: Model>(&mut self, m: &mut M, now: Instant) {
        while let Some(i) = self.dirty.pop() {
            self.conns[i].dirty = false;
            if self.conns[i].sock.is_some() {
                self.flush(m, i, now);
            }
        }
    }

    /// The connection failed: every request on it ends with `class`.
    fn fail<M: Model>(&mut self, m: &mut M, i: usize, class: ErrorClass, now: Instant) {
        let c = &mut self.conns[i];
        while let Some(p) = c.inflight.pop_front() {
            self.inflight_total -= 1;
            if !p.measured {
                continue;
            }
            if class == ErrorClass::Timeout {
                // it took at least its timeout (those queued behind it: their age)
                let waited = (now - p.intended).min(p.sent - p.intended + self.plan.timeout);
                self.rec.timeout(now, waited);
            } else {
                self.rec.error(now, class);
            }
        }
        self.close(i);
        m.on_closed(self, i, now, Some(class));
    }

    /// Write what is buffered. Returns false if the connection failed.
    fn flush<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) -> bool {
        let c = &mut self.conns[i];
        if !c.connected {
            return true;
        }
        while c.wpos < c.wbuf.len() {
            let Some(s) = c.sock.as_mut() else { return true };
            match s.write(&c.wbuf[c.wpos..]) {
                Ok(0) => break,
                Ok(n) => c.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if c.wpos == c.wbuf.len() {
            c.wbuf.clear();
            c.wpos = 0;
            return true;
        }
        self.fail(m, i, ErrorClass::Write, now);
        false
    }

    /// Readiness on connection `i`.
    pub fn on_event<M: Model>(&mut self, m: &mut M, i: usize, now: Instant, readable: bool, writable: bool, drain: bool) {
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
                Err(()) => return self.fail(m, i, ErrorClass::Connect, now),
                Ok(true) => {
                    self.conns[i].connected = true;
                    // counted during warm-up too: warm connections serve the measured run
                    self.rec.connections_opened += 1;
                    if !self.flush(m, i, now) {
                        return;
                    }
                }
            }
        } else if writable && !self.flush(m, i, now) {
            return;
        }
        if readable {
            self.read(m, i, now, drain);
        }
    }

    fn read<M: Model>(&mut self, m: &mut M, i: usize, now: Instant, drain: bool) {
        loop {
            let c = &mut self.conns[i];
            if c.rbuf.len() - c.rlen < 512 && c.rbuf.len() < RBUF_MAX {
                let n = (c.rbuf.len() * 2).clamp(RBUF_START, RBUF_MAX);
                c.rbuf.resize(n, 0);
            }
            let space = c.rbuf.len() - c.rlen;
            let Some(s) = c.sock.as_mut() else { return };
            match s.read(&mut c.rbuf[c.rlen..]) {
                Ok(0) => return self.on_eof(m, i, now),
                Ok(n) => {
                    c.rlen += n;
                    if now >= self.plan.measure_start {
                        self.rec.bytes_read += n as u64;
                    }
                    if !self.parse(m, i, now) {
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
                Err(_) => return self.fail(m, i, ErrorClass::Read, now),
            }
        }
    }

    fn on_eof<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) {
        match self.conns[i].parser.eof() {
            Ok(Some(r)) => {
                self.done.clear();
                self.done.push(r);
                if self.deliver(m, i, now) && self.conns[i].sock.is_some() {
                    self.eof_idle(m, i, now)
                }
            }
            Ok(None) => self.eof_idle(m, i, now),
            Err(ParseError::Truncated) | Err(ParseError::Malformed(_)) => self.fail(m, i, ErrorClass::Read, now),
        }
    }

    /// The server closed a connection between responses.
    fn eof_idle<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) {
        if !self.conns[i].inflight.is_empty() {
            return self.fail(m, i, ErrorClass::Read, now);
        }
        self.close(i);
        m.on_closed(self, i, now, None);
    }

    /// Parse buffered bytes; returns false if the connection is not to be
    /// read further.
    fn parse<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) -> bool {
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
        if !self.deliver(m, i, now) {
            return false;
        }
        if bad {
            self.fail(m, i, ErrorClass::Malformed, now);
            return false;
        }
        self.conns[i].sock.is_some()
    }

    /// Record the responses in `self.done` and hand them to the model.
    /// Returns false if the connection is not to be read further.
    fn deliver<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) -> bool {
        for k in 0..self.done.len() {
            let r = self.done[k];
            let Some(p) = self.conns[i].inflight.pop_front() else {
                // a response nobody asked for
                self.fail(m, i, ErrorClass::Malformed, now);
                return false;
            };
            self.inflight_total -= 1;
            if p.measured {
                self.rec.response(now, r.status, now - p.intended, now - p.sent);
            }
            let reuse = r.keep_alive && self.plan.keepalive;
            if !m.on_response(self, i, now, reuse) {
                return false;
            }
        }
        true
    }

    /// Fail connections whose connect or oldest request took too long.
    pub fn scan_timeouts<M: Model>(&mut self, m: &mut M, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.sock.is_none() {
                continue;
            }
            if !c.connected {
                if now.saturating_duration_since(c.opened_at) > self.plan.connect_timeout {
                    self.fail(m, i, ErrorClass::Connect, now);
                }
            } else if let Some(p) = c.inflight.front() {
                if now.saturating_duration_since(p.sent) > self.plan.timeout {
                    self.fail(m, i, ErrorClass::Timeout, now);
                }
            }
        }
    }

    /// Requests in flight at the end count at their age (they took at least
    /// that long). That is normal (closed load always has C in flight); only
    /// those already waiting a long time mean a stalled connection.
    pub fn end_of_run(&mut self, end: Instant) {
        for c in &self.conns {
            for p in c.inflight.iter().filter(|p| p.measured) {
                let age = end.saturating_duration_since(p.intended);
                self.rec.in_flight += 1;
                self.rec.unserved(age, 1);
                if age >= crate::record::STALLED_AFTER {
                    self.rec.unanswered += 1;
                    self.rec.unanswered_oldest_us = self.rec.unanswered_oldest_us.max(age.as_micros() as u64);
                }
            }
        }
    }
}
