//! Per-request templated values: `{uniform:A..B}`, `{normal:MEAN,SD}`,
//! `{exp:MEAN}`, `{fixed:V}` are replaced by an integer drawn from the
//! worker's seeded RNG, so a run with the same seed draws the same values.

use rand::Rng;
use rand_distr::{Distribution, Exp, Normal};
use std::io::Write;

/// A distribution of integers.
#[derive(Debug, Clone, PartialEq)]
pub enum Dist {
    Fixed(i64),
    /// Inclusive bounds.
    Uniform(i64, i64),
    /// Rounded and clamped at 0 (values are counts, delays, sizes).
    Normal(f64, f64),
    /// Rounded; mean > 0.
    Exp(f64),
}

impl Dist {
    /// Parse `uniform:A..B`, `normal:MEAN,SD`, `exp:MEAN`, `fixed:V`.
    pub fn parse(spec: &str) -> Result<Dist, String> {
        let (kind, args) = spec
            .split_once(':')
            .ok_or_else(|| format!("distribution `{spec}` needs the form kind:args, e.g. uniform:95..105"))?;
        let num = |s: &str| -> Result<f64, String> {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("`{s}` in distribution `{spec}` is not a number"))
        };
        let int = |s: &str| -> Result<i64, String> {
            s.trim()
                .parse::<i64>()
                .map_err(|_| format!("`{s}` in distribution `{spec}` is not an integer"))
        };
        match kind.trim() {
            "fixed" => Ok(Dist::Fixed(int(args)?)),
            "uniform" => {
                let (a, b) = args
                    .split_once("..")
                    .ok_or_else(|| format!("uniform needs A..B, got `{args}`"))?;
                let (a, b) = (int(a)?, int(b)?);
                if a > b {
                    return Err(format!("uniform:{a}..{b} has A > B"));
                }
                Ok(Dist::Uniform(a, b))
            }
            "normal" => {
                let (m, sd) = args
                    .split_once(',')
                    .ok_or_else(|| format!("normal needs MEAN,SD, got `{args}`"))?;
                let (m, sd) = (num(m)?, num(sd)?);
                if sd < 0.0 {
                    return Err(format!("normal:{m},{sd} has a negative SD"));
                }
                Ok(Dist::Normal(m, sd))
            }
            "exp" => {
                let m = num(args)?;
                if m <= 0.0 {
                    return Err(format!("exp:{m} needs a mean > 0"));
                }
                Ok(Dist::Exp(m))
            }
            other => Err(format!(
                "unknown distribution `{other}` (use uniform, normal, exp or fixed)"
            )),
        }
    }

    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        match *self {
            Dist::Fixed(v) => v,
            Dist::Uniform(a, b) => rng.gen_range(a..=b),
            Dist::Normal(m, sd) => {
                let v = Normal::new(m, sd).map(|d| d.sample(rng)).unwrap_or(m);
                v.round().max(0.0) as i64
            }
            Dist::Exp(m) => {
                let v = Exp::new(1.0 / m).map(|d| d.sample(rng)).unwrap_or(m);
                v.round() as i64
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(String),
    Var(Dist),
}

/// A string with zero or more `{dist}` placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Braces that do not hold a known distribution stay literal text, so
    /// JSON bodies like `{"a":1}` pass through unchanged.
    pub fn parse(s: &str) -> Result<Template, String> {
        let mut parts = vec![];
        let mut lit = String::new();
        let mut rest = s;
        while let Some(open) = rest.find('{') {
            lit.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after.find('}');
            let inner = close.map(|c| &after[..c]);
            let is_dist = inner.is_some_and(|i| {
                ["uniform:", "normal:", "exp:", "fixed:"].iter().any(|k| i.trim_start().starts_with(k))
            });
            if let (true, Some(inner), Some(c)) = (is_dist, inner, close) {
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                parts.push(Part::Var(Dist::parse(inner.trim())?));
                rest = &after[c + 1..];
            } else {
                lit.push('{');
                rest = after;
            }
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Template { parts })
    }

    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    pub fn render<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut Vec<u8>) {
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.extend_from_slice(s.as_bytes()),
                Part::Var(d) => {
                    // writing to a Vec cannot fail
                    let _ = write!(out, "{}", d.sample(rng));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn render_n(t: &Template, seed: u64, n: usize) -> Vec<String> {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let mut v = vec![];
                t.render(&mut rng, &mut v);
                String::from_utf8(v).unwrap()
            })
            .collect()
    }

    #[test]
    fn uniform_in_range_and_reproducible() {
        let t = Template::parse("/delay?ms={uniform:95..105}&bytes=1024").unwrap();
        assert!(!t.is_static());
        let a = render_n(&t, 7, 500);
        assert_eq!(a, render_n(&t, 7, 500), "same seed, same values");
        assert_ne!(a, render_n(&t, 8, 500), "another seed, other values");
        let mut seen = std::collections::BTreeSet::new();
        for s in &a {
            let ms: i64 = s["/delay?ms=".len()..s.find('&').unwrap()].parse().unwrap();
            assert!((95..=105).contains(&ms), "{s}");
            assert!(s.ends_with("&bytes=1024"));
            seen.insert(ms);
        }
        assert_eq!(seen.len(), 11, "all 11 values drawn in 500 tries");
    }

    #[test]
    fn distributions_have_roughly_the_right_mean() {
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let mean = |d: Dist, rng: &mut Pcg64Mcg| (0..20000).map(|_| d.sample(rng) as f64).sum::<f64>() / 20000.0;
        assert!((mean(Dist::Normal(100.0, 10.0), &mut rng) - 100.0).abs() < 1.0);
        assert!((mean(Dist::Exp(50.0), &mut rng) - 50.0).abs() < 2.0);
        assert_eq!(mean(Dist::Fixed(3), &mut rng), 3.0);
    }

    #[test]
    fn json_braces_stay_literal_and_bad_specs_fail() {
        let t = Template::parse(r#"{"a":{fixed:5}}"#).unwrap();
        assert_eq!(render_n(&t, 1, 1)[0], r#"{"a":5}"#);
        assert!(Template::parse("{uniform:9..1}").is_err());
        assert!(Template::parse("{exp:-1}").is_err());
        assert!(Template::parse("{normal:1}").is_err());
    }
}
