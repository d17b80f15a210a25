//! The connection machinery of one worker thread: buffers, requests in
//! flight, response parsing, timeouts and reconnects, for whichever load model
//! drives it, over either I/O backend (`Sockets`: `epoll` or `uring`). Hot
//! path per request: copy the pre-serialized request into a reused write
//! buffer, write it, read into a reused buffer, in-place parse, one histogram
//! record — no allocation. An `https://` connection adds rustls between the
//! socket and these buffers (`tls`).

use crate::fairness::SlotCounts;
use crate::models::{Io, Model};
use crate::record::{ErrorClass, Recorder};
use crate::request::RequestBytes;
use crate::response::{ParseError, Response, ResponseParser, MAX_HEAD};
use crate::tls::{HandshakeError, TlsConn, TlsOptions, TlsStats};
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

pub(crate) const RBUF_START: usize = 4096;
const RBUF_MAX: usize = MAX_HEAD * 2;

/// Which I/O backend the workers use (`--io`, resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Epoll,
    Uring,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Epoll => "epoll",
            Backend::Uring => "uring",
        }
    }
}

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
    pub io: Backend,
    /// Load starts (warm-up included); schedules count from here.
    pub start: Instant,
    pub measure_start: Instant,
    /// None: run until the request budget is used up.
    pub end: Option<Instant>,
    /// `https://`: every connection speaks TLS with these options.
    pub tls: Option<TlsOptions>,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    intended: Instant,
    sent: Instant,
    measured: bool,
}

pub(crate) struct Conn {
    /// A socket is open (connecting or connected) in the backend.
    pub(crate) open: bool,
    pub(crate) connected: bool,
    opened_at: Instant,
    /// Requests serialized and not yet handed to the backend.
    pub(crate) wbuf: Vec<u8>,
    pub(crate) wpos: usize,
    /// In `Net::dirty`: has bytes to write once the model returns.
    dirty: bool,
    pub(crate) rbuf: Vec<u8>,
    pub(crate) rlen: usize,
    parser: ResponseParser,
    inflight: VecDeque<Pending>,
    /// TLS state from the TCP connect on (https only).
    pub(crate) tls: Option<Box<TlsConn>>,
}

/// One I/O backend's sockets: it opens and closes them, writes what
/// `Net::next_dirty` hands it, and waits for I/O, reporting to `Net`.
pub trait Sockets: Sized {
    /// Start connecting slot `i` to `addr`. False: it failed at once.
    fn connect(&mut self, i: usize, addr: SocketAddr) -> bool;
    /// Close slot `i`'s socket; nothing more is reported for it.
    fn close(&mut self, i: usize);
    /// Write what the model queued on every connection that has new requests.
    fn flush_dirty<M: Model>(net: &mut Net<'_, Self>, m: &mut M, now: Instant);
    /// Wait for I/O until `wake` at the latest and report what happened.
    /// Nothing after the plan's end is reported.
    fn wait<M: Model>(net: &mut Net<'_, Self>, m: &mut M, wake: Instant, now: Instant) -> io::Result<()>;
}

pub struct Net<'a, S: Sockets> {
    pub(crate) plan: &'a Plan,
    pub(crate) sock: S,
    pub(crate) conns: Vec<Conn>,
    pub rec: Recorder,
    /// Completions per connection slot in the measured window (closed load, sessions).
    pub fair: Option<SlotCounts>,
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

impl<'a, S: Sockets> Io for Net<'a, S> {
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
            open: false,
            connected: false,
            opened_at: self.plan.start,
            wbuf: Vec::new(),
            wpos: 0,
            dirty: false,
            rbuf: Vec::new(),
            rlen: 0,
            parser: ResponseParser::new(),
            inflight: VecDeque::new(),
            tls: None,
        });
        self.conns.len() - 1
    }

    fn connect(&mut self, i: usize, now: Instant) -> bool {
        // a connect costs far more than a clock reading (milliseconds when ports run short)
        if self.past_end() {
            return false;
        }
        if !self.sock.connect(i, self.plan.addr) {
            return false;
        }
        let c = &mut self.conns[i];
        c.open = true;
        c.connected = false;
        c.opened_at = now;
        c.rlen = 0;
        c.parser.reset();
        c.tls = None;
        if c.rbuf.is_empty() {
            c.rbuf.resize(RBUF_START, 0);
        }
        self.active_conns += 1;
        true
    }

    fn is_open(&self, i: usize) -> bool {
        self.conns[i].open
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
        if c.open {
            c.open = false;
            self.sock.close(i);
            self.active_conns -= 1;
        }
        c.connected = false;
        c.wbuf.clear();
        c.wpos = 0;
        c.rlen = 0;
        c.parser.reset();
        c.tls = None;
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

impl<'a, S: Sockets> Net<'a, S> {
    pub fn new(plan: &'a Plan, sock: S, mut rec: Recorder, rng: Pcg64Mcg, budget: Option<u64>) -> Net<'a, S> {
        if plan.tls.is_some() {
            rec.tls = Some(TlsStats::default());
        }
        Net {
            plan,
            sock,
            conns: Vec::new(),
            rec,
            fair: None,
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

    /// The next connection with requests queued since the last flush.
    pub(crate) fn next_dirty(&mut self) -> Option<usize> {
        let i = self.dirty.pop()?;
        self.conns[i].dirty = false;
        Some(i)
    }

    /// The next flush writes connection `i` (TLS: records rustls has to send).
    pub(crate) fn mark_dirty(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.dirty {
            c.dirty = true;
            self.dirty.push(i);
        }
    }

    /// The connection failed: every request on it ends with `class`.
    pub(crate) fn fail<M: Model>(&mut self, m: &mut M, i: usize, mut class: ErrorClass, now: Instant) {
        if class != ErrorClass::Connect && self.plan.tls.is_some() && self.handshaking(i) {
            // reset or closed before the TLS handshake completed: its requests never went out
            self.count_handshake_error(HandshakeError::Reset, now);
            class = ErrorClass::Connect;
        }
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

    /// Connection `i`'s connect completed: it is counted (warm-up too: warm
    /// connections serve the measured run) and may be written to (over TLS:
    /// the handshake starts). False: it failed.
    pub(crate) fn on_connected<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) -> bool {
        self.conns[i].connected = true;
        self.rec.connections_opened += 1;
        if let Some(opts) = &self.plan.tls {
            match TlsConn::new(opts, now) {
                Ok(t) => self.conns[i].tls = Some(Box::new(t)),
                Err(_) => {
                    self.fail_handshake(m, i, HandshakeError::Alert, now);
                    return false;
                }
            }
        }
        true
    }

    /// Room to read into on `i` (its buffer grows to a bound as needed).
    pub(crate) fn spare(&mut self, i: usize) -> &mut [u8] {
        let c = &mut self.conns[i];
        if c.rbuf.len() - c.rlen < 512 && c.rbuf.len() < RBUF_MAX {
            let n = (c.rbuf.len() * 2).clamp(RBUF_START, RBUF_MAX);
            c.rbuf.resize(n, 0);
        }
        &mut c.rbuf[c.rlen..]
    }

    /// `n` bytes arrived in `spare(i)`: parse them. Returns false if the
    /// connection is not to be read further.
    pub(crate) fn received<M: Model>(&mut self, m: &mut M, i: usize, now: Instant, n: usize) -> bool {
        self.conns[i].rlen += n;
        if now >= self.plan.measure_start {
            self.rec.bytes_read += n as u64;
        }
        self.parse(m, i, now)
    }

    /// `data` arrived on `i` in a buffer of the backend's: copy and parse it.
    pub(crate) fn received_from<M: Model>(&mut self, m: &mut M, i: usize, now: Instant, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            let room = self.spare(i);
            if room.is_empty() {
                // more unparsed bytes than the bound: not a response this parser reads
                self.fail(m, i, ErrorClass::Malformed, now);
                return false;
            }
            let n = room.len().min(data.len());
            room[..n].copy_from_slice(&data[..n]);
            data = &data[n..];
            if !self.received(m, i, now, n) {
                return false;
            }
        }
        true
    }

    pub(crate) fn on_eof<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) {
        if self.plan.tls.is_some() && self.handshaking(i) {
            return self.fail_handshake(m, i, HandshakeError::Reset, now);
        }
        match self.conns[i].parser.eof() {
            Ok(Some(r)) => {
                self.done.clear();
                self.done.push(r);
                if self.deliver(m, i, now) && self.conns[i].open {
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
        self.conns[i].open
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
            } else {
                self.rec.warmup_response(now, r.status);
            }
            if let Some(f) = &mut self.fair {
                f.completed(i, now);
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
            if !c.open {
                continue;
            }
            // over TLS the connect timeout covers the handshake too
            let handshaking = self.plan.tls.is_some() && self.handshaking(i);
            if !c.connected || handshaking {
                if now.saturating_duration_since(c.opened_at) > self.plan.connect_timeout {
                    if handshaking {
                        self.fail_handshake(m, i, HandshakeError::Timeout, now);
                    } else {
                        self.fail(m, i, ErrorClass::Connect, now);
                    }
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


/// Where a non-blocking connect stands once its socket reports an event:
/// Ok(true) connected, Ok(false) still in progress (a spurious wake-up),
/// Err(()) failed. Shared by the workers' epoll loop and the noise thread.
pub(crate) fn connect_state(s: &mio::net::TcpStream) -> Result<bool, ()> {
    match s.take_error() {
        Ok(Some(_)) | Err(_) => Err(()),
        Ok(None) => match s.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotConnected => Ok(false),
            Err(_) => Err(()),
        },
    }
}
