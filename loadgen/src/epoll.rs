//! The epoll backend (`--io epoll`): non-blocking sockets on a mio poll,
//! edge-triggered. Per request one write and one read; no epoll_ctl on the
//! request path (a connection is registered once, for both directions).
//! Over TLS the same writes and reads carry rustls records (`flush_tls`,
//! `read_tls`).

use crate::models::Model;
use crate::net::{Net, Sockets};
use crate::record::ErrorClass;
use crate::timer::TimerFd;
use crate::tls::Short;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const TIMER: Token = Token(usize::MAX - 1);

pub struct Epoll {
    poll: Poll,
    timer: TimerFd,
    events: Events,
    /// Slot i's socket.
    socks: Vec<Option<TcpStream>>,
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        let poll = Poll::new()?;
        let timer = TimerFd::new(poll.registry(), TIMER)?;
        Ok(Epoll { poll, timer, events: Events::with_capacity(1024), socks: Vec::new() })
    }
}

impl Sockets for Epoll {
    fn connect(&mut self, i: usize, addr: SocketAddr) -> bool {
        let Ok(mut s) = TcpStream::connect(addr) else { return false };
        let _ = s.set_nodelay(true);
        if self.poll.registry().register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE).is_err() {
            return false;
        }
        if self.socks.len() <= i {
            self.socks.resize_with(i + 1, || None);
        }
        self.socks[i] = Some(s);
        true
    }

    fn close(&mut self, i: usize) {
        if let Some(mut s) = self.socks.get_mut(i).and_then(Option::take) {
            let _ = self.poll.registry().deregister(&mut s);
        }
    }

    /// A failed write fails its connection, which the model hears about (and
    /// may queue more).
    fn flush_dirty<M: Model>(net: &mut Net<'_, Self>, m: &mut M, now: Instant) {
        while let Some(i) = net.next_dirty() {
            if net.conns[i].open {
                flush(net, m, i, now);
            }
        }
    }

    fn wait<M: Model>(net: &mut Net<'_, Self>, m: &mut M, wake: Instant, now: Instant) -> io::Result<()> {
        let timeout = if wake <= now {
            Some(Duration::ZERO)
        } else {
            net.sock.timer.arm(wake, now);
            None
        };
        match net.sock.poll.poll(&mut net.sock.events, timeout) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            r => r?,
        }
        let now = Instant::now();
        if net.plan.end.is_some_and(|e| now >= e) {
            return Ok(()); // responses after the end are not part of the run
        }
        // taken out for the loop, which needs `net` (no allocation: capacity is kept)
        let events = std::mem::replace(&mut net.sock.events, Events::with_capacity(0));
        for ev in events.iter() {
            if net.ended {
                break;
            }
            if ev.token() == TIMER {
                net.sock.timer.fired();
                continue;
            }
            let drain = ev.is_read_closed() || ev.is_error();
            on_event(net, m, ev.token().0, now, ev.is_readable() || drain, ev.is_writable() || drain, drain);
            Self::flush_dirty(net, m, now);
        }
        net.sock.events = events;
        Ok(())
    }
}

/// Write what is buffered. Returns false if the connection failed.
fn flush<M: Model>(net: &mut Net<'_, Epoll>, m: &mut M, i: usize, now: Instant) -> bool {
    let c = &mut net.conns[i];
    if !c.connected {
        return true;
    }
    if net.plan.tls.is_some() {
        return flush_tls(net, m, i, now);
    }
    while c.wpos < c.wbuf.len() {
        let Some(s) = net.sock.socks[i].as_mut() else { return true };
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
    net.fail(m, i, ErrorClass::Write, now);
    false
}

/// TLS: queued requests become records (once the handshake is done), and
/// what rustls has to send (handshake messages, records) is written.
/// Returns false if the connection failed.
fn flush_tls<M: Model>(net: &mut Net<'_, Epoll>, m: &mut M, i: usize, now: Instant) -> bool {
    let c = &mut net.conns[i];
    let (Some(t), Some(s)) = (c.tls.as_mut(), net.sock.socks[i].as_mut()) else { return true };
    if !t.encrypt(&mut c.wbuf) {
        return true;
    }
    loop {
        match t.conn.write_tls(s) {
            Ok(0) => break,
            Ok(_) if !t.conn.wants_write() => return true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    net.fail(m, i, ErrorClass::Write, now);
    false
}

/// Readiness on connection `i`.
fn on_event<M: Model>(net: &mut Net<'_, Epoll>, m: &mut M, i: usize, now: Instant, readable: bool, writable: bool, drain: bool) {
    if i >= net.conns.len() || !net.conns[i].open {
        return; // stale event for a closed connection
    }
    if !net.conns[i].connected {
        let s = net.sock.socks[i].as_ref().expect("an open slot has a socket");
        let state = crate::net::connect_state(s);
        match state {
            Ok(false) => return,
            Err(()) => return net.fail(m, i, ErrorClass::Connect, now),
            Ok(true) => {
                if !net.on_connected(m, i, now) || !flush(net, m, i, now) {
                    return;
                }
            }
        }
    } else if writable && !flush(net, m, i, now) {
        return;
    }
    if readable {
        read(net, m, i, now, drain);
    }
}

fn read<M: Model>(net: &mut Net<'_, Epoll>, m: &mut M, i: usize, now: Instant, drain: bool) {
    if net.plan.tls.is_some() {
        return read_tls(net, m, i, now, drain);
    }
    loop {
        let space = net.spare(i).len();
        let c = &mut net.conns[i];
        let Some(s) = net.sock.socks[i].as_mut() else { return };
        match s.read(&mut c.rbuf[c.rlen..]) {
            Ok(0) => return net.on_eof(m, i, now),
            Ok(n) => {
                if !net.received(m, i, now, n) {
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
            Err(_) => return net.fail(m, i, ErrorClass::Read, now),
        }
    }
}

/// TLS: records from the socket into rustls, plaintext out into the parser.
fn read_tls<M: Model>(net: &mut Net<'_, Epoll>, m: &mut M, i: usize, now: Instant, drain: bool) {
    loop {
        let c = &mut net.conns[i];
        let (Some(t), Some(s)) = (c.tls.as_mut(), net.sock.socks[i].as_mut()) else { return };
        let mut src = Short { inner: s, short: false };
        let eof = match t.conn.read_tls(&mut src) {
            Ok(n) => n == 0,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return net.fail(m, i, ErrorClass::Read, now),
        };
        let short = src.short;
        if !net.tls_received(m, i, now, eof) || eof {
            return;
        }
        // as in `read`: a short read drained the socket
        if short && !drain {
            return;
        }
    }
}
