//! Property tests: the response parser never panics, and framing does not
//! depend on where reads split the bytes.

use loadgen::protocol::response::{ResponseParser, Response};
use proptest::prelude::*;

/// Feed `data` in the given piece sizes, keeping unconsumed bytes as the
/// worker does. Returns the responses, or None on a parse error.
fn feed(data: &[u8], cuts: &[usize], no_body: bool) -> Option<Vec<Response>> {
    let mut p = ResponseParser::new();
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut cut_iter = cuts.iter().cycle();
    while pos < data.len() {
        let n = (*cut_iter.next().unwrap_or(&1)).clamp(1, data.len() - pos);
        buf.extend_from_slice(&data[pos..pos + n]);
        pos += n;
        loop {
            let (used, r) = p.advance(&buf, no_body).ok()?;
            assert!(used <= buf.len(), "consumed more than given");
            buf.drain(..used);
            match r {
                Some(r) => out.push(r),
                None => break,
            }
        }
    }
    if let Some(r) = p.eof().ok()? {
        out.push(r);
    }
    Some(out)
}

fn response_strategy() -> impl Strategy<Value = (Vec<u8>, u16)> {
    (200u16..600, prop::collection::vec(any::<u8>(), 0..300), prop::bool::ANY, 1usize..40).prop_map(
        |(status, body, chunked, chunk)| {
            let mut r = format!("HTTP/1.1 {status} X\r\n").into_bytes();
            if status == 204 || status == 304 {
                r.extend_from_slice(b"\r\n");
            } else if chunked {
                r.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                for c in body.chunks(chunk) {
                    r.extend_from_slice(format!("{:X}\r\n", c.len()).as_bytes());
                    r.extend_from_slice(c);
                    r.extend_from_slice(b"\r\n");
                }
                r.extend_from_slice(b"0\r\n\r\n");
            } else {
                r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                r.extend_from_slice(&body);
            }
            (r, status)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..600),
                                   cuts in prop::collection::vec(1usize..64, 1..8),
                                   no_body in any::<bool>()) {
        let _ = feed(&data, &cuts, no_body);
    }

    #[test]
    fn mutated_responses_never_panic(resp in response_strategy(), idx in any::<prop::sample::Index>(),
                                     byte in any::<u8>(), cuts in prop::collection::vec(1usize..32, 1..6)) {
        let mut data = resp.0;
        let i = idx.index(data.len());
        data[i] = byte;
        let _ = feed(&data, &cuts, false);
    }

    #[test]
    fn valid_responses_parse_the_same_however_split(
        resps in prop::collection::vec(response_strategy(), 1..6),
        cuts in prop::collection::vec(1usize..50, 1..8)) {
        let mut data = Vec::new();
        let mut codes = Vec::new();
        for (r, s) in &resps {
            data.extend_from_slice(r);
            codes.push(*s);
        }
        let got = feed(&data, &cuts, false).expect("valid responses parse");
        prop_assert_eq!(got.iter().map(|r| r.status).collect::<Vec<_>>(), codes);
        prop_assert!(got.iter().all(|r| r.keep_alive));
    }
}
