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
    /// Queued at idle priority (StarPU's `STARPU_IDLEFETCH`): it starts only when its device
    /// has no fetch or prefetch waiting. Cleared when a fetch needs it.
    pub idle: bool,
}

/// Per-pair FIFO runners and StarPU's serialisation rules (`starpu-reference.md` §1e,
/// `simgrid.c`, `transfers_are_sequential` and `transfer_submit`):
///
/// - one transfer at a time per (source, destination) pair: one FIFO runner per pair (one CUDA
///   stream per direction), fetches ahead of prefetches;
/// - when a transfer is submitted it must wait for every transfer submitted **before** it and
///   still pending (queued or moving) with which it is sequential: a GPU↔GPU transfer a→b and
///   any transfer whose destination is a or b (the crossed b→a among them), in either order of
///   kinds. StarPU keeps this as `nwait` counters and `wake` lists fixed at submission, so a
///   transfer is never overtaken by a conflicting one submitted after it: a GPU↔GPU copy
///   cannot be starved by a stream of later RAM→GPU copies into one of its ends.
#[derive(Debug)]
pub(crate) struct Runners {
    nnodes: usize,
    gpu: Vec<bool>,
    fetch: Vec<VecDeque<u32>>,
    prefetch: Vec<VecDeque<u32>>,
    idle: Vec<VecDeque<u32>>,
    busy: Vec<bool>,
    /// Transfers submitted and not finished, in submission order: (id, src, dst).
    pending: Vec<(u32, usize, usize)>,
    /// Per transfer id: how many earlier sequential transfers it still waits for.
    nwait: Vec<u32>,
    /// Per transfer id: the later transfers waiting for it.
    wake: Vec<Vec<u32>>,
}

impl Runners {
    pub fn new(kinds: &[MemKind]) -> Self {
        let n = kinds.len();
        Runners {
            nnodes: n,
            gpu: kinds.iter().map(|&k| k == MemKind::Gpu).collect(),
            fetch: vec![VecDeque::new(); n * n],
            prefetch: vec![VecDeque::new(); n * n],
            idle: vec![VecDeque::new(); n * n],
            busy: vec![false; n * n],
            pending: Vec::new(),
            nwait: Vec::new(),
            wake: Vec::new(),
        }
    }

    fn pair(&self, src: MemNodeId, dst: MemNodeId) -> usize {
        src.index() * self.nnodes + dst.index()
    }

    /// StarPU's `transfers_are_sequential` for two transfers of different pairs (the same pair
    /// is the runner's FIFO): a GPU↔GPU transfer against any transfer into one of its ends.
    fn sequential(&self, new: (usize, usize), old: (usize, usize)) -> bool {
        let gpu_gpu = |(s, d): (usize, usize)| self.gpu[s] && self.gpu[d];
        (gpu_gpu(new) && (old.1 == new.0 || old.1 == new.1))
            || (gpu_gpu(old) && (new.1 == old.0 || new.1 == old.1))
    }

    /// Queue transfer `id` on its pair, after the pending transfers it is sequential with.
    pub fn enqueue(&mut self, id: u32, t: &Transfer) {
        let (s, d) = (t.src.index(), t.dst.index());
        let i = id as usize;
        if self.nwait.len() <= i {
            self.nwait.resize(i + 1, 0);
            self.wake.resize_with(i + 1, Vec::new);
        }
        let mut nwait = 0;
        for k in 0..self.pending.len() {
            let (old, os, od) = self.pending[k];
            if (os, od) != (s, d) && self.sequential((s, d), (os, od)) {
                self.wake[old as usize].push(id);
                nwait += 1;
            }
        }
        self.nwait[i] = nwait;
        self.pending.push((id, s, d));
        let p = self.pair(t.src, t.dst);
        match t.kind {
            _ if t.idle => self.idle[p].push_back(id),
            TransferKind::Prefetch => self.prefetch[p].push_back(id),
            _ => self.fetch[p].push_back(id),
        }
    }

    /// A fetch now needs a queued prefetch: move it ahead with the fetches. Returns whether it
    /// was still queued.
    pub fn promote(&mut self, id: u32, t: &Transfer) -> bool {
        let p = self.pair(t.src, t.dst);
        let queue = if t.idle {
            &mut self.idle[p]
        } else {
            &mut self.prefetch[p]
        };
        match queue.iter().position(|&x| x == id) {
            Some(pos) => {
                queue.remove(pos);
                self.fetch[p].push_back(id);
                true
            }
            None => false,
        }
    }

    /// Whether a fetch or prefetch waits on a pair that starts or ends at `node`: StarPU
    /// serves a node's idle requests only when its fetch and prefetch lists are empty
    /// (`starpu-reference.md` §1a, "three priority lists").
    fn has_requests(&self, node: usize) -> bool {
        (0..self.nnodes).any(|m| {
            let out = node * self.nnodes + m;
            let inc = m * self.nnodes + node;
            !self.fetch[out].is_empty()
                || !self.prefetch[out].is_empty()
                || !self.fetch[inc].is_empty()
                || !self.prefetch[inc].is_empty()
        })
    }

    /// Transfers that may start now, in pair order; marks them in flight. A pair's runner
    /// takes its first fetch, else its first prefetch, else (if its device has no fetch or
    /// prefetch waiting on any pair) its first idle transfer, that waits for no earlier sequential
    /// transfer. (Taking the first free one rather than stopping at a waiting head matters:
    /// fetches overtake prefetches on a pair, so a head may wait for a transfer that itself
    /// waits for a prefetch queued behind that head.)
    ///
    /// `requesting[n]` says that node `n` has requests the runners do not see yet (buffers
    /// being allocated for a fetch or prefetch: StarPU's request is in the node's list while
    /// it allocates); an idle transfer of that node waits for them too.
    pub fn start_ready(&mut self, out: &mut Vec<u32>, requesting: &[bool]) {
        for p in 0..self.nnodes * self.nnodes {
            if self.busy[p] {
                continue;
            }
            let free = |q: &VecDeque<u32>| q.iter().position(|&id| self.nwait[id as usize] == 0);
            let id = if let Some(i) = free(&self.fetch[p]) {
                self.fetch[p].remove(i)
            } else if let Some(i) = free(&self.prefetch[p]) {
                self.prefetch[p].remove(i)
            } else if let Some(i) = free(&self.idle[p]) {
                // An idle copy is handled by its device (the source of a write-back).
                let (s, d) = (p / self.nnodes, p % self.nnodes);
                let dev = if self.gpu[s] { s } else { d };
                if requesting[dev] || self.has_requests(dev) {
                    continue;
                }
                self.idle[p].remove(i)
            } else {
                continue;
            };
            self.busy[p] = true;
            out.push(id.expect("position in queue"));
        }
    }

    /// Transfer `id` of this pair ended: free the pair and release the transfers waiting
    /// for it.
    pub fn finished(&mut self, id: u32, src: MemNodeId, dst: MemNodeId) {
        let p = self.pair(src, dst);
        self.busy[p] = false;
        if let Some(pos) = self.pending.iter().position(|&(x, _, _)| x == id) {
            self.pending.remove(pos);
        }
        let woken = std::mem::take(&mut self.wake[id as usize]);
        for &w in &woken {
            self.nwait[w as usize] -= 1;
        }
        let mut woken = woken;
        woken.clear();
        self.wake[id as usize] = woken;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tr(src: u32, dst: u32, kind: TransferKind) -> Transfer {
        Transfer {
            handle: HandleId(0),
            src: MemNodeId(src),
            dst: MemNodeId(dst),
            bytes: 1.0,
            kind,
            version: 0,
            idle: false,
        }
    }

    fn started(r: &mut Runners) -> Vec<u32> {
        let mut out = Vec::new();
        r.start_ready(&mut out, &[false; 3][..r.nnodes]);
        out
    }

    /// StarPU's `transfer_submit` (`starpu-reference.md` §1e): a transfer waits for the
    /// earlier pending transfers it is sequential with, and never for later ones. By hand, on
    /// RAM (node 0) and GPUs 1 and 2:
    /// - T0 RAM→GPU1 starts at once;
    /// - T1 GPU2→GPU1 is GPU↔GPU into GPU1, where T0 is going: it waits for T0;
    /// - T2 RAM→GPU2 goes into an end of the pending GPU↔GPU T1: it waits for T1, even though
    ///   no GPU↔GPU transfer is moving yet (starting it would let it overtake T1);
    /// - T0 ends: T1 starts; T1 ends: T2 starts.
    #[test]
    fn transfers_wait_for_earlier_sequential_ones_only() {
        let mut r = Runners::new(&[MemKind::Ram, MemKind::Gpu, MemKind::Gpu]);
        r.enqueue(0, &tr(0, 1, TransferKind::Fetch));
        assert_eq!(started(&mut r), [0]);
        r.enqueue(1, &tr(2, 1, TransferKind::Fetch));
        r.enqueue(2, &tr(0, 2, TransferKind::Fetch));
        assert_eq!(started(&mut r), Vec::<u32>::new());
        r.finished(0, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [1]);
        r.finished(1, MemNodeId(2), MemNodeId(1));
        assert_eq!(started(&mut r), [2]);
        r.finished(2, MemNodeId(0), MemNodeId(2));
        assert_eq!(started(&mut r), Vec::<u32>::new());
    }

    /// Two transfers of different pairs that touch no GPU↔GPU copy are independent, and a
    /// pair runs one transfer at a time, fetches ahead of prefetches (§1e, one stream per
    /// direction; §1a request lists): RAM→GPU1 and GPU1→RAM move together; a prefetch queued
    /// on RAM→GPU1 before a fetch on the same pair goes after it.
    #[test]
    fn one_transfer_per_pair_fetches_first() {
        let mut r = Runners::new(&[MemKind::Ram, MemKind::Gpu]);
        r.enqueue(0, &tr(0, 1, TransferKind::Fetch));
        r.enqueue(1, &tr(1, 0, TransferKind::WriteBack));
        assert_eq!(started(&mut r), [0, 1]);
        r.enqueue(2, &tr(0, 1, TransferKind::Prefetch));
        r.enqueue(3, &tr(0, 1, TransferKind::Fetch));
        assert_eq!(started(&mut r), Vec::<u32>::new());
        r.finished(0, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [3]);
        r.finished(3, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [2]);
    }

    /// StarPU's idle request list (`starpu-reference.md` §1a, "three priority lists"): an
    /// idle copy GPU1→RAM waits while its device has a fetch or prefetch queued, even on the
    /// other direction, and starts once that list is empty; a fetch that needs it moves it
    /// ahead. By hand, on RAM (node 0) and GPU1:
    /// - T0 RAM→GPU1 fetch starts; T1 RAM→GPU1 fetch is queued behind it;
    /// - T2 GPU1→RAM idle: its pair is free, but T1 waits on GPU1: it does not start;
    /// - T0 ends: T1 starts and GPU1 has nothing queued: T2 starts with it;
    /// - T3 GPU1→RAM idle, then T4 RAM→GPU1 prefetch queued behind T1: T3 waits (pair busy
    ///   with T2, and then T4 is queued); promoted, T3 starts as soon as T2 ends.
    #[test]
    fn idle_transfers_wait_for_an_empty_request_list() {
        let mut r = Runners::new(&[MemKind::Ram, MemKind::Gpu]);
        let idle = |src, dst| Transfer {
            idle: true,
            ..tr(src, dst, TransferKind::WriteBack)
        };
        r.enqueue(0, &tr(0, 1, TransferKind::Fetch));
        r.enqueue(1, &tr(0, 1, TransferKind::Fetch));
        assert_eq!(started(&mut r), [0]);
        r.enqueue(2, &idle(1, 0));
        assert_eq!(started(&mut r), Vec::<u32>::new());
        r.finished(0, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [1, 2]);
        r.enqueue(3, &idle(1, 0));
        r.enqueue(4, &tr(0, 1, TransferKind::Prefetch));
        r.finished(2, MemNodeId(1), MemNodeId(0));
        assert_eq!(started(&mut r), Vec::<u32>::new());
        assert!(r.promote(3, &idle(1, 0)));
        assert_eq!(started(&mut r), [3]);
    }
}
