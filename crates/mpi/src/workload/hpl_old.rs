//! The `hpl` workload: HPL's right-looking blocked LU with partial pivoting, panel by panel, as an
//! MPI-style [`Program`] on a [`Cluster`] (one rank per GPU, its part of the matrix in that GPU's
//! memory). `docs/hpl.md` describes the model in full; in short, for every panel `k` of `NB`
//! columns:
//!
//! 1. **panel factorisation** on the `P` ranks of process column `k mod Q` (on the host: the
//!    panel is copied device→host, factorised by the rank's cores, copied back; or on the GPU),
//!    followed by the **pivot search** cost: `NB` allreduces along the process column, each
//!    `⌈log2 P⌉` rounds of a small message (Kim et al. 2021 eq. 27), as one documented latency term
//!    ([`Op::Delay`](crate::Op::Delay)), not as messages;
//! 2. the **panel broadcast** along each process row, built from point-to-point messages:
//!    increasing ring (HPL's `1ring`), modified increasing ring (`1ringM`) or HPL's long
//!    spread-roll (`blong`); every receiver then copies the panel host→device;
//! 3. the **row swaps** in every process column, HPL's binary exchange (`SWAP = 0`): `⌈log2 P⌉`
//!    rounds, in round `j` row `r` exchanges the `NB × n_loc` block of `U` with row `r xor 2^j`;
//! 4. the **trailing update** on every rank's local part: `DTRSM` (`NB × NB` unit lower, `n_loc`
//!    right-hand sides, replicated on every process row as in HPL) then `DGEMM`
//!    (`m_loc × n_loc × NB`), as one GPU kernel call per part. With look-ahead depth 1 the ranks
//!    of the next panel's column split their update in two calls: the next panel's `NB` columns
//!    first (higher priority), then the rest, so the next factorisation overlaps the rest.
//!
//! Ranks are placed on the `P × Q` grid row-major by default (`rank = r·Q + c`, HPL's default
//! `PMAP`), so with `Q ≥ G` a process row lies on one node and process columns span nodes.

use serde::Deserialize;

use crate::{Buffer, Kernel, Message, OpId, Program, ProgramBuilder, RankId, Unit};
use hetsim_core::error::InputError;
use hetsim_core::linpack::{hpl_flops, square_grid};
use hetsim_core::units::{self, RawQuantity};
use hetsim_platform::cluster::{Cluster, Switch};

use super::ProgramGenerator;

/// Bytes of a double, HPL's element.
const WORD_BYTES: f64 = 8.0;

/// How the factorised panel travels along a process row (HPL's `BCAST` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BcastVariant {
    /// HPL's `1ring`: the root sends to its right neighbour, which forwards, and so on.
    #[default]
    IncreasingRing,
    /// HPL's `1ringM`: the root sends to its right neighbour (the next panel's owner) and to the
    /// one after, which starts the ring over the others.
    IncreasingRingModified,
    /// HPL's `blong` (spread-roll): the panel is cut in `Q − 1` pieces, the root sends one to
    /// every other process (spread), then the `Q − 1` receivers pass pieces around a ring until
    /// each has all of them (roll).
    Long,
}

/// Where the panel factorisation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PanelUnit {
    /// On the rank's host cores, as NVIDIA's CUDA HPL does: device→host copy, factorise,
    /// host→device copy.
    #[default]
    Cpu,
    /// On the GPU, in place.
    Gpu,
}

/// How ranks are laid on the `P × Q` grid (HPL's `PMAP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankOrder {
    /// `rank = r·Q + c` (HPL's default, `PMAP = 0`).
    #[default]
    RowMajor,
    /// `rank = c·P + r`.
    ColumnMajor,
}

/// A DGEMM rate model as written in the scenario (`[workload.gpu_dgemm]`,
/// `[workload.cpu_dgemm]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRateModel {
    /// Double-precision peak: of one GPU, or of one CPU core.
    pub peak: RawQuantity,
    /// Asymptotic fraction of the peak, in (0, 1].
    pub e_max: f64,
    /// Smallest dimension at which half of `e_max` is reached, elements (≥ 0).
    pub s_half: f64,
}

/// The DGEMM rate model: `rate(m, n, k) = peak · e_max · s / (s + s_half)`, `s = min(m, n, k)`.
///
/// Why this form: a GEMM's efficiency is limited by its smallest dimension (the arithmetic
/// intensity of an `m × n × k` product grows with `min(m, n, k)` until the device is
/// compute-bound), and it saturates at `e_max` for large sizes. `s_half` is where half of it is
/// reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateModel {
    /// Peak double-precision rate, flop/s.
    pub peak_flops_per_sec: f64,
    /// Asymptotic efficiency, (0, 1].
    pub e_max: f64,
    /// Half-efficiency size, elements.
    pub s_half: f64,
}

impl RateModel {
    /// The rate at smallest dimension `s`, flop/s.
    pub fn rate_flops_per_sec(&self, s: f64) -> f64 {
        self.peak_flops_per_sec * self.e_max * s / (s + self.s_half)
    }

    /// Time of `flops` flops at smallest dimension `s`, seconds (0 when there is nothing to do).
    pub fn secs(&self, flops: f64, s: f64) -> f64 {
        if flops <= 0.0 || s <= 0.0 {
            0.0
        } else {
            flops / self.rate_flops_per_sec(s)
        }
    }

    fn from_raw(raw: &RawRateModel, field: &str) -> Result<RateModel, InputError> {
        let peak = raw
            .peak
            .read(units::Kind::FlopsPerSec)
            .map_err(|e| InputError::new(e.to_string()).at_field(format!("{field}.peak")))?;
        if peak <= 0.0 {
            return Err(InputError::new(format!("the peak must be > 0, got {peak}"))
                .at_field(format!("{field}.peak")));
        }
        if !(raw.e_max.is_finite() && raw.e_max > 0.0 && raw.e_max <= 1.0) {
            return Err(InputError::new(format!(
                "the asymptotic efficiency must be in (0, 1], got {}",
                raw.e_max
            ))
            .at_field(format!("{field}.e_max")));
        }
        if !(raw.s_half.is_finite() && raw.s_half >= 0.0) {
            return Err(InputError::new(format!(
                "the half-efficiency size must be a finite number of elements >= 0, got {}",
                raw.s_half
            ))
            .at_field(format!("{field}.s_half")));
        }
        Ok(RateModel {
            peak_flops_per_sec: peak,
            e_max: raw.e_max,
            s_half: raw.s_half,
        })
    }
}

fn default_lookahead() -> u32 {
    1
}

/// `[workload]` with `kind = "hpl"` (the loader removes `kind`).
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
    /// Panel broadcast variant.
    #[serde(default)]
    pub bcast: BcastVariant,
    /// Look-ahead depth: 0 or 1 (default 1, as HPL's `DEPTH`).
    #[serde(default = "default_lookahead")]
    pub lookahead: u32,
    /// Where the panel factorisation runs (default `cpu`).
    #[serde(default)]
    pub panel: PanelUnit,
    /// How ranks map onto the grid (default `row-major`).
    #[serde(default)]
    pub rank_order: RankOrder,
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
                let cores = (cluster.node_machine().cpu_cores() / cluster.gpus_per_node()).max(1);
                m.peak_flops_per_sec *= cores as f64;
                Some(m)
            }
            (PanelUnit::Gpu, None) => None,
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
        })
    }
}

/// The seconds of the pivot search of one panel of width `b` in a process column: `b` column
/// allreduces of `⌈log2 P⌉` rounds, each round one message of `8·(2b + 4)` bytes (the candidate
/// row and its index, Kim et al. 2021 eq. 27: `NB·log P·(α + β(2NB + 4))`), costing o_s + o_r plus,
/// when the column spans nodes, the NIC and switch latencies and the bytes at NIC bandwidth.
fn pivot_secs(cluster: &Cluster, b: u64, p: u32, column_spans_nodes: bool) -> f64 {
    let rounds = (p as f64).log2().ceil();
    if rounds == 0.0 {
        return 0.0;
    }
    let bytes = WORD_BYTES * (2.0 * b as f64 + 4.0);
    let ov = cluster.overheads();
    let mut per = ov.send_s(bytes) + ov.recv_s(bytes);
    if column_spans_nodes && let Some(nic) = cluster.nic() {
        let crossings = match cluster.switch() {
            Switch::Crossbar { latency_s } => *latency_s,
            // The worst case, across the spine: three switch crossings.
            Switch::FatTree { latency_s, .. } => 3.0 * latency_s,
        };
        per += nic.latency_s + crossings + bytes / nic.bandwidth_bytes_per_sec;
    }
    b as f64 * rounds * per
}

/// Per-rank state carried from one panel to the next.
#[derive(Clone, Copy, Default)]
struct RankState {
    /// The last update of the rank's trailing matrix (None before the first).
    data: Option<OpId>,
    /// What the next panel factorisation on this rank waits for (the look-ahead update, or
    /// `data`).
    panel_ready: Option<OpId>,
}

impl ProgramGenerator for HplSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        let plan = self.plan(cluster)?;
        Ok(build(self, &plan, cluster))
    }

    fn counted_flops(&self) -> f64 {
        hpl_flops(self.n as f64)
    }
}

/// Push `op` to `deps` when present.
fn opt(deps: &mut Vec<OpId>, op: Option<OpId>) {
    if let Some(o) = op {
        deps.push(o);
    }
}

/// Build the program of a checked plan.
fn build(spec: &HplSpec, plan: &HplPlan, cluster: &Cluster) -> Program {
    let (n, nb) = (plan.n, plan.nb);
    let (p, q) = (plan.p as u64, plan.q as u64);
    let rank_of = |r: u64, c: u64| -> RankId {
        RankId(match spec.rank_order {
            RankOrder::RowMajor => (r * q + c) as u32,
            RankOrder::ColumnMajor => (c * p + r) as u32,
        })
    };
    let gpn = cluster.gpus_per_node() as u64;
    // Does process column c span more than one node?
    let col_spans: Vec<bool> = (0..q)
        .map(|c| {
            let node0 = rank_of(0, c).0 as u64 / gpn;
            (1..p).any(|r| rank_of(r, c).0 as u64 / gpn != node0)
        })
        .collect();
    let mut b = ProgramBuilder::new(cluster.ranks());
    // Upper bounds per panel (see the loop below): factorisation ≤ 3P + 2 (copies, kernels, join,
    // delay); broadcast messages, joins and receive copies; swaps ≤ Q·P·⌈log2 P⌉; updates
    // ≤ P·Q + P (one look-ahead split per row). Edges: about 1.9 per operation on a 32 × 32 grid
    // (swaps and copies have 1 or 2, updates 3 or 4); 2 reserved, the vector grows if needed.
    let log2p = (p as f64).log2().ceil() as u64;
    let bcast_ops = match spec.bcast {
        BcastVariant::Long if q > 2 => p * ((q - 1) * q + (q - 1)),
        _ => p * (q - 1),
    };
    let per_panel = 3 * p + 2 + bcast_ops + p * (q - 1) + q * p * log2p + p * q + p;
    let est = (per_panel * plan.panels) as usize;
    b.reserve(est, 2 * est);
    let mut st = vec![RankState::default(); (p * q) as usize];
    let idx = |r: u64, c: u64| (r * q + c) as usize;
    // Scratch, reused across panels.
    let mut piv_at = vec![OpId(0); (p * q) as usize]; // pivots known on the host
    let mut l_dev = vec![OpId(0); (p * q) as usize]; // L panel in device memory
    let mut deps: Vec<OpId> = Vec::with_capacity(8);
    let mut cur: Vec<[Option<OpId>; 2]> = vec![[None, None]; p as usize];
    let mut sent: Vec<Option<OpId>> = vec![None; p as usize];
    for k in 0..plan.panels {
        let j0 = k * nb;
        let bw = nb.min(n - j0);
        let t = j0 + bw;
        let (ck, rk) = (k % q, k % p);
        let bf = bw as f64;
        // 1. Panel factorisation on column ck.
        let rows_total = (n - j0) as f64;
        let panel_flops = rows_total * bf * bf - bf * bf * bf / 3.0;
        let mut fact = Vec::with_capacity(p as usize);
        for r in 0..p {
            let mp = owned(j0, n, nb, r, p);
            if mp == 0 {
                continue;
            }
            let rank = rank_of(r, ck);
            let flops = panel_flops * mp as f64 / rows_total;
            // Recursive factorisation: its largest products have inner dimension b/2.
            let s = (mp as f64).min((bf / 2.0).max(1.0));
            deps.clear();
            opt(&mut deps, st[idx(r, ck)].panel_ready);
            let bytes = mp as f64 * bf * WORD_BYTES;
            match spec.panel {
                PanelUnit::Cpu => {
                    let cpu = plan.cpu.expect("plan has a CPU model for panel = cpu");
                    let d2h = b.message(
                        Message {
                            src: rank,
                            dst: rank,
                            bytes,
                            from: Buffer::Device,
                            to: Buffer::Host,
                        },
                        &deps,
                    );
                    let f = b.kernel(
                        Kernel::new(rank, Unit::Cpu, "panel", cpu.secs(flops, s), flops),
                        &[d2h],
                    );
                    fact.push(f);
                }
                PanelUnit::Gpu => {
                    let f = b.kernel(
                        Kernel::new(rank, Unit::Gpu, "panel", plan.gpu.secs(flops, s), flops)
                            .with_priority(3),
                        &deps,
                    );
                    fact.push(f);
                }
            }
        }
        // Pivot search along the column: one latency term after all its ranks' work.
        let piv_s = pivot_secs(cluster, bw, plan.p, col_spans[ck as usize]);
        let panel_done = if fact.len() == 1 && piv_s == 0.0 {
            fact[0]
        } else {
            let j = if fact.len() == 1 {
                fact[0]
            } else {
                b.join(&fact)
            };
            b.delay(rank_of(rk, ck), piv_s, &[j])
        };
        for r in 0..p {
            piv_at[idx(r, ck)] = panel_done;
            let mp = owned(j0, n, nb, r, p);
            l_dev[idx(r, ck)] = match spec.panel {
                PanelUnit::Gpu => panel_done,
                PanelUnit::Cpu if mp == 0 => panel_done,
                PanelUnit::Cpu => {
                    let rank = rank_of(r, ck);
                    b.message(
                        Message {
                            src: rank,
                            dst: rank,
                            bytes: mp as f64 * bf * WORD_BYTES,
                            from: Buffer::Host,
                            to: Buffer::Device,
                        },
                        &[panel_done],
                    )
                }
            };
        }
        // 2. Panel broadcast along each process row.
        let root_buf = match spec.panel {
            PanelUnit::Cpu => Buffer::Host,
            PanelUnit::Gpu => Buffer::Device,
        };
        if q > 1 {
            for r in 0..p {
                let mp = owned(j0, n, nb, r, p);
                // L panel plus the pivot vector.
                let bytes = (mp as f64 * bf + bf) * WORD_BYTES;
                let msg = |src: RankId, dst: RankId, bytes: f64, from: Buffer| Message {
                    src,
                    dst,
                    bytes,
                    from,
                    to: Buffer::Host,
                };
                let root = rank_of(r, ck);
                let col = |i: u64| (ck + i) % q;
                match spec.bcast {
                    BcastVariant::IncreasingRing | BcastVariant::IncreasingRingModified => {
                        let mut first = 1;
                        if spec.bcast == BcastVariant::IncreasingRingModified && q > 2 {
                            let m = b.message(
                                msg(root, rank_of(r, col(1)), bytes, root_buf),
                                &[panel_done],
                            );
                            piv_at[idx(r, col(1))] = m;
                            first = 2;
                        }
                        let mut prev = (root, root_buf, panel_done);
                        for i in first..q {
                            let dst = rank_of(r, col(i));
                            let m = b.message(msg(prev.0, dst, bytes, prev.1), &[prev.2]);
                            piv_at[idx(r, col(i))] = m;
                            prev = (dst, Buffer::Host, m);
                        }
                    }
                    BcastVariant::Long => {
                        let others = q - 1;
                        let piece = bytes / others as f64;
                        // Spread: piece i to the i-th process to the right of the root.
                        let mut last: Vec<OpId> = (1..=others)
                            .map(|i| {
                                b.message(
                                    msg(root, rank_of(r, col(i)), piece, root_buf),
                                    &[panel_done],
                                )
                            })
                            .collect();
                        let mut got: Vec<Vec<OpId>> =
                            last.iter().map(|m| vec![*m]).collect::<Vec<_>>();
                        // Roll: others − 1 steps of a ring among the receivers; in each step
                        // process i forwards the piece it received in the previous step.
                        for _ in 1..others {
                            let mut next = vec![OpId(0); others as usize];
                            for i in 0..others {
                                let to = (i + 1) % others;
                                let m = b.message(
                                    msg(
                                        rank_of(r, col(i + 1)),
                                        rank_of(r, col(to + 1)),
                                        piece,
                                        Buffer::Host,
                                    ),
                                    &[last[i as usize]],
                                );
                                next[to as usize] = m;
                                got[to as usize].push(m);
                            }
                            last = next;
                        }
                        for (i, g) in got.iter().enumerate() {
                            let done = if g.len() == 1 { g[0] } else { b.join(g) };
                            piv_at[idx(r, col(i as u64 + 1))] = done;
                        }
                    }
                }
                // Receivers copy the panel to their GPU.
                for i in 1..q {
                    let c = col(i);
                    let rank = rank_of(r, c);
                    l_dev[idx(r, c)] = b.message(
                        Message {
                            src: rank,
                            dst: rank,
                            bytes,
                            from: Buffer::Host,
                            to: Buffer::Device,
                        },
                        &[piv_at[idx(r, c)]],
                    );
                }
            }
        }
        // 3. Row swaps (binary exchange) and 4. trailing update, column by column.
        let next_col = (k + 1 < plan.panels).then(|| (k + 1) % q);
        let next_bw = nb.min(n.saturating_sub(t));
        for c in 0..q {
            let n_loc = owned(t, n, nb, c, q);
            if n_loc == 0 {
                continue;
            }
            for r in 0..p {
                let mut d = [Some(piv_at[idx(r, c)]), st[idx(r, c)].data];
                if d[1].is_none() {
                    d.swap(0, 1);
                }
                cur[r as usize] = d;
            }
            let u_bytes = bf * n_loc as f64 * WORD_BYTES;
            let mut bit = 1u64;
            while bit < p {
                for r in 0..p {
                    let partner = r ^ bit;
                    sent[r as usize] = if partner < p {
                        deps.clear();
                        deps.extend(cur[r as usize].iter().flatten());
                        Some(b.message(
                            Message::device(rank_of(r, c), rank_of(partner, c), u_bytes),
                            &deps,
                        ))
                    } else {
                        None
                    };
                }
                // The next round of a rank waits for what it received and what it sent.
                for r in 0..p {
                    let partner = r ^ bit;
                    if partner < p {
                        cur[r as usize] = [sent[partner as usize], sent[r as usize]];
                    }
                }
                bit <<= 1;
            }
            let la_cols = if next_col == Some(c) && spec.lookahead == 1 {
                next_bw.min(n_loc)
            } else {
                0
            };
            for r in 0..p {
                let m_loc = owned(t, n, nb, r, p);
                let rank = rank_of(r, c);
                deps.clear();
                deps.extend(cur[r as usize].iter().flatten());
                deps.push(l_dev[idx(r, c)]);
                let update = |cols: u64, prio: i32, b: &mut ProgramBuilder| -> OpId {
                    let nc = cols as f64;
                    let mf = m_loc as f64;
                    let trsm_flops = bf * bf * nc;
                    let gemm_flops = 2.0 * mf * nc * bf;
                    let secs = plan.gpu.secs(trsm_flops, bf.min(nc))
                        + plan.gpu.secs(gemm_flops, mf.min(nc).min(bf));
                    b.kernel(
                        Kernel::new(rank, Unit::Gpu, "update", secs, trsm_flops + gemm_flops)
                            .with_priority(prio),
                        &deps,
                    )
                };
                let s = &mut st[idx(r, c)];
                if la_cols > 0 {
                    let la = update(la_cols, 2, &mut b);
                    s.panel_ready = Some(la);
                    s.data = Some(if n_loc > la_cols {
                        update(n_loc - la_cols, 0, &mut b)
                    } else {
                        la
                    });
                } else {
                    let u = update(n_loc, 0, &mut b);
                    s.data = Some(u);
                    s.panel_ready = Some(u);
                }
            }
        }
    }
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    fn node4() -> Cluster {
        let m = hetsim_platform::machine::load(hetsim_testkit::repo(
            "calibration/hdpex-p100-node.toml",
        ))
        .unwrap();
        Cluster::single_node(m)
    }

    fn spec(n: u64, nb: u64) -> HplSpec {
        HplSpec {
            n,
            nb,
            p: None,
            q: None,
            bcast: BcastVariant::IncreasingRing,
            lookahead: 0,
            panel: PanelUnit::Gpu,
            rank_order: RankOrder::RowMajor,
            gpu_dgemm: RawRateModel {
                peak: RawQuantity::Text("4.7 Tflop/s".into()),
                e_max: 0.8,
                s_half: 0.0,
            },
            cpu_dgemm: None,
        }
    }

    /// Messages between two different ranks whose payload lands in host memory (the panel
    /// broadcast), between devices (row swaps), and copies within a rank.
    fn classify(p: &Program) -> (usize, usize, usize) {
        let (mut bcast, mut swap, mut copies) = (0, 0, 0);
        for op in p.ops() {
            if let Op::Message(m) = op {
                if m.src == m.dst {
                    copies += 1;
                } else if m.to == Buffer::Host {
                    bcast += 1;
                } else {
                    swap += 1;
                }
            }
        }
        (bcast, swap, copies)
    }

    fn kernels<'a>(p: &'a Program, name: &'a str) -> impl Iterator<Item = &'a Kernel> + 'a {
        p.ops().iter().filter_map(move |o| match o {
            Op::Kernel(k) if k.name == name => Some(k),
            _ => None,
        })
    }

    #[test]
    fn two_by_two_grid_counts_by_hand() {
        // 4 ranks on one node: square_grid(4) = 2 × 2. N = 4·NB: 4 panels, blocks 0..3 dealt
        // cyclically (block i to row i mod 2 and column i mod 2).
        let nb = 100;
        let s = spec(4 * nb, nb);
        let c = node4();
        let plan = s.plan(&c).unwrap();
        assert_eq!((plan.p, plan.q, plan.panels), (2, 2, 4));
        let prog = s.generate(&c).unwrap();
        // Panel k covers row blocks k..3: both process rows own some for k = 0, 1, 2, only row 1
        // for k = 3 (block 3): 2 + 2 + 2 + 1 factorisation kernels.
        assert_eq!(kernels(&prog, "panel").count(), 7);
        let (bcast, swap, copies) = classify(&prog);
        // Ring: P·(Q − 1) = 2 messages per panel, 4 panels.
        assert_eq!(bcast, 8);
        // Every receiver copies the panel to its GPU: 2 per panel (panel = gpu: no other copy).
        assert_eq!(copies, 8);
        // Binary exchange with P = 2: one round, 2 messages per process column that has
        // trailing columns. Trailing column blocks after panel k: k=0 {1,2,3} (both columns),
        // k=1 {2,3} (both), k=2 {3} (column 1), k=3 none: 4 + 4 + 2 = 10.
        assert_eq!(swap, 10);
        // One update per rank with trailing columns: 4 + 4 + 2 = 10.
        assert_eq!(kernels(&prog, "update").count(), 10);
        // Update flops: DGEMM 2·(N − t)²·NB per panel over the whole grid, t = (k+1)·NB:
        // 2·NB³·(9 + 4 + 1) = 28·NB³; DTRSM NB²·(N − t) per process row (replicated on P = 2
        // rows): 2·NB³·(3 + 2 + 1) = 12·NB³. Total 40·NB³.
        let upd: f64 = kernels(&prog, "update").map(|k| k.flops).sum();
        assert_eq!(upd, 40.0 * (nb as f64).powi(3));
        assert_eq!(
            s.counted_flops(),
            2.0 * 400f64.powi(3) / 3.0 + 1.5 * 400f64.powi(2)
        );
    }

    #[test]
    fn lookahead_splits_the_next_panels_columns() {
        // Same 2 × 2 case with look-ahead 1. After panel 0 the next panel's column (1) holds
        // trailing blocks {1, 3}: split into the next panel's NB columns and the rest on both
        // rows (+2 kernels); after panels 1 and 2 the next column holds exactly the next panel
        // (one block): no split. 10 + 2 = 12 update kernels, 2 + 1 + 1 = 4... of priority 2:
        // column 1 after k=0 (2 rows), column 0 after k=1 (2 rows), column 1 after k=2 (2 rows).
        let nb = 100;
        let s = HplSpec {
            lookahead: 1,
            ..spec(4 * nb, nb)
        };
        let prog = s.generate(&node4()).unwrap();
        assert_eq!(kernels(&prog, "update").count(), 12);
        assert_eq!(
            kernels(&prog, "update").filter(|k| k.priority == 2).count(),
            6
        );
        // The factorisation of panel 1 waits for the look-ahead part, not the rest.
        for (i, op) in prog.ops().iter().enumerate() {
            if let Op::Kernel(k) = op
                && k.name == "panel"
                && i > 0
                && !prog.preds(OpId(i as u32)).is_empty()
            {
                for p in prog.preds(OpId(i as u32)) {
                    match prog.ops()[p.index()] {
                        Op::Kernel(u) => assert_eq!(u.priority, 2, "{u:?}"),
                        ref o => panic!("panel waits for {o:?}"),
                    }
                }
            }
        }
        // Same flops as without look-ahead: the split only cuts the kernels.
        let upd: f64 = kernels(&prog, "update").map(|k| k.flops).sum();
        assert_eq!(upd, 40.0 * 1e6);
    }

    #[test]
    fn ring_is_a_chain_from_the_root() {
        // 1 × 4 grid (P given): panel 0 is owned by column 0, the ring goes 0 → 1 → 2 → 3.
        let s = HplSpec {
            p: Some(1),
            ..spec(400, 100)
        };
        let prog = s.generate(&node4()).unwrap();
        let hops: Vec<(u32, u32)> = prog
            .ops()
            .iter()
            .filter_map(|o| match o {
                Op::Message(m) if m.src != m.dst && m.to == Buffer::Host => {
                    Some((m.src.0, m.dst.0))
                }
                _ => None,
            })
            .take(3)
            .collect();
        assert_eq!(hops, vec![(0, 1), (1, 2), (2, 3)]);
        // P = 1: no swap messages.
        assert_eq!(classify(&prog).1, 0);
    }

    #[test]
    fn ring_modified_and_long_message_counts() {
        // 1 × 4 grid, 4 panels. 1ringM: root → c+1, root → c+2, c+2 → c+3: 3 = Q − 1 per panel.
        let m = HplSpec {
            p: Some(1),
            bcast: BcastVariant::IncreasingRingModified,
            ..spec(400, 100)
        };
        let prog = m.generate(&node4()).unwrap();
        assert_eq!(classify(&prog).0, 12);
        let first: Vec<u32> = prog
            .ops()
            .iter()
            .filter_map(|o| match o {
                Op::Message(m) if m.src != m.dst && m.to == Buffer::Host => Some(m.src.0),
                _ => None,
            })
            .take(3)
            .collect();
        assert_eq!(first, vec![0, 0, 2]);
        // Long: spread Q − 1 = 3, roll (Q − 1)(Q − 2) = 6: 9 per panel, 36 in all; each
        // receiver gets the whole panel: 3 pieces of a third.
        let l = HplSpec {
            p: Some(1),
            bcast: BcastVariant::Long,
            ..spec(400, 100)
        };
        let prog = l.generate(&node4()).unwrap();
        assert_eq!(classify(&prog).0, 36);
        let into1: f64 = prog
            .ops()
            .iter()
            .take_while(|o| !matches!(o, Op::Kernel(k) if k.name == "update"))
            .filter_map(|o| match o {
                Op::Message(m) if m.src != m.dst && m.dst == RankId(1) => Some(m.bytes),
                _ => None,
            })
            .sum();
        // Panel 0: 400 rows × 100 columns plus 100 pivots, doubles.
        assert!(
            (into1 - (400.0 * 100.0 + 100.0) * 8.0).abs() < 1e-6,
            "{into1}"
        );
    }

    #[test]
    fn cpu_panel_copies_down_and_up() {
        // 1 × 1 grid is not possible on 4 GPUs; use P = 2 (2 × 2). Panel = cpu: every
        // factorising rank copies its panel rows device → host, and host → device after the
        // pivot search: 2 × 7 copies, plus the 8 copies of the receivers.
        let s = HplSpec {
            panel: PanelUnit::Cpu,
            cpu_dgemm: Some(RawRateModel {
                peak: RawQuantity::Text("35.2 Gflop/s".into()),
                e_max: 0.9,
                s_half: 0.0,
            }),
            ..spec(400, 100)
        };
        let prog = s.generate(&node4()).unwrap();
        assert_eq!(classify(&prog).2, 14 + 8);
        assert!(kernels(&prog, "panel").all(|k| k.unit == Unit::Cpu));
    }

    #[test]
    fn rate_model_by_hand() {
        // 4.7 Tflop/s × 0.8 × 384/(384 + 128) = 2.82 Tflop/s.
        let m = RateModel {
            peak_flops_per_sec: 4.7e12,
            e_max: 0.8,
            s_half: 128.0,
        };
        assert!((m.rate_flops_per_sec(384.0) - 2.82e12).abs() < 1e3);
        assert!((m.secs(2.82e12, 384.0) - 1.0).abs() < 1e-12);
        assert_eq!(m.secs(0.0, 384.0), 0.0);
    }

    fn field(e: &InputError) -> &str {
        e.location.field.as_deref().unwrap_or("")
    }

    #[test]
    fn error_n_zero() {
        let e = spec(0, 1).plan(&node4()).unwrap_err();
        assert_eq!(field(&e), "workload.n");
    }

    #[test]
    fn error_nb_zero() {
        let e = spec(10, 0).plan(&node4()).unwrap_err();
        assert_eq!(field(&e), "workload.nb");
    }

    #[test]
    fn error_nb_larger_than_n() {
        let e = spec(10, 20).plan(&node4()).unwrap_err();
        assert_eq!(field(&e), "workload.nb");
        assert!(e.message.contains("larger"), "{}", e.message);
    }

    #[test]
    fn error_lookahead_two() {
        let e = HplSpec {
            lookahead: 2,
            ..spec(400, 100)
        }
        .plan(&node4())
        .unwrap_err();
        assert_eq!(field(&e), "workload.lookahead");
    }

    #[test]
    fn error_p_does_not_divide() {
        let e = HplSpec {
            p: Some(3),
            ..spec(400, 100)
        }
        .plan(&node4())
        .unwrap_err();
        assert_eq!(field(&e), "workload.p");
        assert!(e.message.contains("4 ranks"), "{}", e.message);
    }

    #[test]
    fn error_q_does_not_divide() {
        let e = HplSpec {
            q: Some(3),
            ..spec(400, 100)
        }
        .plan(&node4())
        .unwrap_err();
        assert_eq!(field(&e), "workload.q");
    }

    #[test]
    fn error_grid_does_not_match_ranks() {
        let e = HplSpec {
            p: Some(2),
            q: Some(3),
            ..spec(400, 100)
        }
        .plan(&node4())
        .unwrap_err();
        assert_eq!(field(&e), "workload.p");
        assert!(e.message.contains("2 × 3 = 6"), "{}", e.message);
    }

    #[test]
    fn error_efficiency_out_of_range() {
        let mut s = spec(400, 100);
        s.gpu_dgemm.e_max = 1.5;
        let e = s.plan(&node4()).unwrap_err();
        assert_eq!(field(&e), "workload.gpu_dgemm.e_max");
    }

    #[test]
    fn error_peak_unit() {
        let mut s = spec(400, 100);
        s.gpu_dgemm.peak = RawQuantity::Text("4.7 GB/s".into());
        let e = s.plan(&node4()).unwrap_err();
        assert_eq!(field(&e), "workload.gpu_dgemm.peak");
    }

    #[test]
    fn error_negative_half_size() {
        let mut s = spec(400, 100);
        s.gpu_dgemm.s_half = -1.0;
        let e = s.plan(&node4()).unwrap_err();
        assert_eq!(field(&e), "workload.gpu_dgemm.s_half");
    }

    #[test]
    fn error_cpu_panel_without_cpu_model() {
        let e = HplSpec {
            panel: PanelUnit::Cpu,
            ..spec(400, 100)
        }
        .plan(&node4())
        .unwrap_err();
        assert_eq!(field(&e), "workload.cpu_dgemm");
    }

    #[test]
    fn error_matrix_too_large_for_gpu_memory() {
        // One rank (P = Q = 1) needs (N² + 4·N·NB)·8 bytes; 16 GiB = 2^31 doubles. With
        // NB = 384: N² + 1536·N ≤ 2^31 gives N ≤ 45 579, so the largest multiple of 384 is
        // 118 × 384 = 45 312 (45 312² + 1536·45 312 = 2 122 776 576 ≤ 2 147 483 648, and
        // 45 696 gives 2 158 313 472 >).
        let m = hetsim_platform::machine::load(hetsim_testkit::repo(
            "calibration/hdpex-p100-node.toml",
        ))
        .unwrap();
        // One GPU: square_grid(1) = 1 × 1; fits at 45 312, not at 45 696.
        let c = Cluster::single_node(m).with_shape(1, 1).unwrap();
        assert!(spec(45_312, 384).plan(&c).is_ok());
        let e = spec(45_696, 384).plan(&c).unwrap_err();
        assert_eq!(field(&e), "workload.n");
        assert!(e.message.contains("45312"), "{}", e.message);
        assert!(e.message.contains("16.000 GiB"), "{}", e.message);
    }

    #[test]
    fn error_unknown_field_and_variant() {
        let base = "n = 400\nnb = 100\ngpu_dgemm = { peak = \"4.7 Tflop/s\", e_max = 0.8, \
                    s_half = 0 }\n";
        assert!(toml::from_str::<HplSpec>(base).is_ok());
        let e = toml::from_str::<HplSpec>(&format!("{base}depth = 1\n")).unwrap_err();
        assert!(e.to_string().contains("depth"), "{e}");
        let e = toml::from_str::<HplSpec>(&format!("{base}bcast = \"2ring\"\n")).unwrap_err();
        assert!(e.to_string().contains("increasing-ring"), "{e}");
    }

    #[test]
    fn owned_counts_match_a_direct_count() {
        for &(lo, hi, nb, np) in &[(0u64, 10u64, 3u64, 2u64), (4, 23, 4, 3), (7, 7, 2, 2)] {
            for c in 0..np {
                let direct = (lo..hi).filter(|i| (i / nb) % np == c).count() as u64;
                assert_eq!(owned(lo, hi, nb, c, np), direct, "{lo} {hi} {nb} {c} {np}");
            }
        }
    }
}
