//! HPL's 2-D block-cyclic distribution: who owns which rows and columns, and where each process
//! of the `P × Q` grid runs.

use serde::Deserialize;

use crate::RankId;

/// How ranks are laid on the `P × Q` grid (HPL's `PMAP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankOrder {
    /// `rank = r·Q + c` (HPL's default, `PMAP = 0`).
    #[default]
    #[serde(alias = "row")]
    RowMajor,
    /// `rank = c·P + r` (`PMAP = 1`).
    #[serde(alias = "column")]
    ColumnMajor,
}

/// Number of global indices `i` in `[0, x)` whose block `i / nb` is dealt to `coord` out of
/// `nprocs` (ScaLAPACK's `NUMROC` with first block on process 0).
fn owned_upto(x: u64, nb: u64, coord: u64, nprocs: u64) -> u64 {
    let blocks = x / nb;
    let rem = x % nb;
    let cycles = blocks / nprocs;
    let extra = blocks % nprocs;
    cycles * nb + if coord < extra { nb } else { 0 } + if coord == extra { rem } else { 0 }
}

/// Number of global indices in `[lo, hi)` owned by `coord`.
pub fn owned(lo: u64, hi: u64, nb: u64, coord: u64, nprocs: u64) -> u64 {
    if hi <= lo {
        return 0;
    }
    owned_upto(hi, nb, coord, nprocs) - owned_upto(lo, nb, coord, nprocs)
}

/// The matrix and its distribution: `N × (N + 1)` doubles (HPL factorises `[A | b]`) in
/// `NB × NB` blocks over a `P × Q` grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Grid {
    pub n: u64,
    pub nb: u64,
    pub p: u64,
    pub q: u64,
    pub order: RankOrder,
}

impl Grid {
    /// The rank of process `(r, c)`.
    pub fn rank(&self, r: u64, c: u64) -> RankId {
        RankId(match self.order {
            RankOrder::RowMajor => (r * self.q + c) as u32,
            RankOrder::ColumnMajor => (c * self.p + r) as u32,
        })
    }

    /// Number of panels, `⌈N / NB⌉`.
    pub fn panels(&self) -> u64 {
        self.n.div_ceil(self.nb)
    }

    /// First column and width of panel `k`.
    pub fn panel(&self, k: u64) -> (u64, u64) {
        let j = k * self.nb;
        (j, self.nb.min(self.n - j))
    }

    /// Rows of `[j, N)` held by process row `r` (HPL's `mp` of a panel starting at row `j`).
    pub fn rows_from(&self, j: u64, r: u64) -> u64 {
        owned(j, self.n, self.nb, r, self.p)
    }

    /// Columns of `[j, N + 1)` held by process column `c` (the right-hand side is column `N`).
    pub fn cols_from(&self, j: u64, c: u64) -> u64 {
        owned(j, self.n + 1, self.nb, c, self.q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_counts_match_a_direct_count() {
        for &(lo, hi, nb, np) in &[(0u64, 10u64, 3u64, 2u64), (4, 23, 4, 3), (7, 7, 2, 2)] {
            for c in 0..np {
                let direct = (lo..hi).filter(|i| (i / nb) % np == c).count() as u64;
                assert_eq!(owned(lo, hi, nb, c, np), direct, "{lo} {hi} {nb} {c} {np}");
            }
        }
    }

    #[test]
    fn ranks_by_pmap() {
        let g = Grid {
            n: 10,
            nb: 2,
            p: 2,
            q: 3,
            order: RankOrder::RowMajor,
        };
        assert_eq!(g.rank(1, 2), RankId(5));
        let g = Grid {
            order: RankOrder::ColumnMajor,
            ..g
        };
        assert_eq!(g.rank(1, 2), RankId(5));
        assert_eq!(g.rank(0, 1), RankId(2));
        // N = 10, NB = 4: panels of 4, 4, 2; the right-hand side is column 10, in block 2.
        let g = Grid { nb: 4, ..g };
        assert_eq!(g.panels(), 3);
        assert_eq!(g.panel(2), (8, 2));
        assert_eq!(g.cols_from(8, 2), 3);
        assert_eq!(g.rows_from(8, 0), 2);
    }
}
