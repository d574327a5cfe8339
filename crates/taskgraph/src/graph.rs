//! The task graph: tasks, data handles, accesses, and the dependencies inferred from them.

use hetsim_core::InputError;
pub use hetsim_platform::cluster::NodeId;
use rustc_hash::FxHashMap;
use std::fmt;
use std::sync::OnceLock;

use crate::params::Params;

/// Index of a task in its graph, in submission order (0 is the first task submitted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u32);

/// Index of a data handle in its graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HandleId(pub u32);

/// Index of an interned codelet name in its graph (tasks carry this, not a `String`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeletId(pub u16);

impl TaskId {
    /// The id as a `usize` index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl HandleId {
    /// The id as a `usize` index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl CodeletId {
    /// The id as a `usize` index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {}", self.0)
    }
}

/// How a task accesses a handle (StarPU's `STARPU_R`, `STARPU_W`, `STARPU_RW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessMode {
    /// Read only: the data must be valid where the task runs.
    R,
    /// Write only: the old contents are not needed (no transfer in), but they are replaced.
    W,
    /// Read and write.
    RW,
}

impl AccessMode {
    /// Whether the task needs the current contents.
    pub fn reads(self) -> bool {
        matches!(self, AccessMode::R | AccessMode::RW)
    }

    /// Whether the task modifies the data.
    pub fn writes(self) -> bool {
        matches!(self, AccessMode::W | AccessMode::RW)
    }
}

/// One buffer of a task: which handle, and how it is accessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The data handle.
    pub handle: HandleId,
    /// The access mode.
    pub mode: AccessMode,
}

impl Access {
    /// Shorthand for `Access { handle, mode }`.
    pub fn new(handle: HandleId, mode: AccessMode) -> Self {
        Access { handle, mode }
    }
}

/// Position of a tile in a tiled matrix, for traces and debugging only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tile {
    /// Which matrix (`'A'`, `'B'`, `'C'`).
    pub matrix: char,
    /// Tile row.
    pub row: u32,
    /// Tile column.
    pub col: u32,
}

impl fmt::Display for Tile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({},{})", self.matrix, self.row, self.col)
    }
}

/// A piece of data tasks access (StarPU's `starpu_data_handle_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle {
    /// Size in bytes (for a matrix tile: rows × cols × element size). This is what moves on a
    /// link and what occupies device memory.
    pub size_bytes: u64,
    /// Element counts `(rows, cols)` for a matrix handle. StarPU's matrix footprint hashes these
    /// two numbers (not the element size), so a performance-model importer can recompute the
    /// footprints of the sample files.
    pub dims: Option<(u32, u32)>,
    /// Tile coordinates, for traces and debugging.
    pub tile: Option<Tile>,
    /// The cluster node the handle lives on: its data starts in that node's host memory, and
    /// only tasks of that node access it (node 0 on a single machine). A distributed graph
    /// gives each node that uses a piece of data its own handle ([`crate::distributed`]).
    pub node: NodeId,
    /// Whether the handle holds data at the start (valid in its [`Handle::home`]). A copy
    /// that a message will bring holds nothing until then.
    pub starts_valid: bool,
    /// Where its data starts: its node's host memory (StarPU's default), or a GPU of the node's
    /// rank (workloads whose data lives on the device, such as HPL's local matrix).
    pub home: Home,
}

/// Where a handle's data starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Home {
    /// Host memory.
    #[default]
    Ram,
    /// The rank's `n`-th GPU (in the order of its GPU workers).
    Gpu(u32),
}

/// A kind of processing unit, for durations a task fixes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// A CPU core.
    Cpu,
    /// A GPU.
    Gpu,
}

impl Unit {
    fn index(self) -> usize {
        match self {
            Unit::Cpu => 0,
            Unit::Gpu => 1,
        }
    }
}

impl Handle {
    /// A handle of `size_bytes` on node 0, with no shape or coordinates.
    pub fn bytes(size_bytes: u64) -> Self {
        Handle {
            size_bytes,
            dims: None,
            tile: None,
            node: NodeId(0),
            starts_valid: true,
            home: Home::Ram,
        }
    }
}

/// What a task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// Runs its codelet on a worker of its node.
    Compute,
    /// A message between nodes; no worker runs it. Either StarPU-MPI's send and receive of one
    /// piece of data (it reads its first access on node `from` and writes its second on node
    /// `to`), or, without accesses, a payload of [`TaskGraph::payload_bytes`] bytes from `src`
    /// on `from` to `dst` on `to` ([`TaskGraphBuilder::submit_payload`]).
    Message {
        /// The sending node (owner of the data read).
        from: NodeId,
        /// The receiving node.
        to: NodeId,
        /// Where a payload's bytes are on the sender (data messages: ignored).
        src: Place,
        /// Where a payload's bytes go on the receiver (data messages: ignored).
        dst: Place,
    },
    /// Time that passes without occupying any worker (a fixed overhead, a synchronisation):
    /// [`TaskGraph::delay_s`] after its predecessors end.
    Delay,
}

/// Where a payload message's bytes are on one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Place {
    /// The node's host memory.
    #[default]
    Host,
    /// The rank's `n`-th GPU (in the order of its GPU workers), `n` below [`Place::MAX_GPUS`].
    Device(u16),
}

impl Place {
    /// GPUs a place can name: `Device(n)` needs `n < MAX_GPUS`.
    pub const MAX_GPUS: u16 = u16::MAX;

    /// In 16 bits: the host 0, GPU `n` `n + 1`.
    fn packed(self) -> u16 {
        match self {
            Place::Host => 0,
            Place::Device(n) => n + 1,
        }
    }

    fn unpacked(p: u16) -> Place {
        match p {
            0 => Place::Host,
            n => Place::Device(n - 1),
        }
    }
}

/// One task: a codelet applied to some buffers.
///
/// Thirty-two bytes: a graph holds tens of millions of them (HPL at thousands of GPUs), so the
/// kind is stored as a tag, a message's sender and places in the word a computation keeps its
/// flops in (a message has none), and the model size shares a word with the buffer count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Task {
    /// A computation's or delay's flops (`f64` bits); a message's sending node in the low 32
    /// bits and its places ([`Place::packed`]) in the two high 16-bit halves.
    word: u64,
    /// [`Task::model_size_bytes`] in the low 48 bits, the buffer count in the high 16.
    size_and_count: u64,
    /// Scheduling priority; larger runs first under priority-aware schedulers (StarPU's
    /// `STARPU_PRIORITY`). 0 is StarPU's default priority.
    pub priority: i32,
    /// The node it runs on (node 0 on a single machine); for a message, the receiving node.
    pub node: NodeId,
    first_access: u32,
    /// The codelet (performance-model symbol) name, interned in the graph.
    pub codelet: CodeletId,
    kind: KindTag,
}

const _: () = assert!(std::mem::size_of::<Task>() == 32);

/// [`TaskKind`] without its fields, as [`Task`] stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KindTag {
    Compute,
    Message,
    Delay,
}

/// Largest model size a task records, bytes (48 bits, 256 TiB); larger sums saturate there.
pub const MAX_MODEL_SIZE_BYTES: u64 = (1 << 48) - 1;

impl Task {
    fn new(
        (codelet, flops, priority): (CodeletId, f64, i32),
        node: NodeId,
        kind: TaskKind,
        (first_access, access_count): (u32, u16),
        model_size_bytes: u64,
    ) -> Task {
        let (tag, word) = match kind {
            TaskKind::Compute => (KindTag::Compute, flops.to_bits()),
            TaskKind::Delay => (KindTag::Delay, flops.to_bits()),
            TaskKind::Message { from, src, dst, .. } => (
                KindTag::Message,
                u64::from(from.0) | u64::from(src.packed()) << 32 | u64::from(dst.packed()) << 48,
            ),
        };
        Task {
            word,
            size_and_count: model_size_bytes.min(MAX_MODEL_SIZE_BYTES)
                | u64::from(access_count) << 48,
            priority,
            node,
            first_access,
            codelet,
            kind: tag,
        }
    }

    /// What the task does: a computation, a message or a delay.
    pub fn kind(&self) -> TaskKind {
        match self.kind {
            KindTag::Compute => TaskKind::Compute,
            KindTag::Delay => TaskKind::Delay,
            KindTag::Message => TaskKind::Message {
                from: NodeId(self.word as u32),
                to: self.node,
                src: Place::unpacked((self.word >> 32) as u16),
                dst: Place::unpacked((self.word >> 48) as u16),
            },
        }
    }

    /// Floating-point operations, as StarPU's `STARPU_FLOPS` (used for GFlop/s figures, not for
    /// the duration lookup); 0 for a message.
    pub fn flops(&self) -> f64 {
        match self.kind {
            KindTag::Message => 0.0,
            _ => f64::from_bits(self.word),
        }
    }

    /// Whether the task is a message between nodes.
    pub fn is_message(&self) -> bool {
        self.kind == KindTag::Message
    }

    /// Whether a worker runs the task (a computation, not a message or a delay).
    pub fn is_compute(&self) -> bool {
        self.kind == KindTag::Compute
    }

    /// Whether the task is a [`TaskKind::Delay`].
    pub fn is_delay(&self) -> bool {
        self.kind == KindTag::Delay
    }

    /// The `size` StarPU's history models are indexed by next to the footprint: the sum of the
    /// sizes in bytes of all the task's buffers (`_starpu_job_get_data_size`), at most
    /// [`MAX_MODEL_SIZE_BYTES`]. For a Cholesky `gemm` on 960×960 single-precision tiles this is
    /// 3 × 960² × 4 = 11,059,200, the value in the `size` column of `chol_model_gemm.<host>`.
    pub fn model_size_bytes(&self) -> u64 {
        self.size_and_count & MAX_MODEL_SIZE_BYTES
    }

    fn set_model_size_bytes(&mut self, bytes: u64) {
        self.size_and_count =
            (self.size_and_count & !MAX_MODEL_SIZE_BYTES) | bytes.min(MAX_MODEL_SIZE_BYTES);
    }

    /// Number of buffers the task accesses.
    pub fn access_count(&self) -> usize {
        (self.size_and_count >> 48) as usize
    }
}

/// Largest number of buffers one task may access. StarPU's static limit is
/// `STARPU_NMAXBUFS` (8 by default); dynamic buffers go further, so allow plenty.
pub const MAX_ACCESSES_PER_TASK: usize = u16::MAX as usize;

/// A task graph with frozen dependencies, ready for the runtime.
///
/// Successor lists are stored in compressed form (one array of ids and one of offsets), in
/// increasing task order, so iterating them is deterministic and cache-friendly. The runtime
/// needs only those and the in-degrees ([`TaskGraph::in_degrees`]); the predecessor lists are
/// built from them the first time [`TaskGraph::predecessors`] is asked for, so that a graph of
/// tens of millions of tasks does not carry its edges twice. `&TaskGraph` implements
/// petgraph's visit traits over the same arrays (node `i` is `TaskId(i)`, an edge `a → b`
/// means `b` waits for `a`), so petgraph's algorithms run on it without a copy of the graph
/// (those that walk edges backwards, `toposort` among them, build the predecessor lists).
#[derive(Debug, Clone)]
pub struct TaskGraph {
    codelets: Vec<String>,
    /// Per codelet: its GPU implementation is synchronous (see
    /// [`TaskGraphBuilder::gpu_synchronous`]).
    gpu_sync: Vec<bool>,
    handles: Vec<Handle>,
    tasks: Vec<Task>,
    accesses: Vec<Access>,
    succ_offsets: Vec<u32>,
    succ: Vec<TaskId>,
    /// The predecessor lists (offsets, ids), transposed from the successors on first use.
    pred: OnceLock<(Vec<u32>, Vec<TaskId>)>,
    wont_use: Vec<WontUse>,
    /// Per task, the figures its kind gives meaning to (see [`TaskGraphBuilder::fix_duration`],
    /// [`TaskGraphBuilder::submit_delay`], [`TaskGraphBuilder::submit_payload`]).
    params: Params,
    /// Every edge goes from an earlier task to a later one: submission order is a
    /// topological order.
    forward: bool,
    /// Per task, the worker it ran on in a recorded run ([`TaskGraphBuilder::record_worker`]);
    /// empty when no task has one.
    recorded: Vec<Option<RecordedWorker>>,
    /// Synchronous acquisitions the program makes before its first task
    /// ([`TaskGraphBuilder::startup_acquires`]).
    startup_acquires: u32,
}

/// The worker a task ran on in a recorded run (the `WorkerId` of StarPU's `tasks.rec`), for
/// replaying the recorded mapping. Workers are numbered as StarPU and hetsim both number them:
/// GPUs first, then CPU cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedWorker {
    /// The worker's number in the recorded run.
    pub id: u32,
    /// Its kind.
    pub unit: Unit,
}

/// A "will not be used" hint on a handle, placed in submission order right after task `after`
/// (StarPU's `starpu_data_wont_use`, called by the application between two submissions).
///
/// StarPU implements the call as a sequentially consistent *read* acquisition of the handle
/// (`starpu_data_acquire_on_node_cb_sequential_consistency_quick(.., STARPU_R, ..)` in
/// `src/datawizard/interfaces/data_interface.c`): like a reading task submitted at that point,
/// it waits only for the last task submitted before it that *writes* the handle — readers run
/// concurrently with it. The runtime then marks the handle's device replicas as first eviction
/// victims and asks for an idle-priority copy to main memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WontUse {
    /// The handle that will not be used soon.
    pub handle: HandleId,
    /// The hint comes after this task in submission order.
    pub after: TaskId,
}

impl TaskGraph {
    /// The worker `task` ran on in the recorded run the graph was read from, if known.
    pub fn recorded_worker(&self, task: TaskId) -> Option<RecordedWorker> {
        self.recorded.get(task.index()).copied().flatten()
    }

    /// Whether some task has a recorded worker.
    pub fn has_recorded_workers(&self) -> bool {
        self.recorded.iter().any(Option::is_some)
    }

    /// Fix `task`'s duration on `unit` once the graph is built, as
    /// [`TaskGraphBuilder::fix_duration`] does before: for readers of recorded runs that learn
    /// only from the machine which tasks have no kernel model.
    pub fn fix_duration(&mut self, task: TaskId, unit: Unit, secs: f64) -> Result<(), InputError> {
        let Some(t) = self.tasks.get(task.index()) else {
            return Err(InputError::new(format!(
                "duration of task {} of {}",
                task.0,
                self.tasks.len()
            )));
        };
        if !(secs.is_finite() && secs >= 0.0) {
            return Err(InputError::new(format!(
                "duration {secs} s of task {} ({}): expected a finite duration >= 0",
                task.0,
                self.codelets[t.codelet.index()]
            )));
        }
        self.params
            .set(task.index(), unit.index(), secs, self.tasks.len());
        Ok(())
    }

    /// The "will not be used" hints, in submission order.
    pub fn wont_use_hints(&self) -> &[WontUse] {
        &self.wont_use
    }

    /// How many synchronous acquisitions of data the program makes before it submits its
    /// first task ([`TaskGraphBuilder::startup_acquires`]).
    pub fn startup_acquires(&self) -> u32 {
        self.startup_acquires
    }

    /// For each hint of [`TaskGraph::wont_use_hints`], in order, the task it waits for: the last
    /// task submitted before the hint that writes the handle, or `None` if no task before it
    /// writes the handle (the hint then holds from the start). O(accesses + hints).
    pub fn wont_use_triggers(&self) -> Vec<Option<TaskId>> {
        let mut last_writer: Vec<Option<TaskId>> = vec![None; self.handles.len()];
        let mut out = Vec::with_capacity(self.wont_use.len());
        let mut next_task = 0usize;
        for hint in &self.wont_use {
            while next_task <= hint.after.index() {
                let t = TaskId(next_task as u32);
                for a in self.accesses(t) {
                    if a.mode.writes() {
                        last_writer[a.handle.index()] = Some(t);
                    }
                }
                next_task += 1;
            }
            out.push(last_writer[hint.handle.index()]);
        }
        out
    }

    /// The duration `task` fixes itself on `unit`: `None` if it fixes none (its codelet's
    /// kernel model decides) or cannot run there; see [`TaskGraph::fixes_duration`].
    #[inline]
    pub fn fixed_duration_s(&self, task: TaskId, unit: Unit) -> Option<f64> {
        if !self.tasks[task.index()].is_compute() {
            return None;
        }
        let d = self.params.get(task.index(), unit.index());
        (!d.is_nan()).then_some(d)
    }

    /// How long a [`TaskKind::Delay`] lasts (0 for other tasks).
    #[inline]
    pub fn delay_s(&self, task: TaskId) -> f64 {
        if self.tasks[task.index()].is_delay() {
            zero_if_unset(self.params.get(task.index(), 0))
        } else {
            0.0
        }
    }

    /// The bytes a payload message carries; `None` for a data message (its handle's size) and
    /// for other tasks.
    #[inline]
    pub fn payload_bytes(&self, task: TaskId) -> Option<f64> {
        let t = &self.tasks[task.index()];
        if !t.is_message() || t.access_count() > 0 {
            return None;
        }
        Some(zero_if_unset(self.params.get(task.index(), 0)))
    }

    /// Whether `task` fixes its durations itself ([`TaskGraphBuilder::fix_duration`]): then it
    /// runs only on the units it fixes a duration for, in exactly that time, whatever the
    /// machine's kernel models say.
    #[inline]
    pub fn fixes_duration(&self, task: TaskId) -> bool {
        self.tasks[task.index()].is_compute() && self.params.any(task.index())
    }

    /// Number of cluster nodes the graph uses (1 + the largest node of a task or handle).
    pub fn nodes(&self) -> u32 {
        let t = self.tasks.iter().map(|t| t.node.0);
        let h = self.handles.iter().map(|h| h.node.0);
        t.chain(h).max().map_or(1, |n| n + 1)
    }

    /// Number of tasks.
    pub fn num_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// Number of dependency edges.
    pub fn num_edges(&self) -> usize {
        self.succ.len()
    }

    /// All tasks, indexed by [`TaskId`].
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// One task. Panics if `id` is not a task of this graph.
    #[inline]
    pub fn task(&self, id: TaskId) -> &Task {
        &self.tasks[id.index()]
    }

    /// Task ids in submission order.
    pub fn task_ids(&self) -> impl ExactSizeIterator<Item = TaskId> + '_ {
        (0..self.tasks.len() as u32).map(TaskId)
    }

    /// The buffers of a task, in the codelet's buffer order.
    #[inline]
    pub fn accesses(&self, id: TaskId) -> &[Access] {
        let t = &self.tasks[id.index()];
        let start = t.first_access as usize;
        &self.accesses[start..start + t.access_count()]
    }

    /// All handles, indexed by [`HandleId`].
    pub fn handles(&self) -> &[Handle] {
        &self.handles
    }

    /// One handle. Panics if `id` is not a handle of this graph.
    #[inline]
    pub fn handle(&self, id: HandleId) -> &Handle {
        &self.handles[id.index()]
    }

    /// The interned codelet names, indexed by [`CodeletId`].
    pub fn codelet_names(&self) -> &[String] {
        &self.codelets
    }

    /// The name of a codelet. Panics if `id` is not a codelet of this graph.
    pub fn codelet_name(&self, id: CodeletId) -> &str {
        &self.codelets[id.index()]
    }

    /// Whether a codelet's GPU implementation is synchronous
    /// ([`TaskGraphBuilder::gpu_synchronous`]).
    #[inline]
    pub fn codelet_gpu_synchronous(&self, id: CodeletId) -> bool {
        self.gpu_sync[id.index()]
    }

    /// The names of the codelets whose GPU implementation is synchronous, in codelet order.
    pub fn gpu_synchronous_codelets(&self) -> impl Iterator<Item = &str> {
        self.codelets
            .iter()
            .zip(&self.gpu_sync)
            .filter(|&(_, &sync)| sync)
            .map(|(name, _)| name.as_str())
    }

    /// The id of a codelet name, if some task uses it.
    pub fn codelet_id(&self, name: &str) -> Option<CodeletId> {
        self.codelets
            .iter()
            .position(|c| c == name)
            .map(|i| CodeletId(i as u16))
    }

    /// The codelet name of a task.
    pub fn task_codelet_name(&self, id: TaskId) -> &str {
        self.codelet_name(self.task(id).codelet)
    }

    /// Number of tasks of each codelet, indexed by [`CodeletId`].
    pub fn tasks_per_codelet(&self) -> Vec<usize> {
        let mut counts = vec![0; self.codelets.len()];
        for t in &self.tasks {
            counts[t.codelet.index()] += 1;
        }
        counts
    }

    /// Sum of the tasks' flops.
    pub fn total_flops(&self) -> f64 {
        self.tasks.iter().map(Task::flops).sum()
    }

    /// The tasks that wait for `id` (its direct successors), in increasing order.
    #[inline]
    pub fn successors(&self, id: TaskId) -> &[TaskId] {
        let i = id.index();
        &self.succ[self.succ_offsets[i] as usize..self.succ_offsets[i + 1] as usize]
    }

    /// The tasks `id` waits for (its direct predecessors), in increasing order. The first call
    /// builds every task's list (O(tasks + edges) time, 4 bytes per edge and per task kept with
    /// the graph); code that needs only how many, over the whole graph, should call
    /// [`TaskGraph::in_degrees`].
    pub fn predecessors(&self, id: TaskId) -> &[TaskId] {
        let (offsets, pred) = self.pred.get_or_init(|| self.transpose());
        let i = id.index();
        &pred[offsets[i] as usize..offsets[i + 1] as usize]
    }

    /// How many tasks `id` waits for (its in-degree). Builds the predecessor lists as
    /// [`TaskGraph::predecessors`] does.
    pub fn predecessor_count(&self, id: TaskId) -> u32 {
        self.predecessors(id).len() as u32
    }

    /// Every task's in-degree (how many tasks it waits for: the runtime's initial dependency
    /// counters), in one pass over the successor lists.
    pub fn in_degrees(&self) -> Vec<u32> {
        let mut degree = vec![0u32; self.num_tasks()];
        for s in &self.succ {
            degree[s.index()] += 1;
        }
        degree
    }

    /// Tasks with no predecessor, in submission order: ready at time zero.
    pub fn roots(&self) -> impl Iterator<Item = TaskId> + '_ {
        let degree = self.in_degrees();
        self.task_ids().filter(move |t| degree[t.index()] == 0)
    }

    fn transpose(&self) -> (Vec<u32>, Vec<TaskId>) {
        reverse_lists(&self.succ_offsets, &self.succ)
    }

    /// Whether `a → b` is a dependency edge (`b` waits for `a`).
    pub fn has_edge(&self, a: TaskId, b: TaskId) -> bool {
        self.successors(a).binary_search(&b).is_ok()
    }

    /// Whether every dependency goes from an earlier task to a later one in submission order
    /// (always, unless explicit dependencies were added to earlier tasks): task order is then
    /// a topological order.
    pub fn edges_point_forward(&self) -> bool {
        self.forward
    }

    /// Check that the dependencies have no cycle.
    ///
    /// Graphs inferred from accesses alone are acyclic by construction (every edge goes from an
    /// earlier to a later task); explicit dependencies, as read from a file, may not be. The
    /// error names one task on a cycle.
    pub fn check_acyclic(&self) -> Result<(), InputError> {
        if self.forward {
            return Ok(());
        }
        match petgraph::algo::toposort(self, None) {
            Ok(_) => Ok(()),
            Err(cycle) => {
                let id = cycle.node_id().index();
                let name = &self.codelets[self.tasks[id].codelet.index()];
                Err(InputError::new(format!(
                    "the task dependencies contain a cycle through task {id} (`{name}`): a task \
                     cannot wait for itself"
                ))
                .at_field("workload.dependencies"))
            }
        }
    }
}

/// petgraph's view of the dependencies: node `i` is `TaskId(i)` (as a [`NodeIndex`]), an edge
/// `a → b` means `b` waits for `a`.
mod visit {
    use super::{TaskGraph, TaskId};
    use fixedbitset::FixedBitSet;
    use petgraph::Direction;
    use petgraph::graph::NodeIndex;
    use petgraph::visit::{
        GraphBase, IntoNeighbors, IntoNeighborsDirected, IntoNodeIdentifiers, NodeCompactIndexable,
        NodeCount, NodeIndexable, Visitable,
    };

    /// The tasks of a successor or predecessor list as petgraph node indices.
    pub type Neighbors<'a> =
        std::iter::Map<std::iter::Copied<std::slice::Iter<'a, TaskId>>, fn(TaskId) -> NodeIndex>;

    fn node(t: TaskId) -> NodeIndex {
        NodeIndex::new(t.index())
    }

    impl GraphBase for TaskGraph {
        type NodeId = NodeIndex;
        /// An edge is named by its two ends.
        type EdgeId = (NodeIndex, NodeIndex);
    }

    impl<'a> IntoNeighbors for &'a TaskGraph {
        type Neighbors = Neighbors<'a>;
        fn neighbors(self, a: NodeIndex) -> Neighbors<'a> {
            self.neighbors_directed(a, Direction::Outgoing)
        }
    }

    impl<'a> IntoNeighborsDirected for &'a TaskGraph {
        type NeighborsDirected = Neighbors<'a>;
        fn neighbors_directed(self, a: NodeIndex, d: Direction) -> Neighbors<'a> {
            let t = TaskId(a.index() as u32);
            let list = match d {
                Direction::Outgoing => self.successors(t),
                Direction::Incoming => self.predecessors(t),
            };
            list.iter().copied().map(node as fn(TaskId) -> NodeIndex)
        }
    }

    impl IntoNodeIdentifiers for &TaskGraph {
        type NodeIdentifiers = std::iter::Map<std::ops::Range<usize>, fn(usize) -> NodeIndex>;
        fn node_identifiers(self) -> Self::NodeIdentifiers {
            (0..self.num_tasks()).map(NodeIndex::new as fn(usize) -> NodeIndex)
        }
    }

    impl NodeIndexable for TaskGraph {
        fn node_bound(&self) -> usize {
            self.num_tasks()
        }
        fn to_index(&self, a: NodeIndex) -> usize {
            a.index()
        }
        fn from_index(&self, i: usize) -> NodeIndex {
            NodeIndex::new(i)
        }
    }

    impl NodeCount for TaskGraph {
        fn node_count(&self) -> usize {
            self.num_tasks()
        }
    }

    impl NodeCompactIndexable for TaskGraph {}

    impl Visitable for TaskGraph {
        type Map = FixedBitSet;
        fn visit_map(&self) -> FixedBitSet {
            FixedBitSet::with_capacity(self.num_tasks())
        }
        fn reset_map(&self, map: &mut FixedBitSet) {
            map.clear();
            map.grow(self.num_tasks());
        }
    }
}

/// What the builder remembers about a handle for dependency inference.
#[derive(Debug, Clone, Default)]
struct HandleState {
    /// The last task submitted that writes the handle.
    last_writer: Option<TaskId>,
    /// Tasks that read the handle since that write, in submission order.
    readers: Vec<TaskId>,
}

/// Builds a [`TaskGraph`] by submitting tasks in order, inferring dependencies as StarPU's
/// sequential consistency does.
///
/// The rule, per handle, in submission order:
/// - a task that reads (R or RW) depends on the last task that wrote the handle;
/// - a task that writes (W or RW) depends on the last writer and on every task that read the
///   handle since that write (so it cannot overwrite data they still need).
///
/// Readers after readers do not depend on each other. Each dependency is recorded once, however
/// many handles imply it, and a task never depends on itself (a task may list one handle
/// twice). The work is O(accesses + edges).
#[derive(Debug, Default)]
pub struct TaskGraphBuilder {
    codelets: Vec<String>,
    gpu_sync: Vec<bool>,
    codelet_index: FxHashMap<String, CodeletId>,
    handles: Vec<Handle>,
    state: Vec<HandleState>,
    tasks: Vec<Task>,
    accesses: Vec<Access>,
    /// Per task submitted, where its predecessors start in `pred` (one more entry, the end).
    pred_offsets: Vec<u32>,
    /// The predecessors of each task in turn (the newest task's list is still open).
    pred: Vec<TaskId>,
    /// Explicit dependencies whose later task is not the newest one, `(before, after)`:
    /// merged, sorted and deduplicated at build.
    late: Vec<(TaskId, TaskId)>,
    /// `mark[p] == t + 1` when `p` is already a predecessor of the newest task `t`: O(1)
    /// duplicate-edge check without a per-task set.
    mark: Vec<u32>,
    /// Scratch list of the predecessors of the task being submitted.
    preds: Vec<TaskId>,
    /// "Will not be used" hints, in submission order.
    wont_use: Vec<WontUse>,
    /// Per task submitted so far, the figures of [`TaskGraph`]'s `params`.
    params: Params,
    /// Some explicit dependency went to a task other than the newest one (it may close a
    /// cycle): the lists are merged and checked for cycles at build.
    unordered: bool,
    /// Accesses imply no dependency ([`TaskGraphBuilder::infer_dependencies`]).
    explicit_only: bool,
    /// Per task submitted so far, its recorded worker (empty until one is recorded).
    recorded: Vec<Option<RecordedWorker>>,
    startup_acquires: u32,
}

impl TaskGraphBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty builder with room for the given numbers of tasks, handles and accesses, to avoid
    /// reallocations when the sizes are known (the generators know them exactly).
    pub fn with_capacity(tasks: usize, handles: usize, accesses: usize) -> Self {
        TaskGraphBuilder {
            handles: Vec::with_capacity(handles),
            state: Vec::with_capacity(handles),
            tasks: Vec::with_capacity(tasks),
            accesses: Vec::with_capacity(accesses),
            pred_offsets: Self::offsets_with_capacity(tasks + 1),
            mark: Vec::with_capacity(tasks),
            ..Self::default()
        }
    }

    /// Room for `edges` more dependencies, and for a duration or size ([`TaskGraph`]'s
    /// `params`) for every task the builder has room for: for graphs whose tasks all fix
    /// their durations or sizes, so that no vector ends up with twice the room it needs.
    pub fn reserve_fixed(&mut self, edges: usize) {
        self.pred.reserve_exact(edges);
        self.params.reserve_exact(self.tasks.capacity());
    }

    fn offsets_with_capacity(n: usize) -> Vec<u32> {
        let mut v = Vec::with_capacity(n);
        v.push(0);
        v
    }

    /// Intern a codelet name, returning the id tasks use.
    pub fn codelet(&mut self, name: &str) -> Result<CodeletId, InputError> {
        if let Some(&id) = self.codelet_index.get(name) {
            return Ok(id);
        }
        let id = u16::try_from(self.codelets.len()).map_err(|_| {
            InputError::new(format!(
                "too many distinct codelet names (at most {})",
                u16::MAX
            ))
        })?;
        let id = CodeletId(id);
        self.codelets.push(name.to_string());
        self.gpu_sync.push(false);
        self.codelet_index.insert(name.to_string(), id);
        Ok(id)
    }

    /// Mark a codelet's GPU implementation synchronous: it lacks StarPU's `STARPU_CUDA_ASYNC`
    /// flag, so the CUDA driver waits for the GPU's earlier tasks, then runs it on its own
    /// thread, popping, fetching and handling no data request until it ends (`driver_cuda.c`,
    /// `_starpu_simgrid_submit_job` without a `finished` flag). Codelets are asynchronous
    /// unless marked. Panics if `id` was not returned by [`TaskGraphBuilder::codelet`].
    pub fn gpu_synchronous(&mut self, id: CodeletId) {
        self.gpu_sync[id.index()] = true;
    }

    /// Record the worker `task` ran on in a recorded run ([`TaskGraph::recorded_worker`]).
    pub fn record_worker(
        &mut self,
        task: TaskId,
        worker: RecordedWorker,
    ) -> Result<(), InputError> {
        if task.index() >= self.tasks.len() {
            return Err(InputError::new(format!(
                "recorded worker of task {} of {} submitted",
                task.0,
                self.tasks.len()
            )));
        }
        if self.recorded.len() < self.tasks.len() {
            self.recorded.resize(self.tasks.len(), None);
        }
        self.recorded[task.index()] = Some(worker);
        Ok(())
    }

    /// Add `bytes` to the size `task`'s kernel model is looked up by
    /// ([`Task::model_size_bytes`]) without a handle: a buffer StarPU counts but that moves no
    /// data (a scratch buffer, allocated where the task runs).
    pub fn add_model_bytes(&mut self, task: TaskId, bytes: u64) -> Result<(), InputError> {
        let Some(t) = self.tasks.get_mut(task.index()) else {
            return Err(InputError::new(format!(
                "model size of unknown task {}",
                task.0
            )));
        };
        t.set_model_size_bytes(t.model_size_bytes().saturating_add(bytes));
        Ok(())
    }

    /// Whether accesses submitted from now on imply dependencies (on by default). Off, a task
    /// waits only for the tasks given explicitly: for files that list every edge themselves.
    pub fn infer_dependencies(&mut self, on: bool) {
        self.explicit_only = !on;
    }

    /// Register a data handle.
    pub fn add_handle(&mut self, handle: Handle) -> Result<HandleId, InputError> {
        let id = u32::try_from(self.handles.len())
            .map_err(|_| InputError::new("too many data handles (at most 2^32)"))?;
        self.handles.push(handle);
        self.state.push(HandleState::default());
        Ok(HandleId(id))
    }

    /// Number of tasks submitted so far.
    pub fn num_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// Submit a task on node 0; its dependencies on earlier tasks are inferred from
    /// `accesses`.
    pub fn submit(
        &mut self,
        codelet: CodeletId,
        flops: f64,
        priority: i32,
        accesses: &[Access],
    ) -> Result<TaskId, InputError> {
        self.submit_kind(
            codelet,
            flops,
            priority,
            accesses,
            NodeId(0),
            TaskKind::Compute,
        )
    }

    /// Submit a task of `kind` running on `node`. Its handles must live on that node (a
    /// message's first handle on `from`, its second on `to`).
    pub fn submit_kind(
        &mut self,
        codelet: CodeletId,
        flops: f64,
        priority: i32,
        accesses: &[Access],
        node: NodeId,
        kind: TaskKind,
    ) -> Result<TaskId, InputError> {
        self.submit_inner(codelet, flops, priority, accesses, node, kind, &[])
    }

    /// Submit a computation on node 0 that waits for the tasks its `accesses` imply and for the
    /// tasks `after` too (explicit dependencies, each submitted before it): StarPU's
    /// `starpu_task_declare_deps` beside the implicit ones, as graphs read from files have
    /// them. An edge both imply is kept once. O(accesses + after).
    pub fn submit_after(
        &mut self,
        codelet: CodeletId,
        flops: f64,
        priority: i32,
        accesses: &[Access],
        after: &[TaskId],
    ) -> Result<TaskId, InputError> {
        self.submit_inner(
            codelet,
            flops,
            priority,
            accesses,
            NodeId(0),
            TaskKind::Compute,
            after,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn submit_inner(
        &mut self,
        codelet: CodeletId,
        flops: f64,
        priority: i32,
        accesses: &[Access],
        node: NodeId,
        kind: TaskKind,
        after: &[TaskId],
    ) -> Result<TaskId, InputError> {
        if codelet.index() >= self.codelets.len() {
            return Err(InputError::new(format!(
                "unknown codelet id {} (only {} codelets are interned)",
                codelet.0,
                self.codelets.len()
            )));
        }
        if accesses.len() > MAX_ACCESSES_PER_TASK {
            return Err(InputError::new(format!(
                "a task accesses {} buffers, more than the limit of {MAX_ACCESSES_PER_TASK}",
                accesses.len()
            )));
        }
        if !(flops.is_finite() && flops >= 0.0) {
            return Err(InputError::new(format!(
                "task flops must be a finite number ≥ 0, got {flops}"
            )));
        }
        if let TaskKind::Message { to, src, dst, .. } = kind {
            if flops != 0.0 {
                return Err(InputError::new(format!(
                    "a message of {flops} flops: a message computes nothing (expected 0)"
                )));
            }
            if to != node {
                return Err(InputError::new(format!(
                    "a message to node {} submitted on node {}: a message is on its receiving \
                     node",
                    to.0, node.0
                )));
            }
            if let Some(n) = [src, dst].iter().find_map(|p| match *p {
                Place::Device(n) if n == Place::MAX_GPUS => Some(n),
                _ => None,
            }) {
                return Err(InputError::new(format!(
                    "a message names GPU {n}: expected a GPU index below {}",
                    Place::MAX_GPUS
                )));
            }
        }
        let id = u32::try_from(self.tasks.len())
            .ok()
            .filter(|&i| i < u32::MAX)
            .ok_or_else(|| InputError::new("too many tasks (at most 2^32 - 1)"))?;
        let first_access = u32::try_from(self.accesses.len())
            .map_err(|_| InputError::new("too many accesses in the graph (at most 2^32)"))?;
        let tid = TaskId(id);
        let stamp = id + 1;
        self.mark.push(0);
        self.preds.clear();

        let mut model_size_bytes = 0u64;
        for (i, a) in accesses.iter().enumerate() {
            let Some(handle) = self.handles.get(a.handle.index()) else {
                return Err(InputError::new(format!(
                    "task {id} accesses handle {} but only {} handles are registered",
                    a.handle.0,
                    self.handles.len()
                )));
            };
            let expect = match kind {
                TaskKind::Message { from, .. } if i == 0 => from,
                _ => node,
            };
            if handle.node != expect {
                return Err(InputError::new(format!(
                    "task {id} on node {} accesses handle {}, which lives on node {}",
                    expect.0, a.handle.0, handle.node.0
                )));
            }
            model_size_bytes = model_size_bytes.saturating_add(handle.size_bytes);
            if self.explicit_only {
                continue;
            }
            let st = &mut self.state[a.handle.index()];
            // Both reads and writes wait for the last writer (RAW, WAW).
            if let Some(w) = st.last_writer {
                push_pred(&mut self.preds, &mut self.mark, w, tid, stamp);
            }
            if a.mode.writes() {
                // WAR: wait for every reader since the last write, then become the writer.
                for &r in &st.readers {
                    push_pred(&mut self.preds, &mut self.mark, r, tid, stamp);
                }
                st.readers.clear();
                st.last_writer = Some(tid);
            } else if st.readers.last() != Some(&tid) {
                st.readers.push(tid);
            }
        }
        for &a in after {
            if a.0 >= id {
                return Err(InputError::new(format!(
                    "task {id} waits for task {}, which is not submitted before it",
                    a.0
                ))
                .at_field("workload.dependencies"));
            }
            push_pred(&mut self.preds, &mut self.mark, a, tid, stamp);
        }
        // A task that both reads and writes one handle through two buffers must not be left as a
        // reader of the value it wrote itself.
        for a in accesses {
            let st = &mut self.state[a.handle.index()];
            if st.last_writer == Some(tid) && st.readers.last() == Some(&tid) {
                st.readers.pop();
            }
        }

        if self.pred_offsets.is_empty() {
            self.pred_offsets.push(0);
        }
        self.preds.sort_unstable();
        self.pred.extend_from_slice(&self.preds);
        self.pred_offsets.push(offset(self.pred.len())?);

        self.accesses.extend_from_slice(accesses);
        self.tasks.push(Task::new(
            (codelet, flops, priority),
            node,
            kind,
            // Checked against MAX_ACCESSES_PER_TASK above.
            (first_access, accesses.len() as u16),
            model_size_bytes,
        ));
        Ok(tid)
    }

    /// Add an explicit dependency: `after` waits for `before` (StarPU's
    /// `starpu_task_declare_deps`), for graphs read from files. A repeated edge is kept once.
    /// Cycles are reported by [`TaskGraphBuilder::build`].
    pub fn add_dependency(&mut self, before: TaskId, after: TaskId) -> Result<(), InputError> {
        let n = self.tasks.len();
        for t in [before, after] {
            if t.index() >= n {
                return Err(InputError::new(format!(
                    "dependency names task {} but only {n} tasks exist",
                    t.0
                ))
                .at_field("workload.dependencies"));
            }
        }
        if before == after {
            return Err(
                InputError::new(format!("task {} cannot depend on itself", before.0))
                    .at_field("workload.dependencies"),
            );
        }
        if after.index() + 1 != n {
            self.late.push((before, after));
            self.unordered = true;
        } else if self.mark[before.index()] != after.0 + 1 {
            self.mark[before.index()] = after.0 + 1;
            self.pred.push(before);
            *self.pred_offsets.last_mut().expect("a task was submitted") = offset(self.pred.len())?;
        }
        Ok(())
    }

    /// The program acquires data synchronously `n` times before it submits its first task:
    /// StarPU's `starpu_data_partition` (which `starpu_data_map_filters` calls once per handle
    /// it partitions) first acquires the handle it partitions, and each acquisition submits and
    /// pushes an internal task. StarPU's tiled examples partition each matrix in two levels,
    /// 1 + (tiles per dimension) acquisitions per matrix.
    pub fn startup_acquires(&mut self, n: u32) {
        self.startup_acquires = n;
    }

    /// Say that `handle` will not be used soon, at this point of the submission order (after
    /// the last task submitted): StarPU's `starpu_data_wont_use`. See [`WontUse`] for when the
    /// hint takes effect. A hint before any task is submitted is an error (it would hold from
    /// the start and say nothing).
    pub fn wont_use(&mut self, handle: HandleId) -> Result<(), InputError> {
        if handle.index() >= self.handles.len() {
            return Err(InputError::new(format!(
                "wont-use hint on unknown handle {} (only {} handles are registered)",
                handle.0,
                self.handles.len()
            )));
        }
        let Some(last) = self.tasks.len().checked_sub(1) else {
            return Err(InputError::new(format!(
                "wont-use hint on handle {} before any task is submitted",
                handle.0
            )));
        };
        self.wont_use.push(WontUse {
            handle,
            after: TaskId(last as u32),
        });
        Ok(())
    }

    /// Fix `task`'s duration on `unit` to `secs` (finite, >= 0): it then runs only on units it
    /// has a fixed duration for, in that time, without noise ([`TaskGraph::fixes_duration`]).
    /// For workloads that compute their kernels' times from their own model, and for replays
    /// of recorded durations.
    pub fn fix_duration(&mut self, task: TaskId, unit: Unit, secs: f64) -> Result<(), InputError> {
        if task.index() >= self.tasks.len() {
            return Err(InputError::new(format!(
                "duration of task {} of {} submitted",
                task.0,
                self.tasks.len()
            )));
        }
        self.check_secs(task, secs)?;
        self.set_param(task, unit.index(), secs);
        Ok(())
    }

    fn check_secs(&self, task: TaskId, secs: f64) -> Result<(), InputError> {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(());
        }
        Err(InputError::new(format!(
            "duration {secs} s of task {} ({}): expected a finite duration >= 0",
            task.0,
            self.codelets[self.tasks[task.index()].codelet.index()]
        )))
    }

    fn set_param(&mut self, task: TaskId, i: usize, v: f64) {
        self.params.set(task.index(), i, v, self.tasks.len());
    }

    /// Make each of `after` a predecessor of the newest task `task`.
    fn after(&mut self, task: TaskId, after: &[TaskId]) -> Result<(), InputError> {
        for &a in after {
            if a.0 >= task.0 {
                return Err(InputError::new(format!(
                    "task {} waits for task {}, which is not submitted before it",
                    task.0, a.0
                ))
                .at_field("workload.dependencies"));
            }
            self.add_dependency(a, task)?;
        }
        Ok(())
    }

    /// Submit a computation on `node` that runs only on `unit`, for `secs` (see
    /// [`TaskGraphBuilder::fix_duration`]), once the tasks `after` (submitted before it) end.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_fixed(
        &mut self,
        codelet: CodeletId,
        node: NodeId,
        unit: Unit,
        secs: f64,
        flops: f64,
        priority: i32,
        after: &[TaskId],
    ) -> Result<TaskId, InputError> {
        let t = self.submit_kind(codelet, flops, priority, &[], node, TaskKind::Compute)?;
        self.fix_duration(t, unit, secs)?;
        self.after(t, after)?;
        Ok(t)
    }

    /// Submit a payload message of `bytes` from `src` on node `from` to `dst` on node `to`
    /// (`from` may equal `to` with different places: a copy inside the node), once the tasks
    /// `after` end. It carries no data handle: what it stands for is in the dependencies.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_payload(
        &mut self,
        codelet: CodeletId,
        (from, src): (NodeId, Place),
        (to, dst): (NodeId, Place),
        bytes: f64,
        priority: i32,
        after: &[TaskId],
    ) -> Result<TaskId, InputError> {
        if !(bytes.is_finite() && bytes >= 0.0) {
            return Err(InputError::new(format!(
                "message of {bytes} bytes: expected a finite size >= 0"
            )));
        }
        let kind = TaskKind::Message { from, to, src, dst };
        let t = self.submit_kind(codelet, 0.0, priority, &[], to, kind)?;
        self.set_param(t, 0, bytes);
        self.tasks[t.index()].set_model_size_bytes(bytes as u64);
        self.after(t, after)?;
        Ok(t)
    }

    /// Submit a delay of `secs` on `node` ([`TaskKind::Delay`]) once the tasks `after` end.
    pub fn submit_delay(
        &mut self,
        codelet: CodeletId,
        node: NodeId,
        secs: f64,
        after: &[TaskId],
    ) -> Result<TaskId, InputError> {
        let t = self.submit_kind(codelet, 0.0, 0, &[], node, TaskKind::Delay)?;
        self.check_secs(t, secs)?;
        self.set_param(t, 0, secs);
        self.after(t, after)?;
        Ok(t)
    }

    /// A task on a cycle of the dependencies, if explicit ones made a cycle (which
    /// [`TaskGraphBuilder::build`] refuses): for readers of files to name the record at fault.
    /// O(tasks + edges) when some explicit dependency pointed backwards, O(1) otherwise.
    pub fn find_cycle(&self) -> Option<TaskId> {
        if !self.unordered {
            return None;
        }
        let node = |t: TaskId| petgraph::graph::NodeIndex::<u32>::new(t.index());
        let n = self.tasks.len();
        let mut g = petgraph::Graph::<(), ()>::with_capacity(n, self.pred.len() + self.late.len());
        for _ in 0..n {
            g.add_node(());
        }
        for (t, w) in self.pred_offsets.windows(2).enumerate() {
            for &p in &self.pred[w[0] as usize..w[1] as usize] {
                g.add_edge(node(p), node(TaskId(t as u32)), ());
            }
        }
        for &(before, after) in &self.late {
            g.add_edge(node(before), node(after), ());
        }
        petgraph::algo::toposort(&g, None)
            .err()
            .map(|c| TaskId(c.node_id().index() as u32))
    }

    /// Freeze the graph. Fails if explicit dependencies made a cycle.
    pub fn build(mut self) -> Result<TaskGraph, InputError> {
        // Room for what follows: the per-task scratch is no longer needed.
        self.mark = Vec::new();
        self.state = Vec::new();
        self.codelet_index = FxHashMap::default();
        self.params.pad(self.tasks.len());
        if !self.recorded.is_empty() {
            self.recorded.resize(self.tasks.len(), None);
        }
        let n = self.tasks.len();
        if self.pred_offsets.is_empty() {
            self.pred_offsets.push(0);
        }
        let (pred_offsets, pred) = if self.unordered {
            merge_sorted(n, &self.pred_offsets, &self.pred, &self.late)?
        } else {
            // Every edge went to the newest task when it was added: the lists are complete,
            // and need sorting only where explicit dependencies came in another order.
            for t in 0..n {
                let (a, b) = (
                    self.pred_offsets[t] as usize,
                    self.pred_offsets[t + 1] as usize,
                );
                self.pred[a..b].sort_unstable();
            }
            (self.pred_offsets, self.pred)
        };
        // The graph keeps the successors only (`TaskGraph::predecessors`).
        let (succ_offsets, succ) = reverse_lists_owned(pred_offsets, pred);
        let graph = TaskGraph {
            codelets: self.codelets,
            gpu_sync: self.gpu_sync,
            handles: self.handles,
            tasks: self.tasks,
            accesses: self.accesses,
            succ_offsets,
            succ,
            pred: OnceLock::new(),
            wont_use: self.wont_use,
            params: self.params,
            forward: false,
            recorded: self.recorded,
            startup_acquires: self.startup_acquires,
        };
        if self.unordered {
            graph.check_acyclic()?;
        }
        let forward = graph
            .task_ids()
            .all(|t| graph.successors(t).iter().all(|&s| s > t));
        let graph = TaskGraph { forward, ..graph };
        Ok(graph)
    }
}

/// A delay's length or a payload's bytes: 0 when the figure was never set.
fn zero_if_unset(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x }
}

/// The lists of `offsets.len() - 1` tasks (`ids[offsets[t]..offsets[t + 1]]` for task `t`)
/// reversed: `u` is in the new list of `v` when `v` is in the list of `u`. A counting sort over
/// the lists in task order, so each new list comes out in increasing order.
fn reverse_lists(offsets: &[u32], ids: &[TaskId]) -> (Vec<u32>, Vec<TaskId>) {
    let n = offsets.len() - 1;
    let (mut out_offsets, mut out) = reverse_room(n, ids);
    scatter(offsets, ids, 0, 0..n, &mut out_offsets, &mut out);
    (out_offsets, out.into_iter().map(TaskId).collect())
}

/// [`reverse_lists`] of lists it owns, which it frees as it goes: it reads them from the last
/// task back, a block of edges at a time, and gives each block's memory back once read, so
/// the two copies of the edges are not both resident at the end (the edges of a graph of tens
/// of millions of tasks are a gigabyte).
fn reverse_lists_owned(offsets: Vec<u32>, ids: Vec<TaskId>) -> (Vec<u32>, Vec<TaskId>) {
    reverse_lists_in_blocks(offsets, ids, 1 << 20)
}

/// [`reverse_lists_owned`], releasing the lists read every `block_edges` edges (or one task's
/// list, if longer).
fn reverse_lists_in_blocks(
    offsets: Vec<u32>,
    mut ids: Vec<TaskId>,
    block_edges: usize,
) -> (Vec<u32>, Vec<TaskId>) {
    let n = offsets.len() - 1;
    let (mut out_offsets, mut out) = reverse_room(n, &ids);
    let mut last = n;
    while last > 0 {
        // The tasks whose lists start within the last block of edges left.
        let floor = ids.len().saturating_sub(block_edges) as u32;
        let first = offsets[..last]
            .partition_point(|&o| o < floor)
            .min(last - 1);
        let base = offsets[first] as usize;
        let block = ids.split_off(base);
        ids.shrink_to_fit();
        scatter(
            &offsets,
            &block,
            base,
            first..last,
            &mut out_offsets,
            &mut out,
        );
        last = first;
    }
    (out_offsets, out.into_iter().map(TaskId).collect())
}

/// The reversed lists' offsets with each task's list *end* (its count summed with those of
/// the tasks before it; [`scatter`] moves each to its start), and their room, zeroed by the
/// allocator (an integer array is, so its pages are resident only once written).
fn reverse_room(n: usize, ids: &[TaskId]) -> (Vec<u32>, Vec<u32>) {
    let mut ends = vec![0u32; n + 1];
    for v in ids {
        ends[v.index()] += 1;
    }
    let mut sum = 0;
    for e in &mut ends[..n] {
        sum += *e;
        *e = sum;
    }
    ends[n] = sum;
    (ends, vec![0u32; ids.len()])
}

/// Write the lists of `tasks` (their edges `ids`, the graph's from `base` on) into the
/// reversed lists, last task first, each at the end of its list's room left.
fn scatter(
    offsets: &[u32],
    ids: &[TaskId],
    base: usize,
    tasks: std::ops::Range<usize>,
    cursor: &mut [u32],
    out: &mut [u32],
) {
    for u in tasks.rev() {
        let (a, b) = (offsets[u] as usize - base, offsets[u + 1] as usize - base);
        for v in &ids[a..b] {
            cursor[v.index()] -= 1;
            out[cursor[v.index()] as usize] = u as u32;
        }
    }
}

/// An edge count or offset as `u32`.
fn offset(n: usize) -> Result<u32, InputError> {
    u32::try_from(n).map_err(|_| InputError::new("too many dependency edges (at most 2^32 - 1)"))
}

/// The predecessor lists of `n` tasks (`offsets`, `pred`) with the `late` edges
/// `(before, after)` added, each list sorted and without repeats.
fn merge_sorted(
    n: usize,
    offsets: &[u32],
    pred: &[TaskId],
    late: &[(TaskId, TaskId)],
) -> Result<(Vec<u32>, Vec<TaskId>), InputError> {
    let mut edges: Vec<(TaskId, TaskId)> = Vec::with_capacity(pred.len() + late.len());
    for t in 0..n {
        for &p in &pred[offsets[t] as usize..offsets[t + 1] as usize] {
            edges.push((TaskId(t as u32), p));
        }
    }
    edges.extend(late.iter().map(|&(before, after)| (after, before)));
    edges.sort_unstable();
    edges.dedup();
    let mut out_offsets = vec![0u32; n + 1];
    for &(t, _) in &edges {
        out_offsets[t.index() + 1] += 1;
    }
    for i in 0..n {
        out_offsets[i + 1] += out_offsets[i];
    }
    offset(edges.len())?;
    Ok((out_offsets, edges.into_iter().map(|(_, p)| p).collect()))
}

/// Record `p` as a predecessor of the task being submitted (`tid`, stamped `stamp`), once.
fn push_pred(preds: &mut Vec<TaskId>, mark: &mut [u32], p: TaskId, tid: TaskId, stamp: u32) {
    if p != tid && mark[p.index()] != stamp {
        mark[p.index()] = stamp;
        preds.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessMode::{R, RW, W};

    /// A builder with one codelet and `n` handles of 100 bytes.
    fn setup(n: usize) -> (TaskGraphBuilder, CodeletId, Vec<HandleId>) {
        let mut b = TaskGraphBuilder::new();
        let c = b.codelet("k").unwrap();
        let hs = (0..n)
            .map(|_| b.add_handle(Handle::bytes(100)).unwrap())
            .collect();
        (b, c, hs)
    }

    fn edges(g: &TaskGraph) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        for t in g.task_ids() {
            for s in g.successors(t) {
                v.push((t.0, s.0));
            }
        }
        v
    }

    #[test]
    fn read_after_write() {
        let (mut b, c, h) = setup(1);
        b.submit(c, 0.0, 0, &[Access::new(h[0], W)]).unwrap();
        b.submit(c, 0.0, 0, &[Access::new(h[0], R)]).unwrap();
        b.submit(c, 0.0, 0, &[Access::new(h[0], R)]).unwrap();
        let g = b.build().unwrap();
        // Both readers wait for the writer; readers do not wait for each other.
        assert_eq!(edges(&g), vec![(0, 1), (0, 2)]);
        assert_eq!(g.predecessor_count(TaskId(2)), 1);
    }

    #[test]
    fn write_after_reads_waits_for_all_readers_and_the_writer() {
        let (mut b, c, h) = setup(1);
        b.submit(c, 0.0, 0, &[Access::new(h[0], RW)]).unwrap(); // 0
        b.submit(c, 0.0, 0, &[Access::new(h[0], R)]).unwrap(); // 1
        b.submit(c, 0.0, 0, &[Access::new(h[0], R)]).unwrap(); // 2
        b.submit(c, 0.0, 0, &[Access::new(h[0], W)]).unwrap(); // 3
        b.submit(c, 0.0, 0, &[Access::new(h[0], R)]).unwrap(); // 4
        let g = b.build().unwrap();
        assert_eq!(
            edges(&g),
            vec![(0, 1), (0, 2), (0, 3), (1, 3), (2, 3), (3, 4)]
        );
        assert_eq!(g.predecessor_count(TaskId(3)), 3);
        // Readers of the old value do not constrain readers of the new one.
        assert!(!g.has_edge(TaskId(1), TaskId(4)));
    }

    #[test]
    fn rw_chain_is_a_chain() {
        let (mut b, c, h) = setup(1);
        for _ in 0..4 {
            b.submit(c, 0.0, 0, &[Access::new(h[0], RW)]).unwrap();
        }
        let g = b.build().unwrap();
        assert_eq!(edges(&g), vec![(0, 1), (1, 2), (2, 3)]);
        assert_eq!(g.roots().collect::<Vec<_>>(), vec![TaskId(0)]);
    }

    #[test]
    fn no_duplicate_edges_when_several_handles_imply_one() {
        let (mut b, c, h) = setup(3);
        b.submit(
            c,
            0.0,
            0,
            &[
                Access::new(h[0], W),
                Access::new(h[1], W),
                Access::new(h[2], W),
            ],
        )
        .unwrap();
        b.submit(
            c,
            0.0,
            0,
            &[
                Access::new(h[0], R),
                Access::new(h[1], R),
                Access::new(h[2], RW),
            ],
        )
        .unwrap();
        let g = b.build().unwrap();
        assert_eq!(edges(&g), vec![(0, 1)]);
        assert_eq!(g.num_edges(), 1);
        assert_eq!(g.predecessors(TaskId(1)), &[TaskId(0)]);
        assert_eq!(g.predecessor_count(TaskId(1)), 1);
    }

    #[test]
    fn same_handle_twice_in_one_task_gives_no_self_edge() {
        let (mut b, c, h) = setup(1);
        b.submit(c, 0.0, 0, &[Access::new(h[0], W)]).unwrap(); // 0
        // Reads then writes the same handle (like a gemm with C also an input).
        b.submit(c, 0.0, 0, &[Access::new(h[0], R), Access::new(h[0], RW)])
            .unwrap(); // 1
        b.submit(c, 0.0, 0, &[Access::new(h[0], RW), Access::new(h[0], R)])
            .unwrap(); // 2
        b.submit(c, 0.0, 0, &[Access::new(h[0], R)]).unwrap(); // 3
        let g = b.build().unwrap();
        assert_eq!(edges(&g), vec![(0, 1), (1, 2), (2, 3)]);
        // Both buffers count towards the model size, as in StarPU.
        assert_eq!(g.task(TaskId(1)).model_size_bytes(), 200);
        assert_eq!(g.accesses(TaskId(1)).len(), 2);
    }

    #[test]
    fn independent_handles_are_independent() {
        let (mut b, c, h) = setup(2);
        b.submit(c, 0.0, 0, &[Access::new(h[0], RW)]).unwrap();
        b.submit(c, 0.0, 0, &[Access::new(h[1], RW)]).unwrap();
        let g = b.build().unwrap();
        assert_eq!(g.num_edges(), 0);
        assert_eq!(g.roots().count(), 2);
    }

    #[test]
    fn codelets_are_interned() {
        let mut b = TaskGraphBuilder::new();
        let a = b.codelet("x").unwrap();
        let c = b.codelet("y").unwrap();
        assert_eq!(b.codelet("x").unwrap(), a);
        assert_ne!(a, c);
        let h = b.add_handle(Handle::bytes(8)).unwrap();
        b.submit(c, 1.0, 0, &[Access::new(h, R)]).unwrap();
        let g = b.build().unwrap();
        assert_eq!(g.codelet_id("y"), Some(c));
        assert_eq!(g.task_codelet_name(TaskId(0)), "y");
        assert_eq!(g.tasks_per_codelet(), vec![0, 1]);
    }

    #[test]
    fn bad_references_are_errors() {
        let (mut b, c, _) = setup(1);
        assert!(b.submit(c, 0.0, 0, &[Access::new(HandleId(5), R)]).is_err());
        assert!(b.submit(CodeletId(9), 0.0, 0, &[]).is_err());
        assert!(b.submit(c, f64::NAN, 0, &[]).is_err());
        b.submit(c, 0.0, 0, &[]).unwrap();
        assert!(b.add_dependency(TaskId(0), TaskId(0)).is_err());
        assert!(b.add_dependency(TaskId(0), TaskId(3)).is_err());
    }

    #[test]
    fn explicit_cycle_is_reported_with_a_task_on_it() {
        let (mut b, c, _) = setup(0);
        for _ in 0..4 {
            b.submit(c, 0.0, 0, &[]).unwrap();
        }
        b.add_dependency(TaskId(0), TaskId(1)).unwrap();
        b.add_dependency(TaskId(1), TaskId(2)).unwrap();
        b.add_dependency(TaskId(2), TaskId(1)).unwrap();
        b.add_dependency(TaskId(2), TaskId(3)).unwrap();
        let e = b.build().unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("workload.dependencies"));
        assert!(
            e.message.contains("task 1 ") || e.message.contains("task 2 "),
            "{}",
            e.message
        );
        assert!(e.message.contains("cycle"));
    }

    #[test]
    fn explicit_edges_are_deduplicated_and_sorted() {
        let (mut b, c, _) = setup(0);
        for _ in 0..4 {
            b.submit(c, 0.0, 0, &[]).unwrap();
        }
        b.add_dependency(TaskId(0), TaskId(3)).unwrap();
        b.add_dependency(TaskId(0), TaskId(1)).unwrap();
        b.add_dependency(TaskId(0), TaskId(3)).unwrap();
        let g = b.build().unwrap();
        assert_eq!(g.successors(TaskId(0)), &[TaskId(1), TaskId(3)]);
        g.check_acyclic().unwrap();
    }

    /// The predecessor lists, built from the successors when first asked for, and the
    /// in-degrees, counted from them, agree with the edges given, backward ones included:
    /// 3 → 1 (explicit, backward), 0 → 2, 1 → 2, 0 → 3.
    #[test]
    fn predecessors_and_in_degrees_are_the_successors_reversed() {
        let (mut b, c, _) = setup(0);
        for _ in 0..4 {
            b.submit(c, 0.0, 0, &[]).unwrap();
        }
        for (before, after) in [(3, 1), (1, 2), (0, 2), (0, 3)] {
            b.add_dependency(TaskId(before), TaskId(after)).unwrap();
        }
        let g = b.build().unwrap();
        assert!(!g.edges_point_forward());
        assert_eq!(g.in_degrees(), vec![0, 1, 2, 1]);
        let preds: Vec<&[TaskId]> = g.task_ids().map(|t| g.predecessors(t)).collect();
        assert_eq!(
            preds,
            vec![
                &[][..],
                &[TaskId(3)][..],
                &[TaskId(0), TaskId(1)][..],
                &[TaskId(0)][..],
            ]
        );
        assert_eq!(g.predecessor_count(TaskId(2)), 2);
        assert_eq!(g.roots().collect::<Vec<_>>(), vec![TaskId(0)]);
    }

    /// A hint waits for the last writer submitted before it, not for readers (StarPU's
    /// `starpu_data_wont_use` is a sequentially consistent read acquisition): W0 writes h,
    /// R1 reads it, hint, W2 writes it, hint → triggers W0 then W2. A hint on a handle no
    /// earlier task writes has no trigger.
    #[test]
    fn wont_use_waits_for_the_last_writer_before_it() {
        let (mut b, c, h) = setup(2);
        let w0 = b
            .submit(c, 0.0, 0, &[Access::new(h[0], AccessMode::W)])
            .unwrap();
        b.submit(c, 0.0, 0, &[Access::new(h[0], AccessMode::R)])
            .unwrap();
        b.wont_use(h[0]).unwrap();
        b.wont_use(h[1]).unwrap();
        let w2 = b
            .submit(c, 0.0, 0, &[Access::new(h[0], AccessMode::RW)])
            .unwrap();
        b.wont_use(h[0]).unwrap();
        let g = b.build().unwrap();
        assert_eq!(g.wont_use_triggers(), [Some(w0), None, Some(w2)]);
        assert_eq!(g.wont_use_hints()[0].after, TaskId(1));
    }

    #[test]
    fn bad_wont_use_hints_are_errors() {
        let (mut b, c, h) = setup(1);
        let e = b.wont_use(h[0]).unwrap_err().to_string();
        assert!(e.contains("before any task"), "{e}");
        b.submit(c, 0.0, 0, &[Access::new(h[0], AccessMode::W)])
            .unwrap();
        let e = b.wont_use(HandleId(7)).unwrap_err().to_string();
        assert!(e.contains("unknown handle 7"), "{e}");
    }

    #[test]
    fn a_task_record_gives_back_its_kind_size_and_buffers() {
        let (mut b, c, h) = setup(3);
        let m = b
            .submit_payload(
                c,
                (NodeId(2), Place::Device(3)),
                (NodeId(5), Place::Host),
                1e6,
                0,
                &[],
            )
            .unwrap();
        let k = b
            .submit(c, 7.0, -4, &[Access::new(h[0], R), Access::new(h[2], RW)])
            .unwrap();
        b.add_model_bytes(k, 11).unwrap();
        let d = b.submit_delay(c, NodeId(1), 0.5, &[k]).unwrap();
        let g = b.build().unwrap();
        assert_eq!(
            g.task(m).kind(),
            TaskKind::Message {
                from: NodeId(2),
                to: NodeId(5),
                src: Place::Device(3),
                dst: Place::Host,
            }
        );
        assert_eq!(g.task(m).node, NodeId(5));
        assert_eq!(g.payload_bytes(m), Some(1e6));
        let t = g.task(k);
        assert_eq!(
            (t.kind(), t.flops(), t.priority),
            (TaskKind::Compute, 7.0, -4)
        );
        // Two handles of 100 bytes and 11 bytes of scratch.
        assert_eq!((t.model_size_bytes(), t.access_count()), (211, 2));
        assert_eq!(g.accesses(k)[1], Access::new(h[2], RW));
        assert!(g.task(d).is_delay() && g.task(d).kind() == TaskKind::Delay);
        assert_eq!(g.delay_s(d), 0.5);
    }

    #[test]
    fn a_model_size_saturates_at_48_bits_without_touching_the_buffer_count() {
        let (mut b, c, h) = setup(1);
        let k = b.submit(c, 0.0, 0, &[Access::new(h[0], R)]).unwrap();
        b.add_model_bytes(k, u64::MAX).unwrap();
        let g = b.build().unwrap();
        let t = g.task(k);
        assert_eq!(
            (t.model_size_bytes(), t.access_count()),
            (MAX_MODEL_SIZE_BYTES, 1)
        );
    }

    #[test]
    fn a_message_with_flops_off_its_receiving_node_or_to_gpu_65535_is_refused() {
        let (mut b, c, _) = setup(0);
        let kind = |dst| TaskKind::Message {
            from: NodeId(0),
            to: NodeId(1),
            src: Place::Host,
            dst,
        };
        let e = b
            .submit_kind(c, 0.0, 0, &[], NodeId(0), kind(Place::Host))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a message to node 1 submitted on node 0"), "{e}");
        let e = b
            .submit_kind(c, 0.0, 0, &[], NodeId(1), kind(Place::Device(u16::MAX)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("GPU 65535: expected a GPU index below 65535"),
            "{e}"
        );
        assert!(
            b.submit_kind(c, 0.0, 0, &[], NodeId(1), kind(Place::Device(65534)))
                .is_ok()
        );
    }

    #[test]
    fn lists_reversed_in_blocks_are_the_lists_reversed_at_once() {
        // Lists of tasks 0..6: [1 2 3], [], [0 4], [0 1 2 4 5], [], [3]. Reversed: 0 is in the
        // lists of 2 and 3, 1 in 0 and 3, 2 in 0 and 3, 3 in 0 and 5, 4 in 2 and 3, 5 in 3.
        let lists: [&[u32]; 6] = [&[1, 2, 3], &[], &[0, 4], &[0, 1, 2, 4, 5], &[], &[3]];
        let mut offsets = vec![0u32];
        let mut ids = Vec::new();
        for l in lists {
            ids.extend(l.iter().map(|&v| TaskId(v)));
            offsets.push(ids.len() as u32);
        }
        let ids_of = |v: &[TaskId]| v.iter().map(|t| t.0).collect::<Vec<_>>();
        let (o, r) = reverse_lists(&offsets, &ids);
        assert_eq!(o, [0, 2, 4, 6, 8, 10, 11]);
        assert_eq!(ids_of(&r), [2, 3, 0, 3, 0, 3, 0, 5, 2, 3, 3]);
        // Blocks shorter than a list, of one edge, and larger than all.
        for block in [1, 2, 3, 4, 100] {
            let (ob, rb) = reverse_lists_in_blocks(offsets.clone(), ids.clone(), block);
            assert_eq!((&ob, ids_of(&rb)), (&o, ids_of(&r)), "block {block}");
        }
    }
}
