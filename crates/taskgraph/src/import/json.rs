//! hetsim's own JSON task-graph format: what [`write`] writes and [`read`] reads. The schema is
//! `docs/taskgraph.schema.json`; `docs/taskgraph-files.md` explains each field.
//!
//! A file lists handles (sizes) and tasks in submission order, each with its codelet, flops,
//! priority, accesses and explicit predecessors (`after`, indices into `tasks`). With
//! `infer_dependencies` (the default) the accesses also imply StarPU's sequential-consistency
//! dependencies; files hetsim writes list every edge in `after` and set it to `false`.

use std::path::Path;

use hetsim_core::InputError;
use serde::{Deserialize, Serialize};

use super::{GpuSynchronous, ImportOptions, ImportStats, Parts, TaskOrigin};
use crate::{
    Access, AccessMode, Handle, HandleId, Home, NodeId, RecordedWorker, TaskGraph,
    TaskGraphBuilder, TaskId, Tile, Unit,
};

/// The value of `format` in every file.
pub const FORMAT: &str = "hetsim-taskgraph";
/// The version of the format this build reads and writes.
pub const VERSION: u32 = 1;

/// A whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// What the graph is (free text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether the accesses imply dependencies too (default `true`).
    #[serde(default = "yes")]
    pub infer_dependencies: bool,
    /// Codelets whose GPU implementation is synchronous (no `STARPU_CUDA_ASYNC`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_synchronous: Vec<String>,
    /// The data handles; tasks name them by index.
    #[serde(default)]
    pub handles: Vec<HandleEntry>,
    /// The tasks, in submission order.
    pub tasks: Vec<TaskEntry>,
    /// "Will not be used" hints (StarPU's `starpu_data_wont_use`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wont_use: Vec<WontUseEntry>,
    /// Synchronous acquisitions of data the program makes before its first task (default 0;
    /// [`crate::TaskGraphBuilder::startup_acquires`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub startup_acquires: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn yes() -> bool {
    true
}

/// One data handle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandleEntry {
    /// Size in bytes.
    pub size_bytes: u64,
    /// Matrix shape `[rows, cols]` in elements, if it is a matrix tile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dims: Option<[u32; 2]>,
    /// Tile coordinates, for traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile: Option<TileEntry>,
}

/// Tile coordinates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TileEntry {
    /// The matrix, one character (`A`).
    pub matrix: char,
    /// Tile row.
    pub row: u32,
    /// Tile column.
    pub col: u32,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskEntry {
    /// Its name in the file (for messages; default its index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The codelet (performance-model symbol) its duration is looked up by.
    pub codelet: String,
    /// Floating-point operations.
    #[serde(default)]
    pub flops: f64,
    /// Scheduling priority (larger first).
    #[serde(default)]
    pub priority: i32,
    /// Buffers: `[handle index, "R" | "W" | "RW"]`.
    #[serde(default)]
    pub accesses: Vec<(u32, ModeEntry)>,
    /// Indices of the tasks it waits for, besides those its accesses imply.
    #[serde(default)]
    pub after: Vec<u32>,
    /// Durations it fixes itself per unit, seconds (instead of the machine's kernel models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<DurationsEntry>,
    /// The worker it ran on in a recorded run, and for how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<RecordedEntry>,
}

/// An access mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModeEntry {
    /// Read.
    R,
    /// Write.
    W,
    /// Read and write.
    RW,
}

/// Fixed durations per unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurationsEntry {
    /// On a CPU core, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    /// On a GPU, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<f64>,
}

/// A kind of unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitEntry {
    /// A CPU core.
    Cpu,
    /// A GPU.
    Gpu,
}

/// Where and how long a task ran in a recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedEntry {
    /// The worker's number (GPUs first, then CPU cores).
    pub worker: u32,
    /// The worker's kind.
    pub unit: UnitEntry,
    /// How long it ran, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
}

/// A "will not be used" hint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WontUseEntry {
    /// The handle.
    pub handle: u32,
    /// The hint comes after this task (index) in submission order.
    pub after_task: u32,
}

impl From<UnitEntry> for Unit {
    fn from(u: UnitEntry) -> Unit {
        match u {
            UnitEntry::Cpu => Unit::Cpu,
            UnitEntry::Gpu => Unit::Gpu,
        }
    }
}

impl From<Unit> for UnitEntry {
    fn from(u: Unit) -> UnitEntry {
        match u {
            Unit::Cpu => UnitEntry::Cpu,
            Unit::Gpu => UnitEntry::Gpu,
        }
    }
}

/// `graph` as a file. Only single-node graphs of computations with their data in RAM can be
/// written (not StarPU-MPI's distributed graphs, nor MPI programs' messages and delays).
pub fn to_file(graph: &TaskGraph, name: Option<String>) -> Result<GraphFile, InputError> {
    let mut handles = Vec::with_capacity(graph.handles().len());
    for (i, h) in graph.handles().iter().enumerate() {
        if h.node != NodeId(0) || h.home != Home::Ram || !h.starts_valid {
            return Err(InputError::new(format!(
                "handle {i} lives on node {} or outside RAM: the JSON format holds single-node \
                 graphs with their data in RAM",
                h.node.0
            )));
        }
        handles.push(HandleEntry {
            size_bytes: h.size_bytes,
            dims: h.dims.map(|(r, c)| [r, c]),
            tile: h.tile.map(|t| TileEntry {
                matrix: t.matrix,
                row: t.row,
                col: t.col,
            }),
        });
    }
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); graph.num_tasks()];
    for t in graph.task_ids() {
        for s in graph.successors(t) {
            preds[s.index()].push(t.0);
        }
    }
    let mut tasks = Vec::with_capacity(graph.num_tasks());
    for (t, after) in graph.task_ids().zip(preds) {
        let task = graph.task(t);
        if !task.is_compute() || task.node != NodeId(0) {
            return Err(InputError::new(format!(
                "task {} is a message or a delay, or runs on node {}: the JSON format holds \
                 single-node graphs of computations",
                t.0, task.node.0
            )));
        }
        let fixed = |u| graph.fixed_duration_s(t, u);
        let duration_s = graph.fixes_duration(t).then(|| DurationsEntry {
            cpu: fixed(Unit::Cpu),
            gpu: fixed(Unit::Gpu),
        });
        tasks.push(TaskEntry {
            id: None,
            codelet: graph.task_codelet_name(t).to_string(),
            flops: task.flops(),
            priority: task.priority,
            accesses: graph
                .accesses(t)
                .iter()
                .map(|a| {
                    let m = match a.mode {
                        AccessMode::R => ModeEntry::R,
                        AccessMode::W => ModeEntry::W,
                        AccessMode::RW => ModeEntry::RW,
                    };
                    (a.handle.0, m)
                })
                .collect(),
            after,
            duration_s,
            recorded: graph.recorded_worker(t).map(|w| RecordedEntry {
                worker: w.id,
                unit: w.unit.into(),
                duration_s: None,
            }),
        });
    }
    Ok(GraphFile {
        format: FORMAT.to_string(),
        version: VERSION,
        name,
        infer_dependencies: false,
        gpu_synchronous: graph.gpu_synchronous_codelets().map(String::from).collect(),
        handles,
        tasks,
        wont_use: graph
            .wont_use_hints()
            .iter()
            .map(|w| WontUseEntry {
                handle: w.handle.0,
                after_task: w.after.0,
            })
            .collect(),
        startup_acquires: graph.startup_acquires(),
    })
}

/// `graph` as JSON text (pretty-printed, one trailing newline).
pub fn write(graph: &TaskGraph, name: Option<String>) -> Result<String, InputError> {
    let file = to_file(graph, name)?;
    let mut s = serde_json::to_string_pretty(&file)
        .map_err(|e| InputError::new(format!("cannot write the graph as JSON: {e}")))?;
    s.push('\n');
    Ok(s)
}

pub(crate) fn read(path: &Path, options: &ImportOptions) -> Result<Parts, InputError> {
    let text = super::read_text(path)?;
    let file: GraphFile = serde_json::from_str(&text).map_err(|e| {
        InputError::new(format!("not a hetsim task graph: {e}")).at_line(e.line().max(1))
    })?;
    from_file(&file, &options.gpu_synchronous)
}

/// The graph a file describes; `gpu_sync` adds to the file's own `gpu_synchronous` list.
pub fn from_file(file: &GraphFile, gpu_sync: &GpuSynchronous) -> Result<Parts, InputError> {
    if file.format != FORMAT {
        return Err(InputError::new(format!(
            "`format` is `{}`: expected `{FORMAT}`",
            file.format
        ))
        .at_field("format"));
    }
    if file.version != VERSION {
        return Err(InputError::new(format!(
            "`version` is {}: this hetsim reads version {VERSION}",
            file.version
        ))
        .at_field("version"));
    }
    let n = file.tasks.len();
    let mut b = TaskGraphBuilder::with_capacity(n, file.handles.len(), 0);
    b.startup_acquires(file.startup_acquires);
    b.infer_dependencies(file.infer_dependencies);
    for (i, h) in file.handles.iter().enumerate() {
        b.add_handle(Handle {
            dims: h.dims.map(|[r, c]| (r, c)),
            tile: h.tile.as_ref().map(|t| Tile {
                matrix: t.matrix,
                row: t.row,
                col: t.col,
            }),
            ..Handle::bytes(h.size_bytes)
        })
        .map_err(|e| e.at_field(format!("handles[{i}]")))?;
    }
    let mut hints: Vec<&WontUseEntry> = file.wont_use.iter().collect();
    hints.sort_by_key(|h| h.after_task);
    let mut hints = hints.into_iter().peekable();
    let mut origins = Vec::with_capacity(n);
    let mut backward = Vec::new();
    let (mut accesses, mut after) = (Vec::new(), Vec::new());
    for (i, t) in file.tasks.iter().enumerate() {
        let field = |f: &str| format!("tasks[{i}].{f}");
        let codelet = b
            .codelet(&t.codelet)
            .map_err(|e| e.at_field(field("codelet")))?;
        if gpu_sync.applies(&t.codelet) || file.gpu_synchronous.contains(&t.codelet) {
            b.gpu_synchronous(codelet);
        }
        accesses.clear();
        for (k, &(h, m)) in t.accesses.iter().enumerate() {
            if h as usize >= file.handles.len() {
                return Err(InputError::new(format!(
                    "handle {h} does not exist: the file has {} handles",
                    file.handles.len()
                ))
                .at_field(field(&format!("accesses[{k}]"))));
            }
            let mode = match m {
                ModeEntry::R => AccessMode::R,
                ModeEntry::W => AccessMode::W,
                ModeEntry::RW => AccessMode::RW,
            };
            accesses.push(Access::new(HandleId(h), mode));
        }
        after.clear();
        for (k, &p) in t.after.iter().enumerate() {
            if p as usize >= n || p as usize == i {
                return Err(InputError::new(format!(
                    "task {p} {}: expected the index of another of the {n} tasks",
                    if p as usize == i {
                        "is the task itself"
                    } else {
                        "does not exist"
                    }
                ))
                .at_field(field(&format!("after[{k}]"))));
            }
            if (p as usize) < i {
                after.push(TaskId(p));
            } else {
                backward.push((TaskId(p), TaskId(i as u32)));
            }
        }
        let id = b
            .submit_after(codelet, t.flops, t.priority, &accesses, &after)
            .map_err(|e| e.at_field(format!("tasks[{i}]")))?;
        if let Some(d) = &t.duration_s {
            for (unit, secs) in [(Unit::Cpu, d.cpu), (Unit::Gpu, d.gpu)] {
                if let Some(s) = secs {
                    b.fix_duration(id, unit, s)
                        .map_err(|e| e.at_field(field("duration_s")))?;
                }
            }
        }
        let mut recorded = None;
        if let Some(r) = &t.recorded {
            b.record_worker(
                id,
                RecordedWorker {
                    id: r.worker,
                    unit: r.unit.into(),
                },
            )?;
            recorded = r.duration_s.map(|d| (Unit::from(r.unit), d));
        }
        origins.push(TaskOrigin {
            line: 0,
            id: super::Label::new(&t.id.clone().unwrap_or_else(|| i.to_string())),
            recorded,
        });
        while let Some(h) = hints.next_if(|h| h.after_task as usize == i) {
            if h.handle as usize >= file.handles.len() {
                return Err(InputError::new(format!(
                    "handle {} does not exist: the file has {} handles",
                    h.handle,
                    file.handles.len()
                ))
                .at_field("wont_use"));
            }
            b.wont_use(HandleId(h.handle))?;
        }
    }
    if let Some(h) = hints.next() {
        return Err(InputError::new(format!(
            "a hint after task {}, which does not exist (the file has {n} tasks)",
            h.after_task
        ))
        .at_field("wont_use"));
    }
    for (p, t) in backward {
        b.add_dependency(p, t)?;
    }
    if let Some(t) = b.find_cycle() {
        return Err(InputError::new(format!(
            "the dependencies contain a cycle through task {}: a task cannot wait for itself",
            origins[t.index()].id
        ))
        .at_field("tasks"));
    }
    let stats = ImportStats {
        wont_use: file.wont_use.len(),
        ..ImportStats::default()
    };
    Ok((b.build()?, origins, stats))
}
