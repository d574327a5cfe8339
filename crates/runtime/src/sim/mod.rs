//! The loop: it takes the next event from the engine (the calendar or the fluid network) and
//! hands it to the part it concerns — a rank's workers ([`WorkerPool`]), its data manager
//! ([`DataManager`]), its scheduler, or the messages between ranks ([`messages`]) — applying
//! what each returns, in order. The parts own their state; the loop owns only the clock and the
//! bookkeeping that joins them (how many predecessors and buffers each task still waits for,
//! and where it was taken).
//!
//! One machine is one rank. On a cluster every rank runs the same parts on its share of its
//! node, with its own scheduler; ranks exchange data only through message tasks.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::SeedableRng;
use rustc_hash::FxHashMap;

use super::data::{Completion, DataManager, Effect, Waiter};
use super::layout::{Layout, Setup};
use super::observe::{Observer, SimEvent, WorkerStatus};
use super::report::RunReport;
use super::runnable::{Runnable, runnable_of};
use super::stats::Stats;
use super::workers::{PushWake, WorkerPool};
use super::{Drivers, KernelTimes, RunConfig, SimRng, View, Worker, WorkerId, WorkerKind};
use crate::sched::{Decision, Scheduler, Wakes};
use hetsim_core::engine::Calendar;
use hetsim_core::error::{Error, InputError};
use hetsim_core::fluid::{FlowId, FluidNetwork, LinkId};
use hetsim_platform::cluster::{Cluster, ClusterNetwork};
use hetsim_platform::machine::{Machine, MemKind, MemNodeId};
use hetsim_taskgraph::{Access, HandleId, TaskGraph, TaskId};

mod messages;
mod policy;

use policy::Policy;

/// Rank `$r`'s view for its scheduler, borrowing only the fields it reads so the scheduler
/// itself can be borrowed mutably beside it.
macro_rules! view {
    ($s:expr, $r:expr) => {
        View {
            rank: $r.index,
            now_s: $s.now,
            graph: $s.graph,
            workers: $r.workers.workers(),
            loads: $r.workers.loads(),
            runnable: &$s.runnable,
            cols: &$r.cols,
            memory: $r.data.memory(),
            estimates: $r.data.estimates(),
            released_by: None,
        }
    };
}

/// What the calendar holds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    /// A worker's task ends (global worker id).
    TaskEnd(WorkerId),
    /// A device allocation (cudaMalloc) for a task's buffer finished.
    AllocDone { task: TaskId, access: u32 },
    /// A device allocation for a prefetch finished.
    PrefetchAllocDone {
        handle: HandleId,
        node: MemNodeId,
        priority: i32,
    },
    /// A node's driver makes a pass over the data requests it handles.
    TransferPass { rank: u32, node: MemNodeId },
    /// A transfer's submission (its queueing cost) is over: it joins its pair's queue.
    TransferSubmitted { rank: u32, id: u32 },
    /// A submitted transfer's turn has come: it starts moving bytes.
    TransferGo { rank: u32, id: u32 },
    /// A transfer of a rank on a model route ended.
    TransferDone { rank: u32, id: u32 },
    /// A GPU task whose inputs are all there has been queued to its device (StarPU charges
    /// `kernel_queue` to the driver thread in `_starpu_simgrid_submit_job`).
    KernelQueued(TaskId),
    /// The worker holding a task has requested its buffers, one `fetch_input` cost each
    /// (StarPU's `_starpu_fetch_task_input` sleeps after each request in SimGrid builds).
    InputsRequested(TaskId),
    /// A GPU driver's pass saw the last input of the task it holds arrive, and its
    /// submissions in that pass are over.
    InputSeen(TaskId),
    /// A message's sender paid its overhead: the send is posted.
    MessageSent(TaskId),
    /// A step of a message over a route with a transfer model (or without links) ended.
    MessageStep(TaskId),
    /// A message's receiver paid its overhead: the data is there.
    MessageReceived(TaskId),
    /// A delay task's time is over.
    DelayDone(TaskId),
    /// The RAM buffer a message is received into is allocated ([`messages`]).
    RecvBufferReady(TaskId),
    /// A rank's submitting thread submits its next task.
    Submit { rank: u32 },
    /// A worker of a rank (local id) that ended a task makes its next push.
    Push { rank: u32, worker: u32 },
    /// A CPU driver of a rank requests one more input of the task it popped: the sleeping
    /// drivers of its memory node wake.
    FetchWake { rank: u32, node: MemNodeId },
    /// A woken worker of a rank (local id) reaches its pop.
    Pop {
        rank: u32,
        worker: u32,
        /// Whether a GPU driver made its pass over its node's requests already.
        passed: bool,
    },
}

/// A rank's submitting thread: its computations and delays in submission (id) order, how many
/// of them it has submitted, and whether the next one holds its handles' header locks (it
/// waited for them).
#[derive(Debug, Clone, Default)]
struct Submitter {
    order: Vec<TaskId>,
    next: usize,
    locks_taken: bool,
    /// The task just submitted, whose "will not be used" hints come next.
    hints_for: Option<TaskId>,
}

/// A "will not be used" hint waiting for its writer to end.
#[derive(Debug, Clone, Copy)]
struct PendingHint {
    handle: HandleId,
    /// The task it is submitted after.
    after: TaskId,
    /// Whether the submitting thread has submitted its acquire.
    submitted: bool,
}

/// A task's state before it is ready, in one word so that releasing a successor reads one:
/// whether its rank's thread submitted it, whether it is a message, and for other tasks their
/// predecessors not done; a message counts its predecessors per side in its own state, and
/// this word gives where that state is ([`Pending::message_slot`]).
#[derive(Debug, Clone, Copy)]
struct Pending(u32);

impl Pending {
    const SUBMITTED: u32 = 1 << 31;
    const MESSAGE: u32 = 1 << 30;
    const LOW: u32 = Self::MESSAGE - 1;

    /// A task that is not a message, waiting for `preds` predecessors.
    fn task(preds: u32) -> Self {
        assert!(preds <= Self::LOW, "a task with {preds} predecessors");
        Pending(preds)
    }

    /// A message whose state is the `slot`-th of the messages.
    fn message(slot: u32) -> Self {
        assert!(slot <= Self::LOW, "more than {} messages", Self::LOW);
        Pending(slot | Self::MESSAGE)
    }

    /// Every task's word: the messages numbered in task order.
    fn for_graph(graph: &TaskGraph) -> Vec<Pending> {
        let mut messages = 0;
        graph
            .in_degrees()
            .into_iter()
            .zip(graph.tasks())
            .map(|(preds, task)| {
                if task.is_message() {
                    messages += 1;
                    Pending::message(messages - 1)
                } else {
                    Pending::task(preds)
                }
            })
            .collect()
    }

    fn preds_left(self) -> u32 {
        debug_assert!(
            !self.is_message(),
            "a message counts its predecessors itself"
        );
        self.0 & Self::LOW
    }

    fn is_message(self) -> bool {
        self.0 & Self::MESSAGE != 0
    }

    /// Where a message's state is among the messages' (`None` for other tasks).
    fn message_slot(self) -> Option<u32> {
        self.is_message().then_some(self.0 & Self::LOW)
    }

    fn submitted(self) -> bool {
        self.0 & Self::SUBMITTED != 0
    }

    fn submit(&mut self) {
        self.0 |= Self::SUBMITTED;
    }

    /// One predecessor is done: how many are left.
    fn pred_done(&mut self) -> u32 {
        debug_assert!(self.preds_left() > 0, "more predecessors done than it has");
        self.0 -= 1;
        self.preds_left()
    }
}

/// A task a worker took (or a data message whose send waits for its buffer).
#[derive(Debug, Clone, Copy)]
struct Taken {
    /// The local worker holding it (a message: none, `u32::MAX`).
    worker: u32,
    /// Its buffers not in place yet, plus one while a GPU task waits for its submission to
    /// the device and one while its worker requests its buffers.
    buffers_left: u32,
}

/// Who a fluid flow belongs to.
#[derive(Debug, Clone, Copy)]
enum FlowOwner {
    /// A transfer of a rank's data manager.
    Transfer { rank: u32, id: u32 },
    /// A message between ranks.
    Message(TaskId),
}

/// One rank: a runtime on its share of a node.
struct Rank<'a> {
    /// Its id.
    index: u32,
    node: u32,
    workers: WorkerPool,
    data: DataManager,
    sched: Policy<'a>,
    /// Per local worker, its class in the runnable table.
    cols: Vec<usize>,
    /// Global id of local worker 0.
    worker_base: u32,
    /// Global id of the node's memory node 0.
    mem_base: u32,
    /// The memory nodes of its GPU workers, in order ([`hetsim_taskgraph::Place::Device`]).
    gpu_mems: Vec<MemNodeId>,
    /// When this rank's MPI progress thread is next free.
    mpi_free_at: f64,
    /// The worker whose task ended in the event being handled: it pops last
    /// ([`WorkerPool::pop_order`]).
    releasing: Option<WorkerId>,
    /// Whom each push since workers last popped woke, and when it was done.
    pushes: Vec<(PushWake, f64)>,
    /// Per memory node, when the drivers waiting on it last had a broadcast
    /// ([`Sim::broadcast`]).
    broadcast_s: Vec<f64>,
    /// Per memory node, the local workers whose drivers wait on its broadcasts
    /// ([`waited_on`]), by id.
    waiting_on: Vec<Vec<WorkerId>>,
    /// Per local worker, what the thread that ended a task still has to push, in order
    /// (`Event::Push`).
    to_push: Vec<VecDeque<ToPush>>,
    /// Transfers whose bytes have moved and whose handling node's driver has not seen them
    /// complete yet: (node, id), seen in that driver's next pass, or when the synchronous
    /// task it runs ends.
    unseen: Vec<(MemNodeId, u32)>,
    /// GPU tasks whose last input has arrived, with their driver's node: the driver sees it
    /// in its next pass over its node's requests.
    to_see: Vec<(MemNodeId, TaskId)>,
}

impl Rank<'_> {
    /// When the pushes since workers last popped are done: `now_s` if there are none, which
    /// is when a push made at `now_s` starts.
    fn pushes_done_s(&self, now_s: f64) -> f64 {
        self.pushes.last().map_or(now_s, |&(_, done_s)| done_s)
    }

    /// Record a push made at `now_s` (the first since workers last popped) or after the ones
    /// before it, costing `push_s`, and done no earlier than `locked_s` (when the locks it
    /// needs are its): returns when it is done.
    fn note_push(&mut self, wake: PushWake, now_s: f64, push_s: f64, locked_s: f64) -> f64 {
        let done_s = (self.pushes_done_s(now_s) + push_s).max(locked_s);
        self.pushes.push((wake, done_s));
        done_s
    }
}

/// What a thread that ended a task pushes.
#[derive(Debug, Clone, Copy)]
enum ToPush {
    /// A task whose last predecessor that was.
    Task(TaskId),
    /// The first task of the acquire of a "will not be used" hint on the handle that task
    /// wrote (`_starpu_data_acquire_cb_pre`): once it ends the hint acts.
    Hint(HandleId),
    /// The acquire's second task (`_starpu_data_acquire_cb_release`, pushed right after the
    /// first ends: `quick_next`).
    HintRelease,
}

/// The ranks something changed for since their workers last popped, for
/// [`Sim::wake_workers`] to visit in increasing order without scanning every rank.
#[derive(Debug, Default)]
struct Dirty {
    /// Per rank, whether it is marked.
    marked: Vec<bool>,
    /// The marked ranks, smallest first (an entry whose rank is no longer marked is stale).
    heap: BinaryHeap<Reverse<u32>>,
    /// Ranks marked during a pass after the pass went past them: kept for the next pass.
    later: Vec<u32>,
}

impl Dirty {
    fn mark(&mut self, r: usize) {
        if !std::mem::replace(&mut self.marked[r], true) {
            self.heap.push(Reverse(r as u32));
        }
    }
}

struct Sim<'a> {
    machine: &'a Machine,
    cluster: Option<&'a Cluster>,
    cluster_net: Option<ClusterNetwork>,
    graph: &'a TaskGraph,
    kernels: &'a dyn KernelTimes,
    obs: &'a mut dyn Observer,
    config: &'a RunConfig,
    rng: SimRng,
    now: f64,
    cal: Calendar<Event>,
    net: FluidNetwork,
    layout: Layout,
    flow_owner: Vec<FlowOwner>,
    /// The owners of the flows that ended at the date being handled.
    scratch_owners: Vec<FlowOwner>,
    ranks: Vec<Rank<'a>>,
    dirty: Dirty,
    /// Global worker id → rank.
    worker_rank: Vec<u32>,
    runnable: Runnable,
    /// Per task, its predecessors not done and whether it is submitted (a task whose
    /// predecessors are done waits for its submission before it is pushed).
    pending: Vec<Pending>,
    /// Per rank, its submitting thread.
    to_submit: Vec<Submitter>,
    /// The tasks a worker took and that have not ended, and the data messages whose send
    /// waits for its buffer: a few per worker, so a map rather than arrays over every task.
    taken: FxHashMap<u32, Taken>,
    messages: messages::Messages,
    /// "Will not be used" hints by the task whose end makes them hold (`run.wont_use`).
    wont_use_after: FxHashMap<u32, Vec<PendingHint>>,
    /// Hints whose writer ended before the submitting thread reached them, by the task they
    /// are submitted after: the thread pushes them when it does.
    hints_at_submission: FxHashMap<u32, Vec<HandleId>>,
    /// Per task, the writers the "will not be used" hints submitted right after it wait for.
    hints_after: FxHashMap<u32, Vec<TaskId>>,
    /// When the last task ended (the makespan, as `starpu_task_wait_for_all` returns then).
    last_task_end: f64,
    tasks_done: u64,
    makespan: f64,
    /// The decisions of the push under way (reused buffer).
    decisions: Vec<Decision>,
    /// A data manager's effects not applied yet ([`Sim::apply`]).
    fx: Vec<Effect>,
    /// The (rank, node) whose driver is seeing transfers complete in a pass
    /// ([`Sim::see_completions`]).
    seeing: Option<(usize, MemNodeId)>,
    stats: Stats,
    scratch_order: Vec<u32>,
    scratch_flows: Vec<FlowId>,
    scratch_versions: Vec<(HandleId, u32, u32)>,
    scratch_loads: Vec<(u32, f64)>,
    /// Replica changes on their way to a scheduler.
    scratch_changes: Vec<(HandleId, MemNodeId)>,
    /// Last link loads reported to the observer, if it wants them.
    link_loads: Option<Vec<f64>>,
    /// Lower bounds on the makespan.
    bounds: crate::bounds::Bounds,
}

/// Run `graph` on `machine` under `sched`, with kernel durations from `kernels`, and report.
///
/// Errors: a task no worker can run (no kernel model, or its data does not fit in the memory
/// of any worker that has a model) is reported before the run; a run that stops with tasks
/// left (every device memory full of data held by tasks waiting for more room) ends with a
/// diagnosis naming the devices and handles involved.
pub fn simulate(
    machine: &Machine,
    graph: &TaskGraph,
    kernels: &dyn KernelTimes,
    sched: &mut dyn Scheduler,
    config: &RunConfig,
) -> Result<RunReport, Error> {
    simulate_observed(machine, graph, kernels, sched, config, &mut ())
}

/// [`simulate`], reporting every event to `observer` as it happens.
pub fn simulate_observed(
    machine: &Machine,
    graph: &TaskGraph,
    kernels: &dyn KernelTimes,
    sched: &mut dyn Scheduler,
    config: &RunConfig,
    observer: &mut dyn Observer,
) -> Result<RunReport, Error> {
    if graph.nodes() > 1 {
        return Err(InputError::new(format!(
            "the task graph is distributed over {} ranks: run it on a cluster",
            graph.nodes()
        ))
        .at_field("scenario.machine")
        .into());
    }
    let setup = super::layout::machine_setup(machine, config)?;
    let mut sim = Sim::new(
        machine,
        None,
        setup,
        graph,
        kernels,
        vec![sched],
        config,
        observer,
    )?;
    sim.run()?;
    Ok(sim.report())
}

/// Run a distributed `graph` (one rank per graph node, `ranks_per_node` on each cluster node)
/// on `cluster`, rank r under `scheds[r]`, and report. Messages between ranks cross the
/// cluster's network with its MPI overheads (`docs/mpi.md`).
#[allow(clippy::too_many_arguments)]
pub fn simulate_cluster(
    cluster: &Cluster,
    ranks_per_node: u32,
    graph: &TaskGraph,
    kernels: &dyn KernelTimes,
    scheds: &mut [Box<dyn Scheduler>],
    config: &RunConfig,
    observer: &mut dyn Observer,
) -> Result<RunReport, Error> {
    let setup = super::layout::cluster_setup(cluster, ranks_per_node, config)?;
    if graph.nodes() as usize > setup.ranks.len() || scheds.len() != setup.ranks.len() {
        return Err(InputError::new(format!(
            "the task graph has {} rank(s) and {} scheduler(s) were given, but the cluster runs \
             {} rank(s) ({} node(s), {ranks_per_node} per node)",
            graph.nodes(),
            scheds.len(),
            setup.ranks.len(),
            cluster.nodes()
        ))
        .at_field("machine.nodes")
        .into());
    }
    let scheds: Vec<&mut dyn Scheduler> = scheds
        .iter_mut()
        .map(|s| &mut **s as &mut dyn Scheduler)
        .collect();
    let mut sim = Sim::new(
        cluster.node_machine(),
        Some(cluster),
        setup,
        graph,
        kernels,
        scheds,
        config,
        observer,
    )?;
    sim.run()?;
    Ok(sim.report())
}

impl<'a> Sim<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        machine: &'a Machine,
        cluster: Option<&'a Cluster>,
        setup: Setup,
        graph: &'a TaskGraph,
        kernels: &'a dyn KernelTimes,
        scheds: Vec<&'a mut dyn Scheduler>,
        config: &'a RunConfig,
        obs: &'a mut dyn Observer,
    ) -> Result<Self, Error> {
        let Setup {
            net,
            cluster_net,
            ranks: setups,
            layout,
            mem_per_node,
        } = setup;
        let rank_workers: Vec<&[super::Worker]> =
            setups.iter().map(|s| s.workers.as_slice()).collect();
        let (runnable, cols) = runnable_of(graph, kernels, &rank_workers, machine)?;
        let bounds = runnable.bounds(graph, &layout.workers);
        let ram = machine
            .memory_nodes()
            .iter()
            .find(|m| m.kind == MemKind::Ram)
            .map(|m| m.id)
            .ok_or_else(|| InputError::new("the machine has no RAM memory node"))?;
        let handles = rank_handles(graph, setups.len());
        let mut ranks = Vec::with_capacity(setups.len());
        let mut worker_rank = Vec::new();
        for (((r, s), sched), (cols, owned)) in setups
            .into_iter()
            .enumerate()
            .zip(scheds)
            .zip(cols.into_iter().zip(handles.0))
        {
            sched.prepare(machine, &s.workers);
            let gpus: Vec<MemNodeId> = s
                .workers
                .iter()
                .filter(|w| w.kind == WorkerKind::Gpu)
                .map(|w| w.memory)
                .collect();
            check_homes(graph, machine, r as u32, &owned, &gpus)?;
            let mut data = DataManager::new(
                machine,
                graph,
                r as u32,
                (owned, handles.1.clone()),
                ram,
                &gpus,
                s.paths,
            );
            if sched.watches_replicas() {
                data.record_replica_changes();
            }
            let memory = data.memory();
            if memory.used(ram) > memory.capacity(ram) {
                return Err(InputError::new(format!(
                    "the workload's data ({} bytes) does not fit in the RAM of machine `{}` ({} \
                     bytes)",
                    memory.used(ram),
                    machine.name(),
                    memory.capacity(ram)
                ))
                .at_field("workload")
                .into());
            }
            let worker_base = worker_rank.len() as u32;
            worker_rank.extend(std::iter::repeat_n(r as u32, s.workers.len()));
            let to_push = vec![VecDeque::new(); s.workers.len()];
            let nnodes = data.nnodes();
            let mut waiting_on = vec![Vec::new(); nnodes];
            for (i, w) in s.workers.iter().enumerate() {
                let (own, ram_too) = waited_on(w, ram);
                for node in std::iter::once(own).chain(ram_too) {
                    waiting_on[node.index()].push(WorkerId(i as u32));
                }
            }
            let sched = Policy::new(sched, s.workers.len());
            ranks.push(Rank {
                index: r as u32,
                node: s.node,
                workers: WorkerPool::new(s.workers, config.drivers == Drivers::StarPu),
                data,
                sched,
                cols,
                worker_base,
                mem_base: s.node * mem_per_node,
                gpu_mems: gpus,
                mpi_free_at: 0.0,
                releasing: None,
                pushes: Vec::new(),
                to_push,
                broadcast_s: vec![f64::NEG_INFINITY; nnodes],
                waiting_on,
                unseen: Vec::new(),
                to_see: Vec::new(),
            });
        }
        let link_loads = obs
            .wants_link_loads()
            .then(|| vec![0.0; layout.links.len()]);
        let (wont_use_after, hints_after) = if config.wont_use {
            hint_maps(graph)
        } else {
            Default::default()
        };
        let pending = Pending::for_graph(graph);
        let messages = messages::Messages::new(graph, &pending, machine.memory_nodes().len())?;
        let sim = Sim {
            machine,
            cluster,
            cluster_net,
            graph,
            kernels,
            obs,
            config,
            rng: SimRng::seed_from_u64(config.seed),
            now: 0.0,
            cal: Calendar::new(),
            net,
            layout,
            flow_owner: Vec::new(),
            scratch_owners: Vec::new(),
            dirty: Dirty {
                marked: vec![false; ranks.len()],
                ..Dirty::default()
            },
            ranks,
            worker_rank,
            runnable,
            pending,
            to_submit: Vec::new(),
            taken: FxHashMap::default(),
            messages,
            wont_use_after,
            hints_at_submission: FxHashMap::default(),
            hints_after,
            last_task_end: 0.0,
            seeing: None,
            tasks_done: 0,
            makespan: 0.0,
            decisions: Vec::new(),
            fx: Vec::new(),
            stats: Stats::default(),
            scratch_order: Vec::new(),
            scratch_flows: Vec::new(),
            scratch_versions: Vec::new(),
            scratch_loads: Vec::new(),
            scratch_changes: Vec::new(),
            link_loads,
            bounds,
        };
        sim.check_message_routes()?;
        Ok(sim)
    }

    /// Tell the statistics and the observer.
    fn note(&mut self, event: &SimEvent<'_>) {
        self.stats.event(self.now, event);
        self.obs.event(self.now, event);
    }

    /// Apply rank `r`'s data manager's effects, in the order it returned them.
    fn apply(&mut self, r: usize) {
        if self.fx.is_empty() {
            return;
        }
        let mut fx = std::mem::take(&mut self.fx);
        let base = self.ranks[r].mem_base;
        let ranks = RankOf {
            index: r as u32,
            count: self.ranks.len() as u32,
        };
        for e in fx.drain(..) {
            match e {
                Effect::At(at_s, event) => self.cal.schedule(at_s, event),
                Effect::Note(event) => self.note(&globalize(event, base, ranks)),
            }
        }
        self.fx = fx;
    }

    /// The global id of rank `r`'s memory node `node`.
    fn global_mem(&self, r: usize, node: MemNodeId) -> MemNodeId {
        MemNodeId(self.ranks[r].mem_base + node.0)
    }

    /// The global id of rank `r`'s worker `w`.
    fn global_worker(&self, r: usize, w: WorkerId) -> WorkerId {
        WorkerId(self.ranks[r].worker_base + w.0)
    }

    /// The rank of a compute task.
    fn rank_of(&self, t: TaskId) -> usize {
        self.graph.task(t).node.index()
    }

    fn mark(&mut self, r: usize) {
        self.dirty.mark(r);
    }

    fn run(&mut self) -> Result<(), Error> {
        let start = SimEvent::RunStart {
            machine: self.machine,
            graph: self.graph,
            workers: &self.layout.workers,
            links: &self.layout.links,
            sched: self.ranks[0].sched.name(),
            config: self.config,
            bounds: self.bounds,
            layout: &self.layout,
        };
        self.stats.event(0.0, &start);
        self.obs.event(0.0, &start);
        if self.machine.runtime().submit_s > 0.0 {
            // Each rank's thread submits its tasks one after the other
            // (`STARPU_SIMGRID_TASK_SUBMIT_COST`); messages are posted as their data is ready.
            let mut per_rank = vec![Submitter::default(); self.ranks.len()];
            for t in self.graph.task_ids() {
                let p = &mut self.pending[t.index()];
                if p.is_message() {
                    p.submit();
                } else {
                    per_rank[self.rank_of(t)].order.push(t);
                }
            }
            self.to_submit = per_rank;
            // Before its first task the program's thread makes its startup acquisitions, each
            // an internal task submitted and pushed.
            let rt = self.machine.runtime();
            let startup_s = f64::from(self.graph.startup_acquires()) * (rt.submit_s + rt.push_s);
            for r in 0..self.ranks.len() {
                self.cal
                    .schedule(startup_s, Event::Submit { rank: r as u32 });
            }
        } else {
            self.pending.iter_mut().for_each(Pending::submit);
            // Everything is submitted at the start, the hints too.
            for h in self.wont_use_after.values_mut().flatten() {
                h.submitted = true;
            }
            let roots: Vec<TaskId> = self
                .graph
                .task_ids()
                .filter(|&t| {
                    let p = self.pending[t.index()];
                    !p.is_message() && p.preds_left() == 0
                })
                .collect();
            for t in roots {
                self.ready(t, None);
            }
        }
        for m in self.messages.waiting_for_nothing(self.graph).ones() {
            self.message_ready(TaskId(m as u32));
        }
        if self.config.drivers == Drivers::StarPu {
            for r in 0..self.ranks.len() {
                for w in 0..self.ranks[r].workers.workers().len() {
                    let w = WorkerId(w as u32);
                    self.pop_later(r, w, self.ranks[r].workers.progress_s(w));
                }
            }
        }
        self.wake_workers();
        self.event_loop();
        if self.tasks_done < self.graph.num_tasks() as u64 {
            return Err(self.deadlock().into());
        }
        // The run ends when the last task does: idle write-backs still moving are not part of
        // it (StarPU's example stops its clock after `starpu_task_wait_for_all`).
        self.makespan = self.last_task_end;
        for r in 0..self.ranks.len() {
            self.ranks[r].data.final_write_back(self.now, &mut self.fx);
            self.apply(r);
        }
        self.event_loop();
        self.note(&SimEvent::RunEnd {
            makespan_s: self.makespan,
        });
        Ok(())
    }

    fn event_loop(&mut self) {
        let mut finished = std::mem::take(&mut self.scratch_flows);
        loop {
            let tc = self.cal.peek_time();
            let tn = self.net.next_event_time();
            match (tc, tn) {
                (None, None) => break,
                (Some(c), n) if n.is_none_or(|n| c <= n) => {
                    let (t, ev) = self.cal.pop().expect("peeked");
                    self.now = t;
                    self.handle(ev);
                }
                (_, Some(t)) => {
                    self.now = t;
                    self.net.advance(t, &mut finished);
                    self.report_link_loads();
                    // Owners first: a message's next step, started below, may reuse the id of
                    // a flow that ended at the same date.
                    let mut owners = std::mem::take(&mut self.scratch_owners);
                    owners.extend(finished.drain(..).map(|f| self.flow_owner[f.0 as usize]));
                    for owner in owners.drain(..) {
                        match owner {
                            FlowOwner::Transfer { rank, id } => {
                                self.transfer_done(rank as usize, id)
                            }
                            FlowOwner::Message(m) => self.message_step_done(m),
                        }
                    }
                    self.scratch_owners = owners;
                }
                (Some(_), None) => unreachable!(),
            }
            self.wake_workers();
        }
        self.scratch_flows = finished;
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::TaskEnd(w) => {
                let r = self.worker_rank[w.index()] as usize;
                self.task_end(r, WorkerId(w.0 - self.ranks[r].worker_base));
            }
            Event::AllocDone { task, access } => {
                let (r, node) = self.buffer_place(task, access);
                self.buffer_allocated(task, access);
                self.allocation_ended(r, node);
            }
            Event::PrefetchAllocDone {
                handle,
                node,
                priority,
            } => {
                let r = self.graph.handle(handle).node.index();
                self.mark(r);
                self.ranks[r].data.prefetch_allocated(
                    handle,
                    node,
                    priority,
                    self.now,
                    &mut self.fx,
                );
                self.apply(r);
                self.allocation_ended(r, node);
            }
            Event::TransferPass { rank, node } => {
                let r = rank as usize;
                self.mark(r);
                self.driver_pass(r, node, |data, now_s, fx| {
                    data.transfer_pass(node, now_s, fx)
                });
            }
            Event::TransferSubmitted { rank, id } => {
                let r = rank as usize;
                self.mark(r);
                self.ranks[r]
                    .data
                    .transfer_submitted(id, self.now, &mut self.fx);
                self.apply(r);
            }
            Event::TransferGo { rank, id } => {
                let r = rank as usize;
                self.mark(r);
                if let Some(f) =
                    self.ranks[r]
                        .data
                        .transfer_go(id, &mut self.net, self.now, &mut self.fx)
                {
                    self.own_flow(f, FlowOwner::Transfer { rank, id });
                }
                self.apply(r);
            }
            Event::TransferDone { rank, id } => self.transfer_done(rank as usize, id),
            Event::KernelQueued(t) | Event::InputsRequested(t) | Event::InputSeen(t) => {
                self.buffer_ready(t)
            }
            Event::MessageSent(m) => self.message_sent(m),
            Event::MessageStep(m) => self.message_step_done(m),
            Event::MessageReceived(m) => self.message_received(m),
            Event::DelayDone(t) => {
                self.tasks_done += 1;
                self.last_task_end = self.now;
                self.release_successors(t, None);
            }
            Event::RecvBufferReady(m) => self.recv_buffer_ready(m),
            Event::Submit { rank } => self.submit_next(rank as usize),
            Event::Push { rank, worker } => self.push_next(rank as usize, WorkerId(worker)),
            Event::FetchWake { rank, node } => self.broadcast(rank as usize, node),
            Event::Pop {
                rank,
                worker,
                passed,
            } => self.popped_at_date(rank as usize, WorkerId(worker), passed),
        }
    }

    /// An allocation of rank `r` ended: an idle transfer of that node may start now.
    fn allocation_ended(&mut self, r: usize, node: MemNodeId) {
        self.ranks[r]
            .data
            .allocation_ended(node, self.now, &mut self.fx);
        self.ranks[r].data.start_transfers(self.now, &mut self.fx);
        self.apply(r);
    }

    fn own_flow(&mut self, f: FlowId, owner: FlowOwner) {
        let fi = f.0 as usize;
        if self.flow_owner.len() <= fi {
            self.flow_owner.resize(fi + 1, owner);
        }
        self.flow_owner[fi] = owner;
    }

    // --- Tasks and workers ------------------------------------------------------------------

    /// Push `task` to its rank's scheduler, the pushing thread paying `cost_s` first.
    fn push(&mut self, task: TaskId, released_by: Option<WorkerId>, cost_s: f64) {
        let r = self.rank_of(task);
        let mut decisions = std::mem::take(&mut self.decisions);
        let rank = &mut self.ranks[r];
        let view = View {
            released_by,
            ..view!(self, rank)
        };
        rank.sched.push(task, &view, &mut decisions);
        let wake = match rank.sched.wakes() {
            Wakes::All => PushWake::All,
            // A push that names no worker wakes none.
            Wakes::Chosen => decisions
                .iter()
                .find_map(|d| match d {
                    Decision::Wake { worker } => Some(PushWake::Worker(worker.0)),
                    _ => None,
                })
                .unwrap_or(PushWake::Nobody),
            Wakes::Eager => PushWake::FirstAsleep,
        };
        // The pushing thread sleeps the push cost before each push (`_starpu_push_task`), after
        // the pushes before it; then a policy that prefetches the task's data takes each
        // handle's header lock in turn (`starpu_prefetch_task_input_for`), waiting while a
        // driver holds it in a submission. This push's requests are posted then.
        let mut locked_s = rank.pushes_done_s(self.now) + cost_s;
        let prefetches = self.config.prefetch
            && decisions
                .iter()
                .any(|d| matches!(d, Decision::Prefetch { task: t, .. } if *t == task));
        if prefetches {
            locked_s = rank
                .data
                .headers_free_s(self.graph.accesses(task), locked_s);
        }
        let post_s = rank.note_push(wake, self.now, cost_s, locked_s);
        self.dirty.mark(r);
        // StarPU's dmda requests a task's prefetches inside its push
        // (`starpu_prefetch_task_input_for`), so the next push, even at the same instant, sees
        // that data as requested there: the decisions are carried out now, in order.
        for d in decisions.drain(..) {
            match d {
                Decision::Prefetch { task, worker } if self.config.prefetch => {
                    let node = self.ranks[r].workers.worker(worker).memory;
                    let priority = self.request_priority(task);
                    self.ranks[r].data.prefetch(
                        self.graph,
                        task,
                        node,
                        priority,
                        post_s,
                        &mut self.fx,
                    );
                    self.apply(r);
                }
                Decision::Prefetch { .. } | Decision::Wake { .. } => {}
            }
        }
        self.decisions = decisions;
    }

    /// Let the workers of every rank something happened to pop ([`WorkerPool::pop_order`]):
    /// the workers its pushes woke and the worker that released them pop at their own dates
    /// (`Event::Pop`), the workers awake with room now; under eager all pop now, in that order.
    ///
    /// Ranks are visited in increasing order; a rank marked by the visit of a later one waits
    /// for the next call, as a rank marked by its own visit is not visited again.
    fn wake_workers(&mut self) {
        let mut passed: Option<u32> = None;
        while let Some(Reverse(r)) = self.dirty.heap.pop() {
            if !self.dirty.marked[r as usize] {
                continue;
            }
            if passed.is_some_and(|p| r <= p) {
                self.dirty.later.push(r);
                continue;
            }
            self.dirty.marked[r as usize] = false;
            self.wake_rank(r as usize);
            passed = Some(r);
        }
        let Dirty { heap, later, .. } = &mut self.dirty;
        heap.extend(later.drain(..).map(Reverse));
    }

    fn wake_rank(&mut self, r: usize) {
        self.take_buffer_allocations(r);
        let mut order = std::mem::take(&mut self.scratch_order);
        let rank = &mut self.ranks[r];
        let releasing = rank.releasing.take();
        // The releasing worker's driver pushed the tasks it released: its own pass over the
        // requests its node handles comes after.
        if let Some(w) = releasing.filter(|_| !rank.pushes.is_empty()) {
            let node = rank.workers.worker(w).memory;
            let done_s = rank.pushes_done_s(self.now);
            rank.data.busy_until(node, done_s);
        }
        // Which of the workers eager's push wakes pops first at a shared date is SimGrid's
        // order among them: under eager they pop at the event, the leading ones one task each
        // first, then every worker, awake or not, fills its room.
        let dated = rank.sched.wakes() != Wakes::Eager;
        let leading = rank
            .workers
            .pop_order(releasing, &rank.pushes, self.now, !dated, &mut order);
        rank.pushes.clear();
        if !dated {
            for (upto, most) in [(leading, 1), (order.len(), u32::MAX)] {
                for &w in &order[..upto] {
                    self.pop_into(r, WorkerId(w), most);
                }
            }
            order.clear();
            self.scratch_order = order;
            self.dirty.marked[r] = false;
            return;
        }
        // The woken workers and the releaser pop at their own dates; the workers awake with
        // room (a GPU whose pipeline is not full) pop now.
        for (i, &w) in order[..leading].iter().enumerate() {
            let w = WorkerId(w);
            let at = self.now + self.ranks[r].workers.lead_pop_s(i);
            self.pop_later(r, w, at);
        }
        for &w in &order[leading..] {
            self.pop_into(r, WorkerId(w), u32::MAX);
        }
        order.clear();
        self.scratch_order = order;
        // What the pops did (a task started, a transfer asked for) concerns this rank again
        // only through events, which mark it.
        self.dirty.marked[r] = false;
    }

    /// Worker `w` of rank `r`, woken, is on its way to a pop at `at` (`Event::Pop`).
    fn pop_later(&mut self, r: usize, w: WorkerId, at: f64) {
        let ev = self.woken(r, w);
        self.cal.schedule(at, ev);
    }

    /// Worker `w` of rank `r` is on its way to a pop: its event.
    fn woken(&mut self, r: usize, w: WorkerId) -> Event {
        self.ranks[r].workers.set_waking(w);
        Event::Pop {
            rank: r as u32,
            worker: w.0,
            passed: false,
        }
    }

    /// Worker `w` of rank `r` reaches the pop it was woken for.
    ///
    /// A GPU's driver pulls after its pass over its node's requests
    /// ([`DataManager::pass_before_pull`]; `passed`: that pass is made).
    fn popped_at_date(&mut self, r: usize, w: WorkerId, passed: bool) {
        let worker = self.ranks[r].workers.worker(w);
        if worker.kind == WorkerKind::Gpu && !passed {
            let node = worker.memory;
            let later = self.driver_pass(r, node, |data, now_s, fx| {
                data.pass_before_pull(node, now_s, fx)
            });
            if let Some((at, passed)) = later {
                self.cal.schedule(
                    at,
                    Event::Pop {
                        rank: r as u32,
                        worker: w.0,
                        passed,
                    },
                );
                return;
            }
        }
        self.ranks[r].workers.set_awake(w);
        self.pop_into(r, w, u32::MAX);
        self.mark(r);
    }

    /// Worker `w` of rank `r` pops while it has room, `most` tasks at the most.
    fn pop_into(&mut self, r: usize, w: WorkerId, most: u32) {
        if self.ranks[r].sched.finds_nothing(w) {
            // Its last pop found nothing and the policy has not changed since: nor would this
            // one, which only sends to sleep a worker that holds nothing. (Whether that changes
            // anything is asked before the room, which costs more: most workers skipped here
            // sleep already, and `found_nothing` would ask again only after the room.)
            if !self.ranks[r].workers.keeps_on_nothing(w) && self.has_room(r, w) {
                self.found_nothing(r, w);
            }
            return;
        }
        let mut popped = 0;
        while popped < most && self.has_room(r, w) {
            popped += 1;
            let rank = &mut self.ranks[r];
            let mut changes = std::mem::take(&mut self.scratch_changes);
            if rank.sched.watches_replicas() {
                rank.data.swap_replica_changes(&mut changes);
            }
            let view = view!(self, rank);
            if !changes.is_empty() {
                rank.sched.replicas_changed(&changes, &view);
                changes.clear();
            }
            self.scratch_changes = changes;
            let Some(t) = rank.sched.pop(w, &view) else {
                // A worker that comes back by itself pops after its sleep and its driver's
                // progress call, as a woken one does.
                match rank.sched.pop_again_after_s(w) {
                    Some(after_s) => {
                        let at = self.now + after_s + rank.workers.progress_s(w);
                        self.pop_later(r, w, at);
                    }
                    None => self.found_nothing(r, w),
                }
                break;
            };
            assert!(
                view.predicted_length_s(t, w).is_some(),
                "scheduler `{}` gave task {} to worker {} that cannot run it",
                rank.sched.name(),
                t.0,
                rank.workers.worker(w).name
            );
            rank.workers.set_awake(w);
            self.take(r, w, t);
        }
    }

    /// The buffers task `t` still waits for (0 once it is not taken, or has ended).
    fn buffers_left(&self, t: TaskId) -> u32 {
        self.taken.get(&t.0).map_or(0, |k| k.buffers_left)
    }

    /// The local worker holding task `t`.
    fn worker_of(&self, t: TaskId) -> WorkerId {
        WorkerId(self.taken.get(&t.0).expect("a taken task").worker)
    }

    /// Whether worker `w` of rank `r` may pop: it holds fewer tasks than its pipeline depth,
    /// none of them is still fetching its inputs, and none is synchronous. StarPU's driver
    /// pops only when no task is transferring and the pipeline is not stuck behind a
    /// synchronous task (`_starpu_get_multi_worker_task` checks `task_transferring` and
    /// `pipeline_stuck`), so a GPU fetches the inputs of one popped task at a time.
    fn has_room(&self, r: usize, w: WorkerId) -> bool {
        let workers = &self.ranks[r].workers;
        debug_assert_eq!(
            workers.has_room(w),
            (workers.held(w).len() as u32) < workers.worker(w).pipeline_depth
                && workers
                    .held(w)
                    .iter()
                    .all(|&t| self.buffers_left(t) == 0 && !self.gpu_sync(r, t, w)),
            "worker {w:?}'s room out of step with the tasks it holds"
        );
        workers.has_room(w) && !self.messages.allocating(r, w, self.now)
    }

    fn worker_state(&mut self, r: usize, w: WorkerId, state: Option<WorkerStatus>) {
        if let Some(state) = state {
            let worker = self.global_worker(r, w);
            self.note(&SimEvent::WorkerState { worker, state });
        }
    }

    /// Worker `w` of rank `r` holds task `t`: pin and fetch its buffers.
    fn take(&mut self, r: usize, w: WorkerId, t: TaskId) {
        let state = self.ranks[r].workers.hold(w, t, self.now);
        self.worker_state(r, w, state);
        let node = self.ranks[r].workers.worker(w).memory;
        let accesses = self.graph.accesses(t);
        // A GPU task also waits for its submission to the device, counted as one more input,
        // and every task for its worker to have requested its buffers, one more.
        let kernel_queue_s = self.kernel_queue_s(r, w, t);
        let queued = u32::from(kernel_queue_s > 0.0);
        let requesting_s = self.machine.runtime().fetch_input_s * distinct_handles(accesses) as f64;
        let requesting = u32::from(requesting_s > 0.0);
        let buffers_left = accesses.len() as u32 + queued + requesting;
        let taken = Taken {
            worker: w.0,
            buffers_left,
        };
        assert!(
            self.taken.insert(t.0, taken).is_none(),
            "task {t} taken twice"
        );
        if buffers_left > 0 || self.gpu_sync(r, t, w) {
            self.ranks[r].workers.set_stuck(w, true);
        }
        if self.config.drivers == Drivers::StarPu
            && self.ranks[r].workers.worker(w).kind == WorkerKind::Cpu
        {
            self.broadcast(r, node);
            let fetch_s = self.machine.runtime().fetch_input_s;
            for i in 1..distinct_handles(accesses) {
                let ev = Event::FetchWake {
                    rank: r as u32,
                    node,
                };
                self.cal.schedule(self.now + i as f64 * fetch_s, ev);
            }
        }
        if requesting > 0 {
            self.cal
                .schedule(self.now + requesting_s, Event::InputsRequested(t));
            // A GPU's driver thread requests them itself: its next pass over its node's
            // requests comes after.
            if self.ranks[r].workers.worker(w).kind == WorkerKind::Gpu {
                let until_s = self.now + requesting_s;
                self.ranks[r].data.busy_until(node, until_s);
            }
        }
        if accesses.is_empty() && queued > 0 {
            self.cal
                .schedule(self.now + kernel_queue_s, Event::KernelQueued(t));
        }
        self.ranks[r].data.task_fetches(self.graph, t, node);
        for (i, a) in accesses.iter().enumerate() {
            if self.ranks[r].data.pin_buffer(t, i as u32, a.handle, node) {
                self.buffer_allocated(t, i as u32);
            }
        }
        self.retry_allocations(r, node);
        self.try_start(r, w);
    }

    /// A broadcast to the drivers of rank `r` waiting on `node`: a CPU driver's input request
    /// there (the request's callback, `_starpu_fetch_task_input_cb`), or the end of a transfer
    /// the node's driver handles. Each sleeping one makes a progress call and pops. A GPU's
    /// driver drives main memory too (it copies to and from it), so it waits on RAM's
    /// broadcasts as well as its own.
    fn broadcast(&mut self, r: usize, node: MemNodeId) {
        self.ranks[r].broadcast_s[node.index()] = self.now;
        for i in 0..self.ranks[r].waiting_on[node.index()].len() {
            let w = self.ranks[r].waiting_on[node.index()][i];
            if self.ranks[r].workers.is_asleep(w) {
                self.poll_again(r, w, self.now + self.ranks[r].workers.progress_s(w));
            }
        }
    }

    /// Worker `w` of rank `r` makes one more progress call and pops at `at`, after the
    /// threads already under way at that date.
    fn poll_again(&mut self, r: usize, w: WorkerId, at: f64) {
        let ev = self.woken(r, w);
        self.cal.schedule_last(at, ev);
    }

    /// Worker `w` of rank `r`, whose pop found nothing, waits for a wake; unless a node it
    /// drives had a broadcast since its progress call began: its wait returns at once
    /// (`starpu_pthread_wait_reset` at the start of each loop) and it polls again.
    fn found_nothing(&mut self, r: usize, w: WorkerId) {
        let rank = &self.ranks[r];
        let progress_s = rank.workers.progress_s(w);
        // A broadcast at the date its call began came before it (it is what woke it); dates
        // tie to the picosecond.
        let began_s = self.now - progress_s + 1e-13;
        let (own, ram) = waited_on(rank.workers.worker(w), rank.data.memory().ram());
        let heard_s = |node: MemNodeId| rank.broadcast_s[node.index()];
        let last_s = ram.map_or(heard_s(own), |ram| heard_s(own).max(heard_s(ram)));
        let signalled = self.config.drivers == Drivers::StarPu
            && !rank.workers.keeps_on_nothing(w)
            && last_s > began_s;
        if signalled {
            self.poll_again(r, w, self.now + progress_s);
        } else {
            self.ranks[r].workers.found_nothing(w);
        }
    }

    /// Where buffer `access` of task `t` is needed: the rank and memory node of the worker
    /// holding it, or for a message the sender's memory node it leaves from.
    fn buffer_place(&self, t: TaskId, access: u32) -> (usize, MemNodeId) {
        if let Some(place) = self.message_source(t) {
            debug_assert_eq!(access, 0);
            return place;
        }
        let r = self.rank_of(t);
        let w = self.worker_of(t);
        (r, self.ranks[r].workers.worker(w).memory)
    }

    /// Buffer `access` of popped task `t` is allocated where it is needed.
    fn buffer_allocated(&mut self, t: TaskId, access: u32) {
        let (r, node) = self.buffer_place(t, access);
        self.mark(r);
        let a = self.graph.accesses(t)[access as usize];
        let priority = self.request_priority(t);
        let ready = self.ranks[r].data.buffer_allocated(
            t,
            a.handle,
            a.mode.reads(),
            node,
            priority,
            self.now,
            &mut self.fx,
        );
        self.apply(r);
        if ready {
            self.buffer_ready(t);
        }
    }

    fn buffer_ready(&mut self, t: TaskId) {
        let taken = self.taken.get_mut(&t.0).expect("a taken task");
        taken.buffers_left -= 1;
        let (w, left) = (WorkerId(taken.worker), taken.buffers_left);
        if self.graph.task(t).is_message() {
            if left == 0 {
                self.taken.remove(&t.0);
                self.message_data_ready(t);
            }
            return;
        }
        let r = self.rank_of(t);
        self.mark(r);
        if left == 0 && !self.gpu_sync(r, t, w) {
            self.ranks[r].workers.set_stuck(w, false);
        }
        match left {
            0 => self.try_start(r, w),
            // Only the submission is left: the inputs are all there, the driver queues it.
            1 => {
                let kernel_queue_s = self.kernel_queue_s(r, w, t);
                if kernel_queue_s > 0.0 {
                    self.cal
                        .schedule(self.now + kernel_queue_s, Event::KernelQueued(t));
                }
            }
            _ => {}
        }
    }

    /// A transfer brought one of task `t`'s inputs. A GPU driver sees the last one arrive in
    /// a pass over its node's requests (`_starpu_cuda_driver_run_once`: the progress call
    /// tests the pending requests, submits what its lists allow, and only the next iteration
    /// starts the task), so the task goes on once that pass is over.
    fn input_arrived(&mut self, t: TaskId) {
        if let Some((sr, node)) = self.seeing
            && !self.graph.task(t).is_message()
        {
            let r = self.rank_of(t);
            let w = self.worker_of(t);
            let worker = self.ranks[r].workers.worker(w);
            let queued = u32::from(self.kernel_queue_s(r, w, t) > 0.0);
            if (sr, node) == (r, worker.memory)
                && worker.kind == WorkerKind::Gpu
                && self.buffers_left(t) == 1 + queued
            {
                self.ranks[r].to_see.push((node, t));
                return;
            }
        }
        self.buffer_ready(t);
    }

    /// Node `node`'s driver made a pass: the tasks whose last input it saw go on when its
    /// submissions are over.
    fn seen_in_pass(&mut self, r: usize, node: MemNodeId) {
        if self.ranks[r].to_see.is_empty() {
            return;
        }
        let at = self.ranks[r].data.thread_free_s(node).max(self.now);
        let mut i = 0;
        while i < self.ranks[r].to_see.len() {
            let (n, t) = self.ranks[r].to_see[i];
            if n == node {
                self.ranks[r].to_see.swap_remove(i);
                self.cal.schedule(at, Event::InputSeen(t));
            } else {
                i += 1;
            }
        }
    }

    /// Serve the allocation requests waiting on rank `r`'s `node`, in order, while room can
    /// be made.
    fn retry_allocations(&mut self, r: usize, node: MemNodeId) {
        while let Some((t, i)) =
            self.ranks[r]
                .data
                .next_allocation(self.graph, node, self.now, &mut self.fx)
        {
            self.apply(r);
            self.buffer_allocated(t, i);
        }
        self.apply(r);
    }

    /// The priority of the data requests made for `task`: its priority as its rank's scheduler
    /// sees it (StarPU's requests carry `task->priority`, which is 0 under policies that keep
    /// the default bounds). A message's requests take the priority it was inserted with.
    fn request_priority(&self, task: TaskId) -> i32 {
        let t = self.graph.task(task);
        if t.is_message() {
            return t.priority;
        }
        let rank = &self.ranks[t.node.index()];
        let view = view!(self, rank);
        rank.sched.priority(task, &view)
    }

    /// What queueing task `t` to worker `w`'s device costs: `kernel_queue` for an
    /// asynchronous GPU task, nothing on a CPU core or for a synchronous GPU task (both run
    /// on the worker's own thread, `_starpu_simgrid_submit_job` without a `finished` flag).
    fn kernel_queue_s(&self, r: usize, w: WorkerId, t: TaskId) -> f64 {
        match self.ranks[r].workers.worker(w).kind {
            WorkerKind::Gpu if !self.gpu_sync(r, t, w) => self.machine.runtime().kernel_queue_s,
            _ => 0.0,
        }
    }

    /// Whether `t` runs synchronously on GPU worker `w`: its codelet lacks
    /// `STARPU_CUDA_ASYNC` (and `run.gpu_sync` honours that). The driver then pops nothing
    /// while it holds `t` (`pipeline_stuck`) and handles no data request while `t` runs.
    fn gpu_sync(&self, r: usize, t: TaskId, w: WorkerId) -> bool {
        self.config.gpu_sync
            && self.ranks[r].workers.worker(w).kind == WorkerKind::Gpu
            && self
                .graph
                .codelet_gpu_synchronous(self.graph.task(t).codelet)
    }

    fn try_start(&mut self, r: usize, w: WorkerId) {
        let Some(t) = self.ranks[r].workers.next_to_start(w) else {
            return;
        };
        if self.buffers_left(t) > 0 {
            return;
        }
        let rank = &self.ranks[r];
        let worker = rank.workers.worker(w);
        let mean = self
            .runnable
            .mean_s(self.graph, t, rank.cols[w.index()])
            .expect("checked at pop");
        let dur = if self.graph.fixes_duration(t) {
            mean
        } else {
            self.kernels
                .draw_s(self.graph, t, worker, mean, &mut self.rng)
                .max(0.0)
        };
        let node = worker.memory;
        if self.gpu_sync(r, t, w) {
            // The driver thread runs the kernel itself: it handles no request meanwhile.
            self.ranks[r].data.set_blocked(node, true);
        }
        let state = self.ranks[r].workers.start(w, t, self.now);
        self.worker_state(r, w, state);
        let global = self.global_worker(r, w);
        self.cal.schedule(self.now + dur, Event::TaskEnd(global));
        let mut versions = std::mem::take(&mut self.scratch_versions);
        versions.clear();
        let memory = self.ranks[r].data.memory();
        for a in self.graph.accesses(t) {
            if a.mode.reads() {
                versions.push((
                    a.handle,
                    memory.replica_version(a.handle, node),
                    memory.version(a.handle),
                ));
            }
        }
        let task = self.graph.task(t);
        self.note(&SimEvent::TaskStart {
            task: t,
            worker: global,
            duration_s: dur,
            reads: &versions,
            codelet: task.codelet,
            codelet_name: self.graph.codelet_name(task.codelet),
            flops: task.flops(),
            size_bytes: task.model_size_bytes(),
            priority: task.priority,
        });
        self.scratch_versions = versions;
        let rank = &mut self.ranks[r];
        let view = view!(self, rank);
        rank.sched.task_started(t, w, &view);
    }

    fn task_end(&mut self, r: usize, w: WorkerId) {
        self.mark(r);
        let (t, _, state) = self.ranks[r].workers.end(w, self.now);
        self.taken.remove(&t.0);
        self.worker_state(r, w, state);
        let node = self.ranks[r].workers.worker(w).memory;
        if self.gpu_sync(r, t, w) {
            self.ranks[r].workers.set_stuck(w, false);
            self.ranks[r].data.set_blocked(node, false);
            // The driver is back in its loop: it sees the transfers that completed meanwhile.
            for id in self.take_unseen(r, node) {
                self.transfer_complete(r, id);
            }
            self.ranks[r].data.start_transfers(self.now, &mut self.fx);
            self.apply(r);
        }
        self.ranks[r].data.task_ended(self.graph, t, node);
        self.ranks[r].data.tidy(node, self.now, &mut self.fx);
        self.apply(r);
        self.tasks_done += 1;
        self.last_task_end = self.now;
        let (worker, mem) = (self.global_worker(r, w), self.global_mem(r, node));
        self.note(&SimEvent::TaskEnd {
            task: t,
            worker,
            node: mem,
        });
        let rank = &mut self.ranks[r];
        let view = view!(self, rank);
        rank.sched.task_ended(t, w, &view);
        rank.releasing = Some(w);
        // A GPU whose next kernel ended while its thread still pushes what the previous one
        // released: its pushes follow those.
        let pushing = !rank.to_push[w.index()].is_empty();
        self.release_successors(t, Some((r, w)));
        // A "will not be used" hint is StarPU's acquire of the handle, registered after the
        // tasks submitted before it: it runs once the writer's successors have been pushed.
        if let Some(hs) = self.wont_use_after.remove(&t.0) {
            for PendingHint {
                handle: h,
                after,
                submitted,
            } in hs
            {
                // A hint the submitting thread has not reached is ready when it does: the
                // thread pushes it then.
                if !submitted {
                    self.hints_at_submission.entry(after.0).or_default().push(h);
                    continue;
                }
                // Its acquire's two tasks are pushed by the releasing worker, after the
                // successors; the hint acts between them.
                for item in [ToPush::Hint(h), ToPush::HintRelease] {
                    if self.pushes_as_events(r) {
                        self.ranks[r].to_push[w.index()].push_back(item);
                    } else {
                        self.push_item(r, w, item, self.machine.runtime().push_s);
                    }
                }
            }
        }
        if !self.ranks[r].to_push[w.index()].is_empty() {
            // Its thread pushes them one at a time, each after the push cost; it pops after
            // the last one.
            let rank = &mut self.ranks[r];
            rank.releasing = None;
            rank.workers.set_waking(w);
            if !pushing {
                self.schedule_push(r, w, self.now);
            }
        }
        self.retry_allocations(r, node);
        self.try_start(r, w);
    }

    /// Task `t` ended (released by worker `by` of its rank, if a worker ran it): its
    /// successors whose predecessors have all ended are pushed to their rank's scheduler, or
    /// for messages move on ([`messages`]).
    fn release_successors(&mut self, t: TaskId, by: Option<(usize, WorkerId)>) {
        for &s in self.graph.successors(t) {
            let p = &mut self.pending[s.index()];
            if p.is_message() {
                self.message_pred_done(s, t);
                continue;
            }
            if p.pred_done() == 0 && p.submitted() {
                let released_by = by.filter(|&(r, _)| r == self.rank_of(s));
                match released_by {
                    Some((r, w)) if self.graph.task(s).is_compute() && self.pushes_as_events(r) => {
                        self.ranks[r].to_push[w.index()].push_back(ToPush::Task(s));
                    }
                    _ => self.ready(s, released_by.map(|(_, w)| w)),
                }
            }
        }
    }

    /// Whether the workers of rank `r` push the tasks they release one event at a time, each
    /// decided at the date its thread makes it: StarPU's thread sleeps the push cost before
    /// each push and may wait for the header lock of a handle it prefetches, while the
    /// drivers its earlier pushes woke make their passes. Under eager, whose woken workers
    /// pop at the event, a task's end pushes them all at once.
    fn pushes_as_events(&self, r: usize) -> bool {
        self.machine.runtime().push_s > 0.0 && self.ranks[r].sched.wakes() != Wakes::Eager
    }

    /// Worker `w` of rank `r` makes the next push of the tasks its task's end released; after
    /// the last one it pops.
    fn push_next(&mut self, r: usize, w: WorkerId) {
        let Some(next) = self.ranks[r].to_push[w.index()].pop_front() else {
            return;
        };
        self.mark(r);
        // The push cost was paid before the event.
        self.push_item(r, w, next, 0.0);
        let rank = &mut self.ranks[r];
        if rank.to_push[w.index()].is_empty() {
            rank.releasing = Some(w);
        } else {
            let after_s = rank.pushes_done_s(self.now);
            self.schedule_push(r, w, after_s);
        }
    }

    /// Worker `w` of rank `r` pushes `item`, paying `cost_s` first.
    fn push_item(&mut self, r: usize, w: WorkerId, item: ToPush, cost_s: f64) {
        match item {
            ToPush::Task(t) => self.push(t, Some(w), cost_s),
            ToPush::Hint(h) => {
                self.ranks[r].note_push(PushWake::Nobody, self.now, cost_s, 0.0);
                self.wont_use(h);
            }
            ToPush::HintRelease => {
                self.ranks[r].note_push(PushWake::Nobody, self.now, cost_s, 0.0);
            }
        }
    }

    /// Worker `w` of rank `r`, free of its last push at `after_s`, makes its next one after
    /// the push cost; its driver passes over its requests only after its pushes.
    fn schedule_push(&mut self, r: usize, w: WorkerId, after_s: f64) {
        let at = after_s + self.machine.runtime().push_s;
        let rank = &mut self.ranks[r];
        let node = rank.workers.worker(w).memory;
        rank.data.busy_until(node, at);
        let ev = Event::Push {
            rank: r as u32,
            worker: w.0,
        };
        // Under ws, StarPU 1.4's traces show a push made at the date its earlier push's
        // thieves pop going first: they see the task it queues.
        if rank.sched.wakes() == Wakes::All {
            self.cal.schedule_first(at, ev);
        } else {
            self.cal.schedule(at, ev);
        }
    }

    /// The "will not be used" hint on handle `h` takes effect.
    fn wont_use(&mut self, h: HandleId) {
        let hr = self.graph.handle(h).node.index();
        self.ranks[hr].data.wont_use(h, self.now, &mut self.fx);
        self.apply(hr);
    }

    /// Rank `r`'s submitting thread submits the hints that follow its last task, if any, or
    /// its next task: pushed at once if its predecessors are done (StarPU's `_starpu_submit_job`
    /// pushes a ready task, paying the push cost, before the submission's own cost), the next
    /// submission after both costs.
    fn submit_next(&mut self, r: usize) {
        if let Some(p) = self.to_submit[r].hints_for.take() {
            let cost = self.submit_hints(p);
            if cost > 0.0 {
                self.cal
                    .schedule(self.now + cost, Event::Submit { rank: r as u32 });
                return;
            }
        }
        let sub = &self.to_submit[r];
        let Some(&t) = sub.order.get(sub.next) else {
            return;
        };
        // `_starpu_submit_job` first counts the task as a user of each of its handles, taking
        // their header locks in turn: it waits while a driver holds one through the submission
        // of a copy (its queueing sleep).
        if !sub.locks_taken && self.graph.task(t).is_compute() {
            let got_s = self.ranks[r]
                .data
                .headers_free_s(self.graph.accesses(t), self.now);
            if got_s > self.now {
                self.to_submit[r].locks_taken = true;
                self.cal.schedule(got_s, Event::Submit { rank: r as u32 });
                return;
            }
        }
        let sub = &mut self.to_submit[r];
        sub.locks_taken = false;
        sub.next += 1;
        self.pending[t.index()].submit();
        let rt = self.machine.runtime();
        let mut cost = rt.submit_s;
        if self.pending[t.index()].preds_left() == 0 {
            cost += rt.push_s;
            self.ready(t, None);
            // The submitting thread pushed it: it waited with the push for the header locks
            // of the handles it prefetched.
            if self.graph.task(t).is_compute() {
                let done_s = self.ranks[r].pushes_done_s(self.now);
                cost += (done_s - (self.now + rt.push_s)).max(0.0);
            }
        }
        let sub = &mut self.to_submit[r];
        if self.hints_after.contains_key(&t.0) {
            sub.hints_for = Some(t);
        }
        if sub.next < sub.order.len() || sub.hints_for.is_some() {
            self.cal
                .schedule(self.now + cost, Event::Submit { rank: r as u32 });
        }
    }

    /// The submitting thread reaches the "will not be used" hints that follow task `p`: each
    /// is an acquire of its handle
    /// (`starpu_data_acquire_on_node_cb_sequential_consistency_quick`), whose first task it
    /// submits, the handle having a writer. While the writer runs the task waits for it (the
    /// writer's worker pushes it, `task_end`); once the writer has ended it is ready, and the
    /// thread pushes it too and applies the hint. Returns the time the thread spends.
    fn submit_hints(&mut self, p: TaskId) -> f64 {
        let rt = self.machine.runtime();
        let (submit_s, push_s) = (rt.submit_s, rt.push_s);
        let mut cost = 0.0;
        if let Some(writers) = self.hints_after.get(&p.0) {
            for w in writers {
                let Some(hs) = self.wont_use_after.get_mut(&w.0) else {
                    continue;
                };
                for h in hs.iter_mut().filter(|h| h.after == p && !h.submitted) {
                    h.submitted = true;
                    cost += submit_s;
                }
            }
        }
        if let Some(hs) = self.hints_at_submission.remove(&p.0) {
            cost += (submit_s + push_s) * hs.len() as f64;
            for h in hs {
                self.wont_use(h);
            }
        }
        cost
    }

    /// Task `t` (not a message) has no predecessor left: a computation goes to its rank's
    /// scheduler, a delay starts.
    fn ready(&mut self, t: TaskId, released_by: Option<WorkerId>) {
        if self.graph.task(t).is_compute() {
            self.push(t, released_by, self.machine.runtime().push_s);
        } else {
            let at = self.now + self.graph.delay_s(t);
            self.cal.schedule(at, Event::DelayDone(t));
        }
    }

    // --- Transfers --------------------------------------------------------------------------

    fn transfer_done(&mut self, r: usize, id: u32) {
        self.mark(r);
        let completion = self.ranks[r]
            .data
            .transfer_moved(id, self.now, &mut self.fx);
        self.apply(r);
        match completion {
            Completion::Now => self.transfer_complete(r, id),
            Completion::NextPass(node) | Completion::AfterTask(node) => {
                self.ranks[r].unseen.push((node, id));
                // The transfer's end wakes the drivers waiting on its handling node
                // (`_starpu_wake_all_blocked_workers_on_node` in `simgrid.c`).
                if self.config.drivers == Drivers::StarPu {
                    self.broadcast(r, node);
                }
            }
        }
    }

    /// Node `node`'s driver makes a pass: it first sees the transfers it handles that
    /// completed since its last one (`_starpu_handle_pending_node_data_requests`), in order.
    /// A task of its own GPU whose last input that brings goes on after the pass
    /// ([`Sim::seen_in_pass`]).
    fn see_completions(&mut self, r: usize, node: MemNodeId) {
        let seen = self.take_unseen(r, node);
        if seen.is_empty() {
            return;
        }
        self.seeing = Some((r, node));
        for id in seen {
            self.transfer_complete(r, id);
        }
        self.seeing = None;
    }

    /// Take off rank `r`'s list the transfers node `node`'s driver has not seen complete yet,
    /// in the order their bytes moved.
    fn take_unseen(&mut self, r: usize, node: MemNodeId) -> Vec<u32> {
        let unseen = &mut self.ranks[r].unseen;
        if !unseen.iter().any(|&(n, _)| n == node) {
            return Vec::new();
        }
        let mut seen = Vec::new();
        unseen.retain(|&(n, id)| {
            if n == node {
                seen.push(id);
            }
            n != node
        });
        seen
    }

    /// A pass of node `node`'s driver (rank `r`), made by `pass`: if it makes it now, the
    /// driver first sees the transfers it handles that completed since its last one; the
    /// tasks of its GPU whose last input that brought go on after the pass's submissions.
    fn driver_pass<T>(
        &mut self,
        r: usize,
        node: MemNodeId,
        pass: impl FnOnce(&mut DataManager, f64, &mut Vec<Effect>) -> T,
    ) -> T {
        if self.ranks[r].data.passes_at(node, self.now) {
            self.see_completions(r, node);
        }
        let out = pass(&mut self.ranks[r].data, self.now, &mut self.fx);
        self.apply(r);
        if self.ranks[r].data.passed_at(node, self.now) {
            self.seen_in_pass(r, node);
        }
        out
    }

    /// The handling node's driver sees transfer `id` complete.
    fn transfer_complete(&mut self, r: usize, id: u32) {
        let (h, node, waiters) = self.ranks[r]
            .data
            .finish_transfer(id, self.now, &mut self.fx);
        self.apply(r);
        for w in waiters {
            match w {
                Waiter::Task(t) => self.input_arrived(t),
                Waiter::Forward(dst, kind, priority) => {
                    self.ranks[r].data.forward(
                        h,
                        node,
                        dst,
                        kind,
                        priority,
                        self.now,
                        &mut self.fx,
                    );
                    self.apply(r);
                }
            }
        }
        self.ranks[r].data.start_transfers(self.now, &mut self.fx);
        self.apply(r);
        for n in 0..self.ranks[r].data.nnodes() {
            self.retry_allocations(r, MemNodeId(n as u32));
        }
    }

    /// Report the links whose load changed, to an observer that wants them.
    fn report_link_loads(&mut self) {
        let Some(last) = self.link_loads.as_mut() else {
            return;
        };
        let changed = &mut self.scratch_loads;
        changed.clear();
        for (i, old) in last.iter_mut().enumerate() {
            let load = self.net.link_load_bytes_per_sec(LinkId(i as u32));
            if load != *old {
                *old = load;
                changed.push((i as u32, load));
            }
        }
        if !changed.is_empty() {
            self.obs.event(self.now, &SimEvent::LinkLoads { changed });
        }
    }

    // --- End of run -------------------------------------------------------------------------

    fn deadlock(&self) -> InputError {
        let mut why = String::new();
        for rank in &self.ranks {
            why.push_str(&rank.data.deadlock_diagnosis(self.machine, self.graph));
        }
        why.push_str(&self.messages.diagnosis(self.graph));
        InputError::new(format!(
            "no task can make progress at t = {} s: {} of {} tasks ran.{why} This is eviction \
             deadlock (StarPU issue #38): reduce the GPU pipeline depth, the tile size, or give \
             the device more memory.",
            self.now,
            self.tasks_done,
            self.graph.num_tasks(),
        ))
    }

    fn report(&mut self) -> RunReport {
        let mut times = Vec::new();
        let mut memory = Vec::new();
        for rank in &mut self.ranks {
            times.extend(rank.workers.finish(self.now));
        }
        // Memory use by node: the ranks of a node share its memory nodes.
        let per_node = self.machine.memory_nodes().len();
        memory.resize(
            self.layout.memories.len(),
            super::data::MemoryUse::default(),
        );
        for rank in &self.ranks {
            for (i, u) in rank.data.memory_use().into_iter().enumerate() {
                let m = &mut memory[rank.node as usize * per_node + i];
                m.peak_used_bytes = m.peak_used_bytes.max(u.peak_used_bytes);
                m.evictions += u.evictions;
            }
        }
        self.stats.report(&super::stats::RunEnd {
            name: self.cluster.map_or(self.machine.name(), |c| c.name()),
            graph: self.graph,
            sched: self.ranks[0].sched.name(),
            seed: self.config.seed,
            makespan_s: self.makespan,
            end_s: self.now,
            bounds: self.bounds,
            layout: &self.layout,
            times: &times,
            memory: &memory,
            net: &self.net,
        })
    }
}

/// A rank among `count`.
#[derive(Debug, Clone, Copy)]
struct RankOf {
    index: u32,
    count: u32,
}

/// An event of a rank's data manager (memory ids of the node machine, transfer ids of that
/// rank) with the global memory ids of the node whose first memory node is `base`, and
/// transfer ids unique among every rank's (interleaved: id × ranks + rank, so they stay
/// small, and unchanged on one rank).
fn globalize(event: SimEvent<'static>, base: u32, rank: RankOf) -> SimEvent<'static> {
    let g = |n: MemNodeId| MemNodeId(n.0 + base);
    let id = |i: u32| i * rank.count + rank.index;
    match event {
        SimEvent::TransferStart {
            handle,
            src,
            dst,
            bytes,
            kind,
            version,
            id: i,
        } => SimEvent::TransferStart {
            handle,
            src: g(src),
            dst: g(dst),
            bytes,
            kind,
            version,
            id: id(i),
        },
        SimEvent::TransferEnd {
            handle,
            src,
            dst,
            bytes,
            kind,
            version,
            id: i,
        } => SimEvent::TransferEnd {
            handle,
            src: g(src),
            dst: g(dst),
            bytes,
            kind,
            version,
            id: id(i),
        },
        SimEvent::Allocate {
            node,
            handle,
            used_bytes,
            malloc,
        } => SimEvent::Allocate {
            node: g(node),
            handle,
            used_bytes,
            malloc,
        },
        SimEvent::Evict {
            node,
            handle,
            bytes,
        } => SimEvent::Evict {
            node: g(node),
            handle,
            bytes,
        },
        other => other,
    }
}

/// Check that rank `rank`'s handles homed on a GPU name one of its GPUs (`gpus`, memory nodes
/// of its GPU workers in order) and fit there.
fn check_homes(
    graph: &TaskGraph,
    machine: &Machine,
    rank: u32,
    owned: &[HandleId],
    gpus: &[MemNodeId],
) -> Result<(), InputError> {
    let mut need = vec![0u64; gpus.len()];
    for &h in owned {
        if let hetsim_taskgraph::Home::Gpu(g) = graph.handle(h).home {
            let slot = need.get_mut(g as usize).ok_or_else(|| {
                InputError::new(format!(
                    "handle {} starts on GPU {g} of rank {rank}, which has {} GPU worker(s)",
                    h.0,
                    gpus.len()
                ))
                .at_field("workload")
            })?;
            *slot += graph.handle(h).size_bytes;
        }
    }
    for (g, (&n, &bytes)) in gpus.iter().zip(&need).enumerate() {
        let cap = machine.memory_node(n).map_or(0, |m| m.capacity_bytes);
        if bytes > cap {
            return Err(InputError::new(format!(
                "the data that starts on GPU {g} of rank {rank} ({bytes} bytes) does not fit in \
                 its memory ({cap} bytes)"
            ))
            .at_field("workload"));
        }
    }
    Ok(())
}

/// Per rank, the handles it holds in slot order, and every handle's slot in its rank.
fn rank_handles(graph: &TaskGraph, ranks: usize) -> (Vec<Vec<HandleId>>, std::rc::Rc<[u32]>) {
    let mut owned = vec![Vec::new(); ranks];
    let mut slots = Vec::with_capacity(graph.handles().len());
    for (i, h) in graph.handles().iter().enumerate() {
        let list = &mut owned[h.node.index().min(ranks - 1)];
        slots.push(list.len() as u32);
        list.push(HandleId(i as u32));
    }
    (owned, slots.into())
}

/// The memory nodes whose broadcasts `worker`'s driver waits on: its own, and for a GPU's
/// driver main memory (`ram`) too.
fn waited_on(worker: &Worker, ram: MemNodeId) -> (MemNodeId, Option<MemNodeId>) {
    (
        worker.memory,
        (worker.kind == WorkerKind::Gpu).then_some(ram),
    )
}

/// How many buffers a task's worker requests: one per handle, however often the task accesses
/// it (StarPU orders a task's buffers by handle and skips repeats).
fn distinct_handles(accesses: &[Access]) -> usize {
    accesses
        .iter()
        .enumerate()
        .filter(|(i, a)| accesses[..*i].iter().all(|b| b.handle != a.handle))
        .count()
}

/// Hint handles by the writer whose end makes them hold; hint writers by the task the hints
/// are submitted right after.
type HintMaps = (
    FxHashMap<u32, Vec<PendingHint>>,
    FxHashMap<u32, Vec<TaskId>>,
);

/// The "will not be used" hints of `graph` that have a writer before them (the last one,
/// [`TaskGraph::wont_use_triggers`], computed once), both ways ([`HintMaps`]). Hints with no
/// writer before them concern data that is only in main memory: nothing to do.
fn hint_maps(graph: &TaskGraph) -> HintMaps {
    let (mut by_trigger, mut after): HintMaps = Default::default();
    for (hint, trig) in graph.wont_use_hints().iter().zip(graph.wont_use_triggers()) {
        if let Some(t) = trig {
            by_trigger.entry(t.0).or_default().push(PendingHint {
                handle: hint.handle,
                after: hint.after,
                submitted: false,
            });
            after.entry(hint.after.0).or_default().push(t);
        }
    }
    (by_trigger, after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_taskgraph::{NodeId, Place, TaskGraphBuilder};

    #[test]
    fn messages_are_numbered_in_task_order_and_other_tasks_count_their_predecessors() {
        let mut b = TaskGraphBuilder::new();
        let c = b.codelet("k").unwrap();
        let host = |n| (NodeId(n), Place::Host);
        let t0 = b.submit_delay(c, NodeId(0), 1.0, &[]).unwrap();
        let m0 = b
            .submit_payload(c, host(0), host(1), 8.0, 0, &[t0])
            .unwrap();
        let t1 = b.submit_delay(c, NodeId(1), 1.0, &[t0, m0]).unwrap();
        let m1 = b
            .submit_payload(c, host(1), host(0), 8.0, 0, &[t1, m0])
            .unwrap();
        let g = b.build().unwrap();
        let p = Pending::for_graph(&g);
        let ids = [t0, m0, t1, m1];
        let slots: Vec<Option<u32>> = ids.iter().map(|t| p[t.index()].message_slot()).collect();
        assert_eq!(slots, [None, Some(0), None, Some(1)]);
        assert_eq!(
            (p[t0.index()].preds_left(), p[t1.index()].preds_left()),
            (0, 2)
        );
        // Submission leaves the slot as it is.
        let mut q = p[m1.index()];
        q.submit();
        assert!(q.submitted() && q.message_slot() == Some(1));
    }
}
