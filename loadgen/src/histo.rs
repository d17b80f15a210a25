//! Latency histograms: one fixed configuration (1 µs .. 1 h, 3 significant
//! digits) so histograms from any loadgen process merge exactly, and the
//! standard HdrHistogram V2 compressed + base64 encoding ("HISTF…").

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;

pub const LOWEST_US: u64 = 1;
pub const HIGHEST_US: u64 = 3_600_000_000;
pub const SIGFIG: u8 = 3;

pub type Hist = Histogram<u64>;

pub fn new_hist() -> Hist {
    Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, SIGFIG).expect("static histogram bounds are valid")
}

/// Smaller histograms for per-second timeline buckets (2 digits is plenty
/// for a per-second p99 and keeps a long run's timeline small).
pub fn new_bucket_hist() -> Hist {
    Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, 2).expect("static histogram bounds are valid")
}

/// A histogram stored as its non-empty bins (value, count): a second of the
/// timeline holds a few hundred bins, where a dense histogram is 26 KB.
pub type Sparse = Vec<(u32, u32)>;

/// The non-empty bins of `h` (values fit u32: HIGHEST_US < 2^32).
pub fn to_sparse(h: &Hist) -> Sparse {
    let mut s: Sparse = h.iter_recorded().map(|v| (v.value_iterated_to() as u32, v.count_at_value() as u32)).collect();
    s.shrink_to_fit();
    s
}

/// Add sparse bins into `h` (recording a bin's highest value lands in that bin).
pub fn add_sparse(h: &mut Hist, s: &[(u32, u32)]) {
    for &(v, n) in s {
        let _ = h.record_n((v as u64).clamp(LOWEST_US, HIGHEST_US), n as u64);
    }
}

/// Record a latency, clamped into the histogram's range.
#[inline]
pub fn record(h: &mut Hist, us: u64) {
    // clamped, so recording cannot fail
    let _ = h.record(us.clamp(LOWEST_US, HIGHEST_US));
}

pub fn encode(h: &Hist) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing to a Vec cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn decode(s: &str) -> Result<Hist, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("histogram is not valid base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("histogram is not HdrHistogram V2: {e:?}"))
}

/// Merge `b` into `a` exactly.
pub fn merge(a: &mut Hist, b: &Hist) -> Result<(), String> {
    a.add(b).map_err(|e| format!("cannot merge histograms: {e:?}"))
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencySummary {
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub p99_99: u64,
    pub max: u64,
}

pub fn summarize(h: &Hist) -> LatencySummary {
    if h.is_empty() {
        return LatencySummary { min: 0, mean: 0.0, stdev: 0.0, p50: 0, p75: 0, p90: 0, p99: 0, p99_9: 0, p99_99: 0, max: 0 };
    }
    LatencySummary {
        min: h.min(),
        mean: round2(h.mean()),
        stdev: round2(h.stdev()),
        p50: h.value_at_quantile(0.50),
        p75: h.value_at_quantile(0.75),
        p90: h.value_at_quantile(0.90),
        p99: h.value_at_quantile(0.99),
        p99_9: h.value_at_quantile(0.999),
        p99_99: h.value_at_quantile(0.9999),
        max: h.max(),
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// 1234 -> "1.23ms"
pub fn fmt_us(us: u64) -> String {
    let v = us as f64;
    if us < 1000 {
        format!("{us}µs")
    } else if us < 1_000_000 {
        format!("{:.2}ms", v / 1e3)
    } else {
        format!("{:.2}s", v / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_standard_cookie() {
        let mut h = new_hist();
        for v in [1u64, 7, 100, 1234, 99_999, 5_000_000, HIGHEST_US] {
            record(&mut h, v);
        }
        let s = encode(&h);
        assert!(s.starts_with("HISTF"), "V2 compressed cookie, got {}", &s[..8]);
        let back = decode(&s).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.len(), 7);
        assert_eq!(back.max(), h.max());
    }

    #[test]
    fn merge_is_exact() {
        let mut all = new_hist();
        let mut parts = [new_hist(), new_hist(), new_hist()];
        let mut x: u64 = 12345;
        for i in 0..30_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = 1 + (x >> 33) % 2_000_000;
            record(&mut all, v);
            record(&mut parts[(i % 3) as usize], v);
        }
        // through the wire format, as the harness would merge several processes
        let mut merged = decode(&encode(&parts[0])).unwrap();
        for p in &parts[1..] {
            merge(&mut merged, &decode(&encode(p)).unwrap()).unwrap();
        }
        assert_eq!(merged, all);
        assert_eq!(summarize(&merged), summarize(&all));
    }

    #[test]
    fn sparse_round_trip_is_exact() {
        let mut h = new_bucket_hist();
        for v in [1u64, 2, 99, 100, 101, 12_345, 999_999, 5_000_000, HIGHEST_US] {
            record(&mut h, v);
            record(&mut h, v);
        }
        let s = to_sparse(&h);
        let mut back = new_bucket_hist();
        add_sparse(&mut back, &s);
        assert_eq!(back, h);
        assert!(s.len() < 10);
    }

    #[test]
    fn clamps_out_of_range() {
        let mut h = new_hist();
        record(&mut h, 0);
        record(&mut h, u64::MAX);
        assert_eq!(h.len(), 2);
        assert_eq!(h.min(), 1);
    }

    #[test]
    fn garbage_does_not_decode() {
        assert!(decode("not base64!").is_err());
        assert!(decode("SElTVAAAAA==").is_err());
    }
}
