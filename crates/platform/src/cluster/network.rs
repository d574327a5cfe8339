//! A cluster's network on the fluid model: per node a copy of the node machine's links, the NIC
//! links, and the switch links; routes are computed from (node, memory node) endpoints, never
//! stored per pair of nodes.
//!
//! Fluid link layout (ids are contiguous, so membership tests are comparisons):
//!
//! - `[0, nodes × L)`: node n's copy of the node machine's fluid links at `n × L + local`
//!   (L = fluid links of one node; split-duplex links are two);
//! - `[nic_base, nic_base + nodes × count × 2)`: node n's NIC k, up (node → switch) at
//!   `nic_base + 2(n·count + k)`, down at `+1`;
//! - fat tree only, `[leaf_base, leaf_base + 2 × leaves)`: leaf l's up link to the spine at
//!   `leaf_base + 2l`, its down link at `+1`.
//!
//! Memory is O(nodes × L + nodes × count + leaves) links plus one template of the node
//! machine's routes (memory nodes², independent of the node count).

use crate::machine::{Direction, Hop, LinkPolicy, Machine, MemNodeId, TransferModel};
use hetsim_core::error::InputError;
use hetsim_core::fluid::{FluidNetwork, LinkId, Sharing, SharingMode};

use super::{Cluster, NodeId, Switch};

/// A place bytes can be: a memory node of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    /// Which node.
    pub node: NodeId,
    /// Which memory node of the node machine.
    pub mem: MemNodeId,
}

/// Add a machine's links to a fluid network: one fluid link per shared or fatpipe link, two (up,
/// down) per split-duplex link. Returns, per machine link, its fluid link (the up half for
/// split-duplex links) and the down half if any, and pushes the fluid links' names to `names`.
pub fn add_machine_links(
    net: &mut FluidNetwork,
    machine: &Machine,
    mut names: Option<&mut Vec<String>>,
) -> Vec<(LinkId, Option<LinkId>)> {
    let mut map = Vec::with_capacity(machine.links().len());
    for l in machine.links() {
        let (bw, lat) = (l.bandwidth_bytes_per_sec, l.latency_s);
        let entry = match l.sharing {
            LinkPolicy::Shared | LinkPolicy::Fatpipe => {
                let s = if l.sharing == LinkPolicy::Shared {
                    Sharing::Shared
                } else {
                    Sharing::Fatpipe
                };
                if let Some(n) = names.as_deref_mut() {
                    n.push(l.name.clone());
                }
                (net.add_link(bw, lat, s), None)
            }
            LinkPolicy::SplitDuplex => {
                if let Some(n) = names.as_deref_mut() {
                    n.push(format!("{}_UP", l.name));
                    n.push(format!("{}_DOWN", l.name));
                }
                let up = net.add_link(bw, lat, Sharing::Shared);
                let down = net.add_link(bw, lat, Sharing::Shared);
                (up, Some(down))
            }
        };
        map.push(entry);
    }
    map
}

/// The fluid links of a route's hops, given the map [`add_machine_links`] returned.
pub fn hop_links(map: &[(LinkId, Option<LinkId>)], hops: &[Hop]) -> Vec<LinkId> {
    hops.iter()
        .map(|h| {
            let (a, b) = map[h.link.index()];
            match (h.direction, b) {
                (Some(Direction::Down), Some(down)) => down,
                _ => a,
            }
        })
        .collect()
}

/// How one step of a transfer inside a node travels, in node 0's link ids.
#[derive(Debug, Clone)]
enum Template {
    Fluid(Vec<u32>),
    Model(TransferModel),
}

/// One store-and-forward step of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// A fluid flow over these links.
    Fluid(Vec<LinkId>),
    /// A duration from a size-dependent model, without sharing (as the runtime treats routes
    /// with a `TransferModel`).
    Model(TransferModel),
}

/// The fluid network of a cluster and its computed routes.
#[derive(Debug)]
pub struct ClusterNetwork {
    /// The fluid network (the executor starts and advances flows on it).
    pub net: FluidNetwork,
    nodes: u32,
    links_per_node: u32,
    nmem: usize,
    template: Vec<Option<Template>>,
    nic_base: u32,
    nic_count: u32,
    leaf_base: u32,
    nodes_per_leaf: Option<u32>,
    attach: MemNodeId,
    switch_latency_s: f64,
}

impl ClusterNetwork {
    /// Build the network of `cluster`: O(nodes × links per node) links.
    pub fn new(cluster: &Cluster, mode: SharingMode) -> Result<ClusterNetwork, InputError> {
        let machine = cluster.node_machine();
        let mut net = FluidNetwork::new(mode);
        let mut links_per_node = 0u32;
        let mut template = Vec::new();
        let nmem = machine.memory_nodes().len();
        for n in 0..cluster.nodes() {
            let map = add_machine_links(&mut net, machine, None);
            if n == 0 {
                links_per_node = net.link_count() as u32;
                template = vec![None; nmem * nmem];
                for r in machine.routes() {
                    let t = match &r.model {
                        Some(m) => Template::Model(m.clone()),
                        None => Template::Fluid(
                            hop_links(&map, &r.hops).into_iter().map(|l| l.0).collect(),
                        ),
                    };
                    template[r.src.index() * nmem + r.dst.index()] = Some(t);
                }
            }
        }
        let nic_base = net.link_count() as u32;
        let (nic_count, attach, switch_latency_s, nodes_per_leaf) = match cluster.nic() {
            None => (0, first_ram(machine), 0.0, None),
            Some(nic) => {
                if !(nic.bandwidth_bytes_per_sec > 0.0 && nic.bandwidth_bytes_per_sec.is_finite()) {
                    return Err(InputError::new(format!(
                        "NIC bandwidth {} B/s: expected a finite bandwidth > 0",
                        nic.bandwidth_bytes_per_sec
                    ))
                    .at_field("nic.bandwidth"));
                }
                let (sw_lat, npl) = match cluster.switch() {
                    Switch::Crossbar { latency_s } => (*latency_s, None),
                    Switch::FatTree {
                        nodes_per_leaf,
                        latency_s,
                        ..
                    } => (*latency_s, Some(*nodes_per_leaf)),
                };
                for _ in 0..cluster.nodes() * nic.count {
                    // The NIC's own latency is paid once per inter-node flow, on the up link,
                    // together with the first switch crossing.
                    net.add_link(
                        nic.bandwidth_bytes_per_sec,
                        nic.latency_s + sw_lat,
                        Sharing::Shared,
                    );
                    net.add_link(nic.bandwidth_bytes_per_sec, 0.0, Sharing::Shared);
                }
                (nic.count, nic.attach, sw_lat, npl)
            }
        };
        let leaf_base = net.link_count() as u32;
        if let (
            Some(npl),
            Some(nic),
            Switch::FatTree {
                oversubscription, ..
            },
        ) = (nodes_per_leaf, cluster.nic(), cluster.switch())
        {
            let leaves = cluster.nodes().div_ceil(npl);
            if leaves > 1 {
                let cap =
                    npl as f64 * nic.count as f64 * nic.bandwidth_bytes_per_sec / oversubscription;
                for _ in 0..leaves {
                    // Up: into the spine (one crossing); down: out of the destination leaf
                    // (one more crossing).
                    net.add_link(cap, switch_latency_s, Sharing::Shared);
                    net.add_link(cap, switch_latency_s, Sharing::Shared);
                }
            }
        }
        Ok(ClusterNetwork {
            net,
            nodes: cluster.nodes(),
            links_per_node,
            nmem,
            template,
            nic_base,
            nic_count,
            leaf_base,
            nodes_per_leaf,
            attach,
            switch_latency_s,
        })
    }

    /// Number of fluid links.
    pub fn link_count(&self) -> usize {
        self.net.link_count()
    }

    /// Fluid links in one node's copy of the node machine.
    pub fn links_per_node(&self) -> u32 {
        self.links_per_node
    }

    /// The memory node the NICs attach to.
    pub fn attach(&self) -> MemNodeId {
        self.attach
    }

    /// Latency of one switch crossing.
    pub fn switch_latency_s(&self) -> f64 {
        self.switch_latency_s
    }

    /// Names of the links between nodes, in link order after the nodes' own links: node n's NIC
    /// k as `n{n}.NIC{k}_UP` / `_DOWN`, leaf l's links to the spine as `leaf{l}_UP` / `_DOWN`;
    /// each with the node it belongs to (its NICs), `None` for the switches' links.
    pub fn internode_link_names(&self) -> Vec<(String, Option<NodeId>)> {
        let mut names = Vec::new();
        for n in 0..self.nodes {
            for k in 0..self.nic_count {
                names.push((format!("n{n}.NIC{k}_UP"), Some(NodeId(n))));
                names.push((format!("n{n}.NIC{k}_DOWN"), Some(NodeId(n))));
            }
        }
        let leaves = (self.net.link_count() as u32).saturating_sub(self.leaf_base) / 2;
        for l in 0..leaves {
            names.push((format!("leaf{l}_UP"), None));
            names.push((format!("leaf{l}_DOWN"), None));
        }
        names
    }

    /// True for NIC and switch links (the links between nodes).
    pub fn is_internode_link(&self, l: LinkId) -> bool {
        l.0 >= self.nic_base
    }

    /// How bytes go from `src` to `dst` inside `node` in one step: the node machine's route, in
    /// that node's links. `None` when the node file has no route for the pair.
    pub fn intra(&self, node: NodeId, src: MemNodeId, dst: MemNodeId) -> Option<Segment> {
        let off = node.0 * self.links_per_node;
        match self.template.get(src.index() * self.nmem + dst.index())? {
            None => None,
            Some(Template::Model(m)) => Some(Segment::Model(m.clone())),
            Some(Template::Fluid(ls)) => Some(Segment::Fluid(
                ls.iter().map(|&l| LinkId(l + off)).collect(),
            )),
        }
    }

    /// Host-to-host links between the attach points of two different nodes: NIC up of `a`,
    /// leaf up/down links if the nodes are on different leaves, NIC down of `b`. `None` without
    /// NICs or for `a == b`.
    pub fn inter_host(&self, a: NodeId, b: NodeId) -> Option<Vec<LinkId>> {
        if self.nic_count == 0 || a == b || a.0 >= self.nodes || b.0 >= self.nodes {
            return None;
        }
        let c = self.nic_count;
        let up = self.nic_base + 2 * (a.0 * c + b.0 % c);
        let down = self.nic_base + 2 * (b.0 * c + a.0 % c) + 1;
        let mut route = vec![LinkId(up)];
        if let Some(npl) = self.nodes_per_leaf {
            let (la, lb) = (a.0 / npl, b.0 / npl);
            if la != lb {
                route.push(LinkId(self.leaf_base + 2 * la));
                route.push(LinkId(self.leaf_base + 2 * lb + 1));
            }
        }
        route.push(LinkId(down));
        Some(route)
    }

    /// The fluid links from `src` to `dst` as one flow: inside a node, the node machine's route;
    /// between nodes, src → NIC attach point (if src is elsewhere), host to host, attach point →
    /// dst. `None` if a piece is missing or is a transfer model rather than links.
    pub fn route(&self, src: Endpoint, dst: Endpoint) -> Option<Vec<LinkId>> {
        let fluid = |s| match s {
            Some(Segment::Fluid(ls)) => Some(ls),
            _ => None,
        };
        if src.node == dst.node {
            if src.mem == dst.mem {
                return Some(Vec::new());
            }
            return fluid(self.intra(src.node, src.mem, dst.mem));
        }
        let mut r = Vec::new();
        if src.mem != self.attach {
            r.extend(fluid(self.intra(src.node, src.mem, self.attach))?);
        }
        r.extend(self.inter_host(src.node, dst.node)?);
        if dst.mem != self.attach {
            r.extend(fluid(self.intra(dst.node, self.attach, dst.mem))?);
        }
        Some(r)
    }
}

fn first_ram(machine: &Machine) -> MemNodeId {
    machine
        .memory_nodes()
        .iter()
        .find(|m| m.kind == crate::machine::MemKind::Ram)
        .map_or(MemNodeId(0), |m| m.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{Nic, OverheadTable};

    fn node(ngpu: usize) -> crate::machine::Machine {
        let t = hetsim_testkit::split_duplex_node_text(ngpu);
        crate::machine::from_str(&t, "n.toml").unwrap()
    }

    fn fat_tree(nodes: u32, npl: u32) -> Cluster {
        Cluster::single_node(node(2))
            .with_network(
                Nic {
                    bandwidth_bytes_per_sec: 1e9,
                    latency_s: 1e-6,
                    count: 2,
                    attach: MemNodeId(0),
                },
                Switch::FatTree {
                    nodes_per_leaf: npl,
                    oversubscription: 2.0,
                    latency_s: 0.1e-6,
                },
                false,
                OverheadTable::default(),
            )
            .unwrap()
            .with_shape(nodes, 2)
            .unwrap()
    }

    #[test]
    fn link_count_is_linear_in_nodes() {
        // Per node: 2 split-duplex PCIe links = 4 fluid links, 2 NICs × (up, down) = 4; per
        // leaf of 10 nodes: 2. 1000 nodes: 1000 × 8 + 100 × 2 = 8200; 2000 nodes: 16400.
        let n1 = ClusterNetwork::new(&fat_tree(1000, 10), SharingMode::Plain).unwrap();
        let n2 = ClusterNetwork::new(&fat_tree(2000, 10), SharingMode::Plain).unwrap();
        assert_eq!(n1.link_count(), 8200);
        assert_eq!(n2.link_count(), 16400);
        assert_eq!(n1.links_per_node(), 4);
    }

    #[test]
    fn routes_are_computed() {
        let c = fat_tree(40, 10);
        let n = ClusterNetwork::new(&c, SharingMode::Plain).unwrap();
        let ep = |node, mem| Endpoint {
            node: NodeId(node),
            mem: MemNodeId(mem),
        };
        // Node 3, GPU1 (memory node 2) → RAM: the copy of P1_UP (local fluid link 2) at 3×4+2.
        assert_eq!(n.route(ep(3, 2), ep(3, 0)), Some(vec![LinkId(14)]));
        // Same leaf (nodes 1 → 2): NIC up of node 1 number 2 mod 2 = 0, NIC down of node 2
        // number 1 mod 2 = 1. NIC base = 40 × 4 = 160; up = 160 + 2(1·2 + 0) = 164; down =
        // 160 + 2(2·2 + 1) + 1 = 171.
        assert_eq!(
            n.route(ep(1, 0), ep(2, 0)),
            Some(vec![LinkId(164), LinkId(171)])
        );
        // Leaves 0 → 3 (nodes 1 → 35): leaf base = 160 + 40 × 4 = 320; up of leaf 0 = 320,
        // down of leaf 3 = 327. NIC up: 160 + 2(2 + 1) = 166; down: 160 + 2(70 + 1) + 1 = 303.
        let r = n.route(ep(1, 0), ep(35, 0)).unwrap();
        assert_eq!(r, vec![LinkId(166), LinkId(320), LinkId(327), LinkId(303)]);
        // Latency: NIC 1 µs + three switch crossings of 0.1 µs.
        assert!((n.net.route_latency_s(&r) - 1.3e-6).abs() < 1e-18);
        // Leaf capacity: 10 nodes × 2 NICs × 1 GB/s / 2 = 10 GB/s.
        assert_eq!(n.net.link_capacity_bytes_per_sec(LinkId(320)), 10e9);
        assert!(n.is_internode_link(LinkId(160)) && !n.is_internode_link(LinkId(159)));
    }
}
