//! https:// end to end: the loadgen binary against rustls servers on loopback
//! whose certificates (a CA and a leaf for 127.0.0.1) rcgen makes per test.

#[macro_use]
mod common;

use common::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{HandshakeKind, ServerConfig, ServerConnection};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A CA, a leaf it signed for 127.0.0.1, and the CA's PEM in a file of its
/// own directory (removed on drop).
struct Pki {
    dir: PathBuf,
    ca_file: String,
    leaf: CertificateDer<'static>,
    key: Vec<u8>,
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn pki() -> Pki {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("loadgen-tls-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    p.distinguished_name.push(DnType::CommonName, "loadgen test CA");
    let ca = p.self_signed(&ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca, &ca_key)
        .unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    Pki { ca_file: ca_file.to_str().unwrap().to_string(), dir, leaf: leaf.der().clone(), key: leaf_key.serialize_der() }
}

#[derive(Default)]
struct TlsCounters {
    full: AtomicUsize,
    resumed: AtomicUsize,
    failed: AtomicUsize,
    requests: AtomicUsize,
}

/// A keep-alive HTTPS server answering every request with 200 "Hello, World!".
fn https_server(pki: &Pki) -> (TestServer, Arc<TlsCounters>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.key.clone()));
    let mut cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![pki.leaf.clone()], key)
        .unwrap();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let cfg = Arc::new(cfg);
    let tc = Arc::new(TlsCounters::default());
    let t = tc.clone();
    let srv = serve(move |mut sock, _c| {
        let mut conn = ServerConnection::new(cfg.clone()).unwrap();
        while conn.is_handshaking() {
            if conn.complete_io(&mut sock).is_err() {
                t.failed.fetch_add(1, Ordering::SeqCst);
                return;
            }
        }
        match conn.handshake_kind() {
            Some(HandshakeKind::Resumed) => t.resumed.fetch_add(1, Ordering::SeqCst),
            _ => t.full.fetch_add(1, Ordering::SeqCst),
        };
        answer(rustls::Stream::new(&mut conn, &mut sock), &t);
    });
    (srv, tc)
}

/// Answer request heads (GET, no body) until the client closes or asks to.
fn answer(mut s: impl Read + Write, t: &TlsCounters) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
            buf.drain(..i + 4);
            t.requests.fetch_add(1, Ordering::SeqCst);
            if s.write_all(&ok_response("Hello, World!")).is_err() || head.contains("connection: close") {
                let _ = s.flush();
                return;
            }
        }
        match s.read(&mut tmp) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

fn https(srv: &TestServer, path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", srv.port)
}

fn tls<'a>(o: &'a Outcome, key: &str) -> &'a Value {
    &o.json["tls"][key]
}

fn hs_errors(o: &Outcome) -> [u64; 3] {
    let e = tls(o, "handshake_errors");
    ["alert", "timeout", "reset"].map(|k| e[k].as_u64().unwrap_or_else(|| panic!("handshake_errors.{k}: {}", o.json["tls"])))
}

fn closed_load_over_tls_counts_its_handshakes() {
    let pki = pki();
    let (srv, tc) = https_server(&pki);
    let o = loadgen(&[&https(&srv, "/"), "-n", "600", "-c", "4", "-t", "2", "--tls-ca", &pki.ca_file]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!((o.summary("ok"), o.summary("errors")), (600, 0));
    assert_eq!(tc.requests.load(Ordering::SeqCst), 600, "the server decrypted every request");
    assert_eq!(tls(&o, "handshakes"), 4);
    assert_eq!(tc.full.load(Ordering::SeqCst), 4, "one full handshake per connection");
    assert_eq!((tls(&o, "provider"), tls(&o, "resumption"), tls(&o, "resumed")), (&Value::from("ring"), &Value::from(false), &Value::from(0)));
    assert_eq!((tls(&o, "version"), tls(&o, "alpn")), (&Value::from("TLSv1_3"), &Value::from("http/1.1")));
    assert!(tls(&o, "suite").as_str().unwrap().starts_with("TLS13_"), "{}", o.json["tls"]);
    assert_eq!(hs_errors(&o), [0, 0, 0]);
    let h = loadgen::histo::decode(tls(&o, "handshake_histogram").as_str().unwrap()).unwrap();
    assert_eq!(h.len(), 4, "one handshake time per connection");
    assert!(tls(&o, "handshake_latency")["p50"].as_u64().unwrap() > 0);
    assert_eq!(o.json["config"]["tls_ca"], pki.ca_file.as_str());
    // pipelined requests: several records per read
    let o = loadgen(&[&https(&srv, "/"), "-n", "400", "-c", "2", "--pipeline", "8", "--tls-ca", &pki.ca_file]);
    assert_eq!((o.summary("ok"), o.summary("errors")), (400, 0), "{}", o.stderr);
}

fn open_load_over_tls_counts_the_handshake_in_the_waiting_request() {
    let pki = pki();
    let (srv, tc) = https_server(&pki);
    let o = loadgen(&[&https(&srv, "/"), "--rate", "300", "-d", "1s", "--tls-ca", &pki.ca_file]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // due is the schedule's; answers within the second are the machine's (bounded)
    assert_eq!(o.summary("due"), 300, "300/s for 1 s");
    let n = o.summary("responses");
    assert!(n >= 270, "300/s for 1 s: {n} answered");
    assert_eq!((o.summary("ok"), o.summary("errors")), (n, 0));
    let hs = tls(&o, "handshakes").as_u64().unwrap();
    assert!(hs >= 1 && hs == o.summary("connections_opened"), "{hs} handshakes, {} connections", o.summary("connections_opened"));
    assert_eq!(tc.full.load(Ordering::SeqCst) as u64, hs);
    // the request that waited for a new connection counts its handshake
    let shortest_handshake = tls(&o, "handshake_latency")["min"].as_u64().unwrap();
    assert!(o.json["summary"]["latency_us"]["max"].as_u64().unwrap() >= shortest_handshake);
    assert_eq!(hs_errors(&o), [0, 0, 0]);
}

fn sessions_over_tls() {
    let pki = pki();
    let (srv, tc) = https_server(&pki);
    let o = loadgen(&[&https(&srv, "/"), "--users", "4", "--session-requests", "3", "--think", "10ms", "-d", "1s", "--tls-ca", &pki.ca_file]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!((o.summary("ok"), o.summary("errors")), (12, 0));
    assert_eq!((tls(&o, "handshakes"), tc.full.load(Ordering::SeqCst)), (&Value::from(4), 4));
}

fn every_connection_is_a_full_handshake_unless_tls_resume() {
    let pki = pki();
    let (srv, tc) = https_server(&pki);
    let o = loadgen(&[&https(&srv, "/"), "-n", "60", "-c", "2", "--no-keepalive", "--tls-ca", &pki.ca_file]);
    assert_eq!((o.summary("ok"), o.summary("errors")), (60, 0), "{}", o.stderr);
    assert_eq!(tls(&o, "handshakes"), 60);
    assert_eq!((tc.full.load(Ordering::SeqCst), tc.resumed.load(Ordering::SeqCst)), (60, 0), "resumption is off by default");
    let (srv, tc) = https_server(&pki);
    let o = loadgen(&[&https(&srv, "/"), "-n", "60", "-c", "2", "--no-keepalive", "--tls-ca", &pki.ca_file, "--tls-resume"]);
    assert_eq!((o.summary("ok"), tls(&o, "resumption")), (60, &Value::from(true)), "{}", o.stderr);
    let resumed = tc.resumed.load(Ordering::SeqCst);
    assert!(resumed >= 50, "with --tls-resume most connections resume: {resumed}");
    assert_eq!(tls(&o, "resumed"), resumed as u64);
}

fn a_wrong_ca_counts_alerts_and_connect_errors() {
    let (good, wrong) = (pki(), pki());
    let (srv, tc) = https_server(&good);
    for load in [&["-c", "2"][..], &["--rate", "50"]] {
        let mut args = vec![https(&srv, "/"), "-d".into(), "1s".into(), "--tls-ca".into(), wrong.ca_file.clone()];
        args.extend(load.iter().map(|s| s.to_string()));
        let o = loadgen(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.code, 0, "{}", o.stderr);
        let [alert, timeout, reset] = hs_errors(&o);
        assert!(alert >= 2, "{load:?}: the certificate fails every handshake: {}", o.json["tls"]);
        assert_eq!((timeout, reset, o.summary("ok")), (0, 0, 0));
        assert_eq!(o.errors("connect"), alert, "{load:?}: each failed handshake fails its one request");
        assert!(o.summary("requests") >= alert, "the requests are counted, not silently dropped");
        assert_eq!((tls(&o, "handshakes"), tls(&o, "version")), (&Value::from(0), &Value::Null));
    }
    assert!(tc.failed.load(Ordering::SeqCst) >= 4);
}

fn a_silent_server_times_out_the_handshake() {
    let pki = pki();
    let srv = serve(|mut s, _| {
        let mut b = [0u8; 4096];
        while matches!(s.read(&mut b), Ok(n) if n > 0) {}
    });
    let o = loadgen(&[&https(&srv, "/"), "-c", "2", "-d", "1500ms", "--connect-timeout", "300ms", "--tls-ca", &pki.ca_file]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let [alert, timeout, reset] = hs_errors(&o);
    assert!(timeout >= 4, "2 connections, 300 ms each, for 1.5 s: {timeout}");
    assert_eq!((alert, reset), (0, 0));
    assert_eq!(o.errors("connect"), timeout);
}

fn a_reset_or_close_during_the_handshake_is_a_reset() {
    let pki = pki();
    let closing = serve(|mut s, _| {
        let _ = s.read(&mut [0u8; 4096]);
    });
    let resetting = serve(|mut s: TcpStream, _| {
        let _ = s.read(&mut [0u8; 4096]);
        reset_on_close(&s);
    });
    for srv in [closing, resetting] {
        let o = loadgen(&[&https(&srv, "/"), "-c", "1", "-d", "500ms", "--tls-ca", &pki.ca_file]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let [alert, timeout, reset] = hs_errors(&o);
        assert!(reset >= 2, "{}", o.json["tls"]);
        assert_eq!((alert, timeout, o.errors("connect"), o.errors("read")), (0, 0, reset, 0));
    }
}

per_backend!(
    closed_load_over_tls_counts_its_handshakes,
    open_load_over_tls_counts_the_handshake_in_the_waiting_request,
    sessions_over_tls,
    every_connection_is_a_full_handshake_unless_tls_resume,
    a_wrong_ca_counts_alerts_and_connect_errors,
    a_silent_server_times_out_the_handshake,
    a_reset_or_close_during_the_handshake_is_a_reset,
);

#[test]
fn tls_flag_errors_are_one_line_and_plaintext_has_no_tls() {
    let pki = pki();
    let junk = pki.dir.join("junk.pem");
    std::fs::write(&junk, "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n").unwrap();
    let junk = junk.to_str().unwrap().to_string();
    let missing = pki.dir.join("missing.pem").to_str().unwrap().to_string();
    let cases: [(&[&str], &str); 5] = [
        (&["https://127.0.0.1:1/"], "--tls-ca"),
        (&["https://127.0.0.1:1/", "--tls-ca", &missing], &missing),
        (&["https://127.0.0.1:1/", "--tls-ca", &junk], &junk),
        (&["http://127.0.0.1:1/", "--tls-ca", &pki.ca_file], "https://"),
        (&["https://127.0.0.1:1/", "--tls-ca", &pki.ca_file, "--noise", "idle"], "--noise"),
    ];
    for (args, names) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_loadgen")).args(args).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("loadgen: ") && err.contains(names), "{args:?}: {err}");
        if names != "https://" && names != "--noise" {
            assert!(err.contains("--tls-ca"), "names the flag: {err}");
        }
    }
    let srv = hello_server();
    let o = loadgen(&[&srv.url("/"), "-n", "10"]);
    assert_eq!(o.summary("ok"), 10);
    assert!(o.json["tls"].is_null(), "plaintext: {}", o.json["tls"]);
    assert_eq!(o.json["config"]["tls_resume"], false);
}
