//! Task graphs read from files: StarPU's `tasks.rec` (with `data.rec`), StarPU's `dag.dot`,
//! hetsim's own JSON format (which [`json::write`] also writes), and WfCommons' WfFormat
//! instances. `docs/taskgraph-files.md` documents what each format gives and how it maps.
//!
//! Every reader gives an [`Imported`] graph: the [`TaskGraph`] in submission order, and per task
//! where it came from (the line of its record) and the duration it was recorded with, if any,
//! so that errors found later (a task no kernel model covers) name the file and line, and a
//! caller may fix recorded durations ([`Imported::use_recorded_durations`]).

mod dot;
pub mod json;
mod records;
mod starpu;
mod wfformat;

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use hetsim_core::InputError;

use crate::{TaskGraph, TaskId, Unit};

/// A task-graph file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GraphFormat {
    /// StarPU's `tasks.rec` (GNU recutils records), as `starpu_fxt_tool` writes it.
    StarpuRec,
    /// StarPU's `dag.dot` (Graphviz), as `starpu_fxt_tool` writes it.
    Dot,
    /// hetsim's JSON task graph (`docs/taskgraph.schema.json`).
    Json,
    /// A WfCommons WfFormat instance (JSON).
    WfFormat,
}

impl GraphFormat {
    /// The names `workload.format` takes, in documentation order.
    pub const NAMES: [&'static str; 4] = ["starpu-rec", "dot", "json", "wfformat"];

    /// The format's name, as `workload.format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            GraphFormat::StarpuRec => "starpu-rec",
            GraphFormat::Dot => "dot",
            GraphFormat::Json => "json",
            GraphFormat::WfFormat => "wfformat",
        }
    }

    /// The format a file is in, from its first bytes (after decompression): `digraph`
    /// (Graphviz), `{` (JSON: hetsim's if it has `"format": "hetsim-taskgraph"`, else
    /// WfFormat), otherwise recutils records.
    pub fn detect(path: &Path) -> Result<GraphFormat, InputError> {
        let mut head = Vec::new();
        Read::take(open(path)?, 1 << 16)
            .read_to_end(&mut head)
            .map_err(|e| InputError::new(format!("cannot read file: {e}")).in_file(path))?;
        let text = String::from_utf8_lossy(&head);
        let start = text.trim_start();
        Ok(
            if start.starts_with("digraph") || start.starts_with("strict") {
                GraphFormat::Dot
            } else if start.starts_with('{') {
                if text.contains("\"hetsim-taskgraph\"") {
                    GraphFormat::Json
                } else {
                    GraphFormat::WfFormat
                }
            } else {
                GraphFormat::StarpuRec
            },
        )
    }
}

impl fmt::Display for GraphFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for GraphFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "starpu-rec" | "tasks.rec" | "rec" => Ok(GraphFormat::StarpuRec),
            "dot" | "dag.dot" => Ok(GraphFormat::Dot),
            "json" | "hetsim" => Ok(GraphFormat::Json),
            "wfformat" | "wfcommons" => Ok(GraphFormat::WfFormat),
            other => Err(format!(
                "unknown task-graph format `{other}`: expected one of {}",
                GraphFormat::NAMES.join(", ")
            )),
        }
    }
}

/// Which codelets run synchronously on GPUs ([`crate::TaskGraphBuilder::gpu_synchronous`]).
/// Files do not say: StarPU's `STARPU_CUDA_ASYNC` flag is in the application's source.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum GpuSynchronous {
    /// None (every codelet asynchronous, as hetsim's own graphs except Cholesky's potrf).
    #[default]
    None,
    /// All of them (StarPU's `starpu_replay` gives its one generic codelet no
    /// `STARPU_CUDA_ASYNC`).
    All,
    /// These codelet names.
    Codelets(Vec<String>),
}

impl GpuSynchronous {
    fn applies(&self, codelet: &str) -> bool {
        match self {
            GpuSynchronous::None => false,
            GpuSynchronous::All => true,
            GpuSynchronous::Codelets(names) => names.iter().any(|n| n == codelet),
        }
    }
}

/// How to read a file.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The format; `None`: detected from the contents ([`GraphFormat::detect`]).
    pub format: Option<GraphFormat>,
    /// Which codelets run synchronously on GPUs.
    pub gpu_synchronous: GpuSynchronous,
}

/// A task's name in its file: a number (StarPU's job ids, WfFormat's and JSON's indices when
/// numeric) or text. Numbers are kept without allocating: a trace has millions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Label {
    /// A decimal number.
    Number(u64),
    /// Anything else.
    Text(Box<str>),
}

impl Label {
    /// `text` as a label: a number if it is one (written without leading zeros), else text.
    pub fn new(text: &str) -> Label {
        Label::number(text).map_or_else(|| Label::Text(text.into()), Label::Number)
    }

    /// `text`'s value if it is a decimal number that prints back as `text` (digits only, no
    /// sign, no leading zero), so that a label always displays as it was written.
    pub(crate) fn number(text: &str) -> Option<u64> {
        let canonical =
            text.bytes().all(|b| b.is_ascii_digit()) && !(text.len() > 1 && text.starts_with('0'));
        if canonical { text.parse().ok() } else { None }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Number(n) => write!(f, "{n}"),
            Label::Text(t) => f.write_str(t),
        }
    }
}

/// Where one task of an imported graph came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOrigin {
    /// 1-based line of its record (the first line of a multi-line record); 0 for the JSON
    /// formats, whose errors name the field instead.
    pub line: u32,
    /// Its name in the file (StarPU's job id, a DOT node, a JSON or WfFormat task id).
    pub id: Label,
    /// Its duration in the recorded run, on that run's kind of unit, if the file has one.
    pub recorded: Option<(Unit, f64)>,
}

/// What a file holds besides its tasks, for reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportStats {
    /// Records without a codelet (StarPU's acquire, sync and unnamed internal tasks): their
    /// dependencies are kept, passed through them to the tasks that waited on them.
    pub contracted: usize,
    /// "Will not be used" hints read.
    pub wont_use: usize,
    /// Hints dropped: on a handle no task accesses, or before the first task.
    pub wont_use_dropped: usize,
}

/// A task graph read from a file.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The file.
    pub file: PathBuf,
    /// Its format.
    pub format: GraphFormat,
    /// The graph, tasks in submission order.
    pub graph: TaskGraph,
    /// Per task ([`TaskId`] order), where it came from.
    pub origins: Vec<TaskOrigin>,
    /// Counts for reports.
    pub stats: ImportStats,
}

impl Imported {
    /// An error about `task`, located at its record.
    pub fn error_at(&self, task: TaskId, message: impl Into<String>) -> InputError {
        let e = InputError::new(message).in_file(&self.file);
        match self.origins[task.index()].line {
            0 => e,
            line => e.at_line(line as usize),
        }
    }

    /// Fix the recorded duration of every task `lacks_model` says no kernel model covers, on
    /// the unit it was recorded on (it then runs only there, as `starpu_replay` pins a task
    /// without a model to its recorded worker). A task with neither a model nor a recorded
    /// duration is an error naming its record. Returns how many tasks took their recorded
    /// duration.
    pub fn use_recorded_durations(
        &mut self,
        lacks_model: impl Fn(&TaskGraph, TaskId) -> bool,
    ) -> Result<usize, InputError> {
        let mut fixed = 0;
        for i in 0..self.graph.num_tasks() {
            let t = TaskId(i as u32);
            if !self.graph.task(t).is_compute()
                || self.graph.fixes_duration(t)
                || !lacks_model(&self.graph, t)
            {
                continue;
            }
            let Some((unit, secs)) = self.origins[t.index()].recorded else {
                return Err(self.error_at(
                    t,
                    format!(
                        "task {} (`{}`) has no kernel model on the machine and no recorded \
                         duration in the file",
                        self.origins[t.index()].id,
                        self.graph.task_codelet_name(t)
                    ),
                ));
            };
            self.graph
                .fix_duration(t, unit, secs)
                .map_err(|e| self.error_at(t, e.message))?;
            fixed += 1;
        }
        Ok(fixed)
    }
}

/// Read the task graph in `path`.
pub fn import(path: &Path, options: &ImportOptions) -> Result<Imported, InputError> {
    let format = match options.format {
        Some(f) => f,
        None => GraphFormat::detect(path)?,
    };
    let read: Result<Parts, InputError> = match format {
        GraphFormat::StarpuRec => starpu::read(path, options),
        GraphFormat::Dot => dot::read(path, options),
        GraphFormat::Json => json::read(path, options),
        GraphFormat::WfFormat => wfformat::read(path, options),
    };
    let (graph, origins, stats) = read.map_err(|e| e.in_file(path))?;
    Ok(Imported {
        file: path.to_path_buf(),
        format,
        graph,
        origins,
        stats,
    })
}

/// `path` opened for buffered reading, decompressed if it starts with gzip's magic bytes.
pub(crate) fn open(path: &Path) -> Result<Box<dyn BufRead>, InputError> {
    let file = std::fs::File::open(path)
        .map_err(|e| InputError::new(format!("cannot read file: {e}")).in_file(path))?;
    let mut r = BufReader::with_capacity(1 << 16, file);
    let gz = r
        .fill_buf()
        .map_err(|e| InputError::new(format!("cannot read file: {e}")).in_file(path))?
        .starts_with(&[0x1f, 0x8b]);
    Ok(if gz {
        Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::bufread::MultiGzDecoder::new(r),
        ))
    } else {
        Box::new(r)
    })
}

/// The whole of `path` as text (decompressed), for the formats read at once.
pub(crate) fn read_text(path: &Path) -> Result<String, InputError> {
    let mut s = String::new();
    open(path)?
        .read_to_string(&mut s)
        .map_err(|e| InputError::new(format!("cannot read file: {e}")).in_file(path))?;
    Ok(s)
}

/// What every reader returns: the graph, each task's origin, the counts.
pub type Parts = (TaskGraph, Vec<TaskOrigin>, ImportStats);

#[cfg(test)]
mod tests {
    use super::Label;

    /// Only names that print back exactly as written are numbers: error messages and exports
    /// must show a task's name as its file spells it.
    #[test]
    fn labels_are_numbers_only_when_they_print_back_unchanged() {
        assert_eq!(Label::new("0"), Label::Number(0));
        assert_eq!(Label::new("18446744073709551615"), Label::Number(u64::MAX));
        for text in [
            "",
            "007",
            "+5",
            "-1",
            "1e3",
            "18446744073709551616",
            "task_3",
            " 4",
        ] {
            assert_eq!(Label::new(text), Label::Text(text.into()), "{text:?}");
            assert_eq!(Label::new(text).to_string(), text);
        }
        assert_eq!(Label::new("42").to_string(), "42");
    }
}
