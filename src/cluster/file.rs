//! Reading cluster files (`docs/cluster-format.md`).

use std::path::Path;

use crate::error::InputError;

use super::Cluster;

/// Load a cluster file, or a plain machine file as a one-node cluster.
pub(super) fn load(path: &Path) -> Result<Cluster, InputError> {
    crate::machine::load(path).map(Cluster::single_node)
}
