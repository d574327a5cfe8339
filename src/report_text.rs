//! The human-readable report of `hetsim run`.
