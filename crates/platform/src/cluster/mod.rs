//! Clusters: K identical nodes (a machine file each) joined by NICs and a switch.
//!
//! A cluster file names a node machine file and describes the network between nodes; the node
//! and GPU counts are parameters, so one file describes 1 to thousands of nodes without listing
//! them, and routes between nodes are computed, never stored pair by pair. A plain machine file
//! is a cluster of one node without a network.
//!
//! Format: `docs/cluster-format.md`.

use std::fmt;
use std::path::Path;

use crate::machine::{GpuId, Machine, MemNodeId};
use hetsim_core::error::InputError;
use hetsim_core::files::{InputFiles, RoleFile};

/// An MPI rank: by default one per GPU, rank r on node r / gpus_per_node, GPU r % gpus_per_node
/// (see [`Cluster::rank_location`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RankId(pub u32);

impl RankId {
    /// The index as `usize`, for slices.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for RankId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {}", self.0)
    }
}

mod file;
pub mod network;
mod summary;

pub use network::{ClusterNetwork, Endpoint, Segment};

/// Index of a node, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index as `usize`, for slices.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// The network interface(s) of every node.
#[derive(Debug, Clone, PartialEq)]
pub struct Nic {
    /// Capacity per direction of one NIC link (full duplex).
    pub bandwidth_bytes_per_sec: f64,
    /// Latency paid once per message crossing it.
    pub latency_s: f64,
    /// NIC links per node; a node's messages share them.
    pub count: u32,
    /// The node's memory node the NIC hangs off (its RAM).
    pub attach: MemNodeId,
}

/// What joins the nodes' NICs.
#[derive(Debug, Clone, PartialEq)]
pub enum Switch {
    /// One non-blocking crossbar: only the NIC links are shared.
    Crossbar {
        /// Latency of a crossing.
        latency_s: f64,
    },
    /// A two-level fat tree: `nodes_per_leaf` nodes on each leaf switch, each leaf joined to
    /// the spine by links of total capacity `nodes_per_leaf × NIC bandwidth / oversubscription`.
    FatTree {
        /// Nodes attached to one leaf switch.
        nodes_per_leaf: u32,
        /// Ratio of a leaf's down capacity to its up capacity (1 = full bisection).
        oversubscription: f64,
        /// Latency of one switch crossing.
        latency_s: f64,
    },
}

/// Per-message software overheads as a function of size (mHLogGP's o_s and o_r, Liu et al. 2012
/// §3.1), linearly interpolated between rows and held constant beyond the last.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OverheadTable {
    /// (bytes, o_s s, o_r s), sorted by bytes, sizes distinct.
    rows: Vec<(f64, f64, f64)>,
}

impl OverheadTable {
    /// A table from rows (bytes, o_s s, o_r s). Sizes must increase strictly; values must be
    /// finite and ≥ 0.
    pub fn new(rows: Vec<(f64, f64, f64)>) -> Result<Self, InputError> {
        for (i, r) in rows.iter().enumerate() {
            if ![r.0, r.1, r.2].iter().all(|v| v.is_finite() && *v >= 0.0) {
                return Err(InputError::new(format!(
                    "overhead row {} ({}, {}, {}): expected finite values >= 0",
                    i + 1,
                    r.0,
                    r.1,
                    r.2
                )));
            }
            if i > 0 && rows[i - 1].0 >= r.0 {
                return Err(InputError::new(format!(
                    "overhead row {}: size {} does not increase (previous row: {})",
                    i + 1,
                    r.0,
                    rows[i - 1].0
                )));
            }
        }
        Ok(OverheadTable { rows })
    }

    /// The rows (bytes, o_s s, o_r s).
    pub fn rows(&self) -> &[(f64, f64, f64)] {
        &self.rows
    }

    /// Sender overhead o_s for a message of `bytes` (0 without a table).
    pub fn send_s(&self, bytes: f64) -> f64 {
        self.interpolate(bytes, |r| r.1)
    }

    /// Receiver overhead o_r for a message of `bytes` (0 without a table).
    pub fn recv_s(&self, bytes: f64) -> f64 {
        self.interpolate(bytes, |r| r.2)
    }

    fn interpolate(&self, bytes: f64, col: impl Fn(&(f64, f64, f64)) -> f64) -> f64 {
        let rows = &self.rows;
        match rows.len() {
            0 => 0.0,
            _ if bytes <= rows[0].0 => col(&rows[0]),
            n if bytes >= rows[n - 1].0 => col(&rows[n - 1]),
            _ => {
                let i = rows.partition_point(|r| r.0 <= bytes);
                let (a, b) = (&rows[i - 1], &rows[i]);
                let t = (bytes - a.0) / (b.0 - a.0);
                col(a) + t * (col(b) - col(a))
            }
        }
    }
}

/// The most nodes a cluster may have (`[machine] nodes`, `cluster.nodes`).
pub const MAX_NODES: u32 = 1 << 16;

/// The most NICs a node may have (`nic.count`; DGX-class nodes have 8 to 10).
pub const MAX_NICS: u32 = 16;

/// A validated cluster: `nodes` copies of one node machine, of which `gpus_per_node` GPUs are
/// used, joined by a network.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    name: String,
    node: Machine,
    nodes: u32,
    gpus_per_node: u32,
    nic: Option<Nic>,
    switch: Switch,
    gpu_direct: bool,
    overheads: OverheadTable,
    /// The cluster file and its overheads CSV (none for a plain machine file).
    sources: InputFiles,
}

impl Cluster {
    /// One node, no network: a plain machine file seen as a cluster. All its GPUs are used.
    pub fn single_node(node: Machine) -> Cluster {
        Cluster {
            name: node.name().to_string(),
            gpus_per_node: node.gpus().len() as u32,
            node,
            nodes: 1,
            nic: None,
            switch: Switch::Crossbar { latency_s: 0.0 },
            gpu_direct: false,
            overheads: OverheadTable::default(),
            sources: InputFiles::default(),
        }
    }

    /// This cluster joined by a network: `nic` on every node, `switch` between them.
    /// Checks the figures (bandwidth finite and > 0, latencies finite and ≥ 0, at least one NIC
    /// link, the attach point a memory node of the node machine, fat-tree parameters).
    pub fn with_network(
        mut self,
        nic: Nic,
        switch: Switch,
        gpu_direct: bool,
        overheads: OverheadTable,
    ) -> Result<Cluster, InputError> {
        let bad = |field: &str, msg: String| Err(InputError::new(msg).at_field(field.to_string()));
        if !(nic.bandwidth_bytes_per_sec.is_finite() && nic.bandwidth_bytes_per_sec > 0.0) {
            return bad(
                "nic.bandwidth",
                format!(
                    "NIC bandwidth {} B/s: expected a finite bandwidth > 0",
                    nic.bandwidth_bytes_per_sec
                ),
            );
        }
        if !(nic.latency_s.is_finite() && nic.latency_s >= 0.0) {
            return bad(
                "nic.latency",
                format!("NIC latency {} s: expected finite and >= 0", nic.latency_s),
            );
        }
        if nic.count == 0 || nic.count > MAX_NICS {
            return bad(
                "nic.count",
                format!(
                    "NIC count {}: expected 1 to {MAX_NICS} (a node has a link per NIC to every \
                     switch port)",
                    nic.count
                ),
            );
        }
        if self.node.memory_node(nic.attach).is_none() {
            return bad(
                "nic.attach",
                format!(
                    "NIC attached to memory node {} of a machine without it",
                    nic.attach.0
                ),
            );
        }
        let lat = match &switch {
            Switch::Crossbar { latency_s } => *latency_s,
            Switch::FatTree {
                nodes_per_leaf,
                oversubscription,
                latency_s,
            } => {
                if *nodes_per_leaf == 0 {
                    return bad(
                        "switch.nodes_per_leaf",
                        "a fat tree needs nodes_per_leaf >= 1".into(),
                    );
                }
                if !(oversubscription.is_finite() && *oversubscription > 0.0) {
                    return bad(
                        "switch.oversubscription",
                        format!(
                            "oversubscription {oversubscription}: expected a finite ratio > 0 \
                             (1 = full bisection)"
                        ),
                    );
                }
                *latency_s
            }
        };
        if !(lat.is_finite() && lat >= 0.0) {
            return bad(
                "switch.latency",
                format!("switch latency {lat} s: expected finite and >= 0"),
            );
        }
        self.nic = Some(nic);
        self.switch = switch;
        self.gpu_direct = gpu_direct;
        self.overheads = overheads;
        Ok(self)
    }

    /// The same cluster with its node machine changed by `f` (every node is a copy of it).
    pub fn map_node_machine(mut self, f: impl FnOnce(&mut Machine)) -> Cluster {
        f(&mut self.node);
        self
    }

    /// [`Cluster::map_node_machine`] with a change that may be refused.
    pub fn try_map_node_machine<E>(
        mut self,
        f: impl FnOnce(&mut Machine) -> Result<(), E>,
    ) -> Result<Cluster, E> {
        f(&mut self.node)?;
        Ok(self)
    }

    /// The same cluster with another name.
    pub fn with_name(mut self, name: impl Into<String>) -> Cluster {
        self.name = name.into();
        self
    }

    /// The same cluster re-shaped: `nodes` nodes (≥ 1; > 1 needs a network) using the first
    /// `gpus_per_node` GPUs of each (1 ≤ G ≤ GPUs of the node machine).
    pub fn with_shape(mut self, nodes: u32, gpus_per_node: u32) -> Result<Cluster, InputError> {
        if nodes == 0 {
            return Err(
                InputError::new("nodes = 0: expected at least 1 node").at_field("machine.nodes")
            );
        }
        if nodes > MAX_NODES {
            return Err(InputError::new(format!(
                "nodes = {nodes}: at most {MAX_NODES} nodes (memory and time grow with the \
                 nodes; the largest machine modelled, TSUBAME 2.0, has 1408)"
            ))
            .at_field("machine.nodes"));
        }
        if nodes > 1 && self.nic.is_none() {
            return Err(InputError::new(format!(
                "{nodes} nodes of `{}`, a plain machine file without network: name a cluster \
                 file (docs/cluster-format.md) to use more than one node",
                self.name
            ))
            .at_field("machine.nodes"));
        }
        let have = self.node.gpus().len() as u32;
        if gpus_per_node == 0 || gpus_per_node > have {
            return Err(InputError::new(format!(
                "gpus_per_node = {gpus_per_node}: the node machine `{}` has {have} GPU(s); \
                 expected 1 to {have}",
                self.node.name()
            ))
            .at_field("machine.gpus_per_node"));
        }
        self.nodes = nodes;
        self.gpus_per_node = gpus_per_node;
        Ok(self)
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The machine every node is a copy of.
    pub fn node_machine(&self) -> &Machine {
        &self.node
    }

    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// GPUs used per node (the first ones of the node file).
    pub fn gpus_per_node(&self) -> u32 {
        self.gpus_per_node
    }

    /// Number of ranks: one per used GPU.
    pub fn ranks(&self) -> u32 {
        self.nodes * self.gpus_per_node
    }

    /// Where rank `r` runs: node r / gpus_per_node, GPU r % gpus_per_node.
    pub fn rank_location(&self, r: RankId) -> (NodeId, GpuId) {
        (
            NodeId(r.0 / self.gpus_per_node),
            GpuId(r.0 % self.gpus_per_node),
        )
    }

    /// The NIC of every node (`None` for a single machine without network).
    pub fn nic(&self) -> Option<&Nic> {
        self.nic.as_ref()
    }

    /// The switch.
    pub fn switch(&self) -> &Switch {
        &self.switch
    }

    /// Whether messages go GPU to NIC directly (one flow) instead of through host memory.
    pub fn gpu_direct(&self) -> bool {
        self.gpu_direct
    }

    /// Per-message software overheads.
    pub fn overheads(&self) -> &OverheadTable {
        &self.overheads
    }

    /// The files the cluster was read from: the cluster file and its overheads CSV, if any,
    /// then the node machine's ([`Machine::source_files`]).
    pub fn source_files(&self) -> Vec<RoleFile> {
        let mut v = self.sources.0.clone();
        v.extend_from_slice(self.node.source_files());
        v
    }

    /// The summary `hetsim check` prints: shape, network, overheads, then the node machine's.
    /// Fails if the network cannot be built (a zero-bandwidth or missing route).
    pub fn summary(&self) -> Result<String, InputError> {
        summary::summary(self)
    }
}

/// Load a cluster file, or a plain machine file as a one-node cluster.
pub fn load(path: impl AsRef<Path>) -> Result<Cluster, InputError> {
    file::load(path.as_ref())
}

/// Read cluster (or machine) file `text`; `path` names it in errors and anchors the relative
/// paths it gives (the node machine, the overheads CSV).
pub fn from_str(text: &str, path: impl AsRef<Path>) -> Result<Cluster, InputError> {
    file::from_str(text, path.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overheads_interpolate_and_clamp() {
        let t = OverheadTable::new(vec![(0.0, 1e-6, 2e-6), (1000.0, 3e-6, 6e-6)]).unwrap();
        assert!((t.send_s(500.0) - 2e-6).abs() < 1e-18);
        assert!((t.recv_s(500.0) - 4e-6).abs() < 1e-18);
        assert_eq!(t.send_s(1e9), 3e-6);
        assert_eq!(OverheadTable::default().send_s(5.0), 0.0);
        assert!(OverheadTable::new(vec![(5.0, 0.0, 0.0), (5.0, 1.0, 1.0)]).is_err());
        assert!(OverheadTable::new(vec![(5.0, f64::NAN, 0.0)]).is_err());
    }
}
