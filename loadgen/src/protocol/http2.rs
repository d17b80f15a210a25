//! One HTTP/2 connection's exchange (RFC 9113) under loadgen's own framing:
//! requests go out as streams (HEADERS, then DATA for a body), responses are
//! matched to their request by stream id, not by order. Owns: the frame
//! parser's state, the HPACK encoder and decoder of the connection, its
//! streams in flight (each carrying the caller's tag) and the requests waiting
//! for a free stream, and the connection's own frames (the preface, SETTINGS
//! and their ACK, PING ACK, WINDOW_UPDATE). May use: `request`, `response`'s
//! `Response`, loona-hpack; nothing of the transport or the models.
//!
//! HPACK comes from httlib-hpack 0.1 (its Huffman decoder is table-driven).
//! Measured first with loona-hpack 0.4 (the maintained fork of the `hpack`
//! crate, whose code it keeps): against nginx, whose response fields are
//! Huffman-coded, its decoder built a HashMap per Huffman string
//! (`HuffmanDecoder::new`: 30 % of loadgen's samples, hashing another 35 %),
//! 76 µs of client CPU per request against h2load's 10 (bench/
//! h2_vs_h2load.py). The `h2` crate was not taken: it runs only on tokio's
//! I/O traits, and loadgen's loops are its own epoll and io_uring loops,
//! which every other protocol shares.
//!
//! Flow control: RFC 9113's defaults (65,535 bytes for the connection and for
//! each stream) unless `--h2-window` says otherwise; the window is given back
//! with WINDOW_UPDATE once half of it is used. h2load enlarges both windows to
//! 1 GiB by default and so never sends WINDOW_UPDATE; loadgen keeps the
//! defaults a browser-like client starts from, so a row that is slow to honour
//! them shows it.

use super::request::{H2Fields, RequestBytes};
use super::response::{ParseError, Response};
use httlib_hpack::{Decoder, Encoder};
use rand::Rng;
use std::collections::VecDeque;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// RFC 9113's initial flow-control window.
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The largest window a SETTINGS_INITIAL_WINDOW_SIZE may give.
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// SETTINGS_MAX_FRAME_SIZE: the default, which loadgen never raises, and the
/// largest frame it writes.
const MAX_FRAME: usize = 16_384;
/// Streams assumed allowed until the server's SETTINGS arrive (RFC 9113
/// §6.5.2 recommends servers allow at least 100).
const ASSUMED_STREAMS: u32 = 100;
/// HPACK's default dynamic table size (SETTINGS_HEADER_TABLE_SIZE).
const TABLE_SIZE: u32 = 4_096;

pub(crate) const DATA: u8 = 0;
pub(crate) const HEADERS: u8 = 1;
pub(crate) const RST_STREAM: u8 = 3;
pub(crate) const SETTINGS: u8 = 4;
pub(crate) const PUSH_PROMISE: u8 = 5;
pub(crate) const PING: u8 = 6;
pub(crate) const GOAWAY: u8 = 7;
pub(crate) const WINDOW_UPDATE: u8 = 8;
pub(crate) const CONTINUATION: u8 = 9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY: u8 = 0x20;

/// Status of a request whose stream ended without a response: reset by the
/// server (RST_STREAM), or refused by its GOAWAY.
pub const NO_RESPONSE: u16 = 0;

/// `--h2-window`: the stream and connection receive window loadgen
/// advertises (None: RFC 9113's 65,535).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct H2Options {
    pub window: Option<u32>,
}

impl H2Options {
    fn window(self) -> u32 {
        self.window.unwrap_or(DEFAULT_WINDOW)
    }
}

struct Stream<T> {
    id: u32,
    tag: T,
    /// The final status once the response's HEADERS arrived (0 before).
    status: u16,
    /// DATA bytes taken on this stream and not yet given back.
    unacked: u32,
}

/// A DATA frame whose payload is still arriving.
#[derive(Default, Clone, Copy)]
struct DataLeft {
    bytes: usize,
    stream: u32,
    end: bool,
}

/// A header block spread over HEADERS and CONTINUATION frames.
#[derive(Default)]
struct Block {
    bytes: Vec<u8>,
    stream: u32,
    end_stream: bool,
    open: bool,
}

/// One HTTP/2 connection's streams and codec state.
pub struct Http2<T> {
    opts: H2Options,
    enc: Encoder<'static>,
    dec: Decoder<'static>,
    /// A header block's bytes and its fields, decoded (the decoder takes a Vec and fills one).
    hbuf: Vec<u8>,
    hfields: Vec<(Vec<u8>, Vec<u8>, u8)>,
    fields: H2Fields,
    /// The last header block encoded, and whether a fixed request encodes to
    /// it unchanged (every field indexed: reusing it leaves HPACK's tables as
    /// encoding would).
    block: Vec<u8>,
    spare: Vec<u8>,
    stable: bool,
    /// A dynamic table size update to send first in the next header block.
    size_update: Option<u32>,
    next_id: u32,
    streams: VecDeque<Stream<T>>,
    waiting: VecDeque<T>,
    max_streams: u32,
    conn_unacked: u32,
    data: DataLeft,
    cont: Block,
    /// GOAWAY's last stream id: no new stream may start.
    goaway: Option<u32>,
}

/// What `Http2::parse` made of the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Parsed2 {
    pub used: usize,
    /// A connection error: the bytes break RFC 9113 or HPACK.
    pub bad: bool,
    /// Frames of the connection's own (ACKs, WINDOW_UPDATE) went into the write buffer.
    pub wrote: bool,
}

/// A frame's 9-byte header (RFC 9113 §4.1).
pub(crate) fn frame_head(out: &mut Vec<u8>, len: usize, ty: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], ty, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

fn window_update(out: &mut Vec<u8>, stream: u32, n: u32) {
    frame_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&n.to_be_bytes());
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl<T: Copy> Http2<T> {
    pub fn new(opts: H2Options) -> Http2<T> {
        Http2 {
            opts,
            enc: Encoder::default(),
            dec: Decoder::default(),
            hbuf: Vec::new(),
            hfields: Vec::new(),
            fields: H2Fields::default(),
            block: Vec::new(),
            spare: Vec::new(),
            stable: false,
            size_update: None,
            next_id: 1,
            streams: VecDeque::new(),
            waiting: VecDeque::new(),
            max_streams: ASSUMED_STREAMS,
            conn_unacked: 0,
            data: DataLeft::default(),
            cont: Block::default(),
            goaway: None,
        }
    }

    /// A new connection in this slot: fresh codec state, and the preface and
    /// SETTINGS written first. Requests still held (the caller neither counted
    /// nor discarded them) wait for streams of the new connection.
    pub fn start(&mut self, wbuf: &mut Vec<u8>) {
        self.reset();
        while let Some(s) = self.streams.pop_back() {
            self.waiting.push_front(s.tag);
        }
        wbuf.extend_from_slice(PREFACE);
        let window = self.opts.window();
        // ENABLE_PUSH = 0; INITIAL_WINDOW_SIZE only where it differs from the default
        let n = if window != DEFAULT_WINDOW { 2 } else { 1 };
        frame_head(wbuf, 6 * n, SETTINGS, 0, 0);
        wbuf.extend_from_slice(&[0, 2, 0, 0, 0, 0]);
        if window != DEFAULT_WINDOW {
            wbuf.extend_from_slice(&[0, 4]);
            wbuf.extend_from_slice(&window.to_be_bytes());
            // the connection's window is raised by WINDOW_UPDATE, not SETTINGS
            if window > DEFAULT_WINDOW {
                window_update(wbuf, 0, window - DEFAULT_WINDOW);
            }
        }
    }

    /// Forget the codec state of a connection that is gone (requests held stay).
    pub fn reset(&mut self) {
        self.enc = Encoder::default();
        self.dec = Decoder::default();
        self.stable = false;
        self.block.clear();
        self.size_update = None;
        self.next_id = 1;
        self.max_streams = ASSUMED_STREAMS;
        self.conn_unacked = 0;
        self.data = DataLeft::default();
        self.cont = Block::default();
        self.goaway = None;
    }

    /// Start one request as a new stream, or hold it until a stream is free
    /// (the server's SETTINGS_MAX_CONCURRENT_STREAMS).
    #[inline]
    pub fn send<R: Rng + ?Sized>(&mut self, req: &RequestBytes, rng: &mut R, wbuf: &mut Vec<u8>, tag: T) {
        if self.streams.len() < self.max_streams as usize && self.goaway.is_none() && self.waiting.is_empty() {
            self.open_stream(req, rng, wbuf, tag);
        } else {
            self.waiting.push_back(tag);
        }
    }

    /// Start held requests on the streams that are free now. Returns whether
    /// anything was written.
    pub fn release<R: Rng + ?Sized>(&mut self, req: &RequestBytes, rng: &mut R, wbuf: &mut Vec<u8>) -> bool {
        let mut wrote = false;
        while self.streams.len() < self.max_streams as usize && self.goaway.is_none() {
            let Some(tag) = self.waiting.pop_front() else { break };
            self.open_stream(req, rng, wbuf, tag);
            wrote = true;
        }
        wrote
    }

    pub fn has_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    fn open_stream<R: Rng + ?Sized>(&mut self, req: &RequestBytes, rng: &mut R, wbuf: &mut Vec<u8>, tag: T) {
        let id = self.next_id;
        self.next_id += 2;
        if !(self.stable && req.is_fixed()) {
            self.encode(req, rng);
        }
        let body = self.fields.body.len();
        let mut flags = if body == 0 { END_STREAM } else { 0 };
        let mut rest = &self.block[..];
        let mut ty = HEADERS;
        loop {
            let n = rest.len().min(MAX_FRAME);
            let last = n == rest.len();
            if last {
                flags |= END_HEADERS;
            }
            frame_head(wbuf, n, ty, flags, id);
            wbuf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if last {
                break;
            }
            (ty, flags) = (CONTINUATION, 0);
        }
        let mut body = &self.fields.body[..];
        while !body.is_empty() {
            let n = body.len().min(MAX_FRAME);
            frame_head(wbuf, n, DATA, if n == body.len() { END_STREAM } else { 0 }, id);
            wbuf.extend_from_slice(&body[..n]);
            body = &body[n..];
        }
        self.streams.push_back(Stream { id, tag, status: 0, unacked: 0 });
    }

    /// Encode `req`'s header block into `self.block` (a fixed request: until
    /// two blocks in a row come out the same).
    fn encode<R: Rng + ?Sized>(&mut self, req: &RequestBytes, rng: &mut R) {
        req.render_h2(rng, &mut self.fields);
        std::mem::swap(&mut self.block, &mut self.spare);
        self.block.clear();
        if let Some(size) = self.size_update.take() {
            // RFC 7541 §6.3: a dynamic table size update first (it also shrinks the encoder's table)
            let _ = self.enc.update_max_dynamic_size(size, &mut self.block);
        }
        // indexed into the dynamic table, then referred to: a fixed request's block is stable from the second
        let flags = Encoder::WITH_INDEXING | Encoder::BEST_FORMAT;
        for (name, value) in self.fields.pairs() {
            let _ = self.enc.encode((name.to_vec(), value.to_vec(), flags), &mut self.block);
        }
        self.stable = req.is_fixed() && self.block == self.spare;
    }

    /// Parse the frames complete in `buf`: finished requests go into `done`
    /// (a stream reset or refused with status `NO_RESPONSE`), the
    /// connection's own answers into `wbuf`.
    pub fn parse(&mut self, buf: &[u8], wbuf: &mut Vec<u8>, done: &mut Vec<(Response, T)>) -> Parsed2 {
        done.clear();
        let mut p = Parsed2::default();
        loop {
            if self.data.bytes > 0 {
                let n = self.data.bytes.min(buf.len() - p.used);
                if n == 0 {
                    break;
                }
                p.used += n;
                self.data.bytes -= n;
                p.wrote |= self.consumed(n, wbuf);
                if self.data.bytes == 0 && self.data.end {
                    self.finish(self.data.stream, None, done);
                }
                continue;
            }
            let rest = &buf[p.used..];
            if rest.len() < 9 {
                break;
            }
            let len = (rest[0] as usize) << 16 | (rest[1] as usize) << 8 | rest[2] as usize;
            let (ty, flags, stream) = (rest[3], rest[4], be32(&rest[5..9]) & 0x7fff_ffff);
            if len > MAX_FRAME || (self.cont.open && (ty != CONTINUATION || stream != self.cont.stream)) {
                p.bad = true; // FRAME_SIZE_ERROR, or a header block interrupted (PROTOCOL_ERROR)
                return p;
            }
            if ty == DATA {
                p.used += 9;
                self.data = DataLeft { bytes: len, stream, end: flags & END_STREAM != 0 };
                if len == 0 && self.data.end {
                    self.finish(stream, None, done);
                }
                continue;
            }
            if rest.len() < 9 + len {
                break;
            }
            let payload = &rest[9..9 + len];
            p.used += 9 + len;
            match self.frame(ty, flags, stream, payload, wbuf, done) {
                Ok(wrote) => p.wrote |= wrote,
                Err(()) => {
                    p.bad = true;
                    return p;
                }
            }
        }
        p
    }

    /// One complete frame other than DATA. Ok(wrote): frames went into `wbuf`.
    fn frame(&mut self, ty: u8, flags: u8, stream: u32, payload: &[u8], wbuf: &mut Vec<u8>, done: &mut Vec<(Response, T)>) -> Result<bool, ()> {
        match ty {
            HEADERS => self.headers(flags, stream, payload, done).map(|_| false),
            CONTINUATION if self.cont.open => {
                self.cont.bytes.extend_from_slice(payload);
                if flags & END_HEADERS != 0 {
                    self.cont.open = false;
                    let block = std::mem::take(&mut self.cont.bytes);
                    let r = self.header_block(self.cont.stream, &block, self.cont.end_stream, done);
                    self.cont.bytes = block;
                    self.cont.bytes.clear();
                    r?;
                }
                Ok(false)
            }
            CONTINUATION | PUSH_PROMISE => Err(()), // push was disabled in our SETTINGS
            RST_STREAM => {
                self.finish(stream, Some(NO_RESPONSE), done);
                Ok(false)
            }
            SETTINGS if flags & ACK == 0 => {
                if payload.len() % 6 != 0 || stream != 0 {
                    return Err(());
                }
                for s in payload.chunks_exact(6) {
                    let value = be32(&s[2..]);
                    match u16::from_be_bytes([s[0], s[1]]) {
                        1 if value < TABLE_SIZE => {
                            // the server's decoder holds less: shrink ours and say so first
                            self.size_update = Some(value);
                            self.stable = false;
                        }
                        3 => self.max_streams = value,
                        _ => {}
                    }
                }
                frame_head(wbuf, 0, SETTINGS, ACK, 0);
                Ok(true)
            }
            PING if flags & ACK == 0 => {
                if payload.len() != 8 {
                    return Err(());
                }
                frame_head(wbuf, 8, PING, ACK, 0);
                wbuf.extend_from_slice(payload);
                Ok(true)
            }
            GOAWAY => {
                if payload.len() < 8 {
                    return Err(());
                }
                self.go_away(be32(payload) & 0x7fff_ffff, done);
                Ok(false)
            }
            // PRIORITY, WINDOW_UPDATE (loadgen's bodies fit the default window),
            // ACKs and unknown types: nothing to do
            _ => Ok(false),
        }
    }

    fn headers(&mut self, flags: u8, stream: u32, payload: &[u8], done: &mut Vec<(Response, T)>) -> Result<(), ()> {
        let mut start = 0;
        let mut end = payload.len();
        if flags & PADDED != 0 {
            let pad = *payload.first().ok_or(())? as usize;
            start = 1;
            end = end.checked_sub(pad).ok_or(())?;
        }
        if flags & PRIORITY != 0 {
            start += 5;
        }
        if start > end {
            return Err(());
        }
        let fragment = &payload[start..end];
        let end_stream = flags & END_STREAM != 0;
        if flags & END_HEADERS != 0 {
            return self.header_block(stream, fragment, end_stream, done);
        }
        self.cont.bytes.clear();
        self.cont.bytes.extend_from_slice(fragment);
        self.cont.stream = stream;
        self.cont.end_stream = end_stream;
        self.cont.open = true;
        Ok(())
    }

    /// A complete header block of `stream`: decoded whatever the stream (the
    /// decoder's table must follow the server's), its `:status` kept.
    fn header_block(&mut self, stream: u32, block: &[u8], end_stream: bool, done: &mut Vec<(Response, T)>) -> Result<(), ()> {
        self.hbuf.clear();
        self.hbuf.extend_from_slice(block);
        self.hfields.clear();
        // httlib-hpack 0.1.3 indexes past the end of a truncated integer (decoder/primitives.rs:74) where it
        // should return an error: a panic there is the server's malformed block, a connection error here
        let (dec, hbuf, hfields) = (&mut self.dec, &mut self.hbuf, &mut self.hfields);
        let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dec.decode(hbuf, hfields)));
        if !matches!(decoded, Ok(Ok(_))) {
            return Err(());
        }
        let status = match self.hfields.iter().find(|f| f.0 == b":status") {
            Some(f) => std::str::from_utf8(&f.1).ok().and_then(|v| v.parse().ok()).unwrap_or(0),
            None => 0,
        };
        if (100..200).contains(&status) {
            return Ok(()); // informational: the final response follows
        }
        if let Some(s) = self.streams.iter_mut().find(|s| s.id == stream) {
            if s.status == 0 {
                s.status = status;
            }
        }
        if end_stream {
            self.finish(stream, None, done);
        }
        Ok(())
    }

    /// Stream `id` ended: its request is done with the status its HEADERS
    /// gave, or with `status` (a reset). A stream not in flight is ignored.
    fn finish(&mut self, id: u32, status: Option<u16>, done: &mut Vec<(Response, T)>) {
        let Some(k) = self.streams.iter().position(|s| s.id == id) else { return };
        let s = self.streams.remove(k).expect("position found it");
        let status = status.unwrap_or(if s.status == 0 { NO_RESPONSE } else { s.status });
        done.push((Response { status, keep_alive: self.keeps() }, s.tag));
    }

    /// May the connection carry more? Not once the server sent GOAWAY and
    /// the last stream it still serves has ended.
    fn keeps(&self) -> bool {
        self.goaway.is_none() || !self.streams.is_empty()
    }

    /// `n` DATA bytes were taken: give the window back once half is used.
    fn consumed(&mut self, n: usize, wbuf: &mut Vec<u8>) -> bool {
        let half = self.opts.window() / 2;
        let mut wrote = false;
        self.conn_unacked += n as u32;
        if self.conn_unacked >= half {
            window_update(wbuf, 0, self.conn_unacked);
            self.conn_unacked = 0;
            wrote = true;
        }
        let (id, end) = (self.data.stream, self.data.end);
        if let Some(s) = self.streams.iter_mut().find(|s| s.id == id) {
            s.unacked += n as u32;
            // a stream whose END_STREAM is in this frame needs no more window
            if s.unacked >= half && !end {
                window_update(wbuf, id, s.unacked);
                s.unacked = 0;
                wrote = true;
            }
        }
        wrote
    }

    /// GOAWAY: streams above `last` were never processed, and requests
    /// still waiting will never start here; both end without a response.
    /// The connection is given up once the streams it still serves end.
    fn go_away(&mut self, last: u32, done: &mut Vec<(Response, T)>) {
        self.goaway = Some(last);
        let mut gone: Vec<T> = Vec::new(); // once per GOAWAY: not the hot path
        while let Some(k) = self.streams.iter().position(|s| s.id > last) {
            gone.push(self.streams.remove(k).expect("in range").tag);
        }
        gone.extend(self.waiting.drain(..));
        let n = gone.len();
        for (k, tag) in gone.into_iter().enumerate() {
            let last_one = k + 1 == n && self.streams.is_empty();
            done.push((Response { status: NO_RESPONSE, keep_alive: !last_one }, tag));
        }
    }

    /// The peer closed: a stream still open lost its response.
    pub fn eof(&mut self) -> Result<Option<(Response, T)>, ParseError> {
        if self.streams.is_empty() && self.data.bytes == 0 {
            Ok(None)
        } else {
            Err(ParseError::Truncated)
        }
    }

    /// Take a request in flight (the oldest stream first, then those waiting).
    pub fn pop_oldest(&mut self) -> Option<T> {
        match self.streams.pop_front() {
            Some(s) => Some(s.tag),
            None => self.waiting.pop_front(),
        }
    }

    pub fn in_flight(&self) -> usize {
        self.streams.len() + self.waiting.len()
    }

    /// The request waiting longest: the oldest stream (a request held for a
    /// stream was queued after it).
    pub fn oldest(&self) -> Option<&T> {
        self.streams.front().map(|s| &s.tag).or_else(|| self.waiting.front())
    }

    pub fn waiting(&self) -> impl Iterator<Item = &T> {
        self.streams.iter().map(|s| &s.tag).chain(self.waiting.iter())
    }

    pub fn forget(&mut self) -> usize {
        let n = self.in_flight();
        self.streams.clear();
        self.waiting.clear();
        n
    }
}

#[cfg(test)]
#[path = "http2_tests.rs"]
mod tests;
