//! One connection of a worker: its buffers, its transport link and its
//! protocol exchange, stacked (socket → `transport::Link` → read buffer →
//! `protocol::Session` (HTTP/1.1 or HTTP/2) → responses). Owns: the read and write buffers
//! (allocated once per slot, reused by every request) and the moves between
//! a backend's socket and them. May use: `transport`, `protocol`; nothing of
//! the models, the recorder or the backends (which call it through `net`).

use crate::protocol::http2::H2Options;
use crate::protocol::Session;
use crate::protocol::response::MAX_HEAD;
use crate::transport::{Got, Link};
use std::io;
use std::time::Instant;

pub(crate) const RBUF_START: usize = 4096;
const RBUF_MAX: usize = MAX_HEAD * 2;

/// A request in flight: the protocol carries it as its tag.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    pub(crate) intended: Instant,
    pub(crate) sent: Instant,
    pub(crate) measured: bool,
}

pub(crate) struct Conn {
    /// A socket is open (connecting or connected) in the backend.
    pub(crate) open: bool,
    /// Its TCP connect completed (the link may still be handshaking).
    pub(crate) connected: bool,
    pub(crate) opened_at: Instant,
    /// Requests serialized and not yet handed to the transport.
    pub(crate) wbuf: Vec<u8>,
    pub(crate) wpos: usize,
    /// In `Net::dirty`: has bytes to write once the model returns.
    pub(crate) dirty: bool,
    pub(crate) rbuf: Vec<u8>,
    /// Plaintext bytes in `rbuf` not yet parsed.
    pub(crate) rlen: usize,
    pub(crate) http: Session<Pending>,
    /// The transport from the TCP connect on (`Link::Tcp` before it).
    pub(crate) link: Link,
}

impl Conn {
    /// `h2`: the slot's connections speak HTTP/2 (else HTTP/1.1).
    pub(crate) fn new(now: Instant, h2: Option<H2Options>) -> Conn {
        Conn {
            open: false,
            connected: false,
            opened_at: now,
            wbuf: Vec::new(),
            wpos: 0,
            dirty: false,
            rbuf: Vec::new(),
            rlen: 0,
            http: Session::new(h2),
            link: Link::Tcp,
        }
    }

    /// A new socket is connecting in this slot.
    pub(crate) fn opened(&mut self, now: Instant) {
        self.open = true;
        self.connected = false;
        self.opened_at = now;
        self.rlen = 0;
        self.http.start(&mut self.wbuf);
        self.link = Link::Tcp;
        if self.rbuf.is_empty() {
            self.rbuf.resize(RBUF_START, 0);
        }
    }

    /// The socket is gone: forget what was queued or half read (requests in
    /// flight stay until the caller counts or discards them).
    pub(crate) fn closed(&mut self) {
        self.open = false;
        self.connected = false;
        self.wbuf.clear();
        self.wpos = 0;
        self.rlen = 0;
        self.http.reset();
        self.link = Link::Tcp;
    }

    /// Connected, with the transport's handshake still under way?
    pub(crate) fn handshaking(&self) -> bool {
        self.connected && self.link.handshaking()
    }

    /// Room to read plaintext into (the buffer grows to a bound as needed).
    #[inline]
    pub(crate) fn spare(&mut self) -> &mut [u8] {
        if self.rbuf.len() - self.rlen < 512 && self.rbuf.len() < RBUF_MAX {
            let n = (self.rbuf.len() * 2).clamp(RBUF_START, RBUF_MAX);
            self.rbuf.resize(n, 0);
        }
        &mut self.rbuf[self.rlen..]
    }

    /// Read from the socket `src` through the link (epoll). Ok((got, short)).
    #[inline]
    pub(crate) fn read_from<R: io::Read>(&mut self, src: &mut R) -> io::Result<(Got, bool)> {
        self.spare();
        self.link.read_from(src, &mut self.rbuf[self.rlen..])
    }

    /// Write what is queued through the link to the socket `dst` until it
    /// would block (epoll). False: the write failed.
    #[inline]
    pub(crate) fn write_to<W: io::Write>(&mut self, dst: &mut W) -> bool {
        self.link.write_to(&mut self.wbuf, &mut self.wpos, dst)
    }

    /// Move what is queued through the link into a backend's empty send
    /// buffer (io_uring). Returns whether there is something to send.
    #[inline]
    pub(crate) fn fill(&mut self, out: &mut Vec<u8>) -> bool {
        self.link.fill(&mut self.wbuf, &mut self.wpos, out)
    }

    /// After a read: has the link something to write of its own accord?
    pub(crate) fn wants_write(&self) -> bool {
        self.link.wants_write(&self.wbuf)
    }

    /// Drop `used` parsed bytes from the front of the read buffer.
    #[inline]
    pub(crate) fn consume(&mut self, used: usize) {
        if used > 0 {
            self.rbuf.copy_within(used..self.rlen, 0);
            self.rlen -= used;
        }
    }
}
