//! Noise on kernel durations: how the simulation turns a model's mean (and deviation) into the
//! duration of one task.
//!
//! Schedulers always see the mean; only the simulated execution draws. Every draw comes from the
//! caller's RNG (the run's seeded [`super::SimRng`]), so the same seed gives the same durations.
//! Nothing here allocates per draw.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, LogNormal, StandardNormal};

use super::ParamError;

/// With [`Noise::Normal`], a draw below this fraction of the mean is raised to it, so that
/// durations stay positive. With a coefficient of variation of 0.2 this happens with probability
/// below 1e-6 (a 4.95-sigma event); for larger deviations prefer [`Noise::LogNormal`], which is
/// positive by construction.
pub const NORMAL_MIN_FRACTION: f64 = 0.01;

/// How durations are drawn around a model's prediction.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Noise {
    /// No noise: every draw is the mean (StarPU-SimGrid's behaviour). The default.
    #[default]
    None,
    /// Normal with the entry's mean and deviation, clamped below at
    /// [`NORMAL_MIN_FRACTION`] × mean.
    Normal,
    /// Log-normal with the entry's mean and deviation (`LogNormal::from_mean_cv(mean,
    /// stddev / mean)`): positive and right-skewed, as kernel times usually are.
    LogNormal,
    /// An irregular empirical distribution, scaled so that its mean is the entry's mean. The
    /// entry's deviation is not used: the histogram's shape gives the spread.
    Histogram(Histogram),
}

impl Noise {
    /// The name used in machine files: `none`, `normal`, `lognormal` or `histogram`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Noise::None => "none",
            Noise::Normal => "normal",
            Noise::LogNormal => "lognormal",
            Noise::Histogram(_) => "histogram",
        }
    }

    /// One duration around `mean_s` with deviation `stddev_s` (both in seconds, `mean_s > 0`,
    /// `stddev_s >= 0`). Draws nothing from `rng` when the result cannot vary (no noise, or a
    /// zero deviation with normal and log-normal noise).
    #[inline]
    pub fn draw<R: Rng + ?Sized>(&self, mean_s: f64, stddev_s: f64, rng: &mut R) -> f64 {
        match self {
            Noise::None => mean_s,
            Noise::Normal => {
                if stddev_s > 0.0 {
                    let z: f64 = StandardNormal.sample(rng);
                    (mean_s + stddev_s * z).max(NORMAL_MIN_FRACTION * mean_s)
                } else {
                    mean_s
                }
            }
            Noise::LogNormal => {
                if stddev_s > 0.0 && mean_s > 0.0 {
                    match LogNormal::from_mean_cv(mean_s, stddev_s / mean_s) {
                        Ok(d) => d.sample(rng),
                        Err(_) => mean_s,
                    }
                } else {
                    mean_s
                }
            }
            Noise::Histogram(h) => mean_s * h.draw_factor(rng),
        }
    }
}

/// The shape of a [`Histogram`].
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// Bins `[edges[i], edges[i+1])` chosen with probability proportional to their weight, then
    /// a uniform value inside the bin. `cumulative[i]` is the sum of the weights of bins `0..=i`.
    Bins {
        edges: Vec<f64>,
        cumulative: Vec<f64>,
    },
    /// One of the values, uniformly.
    Samples(Vec<f64>),
}

/// An irregular empirical distribution of durations, in arbitrary units (relative factors,
/// microseconds, ...): only its shape matters, because draws are divided by its mean and
/// multiplied by the model's mean.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    shape: Shape,
    mean: f64,
}

impl Histogram {
    /// Bins with `edges` (strictly increasing, non-negative, at least two) and one non-negative
    /// weight per bin (`edges.len() - 1` of them, not all zero).
    pub fn from_bins(edges: Vec<f64>, weights: Vec<f64>) -> Result<Histogram, ParamError> {
        if edges.len() < 2 {
            return Err(ParamError::new(
                "edges",
                None,
                format!("expected at least two bin edges, found {}", edges.len()),
            ));
        }
        for (i, &e) in edges.iter().enumerate() {
            if !e.is_finite() || e < 0.0 {
                return Err(ParamError::new(
                    "edges",
                    Some(i),
                    format!("expected a finite, non-negative bin edge, found {e}"),
                ));
            }
            if i > 0 && e <= edges[i - 1] {
                return Err(ParamError::new(
                    "edges",
                    Some(i),
                    format!(
                        "bin edges must be strictly increasing: {e} follows {}",
                        edges[i - 1]
                    ),
                ));
            }
        }
        if weights.len() != edges.len() - 1 {
            return Err(ParamError::new(
                "weights",
                None,
                format!(
                    "expected one weight per bin: {} edges make {} bins, found {} weights",
                    edges.len(),
                    edges.len() - 1,
                    weights.len()
                ),
            ));
        }
        let mut cumulative = Vec::with_capacity(weights.len());
        let mut total = 0.0;
        let mut weighted_mid = 0.0;
        for (i, &w) in weights.iter().enumerate() {
            if !w.is_finite() || w < 0.0 {
                return Err(ParamError::new(
                    "weights",
                    Some(i),
                    format!("expected a finite, non-negative weight, found {w}"),
                ));
            }
            total += w;
            weighted_mid += w * 0.5 * (edges[i] + edges[i + 1]);
            cumulative.push(total);
        }
        if !(total > 0.0 && total.is_finite()) {
            return Err(ParamError::new(
                "weights",
                None,
                "expected at least one positive weight, with a finite sum".to_string(),
            ));
        }
        let mean = weighted_mid / total;
        if mean <= 0.0 || mean.is_nan() {
            return Err(ParamError::new(
                "edges",
                None,
                "the histogram's mean is zero; expected some weight above 0".to_string(),
            ));
        }
        Ok(Histogram {
            shape: Shape::Bins { edges, cumulative },
            mean,
        })
    }

    /// Observed values (non-negative, finite, at least one, with a positive mean); draws pick
    /// one uniformly.
    pub fn from_samples(samples: Vec<f64>) -> Result<Histogram, ParamError> {
        if samples.is_empty() {
            return Err(ParamError::new(
                "samples",
                None,
                "expected at least one sample".to_string(),
            ));
        }
        for (i, &s) in samples.iter().enumerate() {
            if !s.is_finite() || s < 0.0 {
                return Err(ParamError::new(
                    "samples",
                    Some(i),
                    format!("expected a finite, non-negative sample, found {s}"),
                ));
            }
        }
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        if !(mean > 0.0 && mean.is_finite()) {
            return Err(ParamError::new(
                "samples",
                None,
                "expected samples with a positive, finite mean".to_string(),
            ));
        }
        Ok(Histogram {
            shape: Shape::Samples(samples),
            mean,
        })
    }

    /// The smallest and largest factor a draw can be multiplied by (a draw is the model's mean
    /// times a factor whose expectation is 1).
    pub fn factor_range(&self) -> (f64, f64) {
        let (lo, hi) = match &self.shape {
            Shape::Bins { edges, .. } => (edges[0], edges[edges.len() - 1]),
            Shape::Samples(s) => (
                s.iter().copied().fold(f64::INFINITY, f64::min),
                s.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ),
        };
        (lo / self.mean, hi / self.mean)
    }

    /// A factor with expectation 1: a value of the histogram divided by its mean.
    #[inline]
    pub fn draw_factor<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let x = match &self.shape {
            Shape::Bins { edges, cumulative } => {
                let total = cumulative[cumulative.len() - 1];
                let u = rng.random::<f64>() * total;
                // First bin whose cumulative weight exceeds u: never a zero-weight bin.
                let i = cumulative
                    .partition_point(|&c| c <= u)
                    .min(cumulative.len() - 1);
                let v = rng.random::<f64>();
                edges[i] + v * (edges[i + 1] - edges[i])
            }
            Shape::Samples(s) => s[rng.random_range(0..s.len())],
        };
        x / self.mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng_from_seed;

    #[test]
    fn bins_mean_and_range() {
        let h = Histogram::from_bins(vec![1.0, 2.0, 4.0], vec![1.0, 1.0]).unwrap();
        // Mean: (1.5 + 3) / 2 = 2.25.
        let (lo, hi) = h.factor_range();
        assert!((lo - 1.0 / 2.25).abs() < 1e-15);
        assert!((hi - 4.0 / 2.25).abs() < 1e-15);
    }

    #[test]
    fn zero_weight_bins_are_never_drawn() {
        let h = Histogram::from_bins(vec![0.0, 1.0, 2.0, 3.0], vec![0.0, 1.0, 0.0]).unwrap();
        let mut rng = rng_from_seed(1);
        for _ in 0..10_000 {
            let f = h.draw_factor(&mut rng);
            // Only the bin [1, 2) with mean 1.5.
            assert!((1.0 / 1.5..=2.0 / 1.5).contains(&f), "{f}");
        }
    }

    #[test]
    fn bad_histograms_are_refused() {
        assert_eq!(
            Histogram::from_bins(vec![1.0], vec![]).unwrap_err().field,
            "edges"
        );
        let e = Histogram::from_bins(vec![1.0, 1.0], vec![1.0]).unwrap_err();
        assert_eq!((e.field, e.index), ("edges", Some(1)));
        let e = Histogram::from_bins(vec![1.0, 2.0], vec![1.0, 2.0]).unwrap_err();
        assert_eq!(e.field, "weights");
        let e = Histogram::from_bins(vec![1.0, 2.0], vec![0.0]).unwrap_err();
        assert_eq!(e.field, "weights");
        let e = Histogram::from_bins(vec![0.0, 2.0], vec![f64::NAN]).unwrap_err();
        assert_eq!((e.field, e.index), ("weights", Some(0)));
        assert!(Histogram::from_samples(vec![]).is_err());
        assert!(Histogram::from_samples(vec![0.0, 0.0]).is_err());
        let e = Histogram::from_samples(vec![1.0, -1.0]).unwrap_err();
        assert_eq!(e.index, Some(1));
    }

    #[test]
    fn zero_deviation_draws_the_mean_without_touching_the_rng() {
        let mut a = rng_from_seed(3);
        let b = a.clone();
        assert_eq!(Noise::Normal.draw(2.0, 0.0, &mut a), 2.0);
        assert_eq!(Noise::LogNormal.draw(2.0, 0.0, &mut a), 2.0);
        assert_eq!(a, b);
    }

    #[test]
    fn normal_is_clamped_positive() {
        let mut rng = rng_from_seed(5);
        for _ in 0..10_000 {
            let x = Noise::Normal.draw(1.0, 3.0, &mut rng);
            assert!(x >= NORMAL_MIN_FRACTION);
        }
    }
}
