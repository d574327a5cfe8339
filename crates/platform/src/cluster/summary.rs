//! The human-readable summary `hetsim check` prints for a cluster file: the shape, the network
//! between nodes, the MPI overheads, then the node machine's own summary.

use std::fmt::Write;

use super::network::ClusterNetwork;
use super::{Cluster, Switch};
use hetsim_core::fluid::SharingMode;
use hetsim_core::units::{format_bytes, format_secs, format_si};

/// The summary of `c`; the link count comes from building its network, so a cluster whose
/// network cannot be built is reported as an error instead.
pub(super) fn summary(c: &Cluster) -> Result<String, hetsim_core::InputError> {
    let net = ClusterNetwork::new(c, SharingMode::Plain)?;
    let mut out = String::new();
    // Writing to a String cannot fail; `let _ =` keeps this free of unwraps.
    let _ = writeln!(out, "cluster {}", c.name());
    let _ = writeln!(
        out,
        "  {} nodes x {} GPUs used (of {} in the node file) = {} ranks, one per GPU",
        c.nodes(),
        c.gpus_per_node(),
        c.node_machine().gpus().len(),
        c.ranks()
    );
    match c.nic() {
        Some(nic) => {
            let _ = writeln!(
                out,
                "  NIC: {} x {} per direction, latency {}, attached to {}",
                nic.count,
                format_si(nic.bandwidth_bytes_per_sec, "B/s"),
                format_secs(nic.latency_s),
                c.node_machine()
                    .memory_node(nic.attach)
                    .map_or("?", |n| n.name.as_str())
            );
        }
        None => {
            let _ = writeln!(out, "  no network between nodes");
        }
    }
    let _ = match c.switch() {
        Switch::Crossbar { latency_s } => writeln!(
            out,
            "  switch: non-blocking crossbar, latency {}",
            format_secs(*latency_s)
        ),
        Switch::FatTree {
            nodes_per_leaf,
            oversubscription,
            latency_s,
        } => writeln!(
            out,
            "  switch: two-level fat tree, {nodes_per_leaf} nodes per leaf, oversubscription \
             {oversubscription}:1, latency {} per crossing",
            format_secs(*latency_s)
        ),
    };
    let _ = writeln!(
        out,
        "  GPU-direct: {}",
        if c.gpu_direct() {
            "yes (one flow GPU to GPU)"
        } else {
            "no (device -> host -> NIC -> host -> device)"
        }
    );
    let rows = c.overheads().rows();
    if rows.is_empty() {
        let _ = writeln!(out, "  MPI overheads: none");
    } else {
        let (first, last) = (rows[0], rows[rows.len() - 1]);
        let _ = writeln!(
            out,
            "  MPI overheads: {} rows, o_s {} / o_r {} at {} ... o_s {} / o_r {} at {}",
            rows.len(),
            format_secs(first.1),
            format_secs(first.2),
            format_bytes(first.0),
            format_secs(last.1),
            format_secs(last.2),
            format_bytes(last.0)
        );
    }
    let _ = writeln!(
        out,
        "  network: {} fluid links ({} per node copy), routes computed\n",
        net.link_count(),
        net.links_per_node()
    );
    out.push_str(&c.node_machine().summary());
    Ok(out)
}
