//! The cluster workloads written as MPI-style programs: ranks that run kernels and exchange
//! messages ([`program`]; each becomes a distributed task graph the runtime runs,
//! [`Program::to_task_graph`]), collectives by MPICH's algorithms ([`collective`]), and the
//! program generators ([`workload`]).

pub mod collective;
pub mod program;
pub mod workload;

pub use program::{Buffer, Kernel, Message, Op, OpId, Program, ProgramBuilder, RankId, Unit};
