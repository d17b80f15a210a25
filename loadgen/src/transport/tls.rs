//! The TLS transport for `https://` targets: rustls (the `ring` provider)
//! driven by the workers' own loops. A connection's `TlsLink` sits between the
//! socket and the protocol's buffers: ciphertext a backend reads goes through
//! `read_tls`/`process_new_packets` and comes out of `reader()` as plaintext;
//! queued requests go through `writer()` and leave as `write_tls` records. No
//! thread or second engine per connection.
//!
//! Owns: the client configuration (`TlsOptions`), a connection's rustls state,
//! and the handshake figures (`TlsStats`, handed to the recorder as its
//! transport `LayerStats`): TCP connected → handshake complete timed into a
//! histogram, failures counted by kind. May use: rustls, `histo`, `record`'s
//! `LayerStats` hook; nothing above the transport layer.

use crate::histo::{self, Hist};
use crate::record::LayerStats;
use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use serde_json::{json, Value};
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Instant;

/// The crypto provider rustls runs on (recorded in the JSON).
pub const PROVIDER: &str = "ring";
/// The application protocol offered for HTTP/1.1, and for HTTP/2.
pub const ALPN: &[u8] = b"http/1.1";
pub const ALPN_H2: &[u8] = b"h2";
/// The cipher suite offered unless --tls-ciphers says otherwise: the one
/// RFC 8446 §9.1 makes mandatory to implement, so every row encrypts its
/// records the same way and "what TLS costs" compares like with like.
pub const DEFAULT_CIPHERS: &str = "TLS_AES_128_GCM_SHA256";

/// The TLS flags.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// https: the CA certificate(s), PEM, the server certificate is verified
    /// against (the server name is the URL's host)
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<String>,
    /// https: allow TLS session resumption (default: off, every new
    /// connection is a full handshake)
    #[arg(long)]
    pub tls_resume: bool,
    /// https: the cipher suites offered, by IANA name, comma-separated, or
    /// "all" (rustls's defaults, TLS 1.3 and 1.2) [default:
    /// TLS_AES_128_GCM_SHA256, the suite TLS 1.3 makes mandatory]
    #[arg(long, value_name = "LIST")]
    pub tls_ciphers: Option<String>,
}

/// `--tls-ca`, `--tls-resume` and `--tls-ciphers`, validated, and the client
/// configuration every connection of the run shares.
#[derive(Debug, Clone)]
pub struct TlsOptions {
    pub ca: String,
    pub resume: bool,
    /// The suites offered, as given (or the default).
    pub ciphers: String,
    /// HTTP/2: ALPN offers `h2` alone, and a handshake that does not pick it fails.
    pub h2: bool,
    pub config: Arc<ClientConfig>,
    pub name: ServerName<'static>,
}

/// rustls's name for a suite ("TLS13_AES_128_GCM_SHA256") in IANA's form.
fn iana(s: rustls::SupportedCipherSuite) -> String {
    format!("{:?}", s.suite()).replacen("TLS13_", "TLS_", 1)
}

/// The crypto provider with the suites `list` names ("all": every default).
fn provider_for(list: &str) -> Result<rustls::crypto::CryptoProvider, String> {
    let mut provider = rustls::crypto::ring::default_provider();
    if list == "all" {
        return Ok(provider);
    }
    let all = std::mem::take(&mut provider.cipher_suites);
    for name in list.split(',').map(str::trim) {
        let Some(s) = all.iter().find(|s| iana(**s) == name) else {
            let known: Vec<String> = all.iter().map(|s| iana(*s)).collect();
            return Err(format!("--tls-ciphers: `{name}` is not a suite loadgen offers; give some of {} or all", known.join(", ")));
        };
        provider.cipher_suites.push(*s);
    }
    Ok(provider)
}

impl TlsOptions {
    /// `host` is the URL's host (an IP address is verified as one).
    pub fn new(ca: &str, resume: bool, host: &str) -> Result<TlsOptions, String> {
        TlsOptions::with(ca, resume, host, DEFAULT_CIPHERS, false)
    }

    /// `ciphers`: the --tls-ciphers list; `h2`: offer ALPN `h2` alone.
    pub fn with(ca: &str, resume: bool, host: &str, ciphers: &str, h2: bool) -> Result<TlsOptions, String> {
        let roots = load_ca(ca)?;
        let provider = Arc::new(provider_for(ciphers)?);
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS configuration (--tls-ciphers {ciphers}): {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![if h2 { ALPN_H2 } else { ALPN }.to_vec()];
        // off: no session cache and no tickets, so every connection is a full handshake
        config.resumption = if resume { Resumption::default() } else { Resumption::disabled() };
        let name = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => ServerName::IpAddress(ip.into()),
            Err(_) => ServerName::try_from(host.to_string())
                .map_err(|_| format!("host `{host}` is not a valid TLS server name"))?,
        };
        Ok(TlsOptions { ca: ca.to_string(), resume, ciphers: ciphers.to_string(), h2, config: Arc::new(config), name })
    }
}

/// The TLS options of a run: an https:// URL (`https`, its `host`) needs
/// --tls-ca, the TLS flags need an https:// URL, and --noise speaks plain
/// HTTP. `h2`: the run speaks HTTP/2.
pub fn options_of(https: bool, host: &str, a: &TlsArgs, h2: bool, noise: bool) -> Result<Option<TlsOptions>, String> {
    if !https {
        if a.tls_ca.is_some() || a.tls_resume || a.tls_ciphers.is_some() {
            return Err("--tls-ca, --tls-resume and --tls-ciphers need an https:// URL".into());
        }
        return Ok(None);
    }
    let Some(ca) = a.tls_ca.as_deref() else {
        return Err("an https:// URL needs --tls-ca FILE: the CA (PEM) to verify the server certificate against".into());
    };
    if noise {
        return Err("--noise speaks plain HTTP; it cannot go with an https:// URL".into());
    }
    let ciphers = a.tls_ciphers.as_deref().unwrap_or(DEFAULT_CIPHERS);
    TlsOptions::with(ca, a.tls_resume, host, ciphers, h2).map(Some)
}

/// The CA certificates of a PEM file; any problem is one line naming the flag and the file.
fn load_ca(path: &str) -> Result<RootCertStore, String> {
    let bad = |why: String| format!("--tls-ca {path}: {why}; give the PEM file of the CA that signed the server certificate");
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| bad(format!("unreadable PEM ({e})")))?;
        roots.add(cert).map_err(|e| bad(format!("not a usable CA certificate ({e})")))?;
    }
    if roots.is_empty() {
        return Err(bad("no PEM CERTIFICATE in it".into()));
    }
    Ok(roots)
}

/// How a handshake failed: the keys of the JSON's `handshake_errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeError {
    /// A TLS alert from the server, or a certificate (or other protocol) error here.
    Alert = 0,
    /// --connect-timeout ran out during the handshake.
    Timeout = 1,
    /// The TCP connection was reset or closed during the handshake.
    Reset = 2,
    /// HTTP/2 was asked for and the server's ALPN did not pick `h2`.
    Alpn = 3,
}

const KINDS: [(HandshakeError, &str); 4] = [
    (HandshakeError::Alert, "alert"),
    (HandshakeError::Timeout, "timeout"),
    (HandshakeError::Reset, "reset"),
    (HandshakeError::Alpn, "alpn"),
];

/// What the first completed handshake negotiated.
#[derive(Debug, Clone, PartialEq)]
pub struct Negotiated {
    pub version: String,
    pub suite: String,
    pub alpn: Option<String>,
}

/// One thread's (then the run's) handshake figures. Handshakes and failures
/// count when they end in the measured window, like bytes and responses.
#[derive(Debug, Clone)]
pub struct TlsStats {
    pub handshakes: u64,
    /// Of those, resumed sessions (only with --tls-resume).
    pub resumed: u64,
    /// TCP connected → handshake complete, µs.
    pub latency: Hist,
    pub errors: [u64; 4],
    pub negotiated: Option<Negotiated>,
}

impl Default for TlsStats {
    fn default() -> TlsStats {
        TlsStats { handshakes: 0, resumed: 0, latency: histo::new_hist(), errors: [0; 4], negotiated: None }
    }
}

impl LayerStats for TlsStats {
    fn merge(&mut self, other: &dyn LayerStats) -> Result<(), String> {
        match other.as_any().downcast_ref::<TlsStats>() {
            Some(o) => TlsStats::merge(self, o),
            None => Err("TLS figures merged with another layer's".into()),
        }
    }
    fn clone_box(&self) -> Box<dyn LayerStats> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

impl TlsStats {
    pub fn merge(&mut self, o: &TlsStats) -> Result<(), String> {
        histo::merge(&mut self.latency, &o.latency)?;
        self.handshakes += o.handshakes;
        self.resumed += o.resumed;
        for (a, b) in self.errors.iter_mut().zip(&o.errors) {
            *a += b;
        }
        if self.negotiated.is_none() {
            self.negotiated = o.negotiated.clone();
        }
        Ok(())
    }

    /// A handshake failed (in the measured window) for reason `kind`.
    pub fn failed(&mut self, kind: HandshakeError) {
        self.errors[kind as usize] += 1;
    }

    /// The JSON's `tls` object; `handshake_histogram` lets shards merge exactly.
    pub fn json(&self, opts: &TlsOptions) -> Value {
        let n = self.negotiated.as_ref();
        let errors: serde_json::Map<String, Value> = KINDS.iter().map(|(k, name)| (name.to_string(), json!(self.errors[*k as usize]))).collect();
        json!({
            "provider": PROVIDER,
            "resumption": opts.resume,
            "ciphers_offered": opts.ciphers,
            "alpn": n.and_then(|n| n.alpn.clone()),
            "version": n.map(|n| n.version.clone()),
            "suite": n.map(|n| n.suite.clone()),
            "handshakes": self.handshakes,
            "resumed": self.resumed,
            "handshake_latency": histo::summarize(&self.latency),
            "handshake_histogram": histo::encode(&self.latency),
            "handshake_errors": errors,
        })
    }

    /// The summary's line.
    pub fn line(&self, opts: &TlsOptions) -> String {
        let what = match &self.negotiated {
            Some(n) => format!("{} {} ALPN {}", n.version, n.suite, n.alpn.as_deref().unwrap_or("none")),
            None => "no handshake completed".to_string(),
        };
        let lat = if self.latency.is_empty() {
            String::new()
        } else {
            let s = histo::summarize(&self.latency);
            format!(" (p50 {}, p99 {})", histo::fmt_us(s.p50), histo::fmt_us(s.p99))
        };
        let errs: Vec<String> = KINDS.iter().map(|(k, name)| format!("{name} {}", self.errors[*k as usize])).collect();
        format!(
            "  TLS        {what} [{PROVIDER}, resumption {}]; {} handshake(s){lat}, {} resumed; failed: {}",
            if opts.resume { "on" } else { "off" },
            self.handshakes,
            self.resumed,
            errs.join(", ")
        )
    }
}

/// A connection's TLS state, from its TCP connect on.
pub struct TlsLink {
    conn: ClientConnection,
    connected_at: Instant,
    /// The run speaks HTTP/2: the handshake must end with ALPN `h2`.
    h2: bool,
}

impl TlsLink {
    pub fn new(opts: &TlsOptions, now: Instant) -> Result<TlsLink, rustls::Error> {
        let mut conn = ClientConnection::new(opts.config.clone(), opts.name.clone())?;
        // the model bounds what is queued (one request, or --pipeline of them)
        conn.set_buffer_limit(None);
        Ok(TlsLink { conn, connected_at: now, h2: opts.h2 })
    }

    #[inline]
    pub fn handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Hand the queued requests to rustls once the handshake is done (until
    /// then they wait in `wbuf`); returns whether there are records to write.
    #[inline]
    fn encrypt(&mut self, wbuf: &mut Vec<u8>) -> bool {
        if !wbuf.is_empty() && !self.conn.is_handshaking() {
            // no buffer limit: rustls takes it all
            let _ = self.conn.writer().write_all(wbuf);
            wbuf.clear();
        }
        self.conn.wants_write()
    }

    /// Write the records there are (handshake messages, then the queued
    /// requests) to `dst` until it would block. False: the write failed.
    #[inline]
    pub fn write_to<W: Write>(&mut self, wbuf: &mut Vec<u8>, dst: &mut W) -> bool {
        if !self.encrypt(wbuf) {
            return true;
        }
        loop {
            match self.conn.write_tls(dst) {
                Ok(0) => return false,
                Ok(_) if !self.conn.wants_write() => return true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// The records there are, appended to `out` (a backend's send buffer,
    /// reused). Returns whether `out` has bytes to send.
    #[inline]
    pub fn fill(&mut self, wbuf: &mut Vec<u8>, out: &mut Vec<u8>) -> bool {
        if !self.encrypt(wbuf) {
            return false;
        }
        out.clear();
        while self.conn.wants_write() && self.conn.write_tls(out).is_ok_and(|n| n > 0) {}
        !out.is_empty()
    }

    /// Records from the socket into rustls: Ok((eof, short)), `short` when the
    /// read came back short (the socket is drained: edge-triggered epoll
    /// reports new data, the plaintext path's rule, so TLS costs no extra
    /// read per event).
    #[inline]
    pub fn read_from<R: Read>(&mut self, src: &mut R) -> io::Result<(bool, bool)> {
        let mut src = Short { inner: src, short: false };
        let n = self.conn.read_tls(&mut src)?;
        Ok((n == 0, src.short))
    }

    /// Records a backend received in a buffer of its own: how many bytes of
    /// `data` rustls took (0: none, it is full).
    #[inline]
    pub fn take(&mut self, data: &mut &[u8]) -> io::Result<usize> {
        self.conn.read_tls(data)
    }

    /// Decrypt what `read_from`/`take` brought. Ok(true): the handshake just
    /// completed. Err: an alert from the server, a certificate it failed, a
    /// bad record.
    #[inline]
    pub fn process(&mut self) -> Result<bool, rustls::Error> {
        let handshaking = self.conn.is_handshaking();
        self.conn.process_new_packets()?;
        Ok(handshaking && !self.conn.is_handshaking())
    }

    /// An HTTP/2 run's handshake ended without ALPN `h2` (the server speaks
    /// HTTP/1.1 only there).
    pub fn alpn_refused(&self) -> bool {
        self.h2 && self.conn.alpn_protocol() != Some(ALPN_H2)
    }

    /// Plaintext into `dst`: Ok(0) the peer closed with close_notify,
    /// UnexpectedEof without one (HTTP framing says whether a response was
    /// cut), WouldBlock when there is no more now.
    #[inline]
    pub fn plaintext(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        self.conn.reader().read(dst)
    }

    /// Handshake messages to answer, or requests that waited for the handshake.
    #[inline]
    pub fn wants_write(&self, wbuf: &[u8]) -> bool {
        self.conn.wants_write() || (!self.conn.is_handshaking() && !wbuf.is_empty())
    }

    /// The handshake completed at `now`: note what it negotiated (the first
    /// one) and, in the measured window, count and time it.
    pub fn handshake_done(&self, stats: &mut TlsStats, now: Instant, measured: bool) {
        let c = &self.conn;
        if stats.negotiated.is_none() {
            stats.negotiated = Some(Negotiated {
                version: c.protocol_version().map_or("unknown".into(), |v| format!("{v:?}")),
                suite: c.negotiated_cipher_suite().map_or("unknown".into(), |s| format!("{:?}", s.suite())),
                alpn: c.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned()),
            });
        }
        if measured {
            stats.handshakes += 1;
            if c.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
                stats.resumed += 1;
            }
            histo::record(&mut stats.latency, now.saturating_duration_since(self.connected_at).as_micros() as u64);
        }
    }
}

/// A reader that notes whether its last read came back short.
struct Short<'a, R: Read> {
    inner: &'a mut R,
    short: bool,
}

impl<R: Read> Read for Short<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_merge_add_up_and_keep_the_first_negotiation() {
        let mut a = TlsStats::default();
        let mut b = TlsStats { handshakes: 3, resumed: 1, errors: [1, 2, 3, 4], ..TlsStats::default() };
        for v in [100, 200, 300] {
            histo::record(&mut b.latency, v);
        }
        b.negotiated = Some(Negotiated { version: "TLSv1_3".into(), suite: "S".into(), alpn: Some("http/1.1".into()) });
        a.handshakes = 2;
        histo::record(&mut a.latency, 50);
        a.merge(&b).unwrap();
        assert_eq!((a.handshakes, a.resumed, a.errors, a.latency.len()), (5, 1, [1, 2, 3, 4], 4));
        assert_eq!(a.negotiated.as_ref().unwrap().version, "TLSv1_3");
    }

    #[test]
    fn a_bad_ca_file_is_one_line_naming_the_flag_and_file() {
        let dir = std::env::temp_dir().join(format!("loadgen-tls-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let missing = dir.join("missing.pem");
        for p in [&junk, &missing] {
            let path = p.to_str().unwrap();
            let e = TlsOptions::new(path, false, "127.0.0.1").unwrap_err();
            assert!(e.starts_with(&format!("--tls-ca {path}: ")) && !e.contains('\n'), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cipher_lists_name_iana_suites_and_reject_unknown_ones() {
        let p = provider_for(DEFAULT_CIPHERS).unwrap();
        assert_eq!(p.cipher_suites.iter().map(|s| iana(*s)).collect::<Vec<_>>(), ["TLS_AES_128_GCM_SHA256"]);
        let two = provider_for("TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256").unwrap();
        assert_eq!(two.cipher_suites.len(), 2);
        assert!(provider_for("all").unwrap().cipher_suites.len() > 3);
        let e = provider_for("TLS_NULL").unwrap_err();
        assert!(e.contains("`TLS_NULL`") && e.contains("TLS_AES_128_GCM_SHA256"), "{e}");
    }
}
