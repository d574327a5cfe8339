//! HPL performance models: the original one HPL documents, and the multi-communication-layer
//! MCL-HPL model of Kim et al. 2021.
//!
//! HPL's model (`hpl/www/scalability.html`, Petitet, Whaley, Dongarra, Cleary) keeps the main
//! terms in γ (flop rate), β (time per double-precision word) and α (latency):
//!
//! `T = 2N³/(3PQγ) + β·N²(3P + Q)/(2PQ) + α·N((NB + 1)·log P + P)/NB`.
//!
//! MCL-HPL (Kim et al. 2021) splits the communication of the N/NB panel steps among communication
//! layers (GPU memory, the intra-node network, the interconnect ...), each with its own α and β,
//! and keeps the lower-order terms. With one layer it is HPL's model plus those terms (its
//! eq. 30). `log P` is `log2 P`, as in HPL's binary-exchange and tree broadcasts.

use super::{at_least_one, non_negative, positive};
use hetsim_core::InputError;

/// Bytes in one word of HPL's communication volume (a double).
pub const HPL_WORD_BYTES: f64 = 8.0;

pub use hetsim_core::linpack::{hpl_flops, square_grid};

/// Parameters of the original HPL model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HplParams {
    /// `N`: the order of the matrix.
    pub n: u64,
    /// `NB`: the block size.
    pub nb: u64,
    /// `P`: process rows.
    pub p: u64,
    /// `Q`: process columns.
    pub q: u64,
    /// `γ`: each process's matrix-multiply rate, flop/s.
    pub gamma_flops_per_sec: f64,
    /// `α`: the network latency, seconds.
    pub alpha_s: f64,
    /// The network bandwidth; `β = 8 bytes / bandwidth` seconds per word.
    pub bandwidth_bytes_per_sec: f64,
}

/// The original HPL model's prediction and its three terms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HplPrediction {
    /// `2N³/(3PQγ)`, seconds.
    pub compute_s: f64,
    /// `β·N²(3P + Q)/(2PQ)`, seconds.
    pub bandwidth_s: f64,
    /// `α·N((NB + 1)·log P + P)/NB`, seconds.
    pub latency_s: f64,
    /// The sum, seconds.
    pub total_s: f64,
    /// [`hpl_flops`]`(N)` divided by the time, flop/s.
    pub flops_per_sec: f64,
}

/// The original HPL model, as HPL documents it (`scalability.html`, "Total execution time"):
/// `T = 2N³/(3PQγ) + β·N²(3P + Q)/(2PQ) + α·N((NB + 1)·log2 P + P)/NB`; Kim et al. 2021 eq. 3.
pub fn hpl(params: &HplParams) -> Result<HplPrediction, InputError> {
    let n = at_least_one("n", params.n)? as f64;
    let nb = at_least_one("nb", params.nb)? as f64;
    let p = at_least_one("p", params.p)? as f64;
    let q = at_least_one("q", params.q)? as f64;
    let gamma = positive("gamma_flops_per_sec", params.gamma_flops_per_sec)?;
    let alpha = non_negative("alpha_s", params.alpha_s)?;
    let beta =
        HPL_WORD_BYTES / positive("bandwidth_bytes_per_sec", params.bandwidth_bytes_per_sec)?;
    let compute = 2.0 * n * n * n / (3.0 * p * q * gamma);
    let bandwidth = beta * n * n * (3.0 * p + q) / (2.0 * p * q);
    let latency = alpha * n * ((nb + 1.0) * p.log2() + p) / nb;
    let total = compute + bandwidth + latency;
    Ok(HplPrediction {
        compute_s: compute,
        bandwidth_s: bandwidth,
        latency_s: latency,
        total_s: total,
        flops_per_sec: hpl_flops(n) / total,
    })
}

/// One communication layer of MCL-HPL.
///
/// The layer spans the processes of a `grid_p × grid_q` sub-grid of the `P × Q` grid (1 × 1 for
/// the first layer, one accelerator and its memory; `P × Q` for the last, the whole machine), so
/// its boundaries are `m_j = grid_p·N_new/P` rows and `n_j = grid_q·N_new/Q` columns
/// (Kim et al. 2021 eqs. 18-21 and Fig. 2).
#[derive(Debug, Clone, PartialEq)]
pub struct MclLayer {
    /// A name for reports (`memory`, `pcie`, `infiniband` ...).
    pub name: String,
    /// `α_Lj`: the layer's latency, seconds.
    pub alpha_s: f64,
    /// The layer's bandwidth; `β_Lj = 8 bytes / bandwidth`.
    pub bandwidth_bytes_per_sec: f64,
    /// Process rows within the layer's boundary.
    pub grid_p: u64,
    /// Process columns within the layer's boundary.
    pub grid_q: u64,
}

/// Parameters of the MCL-HPL model.
#[derive(Debug, Clone, PartialEq)]
pub struct MclHplParams {
    /// `N`: the order of the matrix.
    pub n: u64,
    /// `NB`: the block size.
    pub nb: u64,
    /// `P`: process rows.
    pub p: u64,
    /// `Q`: process columns.
    pub q: u64,
    /// `γ`: each process's (model processor's) flop rate, flop/s (Kim et al. 2021 eq. 10 for a GPU).
    pub gamma_flops_per_sec: f64,
    /// The layers, innermost first; the last one's grid must be `P × Q`.
    pub layers: Vec<MclLayer>,
}

/// The communication terms of one layer (Kim et al. 2021 eqs. 26-29).
#[derive(Debug, Clone, PartialEq)]
pub struct MclLayerTerms {
    /// The layer's name.
    pub name: String,
    /// `m_{j-1}` and `m_j`: the row boundaries.
    pub m_bounds: (f64, f64),
    /// `n_{j-1}` and `n_j`: the column boundaries.
    pub n_bounds: (f64, f64),
    /// Eq. 27, seconds.
    pub pivot_s: f64,
    /// Eq. 28, seconds.
    pub broadcast_s: f64,
    /// Eq. 29, seconds.
    pub update_s: f64,
    /// Eq. 26, the sum, seconds.
    pub comm_s: f64,
}

/// The MCL-HPL prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct MclHplPrediction {
    /// `N_new` (eq. 17).
    pub n_new: f64,
    /// Eq. 25, seconds.
    pub compute_s: f64,
    /// Eqs. 26-29 per layer.
    pub layers: Vec<MclLayerTerms>,
    /// The communication of all layers (eq. 24), seconds.
    pub comm_s: f64,
    /// Eq. 22, seconds.
    pub total_s: f64,
    /// [`hpl_flops`]`(N)` (the problem's order, not the padded one) over the time, flop/s.
    pub flops_per_sec: f64,
}

/// Kim et al. 2021 eq. 17: the order padded to whole panels, `N_new = NB·⌈N/NB⌉`.
///
/// The equation itself did not survive in our copy of the paper; the text says an `N` not
/// divisible by `NB` is padded with zeros to whole `NB × NB` panels, which is what this does.
pub fn mcl_n_new(n: u64, nb: u64) -> f64 {
    let nb = nb.max(1);
    (n.div_ceil(nb) * nb) as f64
}

/// Kim et al. 2021 eq. 6: the memory bandwidth per core of an accelerator, its total bandwidth
/// (`M·W·64 bits·H`: controllers × 64-bit words per controller × 8 bytes × memory clock) over
/// its `C` cores.
pub fn bandwidth_per_core_bytes_per_sec(total_bytes_per_sec: f64, cores: u64) -> f64 {
    total_bytes_per_sec / cores.max(1) as f64
}

/// Kim et al. 2021 eq. 7: the equivalent bandwidth of the model processor's single memory controller,
/// the per-core bandwidth (eq. 6) times the `M·W` 64-bit words the one big core accesses at once.
/// `β_L1` is derived from it (eq. 9).
pub fn equivalent_bandwidth_bytes_per_sec(
    total_bytes_per_sec: f64,
    cores: u64,
    qwords: u64,
) -> f64 {
    bandwidth_per_core_bytes_per_sec(total_bytes_per_sec, cores) * qwords as f64
}

/// Kim et al. 2021 eq. 8: `α_L1`, a memory latency given in cycles of a clock, in seconds.
pub fn latency_from_cycles_s(cycles: f64, clock_hz: f64) -> f64 {
    cycles / clock_hz
}

/// Kim et al. 2021 eq. 10: `Rpeak = C·F·S` (cores × flops per cycle per core × clock), flop/s.
pub fn rpeak_flops_per_sec(cores: u64, flops_per_cycle_per_core: f64, clock_hz: f64) -> f64 {
    cores as f64 * flops_per_cycle_per_core * clock_hz
}

/// Kim et al. 2021 eq. 25: the computation time summed over all panels,
/// `(1/γ)·[2N³/(3PQ) + NB(3Q + 3P + 6)N²/(6PQ) + NB²((3P + 2) - (2P + 3)Q)N/(6PQ)]` with
/// `N = N_new`. It does not depend on the layers.
pub fn mcl_compute_s(n_new: f64, nb: f64, p: f64, q: f64, gamma_flops_per_sec: f64) -> f64 {
    let n = n_new;
    let flops = 2.0 * n * n * n / (3.0 * p * q)
        + nb * (3.0 * q + 3.0 * p + 6.0) * n * n / (6.0 * p * q)
        + nb * nb * ((3.0 * p + 2.0) - (2.0 * p + 3.0) * q) * n / (6.0 * p * q);
    flops / gamma_flops_per_sec
}

/// Kim et al. 2021 eqs. 26-29: one layer's pivoting, panel broadcast and update communication, with
/// `β = 8 bytes / bandwidth` and `Δm = m_j - m_{j-1}`, `Δn = n_j - n_{j-1}`:
///
/// - pivot (27): `NB·log P·(α + β(2NB + 4))·Δm/NB`;
/// - broadcast (28): `α·Δm/NB + β·(m_j² - 2m_j m_{j-1} - Δm·NB + m_{j-1}²)/(2P)`;
/// - update (29): `α(log P + P - 1)·Δn/NB + 3β·(n_j² - 2n_j n_{j-1} + Δn·NB + n_{j-1}²)/(2Q)`.
///
/// The β part of eq. 28 is `(Δm² - Δm·NB)/(2P)`, negative when a layer spans less than one
/// panel; it is taken as 0 then.
#[allow(clippy::too_many_arguments)]
pub fn mcl_layer_comm(
    name: &str,
    m_bounds: (f64, f64),
    n_bounds: (f64, f64),
    nb: f64,
    p: f64,
    q: f64,
    alpha_s: f64,
    beta_s_per_word: f64,
) -> MclLayerTerms {
    let (m0, m1) = m_bounds;
    let (n0, n1) = n_bounds;
    let (a, b) = (alpha_s, beta_s_per_word);
    let dm = m1 - m0;
    let dn = n1 - n0;
    let logp = p.log2();
    let pivot = nb * logp * (a + b * (2.0 * nb + 4.0)) * dm / nb;
    let bcast_words = (m1 * m1 - 2.0 * m1 * m0 - dm * nb + m0 * m0).max(0.0);
    let broadcast = a * dm / nb + b * bcast_words / (2.0 * p);
    let update = a * (logp + p - 1.0) * dn / nb
        + 3.0 * b * (n1 * n1 - 2.0 * n1 * n0 + dn * nb + n0 * n0) / (2.0 * q);
    MclLayerTerms {
        name: name.to_string(),
        m_bounds,
        n_bounds,
        pivot_s: pivot,
        broadcast_s: broadcast,
        update_s: update,
        comm_s: pivot + broadcast + update,
    }
}

/// The MCL-HPL model, Kim et al. 2021 eq. 22: `T = Σ_j (T_CALC,Lj + T_COMM,Lj)` with the computation of
/// eq. 25 and each layer's communication (eqs. 26-29) over the panels between its boundary and
/// the previous layer's (eq. 24).
///
/// Layers are innermost first; their grids must grow (`grid_p`, `grid_q` non-decreasing) and the
/// last must be the whole `P × Q` grid, whose boundary is `N_new` (§3.1.4.3).
pub fn mcl_hpl(params: &MclHplParams) -> Result<MclHplPrediction, InputError> {
    let n = at_least_one("n", params.n)?;
    let nb = at_least_one("nb", params.nb)?;
    let p = at_least_one("p", params.p)?;
    let q = at_least_one("q", params.q)?;
    let gamma = positive("gamma_flops_per_sec", params.gamma_flops_per_sec)?;
    if params.layers.is_empty() {
        return Err(
            InputError::new("at least one communication layer is needed").at_field("layers"),
        );
    }
    let n_new = mcl_n_new(n, nb);
    let (nbf, pf, qf) = (nb as f64, p as f64, q as f64);
    let mut prev = (0u64, 0u64);
    let mut bounds = (0.0, 0.0);
    let mut layers = Vec::with_capacity(params.layers.len());
    for (i, layer) in params.layers.iter().enumerate() {
        let field = |f: &str| format!("l{}_{f}", i + 1);
        let alpha = non_negative(&field("alpha_s"), layer.alpha_s)?;
        let bw = positive(
            &field("bandwidth_bytes_per_sec"),
            layer.bandwidth_bytes_per_sec,
        )?;
        let gp = at_least_one(&field("p"), layer.grid_p)?;
        let gq = at_least_one(&field("q"), layer.grid_q)?;
        if gp > p || gq > q || gp < prev.0 || gq < prev.1 {
            return Err(InputError::new(format!(
                "layer grid {gp}x{gq} must lie between the previous layer's {}x{} and the \
                 whole grid {p}x{q}",
                prev.0, prev.1
            ))
            .at_field(field("p")));
        }
        let last = i + 1 == params.layers.len();
        if last && (gp != p || gq != q) {
            return Err(InputError::new(format!(
                "the last layer must span the whole {p}x{q} grid, not {gp}x{gq}"
            ))
            .at_field(field("p")));
        }
        let m1 = gp as f64 * n_new / pf;
        let n1 = gq as f64 * n_new / qf;
        layers.push(mcl_layer_comm(
            &layer.name,
            (bounds.0, m1),
            (bounds.1, n1),
            nbf,
            pf,
            qf,
            alpha,
            HPL_WORD_BYTES / bw,
        ));
        bounds = (m1, n1);
        prev = (gp, gq);
    }
    let compute = mcl_compute_s(n_new, nbf, pf, qf, gamma);
    let comm: f64 = layers.iter().map(|l| l.comm_s).sum();
    let total = compute + comm;
    Ok(MclHplPrediction {
        n_new,
        compute_s: compute,
        layers,
        comm_s: comm,
        total_s: total,
        flops_per_sec: hpl_flops(n as f64) / total,
    })
}

// ---- as registered models (`crate::MODELS`) ------------------------------------------------

use crate::params::{Evaluation, ParamSpec, ParamType, Params, opt, req};

/// The parameters of `hpl`.
pub const HPL_PARAMS: &[ParamSpec] = &[
    req("n", ParamType::Count, "matrix order N"),
    req("nb", ParamType::Count, "block size NB"),
    req("p", ParamType::Count, "process rows P"),
    req("q", ParamType::Count, "process columns Q"),
    req(
        "gamma_flops_per_sec",
        ParamType::Real,
        "flop rate per process γ",
    ),
    req("alpha_s", ParamType::Real, "latency α"),
    req(
        "bandwidth_bytes_per_sec",
        ParamType::Real,
        "bandwidth (β = 8 B / bandwidth)",
    ),
];

/// The parameters of `mcl-hpl`.
pub const MCL_HPL_PARAMS: &[ParamSpec] = &[
    req("n", ParamType::Count, "matrix order N"),
    req("nb", ParamType::Count, "block size NB"),
    req("p", ParamType::Count, "process rows P"),
    req("q", ParamType::Count, "process columns Q"),
    req(
        "gamma_flops_per_sec",
        ParamType::Real,
        "flop rate per process γ (eq. 10)",
    ),
    req(
        "l<k>_alpha_s",
        ParamType::Real,
        "latency of layer k = 1, 2, ... (innermost first)",
    ),
    req(
        "l<k>_bandwidth_bytes_per_sec",
        ParamType::Real,
        "bandwidth of layer k (β = 8 B / bandwidth)",
    ),
    opt(
        "l<k>_p",
        ParamType::Count,
        "process rows inside layer k; default 1, P for the last layer",
    ),
    opt(
        "l<k>_q",
        ParamType::Count,
        "process columns inside layer k; default 1, Q for the last layer",
    ),
];

/// `hpl`: [`hpl()`].
pub fn evaluate_hpl(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    let r = hpl(&HplParams {
        n: p.count("n")?,
        nb: p.count("nb")?,
        p: p.count("p")?,
        q: p.count("q")?,
        gamma_flops_per_sec: p.real("gamma_flops_per_sec")?,
        alpha_s: p.real("alpha_s")?,
        bandwidth_bytes_per_sec: p.real("bandwidth_bytes_per_sec")?,
    })?;
    ev.term("flops_per_sec", r.flops_per_sec, "flop/s");
    ev.term("total_s", r.total_s, "s");
    ev.term("compute_s", r.compute_s, "s");
    ev.term("bandwidth_s", r.bandwidth_s, "s");
    ev.term("latency_s", r.latency_s, "s");
    Ok(ev)
}

/// `mcl-hpl`: [`mcl_hpl`] over layers 1..=K, K the largest k of any `l<k>_` parameter given.
pub fn evaluate_mcl_hpl(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    let (pp, qq) = (p.count("p")?, p.count("q")?);
    let k_max = p.max_family_index();
    if k_max == 0 {
        return Err(p.missing("l1_alpha_s"));
    }
    let mut layers = Vec::new();
    for k in 1..=k_max {
        let last = k == k_max;
        let key = |f: &str| format!("l{k}_{f}");
        layers.push(MclLayer {
            name: format!("l{k}"),
            alpha_s: p.real(&key("alpha_s"))?,
            bandwidth_bytes_per_sec: p.real(&key("bandwidth_bytes_per_sec"))?,
            grid_p: p.opt_count(&key("p"))?.unwrap_or(if last { pp } else { 1 }),
            grid_q: p.opt_count(&key("q"))?.unwrap_or(if last { qq } else { 1 }),
        });
    }
    let r = mcl_hpl(&MclHplParams {
        n: p.count("n")?,
        nb: p.count("nb")?,
        p: pp,
        q: qq,
        gamma_flops_per_sec: p.real("gamma_flops_per_sec")?,
        layers,
    })?;
    ev.term("flops_per_sec", r.flops_per_sec, "flop/s");
    ev.term("total_s", r.total_s, "s");
    ev.term("compute_s", r.compute_s, "s");
    ev.term("comm_s", r.comm_s, "s");
    for l in &r.layers {
        ev.term(format!("{}_pivot_s", l.name), l.pivot_s, "s");
        ev.term(format!("{}_broadcast_s", l.name), l.broadcast_s, "s");
        ev.term(format!("{}_update_s", l.name), l.update_s, "s");
        ev.term(format!("{}_comm_s", l.name), l.comm_s, "s");
        ev.term(format!("{}_m_upper", l.name), l.m_bounds.1, "rows");
    }
    ev.term("n_new", r.n_new, "");
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs())
    }

    fn base() -> HplParams {
        HplParams {
            n: 1000,
            nb: 100,
            p: 2,
            q: 4,
            gamma_flops_per_sec: 1e9,
            alpha_s: 1e-5,
            bandwidth_bytes_per_sec: 8e8,
        }
    }

    #[test]
    fn hpl_hand_case() {
        // compute 2e9/(3·8·1e9) = 1/12 s; β = 1e-8 s/word: 1e-8·1e6·(6 + 4)/16 = 6.25e-3 s;
        // α: 1e-5·1000·(101·1 + 2)/100 = 1.03e-2 s.
        let r = hpl(&base()).unwrap();
        assert!(close(r.compute_s, 1.0 / 12.0, 1e-12));
        assert!(close(r.bandwidth_s, 6.25e-3, 1e-12));
        assert!(close(r.latency_s, 1.03e-2, 1e-12));
        assert!(close(r.flops_per_sec, hpl_flops(1000.0) / r.total_s, 1e-12));
        let e = hpl(&HplParams { nb: 0, ..base() }).unwrap_err();
        assert!(e.to_string().contains("nb"));
        assert!(
            hpl(&HplParams {
                gamma_flops_per_sec: 0.0,
                ..base()
            })
            .is_err()
        );
    }

    fn one_layer(b: &HplParams) -> MclHplParams {
        MclHplParams {
            n: b.n,
            nb: b.nb,
            p: b.p,
            q: b.q,
            gamma_flops_per_sec: b.gamma_flops_per_sec,
            layers: vec![MclLayer {
                name: "net".into(),
                alpha_s: b.alpha_s,
                bandwidth_bytes_per_sec: b.bandwidth_bytes_per_sec,
                grid_p: b.p,
                grid_q: b.q,
            }],
        }
    }

    #[test]
    fn one_layer_is_hpl_plus_lower_order_terms() {
        // Kim et al. 2021 eq. 30: with one layer the α and β terms are HPL's, plus the lower-order
        // ones: β(2NB + 4)·N·log P (pivot), -β·N·NB/(2P) (broadcast), +3β·N·NB/(2Q) (update).
        let b = base();
        let h = hpl(&b).unwrap();
        let m = mcl_hpl(&one_layer(&b)).unwrap();
        let (n, nb, p, q, beta): (f64, f64, f64, f64, f64) = (1000.0, 100.0, 2.0, 4.0, 1e-8);
        let lower = beta * (2.0 * nb + 4.0) * n * p.log2() - beta * n * nb / (2.0 * p)
            + 3.0 * beta * n * nb / (2.0 * q);
        assert!(close(m.comm_s, h.bandwidth_s + h.latency_s + lower, 1e-12));
        let extra = (nb * (3.0 * q + 3.0 * p + 6.0) * n * n / (6.0 * p * q)
            + nb * nb * ((3.0 * p + 2.0) - (2.0 * p + 3.0) * q) * n / (6.0 * p * q))
            / 1e9;
        assert!(close(m.compute_s, h.compute_s + extra, 1e-12));
    }

    #[test]
    fn layers_split_the_communication() {
        // Two layers with the same α, β: the α parts add up to the one-layer α parts, and the
        // β parts of pivot and update too (they are linear in the boundaries or telescoping).
        let b = base();
        let one = mcl_hpl(&one_layer(&b)).unwrap();
        let mut two = one_layer(&b);
        two.layers.insert(
            0,
            MclLayer {
                name: "node".into(),
                alpha_s: b.alpha_s,
                bandwidth_bytes_per_sec: b.bandwidth_bytes_per_sec,
                grid_p: 1,
                grid_q: 2,
            },
        );
        let t = mcl_hpl(&two).unwrap();
        assert_eq!(t.layers.len(), 2);
        assert_eq!(t.layers[0].m_bounds, (0.0, 500.0));
        assert_eq!(t.layers[0].n_bounds, (0.0, 500.0));
        assert_eq!(t.layers[1].m_bounds, (500.0, 1000.0));
        let pivot: f64 = t.layers.iter().map(|l| l.pivot_s).sum();
        assert!(close(pivot, one.layers[0].pivot_s, 1e-12));
        // The quadratic β terms split as Δ² per layer: less than the one-layer total.
        let bc: f64 = t.layers.iter().map(|l| l.broadcast_s).sum();
        assert!(bc < one.layers[0].broadcast_s);
        // A faster inner layer makes the whole faster.
        two.layers[0].bandwidth_bytes_per_sec *= 10.0;
        assert!(mcl_hpl(&two).unwrap().total_s < t.total_s);
    }

    #[test]
    fn layer_grids_are_checked() {
        let b = base();
        let mut bad = one_layer(&b);
        bad.layers[0].grid_q = 2;
        let e = mcl_hpl(&bad).unwrap_err();
        assert!(e.to_string().contains("whole"), "{e}");
        let mut none = one_layer(&b);
        none.layers.clear();
        assert!(mcl_hpl(&none).is_err());
    }

    #[test]
    fn helpers() {
        assert_eq!(mcl_n_new(44000, 384), 44160.0);
        assert_eq!(mcl_n_new(768, 384), 768.0);
        // P100: 732.2 GB/s over 3584 cores = 204.3 MB/s; × 64 QW = 13.07 GB/s (Kim et al. 2021 §4.1).
        let per_core = bandwidth_per_core_bytes_per_sec(732.2e9, 3584);
        assert!(close(per_core, 204.3e6, 1e-3));
        let eq = equivalent_bandwidth_bytes_per_sec(732.2e9, 3584, 64);
        assert!(close(eq, 13.07e9, 1e-3));
        assert!(close(latency_from_cycles_s(1029.0, 1.029e9), 1e-6, 1e-12));
        assert_eq!(rpeak_flops_per_sec(10, 2.0, 1e9), 2e10);
        assert_eq!(square_grid(12), (3, 4));
        assert_eq!(square_grid(7), (1, 7));
        assert_eq!(square_grid(16), (4, 4));
        assert_eq!(square_grid(0), (1, 1));
    }
}
