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

    /// The links of every path over the fluid network: all the routes transfers take.
    pub fn fluid_routes(&self) -> Vec<Vec<fluid::LinkId>> {
        self.paths
            .iter()
            .filter_map(|p| match p {
                Some(Path::Fluid(links)) => Some(links.clone()),
                _ => None,
            })
            .collect()
    }
}

/// The one or two hops a copy takes ([`Estimates::hops`]), kept on the stack: it is asked for
/// on every copy and every source choice.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hops {
    hops: [(MemNodeId, MemNodeId); 2],
    len: u8,
}

impl std::ops::Deref for Hops {
    type Target = [(MemNodeId, MemNodeId)];

    fn deref(&self) -> &Self::Target {
        &self.hops[..self.len as usize]
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
    pub fn hops(&self, src: MemNodeId, dst: MemNodeId) -> Hops {
        let mut hops = Hops {
            hops: [(src, dst); 2],
            len: 0,
        };
        if src != dst && self.direct(src, dst).is_some() {
            hops.len = 1;
        } else if src != dst {
            hops.hops = [(src, self.ram), (self.ram, dst)];
            hops.len = 2;
        }
        hops
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

/// The node whose driver handles copies from `s` to `d` (`gpu`: which nodes are GPUs): the
/// destination if it is a GPU (copies into a GPU, from RAM or from a peer), else the source (a
/// GPU's copies back to RAM).
fn handling_node(gpu: &[bool], s: usize, d: usize) -> usize {
    if gpu[d] { d } else { s }
}

/// A queued request: highest priority first, then first come first served.
type RequestKey = (std::cmp::Reverse<i32>, u64, u32);

/// One request list of a pair, in [`RequestKey`] order. A heap rather than a sorted tree:
/// passes take requests from the front, and dmda's prefetches make lists of hundreds, where a
/// tree's insertion costs several times a heap's.
#[derive(Debug, Default)]
struct RequestList {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<RequestKey>>,
}

impl RequestList {
    fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    fn insert(&mut self, key: RequestKey) {
        self.heap.push(std::cmp::Reverse(key));
    }

    /// Take `key` out (a request moving to another list: rare, so a linear pass).
    fn remove(&mut self, key: RequestKey) {
        self.heap.retain(|k| k.0 != key);
    }

    /// Take out the first request, in list order, that `takes` accepts. Requests before it
    /// stay (a pass skips only those posted after its visit, which are few).
    fn take_first(
        &mut self,
        takes: impl Fn(u32) -> bool,
        skipped: &mut Vec<RequestKey>,
    ) -> Option<RequestKey> {
        let mut found = None;
        while let Some(std::cmp::Reverse(key)) = self.heap.pop() {
            if takes(key.2) {
                found = Some(key);
                break;
            }
            skipped.push(key);
        }
        self.heap.extend(skipped.drain(..).map(std::cmp::Reverse));
        found
    }
}

/// StarPU's two stages between a data request and the bytes moving (`starpu-reference.md`
/// §1a "three priority lists" and §1e):
///
/// 1. **Request lists and the handling node's passes.** Each (source, destination) pair —
///    which is one (handling node, peer, direction) of `data_request.c`: a GPU handles the
///    copies into it and out of it to RAM — has a fetch, a prefetch and an idle list, each
///    ordered by priority. A request is only posted there; the handling node's driver thread
///    submits requests when it next makes progress (`__starpu_datawizard_progress`, 1 µs of
///    simulated time per memory node the driver drives: RAM's, then a GPU's own), which
///    posting wakes it for. A pass goes through the incoming lists first — every peer's
///    fetch list in node order, then every peer's prefetch list, then the idle lists while no
///    incoming request is pending from any peer — and then the outgoing ones, peer by peer
///    (idle ones while none to that peer is pending). A list is submitted from while fewer
///    than 5 of the pair's requests are pending (fetch), 2 (prefetch) or 1 (idle): StarPU
///    1.4's limits, the defaults of [`PendingLimits`]. Each submission costs the thread its
///    queueing sleep, so requests posted meanwhile wait for its next pass. A fetch that needs
///    a queued prefetch moves it to the fetch list; once submitted it keeps its place. A node
///    whose driver runs a synchronous task makes no pass meanwhile
///    ([`Runners::set_blocked`]). A driver sees a transfer complete only in a pass, which
///    the transfer's end makes due ([`Runners::pass_to_see`]); the request stays pending
///    until then ([`Runners::completed`]).
/// 2. **Submitted transfers** (`simgrid.c`, `transfer_submit`, after the sleep): one transfer
///    at a time per pair, first submitted first served (one CUDA stream per direction); and a
///    transfer waits for every transfer submitted **before** it and still pending with which
///    it is sequential: a GPU↔GPU transfer a→b and any transfer whose destination is a or b
///    (the crossed b→a among them), in either order of kinds. StarPU keeps this as `nwait`
///    counters and `wake` lists fixed at submission, so a transfer is never overtaken by a
///    conflicting one submitted after it.
#[derive(Debug)]
pub(crate) struct Runners {
    nnodes: usize,
    gpu: Vec<bool>,
    /// Per handling node, the pairs whose requests its driver handles (both directions).
    handled: Vec<Vec<usize>>,
    /// Per pair, the fetch, prefetch and idle request lists.
    requests: Vec<[RequestList; 3]>,
    /// Per transfer id still in a request list: which list, and its key there.
    queued: Vec<Option<(usize, RequestKey)>>,
    /// Per handling node, how many requests its lists hold.
    nqueued: Vec<u32>,
    /// Requests made so far (the first-come order).
    seq: u64,
    /// Per list (fetch, prefetch, idle): submit while fewer than this many of the pair's
    /// requests are pending (`runtime.max_pending_*`).
    limits: [u32; 3],
    /// Per node: its driver is busy running a synchronous task and makes no pass.
    blocked: Vec<bool>,
    /// Per node: a pass of its driver is due (the caller has scheduled it).
    pass_due: Vec<bool>,
    /// Per pair, submitted transfers not started yet, in submission order.
    submitted: Vec<VecDeque<u32>>,
    /// Per pair, requests submitted and not finished (counted from the pass on).
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
    /// Per handling node: the latest date a request still in its lists was posted at (not
    /// lowered when requests leave), so that a pass looks for requests posted after it only
    /// when there may be some.
    latest_post_s: Vec<f64>,
    /// Per node: when its driver last made a pass.
    last_pass_s: Vec<f64>,
    /// Per transfer id: when its request was posted (a pass only takes requests posted by
    /// the time it visits their list).
    post_s: Vec<f64>,
    /// Per transfer id: one more request for a replica already being loaded for another task
    /// ([`Runners::enqueue_duplicate`]).
    duplicate: Vec<bool>,
    /// Duplicate requests passes dropped, for the caller to forget.
    dropped: Vec<u32>,
    /// Per handling node, the requests posted, earliest post first (date bits, sequence,
    /// id); entries no longer queued, or posted before a pass began, are dropped lazily.
    posts: Vec<std::collections::BinaryHeap<std::cmp::Reverse<(u64, u64, u32)>>>,
    /// Scratch for [`RequestList::take_first`].
    skipped: Vec<RequestKey>,
}

impl Runners {
    pub fn new(kinds: &[MemKind], limits: PendingLimits) -> Self {
        let n = kinds.len();
        let gpu: Vec<bool> = kinds.iter().map(|&k| k == MemKind::Gpu).collect();
        let mut handled = vec![Vec::new(); n];
        for s in 0..n {
            for d in (0..n).filter(|&d| d != s) {
                handled[handling_node(&gpu, s, d)].push(s * n + d);
            }
        }
        Runners {
            limits: [limits.fetch, limits.prefetch, limits.idle],
            nnodes: n,
            gpu,
            handled,
            requests: (0..n * n).map(|_| Default::default()).collect(),
            queued: Vec::new(),
            nqueued: vec![0; n],
            seq: 0,
            blocked: vec![false; n],
            pass_due: vec![false; n],
            submitted: vec![VecDeque::new(); n * n],
            npending: vec![0; n * n],
            busy: vec![false; n * n],
            pending: Vec::new(),
            nwait: Vec::new(),
            wake: Vec::new(),
            queue_s: 0.0,
            handler_free_s: vec![0.0; n],
            go_s: Vec::new(),
            post_s: Vec::new(),
            last_pass_s: vec![f64::NEG_INFINITY; n],
            latest_post_s: vec![f64::NEG_INFINITY; n],
            duplicate: Vec::new(),
            dropped: Vec::new(),
            posts: vec![Default::default(); n],
            skipped: Vec::new(),
        }
    }

    /// The same, with the queueing sleep each submission costs its handling node's thread.
    pub fn with_queue_s(mut self, queue_s: f64) -> Self {
        self.queue_s = queue_s;
        self
    }

    /// When transfer `id`'s submission ends: it joins its pair's queue then.
    pub fn go_s(&self, id: u32) -> f64 {
        self.go_s[id as usize]
    }

    /// The queueing sleep that precedes each submission.
    pub fn queue_s(&self) -> f64 {
        self.queue_s
    }

    fn pair(&self, src: MemNodeId, dst: MemNodeId) -> usize {
        src.index() * self.nnodes + dst.index()
    }

    /// The node whose driver handles a pair's requests ([`handling_node`]).
    fn handler(&self, p: usize) -> usize {
        handling_node(&self.gpu, p / self.nnodes, p % self.nnodes)
    }

    /// How long node `h`'s driver's progress call takes before it reads the request lists (a
    /// GPU's node is driven by that GPU's driver, RAM by a CPU's).
    fn progress_s(&self, h: usize) -> f64 {
        crate::workers::progress_s(self.gpu[h])
    }

    /// StarPU's `transfers_are_sequential` for two transfers of different pairs (the same pair
    /// is the runner's FIFO): a GPU↔GPU transfer against any transfer into one of its ends.
    fn sequential(&self, new: (usize, usize), old: (usize, usize)) -> bool {
        let gpu_gpu = |(s, d): (usize, usize)| self.gpu[s] && self.gpu[d];
        (gpu_gpu(new) && (old.1 == new.0 || old.1 == new.1))
            || (gpu_gpu(old) && (new.1 == old.0 || new.1 == old.1))
    }

    /// Post at `post_s` the request for transfer `id` in its pair's fetch, prefetch or idle
    /// list. Returns the pass of its handling node to schedule, if one is not due already.
    pub fn enqueue(&mut self, id: u32, t: &Transfer, post_s: f64) -> Option<(MemNodeId, f64)> {
        let i = id as usize;
        if self.nwait.len() <= i {
            self.nwait.resize(i + 1, 0);
            self.wake.resize_with(i + 1, Vec::new);
            self.queued.resize(i + 1, None);
            self.go_s.resize(i + 1, 0.0);
            self.post_s.resize(i + 1, 0.0);
            self.duplicate.resize(i + 1, false);
        }
        self.post_s[i] = post_s;
        self.duplicate[i] = false;
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
        let h = self.handler(p);
        self.nqueued[h] += 1;
        self.latest_post_s[h] = self.latest_post_s[h].max(post_s);
        // Dates are ≥ 0, whose bits order as the dates do.
        self.posts[h].push(std::cmp::Reverse((post_s.max(0.0).to_bits(), self.seq, id)));
        self.wake_node(h, post_s)
    }

    /// Post one more request for a replica already being loaded for another task: StarPU
    /// reuses a request only for the same task (`_starpu_search_existing_data_request`), so a
    /// prefetch for another task posts a new one in its source's list. When a pass reaches
    /// it, it takes one of the pair's slots of that visit and is dropped
    /// (`starpu_handle_data_request` finds the replica loading or valid and joins the load: no
    /// submission, no queueing sleep); the caller forgets it after the pass
    /// ([`Runners::take_dropped`]).
    pub fn enqueue_duplicate(
        &mut self,
        id: u32,
        t: &Transfer,
        post_s: f64,
    ) -> Option<(MemNodeId, f64)> {
        let pass = self.enqueue(id, t, post_s);
        self.duplicate[id as usize] = true;
        pass
    }

    /// The duplicate requests dropped since the last call.
    pub fn take_dropped(&mut self, out: &mut Vec<u32>) {
        out.append(&mut self.dropped);
    }

    /// A fetch now needs a queued prefetch or idle request: move it to the fetch list.
    /// Returns whether it was still queued (a submitted one keeps its place).
    pub fn promote(&mut self, id: u32, t: &Transfer) -> bool {
        let p = self.pair(t.src, t.dst);
        match self.queued[id as usize] {
            Some((list, key)) if list != FETCH => {
                self.requests[p][list].remove(key);
                self.requests[p][FETCH].insert(key);
                self.queued[id as usize] = Some((FETCH, key));
                true
            }
            _ => false,
        }
    }

    /// When node `node`'s driver last made a pass over its requests.
    pub fn last_pass_s(&self, node: MemNodeId) -> f64 {
        self.last_pass_s[node.index()]
    }

    /// The earliest date of node `node`'s next pass: its thread free, its progress call over.
    pub fn pass_ready_s(&self, node: MemNodeId) -> f64 {
        self.handler_free_s[node.index()] + self.progress_s(node.index())
    }

    /// When node `node`'s thread is done with the submissions made so far.
    pub fn handler_free_s(&self, node: MemNodeId) -> f64 {
        self.handler_free_s[node.index()]
    }

    /// Node `node`'s thread is busy with something else (pushing tasks, requesting a task's
    /// buffers) until `until_s`: its next pass waits for it.
    pub fn busy_until(&mut self, node: MemNodeId, until_s: f64) {
        let h = node.index();
        self.handler_free_s[h] = self.handler_free_s[h].max(until_s);
    }

    /// Node `node`'s driver thread is (or is no longer) busy running a synchronous task: it
    /// makes no pass meanwhile (the transfers already submitted go on). Call
    /// [`Runners::wake_all`] after unblocking.
    pub fn set_blocked(&mut self, node: MemNodeId, blocked: bool) {
        self.blocked[node.index()] = blocked;
    }

    /// The pass of node `h` to schedule, and when: once its thread is free and its progress
    /// call over, if it may submit something, is not blocked and has no pass due.
    fn wake_node(&mut self, h: usize, now_s: f64) -> Option<(MemNodeId, f64)> {
        if self.blocked[h] || !self.may_submit(h) {
            return None;
        }
        self.make_due(h, now_s)
    }

    /// Make node `h`'s next pass due, once its thread is free and its progress call over:
    /// the pass to schedule, `None` if one is due already.
    fn make_due(&mut self, h: usize, now_s: f64) -> Option<(MemNodeId, f64)> {
        if self.pass_due[h] {
            return None;
        }
        self.pass_due[h] = true;
        Some((
            MemNodeId(h as u32),
            self.handler_free_s[h].max(now_s) + self.progress_s(h),
        ))
    }

    /// A transfer node `node`'s driver handles has moved: the driver sees it complete in its
    /// next pass, due even with nothing to submit. Returns that pass to schedule if none is
    /// due already. The caller checks that the driver is not blocked.
    pub fn pass_to_see(&mut self, node: MemNodeId, now_s: f64) -> Option<(MemNodeId, f64)> {
        debug_assert!(
            !self.blocked[node.index()],
            "a blocked driver makes no pass"
        );
        self.make_due(node.index(), now_s)
    }

    /// Whether a pass of node `h` may submit something: a list of a pair it handles holds a
    /// request and the pair has room under that list's limit.
    fn may_submit(&self, h: usize) -> bool {
        self.nqueued[h] > 0
            && self.handled[h].iter().any(|&p| {
                (0..3).any(|l| self.npending[p] < self.limits[l] && !self.requests[p][l].is_empty())
            })
    }

    /// Something a pass depends on changed (a transfer ended, an allocation ended, a driver
    /// is free again): the passes to schedule, as [`Runners::enqueue`] returns them.
    pub fn wake_all(&mut self, now_s: f64, out: &mut Vec<(MemNodeId, f64)>) {
        for h in 0..self.nnodes {
            out.extend(self.wake_node(h, now_s));
        }
    }

    /// A pass of node `node`'s driver at `now_s` (see [`Runners`]): submit what its lists
    /// allow, in StarPU's order, and push each submitted transfer with the date its
    /// submission ends ([`Runners::go_s`]), when the caller reports it with
    /// [`Runners::submitted`].
    ///
    /// `requesting` says that the node has requests the lists do not hold yet (buffers being
    /// allocated for a fetch or prefetch: StarPU's request is in the node's list while it
    /// allocates); its idle requests wait for them too.
    ///
    /// Returns the next pass to schedule if requests posted after this one visited their
    /// lists are waiting.
    pub fn pass(
        &mut self,
        node: MemNodeId,
        requesting: bool,
        now_s: f64,
        out: &mut Vec<u32>,
    ) -> Option<(MemNodeId, f64)> {
        let h = node.index();
        let ready_s = self.pass_ready_s(node);
        if ready_s > now_s {
            // Its thread got busy meanwhile (pushing tasks, requesting a task's buffers): its
            // progress call comes after.
            return Some((node, ready_s));
        }
        self.last_pass_s[h] = now_s;
        self.pass_due[h] = false;
        if self.nqueued[h] == 0 {
            self.posts[h].clear();
            return None;
        }
        if self.blocked[h] {
            return None;
        }
        let n = self.nnodes;
        let start_s = self.handler_free_s[h].max(now_s);
        let dropped_before = self.dropped.len();
        // The pairs coming into `h` that it handles (all of them if it is a GPU, none if it is
        // RAM: a GPU handles the copies between it and RAM), peers in node order.
        let into_gpu = self.gpu[h];
        let incoming = (0..n)
            .filter(move |&peer| into_gpu && peer != h)
            .map(move |peer| peer * n + h);
        for list in [FETCH, PREFETCH] {
            for p in incoming.clone() {
                self.submit_list(p, list, now_s, out);
            }
        }
        // Idle requests in only while no incoming request is pending from any peer
        // (`_starpu_check_that_no_data_request_is_pending` over the peers).
        if !requesting && incoming.clone().all(|p| self.npending[p] == 0) {
            for p in incoming {
                self.submit_list(p, IDLE, now_s, out);
            }
        }
        for peer in 0..n {
            let p = h * n + peer;
            if peer != h && handling_node(&self.gpu, h, peer) == h {
                self.submit_list(p, FETCH, now_s, out);
                self.submit_list(p, PREFETCH, now_s, out);
                // Idle requests out to a peer while none to it is pending.
                if !requesting && self.npending[p] == 0 {
                    self.submit_list(p, IDLE, now_s, out);
                }
            }
        }
        // The thread loops while it has work: requests posted after this pass began get the
        // next one (those left from before wait for a pending request to complete), and a
        // pass that dropped a duplicate counts as progress, so the driver makes another one
        // at once, which takes the requests the duplicate's slot kept waiting.
        let done_s = self.handler_free_s[h].max(now_s);
        if self.dropped.len() > dropped_before && self.may_submit(h) {
            return self.make_due(h, now_s);
        }
        if self.nqueued[h] == 0 || self.latest_post_s[h] <= start_s {
            // Every post is before this pass: none is left to wait for (the heap would
            // otherwise keep an entry per request of the run).
            self.posts[h].clear();
            return None;
        }
        // The earliest post after `start_s` among the requests still queued (passes begin
        // later and later, so posts before `start_s` can go for good).
        let posts = &mut self.posts[h];
        while let Some(&std::cmp::Reverse((bits, seq, id))) = posts.peek() {
            let queued = matches!(self.queued[id as usize], Some((_, key)) if key.1 == seq);
            if queued && f64::from_bits(bits) > start_s {
                break;
            }
            posts.pop();
        }
        let later = f64::from_bits(posts.peek()?.0.0);
        self.pass_due[h] = true;
        Some((node, later.max(done_s) + self.progress_s(h)))
    }

    /// Submit from one list of pair `p` as far as its limit allows.
    fn submit_list(&mut self, p: usize, list: usize, now_s: f64, out: &mut Vec<u32>) {
        // Most visits find the list empty or the pair full: nothing to look up.
        let mut room = self.limits[list].saturating_sub(self.npending[p]);
        if room == 0 || self.requests[p][list].is_empty() {
            return;
        }
        let h = self.handler(p);
        // The thread takes the list's requests when it reaches it, after its submissions from
        // the lists before (`__starpu_handle_node_data_requests` moves them to a local list).
        let visit_s = self.handler_free_s[h].max(now_s);
        // The visit takes as many requests as the pair has room for; a duplicate takes its
        // slot and is dropped.
        while room > 0 {
            let post_s = &self.post_s;
            let Some(key) = self.requests[p][list]
                .take_first(|id| post_s[id as usize] <= visit_s, &mut self.skipped)
            else {
                break;
            };
            room -= 1;
            let id = key.2;
            self.queued[id as usize] = None;
            self.nqueued[h] -= 1;
            if self.duplicate[id as usize] {
                self.dropped.push(id);
                continue;
            }
            self.npending[p] += 1;
            // The handling node's thread sleeps the queueing cost before `transfer_submit`,
            // one submission after the other.
            let go = self.handler_free_s[h].max(now_s) + self.queue_s;
            self.handler_free_s[h] = go;
            self.go_s[id as usize] = go;
            out.push(id);
        }
    }

    /// Transfer `id` of pair (`src`, `dst`) is submitted (its queueing sleep is over): it
    /// joins its pair's queue, after the pending transfers it is sequential with.
    pub fn submitted(&mut self, id: u32, src: MemNodeId, dst: MemNodeId) {
        let p = self.pair(src, dst);
        let (s, d) = (src.index(), dst.index());
        let mut nwait = 0;
        for k in 0..self.pending.len() {
            let (old, os, od) = self.pending[k];
            if (os, od) != (s, d) && self.sequential((s, d), (os, od)) {
                self.wake[old as usize].push(id);
                nwait += 1;
            }
        }
        self.nwait[id as usize] = nwait;
        self.pending.push((id, s, d));
        self.submitted[p].push_back(id);
    }

    /// Start the submitted transfers that may start now, in pair order, and mark them in
    /// flight. A pair starts its first submitted transfer that waits for no earlier
    /// sequential one.
    pub fn start_ready(&mut self, out: &mut Vec<u32>) {
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

    /// Transfer `id`'s bytes of this pair have all moved: free the pair and release the
    /// transfers waiting for it (SimGrid's transfer actor does, whatever the driver does).
    pub fn moved(&mut self, id: u32, src: MemNodeId, dst: MemNodeId) {
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

    /// The handling node's driver has seen a transfer of this pair complete: the request is no
    /// longer pending.
    pub fn completed(&mut self, src: MemNodeId, dst: MemNodeId) {
        let p = self.pair(src, dst);
        self.npending[p] -= 1;
    }

    /// The node whose driver handles transfers `src`→`dst`, and whether it is blocked (runs a
    /// synchronous task).
    pub fn handler_of(&self, src: MemNodeId, dst: MemNodeId) -> (MemNodeId, bool) {
        let h = self.handler(self.pair(src, dst));
        (MemNodeId(h as u32), self.blocked[h])
    }

    /// Whether node `node`'s driver makes its pass at `now_s`: not blocked, its thread free and
    /// its progress call over.
    pub fn passes_at(&self, node: MemNodeId, now_s: f64) -> bool {
        !self.blocked[node.index()] && self.pass_ready_s(node) <= now_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request list gives the highest priority first, first come first within a priority;
    /// a request the visit may not take yet keeps its place in front of those taken after it;
    /// a request moved out leaves the others in order.
    #[test]
    fn a_request_list_takes_by_priority_then_arrival_and_skips_without_reordering() {
        let mut list = RequestList::default();
        let mut skipped = Vec::new();
        // (priority, arrival, id): ids 1..=5.
        for (prio, seq, id) in [(0, 1, 1), (5, 2, 2), (0, 3, 3), (5, 4, 4), (9, 5, 5)] {
            list.insert((std::cmp::Reverse(prio), seq, id));
        }
        list.remove((std::cmp::Reverse(0), 3, 3));
        let mut take = |list: &mut RequestList, blocked: u32| {
            list.take_first(|id| id != blocked, &mut skipped)
                .map(|k| k.2)
        };
        // Id 5 (priority 9) is first but not takeable yet: 2 comes out, 5 stays first.
        assert_eq!(take(&mut list, 5), Some(2));
        assert_eq!(take(&mut list, 0), Some(5));
        assert_eq!(take(&mut list, 0), Some(4));
        assert_eq!(take(&mut list, 1), None);
        assert!(!list.is_empty());
        assert_eq!(take(&mut list, 0), Some(1));
        assert!(list.is_empty());
        assert_eq!(take(&mut list, 0), None);
    }

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

    enum Ev {
        Pass(MemNodeId),
        Submitted(u32),
    }

    /// Drives [`Runners`] as the data manager does: passes and the ends of submissions at
    /// their dates, in date order (then in the order they were scheduled), the submitted
    /// transfers started after each.
    struct Bench {
        r: Runners,
        cal: Vec<(f64, u64, Ev)>,
        seq: u64,
        now: f64,
        pairs: std::collections::HashMap<u32, (MemNodeId, MemNodeId)>,
    }

    impl Bench {
        fn new(kinds: &[MemKind], limits: PendingLimits, queue_s: f64) -> Self {
            Bench {
                r: Runners::new(kinds, limits).with_queue_s(queue_s),
                cal: Vec::new(),
                seq: 0,
                now: 0.0,
                pairs: Default::default(),
            }
        }

        fn ram_gpus(ngpus: usize, queue_s: f64) -> Self {
            let mut kinds = vec![MemKind::Ram];
            kinds.extend(std::iter::repeat_n(MemKind::Gpu, ngpus));
            Self::new(&kinds, PendingLimits::default(), queue_s)
        }

        fn schedule(&mut self, pass: Option<(MemNodeId, f64)>) {
            if let Some((n, at)) = pass {
                self.seq += 1;
                self.cal.push((at, self.seq, Ev::Pass(n)));
            }
        }

        /// Post transfer `id`'s request at `at_s`.
        fn post(&mut self, id: u32, t: &Transfer, at_s: f64) {
            self.pairs.insert(id, (t.src, t.dst));
            let pass = self.r.enqueue(id, t, at_s);
            self.schedule(pass);
        }

        /// Handle every event due up to `until_s`; returns the transfers started, with when.
        fn run_until(&mut self, until_s: f64) -> Vec<(u32, f64)> {
            let mut out = Vec::new();
            self.r.start_ready(&mut out);
            let mut started: Vec<(u32, f64)> = out.into_iter().map(|id| (id, self.now)).collect();
            while let Some(k) = (0..self.cal.len())
                .filter(|&k| self.cal[k].0 <= until_s)
                .min_by(|&a, &b| {
                    let (x, y) = (&self.cal[a], &self.cal[b]);
                    x.0.total_cmp(&y.0).then(x.1.cmp(&y.1))
                })
            {
                let (at, _, ev) = self.cal.swap_remove(k);
                self.now = at;
                match ev {
                    Ev::Pass(n) => {
                        let mut ids = Vec::new();
                        let next = self.r.pass(n, false, at, &mut ids);
                        self.schedule(next);
                        for id in ids {
                            self.seq += 1;
                            self.cal
                                .push((self.r.go_s(id), self.seq, Ev::Submitted(id)));
                        }
                    }
                    Ev::Submitted(id) => {
                        let (s, d) = self.pairs[&id];
                        self.r.submitted(id, s, d);
                    }
                }
                let mut out = Vec::new();
                self.r.start_ready(&mut out);
                started.extend(out.into_iter().map(|id| (id, at)));
            }
            self.now = self.now.max(until_s);
            started
        }

        /// Handle everything due; the ids started.
        fn run(&mut self) -> Vec<u32> {
            self.run_until(f64::INFINITY)
                .into_iter()
                .map(|(id, _)| id)
                .collect()
        }

        /// Transfer `id` ends now (its driver free to see it).
        fn finish(&mut self, id: u32) {
            let (s, d) = self.pairs[&id];
            self.r.moved(id, s, d);
            self.r.completed(s, d);
            let mut passes = Vec::new();
            self.r.wake_all(self.now, &mut passes);
            for p in passes {
                self.schedule(Some(p));
            }
        }
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    /// StarPU's `transfer_submit` (`starpu-reference.md` §1e): a transfer waits for the
    /// earlier pending transfers it is sequential with, and never for later ones. By hand, on
    /// RAM (node 0) and GPUs 1 and 2:
    /// - T0 RAM→GPU1 starts;
    /// - T1 GPU2→GPU1 is GPU↔GPU into GPU1, where T0 is going: it waits for T0;
    /// - T2 RAM→GPU2 goes into an end of the pending GPU↔GPU T1 (GPU1's pass, which submits
    ///   T1, was scheduled first): it waits for T1, even though no GPU↔GPU transfer is moving
    ///   yet (starting it would let it overtake T1);
    /// - T0 ends: T1 starts; T1 ends: T2 starts.
    #[test]
    fn transfers_wait_for_earlier_sequential_ones_only() {
        let mut b = Bench::ram_gpus(2, 0.0);
        b.post(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        assert_eq!(b.run(), [0]);
        b.post(1, &tr(2, 1, TransferKind::Fetch), b.now);
        b.post(2, &tr(0, 2, TransferKind::Fetch), b.now);
        assert_eq!(b.run(), Vec::<u32>::new());
        b.finish(0);
        assert_eq!(b.run(), [1]);
        b.finish(1);
        assert_eq!(b.run(), [2]);
        b.finish(2);
        assert_eq!(b.run(), Vec::<u32>::new());
    }

    /// A request waits for its handling node's next pass: 2 µs of progress for a GPU's
    /// driver (RAM's and its own), 1 µs for RAM's; each submission then sleeps the queueing
    /// cost (`_starpu_simgrid_transfer`), one after the other on that thread, overlapping the
    /// transfer ahead. By hand, 10 µs each, on RAM (node 0) and GPUs 1 and 2 (each handles
    /// the copies into it):
    /// - T0 and T1 RAM→GPU1 posted at 0: GPU1's pass at 2 µs submits them, done at 12 and
    ///   22 µs; T0 starts at 12, T1 waits for the pair;
    /// - T2 RAM→GPU2 posted at 5 µs has another handler: pass at 7, submitted at 17 µs;
    /// - T0 ends at 500 µs: T1 has long been submitted and moves at once;
    /// - T3 RAM→GPU1 posted at 600 µs: pass at 602, submitted at 612 µs.
    #[test]
    fn a_request_is_submitted_at_its_handler_next_pass_after_the_queueing_sleep() {
        let mut b = Bench::ram_gpus(2, 10e-6);
        b.post(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        b.post(1, &tr(0, 1, TransferKind::Fetch), 0.0);
        b.post(2, &tr(0, 2, TransferKind::Fetch), 5e-6);
        let started = b.run_until(500e-6);
        assert_eq!(started.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 2]);
        close(started[0].1, 12e-6);
        close(started[1].1, 17e-6);
        close(b.r.go_s(1), 22e-6);
        b.finish(0);
        let started = b.run_until(500e-6);
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].0, 1);
        close(started[0].1, 500e-6);
        b.post(3, &tr(0, 1, TransferKind::Fetch), 600e-6);
        b.run_until(1.0);
        close(b.r.go_s(3), 612e-6);
    }

    /// A pass reads the incoming lists before the outgoing ones, every peer's fetch list in
    /// node order, then every peer's prefetch list, then the idle lists
    /// (`___starpu_datawizard_progress`), whatever order the requests were posted in. By
    /// hand, on RAM and GPUs 1 and 2, all posted at 0 and handled by GPU1: T0 GPU2→GPU1
    /// prefetch, T1 GPU1→RAM idle write-back, T2 RAM→GPU1 prefetch, T3 GPU2→GPU1 fetch,
    /// T4 RAM→GPU1 fetch. GPU1's pass at 2 µs submits T4, T3 (fetches: RAM's list, then
    /// GPU2's), T2, T0 (prefetches), then T1 (out to RAM, where nothing is pending), 10 µs
    /// each.
    #[test]
    fn a_pass_reads_the_incoming_lists_peer_by_peer_then_the_outgoing_ones() {
        let mut b = Bench::ram_gpus(2, 10e-6);
        let idle = Transfer {
            idle: true,
            ..tr(1, 0, TransferKind::WriteBack)
        };
        b.post(0, &tr(2, 1, TransferKind::Prefetch), 0.0);
        b.post(1, &idle, 0.0);
        b.post(2, &tr(0, 1, TransferKind::Prefetch), 0.0);
        b.post(3, &tr(2, 1, TransferKind::Fetch), 0.0);
        b.post(4, &tr(0, 1, TransferKind::Fetch), 0.0);
        b.run_until(1.0);
        for (id, go) in [(4, 12e-6), (3, 22e-6), (2, 32e-6), (0, 42e-6), (1, 52e-6)] {
            close(b.r.go_s(id), go);
        }
    }

    /// A pass takes the requests posted by the time it reads their list; one posted while
    /// the thread sleeps in its submissions waits for the next pass, which comes as soon as
    /// the thread is free. By hand, 10 µs per submission, on RAM and GPU1: T0 posted at 0
    /// (pass at 2 µs, submitted at 12 µs); T1 posted at 5 µs: next pass at 12 + 2 µs,
    /// submitted at 24 µs. A driver busy pushing tasks until 50 µs (`busy_until`) makes its
    /// pass after: T2 posted at 30 µs is submitted at 50 + 2 + 10 µs.
    #[test]
    fn requests_posted_during_a_pass_wait_for_the_next() {
        let mut b = Bench::ram_gpus(1, 10e-6);
        b.post(0, &tr(0, 1, TransferKind::Prefetch), 0.0);
        b.post(1, &tr(0, 1, TransferKind::Prefetch), 5e-6);
        b.run_until(25e-6);
        close(b.r.go_s(0), 12e-6);
        close(b.r.go_s(1), 24e-6);
        b.post(2, &tr(0, 1, TransferKind::Fetch), 30e-6);
        b.r.busy_until(MemNodeId(1), 50e-6);
        b.run_until(1.0);
        close(b.r.go_s(2), 62e-6);
    }

    /// Two transfers of different pairs that touch no GPU↔GPU copy are independent; a pair
    /// runs one transfer at a time, first submitted first served (§1e, one stream per
    /// direction); the request lists decide what is submitted (§1a: at most 5 pending with
    /// a fetch, 2 with a prefetch, highest priority first). By hand, on RAM (node 0) and GPU1:
    /// - T0 RAM→GPU1 fetch and T1 GPU1→RAM write-back move together;
    /// - T2 and T3 RAM→GPU1 prefetches, T4 one of higher priority, T5 a fetch, all posted
    ///   before GPU1's next pass: it submits T5 (the fetch list first: 2 pending, under 5),
    ///   then no prefetch (3 pending, not under 2);
    /// - T0 ends: T5 starts; with 2 pending no prefetch is submitted; T5 ends: T4 (the higher
    ///   priority) is submitted and starts; T4 ends: T2 (first come among equals), then T3.
    #[test]
    fn request_lists_feed_one_fifo_per_pair() {
        let mut b = Bench::ram_gpus(1, 0.0);
        b.post(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        b.post(1, &tr(1, 0, TransferKind::WriteBack), 0.0);
        assert_eq!(b.run(), [0, 1]);
        b.post(2, &tr(0, 1, TransferKind::Prefetch), b.now);
        b.post(3, &tr(0, 1, TransferKind::Prefetch), b.now);
        let urgent = Transfer {
            priority: 7,
            ..tr(0, 1, TransferKind::Prefetch)
        };
        b.post(4, &urgent, b.now);
        b.post(5, &tr(0, 1, TransferKind::Fetch), b.now);
        assert_eq!(b.run(), Vec::<u32>::new());
        b.finish(0);
        assert_eq!(b.run(), [5]);
        b.finish(5);
        assert_eq!(b.run(), [4]);
        b.finish(4);
        assert_eq!(b.run(), [2]);
        b.finish(2);
        assert_eq!(b.run(), [3]);
    }

    /// The limits are the machine's (`runtime.max_pending_*`): with older StarPU's 20 / 10 / 1
    /// every request of the test above is submitted in one pass, fetches first, so the pair
    /// serves them in that order. By hand: T0 fetch, T1-T3 prefetches, T4 fetch posted
    /// together: T0, T4, T1, T2, T3.
    #[test]
    fn looser_limits_submit_every_prefetch_at_once() {
        let limits = PendingLimits {
            fetch: 20,
            prefetch: 10,
            idle: 1,
        };
        let mut b = Bench::new(&[MemKind::Ram, MemKind::Gpu], limits, 0.0);
        b.post(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        for id in 1..=3 {
            b.post(id, &tr(0, 1, TransferKind::Prefetch), 0.0);
        }
        b.post(4, &tr(0, 1, TransferKind::Fetch), 0.0);
        let mut order = b.run();
        for _ in 0..4 {
            let last = *order.last().unwrap();
            b.finish(last);
            order.extend(b.run());
        }
        assert_eq!(order, [0, 4, 1, 2, 3]);
    }

    /// A node whose driver runs a synchronous task makes no pass: RAM→GPU1 (handled by GPU1)
    /// waits while GPU1 is blocked, GPU1→RAM's transfer already submitted goes on, and the
    /// request is submitted once GPU1 is free.
    #[test]
    fn a_blocked_driver_submits_nothing_until_it_is_free() {
        let mut b = Bench::ram_gpus(1, 0.0);
        b.post(0, &tr(1, 0, TransferKind::WriteBack), 0.0);
        assert_eq!(b.run(), [0]);
        b.r.set_blocked(MemNodeId(1), true);
        b.post(1, &tr(0, 1, TransferKind::Fetch), b.now);
        assert_eq!(b.run(), Vec::<u32>::new());
        b.r.set_blocked(MemNodeId(1), false);
        let mut passes = Vec::new();
        b.r.wake_all(b.now, &mut passes);
        assert_eq!(passes.len(), 1);
        b.schedule(passes.pop());
        assert_eq!(b.run(), [1]);
    }

    /// A transfer's end makes its driver's next pass due, in which the driver sees it
    /// complete: once its thread is free and its progress call (2 µs for a GPU's driver) is
    /// over, and only once while it is due. By hand, with 10 µs of queueing: the fetch into
    /// GPU1 is submitted in GPU1's pass at 2 µs and moves from 12 µs; it ends at 20 µs while
    /// GPU1's thread pushes tasks until 30 µs: the pass is due at 30 + 2 = 32 µs.
    #[test]
    fn a_moved_transfer_makes_its_drivers_next_pass_due_once() {
        let mut b = Bench::ram_gpus(1, 10e-6);
        b.post(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        assert_eq!(b.run_until(20e-6), [(0, 12e-6)]);
        b.r.moved(0, MemNodeId(0), MemNodeId(1));
        b.r.busy_until(MemNodeId(1), 30e-6);
        let (node, at) = b.r.pass_to_see(MemNodeId(1), 20e-6).expect("a pass is due");
        assert_eq!(node, MemNodeId(1));
        close(at, 32e-6);
        assert_eq!(b.r.pass_to_see(MemNodeId(1), 20e-6), None, "already due");
        b.schedule(Some((node, at)));
        b.run();
        close(b.r.last_pass_s(MemNodeId(1)), 32e-6);
        // Once seen, a later end makes a new pass due, 2 µs after it.
        b.r.completed(MemNodeId(0), MemNodeId(1));
        let (_, at) = b.r.pass_to_see(MemNodeId(1), 40e-6).expect("a new pass");
        close(at, 42e-6);
    }

    /// StarPU's request for a replica already loading for another task (`data_request.c`,
    /// `starpu_handle_data_request` joining the load): it takes one of its pair's slots of
    /// the visit that reaches it, costs no queueing sleep, is dropped, and the driver makes
    /// another pass at once. By hand, 10 µs of queueing, RAM→GPU1 prefetches (limit 2): T0
    /// submitted in the pass at 2 µs, moving from 12 µs (1 pending); duplicate D, then T2,
    /// posted at 12 µs: the pass at 14 µs takes D (the one slot left) and drops it; the next,
    /// at 16 µs, submits T2, whose submission ends at 26 µs (at 24 µs without D).
    #[test]
    fn a_duplicate_request_takes_a_slot_of_its_visit_and_is_dropped() {
        let mut b = Bench::ram_gpus(1, 10e-6);
        let pf = tr(0, 1, TransferKind::Prefetch);
        b.post(0, &pf, 0.0);
        assert_eq!(b.run_until(12e-6), [(0, 12e-6)]);
        b.pairs.insert(1, (MemNodeId(0), MemNodeId(1)));
        let pass = b.r.enqueue_duplicate(1, &pf, b.now);
        b.schedule(pass);
        b.post(2, &pf, b.now);
        b.run();
        let mut dropped = Vec::new();
        b.r.take_dropped(&mut dropped);
        assert_eq!(dropped, [1]);
        close(b.r.last_pass_s(MemNodeId(1)), 16e-6);
        close(b.r.go_s(2), 26e-6);
    }

    /// A fetch that needs a prefetch still in the list moves it to the fetch list, where the
    /// limit is 5: the next pass submits it. By hand: T0 fetch moving, T1 and T2 prefetches
    /// (T1 submitted, T2 listed: 2 pending), T2 promoted: submitted behind T1.
    #[test]
    fn a_promoted_prefetch_is_submitted_under_the_fetch_limit() {
        let mut b = Bench::ram_gpus(1, 0.0);
        b.post(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        assert_eq!(b.run(), [0]);
        b.post(1, &tr(0, 1, TransferKind::Prefetch), b.now);
        b.post(2, &tr(0, 1, TransferKind::Prefetch), b.now);
        assert_eq!(b.run(), Vec::<u32>::new());
        assert!(b.r.promote(2, &tr(0, 1, TransferKind::Prefetch)));
        assert!(
            !b.r.promote(1, &tr(0, 1, TransferKind::Prefetch)),
            "already submitted"
        );
        let mut passes = Vec::new();
        b.r.wake_all(b.now, &mut passes);
        b.schedule(passes.pop());
        assert_eq!(b.run(), Vec::<u32>::new());
        b.finish(0);
        assert_eq!(b.run(), [1]);
        b.finish(1);
        assert_eq!(b.run(), [2]);
    }

    /// StarPU's idle request lists (§1a; `datawizard.c`): incoming idle requests are
    /// submitted only while no incoming request is pending from any peer, an outgoing one
    /// while none to its peer is. GPU1 handles RAM→GPU1 and GPU1→RAM. By hand:
    /// - T0 RAM→GPU1 fetch starts; T1 RAM→GPU1 idle waits for it; T2 GPU1→RAM idle does
    ///   not (nothing is pending out to RAM) and starts;
    /// - T3 GPU1→RAM idle: T2 pending out to RAM: it waits;
    /// - T0 ends: T1 is submitted and starts; T2 ends: T3 starts.
    #[test]
    fn idle_requests_wait_for_pending_ones_of_their_direction() {
        let mut b = Bench::ram_gpus(1, 0.0);
        let idle = |src, dst| Transfer {
            idle: true,
            ..tr(src, dst, TransferKind::Prefetch)
        };
        b.post(0, &tr(0, 1, TransferKind::Fetch), 0.0);
        b.post(1, &idle(0, 1), 0.0);
        b.post(2, &idle(1, 0), 0.0);
        assert_eq!(b.run(), [0, 2]);
        b.post(3, &idle(1, 0), b.now);
        assert_eq!(b.run(), Vec::<u32>::new());
        b.finish(0);
        assert_eq!(b.run(), [1]);
        b.finish(2);
        assert_eq!(b.run(), [3]);
    }
}
