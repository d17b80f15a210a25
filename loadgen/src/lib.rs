//! loadgen: an HTTP/1.1 load generator with closed, open (coordinated-omission
//! corrected) and session load models. See docs/DESIGN.md for the CLI and the
//! `loadgen/1` JSON schema.
//!
//! Layers, each using only those below it (no module imports one above):
//! `main` → `output` → `run`/`cli` → `worker` → backends (`epoll`, `uring`:
//! sockets and waiting) → `net` (the machinery: implements the models' `Io`)
//! → `conn` (one connection: buffers, link, exchange) → `protocol` (HTTP/1.1)
//! and `transport` (TCP, TLS); `models` sit on `Io`; `record`, `histo` and the
//! other leaves at the bottom.

pub mod bufring;
pub mod cli;
pub mod conn;
pub mod epoll;
pub mod fairness;
pub mod histo;
pub mod limits;
pub mod models;
pub mod net;
pub mod noise;
pub mod output;
pub mod progress;
pub mod protocol;
pub mod record;
pub mod run;
pub mod schedule;
pub mod signals;
pub mod template;
pub mod timer;
pub mod transport;
pub mod units;
pub mod uring;
pub mod worker;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
