//! What a scenario or a sweep reads, so that commands can refuse an output that would
//! overwrite one of its inputs (`hetsim_core::files::check_distinct`).

use hetsim_core::error::InputError;
use hetsim_core::files::{FileRole, RoleFile};

use crate::scenario::Scenario;
use crate::sweep::Sweep;

impl Scenario {
    /// The files this scenario reads: itself, then its machine or cluster file and what that
    /// includes (node machine, codelet files, overheads CSV). Loads the machine to find them.
    pub fn input_files(&self) -> Result<Vec<RoleFile>, InputError> {
        let mut v = vec![RoleFile::new(FileRole::Scenario, &self.file)];
        v.extend(self.load_cluster()?.source_files());
        Ok(v)
    }
}

impl Sweep {
    /// The files the sweep's runs read: the scenario, and the machine files of every run (a
    /// `--vary scenario.machine=...` gives several), each once.
    pub fn input_files(&self) -> Result<Vec<RoleFile>, InputError> {
        let mut v = vec![RoleFile::new(FileRole::Scenario, &self.scenario)];
        let mut machines = Vec::new();
        for p in self.points() {
            let sc = self.scenario_for(&p)?;
            if !machines.contains(&sc.machine_file) {
                machines.push(sc.machine_file.clone());
                v.extend(sc.load_cluster()?.source_files());
            }
        }
        Ok(v)
    }
}
