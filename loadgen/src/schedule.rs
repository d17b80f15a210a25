//! Piecewise-linear schedules of a rate or a user count over time.
//!
//! For open load the k-th request's intended time is where the cumulative
//! count ∫rate reaches k, so ramps are exact and Poisson spacing is simply
//! exponential steps in count space.

#[derive(Debug, Clone, PartialEq)]
struct Segment {
    t0: f64,
    dur: f64,
    v0: f64,
    v1: f64,
    /// cumulative count at t0
    n0: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    segs: Vec<Segment>,
    /// value held after the last segment
    hold: f64,
    end_t: f64,
    end_n: f64,
}

impl Schedule {
    pub fn constant(v: f64) -> Schedule {
        Schedule { segs: vec![], hold: v, end_t: 0.0, end_n: 0.0 }
    }

    /// Start at `start`, then move linearly to each (duration s, value) in turn.
    pub fn stages(start: f64, stages: &[(f64, f64)]) -> Schedule {
        let mut segs = vec![];
        let (mut t, mut v, mut n) = (0.0, start, 0.0);
        for &(dur, target) in stages {
            segs.push(Segment { t0: t, dur, v0: v, v1: target, n0: n });
            n += dur * (v + target) / 2.0;
            t += dur;
            v = target;
        }
        Schedule { segs, hold: v, end_t: t, end_n: n }
    }

    /// Parse "10s:1000,10s:5000" into (seconds, value) pairs.
    pub fn parse_stages(s: &str) -> Result<Vec<(f64, f64)>, String> {
        let mut out = vec![];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (d, v) = part
                .split_once(':')
                .ok_or_else(|| format!("stage `{part}` must be DURATION:VALUE, e.g. 10s:1000"))?;
            let d = crate::units::parse_duration(d).map_err(|e| format!("stage `{part}`: {e}"))?;
            let v: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("stage `{part}`: value `{v}` is not a number >= 0"))?;
            out.push((d.as_secs_f64(), v));
        }
        if out.is_empty() {
            return Err(format!("--stages `{s}` has no stages"));
        }
        Ok(out)
    }

    pub fn total_duration(&self) -> f64 {
        self.end_t
    }

    pub fn max_value(&self) -> f64 {
        self.segs.iter().flat_map(|s| [s.v0, s.v1]).fold(self.hold, f64::max)
    }

    pub fn value_at(&self, t: f64) -> f64 {
        for s in &self.segs {
            if t < s.t0 + s.dur {
                if s.dur <= 0.0 {
                    return s.v1;
                }
                let f = ((t - s.t0) / s.dur).clamp(0.0, 1.0);
                return s.v0 + (s.v1 - s.v0) * f;
            }
        }
        self.hold
    }

    /// Time at which the cumulative count reaches `n`; None if never.
    pub fn time_of_count(&self, n: f64) -> Option<f64> {
        for s in &self.segs {
            let seg_n = s.dur * (s.v0 + s.v1) / 2.0;
            if n <= s.n0 + seg_n && seg_n > 0.0 {
                let x = n - s.n0; // count into the segment
                let a = (s.v1 - s.v0) / s.dur / 2.0; // n(τ) = v0 τ + a τ²
                let tau = if x <= 0.0 {
                    0.0
                } else if a.abs() < 1e-12 {
                    x / s.v0
                } else {
                    // positive root of a τ² + v0 τ − x = 0, in a cancellation-free form
                    let disc = (s.v0 * s.v0 + 4.0 * a * x).max(0.0);
                    2.0 * x / (s.v0 + disc.sqrt())
                };
                return Some(s.t0 + tau.clamp(0.0, s.dur));
            }
        }
        if self.hold <= 0.0 {
            return None;
        }
        Some(self.end_t + (n - self.end_n) / self.hold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate() {
        let s = Schedule::constant(100.0);
        assert_eq!(s.time_of_count(50.0), Some(0.5));
        assert_eq!(s.value_at(123.0), 100.0);
    }

    #[test]
    fn ramp_counts_match_integral() {
        // 0 -> 1000/s over 10 s: 5000 requests, the 1250th at 5 s
        let s = Schedule::stages(0.0, &[(10.0, 1000.0), (10.0, 1000.0)]);
        assert!((s.time_of_count(1250.0).unwrap() - 5.0).abs() < 1e-9);
        assert!((s.time_of_count(5000.0).unwrap() - 10.0).abs() < 1e-9);
        assert!((s.time_of_count(6000.0).unwrap() - 11.0).abs() < 1e-9);
        assert!((s.time_of_count(20000.0).unwrap() - 25.0).abs() < 1e-9, "holds the last value");
        assert_eq!(s.value_at(5.0), 500.0);
        assert_eq!(s.max_value(), 1000.0);
        // times are monotonic
        let mut last = 0.0;
        for k in 1..6000 {
            let t = s.time_of_count(k as f64).unwrap();
            assert!(t >= last);
            last = t;
        }
    }

    #[test]
    fn step_and_zero_rate() {
        let s = Schedule::stages(0.0, &[(0.0, 200.0), (2.0, 200.0), (1.0, 0.0)]);
        assert_eq!(s.value_at(0.0), 200.0);
        assert!((s.time_of_count(200.0).unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(s.time_of_count(10_000.0), None, "rate 0 forever after");
        let parsed = Schedule::parse_stages("10s:1000, 500ms:5").unwrap();
        assert_eq!(parsed, vec![(10.0, 1000.0), (0.5, 5.0)]);
        assert!(Schedule::parse_stages("10s").is_err());
        assert!(Schedule::parse_stages("10s:-1").is_err());
    }
}
