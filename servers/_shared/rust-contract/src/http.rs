//! HTTP/1.1 pieces common to the rows that speak it by hand (rust-threadpool
//! over blocking std::net, rust-tokio and rust-async-std with httparse):
//! routing by SPEC's endpoint table (`resolve`), the header fields
//! that decide framing and keep-alive, and the response head (with the cached
//! `Date` of `crate::date`). Reading and writing sockets, waiting and reading
//! files stay in each row. rust-actix leaves all of this to actix-web.

use std::io::Write;
use std::path::Path;

/// Largest request head accepted. SPEC requires 8 KiB; allow some slack.
pub const MAX_HEAD: usize = 16 * 1024;

/// Interim response to `Expect: 100-continue`, sent before reading the body.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The reason phrase of every status these rows send.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// The `Allow` field of a 405.
    pub allow: Option<&'static str>,
    /// The `Server` field, sent by the database paths only (SPEC).
    pub server: Option<&'static str>,
    /// The `Content-Encoding` field: `gzip` for `/compress`'s body.
    pub content_encoding: Option<&'static str>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: Vec<u8>) -> Response {
        Response { status, content_type, body, allow: None, server: None, content_encoding: None }
    }

    /// The same response with a `Server` field naming `server`.
    pub fn with_server(self, server: &'static str) -> Response {
        Response { server: Some(server), ..self }
    }

    pub fn text(status: u16, body: &str) -> Response {
        Response::new(status, "text/plain", body.as_bytes().to_vec())
    }

    /// An error answered with its reason phrase as the body.
    pub fn error(status: u16) -> Response {
        Response::text(status, reason(status))
    }

    /// The answer to `GET /file` from the row's own read of it: the file as
    /// HTML, or 500 (with a line on stderr) when it could not be read.
    pub fn file(read: std::io::Result<Vec<u8>>, path: &Path) -> Response {
        match read {
            Ok(bytes) => Response::new(200, "text/html", bytes),
            Err(e) => {
                eprintln!("reading {}: {e}", path.display());
                Response::error(500)
            }
        }
    }

    /// Appends the whole response to `out`, formatted straight into it (no
    /// intermediate String), with the `Date` of this second (`date::now`, a
    /// cached value). `Connection` is written only where it differs from the
    /// version's default: close on 1.1, keep-alive on 1.0.
    pub fn write_to(&self, out: &mut Vec<u8>, keep_alive: bool, http10: bool) {
        self.write_dated(out, keep_alive, http10, &crate::date::now());
    }

    /// `write_to` with a given `Date` value.
    pub fn write_dated(&self, out: &mut Vec<u8>, keep_alive: bool, http10: bool, date: &[u8; crate::date::LEN]) {
        // Writing to a Vec cannot fail.
        let _ = write!(
            out,
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        if let Some(encoding) = self.content_encoding {
            let _ = write!(out, "Content-Encoding: {encoding}\r\n");
        }
        out.extend_from_slice(b"Date: ");
        out.extend_from_slice(date);
        out.extend_from_slice(b"\r\n");
        if let Some(server) = self.server {
            let _ = write!(out, "Server: {server}\r\n");
        }
        if let Some(allow) = self.allow {
            let _ = write!(out, "Allow: {allow}\r\n");
        }
        if !keep_alive {
            out.extend_from_slice(b"Connection: close\r\n");
        } else if http10 {
            out.extend_from_slice(b"Connection: keep-alive\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
    }
}

/// Splits a request target into its path and query string, accepting the
/// absolute form too (RFC 9112 §3.2.2).
pub fn split_target(target: &str) -> (&str, &str) {
    let target = match target.strip_prefix("http://") {
        Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => target,
    };
    target.split_once('?').unwrap_or((target, ""))
}

/// Splits a request target into SPEC's path and the query string (see
/// `split_target`), and checks the method: Err holds the 404 for an unknown
/// path (the database paths included: `db::DbQuery::route` has those) or the
/// 405 (with `Allow`) for a wrong method.
pub fn resolve<'t>(method: &str, target: &'t str) -> Result<(&'t str, &'t str), Response> {
    let (path, query) = split_target(target);
    let allowed = match path {
        "/" | "/json" | "/file" | "/delay" | "/tenth" | "/compress" => "GET",
        "/echo" => "POST",
        _ => return Err(Response::error(404)),
    };
    if method != allowed {
        let mut resp = Response::error(405);
        resp.allow = Some(allowed);
        return Err(resp);
    }
    Ok((path, query))
}

/// How a request's body is framed and whether the connection stays open,
/// as decided by `HeadFields::finish`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// Body length when not chunked (0 when absent), at most `MAX_BODY`.
    pub content_length: usize,
    pub chunked: bool,
    pub keep_alive: bool,
    /// Answer `CONTINUE` before reading the body: the client asked for it,
    /// speaks HTTP/1.1 and there is a body to wait for.
    pub send_continue: bool,
}

/// Collects, one header field at a time, the fields that matter to these
/// rows (Content-Length, Transfer-Encoding, Connection, Expect); every other
/// field is ignored. Errors are the status to answer before closing.
/// Allocation-free: it is fed every field of every request.
#[derive(Debug, Default)]
pub struct HeadFields {
    content_length: Option<u64>,
    chunked: bool,
    conn_close: bool,
    conn_keep_alive: bool,
    expect_continue: bool,
}

impl HeadFields {
    /// `name` is the field name as received (already checked to be a token);
    /// `value` may still carry the optional whitespace around it.
    pub fn field(&mut self, name: &str, value: &str) -> Result<(), u16> {
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case("content-length") {
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(400);
            }
            // Too many digits for u64 is simply too large (413 in `finish`).
            let n = value.parse::<u64>().unwrap_or(u64::MAX);
            // Differing lengths make the framing ambiguous.
            if self.content_length.is_some_and(|old| old != n) {
                return Err(400);
            }
            self.content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // Only a lone "chunked" coding is supported; a second field would
            // make it "chunked, chunked", which is invalid.
            if !value.eq_ignore_ascii_case("chunked") || self.chunked {
                return Err(400);
            }
            self.chunked = true;
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                self.conn_close |= token.eq_ignore_ascii_case("close");
                self.conn_keep_alive |= token.eq_ignore_ascii_case("keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            if !value.eq_ignore_ascii_case("100-continue") {
                return Err(400);
            }
            self.expect_continue = true;
        }
        Ok(())
    }

    /// Decides framing and keep-alive once the head is complete.
    pub fn finish(self, http10: bool) -> Result<Framing, u16> {
        // Both framings at once is a smuggling vector; HTTP/1.0 has no chunked.
        if self.chunked && (self.content_length.is_some() || http10) {
            return Err(400);
        }
        let content_length = self.content_length.unwrap_or(0);
        if content_length > crate::MAX_BODY as u64 {
            return Err(413);
        }
        let content_length = content_length as usize;
        Ok(Framing {
            content_length,
            chunked: self.chunked,
            // HTTP/1.1 persists unless told to close; HTTP/1.0 only when asked.
            keep_alive: if http10 { self.conn_keep_alive && !self.conn_close } else { !self.conn_close },
            send_continue: self.expect_continue && !http10 && (self.chunked || content_length > 0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(fields: &[(&str, &str)], http10: bool) -> Result<Framing, u16> {
        let mut h = HeadFields::default();
        for (name, value) in fields {
            h.field(name, value)?;
        }
        h.finish(http10)
    }

    const DATE: &[u8; crate::date::LEN] = b"Sun, 06 Nov 1994 08:49:37 GMT";

    #[test]
    fn response_head() {
        let mut out = Vec::new();
        Response::text(200, "hi").write_dated(&mut out, true, false, DATE);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\
             Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\nhi"
        );
        out.clear();
        let mut r = Response::error(405);
        r.allow = Some("GET");
        r.write_dated(&mut out, false, false, DATE);
        let want = "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\nContent-Length: 18\r\n\
                    Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nAllow: GET\r\nConnection: close\r\n\r\nMethod Not Allowed";
        assert_eq!(String::from_utf8(out.clone()).unwrap(), want);
        out.clear();
        Response::new(200, "application/octet-stream", vec![]).write_dated(&mut out, true, true, DATE);
        assert!(out.ends_with(b"GMT\r\nConnection: keep-alive\r\n\r\n"));
        out.clear();
        Response::error(503).with_server("row").write_dated(&mut out, true, false, DATE);
        let want = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 19\r\n\
                    Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nServer: row\r\n\r\nService Unavailable";
        assert_eq!(String::from_utf8(out.clone()).unwrap(), want);
        out.clear();
        let gz = Response { content_encoding: Some("gzip"), ..Response::new(200, "application/json", vec![0x1f]) };
        gz.write_dated(&mut out, true, false, DATE);
        let want = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1\r\nContent-Encoding: gzip\r\n\
                    Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n\x1f";
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn write_to_dates_with_the_current_second() {
        let unix_now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let mut out = Vec::new();
        let before = unix_now();
        Response::text(200, "hi").write_to(&mut out, true, false);
        let after = unix_now();
        let text = String::from_utf8(out).unwrap();
        let date = text.lines().find_map(|l| l.strip_prefix("Date: ")).expect("a Date field");
        let date: &[u8; crate::date::LEN] = date.as_bytes().try_into().unwrap();
        assert!(*date == crate::date::imf_fixdate(before) || *date == crate::date::imf_fixdate(after));
        assert_eq!(text.matches("Date: ").count(), 1);
    }

    #[test]
    fn resolve_paths_and_methods() {
        assert_eq!(resolve("GET", "/").ok(), Some(("/", "")));
        assert_eq!(resolve("GET", "/delay?ms=1&bytes=2").ok(), Some(("/delay", "ms=1&bytes=2")));
        assert_eq!(resolve("GET", "http://example.com/json?x").ok(), Some(("/json", "x")));
        assert_eq!(resolve("GET", "http://example.com").ok(), Some(("/", "")));
        assert_eq!(resolve("POST", "/echo").ok(), Some(("/echo", "")));
        assert_eq!(resolve("GET", "/compress?kb=1").ok(), Some(("/compress", "kb=1")));
        assert_eq!(resolve("GET", "/nope").err().map(|r| r.status), Some(404));
        assert_eq!(resolve("GET", "/db").err().map(|r| r.status), Some(404));
        assert_eq!(split_target("http://h/queries?queries=3"), ("/queries", "queries=3"));
        assert_eq!(split_target("/fortunes"), ("/fortunes", ""));
        assert_eq!(resolve("GET", "/json/").err().map(|r| r.status), Some(404));
        let r = resolve("POST", "/").err().unwrap();
        assert_eq!((r.status, r.allow), (405, Some("GET")));
        let r = resolve("GET", "/echo").err().unwrap();
        assert_eq!((r.status, r.allow), (405, Some("POST")));
    }

    #[test]
    fn file_answer() {
        let path = Path::new("/hello.html");
        let r = Response::file(Ok(b"<p>".to_vec()), path);
        assert_eq!((r.status, r.content_type, r.body.as_slice()), (200, "text/html", b"<p>".as_slice()));
        let r = Response::file(Err(std::io::Error::from(std::io::ErrorKind::NotFound)), path);
        assert_eq!((r.status, r.body.as_slice()), (500, b"Internal Server Error".as_slice()));
    }

    #[test]
    fn framing_defaults() {
        let f = head(&[("Host", "x"), ("X-Other", "whatever")], false).unwrap();
        assert_eq!(f, Framing { content_length: 0, chunked: false, keep_alive: true, send_continue: false });
        assert!(!head(&[], true).unwrap().keep_alive);
    }

    #[test]
    fn content_length_rules() {
        assert_eq!(head(&[("Content-Length", " 5 ")], false).unwrap().content_length, 5);
        assert_eq!(head(&[("content-length", "5"), ("Content-Length", "5")], false).unwrap().content_length, 5);
        assert_eq!(head(&[("Content-Length", "1048576")], false).unwrap().content_length, crate::MAX_BODY);
        assert_eq!(head(&[("Content-Length", "1048577")], false), Err(413));
        assert_eq!(head(&[("Content-Length", "99999999999999999999999")], false), Err(413));
        for bad in ["", "-1", "+5", "5x", "0x10", "1 2"] {
            assert_eq!(head(&[("Content-Length", bad)], false), Err(400), "{bad:?}");
        }
        assert_eq!(head(&[("Content-Length", "5"), ("Content-Length", "6")], false), Err(400));
    }

    #[test]
    fn transfer_encoding_rules() {
        let f = head(&[("Transfer-Encoding", "Chunked")], false).unwrap();
        assert!(f.chunked && f.content_length == 0);
        assert_eq!(head(&[("Transfer-Encoding", "gzip")], false), Err(400));
        assert_eq!(head(&[("Transfer-Encoding", "gzip, chunked")], false), Err(400));
        assert_eq!(head(&[("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")], false), Err(400));
        assert_eq!(head(&[("Transfer-Encoding", "chunked"), ("Content-Length", "3")], false), Err(400));
        assert_eq!(head(&[("Content-Length", "3"), ("Transfer-Encoding", "chunked")], false), Err(400));
        assert_eq!(head(&[("Transfer-Encoding", "chunked")], true), Err(400));
    }

    #[test]
    fn connection_rules() {
        assert!(!head(&[("Connection", "close")], false).unwrap().keep_alive);
        assert!(!head(&[("Connection", "Upgrade, CLOSE")], false).unwrap().keep_alive);
        assert!(head(&[("Connection", "keep-alive")], true).unwrap().keep_alive);
        assert!(!head(&[("Connection", "keep-alive, close")], true).unwrap().keep_alive);
        assert!(head(&[("Connection", "te")], false).unwrap().keep_alive);
    }

    #[test]
    fn expect_rules() {
        assert!(head(&[("Expect", "100-continue"), ("Content-Length", "3")], false).unwrap().send_continue);
        assert!(head(&[("Expect", "100-Continue"), ("Transfer-Encoding", "chunked")], false).unwrap().send_continue);
        // Nothing to wait for, or an HTTP/1.0 client that knows no 100: no interim response.
        assert!(!head(&[("Expect", "100-continue")], false).unwrap().send_continue);
        assert!(!head(&[("Expect", "100-continue"), ("Content-Length", "3")], true).unwrap().send_continue);
        assert_eq!(head(&[("Expect", "200-ok")], false), Err(400));
    }
}
