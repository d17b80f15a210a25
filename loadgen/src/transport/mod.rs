//! The transport layer: how a connection's bytes travel, plain TCP (`tcp`) or
//! TLS over rustls (`tls`), above the I/O backends' sockets (epoll, io_uring)
//! and below the protocol (HTTP/1.1). A `Link` is one connection's transport
//! state; the connection machinery (`net`) moves bytes through it between a
//! backend's socket and the protocol's read and write buffers.
//!
//! Owns: `Link` and what it reports (`Got`, `Decrypted`, `HandshakeError`),
//! the transport's figures (TLS handshakes, a `record::LayerStats`). May use:
//! `tcp`, `tls`, `record`'s `LayerStats` hook; nothing of the protocol, the
//! models or the machinery. Static dispatch: a `match` per call, no boxed
//! trait object and no allocation per request (a TLS link is boxed once per
//! connection).

pub mod tcp;
pub mod tls;

use crate::record::LayerStats;
use std::io::{self, Read, Write};
use std::time::Instant;
use tls::{TlsLink, TlsOptions, TlsStats};

pub use tls::HandshakeError;

/// One connection's transport state.
pub enum Link {
    /// Plain TCP, or no connection yet.
    Tcp,
    Tls(Box<TlsLink>),
}

/// What one read from the socket brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Got {
    /// `n` bytes of plaintext, appended to the read buffer (TCP).
    Plain(usize),
    /// Records the link took (TLS): `Link::process` and `Link::plaintext`
    /// turn them into plaintext; `eof`: the peer closed after them.
    Records { eof: bool },
    /// The peer closed (TCP).
    Eof,
}

/// What `Link::plaintext` had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plain {
    /// `n` bytes, written to the front of the buffer given.
    Data(usize),
    /// No more until more records arrive.
    Drained,
    /// The peer closed (with or without close_notify).
    Closed,
    Failed,
}

/// What `Link::process` made of the records taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decrypted {
    /// Plaintext may be waiting; `handshake_done`: the handshake just completed.
    Ok { handshake_done: bool },
    /// The records were bad (an alert, a certificate this end failed):
    /// during the handshake a `HandshakeError::Alert`, after it a read error.
    Failed,
    /// The handshake completed, but an HTTP/2 run's ALPN did not get `h2`.
    NoAlpn,
}

/// The transport figures a run of these options keeps (None: plain TCP keeps none).
pub fn stats_for(tls: Option<&TlsOptions>) -> Option<Box<dyn LayerStats>> {
    tls.map(|_| Box::new(TlsStats::default()) as Box<dyn LayerStats>)
}

/// Count a failed handshake of `kind` into the recorder's transport figures.
pub fn handshake_failed(stats: Option<&mut Box<dyn LayerStats>>, kind: HandshakeError) {
    if let Some(t) = stats.and_then(|s| s.as_any_mut().downcast_mut::<TlsStats>()) {
        t.failed(kind);
    }
}

impl Link {
    /// The link of a connection whose TCP connect just completed: TLS starts
    /// its handshake (with `tls`), TCP is ready. Err: rustls refused to start.
    pub fn open(tls: Option<&TlsOptions>, now: Instant) -> Result<Link, HandshakeError> {
        match tls {
            None => Ok(Link::Tcp),
            Some(opts) => TlsLink::new(opts, now).map(|t| Link::Tls(Box::new(t))).map_err(|_| HandshakeError::Alert),
        }
    }

    /// Is a handshake under way (nothing may be sent or received yet)?
    #[inline]
    pub fn handshaking(&self) -> bool {
        match self {
            Link::Tcp => false,
            Link::Tls(t) => t.handshaking(),
        }
    }

    /// Read from `src` (TCP: into `dst`). Ok((got, short)): `short` when the
    /// read came back short, the socket drained.
    #[inline]
    pub fn read_from<R: Read>(&mut self, src: &mut R, dst: &mut [u8]) -> io::Result<(Got, bool)> {
        match self {
            Link::Tcp => match tcp::read_from(src, dst)? {
                (0, short) => Ok((Got::Eof, short)),
                (n, short) => Ok((Got::Plain(n), short)),
            },
            Link::Tls(t) => t.read_from(src).map(|(eof, short)| (Got::Records { eof }, short)),
        }
    }

    /// Bytes a backend received in a buffer of its own: take what fits from
    /// the front of `data` (TCP: copied into `dst`). Ok(None): nothing could
    /// be taken (the caller must not loop on it).
    #[inline]
    pub fn take(&mut self, data: &mut &[u8], dst: &mut [u8]) -> io::Result<Option<Got>> {
        match self {
            Link::Tcp => {
                let n = dst.len().min(data.len());
                dst[..n].copy_from_slice(&data[..n]);
                *data = &data[n..];
                Ok((n > 0).then_some(Got::Plain(n)))
            }
            Link::Tls(t) => Ok((t.take(data)? > 0).then_some(Got::Records { eof: false })),
        }
    }

    /// Decrypt the records taken; at the handshake's end, count it into
    /// `stats` (the recorder's transport figures; `measured`: in the window).
    #[inline]
    pub fn process(&mut self, stats: Option<&mut Box<dyn LayerStats>>, now: Instant, measured: bool) -> Decrypted {
        let Link::Tls(t) = self else { return Decrypted::Ok { handshake_done: false } };
        match t.process() {
            Err(_) => Decrypted::Failed,
            Ok(done) => {
                if let (true, Some(s)) = (done, stats.and_then(|s| s.as_any_mut().downcast_mut::<TlsStats>())) {
                    t.handshake_done(s, now, measured);
                }
                if done && t.alpn_refused() {
                    return Decrypted::NoAlpn;
                }
                Decrypted::Ok { handshake_done: done }
            }
        }
    }

    /// Decrypted plaintext into `dst` (drained at once over TCP: its reads
    /// are plaintext).
    #[inline]
    pub fn plaintext(&mut self, dst: &mut [u8]) -> Plain {
        let Link::Tls(t) = self else { return Plain::Drained };
        match t.plaintext(dst) {
            Ok(0) => Plain::Closed,
            Ok(n) => Plain::Data(n),
            // one look at the kind: this ends every decrypt loop
            Err(e) => match e.kind() {
                io::ErrorKind::WouldBlock => Plain::Drained,
                io::ErrorKind::UnexpectedEof => Plain::Closed,
                _ => Plain::Failed,
            },
        }
    }

    /// Write what is queued in `wbuf` (from `*wpos`) to `dst` until it would
    /// block. False: the write failed.
    #[inline]
    pub fn write_to<W: Write>(&mut self, wbuf: &mut Vec<u8>, wpos: &mut usize, dst: &mut W) -> bool {
        match self {
            Link::Tcp => tcp::write_to(wbuf, wpos, dst),
            Link::Tls(t) => t.write_to(wbuf, dst),
        }
    }

    /// Move what is queued into a backend's empty send buffer `out` (TLS: as
    /// records). Returns whether `out` has bytes to send.
    #[inline]
    pub fn fill(&mut self, wbuf: &mut Vec<u8>, wpos: &mut usize, out: &mut Vec<u8>) -> bool {
        match self {
            Link::Tcp => tcp::fill(wbuf, wpos, out),
            Link::Tls(t) => t.fill(wbuf, out),
        }
    }

    /// After a read: has the link something to write (handshake messages, or
    /// requests that waited for the handshake)?
    #[inline]
    pub fn wants_write(&self, wbuf: &[u8]) -> bool {
        match self {
            Link::Tcp => false,
            Link::Tls(t) => t.wants_write(wbuf),
        }
    }
}
