//! Analytic performance models from the papers hetsim comes from, as pure functions of explicit
//! parameter structures, so a prediction can be set beside a simulation.
//!
//! - [`loggp`]: LogP, LogGP and PLogP point-to-point costs; mHLogGP's four CPU/GPU
//!   sender/receiver cases with size-dependent overheads (Liu et al. 2012 §3.1, Fig. 4) and broadcast by
//!   binomial tree, recursive doubling and ring with MPICH's selection rule (Liu et al. 2012 §3.2, eq. 3);
//! - [`hpl`]: the original HPL model (HPL's `scalability.html`) and the multi-communication-layer
//!   MCL-HPL model (Kim et al. 2021, eqs. 6-10 and 17-29) for any number of layers;
//! - [`mmgp`]: the Model of Multi-Grain Parallelism (Blagojevic et al. 2008, eqs. 2-11) and the search for the
//!   best (m, p) with m·p ≤ N_APU;
//! - [`roofline`]: the Improved Roofline model (Shimokawabe et al. 2013, eq. 1);
//! - [`stencil`]: the multi-GPU stencil scalability model, non-overlapping and overlapping
//!   (Shimokawabe et al. 2013, eqs. 2-5), with the bandwidth model B(s) fitted by least squares.
//!
//! Each model registers in [`MODELS`] with its parameters as data ([`params`]), so a front end
//! lists, checks and evaluates them without knowing any model.
//!
//! Units are in the names: `_s` seconds, `_bytes`, `_bytes_per_sec`, `_flops_per_sec`. Bad
//! parameters (negative times, zero rates, inconsistent grids) are [`InputError`]s naming the
//! parameter; nothing here panics on input. `docs/analytic.md` lists every equation, the papers'
//! figures reproduced by `tests/integration/analytic_papers.rs`, and the choices made where a paper is silent.

use hetsim_core::InputError;

pub mod hpl;
pub mod loggp;
pub mod mmgp;
pub mod params;
pub mod roofline;
pub mod stencil;

pub use params::{Evaluation, ModelEntry, ParamSpec, Params};

/// Every model, in the order help texts list them. A model registers here with its name, a
/// line of summary, its parameters and its evaluation (both beside the model, in its module).
pub static MODELS: &[ModelEntry] = &[
    ModelEntry {
        name: "loggp",
        summary: "LogP/LogGP point-to-point (Liu et al. 2012 eq. 1)",
        params: loggp::LOGGP_PARAMS,
        evaluate: loggp::evaluate_loggp,
    },
    ModelEntry {
        name: "mhloggp",
        summary: "mHLogGP CPU/GPU point-to-point, four cases (Liu et al. 2012 §3.1, Fig. 4)",
        params: loggp::MHLOGGP_PARAMS,
        evaluate: loggp::evaluate_mhloggp,
    },
    ModelEntry {
        name: "bcast",
        summary: "broadcast: binomial, recursive doubling, ring, MPICH2 rule (Liu et al. 2012 §3.2)",
        params: loggp::BCAST_PARAMS,
        evaluate: loggp::evaluate_bcast,
    },
    ModelEntry {
        name: "hpl",
        summary: "original HPL model (HPL scalability.html; Kim et al. 2021 eq. 3)",
        params: hpl::HPL_PARAMS,
        evaluate: hpl::evaluate_hpl,
    },
    ModelEntry {
        name: "mcl-hpl",
        summary: "multi-communication-layer HPL (Kim et al. 2021 eqs. 17-29)",
        params: hpl::MCL_HPL_PARAMS,
        evaluate: hpl::evaluate_mcl_hpl,
    },
    ModelEntry {
        name: "mmgp",
        summary: "MMGP T(m, p) (Blagojevic et al. 2008 eq. 11)",
        params: mmgp::MMGP_PARAMS,
        evaluate: mmgp::evaluate_mmgp,
    },
    ModelEntry {
        name: "mmgp-search",
        summary: "best (m, p) with m·p ≤ N_APU (Blagojevic et al. 2008 eq. 11)",
        params: mmgp::MMGP_SEARCH_PARAMS,
        evaluate: mmgp::evaluate_mmgp_search,
    },
    ModelEntry {
        name: "roofline",
        summary: "Improved Roofline (Shimokawabe et al. 2013 eq. 1)",
        params: roofline::ROOFLINE_PARAMS,
        evaluate: roofline::evaluate_roofline,
    },
    ModelEntry {
        name: "stencil",
        summary: "multi-GPU stencil scalability, 2-D decomposition (Shimokawabe et al. 2013 eqs. 2-5)",
        params: stencil::STENCIL_PARAMS,
        evaluate: stencil::evaluate_stencil,
    },
];

/// The registered model called `name`.
pub fn model(name: &str) -> Option<&'static ModelEntry> {
    MODELS.iter().find(|m| m.name == name)
}

/// A value as a function of message size, linear between measured sizes (the calibration tables
/// of Liu et al. 2012, Tables 1 and 2).
///
/// Below the smallest size the first value holds; beyond the largest size the last segment is
/// extended linearly (the paper observes that overheads grow linearly with size for large
/// messages), never below zero.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeTable {
    sizes_bytes: Vec<f64>,
    values: Vec<f64>,
}

impl SizeTable {
    /// A table from `(size_bytes, value)` points. Sizes must be finite, non-negative and strictly
    /// increasing, values finite; `name` names the table in errors.
    pub fn new(name: &str, points: &[(f64, f64)]) -> Result<Self, InputError> {
        if points.is_empty() {
            return Err(InputError::new("the table has no rows").at_field(name));
        }
        let mut sizes_bytes = Vec::with_capacity(points.len());
        let mut values = Vec::with_capacity(points.len());
        for (i, &(s, v)) in points.iter().enumerate() {
            if !s.is_finite() || s < 0.0 || !v.is_finite() {
                return Err(InputError::new(format!(
                    "row {}: size {s} and value {v} must be finite numbers, the size non-negative",
                    i + 1
                ))
                .at_field(name));
            }
            if let Some(&prev) = sizes_bytes.last()
                && s <= prev
            {
                return Err(InputError::new(format!(
                    "row {}: sizes must increase strictly ({s} after {prev})",
                    i + 1
                ))
                .at_field(name));
            }
            sizes_bytes.push(s);
            values.push(v);
        }
        Ok(SizeTable {
            sizes_bytes,
            values,
        })
    }

    /// The value at `bytes`, interpolated (see the type's documentation).
    pub fn at(&self, bytes: f64) -> f64 {
        let s = &self.sizes_bytes;
        let v = &self.values;
        let n = s.len();
        if n == 1 || bytes <= s[0] {
            return v[0].max(0.0);
        }
        // First index whose size is >= bytes; past the end: extrapolate the last segment.
        let i = s.partition_point(|&x| x < bytes).clamp(1, n - 1);
        let (s0, s1, v0, v1) = (s[i - 1], s[i], v[i - 1], v[i]);
        let t = (bytes - s0) / (s1 - s0);
        (v0 + t * (v1 - v0)).max(0.0)
    }

    /// The sizes of the table's rows, in bytes.
    pub fn sizes_bytes(&self) -> &[f64] {
        &self.sizes_bytes
    }
}

/// Check that a parameter is a finite number `> 0`.
pub(crate) fn positive(name: &str, v: f64) -> Result<f64, InputError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(InputError::new(format!("must be a finite number > 0, got {v}")).at_field(name))
    }
}

/// Check that a parameter is a finite number `>= 0`.
pub(crate) fn non_negative(name: &str, v: f64) -> Result<f64, InputError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(InputError::new(format!("must be a finite number >= 0, got {v}")).at_field(name))
    }
}

/// Check that a count is at least 1.
pub(crate) fn at_least_one(name: &str, v: u64) -> Result<u64, InputError> {
    if v >= 1 {
        Ok(v)
    } else {
        Err(InputError::new("must be at least 1").at_field(name))
    }
}

/// ⌈log2 x⌉ for x ≥ 1 (0 for x = 1): the number of steps of a binomial tree over x processes.
pub fn ceil_log2(x: u64) -> u32 {
    if x <= 1 {
        0
    } else {
        64 - (x - 1).leading_zeros()
    }
}

/// Relative difference `(a - b) / b` (0 when both are 0).
pub fn relative_difference(a: f64, b: f64) -> f64 {
    if a == b { 0.0 } else { (a - b) / b }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_interpolates_clamps_and_extends() {
        let t = SizeTable::new("t", &[(1.0, 3.0), (11.0, 13.0), (21.0, 33.0)]).unwrap();
        assert_eq!(t.at(0.0), 3.0);
        assert_eq!(t.at(1.0), 3.0);
        assert_eq!(t.at(6.0), 8.0);
        assert_eq!(t.at(11.0), 13.0);
        assert_eq!(t.at(16.0), 23.0);
        assert_eq!(t.at(21.0), 33.0);
        assert_eq!(t.at(31.0), 53.0); // last slope 2 per byte
        let falling = SizeTable::new("f", &[(0.0, 10.0), (10.0, 0.0)]).unwrap();
        assert_eq!(falling.at(20.0), 0.0, "never below zero");
        let single = SizeTable::new("s", &[(5.0, 7.0)]).unwrap();
        assert_eq!(single.at(1e9), 7.0);
    }

    #[test]
    fn table_rejects_bad_rows() {
        assert!(SizeTable::new("t", &[]).is_err());
        let e = SizeTable::new("t", &[(2.0, 1.0), (2.0, 1.0)]).unwrap_err();
        assert!(e.to_string().contains("increase"), "{e}");
        assert!(SizeTable::new("t", &[(f64::NAN, 1.0)]).is_err());
        assert!(SizeTable::new("t", &[(-1.0, 1.0)]).is_err());
    }

    #[test]
    fn ceil_log2_counts_tree_steps() {
        let got: Vec<u32> = [1, 2, 3, 4, 5, 8, 9, 1024].map(ceil_log2).to_vec();
        assert_eq!(got, vec![0, 1, 2, 2, 3, 3, 4, 10]);
        assert_eq!(ceil_log2(0), 0);
    }

    #[test]
    fn checks_name_the_parameter() {
        let e = positive("alpha_s", -1.0).unwrap_err();
        assert!(e.to_string().contains("alpha_s"));
        assert!(non_negative("x", f64::INFINITY).is_err());
        assert!(non_negative("x", 0.0).is_ok());
        assert!(at_least_one("p", 0).is_err());
    }
}
