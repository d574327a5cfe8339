//! HPL's conventions, shared by the simulated HPL and by the analytic HPL models: the
//! operation count a run is credited with and the process grid HPL's guideline picks.

/// The operation count HPL credits to a run of order `n`: `2N³/3 + 3N²/2` (Kim et al. 2021 §2).
pub fn hpl_flops(n: f64) -> f64 {
    2.0 * n * n * n / 3.0 + 1.5 * n * n
}

/// The sub-grid of `ranks` processes "as square as possible" with `p ≤ q` (Kim et al. 2021
/// §3.1.4.2, following HPL's guideline): the largest divisor `p ≤ √ranks`, `q = ranks/p`.
pub fn square_grid(ranks: u64) -> (u64, u64) {
    let ranks = ranks.max(1);
    let mut p = (ranks as f64).sqrt() as u64;
    while p > 1 && !ranks.is_multiple_of(p) {
        p -= 1;
    }
    let p = p.max(1);
    (p, ranks / p)
}
