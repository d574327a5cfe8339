//! The fluid network: links shared max-min fairly among the flows that cross them.
//!
//! Semantics (the SimGrid oracle's, `scripts/oracle/README.md`):
//!
//! - A flow first waits the sum of its route's link latencies; during that phase it uses no
//!   bandwidth. Latency is per flow, never shared.
//! - Then it joins the sharing. Rates are the max-min fair allocation over all active flows,
//!   subject to per-flow rate bounds, recomputed at every activation and completion. Remaining
//!   bytes fall linearly between those events.
//! - A [`Sharing::Shared`] link carries at most its capacity in total:
//!   Σ weightᵢ·rateᵢ ≤ C. A [`Sharing::Fatpipe`] link caps each flow separately
//!   (max weightᵢ·rateᵢ ≤ C, as SimGrid writes it). Split-duplex links are two shared links, one
//!   per direction, built by the caller.
//! - [`SharingMode::Plain`] (the default) gives every flow the same weight: unweighted max-min.
//!   [`SharingMode::SimGrid`] reproduces SimGrid CM02's RTT unfairness: a flow's share is
//!   weighted by 1 / (its route latency), or 1 when that latency is exactly 0; on a saturated
//!   fat pipe, flows are fixed at one level, so flow j gets C·p_min/p_j (SimGrid's behaviour).
//!
//! Incrementality: a change (a flow activating or finishing) marks the links it touches; only
//! the connected component of those links (links reachable through active flows) is re-solved,
//! and only flows whose rate changed have their remaining bytes brought up to date and their
//! finish date moved. Flows elsewhere are not looked at. Each flow keeps exactly one date in a
//! [`RetimableQueue`]: its activation date while in latency, then its finish date.
//!
//! The solver is progressive filling (water-filling), as SimGrid's `maxmin.cpp` does it, written
//! from its description: each round finds the lowest level at which a link saturates or a flow
//! reaches its bound, fixes the flows that level decides, and removes their share from the
//! links they cross.

use crate::engine::{Calendar, RetimableQueue};

mod solver;

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
pub struct FlowSpec {
    route: Vec<LinkId>,
    bytes: f64,
    bound_bytes_per_sec: f64,
    extra_load: Vec<(LinkId, f64)>,
}

impl FlowSpec {
    /// `bytes` over the links of `route`, in order (latencies are summed in this order).
    pub fn new(route: Vec<LinkId>, bytes: f64) -> Self {
        FlowSpec {
            route,
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
    /// Sum over re-solves of the flows in the component solved.
    pub flows_solved: u64,
    /// Sum over re-solves of the links in the component solved.
    pub links_solved: u64,
    /// Finish dates moved.
    pub retimes: u64,
}

#[derive(Debug, Clone)]
struct Link {
    capacity_bytes_per_sec: f64,
    latency_s: f64,
    sharing: Sharing,
    /// Active flows on the link and their load weight on it.
    flows: Vec<(u32, f64)>,
    stamp: u32,
    busy_since_s: f64,
    busy_s: f64,
    bytes: f64,
    // Solver scratch.
    remaining: f64,
    usage: f64,
    /// Usage when last summed afresh, to detect cancellation.
    usage_ref: f64,
    unfixed: u32,
    dirty: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FlowState {
    Free,
    Latency,
    Active,
}

#[derive(Debug, Clone, Copy)]
struct Elem {
    link: u32,
    weight: f64,
    /// Position of this flow in `links[link].flows` while active.
    slot: u32,
}

#[derive(Debug, Clone)]
struct Flow {
    state: FlowState,
    elems: Vec<Elem>,
    penalty: f64,
    bound: f64,
    bytes: f64,
    remaining: f64,
    rate: f64,
    last_update_s: f64,
    stamp: u32,
    // Solver scratch.
    fixed: bool,
    new_rate: f64,
}

/// Links, flows, and the incremental max-min solver that shares the one among the other.
#[derive(Debug)]
pub struct FluidNetwork {
    mode: SharingMode,
    links: Vec<Link>,
    flows: Vec<Flow>,
    free_flows: Vec<u32>,
    dates: RetimableQueue<u32>,
    now_s: f64,
    stamp: u32,
    modified: Vec<u32>,
    scratch: solver::Scratch,
    stats: SolveStats,
}

impl FluidNetwork {
    /// An empty network.
    pub fn new(mode: SharingMode) -> Self {
        FluidNetwork {
            mode,
            links: Vec::new(),
            flows: Vec::new(),
            free_flows: Vec::new(),
            dates: RetimableQueue::new(),
            now_s: 0.0,
            stamp: 0,
            modified: Vec::new(),
            scratch: solver::Scratch::default(),
            stats: SolveStats::default(),
        }
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
        let id = LinkId(self.links.len() as u32);
        self.links.push(Link {
            capacity_bytes_per_sec,
            latency_s,
            sharing,
            flows: Vec::new(),
            stamp: 0,
            busy_since_s: 0.0,
            busy_s: 0.0,
            bytes: 0.0,
            remaining: 0.0,
            usage: 0.0,
            usage_ref: 0.0,
            unfixed: 0,
            dirty: false,
        });
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
        // A link named twice counts twice, as SimGrid expands a constraint twice.
        let mut elems: Vec<Elem> = Vec::with_capacity(spec.route.len() + spec.extra_load.len());
        let loads = spec
            .route
            .iter()
            .map(|&l| (l, 1.0))
            .chain(spec.extra_load.iter().copied());
        for (link, weight) in loads {
            assert!((link.0 as usize) < self.links.len(), "unknown {link:?}");
            assert!(weight > 0.0, "a flow's load on a link must be > 0");
            match elems.iter_mut().find(|e| e.link == link.0) {
                Some(e) => e.weight += weight,
                None => elems.push(Elem {
                    link: link.0,
                    weight,
                    slot: 0,
                }),
            }
        }
        let flow = Flow {
            state: FlowState::Latency,
            elems,
            penalty,
            bound: spec.bound_bytes_per_sec,
            bytes: spec.bytes,
            remaining: spec.bytes,
            rate: 0.0,
            last_update_s: now_s,
            stamp: 0,
            fixed: false,
            new_rate: 0.0,
        };
        let idx = match self.free_flows.pop() {
            Some(i) => {
                self.flows[i as usize] = flow;
                i
            }
            None => {
                self.flows.push(flow);
                (self.flows.len() - 1) as u32
            }
        };
        self.dates.set(idx, now_s + latency_s);
        FlowId(idx)
    }

    /// Date of the next activation or completion, if any flow is pending.
    pub fn next_event_time(&self) -> Option<f64> {
        self.dates.peek().map(|(_, t)| t)
    }

    /// Move the clock to `now_s`, which must not be later than
    /// [`next_event_time`](Self::next_event_time): activate the flows whose latency ends by then, finish the
    /// flows whose last byte arrives by then (appending them to `finished`, in a deterministic
    /// order), and re-share the links they touch.
    pub fn advance(&mut self, now_s: f64, finished: &mut Vec<FlowId>) {
        assert!(now_s >= self.now_s, "time went backwards");
        debug_assert!(
            self.next_event_time().is_none_or(|t| t >= now_s),
            "advance to {now_s} s skips a fluid event due earlier"
        );
        self.now_s = now_s;
        while let Some((&idx, t)) = self.dates.peek() {
            if t > now_s {
                break;
            }
            self.dates.pop();
            match self.flows[idx as usize].state {
                FlowState::Latency => self.activate(idx, now_s, finished),
                FlowState::Active => self.finish(idx, now_s, finished),
                FlowState::Free => unreachable!("a free flow slot had a date"),
            }
        }
        if !self.modified.is_empty() {
            self.resolve(now_s);
        }
    }

    fn activate(&mut self, idx: u32, now_s: f64, finished: &mut Vec<FlowId>) {
        let flow = &mut self.flows[idx as usize];
        flow.state = FlowState::Active;
        flow.last_update_s = now_s;
        if flow.remaining <= 0.0 || (flow.elems.is_empty() && flow.bound.is_infinite()) {
            // Nothing to send, or nothing to limit the rate: done as soon as latency is paid.
            self.release(idx, finished);
            return;
        }
        if flow.elems.is_empty() {
            // Only its own bound limits it, and no other flow can change that.
            flow.rate = flow.bound;
            let at = now_s + flow.remaining / flow.rate;
            self.dates.set(idx, at);
            return;
        }
        let elems = std::mem::take(&mut flow.elems);
        let mut joined = elems;
        for e in &mut joined {
            let link = &mut self.links[e.link as usize];
            if link.flows.is_empty() {
                link.busy_since_s = now_s;
            }
            e.slot = link.flows.len() as u32;
            link.flows.push((idx, e.weight));
            self.modified.push(e.link);
        }
        self.flows[idx as usize].elems = joined;
    }

    fn finish(&mut self, idx: u32, now_s: f64, finished: &mut Vec<FlowId>) {
        let elems = std::mem::take(&mut self.flows[idx as usize].elems);
        let bytes = self.flows[idx as usize].bytes;
        for e in &elems {
            let link = &mut self.links[e.link as usize];
            link.bytes += e.weight * bytes;
            let slot = e.slot as usize;
            link.flows.swap_remove(slot);
            if let Some(&(moved, _)) = link.flows.get(slot) {
                let moved_elem = self.flows[moved as usize]
                    .elems
                    .iter_mut()
                    .find(|m| m.link == e.link)
                    .expect("an active flow lists every link it is on");
                moved_elem.slot = slot as u32;
            }
            let link = &mut self.links[e.link as usize];
            if link.flows.is_empty() {
                link.busy_s += now_s - link.busy_since_s;
            }
            self.modified.push(e.link);
        }
        self.flows[idx as usize].elems = elems;
        self.release(idx, finished);
    }

    fn release(&mut self, idx: u32, finished: &mut Vec<FlowId>) {
        let flow = &mut self.flows[idx as usize];
        flow.state = FlowState::Free;
        flow.remaining = 0.0;
        flow.rate = 0.0;
        flow.elems.clear();
        self.free_flows.push(idx);
        finished.push(FlowId(idx));
    }

    /// Re-share the connected component of the modified links and move the finish dates of
    /// the flows whose rate changed.
    fn resolve(&mut self, now_s: f64) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Wrapped: clear old stamps so none can collide with the new epoch.
            self.links.iter_mut().for_each(|l| l.stamp = 0);
            self.flows.iter_mut().for_each(|f| f.stamp = 0);
            self.stamp = 1;
        }
        let stamp = self.stamp;
        let comp = &mut self.scratch;
        comp.links.clear();
        comp.flows.clear();
        // Depth-first over links and flows: a link's active flows, their other links, ...
        let mut stack = std::mem::take(&mut self.modified);
        while let Some(l) = stack.pop() {
            let link = &mut self.links[l as usize];
            if link.stamp == stamp {
                continue;
            }
            link.stamp = stamp;
            comp.links.push(l);
            for &(f, _) in &self.links[l as usize].flows {
                let flow = &mut self.flows[f as usize];
                if flow.stamp == stamp {
                    continue;
                }
                flow.stamp = stamp;
                comp.flows.push(f);
                stack.extend(
                    flow.elems
                        .iter()
                        .map(|e| e.link)
                        .filter(|&m| self.links[m as usize].stamp != stamp),
                );
            }
        }
        self.modified = stack; // keep the allocation
        self.stats.solves += 1;
        self.stats.flows_solved += comp.flows.len() as u64;
        self.stats.links_solved += comp.links.len() as u64;

        solver::solve(&mut self.links, &mut self.flows, &mut self.scratch);

        for &f in &self.scratch.flows {
            let flow = &mut self.flows[f as usize];
            if flow.new_rate == flow.rate {
                continue;
            }
            let elapsed = now_s - flow.last_update_s;
            flow.remaining = (flow.remaining - flow.rate * elapsed).max(0.0);
            flow.last_update_s = now_s;
            flow.rate = flow.new_rate;
            let at = if flow.rate > 0.0 {
                now_s + flow.remaining / flow.rate
            } else {
                f64::INFINITY
            };
            self.dates.set(f, at);
            self.stats.retimes += 1;
        }
    }

    /// Current rate of an active flow (0 while in latency), in bytes per second.
    pub fn flow_rate_bytes_per_sec(&self, id: FlowId) -> f64 {
        self.flows[id.0 as usize].rate
    }

    /// Bytes an unfinished flow still has to send at `now_s` (not earlier than the last
    /// [`advance`](Self::advance)).
    pub fn flow_remaining_bytes(&self, id: FlowId, now_s: f64) -> f64 {
        let f = &self.flows[id.0 as usize];
        (f.remaining - f.rate * (now_s - f.last_update_s)).max(0.0)
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
        self.dates.len()
    }

    /// What a link has carried, with its busy time counted up to `now_s`.
    pub fn link_stats(&self, id: LinkId, now_s: f64) -> LinkStats {
        let l = &self.links[id.0 as usize];
        let open = if l.flows.is_empty() {
            0.0
        } else {
            now_s - l.busy_since_s
        };
        LinkStats {
            bytes: l.bytes,
            busy_s: l.busy_s + open,
            active_flows: l.flows.len(),
        }
    }

    /// Sum of the active flows' rates × weights on a link, in bytes per second.
    pub fn link_load_bytes_per_sec(&self, id: LinkId) -> f64 {
        self.links[id.0 as usize]
            .flows
            .iter()
            .map(|&(f, w)| w * self.flows[f as usize].rate)
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
