//! What hetsim simulates on: machines ([`machine`]: devices, memory nodes, links, routes and
//! kernel models, read from machine files) and clusters of them ([`cluster`]: nodes joined by
//! NICs and a switch, with their routes and MPI overheads).

pub mod cluster;
pub mod machine;
