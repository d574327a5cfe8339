//! Machine files (`calibration/*.toml`): memory nodes, processing units, links, routes.
//!
//! A machine file describes one machine in TOML (format: `docs/machine-format.md`). Loading goes
//! in two steps: serde reads the TOML into the raw structures of [`mod@format`], which keep
//! source spans; validation (the private `validate` module) then checks every value and
//! reference and builds a [`Machine`], whose contents are typed, in SI units (named in the
//! fields: `capacity_bytes`, `latency_s`, ...) and consistent: every route names existing links
//! and memory nodes, every GPU memory node can be reached from RAM and back, no bandwidth is zero.
//!
//! Every error is an [`InputError`] naming the file, the line and the field path
//! (`links[2].bandwidth`), and saying what was expected.
//!
//! ```
//! let text = r#"
//! [machine]
//! name = "tiny"
//! [[memory_nodes]]
//! name = "RAM"
//! kind = "ram"
//! capacity = "16 GiB"
//! [[memory_nodes]]
//! name = "GPU0"
//! kind = "gpu"
//! capacity = "16 GiB"
//! [[cpus]]
//! count = 4
//! model = "some CPU"
//! memory = "RAM"
//! [[gpus]]
//! name = "GPU0"
//! model = "some GPU"
//! memory = "GPU0"
//! [[links]]
//! name = "PCIe"
//! bandwidth = "12 GB/s"
//! latency = "5 us"
//! [[routes]]
//! src = "RAM"
//! dst = "GPU0"
//! links = ["PCIe"]
//! symmetric = true
//! "#;
//! let m = hetsim_platform::machine::from_str(text, "tiny.toml").unwrap();
//! let ram = m.memory_node_by_name("RAM").unwrap().id;
//! let gpu = m.memory_node_by_name("GPU0").unwrap().id;
//! assert_eq!(m.route(gpu, ram).unwrap().hops.len(), 1);
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use hetsim_core::error::{InputError, read_input};
use hetsim_core::files::{InputFiles, RoleFile};
use hetsim_models::PerfModels;

pub mod format;
mod summary;
pub mod transfer_model;
mod validate;
pub use validate::apply_runtime;
pub(crate) use validate::{Ctx as FileCtx, toml_error};

pub use transfer_model::{Affine, ModelError, TransferModel};

/// Index of a memory node in [`Machine::memory_nodes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemNodeId(pub u32);

/// Index of a link in [`Machine::links`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MachineLinkId(pub u32);

pub use hetsim_models::GpuId;

impl MemNodeId {
    /// The index as `usize`, for slices.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl MachineLinkId {
    /// The index as `usize`, for slices.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a memory node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// Host memory (a NUMA node, or all of it).
    Ram,
    /// A GPU's device memory.
    Gpu,
}

impl fmt::Display for MemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemKind::Ram => "ram",
            MemKind::Gpu => "gpu",
        })
    }
}

/// A memory node: where data replicas live.
#[derive(Debug, Clone, PartialEq)]
pub struct MemNode {
    /// Its index in [`Machine::memory_nodes`].
    pub id: MemNodeId,
    /// "RAM", "CUDA0", ...
    pub name: String,
    /// RAM or GPU memory.
    pub kind: MemKind,
    /// Usable capacity.
    pub capacity_bytes: u64,
}

/// A group of identical CPU cores working in one memory node.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuGroup {
    /// Processor model, e.g. "Intel Xeon X5650".
    pub model: String,
    /// Number of cores (at least 1).
    pub count: u32,
    /// The RAM node the cores work in.
    pub memory: MemNodeId,
    /// Peak rate of one core, if given.
    pub flops_per_sec_per_core: Option<f64>,
}

/// A GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    /// Its index in [`Machine::gpus`].
    pub id: GpuId,
    /// "CUDA0", ...
    pub name: String,
    /// "Tesla M2070", ...
    pub model: String,
    /// Its device memory (a memory node of kind GPU, used by no other GPU).
    pub memory: MemNodeId,
    /// Peak compute rate, if given.
    pub peak_flops_per_sec: Option<f64>,
    /// Peak device-memory bandwidth, if given.
    pub memory_bandwidth_bytes_per_sec: Option<f64>,
}

/// How a link's capacity is shared among the flows crossing it (SimGrid's link policies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkPolicy {
    /// Max-min fair sharing of the capacity among all flows (SimGrid SHARED).
    Shared,
    /// Each flow may use the full capacity, independently of the others (SimGrid FATPIPE).
    Fatpipe,
    /// Two independent shared capacities, one per direction (SimGrid SPLITDUPLEX). Routes name
    /// the directions `NAME_UP` and `NAME_DOWN`.
    SplitDuplex,
}

impl LinkPolicy {
    /// The spelling used in machine files.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkPolicy::Shared => "shared",
            LinkPolicy::Fatpipe => "fatpipe",
            LinkPolicy::SplitDuplex => "split-duplex",
        }
    }
}

impl fmt::Display for LinkPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A link: a capacity shared by the flows whose routes cross it.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Its index in [`Machine::links`].
    pub id: MachineLinkId,
    /// Unique name ("Host", "RAM-CUDA0", "PCI:0000:[00-0f] up").
    pub name: String,
    /// Capacity, positive and finite (per direction for split-duplex links).
    pub bandwidth_bytes_per_sec: f64,
    /// Latency each flow pays once before it starts moving bytes.
    pub latency_s: f64,
    /// LinkPolicy policy.
    pub sharing: LinkPolicy,
}

/// Which half of a split-duplex link a route uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `NAME_UP`.
    Up,
    /// `NAME_DOWN`.
    Down,
}

impl Direction {
    /// The other direction.
    pub fn reversed(self) -> Direction {
        match self {
            Direction::Up => Direction::Down,
            Direction::Down => Direction::Up,
        }
    }

    /// `_UP` or `_DOWN`, the suffix routes use.
    pub fn suffix(self) -> &'static str {
        match self {
            Direction::Up => "_UP",
            Direction::Down => "_DOWN",
        }
    }
}

/// One link crossed by a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    /// The link.
    pub link: MachineLinkId,
    /// For a split-duplex link, the direction used; `None` for shared and fatpipe links.
    pub direction: Option<Direction>,
}

/// How transfers from one memory node to another travel.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Source memory node.
    pub src: MemNodeId,
    /// Destination memory node.
    pub dst: MemNodeId,
    /// Links crossed, in order. A link may appear more than once (StarPU's GPU-GPU routes cross
    /// `Host` twice); may be empty only when `model` is set.
    pub hops: Vec<Hop>,
    /// If set, transfer durations on this route come from this model instead of fluid sharing
    /// of `hops`.
    pub model: Option<TransferModel>,
    /// What the runtime's schedulers predict a transfer on this route costs, if it differs from
    /// the links: StarPU's schedulers read the bus benchmark's latency and bandwidth
    /// (`bus/<host>.latency`, `.bandwidth`) while its simulated transfers cross the platform's
    /// links, whose figures the platform file rounds and takes per direction.
    pub estimate: Option<Affine>,
    /// True if this route was added as the reverse of a route marked `symmetric = true`.
    pub generated_by_symmetry: bool,
}

/// Runtime overheads and policies (`[runtime]`). Defaults are StarPU-SimGrid's, from Stanisic et al. 2015
/// Table 2 and StarPU's simulation code (see `docs/machine-format.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeConfig {
    /// Cost of allocating GPU memory (cudaMalloc). Default 175 µs.
    pub cuda_malloc_s: f64,
    /// Cost of freeing GPU memory (cudaFree). Default 125 µs (Stanisic et al. 2015 Table 2); StarPU's
    /// simulation code charges 750 µs, so the realistic range is 125-750 µs.
    pub cuda_free_s: f64,
    /// Cost of allocating pinned host memory, per MiB. Default 650 µs.
    pub pinned_alloc_s_per_mib: f64,
    /// Queueing cost paid by every transfer before it starts. Default 10 µs.
    pub transfer_queue_s: f64,
    /// Cost of queueing a task to a GPU once its inputs are there, paid before the kernel
    /// can start (StarPU's `_starpu_simgrid_submit_job`, `STARPU_SIMGRID_QUEUE_MALLOC_COST`).
    /// Default 10 µs.
    pub kernel_queue_s: f64,
    /// Simulated time the thread that releases tasks spends on each push
    /// (`STARPU_SIMGRID_TASK_PUSH_COST`, `starpu-reference.md`'s overheads table): the worker
    /// woken by a later push reaches its pop later, and the releasing thread pops after all
    /// its pushes. Default 1 µs (StarPU 1.4 as the reference gives it); StarPU 1.3 has no such
    /// cost (0).
    pub push_s: f64,
    /// Simulated time the submitting thread spends on each task it submits, after the push of a
    /// task ready at submission (`STARPU_SIMGRID_TASK_SUBMIT_COST`, `task.c`): tasks reach the
    /// scheduler one after the other, not all at once. A "will not be used" hint whose writer
    /// has not ended costs one more (StarPU submits an acquire task for it). Default 1 µs; 0
    /// submits every task at the start.
    pub submit_s: f64,
    /// Simulated time a worker spends on each buffer of a task it has popped, requesting it,
    /// before the task can run (`STARPU_SIMGRID_FETCHING_INPUT_COST`, `coherency.c`'s
    /// `_starpu_fetch_task_input` sleeps after each buffer's fetch request): a task starts no
    /// earlier than its pop plus this times its distinct handles. Default 1 µs; 0 starts it at
    /// the pop when its data are there.
    pub fetch_input_s: f64,
    /// How long a work-stealing thief whose trylock of its victim failed sleeps before it
    /// pops again (StarPU 1.4's `ws_pop_task` in SimGrid builds sleeps 1 µs and wakes
    /// itself). Default 1 µs; 0 leaves it asleep until a push wakes it, as StarPU 1.3.10
    /// does (it returns without sleeping or waking itself).
    pub steal_retry_s: f64,
    /// Whether a work-stealing thief takes the last task of its victim's highest priority
    /// level (StarPU 1.4's `starpu_st_prio_deque_deque_task_for_worker` walks from
    /// `list_back_highest` backwards). Default true; false takes the first, as StarPU 1.3.10's
    /// `REMOVE_TASK`, which walks from the list's beginning whatever end it is given.
    pub steal_from_back: bool,
    /// Whether small GPU allocations are carved out of 32 MiB chunks, so that only a new
    /// chunk pays `cuda_malloc` (StarPU's suballocator, `malloc.c`, `STARPU_SUBALLOCATOR`).
    /// Default true.
    pub suballocator: bool,
    /// Whether a transfer takes time. `false` makes every copy complete the instant it is
    /// started, with no queueing cost and no bandwidth used, as StarPU-SimGrid does with
    /// `STARPU_SIMGRID_TRANSFER_COST=0` (`_starpu_simgrid_transfer` returns at once). Default
    /// true.
    pub transfer_cost: bool,
    /// Below this percentage of clean chunks on a GPU, its dirty chunks are written back to RAM
    /// ahead of need (StarPU's `starpu_memchunk_tidy`, `STARPU_MINIMUM_CLEAN_BUFFERS`). Default 5;
    /// 0 never tidies.
    pub min_clean_pct: u32,
    /// How far such a tidying goes: until this percentage of the chunks is clean
    /// (`STARPU_TARGET_CLEAN_BUFFERS`). Default 10.
    pub target_clean_pct: u32,
    /// How many requests of one (source, destination) pair may be submitted and unfinished
    /// for a fetch, a prefetch or an idle request to be submitted (StarPU's
    /// `MAX_PENDING_REQUESTS_PER_NODE` and siblings). Default 5 / 2 / 1.
    pub pending_limits: PendingLimits,
    /// How many tasks a GPU worker holds at once (pops ahead). Default 2.
    pub gpu_pipeline_depth: u32,
    /// Whether each GPU reserves a CPU core to drive it. Default true.
    pub gpu_driver_cores: bool,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cuda_malloc_s: 175e-6,
            cuda_free_s: 125e-6,
            pinned_alloc_s_per_mib: 650e-6,
            transfer_queue_s: 10e-6,
            kernel_queue_s: 10e-6,
            push_s: 1e-6,
            submit_s: 1e-6,
            fetch_input_s: 1e-6,
            steal_retry_s: 1e-6,
            steal_from_back: true,
            suballocator: true,
            transfer_cost: true,
            min_clean_pct: 5,
            target_clean_pct: 10,
            pending_limits: PendingLimits::default(),
            gpu_pipeline_depth: 2,
            gpu_driver_cores: true,
        }
    }
}

/// StarPU's limits on pending data requests per (handling node, peer, direction)
/// (`src/datawizard/data_request.h`; `starpu-reference.md` §1a gives 5 / 2 / 1 for StarPU 1.4,
/// the 2020 header 20 / 10 / 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingLimits {
    /// A fetch is submitted while fewer than this many are pending.
    pub fetch: u32,
    /// A prefetch is submitted while fewer than this many are pending.
    pub prefetch: u32,
    /// An idle request is submitted while fewer than this many are pending.
    pub idle: u32,
}

impl Default for PendingLimits {
    fn default() -> Self {
        PendingLimits {
            fetch: 5,
            prefetch: 2,
            idle: 1,
        }
    }
}

impl RuntimeConfig {
    /// Time to allocate `bytes` of pinned host memory.
    pub fn pinned_alloc_secs(&self, bytes: f64) -> f64 {
        self.pinned_alloc_s_per_mib * bytes.max(0.0) / (1024.0 * 1024.0)
    }
}

/// A validated machine: memory nodes, processing units, links, routes and runtime settings.
///
/// Built only by [`load`] or [`from_str`], so its invariants hold: ids index their slices, names
/// are unique, routes refer to existing nodes and links, bandwidths are positive and finite.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    name: String,
    description: Option<String>,
    memory_nodes: Vec<MemNode>,
    cpus: Vec<CpuGroup>,
    gpus: Vec<Gpu>,
    links: Vec<Link>,
    routes: Vec<Route>,
    route_index: BTreeMap<(MemNodeId, MemNodeId), usize>,
    runtime: RuntimeConfig,
    perf_models: PerfModels,
    /// Per GPU (by id), CPU core indices sorted by proximity; empty when not given.
    affinity: Vec<Vec<u32>>,
    /// The machine file and the files it includes.
    sources: InputFiles,
}

impl Machine {
    /// The machine's name (`[machine] name`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The files the machine was read from: the machine file, then each included codelet
    /// file (commands refuse to write over them).
    pub fn source_files(&self) -> &[RoleFile] {
        &self.sources.0
    }

    /// The one-line description, if any.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Memory nodes, indexed by [`MemNodeId`].
    pub fn memory_nodes(&self) -> &[MemNode] {
        &self.memory_nodes
    }

    /// The memory node with this id.
    pub fn memory_node(&self, id: MemNodeId) -> Option<&MemNode> {
        self.memory_nodes.get(id.index())
    }

    /// The memory node with this name.
    pub fn memory_node_by_name(&self, name: &str) -> Option<&MemNode> {
        self.memory_nodes.iter().find(|n| n.name == name)
    }

    /// CPU core groups, in file order.
    pub fn cpus(&self) -> &[CpuGroup] {
        &self.cpus
    }

    /// Total number of CPU cores (including those that will drive GPUs).
    pub fn cpu_cores(&self) -> u32 {
        self.cpus.iter().map(|c| c.count).sum()
    }

    /// GPUs, indexed by [`GpuId`].
    pub fn gpus(&self) -> &[Gpu] {
        &self.gpus
    }

    /// Links, indexed by [`MachineLinkId`].
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The link with this id.
    pub fn link(&self, id: MachineLinkId) -> Option<&Link> {
        self.links.get(id.index())
    }

    /// The link with this name (the base name for split-duplex links, without `_UP`/`_DOWN`).
    pub fn link_by_name(&self, name: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.name == name)
    }

    /// All routes: those of the file in order, each followed by its reverse if it was marked
    /// `symmetric`.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The route from `src` to `dst`, if the file defines one.
    pub fn route(&self, src: MemNodeId, dst: MemNodeId) -> Option<&Route> {
        self.route_index.get(&(src, dst)).map(|&i| &self.routes[i])
    }

    /// Runtime overheads and policies.
    pub fn runtime(&self) -> &RuntimeConfig {
        &self.runtime
    }

    /// Kernel performance models (`[[codelets]]`, `[perfmodels]`), empty if the file has none.
    pub fn perf_models(&self) -> &PerfModels {
        &self.perf_models
    }

    /// Replace the runtime settings `raw` gives (a scenario's `[runtime]`, already checked
    /// with [`apply_runtime`]; errors carry the field only). Driver cores asked for on a
    /// machine with more GPUs than cores are refused, as in a machine file.
    pub fn override_runtime(&mut self, raw: &format::RawRuntime) -> Result<(), InputError> {
        let mut rt = self.runtime.clone();
        apply_runtime(raw, &mut rt, &|_, field, msg| {
            InputError::new(msg).at_field(field)
        })?;
        if rt.gpu_driver_cores && self.gpus().len() > self.cpu_cores() as usize {
            return Err(InputError::new(validate::too_few_driver_cores(
                self.gpus().len(),
                u64::from(self.cpu_cores()),
            ))
            .at_field("runtime.gpu_driver_cores"));
        }
        self.runtime = rt;
        Ok(())
    }

    /// Set the simulated costs of StarPU's runtime to 0 (device allocation and free, pinned
    /// allocation, transfer and kernel queueing, push, submission, fetching input): for applications that are not StarPU
    /// programs (the MPI programs of the cluster workloads) and for StarPU's "costs off" runs.
    pub fn clear_runtime_costs(&mut self) {
        let rt = &mut self.runtime;
        rt.cuda_malloc_s = 0.0;
        rt.cuda_free_s = 0.0;
        rt.pinned_alloc_s_per_mib = 0.0;
        rt.transfer_queue_s = 0.0;
        rt.kernel_queue_s = 0.0;
        rt.push_s = 0.0;
        rt.submit_s = 0.0;
        rt.fetch_input_s = 0.0;
    }

    /// Draw every codelet's durations with `noise`, whatever the file says (a scenario's
    /// `run.noise`).
    pub fn set_noise_everywhere(&mut self, noise: hetsim_models::Noise) {
        self.perf_models.set_noise_everywhere(noise);
    }

    /// Multiply each duration of the kernel models by its own factor uniform in
    /// `[1 - rel, 1 + rel]`, drawn from a generator seeded with `seed`
    /// ([`PerfModels::perturb_means`](hetsim_models::PerfModels::perturb_means)).
    pub fn perturb_means(&mut self, rel: f64, seed: u64) -> Result<(), hetsim_models::ParamError> {
        // A stream of its own: the run's generator, seeded alike, draws the same numbers.
        let mut rng = hetsim_models::rng_from_seed(seed ^ 0x6d6f_6465_6c73_0000);
        self.perf_models.perturb_means(rel, &mut rng)
    }

    /// The CPU cores nearest a GPU, nearest first (`[affinity]`, from StarPU's
    /// `bus/<host>.affinity`): core indices from 0 to [`Machine::cpu_cores`] − 1, counted across
    /// the `[[cpus]]` groups in file order. Empty if the file gives none for this GPU; a
    /// scheduler such as `lws` then treats every core as equally near.
    pub fn gpu_affinity(&self, gpu: GpuId) -> &[u32] {
        self.affinity.get(gpu.index()).map_or(&[], Vec::as_slice)
    }

    /// The name a route uses for a hop: the link's name, plus `_UP`/`_DOWN` for split-duplex
    /// links (the convention of SimGrid and of `hetsim net` cases).
    pub fn hop_name(&self, hop: &Hop) -> String {
        let base = self.link(hop.link).map_or("?", |l| l.name.as_str());
        match hop.direction {
            Some(d) => format!("{base}{}", d.suffix()),
            None => base.to_string(),
        }
    }

    /// Sum of the latencies of a route's links: what a flow waits before moving bytes under
    /// fluid sharing.
    pub fn route_latency_s(&self, route: &Route) -> f64 {
        route
            .hops
            .iter()
            .filter_map(|h| self.link(h.link))
            .map(|l| l.latency_s)
            .sum()
    }

    /// The smallest link bandwidth on a route: its rate when nothing else is using it.
    /// `None` for a route without links.
    pub fn route_bottleneck_bytes_per_sec(&self, route: &Route) -> Option<f64> {
        route
            .hops
            .iter()
            .filter_map(|h| self.link(h.link))
            .map(|l| l.bandwidth_bytes_per_sec)
            .reduce(f64::min)
    }

    /// A human-readable summary: devices, memories, links, routes, runtime settings.
    pub fn summary(&self) -> String {
        summary::summary(self)
    }
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

/// Read and validate the machine file at `path`.
pub fn load(path: impl AsRef<Path>) -> Result<Machine, InputError> {
    let path = path.as_ref();
    let text = read_input(path)?;
    from_str(&text, path)
}

/// Validate the machine file `text`; `path` is only used in error messages.
pub fn from_str(text: &str, path: impl AsRef<Path>) -> Result<Machine, InputError> {
    validate::parse_and_validate(text, path.as_ref())
}
