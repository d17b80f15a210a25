//! Durations and think times as the command line writes them. One place, so
//! the CLI, the stage schedule and the session model parse them alike.

use crate::template::Dist;
use rand::Rng;
use std::time::Duration;

/// "10s", "500ms", "2m", "1h", or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(v) = t.parse::<f64>() {
        if v.is_finite() && v >= 0.0 {
            return Ok(Duration::from_secs_f64(v));
        }
    }
    humantime::parse_duration(t).map_err(|_| format!("`{s}` is not a duration (e.g. 10s, 500ms, 2m)"))
}

/// `parse_duration` with the flag named in the error.
pub fn flag_duration(flag: &str, s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| format!("{flag}: {e}"))
}

/// Think time between a user's requests.
#[derive(Debug, Clone, PartialEq)]
pub enum Think {
    /// base ± jitter (fraction, 0.1 = ±10 %)
    Fixed(Duration, f64),
    /// a distribution of milliseconds
    Dist(Dist),
}

impl Think {
    /// `--think` (a duration or a distribution of milliseconds) and
    /// `--think-jitter` (percent, for a fixed think time only).
    pub fn parse(think: Option<&str>, jitter_pct: f64) -> Result<Think, String> {
        if !(0.0..=100.0).contains(&jitter_pct) {
            return Err(format!("--think-jitter {jitter_pct} must be a percentage in 0..100"));
        }
        match think {
            None => Ok(Think::Fixed(Duration::ZERO, 0.0)),
            Some(t) if t.contains(':') => {
                if jitter_pct > 0.0 {
                    return Err("--think-jitter applies to a fixed --think, not a distribution".into());
                }
                Ok(Think::Dist(Dist::parse(t).map_err(|e| format!("--think: {e}"))?))
            }
            Some(t) => Ok(Think::Fixed(flag_duration("--think", t)?, jitter_pct / 100.0)),
        }
    }

    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        match self {
            Think::Fixed(d, j) if *j > 0.0 => d.mul_f64(rng.gen_range((1.0 - j).max(0.0)..=1.0 + j)),
            Think::Fixed(d, _) => *d,
            Think::Dist(dist) => Duration::from_millis(dist.sample(rng).max(0) as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn durations_and_think() {
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(flag_duration("--x", "ten").unwrap_err().starts_with("--x: "));
        assert_eq!(Think::parse(Some("900ms"), 10.0).unwrap(), Think::Fixed(Duration::from_millis(900), 0.1));
        assert!(Think::parse(Some("uniform:1..2"), 5.0).is_err());
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let t = Think::parse(Some("uniform:10..20"), 0.0).unwrap();
        for _ in 0..100 {
            let d = t.sample(&mut rng);
            assert!((Duration::from_millis(10)..=Duration::from_millis(20)).contains(&d));
        }
    }
}
