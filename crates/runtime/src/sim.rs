//! The simulation loop: events from the calendar and the fluid network drive tasks, data and
//! workers; the scheduler is consulted through a read-only view.

use std::collections::VecDeque;

use rand::SeedableRng;
use rustc_hash::FxHashMap;

use super::memory::{Alloc, Memory};
use super::observe::{Observer, SimEvent, WorkerStatus};
use super::report::{CodeletReport, LinkReport, MemoryReport, RunReport, WorkerReport};
use super::transfer::{Estimates, Path, Platform, Runners, Transfer, TransferKind};
use super::{KernelTimes, RunConfig, SimRng, View, Worker, WorkerId, WorkerKind, WorkerLoad};
use crate::sched::{Decision, Scheduler};
use hetsim_core::engine::Calendar;
use hetsim_core::error::{Error, InputError};
use hetsim_core::fluid::{FlowId, FlowSpec};
use hetsim_models::NoModel;
use hetsim_platform::machine::{Machine, MemKind, MemNodeId};
use hetsim_taskgraph::{HandleId, TaskGraph, TaskId};

/// The scheduler's view, borrowing only the fields it reads so the scheduler itself can be
/// borrowed mutably beside it.
macro_rules! view {
    ($s:expr) => {
        View {
            now_s: $s.now,
            graph: $s.graph,
            workers: &$s.workers,
            loads: &$s.loads,
            runnable: &$s.runnable,
            memory: &$s.memory,
            estimates: &$s.estimates,
            released_by: None,
        }
    };
}

/// Mean durations per (task, worker device), `NaN` where the worker cannot run the task.
#[derive(Debug)]
pub(crate) struct Runnable {
    means: Vec<f64>,
    ndev: usize,
    worker_dev: Vec<usize>,
}

impl Runnable {
    pub fn mean_s(&self, task: TaskId, worker: WorkerId) -> Option<f64> {
        let m = self.means[task.index() * self.ndev + self.worker_dev[worker.index()]];
        (!m.is_nan()).then_some(m)
    }

    /// The makespan bounds of the graph on `workers` from these means (`trace::stats`).
    fn bounds(&self, graph: &TaskGraph, workers: &[Worker]) -> crate::bounds::Bounds {
        let mut cpu = vec![f64::INFINITY; graph.num_tasks()];
        let mut gpu = vec![f64::INFINITY; graph.num_tasks()];
        let mut col_kind = vec![WorkerKind::Cpu; self.ndev];
        for (w, &col) in self.worker_dev.iter().enumerate() {
            col_kind[col] = workers[w].kind;
        }
        for t in 0..graph.num_tasks() {
            for (col, kind) in col_kind.iter().enumerate() {
                let m = self.means[t * self.ndev + col];
                if m.is_nan() {
                    continue;
                }
                let slot = match kind {
                    WorkerKind::Cpu => &mut cpu[t],
                    WorkerKind::Gpu => &mut gpu[t],
                };
                *slot = slot.min(m);
            }
        }
        crate::bounds::bounds_from_means(graph, &cpu, &gpu, workers)
    }
}

#[derive(Debug, Clone, Copy)]
enum Event {
    /// A worker's task ends.
    TaskEnd(WorkerId),
    /// A device allocation (cudaMalloc) for a task's buffer finished.
    AllocDone { task: TaskId, access: u32 },
    /// A device allocation for a prefetch finished.
    PrefetchAllocDone {
        handle: HandleId,
        node: MemNodeId,
        priority: i32,
    },
    /// A transfer paid its queueing cost and starts moving bytes.
    TransferGo(u32),
    /// A transfer on a model route ended.
    TransferDone(u32),
    /// A GPU task whose inputs are all there has been queued to its device (StarPU charges
    /// `kernel_queue` to the driver thread in `_starpu_simgrid_submit_job`).
    KernelQueued(TaskId),
}

/// Who waits for a replica to become valid.
#[derive(Debug, Clone, Copy)]
enum Waiter {
    /// One buffer of a popped task.
    Task(TaskId),
    /// A staged copy: once RAM is valid, continue to this node (kind and priority of the
    /// request).
    Forward(MemNodeId, TransferKind, i32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WState {
    Idle,
    Waiting,
    Busy,
}

#[derive(Debug)]
struct WorkerState {
    held: VecDeque<TaskId>,
    running: Option<TaskId>,
    state: WState,
    since_s: f64,
    busy_s: f64,
    waiting_s: f64,
    idle_s: f64,
    tasks: u64,
}

/// Simulated time of one datawizard progress call per memory node a driver handles
/// (`___starpu_datawizard_progress` sleeps 1 µs in SimGrid builds). A CPU driver handles RAM;
/// a GPU's handles its memory and RAM.
const PROGRESS_S_PER_NODE: f64 = 1e-6;

struct Sim<'a> {
    machine: &'a Machine,
    graph: &'a TaskGraph,
    kernels: &'a dyn KernelTimes,
    sched: &'a mut dyn Scheduler,
    obs: &'a mut dyn Observer,
    config: &'a RunConfig,
    rng: SimRng,
    now: f64,
    cal: Calendar<Event>,
    platform: Platform,
    estimates: Estimates,
    memory: Memory,
    runners: Runners,
    transfers: Vec<Option<Transfer>>,
    free_transfers: Vec<u32>,
    flow_owner: Vec<u32>,
    workers: Vec<Worker>,
    wstate: Vec<WorkerState>,
    started_at: Vec<f64>,
    loads: Vec<WorkerLoad>,
    runnable: Runnable,
    preds_left: Vec<u32>,
    buffers_left: Vec<u32>,
    task_worker: Vec<u32>,
    waiters: FxHashMap<usize, Vec<Waiter>>,
    alloc_queue: Vec<VecDeque<(TaskId, u32)>>,
    alloc_free_at: Vec<f64>,
    /// When the machine-wide device allocator is free.
    device_alloc_free_at: f64,
    writing_back: Vec<bool>,
    /// "Will not be used" hints by the task whose end makes them hold (`run.wont_use`).
    wont_use_after: FxHashMap<u32, Vec<HandleId>>,
    /// When the last task ended (the makespan, as `starpu_task_wait_for_all` returns then).
    last_task_end: f64,
    tasks_done: u64,
    makespan: f64,
    decisions: Vec<Decision>,
    scratch_ids: Vec<u32>,
    scratch_order: Vec<u32>,
    /// [`Sim::wake_workers`]'s pop dates.
    scratch_dated: Vec<(f64, u32)>,
    scratch_flows: Vec<FlowId>,
    scratch_versions: Vec<(HandleId, u32, u32)>,
    stats: Stats,
    codelet_stats: Vec<CodeletReport>,
    /// Last link loads reported to the observer, if it wants them.
    link_loads: Option<Vec<f64>>,
    /// Lower bounds on the makespan.
    bounds: crate::bounds::Bounds,
    scratch_loads: Vec<(u32, f64)>,
    /// Per node: buffers being allocated ([`Runners::start_ready`]).
    scratch_requesting: Vec<bool>,
    /// The worker whose task ended in the event being handled: it pops last
    /// ([`Sim::wake_workers`]).
    releasing: Option<WorkerId>,
    /// Tasks pushed since workers last popped.
    pushed_now: u32,
}

#[derive(Debug, Default)]
struct Stats {
    bytes: f64,
    transfers: u64,
    fetch_bytes: f64,
    prefetch_bytes: f64,
    writeback_bytes: f64,
    writebacks: u64,
    allocations: u64,
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
    let mut sim = Sim::new(machine, graph, kernels, sched, config, observer)?;
    sim.run()?;
    Ok(sim.report())
}

pub(crate) fn workers_of(machine: &Machine, config: &RunConfig) -> Result<Vec<Worker>, InputError> {
    let rt = machine.runtime();
    let ngpu_all = machine.gpus().len() as u32;
    let ngpu = config.ncuda.unwrap_or(ngpu_all);
    if ngpu > ngpu_all {
        return Err(InputError::new(format!(
            "{ngpu} GPUs asked for, but machine `{}` has {ngpu_all}",
            machine.name()
        ))
        .at_field("runtime.ncuda"));
    }
    let cores = machine.cpu_cores();
    let reserved = if rt.gpu_driver_cores { ngpu } else { 0 };
    let ncpu = match config.ncpu {
        Some(n) if n + reserved > cores => {
            return Err(InputError::new(format!(
                "{n} CPU workers asked for, but machine `{}` has {cores} cores{}",
                machine.name(),
                if reserved > 0 {
                    format!(" of which {reserved} drive GPUs")
                } else {
                    String::new()
                }
            ))
            .at_field("runtime.ncpu"));
        }
        Some(n) => n,
        None => cores.saturating_sub(reserved),
    };
    let mut workers = Vec::new();
    for g in machine.gpus().iter().take(ngpu as usize) {
        workers.push(Worker {
            id: WorkerId(workers.len() as u32),
            name: g.name.clone(),
            kind: WorkerKind::Gpu,
            device: g.name.clone(),
            memory: g.memory,
            pipeline_depth: rt.gpu_pipeline_depth.max(1),
        });
    }
    let mut core = 0;
    'groups: for group in machine.cpus() {
        for _ in 0..group.count {
            if core == ncpu {
                break 'groups;
            }
            workers.push(Worker {
                id: WorkerId(workers.len() as u32),
                name: format!("CPU{core}"),
                kind: WorkerKind::Cpu,
                device: "CPU".to_string(),
                memory: group.memory,
                pipeline_depth: 1,
            });
            core += 1;
        }
    }
    if workers.is_empty() {
        return Err(
            InputError::new("no workers: at least one CPU core or GPU is needed")
                .at_field("runtime.ncpu"),
        );
    }
    Ok(workers)
}

pub(crate) fn runnable_of(
    graph: &TaskGraph,
    kernels: &dyn KernelTimes,
    workers: &[Worker],
    machine: &Machine,
) -> Result<Runnable, InputError> {
    // One column per distinct (device, memory node): workers of one kind share predictions.
    let mut devs: Vec<usize> = Vec::new(); // representative worker per column
    let mut worker_dev = Vec::with_capacity(workers.len());
    for w in workers {
        let col = devs.iter().position(|&r| {
            workers[r].device == w.device
                && workers[r].memory == w.memory
                && workers[r].kind == w.kind
        });
        worker_dev.push(col.unwrap_or_else(|| {
            devs.push(w.id.index());
            devs.len() - 1
        }));
    }
    let ndev = devs.len();
    let mut means = vec![f64::NAN; graph.num_tasks() * ndev];
    for t in graph.task_ids() {
        let need: u64 = graph
            .accesses(t)
            .iter()
            .map(|a| graph.handle(a.handle).size_bytes)
            .sum();
        let mut modelled = false;
        let mut fits_somewhere = false;
        for (col, &r) in devs.iter().enumerate() {
            let w = &workers[r];
            let Some(m) = kernels.mean_s(graph, t, w) else {
                continue;
            };
            if !(m.is_finite() && m >= 0.0) {
                return Err(InputError::new(format!(
                    "kernel model gives {m} s for task {} ({}) on {}: expected a finite duration >= 0",
                    t.0,
                    graph.task_codelet_name(t),
                    w.name
                )));
            }
            modelled = true;
            let cap = machine
                .memory_node(w.memory)
                .map_or(0, |n| n.capacity_bytes);
            if need <= cap {
                fits_somewhere = true;
                means[t.index() * ndev + col] = m;
            }
        }
        if !modelled {
            let why: Vec<NoModel> = devs
                .iter()
                .filter_map(|&r| kernels.explain(graph, t, &workers[r]))
                .collect();
            return Err(InputError::new(format!(
                "unknown kernel: no worker of machine `{}` has a model for codelet `{}` (task {}){}; \
                 add a model for it to the machine file",
                machine.name(),
                graph.task_codelet_name(t),
                t.0,
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {}", NoModel::summarize(&why))
                }
            ))
            .at_field("codelets"));
        }
        if !fits_somewhere {
            return Err(InputError::new(format!(
                "task {} ({}) needs {need} bytes of data at once, more than the memory of any \
                 worker that can run it",
                t.0,
                graph.task_codelet_name(t)
            ))
            .at_field("workload"));
        }
    }
    Ok(Runnable {
        means,
        ndev,
        worker_dev,
    })
}

impl<'a> Sim<'a> {
    fn new(
        machine: &'a Machine,
        graph: &'a TaskGraph,
        kernels: &'a dyn KernelTimes,
        sched: &'a mut dyn Scheduler,
        config: &'a RunConfig,
        obs: &'a mut dyn Observer,
    ) -> Result<Self, Error> {
        let workers = workers_of(machine, config)?;
        sched.prepare(machine, &workers);
        let runnable = runnable_of(graph, kernels, &workers, machine)?;
        let bounds = runnable.bounds(graph, &workers);
        let ram = machine
            .memory_nodes()
            .iter()
            .find(|m| m.kind == MemKind::Ram)
            .map(|m| m.id)
            .ok_or_else(|| InputError::new("the machine has no RAM memory node"))?;
        let kinds: Vec<MemKind> = machine.memory_nodes().iter().map(|m| m.kind).collect();
        let capacity: Vec<u64> = machine
            .memory_nodes()
            .iter()
            .map(|m| m.capacity_bytes)
            .collect();
        let memory = Memory::new(
            kinds.clone(),
            capacity,
            ram,
            graph,
            machine.runtime().suballocator,
        );
        if memory.used(ram) > memory.capacity(ram) {
            return Err(InputError::new(format!(
                "the workload's data ({} bytes) does not fit in the RAM of machine `{}` ({} bytes)",
                memory.used(ram),
                machine.name(),
                memory.capacity(ram)
            ))
            .at_field("workload")
            .into());
        }
        let gpus_used = workers.iter().filter(|w| w.kind == WorkerKind::Gpu).count();
        let nnodes = kinds.len();
        let wstate = workers
            .iter()
            .map(|_| WorkerState {
                held: VecDeque::new(),
                running: None,
                state: WState::Idle,
                since_s: 0.0,
                busy_s: 0.0,
                waiting_s: 0.0,
                idle_s: 0.0,
                tasks: 0,
            })
            .collect();
        let codelet_stats = graph
            .codelet_names()
            .iter()
            .map(|n| CodeletReport {
                name: n.clone(),
                cpu_tasks: 0,
                gpu_tasks: 0,
                cpu_s: 0.0,
                gpu_s: 0.0,
            })
            .collect();
        let link_loads = obs
            .wants_link_loads()
            .then(|| vec![0.0; machine.links().len() * 2]);
        Ok(Sim {
            link_loads,
            bounds,
            scratch_loads: Vec::new(),
            scratch_requesting: Vec::new(),
            releasing: None,
            pushed_now: 0,
            machine,
            graph,
            kernels,
            sched,
            obs,
            config,
            rng: SimRng::seed_from_u64(config.seed),
            now: 0.0,
            cal: Calendar::new(),
            platform: Platform::new(machine, config.sharing),
            estimates: Estimates::new(machine, ram, gpus_used),
            runners: Runners::new(&kinds, machine.runtime().pending_limits),
            memory,
            transfers: Vec::new(),
            free_transfers: Vec::new(),
            flow_owner: Vec::new(),
            loads: vec![WorkerLoad::default(); workers.len()],
            started_at: vec![0.0; workers.len()],
            wstate,
            workers,
            runnable,
            preds_left: graph
                .task_ids()
                .map(|t| graph.predecessor_count(t))
                .collect(),
            buffers_left: vec![0; graph.num_tasks()],
            task_worker: vec![u32::MAX; graph.num_tasks()],
            waiters: FxHashMap::default(),
            alloc_queue: vec![VecDeque::new(); nnodes],
            alloc_free_at: vec![0.0; nnodes],
            device_alloc_free_at: 0.0,
            writing_back: vec![false; graph.handles().len() * nnodes],
            wont_use_after: if config.wont_use {
                wont_use_by_trigger(graph)
            } else {
                FxHashMap::default()
            },
            last_task_end: 0.0,
            tasks_done: 0,
            makespan: 0.0,
            decisions: Vec::new(),
            scratch_ids: Vec::new(),
            scratch_order: Vec::new(),
            scratch_dated: Vec::new(),
            scratch_flows: Vec::new(),
            scratch_versions: Vec::new(),
            stats: Stats::default(),
            codelet_stats,
        })
    }

    fn run(&mut self) -> Result<(), Error> {
        self.obs.event(
            0.0,
            &SimEvent::RunStart {
                machine: self.machine,
                graph: self.graph,
                workers: &self.workers,
                links: &self.platform.link_names,
                sched: self.sched.name(),
                config: self.config,
                bounds: self.bounds,
            },
        );
        let roots: Vec<TaskId> = self.graph.roots().collect();
        for t in roots {
            self.push(t, None);
        }
        self.apply_decisions();
        self.wake_workers();
        self.event_loop();
        if self.tasks_done < self.graph.num_tasks() as u64 {
            return Err(self.deadlock().into());
        }
        // The run ends when the last task does: idle write-backs still moving are not part of
        // it (StarPU's example stops its clock after `starpu_task_wait_for_all`).
        self.makespan = self.last_task_end;
        // Final write-back: leave every handle valid in RAM, as unregistering does in StarPU.
        let ram = self.memory.ram();
        let pending: Vec<HandleId> = self.memory.not_in_ram().collect();
        for h in pending {
            self.stats.writebacks += 1;
            let src = self.memory.best_source(h, ram, &self.estimates);
            self.start_copy(h, src, ram, TransferKind::WriteBack, 0);
        }
        self.event_loop();
        for w in 0..self.workers.len() {
            self.account(WorkerId(w as u32));
        }
        self.obs.event(
            self.now,
            &SimEvent::RunEnd {
                makespan_s: self.makespan,
            },
        );
        Ok(())
    }

    fn event_loop(&mut self) {
        let mut finished = std::mem::take(&mut self.scratch_flows);
        loop {
            let tc = self.cal.peek_time();
            let tn = self.platform.net.next_event_time();
            match (tc, tn) {
                (None, None) => break,
                (Some(c), n) if n.is_none_or(|n| c <= n) => {
                    let (t, ev) = self.cal.pop().expect("peeked");
                    self.now = t;
                    self.handle(ev);
                }
                (_, Some(t)) => {
                    self.now = t;
                    self.platform.net.advance(t, &mut finished);
                    self.report_link_loads();
                    for f in finished.drain(..) {
                        let id = self.flow_owner[f.0 as usize];
                        self.transfer_done(id);
                    }
                }
                (Some(_), None) => unreachable!(),
            }
            self.apply_decisions();
            self.wake_workers();
        }
        self.scratch_flows = finished;
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::TaskEnd(w) => self.task_end(w),
            Event::AllocDone { task, access } => self.buffer_allocated(task, access),
            Event::PrefetchAllocDone {
                handle,
                node,
                priority,
            } => {
                self.memory.unpin(handle, node);
                if !self.memory.is_valid(handle, node) && !self.memory.is_loading(handle, node) {
                    let src = self.memory.best_source(handle, node, &self.estimates);
                    self.start_copy(handle, src, node, TransferKind::Prefetch, priority);
                }
            }
            Event::TransferGo(id) => self.transfer_go(id),
            Event::TransferDone(id) => self.transfer_done(id),
            Event::KernelQueued(t) => self.buffer_ready(t),
        }
        if matches!(
            ev,
            Event::AllocDone { .. } | Event::PrefetchAllocDone { .. }
        ) {
            // An allocation ended: an idle transfer of that node may start now.
            self.start_transfers();
        }
    }

    // --- Tasks and workers ------------------------------------------------------------------

    fn push(&mut self, task: TaskId, released_by: Option<WorkerId>) {
        let mut decisions = std::mem::take(&mut self.decisions);
        let view = View {
            released_by,
            ..view!(self)
        };
        self.sched.push(task, &view, &mut decisions);
        self.decisions = decisions;
        self.pushed_now += 1;
    }

    /// Carry out the scheduler's decisions in the order it made them.
    fn apply_decisions(&mut self) {
        let mut decisions = std::mem::take(&mut self.decisions);
        for d in decisions.drain(..) {
            match d {
                Decision::Prefetch { task, worker } if self.config.prefetch => {
                    self.prefetch(task, worker)
                }
                Decision::Prefetch { .. } => {}
            }
        }
        self.decisions = decisions;
    }

    /// Let workers with room pop, in the order StarPU's simulated driver threads reach their
    /// pop (`starpu-reference.md` §1a eager and the overheads table; `driver_cuda.c`,
    /// `driver_cpu.c`, `datawizard.c`):
    ///
    /// - the thread that ended a task pushes the `k` successors it released one after the
    ///   other, each push costing it `push_cost` (the machine's `[runtime]`); under eager,
    ///   push `j` (from 0) wakes the first sleeping worker by id (one holding no task; a GPU
    ///   with a kernel in flight is not asleep); under a policy that wakes every worker at
    ///   each push (`Scheduler::wakes_all`: ws, lws) all sleeping workers wake at push 0;
    /// - a woken worker pops after one datawizard progress call, which sleeps 1 µs per memory
    ///   node its driver handles (1 µs for a CPU core, 2 µs for a GPU's driver, which also
    ///   handles RAM): at `j·push_cost + 1 µs` or `+ 2 µs`;
    /// - the releasing worker pops after its pushes and its own progress call, at
    ///   `k·push_cost + 1 µs` or `+ 2 µs`.
    ///
    /// Each of these takes one task in order of those dates (ties: the earlier push first, the
    /// releaser last); then every worker with room fills it, in the same order, then the
    /// others by id (they pop when their driver loop comes round). With StarPU 1.4's 1 µs
    /// per push and GPUs numbered first this is id order, the releaser last; with no push
    /// cost (StarPU 1.3) the woken CPUs pop before the woken GPUs.
    ///
    /// With per-worker queues (dmda family) each worker pops only its own queue, so the order
    /// matters only to central queues (eager, prio) and to which thief steals first (ws, lws).
    fn wake_workers(&mut self) {
        let mut order = std::mem::take(&mut self.scratch_order);
        order.clear();
        let releasing = self.releasing.take();
        let pushes = std::mem::take(&mut self.pushed_now) as usize;
        let n = self.workers.len() as u32;
        let others = (0..n).filter(|&w| Some(WorkerId(w)) != releasing);
        // Eager wakes one sleeping worker per push; ws wakes them all at the first.
        let wakes_all = self.sched.wakes_all();
        let wake = match (wakes_all, pushes) {
            (_, 0) => 0,
            (true, _) => usize::MAX,
            (false, k) => k,
        };
        // Each woken worker, then the releaser, with the date it reaches its pop.
        let push_s = self.machine.runtime().push_s;
        let pop_at_s = |pushes_before: usize, w: u32| {
            let progress_s = match self.workers[w as usize].kind {
                WorkerKind::Cpu => PROGRESS_S_PER_NODE,
                WorkerKind::Gpu => 2.0 * PROGRESS_S_PER_NODE,
            };
            pushes_before as f64 * push_s + progress_s
        };
        let mut dated = std::mem::take(&mut self.scratch_dated);
        dated.clear();
        let asleep = others.clone().filter(|&w| self.is_asleep(WorkerId(w)));
        for (j, w) in asleep.take(wake).enumerate() {
            dated.push((pop_at_s(if wakes_all { 0 } else { j }, w), w));
        }
        let woken = dated.len();
        dated.extend(releasing.map(|w| (pop_at_s(pushes, w.0), w.0)));
        // Stable: equal dates keep push order, the releaser last.
        dated.sort_by(|a, b| a.0.total_cmp(&b.0));
        order.extend(dated.iter().map(|&(_, w)| w));
        self.scratch_dated = dated;
        let nwoken = order.len();
        let mut skipped = 0;
        for w in others {
            if skipped < woken && self.is_asleep(WorkerId(w)) {
                skipped += 1;
            } else {
                order.push(w);
            }
        }
        // Pass 1: each woken worker takes one task; pass 2: everyone fills its room.
        let passes = [(nwoken, 1), (order.len(), u32::MAX)];
        for (upto, most) in passes {
            for &w in &order[..upto] {
                let w = WorkerId(w);
                let mut popped = 0;
                while popped < most && self.has_room(w) {
                    popped += 1;
                    let view = view!(self);
                    let Some(t) = self.sched.pop(w, &view) else {
                        break;
                    };
                    assert!(
                        self.runnable.mean_s(t, w).is_some(),
                        "scheduler `{}` gave task {} to worker {} that cannot run it",
                        self.sched.name(),
                        t.0,
                        self.workers[w.index()].name
                    );
                    self.take(w, t);
                }
            }
        }
        order.clear();
        self.scratch_order = order;
    }

    /// Whether worker `w` holds no task: its driver thread sleeps, and a push may wake it
    /// (`starpu_wake_worker` wakes only a sleeping worker; a GPU with a kernel in flight is
    /// not one, it comes back when its driver loop does).
    fn is_asleep(&self, w: WorkerId) -> bool {
        self.wstate[w.index()].held.is_empty()
    }

    /// Whether worker `w` may pop: it holds fewer tasks than its pipeline depth, none of them
    /// is still fetching its inputs, and none is synchronous. StarPU's driver pops only when
    /// no task is transferring and the pipeline is not stuck behind a synchronous task
    /// (`_starpu_get_multi_worker_task` checks `task_transferring` and `pipeline_stuck`), so
    /// a GPU fetches the inputs of one popped task at a time.
    fn has_room(&self, w: WorkerId) -> bool {
        let held = &self.wstate[w.index()].held;
        (held.len() as u32) < self.workers[w.index()].pipeline_depth
            && held
                .iter()
                .all(|&t| self.buffers_left[t.index()] == 0 && !self.gpu_sync(t, w))
    }

    /// Worker `w` holds task `t`: pin and fetch its buffers.
    fn take(&mut self, w: WorkerId, t: TaskId) {
        let ws = &mut self.wstate[w.index()];
        ws.held.push_back(t);
        self.loads[w.index()].held = ws.held.len() as u32;
        self.task_worker[t.index()] = w.0;
        self.account(w);
        let node = self.workers[w.index()].memory;
        let accesses = self.graph.accesses(t);
        // A GPU task also waits for its submission to the device, counted as one more input.
        let kernel_queue_s = self.kernel_queue_s(w, t);
        let queued = u32::from(kernel_queue_s > 0.0);
        self.buffers_left[t.index()] = accesses.len() as u32 + queued;
        if accesses.is_empty() && queued > 0 {
            self.cal
                .schedule(self.now + kernel_queue_s, Event::KernelQueued(t));
        }
        for (i, a) in accesses.iter().enumerate() {
            self.memory.pin_for_task(a.handle, node);
            if self.memory.is_allocated(a.handle, node) {
                self.buffer_allocated(t, i as u32);
            } else {
                self.alloc_queue[node.index()].push_back((t, i as u32));
            }
        }
        self.retry_allocations(node);
        self.try_start(w);
    }

    fn buffer_allocated(&mut self, t: TaskId, access: u32) {
        let w = WorkerId(self.task_worker[t.index()]);
        let node = self.workers[w.index()].memory;
        let a = self.graph.accesses(t)[access as usize];
        if !a.mode.reads() || self.memory.is_valid(a.handle, node) {
            self.buffer_ready(t);
            return;
        }
        self.waiters
            .entry(self.replica_key(a.handle, node))
            .or_default()
            .push(Waiter::Task(t));
        if !self.memory.is_loading(a.handle, node) {
            let src = self.memory.best_source(a.handle, node, &self.estimates);
            let priority = self.request_priority(t);
            self.start_copy(a.handle, src, node, TransferKind::Fetch, priority);
        } else {
            self.promote_prefetch(a.handle, node);
        }
    }

    fn buffer_ready(&mut self, t: TaskId) {
        let w = WorkerId(self.task_worker[t.index()]);
        self.buffers_left[t.index()] -= 1;
        match self.buffers_left[t.index()] {
            0 => self.try_start(w),
            // Only the submission is left: the inputs are all there, the driver queues it.
            1 => {
                let kernel_queue_s = self.kernel_queue_s(w, t);
                if kernel_queue_s > 0.0 {
                    self.cal
                        .schedule(self.now + kernel_queue_s, Event::KernelQueued(t));
                }
            }
            _ => {}
        }
    }

    /// The priority of the data requests made for `task`: its priority as the scheduler sees
    /// it (StarPU's requests carry `task->priority`, which is 0 under policies that keep the
    /// default bounds).
    fn request_priority(&self, task: TaskId) -> i32 {
        let view = view!(self);
        self.sched.priority(task, &view)
    }

    /// What queueing task `t` to worker `w`'s device costs: `kernel_queue` for an
    /// asynchronous GPU task, nothing on a CPU core or for a synchronous GPU task (both run
    /// on the worker's own thread, `_starpu_simgrid_submit_job` without a `finished` flag).
    fn kernel_queue_s(&self, w: WorkerId, t: TaskId) -> f64 {
        match self.workers[w.index()].kind {
            WorkerKind::Gpu if !self.gpu_sync(t, w) => self.machine.runtime().kernel_queue_s,
            _ => 0.0,
        }
    }

    /// Whether `t` runs synchronously on GPU worker `w`: its codelet lacks
    /// `STARPU_CUDA_ASYNC` (and `run.gpu_sync` honours that). The driver then pops nothing
    /// while it holds `t` (`pipeline_stuck`) and handles no data request while `t` runs.
    fn gpu_sync(&self, t: TaskId, w: WorkerId) -> bool {
        self.config.gpu_sync
            && self.workers[w.index()].kind == WorkerKind::Gpu
            && self
                .graph
                .codelet_gpu_synchronous(self.graph.task(t).codelet)
    }

    fn try_start(&mut self, w: WorkerId) {
        let ws = &self.wstate[w.index()];
        if ws.running.is_some() {
            return;
        }
        let Some(&t) = ws.held.front() else {
            return;
        };
        if self.buffers_left[t.index()] > 0 {
            return;
        }
        let worker = &self.workers[w.index()];
        let mean = self.runnable.mean_s(t, w).expect("checked at pop");
        let dur = self
            .kernels
            .draw_s(self.graph, t, worker, mean, &mut self.rng)
            .max(0.0);
        let node = worker.memory;
        if self.gpu_sync(t, w) {
            // The driver thread runs the kernel itself: it handles no request meanwhile.
            self.runners.set_blocked(node, true);
        }
        self.wstate[w.index()].running = Some(t);
        self.started_at[w.index()] = self.now;
        self.loads[w.index()].running = true;
        self.account(w);
        self.cal.schedule(self.now + dur, Event::TaskEnd(w));
        let mut versions = std::mem::take(&mut self.scratch_versions);
        versions.clear();
        for a in self.graph.accesses(t) {
            if a.mode.reads() {
                versions.push((
                    a.handle,
                    self.memory.replica_version(a.handle, node),
                    self.memory.version(a.handle),
                ));
            }
        }
        let task = self.graph.task(t);
        self.obs.event(
            self.now,
            &SimEvent::TaskStart {
                task: t,
                worker: w,
                duration_s: dur,
                reads: &versions,
                codelet: task.codelet,
                codelet_name: self.graph.codelet_name(task.codelet),
                flops: task.flops,
                size_bytes: task.model_size_bytes(),
                priority: task.priority,
            },
        );
        self.scratch_versions = versions;
        let view = view!(self);
        self.sched.task_started(t, w, &view);
    }

    fn task_end(&mut self, w: WorkerId) {
        let t = self.wstate[w.index()]
            .running
            .take()
            .expect("a task ends on a worker running it");
        let front = self.wstate[w.index()].held.pop_front();
        debug_assert_eq!(front, Some(t));
        self.loads[w.index()] = WorkerLoad {
            held: self.wstate[w.index()].held.len() as u32,
            running: false,
        };
        self.account(w);
        let node = self.workers[w.index()].memory;
        if self.gpu_sync(t, w) {
            self.runners.set_blocked(node, false);
            self.start_transfers();
        }
        let worker = &self.workers[w.index()];
        let dur = self.now - self.started_at[w.index()];
        let c = &mut self.codelet_stats[self.graph.task(t).codelet.index()];
        match worker.kind {
            WorkerKind::Cpu => {
                c.cpu_tasks += 1;
                c.cpu_s += dur;
            }
            WorkerKind::Gpu => {
                c.gpu_tasks += 1;
                c.gpu_s += dur;
            }
        }
        for a in self.graph.accesses(t) {
            if a.mode.writes() {
                self.memory.write(a.handle, node);
            }
        }
        for a in self.graph.accesses(t) {
            self.memory.unpin(a.handle, node);
        }
        self.tasks_done += 1;
        self.last_task_end = self.now;
        self.wstate[w.index()].tasks += 1;
        if let Some(hs) = self.wont_use_after.remove(&t.0) {
            for h in hs {
                self.wont_use(h);
            }
        }
        self.obs.event(
            self.now,
            &SimEvent::TaskEnd {
                task: t,
                worker: w,
                node,
            },
        );
        let view = view!(self);
        self.sched.task_ended(t, w, &view);
        self.releasing = Some(w);
        for &s in self.graph.successors(t) {
            self.preds_left[s.index()] -= 1;
            if self.preds_left[s.index()] == 0 {
                self.push(s, Some(w));
            }
        }
        self.retry_allocations(node);
        self.try_start(w);
    }

    /// Add the time since the worker's last change to its current state, and set the new one.
    fn account(&mut self, w: WorkerId) {
        let ws = &mut self.wstate[w.index()];
        let dt = self.now - ws.since_s;
        match ws.state {
            WState::Idle => ws.idle_s += dt,
            WState::Waiting => ws.waiting_s += dt,
            WState::Busy => ws.busy_s += dt,
        }
        ws.since_s = self.now;
        let old = ws.state;
        ws.state = if ws.running.is_some() {
            WState::Busy
        } else if ws.held.is_empty() {
            WState::Idle
        } else {
            WState::Waiting
        };
        if ws.state != old {
            let state = match ws.state {
                WState::Idle => WorkerStatus::Idle,
                WState::Waiting => WorkerStatus::FetchingInput,
                WState::Busy => WorkerStatus::Executing,
            };
            self.obs
                .event(self.now, &SimEvent::WorkerState { worker: w, state });
        }
    }

    /// Report the links whose load changed, to an observer that wants them.
    fn report_link_loads(&mut self) {
        let Some(last) = self.link_loads.as_mut() else {
            return;
        };
        let changed = &mut self.scratch_loads;
        changed.clear();
        for (i, old) in last
            .iter_mut()
            .enumerate()
            .take(self.platform.link_names.len())
        {
            let load = self
                .platform
                .net
                .link_load_bytes_per_sec(hetsim_core::fluid::LinkId(i as u32));
            if load != *old {
                *old = load;
                changed.push((i as u32, load));
            }
        }
        if !changed.is_empty() {
            self.obs.event(self.now, &SimEvent::LinkLoads { changed });
        }
    }

    // --- Memory -----------------------------------------------------------------------------

    fn replica_key(&self, h: HandleId, n: MemNodeId) -> usize {
        h.index() * self.memory.nnodes() + n.index()
    }

    /// Serve the allocation requests waiting on `node`, in order, while room can be made.
    fn retry_allocations(&mut self, node: MemNodeId) {
        while let Some(&(t, i)) = self.alloc_queue[node.index()].front() {
            let h = self.graph.accesses(t)[i as usize].handle;
            if self.memory.is_allocated(h, node) {
                // Another holder allocated it meanwhile (two popped tasks share a handle).
                self.alloc_queue[node.index()].pop_front();
                self.buffer_allocated(t, i);
                continue;
            }
            let alloc = self.memory.allocate(h, node);
            self.report_evictions();
            match alloc {
                Alloc::Done { malloc, frees } => {
                    self.alloc_queue[node.index()].pop_front();
                    let cost = self.allocated(node, h, malloc, frees);
                    let at = self.allocator_done_at(node, cost);
                    if at > self.now {
                        self.cal
                            .schedule(at, Event::AllocDone { task: t, access: i });
                    } else {
                        self.buffer_allocated(t, i);
                    }
                }
                Alloc::WriteBack(victim) => {
                    self.write_back(victim, node);
                    break;
                }
                Alloc::Blocked => break,
            }
        }
    }

    /// Report the replicas the last allocations evicted.
    fn report_evictions(&mut self) {
        for (node, handle) in self.memory.evicted.drain(..) {
            self.obs.event(
                self.now,
                &SimEvent::Evict {
                    node,
                    handle,
                    bytes: self.graph.handle(handle).size_bytes,
                },
            );
        }
    }

    /// Report an allocation that just succeeded on `node` and return what it costs.
    fn allocated(&mut self, node: MemNodeId, h: HandleId, malloc: bool, frees: u32) -> f64 {
        let cost = self.alloc_cost(node, malloc, frees);
        self.obs.event(
            self.now,
            &SimEvent::Allocate {
                node,
                handle: h,
                used_bytes: self.memory.used(node),
            },
        );
        cost
    }

    /// The date an allocation of `cost` on `node` asked for now ends. A node's allocations end
    /// in the order they were asked for (its driver handles its requests one after the other),
    /// and the ones that cost something happen one at a time on the whole machine (StarPU
    /// takes one global `cuda_alloc_mutex` around cudaMalloc and cudaFree).
    fn allocator_done_at(&mut self, node: MemNodeId, cost: f64) -> f64 {
        if cost <= 0.0 {
            return self.alloc_free_at[node.index()].max(self.now);
        }
        let at = self.device_alloc_free_at.max(self.now) + cost;
        self.device_alloc_free_at = at;
        self.alloc_free_at[node.index()] = at;
        at
    }

    fn alloc_cost(&mut self, node: MemNodeId, malloc: bool, frees: u32) -> f64 {
        if self.memory.kind(node) != MemKind::Gpu {
            return 0.0;
        }
        let rt = self.machine.runtime();
        if malloc {
            self.stats.allocations += 1;
        }
        (if malloc { rt.cuda_malloc_s } else { 0.0 }) + f64::from(frees) * rt.cuda_free_s
    }

    fn write_back(&mut self, victim: HandleId, node: MemNodeId) {
        let key = self.replica_key(victim, node);
        if self.writing_back[key] {
            // Already on its way, perhaps at idle priority: now it is needed.
            self.promote_prefetch(victim, self.memory.ram());
            return;
        }
        self.writing_back[key] = true;
        self.stats.writebacks += 1;
        let ram = self.memory.ram();
        // Someone waits for the room: ahead of every other request of the pair.
        self.start_copy(victim, node, ram, TransferKind::WriteBack, i32::MAX);
    }

    /// A "will not be used" hint holds (StarPU's `_starpu_data_wont_use`): mark the device
    /// replicas of `h` as first eviction victims and, if main memory has no valid copy, ask
    /// for an idle-priority copy there (`starpu_data_idle_prefetch_on_node(home)`).
    fn wont_use(&mut self, h: HandleId) {
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
        self.writing_back[key] = true;
        self.stats.writebacks += 1;
        self.enqueue_transfer_at(h, src, ram, TransferKind::WriteBack, true, 0);
    }

    fn prefetch(&mut self, task: TaskId, worker: WorkerId) {
        let node = self.workers[worker.index()].memory;
        let priority = self.request_priority(task);
        for a in self.graph.accesses(task) {
            let h = a.handle;
            if !a.mode.reads() || self.memory.is_valid(h, node) || self.memory.is_loading(h, node) {
                continue;
            }
            if self.memory.is_allocated(h, node) {
                let src = self.memory.best_source(h, node, &self.estimates);
                self.start_copy(h, src, node, TransferKind::Prefetch, priority);
                continue;
            }
            // A prefetch takes room only if it can without waiting or writing back.
            let alloc = self.memory.allocate(h, node);
            self.report_evictions();
            match alloc {
                Alloc::Done { malloc, frees } => {
                    let cost = self.allocated(node, h, malloc, frees);
                    self.memory.pin(h, node);
                    let at = self.allocator_done_at(node, cost);
                    self.cal.schedule(
                        at,
                        Event::PrefetchAllocDone {
                            handle: h,
                            node,
                            priority,
                        },
                    );
                }
                Alloc::WriteBack(_) | Alloc::Blocked => {}
            }
        }
    }

    // --- Transfers --------------------------------------------------------------------------

    /// Copy `h` from `src` to `dst` (staged through RAM if there is no direct route).
    fn start_copy(
        &mut self,
        h: HandleId,
        src: MemNodeId,
        dst: MemNodeId,
        kind: TransferKind,
        priority: i32,
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
                self.promote_prefetch(h, b);
                return;
            }
        }
        self.enqueue_transfer_at(h, a, b, kind, false, priority);
    }

    /// Queue a one-hop copy, at idle priority if `idle`.
    fn enqueue_transfer_at(
        &mut self,
        h: HandleId,
        src: MemNodeId,
        dst: MemNodeId,
        kind: TransferKind,
        idle: bool,
        priority: i32,
    ) {
        let tr = Transfer {
            handle: h,
            src,
            dst,
            bytes: self.memory.size(h) as f64,
            kind,
            version: self.memory.version(h),
            idle,
            priority,
        };
        self.memory.pin(h, src);
        if !self.memory.is_loading(h, dst) {
            self.memory.pin(h, dst);
            self.memory.set_loading(h, dst, true);
        }
        let id = match self.free_transfers.pop() {
            Some(id) => {
                self.transfers[id as usize] = Some(tr);
                id
            }
            None => {
                self.transfers.push(Some(tr));
                (self.transfers.len() - 1) as u32
            }
        };
        let tr = self.transfers[id as usize].as_ref().expect("just stored");
        self.runners.enqueue(id, tr);
        self.start_transfers();
    }

    /// Someone needs `h` on `node` now: a prefetch or idle copy of it queued there moves
    /// ahead with the fetches (StarPU raises a request's priority when a more urgent one asks
    /// for the same copy).
    fn promote_prefetch(&mut self, h: HandleId, node: MemNodeId) {
        let found = self.transfers.iter().enumerate().find_map(|(i, t)| {
            t.as_ref()
                .filter(|t| {
                    t.handle == h && t.dst == node && (t.kind == TransferKind::Prefetch || t.idle)
                })
                .map(|_| i as u32)
        });
        if let Some(id) = found {
            let tr = self.transfers[id as usize].clone().expect("found");
            if self.runners.promote(id, &tr) {
                let t = self.transfers[id as usize].as_mut().expect("found");
                if t.kind == TransferKind::Prefetch {
                    t.kind = TransferKind::Fetch;
                }
                t.idle = false;
            }
        }
    }

    fn start_transfers(&mut self) {
        let mut ready = std::mem::take(&mut self.scratch_ids);
        let mut requesting = std::mem::take(&mut self.scratch_requesting);
        requesting.clear();
        requesting.extend(
            (0..self.memory.nnodes())
                .map(|n| !self.alloc_queue[n].is_empty() || self.alloc_free_at[n] > self.now),
        );
        self.runners.start_ready(&mut ready, &requesting);
        self.scratch_requesting = requesting;
        let queue = self.machine.runtime().transfer_queue_s;
        for &id in &ready {
            self.cal.schedule(self.now + queue, Event::TransferGo(id));
        }
        ready.clear();
        self.scratch_ids = ready;
    }

    fn transfer_go(&mut self, id: u32) {
        let tr = self.transfers[id as usize].as_ref().expect("live transfer");
        self.obs.event(
            self.now,
            &SimEvent::TransferStart {
                handle: tr.handle,
                src: tr.src,
                dst: tr.dst,
                bytes: tr.bytes,
                kind: tr.kind,
                version: tr.version,
                id,
            },
        );
        match self.platform.path(tr.src, tr.dst) {
            Some(Path::Fluid(route)) => {
                let f = self
                    .platform
                    .net
                    .start_flow(self.now, FlowSpec::new(route.clone(), tr.bytes));
                let fi = f.0 as usize;
                if self.flow_owner.len() <= fi {
                    self.flow_owner.resize(fi + 1, u32::MAX);
                }
                self.flow_owner[fi] = id;
            }
            Some(Path::Model(m)) => {
                let d = m.duration_secs(tr.bytes);
                self.cal.schedule(self.now + d, Event::TransferDone(id));
            }
            None => unreachable!("hops only use pairs with a route"),
        }
    }

    fn transfer_done(&mut self, id: u32) {
        let tr = self.transfers[id as usize].take().expect("live transfer");
        self.free_transfers.push(id);
        self.runners.finished(id, tr.src, tr.dst);
        self.stats.bytes += tr.bytes;
        self.stats.transfers += 1;
        match tr.kind {
            TransferKind::Fetch => self.stats.fetch_bytes += tr.bytes,
            TransferKind::Prefetch => self.stats.prefetch_bytes += tr.bytes,
            TransferKind::WriteBack => self.stats.writeback_bytes += tr.bytes,
        }
        self.obs.event(
            self.now,
            &SimEvent::TransferEnd {
                handle: tr.handle,
                src: tr.src,
                dst: tr.dst,
                bytes: tr.bytes,
                kind: tr.kind,
                version: tr.version,
                id,
            },
        );
        let (h, src, dst) = (tr.handle, tr.src, tr.dst);
        self.memory.set_loading(h, dst, false);
        let fresh = self.memory.arrive(h, dst, tr.version);
        self.memory.unpin(h, src);
        self.memory.unpin(h, dst);
        let key = self.replica_key(h, src);
        if tr.kind == TransferKind::WriteBack && self.writing_back[key] {
            self.writing_back[key] = false;
        }
        if fresh {
            self.wake_waiters(h, dst);
        } else if self.waiters.contains_key(&self.replica_key(h, dst)) {
            // Written meanwhile: fetch the new version for whoever still waits.
            let src = self.memory.best_source(h, dst, &self.estimates);
            self.start_copy(h, src, dst, TransferKind::Fetch, i32::MAX);
        }
        self.start_transfers();
        for n in 0..self.memory.nnodes() {
            self.retry_allocations(MemNodeId(n as u32));
        }
    }

    fn wake_waiters(&mut self, h: HandleId, node: MemNodeId) {
        let Some(list) = self.waiters.remove(&self.replica_key(h, node)) else {
            return;
        };
        for w in list {
            match w {
                Waiter::Task(t) => self.buffer_ready(t),
                Waiter::Forward(dst, kind, priority) => {
                    // The staged copy's second hop; the destination was pinned for it.
                    self.memory.unpin(h, dst);
                    self.memory.set_loading(h, dst, false);
                    if !self.memory.is_valid(h, dst) {
                        self.enqueue_transfer_at(h, node, dst, kind, false, priority);
                    }
                }
            }
        }
    }

    // --- End of run -------------------------------------------------------------------------

    fn deadlock(&self) -> InputError {
        let mut msg = format!(
            "no task can make progress at t = {} s: {} of {} tasks ran.",
            self.now,
            self.tasks_done,
            self.graph.num_tasks()
        );
        for (n, q) in self.alloc_queue.iter().enumerate() {
            if q.is_empty() {
                continue;
            }
            let node = MemNodeId(n as u32);
            let name = &self.machine.memory_nodes()[n].name;
            let pinned = self.memory.pinned_on(node);
            let waiting: Vec<String> = q
                .iter()
                .map(|&(t, i)| {
                    format!(
                        "task {} ({}) needs handle {}",
                        t.0,
                        self.graph.task_codelet_name(t),
                        self.graph.accesses(t)[i as usize].handle.0
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
        msg.push_str(
            " This is eviction deadlock (StarPU issue #38): reduce the GPU pipeline depth, the \
             tile size, or give the device more memory.",
        );
        InputError::new(msg)
    }

    fn report(&self) -> RunReport {
        let end = self.now;
        let total_flops = self.graph.total_flops();
        let codelets = self.codelet_stats.clone();
        let bounds = self.bounds;
        RunReport {
            critical_path_s: bounds.critical_path_s,
            area_bound_s: bounds.area_bound_s,
            bound_ratio: bounds.ratio(self.makespan),
            machine: self.machine.name().to_string(),
            sched: self.sched.name().to_string(),
            seed: self.config.seed,
            makespan_s: self.makespan,
            end_with_writeback_s: end,
            gflops: if self.makespan > 0.0 {
                total_flops / self.makespan / 1e9
            } else {
                0.0
            },
            tasks: self.tasks_done,
            total_flops,
            bytes_transferred: self.stats.bytes,
            transfers: self.stats.transfers,
            fetch_bytes: self.stats.fetch_bytes,
            prefetch_bytes: self.stats.prefetch_bytes,
            writeback_bytes: self.stats.writeback_bytes,
            evictions: (0..self.memory.nnodes())
                .map(|n| self.memory.evictions(MemNodeId(n as u32)))
                .sum(),
            writebacks: self.stats.writebacks,
            allocations: self.stats.allocations,
            workers: self
                .workers
                .iter()
                .zip(&self.wstate)
                .map(|(w, s)| WorkerReport {
                    name: w.name.clone(),
                    kind: w.kind.as_str().to_string(),
                    memory: self.machine.memory_nodes()[w.memory.index()].name.clone(),
                    tasks: s.tasks,
                    busy_s: s.busy_s,
                    waiting_s: s.waiting_s,
                    idle_s: s.idle_s,
                })
                .collect(),
            links: (0..self.platform.link_names.len())
                .map(|i| {
                    let id = hetsim_core::fluid::LinkId(i as u32);
                    let s = self.platform.net.link_stats(id, end);
                    let cap = self.platform.net.link_capacity_bytes_per_sec(id);
                    LinkReport {
                        name: self.platform.link_names[i].clone(),
                        bytes: s.bytes,
                        busy_s: s.busy_s,
                        utilisation: if end > 0.0 {
                            s.bytes / (cap * end)
                        } else {
                            0.0
                        },
                    }
                })
                .collect(),
            codelets,
            memory: self
                .machine
                .memory_nodes()
                .iter()
                .map(|m| MemoryReport {
                    name: m.name.clone(),
                    capacity_bytes: m.capacity_bytes,
                    peak_used_bytes: self.memory.peak(m.id),
                    evictions: self.memory.evictions(m.id),
                })
                .collect(),
        }
    }
}

/// The "will not be used" hints of `graph` keyed by the task whose end makes them hold (the
/// last writer before each hint, [`TaskGraph::wont_use_triggers`]). Hints with no writer
/// before them concern data that is only in main memory: nothing to do.
fn wont_use_by_trigger(graph: &TaskGraph) -> FxHashMap<u32, Vec<HandleId>> {
    let mut map: FxHashMap<u32, Vec<HandleId>> = FxHashMap::default();
    for (hint, trig) in graph.wont_use_hints().iter().zip(graph.wont_use_triggers()) {
        if let Some(t) = trig {
            map.entry(t.0).or_default().push(hint.handle);
        }
    }
    map
}
