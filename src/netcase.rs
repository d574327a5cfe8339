//! Net cases.
