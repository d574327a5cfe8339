//! The StarPU-like runtime: workers, data replicas, memory, transfers, and the simulation loop
//! that executes a task graph on a machine under a scheduler.
//!
//! Parts that own their state: the workers' pipelines and wake-up order (`workers`), the data
//! manager (`data`: replicas, requests, allocation, eviction, write-backs, waiters; it returns
//! effects rather than acting on the engine), the statistics (`stats`, an observer of the
//! event stream), and the loop that joins them (`sim`).
//!
//! Semantics (`starpu-reference.md`, Stanisic et al. 2015 §5-7):
//!
//! - **Workers.** One per GPU and one per CPU core used for computing; by default each GPU
//!   reserves a core to drive it. Workers are numbered GPUs first, then CPU cores. A worker runs
//!   one task at a time; a GPU worker holds up to `gpu_pipeline_depth` (2) popped tasks, so the
//!   next task's inputs move while the current one runs, but it pops only when none of the
//!   tasks it holds is still fetching (StarPU's driver fetches one popped task at a time). A
//!   GPU task pays `kernel_queue` (10 µs) between its inputs being there and its kernel
//!   starting. A task of a codelet marked synchronous on GPUs (no `STARPU_CUDA_ASYNC`) is not
//!   queued; while a GPU holds one it pops nothing, and while it runs the GPU's data requests
//!   wait (`run.gpu_sync`). Tasks run in the order popped.
//! - **Data.** Every handle starts valid in RAM. Replicas follow MSI: a read copies a valid
//!   replica to the worker's memory node; a write leaves the writer's replica the only valid one.
//!   A GPU↔GPU copy uses the machine's direct route if there is one, otherwise it is staged
//!   through RAM (two transfers, RAM becomes valid too).
//! - **Memory.** GPU memory is allocated on first use. Allocations of at most 4 MiB come out of
//!   32 MiB chunks (StarPU's suballocator), so only a new chunk pays `cuda_malloc` (175 µs);
//!   paid allocations happen one at a time on the whole machine, and a node's allocations end
//!   in the order asked for. Chunks of evicted replicas are reused for data of the same size.
//!   When a GPU is full the least recently used unpinned replica is evicted, clean ones first;
//!   a replica holding the only valid copy is written back to RAM first.
//! - **Requests and transfers.** Each (source, destination) pair has fetch, prefetch and idle
//!   request lists ordered by task priority; a request is submitted while fewer than 5 (fetch),
//!   2 (prefetch) or 1 (idle, and only when the handling node has nothing pending) of the
//!   pair's are pending. A submitted transfer pays `transfer_queue` (10 µs), then moves over
//!   the fluid network (or takes its route's size-dependent model time), one at a time per
//!   pair in submission order; a GPU↔GPU transfer and a transfer into either of its ends are
//!   sequential, the later-submitted one waiting for the earlier (`transfer_submit`'s
//!   counters, §1e).
//! - **Wake-up order.** After each event, each task pushed wakes one sleeping worker (holding
//!   no task), lowest id first; the woken workers pop one task each in id order, then the
//!   worker whose task end released the tasks, then everyone fills its room.
//! - **Kernels.** The scheduler sees mean durations ([`KernelTimes::mean_s`]); the simulation
//!   draws each duration ([`KernelTimes::draw_s`]) from the run's seeded generator.

use hetsim_models::NoModel;
use hetsim_platform::machine::{MemKind, MemNodeId};
use hetsim_taskgraph::{HandleId, TaskGraph, TaskId};

pub mod bounds;
mod data;
mod kernels;
pub mod layout;
mod lru;
mod memory;
pub mod observe;
pub mod report;
mod runnable;
pub mod sched;
mod sim;
mod stats;
mod suballoc;
mod transfer;
mod workers;

pub use bounds::{Bounds, bounds, bounds_from_means};
pub use kernels::CalibratedKernels;
pub use layout::{Layout, MemoryInfo, RankInfo};
pub use observe::{Observer, SimEvent};
pub use report::{
    ClusterReport, CodeletReport, LinkReport, MemoryReport, NodeReport, RunReport, WorkerReport,
};
pub use sched::{Decision, Scheduler, Wakes};
pub use sim::{simulate, simulate_cluster, simulate_observed};
pub use transfer::TransferKind;

pub use hetsim_core::rng::SimRng;

/// Index of a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkerId(pub u32);

impl WorkerId {
    /// The index as `usize`, for slices.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a worker computes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkerKind {
    /// A CPU core.
    Cpu,
    /// A GPU.
    Gpu,
}

impl WorkerKind {
    /// The unit a task's fixed durations name for this kind of worker.
    pub fn unit(self) -> hetsim_taskgraph::Unit {
        match self {
            WorkerKind::Cpu => hetsim_taskgraph::Unit::Cpu,
            WorkerKind::Gpu => hetsim_taskgraph::Unit::Gpu,
        }
    }

    /// "cpu" or "gpu".
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerKind::Cpu => "cpu",
            WorkerKind::Gpu => "gpu",
        }
    }
}

/// A worker: a CPU core or a GPU, working in one memory node.
#[derive(Debug, Clone, PartialEq)]
pub struct Worker {
    /// Its index.
    pub id: WorkerId,
    /// "CUDA0", "CPU3", ...
    pub name: String,
    /// CPU core or GPU.
    pub kind: WorkerKind,
    /// Device name for per-device kernel models: the GPU's name, or "CPU".
    pub device: String,
    /// The memory node its tasks' data must be in.
    pub memory: MemNodeId,
    /// Tasks it may hold at once (popped, waiting for data or running).
    pub pipeline_depth: u32,
}

/// Kernel durations, as the scheduler predicts them and as the simulation draws them.
pub trait KernelTimes {
    /// Mean duration of `task` on `worker`, or `None` if that worker cannot run it (no model).
    fn mean_s(&self, graph: &TaskGraph, task: TaskId, worker: &Worker) -> Option<f64>;

    /// The duration the simulation uses: the mean, or a draw around it from `rng`.
    fn draw_s(
        &self,
        graph: &TaskGraph,
        task: TaskId,
        worker: &Worker,
        mean_s: f64,
        rng: &mut SimRng,
    ) -> f64;

    /// Why `worker` has no duration for `task`, for error messages (codelet, device, size and
    /// what the model does cover); `None` if there is nothing more to say.
    fn explain(&self, _graph: &TaskGraph, _task: TaskId, _worker: &Worker) -> Option<NoModel> {
        None
    }

    /// Whether [`mean_s`](Self::mean_s) reads nothing of a task but its codelet, model size
    /// (`Task::model_size_bytes`) and flops: the runtime then asks once per run of alike tasks
    /// (a Cholesky's GEMMs come in runs). False unless an implementation promises it.
    fn means_by_shape(&self) -> bool {
        false
    }
}

/// Kernel durations from a flop rate per worker kind: the simplest model, for tests and for
/// machines without calibration. Duration = flops / rate; no noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlopRate {
    /// Rate of one CPU core, flop/s (0 = CPUs cannot run tasks).
    pub cpu_flops_per_sec: f64,
    /// Rate of one GPU, flop/s (0 = GPUs cannot run tasks).
    pub gpu_flops_per_sec: f64,
}

impl KernelTimes for FlopRate {
    fn mean_s(&self, graph: &TaskGraph, task: TaskId, worker: &Worker) -> Option<f64> {
        let rate = match worker.kind {
            WorkerKind::Cpu => self.cpu_flops_per_sec,
            WorkerKind::Gpu => self.gpu_flops_per_sec,
        };
        (rate > 0.0).then(|| graph.task(task).flops() / rate)
    }

    fn means_by_shape(&self) -> bool {
        true
    }

    fn draw_s(&self, _: &TaskGraph, _: TaskId, _: &Worker, mean_s: f64, _: &mut SimRng) -> f64 {
        mean_s
    }
}

/// The kernel durations a machine file defines: its calibrated kernel models (`[[codelets]]`)
/// where it has them, otherwise a flop-rate model from its devices' peak rates
/// (`flops_per_core`, `peak_flops`). An error if it has neither.
pub fn kernels_for(
    machine: &hetsim_platform::machine::Machine,
) -> Result<Box<dyn KernelTimes + '_>, hetsim_core::InputError> {
    if !machine.perf_models().is_empty() {
        return Ok(Box::new(crate::kernels::CalibratedKernels::new(
            machine.perf_models(),
        )));
    }
    let cpu = machine
        .cpus()
        .iter()
        .find_map(|c| c.flops_per_sec_per_core)
        .unwrap_or(0.0);
    let gpu = machine
        .gpus()
        .iter()
        .find_map(|g| g.peak_flops_per_sec)
        .unwrap_or(0.0);
    if cpu <= 0.0 && gpu <= 0.0 {
        return Err(hetsim_core::InputError::new(format!(
            "machine `{}` has no kernel models and no peak flop rates: add [[codelets]] models, \
             or give its CPUs `flops_per_core` or its GPUs `peak_flops`",
            machine.name()
        )));
    }
    Ok(Box::new(FlopRate {
        cpu_flops_per_sec: cpu,
        gpu_flops_per_sec: gpu,
    }))
}

/// Options of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Seed of the run's generator (kernel noise, random policies).
    pub seed: u64,
    /// CPU cores used as workers; default: all cores less one per GPU used if the machine
    /// reserves driver cores.
    pub ncpu: Option<u32>,
    /// GPUs used; default all.
    pub ncuda: Option<u32>,
    /// How flows share links.
    pub sharing: hetsim_core::fluid::SharingMode,
    /// How long the network's re-share after completions may wait, in seconds
    /// ([`hetsim_core::fluid::FluidNetwork::set_reshare_delay_s`]; 0, the default: exact).
    pub reshare_delay_s: f64,
    /// Whether the scheduler's prefetch decisions are carried out.
    pub prefetch: bool,
    /// Whether the graph's "will not be used" hints act (StarPU's `starpu_data_wont_use`:
    /// first eviction victims and an idle-priority write-back to main memory).
    pub wont_use: bool,
    /// Whether codelets marked GPU-synchronous run as StarPU runs a codelet without
    /// `STARPU_CUDA_ASYNC` ([`hetsim_taskgraph::TaskGraphBuilder::gpu_synchronous`]); `false`
    /// runs every GPU codelet asynchronously.
    pub gpu_sync: bool,
    /// Whether the workers behave as StarPU's driver threads.
    pub drivers: Drivers,
}

/// Whether a run's workers are StarPU's driver threads, with the wake-ups those make, or wait
/// for pushes only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drivers {
    /// StarPU's driver threads. Each starts awake: it makes one progress call and pops once
    /// before it first sleeps (with every runtime cost off the first push finds them still
    /// awake, and the first to come back takes the task). A CPU driver's input requests wake
    /// the sleeping drivers of its memory node (and the GPUs' for main memory), and a driver
    /// they reach during its progress call polls again instead of sleeping.
    StarPu,
    /// Every worker sleeps until a push wakes it: the ranks of an MPI program, which have no
    /// runtime's driver threads.
    Passive,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: 1,
            ncpu: None,
            ncuda: None,
            sharing: hetsim_core::fluid::SharingMode::Plain,
            reshare_delay_s: 0.0,
            prefetch: true,
            wont_use: true,
            gpu_sync: true,
            drivers: Drivers::StarPu,
        }
    }
}

/// What a worker holds, as schedulers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkerLoad {
    /// Tasks popped and not ended (waiting for data or running).
    pub held: u32,
    /// Whether a task is executing.
    pub running: bool,
}

/// The read-only view of the simulation a scheduler decides from.
pub struct View<'a> {
    pub(crate) now_s: f64,
    pub(crate) graph: &'a TaskGraph,
    pub(crate) workers: &'a [Worker],
    pub(crate) loads: &'a [WorkerLoad],
    pub(crate) runnable: &'a runnable::Runnable,
    /// Per worker of this rank, its class in `runnable`.
    pub(crate) cols: &'a [usize],
    pub(crate) memory: &'a memory::Memory,
    pub(crate) estimates: &'a transfer::Estimates,
    pub(crate) released_by: Option<WorkerId>,
    pub(crate) rank: u32,
}

impl<'a> View<'a> {
    /// Simulated time now, seconds.
    #[inline]
    pub fn now_s(&self) -> f64 {
        self.now_s
    }

    /// The task graph. On a cluster it holds every rank's tasks and the messages between
    /// ranks; this scheduler is given only its own rank's tasks ([`View::is_local`]).
    #[inline]
    pub fn graph(&self) -> &'a TaskGraph {
        self.graph
    }

    /// The rank this scheduler serves (0 on one machine).
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Whether `task` is one this scheduler may be given: a computation of its rank. Other
    /// ranks' tasks and messages between ranks run elsewhere.
    #[inline]
    pub fn is_local(&self, task: TaskId) -> bool {
        let t = self.graph.task(task);
        t.is_compute() && t.node.0 == self.rank
    }

    /// All workers, in id order.
    pub fn workers(&self) -> &'a [Worker] {
        self.workers
    }

    /// During [`crate::sched::Scheduler::push`]: the worker whose task's end made this task
    /// ready (`None` for tasks ready at the start). Work stealing pushes there.
    pub fn released_by(&self) -> Option<WorkerId> {
        self.released_by
    }

    /// The contention-free estimate of the time to bring `task`'s inputs to `worker`: per
    /// buffer read and neither valid there nor on its way, latency + size / bottleneck
    /// bandwidth of the route.
    pub fn nominal_transfer_estimate_s(&self, task: TaskId, worker: WorkerId) -> f64 {
        self.inputs_estimate_s(task, worker, transfer::Estimates::nominal_s)
    }

    /// Sum over `task`'s buffers read and neither valid on `worker`'s node nor being copied
    /// there of `per_copy(source, node, bytes)`, the source being the replica cheapest to
    /// copy. A buffer already requested counts nothing, as in StarPU's
    /// `starpu_data_expected_transfer_time` (`_starpu_is_data_present_or_requested`).
    fn inputs_estimate_s(
        &self,
        task: TaskId,
        worker: WorkerId,
        per_copy: fn(&transfer::Estimates, MemNodeId, MemNodeId, f64) -> f64,
    ) -> f64 {
        let node = self.workers[worker.index()].memory;
        self.graph
            .accesses(task)
            .iter()
            .filter(|a| {
                a.mode.reads()
                    && !self.memory.is_valid(a.handle, node)
                    && !self.memory.is_loading(a.handle, node)
            })
            .map(|a| {
                let bytes = self.graph.handle(a.handle).size_bytes as f64;
                let src = self.memory.best_source(a.handle, node, self.estimates);
                per_copy(self.estimates, src, node, bytes)
            })
            .sum()
    }

    /// What a worker holds now.
    pub fn load(&self, worker: WorkerId) -> WorkerLoad {
        self.loads[worker.index()]
    }

    /// Whether `worker` can run `task` (it has a kernel model and the task's data fits in its
    /// memory).
    #[inline]
    pub fn can_run(&self, task: TaskId, worker: WorkerId) -> bool {
        self.predicted_length_s(task, worker).is_some()
    }

    /// Predicted (mean) duration of `task` on `worker`, if it can run it (never for a task
    /// of another rank or a message).
    #[inline]
    pub fn predicted_length_s(&self, task: TaskId, worker: WorkerId) -> Option<f64> {
        if !self.is_local(task) {
            return None;
        }
        self.runnable
            .mean_s(self.graph, task, self.cols[worker.index()])
    }

    /// Whether `handle` has a valid replica in memory node `node`.
    #[inline]
    pub fn is_valid_on(&self, handle: HandleId, node: MemNodeId) -> bool {
        self.memory.is_valid(handle, node)
    }

    /// Whether a transfer of `handle` into `node` is under way.
    #[inline]
    pub fn is_loading_on(&self, handle: HandleId, node: MemNodeId) -> bool {
        self.memory.is_loading(handle, node)
    }

    /// Whether `handle` has memory allocated in `node`.
    #[inline]
    pub fn is_allocated_on(&self, handle: HandleId, node: MemNodeId) -> bool {
        self.memory.is_allocated(handle, node)
    }

    /// StarPU's scheduler-side estimate of the time to bring `task`'s inputs to `worker`:
    /// per buffer read and neither valid there nor already requested there, latency +
    /// 2·nGPUs·size/bandwidth on each hop (GPU↔GPU included, as in StarPU-SimGrid) from
    /// nominal link figures, without contention (`starpu_transfer_predict`).
    pub fn starpu_transfer_estimate_s(&self, task: TaskId, worker: WorkerId) -> f64 {
        self.inputs_estimate_s(task, worker, transfer::Estimates::starpu_s)
    }

    /// StarPU's relative speed-up of a worker (CPU core 0.5, GPU 13.33), used by greedy
    /// fallbacks and the random policy.
    pub fn relative_speedup(&self, worker: WorkerId) -> f64 {
        match self.workers[worker.index()].kind {
            WorkerKind::Cpu => 0.5,
            WorkerKind::Gpu => 13.33,
        }
    }

    /// The host memory node, where every handle starts valid.
    pub fn ram_node(&self) -> MemNodeId {
        self.memory.ram()
    }

    /// Contention-free time to move `bytes` from `src` to `dst` over the machine's routes
    /// (staged through RAM where there is no direct route): latency plus size over the
    /// bottleneck bandwidth, summed over the hops.
    pub fn nominal_transfer_s(&self, src: MemNodeId, dst: MemNodeId, bytes: f64) -> f64 {
        self.estimates.nominal_s(src, dst, bytes)
    }

    /// The kind of a memory node.
    pub fn memory_kind(&self, node: MemNodeId) -> MemKind {
        self.memory.kind(node)
    }
}

/// A frozen simulation state to build [`View`]s from, for schedulers' unit tests (feature
/// `fixtures`; schedulers' crates enable it in their dev-dependencies).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixture {
    use super::*;
    use hetsim_platform::machine::Machine;

    pub use hetsim_testkit::{STAR_BW, STAR_LAT, star_machine_text};

    /// The machine of [`star_machine_text`].
    pub fn star_machine(ngpu: usize, ncores: u32) -> Machine {
        hetsim_platform::machine::from_str(&star_machine_text(ngpu, ncores), "t.toml").unwrap()
    }

    /// `ncpu` CPU workers and `ncuda` GPU workers.
    pub fn workers(ncpu: u32, ncuda: u32) -> RunConfig {
        RunConfig {
            ncpu: Some(ncpu),
            ncuda: Some(ncuda),
            ..RunConfig::default()
        }
    }

    /// A CPU core at 1 GFlop/s, a GPU at 100 GFlop/s.
    pub const RATES: FlopRate = FlopRate {
        cpu_flops_per_sec: 1e9,
        gpu_flops_per_sec: 1e11,
    };

    /// Workers, predictions, memory and estimates of a machine and graph, with no run.
    pub struct Fixture<'a> {
        /// The graph.
        pub graph: &'a TaskGraph,
        /// The workers the machine and configuration give.
        pub workers: Vec<Worker>,
        /// What each worker holds (all empty at first).
        pub loads: Vec<WorkerLoad>,
        runnable: runnable::Runnable,
        cols: Vec<usize>,
        memory: memory::Memory,
        estimates: transfer::Estimates,
    }

    impl<'a> Fixture<'a> {
        /// The state before the first event of a run of `graph` on `machine`.
        pub fn new(
            machine: &Machine,
            graph: &'a TaskGraph,
            kernels: &dyn KernelTimes,
            config: &RunConfig,
        ) -> Self {
            let workers = runnable::workers_of(machine, config).unwrap();
            let (runnable, mut cols) =
                runnable::runnable_of(graph, kernels, &[&workers], machine).unwrap();
            let cols = cols.pop().expect("one rank");
            let kinds: Vec<MemKind> = machine.memory_nodes().iter().map(|m| m.kind).collect();
            let caps = machine
                .memory_nodes()
                .iter()
                .map(|m| m.capacity_bytes)
                .collect();
            let ram = MemNodeId(0);
            let gpus: Vec<MemNodeId> = workers
                .iter()
                .filter(|w| w.kind == WorkerKind::Gpu)
                .map(|w| w.memory)
                .collect();
            let (handles, slots) = memory::Memory::all_handles(graph);
            let memory = memory::Memory::new(
                kinds,
                caps,
                ram,
                &gpus,
                graph,
                handles,
                slots,
                machine.runtime().suballocator,
            );
            Fixture {
                graph,
                loads: vec![WorkerLoad::default(); workers.len()],
                workers,
                runnable,
                cols,
                memory,
                estimates: transfer::Estimates::new(machine, ram, gpus.len()),
            }
        }

        /// The view at `now_s`.
        pub fn view(&self, now_s: f64) -> View<'_> {
            View {
                now_s,
                graph: self.graph,
                workers: &self.workers,
                loads: &self.loads,
                runnable: &self.runnable,
                cols: &self.cols,
                memory: &self.memory,
                estimates: &self.estimates,
                released_by: None,
                rank: 0,
            }
        }

        /// [`Fixture::view`], as seen during the push of a task released by `worker`.
        pub fn released_by_worker(view: View<'_>, worker: Option<WorkerId>) -> View<'_> {
            View {
                released_by: worker,
                ..view
            }
        }

        /// Mark a copy of `h` to `node` as requested (on its way, not valid yet).
        pub fn request(&mut self, h: HandleId, node: MemNodeId) {
            self.memory.set_loading(h, node, true);
        }

        /// Make `h` valid (and allocated) on `node` too.
        pub fn place(&mut self, h: HandleId, node: MemNodeId) {
            if !self.memory.is_allocated(h, node) {
                self.memory.allocate(h, node);
            }
            let v = self.memory.version(h);
            self.memory.arrive(h, node, v);
        }
    }
}
