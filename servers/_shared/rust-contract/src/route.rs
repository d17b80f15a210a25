//! SPEC's endpoint table turned into what answers each request, for the rows
//! that use crates (rust-tokio, rust-async-std): everything but waiting and
//! reading the file, which each row does its own way. `/json` is serialized
//! per request with serde_json. Behind the `serde` feature, so that
//! rust-threadpool stays std only.

use std::future::Future;
use std::time::Duration;

use crate::http::{resolve, Response};
use crate::compress::Compress;
use crate::{Delay, Tenth};

/// What a request asks of the row, decided by SPEC's endpoint table. The
/// parts that depend on how a row waits and reads files are left to the row.
#[derive(Debug)]
pub enum Action {
    /// Answer this at once.
    Respond(Response),
    /// `GET /file`: read HELLO_FILE the row's way and answer with `Response::file`.
    File,
    /// `GET /delay`, `GET /tenth`: wait this long the row's way (a timer, a
    /// sleep), then answer with `Later::response` (or `Later::after`).
    Wait(Duration, Later),
    /// `GET /compress?kb=N` (`kb` valid): compress the row's way, on the
    /// thread its runtime's docs send CPU-heavy work to, with `Compress::response`.
    Compress(Compress),
}

/// An answer built once the wait is over, so a waiting connection holds no body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Later {
    Delay(Delay),
    Tenth(Tenth),
}

impl Later {
    pub fn response(self) -> Response {
        match self {
            Later::Delay(delay) => Response::new(200, "text/plain", delay.body()),
            Later::Tenth(tenth) => Response::new(200, "text/plain", tenth.count.to_string().into_bytes()),
        }
    }

    /// The response once `timer` (the row's wait) is over.
    pub async fn after(self, timer: impl Future<Output = ()>) -> Response {
        timer.await;
        self.response()
    }

        fn unless_waiting(self, wait: Option<Duration>) -> Action {
        match wait {
            Some(wait) => Action::Wait(wait, self),
            None => Action::Respond(self.response()),
        }
    }
}

/// SPEC's `/json` message.
#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

/// Routes a request (see `resolve`) to what answers it; `/tenth` counts it.
/// `/json` is serialized here, per request, with serde_json.
pub fn action(method: &str, target: &str, body: Vec<u8>) -> Action {
    let (path, query) = match resolve(method, target) {
        Ok(found) => found,
        Err(not_found_or_405) => return Action::Respond(not_found_or_405),
    };
    match path {
        "/" => Action::Respond(Response::text(200, "Hello, World!")),
        "/json" => {
            let json = serde_json::to_vec(&Message { message: "Hello, World!" }).expect("serialize");
            Action::Respond(Response::new(200, "application/json", json))
        }
        "/file" => Action::File,
        "/delay" => match Delay::parse(query) {
            Ok(delay) => Later::Delay(delay).unless_waiting(delay.wait),
            Err(_) => Action::Respond(Response::error(400)),
        },
        "/tenth" => match Tenth::next(query) {
            Ok(tenth) => Later::Tenth(tenth).unless_waiting(tenth.wait),
            Err(_) => Action::Respond(Response::error(400)),
        },
        "/echo" => Action::Respond(Response::new(200, "application/octet-stream", body)),
        "/compress" => match Compress::parse(query) {
            Ok(compress) => Action::Compress(compress),
            Err(_) => Action::Respond(Response::error(400)),
        },
        _ => unreachable!("resolve knows only SPEC's paths"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn respond(action: Action) -> (u16, Vec<u8>) {
        match action {
            Action::Respond(r) => (r.status, r.body),
            other => panic!("an answer at once, not {other:?}"),
        }
    }

    #[test]
    fn actions_by_endpoint() {
        assert_eq!(respond(action("GET", "/", vec![])), (200, b"Hello, World!".to_vec()));
        let (status, json) = respond(action("GET", "/json", vec![]));
        assert_eq!((status, json.as_slice()), (200, br#"{"message":"Hello, World!"}"#.as_slice()));
        assert!(matches!(action("GET", "/file?x", vec![]), Action::File));
        assert_eq!(respond(action("POST", "/echo", b"abc".to_vec())), (200, b"abc".to_vec()));
        assert_eq!(respond(action("GET", "/missing", vec![])).0, 404);
        assert_eq!(respond(action("PUT", "/echo", vec![])).0, 405);
        assert_eq!(respond(action("GET", "/delay?bytes=3", vec![])), (200, b"xxx".to_vec()));
        assert_eq!(respond(action("GET", "/delay?ms=-1", vec![])).0, 400);
        assert_eq!(respond(action("GET", "/tenth?ms=x", vec![])).0, 400);
        assert!(matches!(action("GET", "/compress?kb=64", vec![]), Action::Compress(Compress { kb: 64 })));
        assert_eq!(respond(action("GET", "/compress?kb=4097", vec![])).0, 400);
        assert_eq!(respond(action("POST", "/compress?kb=1", vec![])).0, 405);
        let Action::Wait(wait, later) = action("GET", "/delay?ms=7&bytes=2", vec![]) else {
            panic!("/delay with ms waits");
        };
        assert_eq!(wait, Duration::from_millis(7));
        // A timer that is over at once stands for the row's.
        let done = later.after(std::future::ready(()));
        let answer = pin!(done).poll(&mut Context::from_waker(Waker::noop()));
        assert!(matches!(answer, Poll::Ready(r) if r.body == b"xx"));
        // Nine answers at once, then one after the wait; each body is the counter's value.
        let counts: Vec<(bool, u64)> = (0..10)
            .map(|_| match action("GET", "/tenth?ms=5", vec![]) {
                Action::Wait(wait, later) => (wait == Duration::from_millis(5), body_number(later.response())),
                Action::Respond(r) => (false, body_number(r)),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(counts.iter().filter(|c| c.0).count(), 1);
        assert!(counts.windows(2).all(|w| w[1].1 == w[0].1 + 1));
        assert!(counts.iter().all(|&(waited, n)| waited == n.is_multiple_of(10)));
    }

    fn body_number(r: Response) -> u64 {
        String::from_utf8(r.body).unwrap().parse().unwrap()
    }
}
