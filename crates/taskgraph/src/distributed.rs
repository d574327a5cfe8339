//! Distributed task graphs with StarPU-MPI's semantics (`starpu_mpi_task_insert`).
//!
//! An application submits the same sequence of tasks on every node, over data that each have an
//! owner node. [`DistributedBuilder`] turns that sequence into one graph of all nodes' tasks:
//!
//! - a task runs on the owner of the data it writes (its first written datum), or where
//!   [`DistributedBuilder::insert_on`] says (StarPU's `STARPU_EXECUTE_ON_NODE`);
//! - a datum read on a node that does not own it travels in a message from its owner
//!   ([`TaskKind::Message`]) into that node's copy of it, unless the node's cache already holds
//!   the current version (StarPU-MPI's `STARPU_MPI_CACHE`, on by default);
//! - writing a datum makes every cached copy stale; [`DistributedBuilder::flush`] drops the
//!   copies of a datum (`starpu_mpi_cache_flush`), so its next remote read sends it again;
//! - a datum written on a node that does not own it goes back to its owner after the task.
//!
//! Each node has at most one handle per datum (its owner's, holding the data from the start,
//! or a copy that holds nothing until a message fills it), as StarPU-MPI registers every datum
//! on every node; dependencies between tasks, messages included, follow from the accesses in
//! submission order as on one node, so a message waits for the datum's last writer on the
//! sending node and for the readers of the previous copy on the receiving one.

use hetsim_core::InputError;

use super::graph::{
    Access, AccessMode, CodeletId, Handle, HandleId, NodeId, Place, TaskGraph, TaskGraphBuilder,
    TaskId, TaskKind,
};

/// The codelet name messages carry (in traces and per-codelet counts).
pub const MESSAGE_CODELET: &str = "mpi_message";

/// Index of a datum of a distributed graph (a piece of data with an owner node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataId(pub u32);

impl DataId {
    /// The index as `usize`, for slices.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A 2D block-cyclic distribution of tiles over a `p` × `q` grid of nodes (ScaLAPACK's,
/// Chameleon's and StarPU-MPI's examples'): tile (row m, column n) belongs to node
/// `(n mod q) + (m mod p)·q`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockCyclic {
    /// Node rows.
    pub p: u32,
    /// Node columns.
    pub q: u32,
}

impl BlockCyclic {
    /// A `p` × `q` grid; both at least 1.
    pub fn new(p: u32, q: u32) -> Result<Self, InputError> {
        if p == 0 || q == 0 {
            return Err(InputError::new(format!(
                "a process grid needs at least one row and one column, got {p} x {q}"
            ))
            .at_field("workload.grid"));
        }
        Ok(BlockCyclic { p, q })
    }

    /// StarPU-MPI's examples' grid for `nodes` nodes (`mpi_decomposition_params.c`): `p`, the
    /// node rows, is the largest divisor of `nodes` not above its square root, and `q` =
    /// nodes / `p`; 2 nodes are 1 × 2, 4 nodes 2 × 2, 6 nodes 2 × 3.
    pub fn for_nodes(nodes: u32) -> Self {
        let nodes = nodes.max(1);
        let mut f = (nodes as f64).sqrt() as u32;
        while f > 1 && !nodes.is_multiple_of(f) {
            f -= 1;
        }
        let f = f.max(1);
        BlockCyclic { p: f, q: nodes / f }
    }

    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        self.p * self.q
    }

    /// The owner of tile (`row`, `col`).
    pub fn owner(&self, row: u32, col: u32) -> NodeId {
        NodeId(col % self.q + (row % self.p) * self.q)
    }
}

/// One datum: its owner, its handle description, and per node its handle and whether that
/// node's copy is current.
#[derive(Debug, Clone)]
struct Datum {
    owner: NodeId,
    template: Handle,
    /// Per node: the handle of this datum on it, once used there.
    handles: Vec<Option<HandleId>>,
    /// Per node: its copy holds the current version (always true for the owner).
    current: Vec<bool>,
}

/// Builds a distributed task graph from the sequence of insertions every node makes (see the
/// module documentation).
#[derive(Debug)]
pub struct DistributedBuilder {
    b: TaskGraphBuilder,
    nodes: u32,
    cache: bool,
    message: CodeletId,
    data: Vec<Datum>,
    messages: usize,
}

impl DistributedBuilder {
    /// A builder for `nodes` nodes; `cache` is StarPU-MPI's `STARPU_MPI_CACHE` (default on:
    /// a node keeps the data it received until the data is written or flushed).
    pub fn new(nodes: u32, cache: bool) -> Result<Self, InputError> {
        if nodes == 0 {
            return Err(InputError::new(
                "a distributed graph needs at least one node",
            ));
        }
        let mut b = TaskGraphBuilder::new();
        let message = b.codelet(MESSAGE_CODELET)?;
        Ok(DistributedBuilder {
            b,
            nodes,
            cache,
            message,
            data: Vec::new(),
            messages: 0,
        })
    }

    /// Intern a codelet name (see [`TaskGraphBuilder::codelet`]).
    pub fn codelet(&mut self, name: &str) -> Result<CodeletId, InputError> {
        self.b.codelet(name)
    }

    /// Mark a codelet synchronous on GPUs (see [`TaskGraphBuilder::gpu_synchronous`]).
    pub fn gpu_synchronous(&mut self, id: CodeletId) {
        self.b.gpu_synchronous(id);
    }

    /// Register a datum owned by `owner`, which holds its data from the start.
    pub fn register(&mut self, handle: Handle, owner: NodeId) -> Result<DataId, InputError> {
        if owner.0 >= self.nodes {
            return Err(InputError::new(format!(
                "datum owner node {} on a cluster of {} nodes",
                owner.0, self.nodes
            )));
        }
        let id = u32::try_from(self.data.len())
            .map_err(|_| InputError::new("too many data (at most 2^32)"))?;
        let n = self.nodes as usize;
        let mut d = Datum {
            owner,
            template: Handle {
                node: owner,
                starts_valid: false,
                ..handle
            },
            handles: vec![None; n],
            current: vec![false; n],
        };
        let h = self.b.add_handle(Handle {
            node: owner,
            starts_valid: true,
            ..handle
        })?;
        d.handles[owner.index()] = Some(h);
        d.current[owner.index()] = true;
        self.data.push(d);
        Ok(DataId(id))
    }

    /// The owner of a datum.
    pub fn owner(&self, d: DataId) -> NodeId {
        self.data[d.index()].owner
    }

    /// Submit a task on the owner of the first datum it writes (a task writing nothing runs on
    /// the owner of its first datum, or node 0).
    pub fn insert(
        &mut self,
        codelet: CodeletId,
        flops: f64,
        priority: i32,
        accesses: &[(DataId, AccessMode)],
    ) -> Result<TaskId, InputError> {
        let node = accesses
            .iter()
            .find(|(_, m)| m.writes())
            .or(accesses.first())
            .map_or(NodeId(0), |&(d, _)| {
                self.datum(d).map_or(NodeId(0), |x| x.owner)
            });
        self.insert_on(node, codelet, flops, priority, accesses)
    }

    /// Submit a task on `node`, bringing the data it reads there and sending the data it writes
    /// back to their owners.
    pub fn insert_on(
        &mut self,
        node: NodeId,
        codelet: CodeletId,
        flops: f64,
        priority: i32,
        accesses: &[(DataId, AccessMode)],
    ) -> Result<TaskId, InputError> {
        if node.0 >= self.nodes {
            return Err(InputError::new(format!(
                "task on node {} of a cluster of {} nodes",
                node.0, self.nodes
            )));
        }
        let mut local = Vec::with_capacity(accesses.len());
        for &(d, mode) in accesses {
            self.datum(d)?;
            if mode.reads() {
                self.bring(d, node, priority)?;
            }
            local.push(Access::new(self.handle_on(d, node)?, mode));
        }
        let task = self
            .b
            .submit_kind(codelet, flops, priority, &local, node, TaskKind::Compute)?;
        for &(d, mode) in accesses {
            if mode.writes() {
                let owner = self.data[d.index()].owner;
                let cur = &mut self.data[d.index()].current;
                cur.iter_mut().for_each(|c| *c = false);
                cur[node.index()] = true;
                if node != owner {
                    self.send(d, node, owner, priority)?;
                }
            }
        }
        Ok(task)
    }

    /// Drop every node's copy of `d` from the cache (`starpu_mpi_cache_flush`): its next
    /// remote read sends it again.
    pub fn flush(&mut self, d: DataId) -> Result<(), InputError> {
        self.datum(d)?;
        let x = &mut self.data[d.index()];
        for (n, c) in x.current.iter_mut().enumerate() {
            if n != x.owner.index() {
                *c = false;
            }
        }
        Ok(())
    }

    /// "Will not be used" hint on `node`'s handle of `d` (`starpu_data_wont_use`), if the node
    /// has one.
    pub fn wont_use(&mut self, d: DataId, node: NodeId) -> Result<(), InputError> {
        match self.datum(d)?.handles.get(node.index()).copied().flatten() {
            Some(h) => self.b.wont_use(h),
            None => Ok(()),
        }
    }

    /// Messages inserted so far (StarPU-MPI's count of sends).
    pub fn messages(&self) -> usize {
        self.messages
    }

    /// Number of tasks submitted so far, messages included.
    pub fn num_tasks(&self) -> usize {
        self.b.num_tasks()
    }

    /// Freeze the graph.
    pub fn build(self) -> Result<TaskGraph, InputError> {
        self.b.build()
    }

    fn datum(&self, d: DataId) -> Result<&Datum, InputError> {
        self.data.get(d.index()).ok_or_else(|| {
            InputError::new(format!(
                "unknown datum {} (only {} are registered)",
                d.0,
                self.data.len()
            ))
        })
    }

    /// `node`'s handle of `d`, registered on first use.
    fn handle_on(&mut self, d: DataId, node: NodeId) -> Result<HandleId, InputError> {
        if let Some(h) = self.data[d.index()].handles[node.index()] {
            return Ok(h);
        }
        let template = Handle {
            node,
            ..self.data[d.index()].template
        };
        let h = self.b.add_handle(template)?;
        self.data[d.index()].handles[node.index()] = Some(h);
        Ok(h)
    }

    /// Make `node`'s copy of `d` current: a message from the node holding the current version
    /// unless the cache already has it.
    fn bring(&mut self, d: DataId, node: NodeId, priority: i32) -> Result<(), InputError> {
        let x = &self.data[d.index()];
        if x.current[node.index()] && (self.cache || node == x.owner) {
            return Ok(());
        }
        let from = if x.current[x.owner.index()] {
            x.owner
        } else {
            // Only the node that wrote it last holds the current version (its write-back to
            // the owner is on its way).
            NodeId(x.current.iter().position(|&c| c).unwrap_or(x.owner.index()) as u32)
        };
        if from == node {
            return Ok(());
        }
        self.send(d, from, node, priority)?;
        self.data[d.index()].current[node.index()] = true;
        Ok(())
    }

    /// A message carrying `d` from `from`'s handle into `to`'s.
    fn send(
        &mut self,
        d: DataId,
        from: NodeId,
        to: NodeId,
        priority: i32,
    ) -> Result<(), InputError> {
        let src = self.handle_on(d, from)?;
        let dst = self.handle_on(d, to)?;
        self.b.submit_kind(
            self.message,
            0.0,
            priority,
            &[
                Access::new(src, AccessMode::R),
                Access::new(dst, AccessMode::W),
            ],
            to,
            TaskKind::Message {
                from,
                to,
                src: Place::Host,
                dst: Place::Host,
            },
        )?;
        self.messages += 1;
        Ok(())
    }
}

/// StarPU-MPI's distributed Cholesky (`mpi/examples/matrix_decomposition`,
/// `mpi_cholesky_codelets.c`, `run_cholesky`) on a `grid` of nodes: the lower triangle of
/// `n`/`nb` × `n`/`nb` tiles dealt block-cyclically, each task on the owner of the tile it
/// writes, in the example's order:
///
/// ```text
/// for k:  potrf(k)                        RW A(k,k)                  priority 2T − 2k
///         for m > k:  trsm(m,k)           R A(k,k), RW A(m,k)        priority 2T − 2k − m
///                     flush A(k,k); wont_use A(k,k) on its owner
///         for n > k:  syrk(n,k)           R A(n,k), RW A(n,n)        priority 2T − 2k − n
///                     for m > n: gemm(m,n,k)  R A(n,k), R A(m,k), RW A(m,n)
///                                                                    priority 2T − 2k − m − n
///                     flush A(n,k); wont_use A(n,k) on its owner
/// ```
///
/// The flush of A(k,k) inside the trsm loop makes A(k,k) travel again to a node for each of
/// its trsms there. The example's syrk and gemm access their output `RW | COMMUTE`; here they
/// are plain RW, so updates of one tile run in submission order.
pub fn cholesky(
    n: u64,
    nb: u64,
    precision: super::Precision,
    grid: BlockCyclic,
    cache: bool,
) -> Result<TaskGraph, InputError> {
    use super::cholesky::{CHOL_GEMM, CHOL_POTRF, CHOL_SYRK, CHOL_TRSM};
    use super::cholesky::{gemm_flops, potrf_flops, syrk_flops, trsm_flops};
    use AccessMode::{R, RW};

    let tiling = super::Tiling::new(n, nb, precision, super::cholesky::task_count)?;
    let t = tiling.tiles;
    let mut b = DistributedBuilder::new(grid.nodes(), cache)?;
    let potrf = b.codelet(CHOL_POTRF)?;
    // As in the single-node example, the SimGrid build's potrf has no STARPU_CUDA_ASYNC.
    b.gpu_synchronous(potrf);
    let trsm = b.codelet(CHOL_TRSM)?;
    let syrk = b.codelet(CHOL_SYRK)?;
    let gemm = b.codelet(CHOL_GEMM)?;
    let mut tiles = Vec::with_capacity((t as usize * (t as usize + 1)) / 2);
    for m in 0..t {
        for col in 0..=m {
            let h = Handle {
                size_bytes: tiling.tile_bytes,
                dims: Some(tiling.dims()),
                tile: Some(super::graph::Tile {
                    matrix: 'A',
                    row: m,
                    col,
                }),
                ..Handle::bytes(tiling.tile_bytes)
            };
            tiles.push(b.register(h, grid.owner(m, col))?);
        }
    }
    let a = |m: u32, col: u32| tiles[(m * (m + 1) / 2 + col) as usize];
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
        b.insert(potrf, f_potrf, two_t - 2 * ki, &[(a(k, k), RW)])?;
        for m in k + 1..t {
            b.insert(
                trsm,
                f_trsm,
                two_t - 2 * ki - m as i32,
                &[(a(k, k), R), (a(m, k), RW)],
            )?;
            b.flush(a(k, k))?;
            b.wont_use(a(k, k), grid.owner(k, k))?;
        }
        for nn in k + 1..t {
            b.insert(
                syrk,
                f_syrk,
                two_t - 2 * ki - nn as i32,
                &[(a(nn, k), R), (a(nn, nn), RW)],
            )?;
            for m in nn + 1..t {
                b.insert(
                    gemm,
                    f_gemm,
                    two_t - 2 * ki - m as i32 - nn as i32,
                    &[(a(nn, k), R), (a(m, k), R), (a(m, nn), RW)],
                )?;
            }
            b.flush(a(nn, k))?;
            b.wont_use(a(nn, k), grid.owner(nn, k))?;
        }
    }
    b.build()
}

/// Register the `t` × `t` tiles of matrix `which` (row-major: tile (i, j) is entry i·t + j) on
/// their owners in `grid`.
fn register_tiles(
    b: &mut DistributedBuilder,
    tiling: &super::Tiling,
    grid: BlockCyclic,
    which: char,
) -> Result<Vec<DataId>, InputError> {
    let t = tiling.tiles;
    let mut v = Vec::with_capacity(t as usize * t as usize);
    for i in 0..t {
        for j in 0..t {
            let h = Handle {
                size_bytes: tiling.tile_bytes,
                dims: Some(tiling.dims()),
                tile: Some(super::graph::Tile {
                    matrix: which,
                    row: i,
                    col: j,
                }),
                ..Handle::bytes(tiling.tile_bytes)
            };
            v.push(b.register(h, grid.owner(i, j))?);
        }
    }
    Ok(v)
}

/// StarPU-MPI's LU without pivoting (`mpi/examples/mpi_lu/pxlu_implicit.c`) on a `grid` of
/// nodes, T × T tiles dealt block-cyclically, in the example's order:
///
/// ```text
/// for k:  getrf(k)                 RW A(k,k)                 priority 3T − 3k
///         for i > k:  trsm_ll(k,i)  R A(k,k), RW A(k,i)      priority 3T − 2k − i
///                     trsm_ru(k,i)  R A(k,k), RW A(i,k)      priority 3T − 2k − i
///         flush A(k,k); wont_use A(k,k) on its owner
///         for i > k, j > k:  gemm(k,i,j)  R A(k,j), R A(i,k), RW A(i,j)
///                                                            priority 3T − k − i − j
///         for i > k:  flush and wont_use A(k,i), then A(i,k)
/// ```
///
/// The example's `trsm_ll` task uses the `trsm_ru` codelet and the other way round (its
/// "temporary fix"); the codelets here are named for the tile each task writes, as in the
/// single-node LU, so the same kernel models apply.
pub fn lu(
    n: u64,
    nb: u64,
    precision: super::Precision,
    grid: BlockCyclic,
    cache: bool,
) -> Result<TaskGraph, InputError> {
    use super::cholesky::{gemm_flops, trsm_flops};
    use super::lu::{getrf_flops, lu_codelets, task_count};
    use AccessMode::{R, RW};

    let tiling = super::Tiling::new(n, nb, precision, task_count)?;
    let t = tiling.tiles;
    let mut b = DistributedBuilder::new(grid.nodes(), cache)?;
    let names = lu_codelets(precision);
    let getrf = b.codelet(names.getrf)?;
    b.gpu_synchronous(getrf);
    let trsm_ll = b.codelet(names.trsm_ll)?;
    let trsm_ru = b.codelet(names.trsm_ru)?;
    let gemm = b.codelet(names.gemm)?;
    let tiles = register_tiles(&mut b, &tiling, grid, 'A')?;
    let a = |i: u32, j: u32| tiles[(i * t + j) as usize];
    let release = |b: &mut DistributedBuilder, i: u32, j: u32| -> Result<(), InputError> {
        b.flush(a(i, j))?;
        b.wont_use(a(i, j), grid.owner(i, j))
    };
    let (f_getrf, f_trsm, f_gemm) = (getrf_flops(nb), trsm_flops(nb), gemm_flops(nb));
    let three_t = 3 * t as i32;
    for k in 0..t {
        let ki = k as i32;
        b.insert(getrf, f_getrf, three_t - 3 * ki, &[(a(k, k), RW)])?;
        for i in k + 1..t {
            let prio = three_t - 2 * ki - i as i32;
            b.insert(trsm_ll, f_trsm, prio, &[(a(k, k), R), (a(k, i), RW)])?;
            b.insert(trsm_ru, f_trsm, prio, &[(a(k, k), R), (a(i, k), RW)])?;
        }
        release(&mut b, k, k)?;
        for i in k + 1..t {
            for j in k + 1..t {
                b.insert(
                    gemm,
                    f_gemm,
                    three_t - ki - i as i32 - j as i32,
                    &[(a(k, j), R), (a(i, k), R), (a(i, j), RW)],
                )?;
            }
        }
        for i in k + 1..t {
            release(&mut b, k, i)?;
            release(&mut b, i, k)?;
        }
    }
    b.build()
}

/// Tiled C = A·B on a `grid` of nodes, A, B and C dealt block-cyclically, each product on the
/// owner of its C tile, in the single-node example's order (for each C tile column x, row y:
/// the T tasks `R A(y,z), R B(z,x), C(y,x)`, C written by the first and accumulated by the
/// others as in [`super::gemm::gemm`], then `wont_use` C(y,x) on its owner). A and B
/// tiles stay cached where they were sent (no flush).
pub fn gemm(
    n: u64,
    nb: u64,
    precision: super::Precision,
    grid: BlockCyclic,
    cache: bool,
) -> Result<TaskGraph, InputError> {
    use super::cholesky::gemm_flops;
    use AccessMode::{R, RW, W};

    let tiling = super::Tiling::new(n, nb, precision, |t| t.saturating_mul(t).saturating_mul(t))?;
    let t = tiling.tiles;
    let mut b = DistributedBuilder::new(grid.nodes(), cache)?;
    let cl = b.codelet(super::gemm::gemm_codelet(precision))?;
    let am = register_tiles(&mut b, &tiling, grid, 'A')?;
    let bm = register_tiles(&mut b, &tiling, grid, 'B')?;
    let cm = register_tiles(&mut b, &tiling, grid, 'C')?;
    let at = |m: &[DataId], i: u32, j: u32| m[(i * t + j) as usize];
    let flops = gemm_flops(nb);
    for x in 0..t {
        for y in 0..t {
            for z in 0..t {
                b.insert(
                    cl,
                    flops,
                    0,
                    &[
                        (at(&am, y, z), R),
                        (at(&bm, z, x), R),
                        (at(&cm, y, x), if z == 0 { W } else { RW }),
                    ],
                )?;
            }
            b.wont_use(at(&cm, y, x), grid.owner(y, x))?;
        }
    }
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessMode::{R, RW};

    #[test]
    fn block_cyclic_owners_and_grids() {
        let g = BlockCyclic::new(2, 3).unwrap();
        assert_eq!(g.owner(0, 0), NodeId(0));
        assert_eq!(g.owner(0, 2), NodeId(2));
        assert_eq!(g.owner(1, 0), NodeId(3));
        assert_eq!(g.owner(3, 4), NodeId(4));
        assert_eq!(BlockCyclic::for_nodes(2), BlockCyclic { p: 1, q: 2 });
        assert_eq!(BlockCyclic::for_nodes(4), BlockCyclic { p: 2, q: 2 });
        assert_eq!(BlockCyclic::for_nodes(6), BlockCyclic { p: 2, q: 3 });
        assert_eq!(BlockCyclic::for_nodes(7), BlockCyclic { p: 1, q: 7 });
        assert!(BlockCyclic::new(0, 2).is_err());
    }

    /// Two nodes; A on node 0, B on node 1. t0 reads A and writes B (runs on node 1: one
    /// message A 0→1); t1 reads A again on node 1 (cached: no message); t2 writes A on node 0
    /// (the copy on node 1 is stale); t3 reads A on node 1 (a second message, after t2).
    #[test]
    fn messages_follow_the_cache_and_writes() {
        let mut b = DistributedBuilder::new(2, true).unwrap();
        let k = b.codelet("k").unwrap();
        let a = b.register(Handle::bytes(8), NodeId(0)).unwrap();
        let bb = b.register(Handle::bytes(8), NodeId(1)).unwrap();
        let t0 = b.insert(k, 1.0, 0, &[(a, R), (bb, RW)]).unwrap();
        assert_eq!(b.messages(), 1);
        b.insert(k, 1.0, 0, &[(a, R), (bb, RW)]).unwrap();
        assert_eq!(b.messages(), 1, "cached");
        let t2 = b.insert(k, 1.0, 0, &[(a, RW)]).unwrap();
        let t3 = b.insert(k, 1.0, 0, &[(a, R), (bb, RW)]).unwrap();
        assert_eq!(b.messages(), 2);
        let g = b.build().unwrap();
        // Tasks: m0, t0, t1, t2, m1, t3.
        assert_eq!((t0, t2, t3), (TaskId(1), TaskId(3), TaskId(5)));
        assert_eq!(
            g.task(TaskId(0)).kind(),
            TaskKind::Message {
                from: NodeId(0),
                to: NodeId(1),
                src: Place::Host,
                dst: Place::Host,
            }
        );
        assert_eq!(g.task(t0).node, NodeId(1));
        assert_eq!(g.task(t2).node, NodeId(0));
        // The second message waits for t2 (the new version) and for t0 and t1 (the readers of
        // the copy it overwrites); t3 waits for it.
        assert!(g.has_edge(t2, TaskId(4)));
        assert!(g.has_edge(TaskId(2), TaskId(4)));
        assert!(g.has_edge(TaskId(4), t3));
        // Node 1's copy of A starts empty; A's own handle starts full.
        let copies: Vec<(u32, bool)> = g
            .handles()
            .iter()
            .map(|h| (h.node.0, h.starts_valid))
            .collect();
        assert_eq!(copies, [(0, true), (1, true), (1, false)]);
    }

    /// Without the cache every remote read sends; a flush makes the next read send.
    #[test]
    fn no_cache_and_flush() {
        for (cache, flush, want) in [(true, false, 1), (false, false, 2), (true, true, 2)] {
            let mut b = DistributedBuilder::new(2, cache).unwrap();
            let k = b.codelet("k").unwrap();
            let a = b.register(Handle::bytes(8), NodeId(0)).unwrap();
            let bb = b.register(Handle::bytes(8), NodeId(1)).unwrap();
            b.insert(k, 1.0, 0, &[(a, R), (bb, RW)]).unwrap();
            if flush {
                b.flush(a).unwrap();
            }
            b.insert(k, 1.0, 0, &[(a, R), (bb, RW)]).unwrap();
            assert_eq!(b.messages(), want, "cache {cache}, flush {flush}");
        }
    }

    /// The messages of StarPU-MPI's distributed Cholesky, as StarPU-MPI 1.4.12 counted them
    /// in SimGrid mode (`STARPU_MPI_STATS`, docs/validation/starpu14-mpi-cholesky.csv): 10,
    /// 20 and 40 tiles per side on 1 × 2 and 2 × 2 grids.
    #[test]
    fn cholesky_sends_as_many_messages_as_starpu_mpi() {
        use crate::Precision;
        for (grid, want) in [((1, 2), [45, 190, 780]), ((2, 2), [106, 461, 1921])] {
            for (t, w) in [10u64, 20, 40].into_iter().zip(want) {
                let g = cholesky(
                    t * 960,
                    960,
                    Precision::Single,
                    BlockCyclic::new(grid.0, grid.1).unwrap(),
                    true,
                )
                .unwrap();
                let sends = g.tasks().iter().filter(|x| x.is_message()).count();
                assert_eq!(sends, w, "{t} tiles on {grid:?}");
                let compute = g.tasks().len() - sends;
                assert_eq!(compute as u64, crate::cholesky::task_count(t));
            }
        }
        // One node: no message, the same tasks as the single-node graph.
        let g = cholesky(
            9600,
            960,
            Precision::Single,
            BlockCyclic::new(1, 1).unwrap(),
            true,
        )
        .unwrap();
        assert!(g.tasks().iter().all(|x| !x.is_message()));
        assert_eq!(g.num_tasks(), 220);
    }

    /// LU and GEMM: every compute task runs on the owner of the tile it writes, and each node
    /// receives a tile at most once per version (the cache); with one node there is no
    /// message and the graphs have the single-node task counts.
    #[test]
    fn lu_and_gemm_compute_where_they_write() {
        use crate::Precision;
        let grid = BlockCyclic::new(2, 2).unwrap();
        for g in [
            lu(6 * 960, 960, Precision::Single, grid, true).unwrap(),
            gemm(4 * 960, 960, Precision::Single, grid, true).unwrap(),
        ] {
            for t in g.task_ids() {
                let task = g.task(t);
                let written = g.accesses(t).iter().find(|a| a.mode.writes()).unwrap();
                assert_eq!(g.handle(written.handle).node, task.node);
            }
            assert!(g.tasks().iter().any(|x| x.is_message()));
        }
        // GEMM on a 2 x 2 grid, T = 4: C(y,x) needs A(y,0..4) and B(0..4,x); each node owns 4 C
        // tiles, 2 rows y and 2 columns x of them, so it needs 2 rows of A (8 tiles, 4 its own)
        // and 2 columns of B (8 tiles, 4 its own): 8 messages per node, 32 in all.
        let g = gemm(4 * 960, 960, Precision::Single, grid, true).unwrap();
        assert_eq!(g.tasks().iter().filter(|x| x.is_message()).count(), 32);
        let one = BlockCyclic::new(1, 1).unwrap();
        let l = lu(6 * 960, 960, Precision::Single, one, true).unwrap();
        assert_eq!(
            l.num_tasks(),
            crate::lu(6 * 960, 960, Precision::Single)
                .unwrap()
                .num_tasks()
        );
    }

    /// A task placed on a node that does not own what it writes sends the result back.
    #[test]
    fn a_write_away_from_the_owner_goes_back() {
        let mut b = DistributedBuilder::new(2, true).unwrap();
        let k = b.codelet("k").unwrap();
        let a = b.register(Handle::bytes(8), NodeId(0)).unwrap();
        b.insert_on(NodeId(1), k, 1.0, 0, &[(a, RW)]).unwrap();
        let g = b.build().unwrap();
        let kinds: Vec<TaskKind> = g.tasks().iter().map(|t| t.kind()).collect();
        assert_eq!(
            kinds,
            [
                TaskKind::Message {
                    from: NodeId(0),
                    to: NodeId(1),
                    src: Place::Host,
                    dst: Place::Host,
                },
                TaskKind::Compute,
                TaskKind::Message {
                    from: NodeId(1),
                    to: NodeId(0),
                    src: Place::Host,
                    dst: Place::Host,
                },
            ]
        );
    }
}
