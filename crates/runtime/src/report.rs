//! What a run produced: the figures of `hetsim run`'s report and of `--json`.

use serde::Serialize;

/// One run's results. Field names are part of the `--json` interface people's scripts use:
/// add freely, never rename.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// Machine name.
    pub machine: String,
    /// Scheduler name.
    pub sched: String,
    /// Seed of the run's random number generator.
    pub seed: u64,
    /// Date the last task ended, seconds.
    pub makespan_s: f64,
    /// Date the final write-back of modified data to RAM ended, seconds (≥ makespan).
    pub end_with_writeback_s: f64,
    /// Total flops of the task graph / makespan, in GFlop/s.
    pub gflops: f64,
    /// Number of tasks run.
    pub tasks: u64,
    /// Total flops of the task graph.
    pub total_flops: f64,
    /// Bytes moved between memory nodes (all kinds of transfer, final write-back included).
    pub bytes_transferred: f64,
    /// Number of transfers.
    pub transfers: u64,
    /// Bytes fetched because a popped task needed them.
    pub fetch_bytes: f64,
    /// Bytes moved by prefetches the scheduler asked for.
    pub prefetch_bytes: f64,
    /// Bytes written back to RAM to make room (eviction of a modified replica) or at the end.
    pub writeback_bytes: f64,
    /// Replicas evicted to make room.
    pub evictions: u64,
    /// Write-backs (eviction of a modified replica, and the final ones).
    pub writebacks: u64,
    /// Device memory allocations paid for (cudaMalloc).
    pub allocations: u64,
    /// Per worker figures, in worker order.
    pub workers: Vec<WorkerReport>,
    /// Per link figures, in machine order (a split-duplex link gives one row per direction).
    pub links: Vec<LinkReport>,
    /// Per codelet figures, in codelet order.
    pub codelets: Vec<CodeletReport>,
    /// Per memory node figures, in machine order.
    pub memory: Vec<MemoryReport>,
    /// Longest dependency chain of the graph, each task at its fastest mean duration over the
    /// workers used, seconds: no schedule ends earlier (`trace::stats`).
    pub critical_path_s: f64,
    /// Best makespan if the work were spread perfectly over the CPU and GPU workers by speed
    /// (fractional assignment, no dependencies, no transfers), seconds (`trace::stats`).
    pub area_bound_s: f64,
    /// makespan_s / max(critical_path_s, area_bound_s): 1 is as good as the bounds allow.
    pub bound_ratio: f64,
    /// On a cluster: its shape, the messages between ranks and each node's share (absent on
    /// one machine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterReport>,
}

/// What a run on a cluster adds to its report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReport {
    /// Nodes.
    pub nodes: u32,
    /// Ranks (runtime instances; StarPU-MPI processes).
    pub ranks: u32,
    /// Messages between ranks.
    pub messages: u64,
    /// Their payload, bytes.
    pub message_bytes: f64,
    /// Store-and-forward steps the messages took (flows, or transfer-model times).
    pub message_steps: u64,
    /// Per node, in node order.
    pub per_node: Vec<NodeReport>,
}

/// One node's share of a cluster run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeReport {
    /// "n0", "n1", ...
    pub name: String,
    /// Tasks its workers ran (messages excluded).
    pub tasks: u64,
    /// Their flops.
    pub flops: f64,
    /// flops / makespan, GFlop/s.
    pub gflops: f64,
    /// Time its workers spent executing tasks, summed over them.
    pub busy_s: f64,
    /// Messages its ranks sent.
    pub messages_sent: u64,
    /// Their payload, bytes.
    pub bytes_sent: f64,
    /// Messages its ranks received.
    pub messages_received: u64,
    /// Their payload, bytes.
    pub bytes_received: f64,
}

/// One worker's time and work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerReport {
    /// "CPU0", "CUDA0", ...
    pub name: String,
    /// "cpu" or "gpu".
    pub kind: String,
    /// Memory node it works in.
    pub memory: String,
    /// Tasks it ran.
    pub tasks: u64,
    /// Time executing tasks.
    pub busy_s: f64,
    /// Time holding a task whose input data was not there yet, not executing.
    pub waiting_s: f64,
    /// Time with no task.
    pub idle_s: f64,
    /// Its rank, on a cluster (absent on one machine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
}

/// One link's traffic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkReport {
    /// Link name (`NAME_UP`/`NAME_DOWN` for the halves of a split-duplex link).
    pub name: String,
    /// Bytes carried.
    pub bytes: f64,
    /// Time with at least one transfer on it.
    pub busy_s: f64,
    /// Bytes carried / (capacity × makespan with write-back).
    pub utilisation: f64,
}

/// One codelet's tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeletReport {
    /// Codelet name.
    pub name: String,
    /// Tasks run on CPU workers.
    pub cpu_tasks: u64,
    /// Tasks run on GPU workers.
    pub gpu_tasks: u64,
    /// Time spent executing on CPU workers.
    pub cpu_s: f64,
    /// Time spent executing on GPU workers.
    pub gpu_s: f64,
}

/// One memory node's use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryReport {
    /// Memory node name.
    pub name: String,
    /// Capacity.
    pub capacity_bytes: u64,
    /// Highest amount allocated at once.
    pub peak_used_bytes: u64,
    /// Replicas evicted from it.
    pub evictions: u64,
}
