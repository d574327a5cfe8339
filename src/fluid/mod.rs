//! Fluid network.
