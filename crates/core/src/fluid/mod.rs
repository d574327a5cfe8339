//! The fluid network: links shared max-min fairly among the flows that cross them.
//!
//! Semantics (the SimGrid oracle's, `scripts/oracle/README.md`):
//!
//! - A flow first waits the sum of its route's link latencies; during that phase it uses no
//!   bandwidth. Latency is per flow, never shared.
//! - Then it joins the sharing. Rates are the max-min fair allocation over all active flows,
//!   subject to per-flow rate bounds, recomputed at every activation and completion (or, with a
//!   re-share delay set, at most that long after a completion, the flows whose latency ends
//!   meanwhile joining then). Remaining bytes fall linearly between those events.
//! - A [`Sharing::Shared`] link carries at most its capacity in total:
//!   Σ weightᵢ·rateᵢ ≤ C. A [`Sharing::Fatpipe`] link caps each flow separately
//!   (max weightᵢ·rateᵢ ≤ C, as SimGrid writes it). Split-duplex links are two shared links, one
//!   per direction, built by the caller.
//! - [`SharingMode::Plain`] (the default) gives every flow the same weight: unweighted max-min.
//!   [`SharingMode::SimGrid`] reproduces SimGrid CM02's RTT unfairness: a flow's share is
//!   weighted by 1 / (its route latency), or 1 when that latency is exactly 0; on a saturated
//!   fat pipe, flows are fixed at one level, so flow j gets C·p_min/p_j (SimGrid's behaviour).
//!
//! How the work per event is kept to what changes:
//!
//! - **Variables.** Active flows with the same links and weights, penalty and bound always get
//!   the same rate, so they share one solver variable with a member count; the solver works on
//!   variables. Each variable keeps its members' finishing points on its own served-bytes scale
//!   (bytes sent per member since the variable appeared), so members that started at different
//!   dates, with different sizes, finish in order without ever being touched one by one. A
//!   variable whose last member ends waits idle in its class, a bounded number of them, for the
//!   next flow over the same route (a cluster's messages take the same few routes again and
//!   again).
//! - **Levels and clocks.** A variable's level is its rate × penalty. The solver fixes each
//!   variable either at its bound or at the level of the link whose saturation fixed it: the
//!   variable is then *attached* to that link, and follows the link's level. Every link keeps a
//!   clock, the integral of its level over time, and a heap of its attached variables keyed by
//!   the clock value at which their next member finishes; the network's date queue holds one date
//!   per link, not per flow. When a re-solve changes a link's level, its attached variables
//!   (often thousands of flows) are re-dated by that one date; only variables that change link
//!   or become bound-limited are moved individually.
//! - **Selective re-solve.** Progressive filling re-run from scratch fixes, below the level x₀ of
//!   the first variable a change touches, exactly what it fixed before (a removed flow's links
//!   saturate no earlier than its level; an added flow's links saturate no earlier than the root
//!   of their load with every other variable held at its current level). So a re-solve only
//!   takes the variables at level ≥ x₀ connected to the change, with each link's capacity less
//!   the load of its variables below x₀, and leaves every other variable, link and date alone.
//! - **Redundant links.** Given every route flows will take
//!   ([`FluidNetwork::declare_routes`]), a link whose constraint always follows from another's
//!   (that one on all its routes, relatively at least as loaded) is left out of the re-solves;
//!   it still counts bytes and load. A single node's PCIe tree has many: on mirage, 17 of 34.
//!
//! What this cannot remove: where most variables share links with most others (an all-to-all
//! on a crossbar, a fat tree), the variables at level ≥ x₀ are about half of the component, and
//! about nine in ten of them really change rate (`docs/performance.md`); there a re-solve still
//! costs in proportion to the component. For those, [`FluidNetwork::set_reshare_delay_s`]
//! trades exactness for fewer re-solves: completions close in time share one.
//!
//! The solver is progressive filling (water-filling), as SimGrid's `maxmin.cpp` does it, written
//! from its description: repeatedly take the lowest level at which a link saturates or a
//! variable reaches its bound, fix the variables that level decides, and remove their share
//! from the links they cross.

use std::borrow::Cow;
use std::collections::BinaryHeap;
use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use crate::engine::Calendar;

mod heap;
mod solver;

use heap::{ABSENT, IndexedHeap};

/// Index of a link in a [`FluidNetwork`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkId(pub u32);

/// Index of a flow in a [`FluidNetwork`]. Valid from [`FluidNetwork::start_flow`] until
/// [`FluidNetwork::advance`] reports the flow finished; the index may then be reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId(pub u32);

/// How a link divides its capacity among the flows crossing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sharing {
    /// The flows' rates add up to at most the capacity.
    #[default]
    Shared,
    /// Each flow may use up to the whole capacity (a backbone that never saturates as a whole).
    Fatpipe,
}

/// How flows are weighted in the max-min allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SharingMode {
    /// Unweighted max-min: the physically sensible model for PCIe, NVLink and InfiniBand.
    #[default]
    Plain,
    /// SimGrid CM02: weights 1 / route latency (1 for a zero-latency route).
    SimGrid,
}

/// A flow to start: its route, size, and optional constraints.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec<'a> {
    route: Cow<'a, [LinkId]>,
    bytes: f64,
    bound_bytes_per_sec: f64,
    extra_load: Vec<(LinkId, f64)>,
}

impl<'a> FlowSpec<'a> {
    /// `bytes` over the links of `route`, in order (latencies are summed in this order). The
    /// route may be borrowed: the network keeps only the links' loads.
    pub fn new(route: impl Into<Cow<'a, [LinkId]>>, bytes: f64) -> Self {
        FlowSpec {
            route: route.into(),
            bytes,
            bound_bytes_per_sec: f64::INFINITY,
            extra_load: Vec::new(),
        }
    }

    /// The flow may never go faster than `bytes_per_sec` (a DMA engine's limit, say).
    pub fn with_bound(mut self, bytes_per_sec: f64) -> Self {
        self.bound_bytes_per_sec = bytes_per_sec;
        self
    }

    /// The flow also loads `link` with `weight` × its rate without paying its latency (SimGrid's
    /// cross-traffic puts 0.05 on the reverse route for acknowledgements).
    pub fn with_extra_load(mut self, link: LinkId, weight: f64) -> Self {
        self.extra_load.push((link, weight));
        self
    }
}

/// Where a flow is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowPhase {
    /// Paying its route latency; uses no bandwidth.
    Latency,
    /// Sharing bandwidth.
    Active,
    /// Reported finished (or never started).
    Finished,
}

/// What a link has carried, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkStats {
    /// Bytes of the flows that finished over this link (weighted by the flow's load on it).
    pub bytes: f64,
    /// Time during which at least one flow was active on the link, up to the date asked.
    pub busy_s: f64,
    /// Flows active on the link now.
    pub active_flows: usize,
}

/// Work done by the incremental solver, to show that it follows the size of what changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SolveStats {
    /// Number of re-solves.
    pub solves: u64,
    /// Sum over re-solves of the variables re-solved (flows with the same links, weights,
    /// penalty and bound share one variable).
    pub vars_solved: u64,
    /// Sum over re-solves of the flows those variables stand for.
    pub flows_solved: u64,
    /// Sum over re-solves of the links whose share was recomputed.
    pub links_solved: u64,
    /// Dates moved in the network's date queue (one per link or variable, never per flow).
    pub retimes: u64,
    /// Re-solves whose changed links carried one variable at most, which skip the floor and
    /// the general scan.
    pub alone: u64,
    /// Flows whose joining was put off to a pending re-share
    /// ([`FluidNetwork::set_reshare_delay_s`]).
    pub deferred_joins: u64,
}

/// What a variable's rate follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attach {
    /// Not solved yet (it joined since the last re-solve).
    Unsolved,
    /// The level of this link, which the variable saturates.
    Link(u32),
    /// Its own bound.
    Bound,
}

#[derive(Debug, Clone, Copy)]
struct LinkElem {
    var: u32,
    weight: f64,
}

#[derive(Debug, Clone)]
struct Link {
    capacity_bytes_per_sec: f64,
    latency_s: f64,
    sharing: Sharing,
    /// Never the tighter constraint of any flow it carries ([`FluidNetwork::declare_routes`]):
    /// its flows' rates are set by other links, and the solver leaves it out; it only counts.
    redundant: bool,
    /// For a redundant link, the link whose constraint implies its own on every route.
    dominator: u32,
    /// Variables with active members on the link, and their members' weight on it.
    elems: Vec<LinkElem>,
    active_flows: usize,
    busy_since_s: f64,
    busy_s: f64,
    bytes: f64,
    /// Level of the variables attached here (NaN while none is).
    level: f64,
    /// Integral of `level` over time from the last re-solve that took this link, up to
    /// `clock_s`: attached variable v has served (clock − v.base) / v.penalty bytes per member.
    clock: f64,
    clock_s: f64,
    /// Attached variables, keyed by the clock value at which their next member finishes.
    attached: IndexedHeap,
    // Solver scratch.
    stamp: u32,
    floor_stamp: u32,
    remaining: f64,
    usage: f64,
    /// Usage when last summed afresh, to detect cancellation.
    usage_ref: f64,
    unfixed: u32,
    dirty: bool,
    /// Level at which the link saturated in the current re-solve (NaN: it did not).
    new_level: f64,
    /// Where its variables in the current re-solve's region are listed in the solver's scratch.
    in_play: std::ops::Range<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FlowState {
    Free,
    Latency,
    Active,
}

#[derive(Debug, Clone, Copy)]
struct Flow {
    state: FlowState,
    /// Its variable, or `NO_VAR` for a flow that finishes as soon as its latency is paid.
    var: u32,
    bytes: f64,
    /// While active: the variable's served bytes per member at which the flow is done.
    done_at: f64,
    /// Order of `start_flow` calls: flows finishing together are reported in this order.
    started: u64,
}

const NO_VAR: u32 = u32::MAX;

/// One link crossed by a variable, with its weight and its index in that link's `elems`.
#[derive(Debug, Clone, Copy)]
struct VarElem {
    link: u32,
    weight: f64,
    slot: u32,
}

/// A member of a variable: the flow and the served-bytes point at which it is done.
#[derive(Debug, Clone, Copy)]
struct Member {
    done_at: f64,
    seq: u64,
    flow: u32,
}

impl PartialEq for Member {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Member {}
impl PartialOrd for Member {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Member {
    // Reversed: BinaryHeap is a max-heap and the member due first must come out first.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .done_at
            .total_cmp(&self.done_at)
            .then(other.seq.cmp(&self.seq))
    }
}

/// What a variable's rate follows, packed: a link index, or one of these.
const ATTACH_UNSOLVED: u32 = u32::MAX;
const ATTACH_BOUND: u32 = u32::MAX - 1;

fn unpack(a: u32) -> Attach {
    match a {
        ATTACH_UNSOLVED => Attach::Unsolved,
        ATTACH_BOUND => Attach::Bound,
        k => Attach::Link(k),
    }
}

/// The solver's view of a variable: what its inner loops read, in one cache line.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct Var {
    /// Rate × penalty (bound × penalty when bound-limited); NaN while unsolved.
    level: f64,
    /// Rate of each member, bytes per second.
    rate: f64,
    /// Active members / penalty: a member weight w puts w·mp on a shared link's usage.
    mp: f64,
    penalty: f64,
    /// Level found by the current re-solve.
    new_level: f64,
    /// Active members.
    active: u32,
    /// Re-solve stamp: in the current region when equal to the network's.
    stamp: u32,
    /// Packed `Attach`, now and as found by the current re-solve.
    attach: u32,
    new_attach: u32,
    /// Its links: `elems[elem_start..elem_start + elem_len]` in the network's arena, then its
    /// redundant links (`VarData::redundant`), which the solver leaves out.
    elem_start: u32,
    elem_len: u16,
    flags: u8,
}

impl Var {
    /// A variable of no member yet, unsolved.
    fn fresh(penalty: f64, bound: f64, elem_start: u32, elem_len: u16) -> Self {
        Var {
            level: f64::NAN,
            rate: 0.0,
            mp: 0.0,
            penalty,
            new_level: f64::NAN,
            active: 0,
            stamp: 0,
            attach: ATTACH_UNSOLVED,
            new_attach: ATTACH_UNSOLVED,
            elem_start,
            elem_len,
            flags: if bound.is_finite() { BOUNDED } else { 0 },
        }
    }
}

/// How many variables without flows the network keeps for reuse.
const IDLE_VARS: usize = 1024;

/// `Var::flags` bit: fixed by the current re-solve.
const FIXED: u8 = 1;
/// A member joined or left since the last re-solve.
const CHANGED: u8 = 2;
/// A member joined since the last re-solve.
const GREW: u8 = 4;
/// The variable has a finite bound.
const BOUNDED: u8 = 8;

impl Var {
    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    fn set(&mut self, flag: u8, on: bool) {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }
    fn attach(&self) -> Attach {
        unpack(self.attach)
    }
}

/// The rest of a variable.
#[derive(Debug, Clone, Default)]
struct VarData {
    bound: f64,
    /// Progress base. Attached to a link: served bytes per member are
    /// (link clock − base) / penalty. Otherwise: `base` served at `base_s`.
    base: f64,
    base_s: f64,
    members: BinaryHeap<Member>,
    /// Flows that belong to the variable, in latency or active.
    refs: u32,
    /// How many redundant links follow the variable's links in the arena.
    redundant: u16,
    /// Hash of (elems, penalty, bound), and the next variable with the same hash.
    hash: u64,
    next_in_class: u32,
    /// Without flows, kept in its class for the next flow of the same class
    /// ([`FluidNetwork::retire_var`]).
    idle: bool,
    /// Times it went idle: tells its current entry in the idle queue from stale ones.
    idle_gen: u32,
}

/// Links, flows, and the incremental max-min solver that shares the one among the other.
#[derive(Debug)]
pub struct FluidNetwork {
    mode: SharingMode,
    links: Vec<Link>,
    vars: Vec<Var>,
    var_data: Vec<VarData>,
    /// The links of every variable, each variable's in one run (`Var::elem_start`).
    elems: Vec<VarElem>,
    /// Runs of `elems` left by freed variables, by length.
    free_elems: Vec<Vec<u32>>,
    /// A new flow's links while its variable is looked up.
    route_scratch: Vec<VarElem>,
    free_vars: Vec<u32>,
    /// First variable of each (elems, penalty, bound) hash.
    classes: FxHashMap<u64, u32>,
    /// Variables without flows kept for reuse, oldest first, with the generation they went
    /// idle at (entries of variables revived since are stale), and how many are idle.
    idle_vars: std::collections::VecDeque<(u32, u32)>,
    idle_count: usize,
    flows: Vec<Flow>,
    free_flows: Vec<u32>,
    live_flows: usize,
    /// Activation dates of the flows in latency (by flow), finish dates of links' next members
    /// (by link), of bound-limited variables' next members (by variable).
    activations: IndexedHeap,
    activation_pos: Vec<u32>,
    link_timers: IndexedHeap,
    link_timer_pos: Vec<u32>,
    var_timers: IndexedHeap,
    var_timer_pos: Vec<u32>,
    /// Position of each variable in its link's `attached` heap.
    attach_pos: Vec<u32>,
    /// Setting order, the tie-break of every date and key.
    seq: u64,
    now_s: f64,
    /// Changes since the last re-solve: links whose variables changed, changed variables, and
    /// the lowest level among the variables that lost members.
    seeds: Vec<u32>,
    changed: Vec<u32>,
    removed_floor: f64,
    /// Whether a variable gained members since the last re-solve (its new flows wait at rate 0
    /// for it, so it is never put off).
    grew: bool,
    /// How long a re-share after completions alone may be put off ([`Self::set_reshare_delay_s`]).
    reshare_delay_s: f64,
    /// When the re-share put off is due (infinite: none is).
    reshare_due_s: f64,
    stamp: u32,
    scratch: solver::Scratch,
    stats: SolveStats,
    /// Re-solve every change by the general path (tests compare it with the shortcut).
    general_only: bool,
    /// How many variables without flows are kept for reuse ([`IDLE_VARS`]; tests vary it).
    idle_cap: usize,
}

/// Date at which `amount` is done at `speed` from `from_s` (`from_s` when it already is).
fn date_after(from_s: f64, amount: f64, speed: f64) -> f64 {
    if amount <= 0.0 {
        from_s
    } else if speed > 0.0 {
        from_s + amount / speed
    } else {
        f64::INFINITY
    }
}

#[derive(Debug, Clone, Copy)]
enum Timer {
    Activation(u32),
    Link(u32),
    Var(u32),
    Reshare,
}

impl FluidNetwork {
    /// An empty network.
    pub fn new(mode: SharingMode) -> Self {
        FluidNetwork {
            mode,
            links: Vec::new(),
            vars: Vec::new(),
            var_data: Vec::new(),
            elems: Vec::new(),
            free_elems: Vec::new(),
            route_scratch: Vec::new(),
            free_vars: Vec::new(),
            classes: FxHashMap::default(),
            idle_vars: std::collections::VecDeque::new(),
            idle_count: 0,
            flows: Vec::new(),
            free_flows: Vec::new(),
            live_flows: 0,
            activations: IndexedHeap::default(),
            activation_pos: Vec::new(),
            link_timers: IndexedHeap::default(),
            link_timer_pos: Vec::new(),
            var_timers: IndexedHeap::default(),
            var_timer_pos: Vec::new(),
            attach_pos: Vec::new(),
            seq: 0,
            now_s: 0.0,
            seeds: Vec::new(),
            changed: Vec::new(),
            removed_floor: f64::INFINITY,
            grew: false,
            reshare_delay_s: 0.0,
            reshare_due_s: f64::INFINITY,
            stamp: 0,
            scratch: solver::Scratch::default(),
            stats: SolveStats::default(),
            general_only: false,
            idle_cap: IDLE_VARS,
        }
    }

    /// Let the re-share that follows completions wait up to `delay_s` (0, the default: none
    /// waits). Until it comes the flows left keep their rates, so the capacity the finished
    /// ones held goes unused, and a flow whose latency ends meanwhile joins the sharing only
    /// then (at rate 0 until it). A flow that joins when no re-share waits re-shares at once.
    /// Every flow still sends exactly its bytes and no link carries more than its capacity.
    /// Completions and joins within `delay_s` of the first completion thus share one re-solve:
    /// an approximation with at most (span of the run) / `delay_s` re-solves after completions,
    /// which moves finish dates by up to a few times `delay_s`, mostly later (a flow whose
    /// exact share would have shrunk as another's grew can end earlier). Worth it where most
    /// flows share links with most others (an all-to-all, a fat tree under steady traffic):
    /// there an exact re-share after each completion or join costs in proportion to the whole
    /// set.
    pub fn set_reshare_delay_s(&mut self, delay_s: f64) {
        assert!(
            delay_s.is_finite() && delay_s >= 0.0,
            "re-share delay of {delay_s} s"
        );
        self.reshare_delay_s = delay_s;
    }

    /// The sharing mode.
    pub fn mode(&self) -> SharingMode {
        self.mode
    }

    /// Add a link. Capacity must be positive and latency non-negative (callers validate user
    /// input and report it; here a violation is a bug).
    pub fn add_link(
        &mut self,
        capacity_bytes_per_sec: f64,
        latency_s: f64,
        sharing: Sharing,
    ) -> LinkId {
        assert!(
            capacity_bytes_per_sec > 0.0,
            "link capacity must be > 0, got {capacity_bytes_per_sec}"
        );
        assert!(
            latency_s >= 0.0 && latency_s.is_finite(),
            "link latency must be finite and >= 0, got {latency_s}"
        );
        assert!(
            self.links.len() < ATTACH_BOUND as usize,
            "too many links for a fluid network"
        );
        let id = LinkId(self.links.len() as u32);
        self.links.push(Link {
            capacity_bytes_per_sec,
            latency_s,
            sharing,
            redundant: false,
            dominator: 0,
            elems: Vec::new(),
            active_flows: 0,
            busy_since_s: 0.0,
            busy_s: 0.0,
            bytes: 0.0,
            level: f64::NAN,
            clock: 0.0,
            clock_s: 0.0,
            attached: IndexedHeap::default(),
            stamp: 0,
            floor_stamp: 0,
            remaining: 0.0,
            usage: 0.0,
            usage_ref: 0.0,
            unfixed: 0,
            dirty: false,
            new_level: f64::NAN,
            in_play: 0..0,
        });
        self.link_timer_pos.push(ABSENT);
        id
    }

    /// Number of links.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// Sum of the latencies of `route`'s links, in route order.
    pub fn route_latency_s(&self, route: &[LinkId]) -> f64 {
        route
            .iter()
            .fold(0.0, |acc, l| acc + self.links[l.0 as usize].latency_s)
    }

    /// Start a flow at `now_s`. It activates after its route latency and is reported by
    /// [`advance`](Self::advance) when its last byte arrives.
    pub fn start_flow(&mut self, now_s: f64, spec: FlowSpec) -> FlowId {
        assert!(now_s >= self.now_s, "flow started in the past");
        assert!(spec.bytes >= 0.0, "flow of {} bytes", spec.bytes);
        assert!(spec.bound_bytes_per_sec > 0.0, "flow bound must be > 0");
        let latency_s = self.route_latency_s(&spec.route);
        let penalty = match self.mode {
            SharingMode::Plain => 1.0,
            SharingMode::SimGrid if latency_s > 0.0 => latency_s,
            SharingMode::SimGrid => 1.0,
        };
        let mut elems = std::mem::take(&mut self.route_scratch);
        self.merge_loads(&spec.route, &spec.extra_load, &mut elems);
        let redundant = elems
            .iter()
            .filter(|e| self.links[e.link as usize].redundant)
            .count();
        if redundant > 0 {
            for e in elems
                .iter()
                .filter(|e| self.links[e.link as usize].redundant)
            {
                assert!(
                    self.dominates(self.links[e.link as usize].dominator, e, &elems),
                    "a flow crosses link {} on a route not declared: its dominating link does \
                     not limit it there",
                    e.link
                );
            }
            // The solver's links first, the redundant ones after them.
            elems.sort_by_key(|e| (self.links[e.link as usize].redundant, e.link));
        }
        let bound = spec.bound_bytes_per_sec;
        // Nothing to send, or nothing to limit the rate: done as soon as latency is paid.
        let instant = spec.bytes <= 0.0 || (elems.is_empty() && bound.is_infinite());
        let var = if instant {
            NO_VAR
        } else {
            self.class_of(&elems, redundant, penalty, bound)
        };
        self.route_scratch = elems;
        let flow = Flow {
            state: FlowState::Latency,
            var,
            bytes: spec.bytes,
            done_at: 0.0,
            started: self.next_seq(),
        };
        let idx = match self.free_flows.pop() {
            Some(i) => {
                self.flows[i as usize] = flow;
                i
            }
            None => {
                self.flows.push(flow);
                self.activation_pos.push(ABSENT);
                (self.flows.len() - 1) as u32
            }
        };
        self.live_flows += 1;
        let tie = flow.started;
        self.activations
            .set(&mut self.activation_pos, idx, now_s + latency_s, tie);
        FlowId(idx)
    }

    /// A flow's links and weights, by link: a link named twice counts twice, as SimGrid
    /// expands a constraint twice.
    fn merge_loads(&self, route: &[LinkId], extra: &[(LinkId, f64)], elems: &mut Vec<VarElem>) {
        elems.clear();
        let loads = route.iter().map(|&l| (l, 1.0)).chain(extra.iter().copied());
        for (link, weight) in loads {
            assert!((link.0 as usize) < self.links.len(), "unknown {link:?}");
            assert!(weight > 0.0, "a flow's load on a link must be > 0");
            elems.push(VarElem {
                link: link.0,
                weight,
                slot: 0,
            });
        }
        // Stable: a link's loads are summed in the order they were named.
        elems.sort_by_key(|e| e.link);
        elems.dedup_by(|later, kept| {
            let same = later.link == kept.link;
            if same {
                kept.weight += later.weight;
            }
            same
        });
    }

    /// Declare every route flows will take (a link named twice counts twice), so that the
    /// network can find the links that never limit a flow: link b is redundant when some
    /// link a, itself kept, is on every route b is on, with a weight there, relative to its
    /// capacity, at least b's (both shared). Whatever flows are active, b's constraint then
    /// follows from a's, so the max-min rates are the same without it, and the solver leaves b
    /// out: on a single node's PCIe tree, where a route crosses seven links of which two or
    /// three can bind, each re-share takes fewer links. Redundant links still count their
    /// bytes, busy time and load. Call before any flow starts. A flow crossing a redundant
    /// link must then cross the link that dominates it, as every declared route does (checked
    /// at its start: a caller's bug otherwise). Returns how many links are redundant.
    pub fn declare_routes(&mut self, routes: &[Vec<LinkId>]) -> usize {
        assert_eq!(self.live_flows, 0, "routes declared with flows live");
        // Per link, the routes on it and its weight on each; per route, its links.
        let mut on: Vec<Vec<(usize, f64)>> = vec![Vec::new(); self.links.len()];
        let mut elems = Vec::new();
        let mut route_links = Vec::new();
        for (r, route) in routes.iter().enumerate() {
            self.merge_loads(route, &[], &mut elems);
            for e in &elems {
                on[e.link as usize].push((r, e.weight));
            }
            route_links.push(elems.iter().map(|e| e.link).collect::<Vec<_>>());
        }
        for l in &mut self.links {
            l.redundant = false;
        }
        let weight_on = |a: usize, r: usize| {
            on[a]
                .binary_search_by_key(&r, |&(q, _)| q)
                .map_or(0.0, |i| on[a][i].1)
        };
        let mut count = 0;
        for b in 0..self.links.len() {
            let lb = &self.links[b];
            if on[b].is_empty() || lb.sharing != Sharing::Shared {
                continue;
            }
            let (cb, rb) = (lb.capacity_bytes_per_sec, &on[b]);
            // A dominating link is on every route of b: on its first one, say.
            let dominator = route_links[rb[0].0].iter().copied().find(|&a| {
                let a = a as usize;
                let la = &self.links[a];
                let ca = la.capacity_bytes_per_sec;
                // Σ w_b·x ≤ C_b follows from Σ w_a·x ≤ C_a when w_b / C_b ≤ w_a / C_a on
                // every route of b (rates are never negative).
                a != b
                    && !la.redundant
                    && la.sharing == Sharing::Shared
                    && rb.iter().all(|&(r, w)| weight_on(a, r) * cb >= w * ca)
                    // Equal constraints: the later link goes.
                    && (a < b
                        || on[a].len() > rb.len()
                        || rb.iter().any(|&(r, w)| weight_on(a, r) * cb > w * ca))
            });
            if let Some(a) = dominator {
                self.links[b].redundant = true;
                self.links[b].dominator = a;
                count += 1;
            }
        }
        count
    }

    /// Whether link `a` is among a flow's links `elems` with a weight, relative to its
    /// capacity, at least that of `e` (a redundant link of the flow).
    fn dominates(&self, a: u32, e: &VarElem, elems: &[VarElem]) -> bool {
        let (ca, cb) = (
            self.links[a as usize].capacity_bytes_per_sec,
            self.links[e.link as usize].capacity_bytes_per_sec,
        );
        elems
            .iter()
            .any(|d| d.link == a && d.weight * cb >= e.weight * ca)
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Where variable `v`'s links are in `elems`, its redundant ones included.
    fn run_of(&self, v: u32) -> std::ops::Range<usize> {
        let start = self.vars[v as usize].elem_start as usize;
        let len = usize::from(self.vars[v as usize].elem_len)
            + usize::from(self.var_data[v as usize].redundant);
        start..start + len
    }

    /// The links of variable `v`, its redundant ones included.
    fn var_elems(&self, v: u32) -> &[VarElem] {
        &self.elems[self.run_of(v)]
    }

    /// The variable of flows with these links, weights, penalty and bound (made if none is).
    /// The last `redundant` of `elems` are redundant links.
    fn class_of(&mut self, elems: &[VarElem], redundant: usize, penalty: f64, bound: f64) -> u32 {
        let mut h = FxHasher::default();
        for e in elems {
            (e.link, e.weight.to_bits()).hash(&mut h);
        }
        (penalty.to_bits(), bound.to_bits()).hash(&mut h);
        let hash = h.finish();
        let head = self.classes.get(&hash).copied().unwrap_or(NO_VAR);
        let mut v = head;
        while v != NO_VAR {
            let same = self.vars[v as usize].penalty.to_bits() == penalty.to_bits()
                && self.var_data[v as usize].bound.to_bits() == bound.to_bits()
                && self.var_elems(v).len() == elems.len()
                && self
                    .var_elems(v)
                    .iter()
                    .zip(elems)
                    .all(|(a, b)| a.link == b.link && a.weight.to_bits() == b.weight.to_bits());
            if same {
                if self.var_data[v as usize].idle {
                    self.revive_var(v);
                } else {
                    self.var_data[v as usize].refs += 1;
                }
                return v;
            }
            v = self.var_data[v as usize].next_in_class;
        }
        let len = u16::try_from(elems.len() - redundant).expect("a route of at most 65535 links");
        let elem_start = match self.free_elems.get_mut(elems.len()).and_then(Vec::pop) {
            Some(start) => {
                self.elems[start as usize..][..elems.len()].copy_from_slice(elems);
                start
            }
            None => {
                let start = u32::try_from(self.elems.len()).expect("fewer than 2^32 links in use");
                self.elems.extend_from_slice(elems);
                start
            }
        };
        let var = Var::fresh(penalty, bound, elem_start, len);
        let v = match self.free_vars.pop() {
            Some(v) => {
                self.vars[v as usize] = var;
                v
            }
            None => {
                assert!(self.vars.len() < NO_VAR as usize, "too many flow classes");
                self.vars.push(var);
                self.var_data.push(VarData::default());
                self.var_timer_pos.push(ABSENT);
                self.attach_pos.push(ABSENT);
                (self.vars.len() - 1) as u32
            }
        };
        let d = &mut self.var_data[v as usize];
        d.bound = bound;
        d.base = 0.0;
        d.base_s = 0.0;
        d.members.clear();
        d.refs = 1;
        d.redundant = redundant as u16;
        d.hash = hash;
        d.next_in_class = head;
        d.idle = false;
        self.classes.insert(hash, v);
        v
    }

    /// Idle variable `v` takes its first flow again: as [`FluidNetwork::class_of`] makes a new
    /// one, its class, links and index kept.
    fn revive_var(&mut self, v: u32) {
        let var = &self.vars[v as usize];
        let d = &mut self.var_data[v as usize];
        self.vars[v as usize] = Var::fresh(var.penalty, d.bound, var.elem_start, var.elem_len);
        d.base = 0.0;
        d.base_s = 0.0;
        d.members.clear();
        d.refs = 1;
        d.idle = false;
        self.idle_count -= 1;
    }

    /// Variable `v` has no flow left: keep it idle in its class, so that the next flow of the
    /// class (a message over the same route, often) finds it instead of making one, up to
    /// [`IDLE_VARS`] of them; past that, free the one idle longest. A variable's index is
    /// bookkeeping: which one a class gets changes no rate and no date.
    fn retire_var(&mut self, v: u32) {
        let d = &mut self.var_data[v as usize];
        d.idle = true;
        d.idle_gen = d.idle_gen.wrapping_add(1);
        self.idle_vars.push_back((v, d.idle_gen));
        self.idle_count += 1;
        while self.idle_count > self.idle_cap {
            let (u, g) = self
                .idle_vars
                .pop_front()
                .expect("idle variables are queued");
            let d = &mut self.var_data[u as usize];
            if d.idle && d.idle_gen == g {
                d.idle = false;
                self.idle_count -= 1;
                self.free_var(u);
            }
        }
        // Entries of revived variables go stale: drop them before they outnumber the others.
        if self.idle_vars.len() > 2 * self.idle_cap + 16 {
            let data = &self.var_data;
            self.idle_vars
                .retain(|&(u, g)| data[u as usize].idle && data[u as usize].idle_gen == g);
        }
    }

    /// Forget a variable no flow refers to any more.
    fn free_var(&mut self, v: u32) {
        let (hash, next) = {
            let d = &self.var_data[v as usize];
            (d.hash, d.next_in_class)
        };
        let head = self.classes[&hash];
        if head == v {
            if next == NO_VAR {
                self.classes.remove(&hash);
            } else {
                self.classes.insert(hash, next);
            }
        } else {
            let mut u = head;
            while self.var_data[u as usize].next_in_class != v {
                u = self.var_data[u as usize].next_in_class;
            }
            self.var_data[u as usize].next_in_class = next;
        }
        let run = self.run_of(v);
        let len = run.len();
        if len > 0 {
            if self.free_elems.len() <= len {
                self.free_elems.resize_with(len + 1, Vec::new);
            }
            self.free_elems[len].push(run.start as u32);
        }
        self.free_vars.push(v);
    }

    /// The earliest pending date and what it is for; ties go to the date set first.
    fn next_timer(&self) -> Option<(Timer, f64)> {
        let mut best: Option<(Timer, f64, u64)> = None;
        let mut consider = |timer: Timer, head: Option<(u32, f64, u64)>| {
            if let Some((_, t, tie)) = head
                && best.is_none_or(|(_, bt, btie)| t < bt || (t == bt && tie < btie))
            {
                best = Some((timer, t, tie));
            }
        };
        let head = self.activations.peek();
        consider(Timer::Activation(head.map_or(0, |h| h.0)), head);
        let head = self.link_timers.peek();
        consider(Timer::Link(head.map_or(0, |h| h.0)), head);
        let head = self.var_timers.peek();
        consider(Timer::Var(head.map_or(0, |h| h.0)), head);
        if self.reshare_due_s.is_finite() {
            consider(Timer::Reshare, Some((0, self.reshare_due_s, u64::MAX)));
        }
        best.map(|(timer, t, _)| (timer, t))
    }

    /// Date of the next activation or completion, if any flow is pending.
    pub fn next_event_time(&self) -> Option<f64> {
        self.next_timer().map(|(_, t)| t)
    }

    /// Move the clock to `now_s`, which must not be later than
    /// [`next_event_time`](Self::next_event_time): activate the flows whose latency ends by then, finish the
    /// flows whose last byte arrives by then (appending them to `finished` in the order they were
    /// started), and re-share the links they touch (or, with a re-share delay set, after
    /// completions alone when the delay is over, the flows whose latency ends meanwhile joining
    /// then: [`set_reshare_delay_s`](Self::set_reshare_delay_s)).
    pub fn advance(&mut self, now_s: f64, finished: &mut Vec<FlowId>) {
        assert!(now_s >= self.now_s, "time went backwards");
        debug_assert!(
            self.next_event_time().is_none_or(|t| t >= now_s),
            "advance to {now_s} s skips a fluid event due earlier"
        );
        self.now_s = now_s;
        let first_new = finished.len();
        let mut reshare = false;
        while let Some((timer, t)) = self.next_timer() {
            if t > now_s {
                break;
            }
            match timer {
                Timer::Activation(f) => {
                    // A flow joining while a re-share waits joins at that re-share: joining
                    // now would re-share at once, for the whole component.
                    if self.reshare_due_s.is_finite()
                        && self.reshare_due_s > now_s
                        && self.shares(f)
                    {
                        let tie = self.next_seq();
                        let due_s = self.reshare_due_s;
                        self.activations
                            .set(&mut self.activation_pos, f, due_s, tie);
                        self.stats.deferred_joins += 1;
                        continue;
                    }
                    self.activations.remove(&mut self.activation_pos, f);
                    self.activate(f, now_s, finished);
                }
                Timer::Link(l) => {
                    let (v, _, _) = self.links[l as usize]
                        .attached
                        .peek()
                        .expect("a link with a date has an attached variable");
                    self.finish_due(v, now_s, finished);
                }
                Timer::Var(v) => self.finish_due(v, now_s, finished),
                Timer::Reshare => {
                    self.reshare_due_s = f64::INFINITY;
                    reshare = true;
                }
            }
        }
        // Flows finishing together: the order must not depend on how the solver grouped them.
        // (The slots of finished flows are not reused before the next `start_flow`.)
        finished[first_new..].sort_by_key(|f| self.flows[f.0 as usize].started);
        if !self.seeds.is_empty() {
            if self.grew || self.reshare_delay_s == 0.0 || reshare || self.live_flows == 0 {
                self.resolve(now_s);
            } else if self.reshare_due_s.is_infinite() {
                self.reshare_due_s = now_s + self.reshare_delay_s;
            }
        }
    }

    /// Bytes served per member of variable `v` at `now_s`.
    fn served(&self, v: u32, now_s: f64) -> f64 {
        let (var, d) = (&self.vars[v as usize], &self.var_data[v as usize]);
        match var.attach() {
            Attach::Link(k) => {
                let l = &self.links[k as usize];
                (l.clock + l.level * (now_s - l.clock_s) - d.base) / var.penalty
            }
            Attach::Bound => d.base + d.bound * (now_s - d.base_s),
            Attach::Unsolved => d.base,
        }
    }

    /// Date at which a member of `v` done at `done_at` served bytes finishes, at current rates.
    fn finish_date(&self, v: u32, done_at: f64) -> f64 {
        let (var, d) = (&self.vars[v as usize], &self.var_data[v as usize]);
        match var.attach() {
            Attach::Link(k) => {
                let l = &self.links[k as usize];
                date_after(l.clock_s, d.base + var.penalty * done_at - l.clock, l.level)
            }
            Attach::Bound => date_after(d.base_s, done_at - d.base, d.bound),
            Attach::Unsolved => f64::INFINITY,
        }
    }

    /// Whether flow `f` crosses links (rather than being limited by its own bound alone).
    fn shares(&self, f: u32) -> bool {
        let v = self.flows[f as usize].var;
        v != NO_VAR && self.vars[v as usize].elem_len > 0
    }

    fn activate(&mut self, f: u32, now_s: f64, finished: &mut Vec<FlowId>) {
        let flow = self.flows[f as usize];
        let v = flow.var;
        if v == NO_VAR {
            self.release(f, finished);
            return;
        }
        self.flows[f as usize].state = FlowState::Active;
        let first = self.vars[v as usize].active == 0;
        let done_at = if first { 0.0 } else { self.served(v, now_s) } + flow.bytes;
        self.flows[f as usize].done_at = done_at;
        let seq = self.next_seq();
        let d = &mut self.var_data[v as usize];
        let now_first_due = d.members.peek().is_none_or(|m| done_at < m.done_at);
        d.members.push(Member {
            done_at,
            seq,
            flow: f,
        });
        let var = &mut self.vars[v as usize];
        var.active += 1;
        var.mp = f64::from(var.active) / var.penalty;
        let len = usize::from(var.elem_len);
        let run = self.run_of(v);
        for e in &mut self.elems[run] {
            let link = &mut self.links[e.link as usize];
            if link.active_flows == 0 {
                link.busy_since_s = now_s;
            }
            link.active_flows += 1;
            if first {
                e.slot = link.elems.len() as u32;
                link.elems.push(LinkElem {
                    var: v,
                    weight: e.weight,
                });
            }
        }
        if first {
            let d = &mut self.var_data[v as usize];
            d.base = 0.0;
            d.base_s = now_s;
            let bound = d.bound;
            let var = &mut self.vars[v as usize];
            var.level = f64::NAN;
            var.rate = 0.0;
            var.attach = ATTACH_UNSOLVED;
            if len == 0 {
                // Only its own bound limits it, and no other flow can change that.
                var.attach = ATTACH_BOUND;
                var.rate = bound;
                var.level = bound * var.penalty;
                self.refresh_var_date(v);
                return;
            }
        } else if now_first_due {
            self.refresh_var_date(v);
        }
        if len == 0 {
            return;
        }
        self.vars[v as usize].set(GREW, true);
        self.grew = true;
        self.mark_changed(v);
    }

    /// Record that `v`'s members changed: its links must be re-shared.
    fn mark_changed(&mut self, v: u32) {
        let var = &mut self.vars[v as usize];
        if var.has(CHANGED) {
            return;
        }
        var.set(CHANGED, true);
        self.changed.push(v);
        let (start, len) = (var.elem_start as usize, usize::from(var.elem_len));
        self.seeds
            .extend(self.elems[start..start + len].iter().map(|e| e.link));
    }

    /// Finish the members of `v` that are due by `now_s`.
    fn finish_due(&mut self, v: u32, now_s: f64, finished: &mut Vec<FlowId>) {
        let mut done = 0;
        let run = self.run_of(v);
        let len = usize::from(self.vars[v as usize].elem_len);
        while let Some(&m) = self.var_data[v as usize].members.peek() {
            if self.finish_date(v, m.done_at) > now_s {
                break;
            }
            self.var_data[v as usize].members.pop();
            done += 1;
            let bytes = self.flows[m.flow as usize].bytes;
            for e in &self.elems[run.clone()] {
                let link = &mut self.links[e.link as usize];
                link.bytes += e.weight * bytes;
                link.active_flows -= 1;
                if link.active_flows == 0 {
                    link.busy_s += now_s - link.busy_since_s;
                }
            }
            self.var_data[v as usize].refs -= 1;
            self.release(m.flow, finished);
        }
        assert!(done > 0, "a variable's date came with no member due");
        let var = &mut self.vars[v as usize];
        var.active -= done;
        var.mp = f64::from(var.active) / var.penalty;
        // Its links may now give others more: re-share from its level up.
        if len > 0 {
            self.removed_floor = self.removed_floor.min(var.level);
        }
        if var.active > 0 {
            self.refresh_var_date(v);
            if len > 0 {
                self.mark_changed(v);
            }
            return;
        }
        self.detach(v);
        let var = &mut self.vars[v as usize];
        var.attach = ATTACH_UNSOLVED;
        var.level = f64::NAN;
        var.rate = 0.0;
        for i in run {
            let e = self.elems[i];
            let link = &mut self.links[e.link as usize];
            let slot = e.slot as usize;
            link.elems.swap_remove(slot);
            let redundant = link.redundant;
            if let Some(&moved) = link.elems.get(slot) {
                let moved_run = self.run_of(moved.var);
                let m = self.elems[moved_run]
                    .iter_mut()
                    .find(|m| m.link == e.link)
                    .expect("a variable lists every link it is on");
                m.slot = slot as u32;
            }
            if !redundant {
                self.seeds.push(e.link);
            }
        }
        // A variable still listed as changed is retired after the re-solve, which skips it.
        if self.var_data[v as usize].refs == 0 && !self.vars[v as usize].has(CHANGED) {
            self.retire_var(v);
        }
    }

    fn release(&mut self, f: u32, finished: &mut Vec<FlowId>) {
        let flow = &mut self.flows[f as usize];
        flow.state = FlowState::Free;
        flow.done_at = 0.0;
        self.free_flows.push(f);
        self.live_flows -= 1;
        finished.push(FlowId(f));
    }

    /// Take `v` off its link's heap or the variable dates, refreshing that link's date.
    fn detach(&mut self, v: u32) {
        match self.vars[v as usize].attach() {
            Attach::Link(k) => {
                self.links[k as usize]
                    .attached
                    .remove(&mut self.attach_pos, v);
                self.refresh_link_date(k);
            }
            Attach::Bound => {
                self.var_timers.remove(&mut self.var_timer_pos, v);
            }
            Attach::Unsolved => {}
        }
    }

    /// Re-key `v` after its first member changed.
    fn refresh_var_date(&mut self, v: u32) {
        let Some(first) = self.var_data[v as usize].members.peek().map(|m| m.done_at) else {
            return;
        };
        match self.vars[v as usize].attach() {
            Attach::Link(k) => {
                let key = self.var_data[v as usize].base + self.vars[v as usize].penalty * first;
                let tie = self.next_seq();
                self.links[k as usize]
                    .attached
                    .set(&mut self.attach_pos, v, key, tie);
                self.refresh_link_date(k);
            }
            Attach::Bound => {
                let at = self.finish_date(v, first).max(self.now_s);
                if self.var_timers.key_of(&self.var_timer_pos, v) != Some(at) {
                    let tie = self.next_seq();
                    self.var_timers.set(&mut self.var_timer_pos, v, at, tie);
                    self.stats.retimes += 1;
                }
            }
            Attach::Unsolved => {}
        }
    }

    /// Date of link `k`'s next member to finish, from its first attached variable. (The date
    /// is that member's own, not one derived from the heap key, which shifting the clock may
    /// have rounded differently: a date must always find its member due.)
    fn refresh_link_date(&mut self, k: u32) {
        match self.links[k as usize].attached.peek() {
            None => {
                self.link_timers.remove(&mut self.link_timer_pos, k);
            }
            Some((v, _, _)) => {
                let first = self.var_data[v as usize]
                    .members
                    .peek()
                    .expect("an attached variable has members")
                    .done_at;
                let at = self.finish_date(v, first).max(self.now_s);
                if self.link_timers.key_of(&self.link_timer_pos, k) != Some(at) {
                    let tie = self.next_seq();
                    self.link_timers.set(&mut self.link_timer_pos, k, at, tie);
                    self.stats.retimes += 1;
                }
            }
        }
    }

    /// Re-share the links touched since the last re-solve, from the lowest level a change can
    /// reach, and move the dates of the links and variables whose rates changed.
    fn resolve(&mut self, now_s: f64) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Wrapped: clear old stamps so none can collide with the new epoch.
            self.links.iter_mut().for_each(|l| {
                l.stamp = 0;
                l.floor_stamp = 0;
            });
            self.vars.iter_mut().for_each(|v| v.stamp = 0);
            self.stamp = 1;
        }
        let alone = !self.general_only && self.alone();
        let mut net = solver::Net {
            links: &mut self.links,
            vars: &mut self.vars,
            elems: &self.elems,
            stamp: self.stamp,
        };
        if alone {
            self.stats.alone += 1;
            net.collect_alone(&self.seeds, &self.changed, &mut self.scratch);
        } else {
            let floor = net.floor(&self.changed, self.removed_floor, &self.var_data);
            net.collect(&self.seeds, &self.changed, floor, &mut self.scratch);
        }
        self.stats.solves += 1;
        self.stats.vars_solved += self.scratch.vars.len() as u64;
        self.stats.flows_solved += self
            .scratch
            .vars
            .iter()
            .map(|&v| u64::from(net.vars[v as usize].active))
            .sum::<u64>();
        self.stats.links_solved += self.scratch.links.len() as u64;
        // A region without variables: its links lost their last ones, which took their
        // attachments with them; the next variable to attach restarts a link's clock.
        if !self.scratch.vars.is_empty() {
            net.fill(&self.var_data, &mut self.scratch);
            self.apply(now_s);
        }

        self.seeds.clear();
        self.removed_floor = f64::INFINITY;
        self.grew = false;
        self.reshare_due_s = f64::INFINITY;
        for i in 0..self.changed.len() {
            let v = self.changed[i];
            let var = &mut self.vars[v as usize];
            var.set(CHANGED, false);
            var.set(GREW, false);
            if var.active == 0 && self.var_data[v as usize].refs == 0 {
                self.retire_var(v);
            }
        }
        self.changed.clear();
    }

    /// Whether the links the changes touch carry one variable at most (the one changed
    /// variable with members, if any), which a re-solve then takes alone.
    fn alone(&self) -> bool {
        let mut alone = None;
        for &v in &self.changed {
            if self.vars[v as usize].active > 0 {
                if alone.is_some() {
                    return false;
                }
                alone = Some(v);
            }
        }
        self.seeds
            .iter()
            .all(|&l| match self.links[l as usize].elems[..] {
                [] => true,
                [e] => Some(e.var) == alone,
                _ => false,
            })
    }

    /// Carry the solver's levels into rates, attachments, link clocks and dates.
    fn apply(&mut self, now_s: f64) {
        let region_links = std::mem::take(&mut self.scratch.links);
        let region_vars = std::mem::take(&mut self.scratch.vars);
        // Restart the clocks of the links involved from 0 now, shifting what their variables
        // have to reach: a clock that ran for long at a high level would otherwise dwarf the
        // little a variable attached later has to go (SimGrid mode mixes penalties 1e6 apart).
        for &l in &region_links {
            let link = &mut self.links[l as usize];
            if !link.attached.is_empty() {
                let clock = link.clock + link.level * (now_s - link.clock_s);
                let data = &mut self.var_data;
                link.attached
                    .shift(-clock, |v| data[v as usize].base -= clock);
            }
            link.clock = 0.0;
            link.clock_s = now_s;
        }
        // Variables that change what they follow: note what they served, then detach.
        let mut movers = std::mem::take(&mut self.scratch.movers);
        movers.clear();
        for &v in &region_vars {
            let var = &self.vars[v as usize];
            if var.new_attach != var.attach {
                let served = self.served(v, now_s);
                match var.attach() {
                    Attach::Link(k) => {
                        self.links[k as usize]
                            .attached
                            .remove(&mut self.attach_pos, v);
                    }
                    Attach::Bound => {
                        self.var_timers.remove(&mut self.var_timer_pos, v);
                    }
                    Attach::Unsolved => {}
                }
                movers.push((v, served));
            }
            let var = &mut self.vars[v as usize];
            var.level = var.new_level;
            var.attach = var.new_attach;
            var.rate = match var.attach() {
                Attach::Bound => self.var_data[v as usize].bound,
                _ => var.new_level.max(0.0) / var.penalty,
            };
        }
        for &l in &region_links {
            self.links[l as usize].level = self.links[l as usize].new_level;
        }
        for &(v, served) in &movers {
            match self.vars[v as usize].attach() {
                Attach::Link(k) => {
                    let penalty = self.vars[v as usize].penalty;
                    let d = &mut self.var_data[v as usize];
                    d.base = self.links[k as usize].clock - penalty * served;
                    let first = d
                        .members
                        .peek()
                        .expect("an attached variable has members")
                        .done_at;
                    let key = d.base + penalty * first;
                    let tie = self.next_seq();
                    self.links[k as usize]
                        .attached
                        .set(&mut self.attach_pos, v, key, tie);
                }
                Attach::Bound => {
                    let d = &mut self.var_data[v as usize];
                    d.base = served;
                    d.base_s = now_s;
                    self.refresh_var_date(v);
                }
                Attach::Unsolved => unreachable!("the solver fixes every variable it takes"),
            }
        }
        for &l in &region_links {
            self.refresh_link_date(l);
        }
        self.scratch.links = region_links;
        self.scratch.vars = region_vars;
        self.scratch.movers = movers;
    }

    /// Current rate of an active flow (0 while in latency), in bytes per second.
    pub fn flow_rate_bytes_per_sec(&self, id: FlowId) -> f64 {
        let f = &self.flows[id.0 as usize];
        match f.state {
            FlowState::Active => self.vars[f.var as usize].rate,
            FlowState::Latency | FlowState::Free => 0.0,
        }
    }

    /// Bytes an unfinished flow still has to send at `now_s` (not earlier than the last
    /// [`advance`](Self::advance)).
    pub fn flow_remaining_bytes(&self, id: FlowId, now_s: f64) -> f64 {
        let f = &self.flows[id.0 as usize];
        match f.state {
            FlowState::Active => (f.done_at - self.served(f.var, now_s)).max(0.0),
            FlowState::Latency => f.bytes,
            FlowState::Free => 0.0,
        }
    }

    /// Where a flow is in its life. A finished flow's index may be reused by a later
    /// [`start_flow`](Self::start_flow), after which it describes the new flow.
    pub fn flow_phase(&self, id: FlowId) -> FlowPhase {
        match self.flows.get(id.0 as usize).map(|f| f.state) {
            Some(FlowState::Latency) => FlowPhase::Latency,
            Some(FlowState::Active) => FlowPhase::Active,
            Some(FlowState::Free) | None => FlowPhase::Finished,
        }
    }

    /// Number of flows started and not yet finished (in latency or active).
    pub fn live_flows(&self) -> usize {
        self.live_flows
    }

    /// What a link has carried, with its busy time counted up to `now_s`.
    pub fn link_stats(&self, id: LinkId, now_s: f64) -> LinkStats {
        let l = &self.links[id.0 as usize];
        let open = if l.active_flows == 0 {
            0.0
        } else {
            now_s - l.busy_since_s
        };
        LinkStats {
            bytes: l.bytes,
            busy_s: l.busy_s + open,
            active_flows: l.active_flows,
        }
    }

    /// Sum of the active flows' rates × weights on a link, in bytes per second.
    pub fn link_load_bytes_per_sec(&self, id: LinkId) -> f64 {
        self.links[id.0 as usize]
            .elems
            .iter()
            .map(|e| {
                let v = &self.vars[e.var as usize];
                e.weight * f64::from(v.active) * v.rate
            })
            .sum()
    }

    /// Capacity of a link, in bytes per second.
    pub fn link_capacity_bytes_per_sec(&self, id: LinkId) -> f64 {
        self.links[id.0 as usize].capacity_bytes_per_sec
    }

    /// Counters of the incremental solver's work.
    pub fn solve_stats(&self) -> SolveStats {
        self.stats
    }
}

/// Run a set of flows to completion on `net`, each started at its date, and return each
/// flow's finish date, in input order. Starts at a date are handled before the network's own
/// events at that date, so flows activating together are shared in one re-solve.
pub fn run_flow_set(net: &mut FluidNetwork, flows: Vec<(f64, FlowSpec)>) -> Vec<f64> {
    run_flow_set_observed(net, flows, &mut |_| {})
}

/// [`run_flow_set`], telling `finished` how many flows ended at each date flows end (for a
/// progress report).
pub fn run_flow_set_observed(
    net: &mut FluidNetwork,
    flows: Vec<(f64, FlowSpec)>,
    finished: &mut dyn FnMut(usize),
) -> Vec<f64> {
    let mut starts = Calendar::new();
    let n = flows.len();
    for (i, (start_s, spec)) in flows.into_iter().enumerate() {
        starts.schedule(start_s, (i, spec));
    }
    let mut finish_s = vec![f64::NAN; n];
    let mut owner: Vec<usize> = Vec::new();
    let mut done = Vec::new();
    loop {
        let next_start = starts.peek_time();
        let next_net = net.next_event_time();
        match (next_start, next_net) {
            (None, None) => break,
            (Some(s), n) if n.is_none_or(|n| s <= n) => {
                let (t, (i, spec)) = starts.pop().expect("peeked");
                let id = net.start_flow(t, spec).0 as usize;
                if owner.len() <= id {
                    owner.resize(id + 1, usize::MAX);
                }
                owner[id] = i;
            }
            (_, Some(t)) => {
                net.advance(t, &mut done);
                if !done.is_empty() {
                    finished(done.len());
                }
                for id in done.drain(..) {
                    finish_s[owner[id.0 as usize]] = t;
                }
            }
            (Some(_), None) => unreachable!("covered by the arm above"),
        }
    }
    finish_s
}

#[cfg(test)]
mod tests;
