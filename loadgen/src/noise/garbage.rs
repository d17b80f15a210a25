//! The malformed requests of the garbage shape, sent in turn on each
//! connection, and the well-formed requests of the other shapes.

/// The kinds of malformed request, in the order a connection sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A path no server serves: a well-formed request answered 404.
    NoSuchPath,
    /// A method token with a byte no token may hold.
    BadMethod,
    /// `Content-Length: 10` and no body: the server waits for it, or times out.
    MissingBody,
    /// 256 bytes that are not HTTP.
    Binary,
    /// Transfer-Encoding and Content-Length together (request smuggling's shape).
    TeClConflict,
}

impl Kind {
    pub const ALL: [Kind; 5] = [Kind::NoSuchPath, Kind::BadMethod, Kind::MissingBody, Kind::Binary, Kind::TeClConflict];

    /// The `n`th request of a connection.
    pub fn nth(n: u64) -> Kind {
        Kind::ALL[(n % Kind::ALL.len() as u64) as usize]
    }
}

/// Append request `kind` (the `seq`th of the run, for a distinct path and
/// binary pattern) for host `authority` to `out`.
pub fn write(out: &mut Vec<u8>, kind: Kind, seq: u64, authority: &str) {
    use std::io::Write;
    let _ = match kind {
        Kind::NoSuchPath => write!(out, "GET /no-such-path-{seq} HTTP/1.1\r\nHost: {authority}\r\n\r\n"),
        Kind::BadMethod => write!(out, "G(E)T / HTTP/1.1\r\nHost: {authority}\r\n\r\n"),
        Kind::MissingBody => write!(out, "POST /echo HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 10\r\n\r\n"),
        Kind::Binary => {
            // an xorshift stream: varied bytes, the same for the same seq
            let mut x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            out.extend((0..256).map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            }));
            Ok(())
        }
        Kind::TeClConflict => write!(
            out,
            "POST /echo HTTP/1.1\r\nHost: {authority}\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"
        ),
    };
}

/// A slow reader's request: keep-alive, for `path`.
pub fn get(out: &mut Vec<u8>, path: &str, authority: &str) {
    out.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes());
}

/// What a slowloris connection sends first: a request line and a complete
/// header, then the endless one begins (`HEADER_START` and then `HEADER_FILL`
/// forever, one byte per interval).
pub fn slowloris_head(out: &mut Vec<u8>, authority: &str) {
    out.extend_from_slice(format!("GET /hello HTTP/1.1\r\nHost: {authority}\r\n").as_bytes());
}

const HEADER_START: &[u8] = b"X-a: ";
const HEADER_FILL: u8 = b'b';

/// The `n`th byte of the endless header (from 0).
pub fn slowloris_byte(n: u64) -> u8 {
    HEADER_START.get(n as usize).copied().unwrap_or(HEADER_FILL)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parses(bytes: &[u8]) -> Result<httparse::Status<usize>, httparse::Error> {
        let mut h = [httparse::EMPTY_HEADER; 16];
        httparse::Request::new(&mut h).parse(bytes)
    }

    #[test]
    fn each_kind_is_what_it_says() {
        let req = |k: Kind| {
            let mut v = vec![];
            write(&mut v, k, 7, "h:1");
            v
        };
        assert!(matches!(parses(&req(Kind::NoSuchPath)), Ok(httparse::Status::Complete(_))));
        assert!(parses(&req(Kind::BadMethod)).is_err(), "a bad method token");
        let mb = req(Kind::MissingBody);
        assert!(mb.ends_with(b"Content-Length: 10\r\n\r\n"), "the head ends, no body follows");
        let bin = req(Kind::Binary);
        assert_eq!(bin.len(), 256);
        assert!(bin.iter().collect::<std::collections::HashSet<_>>().len() > 64, "varied bytes");
        assert_ne!(bin, { let mut v = vec![]; write(&mut v, Kind::Binary, 8, "h"); v });
        let te = String::from_utf8(req(Kind::TeClConflict)).unwrap();
        assert!(te.contains("Transfer-Encoding: chunked\r\n") && te.contains("Content-Length: 5\r\n"));
        assert_eq!(Kind::nth(0), Kind::NoSuchPath);
        assert_eq!(Kind::nth(9), Kind::TeClConflict);
    }

    #[test]
    fn the_slowloris_header_never_ends() {
        let mut v = vec![];
        slowloris_head(&mut v, "h");
        v.extend((0..1000).map(slowloris_byte));
        assert!(v.starts_with(b"GET /hello HTTP/1.1\r\nHost: h\r\nX-a: bbb"));
        assert!(!v.windows(4).any(|w| w == b"\r\n\r\n"));
        assert!(matches!(parses(&v), Ok(httparse::Status::Partial)));
    }
}
