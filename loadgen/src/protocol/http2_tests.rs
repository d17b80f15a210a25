//! http2.rs's tests: a hand-made server side (frames written here, HPACK by
//! httlib-hpack's own encoder and decoder) against one `Http2` session.

use super::*;
use crate::protocol::request::{parse_url, RequestSpec};
use rand::rngs::mock::StepRng;

fn req(url: &str) -> RequestBytes {
    let spec = RequestSpec { method: "GET".into(), target: parse_url(url).unwrap(), headers: vec![], body: None, keepalive: true };
    RequestBytes::new(&spec).unwrap()
}

/// The server's side of the connection: its HPACK encoder and the frames it writes.
struct Server {
    enc: Encoder<'static>,
}

impl Server {
    fn new() -> Server {
        Server { enc: Encoder::default() }
    }
    fn headers(&mut self, out: &mut Vec<u8>, stream: u32, status: &str, end: bool) {
        // Huffman-coded and indexed, as nginx and Go write them
        let flags = Encoder::HUFFMAN_VALUE | Encoder::WITH_INDEXING | Encoder::BEST_FORMAT;
        let mut block = vec![];
        for (n, v) in [(&b":status"[..], status.as_bytes()), (&b"content-type"[..], &b"application/json"[..])] {
            self.enc.encode((n.to_vec(), v.to_vec(), flags), &mut block).unwrap();
        }
        frame_head(out, block.len(), HEADERS, END_HEADERS | if end { END_STREAM } else { 0 }, stream);
        out.extend_from_slice(&block);
    }
    fn data(out: &mut Vec<u8>, stream: u32, n: usize, end: bool) {
        frame_head(out, n, DATA, if end { END_STREAM } else { 0 }, stream);
        out.extend(std::iter::repeat(b'x').take(n));
    }
}

/// The frames in `buf`: (type, flags, stream, payload).
fn frames(mut buf: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut out = vec![];
    while buf.len() >= 9 {
        let len = (buf[0] as usize) << 16 | (buf[1] as usize) << 8 | buf[2] as usize;
        out.push((buf[3], buf[4], be32(&buf[5..9]) & 0x7fff_ffff, buf[9..9 + len].to_vec()));
        buf = &buf[9 + len..];
    }
    out
}

fn session(wbuf: &mut Vec<u8>) -> Http2<u32> {
    let mut h = Http2::new(H2Options::default());
    h.start(wbuf);
    h
}

#[test]
fn the_preface_and_settings_go_first_and_requests_become_streams_1_3_5() {
    let mut w = vec![];
    let mut h = session(&mut w);
    assert!(w.starts_with(PREFACE));
    let settings = frames(&w[PREFACE.len()..]);
    assert_eq!(settings, [(SETTINGS, 0, 0, vec![0, 2, 0, 0, 0, 0])], "ENABLE_PUSH = 0 only");
    w.clear();
    let r = req("http://127.0.0.1:8080/json?x=1");
    for tag in [10, 11, 12] {
        h.send(&r, &mut StepRng::new(0, 0), &mut w, tag);
    }
    let f = frames(&w);
    assert_eq!(f.iter().map(|f| (f.0, f.1, f.2)).collect::<Vec<_>>(), [(HEADERS, 5, 1), (HEADERS, 5, 3), (HEADERS, 5, 5)]);
    let mut dec = Decoder::default();
    for (_, _, _, block) in &f {
        let mut fields = vec![];
        dec.decode(&mut block.clone(), &mut fields).unwrap();
        let text: Vec<(String, String)> = fields.iter().map(|(n, v, _)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into())).collect();
        assert_eq!(text[..4], [(":method".into(), "GET".into()), (":scheme".into(), "http".into()), (":authority".into(), "127.0.0.1:8080".into()), (":path".into(), "/json?x=1".into())]);
    }
    assert!(f[1].3.len() < f[0].3.len(), "the second block refers to the dynamic table");
    assert_eq!(f[1].3, f[2].3, "a fixed request's block is reused once stable");
    assert!(h.stable);
    assert_eq!(h.in_flight(), 3);
}

#[test]
fn responses_are_matched_by_stream_id_whatever_their_order_and_split() {
    let mut w = vec![];
    let mut h = session(&mut w);
    let r = req("http://127.0.0.1/");
    for tag in [1, 2] {
        h.send(&r, &mut StepRng::new(0, 0), &mut w, tag);
    }
    let mut srv = Server::new();
    let mut bytes = vec![];
    srv.headers(&mut bytes, 3, "404", true);
    srv.headers(&mut bytes, 1, "200", false);
    Server::data(&mut bytes, 1, 13, true);
    let mut done = vec![];
    // byte by byte: a frame split anywhere waits for the rest
    let mut used = 0;
    let mut got = vec![];
    for end in 1..=bytes.len() {
        let p = h.parse(&bytes[used..end], &mut w, &mut done);
        assert!(!p.bad);
        used += p.used;
        got.extend(done.iter().map(|(r, t)| (r.status, *t, r.keep_alive)));
    }
    assert_eq!(used, bytes.len());
    assert_eq!(got, [(404, 2, true), (200, 1, true)]);
    assert_eq!(h.in_flight(), 0);
}

#[test]
fn settings_are_acked_and_their_stream_limit_holds_requests_back() {
    let mut w = vec![];
    let mut h = session(&mut w);
    w.clear();
    let mut bytes = vec![];
    frame_head(&mut bytes, 6, SETTINGS, 0, 0);
    bytes.extend_from_slice(&[0, 3, 0, 0, 0, 1]); // MAX_CONCURRENT_STREAMS = 1
    let mut done = vec![];
    let p = h.parse(&bytes, &mut w, &mut done);
    assert!(p.wrote && !p.bad);
    assert_eq!(frames(&w), [(SETTINGS, ACK, 0, vec![])]);
    w.clear();
    let r = req("http://127.0.0.1/");
    let mut rng = StepRng::new(0, 0);
    h.send(&r, &mut rng, &mut w, 7);
    h.send(&r, &mut rng, &mut w, 8);
    assert_eq!(frames(&w).len(), 1, "the second waits for a free stream");
    assert_eq!((h.in_flight(), h.has_waiting()), (2, true));
    w.clear();
    let mut srv = Server::new();
    let mut resp = vec![];
    srv.headers(&mut resp, 1, "200", true);
    h.parse(&resp, &mut w, &mut done);
    assert_eq!(done.iter().map(|d| d.1).collect::<Vec<_>>(), [7]);
    assert!(h.release(&r, &mut rng, &mut w));
    assert_eq!(frames(&w).iter().map(|f| f.2).collect::<Vec<_>>(), [3]);
}

#[test]
fn rst_stream_ends_one_request_and_the_connection_lives_on() {
    let mut w = vec![];
    let mut h = session(&mut w);
    let r = req("http://127.0.0.1/");
    for tag in [1, 2] {
        h.send(&r, &mut StepRng::new(0, 0), &mut w, tag);
    }
    let mut bytes = vec![];
    frame_head(&mut bytes, 4, RST_STREAM, 0, 1);
    bytes.extend_from_slice(&8u32.to_be_bytes()); // CANCEL
    Server::new().headers(&mut bytes, 3, "200", true);
    let mut done = vec![];
    assert!(!h.parse(&bytes, &mut w, &mut done).bad);
    assert_eq!(done.iter().map(|(r, t)| (r.status, *t, r.keep_alive)).collect::<Vec<_>>(), [(NO_RESPONSE, 1, true), (200, 2, true)]);
}

#[test]
fn goaway_fails_the_streams_it_never_served_and_closes_after_the_rest() {
    let mut w = vec![];
    let mut h = session(&mut w);
    let r = req("http://127.0.0.1/");
    for tag in [1, 2, 3] {
        h.send(&r, &mut StepRng::new(0, 0), &mut w, tag);
    }
    let mut bytes = vec![];
    frame_head(&mut bytes, 8, GOAWAY, 0, 0);
    bytes.extend_from_slice(&1u32.to_be_bytes()); // stream 1 is the last it serves
    bytes.extend_from_slice(&0u32.to_be_bytes());
    let mut done = vec![];
    h.parse(&bytes, &mut w, &mut done);
    assert_eq!(done.iter().map(|(r, t)| (r.status, *t, r.keep_alive)).collect::<Vec<_>>(), [(NO_RESPONSE, 2, true), (NO_RESPONSE, 3, true)]);
    let mut resp = vec![];
    Server::new().headers(&mut resp, 1, "200", true);
    h.parse(&resp, &mut w, &mut done);
    assert_eq!(done.iter().map(|(r, t)| (r.status, *t, r.keep_alive)).collect::<Vec<_>>(), [(200, 1, false)], "the last one ends the connection");
}

#[test]
fn data_gives_the_window_back_at_half_and_pings_are_answered() {
    let mut w = vec![];
    let mut h = session(&mut w);
    let r = req("http://127.0.0.1/big");
    h.send(&r, &mut StepRng::new(0, 0), &mut w, 1);
    w.clear();
    let mut bytes = vec![];
    Server::new().headers(&mut bytes, 1, "200", false);
    for _ in 0..3 {
        Server::data(&mut bytes, 1, 16_384, false);
    }
    frame_head(&mut bytes, 8, PING, 0, 0);
    bytes.extend_from_slice(b"12345678");
    let mut done = vec![];
    let p = h.parse(&bytes, &mut w, &mut done);
    assert!(p.wrote && done.is_empty());
    let f = frames(&w);
    let updates: Vec<(u32, u32)> = f.iter().filter(|f| f.0 == WINDOW_UPDATE).map(|f| (f.2, be32(&f.3))).collect();
    assert_eq!(updates, [(0, 32_768), (1, 32_768)], "connection and stream, each at half of 65,535");
    assert!(f.contains(&(PING, ACK, 0, b"12345678".to_vec())));
}

#[test]
fn protocol_errors_are_connection_errors() {
    let mut w = vec![];
    let mut done = vec![];
    let mut h = session(&mut w);
    let mut big = vec![];
    frame_head(&mut big, MAX_FRAME + 1, HEADERS, 0, 1);
    assert!(h.parse(&big, &mut w, &mut done).bad, "a frame over SETTINGS_MAX_FRAME_SIZE");
    let mut h = session(&mut w);
    let mut cut = vec![];
    frame_head(&mut cut, 0, HEADERS, 0, 1); // no END_HEADERS: a CONTINUATION must follow
    frame_head(&mut cut, 8, PING, 0, 0);
    cut.extend_from_slice(b"12345678");
    assert!(h.parse(&cut, &mut w, &mut done).bad, "a header block interrupted");
    let mut h = session(&mut w);
    let mut push = vec![];
    frame_head(&mut push, 4, PUSH_PROMISE, END_HEADERS, 1);
    push.extend_from_slice(&2u32.to_be_bytes());
    assert!(h.parse(&push, &mut w, &mut done).bad, "push was disabled");
    let mut h = session(&mut w);
    let mut junk = vec![];
    frame_head(&mut junk, 2, HEADERS, END_HEADERS | END_STREAM, 1);
    junk.extend_from_slice(&[0xff, 0xff]);
    assert!(h.parse(&junk, &mut w, &mut done).bad, "an HPACK index past both tables");
}

#[test]
fn a_failed_connection_hands_back_every_request_and_a_new_one_resends_held_ones() {
    let mut w = vec![];
    let mut h = session(&mut w);
    let r = req("http://127.0.0.1/");
    for tag in [1, 2, 3] {
        h.send(&r, &mut StepRng::new(0, 0), &mut w, tag);
    }
    assert_eq!(h.oldest(), Some(&1));
    assert_eq!(h.waiting().copied().collect::<Vec<_>>(), [1, 2, 3]);
    assert!(h.eof().is_err(), "streams open at the close lost their responses");
    assert_eq!((h.pop_oldest(), h.forget()), (Some(1), 2));
    h.send(&r, &mut StepRng::new(0, 0), &mut w, 9);
    w.clear();
    h.start(&mut w);
    assert_eq!(h.in_flight(), 1, "held for the new connection");
    assert!(h.release(&r, &mut StepRng::new(0, 0), &mut w));
    let f = frames(&w[PREFACE.len()..]);
    assert_eq!(f.last().map(|f| (f.0, f.2)), Some((HEADERS, 1)), "stream ids start over");
}
