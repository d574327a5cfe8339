//! Steady-state "hold" benchmark of the fluid network alone (issue 2).
//!
//! K flows are kept live: whenever flows finish, as many new ones are started at that date on
//! random routes (seeded splitmix64, so every run does the same work), with random sizes. The
//! figure of merit is flow events (activations + completions) per second of wall time, and the
//! mean size of the component re-solved per solve, to show that the cost follows the part of the
//! network an event touches, not the number of live flows.
//!
//! Topologies:
//! - `node8`: one node, 8 GPUs behind two PCIe switches and a host bridge, NVLink peer links;
//! - `fattree64`: 64 nodes on a two-level fat tree (8 leaves of 8 nodes, 4 spines);
//! - `disjoint`: every flow on its own private pair of links (no sharing at all).
//!
//! Run: `cargo bench -p hetsim-benches --bench network` (all), or `cargo bench -p hetsim-benches --bench network -- disjoint 100`
//! to keep only the configurations whose name contains every word given. Without `--bench`
//! (as `cargo test --benches` runs it) every configuration runs a few hundred events only.

use std::time::{Duration, Instant};

use hetsim::fluid::{FlowId, FlowPhase, FlowSpec, FluidNetwork, LinkId, Sharing, SharingMode};

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
        }
        self.slot_of[i] = slot;
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
    sim_s: f64,
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
    let (e0, a0, t0_s) = (h.events(), h.advances, h.now_s);
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
        sim_s: h.now_s - t0_s,
    }
}

/// Over `events` steps after warm-up, classify the rate changes an event causes among the flows
/// that were active before and after it: unchanged, changed by less than 1e-9 relative (floating
/// point noise of re-running the solver, yet each such flow is re-timed), or really changed.
fn rate_census(topo: &mut dyn Topology, k: usize, steps: u64) -> (u64, u64, u64) {
    let mut h = Hold::new(topo, k, 0x5eed_0000 + k as u64);
    let c0 = h.completed;
    while 2 * (h.completed - c0) < (4 * k as u64).max(2000) {
        h.step();
    }
    let (mut same, mut noise, mut real) = (0, 0, 0);
    let mut before: Vec<f64> = Vec::new();
    for _ in 0..steps {
        let net = h.topo.net();
        before.clear();
        before.extend((0..h.slot_of.len()).map(|i| {
            let id = FlowId(i as u32);
            if net.flow_phase(id) == FlowPhase::Active {
                net.flow_rate_bytes_per_sec(id)
            } else {
                f64::NAN
            }
        }));
        let t = net.next_event_time().expect("live flows");
        net.advance(t, &mut h.finished);
        for (i, &r0) in before.iter().enumerate() {
            let id = FlowId(i as u32);
            if r0.is_nan() || net.flow_phase(id) != FlowPhase::Active {
                continue;
            }
            let r1 = net.flow_rate_bytes_per_sec(id);
            if r1 == r0 {
                same += 1;
            } else if ((r1 - r0) / r0).abs() < 1e-9 {
                noise += 1;
            } else {
                real += 1;
            }
        }
        h.now_s = t;
        let mut done = std::mem::take(&mut h.finished);
        h.completed += done.len() as u64;
        for id in done.drain(..) {
            let slot = h.slot_of[id.0 as usize];
            h.start(slot);
        }
        h.finished = done;
    }
    (same, noise, real)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    if args.iter().any(|a| a == "--census") {
        println!(
            "| topology | K | flows unchanged/event | noise-only changes/event | real changes/event |"
        );
        println!("|---|---:|---:|---:|---:|");
        for k in [100usize, 1000] {
            let steps = if bench { 2000 } else { 50 };
            let mut topos: [Box<dyn Topology>; 2] =
                [Box::new(Node8::new()), Box::new(FatTree64::new())];
            for topo in &mut topos {
                let name = topo.name();
                let (same, noise, real) = rate_census(topo.as_mut(), k, steps);
                let per = |x: u64| x as f64 / steps as f64;
                println!(
                    "| {name} | {k} | {:.1} | {:.1} | {:.1} |",
                    per(same),
                    per(noise),
                    per(real)
                );
            }
        }
        return;
    }
    let (max_events, budget) = if bench {
        (200_000, Duration::from_secs(8))
    } else {
        (400, Duration::from_millis(200))
    };

    println!(
        "| topology | K | events | wall s | flow events/s | ns/event | events/advance | \
         flows/solve | links/solve | retimes/event | sim s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for topo_name in ["node8", "fattree64", "disjoint"] {
        for k in [10usize, 100, 1000, 10_000] {
            let label = format!("{topo_name} {k}");
            if !filters.iter().all(|f| {
                label
                    .split(' ')
                    .any(|w| w == *f || (w.contains(*f) && f.parse::<usize>().is_err()))
            }) {
                continue;
            }
            let mut topo: Box<dyn Topology> = match topo_name {
                "node8" => Box::new(Node8::new()),
                "fattree64" => Box::new(FatTree64::new()),
                _ => Box::new(Disjoint::new(k)),
            };
            let r = run(topo.as_mut(), k, max_events, budget);
            let per_solve = |x: u64| x as f64 / r.solves.max(1) as f64;
            println!(
                "| {} | {} | {} | {:.2} | {:.0} | {:.0} | {:.2} | {:.1} | {:.1} | {:.2} | {:.3e} |",
                r.topo,
                r.k,
                r.events,
                r.secs,
                r.events as f64 / r.secs,
                r.secs * 1e9 / r.events as f64,
                r.events as f64 / r.advances as f64,
                per_solve(r.flows_solved),
                per_solve(r.links_solved),
                r.retimes as f64 / r.events as f64,
                r.sim_s,
            );
        }
    }
}
