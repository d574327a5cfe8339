//! The data manager of one runtime: replicas and their coherence ([`Memory`]), the requests and
//! transfers that move them ([`Runners`], [`Transfer`]), device allocation and eviction,
//! write-backs, and who waits for which replica.
//!
//! It owns all of that state and never acts on the engine itself: what it wants done — an event
//! at some date, a line for the observers — comes back as [`Effect`]s, which the loop applies in
//! order right after the call. It knows nothing of workers or schedulers either: where a step
//! concerns a task (a buffer of a popped task is in place), it returns the task to the loop,
//! which decides what follows, so that everything happens in the same order as in one thread of
//! control.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};

use hetsim_core::fluid::{FlowId, FlowSpec, FluidNetwork};
use hetsim_platform::machine::{Machine, MemKind, MemNodeId};
use hetsim_taskgraph::{Access, HandleId, TaskGraph, TaskId};

use super::memory::{Alloc, Memory};
use super::observe::SimEvent;
use super::sim::Event;
use super::transfer::{Estimates, Path, Paths, Runners, Transfer, TransferKind};

/// What the data manager asks of the loop.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Effect {
    /// Put `Event` in the calendar at this date.
    At(f64, Event),
    /// Tell the observers.
    Note(SimEvent<'static>),
}

/// When the driver handling a transfer sees it complete ([`DataManager::transfer_moved`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Completion {
    /// Now: it took no time and completes within the pass that submitted it.
    Now,
    /// In the next pass of this node's driver.
    NextPass(MemNodeId),
    /// When this node's driver is done with the synchronous task it runs.
    AfterTask(MemNodeId),
}

/// Who waits for a replica to become valid.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Waiter {
    /// One buffer of a popped task.
    Task(TaskId),
    /// A staged copy: once RAM is valid, continue to this node (kind and priority of the
    /// request).
    Forward(MemNodeId, TransferKind, i32),
}

/// The runtime costs the data manager charges (the machine's `[runtime]`).
#[derive(Debug, Clone, Copy)]
struct Costs {
    /// Whether transfers take time (`false`: done the instant they start).
    transfer_cost: bool,
    cuda_malloc_s: f64,
    cuda_free_s: f64,
}

/// One memory node's use over a run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct MemoryUse {
    pub peak_used_bytes: u64,
    pub evictions: u64,
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct DataManager {
    /// The rank it serves (events it asks for carry it).
    rank: u32,
    memory: Memory,
    runners: Runners,
    estimates: Estimates,
    paths: Paths,
    costs: Costs,
    transfers: Vec<Option<Transfer>>,
    free_transfers: Vec<u32>,
    /// The transfer loading each replica under way, by (handle, destination).
    loading_by: FxHashMap<(u32, u32), u32>,
    /// Per handle, the submissions of copies of it not over yet: when each driver takes the
    /// handle's lock and when it lets go (the queueing sleep of `_starpu_simgrid_transfer`
    /// runs inside `starpu_handle_data_request`, which holds the handle's header lock).
    submitting: FxHashMap<u32, Vec<(f64, f64)>>,
    /// When each submission in `submitting` is over (the bits of a positive date order as the
    /// date), and its handle: the handles whose submissions are all over leave the map, which
    /// every prefetching push consults, so it stays small.
    submitting_ends: BinaryHeap<Reverse<(u64, u32)>>,
    /// The date up to which `submitting` was pruned: no one may ask for a lock before it.
    pruned_s: f64,
    waiters: FxHashMap<usize, Vec<Waiter>>,
    /// Per node, buffers of popped tasks waiting for room, in the order asked.
    alloc_queue: Vec<VecDeque<(TaskId, u32)>>,
    /// The allocations each node's driver has yet to make, in order.
    allocator: Allocator,
    /// Tasks whose inputs a scheduler prefetched and that have not fetched them yet.
    prefetched: FxHashSet<u32>,
    /// Per replica, a write-back of it is on its way.
    writing_back: Vec<bool>,
    /// Per node, write-backs from it under way (their chunks count as clean).
    writebacks_pending: Vec<u32>,
    /// StarPU's `STARPU_MINIMUM_CLEAN_BUFFERS` and `STARPU_TARGET_CLEAN_BUFFERS` (%).
    clean_pct: (u32, u32),
    scratch_ids: Vec<u32>,
    scratch_handles: Vec<HandleId>,
    scratch_order: Vec<(u32, usize)>,
    scratch_passes: Vec<(MemNodeId, f64)>,
}

impl DataManager {
    /// The data `handles` of `graph` on `machine` (see [`Memory::new`] for `slots` and
    /// `gpus`, the memory nodes of the rank's GPU workers in order; StarPU's transfer estimate
    /// depends on their number).
    pub fn new(
        machine: &Machine,
        graph: &TaskGraph,
        rank: u32,
        (handles, slots): (Vec<HandleId>, Rc<[u32]>),
        ram: MemNodeId,
        gpus: &[MemNodeId],
        paths: Paths,
    ) -> Self {
        let kinds: Vec<MemKind> = machine.memory_nodes().iter().map(|m| m.kind).collect();
        let capacity: Vec<u64> = machine
            .memory_nodes()
            .iter()
            .map(|m| m.capacity_bytes)
            .collect();
        let rt = machine.runtime();
        let nnodes = kinds.len();
        let nhandles = handles.len();
        DataManager {
            rank,
            memory: Memory::new(
                kinds.clone(),
                capacity,
                ram,
                gpus,
                graph,
                handles,
                slots,
                rt.suballocator,
            ),
            // Free transfers skip the queueing sleep too: StarPU-SimGrid returns before it.
            runners: Runners::new(&kinds, rt.pending_limits).with_queue_s(if rt.transfer_cost {
                rt.transfer_queue_s
            } else {
                0.0
            }),
            estimates: Estimates::new(machine, ram, gpus.len()),
            paths,
            costs: Costs {
                transfer_cost: rt.transfer_cost,
                cuda_malloc_s: rt.cuda_malloc_s,
                cuda_free_s: rt.cuda_free_s,
            },
            transfers: Vec::new(),
            free_transfers: Vec::new(),
            loading_by: FxHashMap::default(),
            submitting: FxHashMap::default(),
            submitting_ends: BinaryHeap::new(),
            pruned_s: f64::NEG_INFINITY,
            waiters: FxHashMap::default(),
            alloc_queue: vec![VecDeque::new(); nnodes],
            allocator: Allocator::new(nnodes),
            prefetched: FxHashSet::default(),
            writing_back: vec![false; nhandles * nnodes],
            writebacks_pending: vec![0; nnodes],
            clean_pct: (rt.min_clean_pct, rt.target_clean_pct),
            scratch_ids: Vec::new(),
            scratch_handles: Vec::new(),
            scratch_order: Vec::new(),
            scratch_passes: Vec::new(),
        }
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// Record which replicas change state from now on ([`DataManager::replica_changes`]).
    pub fn record_replica_changes(&mut self) {
        self.memory.record_changes();
    }

    /// The replicas (handle, memory node) whose valid, loading or allocated state changed
    /// since the last call, once recording is on, swapped into `out` (cleared first), leaving
    /// the record empty.
    pub fn swap_replica_changes(&mut self, out: &mut Vec<(HandleId, MemNodeId)>) {
        out.clear();
        std::mem::swap(out, &mut self.memory.changes);
    }

    pub fn estimates(&self) -> &Estimates {
        &self.estimates
    }

    pub fn nnodes(&self) -> usize {
        self.memory.nnodes()
    }

    fn replica_key(&self, h: HandleId, n: MemNodeId) -> usize {
        self.memory.key(h, n)
    }

    // --- Buffers of popped tasks ------------------------------------------------------------

    /// Worker-side start of task `t`'s input fetch on `node`: if its inputs were prefetched,
    /// the replicas it reads are no longer kept for it (StarPU's `_starpu_fetch_task_input`
    /// for a `task->prefetched` task).
    pub fn task_fetches(&mut self, graph: &TaskGraph, t: TaskId, node: MemNodeId) {
        if !self.prefetched.remove(&t.0) {
            return;
        }
        for a in graph.accesses(t) {
            if a.mode.reads() {
                self.memory.note_task_fetch(a.handle, node);
            }
        }
    }

    /// A popped task's buffer `access` of `h` is needed in `node`: pin it there. Returns
    /// whether it is allocated already; if not, it waits for room
    /// ([`DataManager::next_allocation`]).
    pub fn pin_buffer(&mut self, t: TaskId, access: u32, h: HandleId, node: MemNodeId) -> bool {
        self.memory.pin_for_task(h, node);
        if self.memory.is_allocated(h, node) {
            true
        } else {
            self.alloc_queue[node.index()].push_back((t, access));
            false
        }
    }

    /// Task `t`'s buffer of `h` is allocated in `node`. Returns true if it is in place (the
    /// task does not read it, or it is valid there); otherwise `t` waits for the copy, which
    /// is requested at `priority` unless one is on its way.
    #[allow(clippy::too_many_arguments)]
    pub fn buffer_allocated(
        &mut self,
        t: TaskId,
        h: HandleId,
        reads: bool,
        node: MemNodeId,
        priority: i32,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) -> bool {
        if !reads || self.memory.is_valid(h, node) {
            return true;
        }
        self.waiters
            .entry(self.replica_key(h, node))
            .or_default()
            .push(Waiter::Task(t));
        if !self.memory.is_loading(h, node) {
            let src = self.memory.best_source(h, node, &self.estimates);
            self.start_copy(h, src, node, TransferKind::Fetch, priority, now_s, fx);
        } else {
            self.promote_prefetch(h, node, now_s, fx);
        }
        false
    }

    /// Serve the next allocation request waiting on `node`, in order, while room can be made.
    /// Returns the buffer whose allocation is done now (the loop then calls
    /// [`DataManager::buffer_allocated`] and asks again); `None` when the queue is empty or
    /// waits (for a write-back, or for room held by running tasks). Allocations that take time
    /// end with an [`Event::AllocDone`].
    pub fn next_allocation(
        &mut self,
        graph: &TaskGraph,
        node: MemNodeId,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) -> Option<(TaskId, u32)> {
        while let Some(&(t, i)) = self.alloc_queue[node.index()].front() {
            let h = graph.accesses(t)[i as usize].handle;
            if self.memory.is_allocated(h, node) {
                // Another holder allocated it meanwhile (two popped tasks share a handle).
                self.alloc_queue[node.index()].pop_front();
                return Some((t, i));
            }
            let alloc = self.memory.allocate(h, node);
            self.report_evictions(graph, fx);
            match alloc {
                Alloc::Done { malloc, frees } => {
                    self.alloc_queue[node.index()].pop_front();
                    let cost = self.allocated(node, h, malloc, frees, fx);
                    let done = Event::AllocDone { task: t, access: i };
                    if !self.allocate_in_turn(node, cost, done, now_s, fx) {
                        return Some((t, i));
                    }
                }
                Alloc::WriteBack(victim) => {
                    self.write_back(victim, node, now_s, fx);
                    return None;
                }
                Alloc::Blocked => return None,
            }
        }
        None
    }

    /// Task `t` ended in `node`: its writes make its replicas there the only valid ones, and
    /// its buffers are unpinned.
    pub fn task_ended(&mut self, graph: &TaskGraph, t: TaskId, node: MemNodeId) {
        for a in graph.accesses(t) {
            if a.mode.writes() {
                self.memory.write(a.handle, node);
            }
        }
        for a in graph.accesses(t) {
            self.memory.unpin(a.handle, node);
        }
    }

    /// The one-step route from `src` to `dst` inside this rank's node, if the machine has one.
    pub fn segment(
        &self,
        src: MemNodeId,
        dst: MemNodeId,
    ) -> Option<hetsim_platform::cluster::Segment> {
        use hetsim_platform::cluster::Segment;
        match self.paths.path(src, dst)? {
            Path::Fluid(links) => Some(Segment::Fluid(links.clone())),
            Path::Model(m) => Some(Segment::Model(m.clone())),
        }
    }

    /// A message wrote `h` in `node` (RAM): that replica is now the only valid one.
    pub fn receive(&mut self, h: HandleId, node: MemNodeId) {
        self.memory.write(h, node);
    }

    /// A message that read `h` in `node` is sent: unpin it there.
    pub fn release(&mut self, h: HandleId, node: MemNodeId) {
        self.memory.unpin(h, node);
    }

    /// When node `node`'s driver thread is done with the submissions made so far.
    pub fn thread_free_s(&self, node: MemNodeId) -> f64 {
        self.runners.handler_free_s(node)
    }

    /// When a thread that wants handle `h`'s header lock at `at_s` gets it: at once, unless a
    /// driver holds it in the submission of a copy of `h` (a driver that took it at the same
    /// date came first). A thread that finds it taken sleeps 1 µs, then waits for the
    /// simulated time to advance (StarPU's SimGrid spin lock, `_starpu_pthread_spin_lock`),
    /// which it does at most 1 µs after the holder lets go: the drivers' progress calls sleep
    /// 1 µs at a time.
    pub fn header_free_s(&self, h: HandleId, at_s: f64) -> f64 {
        const RETRY_S: f64 = 1e-6;
        debug_assert!(
            at_s >= self.pruned_s,
            "a lock asked for before the last prune"
        );
        let Some(held) = self.submitting.get(&h.0) else {
            return at_s;
        };
        let mut got_s = at_s;
        while let Some(&(_, free_s)) = held
            .iter()
            .find(|&&(taken_s, free_s)| taken_s <= got_s + 1e-12 && got_s < free_s - 1e-12)
        {
            got_s = free_s + RETRY_S;
        }
        got_s
    }

    /// When a thread that takes the header locks of `accesses`' handles in turn, from `at_s`,
    /// has taken the last ([`DataManager::header_free_s`] for each).
    pub fn headers_free_s(&self, accesses: &[Access], at_s: f64) -> f64 {
        accesses
            .iter()
            .fold(at_s, |got_s, a| self.header_free_s(a.handle, got_s))
    }

    /// Node `node`'s driver is about to pull a task at `now_s`. StarPU's driver makes its
    /// pass over its node's requests first (`_starpu_cuda_driver_run_once`: progress, then
    /// pull): once its thread is free and its progress call over, and it pulls after the
    /// pass's submissions. Makes that pass if it is due now. Returns `None` if the driver may
    /// pull now, else when to come back and whether the pass is made by then.
    pub fn pass_before_pull(
        &mut self,
        node: MemNodeId,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) -> Option<(f64, bool)> {
        // (Dates summed in another order may differ in their last bits.)
        let (at, passed) = if (self.runners.last_pass_s(node) - now_s).abs() < 1e-12 {
            // Its pass at this date is made: it pulls after its submissions.
            (self.runners.handler_free_s(node), true)
        } else if self.runners.pass_ready_s(node) > now_s {
            (self.runners.pass_ready_s(node), false)
        } else {
            self.transfer_pass(node, now_s, fx);
            (self.runners.handler_free_s(node), true)
        };
        (at > now_s).then_some((at, passed))
    }

    /// Node `node`'s driver thread is busy pushing tasks until `until_s`: its next pass over
    /// the requests it handles waits for it.
    pub fn busy_until(&mut self, node: MemNodeId, until_s: f64) {
        self.runners.busy_until(node, until_s);
    }

    /// Node `node`'s driver thread runs (or no longer runs) a synchronous task: it handles no
    /// request meanwhile.
    pub fn set_blocked(&mut self, node: MemNodeId, blocked: bool) {
        self.runners.set_blocked(node, blocked);
    }

    // --- Memory -----------------------------------------------------------------------------

    /// Report the replicas the last allocations evicted.
    fn report_evictions(&mut self, graph: &TaskGraph, fx: &mut Vec<Effect>) {
        for (node, handle) in self.memory.evicted.drain(..) {
            fx.push(Effect::Note(SimEvent::Evict {
                node,
                handle,
                bytes: graph.handle(handle).size_bytes,
            }));
        }
    }

    /// Report an allocation that just succeeded on `node` and return what it costs.
    fn allocated(
        &mut self,
        node: MemNodeId,
        h: HandleId,
        malloc: bool,
        frees: u32,
        fx: &mut Vec<Effect>,
    ) -> f64 {
        let paid_malloc = malloc && self.memory.kind(node) == MemKind::Gpu;
        let cost = self.alloc_cost(node, malloc, frees);
        fx.push(Effect::Note(SimEvent::Allocate {
            node,
            handle: h,
            used_bytes: self.memory.used(node),
            malloc: paid_malloc,
        }));
        cost
    }

    /// An allocation of `cost` on `node`, asked for now, that ends with `done`. Returns false
    /// if it is over at once (it costs nothing and the node's driver has no allocation before
    /// it); otherwise `done` comes when it ends. A node's allocations happen in the order they
    /// were asked for (its driver handles its requests one after the other), and the ones that
    /// cost something one at a time on the whole machine: StarPU takes one global
    /// `cuda_alloc_mutex` around cudaMalloc and cudaFree, which drivers get in the order they
    /// ask for it, so the drivers of several GPUs take turns.
    fn allocate_in_turn(
        &mut self,
        node: MemNodeId,
        cost: f64,
        done: Event,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) -> bool {
        if cost <= 0.0 && self.allocator.idle(node) {
            return false;
        }
        self.allocator.ask(node, cost, done, now_s);
        self.grant_allocations(now_s, fx);
        true
    }

    /// Start the allocations whose turn has come.
    fn grant_allocations(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        while let Some((_, cost, done)) = self.allocator.next(now_s) {
            fx.push(Effect::At(now_s + cost, done));
        }
    }

    /// The allocation `node`'s driver was making has ended: the next ones may start.
    pub fn allocation_ended(&mut self, node: MemNodeId, now_s: f64, fx: &mut Vec<Effect>) {
        self.allocator.ended(node, now_s);
        self.grant_allocations(now_s, fx);
    }

    fn alloc_cost(&self, node: MemNodeId, malloc: bool, frees: u32) -> f64 {
        if self.memory.kind(node) != MemKind::Gpu {
            return 0.0;
        }
        (if malloc {
            self.costs.cuda_malloc_s
        } else {
            0.0
        }) + f64::from(frees) * self.costs.cuda_free_s
    }

    fn write_back(&mut self, victim: HandleId, node: MemNodeId, now_s: f64, fx: &mut Vec<Effect>) {
        let key = self.replica_key(victim, node);
        if self.writing_back[key] {
            // Already on its way, perhaps at idle priority: now it is needed.
            self.promote_prefetch(victim, self.memory.ram(), now_s, fx);
            return;
        }
        self.mark_writing_back(key, node);
        let ram = self.memory.ram();
        // Someone waits for the room: ahead of every other request of the pair.
        self.start_copy(
            victim,
            node,
            ram,
            TransferKind::WriteBack,
            i32::MAX,
            now_s,
            fx,
        );
    }

    /// A "will not be used" hint holds (StarPU's `_starpu_data_wont_use`): mark the device
    /// replicas of `h` as first eviction victims and, if main memory has no valid copy, ask
    /// for an idle-priority copy there (`starpu_data_idle_prefetch_on_node(home)`).
    pub fn wont_use(&mut self, h: HandleId, now_s: f64, fx: &mut Vec<Effect>) {
        self.memory.mark_wont_use(h);
        let ram = self.memory.ram();
        if self.memory.is_valid(h, ram) || self.memory.is_loading(h, ram) {
            return;
        }
        let src = self.memory.best_source(h, ram, &self.estimates);
        if src == ram || self.estimates.hops(src, ram).len() != 1 {
            return;
        }
        let key = self.replica_key(h, src);
        if self.writing_back[key] {
            return;
        }
        self.mark_writing_back(key, src);
        self.enqueue_transfer_at(h, src, ram, TransferKind::WriteBack, true, 0, now_s, fx);
    }

    /// A write-back of replica `key`, on `node`, is on its way (its chunk counts as clean).
    fn mark_writing_back(&mut self, key: usize, node: MemNodeId) {
        self.writing_back[key] = true;
        self.writebacks_pending[node.index()] += 1;
    }

    /// StarPU's `starpu_memchunk_tidy`, run at each datawizard progress of a GPU node: when
    /// fewer than `min_clean_pct` % of the node's chunks are clean, the dirty ones, least
    /// recently used first, are written back to RAM at idle priority (and count as clean from
    /// then on) until `target_clean_pct` % are. Evictions then find clean victims instead of
    /// waiting for a write-back.
    pub fn tidy(&mut self, node: MemNodeId, now_s: f64, fx: &mut Vec<Effect>) {
        if self.memory.kind(node) != MemKind::Gpu {
            return;
        }
        let (min_pct, target_pct) = self.clean_pct;
        let (chunks, dirty) = self.memory.chunk_counts(node);
        let pending = self.writebacks_pending[node.index()];
        let clean = chunks - dirty.saturating_sub(pending);
        // Integer percentages of the chunk count, as StarPU computes them: below 20 chunks the
        // 5 % threshold is 0 and nothing is tidied.
        if clean >= chunks * min_pct / 100 {
            return;
        }
        let ram = self.memory.ram();
        if self.estimates.hops(node, ram).len() != 1 {
            return;
        }
        // Each write-back issued counts as one more clean chunk.
        let needed = (chunks * target_pct / 100).saturating_sub(clean) as usize;
        let mut picked = std::mem::take(&mut self.scratch_handles);
        picked.extend(
            self.memory
                .dirty_lru(node)
                .filter(|&h| !self.writing_back[self.replica_key(h, node)])
                .take(needed),
        );
        for &h in &picked {
            self.mark_writing_back(self.replica_key(h, node), node);
            self.enqueue_transfer_at(h, node, ram, TransferKind::WriteBack, true, 0, now_s, fx);
        }
        picked.clear();
        self.scratch_handles = picked;
    }

    /// Move `task`'s inputs to `node` ahead of time, taking room only if it can without
    /// waiting or writing back.
    pub fn prefetch(
        &mut self,
        graph: &TaskGraph,
        task: TaskId,
        node: MemNodeId,
        priority: i32,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        let accesses = graph.accesses(task);
        self.prefetched.insert(task.0);
        // The node's driver allocates for its requests as its pass reaches them: the lists of
        // the pairs into it in source-node order (RAM's first), not the task's buffer order.
        // Replicas already valid there are marked at the push, before any pass.
        let mut order = std::mem::take(&mut self.scratch_order);
        order.clear();
        for (i, a) in accesses.iter().enumerate() {
            if a.mode.reads() {
                let key = if self.memory.is_valid(a.handle, node) {
                    0
                } else {
                    1 + self.memory.best_source(a.handle, node, &self.estimates).0
                };
                order.push((key, i));
            }
        }
        order.sort_unstable();
        for &(_, i) in &order {
            let a = &accesses[i];
            // A task's own requests are one per handle.
            let first = accesses[..i].iter().all(|b| b.handle != a.handle);
            if self.request_prefetch(graph, a.handle, node, priority, first, now_s, fx) {
                self.memory.note_task_prefetch(a.handle, node);
            }
        }
        self.scratch_order = order;
    }

    /// Request `h` on `node` for a task's prefetch (`first`: the task's first request of `h`).
    /// Returns false if there is no request: the replica found no room without waiting or
    /// writing back.
    #[allow(clippy::too_many_arguments)]
    fn request_prefetch(
        &mut self,
        graph: &TaskGraph,
        h: HandleId,
        node: MemNodeId,
        priority: i32,
        first: bool,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) -> bool {
        if self.memory.is_valid(h, node) {
            return true;
        }
        if self.memory.is_loading(h, node) {
            // Loading for another task.
            if first {
                self.duplicate_request(h, node, priority, now_s, fx);
            }
            return true;
        }
        if self.memory.is_allocated(h, node) {
            let src = self.memory.best_source(h, node, &self.estimates);
            self.start_copy(h, src, node, TransferKind::Prefetch, priority, now_s, fx);
            return true;
        }
        let alloc = self.memory.allocate_for_prefetch(h, node);
        self.report_evictions(graph, fx);
        let Alloc::Done { malloc, frees } = alloc else {
            return false;
        };
        let cost = self.allocated(node, h, malloc, frees, fx);
        self.memory.pin(h, node);
        // StarPU records the request when the prefetch is decided and allocates when it
        // processes it: from now on schedulers see the data as requested there
        // (`starpu_data_is_on_node`) and add no transfer for it.
        self.memory.set_loading(h, node, true);
        let done = Event::PrefetchAllocDone {
            handle: h,
            node,
            priority,
        };
        if !self.allocate_in_turn(node, cost, done, now_s, fx) {
            // Nothing to wait for: the request is posted with the push.
            self.prefetch_allocated(h, node, priority, now_s, fx);
        }
        true
    }

    /// A prefetch of `h` to `node` for a task, while the replica is being loaded for another:
    /// StarPU reuses a request only for the same task (`_starpu_search_existing_data_request`),
    /// so it posts one more request, from the best valid source now, which takes a slot of
    /// its pair when a pass reaches it and is then dropped ([`Runners::enqueue_duplicate`]).
    fn duplicate_request(
        &mut self,
        h: HandleId,
        node: MemNodeId,
        priority: i32,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        let src = self.memory.best_source(h, node, &self.estimates);
        if !self.memory.is_valid(h, src) || self.estimates.hops(src, node).len() > 1 {
            return;
        }
        let tr = self.request(h, src, node, TransferKind::Prefetch, false, priority);
        let dup = self.store_transfer(tr);
        let tr = self.transfers[dup as usize].as_ref().expect("just stored");
        let pass = self.runners.enqueue_duplicate(dup, tr, now_s);
        self.schedule_pass(pass, fx);
    }

    /// The room a prefetch asked for is allocated: copy the data there unless it is valid or
    /// on its way meanwhile.
    pub fn prefetch_allocated(
        &mut self,
        h: HandleId,
        node: MemNodeId,
        priority: i32,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        self.memory.unpin(h, node);
        // Marked loading when the prefetch was decided: the copy itself starts now.
        self.memory.set_loading(h, node, false);
        if !self.memory.is_valid(h, node) {
            let src = self.memory.best_source(h, node, &self.estimates);
            self.start_copy(h, src, node, TransferKind::Prefetch, priority, now_s, fx);
        }
    }

    /// The end of the run: copy every handle not valid in RAM back there, as unregistering does
    /// in StarPU.
    pub fn final_write_back(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        let ram = self.memory.ram();
        let pending: Vec<HandleId> = self.memory.not_in_ram().collect();
        for h in pending {
            let src = self.memory.best_source(h, ram, &self.estimates);
            self.start_copy(h, src, ram, TransferKind::WriteBack, 0, now_s, fx);
        }
    }

    // --- Transfers --------------------------------------------------------------------------

    /// Copy `h` from `src` to `dst` (staged through RAM if there is no direct route).
    #[allow(clippy::too_many_arguments)]
    fn start_copy(
        &mut self,
        h: HandleId,
        src: MemNodeId,
        dst: MemNodeId,
        kind: TransferKind,
        priority: i32,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        let hops = self.estimates.hops(src, dst);
        let (a, b) = hops[0];
        if hops.len() > 1 {
            // Stage: first to RAM, then on to `dst` once RAM holds it.
            self.memory.set_loading(h, dst, true);
            self.memory.pin(h, dst);
            self.waiters
                .entry(self.replica_key(h, b))
                .or_default()
                .push(Waiter::Forward(dst, kind, priority));
            if self.memory.is_loading(h, b) {
                self.promote_prefetch(h, b, now_s, fx);
                return;
            }
        }
        self.enqueue_transfer_at(h, a, b, kind, false, priority, now_s, fx);
    }

    /// Queue a one-hop copy, at idle priority if `idle`.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_transfer_at(
        &mut self,
        h: HandleId,
        src: MemNodeId,
        dst: MemNodeId,
        kind: TransferKind,
        idle: bool,
        priority: i32,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        let tr = self.request(h, src, dst, kind, idle, priority);
        self.memory.pin(h, src);
        if !self.memory.is_loading(h, dst) {
            self.memory.pin(h, dst);
            self.memory.set_loading(h, dst, true);
        }
        let id = self.store_transfer(tr);
        self.loading_by.insert((h.0, dst.0), id);
        let tr = self.transfers[id as usize].as_ref().expect("just stored");
        let pass = self.runners.enqueue(id, tr, now_s);
        self.schedule_pass(pass, fx);
    }

    /// The one-hop copy of `h`'s current version from `src` to `dst`.
    fn request(
        &self,
        h: HandleId,
        src: MemNodeId,
        dst: MemNodeId,
        kind: TransferKind,
        idle: bool,
        priority: i32,
    ) -> Transfer {
        Transfer {
            handle: h,
            src,
            dst,
            bytes: self.memory.size(h) as f64,
            kind,
            version: self.memory.version(h),
            idle,
            priority,
        }
    }

    /// Keep `tr` under a free transfer id.
    fn store_transfer(&mut self, tr: Transfer) -> u32 {
        match self.free_transfers.pop() {
            Some(id) => {
                self.transfers[id as usize] = Some(tr);
                id
            }
            None => {
                self.transfers.push(Some(tr));
                (self.transfers.len() - 1) as u32
            }
        }
    }

    /// Schedule a pass of a node's driver over its request lists ([`Event::TransferPass`]).
    fn schedule_pass(&self, pass: Option<(MemNodeId, f64)>, fx: &mut Vec<Effect>) {
        if let Some((node, at_s)) = pass {
            fx.push(Effect::At(
                at_s,
                Event::TransferPass {
                    rank: self.rank,
                    node,
                },
            ));
        }
    }

    /// Someone needs `h` on `node` now: a prefetch or idle copy of it queued there moves
    /// ahead with the fetches (StarPU raises a request's priority when a more urgent one asks
    /// for the same copy).
    fn promote_prefetch(&mut self, h: HandleId, node: MemNodeId, now_s: f64, fx: &mut Vec<Effect>) {
        let found = self.loading_by.get(&(h.0, node.0)).copied().filter(|&id| {
            let t = self.transfers[id as usize].as_ref().expect("live transfer");
            t.kind == TransferKind::Prefetch || t.idle
        });
        if let Some(id) = found {
            let tr = self.transfers[id as usize].clone().expect("found");
            if self.runners.promote(id, &tr) {
                let t = self.transfers[id as usize].as_mut().expect("found");
                if t.kind == TransferKind::Prefetch {
                    t.kind = TransferKind::Fetch;
                }
                t.idle = false;
                // The fetch's request wakes the handling node's driver.
                self.wake_drivers(now_s, fx);
            }
        }
    }

    /// Something the request stage depends on changed (a transfer or an allocation ended, a
    /// driver is free again): schedule the passes now due ([`Event::TransferPass`]) and start
    /// the submitted transfers that may start now ([`Event::TransferGo`]).
    pub fn start_transfers(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        self.wake_drivers(now_s, fx);
        self.start_ready(now_s, fx);
    }

    /// Schedule the pass of every driver that has requests to submit and none due.
    fn wake_drivers(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        let mut passes = std::mem::take(&mut self.scratch_passes);
        self.runners.wake_all(now_s, &mut passes);
        for pass in passes.drain(..) {
            self.schedule_pass(Some(pass), fx);
        }
        self.scratch_passes = passes;
    }

    fn start_ready(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        let mut ready = std::mem::take(&mut self.scratch_ids);
        self.runners.start_ready(&mut ready);
        for &id in &ready {
            fx.push(Effect::At(
                now_s,
                Event::TransferGo {
                    rank: self.rank,
                    id,
                },
            ));
        }
        ready.clear();
        self.scratch_ids = ready;
    }

    /// A pass of node `node`'s driver over the requests it handles: each one it submits joins
    /// its pair's queue when its queueing sleep is over ([`Event::TransferSubmitted`]).
    pub fn transfer_pass(&mut self, node: MemNodeId, now_s: f64, fx: &mut Vec<Effect>) {
        // Buffers being allocated on the node: requests the lists do not hold yet.
        let n = node.index();
        let requesting = !self.alloc_queue[n].is_empty() || !self.allocator.idle(node);
        // Submissions over by now hold no lock for anyone who asks from now on.
        self.pruned_s = now_s;
        while let Some(&Reverse((free_bits, h))) = self.submitting_ends.peek() {
            if f64::from_bits(free_bits) > now_s {
                break;
            }
            self.submitting_ends.pop();
            if let Some(held) = self.submitting.get_mut(&h) {
                held.retain(|&(_, free_s)| free_s > now_s);
                if held.is_empty() {
                    self.submitting.remove(&h);
                }
            }
        }
        let mut ids = std::mem::take(&mut self.scratch_ids);
        let next = self.runners.pass(node, requesting, now_s, &mut ids);
        self.forget_dropped();
        self.schedule_pass(next, fx);
        for &id in &ids {
            let go_s = self.runners.go_s(id);
            let tr = self.transfers[id as usize]
                .as_ref()
                .expect("submitted transfer");
            let taken_s = go_s - self.runners.queue_s();
            // The pruning above left only submissions not over.
            self.submitting
                .entry(tr.handle.0)
                .or_default()
                .push((taken_s, go_s));
            debug_assert!(go_s >= 0.0, "a date's bits order as the date");
            self.submitting_ends
                .push(Reverse((go_s.to_bits(), tr.handle.0)));
            fx.push(Effect::At(
                go_s,
                Event::TransferSubmitted {
                    rank: self.rank,
                    id,
                },
            ));
        }
        ids.clear();
        self.scratch_ids = ids;
    }

    /// Forget the duplicate requests the last pass dropped.
    fn forget_dropped(&mut self) {
        let mut dropped = std::mem::take(&mut self.scratch_ids);
        dropped.clear();
        self.runners.take_dropped(&mut dropped);
        for &id in &dropped {
            self.transfers[id as usize] = None;
            self.free_transfers.push(id);
        }
        dropped.clear();
        self.scratch_ids = dropped;
    }

    /// Transfer `id`'s submission is over: it joins its pair's queue and starts if it may.
    pub fn transfer_submitted(&mut self, id: u32, now_s: f64, fx: &mut Vec<Effect>) {
        let tr = self.transfers[id as usize].as_ref().expect("live transfer");
        self.runners.submitted(id, tr.src, tr.dst);
        self.start_ready(now_s, fx);
    }

    /// Transfer `id` paid its queueing cost: its bytes start moving, over the fluid network
    /// (returns the flow, whose end the loop reports with [`DataManager::finish_transfer`]) or
    /// in its route's model time ([`Event::TransferDone`]).
    pub fn transfer_go(
        &mut self,
        id: u32,
        net: &mut FluidNetwork,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) -> Option<FlowId> {
        let tr = self.transfers[id as usize].as_ref().expect("live transfer");
        fx.push(Effect::Note(SimEvent::TransferStart {
            handle: tr.handle,
            src: tr.src,
            dst: tr.dst,
            bytes: tr.bytes,
            kind: tr.kind,
            version: tr.version,
            id,
        }));
        if !self.costs.transfer_cost {
            fx.push(Effect::At(
                now_s,
                Event::TransferDone {
                    rank: self.rank,
                    id,
                },
            ));
            return None;
        }
        match self.paths.path(tr.src, tr.dst) {
            Some(Path::Fluid(route)) => {
                Some(net.start_flow(now_s, FlowSpec::new(&route[..], tr.bytes)))
            }
            Some(Path::Model(m)) => {
                let d = m.duration_secs(tr.bytes);
                fx.push(Effect::At(
                    now_s + d,
                    Event::TransferDone {
                        rank: self.rank,
                        id,
                    },
                ));
                None
            }
            None => unreachable!("hops only use pairs with a route"),
        }
    }

    /// Transfer `id`'s last byte arrived: its pair may serve the next one. Returns when its
    /// handling node's driver sees it complete: now if it took no time (completed within the
    /// pass that submitted it), else in that driver's next pass, which is scheduled here
    /// unless the driver runs a synchronous task (then when the task ends). The caller
    /// completes it then with [`DataManager::finish_transfer`].
    pub fn transfer_moved(&mut self, id: u32, now_s: f64, fx: &mut Vec<Effect>) -> Completion {
        let tr = self.transfers[id as usize].as_ref().expect("live transfer");
        let (src, dst) = (tr.src, tr.dst);
        self.runners.moved(id, src, dst);
        self.start_ready(now_s, fx);
        let (node, blocked) = self.runners.handler_of(src, dst);
        if !self.costs.transfer_cost {
            Completion::Now
        } else if blocked {
            Completion::AfterTask(node)
        } else {
            let pass = self.runners.pass_to_see(node, now_s);
            self.schedule_pass(pass, fx);
            Completion::NextPass(node)
        }
    }

    /// Whether node `node`'s driver made a pass at `now_s`.
    pub fn passed_at(&self, node: MemNodeId, now_s: f64) -> bool {
        self.runners.last_pass_s(node) == now_s
    }

    /// Whether node `node`'s driver makes its pass at `now_s` (the loop then lets it see the
    /// transfers that completed since its last one before it submits).
    pub fn passes_at(&self, node: MemNodeId, now_s: f64) -> bool {
        self.runners.passes_at(node, now_s)
    }

    /// Transfer `id` is complete. Returns who waited for the replica if it is now
    /// valid (the loop serves them in order: a task's buffer is in place, a staged copy goes
    /// on with [`DataManager::forward`]); a copy made stale by a write meanwhile is fetched
    /// again for its waiters. The loop then starts transfers and retries allocations.
    pub fn finish_transfer(
        &mut self,
        id: u32,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) -> (HandleId, MemNodeId, Vec<Waiter>) {
        let tr = self.transfers[id as usize].take().expect("live transfer");
        self.free_transfers.push(id);
        if self.loading_by.get(&(tr.handle.0, tr.dst.0)) == Some(&id) {
            self.loading_by.remove(&(tr.handle.0, tr.dst.0));
        }
        self.runners.completed(tr.src, tr.dst);
        fx.push(Effect::Note(SimEvent::TransferEnd {
            handle: tr.handle,
            src: tr.src,
            dst: tr.dst,
            bytes: tr.bytes,
            kind: tr.kind,
            version: tr.version,
            id,
        }));
        let (h, src, dst) = (tr.handle, tr.src, tr.dst);
        self.memory.set_loading(h, dst, false);
        let fresh = self.memory.arrive(h, dst, tr.version);
        self.memory.unpin(h, src);
        self.memory.unpin(h, dst);
        let key = self.replica_key(h, src);
        if tr.kind == TransferKind::WriteBack && self.writing_back[key] {
            self.writing_back[key] = false;
            self.writebacks_pending[tr.src.index()] -= 1;
        }
        if fresh {
            let waiting = self.waiters.remove(&self.replica_key(h, dst));
            return (h, dst, waiting.unwrap_or_default());
        }
        if self.waiters.contains_key(&self.replica_key(h, dst)) {
            // Written meanwhile: fetch the new version for whoever still waits.
            let src = self.memory.best_source(h, dst, &self.estimates);
            self.start_copy(h, src, dst, TransferKind::Fetch, i32::MAX, now_s, fx);
        }
        (h, dst, Vec::new())
    }

    /// The second hop of a staged copy of `h`: RAM (`from`) now holds it; continue to `dst`,
    /// which was pinned for it.
    #[allow(clippy::too_many_arguments)]
    pub fn forward(
        &mut self,
        h: HandleId,
        from: MemNodeId,
        dst: MemNodeId,
        kind: TransferKind,
        priority: i32,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        self.memory.unpin(h, dst);
        self.memory.set_loading(h, dst, false);
        if !self.memory.is_valid(h, dst) {
            self.enqueue_transfer_at(h, from, dst, kind, false, priority, now_s, fx);
        }
    }

    // --- End of run -------------------------------------------------------------------------

    /// Each node's peak use and evictions.
    pub fn memory_use(&self) -> Vec<MemoryUse> {
        (0..self.memory.nnodes())
            .map(|n| {
                let n = MemNodeId(n as u32);
                MemoryUse {
                    peak_used_bytes: self.memory.peak(n),
                    evictions: self.memory.evictions(n),
                }
            })
            .collect()
    }

    /// Why the run cannot go on (tasks left, nothing moving): the full memories and what
    /// waits for them.
    pub fn deadlock_diagnosis(&self, machine: &Machine, graph: &TaskGraph) -> String {
        let mut msg = String::new();
        for (n, q) in self.alloc_queue.iter().enumerate() {
            if q.is_empty() {
                continue;
            }
            let node = MemNodeId(n as u32);
            let name = &machine.memory_nodes()[n].name;
            let pinned = self.memory.pinned_on(node);
            let waiting: Vec<String> = q
                .iter()
                .map(|&(t, i)| {
                    format!(
                        "task {} ({}) needs handle {}",
                        t.0,
                        graph.task_codelet_name(t),
                        graph.accesses(t)[i as usize].handle.0
                    )
                })
                .take(8)
                .collect();
            msg.push_str(&format!(
                " Memory {name} is full ({} of {} bytes) of data held by tasks waiting for more \
                 room (pinned handles: {:?}); waiting: {}.",
                self.memory.used(node),
                self.memory.capacity(node),
                pinned.iter().map(|h| h.0).take(16).collect::<Vec<_>>(),
                waiting.join("; ")
            ));
        }
        msg
    }
}

/// The drivers' allocations: each node's in the order asked, the costly ones (cudaMalloc,
/// cudaFree) one at a time on the machine, granted in the order the drivers ask for the lock.
#[derive(Debug)]
struct Allocator {
    /// Per node, (cost, event that ends it, when asked, order asked) not started yet.
    waiting: Vec<VecDeque<(f64, Event, f64, u64)>>,
    /// Per node, whether its driver is making one (until its event).
    busy: Vec<bool>,
    /// Per node, when its last allocation ended: its driver asks for the lock for the next one
    /// then (or when that is asked, if later).
    free_since: Vec<f64>,
    /// The lock is taken until then.
    lock_free_at: f64,
    asked: u64,
}

impl Allocator {
    fn new(nnodes: usize) -> Self {
        Allocator {
            waiting: vec![VecDeque::new(); nnodes],
            busy: vec![false; nnodes],
            free_since: vec![0.0; nnodes],
            lock_free_at: 0.0,
            asked: 0,
        }
    }

    /// Whether `node`'s driver has no allocation under way or waiting.
    fn idle(&self, node: MemNodeId) -> bool {
        !self.busy[node.index()] && self.waiting[node.index()].is_empty()
    }

    fn ask(&mut self, node: MemNodeId, cost: f64, done: Event, now_s: f64) {
        self.asked += 1;
        self.waiting[node.index()].push_back((cost.max(0.0), done, now_s, self.asked));
    }

    fn ended(&mut self, node: MemNodeId, now_s: f64) {
        self.busy[node.index()] = false;
        self.free_since[node.index()] = now_s;
    }

    /// The next allocation to start now, if any: a free one at the head of an idle driver's
    /// queue, else, when the lock is free, the costly one whose driver asked for the lock
    /// first.
    fn next(&mut self, now_s: f64) -> Option<(MemNodeId, f64, Event)> {
        let mut first: Option<((f64, u64), usize)> = None;
        for (n, q) in self.waiting.iter().enumerate() {
            if self.busy[n] {
                continue;
            }
            let Some(&(cost, _, asked_s, order)) = q.front() else {
                continue;
            };
            if cost == 0.0 {
                first = Some(((f64::NEG_INFINITY, order), n));
                break;
            }
            let key = (asked_s.max(self.free_since[n]), order);
            if first.is_none_or(|(k, _)| key < k) {
                first = Some((key, n));
            }
        }
        let (_, n) = first?;
        let cost = self.waiting[n].front().expect("a head").0;
        if cost > 0.0 {
            if self.lock_free_at > now_s {
                return None;
            }
            self.lock_free_at = now_s + cost;
        }
        let (cost, done, _, _) = self.waiting[n].pop_front().expect("a head");
        self.busy[n] = true;
        Some((MemNodeId(n as u32), cost, done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(node: u32) -> Event {
        Event::PrefetchAllocDone {
            handle: HandleId(0),
            node: MemNodeId(node),
            priority: 0,
        }
    }

    /// Two GPU drivers asked for two 175 µs cudaMallocs each, GPU 1's a microsecond after
    /// GPU 0's: the lock goes GPU 0, GPU 1, GPU 0, GPU 1, because GPU 0's driver asks for it
    /// again only when its first allocation is over (175 µs), after GPU 1's driver (1 µs).
    #[test]
    fn drivers_take_the_allocation_lock_in_the_order_they_ask_for_it() {
        let malloc = 175e-6;
        let mut a = Allocator::new(3);
        let (g0, g1) = (MemNodeId(1), MemNodeId(2));
        a.ask(g0, malloc, done(1), 0.0);
        a.ask(g0, malloc, done(1), 0.0);
        let first = a.next(0.0).map(|(n, c, _)| (n, c));
        assert_eq!(first, Some((g0, malloc)));
        a.ask(g1, malloc, done(2), 1e-6);
        a.ask(g1, malloc, done(2), 1e-6);
        // The lock is held until 175 µs.
        assert!(a.next(1e-6).is_none());
        let mut order = vec![g0];
        let mut now = malloc;
        let mut holder = g0;
        for _ in 0..3 {
            a.ended(holder, now);
            let (n, cost, _) = a.next(now).expect("a waiting allocation");
            assert!(a.next(now).is_none(), "one costly allocation at a time");
            order.push(n);
            holder = n;
            now += cost;
        }
        a.ended(holder, now);
        assert!(a.next(now).is_none());
        assert_eq!(order, vec![g0, g1, g0, g1]);
    }

    /// A free allocation (a suballocated chunk) waits only for its own driver's earlier ones,
    /// not for the lock another driver holds.
    #[test]
    fn a_free_allocation_waits_for_its_driver_not_for_the_lock() {
        let mut a = Allocator::new(3);
        let (g0, g1) = (MemNodeId(1), MemNodeId(2));
        a.ask(g0, 175e-6, done(1), 0.0);
        assert_eq!(a.next(0.0).map(|(n, _, _)| n), Some(g0));
        a.ask(g1, 0.0, done(2), 0.0);
        a.ask(g0, 0.0, done(1), 0.0);
        assert_eq!(a.next(0.0).map(|(n, c, _)| (n, c)), Some((g1, 0.0)));
        assert!(a.next(0.0).is_none(), "GPU 0's driver is still allocating");
        a.ended(g0, 175e-6);
        assert_eq!(a.next(175e-6).map(|(n, c, _)| (n, c)), Some((g0, 0.0)));
    }
}
