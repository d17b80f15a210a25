//! The protocol's command-line flags (`--http2`, `--streams`, `--h2-window`)
//! and their checks against the load model. Owns: `ProtoArgs` and what they
//! resolve to. May use: `http2`'s options; clap.

use super::http2::{H2Options, DEFAULT_WINDOW, MAX_WINDOW};

#[derive(clap::Args, Debug, Clone)]
pub struct ProtoArgs {
    /// Speak HTTP/2: over TLS (ALPN h2) for an https:// URL, cleartext with
    /// prior knowledge (h2c) for http://
    #[arg(long)]
    pub http2: bool,
    /// HTTP/2: concurrent streams per connection. Closed load keeps this many
    /// requests in flight on each connection; open load puts a due request on
    /// a connection with a free stream (or a new one), and a request the
    /// server's stream limit holds back waits, on the latency clock
    #[arg(long, default_value_t = 1)]
    pub streams: usize,
    /// HTTP/2: the receive window advertised for each stream and for the
    /// connection, in bytes [default: 65535, RFC 9113's initial window]
    #[arg(long, value_name = "BYTES")]
    pub h2_window: Option<u32>,
}

impl Default for ProtoArgs {
    fn default() -> ProtoArgs {
        ProtoArgs { http2: false, streams: 1, h2_window: None }
    }
}

/// The HTTP/2 options of a run (None: HTTP/1.1), checked against the load
/// model. `closed`: closed load; `sessions`: session load; `pipeline`: the
/// --pipeline given; `keepalive`: no --no-keepalive; `body`: the request
/// body's length when it is fixed.
pub fn resolve(p: &ProtoArgs, closed: bool, sessions: bool, pipeline: usize, keepalive: bool, body: usize) -> Result<Option<H2Options>, String> {
    if !p.http2 {
        if p.streams != 1 || p.h2_window.is_some() {
            return Err("--streams and --h2-window need --http2".into());
        }
        return Ok(None);
    }
    if p.streams == 0 || p.streams > 1024 {
        return Err(format!("--streams {} must be in 1..1024", p.streams));
    }
    if pipeline > 1 {
        return Err("--pipeline is HTTP/1.1's; with --http2 give --streams".into());
    }
    if !keepalive {
        return Err("--no-keepalive is HTTP/1.1's (Connection: close); HTTP/2 keeps every connection".into());
    }
    if sessions && p.streams > 1 {
        return Err("--streams needs closed or open load: a session user has one request at a time".into());
    }
    let _ = closed;
    if let Some(w) = p.h2_window {
        if !(DEFAULT_WINDOW..=MAX_WINDOW).contains(&w) {
            return Err(format!("--h2-window {w} must be in {DEFAULT_WINDOW}..{MAX_WINDOW}"));
        }
    }
    // request bodies go out without waiting for WINDOW_UPDATE: they must fit the server's initial window
    if body > DEFAULT_WINDOW as usize {
        return Err(format!("--http2 sends request bodies of at most {DEFAULT_WINDOW} bytes (RFC 9113's initial window); this one is {body}"));
    }
    Ok(Some(H2Options { window: p.h2_window }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h2(streams: usize) -> ProtoArgs {
        ProtoArgs { http2: true, streams, h2_window: None }
    }

    #[test]
    fn flags_are_checked_against_the_model() {
        assert_eq!(resolve(&ProtoArgs::default(), true, false, 4, true, 0), Ok(None));
        assert!(resolve(&ProtoArgs { streams: 5, ..Default::default() }, true, false, 1, true, 0).unwrap_err().contains("need --http2"));
        assert_eq!(resolve(&h2(100), true, false, 1, true, 0), Ok(Some(H2Options { window: None })));
        assert!(resolve(&h2(0), true, false, 1, true, 0).is_err());
        assert!(resolve(&h2(10), true, false, 2, true, 0).unwrap_err().contains("--streams"));
        assert!(resolve(&h2(1), true, false, 1, false, 0).unwrap_err().contains("--no-keepalive"));
        assert!(resolve(&h2(2), false, true, 1, true, 0).unwrap_err().contains("session"));
        assert!(resolve(&h2(1), false, true, 1, true, 0).is_ok());
        assert!(resolve(&h2(1), true, false, 1, true, 70_000).unwrap_err().contains("bodies"));
        let w = ProtoArgs { h2_window: Some(1000), ..h2(1) };
        assert!(resolve(&w, true, false, 1, true, 0).unwrap_err().contains("--h2-window"));
    }
}
