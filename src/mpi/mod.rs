//! MPI-style applications on clusters: programs of kernels and messages between ranks, the
//! collectives built from point-to-point messages, and the executor that runs a program on a
//! cluster's fluid network.

pub mod collective;
pub mod exec;
pub mod program;

pub use program::{Buffer, Kernel, Message, Op, OpId, Program, ProgramBuilder, RankId, Unit};
