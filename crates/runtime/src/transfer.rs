//! Transfers between memory nodes: how each (source, destination) pair travels, the
//! scheduler-side estimates, and StarPU's serialisation of concurrent transfers.

use std::collections::VecDeque;

use hetsim_core::fluid::{self, FluidNetwork};
use hetsim_platform::machine::{Machine, MemKind, MemNodeId, PendingLimits, TransferModel};
use hetsim_taskgraph::HandleId;

/// How bytes travel from one node to another in one hop.
#[derive(Debug, Clone)]
pub(crate) enum Path {
    /// Over these fluid links, sharing bandwidth with other flows.
    Fluid(Vec<fluid::LinkId>),
    /// In the time a size-dependent model gives, without sharing.
    Model(TransferModel),
}

/// How the runtime reaches each pair of its memory nodes: the machine's links added to the
/// engine's fluid network (split-duplex links become two), with their names, and one direct
/// path per pair that has a route.
#[derive(Debug)]
pub(crate) struct Paths {
    pub link_names: Vec<String>,
    paths: Vec<Option<Path>>,
    nnodes: usize,
}

impl Paths {
    /// Add `machine`'s links to `net` and compute its paths.
    pub fn new(machine: &Machine, net: &mut FluidNetwork) -> Self {
        let mut link_names = Vec::new();
        // Fluid link of each machine link: (shared-or-up, down).
        let map = hetsim_platform::cluster::network::add_machine_links(
            net,
            machine,
            Some(&mut link_names),
        );
        let nnodes = machine.memory_nodes().len();
        let mut paths = vec![None; nnodes * nnodes];
        for r in machine.routes() {
            let path = match &r.model {
                Some(m) => Path::Model(m.clone()),
                None => Path::Fluid(hetsim_platform::cluster::network::hop_links(&map, &r.hops)),
            };
            paths[r.src.index() * nnodes + r.dst.index()] = Some(path);
        }
        Paths {
            link_names,
            paths,
            nnodes,
        }
    }

    /// The paths inside node `node` of a cluster, over that node's copy of the links.
    pub fn of_node(
        machine: &Machine,
        net: &hetsim_platform::cluster::ClusterNetwork,
        node: hetsim_platform::cluster::NodeId,
    ) -> Self {
        use hetsim_platform::cluster::Segment;
        let nnodes = machine.memory_nodes().len();
        let mut paths = vec![None; nnodes * nnodes];
        for r in machine.routes() {
            paths[r.src.index() * nnodes + r.dst.index()] =
                net.intra(node, r.src, r.dst).map(|s| match s {
                    Segment::Fluid(links) => Path::Fluid(links),
                    Segment::Model(m) => Path::Model(m),
                });
        }
        Paths {
            link_names: Vec::new(),
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
    /// Per direct pair: (latency, bottleneck bandwidth) or a model.
    direct: Vec<Option<Nominal>>,
    /// Per direct pair, what StarPU's schedulers predict from: the route's estimate if it has
    /// one, else as `direct`.
    predicted: Vec<Option<Nominal>>,
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
        let mut predicted = vec![None; nnodes * nnodes];
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
            let i = r.src.index() * nnodes + r.dst.index();
            predicted[i] = Some(match &r.estimate {
                Some(a) => Nominal::Link {
                    latency_s: a.latency_s(),
                    bytes_per_sec: a.bandwidth_bytes_per_sec(),
                },
                None => nominal.clone(),
            });
            direct[i] = Some(nominal);
        }
        Estimates {
            nnodes,
            ram,
            gpus: gpus_used.max(1),
            direct,
            predicted,
        }
    }

    fn direct(&self, src: MemNodeId, dst: MemNodeId) -> Option<&Nominal> {
        self.direct[src.index() * self.nnodes + dst.index()].as_ref()
    }

    fn predicted(&self, src: MemNodeId, dst: MemNodeId) -> Option<&Nominal> {
        self.predicted[src.index() * self.nnodes + dst.index()].as_ref()
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

    /// StarPU's `starpu_transfer_predict` summed over the hops: latency + 2·nGPUs·size /
    /// bandwidth on every hop, GPU↔GPU included, from the route's estimate (the bus
    /// benchmark's figures, which StarPU's `bandwidth_matrix` and `latency_matrix` hold) where
    /// it has one. StarPU 1.4 uses a factor of 2·1 only on a bus
    /// whose GPU count is 1, which only NVML's direct-link detection sets, and that is compiled
    /// out of SimGrid builds; there `_starpu_simgrid_count_ngpus` counts the GPUs behind the
    /// bridge joining two GPUs (at least 2) or leaves the count unknown, and either way the
    /// estimate uses the total number of GPUs.
    pub fn starpu_s(&self, src: MemNodeId, dst: MemNodeId, bytes: f64) -> f64 {
        let factor = 2.0 * self.gpus as f64;
        self.hops(src, dst)
            .iter()
            .map(|&(a, b)| {
                self.predicted(a, b)
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
    /// Queued at idle priority (StarPU's `STARPU_IDLEFETCH`): it is submitted only when the
    /// node handling it has no other request queued or pending. Cleared when a fetch needs it.
    pub idle: bool,
    /// The request's priority (the priority of the task it is for); higher goes first within
    /// a request list.
    pub priority: i32,
}

/// Request lists: fetch, prefetch, idle.
const FETCH: usize = 0;
const PREFETCH: usize = 1;
const IDLE: usize = 2;

/// A queued request: highest priority first, then first come first served.
type RequestKey = (std::cmp::Reverse<i32>, u64, u32);

/// StarPU's two stages between a data request and the bytes moving (`starpu-reference.md`
/// §1a "three priority lists" and §1e):
///
/// 1. **Request lists.** Each (source, destination) pair — which is one (handling node, peer,
///    direction) of `data_request.c`: a GPU handles the copies into it and out of it to RAM —
///    has a fetch, a prefetch and an idle list, each ordered by priority. Requests are
///    submitted from the fetch list while fewer than 5 of the pair's are pending, then from
///    the prefetch list while fewer than 2 are, then from the idle list while none is and the
///    handling node has no other request queued or pending (StarPU 1.4's limits, the
///    defaults of [`PendingLimits`]). A fetch that needs a queued prefetch moves it to the
///    fetch list; once submitted it keeps its place. A node whose driver runs a synchronous
///    task submits nothing meanwhile ([`Runners::set_blocked`]).
/// 2. **Submitted transfers** (`simgrid.c`, `transfer_submit`): one transfer at a time per
///    pair, first submitted first served (one CUDA stream per direction); and a transfer
///    waits for every transfer submitted **before** it and still pending with which it is
///    sequential: a GPU↔GPU transfer a→b and any transfer whose destination is a or b (the
///    crossed b→a among them), in either order of kinds. StarPU keeps this as `nwait`
///    counters and `wake` lists fixed at submission, so a transfer is never overtaken by a
///    conflicting one submitted after it.
#[derive(Debug)]
pub(crate) struct Runners {
    nnodes: usize,
    gpu: Vec<bool>,
    /// Per pair, the fetch, prefetch and idle request lists.
    requests: Vec<[std::collections::BTreeSet<RequestKey>; 3]>,
    /// Per transfer id still in a request list: which list, and its key there.
    queued: Vec<Option<(usize, RequestKey)>>,
    /// Requests made so far (the first-come order).
    seq: u64,
    /// Per list (fetch, prefetch, idle): submit while fewer than this many of the pair's
    /// requests are pending (`runtime.max_pending_*`).
    limits: [u32; 3],
    /// Per node: its driver is busy running a synchronous task and handles no request.
    blocked: Vec<bool>,
    /// Pairs with a request in a list, so that submitting looks only at them.
    listed: std::collections::BTreeSet<usize>,
    /// Per pair, submitted transfers not started yet, in submission order.
    submitted: Vec<VecDeque<u32>>,
    /// Per pair, submitted transfers not finished.
    npending: Vec<u32>,
    busy: Vec<bool>,
    /// Transfers submitted and not finished, in submission order: (id, src, dst).
    pending: Vec<(u32, usize, usize)>,
    /// Per transfer id: how many earlier sequential transfers it still waits for.
    nwait: Vec<u32>,
    /// Per transfer id: the later transfers waiting for it.
    wake: Vec<Vec<u32>>,
    /// Simulated time the handling node's thread sleeps on submitting each transfer
    /// (`STARPU_SIMGRID_CUDA_QUEUE_COST`), before the transfer joins its pair's queue.
    queue_s: f64,
    /// Per node: when its thread is done with the submissions made so far.
    handler_free_s: Vec<f64>,
    /// Per transfer id: when its submission ends, the earliest its bytes may move.
    go_s: Vec<f64>,
}

impl Runners {
    pub fn new(kinds: &[MemKind], limits: PendingLimits) -> Self {
        let n = kinds.len();
        Runners {
            limits: [limits.fetch, limits.prefetch, limits.idle],
            nnodes: n,
            gpu: kinds.iter().map(|&k| k == MemKind::Gpu).collect(),
            requests: (0..n * n).map(|_| Default::default()).collect(),
            queued: Vec::new(),
            seq: 0,
            listed: std::collections::BTreeSet::new(),
            blocked: vec![false; n],
            submitted: vec![VecDeque::new(); n * n],
            npending: vec![0; n * n],
            busy: vec![false; n * n],
            pending: Vec::new(),
            nwait: Vec::new(),
            wake: Vec::new(),
            queue_s: 0.0,
            handler_free_s: vec![0.0; n],
            go_s: Vec::new(),
        }
    }

    /// The same, with the queueing sleep each submission costs its handling node's thread.
    pub fn with_queue_s(mut self, queue_s: f64) -> Self {
        self.queue_s = queue_s;
        self
    }

    /// When transfer `id`'s submission ends: it moves no earlier.
    pub fn go_s(&self, id: u32) -> f64 {
        self.go_s[id as usize]
    }

    fn pair(&self, src: MemNodeId, dst: MemNodeId) -> usize {
        src.index() * self.nnodes + dst.index()
    }

    /// The node whose driver handles a pair's requests: the destination if it is a GPU (copies
    /// into a GPU, from RAM or from a peer), else the source (a GPU's copies back to RAM).
    fn handler(&self, p: usize) -> usize {
        let (s, d) = (p / self.nnodes, p % self.nnodes);
        if self.gpu[d] { d } else { s }
    }

    /// StarPU's `transfers_are_sequential` for two transfers of different pairs (the same pair
    /// is the runner's FIFO): a GPU↔GPU transfer against any transfer into one of its ends.
    fn sequential(&self, new: (usize, usize), old: (usize, usize)) -> bool {
        let gpu_gpu = |(s, d): (usize, usize)| self.gpu[s] && self.gpu[d];
        (gpu_gpu(new) && (old.1 == new.0 || old.1 == new.1))
            || (gpu_gpu(old) && (new.1 == old.0 || new.1 == old.1))
    }

    /// Queue the request for transfer `id` in its pair's fetch, prefetch or idle list.
    pub fn enqueue(&mut self, id: u32, t: &Transfer, now_s: f64) {
        let i = id as usize;
        if self.nwait.len() <= i {
            self.nwait.resize(i + 1, 0);
            self.wake.resize_with(i + 1, Vec::new);
            self.queued.resize(i + 1, None);
            self.go_s.resize(i + 1, 0.0);
        }
        let list = match t.kind {
            _ if t.idle => IDLE,
            TransferKind::Prefetch => PREFETCH,
            _ => FETCH,
        };
        self.seq += 1;
        let key = (std::cmp::Reverse(t.priority), self.seq, id);
        let p = self.pair(t.src, t.dst);
        self.requests[p][list].insert(key);
        self.queued[i] = Some((list, key));
        self.listed.insert(p);
        // Submitted at once if the limits allow, so that requests made one after the other
        // are submitted in that order (idle requests wait for `start_ready`).
        self.submit_requests(p, None, now_s);
    }

    /// A fetch now needs a queued prefetch or idle request: move it to the fetch list.
    /// Returns whether it was still queued (a submitted one keeps its place).
    pub fn promote(&mut self, id: u32, t: &Transfer) -> bool {
        let p = self.pair(t.src, t.dst);
        match self.queued[id as usize] {
            Some((list, key)) if list != FETCH => {
                self.requests[p][list].remove(&key);
                self.requests[p][FETCH].insert(key);
                self.queued[id as usize] = Some((FETCH, key));
                true
            }
            _ => false,
        }
    }

    /// Hand request `id` of pair `p` to the transfer stage, after the pending transfers it is
    /// sequential with. The handling node's thread first sleeps the queueing cost
    /// (`_starpu_simgrid_transfer` sleeps before `transfer_submit`), one submission after the
    /// other: a transfer queued behind a running one has paid it by the time its turn comes.
    fn submit(&mut self, p: usize, id: u32, now_s: f64) {
        let h = self.handler(p);
        let go = self.handler_free_s[h].max(now_s) + self.queue_s;
        self.handler_free_s[h] = go;
        self.go_s[id as usize] = go;
        let (s, d) = (p / self.nnodes, p % self.nnodes);
        let mut nwait = 0;
        for k in 0..self.pending.len() {
            let (old, os, od) = self.pending[k];
            if (os, od) != (s, d) && self.sequential((s, d), (os, od)) {
                self.wake[old as usize].push(id);
                nwait += 1;
            }
        }
        self.nwait[id as usize] = nwait;
        self.queued[id as usize] = None;
        self.pending.push((id, s, d));
        self.submitted[p].push_back(id);
        self.npending[p] += 1;
    }

    /// Node `node`'s driver thread is (or is no longer) busy running a synchronous task: it
    /// submits none of the requests it handles meanwhile (the transfers already submitted go
    /// on). Call [`Runners::start_ready`] after unblocking.
    pub fn set_blocked(&mut self, node: MemNodeId, blocked: bool) {
        self.blocked[node.index()] = blocked;
    }

    /// Submit pair `p`'s requests, fetches first, as far as the limits allow; idle requests
    /// only when `requesting` is given (see [`Runners::start_ready`]).
    fn submit_requests(&mut self, p: usize, requesting: Option<&[bool]>, now_s: f64) {
        if self.blocked[self.handler(p)] {
            return;
        }
        for list in [FETCH, PREFETCH, IDLE] {
            while self.npending[p] < self.limits[list] {
                if list == IDLE {
                    let h = self.handler(p);
                    if requesting.is_none_or(|r| r[h]) || self.handles_requests(h) {
                        break;
                    }
                }
                let Some((_, _, id)) = self.requests[p][list].pop_first() else {
                    break;
                };
                self.submit(p, id, now_s);
            }
        }
        if self.requests[p].iter().all(|l| l.is_empty()) {
            self.listed.remove(&p);
        }
    }

    /// Whether node `n` handles any queued fetch or prefetch request or any pending transfer:
    /// then its idle requests wait.
    fn handles_requests(&self, n: usize) -> bool {
        (0..self.nnodes * self.nnodes).any(|p| {
            self.handler(p) == n
                && (self.npending[p] > 0
                    || !self.requests[p][FETCH].is_empty()
                    || !self.requests[p][PREFETCH].is_empty())
        })
    }

    /// Submit what the request lists allow, then start the transfers that may start now, in
    /// pair order, and mark them in flight. A pair starts its first submitted transfer that
    /// waits for no earlier sequential one.
    ///
    /// `requesting[n]` says that node `n` has requests the lists do not hold yet (buffers
    /// being allocated for a fetch or prefetch: StarPU's request is in the node's list while
    /// it allocates); an idle request of that node waits for them too.
    pub fn start_ready(&mut self, out: &mut Vec<u32>, requesting: &[bool], now_s: f64) {
        let mut next = self.listed.first().copied();
        while let Some(p) = next {
            self.submit_requests(p, Some(requesting), now_s);
            next = self.listed.range(p + 1..).next().copied();
        }
        for p in 0..self.nnodes * self.nnodes {
            if self.busy[p] {
                continue;
            }
            let q = &self.submitted[p];
            let Some(i) = q.iter().position(|&id| self.nwait[id as usize] == 0) else {
                continue;
            };
            let id = self.submitted[p].remove(i).expect("position in queue");
            self.busy[p] = true;
            out.push(id);
        }
    }

    /// Transfer `id` of this pair ended: free the pair and release the transfers waiting
    /// for it.
    pub fn finished(&mut self, id: u32, src: MemNodeId, dst: MemNodeId) {
        let p = self.pair(src, dst);
        self.busy[p] = false;
        self.npending[p] -= 1;
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

    /// StarPU-SimGrid's estimate applies 2·nGPUs to every hop. By hand, RAM and two GPUs, each
    /// GPU on its own 1 GB/s, 10 µs link, and a 2 GB/s, 20 µs route GPU0→GPU1 only; 1 MB:
    /// - RAM→GPU0: 10 µs + 2·2·1 ms = 4.010 ms;
    /// - GPU0→GPU1: 20 µs + 2·2·0.5 ms = 2.020 ms (the contention-free time is 0.520 ms);
    /// - GPU1→GPU0 has no route: staged through RAM, 4.010 + 4.010 = 8.020 ms.
    #[test]
    fn starpu_estimate_counts_every_gpu_on_every_hop() {
        // star_machine: RAM and two GPUs, each on its own 1 GB/s, 10 µs link.
        let t = crate::fixture::star_machine_text(2, 2)
            + "[[links]]\nname = \"P\"\nbandwidth = \"2e9 B/s\"\nlatency = \"2e-5 s\"\n\
               [[routes]]\nsrc = \"GPU0\"\ndst = \"GPU1\"\nlinks = [\"P\"]\n";
        let m = hetsim_platform::machine::from_str(&t, "t.toml").unwrap();
        let e = Estimates::new(&m, MemNodeId(0), 2);
        let (ram, g0, g1) = (MemNodeId(0), MemNodeId(1), MemNodeId(2));
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        close(e.starpu_s(ram, g0, 1e6), 4.010e-3);
        close(e.starpu_s(g0, g1, 1e6), 2.020e-3);
        close(e.nominal_s(g0, g1, 1e6), 0.520e-3);
        close(e.starpu_s(g1, g0, 1e6), 8.020e-3);
    }

    /// StarPU predicts from the bus benchmark's figures, not the links': with the GPU0→GPU1
    /// route of the test above carrying `estimate` 5 µs and 4 GB/s, 1 MB is predicted at
    /// 5 µs + 2·2·0.25 ms = 1.005 ms, while its contention-free time stays the link's 0.520 ms.
    #[test]
    fn starpu_estimate_reads_the_route_estimate() {
        let t = crate::fixture::star_machine_text(2, 2)
            + "[[links]]\nname = \"P\"\nbandwidth = \"2e9 B/s\"\nlatency = \"2e-5 s\"\n\
               [[routes]]\nsrc = \"GPU0\"\ndst = \"GPU1\"\nlinks = [\"P\"]\n\
               estimate = { kind = \"affine\", latency = \"5 us\", bandwidth = \"4 GB/s\" }\n";
        let m = hetsim_platform::machine::from_str(&t, "t.toml").unwrap();
        let e = Estimates::new(&m, MemNodeId(0), 2);
        let (g0, g1) = (MemNodeId(1), MemNodeId(2));
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        close(e.starpu_s(g0, g1, 1e6), 1.005e-3);
        close(e.nominal_s(g0, g1, 1e6), 0.520e-3);
    }

    fn tr(src: u32, dst: u32, kind: TransferKind) -> Transfer {
        Transfer {
            handle: HandleId(0),
            src: MemNodeId(src),
            dst: MemNodeId(dst),
            bytes: 1.0,
            kind,
            version: 0,
            idle: false,
            priority: 0,
        }
    }

    fn started(r: &mut Runners) -> Vec<u32> {
        let mut out = Vec::new();
        r.start_ready(&mut out, &[false; 3][..r.nnodes], 0.0);
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
        let mut r = Runners::new(
            &[MemKind::Ram, MemKind::Gpu, MemKind::Gpu],
            PendingLimits::default(),
        );
        r.enqueue(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        assert_eq!(started(&mut r), [0]);
        r.enqueue(1, &tr(2, 1, TransferKind::Fetch), 0.0);
        r.enqueue(2, &tr(0, 2, TransferKind::Fetch), 0.0);
        assert_eq!(started(&mut r), Vec::<u32>::new());
        r.finished(0, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [1]);
        r.finished(1, MemNodeId(2), MemNodeId(1));
        assert_eq!(started(&mut r), [2]);
        r.finished(2, MemNodeId(0), MemNodeId(2));
        assert_eq!(started(&mut r), Vec::<u32>::new());
    }

    /// StarPU-SimGrid's queueing sleep (`_starpu_simgrid_transfer`) is taken by the thread
    /// that submits a transfer, before the transfer joins its pair's queue: one submission after
    /// the other per handling node, overlapping the transfer ahead. By hand, 10 µs each, on RAM
    /// (node 0) and GPUs 1 and 2 (each handles the copies into it):
    /// - at 0, T0 and T1 RAM→GPU1 are submitted by GPU1's thread: they may move at 10 and
    ///   20 µs; T0 starts, T1 waits for the pair;
    /// - at 5 µs, T2 RAM→GPU2 has another handler: it may move at 15 µs;
    /// - T0 ends at 500 µs: T1 has long paid its sleep and moves at once (without the rule it
    ///   would move at 510 µs);
    /// - at 600 µs, T3 RAM→GPU1: GPU1's thread is free again, it may move at 610 µs.
    #[test]
    fn the_queueing_sleep_is_paid_at_submission_one_after_the_other() {
        let mut r = Runners::new(
            &[MemKind::Ram, MemKind::Gpu, MemKind::Gpu],
            PendingLimits::default(),
        )
        .with_queue_s(10e-6);
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} != {b}");
        r.enqueue(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        r.enqueue(1, &tr(0, 1, TransferKind::Fetch), 0.0);
        r.enqueue(2, &tr(0, 2, TransferKind::Fetch), 5e-6);
        close(r.go_s(0), 10e-6);
        close(r.go_s(1), 20e-6);
        close(r.go_s(2), 15e-6);
        assert_eq!(started(&mut r), [0, 2]);
        r.finished(0, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [1]);
        close(r.go_s(1).max(500e-6), 500e-6);
        r.enqueue(3, &tr(0, 1, TransferKind::Fetch), 600e-6);
        close(r.go_s(3), 610e-6);
    }

    /// Two transfers of different pairs that touch no GPU↔GPU copy are independent; a pair
    /// runs one transfer at a time, first submitted first served (§1e, one stream per
    /// direction); the request lists decide what is submitted (§1a: at most 5 pending with
    /// a fetch, 2 with a prefetch, highest priority first). By hand, on RAM (node 0) and GPU1:
    /// - T0 RAM→GPU1 fetch and T1 GPU1→RAM write-back move together;
    /// - T2 RAM→GPU1 prefetch: 1 pending on the pair, under 2: submitted, queued behind T0;
    /// - T3 prefetch: 2 pending: it stays in the prefetch list; T4 prefetch of higher priority
    ///   goes ahead of it there;
    /// - T5 fetch: 2 pending, under 5: submitted behind T2 (it does not overtake a submitted
    ///   prefetch);
    /// - T0 ends: T2 starts (3 pending → 2: no prefetch submitted); T2 ends: T5 starts, and
    ///   with 1 pending T4 (the higher priority) is submitted, T3 still waits; T5 ends: T4
    ///   starts and T3 is submitted; T4 ends: T3 starts.
    #[test]
    fn request_lists_feed_one_fifo_per_pair() {
        let mut r = Runners::new(&[MemKind::Ram, MemKind::Gpu], PendingLimits::default());
        r.enqueue(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        r.enqueue(1, &tr(1, 0, TransferKind::WriteBack), 0.0);
        assert_eq!(started(&mut r), [0, 1]);
        r.enqueue(2, &tr(0, 1, TransferKind::Prefetch), 0.0);
        r.enqueue(3, &tr(0, 1, TransferKind::Prefetch), 0.0);
        let urgent = Transfer {
            priority: 7,
            ..tr(0, 1, TransferKind::Prefetch)
        };
        r.enqueue(4, &urgent, 0.0);
        r.enqueue(5, &tr(0, 1, TransferKind::Fetch), 0.0);
        assert_eq!(started(&mut r), Vec::<u32>::new());
        r.finished(0, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [2]);
        r.finished(2, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [5]);
        r.finished(5, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [4]);
        r.finished(4, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [3]);
    }

    /// The limits are the machine's (`runtime.max_pending_*`): with older StarPU's 20 / 10 / 1
    /// the prefetches of the test above are all submitted at once, so the pair serves them in
    /// request order and the later fetch waits behind them. By hand: T0 fetch, T1-T3
    /// prefetches, T4 fetch: T0, T1, T2, T3, T4.
    #[test]
    fn looser_limits_submit_every_prefetch_at_once() {
        let limits = PendingLimits {
            fetch: 20,
            prefetch: 10,
            idle: 1,
        };
        let mut r = Runners::new(&[MemKind::Ram, MemKind::Gpu], limits);
        r.enqueue(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        for id in 1..=3 {
            r.enqueue(id, &tr(0, 1, TransferKind::Prefetch), 0.0);
        }
        r.enqueue(4, &tr(0, 1, TransferKind::Fetch), 0.0);
        let mut order = started(&mut r);
        for _ in 0..4 {
            let last = *order.last().unwrap();
            r.finished(last, MemNodeId(0), MemNodeId(1));
            order.extend(started(&mut r));
        }
        assert_eq!(order, [0, 1, 2, 3, 4]);
    }

    /// A node whose driver runs a synchronous task submits none of the requests it handles:
    /// RAM→GPU1 (handled by GPU1) waits while GPU1 is blocked, GPU1→RAM's transfer already
    /// submitted goes on, and the request is submitted once GPU1 is free.
    #[test]
    fn a_blocked_driver_submits_nothing_until_it_is_free() {
        let mut r = Runners::new(&[MemKind::Ram, MemKind::Gpu], PendingLimits::default());
        r.enqueue(0, &tr(1, 0, TransferKind::WriteBack), 0.0);
        r.set_blocked(MemNodeId(1), true);
        r.enqueue(1, &tr(0, 1, TransferKind::Fetch), 0.0);
        assert_eq!(started(&mut r), [0]);
        r.set_blocked(MemNodeId(1), false);
        assert_eq!(started(&mut r), [1]);
    }

    /// A fetch that needs a prefetch still in the list moves it to the fetch list, where the
    /// limit is 5: it is submitted at once. By hand: T0 fetch moving, T1 and T2 prefetches
    /// (T1 submitted, T2 listed), T2 promoted: submitted behind T1.
    #[test]
    fn a_promoted_prefetch_is_submitted_under_the_fetch_limit() {
        let mut r = Runners::new(&[MemKind::Ram, MemKind::Gpu], PendingLimits::default());
        r.enqueue(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        r.enqueue(1, &tr(0, 1, TransferKind::Prefetch), 0.0);
        r.enqueue(2, &tr(0, 1, TransferKind::Prefetch), 0.0);
        assert_eq!(started(&mut r), [0]);
        assert!(r.promote(2, &tr(0, 1, TransferKind::Prefetch)));
        assert!(
            !r.promote(1, &tr(0, 1, TransferKind::Prefetch)),
            "already submitted"
        );
        assert_eq!(started(&mut r), Vec::<u32>::new());
        r.finished(0, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [1]);
        r.finished(1, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [2]);
    }

    /// StarPU's idle request list (§1a, "three priority lists"; `datawizard.c` handles a
    /// node's idle requests only when none of its requests is pending on any peer): the
    /// handler of GPU1→RAM is GPU1, which also handles RAM→GPU1. By hand:
    /// - T0 RAM→GPU1 fetch starts; T1 GPU1→RAM idle: GPU1 has T0 pending: it waits;
    /// - T0 ends: nothing pending on GPU1: T1 starts;
    /// - T2 GPU1→RAM idle while T1 moves: the pair has one pending, the idle limit is 1:
    ///   it waits; T3 RAM→GPU1 prefetch starts; T1 ends: T3 still pending, T2 waits;
    /// - promoted by a fetch, T2 is submitted at once and starts (its pair is free).
    #[test]
    fn idle_requests_wait_until_their_node_has_nothing_pending() {
        let mut r = Runners::new(&[MemKind::Ram, MemKind::Gpu], PendingLimits::default());
        let idle = |src, dst| Transfer {
            idle: true,
            ..tr(src, dst, TransferKind::WriteBack)
        };
        r.enqueue(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        r.enqueue(1, &idle(1, 0), 0.0);
        assert_eq!(started(&mut r), [0]);
        r.finished(0, MemNodeId(0), MemNodeId(1));
        assert_eq!(started(&mut r), [1]);
        r.enqueue(2, &idle(1, 0), 0.0);
        r.enqueue(3, &tr(0, 1, TransferKind::Prefetch), 0.0);
        assert_eq!(started(&mut r), [3]);
        r.finished(1, MemNodeId(1), MemNodeId(0));
        assert_eq!(started(&mut r), Vec::<u32>::new());
        assert!(r.promote(2, &idle(1, 0)));
        assert_eq!(started(&mut r), [2]);
    }
}
