//! What a scenario or a sweep reads, so that commands can refuse an output that would
//! overwrite one of its inputs (`hetsim_core::files::check_distinct`).

use hetsim_core::error::InputError;
use hetsim_core::files::{FileRole, RoleFile};

use crate::scenario::Scenario;
use crate::sweep::Sweep;

impl Scenario {
    /// The files this scenario reads: itself, then its machine or cluster file and what that
    /// includes (node machine, codelet files, overheads CSV), then its task-graph file if any.
    /// Loads the machine to find them.
    pub fn input_files(&self) -> Result<Vec<RoleFile>, InputError> {
        let mut v = vec![RoleFile::new(FileRole::Scenario, &self.file)];
        v.extend(self.load_cluster()?.source_files());
        v.extend(self.graph_files());
        Ok(v)
    }

    /// The task-graph file, and the `data.rec` a `tasks.rec` is read with (whether or not it
    /// exists: an output must not create it either, as the next run would read it).
    fn graph_files(&self) -> Vec<RoleFile> {
        self.graph_file
            .iter()
            .flat_map(|g| {
                [
                    RoleFile::new(FileRole::TaskGraph, &g.file),
                    RoleFile::new(FileRole::TaskGraph, g.file.with_file_name("data.rec")),
                ]
            })
            .collect()
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
            v.extend(sc.graph_files());
        }
        Ok(v)
    }
}
