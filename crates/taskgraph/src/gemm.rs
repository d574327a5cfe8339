//! Tiled matrix product C = A·B, as StarPU's `examples/mult/xgemm.c` submits it with `-3d`.

use super::cholesky::gemm_flops;
use super::graph::{Access, AccessMode, Handle, HandleId, TaskGraph, TaskGraphBuilder, Tile};
use super::{Precision, Tiling};
use hetsim_core::InputError;

/// StarPU's symbol for the example's gemm model: `STARPU_GEMM_STR(gemm)`, i.e.
/// `starpu_sgemm_gemm` from `sgemm.c` and `starpu_dgemm_gemm` from `dgemm.c`.
pub fn gemm_codelet(precision: Precision) -> &'static str {
    match precision {
        Precision::Single => "starpu_sgemm_gemm",
        Precision::Double => "starpu_dgemm_gemm",
    }
}

fn task_count(t: u64) -> u64 {
    t.saturating_mul(t).saturating_mul(t)
}

/// Tiled C = A·B with `n`×`n` matrices in `nb`×`nb` tiles: T³ gemm tasks, no priorities.
///
/// Submission order follows StarPU's `examples/mult/xgemm.c` in its tiled (`-3d`) mode: for
/// each tile column x of C, for each tile row y, for z in 0..T, one task
/// `R A(y,z), R B(z,x), C(y,x)`. The z = 0 task writes C without reading it (the example's
/// `cl_gemm0`, β = 0, C in `W` mode: its old contents are never fetched); the later ones
/// accumulate (`cl_gemm`, `RW`). The T tasks on one C tile therefore form a chain in z
/// order, and different C tiles are independent. Both codelets share one performance model. Each task's model size is 3·nb²·elem, the
/// size of the square-tile entries of `starpu_sgemm_gemm.<host>` (11,059,200 B at nb = 960).
/// After each C tile's chain the example calls `starpu_data_wont_use` on that tile; the graph
/// carries it as a [`TaskGraphBuilder::wont_use`] hint at the same place.
pub fn gemm(n: u64, nb: u64, precision: Precision) -> Result<TaskGraph, InputError> {
    let tiling = Tiling::new(n, nb, precision, task_count)?;
    let t = tiling.tiles;
    let tu = u64::from(t);
    let ntasks = task_count(tu) as usize;
    let mut b = TaskGraphBuilder::with_capacity(ntasks, (3 * tu * tu) as usize, 3 * ntasks);
    let cl = b.codelet(gemm_codelet(precision))?;

    // A, B and C, each T² tiles row-major: matrix `which` tile (i, j) is which·T² + i·T + j.
    for matrix in ['A', 'B', 'C'] {
        for row in 0..t {
            for col in 0..t {
                b.add_handle(Handle {
                    size_bytes: tiling.tile_bytes,
                    dims: Some(tiling.dims()),
                    tile: Some(Tile { matrix, row, col }),
                    ..Handle::bytes(tiling.tile_bytes)
                })?;
            }
        }
    }
    let tile = |which: u32, i: u32, j: u32| HandleId(which * t * t + i * t + j);
    use AccessMode::{R, RW, W};

    let flops = gemm_flops(nb);
    for x in 0..t {
        for y in 0..t {
            for z in 0..t {
                b.submit(
                    cl,
                    flops,
                    0,
                    &[
                        Access::new(tile(0, y, z), R),
                        Access::new(tile(1, z, x), R),
                        Access::new(tile(2, y, x), if z == 0 { W } else { RW }),
                    ],
                )?;
            }
            // xgemm.c: `starpu_data_wont_use(Ctile)` once the tile's z chain is submitted.
            b.wont_use(tile(2, y, x))?;
        }
    }
    // `xgemm.c` partitions A, B and C in two levels each (`starpu_data_map_filters`): it
    // acquires each whole matrix, then each of its t blocks.
    b.startup_acquires(3 * (t + 1));
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskId;

    #[test]
    fn chains_per_c_tile() {
        let g = gemm(4, 2, Precision::Single).unwrap();
        assert_eq!(g.num_tasks(), 8);
        // Tasks 0,1 update C(0,0); 2,3 C(1,0); 4,5 C(0,1); 6,7 C(1,1).
        let mut edges = Vec::new();
        for t in g.task_ids() {
            for s in g.successors(t) {
                edges.push((t.0, s.0));
            }
        }
        assert_eq!(edges, vec![(0, 1), (2, 3), (4, 5), (6, 7)]);
        assert_eq!(g.task(TaskId(0)).model_size_bytes(), 3 * 2 * 2 * 4);
        assert_eq!(g.handles().len(), 12);
        // xgemm.c's cl_gemm0: the first task of a chain writes C, the others accumulate.
        let c_mode = |t: u32| g.accesses(TaskId(t))[2].mode;
        assert_eq!((c_mode(4), c_mode(5)), (AccessMode::W, AccessMode::RW));
        let c = g.accesses(TaskId(5))[2].handle;
        assert_eq!(
            g.handle(c).tile,
            Some(Tile {
                matrix: 'C',
                row: 0,
                col: 1
            })
        );
        // One wont_use hint per C tile, after its chain, in submission order: C(0,0), C(1,0),
        // C(0,1), C(1,1), each held once the chain's last task (1, 3, 5, 7) is done.
        let hinted: Vec<_> = g
            .wont_use_hints()
            .iter()
            .map(|w| g.handle(w.handle).tile.map(|t| (t.matrix, t.row, t.col)))
            .collect();
        let c = |row, col| Some(('C', row, col));
        assert_eq!(hinted, [c(0, 0), c(1, 0), c(0, 1), c(1, 1)]);
        let triggers: Vec<_> = g
            .wont_use_triggers()
            .iter()
            .map(|t| t.map(|t| t.0))
            .collect();
        assert_eq!(triggers, [Some(1), Some(3), Some(5), Some(7)]);
    }

    #[test]
    fn sample_file_flops() {
        // starpu_sgemm_gemm.mirage: size 11059200 = 3·960²·4, flops 1.769472e+09.
        let g = gemm(960, 960, Precision::Single).unwrap();
        assert_eq!(g.task(TaskId(0)).model_size_bytes(), 11_059_200);
        assert_eq!(g.task(TaskId(0)).flops(), 1.769472e9);
        assert_eq!(g.codelet_names(), &["starpu_sgemm_gemm".to_string()]);
    }

    /// `xgemm.c` partitions A, B and C: StarPU's sgemm at n = 9 600, tiles of 960, submits 33
    /// internal tasks before its first gemm.
    #[test]
    fn startup_acquires_follow_the_three_partitions() {
        assert_eq!(
            gemm(9600, 960, Precision::Single)
                .unwrap()
                .startup_acquires(),
            33
        );
    }
}
