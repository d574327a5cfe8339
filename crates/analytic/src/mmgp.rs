//! MMGP, the Model of Multi-Grain Parallelism (Blagojevic et al. 2008, Blagojevic et al.): a host (HPU) that
//! offloads work to accelerators (APUs), with `m` HPU threads each spreading its APU work over
//! `p` APUs.

use super::{at_least_one, non_negative};
use hetsim_core::InputError;

/// Blagojevic et al. 2008 eqs. 2 and 4: one offloaded sub-phase, `T_offload = T_APU + O_r + O_s`; with the
/// host's own parts, `T = T_HPU + T_APU + O_offload` where `O_offload = O_s + O_r`.
pub fn offload_phase_s(t_hpu_s: f64, t_apu_s: f64, o_offload_s: f64) -> f64 {
    t_hpu_s + t_apu_s + o_offload_s
}

/// Blagojevic et al. 2008 eq. 5: a program of `N` phases, `T = Σ_i (T_HPU,i + T_APU,i + O_offload)`, from the
/// phases' `(T_HPU,i, T_APU,i)`.
pub fn phases_s(phases: &[(f64, f64)], o_offload_s: f64) -> f64 {
    phases
        .iter()
        .map(|&(h, a)| offload_phase_s(h, a, o_offload_s))
        .sum()
}

/// Blagojevic et al. 2008 eq. 6 (and eq. 9 per HPU thread): the APU time of a phase over `p` APUs,
/// `T_APU(1, p) = T_APU(1, 1)/p + C_APU`.
pub fn apu_time_s(t_apu_s: f64, c_apu_s: f64, p: u64) -> f64 {
    t_apu_s / p.max(1) as f64 + c_apu_s
}

/// Blagojevic et al. 2008 eq. 7: one phase with one HPU thread and `p` APUs,
/// `T_i(1, p) = T_HPU,i + T_APU,i(1, 1)/p + C_APU,i + O_offload + p·g`.
pub fn phase_one_hpu_s(
    t_hpu_s: f64,
    t_apu_s: f64,
    c_apu_s: f64,
    o_offload_s: f64,
    g_s: f64,
    p: u64,
) -> f64 {
    t_hpu_s + apu_time_s(t_apu_s, c_apu_s, p) + o_offload_s + p as f64 * g_s
}

/// Blagojevic et al. 2008 eq. 10: an HPU thread's time in a phase when `m` threads share the HPU,
/// `T_HPU,i(m, p) = α_m·T_HPU,i(1, p) + T_CSW + O_COL`.
pub fn hpu_thread_s(alpha_m: f64, t_hpu_s: f64, t_csw_s: f64, o_col_s: f64) -> f64 {
    alpha_m * t_hpu_s + t_csw_s + o_col_s
}

/// The parameters of Blagojevic et al. 2008 eq. 11, summed over the program's phases as a profile of a
/// sequential run gives them (Blagojevic et al. 2008 §4.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MmgpParams {
    /// `T_HPU(1, 1)`: the host's part with one thread, seconds.
    pub t_hpu_s: f64,
    /// `T_APU(1, 1)`: the parallelisable accelerator part on one APU, seconds.
    pub t_apu_s: f64,
    /// `C_APU`: the accelerator part that runs sequentially on one APU, seconds.
    pub c_apu_s: f64,
    /// `O_offload = O_s + O_r`: the overhead of one offload, seconds.
    pub o_offload_s: f64,
    /// `g`: the gap between consecutive offloads (or commits) to APUs, seconds.
    pub g_s: f64,
    /// `T_CSW`: the HPU's context-switch time, seconds.
    pub t_csw_s: f64,
    /// `O_COL`: the global synchronisation time, seconds.
    pub o_col_s: f64,
    /// `α_m`: the slowdown of HPU threads sharing the HPU (Blagojevic et al. 2008 uses 1.28 for any `m`).
    pub alpha_m: f64,
    /// `N`: the number of phases the per-phase terms (`O_offload`, `T_CSW`, `O_COL`, `p·g`) are
    /// paid in.
    pub phases: f64,
}

impl MmgpParams {
    fn check(&self) -> Result<(), InputError> {
        non_negative("t_hpu_s", self.t_hpu_s)?;
        non_negative("t_apu_s", self.t_apu_s)?;
        non_negative("c_apu_s", self.c_apu_s)?;
        non_negative("o_offload_s", self.o_offload_s)?;
        non_negative("g_s", self.g_s)?;
        non_negative("t_csw_s", self.t_csw_s)?;
        non_negative("o_col_s", self.o_col_s)?;
        non_negative("alpha_m", self.alpha_m)?;
        non_negative("phases", self.phases)?;
        Ok(())
    }
}

/// The terms of eq. 11.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MmgpPrediction {
    /// HPU threads.
    pub m: u64,
    /// APUs per HPU thread.
    pub p: u64,
    /// `α_m·T_HPU(1, 1)`, seconds.
    pub hpu_s: f64,
    /// `T_APU(1, 1)/(m·p)`, seconds.
    pub apu_parallel_s: f64,
    /// `C_APU`, seconds.
    pub apu_serial_s: f64,
    /// `N·(O_offload + T_CSW + O_COL)`, seconds.
    pub overhead_s: f64,
    /// `N·p·g`, seconds.
    pub gap_s: f64,
    /// `T(m, p)`, the sum, seconds.
    pub total_s: f64,
}

/// Blagojevic et al. 2008 eq. 11: `T(m, p) = α_m·T_HPU(1, 1) + T_APU(1, 1)/(m·p) + C_APU
/// + N·(O_offload + T_CSW + O_COL + p·g)`.
pub fn mmgp(params: &MmgpParams, m: u64, p: u64) -> Result<MmgpPrediction, InputError> {
    params.check()?;
    let m = at_least_one("m", m)?;
    let p = at_least_one("p", p)?;
    let hpu = params.alpha_m * params.t_hpu_s;
    let apu_parallel = params.t_apu_s / (m as f64 * p as f64);
    let overhead = params.phases * (params.o_offload_s + params.t_csw_s + params.o_col_s);
    let gap = params.phases * p as f64 * params.g_s;
    Ok(MmgpPrediction {
        m,
        p,
        hpu_s: hpu,
        apu_parallel_s: apu_parallel,
        apu_serial_s: params.c_apu_s,
        overhead_s: overhead,
        gap_s: gap,
        total_s: hpu + apu_parallel + params.c_apu_s + overhead + gap,
    })
}

/// The largest `n_apu` [`mmgp_search`] takes: it keeps every candidate, about
/// `n_apu·ln(n_apu)` of them (some 36 000 here), so memory and output stay small.
pub const MAX_SEARCH_APUS: u64 = 4096;

/// The outcome of [`mmgp_search`].
#[derive(Debug, Clone, PartialEq)]
pub struct MmgpSearch {
    /// The best configuration.
    pub best: MmgpPrediction,
    /// Every feasible configuration, by `m` then `p`.
    pub all: Vec<MmgpPrediction>,
}

/// The best `(m, p)` for eq. 11 under Blagojevic et al. 2008's constraint `m·p ≤ N_APU`, by exhaustive search
/// (Blagojevic et al. 2008 §3.3, step 3). Ties (times equal within 1e-12 relative) go to the configuration
/// using fewer APUs, then to the smaller `p` (task-level before data-level parallelism, fewer
/// offload gaps).
pub fn mmgp_search(params: &MmgpParams, n_apu: u64) -> Result<MmgpSearch, InputError> {
    let n_apu = at_least_one("n_apu", n_apu)?;
    if n_apu > MAX_SEARCH_APUS {
        return Err(InputError::new(format!(
            "n_apu = {n_apu}: at most {MAX_SEARCH_APUS} (the search keeps and prints every (m, p) \
             with m·p <= n_apu, about n_apu·ln(n_apu) of them; the QS20 of the paper has 16)"
        ))
        .at_field("n_apu"));
    }
    let mut all = Vec::new();
    for m in 1..=n_apu {
        for p in 1..=n_apu / m {
            all.push(mmgp(params, m, p)?);
        }
    }
    let better = |a: &MmgpPrediction, b: &MmgpPrediction| -> bool {
        let tol = 1e-12 * a.total_s.abs().max(b.total_s.abs());
        if (a.total_s - b.total_s).abs() > tol {
            return a.total_s < b.total_s;
        }
        (a.m * a.p, a.p) < (b.m * b.p, b.p)
    };
    let mut best = all[0];
    for c in &all[1..] {
        if better(c, &best) {
            best = *c;
        }
    }
    Ok(MmgpSearch { best, all })
}

// ---- as registered models (`crate::MODELS`) ------------------------------------------------

use crate::params::{Evaluation, ParamSpec, ParamType, Params, def, req};

/// What `mmgp` and `mmgp-search` share.
const MMGP_COMMON: [ParamSpec; 9] = [
    req("t_hpu_s", ParamType::Real, "T_HPU(1,1), host part"),
    req(
        "t_apu_s",
        ParamType::Real,
        "T_APU(1,1), parallelisable accelerator part",
    ),
    req(
        "c_apu_s",
        ParamType::Real,
        "C_APU, sequential accelerator part",
    ),
    req("g_s", ParamType::Real, "gap g between offloads"),
    def("o_offload_s", ParamType::Real, "0", "O_offload per phase"),
    def("t_csw_s", ParamType::Real, "0", "T_CSW, context switch"),
    def(
        "o_col_s",
        ParamType::Real,
        "0",
        "O_COL, global synchronisation",
    ),
    def(
        "alpha_m",
        ParamType::Real,
        "1",
        "α_m, HPU contention factor",
    ),
    def(
        "phases",
        ParamType::Real,
        "1",
        "N, phases paying the per-phase terms",
    ),
];

/// The parameters of `mmgp`.
pub const MMGP_PARAMS: &[ParamSpec] = &[
    MMGP_COMMON[0],
    MMGP_COMMON[1],
    MMGP_COMMON[2],
    MMGP_COMMON[3],
    MMGP_COMMON[4],
    MMGP_COMMON[5],
    MMGP_COMMON[6],
    MMGP_COMMON[7],
    MMGP_COMMON[8],
    req("m", ParamType::Count, "HPU threads"),
    req("p", ParamType::Count, "APUs per HPU thread"),
];

/// The parameters of `mmgp-search`.
pub const MMGP_SEARCH_PARAMS: &[ParamSpec] = &[
    MMGP_COMMON[0],
    MMGP_COMMON[1],
    MMGP_COMMON[2],
    MMGP_COMMON[3],
    MMGP_COMMON[4],
    MMGP_COMMON[5],
    MMGP_COMMON[6],
    MMGP_COMMON[7],
    MMGP_COMMON[8],
    req(
        "n_apu",
        ParamType::Count,
        "available APUs; the search covers m·p ≤ n_apu",
    ),
];

fn mmgp_params(p: &Params) -> Result<MmgpParams, InputError> {
    Ok(MmgpParams {
        t_hpu_s: p.real("t_hpu_s")?,
        t_apu_s: p.real("t_apu_s")?,
        c_apu_s: p.real("c_apu_s")?,
        o_offload_s: p.real("o_offload_s")?,
        g_s: p.real("g_s")?,
        t_csw_s: p.real("t_csw_s")?,
        o_col_s: p.real("o_col_s")?,
        alpha_m: p.real("alpha_m")?,
        phases: p.real("phases")?,
    })
}

fn mmgp_terms(ev: &mut Evaluation, r: &MmgpPrediction) {
    ev.term("total_s", r.total_s, "s");
    ev.term("hpu_s", r.hpu_s, "s");
    ev.term("apu_parallel_s", r.apu_parallel_s, "s");
    ev.term("apu_serial_s", r.apu_serial_s, "s");
    ev.term("overhead_s", r.overhead_s, "s");
    ev.term("gap_s", r.gap_s, "s");
}

/// `mmgp`: [`mmgp()`] at the given (m, p).
pub fn evaluate_mmgp(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    let r = mmgp(&mmgp_params(p)?, p.count("m")?, p.count("p")?)?;
    mmgp_terms(&mut ev, &r);
    Ok(ev)
}

/// `mmgp-search`: [`mmgp_search`], the best (m, p) and every candidate's time.
pub fn evaluate_mmgp_search(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    let s = mmgp_search(&mmgp_params(p)?, p.count("n_apu")?)?;
    ev.term("best_m", s.best.m as f64, "");
    ev.term("best_p", s.best.p as f64, "");
    mmgp_terms(&mut ev, &s.best);
    for c in &s.all {
        ev.term(format!("total_s[m={},p={}]", c.m, c.p), c.total_s, "s");
    }
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_sizes_beyond_the_limit_are_refused_before_any_work() {
        // m·p <= 4096: sum over m of floor(4096 / m) candidates, all kept.
        let s = mmgp_search(&params(), MAX_SEARCH_APUS).expect("at the limit");
        let expected: u64 = (1..=MAX_SEARCH_APUS).map(|m| MAX_SEARCH_APUS / m).sum();
        assert_eq!(s.all.len() as u64, expected);
        let e = mmgp_search(&params(), 1_000_000_000_000_000).expect_err("refused");
        assert_eq!(
            e.to_string(),
            "field `n_apu`: n_apu = 1000000000000000: at most 4096 (the search keeps and prints \
             every (m, p) with m·p <= n_apu, about n_apu·ln(n_apu) of them; the QS20 of the paper \
             has 16)"
        );
    }

    fn params() -> MmgpParams {
        MmgpParams {
            t_hpu_s: 2.0,
            t_apu_s: 60.0,
            c_apu_s: 1.0,
            o_offload_s: 0.5,
            g_s: 1.0,
            t_csw_s: 0.25,
            o_col_s: 0.25,
            alpha_m: 1.5,
            phases: 2.0,
        }
    }

    #[test]
    fn equation_11_by_hand() {
        // 1.5·2 + 60/6 + 1 + 2·(0.5 + 0.25 + 0.25 + 3·1) = 3 + 10 + 1 + 8 = 22
        let r = mmgp(&params(), 2, 3).unwrap();
        assert_eq!(r.total_s, 22.0);
        assert_eq!(r.gap_s, 6.0);
        assert_eq!(r.overhead_s, 2.0);
        assert!(mmgp(&params(), 0, 1).is_err());
        let bad = MmgpParams {
            g_s: -1.0,
            ..params()
        };
        assert!(mmgp(&bad, 1, 1).unwrap_err().to_string().contains("g_s"));
    }

    #[test]
    fn lower_equations_by_hand() {
        assert_eq!(offload_phase_s(1.0, 2.0, 0.5), 3.5);
        assert_eq!(phases_s(&[(1.0, 2.0), (3.0, 4.0)], 0.5), 11.0);
        assert_eq!(apu_time_s(8.0, 1.0, 4), 3.0);
        assert_eq!(
            phase_one_hpu_s(1.0, 8.0, 1.0, 0.5, 0.25, 4),
            1.0 + 3.0 + 0.5 + 1.0
        );
        assert_eq!(hpu_thread_s(1.28, 10.0, 1.0, 0.2), 14.0);
        // Eq. 11 with m = 1 and N = 1 is eq. 7 with α_m = 1 and no T_CSW, O_COL.
        let p = MmgpParams {
            alpha_m: 1.0,
            t_csw_s: 0.0,
            o_col_s: 0.0,
            phases: 1.0,
            ..params()
        };
        let eq11 = mmgp(&p, 1, 4).unwrap().total_s;
        assert_eq!(eq11, phase_one_hpu_s(2.0, 60.0, 1.0, 0.5, 1.0, 4));
    }

    #[test]
    fn search_finds_the_minimum_and_breaks_ties() {
        let s = mmgp_search(&params(), 4).unwrap();
        // feasible: (1,1..4), (2,1..2), (3,1), (4,1) = 8 configurations
        assert_eq!(s.all.len(), 8);
        let min = s
            .all
            .iter()
            .map(|c| c.total_s)
            .fold(f64::INFINITY, f64::min);
        assert_eq!(s.best.total_s, min);
        assert_eq!((s.best.m, s.best.p), (4, 1));
        // No gap, no HPU work: every m·p = 4 ties; the tie goes to p = 1.
        let flat = MmgpParams {
            g_s: 0.0,
            ..params()
        };
        let s = mmgp_search(&flat, 4).unwrap();
        assert_eq!((s.best.m, s.best.p), (4, 1));
        assert!(mmgp_search(&flat, 0).is_err());
    }
}
