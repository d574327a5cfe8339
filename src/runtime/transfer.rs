//! Transfers between memory nodes: how each (source, destination) pair travels, the
//! scheduler-side estimates, and StarPU's serialisation of concurrent transfers.

use std::collections::VecDeque;

use crate::fluid::{self, FluidNetwork};
use crate::machine::{Machine, MemKind, MemNodeId, TransferModel};
use crate::workload::HandleId;

/// How bytes travel from one node to another in one hop.
#[derive(Debug, Clone)]
pub(crate) enum Path {
    /// Over these fluid links, sharing bandwidth with other flows.
    Fluid(Vec<fluid::LinkId>),
    /// In the time a size-dependent model gives, without sharing.
    Model(TransferModel),
}

/// The network of a machine as the runtime uses it: the fluid links (split-duplex links
/// become two) with their names, and one direct path per pair that has a route.
#[derive(Debug)]
pub(crate) struct Platform {
    pub net: FluidNetwork,
    pub link_names: Vec<String>,
    pub paths: Vec<Option<Path>>,
    pub nnodes: usize,
}

impl Platform {
    pub fn new(machine: &Machine, mode: fluid::SharingMode) -> Self {
        let mut net = FluidNetwork::new(mode);
        let mut link_names = Vec::new();
        // Fluid link of each machine link: (shared-or-up, down).
        let map =
            crate::cluster::network::add_machine_links(&mut net, machine, Some(&mut link_names));
        let nnodes = machine.memory_nodes().len();
        let mut paths = vec![None; nnodes * nnodes];
        for r in machine.routes() {
            let path = match &r.model {
                Some(m) => Path::Model(m.clone()),
                None => Path::Fluid(crate::cluster::network::hop_links(&map, &r.hops)),
            };
            paths[r.src.index() * nnodes + r.dst.index()] = Some(path);
        }
        Platform {
            net,
            link_names,
            paths,
            nnodes,
        }
    }

    pub fn path(&self, src: MemNodeId, dst: MemNodeId) -> Option<&Path> {
        self.paths[src.index() * self.nnodes + dst.index()].as_ref()
    }
}

/// Nominal (contention-free) transfer figures per pair, for source selection and for the
/// scheduler's estimates.
#[derive(Debug)]
pub(crate) struct Estimates {
    nnodes: usize,
    ram: MemNodeId,
    gpus: usize,
    kinds: Vec<MemKind>,
    /// Per direct pair: (latency, bottleneck bandwidth) or a model.
    direct: Vec<Option<Nominal>>,
}

#[derive(Debug, Clone)]
enum Nominal {
    Link { latency_s: f64, bytes_per_sec: f64 },
    Model(TransferModel),
}

impl Nominal {
    fn secs(&self, bytes: f64, factor: f64) -> f64 {
        match self {
            Nominal::Link {
                latency_s,
                bytes_per_sec,
            } => latency_s + factor * bytes / bytes_per_sec,
            Nominal::Model(m) => m.duration_secs(bytes),
        }
    }
}

impl Estimates {
    pub fn new(machine: &Machine, ram: MemNodeId, gpus_used: usize) -> Self {
        let nnodes = machine.memory_nodes().len();
        let mut direct = vec![None; nnodes * nnodes];
        for r in machine.routes() {
            let nominal = match &r.model {
                Some(m) => Nominal::Model(m.clone()),
                None => Nominal::Link {
                    latency_s: machine.route_latency_s(r),
                    bytes_per_sec: machine
                        .route_bottleneck_bytes_per_sec(r)
                        .unwrap_or(f64::INFINITY),
                },
            };
            direct[r.src.index() * nnodes + r.dst.index()] = Some(nominal);
        }
        Estimates {
            nnodes,
            ram,
            gpus: gpus_used.max(1),
            kinds: machine.memory_nodes().iter().map(|m| m.kind).collect(),
            direct,
        }
    }

    fn direct(&self, src: MemNodeId, dst: MemNodeId) -> Option<&Nominal> {
        self.direct[src.index() * self.nnodes + dst.index()].as_ref()
    }

    /// The hops a copy takes: direct if there is a route, else staged through RAM.
    pub fn hops(&self, src: MemNodeId, dst: MemNodeId) -> Vec<(MemNodeId, MemNodeId)> {
        if src == dst {
            Vec::new()
        } else if self.direct(src, dst).is_some() {
            vec![(src, dst)]
        } else {
            vec![(src, self.ram), (self.ram, dst)]
        }
    }

    /// Contention-free time: latency + size / bottleneck bandwidth, summed over the hops.
    pub fn nominal_s(&self, src: MemNodeId, dst: MemNodeId, bytes: f64) -> f64 {
        self.hops(src, dst)
            .iter()
            .map(|&(a, b)| {
                self.direct(a, b)
                    .map_or(f64::INFINITY, |n| n.secs(bytes, 1.0))
            })
            .sum()
    }

    /// StarPU's `starpu_transfer_predict` summed over the hops: latency + size/bandwidth ×
    /// 2·nGPUs, except ×1 on a direct GPU↔GPU link (seed: `perfmodel_bus.c`).
    pub fn starpu_s(&self, src: MemNodeId, dst: MemNodeId, bytes: f64) -> f64 {
        self.hops(src, dst)
            .iter()
            .map(|&(a, b)| {
                let gpu_gpu =
                    self.kinds[a.index()] == MemKind::Gpu && self.kinds[b.index()] == MemKind::Gpu;
                let factor = if gpu_gpu { 1.0 } else { 2.0 * self.gpus as f64 };
                self.direct(a, b)
                    .map_or(f64::INFINITY, |n| n.secs(bytes, factor))
            })
            .sum()
    }
}

/// Why a transfer moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferKind {
    /// A popped task needs the data.
    Fetch,
    /// The scheduler asked for it ahead of time.
    Prefetch,
    /// A modified replica goes back to RAM (eviction or end of run).
    WriteBack,
}

impl TransferKind {
    /// "fetch", "prefetch", "writeback".
    pub fn as_str(self) -> &'static str {
        match self {
            TransferKind::Fetch => "fetch",
            TransferKind::Prefetch => "prefetch",
            TransferKind::WriteBack => "writeback",
        }
    }
}

/// One copy of one handle over one hop.
#[derive(Debug, Clone)]
pub(crate) struct Transfer {
    pub handle: HandleId,
    pub src: MemNodeId,
    pub dst: MemNodeId,
    pub bytes: f64,
    pub kind: TransferKind,
    pub version: u32,
}

/// Per-pair FIFO runners and StarPU's serialisation rules (`simgrid.c`,
/// `transfers_are_sequential`): one transfer at a time per (source, destination); a GPU↔GPU
/// transfer excludes the opposite pair and any transfer into either of its ends.
#[derive(Debug)]
pub(crate) struct Runners {
    nnodes: usize,
    gpu: Vec<bool>,
    fetch: Vec<VecDeque<u32>>,
    prefetch: Vec<VecDeque<u32>>,
    busy: Vec<bool>,
    /// Transfers in flight (queue cost included) into each node.
    into: Vec<u32>,
    /// GPU↔GPU transfers in flight touching each node.
    gpu_gpu_touching: Vec<u32>,
}

impl Runners {
    pub fn new(kinds: &[MemKind]) -> Self {
        let n = kinds.len();
        Runners {
            nnodes: n,
            gpu: kinds.iter().map(|&k| k == MemKind::Gpu).collect(),
            fetch: vec![VecDeque::new(); n * n],
            prefetch: vec![VecDeque::new(); n * n],
            busy: vec![false; n * n],
            into: vec![0; n],
            gpu_gpu_touching: vec![0; n],
        }
    }

    fn pair(&self, src: MemNodeId, dst: MemNodeId) -> usize {
        src.index() * self.nnodes + dst.index()
    }

    /// Queue transfer `id` on its pair.
    pub fn enqueue(&mut self, id: u32, t: &Transfer) {
        let p = self.pair(t.src, t.dst);
        match t.kind {
            TransferKind::Prefetch => self.prefetch[p].push_back(id),
            _ => self.fetch[p].push_back(id),
        }
    }

    /// A fetch now needs a queued prefetch: move it ahead with the fetches. Returns whether it
    /// was still queued.
    pub fn promote(&mut self, id: u32, t: &Transfer) -> bool {
        let p = self.pair(t.src, t.dst);
        match self.prefetch[p].iter().position(|&x| x == id) {
            Some(pos) => {
                self.prefetch[p].remove(pos);
                self.fetch[p].push_back(id);
                true
            }
            None => false,
        }
    }

    fn allowed(&self, src: usize, dst: usize) -> bool {
        let p = src * self.nnodes + dst;
        if self.busy[p] {
            return false;
        }
        if self.gpu[src] && self.gpu[dst] {
            !self.busy[dst * self.nnodes + src] && self.into[src] == 0 && self.into[dst] == 0
        } else {
            self.gpu_gpu_touching[dst] == 0
        }
    }

    /// Transfers that may start now, in pair order; marks them in flight.
    pub fn start_ready(&mut self, out: &mut Vec<u32>) {
        for src in 0..self.nnodes {
            for dst in 0..self.nnodes {
                let p = src * self.nnodes + dst;
                if self.fetch[p].is_empty() && self.prefetch[p].is_empty() {
                    continue;
                }
                if !self.allowed(src, dst) {
                    continue;
                }
                let id = self.fetch[p]
                    .pop_front()
                    .or_else(|| self.prefetch[p].pop_front())
                    .expect("non-empty");
                self.busy[p] = true;
                self.into[dst] += 1;
                if self.gpu[src] && self.gpu[dst] {
                    self.gpu_gpu_touching[src] += 1;
                    self.gpu_gpu_touching[dst] += 1;
                }
                out.push(id);
            }
        }
    }

    /// A transfer of this pair ended.
    pub fn finished(&mut self, src: MemNodeId, dst: MemNodeId) {
        let (s, d) = (src.index(), dst.index());
        self.busy[s * self.nnodes + d] = false;
        self.into[d] -= 1;
        if self.gpu[s] && self.gpu[d] {
            self.gpu_gpu_touching[s] -= 1;
            self.gpu_gpu_touching[d] -= 1;
        }
    }
}
