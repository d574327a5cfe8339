//! Tiled right-looking Cholesky factorization (A = L·Lᵀ, lower triangle), as StarPU's
//! `examples/cholesky/cholesky_implicit.c` submits it.

use super::graph::{Access, AccessMode, Handle, HandleId, TaskGraph, TaskGraphBuilder, Tile};
use super::{Precision, Priorities, Tiling};
use hetsim_core::InputError;

/// Performance-model symbol of the diagonal factorization (StarPU's `chol_model_potrf`).
pub const CHOL_POTRF: &str = "chol_model_potrf";
/// Performance-model symbol of the panel triangular solve.
pub const CHOL_TRSM: &str = "chol_model_trsm";
/// Performance-model symbol of the diagonal-tile symmetric update.
pub const CHOL_SYRK: &str = "chol_model_syrk";
/// Performance-model symbol of the off-diagonal update.
pub const CHOL_GEMM: &str = "chol_model_gemm";

/// Flops of `potrf` on an nb×nb tile, as StarPU's example counts them (`FLOPS_SPOTRF`, LAWN 41
/// multiplications + additions): nb³/3 + nb²/2 + nb/6. At nb = 960 this is 2.953730e8, the
/// `flops` column of the `chol_model_potrf` sample files.
pub fn potrf_flops(nb: u64) -> f64 {
    let n = nb as f64;
    n * n * n / 3.0 + n * n / 2.0 + n / 6.0
}

/// Flops of the Cholesky `trsm` on nb×nb tiles as StarPU's example counts them: nb²·(nb + 1).
///
/// The textbook count is nb³; StarPU's `cholesky.h` defines its additions count `FADDS_TRSM` as
/// the multiplications count, which adds nb². The sample files hold this value (2.625536e8 at
/// nb = 640), and we keep it so a task's flops equal the `flops` of the matching model entry.
pub fn trsm_flops(nb: u64) -> f64 {
    let n = nb as f64;
    n * n * (n + 1.0)
}

/// Flops of `syrk` on nb×nb tiles (`FLOPS_SSYRK`, LAWN 41): nb²·(nb + 1).
pub fn syrk_flops(nb: u64) -> f64 {
    let n = nb as f64;
    n * n * (n + 1.0)
}

/// Flops of `gemm` on nb×nb tiles: 2·nb³.
pub fn gemm_flops(nb: u64) -> f64 {
    let n = nb as f64;
    2.0 * n * n * n
}

/// Number of tasks of a Cholesky with `t` tiles per side (for the size limit).
pub(crate) fn task_count(t: u64) -> u64 {
    t + t * t.saturating_sub(1) + t * t.saturating_sub(1) * t.saturating_sub(2) / 6
}

/// Tiled Cholesky of an `n`×`n` matrix in `nb`×`nb` tiles.
///
/// Submission order, accesses and priorities follow StarPU's
/// `examples/cholesky/cholesky_implicit.c` (`_cholesky()`, default `priority_attribution_p == 0`,
/// as in StarPU 1.4.12), with T tiles per side and tile A(m,n) in row m, column n of the lower
/// triangle:
///
/// ```text
/// for k in 0..T:
///     potrf(k)     RW A(k,k)                      priority 2T − 2k
///     for m in k+1..T:
///         trsm(m,k)  R A(k,k), RW A(m,k)          priority 2T − 2k − m
///     for n in k+1..T:
///         syrk(n,k)  R A(n,k), RW A(n,n)          priority 2T − 2k − n
///         for m in n+1..T:
///             gemm(m,n,k)  R A(m,k), R A(n,k), RW A(m,n)   priority 2T − 2k − m − n
/// ```
///
/// Before StarPU 1.4.8 the example gave syrk(n,k) the priority of a gemm with m = n,
/// 2T − 2k − 2n: [`cholesky_with`] and [`Priorities::StarPu13`].
///
/// After the trsm loop the example calls `starpu_data_wont_use(A(k,k))`, and after each syrk
/// and its gemm loop `starpu_data_wont_use(A(n,k))`; the graph carries these as
/// [`TaskGraphBuilder::wont_use`] hints at the same places.
///
/// StarPU uses these numbers when the scheduler accepts any integer priority (`dmdas`, `dmdap`,
/// `dmdasd`, `ws`, `lws` and the modular priority schedulers set the bounds to
/// `INT_MIN..INT_MAX`). Other schedulers keep StarPU's default bounds (0..0), under which the
/// example submits every task at priority 0; hetsim's schedulers say which case they are
/// ([`hetsim_runtime::sched::Scheduler::takes_priorities`]), so one set of priorities serves all of
/// them. (StarPU's `prio` has bounds −5..5, for which the example uses `STARPU_MAX_PRIO` on the
/// critical tasks instead; hetsim's `prio` takes these numbers as they are.) Only the
/// lower-triangle tiles are registered as handles.
pub fn cholesky(n: u64, nb: u64, precision: Precision) -> Result<TaskGraph, InputError> {
    cholesky_with(n, nb, precision, Priorities::StarPu14)
}

/// [`cholesky`] with the priorities of StarPU release `priorities`.
pub fn cholesky_with(
    n: u64,
    nb: u64,
    precision: Precision,
    priorities: Priorities,
) -> Result<TaskGraph, InputError> {
    let tiling = Tiling::new(n, nb, precision, task_count)?;
    let t = tiling.tiles;
    let tu = u64::from(t);
    let ntasks = task_count(tu) as usize;
    // Buffers: potrf 1, trsm 2, syrk 2, gemm 3.
    let naccesses = (tu + 4 * (tu * (tu - 1) / 2) + 3 * (ntasks as u64 - tu * tu)) as usize;
    let mut b = TaskGraphBuilder::with_capacity(ntasks, (tu * (tu + 1) / 2) as usize, naccesses);

    let potrf = b.codelet(CHOL_POTRF)?;
    // StarPU's `cl_potrf` (`examples/cholesky/cholesky_codelets.c`) sets `STARPU_CUDA_ASYNC`
    // only when built with CUDA and cuSOLVER; in a SimGrid build its CUDA implementation is
    // the placeholder `(void*)1` without the flag, so it runs synchronously. trsm, syrk and
    // gemm always carry the flag.
    b.gpu_synchronous(potrf);
    let trsm = b.codelet(CHOL_TRSM)?;
    let syrk = b.codelet(CHOL_SYRK)?;
    let gemm = b.codelet(CHOL_GEMM)?;

    // Lower triangle in row-major order: A(m, n) with n ≤ m is handle m(m+1)/2 + n.
    for m in 0..t {
        for col in 0..=m {
            b.add_handle(Handle {
                size_bytes: tiling.tile_bytes,
                dims: Some(tiling.dims()),
                tile: Some(Tile {
                    matrix: 'A',
                    row: m,
                    col,
                }),
                ..Handle::bytes(tiling.tile_bytes)
            })?;
        }
    }
    let a = |m: u32, col: u32| {
        debug_assert!(col <= m);
        HandleId(m * (m + 1) / 2 + col)
    };
    use AccessMode::{R, RW};

    let (f_potrf, f_trsm, f_syrk, f_gemm) = (
        potrf_flops(nb),
        trsm_flops(nb),
        syrk_flops(nb),
        gemm_flops(nb),
    );
    // Priorities are at most 2T; T ≤ 2^20 by the task limit, so i32 cannot overflow.
    let two_t = 2 * t as i32;
    for k in 0..t {
        let ki = k as i32;
        b.submit(potrf, f_potrf, two_t - 2 * ki, &[Access::new(a(k, k), RW)])?;
        for m in k + 1..t {
            b.submit(
                trsm,
                f_trsm,
                two_t - 2 * ki - m as i32,
                &[Access::new(a(k, k), R), Access::new(a(m, k), RW)],
            )?;
        }
        // cholesky_implicit.c: `starpu_data_wont_use(sdatakk)` once the panel is submitted.
        b.wont_use(a(k, k))?;
        for nn in k + 1..t {
            b.submit(
                syrk,
                f_syrk,
                match priorities {
                    Priorities::StarPu14 => two_t - 2 * ki - nn as i32,
                    Priorities::StarPu13 => two_t - 2 * ki - 2 * nn as i32,
                },
                &[Access::new(a(nn, k), R), Access::new(a(nn, nn), RW)],
            )?;
            for m in nn + 1..t {
                b.submit(
                    gemm,
                    f_gemm,
                    two_t - 2 * ki - m as i32 - nn as i32,
                    &[
                        Access::new(a(m, k), R),
                        Access::new(a(nn, k), R),
                        Access::new(a(m, nn), RW),
                    ],
                )?;
            }
            // cholesky_implicit.c: `starpu_data_wont_use(sdatank)` after the updates that read
            // A(n,k) at step k (the gemms of earlier columns read it as their A(m,k)).
            b.wont_use(a(nn, k))?;
        }
    }
    debug_assert_eq!(b.num_tasks(), ntasks);
    // StarPU's `cholesky_implicit` partitions its matrix in two levels
    // (`starpu_data_map_filters`): it acquires the whole matrix, then each of its t blocks.
    b.startup_acquires(t + 1);
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `flops` column of StarPU's sample files (`codelets/45/chol_model_*.mirage`), for the
    /// tile sizes whose `size` column identifies them (size = buffers × nb² × 4 bytes).
    #[test]
    fn flops_match_starpu_sample_files() {
        // chol_model_potrf.mirage: size 3686400 = 960²·4, flops 2.953730e+08.
        assert_eq!(format!("{:.6e}", potrf_flops(960)), "2.953730e8");
        // size 1638400 = 640²·4, flops 8.758624e+07.
        assert_eq!(format!("{:.6e}", potrf_flops(640)), "8.758624e7");
        // chol_model_trsm.mirage and chol_model_syrk.mirage: size 3276800 = 2·640²·4,
        // flops 2.625536e+08; size 7372800 = 2·960²·4, flops 8.856576e+08.
        assert_eq!(trsm_flops(640), 2.625536e8);
        assert_eq!(syrk_flops(640), 2.625536e8);
        assert_eq!(trsm_flops(960), 8.856576e8);
        // chol_model_gemm.mirage: size 11059200 = 3·960²·4, flops 1.769472e+09.
        assert_eq!(gemm_flops(960), 1.769472e9);
    }

    /// Only potrf is synchronous on GPUs, as in StarPU's `cholesky_codelets.c` built for
    /// SimGrid.
    #[test]
    fn only_potrf_is_gpu_synchronous() {
        let g = cholesky(960 * 3, 960, Precision::Single).unwrap();
        let sync: Vec<_> = g.gpu_synchronous_codelets().collect();
        assert_eq!(sync, [CHOL_POTRF]);
    }

    #[test]
    fn model_size_is_all_buffers() {
        let g = cholesky(960 * 3, 960, Precision::Single).unwrap();
        for t in g.task_ids() {
            let expect = match g.task_codelet_name(t) {
                CHOL_POTRF => 3_686_400,
                CHOL_TRSM | CHOL_SYRK => 7_372_800,
                CHOL_GEMM => 11_059_200,
                other => panic!("unexpected codelet {other}"),
            };
            assert_eq!(g.task(t).model_size_bytes(), expect);
        }
    }

    #[test]
    fn one_tile_is_one_potrf() {
        let g = cholesky(100, 100, Precision::Double).unwrap();
        assert_eq!(g.num_tasks(), 1);
        assert_eq!(g.task(super::super::TaskId(0)).priority, 2);
        assert_eq!(g.handles().len(), 1);
        assert_eq!(g.handles()[0].size_bytes, 100 * 100 * 8);
    }

    /// Where `cholesky_implicit.c` calls `starpu_data_wont_use`, by hand for T = 3 tiles:
    /// step 0: A(0,0) after the trsms, A(1,0) after syrk(1,0) and gemm(2,1,0), A(2,0) after
    /// syrk(2,0); step 1: A(1,1), then A(2,1); step 2: A(2,2). Each waits for the last writer
    /// before it: potrf(k) for A(k,k), trsm(n,k) for A(n,k).
    #[test]
    fn wont_use_hints_follow_cholesky_implicit() {
        let g = cholesky(960 * 3, 960, Precision::Single).unwrap();
        let tile = |h: HandleId| {
            let t = g.handle(h).tile.unwrap();
            (t.row, t.col)
        };
        let hints: Vec<(u32, u32)> = g.wont_use_hints().iter().map(|w| tile(w.handle)).collect();
        assert_eq!(hints, [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (2, 2)]);
        // Submission order (T = 3): potrf0 trsm10 trsm20 syrk10 gemm210 syrk20 potrf1 trsm21
        // syrk21 potrf2 = tasks 0..=9.
        let after: Vec<u32> = g.wont_use_hints().iter().map(|w| w.after.0).collect();
        assert_eq!(after, [2, 4, 5, 7, 8, 9]);
        let trig: Vec<&str> = g
            .wont_use_triggers()
            .iter()
            .map(|t| g.task_codelet_name(t.unwrap()))
            .collect();
        assert_eq!(
            trig,
            [
                CHOL_POTRF, CHOL_TRSM, CHOL_TRSM, CHOL_POTRF, CHOL_TRSM, CHOL_POTRF
            ]
        );
    }

    /// StarPU's `cholesky_implicit` at n = 9 600, tiles of 960, submits 11 internal tasks before
    /// its first potrf (its trace's first 11 submissions, 2 µs apart): the acquisitions of the
    /// matrix and of its 10 blocks when it partitions them.
    #[test]
    fn startup_acquires_follow_the_two_level_partition() {
        assert_eq!(
            cholesky(9600, 960, Precision::Single)
                .unwrap()
                .startup_acquires(),
            11
        );
        assert_eq!(
            cholesky(11520, 320, Precision::Single)
                .unwrap()
                .startup_acquires(),
            37
        );
    }
}
