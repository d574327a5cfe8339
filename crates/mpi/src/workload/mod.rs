//! The cluster workloads as MPI-style programs: placement is the program's (owner computes).

mod bcast;
mod collectives;
mod hpl;
mod matmul;
mod offload;
mod p2p;
mod stencil;

pub use bcast::{BcastChoice, BcastSpec};
pub use collectives::{
    AllreduceChoice, AllreduceSpec, AlltoallChoice, AlltoallSpec, ReduceChoice, ReduceSpec,
};
pub use hpl::{HplSpec, PivotSearch, Pivots};
pub use matmul::{GpuInit, MatmulSpec};
pub use offload::OffloadSpec;
pub use p2p::{BufferSpec, ByteCount, P2pSpec};
pub use stencil::{
    StencilExchange, StencilLayout, StencilMethod, StencilPreset, StencilSpec, squarest,
};

use hetsim_core::InputError;
pub use hetsim_taskgraph::Precision;

/// A workload that runs as an MPI-style [`Program`](crate::Program) on a
/// [`Cluster`](hetsim_platform::cluster::Cluster) instead of a task graph under a scheduler: placement is
/// the program's (owner computes).
pub trait ProgramGenerator {
    /// Check the parameters against `cluster` and build the program.
    fn generate(
        &self,
        cluster: &hetsim_platform::cluster::Cluster,
    ) -> Result<crate::Program, InputError>;

    /// The program as its distributed task graph ([`crate::Program::to_task_graph`]):
    /// generators whose programs are large write the graph without the program.
    fn generate_graph(
        &self,
        cluster: &hetsim_platform::cluster::Cluster,
    ) -> Result<hetsim_taskgraph::TaskGraph, InputError> {
        self.generate(cluster)?.into_task_graph()
    }

    /// Flops counted for the GFlop/s figure, as the application reports it (HPL:
    /// 2N³/3 + 3N²/2); 0 for communication benchmarks.
    fn counted_flops(&self) -> f64;

    /// Flops counted for the GFlop/s figure when the workload runs on `cluster`; the same as
    /// [`Self::counted_flops`] unless the problem size depends on the rank count (a stencil's
    /// weak scaling, `grid_per_rank = true`).
    fn counted_flops_on(&self, cluster: &hetsim_platform::cluster::Cluster) -> f64 {
        let _ = cluster;
        self.counted_flops()
    }
}

/// The workload kinds that run as programs, each with its `[workload]` parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum ProgramWorkload {
    /// `kind = "p2p"`.
    P2p(P2pSpec),
    /// `kind = "bcast"`.
    Bcast(BcastSpec),
    /// `kind = "reduce"`.
    Reduce(ReduceSpec),
    /// `kind = "allreduce"`.
    Allreduce(AllreduceSpec),
    /// `kind = "alltoall"`.
    Alltoall(AlltoallSpec),
    /// `kind = "hpl"`.
    Hpl(HplSpec),
    /// `kind = "stencil"`.
    Stencil(StencilSpec),
    /// `kind = "matmul"`.
    Matmul(MatmulSpec),
    /// `kind = "offload"`.
    Offload(OffloadSpec),
}

impl ProgramWorkload {
    /// Every `workload.kind` that is a program.
    pub const KINDS: &'static [&'static str] = &[
        "p2p",
        "bcast",
        "reduce",
        "allreduce",
        "alltoall",
        "hpl",
        "stencil",
        "matmul",
        "offload",
    ];

    /// `workload.kind`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            ProgramWorkload::P2p(_) => "p2p",
            ProgramWorkload::Bcast(_) => "bcast",
            ProgramWorkload::Reduce(_) => "reduce",
            ProgramWorkload::Allreduce(_) => "allreduce",
            ProgramWorkload::Alltoall(_) => "alltoall",
            ProgramWorkload::Hpl(_) => "hpl",
            ProgramWorkload::Stencil(_) => "stencil",
            ProgramWorkload::Matmul(_) => "matmul",
            ProgramWorkload::Offload(_) => "offload",
        }
    }

    /// The generator behind it.
    pub fn generator(&self) -> &dyn ProgramGenerator {
        match self {
            ProgramWorkload::P2p(s) => s,
            ProgramWorkload::Bcast(s) => s,
            ProgramWorkload::Reduce(s) => s,
            ProgramWorkload::Allreduce(s) => s,
            ProgramWorkload::Alltoall(s) => s,
            ProgramWorkload::Hpl(s) => s,
            ProgramWorkload::Stencil(s) => s,
            ProgramWorkload::Matmul(s) => s,
            ProgramWorkload::Offload(s) => s,
        }
    }
}
