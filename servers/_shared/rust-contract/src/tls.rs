//! SPEC.md "TLS": with `$TLS_CERT` (PEM certificate chain) and `$TLS_KEY`
//! (PEM PKCS#8 key) set, a row serves the same endpoints over TLS on `$PORT`
//! instead of plaintext. The rust-* rows all serve it with rustls 0.23, so the
//! one thing they share is the `rustls::ServerConfig` built the way rustls'
//! docs build a server's: `builder().with_no_client_auth().with_single_cert(..)`,
//! on the `ring` provider (aws-lc-rs builds far slower here), with every other
//! setting at rustls' default: TLS 1.3 and 1.2 (rustls has no 1.0/1.1), its
//! default suites and session storage, no ALPN. Each row wraps its streams
//! with its own stack's rustls adapter.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

/// The server configuration when `$TLS_CERT` and `$TLS_KEY` are set, `None`
/// when neither is (plaintext). One without the other, or files rustls cannot
/// use, exit with status 1 and one line naming the variable and the fix.
pub fn server_config(row: &str) -> Option<ServerConfig> {
    let var = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    match config_from(var("TLS_CERT"), var("TLS_KEY")) {
        Ok(config) => config,
        Err(msg) => {
            eprintln!("{row}: {msg}");
            std::process::exit(1);
        }
    }
}

/// `server_config` over the two values, so its rules are testable without
/// touching the process environment.
fn config_from(cert: Option<String>, key: Option<String>) -> Result<Option<ServerConfig>, String> {
    let (cert, key) = match (cert, key) {
        (None, None) => return Ok(None),
        (Some(cert), Some(key)) => (cert, key),
        (Some(_), None) => return Err(both("TLS_CERT is set but TLS_KEY is not")),
        (None, Some(_)) => return Err(both("TLS_KEY is set but TLS_CERT is not")),
    };
    let chain = CertificateDer::pem_file_iter(&cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("TLS_CERT {cert}: {e} (a PEM certificate file is expected)"))?;
    if chain.is_empty() {
        return Err(format!("TLS_CERT {cert}: no certificate in it (a PEM certificate file is expected)"));
    }
    let key_der = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| format!("TLS_KEY {key}: {e} (a PEM PKCS#8 private key file is expected)"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, key_der))
        .map(Some)
        .map_err(|e| format!("TLS_CERT/TLS_KEY: {e} (the key must be the certificate's)"))
}

fn both(what: &str) -> String {
    format!("{what}: set both (PEM certificate, PEM PKCS#8 key) or neither")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(cert: Option<&str>, key: Option<&str>) -> String {
        match config_from(cert.map(String::from), key.map(String::from)) {
            Err(msg) => msg,
            Ok(_) => panic!("{cert:?}, {key:?}: accepted"),
        }
    }

    #[test]
    fn neither_is_plaintext() {
        assert!(matches!(config_from(None, None), Ok(None)));
    }

    #[test]
    fn one_without_the_other_names_the_fix() {
        assert!(err(Some("c.pem"), None).starts_with("TLS_CERT is set but TLS_KEY is not: set both"));
        assert!(err(None, Some("k.pem")).starts_with("TLS_KEY is set but TLS_CERT is not: set both"));
    }

    #[test]
    fn unusable_files_are_named() {
        let missing = "/nonexistent/serverbench-cert.pem";
        assert!(err(Some(missing), Some("k.pem")).starts_with(&format!("TLS_CERT {missing}:")));
        // A file with no PEM certificate in it (this source file) is refused, not served empty.
        let no_pem = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tls.rs");
        assert!(err(Some(no_pem), Some("k.pem")).contains("no certificate in it"));
    }
}
