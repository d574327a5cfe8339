//! MPI-style programs on clusters: ranks that run kernels and exchange messages through the
//! cluster's fluid network ([`exec`]), collectives by MPICH's algorithms ([`collective`]), and
//! the program generators of the cluster workloads ([`workload`]).

pub mod collective;
pub mod exec;
pub mod program;
pub mod workload;

pub use program::{Buffer, Kernel, Message, Op, OpId, Program, ProgramBuilder, RankId, Unit};
