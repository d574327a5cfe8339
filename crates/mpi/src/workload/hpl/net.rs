//! The time of one message alone on the cluster's network, following the runtime's routing of
//! a payload message between two GPUs (`hetsim_runtime`'s message steps): inside a node the
//! node machine's route, or two steps through its RAM; between nodes one flow with GPU-direct,
//! otherwise three store-and-forward steps (GPU → RAM, RAM → RAM over the NICs, RAM → GPU).
//! Each fluid step takes its links' latencies plus the bytes at its narrowest link.

use hetsim_core::fluid::{LinkId, SharingMode};
use hetsim_platform::cluster::{Cluster, ClusterNetwork, Endpoint, NodeId, OverheadTable, Segment};
use hetsim_platform::machine::{MemKind, MemNodeId};

use crate::RankId;

/// A step's cost: latency, s, and rate, B/s (`None`: a transfer model).
#[derive(Debug, Clone)]
enum Step {
    Fluid { latency_s: f64, bytes_per_sec: f64 },
    Model(hetsim_platform::machine::TransferModel),
}

impl Step {
    fn secs(&self, bytes: f64) -> f64 {
        match self {
            Step::Fluid {
                latency_s,
                bytes_per_sec,
            } => latency_s + bytes / bytes_per_sec,
            Step::Model(m) => m.duration_secs(bytes),
        }
    }
}

/// Idle-network message times between the GPUs of a cluster's ranks.
pub(super) struct Wires {
    gpus_per_node: u32,
    /// Same node: per (GPU a, GPU b) its steps; other node: per (a, b).
    same: Vec<Vec<Step>>,
    other: Vec<Vec<Step>>,
    /// The cluster's MPI overheads (o_s, o_r).
    overheads: OverheadTable,
}

impl Wires {
    /// The steps for every pair of GPU indices, on the same node and on two different nodes
    /// (nodes are copies of one machine behind one switch: which two does not matter, except
    /// across a fat tree's spine, where the first leaf's neighbour stands for all).
    pub fn new(cluster: &Cluster) -> Wires {
        let g = cluster.gpus_per_node();
        let machine = cluster.node_machine();
        let net = ClusterNetwork::new(cluster, SharingMode::Plain).ok();
        let mem = |i: u32| machine.gpus().get(i as usize).map(|x| x.memory);
        let ram = machine
            .memory_nodes()
            .iter()
            .find(|m| m.kind == MemKind::Ram)
            .map_or(MemNodeId(0), |m| m.id);
        let mut same = Vec::with_capacity((g * g) as usize);
        let mut other = Vec::with_capacity((g * g) as usize);
        for a in 0..g {
            for b in 0..g {
                let (Some(ma), Some(mb), Some(net)) = (mem(a), mem(b), net.as_ref()) else {
                    same.push(Vec::new());
                    other.push(Vec::new());
                    continue;
                };
                same.push(intra_steps(net, NodeId(0), ma, mb, ram));
                other.push(if cluster.nodes() > 1 {
                    inter_steps(cluster, net, ma, mb, ram)
                } else {
                    Vec::new()
                });
            }
        }
        Wires {
            gpus_per_node: g,
            same,
            other,
            overheads: cluster.overheads().clone(),
        }
    }

    /// Seconds for `bytes` from `a`'s GPU to `b`'s on an idle network.
    pub fn alone_secs(&self, a: RankId, b: RankId, bytes: f64) -> f64 {
        self.steps(a, b).iter().map(|s| s.secs(bytes)).sum()
    }

    /// The sender's overhead o_s, then [`Wires::alone_secs`], then the receiver's o_r: a
    /// message from the send call to the receive's completion (as the runtime charges them).
    pub fn message_secs(&self, a: RankId, b: RankId, bytes: f64) -> f64 {
        if a == b {
            return 0.0;
        }
        let o = &self.overheads;
        o.send_s(bytes) + self.alone_secs(a, b, bytes) + o.recv_s(bytes)
    }

    fn steps(&self, a: RankId, b: RankId) -> &[Step] {
        if a == b {
            return &[];
        }
        let g = self.gpus_per_node;
        let (na, ga) = (a.0 / g, a.0 % g);
        let (nb, gb) = (b.0 / g, b.0 % g);
        if na == nb {
            &self.same[(ga * g + gb) as usize]
        } else {
            &self.other[(ga * g + gb) as usize]
        }
    }
}

fn fluid(net: &ClusterNetwork, links: &[LinkId]) -> Step {
    let rate = links
        .iter()
        .map(|&l| net.net.link_capacity_bytes_per_sec(l))
        .fold(f64::INFINITY, f64::min);
    Step::Fluid {
        latency_s: net.net.route_latency_s(links),
        bytes_per_sec: rate,
    }
}

fn step(net: &ClusterNetwork, s: Segment) -> Step {
    match s {
        Segment::Fluid(ls) => fluid(net, &ls),
        Segment::Model(m) => Step::Model(m),
    }
}

fn intra_steps(
    net: &ClusterNetwork,
    node: NodeId,
    a: MemNodeId,
    b: MemNodeId,
    ram: MemNodeId,
) -> Vec<Step> {
    if a == b {
        return Vec::new();
    }
    if let Some(s) = net.intra(node, a, b) {
        return vec![step(net, s)];
    }
    match (net.intra(node, a, ram), net.intra(node, ram, b)) {
        (Some(x), Some(y)) => vec![step(net, x), step(net, y)],
        _ => Vec::new(),
    }
}

fn inter_steps(
    cluster: &Cluster,
    net: &ClusterNetwork,
    a: MemNodeId,
    b: MemNodeId,
    ram: MemNodeId,
) -> Vec<Step> {
    let (na, nb) = (NodeId(0), NodeId(1));
    if cluster.gpu_direct()
        && let Some(r) = net.route(Endpoint { node: na, mem: a }, Endpoint { node: nb, mem: b })
    {
        return vec![fluid(net, &r)];
    }
    let attach = net.attach();
    let mut v = intra_steps(net, na, a, attach, ram);
    if let Some(h) = net.inter_host(na, nb) {
        v.push(fluid(net, &h));
    }
    v.extend(intra_steps(net, nb, attach, b, ram));
    v
}
