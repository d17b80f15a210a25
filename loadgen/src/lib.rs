//! loadgen: an HTTP/1.1 load generator with closed, open (coordinated-omission
//! corrected) and session load models. See docs/DESIGN.md for the CLI and the
//! `loadgen/1` JSON schema.

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
