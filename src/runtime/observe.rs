//! The stream of simulation events. Every output (traces, statistics, invariant checks in
//! tests) is an observer of it; none reaches into the simulation.

use crate::machine::MemNodeId;
use crate::workload::{HandleId, TaskId};

use super::WorkerId;
use super::transfer::TransferKind;

/// Something that happened in the simulation, at the date passed beside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SimEvent<'a> {
    /// A task starts executing.
    TaskStart {
        /// The task.
        task: TaskId,
        /// Where.
        worker: WorkerId,
        /// How long it will run (drawn from the kernel model).
        duration_s: f64,
        /// For each buffer the task reads: (handle, version of the replica it reads, latest
        /// version of the handle). Equal versions mean the read sees the latest write.
        reads: &'a [(HandleId, u32, u32)],
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
    },
    /// Room was made for a replica on a device.
    Allocate {
        /// The memory node.
        node: MemNodeId,
        /// The data.
        handle: HandleId,
        /// Bytes allocated on the node after this allocation.
        used_bytes: u64,
    },
}

/// Receives every [`SimEvent`] as it happens, with its date in seconds.
pub trait Observer {
    /// One event.
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>);
}

/// The observer that ignores everything.
impl Observer for () {
    fn event(&mut self, _at_s: f64, _event: &SimEvent<'_>) {}
}
