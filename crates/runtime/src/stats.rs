//! The run's statistics, gathered by an observer of the event stream: tasks and time per
//! codelet, bytes moved by kind, write-backs and paid allocations. The parts' own end-of-run
//! state (where each worker's time went, memory peaks, link traffic) completes the report.

use hetsim_core::fluid::{FluidNetwork, LinkId};
use hetsim_taskgraph::TaskGraph;

use super::WorkerKind;
use super::bounds::Bounds;
use super::data::MemoryUse;
use super::layout::Layout;
use super::observe::{Observer, SimEvent};
use super::report::{
    ClusterReport, CodeletReport, LinkReport, MemoryReport, NodeReport, RunReport, WorkerReport,
};
use super::transfer::TransferKind;
use super::workers::WorkerTimes;

/// The parts' state at the end of a run, which completes the statistics into a report.
pub(crate) struct RunEnd<'a> {
    /// The machine's or cluster's name.
    pub name: &'a str,
    pub graph: &'a TaskGraph,
    pub sched: &'a str,
    pub seed: u64,
    pub makespan_s: f64,
    /// When the final write-back ended.
    pub end_s: f64,
    pub bounds: Bounds,
    pub layout: &'a Layout,
    /// Per worker (global ids).
    pub times: &'a [WorkerTimes],
    /// Per memory node (global ids).
    pub memory: &'a [MemoryUse],
    pub net: &'a FluidNetwork,
}

/// Totals over the run's transfers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct TransferTotals {
    pub bytes: f64,
    pub transfers: u64,
    pub fetch_bytes: f64,
    pub prefetch_bytes: f64,
    pub writeback_bytes: f64,
    pub writebacks: u64,
    pub allocations: u64,
}

/// One node's counts.
#[derive(Debug, Clone, Copy, Default)]
struct NodeCounts {
    tasks: u64,
    flops: f64,
    messages_sent: u64,
    bytes_sent: f64,
    messages_received: u64,
    bytes_received: f64,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Per worker (global id): its kind, its node, and the date its running task started.
    workers: Vec<(WorkerKind, u32, f64)>,
    codelets: Vec<CodeletReport>,
    /// Codelet of each task.
    task_codelet: Vec<u16>,
    /// Per rank, its node.
    rank_node: Vec<u32>,
    nodes: Vec<NodeCounts>,
    pub tasks: u64,
    pub totals: TransferTotals,
    messages: u64,
    message_bytes: f64,
    message_steps: u64,
}

impl Stats {
    /// The run's report.
    pub fn report(&self, e: &RunEnd<'_>) -> RunReport {
        let total_flops = e.graph.total_flops();
        let t = self.totals;
        let end = e.end_s;
        RunReport {
            critical_path_s: e.bounds.critical_path_s,
            area_bound_s: e.bounds.area_bound_s,
            bound_ratio: e.bounds.ratio(e.makespan_s),
            machine: e.name.to_string(),
            sched: e.sched.to_string(),
            seed: e.seed,
            makespan_s: e.makespan_s,
            end_with_writeback_s: end,
            gflops: if e.makespan_s > 0.0 {
                total_flops / e.makespan_s / 1e9
            } else {
                0.0
            },
            tasks: self.tasks,
            total_flops,
            bytes_transferred: t.bytes,
            transfers: t.transfers,
            fetch_bytes: t.fetch_bytes,
            prefetch_bytes: t.prefetch_bytes,
            writeback_bytes: t.writeback_bytes,
            evictions: e.memory.iter().map(|m| m.evictions).sum(),
            writebacks: t.writebacks,
            allocations: t.allocations,
            workers: e
                .layout
                .workers
                .iter()
                .zip(e.times)
                .map(|(w, s)| WorkerReport {
                    name: w.name.clone(),
                    kind: w.kind.as_str().to_string(),
                    memory: e.layout.memories[w.memory.index()].name.clone(),
                    tasks: s.tasks,
                    busy_s: s.busy_s,
                    waiting_s: s.waiting_s,
                    idle_s: s.idle_s,
                    rank: e
                        .layout
                        .is_cluster()
                        .then(|| e.layout.rank_of_worker(w.id) as u32),
                })
                .collect(),
            links: (0..e.layout.links.len())
                .map(|i| {
                    let id = LinkId(i as u32);
                    let s = e.net.link_stats(id, end);
                    let cap = e.net.link_capacity_bytes_per_sec(id);
                    LinkReport {
                        name: e.layout.links[i].clone(),
                        bytes: s.bytes,
                        busy_s: s.busy_s,
                        utilisation: if end > 0.0 {
                            s.bytes / (cap * end)
                        } else {
                            0.0
                        },
                    }
                })
                .collect(),
            codelets: self.codelets.clone(),
            memory: e
                .layout
                .memories
                .iter()
                .zip(e.memory)
                .map(|(m, u)| MemoryReport {
                    name: m.name.clone(),
                    capacity_bytes: m.capacity_bytes,
                    peak_used_bytes: u.peak_used_bytes,
                    evictions: u.evictions,
                })
                .collect(),
            cluster: e.layout.is_cluster().then(|| self.cluster_report(e)),
        }
    }

    fn cluster_report(&self, e: &RunEnd<'_>) -> ClusterReport {
        let mut busy = vec![0.0; e.layout.nodes.len()];
        for (w, t) in self.workers.iter().zip(e.times) {
            busy[w.1 as usize] += t.busy_s;
        }
        ClusterReport {
            nodes: e.layout.nodes.len() as u32,
            ranks: e.layout.ranks.len() as u32,
            messages: self.messages,
            message_bytes: self.message_bytes,
            message_steps: self.message_steps,
            per_node: e
                .layout
                .nodes
                .iter()
                .zip(&self.nodes)
                .zip(busy)
                .map(|((name, c), busy_s)| NodeReport {
                    name: name.clone(),
                    tasks: c.tasks,
                    flops: c.flops,
                    gflops: if e.makespan_s > 0.0 {
                        c.flops / e.makespan_s / 1e9
                    } else {
                        0.0
                    },
                    busy_s,
                    messages_sent: c.messages_sent,
                    bytes_sent: c.bytes_sent,
                    messages_received: c.messages_received,
                    bytes_received: c.bytes_received,
                })
                .collect(),
        }
    }

    fn start(&mut self, graph: &TaskGraph, layout: &Layout) {
        self.rank_node = layout.ranks.iter().map(|r| r.node).collect();
        self.workers = layout
            .workers
            .iter()
            .map(|w| {
                let r = layout.rank_of_worker(w.id);
                (w.kind, layout.ranks[r].node, 0.0)
            })
            .collect();
        self.nodes = vec![NodeCounts::default(); layout.nodes.len()];
        self.task_codelet = graph.tasks().iter().map(|t| t.codelet.0).collect();
        self.codelets = graph
            .codelet_names()
            .iter()
            .map(|n| CodeletReport {
                name: n.clone(),
                cpu_tasks: 0,
                gpu_tasks: 0,
                cpu_s: 0.0,
                gpu_s: 0.0,
            })
            .collect();
    }
}

impl Observer for Stats {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        match *event {
            SimEvent::RunStart { graph, layout, .. } => self.start(graph, layout),
            SimEvent::TaskStart { worker, flops, .. } => {
                let w = &mut self.workers[worker.index()];
                w.2 = at_s;
                self.nodes[w.1 as usize].flops += flops;
            }
            SimEvent::TaskEnd { task, worker, .. } => {
                self.tasks += 1;
                let (kind, node, since) = self.workers[worker.index()];
                self.nodes[node as usize].tasks += 1;
                let ran_s = at_s - since;
                let c = &mut self.codelets[self.task_codelet[task.index()] as usize];
                match kind {
                    WorkerKind::Cpu => {
                        c.cpu_tasks += 1;
                        c.cpu_s += ran_s;
                    }
                    WorkerKind::Gpu => {
                        c.gpu_tasks += 1;
                        c.gpu_s += ran_s;
                    }
                }
            }
            SimEvent::TransferStart {
                kind: TransferKind::WriteBack,
                ..
            } => self.totals.writebacks += 1,
            SimEvent::TransferEnd { bytes, kind, .. } => {
                let t = &mut self.totals;
                t.bytes += bytes;
                t.transfers += 1;
                match kind {
                    TransferKind::Fetch => t.fetch_bytes += bytes,
                    TransferKind::Prefetch => t.prefetch_bytes += bytes,
                    TransferKind::WriteBack => t.writeback_bytes += bytes,
                }
            }
            SimEvent::Allocate { malloc: true, .. } => self.totals.allocations += 1,
            SimEvent::MessageStart { steps, .. } => self.message_steps += u64::from(steps),
            SimEvent::MessageEnd {
                from_rank,
                to_rank,
                bytes,
                ..
            } => {
                self.messages += 1;
                self.message_bytes += bytes;
                let from = &mut self.nodes[self.rank_node[from_rank as usize] as usize];
                from.messages_sent += 1;
                from.bytes_sent += bytes;
                let to = &mut self.nodes[self.rank_node[to_rank as usize] as usize];
                to.messages_received += 1;
                to.bytes_received += bytes;
            }
            _ => {}
        }
    }
}
