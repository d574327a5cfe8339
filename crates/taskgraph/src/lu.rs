//! Tiled LU factorization without pivoting (A = L·U), as StarPU's
//! `examples/lu/xlu_implicit.c` submits it.

use super::cholesky::{gemm_flops, trsm_flops};
use super::graph::{Access, AccessMode, Handle, HandleId, TaskGraph, TaskGraphBuilder, Tile};
use super::{Precision, Priorities, Tiling};
use hetsim_core::InputError;

/// The four performance-model symbols of the LU example for one precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LuCodelets {
    /// Diagonal-tile factorization.
    pub getrf: &'static str,
    /// Solve with the unit lower triangle, giving a tile of U (right of the diagonal tile).
    pub trsm_ll: &'static str,
    /// Solve with the upper triangle from the right, giving a tile of L (below the diagonal).
    pub trsm_ru: &'static str,
    /// Trailing update.
    pub gemm: &'static str,
}

/// StarPU's LU symbols: `STARPU_LU(name)` prefixes `starpu_slu_` in `slu_implicit.c` (single)
/// and `starpu_dlu_` in `dlu_implicit.c` (double). The `_atlas`, `_goto` and `_openblas` variants
/// in the sample directory are copies of these (git symlinks in StarPU).
pub fn lu_codelets(precision: Precision) -> LuCodelets {
    match precision {
        Precision::Single => LuCodelets {
            getrf: "starpu_slu_lu_model_getrf",
            trsm_ll: "starpu_slu_lu_model_trsm_ll",
            trsm_ru: "starpu_slu_lu_model_trsm_ru",
            gemm: "starpu_slu_lu_model_gemm",
        },
        Precision::Double => LuCodelets {
            getrf: "starpu_dlu_lu_model_getrf",
            trsm_ll: "starpu_dlu_lu_model_trsm_ll",
            trsm_ru: "starpu_dlu_lu_model_trsm_ru",
            gemm: "starpu_dlu_lu_model_gemm",
        },
    }
}

/// Flops of an unpivoted `getrf` on an nb×nb tile: 2nb³/3 (leading term).
///
/// StarPU's LU example sets no per-task flops (the LU sample files hold 0 in their `flops`
/// column), so the standard counts are used: getrf 2nb³/3, each trsm nb²·(nb + 1) as in the
/// Cholesky files (nb³ to leading order), gemm 2nb³. Their sum is ≈ 2n³/3, the total the
/// example divides by to print GFlop/s.
pub fn getrf_flops(nb: u64) -> f64 {
    let n = nb as f64;
    2.0 * n * n * n / 3.0
}

pub(crate) fn task_count(t: u64) -> u64 {
    let t1 = t.saturating_sub(1);
    t + t * t1 + t1 * t * (2 * t).saturating_sub(1) / 6
}

/// Tiled LU without pivoting of an `n`×`n` matrix in `nb`×`nb` tiles.
///
/// Submission order, accesses and priorities follow StarPU's `examples/lu/xlu_implicit.c`
/// (`dw_codelet_facto_v3`, 2010-2023 revision: "bottom-level-based prio"), with T tiles per side
/// and A(i,j) the tile in row i, column j:
///
/// ```text
/// for k in 0..T:
///     getrf(k)       RW A(k,k)                         priority 3T − 3k
///     for i in k+1..T:
///         trsm_ll(k,i)  R A(k,k), RW A(k,i)            priority 3T − 2k − i
///         trsm_ru(k,i)  R A(k,k), RW A(i,k)            priority 3T − 2k − i
///     for i in k+1..T:
///         for j in k+1..T:
///             gemm(k,i,j)  R A(i,k), R A(k,j), RW A(i,j)   priority 3T − k − i − j
/// ```
///
/// (StarPU's code indexes sub-data as (column, row) because it splits columns first; the tiles
/// above are the same ones in (row, column) order.) StarPU 1.3 gave `STARPU_MAX_PRIO` to getrf,
/// to trsm_ll(k,k+1), trsm_ru(k,k+1) and gemm(k,k+1,k+1), and the default to every other task:
/// [`lu_with`] and [`Priorities::StarPu13`].
///
/// Every revision calls `starpu_data_wont_use(A(k,k))` after the trsm loop of step k, and
/// after its gemm loop `starpu_data_wont_use` on A(i,k) then A(k,i) for each i > k; the graph
/// carries these as [`TaskGraphBuilder::wont_use`] hints at the same places.
pub fn lu(n: u64, nb: u64, precision: Precision) -> Result<TaskGraph, InputError> {
    lu_with(n, nb, precision, Priorities::StarPu14)
}

/// [`lu`] with the priorities of StarPU release `priorities`. StarPU 1.3's highest priority is
/// 1 here and its default 0: only their order matters to a scheduler.
pub fn lu_with(
    n: u64,
    nb: u64,
    precision: Precision,
    priorities: Priorities,
) -> Result<TaskGraph, InputError> {
    let tiling = Tiling::new(n, nb, precision, task_count)?;
    let t = tiling.tiles;
    let tu = u64::from(t);
    let ntasks = task_count(tu) as usize;
    let ngemm = ntasks as u64 - tu - tu * (tu - 1);
    let naccesses = (tu + 2 * tu * (tu - 1) + 3 * ngemm) as usize;
    let mut b = TaskGraphBuilder::with_capacity(ntasks, (tu * tu) as usize, naccesses);

    let names = lu_codelets(precision);
    let getrf = b.codelet(names.getrf)?;
    // StarPU's `cl11` (`examples/lu/xlu_kernels.c`) has no `STARPU_CUDA_ASYNC` (its CUDA
    // kernel synchronises on the stream for every pivot), so in a SimGrid build getrf runs
    // on the driver's thread; `cl12`, `cl21` and `cl22` carry the flag.
    b.gpu_synchronous(getrf);
    let trsm_ll = b.codelet(names.trsm_ll)?;
    let trsm_ru = b.codelet(names.trsm_ru)?;
    let gemm = b.codelet(names.gemm)?;

    // All T² tiles, row-major: A(i, j) is handle i·T + j.
    for i in 0..t {
        for j in 0..t {
            b.add_handle(Handle {
                size_bytes: tiling.tile_bytes,
                dims: Some(tiling.dims()),
                tile: Some(Tile {
                    matrix: 'A',
                    row: i,
                    col: j,
                }),
                ..Handle::bytes(tiling.tile_bytes)
            })?;
        }
    }
    let a = |i: u32, j: u32| HandleId(i * t + j);
    use AccessMode::{R, RW};

    let (f_getrf, f_trsm, f_gemm) = (getrf_flops(nb), trsm_flops(nb), gemm_flops(nb));
    // Priorities are at most 3T with T ≤ 2^20 (task limit): no i32 overflow.
    let three_t = 3 * t as i32;
    for k in 0..t {
        let ki = k as i32;
        // StarPU 1.3's critical tasks at 1, the others at 0.
        let v13 = priorities == Priorities::StarPu13;
        let getrf_prio = if v13 { 1 } else { three_t - 3 * ki };
        b.submit(getrf, f_getrf, getrf_prio, &[Access::new(a(k, k), RW)])?;
        for i in k + 1..t {
            let prio = if v13 {
                i32::from(i == k + 1)
            } else {
                three_t - 2 * ki - i as i32
            };
            b.submit(
                trsm_ll,
                f_trsm,
                prio,
                &[Access::new(a(k, k), R), Access::new(a(k, i), RW)],
            )?;
            b.submit(
                trsm_ru,
                f_trsm,
                prio,
                &[Access::new(a(k, k), R), Access::new(a(i, k), RW)],
            )?;
        }
        // xlu_implicit.c: `starpu_data_wont_use` on the diagonal tile once the panel is
        // submitted.
        b.wont_use(a(k, k))?;
        for i in k + 1..t {
            for j in k + 1..t {
                let prio = if v13 {
                    i32::from(i == k + 1 && j == k + 1)
                } else {
                    three_t - ki - i as i32 - j as i32
                };
                b.submit(
                    gemm,
                    f_gemm,
                    prio,
                    &[
                        Access::new(a(i, k), R),
                        Access::new(a(k, j), R),
                        Access::new(a(i, j), RW),
                    ],
                )?;
            }
        }
        // xlu_implicit.c: after the updates of step k, `starpu_data_wont_use` on each panel
        // tile, StarPU's sub-data (k, i) then (i, k): A(i,k), then A(k,i).
        for i in k + 1..t {
            b.wont_use(a(i, k))?;
            b.wont_use(a(k, i))?;
        }
    }
    debug_assert_eq!(b.num_tasks(), ntasks);
    // StarPU's `lu_implicit_example` partitions its matrix in two levels
    // (`starpu_data_map_filters`): it acquires the whole matrix, then each of its t blocks.
    b.startup_acquires(t + 1);
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskId;

    /// Only getrf is synchronous on GPUs, as in StarPU's `xlu_kernels.c`.
    #[test]
    fn only_getrf_is_gpu_synchronous() {
        let g = lu(960 * 3, 960, Precision::Single).unwrap();
        let sync: Vec<_> = g.gpu_synchronous_codelets().collect();
        assert_eq!(sync, [lu_codelets(Precision::Single).getrf]);
    }

    #[test]
    fn names_per_precision() {
        assert_eq!(
            lu_codelets(Precision::Single).trsm_ru,
            "starpu_slu_lu_model_trsm_ru"
        );
        assert_eq!(
            lu_codelets(Precision::Double).getrf,
            "starpu_dlu_lu_model_getrf"
        );
    }

    #[test]
    fn model_sizes_match_sample_files() {
        // starpu_slu_lu_model_trsm_ll.mirage: size 819200 = 2·320²·4;
        // starpu_dlu_lu_model_getrf.mirage: size 819200 = 320²·8.
        let g = lu(640, 320, Precision::Single).unwrap();
        assert_eq!(g.task(TaskId(1)).model_size_bytes(), 819_200);
        let g = lu(640, 320, Precision::Double).unwrap();
        assert_eq!(g.task(TaskId(0)).model_size_bytes(), 819_200);
    }

    /// Where `xlu_implicit.c` calls `starpu_data_wont_use`, by hand for T = 3 tiles: step 0
    /// hints A(0,0), then A(1,0), A(0,1), A(2,0), A(0,2); step 1 hints A(1,1), then A(2,1),
    /// A(1,2); step 2 hints A(2,2).
    #[test]
    fn wont_use_hints_follow_xlu_implicit() {
        let g = lu(3, 1, Precision::Single).unwrap();
        let tile = |h: HandleId| (h.0 / 3, h.0 % 3);
        let hints: Vec<(u32, u32)> = g.wont_use_hints().iter().map(|w| tile(w.handle)).collect();
        assert_eq!(
            hints,
            [
                (0, 0),
                (1, 0),
                (0, 1),
                (2, 0),
                (0, 2),
                (1, 1),
                (2, 1),
                (1, 2),
                (2, 2)
            ]
        );
    }

    #[test]
    fn two_by_two_by_hand() {
        let g = lu(2, 1, Precision::Double).unwrap();
        // getrf(0), trsm_ll(0,1), trsm_ru(0,1), gemm(0,1,1), getrf(1)
        let names: Vec<_> = g.task_ids().map(|t| g.task_codelet_name(t)).collect();
        let c = lu_codelets(Precision::Double);
        assert_eq!(names, vec![c.getrf, c.trsm_ll, c.trsm_ru, c.gemm, c.getrf]);
        let prios: Vec<_> = g.tasks().iter().map(|t| t.priority).collect();
        assert_eq!(prios, vec![6, 5, 5, 4, 3]);
        let mut edges = Vec::new();
        for t in g.task_ids() {
            for s in g.successors(t) {
                edges.push((t.0, s.0));
            }
        }
        assert_eq!(edges, vec![(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]);
    }

    /// StarPU's `lu_implicit_example` partitions its matrix as the Cholesky example does: 1 + T
    /// acquisitions before its first task.
    #[test]
    fn startup_acquires_follow_the_two_level_partition() {
        assert_eq!(
            lu(9600, 960, Precision::Single).unwrap().startup_acquires(),
            11
        );
    }
}
