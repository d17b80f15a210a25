//! Target URL parsing and HTTP/1.1 request serialization (part of the
//! protocol layer).
//!
//! A request without placeholders is serialized once; workers copy those
//! bytes into a connection's write buffer. Templated requests are rendered
//! per request into the same buffer, without allocating. May use: `template`.

use crate::template::Template;
use rand::Rng;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};

#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    /// Value for the Host header (host[:port] as written).
    pub authority: String,
    /// Path and query, possibly with placeholders.
    pub path: String,
    /// `https://`: HTTP/1.1 over TLS.
    pub tls: bool,
    /// The host as written, without brackets or port: the TLS server name.
    pub host: String,
}

/// Parse `http[s]://host[:port][/path?query]` and resolve the host.
pub fn parse_url(url: &str) -> Result<Target, String> {
    let (rest, tls) = if let Some(r) = url.strip_prefix("http://") {
        (r, false)
    } else if let Some(r) = url.strip_prefix("https://") {
        (r, true)
    } else {
        return Err(format!("URL `{url}` must start with http:// or https://"));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => match rest.find('?') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        },
    };
    if authority.is_empty() {
        return Err(format!("URL `{url}` has no host"));
    }
    if authority.contains('@') {
        return Err(format!("URL `{url}`: user info is not supported"));
    }
    // host:port, [v6]:port, host, [v6]
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let end = v6.find(']').ok_or_else(|| format!("URL `{url}`: unclosed [ in host"))?;
        let host = &v6[..end];
        let after = &v6[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(format!("URL `{url}`: junk after ]")),
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port: u16 = match port {
        None if tls => 443,
        None => 80,
        Some(p) => p
            .parse()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| format!("URL `{url}`: port `{p}` is not a number in 1..65535"))?,
    };
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("URL `{url}`: cannot resolve host `{host}`: {e}"))?
        .next()
        .ok_or_else(|| format!("URL `{url}`: host `{host}` has no address"))?;
    Ok(Target { addr, authority: authority.to_string(), path: path.to_string(), tls, host: host.to_string() })
}

/// Everything needed to produce the bytes of one request.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: String,
    pub target: Target,
    /// (name, value) pairs as given with -H.
    pub headers: Vec<(String, String)>,
    pub body: Option<Body>,
    pub keepalive: bool,
}

#[derive(Debug, Clone)]
pub enum Body {
    Text(String),
    /// From --body-file: raw bytes, never templated.
    Bytes(Vec<u8>),
}

/// A request ready to write: fixed bytes, or parts rendered per request.
#[derive(Debug, Clone)]
pub struct RequestBytes {
    fixed: Option<Vec<u8>>,
    head_line: (String, Template),
    headers: Vec<(String, Template)>,
    body_template: Option<Template>,
    body_bytes: Option<Vec<u8>>,
    close: bool,
    pub is_head: bool,
    /// `:scheme` when the request goes over HTTP/2.
    scheme: &'static str,
}

/// One request's HTTP/2 fields, rendered per request into reused buffers:
/// the pseudo-headers first, then the -H fields with lower-case names, less
/// the connection-specific ones HTTP/2 forbids (RFC 9113 §8.2.2).
#[derive(Debug, Default)]
pub struct H2Fields {
    text: Vec<u8>,
    /// (name start, name end, value end) in `text`; each value follows its name.
    spans: Vec<(usize, usize, usize)>,
    pub body: Vec<u8>,
}

impl H2Fields {
    pub fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.spans.iter().map(|&(a, b, c)| (&self.text[a..b], &self.text[b..c]))
    }

    fn push(&mut self, name: &[u8], value: impl FnOnce(&mut Vec<u8>)) {
        let a = self.text.len();
        self.text.extend(name.iter().map(u8::to_ascii_lowercase));
        let b = self.text.len();
        value(&mut self.text);
        self.spans.push((a, b, self.text.len()));
    }
}

/// Fields HTTP/2 forbids (RFC 9113 §8.2.2); `host` becomes `:authority`.
const NOT_IN_H2: [&str; 6] = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

impl RequestBytes {
    pub fn new(spec: &RequestSpec) -> Result<RequestBytes, String> {
        for (k, v) in &spec.headers {
            if k.is_empty() || k.bytes().any(|b| !b.is_ascii_graphic() || b == b':') {
                return Err(format!("header name `{k}` is not a valid token"));
            }
            if v.contains('\r') || v.contains('\n') {
                return Err(format!("header `{k}` value contains a line break"));
            }
        }
        if spec.method.is_empty() || !spec.method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-') {
            return Err(format!("method `{}` is not a valid HTTP method", spec.method));
        }
        let path = Template::parse(&spec.target.path)?;
        let mut headers = vec![];
        let has = |name: &str| spec.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        if !has("host") {
            headers.push(("Host".to_string(), Template::parse(&spec.target.authority)?));
        }
        // No default User-Agent: the default request is wrk's (request line and
        // Host only), so a server does the same work per request under either
        // client (nginx, for one, inspects every User-Agent). Give -H to send one.
        for (k, v) in &spec.headers {
            if k.eq_ignore_ascii_case("content-length") {
                continue; // computed from the body
            }
            headers.push((k.clone(), Template::parse(v)?));
        }
        let (body_template, body_bytes) = match &spec.body {
            None => (None, None),
            Some(Body::Text(t)) => (Some(Template::parse(t)?), None),
            Some(Body::Bytes(b)) => (None, Some(b.clone())),
        };
        let close = !spec.keepalive && !has("connection");
        let mut r = RequestBytes {
            fixed: None,
            head_line: (spec.method.clone(), path),
            headers,
            body_template,
            body_bytes,
            close,
            is_head: spec.method.eq_ignore_ascii_case("HEAD"),
            scheme: if spec.target.tls { "https" } else { "http" },
        };
        let templated = !r.head_line.1.is_static()
            || r.headers.iter().any(|(_, v)| !v.is_static())
            || r.body_template.as_ref().is_some_and(|t| !t.is_static());
        if !templated {
            // no placeholders: the RNG is never consulted
            let mut buf = vec![];
            let mut scratch = vec![];
            r.render_parts(&mut rand::rngs::mock::StepRng::new(0, 0), &mut buf, &mut scratch);
            r.fixed = Some(buf);
        }
        Ok(r)
    }

    /// Append one request to `out`. `scratch` is reused for templated bodies.
    #[inline]
    pub fn write_to<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
        match &self.fixed {
            Some(b) => out.extend_from_slice(b),
            None => self.render_parts(rng, out, scratch),
        }
    }

    /// Serialized once (no placeholders): every request is the same.
    pub fn is_fixed(&self) -> bool {
        self.fixed.is_some()
    }

    /// Render the request's HTTP/2 fields and body into `f` (no allocation
    /// once its buffers have grown).
    pub fn render_h2<R: Rng + ?Sized>(&self, rng: &mut R, f: &mut H2Fields) {
        f.text.clear();
        f.spans.clear();
        f.body.clear();
        f.push(b":method", |o| o.extend_from_slice(self.head_line.0.as_bytes()));
        f.push(b":scheme", |o| o.extend_from_slice(self.scheme.as_bytes()));
        if let Some((_, host)) = self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("host")) {
            f.push(b":authority", |o| host.render(rng, o));
        }
        f.push(b":path", |o| self.head_line.1.render(rng, o));
        for (k, v) in &self.headers {
            if !NOT_IN_H2.iter().any(|n| k.eq_ignore_ascii_case(n)) {
                f.push(k.as_bytes(), |o| v.render(rng, o));
            }
        }
        if let Some(t) = &self.body_template {
            t.render(rng, &mut f.body);
        } else if let Some(b) = &self.body_bytes {
            f.body.extend_from_slice(b);
        }
        if !f.body.is_empty() {
            let n = f.body.len();
            f.push(b"content-length", |o| {
                let _ = write!(o, "{n}");
            });
        }
    }

    fn render_parts<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
        out.extend_from_slice(self.head_line.0.as_bytes());
        out.push(b' ');
        self.head_line.1.render(rng, out);
        out.extend_from_slice(b" HTTP/1.1\r\n");
        for (k, v) in &self.headers {
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(b": ");
            v.render(rng, out);
            out.extend_from_slice(b"\r\n");
        }
        if self.close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        scratch.clear();
        let body: Option<&[u8]> = if let Some(t) = &self.body_template {
            t.render(rng, scratch);
            Some(scratch)
        } else {
            self.body_bytes.as_deref()
        };
        if let Some(b) = body {
            // formatted straight into `out`: no String per request
            let _ = write!(out, "Content-Length: {}\r\n\r\n", b.len());
            out.extend_from_slice(b);
        } else {
            out.extend_from_slice(b"\r\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn spec(url: &str) -> RequestSpec {
        RequestSpec { method: "GET".into(), target: parse_url(url).unwrap(), headers: vec![], body: None, keepalive: true }
    }

    #[test]
    fn urls() {
        let t = parse_url("http://127.0.0.1:18080/a?b=1").unwrap();
        assert_eq!(t.addr, "127.0.0.1:18080".parse().unwrap());
        assert_eq!(t.path, "/a?b=1");
        assert_eq!(parse_url("http://127.0.0.1").unwrap().path, "/");
        assert_eq!(parse_url("http://[::1]:9/x").unwrap().addr, "[::1]:9".parse().unwrap());
        let t = parse_url("https://127.0.0.1/x").unwrap();
        assert_eq!((t.tls, t.addr.port(), t.host.as_str()), (true, 443, "127.0.0.1"));
        let t = parse_url("https://[::1]:8443/").unwrap();
        assert_eq!((t.tls, t.addr.port(), t.host.as_str()), (true, 8443, "::1"));
        assert!(!parse_url("http://127.0.0.1/").unwrap().tls);
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("http://127.0.0.1:99999/").unwrap_err().contains("port"));
        assert!(parse_url("http:///x").is_err());
    }

    #[test]
    fn fixed_request_bytes() {
        let r = RequestBytes::new(&spec("http://127.0.0.1:8080/")).unwrap();
        assert!(r.fixed.is_some(), "serialized once");
        let mut out = vec![];
        r.write_to(&mut rand::rngs::mock::StepRng::new(0, 0), &mut out, &mut vec![]);
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"), "{s}");
        assert!(s.ends_with("\r\n\r\n"));
    }

    #[test]
    fn templated_body_gets_its_length() {
        let mut s = spec("http://127.0.0.1:8080/echo");
        s.method = "POST".into();
        s.keepalive = false;
        s.body = Some(Body::Text("n={uniform:1..1000}".into()));
        let r = RequestBytes::new(&s).unwrap();
        assert!(r.fixed.is_none(), "rendered per request");
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        for _ in 0..50 {
            let mut out = vec![];
            r.write_to(&mut rng, &mut out, &mut vec![]);
            let text = String::from_utf8(out).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(head.contains("Connection: close"));
            assert!(head.contains(&format!("Content-Length: {}", body.len())), "{text}");
        }
    }
}
