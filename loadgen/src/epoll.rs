//! The epoll backend (`--io epoll`): non-blocking sockets on a mio poll,
//! edge-triggered. Per request one write and one read; no epoll_ctl on the
//! request path (a connection is registered once, for both directions).
//! Owns: the sockets and the poll. Reads and writes go through the
//! connection's transport link (`Conn::read_from`, `Conn::write_to`), so the
//! same syscalls carry plaintext or TLS records without this file knowing
//! which. May use: `net` (the machinery it reports to), `transport::tcp`'s
//! connect check, `timer`, `record`'s error classes.

use crate::models::Model;
use crate::net::{Net, Sockets};
use crate::record::ErrorClass;
use crate::timer::TimerFd;
use crate::transport::tcp::connect_state;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::io;
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

/// Write what is buffered (through the link: over TLS, handshake messages
/// and records). Returns false if the connection failed.
fn flush<M: Model>(net: &mut Net<'_, Epoll>, m: &mut M, i: usize, now: Instant) -> bool {
    let c = &mut net.conns[i];
    if !c.connected {
        return true;
    }
    let Some(s) = net.sock.socks[i].as_mut() else { return true };
    if c.write_to(s) {
        return true;
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
        let state = connect_state(s);
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

/// Read what the socket has, through the link into the parser.
fn read<M: Model>(net: &mut Net<'_, Epoll>, m: &mut M, i: usize, now: Instant, drain: bool) {
    loop {
        let c = &mut net.conns[i];
        let Some(s) = net.sock.socks[i].as_mut() else { return };
        let (got, short) = match c.read_from(s) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return net.fail(m, i, ErrorClass::Read, now),
        };
        if !net.got(m, i, now, got) {
            return;
        }
        // A short read drained the socket; epoll reports new data as a new
        // edge. Only a pending close must be read to EOF.
        if short && !drain {
            return;
        }
    }
}
