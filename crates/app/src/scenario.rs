//! Scenario files (`scenarios/*.toml`): a machine, a workload, a scheduler and run options,
//! runnable as they are with `hetsim run`.
//!
//! ```toml
//! [scenario]
//! name = "cholesky-mirage"
//! machine = "../calibration/mirage.toml"   # relative to the scenario file
//! [workload]
//! kind = "cholesky"                         # cholesky | lu | gemm | taskgraph | a program
//! n = 9600
//! nb = 960
//! precision = "single"
//! [scheduler]
//! name = "eager"
//! [run]
//! seed = 1
//! ```
//!
//! Loading goes in three steps. The file is parsed into a TOML tree that keeps source spans;
//! the [`Override`]s (`--set KEY=VALUE`, `--sched`, `--seed`) are applied to that tree by dotted
//! path, their values carrying spans *past the end of the file*, one range per override; serde
//! then reads the tree into structures with `deny_unknown_fields`. So every error, whether
//! serde's or a later check's, is located from the span of the offending value: inside the file
//! it names the file, the line and the field path; in an override's range it names the
//! override (`--set workload.nn=5: field `workload.nn`: unknown field ...`).
//!
//! The format is documented field by field in `docs/scenarios.md`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

use hetsim_core::error::{Error, InputError, Location, line_of_offset, read_input};
use hetsim_core::fluid::SharingMode;
use hetsim_models::{Histogram, Noise};
use hetsim_mpi::workload::ProgramWorkload;
use hetsim_platform::cluster::Cluster;
use hetsim_platform::machine::format::RawRuntime;
use hetsim_platform::machine::{Machine, MemKind, apply_runtime};
use hetsim_runtime::Scheduler;
use hetsim_runtime::{RunConfig, RunReport};
use hetsim_sched as sched;
use hetsim_sched::{SchedulerConfig, SchedulerEntry};
use hetsim_taskgraph::distributed::BlockCyclic;
use hetsim_taskgraph::{Precision, Priorities, TaskGraph, TiledAlgorithm};

use crate::graph_file::{GraphFileSpec, GraphFileWithSpans};

/// One override of a scenario value by dotted path, from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// How the user wrote it, used to name it in errors: `--set workload.n=48000`.
    pub label: String,
    /// The dotted path, split: `["workload", "n"]`.
    pub path: Vec<String>,
    /// The value.
    pub value: OverrideValue,
}

/// The value of an [`Override`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverrideValue {
    /// Text read as a TOML value (integer, float, bool, string, array, inline table); text that
    /// is not a TOML value (a bare word such as `prio`) is taken as a string.
    Toml(String),
    /// A string, taken as it is.
    Str(String),
}

impl Override {
    /// Parse the argument of `--set KEY=VALUE`. KEY is a dotted path of bare keys (letters,
    /// digits, `_`, `-`); VALUE is read as a TOML value, bare words becoming strings.
    pub fn parse_set(arg: &str) -> Result<Override, InputError> {
        let label = format!("--set {arg}");
        let Some((key, value)) = arg.split_once('=') else {
            return Err(InputError::new(format!(
                "{label}: expected KEY=VALUE, with KEY a dotted path such as `workload.n` \
                 (for example --set workload.n=48000)"
            )));
        };
        let path = split_path(key.trim()).map_err(|m| InputError::new(format!("{label}: {m}")))?;
        Ok(Override {
            label,
            path,
            value: OverrideValue::Toml(value.trim().to_string()),
        })
    }

    /// An override of `path` (dotted) by a string taken as it is, named `label` in errors
    /// (`--sched dmda` sets `scheduler.name`).
    pub fn string(label: impl Into<String>, path: &str, value: impl Into<String>) -> Override {
        Override {
            label: label.into(),
            path: path.split('.').map(str::to_string).collect(),
            value: OverrideValue::Str(value.into()),
        }
    }

    /// An override of `path` (dotted) by an integer, named `label` in errors (`--seed 3`).
    pub fn integer(label: impl Into<String>, path: &str, value: u64) -> Override {
        Override {
            label: label.into(),
            path: path.split('.').map(str::to_string).collect(),
            value: OverrideValue::Toml(value.to_string()),
        }
    }

    /// `path=value` as it was applied (for reports).
    pub fn describe(&self) -> String {
        let v = match &self.value {
            OverrideValue::Toml(s) | OverrideValue::Str(s) => s,
        };
        format!("{}={v}", self.path.join("."))
    }
}

fn split_path(key: &str) -> Result<Vec<String>, String> {
    if key.is_empty() {
        return Err("empty KEY: expected a dotted path such as `workload.n`".into());
    }
    let mut path = Vec::new();
    for seg in key.split('.') {
        let seg = seg.trim();
        if seg.is_empty() {
            return Err(format!(
                "empty segment in `{key}`: expected a dotted path such as `workload.n`"
            ));
        }
        if !seg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "`{seg}` in `{key}` is not a bare key: use letters, digits, `_` and `-`"
            ));
        }
        path.push(seg.to_string());
    }
    Ok(path)
}

/// What to generate: `[workload]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadSpec {
    /// Which generator.
    pub kind: TiledAlgorithm,
    /// Matrix order.
    pub n: u64,
    /// Tile size.
    pub nb: u64,
    /// Element precision.
    pub precision: Precision,
    /// Which StarPU release's example priorities the graph carries (`workload.priorities`,
    /// default StarPU 1.4's).
    pub priorities: Priorities,
    /// On a cluster: the P × Q grid of ranks the tiles are dealt over block-cyclically
    /// (`workload.grid = "PxQ"`); `None`: StarPU-MPI's examples' grid for the rank count.
    pub grid: Option<(u32, u32)>,
    /// On a cluster: StarPU-MPI's cache of received data (`workload.mpi_cache`, default on).
    pub mpi_cache: bool,
}

impl WorkloadSpec {
    /// Bytes of data the generator registers, from the parameters alone: Cholesky's lower
    /// triangle of tiles, LU's T² tiles, GEMM's A, B and C (saturating; `n` and `nb` checked).
    pub fn data_bytes(&self) -> u64 {
        let t = u128::from(self.n.div_ceil(self.nb.max(1)));
        let tile = u128::from(self.nb)
            * u128::from(self.nb)
            * u128::from(self.precision.bytes_per_element());
        let tiles = match self.kind {
            TiledAlgorithm::Cholesky => t * (t + 1) / 2,
            TiledAlgorithm::Lu => t * t,
            TiledAlgorithm::Gemm => 3 * t * t,
        };
        u64::try_from(tiles * tile).unwrap_or(u64::MAX)
    }

    /// `cholesky`, `lu` or `gemm`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            TiledAlgorithm::Cholesky => "cholesky",
            TiledAlgorithm::Lu => "lu",
            TiledAlgorithm::Gemm => "gemm",
        }
    }
}

/// `[scheduler]`: the policy and its options, read by the policy's registry entry
/// ([`sched::REGISTRY`]).
#[derive(Debug, Clone)]
pub struct SchedulerSpec {
    /// The registered scheduler.
    pub entry: &'static SchedulerEntry,
    /// The policy with its options, ready to build.
    pub config: Arc<dyn SchedulerConfig>,
}

impl SchedulerSpec {
    /// The scheduler's name.
    pub fn name(&self) -> &'static str {
        self.entry.name
    }
}

impl PartialEq for SchedulerSpec {
    /// Same policy, same options (an options type's `Debug` shows every field).
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name() && format!("{:?}", self.config) == format!("{:?}", other.config)
    }
}

/// A loaded, checked scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The scenario file.
    pub file: PathBuf,
    /// `scenario.name`.
    pub name: String,
    /// `scenario.description`.
    pub description: Option<String>,
    /// The machine or cluster file, resolved against the scenario file's directory.
    pub machine_file: PathBuf,
    /// `[machine] nodes`: overrides the cluster file's node count.
    pub nodes: Option<u32>,
    /// `[machine] gpus_per_node`: overrides the cluster file's GPUs per node.
    pub gpus_per_node: Option<u32>,
    /// `[machine] ranks_per_node`: StarPU-MPI processes per node for task-graph workloads on a
    /// cluster (default 1), each with its share of the node's GPUs and cores.
    pub ranks_per_node: u32,
    /// `[workload]` of a task-graph kind (cholesky, lu, gemm); `None` for program kinds.
    pub workload: Option<WorkloadSpec>,
    /// `[workload]` of a program kind ([`ProgramWorkload::KINDS`]); `None` for task graphs.
    pub program: Option<ProgramWorkload>,
    /// `[workload]` of kind `taskgraph`: a graph read from a file.
    pub graph_file: Option<GraphFileSpec>,
    /// `[scheduler]`, `--sched` applied.
    pub scheduler: SchedulerSpec,
    /// `[run]`, `--seed` applied.
    pub run: RunConfig,
    /// `run.noise`: the kernel-time noise of every codelet, replacing the machine file's
    /// (`None`: the machine file's own).
    pub noise: Option<Noise>,
    /// `run.jitter`: the relative half-width of the uniform perturbation `run.noise` stands
    /// for when it was set this way (0 when it was not).
    pub jitter: f64,
    /// `run.perturb_means`: the relative half-width of the uniform factor each duration of the
    /// kernel models is multiplied by, drawn from the run's seed (0: the models as calibrated).
    pub perturb_means: f64,
    /// `run.runtime_costs`: whether StarPU's simulated runtime costs of the machine file apply
    /// (allocation, request and kernel queueing, push). Default on for task graphs, off for
    /// program workloads (MPI programs, not StarPU ones).
    pub runtime_costs: bool,
    /// `[runtime]`: the machine file's runtime settings this scenario replaces (same fields and
    /// meaning as the machine file's table; applied after `run.runtime_costs`).
    pub runtime: Option<RawRuntime>,
    /// The overrides applied, in order.
    pub overrides: Vec<Override>,
    /// Where each field's value came from, for errors found after loading.
    origins: BTreeMap<String, Location>,
}

/// Load a scenario file and apply `overrides` in order (later ones win).
pub fn load(path: impl AsRef<Path>, overrides: &[Override]) -> Result<Scenario, InputError> {
    let path = path.as_ref();
    let text = read_input(path)?;
    from_str(&text, path, overrides)
}

/// Parse a scenario from `text`; `path` names it in errors and anchors the relative machine
/// path.
pub fn from_str<'i>(
    text: &'i str,
    path: &Path,
    overrides: &'i [Override],
) -> Result<Scenario, InputError> {
    let mut src = Source {
        file: path,
        text,
        regions: Vec::new(),
    };
    let root = DeTable::parse(text).map_err(|e| src.toml_error(&e))?;
    let (span, mut table) = (root.span(), root.into_inner());
    refuse_machine_file(path, &table)?;
    let mut next = text.len() + 1;
    for ov in overrides {
        let (value, len) = override_value(ov, next);
        let region = next..next + len;
        src.regions.push((region.clone(), ov));
        apply(&mut table, ov, region, value)?;
        next += len + 1;
    }
    let program = take_program_workload(&src, &mut table)?;
    let graph_file = crate::graph_file::take(&src, &mut table)?;
    // A program's kernels are placed by the program; among a rank's ready kernels the one of
    // highest priority goes first, as MPI programs order them.
    let default = if program.is_some() {
        PROGRAM_SCHEDULER
    } else {
        DEFAULT_SCHEDULER
    };
    let scheduler = take_scheduler(&src, &mut table, default)?;
    let de = toml::de::Deserializer::from(Spanned::new(span, table));
    let raw = RawScenario::deserialize(de).map_err(|e| src.toml_error(&e))?;
    build(&src, raw, (program, graph_file), scheduler, overrides)
}

/// A machine or cluster file given where a scenario is expected (`hetsim run mirage.toml`) is
/// recognised by its tables, and the message says what to do instead.
fn refuse_machine_file(path: &Path, table: &DeTable<'_>) -> Result<(), InputError> {
    let has = |k: &str| table.contains_key(k);
    let what = if has("cluster") && has("nic") {
        "a cluster file"
    } else if has("memory_nodes") || has("cpus") || has("gpus") || has("links") {
        "a machine file"
    } else {
        return Ok(());
    };
    let shown = path.display();
    Err(InputError::new(format!(
        "this is {what}, not a scenario: a scenario names a machine, a workload and a \
         scheduler (docs/scenarios.md). Check it with `hetsim check {shown}`, or run a scenario \
         that uses it, e.g. one of scenarios/*.toml with --set scenario.machine={shown}"
    ))
    .in_file(path))
}

/// If `[workload] kind` names a program kind, take the `[workload]` table out of the tree and
/// read the rest of it (without `kind`) into that kind's spec struct, whose serde derive
/// (`deny_unknown_fields`) decides which fields exist: a generator adds a parameter by adding a
/// field. Errors keep their spans, so they name file, line and field (or the `--set`).
fn take_program_workload<'i>(
    src: &Source<'_>,
    table: &mut DeTable<'i>,
) -> Result<Option<ProgramWithSpans>, InputError> {
    let Some(taken) = take_workload(table, |k| ProgramWorkload::KINDS.contains(&k)) else {
        return Ok(None);
    };
    let w = match taken.kind.as_str() {
        "p2p" => ProgramWorkload::P2p(taken.read(src)?),
        "bcast" => ProgramWorkload::Bcast(taken.read(src)?),
        "reduce" => ProgramWorkload::Reduce(taken.read(src)?),
        "allreduce" => ProgramWorkload::Allreduce(taken.read(src)?),
        "alltoall" => ProgramWorkload::Alltoall(taken.read(src)?),
        "hpl" => ProgramWorkload::Hpl(taken.read(src)?),
        "stencil" => ProgramWorkload::Stencil(taken.read(src)?),
        "matmul" => ProgramWorkload::Matmul(taken.read(src)?),
        "offload" => ProgramWorkload::Offload(taken.read(src)?),
        other => unreachable!("`{other}` is in ProgramWorkload::KINDS"),
    };
    Ok(Some((w, taken.kind_span, taken.fields)))
}

/// A `[workload]` table taken out of the scenario's tree: its kind, span and fields (without
/// `kind`), the span of `kind`, and where each field's value came from, so that a generator's
/// errors (which name `workload.FIELD`) point at the line or the `--set`.
pub(crate) struct TakenWorkload<'i> {
    pub kind: String,
    span: Range<usize>,
    table: DeTable<'i>,
    pub kind_span: Range<usize>,
    pub fields: Vec<(String, Range<usize>)>,
}

/// Take `[workload]` out of `table` if it is a table whose string `kind` `accept`s.
pub(crate) fn take_workload<'i>(
    table: &mut DeTable<'i>,
    accept: impl Fn(&str) -> bool,
) -> Option<TakenWorkload<'i>> {
    match table.get("workload").map(|w| w.get_ref()) {
        Some(DeValue::Table(w)) => match w.get("kind").map(|k| k.get_ref()) {
            Some(DeValue::String(k)) if accept(k) => {}
            _ => return None,
        },
        _ => return None,
    }
    let (_, value) = table
        .remove_entry("workload")
        .expect("the workload table was just seen");
    let span = value.span();
    let DeValue::Table(mut w) = value.into_inner() else {
        unreachable!("checked to be a table above")
    };
    let kind_span = w.get("kind").map_or(span.clone(), |k| k.span());
    let kind = match w.remove("kind").map(|k| k.into_inner()) {
        Some(DeValue::String(k)) => k.to_string(),
        _ => unreachable!("checked to be a string above"),
    };
    let fields = w
        .iter()
        .map(|(k, v)| (format!("workload.{}", k.get_ref()), v.span()))
        .collect();
    Some(TakenWorkload {
        kind,
        span,
        table: w,
        kind_span,
        fields,
    })
}

impl TakenWorkload<'_> {
    /// Read the fields into `T` (whose serde derive decides which exist); an error names its
    /// field as `workload.FIELD` (or `workload`), at its line or `--set`.
    pub(crate) fn read<T: serde::de::DeserializeOwned>(
        &self,
        src: &Source<'_>,
    ) -> Result<T, InputError> {
        let de = toml::de::Deserializer::from(Spanned::new(self.span.clone(), self.table.clone()));
        T::deserialize(de).map_err(|e| {
            let mut e = src.toml_error(&e);
            match &e.location.field {
                Some(f) if !f.starts_with("workload") => {
                    e.location.field = Some(format!("workload.{f}"))
                }
                None => e.location.field = Some("workload".into()),
                _ => {}
            }
            e
        })
    }
}

/// A program workload, the span of its `kind`, and its parameters' spans.
type ProgramWithSpans = (ProgramWorkload, Range<usize>, Vec<(String, Range<usize>)>);

/// The scheduler read from `[scheduler]`, and the spans of its name and options.
type SchedulerWithSpans = (SchedulerSpec, Vec<(String, Range<usize>)>);

/// Take `[scheduler]` out of the tree and read it through the registry: `name` picks the
/// entry (default [`DEFAULT_SCHEDULER`]), whose own options type reads the rest of the table.
/// An option the scheduler does not take is refused at its value's line (or `--set`), naming
/// the scheduler, the options it takes and the schedulers that take that option.
fn take_scheduler(
    src: &Source<'_>,
    table: &mut DeTable<'_>,
    default: &str,
) -> Result<SchedulerWithSpans, InputError> {
    let (span, mut t) = match table.remove_entry("scheduler") {
        None => (0..0, DeTable::new()),
        Some((_, v)) => {
            let span = v.span();
            match v.into_inner() {
                DeValue::Table(t) => (span, t),
                other => {
                    return Err(src.err(
                        &span,
                        "scheduler",
                        format!("invalid type: {}, expected a table", other.type_str()),
                    ));
                }
            }
        }
    };
    let mut spans = Vec::new();
    let entry = match t.remove_entry("name") {
        None => sched::lookup(default).expect("the default schedulers are registered"),
        Some((_, v)) => {
            let vspan = v.span();
            spans.push(("scheduler.name".to_string(), vspan.clone()));
            let DeValue::String(name) = v.get_ref() else {
                return Err(src.err(
                    &vspan,
                    "scheduler.name",
                    format!(
                        "invalid type: {}, expected a string",
                        v.get_ref().type_str()
                    ),
                ));
            };
            let name = name.trim();
            sched::lookup(name).ok_or_else(|| {
                src.err(
                    &vspan,
                    "scheduler.name",
                    format!(
                        "unknown scheduler `{name}`: expected one of {}",
                        sched::names().collect::<Vec<_>>().join(", ")
                    ),
                )
            })?
        }
    };
    for (k, v) in t.iter() {
        let (key, field) = (k.get_ref(), format!("scheduler.{}", k.get_ref()));
        if entry.option(key).is_none() {
            return Err(src.err(&v.span(), &field, not_an_option(entry, key)));
        }
        spans.push((field, v.span()));
    }
    let de = toml::de::Deserializer::from(Spanned::new(span, t));
    let config = (entry.configure)(de).map_err(|e| src.toml_error(&e))?;
    let spec = SchedulerSpec { entry, config };
    Ok((spec, spans))
}

/// Why `key` is refused in the `[scheduler]` table of `entry`.
fn not_an_option(entry: &SchedulerEntry, key: &str) -> String {
    let its = if entry.options.is_empty() {
        "it takes none".to_string()
    } else {
        let names: Vec<&str> = entry.options.iter().map(|o| o.name).collect();
        format!("its options: {}", names.join(", "))
    };
    let takers: Vec<&str> = sched::REGISTRY
        .iter()
        .filter(|e| e.option(key).is_some())
        .map(|e| e.name)
        .collect();
    let elsewhere = if takers.is_empty() {
        String::new()
    } else {
        format!("; `{key}` is an option of {}", takers.join(", "))
    };
    format!(
        "scheduler `{}` has no option `{key}` ({its}){elsewhere}",
        entry.name
    )
}

/// The override's value as a spanned TOML value whose spans start at `base`, and the length of
/// the region it occupies.
fn override_value(ov: &Override, base: usize) -> (Spanned<DeValue<'_>>, usize) {
    match &ov.value {
        OverrideValue::Toml(t) => match DeValue::parse(t) {
            Ok(v) => (respan(v, base), t.len().max(1)),
            Err(_) => (
                Spanned::new(base..base + t.len(), DeValue::String(Cow::Owned(t.clone()))),
                t.len().max(1),
            ),
        },
        OverrideValue::Str(s) => (
            Spanned::new(base..base + s.len(), DeValue::String(Cow::Owned(s.clone()))),
            s.len().max(1),
        ),
    }
}

/// Shift every span of `v` by `shift`.
fn respan(v: Spanned<DeValue<'_>>, shift: usize) -> Spanned<DeValue<'_>> {
    let span = v.span();
    let inner = match v.into_inner() {
        DeValue::Array(a) => {
            let mut out = DeArray::new();
            for item in a.iter() {
                out.push(respan(item.clone(), shift));
            }
            DeValue::Array(out)
        }
        DeValue::Table(t) => {
            let mut out = DeTable::new();
            for (k, v) in t {
                let ks = k.span();
                out.insert(
                    Spanned::new(ks.start + shift..ks.end + shift, k.into_inner()),
                    respan(v, shift),
                );
            }
            DeValue::Table(out)
        }
        other => other,
    };
    Spanned::new(span.start + shift..span.end + shift, inner)
}

/// Set `ov.path` in `table` to `value`, creating missing tables.
fn apply<'i>(
    mut table: &mut DeTable<'i>,
    ov: &Override,
    region: Range<usize>,
    value: Spanned<DeValue<'i>>,
) -> Result<(), InputError> {
    let key_span = region.start..region.start + 1;
    let Some((last, parents)) = ov.path.split_last() else {
        return Err(InputError::new(format!("{}: empty KEY", ov.label)));
    };
    for (i, seg) in parents.iter().enumerate() {
        if !table.contains_key(seg.as_str()) {
            table.insert(
                Spanned::new(key_span.clone(), Cow::Owned(seg.clone())),
                Spanned::new(region.clone(), DeValue::Table(DeTable::new())),
            );
        }
        let Some(entry) = table.get_mut(seg.as_str()) else {
            return Err(InputError::new(format!("{}: cannot set `{seg}`", ov.label)));
        };
        match entry.get_mut() {
            DeValue::Table(t) => table = t,
            other => {
                return Err(InputError::new(format!(
                    "{}: `{}` is {}, not a table, so it has no field `{}`",
                    ov.label,
                    ov.path[..=i].join("."),
                    article(other.type_str()),
                    ov.path[i + 1]
                ))
                .at_field(ov.path[..=i].join(".")));
            }
        }
    }
    match table.get_mut(last.as_str()) {
        // Keep the key's span (the file's), so that errors about the key still point there.
        Some(entry) => *entry = value,
        None => {
            table.insert(Spanned::new(key_span, Cow::Owned(last.clone())), value);
        }
    }
    Ok(())
}

fn article(type_str: &str) -> String {
    let a = if type_str.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{a} {type_str}")
}

/// The text being loaded and the overrides' span ranges, to turn spans into locations.
pub(crate) struct Source<'a> {
    file: &'a Path,
    text: &'a str,
    regions: Vec<(Range<usize>, &'a Override)>,
}

impl Source<'_> {
    /// The scenario file's directory, which paths in the file are relative to.
    pub(crate) fn dir(&self) -> &Path {
        self.file.parent().unwrap_or(Path::new(""))
    }

    pub(crate) fn override_at(&self, offset: usize) -> Option<&Override> {
        self.regions
            .iter()
            .find(|(r, _)| r.start <= offset && offset < r.end.max(r.start + 1))
            .map(|(_, ov)| *ov)
    }

    /// Where the value at `span` (of field `field`) came from.
    fn location(&self, span: &Range<usize>, field: &str) -> Location {
        match self.override_at(span.start) {
            Some(ov) => Location {
                file: Some(PathBuf::from(&ov.label)),
                line: None,
                field: Some(field.to_string()),
            },
            None => Location {
                file: Some(self.file.to_path_buf()),
                line: Some(line_of_offset(self.text, span.start)),
                field: Some(field.to_string()),
            },
        }
    }

    pub(crate) fn err(
        &self,
        span: &Range<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> InputError {
        InputError {
            location: self.location(span, field),
            message: message.into(),
        }
    }

    /// A TOML syntax or serde error, located from its span.
    pub(crate) fn toml_error(&self, e: &toml::de::Error) -> InputError {
        let message = plain_message(e.message());
        let Some(span) = e.span() else {
            return InputError::new(message).in_file(self.file);
        };
        // "missing field `x`" points at the table that lacks it: name the field itself.
        let missing = message
            .strip_prefix("missing field `")
            .and_then(|m| m.split('`').next())
            .map(str::to_string);
        if let Some(ov) = self.override_at(span.start) {
            let mut field = ov.path.join(".");
            if let Some(m) = &missing {
                field = format!("{field}.{m}");
            }
            return InputError::new(message).in_file(&ov.label).at_field(field);
        }
        let mut err = InputError::new(message.clone())
            .in_file(self.file)
            .at_line(line_of_offset(self.text, span.start));
        // The document itself has the empty span 0..0 (a table's span covers its header).
        let at_root = span == (0..0);
        let path = if at_root {
            None
        } else {
            hetsim_platform::machine::format::field_path_at(self.text, span.start)
                .or_else(|| key_on_line(self.text, span.start))
        };
        let field = match (path, missing) {
            (Some(p), Some(m)) => Some(format!("{p}.{m}")),
            (None, Some(m)) => Some(m),
            (p, None) => p,
        };
        if let Some(f) = field {
            err = err.at_field(f);
        }
        err
    }
}

/// serde's message in the user's terms: no Rust type names.
fn plain_message(message: &str) -> String {
    let mut m = message.trim().to_string();
    if let Some(i) = m.find("expected struct Raw") {
        m.truncate(i);
        m.push_str("expected a table");
    }
    for (rust, user) in [
        ("expected u64", "expected an integer >= 0"),
        ("expected u32", "expected an integer from 0 to 4294967295"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
    ] {
        if let Some(stem) = m.strip_suffix(rust) {
            m = format!("{stem}{user}");
        }
    }
    m
}

/// For a syntax error: `table.key` guessed from the text (the last `[table]` header above the
/// line, and the key the line starts with).
fn key_on_line(text: &str, offset: usize) -> Option<String> {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("").trim();
    let header = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    if line.starts_with('[') {
        return Some(
            line.trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string(),
        );
    }
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty());
    match (header, key) {
        (Some(h), Some(k)) => Some(format!("{h}.{k}")),
        (None, Some(k)) => Some(k),
        (Some(h), None) => Some(h),
        (None, None) => None,
    }
}

// ---- the file as written ----------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    scenario: RawHeader,
    #[serde(default)]
    machine: Option<RawShape>,
    #[serde(default)]
    workload: Option<Spanned<RawWorkload>>,
    #[serde(default)]
    run: Option<RawRun>,
    #[serde(default)]
    runtime: Option<Spanned<RawRuntime>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    name: Spanned<String>,
    #[serde(default)]
    description: Option<String>,
    machine: Spanned<String>,
}

/// `[machine]`: the cluster's shape, overriding the cluster file's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShape {
    #[serde(default)]
    nodes: Option<Spanned<u32>>,
    #[serde(default)]
    gpus_per_node: Option<Spanned<u32>>,
    #[serde(default)]
    ranks_per_node: Option<Spanned<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    kind: Spanned<String>,
    n: Spanned<u64>,
    nb: Spanned<u64>,
    #[serde(default)]
    precision: Option<Spanned<String>>,
    #[serde(default)]
    priorities: Option<Spanned<String>>,
    #[serde(default)]
    grid: Option<Spanned<String>>,
    #[serde(default)]
    mpi_cache: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    #[serde(default)]
    seed: Option<Spanned<u64>>,
    #[serde(default)]
    ncpu: Option<Spanned<u32>>,
    #[serde(default)]
    ncuda: Option<Spanned<u32>>,
    #[serde(default)]
    sharing: Option<Spanned<String>>,
    #[serde(default)]
    reshare_delay: Option<Spanned<hetsim_core::units::RawQuantity>>,
    #[serde(default)]
    prefetch: Option<Spanned<bool>>,
    #[serde(default)]
    wont_use: Option<Spanned<bool>>,
    #[serde(default)]
    gpu_sync: Option<Spanned<bool>>,
    #[serde(default)]
    noise: Option<Spanned<String>>,
    #[serde(default)]
    jitter: Option<Spanned<f64>>,
    #[serde(default)]
    perturb_means: Option<Spanned<f64>>,
    #[serde(default)]
    runtime_costs: Option<Spanned<bool>>,
}

/// Largest `run.jitter` and `run.perturb_means`: a duration may become up to half as long or
/// one and a half times as long.
pub const MAX_HALF_WIDTH: f64 = 0.5;

/// A relative half-width of `run.jitter` or `run.perturb_means`: in `[0, MAX_HALF_WIDTH]`.
fn check_half_width(w: f64) -> Result<(), String> {
    if (0.0..=MAX_HALF_WIDTH).contains(&w) {
        Ok(())
    } else {
        Err(format!(
            "expected a relative half-width between 0 and {MAX_HALF_WIDTH} (0.001 is ±0.1 %), \
             found {w}"
        ))
    }
}

/// The noise of `run.jitter = j` (checked, positive): each kernel's mean multiplied by a factor
/// uniform in `[1 - j, 1 + j]` (its deviation unused), so that runs with different seeds show how
/// much the makespan depends on ties and on durations known only to that precision.
fn jitter_noise(j: f64) -> Noise {
    let bins = Histogram::from_bins(vec![1.0 - j, 1.0 + j], vec![1.0]);
    Noise::Histogram(bins.expect("one bin of positive width and weight"))
}

/// Default scheduler when `[scheduler]` names none.
pub const DEFAULT_SCHEDULER: &str = "eager";

pub use crate::programs::PROGRAM_SCHEDULER;

fn build(
    src: &Source<'_>,
    raw: RawScenario,
    (program, graph_file): (Option<ProgramWithSpans>, Option<GraphFileWithSpans>),
    (scheduler, scheduler_spans): SchedulerWithSpans,
    overrides: &[Override],
) -> Result<Scenario, InputError> {
    let mut origins = BTreeMap::new();
    macro_rules! note {
        ($field:expr, $span:expr) => {
            origins.insert($field.to_string(), src.location($span, &$field))
        };
    }

    // [scenario]
    let h = raw.scenario;
    note!("scenario.name", &h.name.span());
    note!("scenario.machine", &h.machine.span());
    if h.name.get_ref().trim().is_empty() {
        return Err(src.err(
            &h.name.span(),
            "scenario.name",
            "the scenario name is empty: give a short name such as \"cholesky-mirage\"",
        ));
    }
    if h.machine.get_ref().trim().is_empty() {
        return Err(src.err(
            &h.machine.span(),
            "scenario.machine",
            "the machine path is empty: give a machine file, relative to the scenario file",
        ));
    }
    // A path in the file is relative to the file; one given with --set, like any path on a
    // command line, to the working directory.
    let machine_file = if src.override_at(h.machine.span().start).is_some() {
        PathBuf::from(h.machine.get_ref())
    } else {
        let dir = src.file.parent().unwrap_or(Path::new(""));
        dir.join(h.machine.get_ref())
    };

    // [machine]
    let (mut nodes, mut gpus_per_node, mut ranks_per_node) = (None, None, 1);
    if let Some(m) = &raw.machine {
        if let Some(v) = &m.ranks_per_node {
            note!("machine.ranks_per_node", &v.span());
            if *v.get_ref() == 0 {
                return Err(src.err(
                    &v.span(),
                    "machine.ranks_per_node",
                    "expected at least 1 rank per node",
                ));
            }
            ranks_per_node = *v.get_ref();
        }
        if let Some(v) = &m.nodes {
            note!("machine.nodes", &v.span());
            if *v.get_ref() == 0 {
                return Err(src.err(&v.span(), "machine.nodes", "expected at least 1 node"));
            }
            nodes = Some(*v.get_ref());
        }
        if let Some(v) = &m.gpus_per_node {
            note!("machine.gpus_per_node", &v.span());
            if *v.get_ref() == 0 {
                return Err(src.err(
                    &v.span(),
                    "machine.gpus_per_node",
                    "expected at least 1 GPU per node",
                ));
            }
            gpus_per_node = Some(*v.get_ref());
        }
    }

    // [workload]
    // A program's or a graph file's table was taken out of the tree already.
    let taken = match (&program, &graph_file) {
        (Some((_, kspan, fields)), _) | (None, Some((_, kspan, fields))) => Some((kspan, fields)),
        (None, None) => None,
    };
    let workload = match (raw.workload, taken) {
        (_, Some((kspan, fields))) => {
            note!("workload", kspan);
            note!("workload.kind", kspan);
            for (f, span) in fields {
                note!(f, span);
            }
            None
        }
        (None, None) => {
            return Err(InputError::new(format!(
                "missing field `workload`: a [workload] table with kind = one of cholesky, lu, \
                 gemm, {}, {}",
                crate::graph_file::KIND,
                ProgramWorkload::KINDS.join(", ")
            ))
            .in_file(src.file)
            .at_line(1)
            .at_field("workload"));
        }
        (Some(ws), None) => Some(graph_workload(src, ws, &mut origins)?),
    };

    // [scheduler], read by take_scheduler
    for (f, span) in &scheduler_spans {
        note!(f, span);
    }
    if scheduler.name() == "recorded" && graph_file.is_none() {
        return Err(locate_with(
            &origins,
            src.file,
            InputError::new(
                "`recorded` replays the workers a recorded run used: it needs a workload of kind \
                 `taskgraph` read from a file that has them (StarPU's tasks.rec)",
            )
            .at_field("scheduler.name"),
        ));
    }

    // [run]
    let mut run = RunConfig::default();
    let mut noise = None;
    let mut jitter = 0.0;
    let mut perturb_means = 0.0;
    let mut runtime_costs = program.is_none();
    if let Some(r) = raw.run {
        if let Some(v) = &r.runtime_costs {
            note!("run.runtime_costs", &v.span());
            runtime_costs = *v.get_ref();
        }
        if let Some(v) = &r.seed {
            note!("run.seed", &v.span());
            run.seed = *v.get_ref();
        }
        if let Some(v) = &r.ncpu {
            note!("run.ncpu", &v.span());
            run.ncpu = Some(*v.get_ref());
        }
        if let Some(v) = &r.ncuda {
            note!("run.ncuda", &v.span());
            run.ncuda = Some(*v.get_ref());
        }
        if let Some(v) = &r.sharing {
            note!("run.sharing", &v.span());
            run.sharing = match v.get_ref().trim().to_ascii_lowercase().as_str() {
                "plain" => SharingMode::Plain,
                "simgrid" => SharingMode::SimGrid,
                other => {
                    return Err(src.err(
                        &v.span(),
                        "run.sharing",
                        format!("unknown sharing mode `{other}`: expected `plain` or `simgrid`"),
                    ));
                }
            };
        }
        if let Some(v) = &r.reshare_delay {
            note!("run.reshare_delay", &v.span());
            run.reshare_delay_s = v
                .get_ref()
                .read(hetsim_core::units::Kind::Seconds)
                .map_err(|e| src.err(&v.span(), "run.reshare_delay", e.message))?;
        }
        if let Some(v) = &r.prefetch {
            note!("run.prefetch", &v.span());
            run.prefetch = *v.get_ref();
        }
        if let Some(v) = &r.wont_use {
            note!("run.wont_use", &v.span());
            run.wont_use = *v.get_ref();
        }
        if let Some(v) = &r.gpu_sync {
            note!("run.gpu_sync", &v.span());
            run.gpu_sync = *v.get_ref();
        }
        if let Some(v) = &r.noise {
            note!("run.noise", &v.span());
            noise = Some(match v.get_ref().trim() {
                "none" => Noise::None,
                "normal" => Noise::Normal,
                "lognormal" => Noise::LogNormal,
                other => {
                    return Err(src.err(
                        &v.span(),
                        "run.noise",
                        format!(
                            "unknown noise `{other}`: expected `none`, `normal` or `lognormal` \
                             (a histogram is set in the machine file's [perfmodels])"
                        ),
                    ));
                }
            });
        }
        if let Some(v) = &r.jitter {
            note!("run.jitter", &v.span());
            if r.noise.is_some() {
                return Err(src.err(
                    &v.span(),
                    "run.jitter",
                    "run.jitter and run.noise both set: the jitter is a noise of its own; \
                     expected one of them"
                        .to_string(),
                ));
            }
            jitter = *v.get_ref();
            check_half_width(jitter).map_err(|e| src.err(&v.span(), "run.jitter", e))?;
            // A jitter of 0 leaves the machine file's noise as it is.
            if jitter > 0.0 {
                noise = Some(jitter_noise(jitter));
            }
        }
        if let Some(v) = &r.perturb_means {
            note!("run.perturb_means", &v.span());
            perturb_means = *v.get_ref();
            check_half_width(perturb_means)
                .map_err(|e| src.err(&v.span(), "run.perturb_means", e))?;
        }
    }

    // [runtime]: checked here, where its spans name the scenario or the --set; applied to the
    // machine when it is loaded.
    let runtime = match raw.runtime {
        Some(rt) => {
            note!("runtime", &rt.span());
            apply_runtime(
                rt.get_ref(),
                &mut hetsim_platform::machine::RuntimeConfig::default(),
                &|span, field, msg| src.err(&span, &field, msg),
            )?;
            Some(rt.into_inner())
        }
        None => None,
    };

    Ok(Scenario {
        file: src.file.to_path_buf(),
        name: h.name.into_inner(),
        description: h.description,
        machine_file,
        nodes,
        gpus_per_node,
        ranks_per_node,
        workload,
        program: program.map(|(p, _, _)| p),
        graph_file: graph_file.map(|(g, _, _)| g),
        scheduler,
        run,
        noise,
        jitter,
        perturb_means,
        runtime_costs,
        runtime,
        overrides: overrides.to_vec(),
        origins,
    })
}

/// A task-graph `[workload]` (cholesky, lu, gemm).
fn graph_workload(
    src: &Source<'_>,
    ws: Spanned<RawWorkload>,
    origins: &mut BTreeMap<String, Location>,
) -> Result<WorkloadSpec, InputError> {
    macro_rules! note {
        ($field:expr, $span:expr) => {
            origins.insert($field.to_string(), src.location($span, &$field))
        };
    }
    let wspan = ws.span();
    let w = ws.into_inner();
    note!("workload", &wspan);
    note!("workload.kind", &w.kind.span());
    note!("workload.n", &w.n.span());
    note!("workload.nb", &w.nb.span());
    let kind: TiledAlgorithm = w
        .kind
        .get_ref()
        .parse()
        .map_err(|e: InputError| src.err(&w.kind.span(), "workload.kind", e.message))?;
    let precision = match &w.precision {
        Some(p) => {
            note!("workload.precision", &p.span());
            p.get_ref()
                .parse()
                .map_err(|e: InputError| src.err(&p.span(), "workload.precision", e.message))?
        }
        None => Precision::Single,
    };
    let priorities = match &w.priorities {
        Some(p) => {
            note!("workload.priorities", &p.span());
            p.get_ref()
                .parse()
                .map_err(|e: InputError| src.err(&p.span(), "workload.priorities", e.message))?
        }
        None => Priorities::default(),
    };
    let grid = match &w.grid {
        Some(g) => {
            note!("workload.grid", &g.span());
            Some(parse_grid(g.get_ref()).map_err(|m| src.err(&g.span(), "workload.grid", m))?)
        }
        None => None,
    };
    let mpi_cache = match &w.mpi_cache {
        Some(c) => {
            note!("workload.mpi_cache", &c.span());
            *c.get_ref()
        }
        None => true,
    };
    let workload = WorkloadSpec {
        kind,
        n: *w.n.get_ref(),
        nb: *w.nb.get_ref(),
        precision,
        priorities,
        grid,
        mpi_cache,
    };
    // The generators check n and nb; do it now, so that a bad scenario fails before the
    // machine is loaded, with the line of the offending value.
    check_tiling(&workload).map_err(|e| locate_with(origins, src.file, e))?;
    Ok(workload)
}

/// A process grid `"PxQ"` (rows x columns of ranks), both at least 1.
fn parse_grid(text: &str) -> Result<(u32, u32), String> {
    let bad =
        || format!("grid `{text}`: expected rows x columns of ranks such as \"2x2\" (both >= 1)");
    let (p, q) = text.trim().split_once(['x', 'X']).ok_or_else(bad)?;
    let p: u32 = p.trim().parse().map_err(|_| bad())?;
    let q: u32 = q.trim().parse().map_err(|_| bad())?;
    if p == 0 || q == 0 {
        return Err(bad());
    }
    Ok((p, q))
}

/// Check n and nb as the generators do, without building the graph.
fn check_tiling(w: &WorkloadSpec) -> Result<(), InputError> {
    let count = |t: u64| -> u64 {
        match w.kind {
            TiledAlgorithm::Cholesky => cholesky_tasks(t),
            TiledAlgorithm::Lu => lu_tasks(t),
            TiledAlgorithm::Gemm => t.saturating_mul(t).saturating_mul(t),
        }
    };
    hetsim_taskgraph::Tiling::new(w.n, w.nb, w.precision, count).map(|_| ())
}

/// The largest multiple of the tile size whose data fits in `ram` bytes (for messages).
fn largest_fitting_order(w: &WorkloadSpec, ram: u64) -> u64 {
    let (mut lo, mut hi) = (0u64, w.n / w.nb.max(1));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let probe = WorkloadSpec {
            n: mid * w.nb,
            ..*w
        };
        if probe.data_bytes() <= ram {
            lo = mid
        } else {
            hi = mid - 1
        }
    }
    lo * w.nb
}

/// Tasks of a tiled Cholesky with `t` tiles per side: T + T(T−1) + T(T−1)(T−2)/6.
pub fn cholesky_tasks(t: u64) -> u64 {
    let t = u128::from(t);
    let n = t + t * t.saturating_sub(1) + t * t.saturating_sub(1) * t.saturating_sub(2) / 6;
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Tasks of a tiled LU with `t` tiles per side: T + T(T−1) + (T−1)T(2T−1)/6.
pub fn lu_tasks(t: u64) -> u64 {
    let t = u128::from(t);
    let n = t + t * t.saturating_sub(1) + t.saturating_sub(1) * t * (2 * t).saturating_sub(1) / 6;
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Attach to `e` (an error about a scenario field, without a file) the location that field's
/// value came from. The run's settings, which the runtime reports as `runtime.ncpu`, are the
/// scenario's `run.*`; the other `runtime.*` fields are its `[runtime]` table's.
fn locate_with(origins: &BTreeMap<String, Location>, file: &Path, mut e: InputError) -> InputError {
    if e.location.file.is_some() {
        return e;
    }
    const RUN_FIELDS: [&str; 7] = [
        "seed", "ncpu", "ncuda", "sharing", "prefetch", "wont_use", "gpu_sync",
    ];
    if let Some(f) = &e.location.field
        && let Some(rest) = f.strip_prefix("runtime.")
        && RUN_FIELDS.contains(&rest.split('.').next().unwrap_or(rest))
    {
        e.location.field = Some(format!("run.{rest}"));
    }
    let field = e.location.field.clone().unwrap_or_default();
    let found = origins
        .iter()
        .filter(|(k, _)| field == **k || field.starts_with(&format!("{k}.")))
        .max_by_key(|(k, _)| k.len());
    match found {
        Some((_, loc)) => {
            e.location.file = loc.file.clone();
            if e.location.line.is_none() {
                e.location.line = loc.line;
            }
            e
        }
        None => e.in_file(file),
    }
}

impl Scenario {
    /// Attach to an error found after loading (it names a scenario field such as `workload.nb`
    /// or `run.ncpu`) the file and line, or the override, its value came from.
    pub fn locate(&self, e: InputError) -> InputError {
        locate_with(&self.origins, &self.file, e)
    }

    /// The task-graph workload, or an error for a program scenario.
    pub fn graph_workload(&self) -> Result<&WorkloadSpec, InputError> {
        self.workload.as_ref().ok_or_else(|| {
            self.locate(
                InputError::new(format!(
                    "workload kind `{}` is a program (MPI-style), not a task graph: run it with \
                     `hetsim run`",
                    self.program.as_ref().map_or("?", |p| p.kind_name())
                ))
                .at_field("workload.kind"),
            )
        })
    }

    /// Load the scenario's machine or cluster file and apply `[machine] nodes` and
    /// `gpus_per_node`. Errors in the file name that file; a file that cannot be read is
    /// reported at `scenario.machine`.
    pub fn load_cluster(&self) -> Result<Cluster, InputError> {
        if !self.machine_file.is_file() {
            let why = match std::fs::metadata(&self.machine_file) {
                Ok(_) => "it is not a file".to_string(),
                Err(e) => e.to_string(),
            };
            return Err(self.locate(
                InputError::new(format!(
                    "cannot read machine file {}: {why} (a path in the scenario is relative to \
                     its directory, one given with --set to the working directory)",
                    self.machine_file.display()
                ))
                .at_field("scenario.machine"),
            ));
        }
        let mut c = hetsim_platform::cluster::load(&self.machine_file)?;
        if !self.runtime_costs {
            c = c.map_node_machine(Machine::clear_runtime_costs);
        }
        if let Some(rt) = &self.runtime {
            c = c
                .try_map_node_machine(|m| m.override_runtime(rt))
                .map_err(|e| self.locate(e))?;
        }
        if self.nodes.is_none() && self.gpus_per_node.is_none() {
            return Ok(c);
        }
        let (n, g) = (
            self.nodes.unwrap_or(c.nodes()),
            self.gpus_per_node.unwrap_or(c.gpus_per_node()),
        );
        c.with_shape(n, g).map_err(|e| self.locate(e))
    }

    /// `run.noise` (or `run.jitter`) and `run.perturb_means` applied to a machine's models.
    fn adjust_models(&self, m: &mut Machine) {
        if let Some(noise) = &self.noise {
            m.set_noise_everywhere(noise.clone());
        }
        if self.perturb_means > 0.0 {
            m.perturb_means(self.perturb_means, self.run.seed)
                .expect("run.perturb_means is checked to lie in [0, 0.5] when read");
        }
    }

    /// Load the scenario's machine file for a task-graph run: a machine file, or a cluster
    /// file of one node (its node machine). Errors in the machine file name that file; a
    /// machine file that cannot be read is reported at `scenario.machine`.
    pub fn load_machine(&self) -> Result<Machine, InputError> {
        self.node_machine_of(&self.load_cluster()?)
    }

    /// [`load_machine`](Self::load_machine) from the cluster [`load_cluster`](Self::load_cluster)
    /// gave, without reading it again.
    fn node_machine_of(&self, c: &Cluster) -> Result<Machine, InputError> {
        if c.nodes() > 1 {
            return Err(self.locate(
                InputError::new(format!(
                    "`{}` has {} nodes, but task-graph workloads (cholesky, lu, gemm) run on one \
                     node under a scheduler; use machine.nodes = 1 or a program workload ({})",
                    c.name(),
                    c.nodes(),
                    ProgramWorkload::KINDS.join(", ")
                ))
                .at_field(if self.nodes.is_some() {
                    "machine.nodes"
                } else {
                    "scenario.machine"
                }),
            ));
        }
        let mut m = c.node_machine().clone();
        self.adjust_models(&mut m);
        Ok(m)
    }

    /// Generate the workload's task graph.
    pub fn generate(&self) -> Result<TaskGraph, InputError> {
        let w = self.graph_workload()?;
        w.kind
            .generate_with(w.n, w.nb, w.precision, w.priorities)
            .map_err(|e| self.locate(e))
    }

    /// The flops the application counts for its GFlop/s figure (HPL: 2N³/3 + 3N²/2) on
    /// `cluster`, for program workloads; `None` for task-graph workloads (their tasks' flops).
    pub fn counted_flops_on(&self, cluster: &Cluster) -> Option<f64> {
        self.program
            .as_ref()
            .map(|p| p.generator().counted_flops_on(cluster))
    }

    /// Build the scheduler, seeded from the run's seed.
    pub fn build_scheduler(&self) -> Box<dyn Scheduler> {
        self.build_scheduler_seeded(self.run.seed)
    }

    /// Build the scheduler, seeded from `seed`.
    fn build_scheduler_seeded(&self, seed: u64) -> Box<dyn Scheduler> {
        self.scheduler.config.build(seed)
    }

    /// Load the machine, generate the workload, build the scheduler and simulate.
    pub fn run(&self) -> Result<RunReport, Error> {
        self.run_observed(&mut ())
    }

    /// [`run`](Self::run), reporting every simulation event to `observer` (trace writers).
    pub fn run_observed(
        &self,
        observer: &mut dyn hetsim_runtime::Observer,
    ) -> Result<RunReport, Error> {
        let cluster = self.load_cluster()?;
        if let Some(p) = &self.program {
            return self.run_program(cluster, p, observer);
        }
        if self.graph_file.is_none() && (cluster.nodes() > 1 || self.ranks_per_node > 1) {
            return self.run_distributed(cluster, observer);
        }
        let machine = self.node_machine_of(&cluster)?;
        let kernels = hetsim_runtime::kernels_for(&machine).map_err(|e| {
            let e = e.at_field("scenario.machine");
            self.locate(e)
        })?;
        let graph = match self.read_graph_file(&machine)? {
            Some(imported) => imported.graph,
            None => {
                self.check_data_fits(&machine)?;
                self.generate()?
            }
        };
        let mut sched = self.build_scheduler();
        let report = hetsim_runtime::simulate_observed(
            &machine,
            &graph,
            kernels.as_ref(),
            sched.as_mut(),
            &self.run,
            observer,
        )
        .map_err(|e| match e {
            Error::Input(e) => Error::Input(self.locate_run_error(e)),
            other => other,
        })?;
        Ok(report)
    }

    /// A program workload: its operations as a distributed task graph, one rank per GPU, each
    /// under its own instance of the scheduler.
    fn run_program(
        &self,
        cluster: Cluster,
        p: &ProgramWorkload,
        observer: &mut dyn hetsim_runtime::Observer,
    ) -> Result<RunReport, Error> {
        // The program is as large as its graph: only the graph stays for the run.
        let graph = p
            .generator()
            .generate_graph(&cluster)
            .map_err(|e| self.locate(e))?;
        let sched = |r: u32| self.build_scheduler_seeded(self.run.seed.wrapping_add(u64::from(r)));
        crate::programs::simulate_program_graph(&graph, &cluster, &sched, &self.run, observer)
            .map_err(|e| match e {
                Error::Input(e) => Error::Input(self.locate_run_error(e)),
                other => other,
            })
    }

    /// A task-graph workload on a cluster: StarPU-MPI's distributed graph over the ranks
    /// (`ranks_per_node` per node), each rank under its own instance of the scheduler.
    fn run_distributed(
        &self,
        cluster: Cluster,
        observer: &mut dyn hetsim_runtime::Observer,
    ) -> Result<RunReport, Error> {
        let w = self.graph_workload()?;
        let cluster = cluster.map_node_machine(|m| self.adjust_models(m));
        let ranks = cluster.nodes() * self.ranks_per_node;
        let grid = match w.grid {
            Some((p, q)) => BlockCyclic::new(p, q).map_err(|e| self.locate(e))?,
            None => BlockCyclic::for_nodes(ranks),
        };
        if grid.nodes() != ranks {
            return Err(self
                .locate(
                    InputError::new(format!(
                        "grid {}x{} has {} ranks, but the run has {ranks} ({} node(s), {} per \
                         node)",
                        grid.p,
                        grid.q,
                        grid.nodes(),
                        cluster.nodes(),
                        self.ranks_per_node
                    ))
                    .at_field("workload.grid"),
                )
                .into());
        }
        let machine = cluster.node_machine();
        let kernels = hetsim_runtime::kernels_for(machine).map_err(|e| {
            let e = e.at_field("scenario.machine");
            self.locate(e)
        })?;
        self.check_data_fits_on(machine, u64::from(cluster.nodes()))?;
        if w.priorities != Priorities::StarPu14 {
            // The distributed graphs follow StarPU-MPI 1.4's examples only.
            let e = InputError::new(format!(
                "priorities `{}` apply to one node's graph; a cluster's distributed graph has \
                 StarPU-MPI 1.4's (`starpu-1.4`)",
                w.priorities
            ))
            .at_field("workload.priorities");
            return Err(self.locate(e).into());
        }
        let graph = w
            .kind
            .generate_distributed(w.n, w.nb, w.precision, grid, w.mpi_cache)
            .map_err(|e| self.locate(e))?;
        let mut scheds: Vec<_> = (0..ranks)
            .map(|r| self.build_scheduler_seeded(self.run.seed.wrapping_add(u64::from(r))))
            .collect();
        hetsim_runtime::simulate_cluster(
            &cluster,
            self.ranks_per_node,
            &graph,
            kernels.as_ref(),
            &mut scheds,
            &self.run,
            observer,
        )
        .map_err(|e| match e {
            Error::Input(e) => Error::Input(self.locate_run_error(e)),
            other => other,
        })
    }

    /// Refuse, before building the graph, a workload whose data cannot fit in the machine's RAM
    /// (the runtime would refuse it too, after building gigabytes of graph).
    fn check_data_fits(&self, machine: &Machine) -> Result<(), InputError> {
        self.check_data_fits_on(machine, 1)
    }

    /// [`Self::check_data_fits`] on `nodes` copies of `machine`.
    fn check_data_fits_on(&self, machine: &Machine, nodes: u64) -> Result<(), InputError> {
        let w = self.graph_workload()?;
        let ram: u64 = machine
            .memory_nodes()
            .iter()
            .filter(|m| m.kind == MemKind::Ram)
            .map(|m| m.capacity_bytes)
            .sum::<u64>()
            .saturating_mul(nodes);
        let need = w.data_bytes();
        if need > ram {
            return Err(self.locate(
                InputError::new(format!(
                    "the workload's data ({}, n = {} in tiles of {}) does not fit in the RAM of \
                     machine `{}` ({}); the largest order that fits is about n = {}",
                    hetsim_core::units::format_bytes(need as f64),
                    w.n,
                    w.nb,
                    machine.name(),
                    hetsim_core::units::format_bytes(ram as f64),
                    largest_fitting_order(w, ram)
                ))
                .at_field("workload.n"),
            ));
        }
        Ok(())
    }

    /// Errors of the simulation: those about the run or the workload belong to the scenario,
    /// those about kernel models (`codelets`) to the machine file.
    fn locate_run_error(&self, e: InputError) -> InputError {
        match e.location.field.as_deref() {
            Some("codelets") if e.location.file.is_none() && self.workload.is_some() => {
                let nb = self
                    .origins
                    .get("workload.nb")
                    .map_or(String::new(), |l| format!(" ({l})"));
                let mut e = e.in_file(&self.machine_file);
                e.message.push_str(&format!(
                    "; or choose a tile size the models cover: the scenario has workload.nb = {}{nb}",
                    self.workload.as_ref().map_or(0, |w| w.nb)
                ));
                e
            }
            _ => self.locate(e),
        }
    }

    /// The `--json` object: `hetsim_version`, `scenario`, `workload`, `overrides`, `run`, then
    /// every field of the [`RunReport`].
    pub fn json(&self, report: &RunReport) -> Result<serde_json::Value, Error> {
        use serde_json::json;
        let workload = match (&self.program, &self.graph_file) {
            (Some(p), _) => json!({ "kind": p.kind_name() }),
            (None, Some(g)) => json!({
                "kind": crate::graph_file::KIND,
                "file": g.file.display().to_string(),
                "format": g.format.map(|f| f.name()),
                "durations": g.durations.name(),
            }),
            (None, None) => {
                let w = self.graph_workload()?;
                json!({
                    "kind": w.kind_name(),
                    "n": w.n,
                    "nb": w.nb,
                    "precision": w.precision.to_string(),
                    "priorities": w.priorities.to_string(),
                })
            }
        };
        let mut obj = self.json_head(workload);
        obj.insert(
            "run".into(),
            json!({
                "ncpu": self.run.ncpu,
                "ncuda": self.run.ncuda,
                "sharing": sharing_name(self.run.sharing),
                "reshare_delay_s": self.run.reshare_delay_s,
                "prefetch": self.run.prefetch,
                "wont_use": self.run.wont_use,
                "gpu_sync": self.run.gpu_sync,
                "noise": self.noise.as_ref().map(|n| n.kind_name()),
                "jitter": self.jitter,
                "perturb_means": self.perturb_means,
            }),
        );
        let mut v = with_report_fields(obj, report, "run report")?;
        if self.program.is_some() {
            // The application's own count: GFlop/s as it reports them.
            let cluster = self.load_cluster()?;
            let flops = self.counted_flops_on(&cluster).unwrap_or(0.0);
            v["counted_flops"] = json!(flops);
            v["gflops"] = json!(if report.makespan_s > 0.0 {
                flops / report.makespan_s / 1e9
            } else {
                0.0
            });
        }
        Ok(v)
    }

    /// The fields every `--json` object starts with: `hetsim_version`, `scenario`, `workload`
    /// (as given), `overrides`.
    fn json_head(&self, workload: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::{Map, Value, json};
        let mut obj = Map::new();
        obj.insert("hetsim_version".into(), json!(env!("CARGO_PKG_VERSION")));
        obj.insert("scenario".into(), json!(self.name));
        obj.insert("workload".into(), workload);
        obj.insert(
            "overrides".into(),
            Value::Array(
                self.overrides
                    .iter()
                    .map(|o| Value::String(o.describe()))
                    .collect(),
            ),
        );
        obj
    }
}

/// `obj` followed by every field of `report` (`what` names it in the internal errors).
fn with_report_fields(
    mut obj: serde_json::Map<String, serde_json::Value>,
    report: &impl serde::Serialize,
    what: &str,
) -> Result<serde_json::Value, Error> {
    use serde_json::Value;
    match serde_json::to_value(report) {
        Ok(Value::Object(fields)) => {
            obj.extend(fields);
            Ok(Value::Object(obj))
        }
        Ok(_) => Err(Error::Internal(format!("the {what} is not a JSON object"))),
        Err(e) => Err(Error::Internal(format!("cannot serialise the {what}: {e}"))),
    }
}

/// `plain` or `simgrid`.
pub fn sharing_name(s: SharingMode) -> &'static str {
    match s {
        SharingMode::Plain => "plain",
        SharingMode::SimGrid => "simgrid",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "\
[scenario]
name = \"t\"
machine = \"m.toml\"

[workload]
kind = \"cholesky\"
n = 960
nb = 96
precision = \"single\"

[scheduler]
name = \"eager\"

[run]
seed = 4
";

    fn load_with(text: &str, sets: &[&str]) -> Result<Scenario, InputError> {
        let ovs: Vec<Override> = sets
            .iter()
            .map(|s| Override::parse_set(s).unwrap())
            .collect();
        from_str(text, Path::new("dir/s.toml"), &ovs)
    }

    const P2P: &str = "\
[scenario]
name = \"p\"
machine = \"c.toml\"

[machine]
nodes = 2

[workload]
kind = \"p2p\"
bytes = \"1 MiB\"
from = \"host\"
";

    #[test]
    fn program_workloads_read_their_spec() {
        let s = load_with(P2P, &["machine.gpus_per_node=3", "workload.repeat=5"]).unwrap();
        assert!(s.workload.is_none());
        assert_eq!((s.nodes, s.gpus_per_node), (Some(2), Some(3)));
        let Some(ProgramWorkload::P2p(p)) = &s.program else {
            panic!("p2p expected: {:?}", s.program)
        };
        assert_eq!(p.bytes.0, 1048576.0);
        assert_eq!(p.repeat, 5);
        assert_eq!(p.from, hetsim_mpi::workload::BufferSpec::Host);
        assert!(s.generate().is_err());
    }

    #[test]
    fn program_workload_errors_are_located() {
        let e = load_with(&P2P.replace("from =", "frm ="), &[]).unwrap_err();
        assert_eq!(e.location.line, Some(11), "{e}");
        assert_eq!(e.location.field.as_deref(), Some("workload.frm"), "{e}");
        let e = load_with(P2P, &["workload.bytes=-3"]).unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("workload.bytes"), "{e}");
        assert!(e.to_string().contains("--set workload.bytes=-3"), "{e}");
        let e = load_with(P2P, &["machine.nodes=0"]).unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("machine.nodes"), "{e}");
        let e = load_with(&P2P.replace("bytes = \"1 MiB\"\n", ""), &[]).unwrap_err();
        assert!(e.message.contains("missing field `bytes`"), "{e}");
    }

    #[test]
    fn loads_and_resolves_the_machine_path() {
        let s = load_with(BASE, &[]).unwrap();
        assert_eq!(s.machine_file, Path::new("dir/m.toml"));
        assert_eq!(s.workload.unwrap().kind, TiledAlgorithm::Cholesky);
        assert_eq!(s.workload.unwrap().n, 960);
        assert_eq!(s.run.seed, 4);
        assert_eq!(s.scheduler.name(), "eager");
    }

    #[test]
    fn set_overrides_and_creates() {
        let s = load_with(
            BASE,
            &[
                "workload.n=1920",
                "scheduler.name=prio",
                "run.ncpu=2",
                "workload.precision=double",
            ],
        )
        .unwrap();
        assert_eq!(s.workload.unwrap().n, 1920);
        assert_eq!(s.scheduler.name(), "prio");
        assert_eq!(s.run.ncpu, Some(2));
        assert_eq!(s.workload.unwrap().precision, Precision::Double);
        // A missing table is created.
        let no_run = BASE.replace("[run]\nseed = 4\n", "");
        let s = load_with(&no_run, &["run.seed=9"]).unwrap();
        assert_eq!(s.run.seed, 9);
    }

    #[test]
    fn set_unknown_field_names_the_argument() {
        let e = load_with(BASE, &["workload.nn=5"]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("--set workload.nn=5: field `workload.nn`"),
            "{msg}"
        );
        assert!(msg.contains("unknown field `nn`"), "{msg}");
    }

    #[test]
    fn set_wrong_type_names_the_argument() {
        let e = load_with(BASE, &["workload.n=big"]).unwrap_err();
        assert_eq!(
            e.location.file.as_deref(),
            Some(Path::new("--set workload.n=big"))
        );
        assert_eq!(e.location.field.as_deref(), Some("workload.n"));
        let e = load_with(BASE, &["workload.n.x=1"]).unwrap_err();
        assert!(e.message.contains("not a table"), "{e}");
    }

    #[test]
    fn file_errors_have_line_and_field() {
        let bad = BASE.replace("n = 960", "nn = 960");
        let e = load_with(&bad, &[]).unwrap_err();
        assert_eq!(e.location.line, Some(7), "{e}");
        assert_eq!(e.location.field.as_deref(), Some("workload.nn"), "{e}");

        let bad = BASE.replace("\"cholesky\"", "\"qr\"");
        let e = load_with(&bad, &[]).unwrap_err();
        assert_eq!(e.location.line, Some(6), "{e}");
        assert_eq!(e.location.field.as_deref(), Some("workload.kind"), "{e}");

        let bad = BASE.replace("nb = 96", "nb = 97");
        let e = load_with(&bad, &[]).unwrap_err();
        assert_eq!(e.location.line, Some(8), "{e}");
        assert_eq!(e.location.field.as_deref(), Some("workload.nb"), "{e}");

        let bad = BASE.replace("n = 960\n", "");
        let e = load_with(&bad, &[]).unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("workload.n"), "{e}");
        assert_eq!(e.location.line, Some(5), "{e}");

        let bad = BASE.replace("\"eager\"", "\"nope\"");
        let e = load_with(&bad, &[]).unwrap_err();
        assert_eq!(e.location.line, Some(12), "{e}");
        assert!(e.message.contains("eager, prio, random"), "{e}");

        let e = load_with("this is not toml\n", &[]).unwrap_err();
        assert_eq!(e.location.line, Some(1), "{e}");
    }

    #[test]
    fn missing_table_is_named() {
        let no_workload = "[scenario]\nname = \"t\"\nmachine = \"m.toml\"\n";
        let e = load_with(no_workload, &[]).unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("workload"), "{e}");
    }

    #[test]
    fn scheduler_options_are_read_by_the_scheduler() {
        let e = load_with(BASE, &["scheduler.alpha=0.5"]).unwrap_err();
        assert_eq!(
            e.message,
            "scheduler `eager` has no option `alpha` (it takes none); `alpha` is an option of \
             dm, dmda, dmdap, dmdar, dmdas, dmdasd"
        );
        assert_eq!(e.location.field.as_deref(), Some("scheduler.alpha"));
        let e = load_with(BASE, &["scheduler.delta=0.5"]).unwrap_err();
        assert_eq!(
            e.message,
            "scheduler `eager` has no option `delta` (it takes none)"
        );
        // In the file: the line of the value, the options the scheduler does take.
        let file = BASE.replace("name = \"eager\"", "name = \"dm\"\nbeta = 2");
        let e = load_with(&file, &[]).unwrap_err();
        assert_eq!(e.location.line, Some(13), "{e}");
        assert_eq!(e.location.field.as_deref(), Some("scheduler.beta"), "{e}");
        assert!(e.message.starts_with("scheduler `dm` has no option `beta` (its options: alpha); `beta` is an option of dmda,"), "{e}");
        // --sched changes which options are taken.
        let file = BASE.replace("name = \"eager\"", "name = \"dmdar\"\nready_first = false");
        assert!(load_with(&file, &[]).is_ok());
        let e = load_with(&file, &["scheduler.name=dmda"]).unwrap_err();
        assert!(
            e.message
                .contains("its options: alpha, beta, gamma, idle_power, transfer_estimate"),
            "{e}"
        );
        assert_eq!(e.location.line, Some(13), "{e}");
        // Values are checked by the options' type, located.
        let e = load_with(BASE, &["scheduler.name=dmda", "scheduler.gamma=-2"]).unwrap_err();
        assert_eq!(e.message, "expected a finite number >= 0, found -2");
        assert_eq!(
            e.location.file.as_deref(),
            Some(Path::new("--set scheduler.gamma=-2"))
        );
        let e = load_with(&file.replace("false", "\"no\""), &[]).unwrap_err();
        assert!(e.message.contains("expected true or false"), "{e}");
        assert_eq!(e.location.line, Some(13), "{e}");
        let e = load_with(BASE, &["scheduler=3"]).unwrap_err();
        assert!(e.message.contains("expected a table"), "{e}");
        let e = load_with(BASE, &["scheduler.name=3"]).unwrap_err();
        assert!(e.message.contains("expected a string"), "{e}");
    }

    #[test]
    fn runtime_table_replaces_the_machines_settings_and_errors_are_located() {
        let file = format!("{BASE}\n[runtime]\npush_cost = \"0 us\"\ntransfer_cost = false\n");
        let s = load_with(&file, &[]).unwrap();
        let rt = s.runtime.as_ref().expect("[runtime] kept");
        assert_eq!(rt.transfer_cost, Some(false));
        let mut m = hetsim_platform::machine::RuntimeConfig::default();
        apply_runtime(rt, &mut m, &|_, f, msg| InputError::new(msg).at_field(f)).unwrap();
        assert_eq!((m.push_s, m.transfer_cost), (0.0, false));
        // A bare number in the file: the scenario's line and field.
        let e = load_with(&format!("{BASE}\n[runtime]\npush_cost = 3\n"), &[]).unwrap_err();
        assert!(e.message.contains("has no unit"), "{e}");
        assert_eq!(e.location.line, Some(18), "{e}");
        assert_eq!(e.location.field.as_deref(), Some("runtime.push_cost"));
        // The same on the command line: the --set.
        let e = load_with(BASE, &["runtime.gpu_pipeline_depth=0"]).unwrap_err();
        assert!(e.message.contains("between 1 and 1024"), "{e}");
        assert_eq!(
            e.location.file.as_deref(),
            Some(Path::new("--set runtime.gpu_pipeline_depth=0"))
        );
        let e = load_with(BASE, &["runtime.nope=1"]).unwrap_err();
        assert!(e.message.contains("unknown field `nope`"), "{e}");
        // A run-setting error the runtime reports as `runtime.ncpu` is still the scenario's
        // `run.ncpu`; the table's own fields stay `runtime.*`.
        let s = load_with(&file, &["run.ncpu=99"]).unwrap();
        let e = s.locate(InputError::new("too many").at_field("runtime.ncpu"));
        assert_eq!(e.location.field.as_deref(), Some("run.ncpu"));
        let e = s.locate(InputError::new("x").at_field("runtime.push_cost"));
        assert_eq!(e.location.field.as_deref(), Some("runtime.push_cost"));
        assert_eq!(e.location.line, Some(17), "{e}");
    }

    #[test]
    fn scheduler_options_reach_the_scheduler() {
        let a = load_with(
            BASE,
            &["scheduler.name=dmdas", "scheduler.ready_first=false"],
        )
        .unwrap();
        let b = load_with(BASE, &["scheduler.name=dmdas"]).unwrap();
        assert_ne!(a.scheduler, b.scheduler);
        assert!(format!("{:?}", a.scheduler.config).contains("ready_first: Some(false)"));
        assert_eq!(a.build_scheduler().name(), "dmdas");
    }

    #[test]
    fn later_errors_are_located() {
        let s = load_with(BASE, &["run.ncpu=99"]).unwrap();
        let e = s.locate(InputError::new("too many").at_field("runtime.ncpu"));
        assert_eq!(e.location.field.as_deref(), Some("run.ncpu"));
        assert_eq!(
            e.location.file.as_deref(),
            Some(Path::new("--set run.ncpu=99"))
        );
        let s = load_with(BASE, &[]).unwrap();
        let e = s.locate(InputError::new("x").at_field("workload"));
        assert_eq!(e.location.line, Some(5));
    }

    #[test]
    fn missing_kernel_models_point_at_the_machine_and_the_tile_size() {
        let s = load_with(BASE, &[]).unwrap();
        let e = s.locate_run_error(InputError::new("unknown kernel").at_field("codelets"));
        assert_eq!(e.location.file.as_deref(), Some(Path::new("dir/m.toml")));
        assert!(e.message.contains("workload.nb = 96"), "{e}");
        assert!(e.message.contains("dir/s.toml:line 8"), "{e}");
    }

    #[test]
    fn malformed_set() {
        assert!(Override::parse_set("workload.n").is_err());
        assert!(Override::parse_set("a..b=1").is_err());
        assert!(Override::parse_set("=1").is_err());
        let o = Override::parse_set("run.prefetch=false").unwrap();
        assert_eq!(o.describe(), "run.prefetch=false");
    }

    #[test]
    fn task_counts() {
        assert_eq!(cholesky_tasks(1), 1);
        assert_eq!(cholesky_tasks(60), 37_820);
        assert_eq!(lu_tasks(1), 1);
        assert_eq!(lu_tasks(2), 2 + 2 + 1);
    }
}
