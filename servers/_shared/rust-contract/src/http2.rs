//! SPEC.md "HTTP/2": `$HTTP2` says whether and how a row serves HTTP/2 on
//! `$PORT`. `h2c`: HTTP/2 over cleartext TCP with prior knowledge (RFC 9113
//! §3.3); `h2`: HTTP/2 over TLS, chosen by ALPN `h2`, so the TLS variables
//! must be set too; unset (or empty): HTTP/1.1 as before. Only the switch is
//! shared: each row serves HTTP/2 with its own stack's server (actix-web's,
//! hyper's). std only, like the rest of this crate.

/// What `$HTTP2` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Http2 {
    /// `$HTTP2` unset or empty: nothing changes.
    Off,
    /// `h2c`: HTTP/2 with prior knowledge over cleartext TCP.
    H2c,
    /// `h2`: HTTP/2 over TLS (ALPN `h2`).
    H2,
}

impl Http2 {
    /// Reads `$HTTP2`; `tls` says whether the TLS variables are set. A value
    /// other than `h2c` or `h2`, `h2` without TLS or `h2c` with it exit with
    /// status 1 and one line naming the fix, rather than serving something else.
    pub fn from_env(row: &str, tls: bool) -> Http2 {
        let value = std::env::var("HTTP2").ok();
        match Http2::from_value(value.as_deref(), tls) {
            Ok(mode) => mode,
            Err(msg) => {
                eprintln!("{row}: {msg}");
                std::process::exit(1);
            }
        }
    }

    /// `from_env` over the value, so its rules are testable without touching
    /// the process environment.
    fn from_value(value: Option<&str>, tls: bool) -> Result<Http2, String> {
        match (value.unwrap_or(""), tls) {
            ("", _) => Ok(Http2::Off),
            ("h2c", false) => Ok(Http2::H2c),
            ("h2", true) => Ok(Http2::H2),
            ("h2c", true) => Err("HTTP2=h2c is HTTP/2 over cleartext TCP: unset TLS_CERT/TLS_KEY, \
                                  or set HTTP2=h2 for HTTP/2 over TLS"
                .to_string()),
            ("h2", false) => Err("HTTP2=h2 is HTTP/2 over TLS: set TLS_CERT and TLS_KEY too, \
                                  or set HTTP2=h2c for cleartext"
                .to_string()),
            (other, _) => Err(format!("invalid HTTP2 {other:?}: h2c (cleartext, prior knowledge), h2 (TLS) or unset")),
        }
    }

    /// How the row's start line names it.
    pub fn label(self) -> &'static str {
        match self {
            Http2::Off => "HTTP/1.1",
            Http2::H2c => "h2c: HTTP/2 with prior knowledge, HTTP/1.1 beside it",
            Http2::H2 => "h2: ALPN h2, http/1.1",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(Http2::from_value(None, false), Ok(Http2::Off));
        assert_eq!(Http2::from_value(Some(""), true), Ok(Http2::Off));
        assert_eq!(Http2::from_value(Some("h2c"), false), Ok(Http2::H2c));
        assert_eq!(Http2::from_value(Some("h2"), true), Ok(Http2::H2));
    }

    #[test]
    fn contradictions_and_unknown_values_name_the_fix() {
        assert!(Http2::from_value(Some("h2c"), true).unwrap_err().contains("unset TLS_CERT/TLS_KEY"));
        assert!(Http2::from_value(Some("h2"), false).unwrap_err().contains("set TLS_CERT and TLS_KEY"));
        assert!(Http2::from_value(Some("H2"), false).unwrap_err().starts_with("invalid HTTP2 \"H2\""));
        assert!(Http2::from_value(Some("1"), true).unwrap_err().starts_with("invalid HTTP2"));
    }
}
