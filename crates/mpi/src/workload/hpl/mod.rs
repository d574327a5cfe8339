//! The `hpl` workload: HPL 2.0's LU factorisation with partial pivoting as an MPI-style
//! [`Program`] on a [`Cluster`], one rank per GPU, its part of the `N × (N + 1)` matrix in that
//! GPU's memory, driven by HPL.dat's parameters (`docs/hpl.md` describes the model and where in
//! HPL's source each rule comes from). Per panel of `NB` columns:
//!
//! 1. **panel factorisation** (`HPL_pdfact`) on the panel's process column: recursive (`RFACT`,
//!    `NDIV`, `NBMIN`) down to a column-by-column variant (`PFACT`), each column's pivot search
//!    a real exchange of messages along the column (`HPL_pdmxswp`), on the host cores between
//!    copies of the panel from and to the GPU (or on the GPU);
//! 2. **panel broadcast** along every process row, by one of HPL's six algorithms (`BCAST`),
//!    advancing only when a process calls into `HPL_bcast` (probes between update chunks);
//! 3. **row swaps** in every process column (`SWAP`: binary exchange, spread-roll, or the mix
//!    with its threshold);
//! 4. **trailing update** (DTRSM, DGEMM) on the GPUs, with look-ahead depth 0 or 1 (`DEPTH`).
//!
//! A rank is one sequential MPI process (HPL 2.0, as SimGrid's SMPI runs it: the validation
//! oracle), or, with `process = "concurrent"`, a process with a GPU that works asynchronously
//! (NVIDIA's CUDA HPL, which overlaps the host's panel factorisation with the GPU's update).

mod bcast;
mod build;
mod exec;
mod grid;
mod net;
mod pfact;
mod rate;
mod swap;

use serde::Deserialize;

use crate::program::OpSink;
use crate::{Program, ProgramBuilder};
use hetsim_core::error::InputError;
use hetsim_core::linpack::{hpl_flops, square_grid};
use hetsim_core::units::{self, RawQuantity};
use hetsim_platform::cluster::Cluster;
use hetsim_taskgraph::TaskGraph;

use super::ProgramGenerator;

pub use bcast::BcastVariant;
pub use grid::{RankOrder, owned};
pub use pfact::Factorisation;
pub use rate::{RateModel, RawRateModel};
pub use swap::SwapAlgorithm;

/// Bytes of a double, HPL's element.
const WORD_BYTES: f64 = 8.0;

/// Where the panel factorisation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PanelUnit {
    /// On the rank's host cores (HPL's CPU BLAS; CUDA HPL too): the panel's rows are copied
    /// from the GPU and back.
    #[default]
    #[serde(alias = "host")]
    Cpu,
    /// On the GPU, in place (at the GPU's DGEMM rate: an optimistic bound).
    #[serde(alias = "device")]
    Gpu,
}

/// How a rank's host and GPU share the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcessModel {
    /// HPL 2.0: one MPI process calls everything in turn (factorisation, communication, BLAS
    /// on the GPU); the look-ahead is the one of `HPL_pdgesvK2`, none for `Q = 1`.
    #[default]
    Sequential,
    /// NVIDIA-style: the GPU's updates run asynchronously; the process factorises the next
    /// panel and communicates while the GPU updates the rest (with `DEPTH = 1`, look-ahead for
    /// every grid; with `DEPTH = 0` each panel waits for the previous update).
    Concurrent,
}

/// How the pivot rows of a panel are spread over the process rows (they size the row swaps'
/// messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pivots {
    /// Drawn as HPL's random matrix makes them: each column's pivot is any candidate row with
    /// equal probability (seeded by `pivot_seed`, so runs are reproducible).
    #[default]
    Random,
    /// Every process row gives its expected share (no run-to-run spread).
    Expected,
}

/// How the panel factorisation's per-column pivot searches (`HPL_pdmxswp`) are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PivotSearch {
    /// Every column's exchange as messages along the process column (`⌈log2 P⌉` rounds per
    /// column): HPL as it runs.
    #[default]
    Messages,
    /// For scale: per panel, one column's exchange as messages (it synchronises the process
    /// column as the first search does), the panel's compute as one kernel, and the other
    /// columns' exchanges, with the time a rank waits for the column's slowest, as one delay:
    /// the exchange's critical path on the idle network with the cluster's MPI overheads.
    Collapsed,
}

/// How `L1` or `U` is stored (HPL.dat's "L1 in" and "U in"): it changes which BLAS calls
/// HPL makes, not their sizes nor the messages, so it changes nothing here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Storage {
    /// `0` (HPL's usual choice).
    #[default]
    Transposed,
    /// `1`.
    NoTransposed,
}

fn default_lookahead() -> u32 {
    1
}

fn default_swap_threshold() -> u64 {
    64
}

fn default_pfact() -> Factorisation {
    Factorisation::Right
}

fn default_rfact() -> Factorisation {
    Factorisation::Crout
}

fn default_nbmin() -> u64 {
    4
}

fn default_ndiv() -> u64 {
    2
}

fn default_pivot_seed() -> u64 {
    1
}

fn default_true() -> bool {
    true
}

/// `[workload]` with `kind = "hpl"` (the loader removes `kind`): HPL.dat's parameters, with
/// HPL's sample values as defaults, and where each step runs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HplSpec {
    /// `N`: order of the matrix.
    pub n: u64,
    /// `NB`: panel width (block size of the 2-D block-cyclic distribution).
    pub nb: u64,
    /// Process rows; default: [`square_grid`] of the number of ranks.
    #[serde(default)]
    pub p: Option<u32>,
    /// Process columns; default: ranks / P.
    #[serde(default)]
    pub q: Option<u32>,
    /// `BCAST`.
    #[serde(default)]
    pub bcast: BcastVariant,
    /// `DEPTH`: look-ahead depth, 0 or 1 (default 1).
    #[serde(default = "default_lookahead", alias = "depth")]
    pub lookahead: u32,
    /// `SWAP` (default binary exchange).
    #[serde(default)]
    pub swap: SwapAlgorithm,
    /// The swapping threshold of `SWAP = mix`, columns (default 64).
    #[serde(default = "default_swap_threshold")]
    pub swap_threshold: u64,
    /// `PFACT` (default right).
    #[serde(default = "default_pfact")]
    pub pfact: Factorisation,
    /// `RFACT` (default Crout).
    #[serde(default = "default_rfact")]
    pub rfact: Factorisation,
    /// `NBMIN` (default 4).
    #[serde(default = "default_nbmin")]
    pub nbmin: u64,
    /// `NDIV` (default 2).
    #[serde(default = "default_ndiv")]
    pub ndiv: u64,
    /// "L1 in" (no effect on the model).
    #[serde(default)]
    pub l1: Storage,
    /// "U in" (no effect on the model).
    #[serde(default)]
    pub u: Storage,
    /// Equilibration of the spread-roll swaps (default on).
    #[serde(default = "default_true")]
    pub equilibration: bool,
    /// How the pivots of a panel spread over the process rows (default `random`).
    #[serde(default)]
    pub pivots: Pivots,
    /// Seed of the pivot draws (default 1).
    #[serde(default = "default_pivot_seed")]
    pub pivot_seed: u64,
    /// `PMAP` (default row-major).
    #[serde(default, alias = "pmap")]
    pub rank_order: RankOrder,
    /// Where the panel factorisation runs (default `cpu`).
    #[serde(default)]
    pub panel: PanelUnit,
    /// How the pivot searches are written (default `messages`; `collapsed` for scale).
    #[serde(default)]
    pub pivot_search: PivotSearch,
    /// How host and GPU share the work (default `sequential`).
    #[serde(default)]
    pub process: ProcessModel,
    /// Host cores factorising a rank's panels; default: the node's cores over its GPUs.
    #[serde(default)]
    pub cores: Option<u32>,
    /// If set, the panel's copies between GPU and host are fixed delays at this rate (as the
    /// SMPI oracle charges them); by default they are messages over the node's route, shared
    /// with the other traffic.
    #[serde(default)]
    pub panel_copy_rate: Option<RawQuantity>,
    /// DGEMM/DTRSM rate of one GPU.
    pub gpu_dgemm: RawRateModel,
    /// DGEMM rate of one host core (the panel factorisation on the CPU); required when
    /// `panel = "cpu"`.
    #[serde(default)]
    pub cpu_dgemm: Option<RawRateModel>,
}

/// The checked parameters and the grid the program is built on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HplPlan {
    /// `N`.
    pub n: u64,
    /// `NB`.
    pub nb: u64,
    /// Process rows.
    pub p: u32,
    /// Process columns.
    pub q: u32,
    /// Number of panels, `⌈N/NB⌉`.
    pub panels: u64,
    /// GPU rate model.
    pub gpu: RateModel,
    /// CPU rate model of one rank (its cores together), if the panel runs there.
    pub cpu: Option<RateModel>,
    /// Bytes one rank needs in GPU memory (the largest over ranks).
    pub gpu_bytes_needed: f64,
    /// Rate of the panel's copies when they are fixed delays, B/s.
    pub panel_copy_bytes_per_sec: Option<f64>,
}

/// Bytes one GPU holds for a rank: its `m_loc × n_loc` part of the matrix plus an `L` panel
/// (`m_loc × NB`) and a `U` block (`NB × n_loc`), each double-buffered for look-ahead.
fn gpu_bytes(n: u64, nb: u64, p: u64, q: u64) -> f64 {
    let m = owned(0, n, nb, 0, p) as f64;
    let c = owned(0, n, nb, 0, q) as f64;
    (m * c + 2.0 * (m + c) * nb as f64) * WORD_BYTES
}

impl HplSpec {
    /// Check the parameters against `cluster` and fix the grid and rate models.
    pub fn plan(&self, cluster: &Cluster) -> Result<HplPlan, InputError> {
        if self.n == 0 {
            return Err(
                InputError::new("the matrix order N must be at least 1").at_field("workload.n")
            );
        }
        if self.nb == 0 {
            return Err(
                InputError::new("the block size NB must be at least 1").at_field("workload.nb")
            );
        }
        if self.nb > self.n {
            return Err(InputError::new(format!(
                "the block size NB = {} is larger than the matrix order N = {}",
                self.nb, self.n
            ))
            .at_field("workload.nb"));
        }
        if self.lookahead > 1 {
            return Err(InputError::new(format!(
                "look-ahead depth {} is not modelled: expected 0 or 1",
                self.lookahead
            ))
            .at_field("workload.lookahead"));
        }
        if self.nbmin == 0 {
            return Err(
                InputError::new("NBMIN must be at least 1 (HPL.dat's NBMINs (>= 1))")
                    .at_field("workload.nbmin"),
            );
        }
        if self.ndiv < 2 {
            return Err(InputError::new(format!(
                "NDIV = {} : a recursive panel factorisation splits in at least 2",
                self.ndiv
            ))
            .at_field("workload.ndiv"));
        }
        if self.cores == Some(0) {
            return Err(
                InputError::new("a rank needs at least 1 host core to factorise")
                    .at_field("workload.cores"),
            );
        }
        let ranks = cluster.ranks();
        let (p, q) = match (self.p, self.q) {
            (None, None) => {
                let (p, q) = square_grid(ranks as u64);
                (p as u32, q as u32)
            }
            (Some(p), None) => {
                if p == 0 || !ranks.is_multiple_of(p) {
                    return Err(InputError::new(format!(
                        "P = {p} does not divide the cluster's {ranks} ranks"
                    ))
                    .at_field("workload.p"));
                }
                (p, ranks / p)
            }
            (None, Some(q)) => {
                if q == 0 || !ranks.is_multiple_of(q) {
                    return Err(InputError::new(format!(
                        "Q = {q} does not divide the cluster's {ranks} ranks"
                    ))
                    .at_field("workload.q"));
                }
                (ranks / q, q)
            }
            (Some(p), Some(q)) => (p, q),
        };
        if p as u64 * q as u64 != ranks as u64 {
            return Err(InputError::new(format!(
                "the grid P × Q = {p} × {q} = {} does not match the cluster's {ranks} ranks \
                 ({} nodes × {} GPUs)",
                p as u64 * q as u64,
                cluster.nodes(),
                cluster.gpus_per_node()
            ))
            .at_field("workload.p"));
        }
        let gpu = RateModel::from_raw(&self.gpu_dgemm, "workload.gpu_dgemm")?;
        let cpu = match (self.panel, &self.cpu_dgemm) {
            (PanelUnit::Cpu, None) => {
                return Err(InputError::new(
                    "panel = \"cpu\" needs the host cores' DGEMM model [workload.cpu_dgemm] \
                     (peak per core, e_max, s_half)",
                )
                .at_field("workload.cpu_dgemm"));
            }
            (_, Some(raw)) => {
                let mut m = RateModel::from_raw(raw, "workload.cpu_dgemm")?;
                // The rank's share of the node's cores drive its GPU and factorise its panels.
                let cores = self.cores.unwrap_or_else(|| {
                    (cluster.node_machine().cpu_cores() / cluster.gpus_per_node()).max(1)
                });
                m.peak_flops_per_sec *= cores as f64;
                Some(m)
            }
            (PanelUnit::Gpu, None) => None,
        };
        let panel_copy_bytes_per_sec = match &self.panel_copy_rate {
            None => None,
            Some(q) => {
                let v = q.read(units::Kind::BytesPerSec).map_err(|e| {
                    InputError::new(e.to_string()).at_field("workload.panel_copy_rate")
                })?;
                if !(v.is_finite() && v > 0.0) {
                    return Err(InputError::new(format!(
                        "the panel copy rate must be > 0, got {v} B/s"
                    ))
                    .at_field("workload.panel_copy_rate"));
                }
                Some(v)
            }
        };
        let machine = cluster.node_machine();
        let capacity = machine
            .gpus()
            .first()
            .and_then(|g| machine.memory_node(g.memory))
            .map(|m| m.capacity_bytes as f64)
            .ok_or_else(|| {
                InputError::new(format!(
                    "the node machine `{}` has no GPU: HPL runs one rank per GPU",
                    machine.name()
                ))
                .at_field("machine")
            })?;
        let need = gpu_bytes(self.n, self.nb, p as u64, q as u64);
        if need > capacity {
            // Largest multiple of NB that fits: gpu_bytes grows with N, so bisect.
            let (mut lo, mut hi) = (0u64, self.n / self.nb + 1);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if gpu_bytes(mid * self.nb, self.nb, p as u64, q as u64) <= capacity {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            return Err(InputError::new(format!(
                "N = {} does not fit in GPU memory: each of the {p} × {q} ranks needs {} \
                 (its part of the matrix plus panel buffers) but a GPU has {}; the largest N \
                 (a multiple of NB = {}) that fits is {}",
                self.n,
                units::format_bytes(need),
                units::format_bytes(capacity),
                self.nb,
                lo * self.nb
            ))
            .at_field("workload.n"));
        }
        Ok(HplPlan {
            n: self.n,
            nb: self.nb,
            p,
            q,
            panels: self.n.div_ceil(self.nb),
            gpu,
            cpu,
            gpu_bytes_needed: need,
            panel_copy_bytes_per_sec,
        })
    }
}

impl HplSpec {
    /// The program's operations, into `b`, after checking the parameters against `cluster`.
    fn build<S: OpSink>(
        &self,
        cluster: &Cluster,
        b: ProgramBuilder<S>,
    ) -> Result<ProgramBuilder<S>, InputError> {
        let plan = self.plan(cluster)?;
        let copies = match plan.panel_copy_bytes_per_sec {
            Some(r) => build::Copies::Fixed(r),
            None => build::Copies::Link,
        };
        Ok(build::Builder::new(self, &plan, cluster, copies).build(b))
    }
}

impl ProgramGenerator for HplSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        Ok(self
            .build(cluster, ProgramBuilder::new(cluster.ranks()))?
            .build())
    }

    /// Straight into the graph: HPL's program is as large as its graph (151 bytes per
    /// operation at 1 024 ranks), so building it first would double the peak.
    fn generate_graph(&self, cluster: &Cluster) -> Result<TaskGraph, InputError> {
        let b = ProgramBuilder::for_task_graph(cluster.ranks(), 0, 0)?;
        self.build(cluster, b)?.into_task_graph()
    }

    fn counted_flops(&self) -> f64 {
        hpl_flops(self.n as f64)
    }
}

#[cfg(test)]
mod tests;
