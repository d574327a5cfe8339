//! Size-dependent transfer-time models for a route.
//!
//! A route normally gets its transfer times from fluid sharing of its links. A route may instead
//! carry one of these models, which gives the duration of a transfer of `s` bytes directly (and
//! replaces fluid sharing on that route):
//!
//! - **affine**: `t(s) = latency + s / bandwidth`, the classic latency/bandwidth (Hockney) model;
//! - **piecewise**: piecewise-linear in `s` through measured `(bytes, seconds)` points, with
//!   linear extrapolation beyond the first and last points. StarPU-SimGrid found size- and
//!   pitch-dependent regimes on PCIe that one line does not capture;
//! - **stencil**: the stencil scalability paper's bandwidth model (Shimokawabe et al. 2013, eq. 5),
//!   `B(s) = s / (s/B0 + t0)`, i.e. `t(s) = s/B0 + t0`, with B0 the device's peak bandwidth and
//!   t0 its latency (Shimokawabe et al. 2013, Table 1: TSUBAME 2.0 PCIe B0 = 4.29 GB/s, t0 = 16.9 µs).
//!
//! The stencil model is the affine model under another name; it is kept apart so that files say
//! which paper their figures come from and which parameter means what.
//!
//! Constructors validate their parameters, so a [`TransferModel`] always yields finite,
//! non-negative durations for non-negative sizes.

use std::fmt;

use hetsim_core::units::{format_bytes, format_secs, format_si};

/// `t(s) = latency + s / bandwidth`.
#[derive(Debug, Clone, PartialEq)]
pub struct Affine {
    latency_s: f64,
    bandwidth_bytes_per_sec: f64,
}

impl Affine {
    /// Fixed cost of every transfer.
    pub fn latency_s(&self) -> f64 {
        self.latency_s
    }
    /// Asymptotic bandwidth.
    pub fn bandwidth_bytes_per_sec(&self) -> f64 {
        self.bandwidth_bytes_per_sec
    }
}

/// Piecewise-linear `t(s)` through `(bytes, seconds)` points.
#[derive(Debug, Clone, PartialEq)]
pub struct Piecewise {
    points: Vec<(f64, f64)>,
}

impl Piecewise {
    /// The `(bytes, seconds)` points, strictly increasing in bytes (at least two).
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }
}

/// Shimokawabe et al. 2013 eq. 5: `B(s) = s / (s/B0 + t0)`, so `t(s) = s/B0 + t0`.
#[derive(Debug, Clone, PartialEq)]
pub struct Stencil {
    b0_bytes_per_sec: f64,
    t0_s: f64,
}

impl Stencil {
    /// B0, the device's peak bandwidth.
    pub fn b0_bytes_per_sec(&self) -> f64 {
        self.b0_bytes_per_sec
    }
    /// t0, the device's latency.
    pub fn t0_s(&self) -> f64 {
        self.t0_s
    }
}

/// A size-dependent transfer-time model. Build one with [`TransferModel::affine`],
/// [`TransferModel::piecewise`] or [`TransferModel::stencil`].
#[derive(Debug, Clone, PartialEq)]
pub enum TransferModel {
    /// `t(s) = latency + s / bandwidth`.
    Affine(Affine),
    /// Piecewise-linear in size, extrapolated linearly beyond its ends.
    Piecewise(Piecewise),
    /// `t(s) = s/B0 + t0` (Shimokawabe et al. 2013, eq. 5).
    Stencil(Stencil),
}

/// Which parameter of a model is wrong, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelError {
    /// The parameter's name as written in machine files (`bandwidth`, `points`, `b0`, ...).
    pub field: &'static str,
    /// For `points`, the index of the offending point.
    pub index: Option<usize>,
    /// What is wrong and what was expected.
    pub message: String,
}

fn model_err(field: &'static str, index: Option<usize>, message: String) -> ModelError {
    ModelError {
        field,
        index,
        message,
    }
}

fn check_latency(field: &'static str, v: f64) -> Result<(), ModelError> {
    if !v.is_finite() || v < 0.0 {
        return Err(model_err(
            field,
            None,
            format!("expected a finite, non-negative duration, found {v}"),
        ));
    }
    Ok(())
}

fn check_bandwidth(field: &'static str, v: f64) -> Result<(), ModelError> {
    if v == 0.0 {
        return Err(model_err(
            field,
            None,
            "zero-bandwidth route: no transfer on it could ever finish; expected a positive \
             bandwidth such as \"6 GB/s\""
                .to_string(),
        ));
    }
    if !v.is_finite() || v < 0.0 {
        return Err(model_err(
            field,
            None,
            format!("expected a finite, positive bandwidth, found {v}"),
        ));
    }
    Ok(())
}

impl TransferModel {
    /// `t(s) = latency_s + s / bandwidth_bytes_per_sec`. The latency must be finite and
    /// non-negative, the bandwidth finite and positive.
    pub fn affine(latency_s: f64, bandwidth_bytes_per_sec: f64) -> Result<Self, ModelError> {
        check_latency("latency", latency_s)?;
        check_bandwidth("bandwidth", bandwidth_bytes_per_sec)?;
        Ok(TransferModel::Affine(Affine {
            latency_s,
            bandwidth_bytes_per_sec,
        }))
    }

    /// Shimokawabe et al. 2013 eq. 5 with peak bandwidth `b0_bytes_per_sec` and latency `t0_s`.
    pub fn stencil(b0_bytes_per_sec: f64, t0_s: f64) -> Result<Self, ModelError> {
        check_bandwidth("b0", b0_bytes_per_sec)?;
        check_latency("t0", t0_s)?;
        Ok(TransferModel::Stencil(Stencil {
            b0_bytes_per_sec,
            t0_s,
        }))
    }

    /// Piecewise-linear through `(bytes, seconds)` points.
    ///
    /// Requirements, each of which keeps durations meaningful everywhere, including where the
    /// model extrapolates:
    /// - at least two points, all finite and non-negative;
    /// - sizes strictly increasing;
    /// - durations non-decreasing (a larger transfer never takes less time);
    /// - the last segment strictly increasing in time, so that extrapolation to large sizes has
    ///   a finite bandwidth;
    /// - the first segment, extended down to 0 bytes, does not reach a negative duration.
    pub fn piecewise(points: Vec<(f64, f64)>) -> Result<Self, ModelError> {
        if points.len() < 2 {
            return Err(model_err(
                "points",
                None,
                format!(
                    "expected at least two [bytes, seconds] points, found {}",
                    points.len()
                ),
            ));
        }
        for (i, &(s, t)) in points.iter().enumerate() {
            if !s.is_finite() || s < 0.0 {
                return Err(model_err(
                    "points",
                    Some(i),
                    format!("expected a finite, non-negative size in bytes, found {s}"),
                ));
            }
            if !t.is_finite() || t < 0.0 {
                return Err(model_err(
                    "points",
                    Some(i),
                    format!("expected a finite, non-negative duration in seconds, found {t}"),
                ));
            }
            if i > 0 {
                let (ps, pt) = points[i - 1];
                if s <= ps {
                    return Err(model_err(
                        "points",
                        Some(i),
                        format!("sizes must be strictly increasing: {s} bytes follows {ps} bytes"),
                    ));
                }
                if t < pt {
                    return Err(model_err(
                        "points",
                        Some(i),
                        format!(
                            "durations must not decrease with size: {t} s at {s} bytes follows \
                             {pt} s at {ps} bytes"
                        ),
                    ));
                }
            }
        }
        let n = points.len();
        let (ls0, lt0) = points[n - 2];
        let (ls1, lt1) = points[n - 1];
        if lt1 <= lt0 {
            return Err(model_err(
                "points",
                Some(n - 1),
                format!(
                    "the last segment ({ls0} to {ls1} bytes) must take strictly more time at its \
                     end, or transfers beyond it would get an infinite bandwidth"
                ),
            ));
        }
        let (s0, t0) = points[0];
        let (s1, t1) = points[1];
        let intercept = t0 - s0 * (t1 - t0) / (s1 - s0);
        // Tolerate rounding noise of a line that passes through the origin.
        if intercept < -1e-12 * t1.max(1e-300) {
            return Err(model_err(
                "points",
                Some(1),
                format!(
                    "the first segment, extended down to 0 bytes, gives a negative duration \
                     ({intercept:e} s); add a point at a smaller size"
                ),
            ));
        }
        Ok(TransferModel::Piecewise(Piecewise { points }))
    }

    /// The time to move `bytes` bytes on a route with this model, in seconds. Negative or NaN
    /// sizes are treated as 0 bytes (they cannot come from a validated workload, and this must
    /// not panic).
    pub fn duration_secs(&self, bytes: f64) -> f64 {
        let s = if bytes.is_nan() || bytes < 0.0 {
            0.0
        } else {
            bytes
        };
        match self {
            TransferModel::Affine(a) => a.latency_s + s / a.bandwidth_bytes_per_sec,
            TransferModel::Stencil(m) => s / m.b0_bytes_per_sec + m.t0_s,
            TransferModel::Piecewise(p) => piecewise_eval(&p.points, s).max(0.0),
        }
    }

    /// The effective bandwidth `s / t(s)` for a transfer of `bytes` bytes, in bytes per second:
    /// for the stencil model this is Shimokawabe et al. 2013's `B(s)`. 0 for an empty transfer; infinite if the
    /// model gives a zero duration to a non-empty transfer (possible only with a piecewise model
    /// whose first points are at zero time).
    pub fn effective_bandwidth_bytes_per_sec(&self, bytes: f64) -> f64 {
        if bytes.is_nan() || bytes <= 0.0 {
            return 0.0;
        }
        let t = self.duration_secs(bytes);
        if t > 0.0 { bytes / t } else { f64::INFINITY }
    }

    /// The model's name as written in machine files (`affine`, `piecewise`, `stencil`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            TransferModel::Affine(_) => "affine",
            TransferModel::Piecewise(_) => "piecewise",
            TransferModel::Stencil(_) => "stencil",
        }
    }
}

/// Linear interpolation on the segment containing `s`, or extrapolation on the first or last
/// segment. `points` has at least two entries with strictly increasing sizes (checked by the
/// constructor); the guard keeps this panic-free anyway.
fn piecewise_eval(points: &[(f64, f64)], s: f64) -> f64 {
    match points {
        [] => 0.0,
        [(_, t)] => *t,
        _ => {
            // Index of the segment's right end: first point with size >= s, clamped to [1, n-1].
            let n = points.len();
            let right = points.partition_point(|&(ps, _)| ps < s).clamp(1, n - 1);
            let (s0, t0) = points[right - 1];
            let (s1, t1) = points[right];
            t0 + (s - s0) * (t1 - t0) / (s1 - s0)
        }
    }
}

impl fmt::Display for TransferModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransferModel::Affine(a) => write!(
                f,
                "affine: t = {} + s / {}",
                format_secs(a.latency_s),
                format_si(a.bandwidth_bytes_per_sec, "B/s")
            ),
            TransferModel::Stencil(m) => write!(
                f,
                "stencil (Shimokawabe et al. 2013 eq. 5): t = s / {} + {}",
                format_si(m.b0_bytes_per_sec, "B/s"),
                format_secs(m.t0_s)
            ),
            TransferModel::Piecewise(p) => {
                write!(f, "piecewise through {} points:", p.points.len())?;
                for (s, t) in &p.points {
                    write!(f, " ({}, {})", format_bytes(*s), format_secs(*t))?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-300)
    }

    #[test]
    fn affine_by_hand() {
        // 10 us + 6 MB / 6 GB/s = 10 us + 1 ms = 1.010 ms.
        let m = TransferModel::affine(10e-6, 6e9).unwrap();
        assert!(close(m.duration_secs(6e6), 1.010e-3));
        assert!(close(m.duration_secs(0.0), 10e-6));
        // 6e6 B / 1.010e-3 s = 5.940594...e9 B/s.
        assert!(close(
            m.effective_bandwidth_bytes_per_sec(6e6),
            6e6 / 1.010e-3
        ));
        assert_eq!(m.effective_bandwidth_bytes_per_sec(0.0), 0.0);
    }

    #[test]
    fn stencil_matches_seed_004_eq_5() {
        // TSUBAME 2.0 PCIe, Shimokawabe et al. 2013 Table 1: B0 = 4.29 GB/s, t0 = 16.9 us.
        let m = TransferModel::stencil(4.29e9, 16.9e-6).unwrap();
        // s = B0 * t0 = 72501 bytes is the half-bandwidth point: t = 2 * t0, B(s) = B0 / 2.
        let half = 4.29e9 * 16.9e-6;
        assert!(close(m.duration_secs(half), 2.0 * 16.9e-6));
        assert!(close(
            m.effective_bandwidth_bytes_per_sec(half),
            4.29e9 / 2.0
        ));
        // 1 MiB: t = 1048576 / 4.29e9 + 16.9e-6 = 244.423...e-6 + 16.9e-6 = 261.3233...e-6 s.
        let t = 1_048_576.0 / 4.29e9 + 16.9e-6;
        assert!(close(m.duration_secs(1_048_576.0), t));
        assert!((m.duration_secs(1_048_576.0) - 261.3233e-6).abs() < 1e-10);
        // B(s) from the paper's second form: s / (s + B0 t0) * B0.
        let s = 1_048_576.0;
        assert!(close(
            m.effective_bandwidth_bytes_per_sec(s),
            s / (s + 4.29e9 * 16.9e-6) * 4.29e9
        ));
    }

    #[test]
    fn piecewise_interpolates_and_extrapolates() {
        // Two regimes: 1 GB/s below 1 MB, 2 GB/s above, plus 5 us latency.
        let m =
            TransferModel::piecewise(vec![(0.0, 5e-6), (1e6, 1.005e-3), (3e6, 2.005e-3)]).unwrap();
        assert!(close(m.duration_secs(0.0), 5e-6));
        assert!(close(m.duration_secs(5e5), 5e-6 + 0.5e-3));
        assert!(close(m.duration_secs(1e6), 1.005e-3));
        assert!(close(m.duration_secs(2e6), 1.505e-3));
        // Beyond the last point: the last segment's slope (0.5 ns per byte).
        assert!(close(m.duration_secs(5e6), 3.005e-3));
        assert!(close(
            m.effective_bandwidth_bytes_per_sec(5e6),
            5e6 / 3.005e-3
        ));
    }

    #[test]
    fn piecewise_extrapolates_below_first_point() {
        // Line through (1000, 2 us) and (2000, 3 us): 1 us + 1 ns/B; at 500 B it gives 1.5 us.
        let m = TransferModel::piecewise(vec![(1000.0, 2e-6), (2000.0, 3e-6)]).unwrap();
        assert!(close(m.duration_secs(500.0), 1.5e-6));
        assert!(close(m.duration_secs(0.0), 1e-6));
    }

    #[test]
    fn piecewise_rejections() {
        let e = TransferModel::piecewise(vec![(1.0, 1.0)]).unwrap_err();
        assert!(e.message.contains("at least two"));
        let e = TransferModel::piecewise(vec![(10.0, 1.0), (10.0, 2.0)]).unwrap_err();
        assert_eq!(e.index, Some(1));
        assert!(e.message.contains("strictly increasing"));
        let e = TransferModel::piecewise(vec![(1.0, 2.0), (2.0, 1.0)]).unwrap_err();
        assert!(e.message.contains("must not decrease"));
        let e = TransferModel::piecewise(vec![(1.0, 1.0), (2.0, 2.0), (3.0, 2.0)]).unwrap_err();
        assert!(e.message.contains("last segment"));
        // Through (1000, 1 us) and (2000, 3 us): at 0 bytes, -1 us.
        let e = TransferModel::piecewise(vec![(1000.0, 1e-6), (2000.0, 3e-6)]).unwrap_err();
        assert!(e.message.contains("negative duration"));
        let e = TransferModel::piecewise(vec![(0.0, f64::NAN), (1.0, 1.0)]).unwrap_err();
        assert_eq!(e.index, Some(0));
    }

    #[test]
    fn parameter_rejections() {
        let e = TransferModel::affine(0.0, 0.0).unwrap_err();
        assert!(e.message.contains("zero-bandwidth route"));
        assert_eq!(e.field, "bandwidth");
        assert!(TransferModel::affine(-1.0, 1.0).is_err());
        assert!(TransferModel::affine(0.0, f64::NAN).is_err());
        assert!(TransferModel::stencil(f64::INFINITY, 0.0).is_err());
        let e = TransferModel::stencil(1e9, -1e-6).unwrap_err();
        assert_eq!(e.field, "t0");
    }

    #[test]
    fn bad_sizes_do_not_panic() {
        let m = TransferModel::stencil(1e9, 1e-6).unwrap();
        assert_eq!(m.duration_secs(-5.0), 1e-6);
        assert_eq!(m.duration_secs(f64::NAN), 1e-6);
        assert_eq!(m.effective_bandwidth_bytes_per_sec(f64::NAN), 0.0);
    }
}
