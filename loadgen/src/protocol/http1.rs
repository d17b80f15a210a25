//! One HTTP/1.1 connection's exchange: requests go out in order, responses
//! come back in the same order (keep-alive, and pipelining: several in flight),
//! each matched to the oldest request still waiting. Owns: the response
//! parser's state and the queue of requests in flight, each carrying a tag of
//! the caller's (the machinery's timestamps; this layer never reads them).
//! May use: `request`, `response`; nothing of the transport or the models.

use super::request::RequestBytes;
use super::response::{ParseError, Response, ResponseParser};
use rand::Rng;
use std::collections::VecDeque;

/// Requests in flight on one connection and the parser of their responses.
pub struct Http1<T> {
    parser: ResponseParser,
    inflight: VecDeque<T>,
}

/// What `Http1::parse` made of the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// Bytes consumed from the front of the buffer.
    pub used: usize,
    /// The bytes after those are not an HTTP/1.x response.
    pub bad: bool,
}

impl<T> Default for Http1<T> {
    fn default() -> Self {
        Http1 { parser: ResponseParser::new(), inflight: VecDeque::new() }
    }
}

impl<T> Http1<T> {
    /// Append one request to `wbuf` (no allocation once `wbuf` has grown) and
    /// queue its tag to be matched with its response.
    #[inline]
    pub fn send<R: Rng + ?Sized>(&mut self, req: &RequestBytes, rng: &mut R, wbuf: &mut Vec<u8>, scratch: &mut Vec<u8>, tag: T) {
        req.write_to(rng, wbuf, scratch);
        self.inflight.push_back(tag);
    }

    /// Parse the responses complete in `buf` into `done` (cleared first),
    /// each with the tag of the oldest request waiting, stopping after one
    /// that closes the connection. `is_head`: the requests are HEAD (their
    /// responses have no body). A response nobody asked for is `bad`.
    pub fn parse(&mut self, buf: &[u8], is_head: bool, done: &mut Vec<(Response, T)>) -> Parsed {
        done.clear();
        let mut used = 0;
        while used < buf.len() {
            match self.parser.advance(&buf[used..], is_head) {
                Ok((n, Some(r))) => {
                    let Some(tag) = self.inflight.pop_front() else {
                        return Parsed { used, bad: true };
                    };
                    used += n;
                    done.push((r, tag));
                    if !r.keep_alive {
                        break;
                    }
                }
                Ok((n, None)) => {
                    used += n;
                    break;
                }
                Err(_) => return Parsed { used, bad: true },
            }
        }
        Parsed { used, bad: false }
    }

    /// The peer closed: the response it ends, if its body ran to the close.
    pub fn eof(&mut self) -> Result<Option<Response>, ParseError> {
        self.parser.eof()
    }

    /// Take the oldest request in flight: the one a response just parsed
    /// answers (None: a response nobody asked for), or one that failed.
    #[inline]
    pub fn pop_oldest(&mut self) -> Option<T> {
        self.inflight.pop_front()
    }

    #[inline]
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// The oldest request in flight.
    pub fn oldest(&self) -> Option<&T> {
        self.inflight.front()
    }

    pub fn waiting(&self) -> impl Iterator<Item = &T> {
        self.inflight.iter()
    }

    /// Forget the requests in flight; returns how many there were.
    pub fn forget(&mut self) -> usize {
        let n = self.inflight.len();
        self.inflight.clear();
        n
    }

    /// Forget any partial response: the connection was replaced.
    pub fn reset_parser(&mut self) {
        self.parser.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_responses_come_back_in_order_and_a_close_stops_the_parse() {
        let mut h: Http1<u32> = Http1::default();
        for tag in [1, 2, 3] {
            h.inflight.push_back(tag);
        }
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 404 No\r\nContent-Length: 0\r\n\r\n";
        let mut done = vec![];
        let p = h.parse(two, false, &mut done);
        assert_eq!(p, Parsed { used: two.len(), bad: false });
        assert_eq!(done.iter().map(|(r, tag)| (r.status, *tag)).collect::<Vec<_>>(), [(200, 1), (404, 2)]);
        assert_eq!(h.in_flight(), 1);
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n";
        let p = h.parse(close, false, &mut done);
        assert_eq!((p.used, done.len(), done[0].0.keep_alive), (close.len() - 17, 1, false));
        h.inflight.push_back(4);
        h.reset_parser();
        let p = h.parse(b"garbage\r\n\r\n", false, &mut done);
        assert!(p.bad && done.is_empty());
        h.reset_parser();
        let p = h.parse(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, &mut done);
        assert!(p.bad && done.len() == 1, "the second response answers nothing: bad");
    }
}
