//! Incremental HTTP/1.1 response parser (part of the protocol layer).
//!
//! The head is parsed in place with `httparse`; bodies (Content-Length,
//! chunked, or close-delimited) are consumed and discarded as bytes arrive,
//! so a 1 MiB body never needs a 1 MiB buffer. Any byte sequence yields either
//! progress or an error — never a panic. May use: httparse only.

/// Largest response head we accept before calling the response malformed.
pub const MAX_HEAD: usize = 64 * 1024;
/// Longest chunk-size or trailer line we accept.
const MAX_LINE: usize = 4096;
const MAX_HEADERS: usize = 64;

/// A complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// False when the server said it will close (Connection: close, HTTP/1.0
    /// without keep-alive, or a close-delimited body).
    pub keep_alive: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The bytes are not an HTTP/1.x response.
    Malformed(&'static str),
    /// The connection closed in the middle of a response.
    Truncated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkDataEnd,
    Trailers,
    UntilClose,
}

#[derive(Debug, Clone)]
pub struct ResponseParser {
    state: State,
    status: u16,
    keep_alive: bool,
    /// Bytes of a chunk line (or CRLF) seen so far, kept so lines may be split
    /// across reads without buffering them.
    line_len: usize,
    line_value: u64,
    line_digits: usize,
    line_in_ext: bool,
    line_cr: bool,
    trailer_empty: bool,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    pub fn new() -> Self {
        ResponseParser {
            state: State::Head,
            status: 0,
            keep_alive: true,
            line_len: 0,
            line_value: 0,
            line_digits: 0,
            line_in_ext: false,
            line_cr: false,
            trailer_empty: true,
        }
    }

    /// Forget any partial response (the connection was replaced).
    pub fn reset(&mut self) {
        *self = ResponseParser::new();
    }

    /// Consume bytes from `buf`. Returns how many bytes were used and the
    /// response if one completed. `Ok((0, None))` with a non-empty buffer means
    /// the head is incomplete: keep the bytes and call again with more.
    /// `no_body` is set for responses to HEAD requests.
    pub fn advance(
        &mut self,
        buf: &[u8],
        no_body: bool,
    ) -> Result<(usize, Option<Response>), ParseError> {
        let mut used = 0;
        loop {
            let rest = &buf[used..];
            match self.state {
                State::Head => {
                    if rest.is_empty() {
                        return Ok((used, None));
                    }
                    match self.parse_head(rest, no_body)? {
                        None => {
                            if rest.len() > MAX_HEAD {
                                return Err(ParseError::Malformed("response head too large"));
                            }
                            return Ok((used, None));
                        }
                        Some((n, done)) => {
                            used += n;
                            if let Some(r) = done {
                                return Ok((used, Some(r)));
                            }
                        }
                    }
                }
                State::Length(remaining) => {
                    let take = remaining.min(rest.len() as u64);
                    used += take as usize;
                    if take == remaining {
                        return Ok((used, Some(self.finish())));
                    }
                    self.state = State::Length(remaining - take);
                    return Ok((used, None));
                }
                State::UntilClose => return Ok((buf.len(), None)),
                State::ChunkData(remaining) => {
                    let take = remaining.min(rest.len() as u64);
                    used += take as usize;
                    if take < remaining {
                        self.state = State::ChunkData(remaining - take);
                        return Ok((used, None));
                    }
                    self.state = State::ChunkDataEnd;
                    self.line_len = 0;
                    self.line_cr = false;
                }
                State::ChunkDataEnd => {
                    used += self.chunk_data_end(rest)?;
                    if self.state == State::ChunkDataEnd {
                        return Ok((used, None));
                    }
                }
                State::ChunkSize => {
                    let (n, done) = self.chunk_size_line(rest)?;
                    used += n;
                    if !done {
                        return Ok((used, None));
                    }
                    if self.line_value == 0 {
                        self.state = State::Trailers;
                        self.line_len = 0;
                        self.line_cr = false;
                        self.trailer_empty = true;
                    } else {
                        self.state = State::ChunkData(self.line_value);
                    }
                }
                State::Trailers => {
                    let (n, finished) = self.trailers(rest)?;
                    used += n;
                    return Ok((used, finished.then(|| self.finish())));
                }
            }
        }
    }

    /// Exactly CRLF after the chunk data: consume what `rest` has of it (the
    /// state moves on to the next chunk-size line once it is all there).
    #[inline]
    fn chunk_data_end(&mut self, rest: &[u8]) -> Result<usize, ParseError> {
        let mut i = 0;
        while i < rest.len() {
            let b = rest[i];
            i += 1;
            if !self.line_cr {
                if b != b'\r' {
                    return Err(ParseError::Malformed("chunk data not followed by CRLF"));
                }
                self.line_cr = true;
            } else {
                if b != b'\n' {
                    return Err(ParseError::Malformed("chunk data not followed by CRLF"));
                }
                self.start_chunk_line();
                self.state = State::ChunkSize;
                break;
            }
        }
        Ok(i)
    }

    /// Trailer lines until an empty line; their content is ignored. Returns
    /// the bytes consumed and whether the empty line ended the response.
    #[inline]
    fn trailers(&mut self, rest: &[u8]) -> Result<(usize, bool), ParseError> {
        let mut i = 0;
        while i < rest.len() {
            let b = rest[i];
            i += 1;
            self.line_len += 1;
            if self.line_len > MAX_LINE {
                return Err(ParseError::Malformed("trailer line too long"));
            }
            if b == b'\n' {
                if self.trailer_empty {
                    return Ok((i, true));
                }
                self.trailer_empty = true;
                self.line_len = 0;
            } else if b != b'\r' {
                self.trailer_empty = false;
            }
        }
        Ok((i, false))
    }

    /// The peer closed the connection. A close-delimited body completes here;
    /// anything else half-read is a truncated response.
    pub fn eof(&mut self) -> Result<Option<Response>, ParseError> {
        match self.state {
            State::Head => Ok(None),
            State::UntilClose => Ok(Some(self.finish())),
            _ => Err(ParseError::Truncated),
        }
    }

    fn finish(&mut self) -> Response {
        let r = Response { status: self.status, keep_alive: self.keep_alive };
        self.state = State::Head;
        r
    }

    fn start_chunk_line(&mut self) {
        self.line_len = 0;
        self.line_value = 0;
        self.line_digits = 0;
        self.line_in_ext = false;
        self.line_cr = false;
    }

    /// Returns (bytes used, line complete).
    fn chunk_size_line(&mut self, rest: &[u8]) -> Result<(usize, bool), ParseError> {
        for (i, &b) in rest.iter().enumerate() {
            self.line_len += 1;
            if self.line_len > MAX_LINE {
                return Err(ParseError::Malformed("chunk size line too long"));
            }
            if b == b'\n' {
                if self.line_digits == 0 {
                    return Err(ParseError::Malformed("empty chunk size"));
                }
                return Ok((i + 1, true));
            }
            if self.line_cr {
                return Err(ParseError::Malformed("bare CR in chunk size line"));
            }
            if b == b'\r' {
                self.line_cr = true;
            } else if self.line_in_ext {
                // chunk extensions are ignored
            } else if b == b';' {
                self.line_in_ext = true;
            } else if b == b' ' || b == b'\t' {
                // whitespace before extensions is tolerated
                self.line_in_ext = self.line_digits > 0 || self.line_in_ext;
            } else {
                let d = match b {
                    b'0'..=b'9' => b - b'0',
                    b'a'..=b'f' => b - b'a' + 10,
                    b'A'..=b'F' => b - b'A' + 10,
                    _ => return Err(ParseError::Malformed("bad chunk size")),
                };
                self.line_digits += 1;
                if self.line_digits > 15 {
                    return Err(ParseError::Malformed("chunk size too large"));
                }
                self.line_value = self.line_value * 16 + d as u64;
            }
        }
        Ok((rest.len(), false))
    }

    /// Parse a head. Returns None if incomplete, else (bytes used, response if
    /// it has no body).
    fn parse_head(
        &mut self,
        buf: &[u8],
        no_body: bool,
    ) -> Result<Option<(usize, Option<Response>)>, ParseError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(ParseError::Malformed("too many response headers"))
            }
            Err(_) => return Err(ParseError::Malformed("invalid response head")),
        };
        let status = resp.code.unwrap_or(0);
        let version = resp.version.unwrap_or(1);
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut conn_close = false;
        let mut conn_keep_alive = false;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = parse_length(h.value)
                    .ok_or(ParseError::Malformed("invalid Content-Length"))?;
                if length.is_some_and(|l| l != v) {
                    return Err(ParseError::Malformed("conflicting Content-Length headers"));
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                // chunked must be the final coding; anything else is close-delimited
                chunked = last_token(h.value).eq_ignore_ascii_case(b"chunked");
            } else if h.name.eq_ignore_ascii_case("connection") {
                for tok in h.value.split(|&b| b == b',') {
                    let t = trim(tok);
                    if t.eq_ignore_ascii_case(b"close") {
                        conn_close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") {
                        conn_keep_alive = true;
                    }
                }
            }
        }
        // Interim 1xx responses (except 101) are skipped; the real one follows.
        if (100..200).contains(&status) && status != 101 {
            return Ok(Some((n, None)));
        }
        self.status = status;
        self.keep_alive = !conn_close && (version == 1 || conn_keep_alive);
        if no_body || status == 204 || status == 304 || status == 101 {
            return Ok(Some((n, Some(self.finish()))));
        }
        if chunked {
            self.start_chunk_line();
            self.state = State::ChunkSize;
        } else if let Some(len) = length {
            if len == 0 {
                return Ok(Some((n, Some(self.finish()))));
            }
            self.state = State::Length(len);
        } else {
            self.keep_alive = false;
            self.state = State::UntilClose;
        }
        Ok(Some((n, None)))
    }
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', r @ ..] = s {
        s = r;
    }
    while let [r @ .., b' ' | b'\t'] = s {
        s = r;
    }
    s
}

fn last_token(v: &[u8]) -> &[u8] {
    trim(v.rsplit(|&b| b == b',').next().unwrap_or(v))
}

fn parse_length(v: &[u8]) -> Option<u64> {
    let v = trim(v);
    if v.is_empty() || v.len() > 18 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in v {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (b - b'0') as u64;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `data` in pieces of `step` bytes, as a reader with a growing
    /// buffer would; collect responses and the final error, if any.
    fn feed(data: &[u8], step: usize) -> (Vec<Response>, Option<ParseError>) {
        let mut p = ResponseParser::new();
        let mut out = vec![];
        let mut buf: Vec<u8> = vec![];
        for piece in data.chunks(step.max(1)) {
            buf.extend_from_slice(piece);
            loop {
                match p.advance(&buf, false) {
                    Ok((n, r)) => {
                        buf.drain(..n);
                        match r {
                            Some(r) => out.push(r),
                            None => break,
                        }
                    }
                    Err(e) => return (out, Some(e)),
                }
            }
        }
        match p.eof() {
            Ok(Some(r)) => out.push(r),
            Ok(None) => {}
            Err(e) => return (out, Some(e)),
        }
        (out, None)
    }

    #[test]
    fn content_length_and_chunked_split_anywhere() {
        let data = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        for step in 1..data.len() {
            let (r, e) = feed(data, step);
            assert_eq!(e, None, "step {step}");
            let codes: Vec<u16> = r.iter().map(|r| r.status).collect();
            assert_eq!(codes, vec![200, 404, 204], "step {step}");
            assert!(r.iter().all(|r| r.keep_alive));
        }
    }

    #[test]
    fn close_delimited_completes_at_eof() {
        let (r, e) = feed(b"HTTP/1.1 200 OK\r\n\r\nbody until close", 4);
        assert_eq!(e, None);
        assert_eq!(r, vec![Response { status: 200, keep_alive: false }]);
    }

    #[test]
    fn truncated_length_body_is_an_error() {
        let (r, e) = feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 100);
        assert!(r.is_empty());
        assert_eq!(e, Some(ParseError::Truncated));
    }

    #[test]
    fn connection_close_and_http10() {
        let (r, _) = feed(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\nHTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", 7);
        let ka: Vec<bool> = r.iter().map(|r| r.keep_alive).collect();
        assert_eq!(ka, vec![false, false, true]);
    }

    #[test]
    fn garbage_and_bad_framing_are_malformed() {
        assert!(matches!(feed(b"garbage garbage\r\n\r\n", 3).1, Some(ParseError::Malformed(_))));
        assert!(matches!(
            feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 5).1,
            Some(ParseError::Malformed(_))
        ));
        assert!(matches!(
            feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 5).1,
            Some(ParseError::Malformed(_))
        ));
        assert!(matches!(
            feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", 5).1,
            Some(ParseError::Malformed(_))
        ));
    }

    #[test]
    fn interim_100_is_skipped_and_head_has_no_body() {
        let (r, e) = feed(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1);
        assert_eq!(e, None);
        assert_eq!(r.len(), 1);
        let mut p = ResponseParser::new();
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
        assert_eq!(p.advance(head, true).unwrap(), (head.len(), Some(Response { status: 200, keep_alive: true })));
    }

    #[test]
    fn oversized_head_is_malformed() {
        let mut data = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
        data.resize(MAX_HEAD + 10, b'a');
        assert!(matches!(feed(&data, 4096).1, Some(ParseError::Malformed(_))));
    }
}
