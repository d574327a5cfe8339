//! Where a run happens: one machine, or a cluster of copies of a node machine whose nodes each
//! hold one or more ranks (StarPU-MPI processes), each rank running its own runtime on its share
//! of the node's devices.
//!
//! Ids seen by observers and reports are global: node k's i-th memory node is `k·M + i` (M
//! memory nodes per node), and workers are numbered rank by rank. Inside a rank, the scheduler
//! sees local ids (workers `0..`, the node machine's memory nodes), as on one machine.

use std::ops::Range;

use hetsim_core::error::InputError;
use hetsim_core::fluid::FluidNetwork;
use hetsim_platform::cluster::{Cluster, ClusterNetwork, Endpoint, NodeId};
use hetsim_platform::machine::{Machine, MemKind, MemNodeId};

use super::transfer::Paths;
use super::{RunConfig, Worker, WorkerId};

/// A memory node of the run, as observers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryInfo {
    /// Its name ("RAM", "CUDA0"; "n3.CUDA0" on a cluster of several nodes).
    pub name: String,
    /// RAM or device memory.
    pub kind: MemKind,
    /// The node it belongs to.
    pub node: u32,
    /// Capacity.
    pub capacity_bytes: u64,
}

/// A rank of the run: a runtime instance with its own workers, data and scheduler.
#[derive(Debug, Clone, PartialEq)]
pub struct RankInfo {
    /// The node it runs on.
    pub node: u32,
    /// Its workers' global ids.
    pub workers: Range<u32>,
}

/// The shape of a run, for observers: nodes, memory nodes, ranks and workers, with global ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Node names: the machine's name on one machine, "n0", "n1", ... on a cluster.
    pub nodes: Vec<String>,
    /// Memory nodes by global id.
    pub memories: Vec<MemoryInfo>,
    /// Ranks by id.
    pub ranks: Vec<RankInfo>,
    /// Workers by global id; `memory` is a global memory node id.
    pub workers: Vec<Worker>,
    /// Names of the fluid links, by link index.
    pub links: Vec<String>,
    /// The node each link belongs to, by link index: a node's own links and its NICs; `None`
    /// for the switches' links between nodes.
    pub link_nodes: Vec<Option<u32>>,
}

impl Layout {
    /// The layout of a run on one machine: one node, one rank with `workers`.
    pub fn of_machine(machine: &Machine, workers: &[Worker], links: &[String]) -> Self {
        Layout {
            nodes: vec![machine.name().to_string()],
            memories: machine
                .memory_nodes()
                .iter()
                .map(|m| MemoryInfo {
                    name: m.name.clone(),
                    kind: m.kind,
                    node: 0,
                    capacity_bytes: m.capacity_bytes,
                })
                .collect(),
            ranks: vec![RankInfo {
                node: 0,
                workers: 0..workers.len() as u32,
            }],
            workers: workers.to_vec(),
            links: links.to_vec(),
            link_nodes: vec![Some(0); links.len()],
        }
    }

    /// Whether the run has several nodes or ranks.
    pub fn is_cluster(&self) -> bool {
        self.nodes.len() > 1 || self.ranks.len() > 1
    }

    /// `name` (of a worker, memory node or link of `node`) without the node's prefix: `CUDA0`
    /// for `n3.CUDA0`. On one machine names have no prefix and are returned as they are.
    pub fn local_name<'a>(&self, node: u32, name: &'a str) -> &'a str {
        if !self.is_cluster() {
            return name;
        }
        self.nodes
            .get(node as usize)
            .and_then(|n| name.strip_prefix(n.as_str())?.strip_prefix('.'))
            .unwrap_or(name)
    }

    /// The rank whose worker `w` (global id) is.
    pub fn rank_of_worker(&self, w: WorkerId) -> usize {
        self.ranks
            .partition_point(|r| r.workers.end <= w.0)
            .min(self.ranks.len() - 1)
    }
}

/// One rank's share of its node and how its runtime reaches the network.
#[derive(Debug)]
pub(crate) struct RankSetup {
    pub node: u32,
    /// Local workers (memory ids of the node machine).
    pub workers: Vec<Worker>,
    pub paths: Paths,
}

/// The engine's network and every rank's setup.
pub(crate) struct Setup {
    pub net: FluidNetwork,
    pub cluster_net: Option<ClusterNetwork>,
    pub ranks: Vec<RankSetup>,
    pub layout: Layout,
    /// Memory nodes per node.
    pub mem_per_node: u32,
}

/// How many cores and which GPUs (indices into the node machine's GPU list) a rank gets.
fn share(count: u32, ranks: u32, k: u32) -> Range<u32> {
    let per = count / ranks;
    k * per..(k + 1) * per
}

/// The cores of rank `k` of `ranks` on a node of `cores` cores: an equal share, or one core
/// (shared with other ranks, round robin) when the node has fewer cores than ranks.
fn core_share(cores: u32, ranks: u32, k: u32) -> Range<u32> {
    if cores == 0 {
        return 0..0;
    }
    if cores < ranks {
        let c = k % cores;
        return c..c + 1;
    }
    share(cores, ranks, k)
}

/// One machine: one rank with all of it.
pub(crate) fn machine_setup(machine: &Machine, config: &RunConfig) -> Result<Setup, InputError> {
    let mut net = FluidNetwork::new(config.sharing);
    net.set_reshare_delay_s(config.reshare_delay_s);
    let paths = Paths::new(machine, &mut net);
    // A single machine's transfers take only its routes: the links no flow can be limited by
    // are left out of the re-shares.
    net.declare_routes(&paths.fluid_routes());
    let workers = super::runnable::workers_of(machine, config)?;
    let layout = Layout::of_machine(machine, &workers, &paths.link_names);
    Ok(Setup {
        net,
        cluster_net: None,
        ranks: vec![RankSetup {
            node: 0,
            workers,
            paths,
        }],
        layout,
        mem_per_node: machine.memory_nodes().len() as u32,
    })
}

/// A cluster with `ranks_per_node` ranks on each node: rank r on node r / R, with the R-th
/// share of the node's used GPUs and cores; on a cluster of several nodes each rank gives one
/// of its cores to StarPU-MPI's progress thread unless the CPU worker count is set.
pub(crate) fn cluster_setup(
    cluster: &Cluster,
    ranks_per_node: u32,
    config: &RunConfig,
) -> Result<Setup, InputError> {
    let machine = cluster.node_machine();
    let r = ranks_per_node.max(1);
    let g = cluster.gpus_per_node();
    if r > 1 && !g.is_multiple_of(r) {
        return Err(InputError::new(format!(
            "{r} ranks per node cannot share {g} GPUs evenly: expected a divisor of {g}"
        ))
        .at_field("machine.ranks_per_node"));
    }
    let cores = machine.cpu_cores();
    let mut cnet = ClusterNetwork::new(cluster, config.sharing)?;
    let mut net_names = Vec::new();
    let mut link_nodes = Vec::new();
    let node_names: Vec<String> = (0..cluster.nodes()).map(|n| format!("n{n}")).collect();
    let several = cluster.nodes() > 1;
    let prefix = |n: u32, name: &str| {
        if several {
            format!("n{n}.{name}")
        } else {
            name.to_string()
        }
    };
    // With several ranks per node, a worker is named after its rank too: ranks of a node with
    // fewer cores than ranks share them.
    let worker_name = |rank: u32, n: u32, name: &str| {
        if r > 1 {
            prefix(n, &format!("r{rank}.{name}"))
        } else {
            prefix(n, name)
        }
    };
    for n in 0..cluster.nodes() {
        let mut names = Vec::new();
        let mut scratch = FluidNetwork::new(config.sharing);
        hetsim_platform::cluster::network::add_machine_links(
            &mut scratch,
            machine,
            Some(&mut names),
        );
        net_names.extend(names.iter().map(|l| prefix(n, l)));
        link_nodes.resize(net_names.len(), Some(n));
    }
    for (name, node) in cnet.internode_link_names() {
        net_names.push(name);
        link_nodes.push(node.map(|n| n.0));
    }
    let mem_per_node = machine.memory_nodes().len() as u32;
    let mut memories = Vec::new();
    for n in 0..cluster.nodes() {
        for m in machine.memory_nodes() {
            memories.push(MemoryInfo {
                name: prefix(n, &m.name),
                kind: m.kind,
                node: n,
                capacity_bytes: m.capacity_bytes,
            });
        }
    }
    let mpi_core = several && config.ncpu.is_none();
    let mut ranks = Vec::new();
    let mut infos = Vec::new();
    let mut global = Vec::new();
    for rank in 0..cluster.nodes() * r {
        let node = rank / r;
        let k = rank % r;
        let gpus = share(g, r, k);
        let core_range = core_share(cores, r, k);
        let workers =
            super::runnable::workers_in(machine, config, gpus, core_range, u32::from(mpi_core))?;
        let base = global.len() as u32;
        for w in &workers {
            global.push(Worker {
                id: WorkerId(base + w.id.0),
                name: worker_name(rank, node, &w.name),
                memory: MemNodeId(node * mem_per_node + w.memory.0),
                ..w.clone()
            });
        }
        infos.push(RankInfo {
            node,
            workers: base..global.len() as u32,
        });
        ranks.push(RankSetup {
            node,
            paths: Paths::of_node(machine, &cnet, NodeId(node)),
            workers,
        });
    }
    let layout = Layout {
        nodes: node_names,
        memories,
        ranks: infos,
        workers: global,
        links: net_names,
        link_nodes,
    };
    // The engine runs the network; the cluster's copy keeps only its routes.
    let mut net = std::mem::replace(&mut cnet.net, FluidNetwork::new(config.sharing));
    net.set_reshare_delay_s(config.reshare_delay_s);
    Ok(Setup {
        net,
        cluster_net: Some(cnet),
        ranks,
        layout,
        mem_per_node,
    })
}

/// The endpoint of a rank's memory node.
pub(crate) fn endpoint(node: u32, mem: MemNodeId) -> Endpoint {
    Endpoint {
        node: NodeId(node),
        mem,
    }
}
