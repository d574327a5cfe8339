//! The human-readable report of `hetsim run`: a header naming what ran, the headline figures,
//! then tables per worker, per codelet, per link and per memory node.
//!
//! The text depends only on the scenario and the report, never on the clock or on hash-map
//! order, so the same scenario and seed print the same bytes.

use std::fmt::Write;

use crate::scenario::{Scenario, sharing_name};
use hetsim_core::units::{format_bytes as bytes, format_secs as secs};
use hetsim_runtime::RunReport;

/// What to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Header and headline figures only.
    Summary,
    /// Everything: headline figures and the per-worker, per-codelet, per-link and per-memory
    /// tables.
    Full,
}

/// Which links the link table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Every link that moved bytes except the internal links of StarPU's PCI tree (names
    /// starting with `PCI:`), whose traffic is that of the links they connect.
    Main,
    /// Every link that moved bytes.
    All,
}

/// Whether a link is an internal link of an imported PCI tree (`PCI:0000:[00-0f] up`; on a
/// cluster `n3.PCI:0000:[00-0f] up`, the link of node 3).
pub fn is_pci_tree_link(name: &str) -> bool {
    node_local(name).starts_with("PCI:")
}

/// A cluster link's name without its node's prefix (`Host` for `n3.Host`); other names as
/// they are.
fn node_local(name: &str) -> &str {
    name.strip_prefix('n')
        .and_then(|rest| rest.split_once('.'))
        .filter(|(digits, _)| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .map_or(name, |(_, local)| local)
}

/// Render the report of one run of `scenario`.
pub fn render(scenario: &Scenario, report: &RunReport, detail: Detail, links: Links) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_report(&mut s, scenario, report, detail, links);
    s
}

fn write_report(
    s: &mut String,
    sc: &Scenario,
    r: &RunReport,
    detail: Detail,
    links: Links,
) -> std::fmt::Result {
    let gpus = r.workers.iter().filter(|w| w.kind == "gpu").count();
    let cpus = r.workers.len() - gpus;
    writeln!(s, "scenario     {} ({})", sc.name, sc.file.display())?;
    writeln!(
        s,
        "machine      {}: {} GPU worker{}, {} CPU worker{}",
        r.machine,
        gpus,
        plural(gpus),
        cpus,
        plural(cpus)
    )?;
    if let Some(g) = &sc.graph_file {
        writeln!(
            s,
            "workload     taskgraph {} (durations: {}): {} tasks, {:.4} GFlop",
            g.file.display(),
            g.durations.name(),
            r.tasks,
            r.total_flops / 1e9
        )?;
    }
    if let Some(w) = &sc.workload {
        writeln!(
            s,
            "workload     {} n={} nb={} {}: {} tasks, {:.4} GFlop",
            w.kind_name(),
            w.n,
            w.nb,
            w.precision,
            r.tasks,
            r.total_flops / 1e9
        )?;
    }
    // An approximate network is said where the sharing is.
    let approx = if sc.run.reshare_delay_s > 0.0 {
        format!(" (re-share delay {})", secs(sc.run.reshare_delay_s))
    } else {
        String::new()
    };
    writeln!(
        s,
        "scheduler    {}, seed {}, sharing {}{approx}, prefetch {}",
        r.sched,
        r.seed,
        sharing_name(sc.run.sharing),
        if sc.run.prefetch { "on" } else { "off" }
    )?;
    if !sc.overrides.is_empty() {
        let list: Vec<String> = sc.overrides.iter().map(|o| o.describe()).collect();
        writeln!(s, "overrides    {}", list.join(", "))?;
    }
    writeln!(s)?;
    writeln!(
        s,
        "makespan     {} ({} with the final write-backs)",
        secs(r.makespan_s),
        secs(r.end_with_writeback_s)
    )?;
    if r.tasks == 0 {
        // Communication only (a broadcast, a ping-pong): no flop rate, no compute bound.
        writeln!(s, "performance  no computation: the run only communicates")?;
    } else {
        writeln!(s, "performance  {:.2} GFlop/s", r.gflops)?;
        writeln!(
            s,
            "bounds       critical path {}, area bound {}: makespan is {:.2}x the larger",
            secs(r.critical_path_s),
            secs(r.area_bound_s),
            r.bound_ratio
        )?;
    }
    writeln!(s, "tasks        {}", r.tasks)?;
    writeln!(
        s,
        "bytes moved  {} in {} transfers: fetch {}, prefetch {}, write-back {}",
        bytes(r.bytes_transferred),
        r.transfers,
        bytes(r.fetch_bytes),
        bytes(r.prefetch_bytes),
        bytes(r.writeback_bytes)
    )?;
    writeln!(s, "evictions    {}", r.evictions)?;
    writeln!(s, "write-backs  {}", r.writebacks)?;
    writeln!(s, "allocations  {}", r.allocations)?;
    if let Some(c) = &r.cluster {
        writeln!(
            s,
            "cluster      {} nodes, {} rank{}: {} messages, {}",
            c.nodes,
            c.ranks,
            plural(c.ranks as usize),
            c.messages,
            bytes(c.message_bytes)
        )?;
    }
    if detail == Detail::Summary {
        return Ok(());
    }
    if let Some(c) = &r.cluster {
        write_nodes(s, c)?;
    }

    // Workers: share of the run spent executing, holding a task whose data is not there yet,
    // and with nothing to do.
    writeln!(s)?;
    let wname = width(r.workers.iter().map(|w| w.name.as_str()), "worker");
    writeln!(
        s,
        "{:<wname$}  {:>7}  {:>7}  {:>10}  {:>7}",
        "worker", "tasks", "busy %", "waiting %", "idle %"
    )?;
    for w in &r.workers {
        let total = w.busy_s + w.waiting_s + w.idle_s;
        writeln!(
            s,
            "{:<wname$}  {:>7}  {:>7.1}  {:>10.1}  {:>7.1}",
            w.name,
            w.tasks,
            pct(w.busy_s, total),
            pct(w.waiting_s, total),
            pct(w.idle_s, total)
        )?;
    }

    writeln!(s)?;
    let cname = width(r.codelets.iter().map(|c| c.name.as_str()), "codelet");
    writeln!(
        s,
        "{:<cname$}  {:>9}  {:>12}  {:>9}  {:>12}",
        "codelet", "cpu tasks", "cpu time", "gpu tasks", "gpu time"
    )?;
    for c in &r.codelets {
        writeln!(
            s,
            "{:<cname$}  {:>9}  {:>12}  {:>9}  {:>12}",
            c.name,
            c.cpu_tasks,
            secs(c.cpu_s),
            c.gpu_tasks,
            secs(c.gpu_s)
        )?;
    }

    writeln!(s)?;
    let moved: Vec<_> = r.links.iter().filter(|l| l.bytes > 0.0).collect();
    let used: Vec<_> = moved
        .iter()
        .copied()
        .filter(|l| links == Links::All || !is_pci_tree_link(&l.name))
        .collect();
    let hidden = moved.len() - used.len();
    if used.is_empty() {
        writeln!(s, "links        no bytes moved")?;
    } else {
        let lname = width(used.iter().map(|l| l.name.as_str()), "link");
        writeln!(
            s,
            "{:<lname$}  {:>12}  {:>12}  {:>13}",
            "link", "bytes", "busy", "utilisation %"
        )?;
        for l in used {
            writeln!(
                s,
                "{:<lname$}  {:>12}  {:>12}  {:>13.1}",
                l.name,
                bytes(l.bytes),
                secs(l.busy_s),
                100.0 * l.utilisation
            )?;
        }
    }
    if hidden > 0 {
        writeln!(
            s,
            "({hidden} links of the PCI tree not shown: `--links all` shows them)"
        )?;
    }

    writeln!(s)?;
    let mname = width(r.memory.iter().map(|m| m.name.as_str()), "memory");
    writeln!(
        s,
        "{:<mname$}  {:>12}  {:>12}  {:>7}  {:>9}",
        "memory", "capacity", "peak used", "peak %", "evictions"
    )?;
    for m in &r.memory {
        writeln!(
            s,
            "{:<mname$}  {:>12}  {:>12}  {:>7.1}  {:>9}",
            m.name,
            bytes(m.capacity_bytes as f64),
            bytes(m.peak_used_bytes as f64),
            pct(m.peak_used_bytes as f64, m.capacity_bytes as f64),
            m.evictions
        )?;
    }
    Ok(())
}

/// Each node's share of a cluster run: its tasks, its workers' busy time summed, its GFlop/s
/// and the messages its ranks sent and received.
fn write_nodes(s: &mut String, c: &hetsim_runtime::ClusterReport) -> std::fmt::Result {
    writeln!(s)?;
    let nname = width(c.per_node.iter().map(|n| n.name.as_str()), "node");
    writeln!(
        s,
        "{:<nname$}  {:>7}  {:>12}  {:>9}  {:>9}  {:>12}  {:>9}  {:>12}",
        "node", "tasks", "busy", "GFlop/s", "msgs sent", "bytes sent", "msgs recv", "bytes recv"
    )?;
    for n in &c.per_node {
        writeln!(
            s,
            "{:<nname$}  {:>7}  {:>12}  {:>9.2}  {:>9}  {:>12}  {:>9}  {:>12}",
            n.name,
            n.tasks,
            secs(n.busy_s),
            n.gflops,
            n.messages_sent,
            bytes(n.bytes_sent),
            n.messages_received,
            bytes(n.bytes_received)
        )?;
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn width<'a>(names: impl Iterator<Item = &'a str>, header: &str) -> usize {
    names
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(header.len())
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_tree_links_of_a_node_are_recognised() {
        assert!(is_pci_tree_link("PCI:0000:[00-0f] up"));
        assert!(is_pci_tree_link("n12.PCI:0000:[00-0f] up"));
        assert!(!is_pci_tree_link("n0.Host"));
        assert!(!is_pci_tree_link("n0.NIC0_UP"));
        assert!(!is_pci_tree_link("nx.PCI:0"));
        assert!(!is_pci_tree_link("leaf0_UP"));
    }

    #[test]
    fn percentages_of_nothing_are_zero() {
        assert_eq!(pct(1.0, 0.0), 0.0);
        assert_eq!(pct(1.0, 4.0), 25.0);
    }
}
