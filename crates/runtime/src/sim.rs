//! The loop: it takes the next event from the engine (the calendar or the fluid network) and
//! hands it to the part it concerns — the workers ([`WorkerPool`]), the data manager
//! ([`DataManager`]) or the scheduler — applying what each returns, in order. The parts own
//! their state; the loop owns only the clock and the bookkeeping that joins them (how many
//! predecessors and buffers each task still waits for, and where it was taken).

use rand::SeedableRng;
use rustc_hash::FxHashMap;

use super::data::{DataManager, Effect, Waiter};
use super::observe::{Observer, SimEvent, WorkerStatus};
use super::report::RunReport;
use super::runnable::{Runnable, runnable_of, workers_of};
use super::stats::Stats;
use super::transfer::Paths;
use super::workers::WorkerPool;
use super::{KernelTimes, RunConfig, SimRng, View, WorkerId, WorkerKind};
use crate::sched::{Decision, Scheduler};
use hetsim_core::engine::Calendar;
use hetsim_core::error::{Error, InputError};
use hetsim_core::fluid::{FlowId, FluidNetwork, LinkId};
use hetsim_platform::machine::{Machine, MemKind, MemNodeId};
use hetsim_taskgraph::{HandleId, TaskGraph, TaskId};

/// The scheduler's view, borrowing only the fields it reads so the scheduler itself can be
/// borrowed mutably beside it.
macro_rules! view {
    ($s:expr) => {
        View {
            now_s: $s.now,
            graph: $s.graph,
            workers: $s.workers.workers(),
            loads: $s.workers.loads(),
            runnable: &$s.runnable,
            memory: $s.data.memory(),
            estimates: $s.data.estimates(),
            released_by: None,
        }
    };
}

/// What the calendar holds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
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
    net: FluidNetwork,
    link_names: Vec<String>,
    /// Per fluid flow, the transfer it carries.
    flow_owner: Vec<u32>,
    workers: WorkerPool,
    data: DataManager,
    runnable: Runnable,
    preds_left: Vec<u32>,
    /// Per popped task: buffers not in place yet, plus one while a GPU task waits for its
    /// submission to the device.
    buffers_left: Vec<u32>,
    task_worker: Vec<u32>,
    /// "Will not be used" hints by the task whose end makes them hold (`run.wont_use`).
    wont_use_after: FxHashMap<u32, Vec<HandleId>>,
    /// When the last task ended (the makespan, as `starpu_task_wait_for_all` returns then).
    last_task_end: f64,
    tasks_done: u64,
    makespan: f64,
    decisions: Vec<Decision>,
    /// The data manager's effects not applied yet ([`Sim::apply`]).
    fx: Vec<Effect>,
    stats: Stats,
    scratch_order: Vec<u32>,
    scratch_flows: Vec<FlowId>,
    scratch_versions: Vec<(HandleId, u32, u32)>,
    scratch_loads: Vec<(u32, f64)>,
    /// Last link loads reported to the observer, if it wants them.
    link_loads: Option<Vec<f64>>,
    /// Lower bounds on the makespan.
    bounds: crate::bounds::Bounds,
    /// The worker whose task ended in the event being handled: it pops last
    /// ([`WorkerPool::pop_order`]).
    releasing: Option<WorkerId>,
    /// Tasks pushed since workers last popped.
    pushed_now: u32,
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
        let mut net = FluidNetwork::new(config.sharing);
        let paths = Paths::new(machine, &mut net);
        let link_names = paths.link_names.clone();
        let gpus_used = workers.iter().filter(|w| w.kind == WorkerKind::Gpu).count();
        let data = DataManager::new(machine, graph, ram, gpus_used, paths);
        let memory = data.memory();
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
        let link_loads = obs.wants_link_loads().then(|| vec![0.0; link_names.len()]);
        Ok(Sim {
            machine,
            graph,
            kernels,
            sched,
            obs,
            config,
            rng: SimRng::seed_from_u64(config.seed),
            now: 0.0,
            cal: Calendar::new(),
            net,
            link_names,
            flow_owner: Vec::new(),
            workers: WorkerPool::new(workers),
            data,
            runnable,
            preds_left: graph
                .task_ids()
                .map(|t| graph.predecessor_count(t))
                .collect(),
            buffers_left: vec![0; graph.num_tasks()],
            task_worker: vec![u32::MAX; graph.num_tasks()],
            wont_use_after: if config.wont_use {
                wont_use_by_trigger(graph)
            } else {
                FxHashMap::default()
            },
            last_task_end: 0.0,
            tasks_done: 0,
            makespan: 0.0,
            decisions: Vec::new(),
            fx: Vec::new(),
            stats: Stats::default(),
            scratch_order: Vec::new(),
            scratch_flows: Vec::new(),
            scratch_versions: Vec::new(),
            scratch_loads: Vec::new(),
            link_loads,
            bounds,
            releasing: None,
            pushed_now: 0,
        })
    }

    /// Tell the statistics and the observer.
    fn note(&mut self, event: &SimEvent<'_>) {
        self.stats.event(self.now, event);
        self.obs.event(self.now, event);
    }

    /// Apply the data manager's effects, in the order it returned them.
    fn apply(&mut self) {
        let mut fx = std::mem::take(&mut self.fx);
        for e in fx.drain(..) {
            match e {
                Effect::At(at_s, event) => self.cal.schedule(at_s, event),
                Effect::Note(event) => self.note(&event),
            }
        }
        self.fx = fx;
    }

    fn run(&mut self) -> Result<(), Error> {
        let start = SimEvent::RunStart {
            machine: self.machine,
            graph: self.graph,
            workers: self.workers.workers(),
            links: &self.link_names,
            sched: self.sched.name(),
            config: self.config,
            bounds: self.bounds,
        };
        self.stats.event(0.0, &start);
        self.obs.event(0.0, &start);
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
        self.data.final_write_back(self.now, &mut self.fx);
        self.apply();
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
                self.data
                    .prefetch_allocated(handle, node, priority, self.now, &mut self.fx);
                self.apply();
            }
            Event::TransferGo(id) => {
                if let Some(f) = self
                    .data
                    .transfer_go(id, &mut self.net, self.now, &mut self.fx)
                {
                    let fi = f.0 as usize;
                    if self.flow_owner.len() <= fi {
                        self.flow_owner.resize(fi + 1, u32::MAX);
                    }
                    self.flow_owner[fi] = id;
                }
                self.apply();
            }
            Event::TransferDone(id) => self.transfer_done(id),
            Event::KernelQueued(t) => self.buffer_ready(t),
        }
        if matches!(
            ev,
            Event::AllocDone { .. } | Event::PrefetchAllocDone { .. }
        ) {
            // An allocation ended: an idle transfer of that node may start now.
            self.data.start_transfers(self.now, &mut self.fx);
            self.apply();
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
                    let node = self.workers.worker(worker).memory;
                    let priority = self.request_priority(task);
                    self.data
                        .prefetch(self.graph, task, node, priority, self.now, &mut self.fx);
                    self.apply();
                }
                Decision::Prefetch { .. } => {}
            }
        }
        self.decisions = decisions;
    }

    /// Let workers with room pop, in the order of [`WorkerPool::pop_order`]: each worker that
    /// leads takes one task, then every worker fills its room in the same order.
    ///
    /// With per-worker queues (dmda family) each worker pops only its own queue, so the order
    /// matters only to central queues (eager, prio) and to which thief steals first (ws, lws).
    fn wake_workers(&mut self) {
        let mut order = std::mem::take(&mut self.scratch_order);
        let releasing = self.releasing.take();
        let pushes = std::mem::take(&mut self.pushed_now) as usize;
        let leading = self.workers.pop_order(
            releasing,
            pushes,
            self.sched.wakes_all(),
            self.machine.runtime().push_s,
            &mut order,
        );
        for (upto, most) in [(leading, 1), (order.len(), u32::MAX)] {
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
                        self.workers.worker(w).name
                    );
                    self.take(w, t);
                }
            }
        }
        order.clear();
        self.scratch_order = order;
    }

    /// Whether worker `w` may pop: it holds fewer tasks than its pipeline depth, none of them
    /// is still fetching its inputs, and none is synchronous. StarPU's driver pops only when
    /// no task is transferring and the pipeline is not stuck behind a synchronous task
    /// (`_starpu_get_multi_worker_task` checks `task_transferring` and `pipeline_stuck`), so
    /// a GPU fetches the inputs of one popped task at a time.
    fn has_room(&self, w: WorkerId) -> bool {
        let held = self.workers.held(w);
        (held.len() as u32) < self.workers.worker(w).pipeline_depth
            && held
                .iter()
                .all(|&t| self.buffers_left[t.index()] == 0 && !self.gpu_sync(t, w))
    }

    fn worker_state(&mut self, w: WorkerId, state: Option<WorkerStatus>) {
        if let Some(state) = state {
            self.note(&SimEvent::WorkerState { worker: w, state });
        }
    }

    /// Worker `w` holds task `t`: pin and fetch its buffers.
    fn take(&mut self, w: WorkerId, t: TaskId) {
        let state = self.workers.hold(w, t, self.now);
        self.task_worker[t.index()] = w.0;
        self.worker_state(w, state);
        let node = self.workers.worker(w).memory;
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
            if self.data.pin_buffer(t, i as u32, a.handle, node) {
                self.buffer_allocated(t, i as u32);
            }
        }
        self.retry_allocations(node);
        self.try_start(w);
    }

    /// Buffer `access` of popped task `t` is allocated where it runs.
    fn buffer_allocated(&mut self, t: TaskId, access: u32) {
        let w = WorkerId(self.task_worker[t.index()]);
        let node = self.workers.worker(w).memory;
        let a = self.graph.accesses(t)[access as usize];
        let priority = self.request_priority(t);
        let ready = self.data.buffer_allocated(
            t,
            a.handle,
            a.mode.reads(),
            node,
            priority,
            self.now,
            &mut self.fx,
        );
        self.apply();
        if ready {
            self.buffer_ready(t);
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

    /// Serve the allocation requests waiting on `node`, in order, while room can be made.
    fn retry_allocations(&mut self, node: MemNodeId) {
        while let Some((t, i)) = self
            .data
            .next_allocation(self.graph, node, self.now, &mut self.fx)
        {
            self.apply();
            self.buffer_allocated(t, i);
        }
        self.apply();
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
        match self.workers.worker(w).kind {
            WorkerKind::Gpu if !self.gpu_sync(t, w) => self.machine.runtime().kernel_queue_s,
            _ => 0.0,
        }
    }

    /// Whether `t` runs synchronously on GPU worker `w`: its codelet lacks
    /// `STARPU_CUDA_ASYNC` (and `run.gpu_sync` honours that). The driver then pops nothing
    /// while it holds `t` (`pipeline_stuck`) and handles no data request while `t` runs.
    fn gpu_sync(&self, t: TaskId, w: WorkerId) -> bool {
        self.config.gpu_sync
            && self.workers.worker(w).kind == WorkerKind::Gpu
            && self
                .graph
                .codelet_gpu_synchronous(self.graph.task(t).codelet)
    }

    fn try_start(&mut self, w: WorkerId) {
        let Some(t) = self.workers.next_to_start(w) else {
            return;
        };
        if self.buffers_left[t.index()] > 0 {
            return;
        }
        let worker = self.workers.worker(w);
        let mean = self.runnable.mean_s(t, w).expect("checked at pop");
        let dur = self
            .kernels
            .draw_s(self.graph, t, worker, mean, &mut self.rng)
            .max(0.0);
        let node = worker.memory;
        if self.gpu_sync(t, w) {
            // The driver thread runs the kernel itself: it handles no request meanwhile.
            self.data.set_blocked(node, true);
        }
        let state = self.workers.start(w, t, self.now);
        self.worker_state(w, state);
        self.cal.schedule(self.now + dur, Event::TaskEnd(w));
        let mut versions = std::mem::take(&mut self.scratch_versions);
        versions.clear();
        let memory = self.data.memory();
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
            worker: w,
            duration_s: dur,
            reads: &versions,
            codelet: task.codelet,
            codelet_name: self.graph.codelet_name(task.codelet),
            flops: task.flops,
            size_bytes: task.model_size_bytes(),
            priority: task.priority,
        });
        self.scratch_versions = versions;
        let view = view!(self);
        self.sched.task_started(t, w, &view);
    }

    fn task_end(&mut self, w: WorkerId) {
        let (t, _, state) = self.workers.end(w, self.now);
        self.worker_state(w, state);
        let node = self.workers.worker(w).memory;
        if self.gpu_sync(t, w) {
            self.data.set_blocked(node, false);
            self.data.start_transfers(self.now, &mut self.fx);
            self.apply();
        }
        self.data.task_ended(self.graph, t, node);
        self.tasks_done += 1;
        self.last_task_end = self.now;
        if let Some(hs) = self.wont_use_after.remove(&t.0) {
            for h in hs {
                self.data.wont_use(h, self.now, &mut self.fx);
                self.apply();
            }
        }
        self.note(&SimEvent::TaskEnd {
            task: t,
            worker: w,
            node,
        });
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

    // --- Transfers --------------------------------------------------------------------------

    fn transfer_done(&mut self, id: u32) {
        let (h, node, waiters) = self.data.finish_transfer(id, self.now, &mut self.fx);
        self.apply();
        for w in waiters {
            match w {
                Waiter::Task(t) => self.buffer_ready(t),
                Waiter::Forward(dst, kind, priority) => {
                    self.data
                        .forward(h, node, dst, kind, priority, self.now, &mut self.fx);
                    self.apply();
                }
            }
        }
        self.data.start_transfers(self.now, &mut self.fx);
        self.apply();
        for n in 0..self.data.nnodes() {
            self.retry_allocations(MemNodeId(n as u32));
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
        InputError::new(format!(
            "no task can make progress at t = {} s: {} of {} tasks ran.{} This is eviction \
             deadlock (StarPU issue #38): reduce the GPU pipeline depth, the tile size, or give \
             the device more memory.",
            self.now,
            self.tasks_done,
            self.graph.num_tasks(),
            self.data.deadlock_diagnosis(self.machine, self.graph)
        ))
    }

    fn report(&mut self) -> RunReport {
        let times = self.workers.finish(self.now);
        self.stats.report(&super::stats::RunEnd {
            machine: self.machine,
            graph: self.graph,
            sched: self.sched.name(),
            seed: self.config.seed,
            makespan_s: self.makespan,
            end_s: self.now,
            bounds: self.bounds,
            workers: self.workers.workers(),
            times: &times,
            memory: &self.data.memory_use(),
            net: &self.net,
            link_names: &self.link_names,
        })
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
