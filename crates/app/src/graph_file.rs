//! `[workload] kind = "taskgraph"`: a task graph read from a file (StarPU's `tasks.rec` or
//! `dag.dot`, hetsim's JSON format, a WfCommons instance) and run like a generated one.
//!
//! ```toml
//! [workload]
//! kind = "taskgraph"
//! file = "../traces/starpu/cholesky-9600-dmdas/tasks.rec"   # relative to the scenario file
//! format = "starpu-rec"          # optional: detected from the contents
//! durations = "models"           # or "recorded": tasks no model covers take their recorded time
//! gpu_synchronous = ["chol_model_potrf"]   # or "all" / "none" (the default)
//! ```
//!
//! The scenario loader takes the `[workload]` table out ([`take`]) before the rest is read; the
//! run reads the file ([`Scenario::read_graph_file`]), checks that the machine can time every
//! task (or fixes recorded durations), and that `--sched recorded` has a worker for every task.

use std::ops::Range;
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;
use toml::de::DeTable;

use hetsim_core::error::{Error, InputError};
use hetsim_models::DeviceRef;
use hetsim_platform::machine::Machine;
use hetsim_taskgraph::import::{GpuSynchronous, GraphFormat, ImportOptions, Imported, import};
use hetsim_taskgraph::{TaskGraph, TaskId, Unit};

use crate::scenario::{Scenario, Source, take_workload};

/// The `workload.kind` of a task graph read from a file.
pub const KIND: &str = "taskgraph";

/// Where tasks' durations come from (`workload.durations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durations {
    /// The machine's kernel models, by codelet and size; a task none covers is an error.
    #[default]
    Models,
    /// The models where they cover a task; otherwise the duration the file recorded, on the
    /// kind of unit it was recorded on.
    Recorded,
}

impl Durations {
    /// `models` or `recorded`.
    pub fn name(self) -> &'static str {
        match self {
            Durations::Models => "models",
            Durations::Recorded => "recorded",
        }
    }
}

/// A `[workload]` of kind `taskgraph`.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphFileSpec {
    /// The file, resolved against the scenario's directory (or the working directory when
    /// given with `--set`).
    pub file: PathBuf,
    /// The format; `None`: detected.
    pub format: Option<GraphFormat>,
    /// Where durations come from.
    pub durations: Durations,
    /// Which codelets run synchronously on GPUs.
    pub gpu_synchronous: GpuSynchronous,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    file: Spanned<String>,
    #[serde(default)]
    format: Option<Spanned<String>>,
    #[serde(default)]
    durations: Option<Spanned<String>>,
    #[serde(default)]
    gpu_synchronous: Option<Spanned<GpuSyncRaw>>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum GpuSyncRaw {
    Word(String),
    List(Vec<String>),
}

/// A graph-file workload, the span of its `kind`, and its fields' spans.
pub(crate) type GraphFileWithSpans = (GraphFileSpec, Range<usize>, Vec<(String, Range<usize>)>);

/// If `[workload] kind = "taskgraph"`, take the `[workload]` table out of the tree and read it.
pub(crate) fn take(
    src: &Source<'_>,
    table: &mut DeTable<'_>,
) -> Result<Option<GraphFileWithSpans>, InputError> {
    let Some(taken) = take_workload(table, |k| k == KIND) else {
        return Ok(None);
    };
    let raw: Raw = taken.read(src)?;
    let fspan = raw.file.span();
    if raw.file.get_ref().trim().is_empty() {
        return Err(src.err(&fspan, "workload.file", "the task-graph file path is empty"));
    }
    let file = if src.override_at(fspan.start).is_some() {
        PathBuf::from(raw.file.get_ref())
    } else {
        src.dir().join(raw.file.get_ref())
    };
    let format = match &raw.format {
        Some(f) => Some(
            f.get_ref()
                .parse()
                .map_err(|m: String| src.err(&f.span(), "workload.format", m))?,
        ),
        None => None,
    };
    let durations = match &raw.durations {
        None => Durations::Models,
        Some(d) => match d.get_ref().trim() {
            "models" => Durations::Models,
            "recorded" => Durations::Recorded,
            other => {
                return Err(src.err(
                    &d.span(),
                    "workload.durations",
                    format!("unknown durations `{other}`: expected `models` or `recorded`"),
                ));
            }
        },
    };
    let gpu_synchronous = match raw
        .gpu_synchronous
        .as_ref()
        .map(|g| (g.get_ref(), g.span()))
    {
        None => GpuSynchronous::None,
        Some((GpuSyncRaw::Word(w), span)) => match w.trim() {
            "none" => GpuSynchronous::None,
            "all" => GpuSynchronous::All,
            other => {
                return Err(src.err(
                    &span,
                    "workload.gpu_synchronous",
                    format!("`{other}`: expected \"all\", \"none\" or a list of codelet names"),
                ));
            }
        },
        Some((GpuSyncRaw::List(names), _)) => GpuSynchronous::Codelets(names.clone()),
    };
    let spec = GraphFileSpec {
        file,
        format,
        durations,
        gpu_synchronous,
    };
    Ok(Some((spec, taken.kind_span, taken.fields)))
}

/// How many workers of each kind a run of `machine` has, numbered GPUs first (as the runtime
/// numbers them): `(gpus, cpus)`.
fn worker_counts(machine: &Machine, sc: &Scenario) -> (u32, u32) {
    let ngpu = sc.run.ncuda.unwrap_or(machine.gpus().len() as u32);
    let reserved = if machine.runtime().gpu_driver_cores {
        ngpu
    } else {
        0
    };
    let ncpu = sc
        .run
        .ncpu
        .unwrap_or(machine.cpu_cores().saturating_sub(reserved));
    (ngpu, ncpu)
}

/// Whether no unit of `machine` has a kernel model for `task`.
fn lacks_model(machine: &Machine, graph: &TaskGraph, task: TaskId) -> bool {
    let t = graph.task(task);
    let models = machine.perf_models();
    if models.is_empty() {
        // A flop-rate machine times only tasks that count their flops.
        return t.flops() <= 0.0;
    }
    let name = graph.task_codelet_name(task);
    let size = t.model_size_bytes();
    let devices = std::iter::once(DeviceRef::Cpu)
        .chain((0..machine.gpus().len() as u32).map(|g| DeviceRef::Gpu(hetsim_models::GpuId(g))));
    !devices
        .into_iter()
        .any(|d| models.predict_s(name, d, size, t.flops()).is_ok())
}

impl Scenario {
    /// Read the scenario's task-graph file, without a machine: durations are not resolved.
    pub fn import_graph_file(&self) -> Result<Option<Imported>, InputError> {
        let Some(g) = &self.graph_file else {
            return Ok(None);
        };
        if !g.file.is_file() {
            return Err(self.locate(
                InputError::new(format!(
                    "cannot read task-graph file {}: no such file (a path in the scenario is \
                     relative to its directory, one given with --set to the working directory)",
                    g.file.display()
                ))
                .at_field("workload.file"),
            ));
        }
        let options = ImportOptions {
            format: g.format,
            gpu_synchronous: g.gpu_synchronous.clone(),
        };
        import(&g.file, &options).map(Some)
    }

    /// Read the task-graph file and make it runnable on `machine`: every computation timed by
    /// a kernel model or (with `durations = "recorded"`) by its recorded duration, and under
    /// `recorded` every computation with a recorded worker this run has.
    pub fn read_graph_file(&self, machine: &Machine) -> Result<Option<Imported>, InputError> {
        let Some(mut imported) = self.import_graph_file()? else {
            return Ok(None);
        };
        let g = self.graph_file.as_ref().expect("a graph-file scenario");
        if g.durations == Durations::Recorded {
            imported.use_recorded_durations(|graph, t| lacks_model(machine, graph, t))?;
        }
        let graph = &imported.graph;
        if let Some(t) = graph.task_ids().find(|&t| {
            graph.task(t).is_compute() && !graph.fixes_duration(t) && lacks_model(machine, graph, t)
        }) {
            return Err(imported.error_at(
                t,
                format!(
                    "task {} (`{}`, {} bytes of data): machine `{}` has no kernel model of \
                     codelet `{}` for that size on any unit; add one to the machine file, or set \
                     workload.durations = \"recorded\" to use the duration the file recorded",
                    imported.origins[t.index()].id,
                    graph.task_codelet_name(t),
                    graph.task(t).model_size_bytes(),
                    machine.name(),
                    graph.task_codelet_name(t),
                ),
            ));
        }
        if self.scheduler.name() == "recorded" {
            let (ngpu, ncpu) = worker_counts(machine, self);
            for t in graph.task_ids().filter(|&t| graph.task(t).is_compute()) {
                let id = &imported.origins[t.index()].id;
                let Some(w) = graph.recorded_worker(t) else {
                    return Err(imported.error_at(
                        t,
                        format!(
                            "task {id} has no recorded worker, which `--sched recorded` needs; \
                             choose another scheduler"
                        ),
                    ));
                };
                let here = if w.id < ngpu {
                    Some(Unit::Gpu)
                } else if w.id < ngpu + ncpu {
                    Some(Unit::Cpu)
                } else {
                    None
                };
                if here != Some(w.unit) {
                    let kind = |u: Unit| if u == Unit::Gpu { "GPU" } else { "CPU" };
                    return Err(imported.error_at(
                        t,
                        format!(
                            "task {id} ran on worker {} (a {}), but this run of machine `{}` has \
                             {ngpu} GPU workers (0-{}) then {ncpu} CPU workers: `--sched \
                             recorded` needs the recorded machine's workers",
                            w.id,
                            kind(w.unit),
                            machine.name(),
                            ngpu.saturating_sub(1)
                        ),
                    ));
                }
            }
        }
        Ok(Some(imported))
    }

    /// The scenario's task graph: generated, or read from its file (durations resolved on the
    /// scenario's machine).
    pub fn task_graph(&self) -> Result<TaskGraph, Error> {
        if self.graph_file.is_some() {
            let machine = self.load_machine()?;
            let imported = self
                .read_graph_file(&machine)?
                .expect("a graph-file scenario");
            return Ok(imported.graph);
        }
        Ok(self.generate()?)
    }
}
