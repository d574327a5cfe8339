//! The `stencil` workload: explicit time stepping of a 3-D regular grid decomposed in 2-D over
//! the GPUs, with halo exchange between neighbours, as an MPI-style program (Shimokawabe et al. 2013,
//! "Scalability model for multi-GPU computation of stencil applications").
//!
//! The `nx × ny × nz` grid is cut along y and z into a `py × pz` grid of subdomains, one per
//! rank; x, the contiguous dimension, is kept whole (Shimokawabe et al. 2013 §6 decomposes in 2-D; its LBM
//! grids are `192 × N × N`, the small x kept whole, as [`hetsim_analytic::stencil::Mesh2d`]
//! does). Rank r holds subdomain `(iy, iz) = (r mod py, r / py)`, so consecutive ranks — the
//! GPUs of one node — are y-neighbours. Boundaries are not periodic: a subdomain on the edge of
//! the grid has fewer neighbours.
//!
//! Each time step every rank updates its points on its GPU and sends the `halo` layers next to
//! each of its (up to four) neighbours, `face points × halo × bytes per boundary point` bytes,
//! GPU memory to GPU memory: the executor moves such a message through host memory in seed
//! 004's three steps (GPU → CPU over PCIe, CPU → CPU over the network, CPU → GPU), each on the
//! fluid network, so GPUs sharing a NIC slow each other down.
//!
//! Two methods (Shimokawabe et al. 2013 §3.2-3.3, Fig. 2):
//!
//! - **non-overlapping**: one kernel updates the whole subdomain, then the halos are exchanged;
//!   the next step starts when the rank's sends and receives are done (Shimokawabe et al. 2013 eq. 2's
//!   `V/P + Σ s/B(s)`);
//! - **overlapping**: one kernel per face that has a neighbour updates that face's boundary
//!   layer first; each face's message leaves as soon as its kernel is done, while the inner
//!   kernel updates the rest (eq. 4's `max(V/P, Σ s/B(s))`, plus the boundary kernels the
//!   paper neglects).
//!
//! Kernel time: `points × t_point`, with `t_point` either `1 / points_per_sec` (a calibrated
//! rate) or the Improved Roofline (Shimokawabe et al. 2013 eq. 1 with α = 0): `t_point = F/F_peak + B/B_peak`
//! with `F`, `B` the flops and memory bytes per point and the peaks of the rank's GPU from the
//! node machine file.
//!
//! Scaling: by default `nx × ny × nz` is the whole grid (strong scaling: fixed grid, more ranks).
//! With `grid_per_rank = true` it is each rank's subdomain and the whole grid is
//! `nx × (ny·py) × (nz·pz)` (weak scaling). Either way `hetsim sweep --vary machine.nodes=...`
//! varies the rank count.

use serde::Deserialize;

use crate::{Kernel, Message, OpId, Program, ProgramBuilder, RankId, Unit};
use hetsim_core::error::InputError;
use hetsim_models::roofline::ComputePlusMemory;
use hetsim_platform::cluster::Cluster;

use super::ProgramGenerator;

/// Largest number of operations a stencil program may have (steps × ranks × (kernels +
/// messages)). Beyond this the program needs gigabytes; use fewer steps (every step is the
/// same, Shimokawabe et al. 2013 §5).
pub const MAX_STENCIL_OPS: u64 = 20_000_000;

/// The applications of Shimokawabe et al. 2013, which fill the per-point figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StencilPreset {
    /// 3-D diffusion, 7-point stencil, single precision (Shimokawabe et al. 2013 §6.1).
    Diffusion,
    /// D3Q19 lattice Boltzmann, single precision (Shimokawabe et al. 2013 §6.2).
    Lbm,
}

/// Per-point figures of a preset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PresetFigures {
    /// Flops to update one point for one step.
    pub flops_per_point: f64,
    /// Device-memory bytes moved to update one point (the Improved Roofline's `B`).
    pub bytes_per_point: f64,
    /// Bytes sent per boundary point of one halo layer.
    pub bytes_per_boundary_point: f64,
    /// Halo width, points.
    pub halo: u64,
}

impl StencilPreset {
    /// The figures from Shimokawabe et al. 2013.
    ///
    /// - Diffusion: 13 flops per point (§6.1.1); arithmetic intensity F/B = 0.41 (§6.1.2), so
    ///   B = 13/0.41 ≈ 32 bytes; we take B = 32 (8 single-precision accesses: 7 reads and 1
    ///   write), F/B = 0.406, which reproduces both of the paper's Improved Roofline figures:
    ///   0.40625/(0.40625 + 1030/148)·1030 = 56.8 Gflop/s on an M2050 and
    ///   0.40625/(0.40625 + 3950/250)·3950 = 99.0 Gflop/s on a K20X (§6.1.2, §6.1.3). One
    ///   4-byte value per boundary point, halo 1 ("a one element thick mesh is transferred",
    ///   §6.1.2).
    /// - LBM: 476 flops per point (§6.2.1); F/B = 1.83 (§6.2.2), so B = 476/1.83 = 260.1; we
    ///   take 260 bytes (65 single-precision values), F/B = 1.8308, giving
    ///   1.8308/(1.8308 + 6.9595)·1030 = 214.5 Gflop/s on an M2050, the paper's figure. 13
    ///   4-byte values per boundary point (§6.2.2), halo 1.
    pub fn figures(self) -> PresetFigures {
        match self {
            StencilPreset::Diffusion => PresetFigures {
                flops_per_point: 13.0,
                bytes_per_point: 32.0,
                bytes_per_boundary_point: 4.0,
                halo: 1,
            },
            StencilPreset::Lbm => PresetFigures {
                flops_per_point: 476.0,
                bytes_per_point: 260.0,
                bytes_per_boundary_point: 13.0 * 4.0,
                halo: 1,
            },
        }
    }
}

/// How computation and halo exchange are ordered (Shimokawabe et al. 2013 §3.2-3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum StencilMethod {
    /// Compute the whole subdomain, then exchange.
    #[serde(rename = "non-overlapping")]
    NonOverlapping,
    /// Boundary kernels first, then the inner kernel concurrent with the exchange.
    #[serde(rename = "overlapping")]
    Overlapping,
}

/// How a rank sends its halo messages within a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StencilExchange {
    /// One message after the other, each one's three steps done before the next starts: the
    /// paper's codes copy the faces with blocking calls and its model sums the messages
    /// (Shimokawabe et al. 2013 eq. 3, `Σ_j`).
    #[default]
    Sequential,
    /// All of a rank's messages at once, sharing the links (non-blocking sends, several copy
    /// streams).
    Concurrent,
}

/// `[workload]` with `kind = "stencil"`.
///
/// Per-point figures come from `preset` unless given; without a preset `flops_per_point`,
/// `bytes_per_boundary_point` and either `bytes_per_point` (roofline) or `points_per_sec` are
/// required.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StencilSpec {
    /// `"diffusion"` or `"lbm"`: fills the per-point figures from Shimokawabe et al. 2013.
    #[serde(default)]
    pub preset: Option<StencilPreset>,
    /// Grid points along x (kept whole).
    pub nx: u64,
    /// Grid points along y (split in `py`).
    pub ny: u64,
    /// Grid points along z (split in `pz`).
    pub nz: u64,
    /// `nx × ny × nz` is each rank's subdomain (weak scaling), not the whole grid.
    #[serde(default)]
    pub grid_per_rank: bool,
    /// Subdomains along y; default: as square as possible (`py ≤ pz`, `py·pz` = ranks).
    #[serde(default)]
    pub py: Option<u64>,
    /// Subdomains along z; default: ranks / `py`.
    #[serde(default)]
    pub pz: Option<u64>,
    /// Halo width, points (default: the preset's, else 1).
    #[serde(default)]
    pub halo: Option<u64>,
    /// Bytes sent per boundary point of one halo layer.
    #[serde(default)]
    pub bytes_per_boundary_point: Option<f64>,
    /// Flops to update one point for one step.
    #[serde(default)]
    pub flops_per_point: Option<f64>,
    /// Device-memory bytes moved per point update (Improved Roofline `B`).
    #[serde(default)]
    pub bytes_per_point: Option<f64>,
    /// A calibrated GPU rate, points per second; replaces the Improved Roofline.
    #[serde(default)]
    pub points_per_sec: Option<f64>,
    /// Time steps.
    pub steps: u64,
    /// `"non-overlapping"` or `"overlapping"`.
    pub method: StencilMethod,
    /// `"sequential"` (default) or `"concurrent"` halo messages.
    #[serde(default)]
    pub exchange: StencilExchange,
}

/// Everything [`StencilSpec::generate`] derives before building: the layout and per-point costs.
#[derive(Debug, Clone, PartialEq)]
pub struct StencilLayout {
    /// The whole grid (nx, ny, nz).
    pub grid: (u64, u64, u64),
    /// Subdomains along y and z.
    pub py: u64,
    /// Subdomains along z.
    pub pz: u64,
    /// Halo width.
    pub halo: u64,
    /// Flops per point update.
    pub flops_per_point: f64,
    /// Bytes sent per boundary point per halo layer.
    pub bytes_per_boundary_point: f64,
    /// Seconds to update one point on each rank's GPU (index = rank).
    pub secs_per_point: Vec<f64>,
}

impl StencilLayout {
    /// The extent of part `i` of `n` points cut in `p`: `n(i+1)/p − n·i/p` (parts differ by at
    /// most one point).
    fn part(n: u64, p: u64, i: u64) -> u64 {
        let n = n as u128;
        let (p, i) = (p as u128, i as u128);
        (n * (i + 1) / p - n * i / p) as u64
    }

    /// Rank r's subdomain position `(iy, iz)`.
    pub fn coords(&self, r: RankId) -> (u64, u64) {
        (r.0 as u64 % self.py, r.0 as u64 / self.py)
    }

    /// Rank r's subdomain extents `(nx, ly, lz)`.
    pub fn extents(&self, r: RankId) -> (u64, u64, u64) {
        let (iy, iz) = self.coords(r);
        (
            self.grid.0,
            Self::part(self.grid.1, self.py, iy),
            Self::part(self.grid.2, self.pz, iz),
        )
    }

    /// Rank r's neighbours, in the order y−, y+, z−, z+ (those that exist).
    pub fn neighbours(&self, r: RankId) -> Vec<(Face, RankId)> {
        let (iy, iz) = self.coords(r);
        let at = |y: u64, z: u64| RankId((z * self.py + y) as u32);
        let mut out = Vec::with_capacity(4);
        if iy > 0 {
            out.push((Face::YLow, at(iy - 1, iz)));
        }
        if iy + 1 < self.py {
            out.push((Face::YHigh, at(iy + 1, iz)));
        }
        if iz > 0 {
            out.push((Face::ZLow, at(iy, iz - 1)));
        }
        if iz + 1 < self.pz {
            out.push((Face::ZHigh, at(iy, iz + 1)));
        }
        out
    }

    /// Bytes rank r sends through `face`: face points × halo × bytes per boundary point, the
    /// face of a y-side being `nx × lz` points and of a z-side `nx × ly`.
    pub fn halo_bytes(&self, r: RankId, face: Face) -> f64 {
        let (nx, ly, lz) = self.extents(r);
        let face_points = match face {
            Face::YLow | Face::YHigh => nx * lz,
            Face::ZLow | Face::ZHigh => nx * ly,
        };
        face_points as f64 * self.halo as f64 * self.bytes_per_boundary_point
    }

    /// Points of rank r's boundary regions, one per face with a neighbour (in
    /// [`Self::neighbours`] order), and of its inner region. The y-side layers span the whole
    /// z extent (corners included); the z-side layers span what the y-side layers leave; a layer
    /// is at most `halo` thick and the layers never overlap, so the parts sum to the subdomain.
    pub fn regions(&self, r: RankId) -> (Vec<u64>, u64) {
        let (nx, ly, lz) = self.extents(r);
        let faces = self.neighbours(r);
        let mut y_left = ly;
        let mut boundary = Vec::with_capacity(faces.len());
        for (f, _) in &faces {
            if matches!(f, Face::YLow | Face::YHigh) {
                let t = self.halo.min(y_left);
                y_left -= t;
                boundary.push(nx * t * lz);
            }
        }
        let mut z_left = lz;
        for (f, _) in &faces {
            if matches!(f, Face::ZLow | Face::ZHigh) {
                let t = self.halo.min(z_left);
                z_left -= t;
                boundary.push(nx * y_left * t);
            }
        }
        (boundary, nx * y_left * z_left)
    }
}

/// A side of a subdomain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    /// Towards iy − 1.
    YLow,
    /// Towards iy + 1.
    YHigh,
    /// Towards iz − 1.
    ZLow,
    /// Towards iz + 1.
    ZHigh,
}

fn err(field: &str, message: impl Into<String>) -> InputError {
    InputError::new(message).at_field(format!("workload.{field}"))
}

fn positive_field(field: &str, v: f64) -> Result<f64, InputError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(err(field, format!("expected a finite number > 0, got {v}")))
    }
}

/// The decomposition closest to a square: the largest divisor `py` of `r` with `py² ≤ r`.
pub fn squarest(r: u64) -> (u64, u64) {
    let mut py = 1;
    let mut d = 1;
    while d * d <= r {
        if r.is_multiple_of(d) {
            py = d;
        }
        d += 1;
    }
    (py, r / py)
}

impl StencilSpec {
    /// The figures of the preset, if any.
    fn preset_figures(&self) -> Option<PresetFigures> {
        self.preset.map(StencilPreset::figures)
    }

    /// Flops per point update: given, or the preset's.
    pub fn flops_per_point(&self) -> Result<f64, InputError> {
        match (self.flops_per_point, self.preset_figures()) {
            (Some(f), _) => positive_field("flops_per_point", f),
            (None, Some(p)) => Ok(p.flops_per_point),
            (None, None) => Err(err(
                "flops_per_point",
                "missing: give flops_per_point or a preset (\"diffusion\" or \"lbm\")",
            )),
        }
    }

    /// [`StencilSpec::layout`] on `cluster`: its ranks, each with its GPU's peaks from the node
    /// file.
    ///
    /// Refuses a subdomain that cannot fit in its GPU's memory: a rank holds at least two time
    /// levels of the values it exchanges (`bytes_per_boundary_point` per point) over its share
    /// of the grid, a lower bound of what the real code keeps (halos and other fields aside).
    pub fn layout_on(&self, cluster: &Cluster) -> Result<StencilLayout, InputError> {
        let machine = cluster.node_machine();
        let layout = self.layout(cluster.ranks(), |r| {
            let (_, gpu) = cluster.rank_location(r);
            machine
                .gpus()
                .get(gpu.index())
                .map(|g| (g.peak_flops_per_sec, g.memory_bandwidth_bytes_per_sec))
                .unwrap_or((None, None))
        })?;
        let capacity = machine
            .gpus()
            .iter()
            .filter_map(|g| machine.memory_node(g.memory))
            .map(|m| m.capacity_bytes as f64)
            .fold(f64::INFINITY, f64::min);
        let (nx, ny, nz) = layout.grid;
        let points = nx as f64 * ny as f64 * nz as f64 / (layout.py * layout.pz) as f64;
        let need = 2.0 * layout.bytes_per_boundary_point * points;
        if need > capacity {
            return Err(InputError::new(format!(
                "a {nx} × {ny} × {nz} grid over {} × {} ranks does not fit in GPU memory: each \
                 rank's share is {points:.3e} points, at least {} (two \
                 time levels of {} B per point) but a GPU has {}; use a smaller grid or more ranks",
                layout.py,
                layout.pz,
                hetsim_core::units::format_bytes(need),
                layout.bytes_per_boundary_point,
                hetsim_core::units::format_bytes(capacity),
            ))
            .at_field("workload.nx"));
        }
        Ok(layout)
    }

    /// Check the parameters against `ranks` and derive the layout; `gpu_peaks(r)` gives rank
    /// r's GPU peaks `(flop/s, bytes/s)` when known.
    pub fn layout(
        &self,
        ranks: u32,
        gpu_peaks: impl Fn(RankId) -> (Option<f64>, Option<f64>),
    ) -> Result<StencilLayout, InputError> {
        let preset = self.preset_figures();
        for (name, v) in [("nx", self.nx), ("ny", self.ny), ("nz", self.nz)] {
            if v == 0 {
                return Err(err(name, "the grid needs at least 1 point along each axis"));
            }
        }
        if self.steps == 0 {
            return Err(err("steps", "expected at least 1 time step"));
        }
        let r = ranks as u64;
        if r == 0 {
            return Err(
                InputError::new("the cluster has no ranks (no GPU per node)")
                    .at_field("machine.gpus_per_node"),
            );
        }
        let (py, pz) = match (self.py, self.pz) {
            (Some(0), _) => return Err(err("py", "expected at least 1 subdomain along y")),
            (_, Some(0)) => return Err(err("pz", "expected at least 1 subdomain along z")),
            (Some(py), Some(pz)) => {
                if py.checked_mul(pz) != Some(r) {
                    return Err(err(
                        "py",
                        format!(
                            "py × pz = {py} × {pz} but the cluster has {r} ranks (one per GPU)"
                        ),
                    ));
                }
                (py, pz)
            }
            (Some(py), None) => {
                if !r.is_multiple_of(py) {
                    return Err(err(
                        "py",
                        format!("py = {py} does not divide the {r} ranks of the cluster"),
                    ));
                }
                (py, r / py)
            }
            (None, Some(pz)) => {
                if !r.is_multiple_of(pz) {
                    return Err(err(
                        "pz",
                        format!("pz = {pz} does not divide the {r} ranks of the cluster"),
                    ));
                }
                (r / pz, pz)
            }
            (None, None) => squarest(r),
        };
        let grid = if self.grid_per_rank {
            let ny = self.ny.checked_mul(py);
            let nz = self.nz.checked_mul(pz);
            match (ny, nz) {
                (Some(ny), Some(nz)) => (self.nx, ny, nz),
                _ => {
                    return Err(err(
                        "ny",
                        "the whole grid (per-rank grid × ranks) overflows",
                    ));
                }
            }
        } else {
            (self.nx, self.ny, self.nz)
        };
        let halo = match (self.halo, preset) {
            (Some(0), _) => return Err(err("halo", "expected a halo of at least 1 point")),
            (Some(h), _) => h,
            (None, Some(p)) => p.halo,
            (None, None) => 1,
        };
        // Every subdomain must hold the halo its neighbours read: the thinnest part along y is
        // ⌊ny/py⌋ points.
        if py > 1 && grid.1 / py < halo {
            return Err(err(
                "py",
                format!(
                    "{py} subdomains along y of a grid {} points wide leave subdomains thinner \
                     than the halo ({halo}); use fewer ranks or a larger ny",
                    grid.1
                ),
            ));
        }
        if pz > 1 && grid.2 / pz < halo {
            return Err(err(
                "pz",
                format!(
                    "{pz} subdomains along z of a grid {} points deep leave subdomains thinner \
                     than the halo ({halo}); use fewer ranks or a larger nz",
                    grid.2
                ),
            ));
        }
        let flops_per_point = self.flops_per_point()?;
        let bytes_per_boundary_point = match (self.bytes_per_boundary_point, preset) {
            (Some(b), _) => positive_field("bytes_per_boundary_point", b)?,
            (None, Some(p)) => p.bytes_per_boundary_point,
            (None, None) => {
                return Err(err(
                    "bytes_per_boundary_point",
                    "missing: give bytes_per_boundary_point or a preset",
                ));
            }
        };
        let secs_per_point = match self.points_per_sec {
            Some(rate) => {
                let rate = positive_field("points_per_sec", rate)?;
                vec![1.0 / rate; r as usize]
            }
            None => {
                let bytes = match (self.bytes_per_point, preset) {
                    (Some(b), _) => {
                        if !(b.is_finite() && b >= 0.0) {
                            return Err(err(
                                "bytes_per_point",
                                format!("expected a finite number >= 0, got {b}"),
                            ));
                        }
                        b
                    }
                    (None, Some(p)) => p.bytes_per_point,
                    (None, None) => {
                        return Err(err(
                            "bytes_per_point",
                            "missing: give bytes_per_point (for the Improved Roofline), \
                             points_per_sec (a calibrated rate) or a preset",
                        ));
                    }
                };
                let mut out = Vec::with_capacity(r as usize);
                for rank in 0..ranks {
                    let (f, b) = gpu_peaks(RankId(rank));
                    let (Some(f), Some(b)) = (f, b) else {
                        return Err(err(
                            "points_per_sec",
                            format!(
                                "the Improved Roofline needs the GPU's peak_flops and \
                                 memory_bandwidth, which the node file does not give for \
                                 {}'s GPU; add them there or give points_per_sec",
                                RankId(rank)
                            ),
                        ));
                    };
                    // A point takes its computing time plus its memory time.
                    let secs = ComputePlusMemory::new(f, b)
                        .and_then(|m| m.secs(flops_per_point, bytes))
                        .map_err(|e| {
                            InputError::new(e.to_string()).at_field("workload.bytes_per_point")
                        })?;
                    out.push(secs);
                }
                out
            }
        };
        // Operation count: per step and rank one kernel per face plus an inner one (overlap) or
        // one kernel, plus one message per neighbour: at most 9 per rank and step.
        let ops = self.steps.saturating_mul(r).saturating_mul(9);
        if ops > MAX_STENCIL_OPS {
            return Err(err(
                "steps",
                format!(
                    "{} steps on {r} ranks give up to {ops} operations, more than the limit of \
                     {MAX_STENCIL_OPS}; every step is alike, so fewer steps give the same rate",
                    self.steps
                ),
            ));
        }
        Ok(StencilLayout {
            grid,
            py,
            pz,
            halo,
            flops_per_point,
            bytes_per_boundary_point,
            secs_per_point,
        })
    }

    /// Useful flops of the whole run on `ranks` ranks: grid points × flops per point × steps.
    pub fn total_flops(&self, ranks: u32) -> f64 {
        let (py, pz) = match (self.py, self.pz) {
            (Some(py), Some(pz)) => (py, pz),
            (Some(py), None) => (py, ranks as u64 / py.max(1)),
            (None, Some(pz)) => (ranks as u64 / pz.max(1), pz),
            (None, None) => squarest(ranks as u64),
        };
        let mult = if self.grid_per_rank {
            (py * pz) as f64
        } else {
            1.0
        };
        let points = self.nx as f64 * self.ny as f64 * self.nz as f64 * mult;
        points * self.flops_per_point().unwrap_or(0.0) * self.steps as f64
    }
}

/// Build the program of a layout: `steps` time steps with the given method and exchange.
pub fn build_program(
    layout: &StencilLayout,
    ranks: u32,
    steps: u64,
    method: StencilMethod,
    exchange: StencilExchange,
) -> Program {
    let mut b = ProgramBuilder::new(ranks);
    // What each rank's next step waits for: its last kernel and its messages of the step.
    let mut waits: Vec<Vec<OpId>> = vec![Vec::new(); ranks as usize];
    let mut incoming: Vec<Vec<OpId>> = vec![Vec::new(); ranks as usize];
    let fpp = layout.flops_per_point;
    for _ in 0..steps {
        for v in incoming.iter_mut() {
            v.clear();
        }
        let mut next: Vec<Vec<OpId>> = vec![Vec::new(); ranks as usize];
        for r in 0..ranks {
            let rank = RankId(r);
            let spp = layout.secs_per_point[r as usize];
            let faces = layout.neighbours(rank);
            let prev = std::mem::take(&mut waits[r as usize]);
            let kernel = |name: &'static str, points: u64| {
                Kernel::new(
                    rank,
                    Unit::Gpu,
                    name,
                    points as f64 * spp,
                    points as f64 * fpp,
                )
            };
            match method {
                StencilMethod::NonOverlapping => {
                    let (nx, ly, lz) = layout.extents(rank);
                    let k = b.kernel(kernel("stencil", nx * ly * lz), &prev);
                    next[r as usize].push(k);
                    let mut last: Option<OpId> = None;
                    for (face, dst) in faces {
                        let mut after = vec![k];
                        if exchange == StencilExchange::Sequential {
                            after.extend(last);
                        }
                        let m = b.message(
                            Message::device(rank, dst, layout.halo_bytes(rank, face)),
                            &after,
                        );
                        last = Some(m);
                        next[r as usize].push(m);
                        incoming[dst.index()].push(m);
                    }
                }
                StencilMethod::Overlapping => {
                    let (boundary, inner) = layout.regions(rank);
                    let mut kernels = Vec::with_capacity(faces.len() + 1);
                    let mut last: Option<OpId> = None;
                    for ((face, dst), points) in faces.into_iter().zip(boundary) {
                        let k = b.kernel(kernel("boundary", points).with_priority(1), &prev);
                        kernels.push(k);
                        let mut after = vec![k];
                        if exchange == StencilExchange::Sequential {
                            after.extend(last);
                        }
                        let m = b.message(
                            Message::device(rank, dst, layout.halo_bytes(rank, face)),
                            &after,
                        );
                        last = Some(m);
                        next[r as usize].push(m);
                        incoming[dst.index()].push(m);
                    }
                    // The inner kernel follows the boundary kernels in the GPU's stream, as in
                    // the paper's codes; it reads no halo, so it runs during the exchange.
                    let mut after = kernels;
                    after.extend_from_slice(&prev);
                    let k = b.kernel(kernel("inner", inner), &after);
                    next[r as usize].push(k);
                }
            }
        }
        for r in 0..ranks as usize {
            next[r].extend_from_slice(&incoming[r]);
        }
        waits = next;
    }
    b.build()
}

impl ProgramGenerator for StencilSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        let layout = self.layout_on(cluster)?;
        Ok(build_program(
            &layout,
            cluster.ranks(),
            self.steps,
            self.method,
            self.exchange,
        ))
    }

    /// For a fixed grid (strong scaling) the grid's flops; with `grid_per_rank` the rank count
    /// is not known here, so this is one rank's share — see
    /// [`ProgramGenerator::counted_flops_on`].
    fn counted_flops(&self) -> f64 {
        self.total_flops(1)
    }

    fn counted_flops_on(&self, cluster: &Cluster) -> f64 {
        self.total_flops(cluster.ranks())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    /// A one-node machine text with `gpus` GPUs (peaks given when `peaks`), each with a PCIe
    /// route to RAM.
    fn machine_text(gpus: usize, peaks: bool) -> String {
        let mut t = String::from(
            "[machine]\nname = \"t\"\n[[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\n\
             capacity = \"1 GiB\"\n[[cpus]]\ncount = 8\nmodel = \"c\"\nmemory = \"RAM\"\n",
        );
        for g in 0..gpus {
            let p = if peaks {
                "peak_flops = \"100 Gflop/s\"\nmemory_bandwidth = \"50 GB/s\"\n"
            } else {
                ""
            };
            t.push_str(&format!(
                "[[memory_nodes]]\nname = \"CUDA{g}\"\nkind = \"gpu\"\ncapacity = \"1 GiB\"\n\
                 [[gpus]]\nname = \"CUDA{g}\"\nmodel = \"g\"\nmemory = \"CUDA{g}\"\n{p}\
                 [[links]]\nname = \"L{g}\"\nbandwidth = \"1 GB/s\"\n\
                 [[routes]]\nsrc = \"RAM\"\ndst = \"CUDA{g}\"\nlinks = [\"L{g}\"]\nsymmetric = true\n"
            ));
        }
        t
    }

    /// A one-node cluster with `gpus` GPUs of 100 Gflop/s and 50 GB/s, for rank counts.
    fn node(gpus: usize) -> Cluster {
        let m = hetsim_platform::machine::from_str(&machine_text(gpus, true), "t.toml")
            .expect("test machine");
        Cluster::single_node(m)
    }

    fn spec(text: &str) -> StencilSpec {
        toml::from_str(text).expect("spec")
    }

    const BASE: &str = "nx = 8\nny = 8\nnz = 8\nsteps = 1\nmethod = \"non-overlapping\"\n\
                        flops_per_point = 10\nbytes_per_point = 20\nbytes_per_boundary_point = 4\n";

    fn messages(p: &Program) -> Vec<(u32, u32, f64)> {
        p.messages().map(|m| (m.src.0, m.dst.0, m.bytes)).collect()
    }

    #[test]
    fn two_by_two_messages_and_halo_bytes() {
        // 4 ranks → 2 × 2. Each rank has one y- and one z-neighbour: 2 messages per rank, 8
        // per step. Subdomain 8 × 4 × 4; a face is nx × 4 = 32 points, halo 1, 4 B per point:
        // 128 bytes per message.
        let s = spec(BASE);
        let p = s.generate(&node(4)).unwrap();
        let m = messages(&p);
        assert_eq!(m.len(), 8);
        assert!(m.iter().all(|x| x.2 == 128.0), "{m:?}");
        // rank 0 = (0,0): y+ is rank 1, z+ is rank 2.
        assert!(m.contains(&(0, 1, 128.0)) && m.contains(&(0, 2, 128.0)));
        assert!(m.contains(&(3, 1, 128.0)) && m.contains(&(3, 2, 128.0)));
        // Three steps: 24 messages.
        let s3 = spec(&BASE.replace("steps = 1", "steps = 3"));
        assert_eq!(messages(&s3.generate(&node(4)).unwrap()).len(), 24);
    }

    #[test]
    fn halo_width_multiplies_the_face() {
        // Halo 2, 52 bytes per point (LBM-like): 8 × 4 points × 2 layers × 52 B = 3328 B.
        let s = spec(&format!("{BASE}halo = 2\n").replace("= 4\n", "= 52\n"));
        let p = s.generate(&node(4)).unwrap();
        assert!(messages(&p).iter().all(|x| x.2 == 3328.0));
    }

    #[test]
    fn roofline_kernel_time_by_hand() {
        // Improved Roofline, α = 0: a point takes F/F_peak + B/B_peak =
        // 10/100e9 + 20/50e9 = 0.1 ns + 0.4 ns = 0.5 ns. One rank holds 8³ = 512 points:
        // 256 ns, 5120 flops.
        let s = spec(BASE);
        let p = s.generate(&node(1)).unwrap();
        assert_eq!(p.ops().len(), 1);
        let Op::Kernel(k) = p.ops()[0] else {
            panic!("not a kernel")
        };
        assert!((k.secs - 256e-9).abs() < 1e-20, "{}", k.secs);
        assert_eq!(k.flops, 5120.0);
        assert_eq!(k.unit, Unit::Gpu);
    }

    #[test]
    fn presets_match_the_papers_single_gpu_figures() {
        // Shimokawabe et al. 2013: diffusion 56.8 Gflop/s on an M2050 (1030 Gflop/s, 148 GB/s) and 99.0 on a
        // K20X (3950, 250); LBM 214.5 on an M2050.
        let rate = |preset: StencilPreset, f: f64, b: f64| {
            let fig = preset.figures();
            fig.flops_per_point / (fig.flops_per_point / f + fig.bytes_per_point / b)
        };
        assert!((rate(StencilPreset::Diffusion, 1030e9, 148e9) / 1e9 - 56.8).abs() < 0.05);
        assert!((rate(StencilPreset::Diffusion, 3950e9, 250e9) / 1e9 - 99.0).abs() < 0.05);
        assert!((rate(StencilPreset::Lbm, 1030e9, 148e9) / 1e9 - 214.5).abs() < 0.05);
        assert_eq!(StencilPreset::Lbm.figures().bytes_per_boundary_point, 52.0);
    }

    #[test]
    fn calibrated_rate_replaces_the_roofline() {
        // 512 points at 1e9 points/s: 512 ns.
        let s = spec(&format!("{BASE}points_per_sec = 1e9\n"));
        let p = s.generate(&node(1)).unwrap();
        let Op::Kernel(k) = p.ops()[0] else { panic!() };
        assert!((k.secs - 512e-9).abs() < 1e-20);
    }

    #[test]
    fn overlapping_regions_sum_to_the_subdomain() {
        // 2 × 2, rank 0 has a y+ and a z+ neighbour. Subdomain 8 × 4 × 4, halo 1: the y+ layer
        // is 8 × 1 × 4 = 32 points, the z+ layer 8 × 3 × 1 = 24, the inner part 8 × 3 × 3 = 72;
        // 32 + 24 + 72 = 128 = 8 × 4 × 4.
        let s = spec(&BASE.replace("non-overlapping", "overlapping"));
        let c = node(4);
        let layout = s.layout(4, |_| (Some(100e9), Some(50e9))).unwrap();
        assert_eq!(layout.regions(RankId(0)), (vec![32, 24], 72));
        let p = s.generate(&c).unwrap();
        // Per rank: 2 boundary kernels, 2 messages, 1 inner kernel.
        assert_eq!(p.ops().len(), 4 * 5);
        let flops: f64 = p.flops();
        assert_eq!(flops, 512.0 * 10.0);
        // Each message waits for its face's kernel and, sequential by default, for the rank's
        // previous message: rank 0's ops are y+ kernel (0), its message (1), z+ kernel (2),
        // its message (3), inner (4).
        assert_eq!(p.preds(OpId(1)), &[OpId(0)]);
        assert_eq!(p.preds(OpId(3)), &[OpId(2), OpId(1)]);
        assert_eq!(p.preds(OpId(4)), &[OpId(0), OpId(2)]);
        // Concurrent: each message waits only for its face's kernel.
        let c4 = spec(&format!(
            "{}exchange = \"concurrent\"\n",
            BASE.replace("non-overlapping", "overlapping")
        ));
        let pc = c4.generate(&c).unwrap();
        for (i, o) in pc.ops().iter().enumerate() {
            if let Op::Message(_) = o {
                let preds = pc.preds(OpId(i as u32));
                assert_eq!(preds.len(), 1);
                let Op::Kernel(k) = pc.ops()[preds[0].index()] else {
                    panic!()
                };
                assert_eq!(k.name, "boundary");
            }
        }
    }

    #[test]
    fn next_step_waits_for_halos() {
        // Two ranks (1 × 2), non-overlapping, 2 steps: rank 0's second kernel waits for its
        // first kernel, its own send and rank 1's message.
        let s = spec(&BASE.replace("steps = 1", "steps = 2"));
        let p = s.generate(&node(2)).unwrap();
        // Step 1: k0, m0→1, k1, m1→0; step 2: k0'.
        let preds = p.preds(OpId(4));
        assert_eq!(preds, &[OpId(0), OpId(1), OpId(3)]);
        // Non-overlapping on 2 × 2, sequential: rank 0's second message (op 2) waits for its
        // kernel (0) and its first message (1).
        let q = spec(BASE).generate(&node(4)).unwrap();
        assert_eq!(q.preds(OpId(2)), &[OpId(0), OpId(1)]);
    }

    #[test]
    fn squarest_decompositions() {
        assert_eq!(squarest(1), (1, 1));
        assert_eq!(squarest(6), (2, 3));
        assert_eq!(squarest(12), (3, 4));
        assert_eq!(squarest(16), (4, 4));
        assert_eq!(squarest(7), (1, 7));
    }

    #[test]
    fn weak_scaling_grows_the_grid() {
        // 8 × 8 × 8 per rank on 2 × 2: whole grid 8 × 16 × 16, 2048 points, 10 flops each.
        let s = spec(&format!("{BASE}grid_per_rank = true\n"));
        let l = s.layout(4, |_| (Some(1e9), Some(1e9))).unwrap();
        assert_eq!(l.grid, (8, 16, 16));
        assert_eq!(s.counted_flops_on(&node(4)), 20480.0);
        // Strong scaling: the grid is fixed.
        assert_eq!(spec(BASE).counted_flops_on(&node(4)), 5120.0);
    }

    #[test]
    fn ragged_parts_cover_the_grid() {
        // ny = 10 on 3 parts: 3, 3, 4.
        assert_eq!(
            (0..3)
                .map(|i| StencilLayout::part(10, 3, i))
                .collect::<Vec<_>>(),
            vec![3, 3, 4]
        );
    }

    fn field_of(e: &InputError) -> &str {
        e.location.field.as_deref().unwrap_or("")
    }

    fn bad(text: &str, ranks: usize) -> InputError {
        spec(text).generate(&node(ranks)).unwrap_err()
    }

    #[test]
    fn error_zero_extent() {
        let e = bad(&BASE.replace("ny = 8", "ny = 0"), 1);
        assert_eq!(field_of(&e), "workload.ny");
    }

    #[test]
    fn error_zero_steps() {
        let e = bad(&BASE.replace("steps = 1", "steps = 0"), 1);
        assert_eq!(field_of(&e), "workload.steps");
    }

    #[test]
    fn error_decomposition_does_not_match_ranks() {
        let e = bad(&format!("{BASE}py = 3\npz = 2\n"), 4);
        assert_eq!(field_of(&e), "workload.py");
        assert!(e.message.contains("4 ranks"), "{}", e.message);
    }

    #[test]
    fn error_py_does_not_divide() {
        let e = bad(&format!("{BASE}py = 3\n"), 4);
        assert!(e.message.contains("does not divide"), "{}", e.message);
    }

    #[test]
    fn error_pz_does_not_divide() {
        let e = bad(&format!("{BASE}pz = 3\n"), 4);
        assert_eq!(field_of(&e), "workload.pz");
    }

    #[test]
    fn error_zero_py() {
        let e = bad(&format!("{BASE}py = 0\n"), 4);
        assert!(e.message.contains("at least 1"), "{}", e.message);
    }

    #[test]
    fn error_subdomain_thinner_than_halo() {
        // 8 points along z on 4 parts with halo 3: parts of 2 points.
        let e = bad(&format!("{BASE}py = 1\nhalo = 3\n"), 4);
        assert_eq!(field_of(&e), "workload.pz");
        assert!(e.message.contains("thinner than the halo"), "{}", e.message);
    }

    #[test]
    fn error_zero_halo() {
        let e = bad(&format!("{BASE}halo = 0\n"), 1);
        assert_eq!(field_of(&e), "workload.halo");
    }

    #[test]
    fn error_missing_flops_without_preset() {
        let e = bad(&BASE.replace("flops_per_point = 10\n", ""), 1);
        assert_eq!(field_of(&e), "workload.flops_per_point");
    }

    #[test]
    fn error_missing_boundary_bytes_without_preset() {
        let e = bad(&BASE.replace("bytes_per_boundary_point = 4\n", ""), 1);
        assert_eq!(field_of(&e), "workload.bytes_per_boundary_point");
    }

    #[test]
    fn error_missing_kernel_model_without_preset() {
        let e = bad(&BASE.replace("bytes_per_point = 20\n", ""), 1);
        assert_eq!(field_of(&e), "workload.bytes_per_point");
    }

    #[test]
    fn error_bad_rate() {
        let e = bad(&format!("{BASE}points_per_sec = -1\n"), 1);
        assert_eq!(field_of(&e), "workload.points_per_sec");
    }

    #[test]
    fn error_negative_flops() {
        let e = bad(
            &BASE.replace("flops_per_point = 10", "flops_per_point = -10"),
            1,
        );
        assert!(e.message.contains("> 0"), "{}", e.message);
    }

    #[test]
    fn error_gpu_without_peaks() {
        let t = machine_text(1, false);
        let c = Cluster::single_node(hetsim_platform::machine::from_str(&t, "t.toml").unwrap());
        let e = spec(BASE).generate(&c).unwrap_err();
        assert!(e.message.contains("peak_flops"), "{}", e.message);
        // A calibrated rate needs no peaks.
        assert!(
            spec(&format!("{BASE}points_per_sec = 1e9\n"))
                .generate(&c)
                .is_ok()
        );
    }

    #[test]
    fn error_too_many_operations() {
        let e = bad(&BASE.replace("steps = 1", "steps = 100000000"), 1);
        assert!(e.message.contains("limit"), "{}", e.message);
    }

    #[test]
    fn error_unknown_field_and_method() {
        assert!(toml::from_str::<StencilSpec>(&format!("{BASE}colour = 1\n")).is_err());
        assert!(
            toml::from_str::<StencilSpec>(&BASE.replace("non-overlapping", "sideways")).is_err()
        );
        assert!(toml::from_str::<StencilSpec>(&format!("{BASE}preset = \"heat\"\n")).is_err());
        assert!(
            toml::from_str::<StencilSpec>(&format!("{BASE}exchange = \"parallel\"\n")).is_err()
        );
    }
}
