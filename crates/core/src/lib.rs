//! hetsim's foundation, knowing nothing of machines or tasks: the event calendar ([`engine`]),
//! the fluid network that shares link bandwidth max-min fairly ([`fluid`]), quantities with
//! units ([`units`]), errors with their file, line and field ([`error`]), the input and
//! output files and their guarantees ([`files`]), the run's seeded
//! random number generator ([`rng`]), MPICH's collective selection rule ([`mpich`]) and how
//! registered components describe their options ([`options`]).

pub mod engine;
pub mod error;
pub mod files;
pub mod fluid;
pub mod linpack;
pub mod mpich;
pub mod options;
pub mod rng;
pub mod units;

pub use error::{Error, InputError, Result};
