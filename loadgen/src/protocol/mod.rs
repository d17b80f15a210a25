//! The protocol layer: what the bytes over a transport mean. HTTP/1.1 today:
//! `request` serializes requests (once, or per request from a template),
//! `response` parses responses incrementally, `http1` pairs them on one
//! connection (keep-alive, pipelining). It sees plaintext bytes only, never a
//! socket or TLS; the connection machinery (`net`) hands it what the
//! transport decrypted. May use: `template`, httparse; nothing of the
//! transport, the models or the machinery.
//!
//! HTTP/2 goes beside `http1` (`http2.rs`: frames, streams matched by id
//! instead of by order), chosen per connection from the transport's ALPN;
//! weighted request classes become several `RequestBytes` the machinery picks
//! from per request.

pub mod http1;
pub mod request;
pub mod response;
