//! The kernel rate model of HPL's BLAS calls: `rate(s) = peak · e_max · s / (s + s_half)`.

use serde::Deserialize;

use hetsim_core::error::InputError;
use hetsim_core::units::{self, RawQuantity};

/// A DGEMM rate model as written in the scenario (`[workload.gpu_dgemm]`,
/// `[workload.cpu_dgemm]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRateModel {
    /// Double-precision peak: of one GPU, or of one CPU core.
    pub peak: RawQuantity,
    /// Asymptotic fraction of the peak, in (0, 1].
    pub e_max: f64,
    /// Smallest dimension at which half of `e_max` is reached, elements (≥ 0).
    pub s_half: f64,
}

/// The DGEMM rate model: `rate(m, n, k) = peak · e_max · s / (s + s_half)`, `s = min(m, n, k)`.
///
/// Why this form: a GEMM's efficiency is limited by its smallest dimension (the arithmetic
/// intensity of an `m × n × k` product grows with `min(m, n, k)` until the device is
/// compute-bound), and it saturates at `e_max` for large sizes. `s_half` is where half of it is
/// reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateModel {
    /// Peak double-precision rate, flop/s.
    pub peak_flops_per_sec: f64,
    /// Asymptotic efficiency, (0, 1].
    pub e_max: f64,
    /// Half-efficiency size, elements.
    pub s_half: f64,
}

impl RateModel {
    /// The rate at smallest dimension `s`, flop/s.
    pub fn rate_flops_per_sec(&self, s: f64) -> f64 {
        self.peak_flops_per_sec * self.e_max * s / (s + self.s_half)
    }

    /// Time of `flops` flops at smallest dimension `s`, seconds (0 when there is nothing to do).
    pub fn secs(&self, flops: f64, s: f64) -> f64 {
        if flops <= 0.0 || s <= 0.0 {
            0.0
        } else {
            flops / self.rate_flops_per_sec(s)
        }
    }

    pub(super) fn from_raw(raw: &RawRateModel, field: &str) -> Result<RateModel, InputError> {
        let peak = raw
            .peak
            .read(units::Kind::FlopsPerSec)
            .map_err(|e| InputError::new(e.to_string()).at_field(format!("{field}.peak")))?;
        if peak <= 0.0 {
            return Err(InputError::new(format!("the peak must be > 0, got {peak}"))
                .at_field(format!("{field}.peak")));
        }
        if !(raw.e_max.is_finite() && raw.e_max > 0.0 && raw.e_max <= 1.0) {
            return Err(InputError::new(format!(
                "the asymptotic efficiency must be in (0, 1], got {}",
                raw.e_max
            ))
            .at_field(format!("{field}.e_max")));
        }
        if !(raw.s_half.is_finite() && raw.s_half >= 0.0) {
            return Err(InputError::new(format!(
                "the half-efficiency size must be a finite number of elements >= 0, got {}",
                raw.s_half
            ))
            .at_field(format!("{field}.s_half")));
        }
        Ok(RateModel {
            peak_flops_per_sec: peak,
            e_max: raw.e_max,
            s_half: raw.s_half,
        })
    }

    /// HPL's trailing update of `cols` columns by a panel of width `jb` on a rank holding `rows`
    /// rows below it: `DTRSM` (`jb × jb` unit triangle, `cols` right-hand sides, `jb²·cols`
    /// flops at `s = min(jb, cols)`), then `DGEMM` (`rows × cols × jb`, at
    /// `s = min(rows, cols, jb)`). Returns (seconds, flops).
    pub(super) fn update(&self, rows: u64, cols: u64, jb: u64) -> (f64, f64) {
        let (m, n, k) = (rows as f64, cols as f64, jb as f64);
        let trsm = k * k * n;
        let gemm = 2.0 * m * n * k;
        (
            self.secs(trsm, k.min(n)) + self.secs(gemm, m.min(n).min(k)),
            trsm + gemm,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_model_by_hand() {
        // 4.7 Tflop/s × 0.8 × 384/(384 + 128) = 2.82 Tflop/s.
        let m = RateModel {
            peak_flops_per_sec: 4.7e12,
            e_max: 0.8,
            s_half: 128.0,
        };
        assert!((m.rate_flops_per_sec(384.0) - 2.82e12).abs() < 1e3);
        assert!((m.secs(2.82e12, 384.0) - 1.0).abs() < 1e-12);
        assert_eq!(m.secs(0.0, 384.0), 0.0);
    }

    #[test]
    fn update_by_hand() {
        // s_half = 0: every call at 1 Tflop/s. 100 rows, 50 columns, jb = 10:
        // DTRSM 10²·50 = 5 000 flops, DGEMM 2·100·50·10 = 100 000 flops.
        let m = RateModel {
            peak_flops_per_sec: 1e12,
            e_max: 1.0,
            s_half: 0.0,
        };
        let (s, f) = m.update(100, 50, 10);
        assert_eq!(f, 105_000.0);
        assert!((s - 105_000.0 / 1e12).abs() < 1e-24);
        // No rows below: only the DTRSM.
        assert_eq!(m.update(0, 50, 10).1, 5_000.0);
    }
}
