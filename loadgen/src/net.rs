//! The connection machinery of one worker thread: it stacks the protocol
//! (`protocol::Session`: HTTP/1.1 or HTTP/2) over the transport (`transport::Link`) on every
//! connection (`conn`), implements the models' `Io`, records what happens in
//! the `Recorder`, and turns what a backend (`Sockets`: `epoll` or `uring`)
//! reports into model events: connects, responses, failures, timeouts. Hot
//! path per request: copy the pre-serialized request into a reused write
//! buffer, write it, read into a reused buffer, in-place parse, one histogram
//! record — no allocation. May use: `conn`, `transport`, `protocol`,
//! `models`' `Io` and `Model`, `record`, `fairness`; the backends sit above it.

use crate::conn::{Conn, Pending};
use crate::fairness::SlotCounts;
use crate::models::{Io, Model};
use crate::protocol::http2::{H2Options, NO_RESPONSE};
use crate::protocol::request::RequestBytes;
use crate::protocol::response::{ParseError, Response};
use crate::record::{ErrorClass, Recorder, STALLED_AFTER};
use crate::transport::tls::TlsOptions;
use crate::transport::{self, Decrypted, Got, HandshakeError, Link, Plain};
use rand_pcg::Pcg64Mcg;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

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
    /// `--http2`: every connection speaks HTTP/2 (h2 over TLS, else h2c with
    /// prior knowledge).
    pub h2: Option<H2Options>,
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
    done: Vec<(Response, Pending)>,
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
        self.conns.push(Conn::new(self.plan.start, self.plan.h2));
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
        self.conns[i].opened(now);
        self.active_conns += 1;
        true
    }

    fn is_open(&self, i: usize) -> bool {
        self.conns[i].open
    }

    fn in_flight(&self, i: usize) -> usize {
        self.conns[i].http.in_flight()
    }

    #[inline]
    fn send(&mut self, i: usize, intended: Instant, now: Instant, measured: bool) {
        let c = &mut self.conns[i];
        c.http.send(&self.plan.req, &mut self.rng, &mut c.wbuf, &mut self.scratch, Pending { intended, sent: now, measured });
        self.inflight_total += 1;
        if !c.dirty {
            c.dirty = true;
            self.dirty.push(i);
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.open {
            self.sock.close(i);
            self.active_conns -= 1;
        }
        c.closed();
    }

    fn discard(&mut self, i: usize) {
        self.inflight_total -= self.conns[i].http.forget();
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
        rec.transport = transport::stats_for(plan.tls.as_ref());
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

    /// The next flush writes connection `i` (TLS: records the link has to send).
    fn mark_dirty(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.dirty {
            c.dirty = true;
            self.dirty.push(i);
        }
    }

    /// The connection failed: every request on it ends with `class`.
    pub(crate) fn fail<M: Model>(&mut self, m: &mut M, i: usize, mut class: ErrorClass, now: Instant) {
        if class != ErrorClass::Connect && self.conns[i].handshaking() {
            // reset or closed before the TLS handshake completed: its requests never went out
            self.count_handshake_error(HandshakeError::Reset, now);
            class = ErrorClass::Connect;
        }
        let c = &mut self.conns[i];
        while let Some(p) = c.http.pop_oldest() {
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

    /// Count a failed handshake of `kind` and fail its requests as connect errors.
    fn fail_handshake<M: Model>(&mut self, m: &mut M, i: usize, kind: HandshakeError, now: Instant) {
        self.count_handshake_error(kind, now);
        self.fail(m, i, ErrorClass::Connect, now);
    }

    fn count_handshake_error(&mut self, kind: HandshakeError, now: Instant) {
        if now >= self.plan.measure_start {
            transport::handshake_failed(self.rec.transport.as_mut(), kind);
        }
    }

    /// Connection `i`'s connect completed: it is counted (warm-up too: warm
    /// connections serve the measured run) and may be written to (over TLS:
    /// the handshake starts). False: it failed.
    pub(crate) fn on_connected<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) -> bool {
        self.conns[i].connected = true;
        self.rec.connections_opened += 1;
        match Link::open(self.plan.tls.as_ref(), now) {
            Ok(link) => self.conns[i].link = link,
            Err(kind) => {
                self.fail_handshake(m, i, kind, now);
                return false;
            }
        }
        true
    }

    /// A read from connection `i`'s socket (`Conn::read_from`) brought
    /// `got`: parse it. Returns false if the connection is not to be read further.
    #[inline]
    pub(crate) fn got<M: Model>(&mut self, m: &mut M, i: usize, now: Instant, got: Got) -> bool {
        match got {
            Got::Plain(n) => self.received(m, i, now, n),
            Got::Records { eof } => self.decrypted(m, i, now, eof),
            Got::Eof => {
                self.on_eof(m, i, now);
                false
            }
        }
    }

    /// `n` plaintext bytes arrived in `i`'s read buffer: parse them. Returns
    /// false if the connection is not to be read further.
    #[inline]
    fn received<M: Model>(&mut self, m: &mut M, i: usize, now: Instant, n: usize) -> bool {
        self.conns[i].rlen += n;
        if now >= self.plan.measure_start {
            self.rec.bytes_read += n as u64;
        }
        self.parse(m, i, now)
    }

    /// Whether connection `i` can take more bytes: still connected (the model
    /// may have replaced it) and, once the parsed bytes are dropped, room left
    /// in its read buffer; a response longer than the bound fails it.
    #[inline]
    fn make_room<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) -> bool {
        let c = &mut self.conns[i];
        if !c.connected {
            return false; // the model replaced the connection
        }
        c.spare();
        if c.rlen == c.rbuf.len() {
            // more unparsed bytes than the bound: not a response this parser reads
            self.fail(m, i, ErrorClass::Malformed, now);
            return false;
        }
        true
    }

    /// `data` arrived on `i` in a buffer of the backend's: through the link
    /// and the parser with it.
    pub(crate) fn received_from<M: Model>(&mut self, m: &mut M, i: usize, now: Instant, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            if !self.make_room(m, i, now) {
                return false;
            }
            let c = &mut self.conns[i];
            let room = &mut c.rbuf[c.rlen..];
            let got = match c.link.take(&mut data, room) {
                Ok(Some(got)) => got,
                Ok(None) => break, // nothing taken: never loops
                Err(_) => {
                    self.fail(m, i, ErrorClass::Read, now);
                    return false;
                }
            };
            if !self.got(m, i, now, got) {
                return false;
            }
        }
        true
    }

    /// The link took records for connection `i` (`eof`: the peer closed after
    /// them): decrypt them and parse the plaintext. Returns false if the
    /// connection is not to be read further.
    fn decrypted<M: Model>(&mut self, m: &mut M, i: usize, now: Instant, eof: bool) -> bool {
        let c = &mut self.conns[i];
        let handshaking = c.link.handshaking();
        match c.link.process(self.rec.transport.as_mut(), now, now >= self.plan.measure_start) {
            // an alert from the server, a certificate it failed, a bad record
            Decrypted::Failed if handshaking => {
                self.fail_handshake(m, i, HandshakeError::Alert, now);
                return false;
            }
            Decrypted::Failed => {
                self.fail(m, i, ErrorClass::Read, now);
                return false;
            }
            Decrypted::NoAlpn => {
                self.fail_handshake(m, i, HandshakeError::Alpn, now);
                return false;
            }
            Decrypted::Ok { .. } => {}
        }
        loop {
            if !self.make_room(m, i, now) {
                return false;
            }
            let c = &mut self.conns[i];
            let room = &mut c.rbuf[c.rlen..];
            match c.link.plaintext(room) {
                Plain::Data(n) if !self.received(m, i, now, n) => return false,
                Plain::Data(_) => {}
                Plain::Drained => break,
                Plain::Closed => {
                    self.on_eof(m, i, now);
                    return false;
                }
                Plain::Failed => {
                    self.fail(m, i, ErrorClass::Read, now);
                    return false;
                }
            }
        }
        if eof {
            self.on_eof(m, i, now);
            return false;
        }
        // handshake messages to answer, or requests that waited for the handshake
        if self.conns[i].wants_write() {
            self.mark_dirty(i);
        }
        true
    }

    pub(crate) fn on_eof<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) {
        if self.conns[i].handshaking() {
            return self.fail_handshake(m, i, HandshakeError::Reset, now);
        }
        match self.conns[i].http.eof() {
            Ok(Some(done)) => {
                self.done.clear();
                self.done.push(done);
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
        if self.conns[i].http.in_flight() > 0 {
            return self.fail(m, i, ErrorClass::Read, now);
        }
        self.close(i);
        m.on_closed(self, i, now, None);
    }

    /// Parse buffered bytes; returns false if the connection is not to be
    /// read further.
    #[inline]
    fn parse<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) -> bool {
        let c = &mut self.conns[i];
        let parsed = c.http.parse(&c.rbuf[..c.rlen], &self.plan.req, &mut self.rng, &mut c.wbuf, &mut self.done);
        c.consume(parsed.used);
        if parsed.wrote {
            self.mark_dirty(i); // HTTP/2: ACKs, WINDOW_UPDATE, requests that waited for a stream
        }
        if !self.deliver(m, i, now) {
            return false;
        }
        if parsed.bad {
            self.fail(m, i, ErrorClass::Malformed, now);
            return false;
        }
        self.conns[i].open
    }

    /// Record the responses in `self.done` and hand them to the model.
    /// Returns false if the connection is not to be read further.
    fn deliver<M: Model>(&mut self, m: &mut M, i: usize, now: Instant) -> bool {
        for k in 0..self.done.len() {
            let (r, p) = self.done[k];
            self.inflight_total -= 1;
            if r.status == NO_RESPONSE {
                // HTTP/2: the server reset the stream (or refused it with GOAWAY); the connection lives on
                if p.measured {
                    self.rec.error(now, ErrorClass::Read); // counted with the resets of HTTP/1.1
                }
            } else if p.measured {
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
            let handshaking = c.handshaking();
            if !c.connected || handshaking {
                if now.saturating_duration_since(c.opened_at) > self.plan.connect_timeout {
                    if handshaking {
                        self.fail_handshake(m, i, HandshakeError::Timeout, now);
                    } else {
                        self.fail(m, i, ErrorClass::Connect, now);
                    }
                }
            } else if let Some(p) = c.http.oldest() {
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
            let rec = &mut self.rec;
            c.http.for_each_waiting(|p| {
                if !p.measured {
                    return;
                }
                let age = end.saturating_duration_since(p.intended);
                rec.in_flight += 1;
                rec.unserved(age, 1);
                if age >= STALLED_AFTER {
                    rec.unanswered += 1;
                    rec.unanswered_oldest_us = rec.unanswered_oldest_us.max(age.as_micros() as u64);
                }
            });
        }
    }
}
