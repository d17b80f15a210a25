//! The protocol layer: what the bytes over a transport mean. `request`
//! serializes requests (once, or per request from a template), `response`
//! parses HTTP/1.x responses incrementally, `http1` pairs them with their
//! requests on one connection by order (keep-alive, pipelining), `http2`
//! frames requests as streams and pairs responses by stream id (HPACK,
//! flow control, the connection's own frames). `Session` is one connection's
//! exchange in either protocol, chosen by the run (`--http2`); the machinery
//! (`net`) calls only it. It sees plaintext bytes only, never a socket or
//! TLS. May use: `template`, httparse, loona-hpack; nothing of the transport,
//! the models or the machinery.

pub mod flags;
pub mod http1;
pub mod http2;
pub mod request;
pub mod response;

use http1::Http1;
use http2::{H2Options, Http2};
use rand::Rng;
use request::RequestBytes;
use response::{ParseError, Response};

/// One connection's exchange. Static dispatch: a `match` per call.
pub enum Session<T> {
    H1(Http1<T>),
    H2(Box<Http2<T>>),
}

/// What `Session::parse` made of the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// Bytes consumed from the front of the buffer.
    pub used: usize,
    /// The bytes after those break the protocol (HTTP/2: a connection error).
    pub bad: bool,
    /// The session queued bytes of its own to write (HTTP/2's ACKs,
    /// WINDOW_UPDATE, requests that were waiting for a stream).
    pub wrote: bool,
}

impl<T: Copy> Session<T> {
    /// HTTP/2 with `h2`, else HTTP/1.1.
    pub fn new(h2: Option<H2Options>) -> Session<T> {
        match h2 {
            Some(o) => Session::H2(Box::new(Http2::new(o))),
            None => Session::H1(Http1::default()),
        }
    }

    /// A new connection in this slot (HTTP/2: its preface goes first).
    pub fn start(&mut self, wbuf: &mut Vec<u8>) {
        match self {
            Session::H1(h) => h.reset_parser(),
            Session::H2(h) => h.start(wbuf),
        }
    }

    /// The connection is gone: forget its parse state (requests held stay).
    pub fn reset(&mut self) {
        match self {
            Session::H1(h) => h.reset_parser(),
            Session::H2(h) => h.reset(),
        }
    }

    #[inline]
    pub fn send<R: Rng + ?Sized>(&mut self, req: &RequestBytes, rng: &mut R, wbuf: &mut Vec<u8>, scratch: &mut Vec<u8>, tag: T) {
        match self {
            Session::H1(h) => h.send(req, rng, wbuf, scratch, tag),
            Session::H2(h) => h.send(req, rng, wbuf, tag),
        }
    }

    /// Parse what `buf` completes into `done` (each with its request's tag);
    /// HTTP/2 then starts requests that were waiting for a free stream.
    #[inline]
    pub fn parse<R: Rng + ?Sized>(&mut self, buf: &[u8], req: &RequestBytes, rng: &mut R, wbuf: &mut Vec<u8>, done: &mut Vec<(Response, T)>) -> Parsed {
        match self {
            Session::H1(h) => {
                let p = h.parse(buf, req.is_head, done);
                Parsed { used: p.used, bad: p.bad, wrote: false }
            }
            Session::H2(h) => {
                let p = h.parse(buf, wbuf, done);
                let mut wrote = p.wrote;
                if !p.bad && h.has_waiting() {
                    wrote |= h.release(req, rng, wbuf);
                }
                Parsed { used: p.used, bad: p.bad, wrote }
            }
        }
    }

    /// The peer closed: the response it ends, if its body ran to the close.
    pub fn eof(&mut self) -> Result<Option<(Response, T)>, ParseError> {
        match self {
            Session::H1(h) => match h.eof()? {
                Some(r) => Ok(h.pop_oldest().map(|tag| (r, tag))),
                None => Ok(None),
            },
            Session::H2(h) => h.eof(),
        }
    }

    /// Take the request in flight longest (to fail it).
    #[inline]
    pub fn pop_oldest(&mut self) -> Option<T> {
        match self {
            Session::H1(h) => h.pop_oldest(),
            Session::H2(h) => h.pop_oldest(),
        }
    }

    #[inline]
    pub fn in_flight(&self) -> usize {
        match self {
            Session::H1(h) => h.in_flight(),
            Session::H2(h) => h.in_flight(),
        }
    }

    pub fn oldest(&self) -> Option<&T> {
        match self {
            Session::H1(h) => h.oldest(),
            Session::H2(h) => h.oldest(),
        }
    }

    /// Every request in flight, in no promised order.
    pub fn for_each_waiting(&self, mut f: impl FnMut(&T)) {
        match self {
            Session::H1(h) => h.waiting().for_each(&mut f),
            Session::H2(h) => h.waiting().for_each(&mut f),
        }
    }

    /// Forget the requests in flight; returns how many there were.
    pub fn forget(&mut self) -> usize {
        match self {
            Session::H1(h) => h.forget(),
            Session::H2(h) => h.forget(),
        }
    }
}
