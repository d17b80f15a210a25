//! Reading HTTP/1.1 requests out of a connection's bytes with httparse, for the
//! rows that speak HTTP by hand over an async runtime (rust-tokio,
//! rust-async-std). Sans I/O: a `Reader` holds the bytes read so far and says
//! whether it has a whole request, needs more bytes, or must refuse; a
//! `Connection` adds the answers not yet written and tells the row when to
//! read, write, answer and close. The row owns the socket: it appends what it
//! reads to `buffer` and writes out `output`. Behind the `httparse` feature,
//! so that rust-threadpool stays std only.

use std::io;
use std::time::Duration;

use crate::http::{Framing, HeadFields, MAX_HEAD};
use crate::MAX_BODY;

/// `Reader::buffer` has room for at least this many more bytes: a socket read's worth.
pub const READ_CHUNK: usize = 16 * 1024;

/// Room for any head within `MAX_HEAD`: the shortest field line is 4 bytes.
const MAX_HEADERS: usize = MAX_HEAD / 4;
/// A chunk-size line (with any extensions) longer than this is refused.
const MAX_CHUNK_LINE: usize = 1024;
/// Consumed bytes are moved out of the buffer's front once this many pile up.
const COMPACT_AT: usize = 64 * 1024;

/// A whole request, body included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub http10: bool,
    /// Whether the connection stays open after the answer.
    pub keep_alive: bool,
    pub body: Vec<u8>,
}

/// What `Reader::step` found in the bytes read so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Append more of the socket's bytes to `Reader::buffer`, then call again.
    NeedMore,
    /// The head asks for `100 Continue`: send `http::CONTINUE` (after any
    /// earlier answers), then call again for the body.
    SendContinue,
    Request(Request),
}

/// Where in a request the reader stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    /// A body of `Framing::content_length` bytes.
    Sized,
    ChunkSize,
    /// The chunk's data of this many bytes, then CRLF.
    ChunkData(usize),
    /// Trailer fields, skipped; this many bytes of them so far.
    Trailer(usize),
}

/// The parts of a head kept once httparse's borrowed view is gone.
#[derive(Debug)]
struct Head {
    method: String,
    target: String,
    http10: bool,
    framing: Framing,
}

/// One connection's unparsed input (`buf[pos..]`) and the request in progress.
#[derive(Debug)]
pub struct Reader {
    buf: Vec<u8>,
    pos: usize,
    phase: Phase,
    head: Option<Head>,
    body: Vec<u8>,
}

impl Default for Reader {
    fn default() -> Reader {
        Reader { buf: Vec::with_capacity(READ_CHUNK), pos: 0, phase: Phase::Head, head: None, body: Vec::new() }
    }
}

impl Reader {
    /// Bytes read but not yet part of a request handed out.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// The buffer to append the socket's next bytes to, with room for at
    /// least `READ_CHUNK` of them. Only appending keeps the reader's place:
    /// what is already there must stay as it is.
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > COMPACT_AT {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.reserve(READ_CHUNK);
        &mut self.buf
    }

    /// Advances through the bytes read so far. Err is the status to answer
    /// before closing the connection (the reader is not usable after it).
    pub fn step(&mut self) -> Result<Step, u16> {
        loop {
            match self.phase {
                Phase::Head => {
                    let Some((len, head)) = parse_head(self.pending())? else {
                        return if self.pending().len() > MAX_HEAD { Err(431) } else { Ok(Step::NeedMore) };
                    };
                    self.pos += len;
                    self.phase = if head.framing.chunked { Phase::ChunkSize } else { Phase::Sized };
                    let send_continue = head.framing.send_continue;
                    self.head = Some(head);
                    if send_continue {
                        return Ok(Step::SendContinue);
                    }
                }
                Phase::Sized => {
                    let len = self.head.as_ref().map_or(0, |h| h.framing.content_length);
                    if self.pending().len() < len {
                        return Ok(Step::NeedMore);
                    }
                    self.body = self.pending()[..len].to_vec();
                    self.pos += len;
                    return Ok(Step::Request(self.finish()));
                }
                Phase::ChunkSize => match httparse::parse_chunk_size(self.pending()) {
                    Ok(httparse::Status::Complete((skip, size))) => {
                        self.pos += skip;
                        self.phase = if size == 0 {
                            Phase::Trailer(0)
                        } else if self.body.len() as u64 + size > MAX_BODY as u64 {
                            return Err(413);
                        } else {
                            Phase::ChunkData(size as usize)
                        };
                    }
                    Ok(httparse::Status::Partial) if self.pending().len() > MAX_CHUNK_LINE => return Err(400),
                    Ok(httparse::Status::Partial) => return Ok(Step::NeedMore),
                    Err(_) => return Err(400),
                },
                Phase::ChunkData(size) => {
                    // The chunk's data, then exactly CRLF.
                    let Some(data) = self.buf[self.pos..].get(..size + 2) else {
                        return Ok(Step::NeedMore);
                    };
                    if &data[size..] != b"\r\n" {
                        return Err(400);
                    }
                    self.body.extend_from_slice(&data[..size]);
                    self.pos += size + 2;
                    self.phase = Phase::ChunkSize;
                }
                Phase::Trailer(seen) => {
                    let pending = self.pending();
                    let Some(nl) = pending.iter().position(|&b| b == b'\n') else {
                        return if pending.len() > MAX_HEAD { Err(400) } else { Ok(Step::NeedMore) };
                    };
                    let empty = nl == 0 || (nl == 1 && pending[0] == b'\r');
                    self.pos += nl + 1;
                    if empty {
                        return Ok(Step::Request(self.finish()));
                    }
                    if seen + nl + 1 > MAX_HEAD {
                        return Err(400);
                    }
                    self.phase = Phase::Trailer(seen + nl + 1);
                }
            }
        }
    }

    /// Hands out the request just completed and gets ready for the next one.
    fn finish(&mut self) -> Request {
        let head = self.head.take().expect("a head precedes every body");
        self.phase = Phase::Head;
        Request {
            method: head.method,
            target: head.target,
            http10: head.http10,
            keep_alive: head.framing.keep_alive,
            body: std::mem::take(&mut self.body),
        }
    }
}

/// Parses a complete head from `buf`, or Ok(None) when more bytes are needed.
fn parse_head(buf: &[u8]) -> Result<Option<(usize, Head)>, u16> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => Ok(Some((len, interpret(&req)?))),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            // Rare: many small fields. Retry with room for any head within MAX_HEAD.
            let mut headers = vec![httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(buf) {
                Ok(httparse::Status::Complete(len)) => Ok(Some((len, interpret(&req)?))),
                Ok(httparse::Status::Partial) => Ok(None),
                Err(httparse::Error::TooManyHeaders) => Err(431),
                Err(_) => Err(400),
            }
        }
        Err(_) => Err(400),
    }
}

/// Extracts what matters from a parsed head and rejects ambiguous framing.
fn interpret(req: &httparse::Request) -> Result<Head, u16> {
    let http10 = req.version == Some(0);
    let mut fields = HeadFields::default();
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value).map_err(|_| 400u16)?;
        fields.field(h.name, value)?;
    }
    Ok(Head {
        method: req.method.unwrap_or("").to_string(),
        target: req.path.unwrap_or("").to_string(),
        http10,
        framing: fields.finish(http10)?,
    })
}

// ---------------------------------------------------------------- connection

/// Answers not yet written are sent once this many bytes pile up, even while
/// more pipelined requests are already buffered.
const FLUSH_AT: usize = 64 * 1024;
/// How long a closing connection drains what the client still sends (the
/// row's timer bounds the draining with it).
pub const LINGER: Duration = Duration::from_millis(500);
/// How much a closing connection drains at most.
const LINGER_BYTES: usize = 4 * 1024 * 1024;

/// What the row does next for a connection (`Connection::next_event`).
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// Append the socket's next bytes to `Connection::buffer`; at end of
    /// input the client is gone and the connection ends.
    Read,
    /// Write all of `Connection::output` to the socket, then call `written`.
    Write,
    /// Answer this request the row's way and pass the answer to `respond`.
    Request(Request),
    /// Everything is written and the connection ends: half-close, read and
    /// discard what the client still sends as `Drain` counts it, for up to
    /// `LINGER` (closing with unread input sends RST, which can destroy the
    /// answer just written), then close.
    Close,
}

/// One connection's HTTP/1.1 state without its socket: the request reader
/// and the answers not yet written. Answers to pipelined requests that are
/// already buffered are written together; everything is written before the
/// row blocks on reading again.
#[derive(Debug, Default)]
pub struct Connection {
    reader: Reader,
    out: Vec<u8>,
    /// (keep_alive, http10) of the request handed out and not yet answered.
    answering: Option<(bool, bool)>,
    closing: bool,
}

impl Connection {
    pub fn next_event(&mut self) -> Event {
        if self.closing {
            return if self.out.is_empty() { Event::Close } else { Event::Write };
        }
        if self.out.len() > FLUSH_AT {
            return Event::Write;
        }
        match self.reader.step() {
            Ok(Step::NeedMore) if self.out.is_empty() => Event::Read,
            Ok(Step::NeedMore) => Event::Write,
            Ok(Step::SendContinue) => {
                self.out.extend_from_slice(crate::http::CONTINUE);
                Event::Write
            }
            Ok(Step::Request(req)) => {
                self.answering = Some((req.keep_alive, req.http10));
                Event::Request(req)
            }
            Err(status) => {
                crate::http::Response::error(status).write_to(&mut self.out, false, false);
                self.closing = true;
                Event::Write
            }
        }
    }

    /// Queues the answer to the request `next_event` handed out last.
    pub fn respond(&mut self, resp: crate::http::Response) {
        let (keep_alive, http10) = self.answering.take().expect("respond answers a request handed out by next_event");
        resp.write_to(&mut self.out, keep_alive, http10);
        self.closing = !keep_alive;
    }

    /// See `Reader::buffer`.
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        self.reader.buffer()
    }

    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// `output` has been written to the socket.
    pub fn written(&mut self) {
        self.out.clear();
    }
}

/// Counts what a closing connection drains, after its half-close: reads go
/// on until the client is done or `LINGER_BYTES` came (and the row's timer
/// stops them after `LINGER`).
#[derive(Debug)]
pub struct Drain {
    left: usize,
}

impl Default for Drain {
    fn default() -> Drain {
        Drain { left: LINGER_BYTES }
    }
}

impl Drain {
    /// Counts one read's result; false once the draining is over.
    pub fn more(&mut self, read: io::Result<usize>) -> bool {
        match read {
            Ok(n) if n > 0 => {
                self.left = self.left.saturating_sub(n);
                self.left > 0
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GET: &[u8] = b"GET /json?x=1 HTTP/1.1\r\nHost: a\r\n\r\n";
    const POST: &[u8] = b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
    const CHUNKED: &[u8] = b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                              5\r\nhello\r\n6;name=value\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n";

    /// Feeds `input` to a reader `piece` bytes at a time, as a socket might
    /// deliver it; returns the requests read and the refusal, if any.
    fn read_in_pieces(input: &[u8], piece: usize) -> (Vec<Request>, Option<u16>) {
        let mut reader = Reader::default();
        let mut requests = Vec::new();
        let mut pieces = input.chunks(piece);
        loop {
            match reader.step() {
                Ok(Step::Request(req)) => requests.push(req),
                Ok(Step::SendContinue) => {}
                Ok(Step::NeedMore) => match pieces.next() {
                    Some(bytes) => reader.buffer().extend_from_slice(bytes),
                    None => return (requests, None),
                },
                Err(status) => return (requests, Some(status)),
            }
        }
    }

    fn refusal(input: &[u8]) -> Option<u16> {
        read_in_pieces(input, input.len()).1
    }

    fn request(method: &str, target: &str, body: &[u8]) -> Request {
        Request { method: method.into(), target: target.into(), http10: false, keep_alive: true, body: body.to_vec() }
    }

    #[test]
    fn split_and_pipelined_requests_come_out_whole() {
        let input = [GET, POST, CHUNKED, GET].concat();
        let want = vec![
            request("GET", "/json?x=1", b""),
            request("POST", "/echo", b"hello"),
            request("POST", "/echo", b"hello world"),
            request("GET", "/json?x=1", b""),
        ];
        for piece in [1, 2, 3, 7, 31, 64, input.len()] {
            assert_eq!(read_in_pieces(&input, piece), (want.clone(), None), "in pieces of {piece}");
        }
    }

    #[test]
    fn version_and_keep_alive_come_from_the_head() {
        let (reqs, _) = read_in_pieces(b"GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 5);
        assert_eq!(reqs.iter().map(|r| (r.http10, r.keep_alive)).collect::<Vec<_>>(), [(true, false), (true, true)]);
        let (reqs, _) = read_in_pieces(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 5);
        assert_eq!((reqs[0].http10, reqs[0].keep_alive), (false, false));
    }

    #[test]
    fn many_small_fields_fit_up_to_the_head_limit() {
        let mut head = b"GET / HTTP/1.1\r\n".to_vec();
        head.extend(b"a: b\r\n".repeat(100));
        head.extend(b"\r\n");
        assert_eq!(read_in_pieces(&head, 1000).0.len(), 1);
        let mut head = b"GET / HTTP/1.1\r\n".to_vec();
        head.extend(b"a:\r\n".repeat(MAX_HEADERS + 1));
        head.extend(b"\r\n");
        assert_eq!(refusal(&head), Some(431));
    }

    #[test]
    fn bad_framing_is_refused() {
        let chunked = |rest: &[u8]| [b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", rest].concat();
        let cases: Vec<(&str, Vec<u8>, u16)> = vec![
            ("request line without target", b"GET\r\n\r\n".to_vec(), 400),
            ("space before colon", b"GET / HTTP/1.1\r\nHost : a\r\n\r\n".to_vec(), 400),
            ("non-numeric length", b"POST /echo HTTP/1.1\r\nContent-Length: 5x\r\n\r\n".to_vec(), 400),
            ("both framings", b"POST /echo HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(), 400),
            ("chunked in 1.0", b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(), 400),
            ("body too large", b"POST /echo HTTP/1.1\r\nContent-Length: 1048577\r\n\r\n".to_vec(), 413),
            ("endless head", [b"GET / HTTP/1.1\r\nX: ".as_slice(), &[b'a'; MAX_HEAD]].concat(), 431),
            ("chunk size not hex", chunked(b"zz\r\n"), 400),
            ("chunk data without CRLF", chunked(b"5\r\nhelloXX0\r\n\r\n"), 400),
            ("endless chunk-size line", chunked(&[b'1'; MAX_CHUNK_LINE + 1]), 400),
            ("one chunk too large", chunked(b"100001\r\n"), 413),
            ("endless trailer line", chunked(&[b"0\r\nX: ".as_slice(), &[b'a'; MAX_HEAD + 1]].concat()), 400),
            ("trailers too long", chunked(&[b"0\r\n".as_slice(), &b"X: 12345678\r\n".repeat(MAX_HEAD / 13 + 1)].concat()), 400),
        ];
        for (what, input, status) in cases {
            assert_eq!(refusal(&input), Some(status), "{what}");
        }
        // The sum of the chunks counts against MAX_BODY, not each chunk alone.
        let half = MAX_BODY / 2;
        let mut input = chunked(format!("{half:x}\r\n").as_bytes());
        input.extend(vec![b'x'; half]);
        input.extend(format!("\r\n{:x}\r\n", half + 1).as_bytes());
        assert_eq!(refusal(&input), Some(413));
    }

    #[test]
    fn chunked_body_up_to_the_limit_is_read() {
        let mut input = b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        input.extend(format!("{MAX_BODY:x}\r\n").as_bytes());
        input.extend(vec![b'x'; MAX_BODY]);
        input.extend(b"\r\n0\r\n\r\n");
        let (reqs, refused) = read_in_pieces(&input, 16 * 1024);
        assert_eq!((reqs.len(), reqs[0].body.len(), refused), (1, MAX_BODY, None));
    }

    #[test]
    fn expect_continue_comes_before_the_body() {
        let mut reader = Reader::default();
        reader.buffer().extend(b"POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
        assert_eq!(reader.step(), Ok(Step::SendContinue));
        assert_eq!(reader.step(), Ok(Step::NeedMore));
        reader.buffer().extend(b"hi");
        assert_eq!(reader.step(), Ok(Step::Request(request("POST", "/echo", b"hi"))));
        assert_eq!(reader.step(), Ok(Step::NeedMore));
    }

    #[test]
    fn consumed_bytes_are_dropped_from_the_buffer() {
        let mut reader = Reader::default();
        let count = COMPACT_AT / GET.len() + 2;
        reader.buffer().extend(GET.repeat(count));
        reader.buffer().extend(&POST[..10]);
        for _ in 0..count {
            assert!(matches!(reader.step(), Ok(Step::Request(_))));
        }
        assert_eq!(reader.step(), Ok(Step::NeedMore));
        assert_eq!(reader.buffer().as_slice(), &POST[..10]);
        reader.buffer().extend(&POST[10..]);
        assert_eq!(reader.step(), Ok(Step::Request(request("POST", "/echo", b"hello"))));
        assert!(reader.pending().is_empty());
    }

    #[test]
    fn buffer_has_room_for_a_read() {
        let mut reader = Reader::default();
        reader.buffer().extend(&GET[..5]);
        let buf = reader.buffer();
        assert!(buf.capacity() - buf.len() >= READ_CHUNK);
    }

    #[test]
    fn drain_goes_on_until_the_end_or_the_limit() {
        let mut drain = Drain::default();
        assert!(drain.more(Ok(READ_CHUNK)));
        assert!(!Drain::default().more(Ok(0)));
        assert!(!Drain::default().more(Err(io::ErrorKind::ConnectionReset.into())));
        let reads = std::iter::repeat(READ_CHUNK).take_while(|&n| drain.more(Ok(n))).count();
        // The first read, those counted, and the one that spent the rest.
        assert_eq!((1 + reads + 1) * READ_CHUNK, LINGER_BYTES);
    }

    // ------------------------------------------------------------ connection

    /// Runs a connection over `input` (all of it already read), answering each
    /// request with its target; returns the writes and whether it closed.
    fn drive(input: &[u8], body_len: usize) -> (Vec<Vec<u8>>, bool) {
        let mut conn = Connection::default();
        conn.buffer().extend_from_slice(input);
        let mut writes = Vec::new();
        loop {
            match conn.next_event() {
                Event::Read => return (writes, false),
                Event::Write => {
                    writes.push(conn.output().to_vec());
                    conn.written();
                }
                Event::Request(req) => {
                    let body = [req.target.as_bytes(), &vec![b'.'; body_len]].concat();
                    conn.respond(crate::http::Response::new(200, "text/plain", body));
                }
                Event::Close => return (writes, true),
            }
        }
    }

    fn count(haystack: &[u8], needle: &[u8]) -> usize {
        haystack.windows(needle.len()).filter(|w| *w == needle).count()
    }

    #[test]
    fn pipelined_answers_are_written_together_before_reading_again() {
        // The third request is incomplete: what is answered goes out before the read.
        let input = [GET, POST, &GET[..9]].concat();
        let (writes, closed) = drive(&input, 0);
        assert!(!closed);
        assert_eq!(writes.len(), 1);
        assert_eq!(count(&writes[0], b"HTTP/1.1 200 OK\r\n"), 2);
        assert!(writes[0].ends_with(b"/echo"));
    }

    #[test]
    fn large_answers_are_written_without_waiting_for_the_rest() {
        let (writes, _) = drive(&GET.repeat(4), FLUSH_AT / 2);
        assert_eq!(writes.iter().map(|w| count(w, b"HTTP/1.1 200")).collect::<Vec<_>>(), [2, 2]);
    }

    #[test]
    fn connection_close_is_answered_then_closed() {
        let input = [GET, b"GET /last HTTP/1.1\r\nConnection: close\r\n\r\n", GET].concat();
        let (writes, closed) = drive(&input, 0);
        assert!(closed);
        assert_eq!(writes.len(), 1);
        assert_eq!(count(&writes[0], b"HTTP/1.1 200"), 2);
        assert!(count(&writes[0], b"Connection: close\r\n") == 1 && writes[0].ends_with(b"/last"));
    }

    #[test]
    fn refusal_follows_earlier_answers_then_closes() {
        let input = [GET, b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"].concat();
        let (writes, closed) = drive(&input, 0);
        assert!(closed);
        let all = writes.concat();
        let refusal = b"HTTP/1.1 400 Bad Request\r\n";
        let at = all.windows(refusal.len()).position(|w| w == refusal).expect("a 400");
        assert!(count(&all[..at], b"HTTP/1.1 200") == 1 && count(&all[at..], b"Connection: close\r\n") == 1);
    }

    #[test]
    fn continue_is_sent_after_earlier_answers() {
        let input = [GET, b"POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"].concat();
        let (writes, closed) = drive(&input, 0);
        assert!(!closed);
        let all = writes.concat();
        assert!(all.starts_with(b"HTTP/1.1 200 OK\r\n") && all.ends_with(b"/json?x=1HTTP/1.1 100 Continue\r\n\r\n"));
    }
}
