//! Benchmarks of the fluid network alone.
//!
//! Three suites, each printing a markdown table with flow events (activations + completions)
//! per second of wall time and the wall time itself:
//!
//! - `hold` (steady state, below);
//! - `alltoall N`: N hosts on a crossbar, each with a NIC up link and a NIC down link
//!   (12.5 GB/s, 1 µs); at t = 0 every host sends one flow to every other host, N(N − 1) flows of
//!   log-uniform sizes between 64 KiB and 64 MiB, run to the last completion (what
//!   `hetsim net` does with such a case);
//! - `shared3 K`: K flows at t = 0 on a chain of 3 shared links (12.5 GB/s, 1 µs), each on one of
//!   the 6 contiguous sub-chains, same sizes, run to the last completion.
//!
//! A batch run stops early when it exceeds its wall-time budget (`--budget SECS`, default 600);
//! its row then says how far it got. The last column of the batch tables is the growth exponent
//! of wall time in the number of flows from the previous row: ln(t₂/t₁) / ln(F₂/F₁).
//!
//! Hold model: K flows are kept live: whenever flows finish, as many new ones are started at that date on
//! random routes (seeded splitmix64, so every run does the same work), with random sizes. The
//! figure of merit is flow events (activations + completions) per second of wall time, and the
//! mean size of the component re-solved per solve, to show that the cost follows the part of the
//! network an event touches, not the number of live flows. Its last column is the growth
//! exponent of the cost per event in K from the previous row (0: independent of K; 1: linear).
//!
//! Topologies:
//! - `node8`: one node, 8 GPUs behind two PCIe switches and a host bridge, NVLink peer links;
//! - `fattree64`: 64 nodes on a two-level fat tree (8 leaves of 8 nodes, 4 spines);
//! - `disjoint`: every flow on its own private pair of links (no sharing at all).
//!
//! Run: `cargo bench -p hetsim-benches --bench network` (all), or `cargo bench -p hetsim-benches --bench network -- disjoint 100`
//! to keep only the configurations whose name (`hold node8 100`, `alltoall 256`,
//! `shared3 10000`) contains every word given. Without `--bench` (as `cargo test --benches` runs
//! it) every configuration is small or runs a few hundred events only.
//!
//! `--reshare` runs the all-to-all (64, 128, 256 and 1 024 hosts) with the re-share after
//! completions put off by 0 (exact), 10 µs, 100 µs and 1 ms
//! ([`FluidNetwork::set_reshare_delay_s`]): wall time, re-solves, and the finish dates against
//! the exact run's where that run fits the budget (`-- --reshare 1024 0.001` keeps one row);
//! then the hold model on node8 and fattree64 at K = 10 000 with the same delays: flow events
//! per second of wall time, and the simulated traffic against the exact run's
//! (`-- --reshare hold fattree64` keeps those rows).
//!
//! `--census` instead counts, per event, the flows active before and after it whose rate did not
//! change, changed by floating-point noise only, or really changed, beside the flows the solver
//! re-solved (hold node8 and fattree64 at K = 100, 1000, 10 000; alltoall 32, 64, 128): what any
//! exact solver has to update, against what this one touches.

use std::time::{Duration, Instant};

use hetsim::fluid::{
    FlowId, FlowPhase, FlowSpec, FluidNetwork, LinkId, Sharing, SharingMode, run_flow_set,
};

const GB: f64 = 1e9;
const US: f64 = 1e-6;

mod common;
use common::Rng;

/// A topology: its network and a way to draw the route of a new flow.
trait Topology {
    fn name(&self) -> &'static str;
    fn net(&mut self) -> &mut FluidNetwork;
    /// Route for a new flow; `slot` is the hold slot the flow fills (used by `disjoint`).
    fn route(&mut self, rng: &mut Rng, slot: usize) -> Vec<LinkId>;
}

/// One node: RAM, a host bridge, two PCIe switches of 4 GPUs each, NVLink pairs.
struct Node8 {
    net: FluidNetwork,
    bridge: LinkId,
    sw_up: [LinkId; 2],
    sw_down: [LinkId; 2],
    h2g: [LinkId; 8],
    g2h: [LinkId; 8],
    /// `nvlink[a][b]`: directed peer link a -> b, where there is one.
    nvlink: [[Option<LinkId>; 8]; 8],
}

impl Node8 {
    fn new() -> Self {
        let mut net = FluidNetwork::new(SharingMode::Plain);
        let bridge = net.add_link(20.0 * GB, 0.2 * US, Sharing::Shared);
        let sw_up = [0; 2].map(|_| net.add_link(16.0 * GB, 0.3 * US, Sharing::Shared));
        let sw_down = [0; 2].map(|_| net.add_link(16.0 * GB, 0.3 * US, Sharing::Shared));
        let h2g = [0; 8].map(|_| net.add_link(12.0 * GB, 0.5 * US, Sharing::Shared));
        let g2h = [0; 8].map(|_| net.add_link(12.0 * GB, 0.5 * US, Sharing::Shared));
        let mut nvlink = [[None; 8]; 8];
        // Each GPU is NVLinked to its neighbour on the same switch (g ^ 1) and to its mirror on
        // the other switch (g ^ 4): a partial hybrid cube mesh.
        for (a, row) in nvlink.iter_mut().enumerate() {
            for b in [a ^ 1, a ^ 4] {
                row[b] = Some(net.add_link(25.0 * GB, 0.7 * US, Sharing::Shared));
            }
        }
        Node8 {
            net,
            bridge,
            sw_up,
            sw_down,
            h2g,
            g2h,
            nvlink,
        }
    }
}

impl Topology for Node8 {
    fn name(&self) -> &'static str {
        "node8"
    }
    fn net(&mut self) -> &mut FluidNetwork {
        &mut self.net
    }
    fn route(&mut self, rng: &mut Rng, _slot: usize) -> Vec<LinkId> {
        let sw = |g: usize| g / 4;
        match rng.below(4) {
            // RAM -> GPU
            0 => {
                let g = rng.below(8);
                vec![self.bridge, self.sw_down[sw(g)], self.h2g[g]]
            }
            // GPU -> RAM
            1 => {
                let g = rng.below(8);
                vec![self.g2h[g], self.sw_up[sw(g)], self.bridge]
            }
            // GPU -> GPU
            _ => {
                let a = rng.below(8);
                let b = (a + 1 + rng.below(7)) % 8;
                if let Some(l) = self.nvlink[a][b] {
                    vec![l]
                } else if sw(a) == sw(b) {
                    vec![self.g2h[a], self.h2g[b]]
                } else {
                    vec![
                        self.g2h[a],
                        self.sw_up[sw(a)],
                        self.bridge,
                        self.sw_down[sw(b)],
                        self.h2g[b],
                    ]
                }
            }
        }
    }
}

/// 64 nodes, 8 leaf switches of 8 nodes, 4 spines; ECMP by hashing (src, dst) to a spine.
struct FatTree64 {
    net: FluidNetwork,
    nic_up: Vec<LinkId>,
    nic_down: Vec<LinkId>,
    /// `leaf_up[leaf * SPINES + spine]`, likewise `leaf_down`.
    leaf_up: Vec<LinkId>,
    leaf_down: Vec<LinkId>,
}

const NODES: usize = 64;
const PER_LEAF: usize = 8;
const SPINES: usize = 4;

impl FatTree64 {
    fn new() -> Self {
        let mut net = FluidNetwork::new(SharingMode::Plain);
        let nic = |net: &mut FluidNetwork| {
            (0..NODES)
                .map(|_| net.add_link(12.5 * GB, 1.0 * US, Sharing::Shared))
                .collect::<Vec<_>>()
        };
        let nic_up = nic(&mut net);
        let nic_down = nic(&mut net);
        let leaves = NODES / PER_LEAF;
        let trunk = |net: &mut FluidNetwork| {
            (0..leaves * SPINES)
                .map(|_| net.add_link(25.0 * GB, 0.5 * US, Sharing::Shared))
                .collect::<Vec<_>>()
        };
        let leaf_up = trunk(&mut net);
        let leaf_down = trunk(&mut net);
        FatTree64 {
            net,
            nic_up,
            nic_down,
            leaf_up,
            leaf_down,
        }
    }
}

impl Topology for FatTree64 {
    fn name(&self) -> &'static str {
        "fattree64"
    }
    fn net(&mut self) -> &mut FluidNetwork {
        &mut self.net
    }
    fn route(&mut self, rng: &mut Rng, _slot: usize) -> Vec<LinkId> {
        let src = rng.below(NODES);
        let dst = (src + 1 + rng.below(NODES - 1)) % NODES;
        let (ls, ld) = (src / PER_LEAF, dst / PER_LEAF);
        if ls == ld {
            return vec![self.nic_up[src], self.nic_down[dst]];
        }
        let mut h = Rng(((src as u64) << 32) | dst as u64);
        let spine = h.below(SPINES);
        vec![
            self.nic_up[src],
            self.leaf_up[ls * SPINES + spine],
            self.leaf_down[ld * SPINES + spine],
            self.nic_down[dst],
        ]
    }
}

/// K private pairs of links (up, down); the flow filling hold slot i uses pair i only.
struct Disjoint {
    net: FluidNetwork,
    pairs: Vec<(LinkId, LinkId)>,
}

impl Disjoint {
    fn new(k: usize) -> Self {
        let mut net = FluidNetwork::new(SharingMode::Plain);
        let pairs = (0..k)
            .map(|_| {
                (
                    net.add_link(12.5 * GB, 1.0 * US, Sharing::Shared),
                    net.add_link(12.5 * GB, 1.0 * US, Sharing::Shared),
                )
            })
            .collect();
        Disjoint { net, pairs }
    }
}

impl Topology for Disjoint {
    fn name(&self) -> &'static str {
        "disjoint"
    }
    fn net(&mut self) -> &mut FluidNetwork {
        &mut self.net
    }
    fn route(&mut self, _rng: &mut Rng, slot: usize) -> Vec<LinkId> {
        let (a, b) = self.pairs[slot];
        vec![a, b]
    }
}

/// Flow size: log-uniform between 64 KiB and 64 MiB.
fn flow_bytes(rng: &mut Rng) -> f64 {
    let (lo, hi) = ((64.0 * 1024.0f64).ln(), (64.0 * 1024.0 * 1024.0f64).ln());
    (lo + (hi - lo) * rng.unit()).exp().round()
}

struct Hold<'a> {
    topo: &'a mut dyn Topology,
    rng: Rng,
    /// Hold slot of each live flow, indexed by `FlowId`.
    slot_of: Vec<usize>,
    /// Start date of each live flow, indexed by `FlowId`.
    start_s: Vec<f64>,
    /// Sum of the finished flows' times from start to finish.
    durations_s: f64,
    finished: Vec<FlowId>,
    now_s: f64,
    started: u64,
    completed: u64,
    advances: u64,
}

impl<'a> Hold<'a> {
    fn new(topo: &'a mut dyn Topology, k: usize, seed: u64) -> Self {
        let mut h = Hold {
            topo,
            rng: Rng(seed),
            slot_of: Vec::new(),
            start_s: Vec::new(),
            durations_s: 0.0,
            finished: Vec::new(),
            now_s: 0.0,
            started: 0,
            completed: 0,
            advances: 0,
        };
        for slot in 0..k {
            h.start(slot);
        }
        h
    }

    fn start(&mut self, slot: usize) {
        let route = self.topo.route(&mut self.rng, slot);
        let bytes = flow_bytes(&mut self.rng);
        let id = self
            .topo
            .net()
            .start_flow(self.now_s, FlowSpec::new(route, bytes));
        let i = id.0 as usize;
        if self.slot_of.len() <= i {
            self.slot_of.resize(i + 1, usize::MAX);
            self.start_s.resize(i + 1, f64::NAN);
        }
        self.slot_of[i] = slot;
        self.start_s[i] = self.now_s;
        self.started += 1;
    }

    /// One `advance` to the next date, then refill the finished flows' slots.
    fn step(&mut self) {
        let net = self.topo.net();
        let t = net.next_event_time().expect("K > 0 flows are live");
        net.advance(t, &mut self.finished);
        self.now_s = t;
        self.advances += 1;
        let mut done = std::mem::take(&mut self.finished);
        self.completed += done.len() as u64;
        for id in done.drain(..) {
            self.durations_s += t - self.start_s[id.0 as usize];
            let slot = self.slot_of[id.0 as usize];
            self.start(slot);
        }
        self.finished = done;
    }

    /// Flows started and not yet activated (in their latency phase).
    fn in_latency(&mut self) -> u64 {
        let n = self.slot_of.len();
        let net = self.topo.net();
        (0..n)
            .filter(|&i| net.flow_phase(FlowId(i as u32)) == FlowPhase::Latency)
            .count() as u64
    }

    /// Activations + completions so far.
    fn events(&mut self) -> u64 {
        // Every started flow activates once; those still in latency have not yet.
        self.started - self.in_latency() + self.completed
    }
}

struct Row {
    topo: &'static str,
    k: usize,
    events: u64,
    advances: u64,
    secs: f64,
    solves: u64,
    flows_solved: u64,
    links_solved: u64,
    retimes: u64,
    deferred_joins: u64,
    sim_s: f64,
    /// Mean time from start to finish of the flows that finished.
    mean_flow_s: f64,
}

fn run(topo: &mut dyn Topology, k: usize, max_events: u64, budget: Duration) -> Row {
    let name = topo.name();
    let mut h = Hold::new(topo, k, 0x5eed_0000 + k as u64);
    // Warm-up: let the initial burst (all K flows activating at once) settle into steady state.
    let warm = (4 * k as u64).max(2000).min(max_events);
    let c0 = h.completed;
    while 2 * (h.completed - c0) < warm {
        h.step();
    }
    let s0 = h.topo.net().solve_stats();
    let (e0, a0, t0_s, d0_s) = (h.events(), h.advances, h.now_s, h.durations_s);
    let begin = Instant::now();
    // Count events cheaply inside the loop: 2 per completion is exact in steady state up to the
    // flows in latency at both ends, which are corrected for with `events()` afterwards.
    let c0 = h.completed;
    loop {
        for _ in 0..32 {
            h.step();
        }
        if 2 * (h.completed - c0) >= max_events || begin.elapsed() >= budget {
            break;
        }
    }
    let secs = begin.elapsed().as_secs_f64();
    let s1 = h.topo.net().solve_stats();
    Row {
        topo: name,
        k,
        events: h.events() - e0,
        advances: h.advances - a0,
        secs,
        solves: s1.solves - s0.solves,
        flows_solved: s1.flows_solved - s0.flows_solved,
        links_solved: s1.links_solved - s0.links_solved,
        retimes: s1.retimes - s0.retimes,
        deferred_joins: s1.deferred_joins - s0.deferred_joins,
        sim_s: h.now_s - t0_s,
        mean_flow_s: (h.durations_s - d0_s) / (h.completed - c0).max(1) as f64,
    }
}

/// Rate changes an advance causes among the flows active before and after it: unchanged, changed
/// by less than 1e-9 relative (floating point noise of re-solving), or really changed; with the
/// flows active and the flows re-solved. Sums over the advances counted.
#[derive(Default)]
struct Census {
    events: u64,
    active: u64,
    solved: u64,
    same: u64,
    noise: u64,
    real: u64,
}

impl Census {
    /// Advance `net` to its next date, classifying the rates of the flows `0..ids`.
    fn step(&mut self, net: &mut FluidNetwork, ids: usize, finished: &mut Vec<FlowId>) -> f64 {
        let rate = |net: &FluidNetwork, i: usize| {
            let id = FlowId(i as u32);
            (net.flow_phase(id) == FlowPhase::Active).then(|| net.flow_rate_bytes_per_sec(id))
        };
        let before: Vec<Option<f64>> = (0..ids).map(|i| rate(net, i)).collect();
        let s0 = net.solve_stats().flows_solved;
        let t = net.next_event_time().expect("live flows");
        net.advance(t, finished);
        self.events += 1;
        self.solved += net.solve_stats().flows_solved - s0;
        for (i, r0) in before.into_iter().enumerate() {
            let (Some(r0), Some(r1)) = (r0, rate(net, i)) else {
                continue;
            };
            self.active += 1;
            if r1 == r0 {
                self.same += 1;
            } else if ((r1 - r0) / r0).abs() < 1e-9 {
                self.noise += 1;
            } else {
                self.real += 1;
            }
        }
        t
    }

    fn row(&self, case: &str) {
        let per = |x: u64| x as f64 / self.events.max(1) as f64;
        println!(
            "| {case} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} % |",
            self.events,
            per(self.active),
            per(self.solved),
            per(self.same),
            per(self.noise),
            per(self.real),
            100.0 * self.real as f64 / self.active.max(1) as f64,
        );
    }
}

/// The census over `steps` hold steps after warm-up.
fn hold_census(topo: &mut dyn Topology, k: usize, steps: u64) -> Census {
    let mut h = Hold::new(topo, k, 0x5eed_0000 + k as u64);
    let c0 = h.completed;
    while 2 * (h.completed - c0) < (4 * k as u64).max(2000) {
        h.step();
    }
    let mut census = Census::default();
    for _ in 0..steps {
        let ids = h.slot_of.len();
        let t = census.step(h.topo.net(), ids, &mut h.finished);
        h.now_s = t;
        let mut done = std::mem::take(&mut h.finished);
        h.completed += done.len() as u64;
        for id in done.drain(..) {
            let slot = h.slot_of[id.0 as usize];
            h.start(slot);
        }
        h.finished = done;
    }
    census
}

/// The census over a whole batch run (every flow started at t = 0).
fn batch_census(mut net: FluidNetwork, flows: Vec<FlowSpec<'static>>) -> Census {
    let ids = flows.len();
    for spec in flows {
        net.start_flow(0.0, spec);
    }
    let mut census = Census::default();
    let mut finished = Vec::new();
    while net.next_event_time().is_some() {
        census.step(&mut net, ids, &mut finished);
        finished.clear();
    }
    census
}

/// N hosts on a crossbar, each with a NIC up and a NIC down link; one flow from every host to
/// every other at t = 0.
fn alltoall(n: usize, rng: &mut Rng) -> (FluidNetwork, Vec<FlowSpec<'static>>) {
    let mut net = FluidNetwork::new(SharingMode::Plain);
    let up: Vec<LinkId> = (0..n)
        .map(|_| net.add_link(12.5 * GB, 1.0 * US, Sharing::Shared))
        .collect();
    let down: Vec<LinkId> = (0..n)
        .map(|_| net.add_link(12.5 * GB, 1.0 * US, Sharing::Shared))
        .collect();
    let mut flows = Vec::with_capacity(n * (n - 1));
    for (s, &from) in up.iter().enumerate() {
        for (_, &to) in down.iter().enumerate().filter(|&(d, _)| d != s) {
            flows.push(FlowSpec::new(vec![from, to], flow_bytes(rng)));
        }
    }
    (net, flows)
}

/// K flows at t = 0 on a chain of 3 shared links, each on one of its 6 contiguous sub-chains.
fn shared3(k: usize, rng: &mut Rng) -> (FluidNetwork, Vec<FlowSpec<'static>>) {
    let mut net = FluidNetwork::new(SharingMode::Plain);
    let l: Vec<LinkId> = (0..3)
        .map(|_| net.add_link(12.5 * GB, 1.0 * US, Sharing::Shared))
        .collect();
    let routes = [
        vec![l[0]],
        vec![l[1]],
        vec![l[2]],
        vec![l[0], l[1]],
        vec![l[1], l[2]],
        vec![l[0], l[1], l[2]],
    ];
    let flows = (0..k)
        .map(|_| {
            let route = routes[rng.below(routes.len())].clone();
            FlowSpec::new(route, flow_bytes(rng))
        })
        .collect();
    (net, flows)
}

struct BatchRow {
    flows: usize,
    events: u64,
    secs: f64,
    complete: bool,
    sim_s: f64,
    solves: u64,
    flows_solved: u64,
    retimes: u64,
}

/// Start every flow at t = 0, then advance from date to date until none is left or the wall
/// time exceeds `budget`.
fn run_batch(mut net: FluidNetwork, flows: Vec<FlowSpec<'static>>, budget: Duration) -> BatchRow {
    let n = flows.len();
    let begin = Instant::now();
    let ids: Vec<FlowId> = flows
        .into_iter()
        .map(|spec| net.start_flow(0.0, spec))
        .collect();
    let mut finished = Vec::new();
    let mut completed = 0u64;
    let mut now = 0.0;
    let mut complete = true;
    'run: while let Some(t) = net.next_event_time() {
        for _ in 0..16 {
            let Some(t) = net.next_event_time() else {
                break 'run;
            };
            net.advance(t, &mut finished);
            completed += finished.len() as u64;
            finished.clear();
        }
        now = t;
        if begin.elapsed() >= budget {
            complete = net.next_event_time().is_none();
            break;
        }
    }
    let secs = begin.elapsed().as_secs_f64();
    // Flows still in latency have not activated; finished ones may have had their ids reused,
    // which only happens after a completion, so count activations from what is left.
    let in_latency = if complete {
        0
    } else {
        ids.iter()
            .filter(|&&id| net.flow_phase(id) == FlowPhase::Latency)
            .count()
    };
    let st = net.solve_stats();
    BatchRow {
        flows: n,
        events: (n - in_latency) as u64 + completed,
        secs,
        complete,
        sim_s: now,
        solves: st.solves,
        flows_solved: st.flows_solved,
        retimes: st.retimes,
    }
}

/// Run the batch cases `(label, size)` of one suite that pass the filters, printing a table.
fn batch_suite(
    suite: &str,
    sizes: &[usize],
    build: fn(usize, &mut Rng) -> (FluidNetwork, Vec<FlowSpec<'static>>),
    keep: &dyn Fn(&str) -> bool,
    budget: Duration,
) {
    let mut header = false;
    let mut prev: Option<(f64, f64)> = None;
    for &size in sizes {
        if !keep(&format!("{suite} {size}")) {
            continue;
        }
        if !header {
            println!(
                "| case | flows | flow events | wall s | flow events/s | done | sim s | \
                 flows/solve | retimes/event | exponent |"
            );
            println!("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|");
            header = true;
        }
        let (net, flows) = build(size, &mut Rng(0x5eed_0a11 + size as u64));
        let r = run_batch(net, flows, budget);
        let exponent = match common::growth(prev.filter(|_| r.complete), r.flows as f64, r.secs) {
            g if g.is_empty() => "–".to_string(),
            g => g,
        };
        println!(
            "| {suite} {size} | {} | {} | {:.3} | {:.0} | {} | {:.4} | {:.1} | {:.2} | {exponent} |",
            r.flows,
            r.events,
            r.secs,
            r.events as f64 / r.secs,
            if r.complete { "yes" } else { "stopped" },
            r.sim_s,
            r.flows_solved as f64 / r.solves.max(1) as f64,
            r.retimes as f64 / r.events.max(1) as f64,
        );
        prev = r.complete.then_some((r.flows as f64, r.secs));
    }
}

/// The delays `--reshare` tries, in seconds (0: exact).
const RESHARE_DELAYS_S: [f64; 4] = [0.0, 1e-5, 1e-4, 1e-3];

/// `--reshare`: the all-to-all with the re-share after completions put off by each delay of
/// [`RESHARE_DELAYS_S`]: wall time, re-solves, and each flow's finish date against the exact
/// run's (when the exact run finished within the budget).
fn reshare_suite(hosts: &[usize], keep: &dyn Fn(&str) -> bool, budget: Duration) {
    println!(
        "| case | flows | delay s | wall s | re-solves | makespan s | makespan vs exact | \
         mean finish shift | max finish shift (s) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &n in hosts {
        let mut exact: Option<Vec<f64>> = None;
        for delay_s in RESHARE_DELAYS_S {
            let case = format!("alltoall {n} delay {delay_s}");
            if !keep(&case) {
                continue;
            }
            let (mut net, flows) = alltoall(n, &mut Rng(0x5eed_0a11 + n as u64));
            if delay_s == 0.0
                && flows.len() as f64 * flows.len() as f64 > 5e7 * budget.as_secs_f64()
            {
                // Exact costs about 2e-8 s × F² on the development machine (78.5 s for 256
                // hosts; 1 024 hosts would take hours): beyond the budget.
                println!(
                    "| alltoall {n} | {} | 0 (exact) | skipped | | | | | |",
                    flows.len()
                );
                continue;
            }
            net.set_reshare_delay_s(delay_s);
            let begin = Instant::now();
            let done = run_flow_set(&mut net, flows.into_iter().map(|f| (0.0, f)).collect());
            let secs = begin.elapsed().as_secs_f64();
            let makespan = done.iter().copied().fold(0.0, f64::max);
            let solves = net.solve_stats().solves;
            let versus = |exact: &[f64]| {
                let ref_makespan = exact.iter().copied().fold(0.0, f64::max);
                let shifts: Vec<f64> = done.iter().zip(exact).map(|(d, e)| d - e).collect();
                let mean = shifts.iter().sum::<f64>() / shifts.len() as f64;
                let max = shifts.iter().copied().fold(0.0, |m: f64, s| m.max(s.abs()));
                (
                    format!("{:+.3} %", 100.0 * (makespan / ref_makespan - 1.0)),
                    format!("{:+.3} %", 100.0 * mean / ref_makespan),
                    format!("{max:.2e}"),
                )
            };
            let (m, mean, max) = exact
                .as_deref()
                .map_or_else(|| ("–".into(), "–".into(), "–".into()), versus);
            println!(
                "| alltoall {n} | {} | {delay_s:e} | {secs:.3} | {solves} | {makespan:.6} | {m} | \
                 {mean} | {max} |",
                done.len()
            );
            if delay_s == 0.0 {
                exact = Some(done);
            }
        }
    }
}

/// `--reshare`, steady state: hold `k` flows on node8 and fattree64 with the re-share put off by
/// each delay of [`RESHARE_DELAYS_S`]: flow events per second of wall time, re-solves and joins
/// put off per event, and the simulated traffic against the exact run's: flow events per
/// simulated second and the mean time a flow takes from start to finish.
fn reshare_hold_suite(k: usize, keep: &dyn Fn(&str) -> bool, max_events: u64, budget: Duration) {
    println!(
        "| case | K | delay s | events | wall s | flow events/s | re-solves/event | \
         joins put off/event | events per sim s | vs exact | mean flow s | vs exact |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for name in ["node8", "fattree64"] {
        let mut exact: Option<(f64, f64)> = None;
        for delay_s in RESHARE_DELAYS_S {
            if !keep(&format!("hold {name} {k} delay {delay_s}")) {
                continue;
            }
            let mut topo: Box<dyn Topology> = match name {
                "node8" => Box::new(Node8::new()),
                _ => Box::new(FatTree64::new()),
            };
            topo.net().set_reshare_delay_s(delay_s);
            let r = run(topo.as_mut(), k, max_events, budget);
            let per_event = |x: u64| x as f64 / r.events as f64;
            let throughput = r.events as f64 / r.sim_s;
            let versus = |now: f64, exact: Option<f64>| {
                exact.map_or("–".into(), |e| {
                    format!("{:+.2} %", 100.0 * (now / e - 1.0))
                })
            };
            println!(
                "| hold {name} | {k} | {delay_s:e} | {} | {:.2} | {:.0} | {:.3} | {:.3} | {:.4e} | \
                 {} | {:.4e} | {} |",
                r.events,
                r.secs,
                r.events as f64 / r.secs,
                per_event(r.solves),
                per_event(r.deferred_joins),
                throughput,
                versus(throughput, exact.map(|e| e.0)),
                r.mean_flow_s,
                versus(r.mean_flow_s, exact.map(|e| e.1)),
            );
            if delay_s == 0.0 {
                exact = Some((throughput, r.mean_flow_s));
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let filters: Vec<&str> = args
        .iter()
        .enumerate()
        .filter(|&(i, a)| !a.starts_with('-') && (i == 0 || args[i - 1] != "--budget"))
        .map(|(_, a)| a.as_str())
        .collect();
    let keep = |label: &str| {
        filters.iter().all(|f| {
            label
                .split(' ')
                .any(|w| w == *f || (w.contains(*f) && f.parse::<usize>().is_err()))
        })
    };
    if args.iter().any(|a| a == "--census") {
        println!(
            "| case | advances | flows active/event | flows re-solved/event | unchanged/event | \
             noise-only changes/event | real changes/event | real changes / active |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|");
        let steps = if bench { 2000 } else { 50 };
        for k in [100usize, 1000, 10_000] {
            let mut topos: [Box<dyn Topology>; 2] =
                [Box::new(Node8::new()), Box::new(FatTree64::new())];
            for topo in &mut topos {
                let case = format!("hold {} {k}", topo.name());
                if keep(&case) {
                    hold_census(topo.as_mut(), k, steps).row(&case);
                }
            }
        }
        for &n in if bench {
            &[32usize, 64, 128][..]
        } else {
            &[8, 16][..]
        } {
            let case = format!("alltoall {n}");
            if keep(&case) {
                let (net, flows) = alltoall(n, &mut Rng(0x5eed_0a11 + n as u64));
                batch_census(net, flows).row(&case);
            }
        }
        return;
    }
    let (max_events, budget) = if bench {
        (200_000, Duration::from_secs(8))
    } else {
        (400, Duration::from_millis(200))
    };
    let batch_budget = args
        .iter()
        .position(|a| a == "--budget")
        .and_then(|i| args.get(i + 1))
        .map_or(Duration::from_secs(600), |s| {
            Duration::from_secs_f64(s.parse().expect("--budget takes a number of seconds"))
        });
    if args.iter().any(|a| a == "--reshare") {
        let hosts: &[usize] = if bench {
            &[64, 128, 256, 1024]
        } else {
            &[8, 16]
        };
        reshare_suite(hosts, &keep, batch_budget);
        let (k, max_events, budget) = if bench {
            (10_000, 200_000, Duration::from_secs(30))
        } else {
            (100, 400, Duration::from_millis(200))
        };
        reshare_hold_suite(k, &keep, max_events, budget);
        return;
    }
    let (hosts, shared): (&[usize], &[usize]) = if bench {
        (&[64, 128, 256, 1024], &[10_000, 20_000, 50_000])
    } else {
        (&[8, 16], &[300])
    };
    batch_suite("alltoall", hosts, alltoall, &keep, batch_budget);
    batch_suite("shared3", shared, shared3, &keep, batch_budget);

    let mut header = false;
    for topo_name in ["node8", "fattree64", "disjoint"] {
        let mut prev = None;
        for k in [10usize, 100, 1000, 10_000] {
            if !keep(&format!("hold {topo_name} {k}")) {
                continue;
            }
            if !header {
                println!(
                    "| topology | K | events | wall s | flow events/s | ns/event | \
                     events/advance | flows/solve | links/solve | retimes/event | sim s | growth |"
                );
                println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
                header = true;
            }
            let mut topo: Box<dyn Topology> = match topo_name {
                "node8" => Box::new(Node8::new()),
                "fattree64" => Box::new(FatTree64::new()),
                _ => Box::new(Disjoint::new(k)),
            };
            let r = run(topo.as_mut(), k, max_events, budget);
            let per_solve = |x: u64| x as f64 / r.solves.max(1) as f64;
            let ns_per_event = r.secs * 1e9 / r.events as f64;
            println!(
                "| {} | {} | {} | {:.2} | {:.0} | {:.0} | {:.2} | {:.1} | {:.1} | {:.2} | {:.3e} | {} |",
                r.topo,
                r.k,
                r.events,
                r.secs,
                r.events as f64 / r.secs,
                ns_per_event,
                r.events as f64 / r.advances as f64,
                per_solve(r.flows_solved),
                per_solve(r.links_solved),
                r.retimes as f64 / r.events as f64,
                r.sim_s,
                common::growth(prev, k as f64, ns_per_event),
            );
            prev = Some((k as f64, ns_per_event));
        }
    }
}
