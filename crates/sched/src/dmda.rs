//! The dmda family — `dm`, `dmda`, `dmdap`, `dmdar`, `dmdas`, `dmdasd` — as one policy with
//! flags, following StarPU's `deque_modeling_policy_data_aware.c` (rules in
//! `starpu-reference.md` §1a, written here from that description).
//!
//! Push: for every worker that can run the task, the expected end is
//! `start + length`, with `exp_start = max(worker's exp_start, now)`,
//! `start = max(exp_start + queued length, now + transfer penalty)` (data-aware variants;
//! `dm` ignores transfers). The worker with the smallest fitness
//! `α·(exp_end − min exp_end) + β·penalty + γ·energy (+ idle power term)` wins (first in
//! worker order on ties). The transfer penalty is StarPU's estimate
//! (latency + 2·nGPUs·size/bandwidth) or, as an option, the contention-free nominal time.
//! The task is queued on that worker — at the back, or after the tasks of higher or equal
//! priority for the sorted variants — and its inputs are prefetched there. Pushes of other
//! threads at the same date are not seen: StarPU's threads pushing together all read the
//! queues before any books (`Instant`).
//!
//! Pop: the head of the queue, or for `dmdar`/`dmdas`/`dmdasd` the task, among those whose
//! priority is at least the head's, with the fewest bytes not yet valid on the worker, then the
//! fewest not yet valid nor loading, then the fewest not yet allocated.
//!
//! Bookkeeping per worker (StarPU's `fifo_taskq`): `exp_len` (predicted work queued and not
//! started), `pipeline_len` (work popped: its transfer, then its computation), `exp_start`,
//! `exp_end = exp_start + exp_len`. At push `exp_len += hidden-or-not transfer + length`; at pop
//! the transfer moves from `exp_len` to `pipeline_len`; at start the transfer leaves
//! `pipeline_len` and the length moves there from `exp_len`; at end it leaves. Both return to 0
//! when the queue drains ([`Dmda::check_drained`]; StarPU issue #6 was a bug of this kind).
//! `exp_start` follows StarPU's hooks: `max(exp_start, now)` for the chosen worker at push and
//! at every pop, then `now + pipeline_len` (an assignment) once a task is popped and again when
//! it starts, and `max(now + pipeline_len, exp_start)` when it ends. `ntasks` counts queued
//! tasks, `pipeline_ntasks` tasks from push to end; only the greedy fallback reads them.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rustc_hash::FxHashMap;
use serde::Deserialize;

use super::{Decision, Scheduler};
use crate::registry::{NonNegative, OptionDoc, OptionValues};
use hetsim_platform::machine::MemNodeId;
use hetsim_runtime::{View, Wakes, WorkerId};
use hetsim_taskgraph::{HandleId, TaskId};

/// Which member of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Deque model: no data awareness.
    Dm,
    /// Data-aware, FIFO queues.
    Dmda,
    /// Data-aware, queues sorted by priority.
    Dmdap,
    /// Data-aware, FIFO queues, ready-first pop.
    Dmdar,
    /// Data-aware, sorted queues, ready-first pop.
    Dmdas,
    /// As dmdas, and the queued length a task waits behind counts only tasks of priority ≥ its.
    Dmdasd,
}

impl Variant {
    /// The `--sched` name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Dm => "dm",
            Variant::Dmda => "dmda",
            Variant::Dmdap => "dmdap",
            Variant::Dmdar => "dmdar",
            Variant::Dmdas => "dmdas",
            Variant::Dmdasd => "dmdasd",
        }
    }

    /// The variant called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Variant::Dm,
            Variant::Dmda,
            Variant::Dmdap,
            Variant::Dmdar,
            Variant::Dmdas,
            Variant::Dmdasd,
        ]
        .into_iter()
        .find(|v| v.name() == name)
    }

    fn data_aware(self) -> bool {
        self != Variant::Dm
    }

    fn sorted(self) -> bool {
        matches!(self, Variant::Dmdap | Variant::Dmdas | Variant::Dmdasd)
    }

    fn ready_first(self) -> bool {
        matches!(self, Variant::Dmdar | Variant::Dmdas | Variant::Dmdasd)
    }
}

/// Which transfer time the policy predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransferEstimate {
    /// StarPU's `starpu_transfer_predict`: latency + 2·nGPUs·size/bandwidth, no contention.
    #[default]
    Starpu,
    /// latency + size / bottleneck bandwidth of the route, no contention.
    Nominal,
}

impl<'de> serde::Deserialize<'de> for TransferEstimate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)?.as_str() {
            "starpu" => Ok(TransferEstimate::Starpu),
            "nominal" => Ok(TransferEstimate::Nominal),
            other => Err(serde::de::Error::custom(format!(
                "unknown transfer estimate `{other}`: expected `starpu` or `nominal`"
            ))),
        }
    }
}

/// `alpha` (StarPU's `STARPU_SCHED_ALPHA`).
const ALPHA: OptionDoc = OptionDoc {
    name: "alpha",
    values: OptionValues::NonNegative,
    default: "1",
    help: "weight of the predicted task length (STARPU_SCHED_ALPHA)",
};

/// The options of the data-aware members, in the order docs list them.
const DATA_AWARE: [OptionDoc; 5] = [
    ALPHA,
    OptionDoc {
        name: "beta",
        values: OptionValues::NonNegative,
        default: "1",
        help: "weight of the predicted transfer time (STARPU_SCHED_BETA)",
    },
    OptionDoc {
        name: "gamma",
        values: OptionValues::NonNegative,
        default: "1000",
        help: "weight of the energy term (STARPU_SCHED_GAMMA)",
    },
    OptionDoc {
        name: "idle_power",
        values: OptionValues::NonNegative,
        default: "0",
        help: "idle power of the machine, W (STARPU_IDLE_POWER)",
    },
    OptionDoc {
        name: "transfer_estimate",
        values: OptionValues::Choice(&["starpu", "nominal"]),
        default: "starpu",
        help: "StarPU's transfer prediction (latency + 2·nGPUs·size/bandwidth), or the \
               contention-free nominal time",
    },
];

/// `dm`'s options.
pub const DM_OPTIONS: &[OptionDoc] = &[ALPHA];
/// The options of `dmda` and `dmdap`.
pub const DMDA_OPTIONS: &[OptionDoc] = &DATA_AWARE;
/// The options of `dmdar`, `dmdas` and `dmdasd`.
pub const READY_OPTIONS: &[OptionDoc] = &[
    DATA_AWARE[0],
    DATA_AWARE[1],
    DATA_AWARE[2],
    DATA_AWARE[3],
    DATA_AWARE[4],
    OptionDoc {
        name: "ready_first",
        values: OptionValues::Bool,
        default: "true",
        help: "pop the queued task whose data is most ready first (false: see what that rule \
               decides)",
    },
];

/// `[scheduler]` options of `dm` ([`DM_OPTIONS`]); unset ones keep StarPU's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmOptions {
    /// See [`Params::alpha`].
    #[serde(default)]
    pub alpha: Option<NonNegative>,
}

/// `[scheduler]` options of `dmda` and `dmdap` ([`DMDA_OPTIONS`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmdaOptions {
    /// See [`Params::alpha`].
    #[serde(default)]
    pub alpha: Option<NonNegative>,
    /// See [`Params::beta`].
    #[serde(default)]
    pub beta: Option<NonNegative>,
    /// See [`Params::gamma`].
    #[serde(default)]
    pub gamma: Option<NonNegative>,
    /// See [`Params::idle_power`].
    #[serde(default)]
    pub idle_power: Option<NonNegative>,
    /// See [`Params::transfer_estimate`].
    #[serde(default)]
    pub transfer_estimate: Option<TransferEstimate>,
}

/// `[scheduler]` options of `dmdar`, `dmdas` and `dmdasd` ([`READY_OPTIONS`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadyOptions {
    /// See [`Params::alpha`].
    #[serde(default)]
    pub alpha: Option<NonNegative>,
    /// See [`Params::beta`].
    #[serde(default)]
    pub beta: Option<NonNegative>,
    /// See [`Params::gamma`].
    #[serde(default)]
    pub gamma: Option<NonNegative>,
    /// See [`Params::idle_power`].
    #[serde(default)]
    pub idle_power: Option<NonNegative>,
    /// See [`Params::transfer_estimate`].
    #[serde(default)]
    pub transfer_estimate: Option<TransferEstimate>,
    /// See [`Params::ready_first`].
    #[serde(default)]
    pub ready_first: Option<bool>,
}

impl DmOptions {
    /// The parameters: StarPU's defaults where an option is not set.
    pub fn params(&self) -> Params {
        DmdaOptions {
            alpha: self.alpha,
            ..DmdaOptions::default()
        }
        .params()
    }
}

impl DmdaOptions {
    /// The parameters: StarPU's defaults where an option is not set.
    pub fn params(&self) -> Params {
        let d = Params::default();
        let or = |v: Option<NonNegative>, d: f64| v.map_or(d, |v| v.0);
        Params {
            alpha: or(self.alpha, d.alpha),
            beta: or(self.beta, d.beta),
            gamma: or(self.gamma, d.gamma),
            idle_power: or(self.idle_power, d.idle_power),
            transfer_estimate: self.transfer_estimate.unwrap_or(d.transfer_estimate),
            ..d
        }
    }
}

impl ReadyOptions {
    /// The parameters: StarPU's defaults where an option is not set.
    pub fn params(&self) -> Params {
        let data_aware = DmdaOptions {
            alpha: self.alpha,
            beta: self.beta,
            gamma: self.gamma,
            idle_power: self.idle_power,
            transfer_estimate: self.transfer_estimate,
        };
        Params {
            ready_first: self.ready_first.unwrap_or(Params::default().ready_first),
            ..data_aware.params()
        }
    }
}

/// The knobs of the family (StarPU's `STARPU_SCHED_ALPHA` ...).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Weight of the expected end (default 1).
    pub alpha: f64,
    /// Weight of the transfer penalty (default 1).
    pub beta: f64,
    /// Cost of one joule, in µs (default 1000). No energy model yet: only the idle term uses it.
    pub gamma: f64,
    /// Idle power in W (default 0).
    pub idle_power: f64,
    /// Transfer estimate.
    pub transfer_estimate: TransferEstimate,
    /// Whether to ask for the task's inputs to be prefetched at push time (StarPU: yes).
    pub prefetch: bool,
    /// Whether the sorted variants' ready-first pop is used (switch off to see what it decides).
    pub ready_first: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            alpha: 1.0,
            beta: 1.0,
            gamma: 1000.0,
            idle_power: 0.0,
            transfer_estimate: TransferEstimate::Starpu,
            prefetch: true,
            ready_first: true,
        }
    }
}

/// A ready-first pop's key for a task on a worker: bytes of its read buffers not valid, not
/// valid nor loading, not allocated on the worker's memory node (smallest first).
type Readiness = (u64, u64, u64);

/// Where a queued task is in its queue: its priority level (the task's priority for sorted
/// variants, 0 for FIFO ones), highest first, then push order.
type Place = (Reverse<i32>, u64);

/// A worker's queued tasks in pop order, by place. Where places only grow (FIFO queues that pop
/// from the front) a deque, whose push and pop cost nothing to find; otherwise (sorted queues,
/// ready-first pops that take from anywhere) a sorted map.
#[derive(Debug, Clone)]
enum Tasks {
    Fifo(Fifo),
    Sorted(BTreeMap<Place, Queued>),
}

/// [`Tasks::Fifo`]'s deque.
type Fifo = VecDeque<(Place, Queued)>;

impl Default for Tasks {
    fn default() -> Self {
        Tasks::Sorted(BTreeMap::new())
    }
}

impl Tasks {
    /// Empty: a deque if `fifo` (places pushed in increasing order, popped mostly first).
    fn new(fifo: bool) -> Self {
        if fifo {
            Tasks::Fifo(VecDeque::new())
        } else {
            Tasks::default()
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Tasks::Fifo(f) => f.is_empty(),
            Tasks::Sorted(m) => m.is_empty(),
        }
    }

    fn insert(&mut self, place: Place, queued: Queued) {
        match self {
            Tasks::Fifo(f) => {
                debug_assert!(f.back().is_none_or(|b| b.0 < place), "FIFO places grow");
                f.push_back((place, queued));
            }
            Tasks::Sorted(m) => {
                m.insert(place, queued);
            }
        }
    }

    /// The first place in pop order.
    fn first(&self) -> Option<Place> {
        match self {
            Tasks::Fifo(f) => f.front().map(|e| e.0),
            Tasks::Sorted(m) => m.first_key_value().map(|(&p, _)| p),
        }
    }

    fn remove(&mut self, place: Place) -> Option<Queued> {
        match self {
            Tasks::Fifo(f) => {
                let i = f.binary_search_by(|e| e.0.cmp(&place)).ok()?;
                f.remove(i).map(|e| e.1)
            }
            Tasks::Sorted(m) => m.remove(&place),
        }
    }

    /// The deque or the map, whichever holds the tasks (the other `None`).
    fn parts(&self) -> (Option<&Fifo>, Option<&BTreeMap<Place, Queued>>) {
        match self {
            Tasks::Fifo(f) => (Some(f), None),
            Tasks::Sorted(m) => (None, Some(m)),
        }
    }

    /// The queued tasks in pop order.
    fn values(&self) -> impl Iterator<Item = &Queued> {
        let (fifo, sorted) = self.parts();
        let fifo = fifo.into_iter().flatten().map(|e| &e.1);
        fifo.chain(sorted.into_iter().flat_map(BTreeMap::values))
    }

    /// The queued tasks of priority level `level`, in pop order.
    fn level(&self, level: i32) -> impl Iterator<Item = &Queued> {
        let (fifo, sorted) = self.parts();
        let fifo = fifo.into_iter().flatten();
        let fifo = fifo.filter(move |e| e.0.0 == Reverse(level)).map(|e| &e.1);
        let range = (Reverse(level), 0)..=(Reverse(level), u64::MAX);
        let sorted = sorted.into_iter().flat_map(move |m| m.range(range.clone()));
        fifo.chain(sorted.map(|(_, q)| q))
    }
}

#[derive(Debug, Clone, Default)]
struct Queue {
    /// The queued tasks in pop order.
    tasks: Tasks,
    /// The tasks popped and not ended, in pop order (the order they start and end in), with
    /// the length and transfer booked for them (µs).
    popped: VecDeque<(TaskId, f64, f64)>,
    /// Ready-first variants: the priority level of the head (the highest), whose tasks are in
    /// `ready`.
    active: Option<i32>,
    /// Ready-first variants: the tasks of the head's level by readiness, then push order, so
    /// the first is what a pop that scanned that level would choose. Kept up to date as
    /// replicas change ([`Scheduler::replicas_changed`]); a level's keys are computed when it
    /// becomes the head's.
    ready: BTreeSet<(Readiness, u64, TaskId)>,
    exp_start_us: f64,
    exp_len_us: f64,
    pipeline_len_us: f64,
    ntasks: u32,
    pipeline_ntasks: u32,
    /// The largest length booked (µs): the scale of the rounding the sums carry.
    largest_us: f64,
}

impl Queue {
    fn exp_end_us(&self) -> f64 {
        self.exp_start_us + self.exp_len_us
    }

    /// How far from zero the lengths may end from rounding alone: [`DRAIN_EPS_US`], or a few
    /// units in the last place of the largest length booked (a 1e12 µs task leaves ~1e-4 µs).
    fn tolerance_us(&self) -> f64 {
        DRAIN_EPS_US.max(1e-12 * self.largest_us)
    }
}

/// The queued tasks that read a replica on a worker of its node, and what the replica adds
/// to their readiness keys.
#[derive(Debug, Clone, Default)]
struct Readers {
    /// As of the last change the policy heard of ([`Dmda::contribution`]).
    contribution: Readiness,
    /// (worker, task), once per read access.
    tasks: Vec<(WorkerId, TaskId)>,
}

/// A queued task, with what was booked for it at its push.
#[derive(Debug, Clone, Copy)]
struct Queued {
    task: TaskId,
    priority: i32,
    /// Predicted length and transfer, µs.
    len_us: f64,
    transfer_us: f64,
}

/// What a ready-first policy remembers of a queued task.
#[derive(Debug, Clone, Copy)]
struct Booked {
    /// Its place in its worker's queue.
    place: Place,
    /// Its readiness key while queued in its queue's active level.
    readiness: Readiness,
}

/// One policy of the dmda family.
#[derive(Debug)]
pub struct Dmda {
    variant: Variant,
    params: Params,
    queues: Vec<Queue>,
    /// Ready-first variants: the queued tasks (a map: under a distributed graph each rank has
    /// its own instance and sees only its tasks).
    booked: FxHashMap<TaskId, Booked>,
    /// Pushes so far: the push order of queued tasks.
    pushes: u64,
    /// Ready-first variants: per replica (handle, memory node) that queued tasks read.
    readers: FxHashMap<(HandleId, MemNodeId), Readers>,
    /// The replicas changed since the last pop, each once.
    scratch_changes: Vec<(HandleId, MemNodeId)>,
    /// Candidates of a push: (worker, expected end, length, penalty), µs.
    scratch_cands: Vec<(WorkerId, f64, f64, f64)>,
    /// Transfer penalties (µs) of the task being decided, per memory node seen so far: every
    /// worker of a node needs the same copies.
    scratch_penalties: Vec<(MemNodeId, f64)>,
    /// The tasks of a level becoming the head's.
    scratch_level: Vec<TaskId>,
    queued: usize,
    /// The pushes of the current date, which other threads' pushes at that date do not see.
    instant: Instant,
}

/// The pushes made at one date. StarPU's threads that push at one date run in SimGrid's turns
/// among its actors: each reads every worker's queue while it computes its predictions (each
/// model lookup takes the model's lock, a blocking simcall) and books its choice only once it
/// holds the chosen worker's lock (`push_task_on_best_worker`). So the j-th pushes of different
/// threads at one date all decide before any of them books: a decision does not see the
/// bookings of other threads' pushes at its date but those they made earlier (StarPU's trace of
/// nine CPU workers ending at one date shows nine decisions on the same queues, all choosing
/// the same worker).
#[derive(Debug, Default)]
struct Instant {
    /// The date, in picoseconds: dates summed in different orders differ in their last bits,
    /// and the event calendar ties dates equal to the picosecond.
    at_ps: i64,
    /// Pushes so far at this date per pushing thread (`None`: the submitting thread).
    counts: Vec<(Option<WorkerId>, u32)>,
    /// Bookings at this date.
    booked: Vec<Booking>,
    /// Per worker, what the push being decided does not see: (µs, tasks).
    hidden: Vec<(f64, u32)>,
    /// The tasks the push being decided does not see.
    hidden_tasks: Vec<TaskId>,
}

/// A push's booking, as the pushes of the same date see it or not.
#[derive(Debug, Clone, Copy)]
struct Booking {
    /// The pushing thread (`None`: the submitting thread).
    thread: Option<WorkerId>,
    /// The push's index among its thread's pushes at this date.
    index: u32,
    task: TaskId,
    worker: WorkerId,
    /// Length booked with the transfer, µs.
    us: f64,
}

impl Instant {
    /// Start the push of `thread` at `now_us`: its index among its thread's pushes at that date.
    fn enter(&mut self, now_us: f64, thread: Option<WorkerId>) -> u32 {
        let at_ps = (now_us * 1e6).round() as i64;
        if self.at_ps != at_ps {
            self.at_ps = at_ps;
            self.counts.clear();
            self.booked.clear();
        }
        match self.counts.iter_mut().find(|c| c.0 == thread) {
            Some(c) => {
                c.1 += 1;
                c.1 - 1
            }
            None => {
                self.counts.push((thread, 1));
                0
            }
        }
    }

    /// Fill `hidden` and `hidden_tasks` for the push `index` of `thread`.
    fn hide(&mut self, nworkers: usize, thread: Option<WorkerId>, index: u32) {
        self.hidden.clear();
        self.hidden.resize(nworkers, (0.0, 0));
        self.hidden_tasks.clear();
        for b in &self.booked {
            if b.thread != thread && b.index >= index {
                let h = &mut self.hidden[b.worker.index()];
                h.0 += b.us;
                h.1 += 1;
                self.hidden_tasks.push(b.task);
            }
        }
    }
}

fn add(a: Readiness, b: Readiness) -> Readiness {
    (a.0 + b.0, a.1 + b.1, a.2 + b.2)
}

fn sub(a: Readiness, b: Readiness) -> Readiness {
    (a.0 - b.0, a.1 - b.1, a.2 - b.2)
}

/// A queue length (µs) less what a decision does not see, rounding residues taken to 0.
fn seen_us(len_us: f64, hidden_us: f64, tolerance_us: f64) -> f64 {
    if hidden_us == 0.0 {
        return len_us;
    }
    let seen = len_us - hidden_us;
    if seen.abs() <= tolerance_us {
        0.0
    } else {
        seen
    }
}

/// Tolerance for the bookkeeping returning to zero: sums of µs over a run.
const DRAIN_EPS_US: f64 = 1e-6;

impl Dmda {
    /// A policy of the given variant.
    pub fn new(variant: Variant, params: Params) -> Self {
        Dmda {
            variant,
            params,
            queues: Vec::new(),
            booked: FxHashMap::default(),
            pushes: 0,
            readers: FxHashMap::default(),
            scratch_changes: Vec::new(),
            scratch_cands: Vec::new(),
            scratch_penalties: Vec::new(),
            scratch_level: Vec::new(),
            queued: 0,
            instant: Instant::default(),
        }
    }

    fn ensure(&mut self, view: &View<'_>) {
        if self.queues.len() < view.workers().len() {
            let now_us = view.now_s() * 1e6;
            let fifo = !self.variant.sorted() && !self.variant.ready_first();
            self.queues.resize_with(view.workers().len(), || Queue {
                exp_start_us: now_us,
                tasks: Tasks::new(fifo),
                ..Queue::default()
            });
        }
    }

    /// Whether pops choose by readiness.
    fn pops_ready_first(&self) -> bool {
        self.variant.ready_first() && self.params.ready_first
    }

    fn penalty_us(&self, task: TaskId, w: WorkerId, view: &View<'_>) -> f64 {
        if !self.variant.data_aware() {
            return 0.0;
        }
        1e6 * match self.params.transfer_estimate {
            TransferEstimate::Starpu => view.starpu_transfer_estimate_s(task, w),
            TransferEstimate::Nominal => view.nominal_transfer_estimate_s(task, w),
        }
    }

    /// The worker dmda would choose for `task` (of priority `prio` as this policy sees it),
    /// with its predicted length and penalty (µs).
    fn choose(&mut self, task: TaskId, prio: i32, view: &View<'_>) -> (WorkerId, f64, f64) {
        let now_us = view.now_s() * 1e6;
        let mut cands = std::mem::take(&mut self.scratch_cands);
        cands.clear();
        let mut penalties = std::mem::take(&mut self.scratch_penalties);
        penalties.clear();
        let mut uncalibrated = false;
        for w in view.workers() {
            let Some(len_s) = view.predicted_length_s(task, w.id) else {
                continue;
            };
            if len_s <= 0.0 {
                uncalibrated = true;
            }
            let q = &self.queues[w.id.index()];
            // "Sometimes workers didn't take the tasks as early as we expected": only the
            // chosen worker's exp_start is moved, at push.
            let exp_start = q.exp_start_us.max(now_us);
            let prev_len = if self.variant == Variant::Dmdasd {
                let hidden = &self.instant.hidden_tasks;
                q.tasks
                    .values()
                    .filter(|q| q.priority >= prio && !hidden.contains(&q.task))
                    .map(|q| q.len_us + q.transfer_us)
                    .sum()
            } else {
                seen_us(
                    q.exp_len_us,
                    self.instant.hidden[w.id.index()].0,
                    q.tolerance_us(),
                )
            };
            let len = len_s * 1e6;
            let penalty = match penalties.iter().find(|&&(n, _)| n == w.memory) {
                Some(&(_, p)) => p,
                None => {
                    let p = self.penalty_us(task, w.id, view);
                    penalties.push((w.memory, p));
                    p
                }
            };
            let start = if self.variant.data_aware() {
                (exp_start + prev_len).max(now_us + penalty)
            } else {
                exp_start + prev_len
            };
            cands.push((w.id, start + len, len, penalty));
        }
        self.scratch_penalties = penalties;
        assert!(!cands.is_empty(), "the runtime pushes only runnable tasks");
        if uncalibrated {
            // Greedy fallback: fewest tasks per unit of relative speed, booked as 0 µs of
            // work and transfer (`forced_best`: model_best = transfer_model_best = 0).
            let pick = cands
                .iter()
                .min_by(|a, b| {
                    let load = |w: WorkerId| {
                        let q = &self.queues[w.index()];
                        let hidden = 2 * self.instant.hidden[w.index()].1;
                        f64::from(q.ntasks + q.pipeline_ntasks - hidden) / view.relative_speedup(w)
                    };
                    load(a.0).total_cmp(&load(b.0))
                })
                .expect("non-empty");
            let w = pick.0;
            self.scratch_cands = cands;
            return (w, 0.0, 0.0);
        }
        let min_end = cands.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
        let max_end = self
            .queues
            .iter()
            .zip(&self.instant.hidden)
            .map(|(q, h)| q.exp_start_us + seen_us(q.exp_len_us, h.0, q.tolerance_us()))
            .fold(f64::NEG_INFINITY, f64::max);
        let mut best: Option<(f64, usize)> = None;
        for (i, &(_, end, _, penalty)) in cands.iter().enumerate() {
            let fitness = if self.variant.data_aware() {
                let mut f = self.params.alpha * (end - min_end) + self.params.beta * penalty;
                if end > max_end {
                    f += self.params.gamma * self.params.idle_power * (end - max_end) / 1e6;
                }
                f
            } else {
                end - min_end
            };
            if best.is_none_or(|(bf, _)| fitness < bf) {
                best = Some((fitness, i));
            }
        }
        let c = cands[best.expect("non-empty").1];
        self.scratch_cands = cands;
        (c.0, c.2, c.3)
    }

    /// Panics unless every queue is empty and its predicted lengths are back to zero: the
    /// bookkeeping invariant, checked by tests at the end of runs.
    pub fn check_drained(&self) {
        for (w, q) in self.queues.iter().enumerate() {
            assert!(q.tasks.is_empty(), "worker {w}: tasks left queued");
            assert!(q.popped.is_empty(), "worker {w}: popped tasks not ended");
            assert_eq!(
                (q.ntasks, q.pipeline_ntasks),
                (0, 0),
                "worker {w}: task counts"
            );
            assert!(
                q.exp_len_us.abs() < q.tolerance_us() && q.pipeline_len_us.abs() < q.tolerance_us(),
                "worker {w}: exp_len {} µs, pipeline_len {} µs at the end",
                q.exp_len_us,
                q.pipeline_len_us
            );
        }
        assert!(self.booked.is_empty(), "queued tasks still booked");
    }

    fn check_non_negative(&self, w: WorkerId) {
        let q = &self.queues[w.index()];
        assert!(
            q.exp_len_us > -q.tolerance_us() && q.pipeline_len_us > -q.tolerance_us(),
            "worker {}: exp_len {} µs, pipeline_len {} µs",
            w.0,
            q.exp_len_us,
            q.pipeline_len_us
        );
    }

    /// Queued `task` of worker `w`'s active level takes its place in `ready`, keyed by the
    /// replicas' contributions as last heard (changes still to come re-key it before the
    /// next pop).
    fn enter_ready(&mut self, w: WorkerId, task: TaskId, view: &View<'_>) {
        let node = view.workers()[w.index()].memory;
        let k = view
            .graph()
            .accesses(task)
            .iter()
            .filter(|a| a.mode.reads())
            .map(|a| self.readers[&(a.handle, node)].contribution)
            .fold((0, 0, 0), add);
        let b = self.booked.get_mut(&task).expect("queued tasks are booked");
        b.readiness = k;
        self.queues[w.index()].ready.insert((k, b.place.1, task));
    }

    /// Make the level of worker `w`'s head the active one (if it is not), keying its tasks.
    fn activate(&mut self, w: WorkerId, view: &View<'_>) {
        let q = &mut self.queues[w.index()];
        let top = q.tasks.first().map(|(Reverse(l), _)| l);
        if q.active == top {
            return;
        }
        q.active = top;
        q.ready.clear();
        let Some(level) = top else {
            return;
        };
        let mut tasks = std::mem::take(&mut self.scratch_level);
        tasks.clear();
        tasks.extend(q.tasks.level(level).map(|q| q.task));
        for &t in &tasks {
            self.enter_ready(w, t, view);
        }
        self.scratch_level = tasks;
    }

    /// What one read of `h` adds to a task's readiness key on memory node `node`: its bytes
    /// if it is not valid there, if it is neither valid nor loading there, and if it is not
    /// allocated there. A task's key (the ready-first pop's) sums this over its reads.
    fn contribution(h: HandleId, node: MemNodeId, view: &View<'_>) -> Readiness {
        let bytes = view.graph().handle(h).size_bytes;
        let valid = view.is_valid_on(h, node);
        let loading = view.is_loading_on(h, node);
        let allocated = view.is_allocated_on(h, node);
        (
            if valid { 0 } else { bytes },
            if valid || loading { 0 } else { bytes },
            if allocated { 0 } else { bytes },
        )
    }

    /// Current bookkeeping of a worker: (exp_start, exp_len, pipeline_len) in seconds.
    pub fn bookkeeping(&self, w: WorkerId) -> (f64, f64, f64) {
        self.queues.get(w.index()).map_or((0.0, 0.0, 0.0), |q| {
            (
                q.exp_start_us / 1e6,
                q.exp_len_us / 1e6,
                q.pipeline_len_us / 1e6,
            )
        })
    }
}

impl Scheduler for Dmda {
    fn name(&self) -> &'static str {
        self.variant.name()
    }

    fn push(&mut self, task: TaskId, view: &View<'_>, decisions: &mut Vec<Decision>) {
        self.ensure(view);
        let prio = self.priority(task, view);
        let now_us = view.now_s() * 1e6;
        let thread = view.released_by();
        let index = self.instant.enter(now_us, thread);
        self.instant.hide(self.queues.len(), thread, index);
        let (w, len, penalty) = self.choose(task, prio, view);
        // `push_task_on_best_worker` wakes the worker it queued the task to.
        decisions.push(Decision::Wake { worker: w });
        let ready_first = self.pops_ready_first();
        let q = &mut self.queues[w.index()];
        q.exp_start_us = q.exp_start_us.max(now_us);
        // StarPU counts the task in `pipeline_ntasks` from its push to its end (the greedy
        // fallback's load adds `ntasks`, so a queued task counts twice there).
        q.pipeline_ntasks += 1;
        // A transfer that ends before the worker's queue does is hidden.
        let transfer = if now_us + penalty < q.exp_end_us() {
            0.0
        } else {
            now_us + penalty - q.exp_end_us()
        };
        q.exp_len_us += transfer + len;
        q.largest_us = q.largest_us.max(transfer + len);
        self.instant.booked.push(Booking {
            thread,
            index,
            task,
            worker: w,
            us: transfer + len,
        });
        let q = &mut self.queues[w.index()];
        q.ntasks += 1;
        // Sorted queues keep priority order, FIFO within a priority; the others FIFO only.
        let level = if self.variant.sorted() { prio } else { 0 };
        let place = (Reverse(level), self.pushes);
        self.pushes += 1;
        q.tasks.insert(
            place,
            Queued {
                task,
                priority: prio,
                len_us: len,
                transfer_us: transfer,
            },
        );
        self.queued += 1;
        if ready_first {
            self.booked.insert(
                task,
                Booked {
                    place,
                    readiness: (0, 0, 0),
                },
            );
            let node = view.workers()[w.index()].memory;
            for a in view
                .graph()
                .accesses(task)
                .iter()
                .filter(|a| a.mode.reads())
            {
                self.readers
                    .entry((a.handle, node))
                    .or_insert_with(|| Readers {
                        contribution: Self::contribution(a.handle, node, view),
                        tasks: Vec::new(),
                    })
                    .tasks
                    .push((w, task));
            }
            if self.queues[w.index()].active == Some(level) {
                self.enter_ready(w, task, view);
            } else {
                self.activate(w, view);
            }
        }
        if self.params.prefetch && self.variant.data_aware() {
            decisions.push(Decision::Prefetch { task, worker: w });
        }
    }

    fn pop(&mut self, worker: WorkerId, view: &View<'_>) -> Option<TaskId> {
        self.ensure(view);
        let now_us = view.now_s() * 1e6;
        let ready_first = self.pops_ready_first();
        // `_dmda_pop_task`: "take the opportunity to update start time", task or not.
        let q = &mut self.queues[worker.index()];
        q.exp_start_us = q.exp_start_us.max(now_us);
        // Ready-first: among the tasks of the head's priority level (sorted queues), or all
        // of them (FIFO queues, whose tasks all have priority 0 as these policies take
        // none), the least ready bytes, then the earliest pushed.
        let (place, readiness) = if ready_first {
            let task = q.ready.first()?.2;
            let b = self.booked.remove(&task).expect("queued tasks are booked");
            (b.place, Some(b.readiness))
        } else {
            (q.tasks.first()?, None)
        };
        let q = &mut self.queues[worker.index()];
        let Queued {
            task,
            len_us,
            transfer_us: transfer,
            ..
        } = q.tasks.remove(place).expect("a queued task");
        q.popped.push_back((task, len_us, transfer));
        if let Some(readiness) = readiness {
            q.ready.remove(&(readiness, place.1, task));
            if q.ready.is_empty() {
                self.activate(worker, view);
            }
            let (g, node) = (view.graph(), view.workers()[worker.index()].memory);
            for a in g.accesses(task).iter().filter(|a| a.mode.reads()) {
                let key = (a.handle, node);
                let list = &mut self.readers.get_mut(&key).expect("indexed at push").tasks;
                if let Some(i) = list.iter().position(|&(_, t)| t == task) {
                    list.swap_remove(i);
                }
                if list.is_empty() {
                    self.readers.remove(&key);
                }
            }
        }
        let q = &mut self.queues[worker.index()];
        // `_starpu_fifo_task_transfer_started`: the transfer moves to the pipeline and the
        // queue restarts after it (an assignment: exp_start may move back).
        q.exp_len_us -= transfer;
        q.pipeline_len_us += transfer;
        q.exp_start_us = now_us + q.pipeline_len_us;
        q.ntasks -= 1;
        self.queued -= 1;
        self.check_non_negative(worker);
        Some(task)
    }

    fn task_started(&mut self, task: TaskId, worker: WorkerId, view: &View<'_>) {
        let q = &mut self.queues[worker.index()];
        let &(_, len, transfer) = q
            .popped
            .iter()
            .find(|p| p.0 == task)
            .expect("a task starts on the worker that popped it");
        q.pipeline_len_us -= transfer;
        q.exp_len_us -= len;
        q.pipeline_len_us += len;
        // `_starpu_fifo_task_started` (the pre-execution hook): exp_start = now + pipeline_len,
        // an assignment.
        q.exp_start_us = view.now_s() * 1e6 + q.pipeline_len_us;
        self.check_non_negative(worker);
    }

    fn task_ended(&mut self, task: TaskId, worker: WorkerId, view: &View<'_>) {
        let q = &mut self.queues[worker.index()];
        let i = q
            .popped
            .iter()
            .position(|p| p.0 == task)
            .expect("a task ends on the worker that popped it");
        let (_, len, _) = q.popped.remove(i).expect("found");
        q.pipeline_len_us -= len;
        q.pipeline_ntasks -= 1;
        // `_starpu_fifo_task_finished`: exp_start = max(now + pipeline_len, exp_start).
        q.exp_start_us = q.exp_start_us.max(view.now_s() * 1e6 + q.pipeline_len_us);
        self.check_non_negative(worker);
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn watches_replicas(&self) -> bool {
        self.pops_ready_first()
    }

    /// `push_task_on_best_worker` wakes the worker it queued the task to.
    fn wakes(&self) -> Wakes {
        Wakes::Chosen
    }

    /// Re-key the queued tasks that read a changed replica on their worker's memory node.
    fn replicas_changed(&mut self, changes: &[(HandleId, MemNodeId)], view: &View<'_>) {
        // Keys are recomputed from the current state: once per replica is enough.
        let mut changed = std::mem::take(&mut self.scratch_changes);
        changed.clear();
        changed.extend_from_slice(changes);
        changed.sort_unstable();
        changed.dedup();
        for &(h, node) in &changed {
            let Some(r) = self.readers.get_mut(&(h, node)) else {
                continue;
            };
            let new = Self::contribution(h, node, view);
            let old = std::mem::replace(&mut r.contribution, new);
            if new == old {
                continue;
            }
            for &(w, t) in &r.tasks {
                let b = self.booked.get_mut(&t).expect("queued tasks are booked");
                let q = &mut self.queues[w.index()];
                // Other levels get their keys when they become the head's.
                if q.active != Some(b.place.0.0) {
                    continue;
                }
                let k = add(sub(b.readiness, old), new);
                q.ready.remove(&(b.readiness, b.place.1, t));
                q.ready.insert((k, b.place.1, t));
                b.readiness = k;
            }
        }
        self.scratch_changes = changed;
    }

    /// The sorted variants set their context's priority bounds to any integer
    /// (`initialize_dmda_sorted_policy`); dm, dmda and dmdar keep StarPU's 0..0.
    fn takes_priorities(&self) -> bool {
        self.variant.sorted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_platform::machine::{self, MemNodeId};
    use hetsim_runtime::fixture::{Fixture, star_machine};
    use hetsim_taskgraph::{Access, AccessMode, Handle, HandleId, TaskGraph, TaskGraphBuilder};

    /// A queue's deque and its sorted map answer alike for places pushed in increasing order,
    /// removals from the front and from the middle included.
    #[test]
    fn a_fifo_queue_answers_as_the_sorted_one() {
        let queued = |t: u32| Queued {
            task: TaskId(t),
            priority: 0,
            len_us: f64::from(t),
            transfer_us: 0.0,
        };
        let (mut fifo, mut sorted) = (Tasks::new(true), Tasks::new(false));
        let tasks = |q: &Tasks| q.values().map(|q| q.task.0).collect::<Vec<_>>();
        for t in 0..6 {
            for q in [&mut fifo, &mut sorted] {
                q.insert((Reverse(0), u64::from(t) * 10), queued(t));
            }
        }
        assert_eq!(fifo.first(), Some((Reverse(0), 0)));
        for place in [(Reverse(0), 0), (Reverse(0), 30), (Reverse(0), 35)] {
            let (a, b) = (fifo.remove(place), sorted.remove(place));
            assert_eq!(a.map(|q| q.task), b.map(|q| q.task), "{place:?}");
        }
        assert_eq!(tasks(&fifo), vec![1, 2, 4, 5]);
        assert_eq!(tasks(&fifo), tasks(&sorted));
        assert_eq!(fifo.first(), sorted.first());
        let level = |q: &Tasks, l| q.level(l).map(|q| q.task.0).collect::<Vec<_>>();
        assert_eq!(level(&fifo, 0), vec![1, 2, 4, 5]);
        assert!(level(&fifo, 1).is_empty() && level(&sorted, 1).is_empty());
        for place in [
            (Reverse(0), 10),
            (Reverse(0), 20),
            (Reverse(0), 40),
            (Reverse(0), 50),
        ] {
            assert!(fifo.remove(place).is_some() && sorted.remove(place).is_some());
        }
        assert!(fifo.is_empty() && sorted.is_empty() && fifo.first().is_none());
    }

    /// RAM, `ngpu` GPUs each on its own link pair (BW = 1 GB/s, LAT = 10 µs), four CPU cores.
    fn machine(ngpu: usize) -> machine::Machine {
        star_machine(ngpu, 4)
    }

    /// Tasks reading one handle each, of `bytes`, with `flops` and a priority.
    fn graph(tasks: &[(u64, f64, i32)]) -> TaskGraph {
        let mut b = TaskGraphBuilder::new();
        let cl = b.codelet("k").unwrap();
        for &(bytes, flops, prio) in tasks {
            let h = b.add_handle(Handle::bytes(bytes)).unwrap();
            b.submit(cl, flops, prio, &[Access::new(h, AccessMode::R)])
                .unwrap();
        }
        b.build().unwrap()
    }

    use hetsim_runtime::fixture::{RATES, workers as config};

    #[test]
    fn dmda_weighs_the_transfer_penalty_against_the_faster_device() {
        // 1e7 flops: 10 ms on the CPU, 0.1 ms on the GPU. With 1 GPU, StarPU's penalty for
        // S bytes is LAT + 2·1·S/BW.
        // S = 1e8: GPU penalty 0.20001 s, exp_end 0.20011 s; CPU exp_end 0.01 s. Fitness:
        //   GPU (0.20011 − 0.01) + 0.20001 > CPU 0 → CPU (worker 1).
        // S = 1e6: GPU penalty 0.00201 s, exp_end 0.00211 s; fitness GPU 0.00201 s, CPU
        //   0.01 − 0.00211 = 0.00789 s → GPU (worker 0).
        let m = machine(1);
        for (bytes, want) in [(100_000_000u64, 1u32), (1_000_000, 0)] {
            let g = graph(&[(bytes, 1e7, 0)]);
            let f = Fixture::new(&m, &g, &RATES, &config(1, 1));
            let mut s = Dmda::new(Variant::Dmda, Params::default());
            let mut d = Vec::new();
            s.push(TaskId(0), &f.view(0.0), &mut d);
            assert_eq!(
                s.pop(WorkerId(want), &f.view(0.0)),
                Some(TaskId(0)),
                "{bytes} B"
            );
            // The task's inputs are prefetched where it was queued.
            assert_eq!(
                d,
                vec![
                    Decision::Wake {
                        worker: WorkerId(want)
                    },
                    Decision::Prefetch {
                        task: TaskId(0),
                        worker: WorkerId(want)
                    }
                ]
            );
        }
    }

    /// StarPU's `starpu_data_expected_transfer_time` counts nothing for a buffer already
    /// requested on the node (`_starpu_is_data_present_or_requested`): with the 1e8-byte
    /// input of the test above on its way to the GPU, the GPU's penalty is 0 and its exp_end
    /// 0.1 ms, ahead of the CPU's 10 ms, so the GPU (worker 0) takes the task the CPU took.
    #[test]
    fn a_buffer_already_requested_costs_no_transfer() {
        let m = machine(1);
        let g = graph(&[(100_000_000, 1e7, 0)]);
        let mut f = Fixture::new(&m, &g, &RATES, &config(1, 1));
        f.request(HandleId(0), MemNodeId(1));
        assert_eq!(
            f.view(0.0)
                .starpu_transfer_estimate_s(TaskId(0), WorkerId(0)),
            0.0
        );
        let mut s = Dmda::new(Variant::Dmda, Params::default());
        s.push(TaskId(0), &f.view(0.0), &mut Vec::new());
        assert_eq!(s.pop(WorkerId(0), &f.view(0.0)), Some(TaskId(0)));
    }

    #[test]
    fn dm_ignores_transfers() {
        let m = machine(1);
        let g = graph(&[(100_000_000, 1e7, 0)]);
        let f = Fixture::new(&m, &g, &RATES, &config(1, 1));
        let mut s = Dmda::new(Variant::Dm, Params::default());
        let mut d = Vec::new();
        s.push(TaskId(0), &f.view(0.0), &mut d);
        assert_eq!(s.pop(WorkerId(0), &f.view(0.0)), Some(TaskId(0)));
        // dm does not prefetch: its one decision is the wake of the worker it chose.
        assert_eq!(
            d,
            vec![Decision::Wake {
                worker: WorkerId(0)
            }]
        );
    }

    #[test]
    fn queue_ends_spread_equal_tasks_over_equal_workers() {
        // Two GPUs, no CPU; two identical tasks: the first to GPU0 (tie, first worker), the
        // second to GPU1, since GPU0's queue now ends later.
        let m = machine(2);
        let g = graph(&[(1_000_000, 1e9, 0), (1_000_000, 1e9, 0)]);
        let f = Fixture::new(&m, &g, &RATES, &config(0, 2));
        let mut s = Dmda::new(Variant::Dmda, Params::default());
        let mut d = Vec::new();
        s.push(TaskId(0), &f.view(0.0), &mut d);
        s.push(TaskId(1), &f.view(0.0), &mut d);
        assert_eq!(s.pop(WorkerId(0), &f.view(0.0)), Some(TaskId(0)));
        assert_eq!(s.pop(WorkerId(1), &f.view(0.0)), Some(TaskId(1)));
    }

    /// Pushes at one date by different threads decide on the queues as they were before any
    /// of them booked. Two GPUs, four identical tasks: at 0 µs the first pushes of threads A
    /// and B each see both queues empty and take GPU0 (tie, first worker); A's second push
    /// sees both bookings and takes GPU1 (2 tasks against 0). At 1 µs B's push sees all three:
    /// GPU1 (1 against 2). Pushed by one thread, t1 would have gone to GPU1.
    #[test]
    fn pushes_of_other_threads_at_the_same_date_do_not_see_each_other() {
        let m = machine(2);
        let g = graph(&[(1_000_000, 1e9, 0); 4]);
        let f = Fixture::new(&m, &g, &RATES, &config(0, 2));
        let by = |w: u32, us: f64| Fixture::released_by_worker(f.view(us / 1e6), Some(WorkerId(w)));
        // dmdasd sums its queue's tasks of the priority or higher instead of its length.
        for variant in [Variant::Dmda, Variant::Dmdasd] {
            let mut s = Dmda::new(variant, Params::default());
            let mut d = Vec::new();
            s.push(TaskId(0), &by(0, 0.0), &mut d);
            s.push(TaskId(1), &by(1, 0.0), &mut d);
            s.push(TaskId(2), &by(0, 0.0), &mut d);
            s.push(TaskId(3), &by(1, 1.0), &mut d);
            let mut pops = |w: u32| {
                std::iter::from_fn(|| s.pop(WorkerId(w), &f.view(2e-6))).collect::<Vec<_>>()
            };
            assert_eq!(pops(0), [TaskId(0), TaskId(1)], "{variant:?}");
            assert_eq!(pops(1), [TaskId(2), TaskId(3)], "{variant:?}");
        }
    }

    /// The bookkeeping moves from queue to pipeline and drains, and `exp_start` follows
    /// StarPU's hooks, by hand (µs). One GPU; A = 1e9 flops (10 ms), B = 1e8
    /// (1 ms), each reading 1e6 B in RAM (penalty 2 010 µs).
    /// - push A @0: transfer not hidden → exp_len 12 010; pop A @0: exp_start = 0 + pipeline
    ///   2 010; start A @3 000: exp_start = 3 000 + 10 000 = 13 000.
    /// - push B @8 000: exp_start = max(13 000, 8 000) = 13 000 — not now + pipeline (18 000);
    ///   8 000 + 2 010 < 13 000, so B's transfer is hidden: exp_len 1 000.
    /// - pop B @9 000: exp_start = 9 000 + pipeline 10 000 = 19 000.
    /// - end A @9 200: max(9 200 + 0, 19 000) = 19 000; start B @9 500: exp_start =
    ///   9 500 + 1 000 = 10 500, an assignment that moves it back.
    #[test]
    fn exp_start_follows_starpus_hooks() {
        let m = machine(1);
        let g = graph(&[(1_000_000, 1e9, 0), (1_000_000, 1e8, 0)]);
        let f = Fixture::new(&m, &g, &RATES, &config(0, 1));
        let mut s = Dmda::new(Variant::Dmda, Params::default());
        let w = WorkerId(0);
        let at = |us: f64| f.view(us / 1e6);
        let check = |s: &Dmda, want: (f64, f64, f64)| {
            let (a, b, c) = s.bookkeeping(w);
            for (got, want) in [(a, want.0), (b, want.1), (c, want.2)] {
                assert!(
                    (got * 1e6 - want).abs() < 1e-6,
                    "{:?} vs {want:?}",
                    (a, b, c)
                );
            }
        };
        s.push(TaskId(0), &at(0.0), &mut Vec::new());
        check(&s, (0.0, 12_010.0, 0.0));
        assert_eq!(s.pop(w, &at(0.0)), Some(TaskId(0)));
        check(&s, (2_010.0, 10_000.0, 2_010.0));
        s.task_started(TaskId(0), w, &at(3_000.0));
        check(&s, (13_000.0, 0.0, 10_000.0));
        s.push(TaskId(1), &at(8_000.0), &mut Vec::new());
        check(&s, (13_000.0, 1_000.0, 10_000.0));
        assert_eq!(s.pop(w, &at(9_000.0)), Some(TaskId(1)));
        check(&s, (19_000.0, 1_000.0, 10_000.0));
        s.task_ended(TaskId(0), w, &at(9_200.0));
        check(&s, (19_000.0, 1_000.0, 0.0));
        s.task_started(TaskId(1), w, &at(9_500.0));
        check(&s, (10_500.0, 0.0, 1_000.0));
        s.task_ended(TaskId(1), w, &at(10_500.0));
        check(&s, (10_500.0, 0.0, 0.0));
        s.check_drained();
    }

    /// The greedy fallback (a task with no length on some worker): fewest
    /// `(ntasks + pipeline_ntasks) / relative speedup`, first worker on ties, where StarPU
    /// counts a task in `pipeline_ntasks` from push to end, so a queued task counts twice and
    /// a popped one once. Two GPUs, tasks of 0 flops, loads by hand:
    /// t0 → GPU0 (0 vs 0); t1 → GPU1 (2 vs 0); t2 → GPU0 (2 vs 2); GPU1 pops t1;
    /// t3 → GPU1 (4 vs 1); GPU1 pops t3; t4 → GPU1 (4 vs 2). Counting queued tasks once, t4
    /// would go to GPU0 (2 vs 2).
    #[test]
    fn greedy_fallback_counts_queued_tasks_twice_as_starpu_does() {
        let m = machine(2);
        let g = graph(&[(1_000, 0.0, 0); 5]);
        let f = Fixture::new(&m, &g, &RATES, &config(0, 2));
        let v = f.view(0.0);
        let mut s = Dmda::new(Variant::Dmda, Params::default());
        let (gpu0, gpu1) = (WorkerId(0), WorkerId(1));
        for t in 0..3 {
            s.push(TaskId(t), &v, &mut Vec::new());
        }
        assert_eq!(s.pop(gpu1, &v), Some(TaskId(1)));
        s.push(TaskId(3), &v, &mut Vec::new());
        assert_eq!(s.pop(gpu1, &v), Some(TaskId(3)));
        s.push(TaskId(4), &v, &mut Vec::new());
        assert_eq!(s.pop(gpu1, &v), Some(TaskId(4)));
        assert_eq!(s.pop(gpu0, &v), Some(TaskId(0)));
        assert_eq!(s.pop(gpu0, &v), Some(TaskId(2)));
        assert_eq!(s.pop(gpu0, &v), None);
        // Forced placements book no work.
        assert_eq!(s.bookkeeping(gpu1).1, 0.0);
        assert_eq!(s.bookkeeping(gpu1).2, 0.0);
    }

    fn two_tasks_one_ready(variant: Variant, prios: (i32, i32), ready_first: bool) -> TaskId {
        // One GPU; task 0 reads a handle in RAM, task 1 one already on the GPU.
        let m = machine(1);
        let g = graph(&[(1_000_000, 1e9, prios.0), (1_000_000, 1e9, prios.1)]);
        let mut f = Fixture::new(&m, &g, &RATES, &config(0, 1));
        f.place(HandleId(1), MemNodeId(1));
        let params = Params {
            ready_first,
            ..Params::default()
        };
        let mut s = Dmda::new(variant, params);
        s.push(TaskId(0), &f.view(0.0), &mut Vec::new());
        s.push(TaskId(1), &f.view(0.0), &mut Vec::new());
        s.pop(WorkerId(0), &f.view(0.0)).unwrap()
    }

    #[test]
    fn dmdar_pops_the_task_whose_data_is_there() {
        assert_eq!(two_tasks_one_ready(Variant::Dmdar, (0, 0), true), TaskId(1));
        assert_eq!(two_tasks_one_ready(Variant::Dmda, (0, 0), true), TaskId(0));
        // With the rule switched off dmdar is FIFO.
        assert_eq!(
            two_tasks_one_ready(Variant::Dmdar, (0, 0), false),
            TaskId(0)
        );
    }

    #[test]
    fn dmdas_sorts_by_priority_and_looks_for_ready_tasks_only_at_the_head_level() {
        // Task 1 (ready) has the higher priority: first either way.
        assert_eq!(two_tasks_one_ready(Variant::Dmdas, (0, 5), true), TaskId(1));
        // Task 0 (not ready) has the higher priority: the ready task 1 is below the head's
        // level, so it is not considered.
        assert_eq!(two_tasks_one_ready(Variant::Dmdas, (5, 0), true), TaskId(0));
        // Equal priorities: ready first.
        assert_eq!(two_tasks_one_ready(Variant::Dmdas, (3, 3), true), TaskId(1));
        // dmdap sorts but pops the head.
        assert_eq!(two_tasks_one_ready(Variant::Dmdap, (0, 5), true), TaskId(1));
        assert_eq!(two_tasks_one_ready(Variant::Dmdap, (3, 3), true), TaskId(0));
    }

    /// dmdar keeps StarPU's default priority bounds (0..0), so the graph's priorities do not
    /// reach it: with task 0 (not ready) at priority 5 and task 1 (ready) at 0, its ready-first
    /// pop still looks at the whole queue and takes task 1, where dmdas, which takes
    /// priorities, does not look below the head's level.
    #[test]
    fn dmdar_sees_no_priorities_and_looks_at_the_whole_queue() {
        assert_eq!(two_tasks_one_ready(Variant::Dmdar, (5, 0), true), TaskId(1));
        assert_eq!(two_tasks_one_ready(Variant::Dmdas, (5, 0), true), TaskId(0));
    }

    #[test]
    fn variants_round_trip_their_names() {
        for name in ["dm", "dmda", "dmdap", "dmdar", "dmdas", "dmdasd"] {
            assert_eq!(Variant::from_name(name).map(Variant::name), Some(name));
        }
        assert_eq!(Variant::from_name("heft"), None);
    }
}
