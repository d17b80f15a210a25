//! SPEC.md "CPU work": `GET /compress?kb=N` answers the gzip (RFC 1952) of
//! the first N KiB of `$COMPRESS_FILE`, compressed on every request at level
//! 6 (zlib's default). Shared here: reading the document once at start
//! (`load`), the `kb` rule (`Compress::parse`) and, with the `flate2`
//! feature, the compression itself (`gzip`: flate2's `GzEncoder` on flate2's
//! default backend, miniz_oxide) and the answer (`Compress::response`).
//! *Where* the compression runs (on the thread that serves the connection, or
//! handed to the runtime's blocking pool) stays in each row.

use std::path::Path;
use std::sync::OnceLock;

use crate::http::Response;
use crate::{int_param, BadRequest};

/// Largest `kb`: 4096 KiB, the whole 4 MiB the document is guaranteed to have.
pub const MAX_KB: u64 = 4096;

/// `$COMPRESS_FILE`'s bytes, read once by `load`.
static DOCUMENT: OnceLock<Vec<u8>> = OnceLock::new();

/// Reads `$COMPRESS_FILE` once; call it from `main` before serving. Unset,
/// `/compress` answers 503; set but unreadable, the row exits with status 1
/// and one line on stderr naming the file.
pub fn load(row: &str) {
    let Some(path) = std::env::var_os("COMPRESS_FILE").filter(|p| !p.is_empty()) else { return };
    match std::fs::read(&path) {
        Ok(bytes) => {
            let _ = DOCUMENT.set(bytes);
        }
        Err(e) => {
            eprintln!("{row}: cannot read COMPRESS_FILE={}: {e}", Path::new(&path).display());
            std::process::exit(1);
        }
    }
}

/// `GET /compress?kb=N`: how many KiB of the document to compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compress {
    pub kb: usize,
}

impl Compress {
    /// `kb` a whole number 1..=MAX_KB; missing, empty, 0, signed, above
    /// MAX_KB or not an integer is a 400.
    pub fn parse(query: &str) -> Result<Compress, BadRequest> {
        match int_param(query, "kb", MAX_KB, 0)? {
            0 => Err(BadRequest),
            kb => Ok(Compress { kb: kb as usize }),
        }
    }

    /// The bytes to compress: the first `kb` KiB of the document; None when
    /// `load` found no `$COMPRESS_FILE`.
    pub fn input(self) -> Option<&'static [u8]> {
        DOCUMENT.get().map(|doc| &doc[..doc.len().min(self.kb * 1024)])
    }

    /// The answer, compressed now, on the calling thread: the gzip of `input`
    /// as `application/json` with `Content-Encoding: gzip`; 503 without
    /// `$COMPRESS_FILE`.
    #[cfg(any(feature = "flate2", test))]
    pub fn response(self) -> Response {
        match self.input() {
            Some(input) => Response { content_encoding: Some("gzip"), ..Response::new(200, "application/json", gzip(input)) },
            None => {
                eprintln!("/compress: COMPRESS_FILE is not set");
                Response::error(503)
            }
        }
    }
}

/// gzip (RFC 1952: header, deflate stream, CRC-32 and size trailer) of `data`
/// at level 6, as flate2's docs write it: a `GzEncoder` over a `Vec`,
/// `write_all`, `finish`.
#[cfg(any(feature = "flate2", test))]
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::Write;

    let mut encoder = GzEncoder::new(Vec::new(), Compression::new(6));
    encoder.write_all(data).expect("writing to a Vec cannot fail");
    encoder.finish().expect("writing to a Vec cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn kb_rules() {
        assert_eq!(Compress::parse("kb=1"), Ok(Compress { kb: 1 }));
        assert_eq!(Compress::parse("kb=64"), Ok(Compress { kb: 64 }));
        assert_eq!(Compress::parse("x=1&kb=4096"), Ok(Compress { kb: 4096 }));
        for bad in ["", "kb", "kb=", "kb=0", "kb=-1", "kb=4097", "kb=abc", "kb=1.5", "kb=+1", "kb= 1"] {
            assert_eq!(Compress::parse(bad), Err(BadRequest), "{bad:?}");
        }
    }

    #[test]
    fn gzip_is_rfc1952_at_level_6() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| format!("{{\"id\":{i}}},").into_bytes()).collect();
        let gz = gzip(&data);
        // The gzip magic, deflate, and a trailer holding the input's size.
        assert_eq!(&gz[..3], &[0x1f, 0x8b, 8]);
        assert_eq!(&gz[gz.len() - 4..], &(data.len() as u32).to_le_bytes());
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut back).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn response_without_the_document_is_503() {
        // Tests never call `load`, so the document is absent here.
        let r = Compress { kb: 1 }.response();
        assert_eq!((r.status, r.content_encoding), (503, None));
    }
}
