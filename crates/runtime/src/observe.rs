//! The stream of simulation events. Every output (traces, statistics, invariant checks in
//! tests) is an observer of it; none reaches into the simulation.
//!
//! A run reports, in date order (dates never decrease):
//!
//! 1. one [`SimEvent::RunStart`] at date 0, carrying what writers need to name things (the
//!    machine, the task graph, the workers, the runtime's links); every worker is idle then and
//!    every memory node but RAM is empty (RAM holds every handle);
//! 2. the run's events as they happen: worker states, tasks, transfers, allocations,
//!    evictions, link loads;
//! 3. one [`SimEvent::RunEnd`] at the date the final write-back ended.
//!
//! Write-backs (of an evicted modified replica, or at the end of the run) are the transfers of
//! kind [`TransferKind::WriteBack`]. Memory used on a node changes only when room is made for a
//! replica, so [`SimEvent::Allocate`]'s `used_bytes` tracks it exactly.

use hetsim_platform::machine::{Machine, MemNodeId};
use hetsim_taskgraph::{CodeletId, HandleId, TaskGraph, TaskId};

use super::transfer::TransferKind;
use super::{RunConfig, Worker, WorkerId};

/// What a worker is doing, as StarPU's traces name it (worker state values `I`, `Fi`, `E`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkerStatus {
    /// Holds no task.
    Idle,
    /// Holds a task whose input data is not all there yet (StarPU's `FetchingInput`).
    FetchingInput,
    /// Executes a task.
    Executing,
}

impl WorkerStatus {
    /// "Idle", "FetchingInput", "Executing".
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerStatus::Idle => "Idle",
            WorkerStatus::FetchingInput => "FetchingInput",
            WorkerStatus::Executing => "Executing",
        }
    }
}

/// Something that happened in the simulation, at the date passed beside it.
///
/// New variants may be added (observers should end their `match` with `_ => {}`).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum SimEvent<'a> {
    /// The run starts (date 0), before any other event.
    RunStart {
        /// The machine (on a cluster, the machine every node is a copy of).
        machine: &'a Machine,
        /// The task graph.
        graph: &'a TaskGraph,
        /// The workers, in id order (on one machine GPUs first, then CPU cores; on a cluster
        /// rank by rank).
        workers: &'a [Worker],
        /// Names of the runtime's links, indexed by [`SimEvent::LinkLoads`]' link indices: the
        /// machine's links in order, a split-duplex link giving two (`NAME_UP`, `NAME_DOWN`).
        links: &'a [String],
        /// Scheduler name.
        sched: &'a str,
        /// The run's options (seed, ...).
        config: &'a RunConfig,
        /// Lower bounds on the makespan (critical path, area bound), e.g. to choose a time
        /// resolution before the run's length is known.
        bounds: crate::bounds::Bounds,
        /// Nodes, memory nodes, ranks and workers with the global ids events carry (on one
        /// machine: its memory nodes and `workers`).
        layout: &'a crate::layout::Layout,
    },
    /// The run is over: the last task ended at `makespan_s` and the final write-back at the
    /// date of this event. No event follows.
    RunEnd {
        /// Date the last task ended.
        makespan_s: f64,
    },
    /// A worker's state changed (reported only on change; every worker starts idle).
    WorkerState {
        /// The worker.
        worker: WorkerId,
        /// Its new state.
        state: WorkerStatus,
    },
    /// A task starts executing.
    TaskStart {
        /// The task (also StarPU's job id: tasks are numbered in submission order).
        task: TaskId,
        /// Where.
        worker: WorkerId,
        /// How long it will run (drawn from the kernel model).
        duration_s: f64,
        /// For each buffer the task reads: (handle, version of the replica it reads, latest
        /// version of the handle). Equal versions mean the read sees the latest write.
        reads: &'a [(HandleId, u32, u32)],
        /// Its codelet.
        codelet: CodeletId,
        /// The codelet's name.
        codelet_name: &'a str,
        /// Its flops.
        flops: f64,
        /// Sum of the sizes of its buffers (the `size` StarPU's models are indexed by).
        size_bytes: u64,
        /// Its scheduling priority.
        priority: i32,
    },
    /// A task ends.
    TaskEnd {
        /// The task.
        task: TaskId,
        /// Where it ran.
        worker: WorkerId,
        /// The memory node it ran in (where its writes are now valid).
        node: MemNodeId,
    },
    /// A transfer starts moving bytes (after its queueing cost).
    TransferStart {
        /// The data.
        handle: HandleId,
        /// From.
        src: MemNodeId,
        /// To.
        dst: MemNodeId,
        /// Size.
        bytes: f64,
        /// Why.
        kind: TransferKind,
        /// Version of the data copied.
        version: u32,
        /// Identifies the transfer among those in flight (pairs this event with its
        /// [`SimEvent::TransferEnd`]) across all ranks; reused by later transfers once this
        /// one ended. Small: below the ranks × the largest number of transfers one rank ever
        /// had queued or in flight at once.
        id: u32,
    },
    /// A transfer's last byte arrived.
    TransferEnd {
        /// The data.
        handle: HandleId,
        /// From.
        src: MemNodeId,
        /// To.
        dst: MemNodeId,
        /// Size.
        bytes: f64,
        /// Why.
        kind: TransferKind,
        /// Version of the data copied (stale if the handle was written meanwhile).
        version: u32,
        /// The id its [`SimEvent::TransferStart`] carried.
        id: u32,
    },
    /// Room was made for a replica on a device.
    Allocate {
        /// The memory node.
        node: MemNodeId,
        /// The data.
        handle: HandleId,
        /// Bytes allocated on the node after this allocation.
        used_bytes: u64,
        /// Whether it was paid for with a device allocation (cudaMalloc); false when it came
        /// out of a chunk already allocated or reused an evicted replica's.
        malloc: bool,
    },
    /// A replica was evicted from a device to make room (reported just before the
    /// [`SimEvent::Allocate`] it made room for). Its chunk is reused for the new replica if
    /// the sizes match, otherwise freed.
    Evict {
        /// The memory node.
        node: MemNodeId,
        /// The data evicted.
        handle: HandleId,
        /// Its size.
        bytes: u64,
    },
    /// The total rate of the transfers crossing some links changed, after the network
    /// re-shared its bandwidth (reported only to observers whose
    /// [`Observer::wants_link_loads`] is true).
    LinkLoads {
        /// The links whose load changed: (index into [`SimEvent::RunStart`]'s `links`, sum of
        /// the rates of the flows on the link in bytes per second), in link order.
        changed: &'a [(u32, f64)],
    },
    /// A message between ranks starts moving its bytes over the network (StarPU-MPI's send of
    /// one piece of data): after the sender's overhead, and for a rendezvous message once the
    /// receive is posted.
    MessageStart {
        /// The message task.
        task: TaskId,
        /// Sending rank.
        from_rank: u32,
        /// Receiving rank.
        to_rank: u32,
        /// Where the bytes leave (global memory node id).
        src: MemNodeId,
        /// Where they land (global memory node id).
        dst: MemNodeId,
        /// Payload.
        bytes: f64,
        /// Store-and-forward steps of its route (flows, or transfer-model times, one after the
        /// other); 0 between ranks sharing host memory.
        steps: u32,
    },
    /// A message is received: its bytes arrived and the receiver's overhead is paid; the data
    /// is valid in the receiver's memory.
    MessageEnd {
        /// The message task.
        task: TaskId,
        /// Sending rank.
        from_rank: u32,
        /// Receiving rank.
        to_rank: u32,
        /// Where the bytes left (global memory node id).
        src: MemNodeId,
        /// Where they landed (global memory node id).
        dst: MemNodeId,
        /// Payload.
        bytes: f64,
    },
    /// A task moved from one worker's queue to another's. Reserved for work-stealing
    /// schedulers: no scheduler emits it yet.
    Steal {
        /// The task.
        task: TaskId,
        /// The worker it was taken from.
        from: WorkerId,
        /// The worker that took it.
        to: WorkerId,
    },
}

/// Receives every [`SimEvent`] as it happens, with its date in seconds.
pub trait Observer {
    /// One event.
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>);

    /// Whether to report [`SimEvent::LinkLoads`] events (they cost the simulation a pass over
    /// the links after every change of the network, so only observers that draw bandwidth
    /// ask for them).
    fn wants_link_loads(&self) -> bool {
        false
    }
}

/// The observer that ignores everything.
impl Observer for () {
    fn event(&mut self, _at_s: f64, _event: &SimEvent<'_>) {}
}

fn fan_out(observers: &mut [&mut dyn Observer], at_s: f64, event: &SimEvent<'_>) {
    for o in observers.iter_mut() {
        o.event(at_s, event);
    }
}

/// Several observers fed the same stream, in order (e.g. a Paje and a Chrome writer):
/// `simulate_observed(..., &mut [&mut paje as &mut dyn Observer, &mut chrome])`.
impl<const N: usize> Observer for [&mut dyn Observer; N] {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        fan_out(self, at_s, event);
    }

    fn wants_link_loads(&self) -> bool {
        self.iter().any(|o| o.wants_link_loads())
    }
}

/// Several observers fed the same stream, in order, when their number is known at run time.
impl Observer for Vec<&mut dyn Observer> {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        fan_out(self, at_s, event);
    }

    fn wants_link_loads(&self) -> bool {
        self.iter().any(|o| o.wants_link_loads())
    }
}
