//! HPL's panel factorisation (`HPL_pdfact`): the recursive factorisation (`RFACT`: left-looking,
//! Crout or right-looking, `HPL_pdrpan*T`) that splits the panel in `NDIV` parts until at most
//! `NBMIN` columns remain, then factorises those with a non-recursive variant (`PFACT`,
//! `HPL_pdpan*T`), one column at a time, each column starting with the pivot search along the
//! process column (`HPL_pdmxswp`). Flops are counted as SMPI's kernel model counts them (DGEMM
//! `2MNK`, DTRSM `M·N²` from the right, DGER and DGEMV `2MN`, DSCAL `N`, DAXPY `2N`, DTRSV `N²`).

use serde::Deserialize;

use super::exec::{Script, Tag};
use crate::RankId;

/// One of HPL's three factorisation orders (`PFACT` and `RFACT`: 0 = left, 1 = Crout,
/// 2 = right).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Factorisation {
    /// Left-looking.
    Left,
    /// Crout.
    Crout,
    /// Right-looking.
    Right,
}

/// The panel factorisation's algorithm (HPL.dat's `PFACT`, `NBMIN`, `NDIV`, `RFACT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PanelAlgo {
    pub pfact: Factorisation,
    pub rfact: Factorisation,
    pub nbmin: u64,
    pub ndiv: u64,
}

/// The flops one rank performs between successive pivot searches while factorising its part of a
/// panel of width `n`: `n + 1` numbers, the first before the first search, the last after the
/// last. `m` is the rank's rows of the panel (`mp`), `curr` whether it holds the panel's
/// diagonal block (its candidate rows shrink by one per column).
pub(super) fn segments(algo: &PanelAlgo, m: u64, n: u64, curr: bool) -> Vec<f64> {
    let mut seg = Vec::with_capacity(n as usize + 1);
    seg.push(0.0);
    recursive(algo, m, n, curr, &mut seg);
    seg
}

fn f(x: u64) -> f64 {
    x as f64
}

/// The segment being accumulated.
fn last(seg: &mut [f64]) -> &mut f64 {
    seg.last_mut().expect("segments start with one")
}

/// `HPL_pdrpanllT`, `HPL_pdrpancrT`, `HPL_pdrpanrlT` on `m` rows (local) and `n` columns.
fn recursive(algo: &PanelAlgo, m: u64, n: u64, curr: bool, seg: &mut Vec<f64>) {
    let nbmin = algo.nbmin.max(1);
    if n <= nbmin {
        return leaf(algo.pfact, m, n, curr, seg);
    }
    let ndiv = algo.ndiv.max(2);
    // The sub-panel width: ⌈⌈N / NBMIN⌉ / NDIV⌉ · NBMIN.
    let nb = n.div_ceil(nbmin).div_ceil(ndiv) * nbmin;
    let (mut m, mut left, mut jj, mut jb) = (m, n, 0u64, nb.min(n));
    loop {
        left -= jb;
        match algo.rfact {
            Factorisation::Left => {
                // DTRSM (jb × jj from the right), then DGEMM m × jb × jj, then recurse.
                *last(seg) += f(jb) * f(jj) * f(jj) + 2.0 * f(m) * f(jb) * f(jj);
                recursive(algo, m, jb, curr, seg);
                if curr {
                    m -= jb;
                }
            }
            Factorisation::Crout => {
                // DGEMM m × jb × jj, recurse, then the L1 block below: DGEMM left × jb × jj
                // and DTRSM (left × jb from the right).
                *last(seg) += 2.0 * f(m) * f(jb) * f(jj);
                recursive(algo, m, jb, curr, seg);
                if left > 0 {
                    *last(seg) += 2.0 * f(left) * f(jb) * f(jj) + f(left) * f(jb) * f(jb);
                }
                if curr {
                    m -= jb;
                }
            }
            Factorisation::Right => {
                // Recurse, DTRSM (left × jb from the right), then DGEMM m × left × jb on the
                // rows below.
                recursive(algo, m, jb, curr, seg);
                *last(seg) += f(left) * f(jb) * f(jb);
                if curr {
                    m -= jb;
                }
                *last(seg) += 2.0 * f(m) * f(left) * f(jb);
            }
        }
        jj += jb;
        jb = left.min(nb);
        if left == 0 {
            break;
        }
    }
}

/// `HPL_pdpanllT`, `HPL_pdpancrT`, `HPL_pdpanrlT`: `n` columns, one pivot search each.
fn leaf(pfact: Factorisation, m: u64, n: u64, curr: bool, seg: &mut Vec<f64>) {
    // Candidate rows below the pivot: the current row's shrink by one per column.
    let mut mm1 = if curr { m.saturating_sub(1) } else { m };
    let mut kk = 0u64;
    for col in 0..n {
        let rest = n - 1 - col; // columns of the leaf right of this one (`Nm1`)
        seg.push(0.0); // the pivot search of this column
        let s = seg.last_mut().expect("a segment");
        // DSCAL of the pivot column.
        *s += f(mm1);
        if rest > 0 {
            match pfact {
                Factorisation::Left => {
                    // DTRSV kk×kk (kk = col + 1), DGEMV mm1 × kk.
                    let k = col + 1;
                    *s += f(k) * f(k) + 2.0 * f(mm1) * f(k);
                }
                Factorisation::Crout => {
                    // DGEMV rest × kk on L1 (after the first column), DGEMV mm1 × (kk + 1).
                    if kk > 0 {
                        *s += 2.0 * f(rest) * f(kk);
                    }
                    *s += 2.0 * f(mm1) * f(kk + 1);
                }
                Factorisation::Right => {
                    // DAXPY of the next column, DGER mm1 × (rest − 1).
                    *s += 2.0 * f(mm1);
                    if rest > 1 {
                        *s += 2.0 * f(mm1) * f(rest - 1);
                    }
                }
            }
            if curr {
                mm1 = mm1.saturating_sub(1);
            }
            kk += 1;
        }
    }
}

/// Bytes of HPL's pivot-search messages for a panel of width `jb`: the candidate row and 4
/// numbers (`jb + 4` doubles), or that plus the diagonal block's top row (`2·jb + 4`), and the
/// top row alone (`jb`).
fn sizes(jb: u64) -> (f64, f64, f64) {
    (
        8.0 * (jb + 4) as f64,
        8.0 * (2 * jb + 4) as f64,
        8.0 * jb as f64,
    )
}

/// Largest power of two ≤ `x` (x ≥ 1) and its exponent.
pub(super) fn pow2_below(x: u64) -> (u64, u32) {
    let e = 63 - x.max(1).leading_zeros();
    (1 << e, e)
}

/// `HPL_pdmxswp`'s messages for one column, for the process at distance `mydist` below the
/// panel's current row in a column of `p` processes (`rank(d)`: the rank at distance `d`):
/// the processes beyond the largest power of two `ip2` fold their candidate into a partner,
/// the first `ip2` exchange in `log2 ip2` rounds (the holder of the top row sends it along),
/// the top row is broadcast among the folded ones, and the result is sent back to them.
pub(super) fn pivot_search(
    s: &mut Script,
    p: u64,
    mydist: u64,
    jb: u64,
    tag: Tag,
    rank: &dyn Fn(u64) -> RankId,
) {
    if p <= 1 {
        return;
    }
    let (cnt, cnt0, top) = sizes(jb);
    let (ip2, hdim) = pow2_below(p);
    let extra = p - ip2;
    let fold_partner = (extra > 0).then_some(mydist ^ ip2).filter(|&x| x < p);
    if let Some(partner) = fold_partner {
        if mydist & ip2 != 0 {
            if mydist == ip2 {
                s.sendrecv(rank(partner), tag, cnt, top);
            } else {
                s.hpl_send(rank(partner), tag, cnt);
            }
        } else if mydist == 0 {
            s.sendrecv(rank(partner), tag, top, cnt);
        } else {
            s.hpl_recv(rank(partner), tag, cnt);
        }
    }
    if mydist < ip2 {
        for k in 0..hdim {
            let partner = mydist ^ (1 << k);
            let (sc, rc) = if mydist >> (k + 1) == 0 {
                if mydist >> k == 0 {
                    (cnt0, cnt)
                } else {
                    (cnt, cnt0)
                }
            } else {
                (cnt, cnt)
            };
            s.sendrecv(rank(partner), tag, sc, rc);
        }
    } else if extra > 1 {
        // The top row, from the process at distance ip2 to the other folded ones (binomial).
        let root = ip2;
        let me = mydist - root;
        binomial(extra, me, |partner, receive| {
            if receive {
                s.hpl_recv(rank(root + partner), tag, top);
            } else {
                s.hpl_send(rank(root + partner), tag, top);
            }
        });
    }
    if let Some(partner) = fold_partner {
        if mydist & ip2 != 0 {
            s.hpl_recv(rank(partner), tag, cnt);
        } else {
            s.hpl_send(rank(partner), tag, cnt);
        }
    }
}

/// The time of one column's pivot search (the messages [`pivot_search`] writes) alone on the
/// network: a clock per process (by distance below the current row), each receive completing
/// at the later of its receiver's clock and its sender's clock plus `msg(from, to, bytes)`; the
/// latest clock at the end.
pub(super) fn pivot_search_secs(p: u64, jb: u64, msg: &dyn Fn(u64, u64, f64) -> f64) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let (cnt, cnt0, top) = sizes(jb);
    let (ip2, hdim) = pow2_below(p);
    let mut t = vec![0.0f64; p as usize];
    let at = |d: u64| d as usize;
    // The processes beyond ip2 fold their candidate in; the one at ip2 gets the top row.
    for d in ip2..p {
        let q = d - ip2;
        let (td, tq) = (t[at(d)], t[at(q)]);
        t[at(q)] = tq.max(td + msg(d, q, cnt));
        if q == 0 {
            t[at(d)] = td.max(tq + msg(q, d, top));
        }
    }
    // The exchange rounds among the first ip2 (the holder of the top row sends it along).
    for k in 0..hdim {
        let prev = t.clone();
        for d in 0..ip2 {
            let q = d ^ (1 << k);
            let bytes = if q >> (k + 1) == 0 && q >> k == 0 {
                cnt0
            } else {
                cnt
            };
            t[at(d)] = prev[at(d)].max(prev[at(q)] + msg(q, d, bytes));
        }
    }
    // The top row among the folded ones (binomial from ip2; parents come first), then the
    // result back to them.
    let extra = p - ip2;
    for me in 1..extra {
        let mut parent = 0;
        binomial(extra, me, |partner, receive| {
            if receive {
                parent = partner;
            }
        });
        let (d, from) = (ip2 + me, ip2 + parent);
        t[at(d)] = t[at(d)].max(t[at(from)] + msg(from, d, top));
    }
    for d in ip2..p {
        let q = d - ip2;
        t[at(d)] = t[at(d)].max(t[at(q)] + msg(q, d, cnt));
    }
    t.into_iter().fold(0.0, f64::max)
}

/// HPL's binomial tree from process 0 of `size` (as `HPL_pdmxswp` and `HPL_pdlaswp00T` write
/// it for the folded processes): for process `me`, in order, `(partner, true)` to receive from
/// `partner`, `(partner, false)` to send to it.
pub(super) fn binomial(size: u64, me: u64, mut step: impl FnMut(u64, bool)) {
    let (mut bit, mut mask) = (1u64, 1u64);
    let mut k = size - 1;
    while k > 1 {
        k >>= 1;
        bit <<= 1;
        mask = (mask << 1) + 1;
    }
    loop {
        mask ^= bit;
        if me & mask == 0 {
            let partner = me ^ bit;
            if me & bit != 0 {
                step(partner, true);
            } else if partner < size {
                step(partner, false);
            }
        }
        bit >>= 1;
        if bit == 0 {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::hpl::exec::Act;

    fn algo(pfact: Factorisation, rfact: Factorisation) -> PanelAlgo {
        PanelAlgo {
            pfact,
            rfact,
            nbmin: 4,
            ndiv: 2,
        }
    }

    const ORDERS: [Factorisation; 3] = [
        Factorisation::Left,
        Factorisation::Crout,
        Factorisation::Right,
    ];

    #[test]
    fn one_segment_per_pivot_search_plus_one() {
        for pf in ORDERS {
            for rf in ORDERS {
                assert_eq!(segments(&algo(pf, rf), 1000, 384, true).len(), 385);
                assert_eq!(segments(&algo(pf, rf), 0, 7, false).len(), 8);
            }
        }
    }

    #[test]
    fn a_leaf_of_four_columns_by_hand() {
        // n = 4 ≤ NBMIN: the leaf alone. Right-looking, m = 10 rows, not the current row
        // (Mm1 = 10 throughout): per column DSCAL 10, then for the 3 columns with a column to
        // their right DAXPY 20 and DGER 2·10·(rest − 1) = 40, 20, 0.
        let s = segments(
            &algo(Factorisation::Right, Factorisation::Crout),
            10,
            4,
            false,
        );
        assert_eq!(
            s,
            vec![
                0.0,
                10.0 + 20.0 + 40.0,
                10.0 + 20.0 + 20.0,
                10.0 + 20.0,
                10.0
            ]
        );
        // The current row loses a candidate per column: Mm1 = 9, 8, 7, 6.
        let s = segments(
            &algo(Factorisation::Right, Factorisation::Crout),
            10,
            4,
            true,
        );
        assert_eq!(
            s,
            vec![0.0, 9.0 + 18.0 + 36.0, 8.0 + 16.0 + 16.0, 7.0 + 14.0, 6.0]
        );
    }

    #[test]
    fn the_panel_lu_flop_count_for_any_order() {
        // Whatever the order, the LU of an m × n panel (current row, so the n × n top block is
        // triangular) costs m·n² − n³/3 flops up to lower-order terms (n² and m·n): within
        // 0.5 % for m = 1000, n = 384.
        let (m, n) = (1000u64, 384u64);
        let lu = (m * n * n) as f64 - (n * n * n) as f64 / 3.0;
        for pf in ORDERS {
            for rf in ORDERS {
                let total: f64 = segments(&algo(pf, rf), m, n, true).iter().sum();
                assert!(
                    ((total - lu) / lu).abs() < 5e-3,
                    "{pf:?}/{rf:?}: {total} vs {lu}"
                );
            }
        }
    }

    /// The messages of one column's pivot search, as (send to, receive from) distances.
    fn pattern(p: u64, me: u64) -> Vec<(char, u64)> {
        let mut s = Script::default();
        pivot_search(&mut s, p, me, 8, 0, &|d| RankId(d as u32));
        s.0.iter()
            .filter_map(|a| match *a {
                Act::Send { to, .. } => Some(('s', u64::from(to.0))),
                Act::Recv { from, .. } => Some(('r', u64::from(from.0))),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn pivot_search_patterns_by_hand() {
        // P = 2: one exchange. P = 4: two rounds (partner d^1, then d^2).
        assert_eq!(pattern(2, 0), [('r', 1), ('s', 1)]);
        assert_eq!(pattern(4, 2), [('r', 3), ('s', 3), ('r', 0), ('s', 0)]);
        // P = 3: 2 folds into 0 (exchange), 0 and 1 exchange, 0 sends the result back to 2.
        assert_eq!(pattern(3, 2), [('r', 0), ('s', 0), ('r', 0)]);
        assert_eq!(
            pattern(3, 0),
            [('r', 2), ('s', 2), ('r', 1), ('s', 1), ('s', 2)]
        );
        assert_eq!(pattern(3, 1), [('r', 0), ('s', 0)]);
        // P = 1: nothing.
        assert!(pattern(1, 0).is_empty());
    }

    #[test]
    fn pivot_search_time_by_hand() {
        // Every message 1 s: P = 2, 4, 32 take their log2 P rounds. P = 3: 2 folds into 0
        // (0 at 1, 2 gets the top row at 1), 0 and 1 exchange (1 at 2, 0 at 1), 0 sends the
        // result back to 2 (at 2): 2 s.
        let one = |_: u64, _: u64, _: f64| 1.0;
        assert_eq!(pivot_search_secs(1, 8, &one), 0.0);
        assert_eq!(pivot_search_secs(2, 8, &one), 1.0);
        assert_eq!(pivot_search_secs(4, 8, &one), 2.0);
        assert_eq!(pivot_search_secs(3, 8, &one), 2.0);
        assert_eq!(pivot_search_secs(32, 8, &one), 5.0);
        // Time = bytes, jb = 8: a candidate is 8·(8 + 4) = 96 B, with the top row 8·20 = 160 B,
        // the top row alone 64 B. P = 2: the longer of 160 and 96.
        let bytes = |_: u64, _: u64, b: f64| b;
        assert_eq!(pivot_search_secs(2, 8, &bytes), 160.0);
        // P = 5 (ip2 = 4, process 4 folded): fold-in t0 = 96, t4 = 64. Round 1 (0↔1, 2↔3;
        // 0 holds the top row): t0 = 96, t1 = 96 + 160 = 256, t2 = t3 = 96. Round 2 (0↔2,
        // 1↔3; 0 and 1 hold it): t0 = 96 + 96 = 192, t1 = 256, t2 = 96 + 160 = 256,
        // t3 = 256 + 160 = 416. Back to 4: 192 + 96 = 288. Latest: 416.
        assert_eq!(pivot_search_secs(5, 8, &bytes), 416.0);
    }

    #[test]
    fn binomial_tree_of_five() {
        // From 0 over 5: 0 → 4, then 0 → 2, then 0 → 1, 2 → 3.
        let steps = |me: u64| {
            let mut v = Vec::new();
            binomial(5, me, |p, r| v.push((p, r)));
            v
        };
        assert_eq!(steps(0), [(4, false), (2, false), (1, false)]);
        assert_eq!(steps(4), [(0, true)]);
        assert_eq!(steps(2), [(0, true), (3, false)]);
        assert_eq!(steps(3), [(2, true)]);
    }
}
