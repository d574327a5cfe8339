//! Collectives built from point-to-point messages.
