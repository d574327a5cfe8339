//! The machine file as written: serde structures mirroring the TOML, with source spans kept so
//! that validation can point at the line of every value. Nothing here is checked beyond TOML
//! types and field names; validation (the private `validate` module) turns a
//! [`RawMachineFile`] into a [`super::Machine`].
//!
//! The same structures write machine files: they serialise as read (a [`Spanned`] value as its
//! value alone), and [`RawMachineFile::to_document`] lays them out as tables for `toml_edit`,
//! where a writer attaches its comments (`hetsim calibrate import-starpu` does). Values made in
//! code take an empty span ([`unspanned`]).
//!
//! `[machine]` plus the arrays are kept in one struct so that a later cluster format can embed
//! the same tables per node.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use toml::Spanned;

pub use hetsim_core::units::RawQuantity;

/// A whole machine file.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMachineFile {
    /// `[machine]`: name and description.
    pub machine: Spanned<RawHeader>,
    /// `[[memory_nodes]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_nodes: Vec<Spanned<RawMemNode>>,
    /// `[[cpus]]`: groups of identical cores.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<Spanned<RawCpus>>,
    /// `[[gpus]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<Spanned<RawGpu>>,
    /// `[[links]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Spanned<RawLink>>,
    /// `[[routes]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Spanned<RawRoute>>,
    /// `[runtime]`: overheads and policies, all optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Spanned<RawRuntime>>,
    /// `[perfmodels]`: machine-wide settings of the kernel models, all optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perfmodels: Option<Spanned<RawPerfModels>>,
    /// `[[codelets]]`: kernel performance models.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codelets: Vec<Spanned<RawCodelet>>,
    /// `[affinity]`: per GPU name, the CPU core indices sorted by proximity (StarPU's
    /// `bus/<host>.affinity`), optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Spanned<RawAffinity>>,
}

/// A value made in code rather than read: its span is empty (serialising ignores spans).
pub fn unspanned<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

/// The top-level sections in the order `docs/machine-format.md` describes them.
const SECTION_ORDER: [&str; 10] = [
    "machine",
    "memory_nodes",
    "cpus",
    "gpus",
    "links",
    "routes",
    "runtime",
    "affinity",
    "perfmodels",
    "codelets",
];

impl RawMachineFile {
    /// The file as a TOML document: `[machine]`, `[runtime]`, `[affinity]` and `[perfmodels]`
    /// as tables, the lists of memory nodes, cpus, GPUs, links, routes, codelets and each
    /// codelet's models as arrays of tables (`[[codelets.models]]`), every other value inline, in
    /// the order of `docs/machine-format.md`; `[affinity]`'s GPUs shorter names first (`CUDA2`
    /// before `CUDA10`). Absent optional fields and empty lists are left out. Reading the
    /// printed document gives these values back.
    pub fn to_document(&self) -> Result<toml_edit::DocumentMut, toml_edit::ser::Error> {
        let mut doc = toml_edit::ser::to_document(self)?;
        let rank = |key: &toml_edit::Key| {
            SECTION_ORDER
                .iter()
                .position(|s| *s == key.get())
                .unwrap_or(SECTION_ORDER.len())
        };
        doc.sort_values_by(|a, _, b, _| rank(a).cmp(&rank(b)));
        for (_, section) in doc.iter_mut() {
            as_section(section);
        }
        // GPUs in device order, CUDA2 before CUDA10 (the map holds them sorted as text).
        if let Some(affinity) = doc
            .get_mut("affinity")
            .and_then(toml_edit::Item::as_table_mut)
        {
            affinity.sort_values_by(|a, _, b, _| {
                (a.get().len(), a.get()).cmp(&(b.get().len(), b.get()))
            });
        }
        if let Some(codelets) = doc
            .get_mut("codelets")
            .and_then(toml_edit::Item::as_array_of_tables_mut)
        {
            for codelet in codelets.iter_mut() {
                if let Some(models) = codelet.get_mut("models") {
                    as_section(models);
                }
            }
        }
        Ok(doc)
    }
}

/// An inline table as a `[table]`, an array of inline tables as `[[tables]]`; other items stay.
fn as_section(item: &mut toml_edit::Item) {
    let inline = std::mem::take(item);
    *item = match inline.into_table() {
        Ok(table) => toml_edit::Item::Table(table),
        Err(other) => other
            .into_array_of_tables()
            .map_or_else(|other| other, toml_edit::Item::ArrayOfTables),
    };
}

/// `[affinity]`: GPU name → CPU core indices, nearest first.
pub type RawAffinity = std::collections::BTreeMap<String, Spanned<Vec<Spanned<i64>>>>;

/// A file named by `[perfmodels] include`: only `[[codelets]]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCodeletsFile {
    /// `[[codelets]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codelets: Vec<Spanned<RawCodelet>>,
}

/// `[perfmodels]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPerfModels {
    /// Noise of the codelets that set none; default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Spanned<RawNoise>>,
    /// Files holding more `[[codelets]]`, relative to the machine file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<Spanned<Vec<Spanned<String>>>>,
}

/// `noise = { kind = "...", ... }`: one struct for every kind, as for transfer models.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawNoise {
    /// "none", "normal", "lognormal" or "histogram".
    pub kind: Spanned<String>,
    /// histogram: bin edges, strictly increasing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges: Option<Spanned<Vec<Spanned<f64>>>>,
    /// histogram: one weight per bin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<Spanned<Vec<Spanned<f64>>>>,
    /// histogram: observed values, drawn uniformly (instead of edges and weights).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<Spanned<Vec<Spanned<f64>>>>,
}

/// `[[codelets]]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCodelet {
    /// StarPU's performance-model symbol, e.g. "chol_model_gemm".
    pub name: Spanned<String>,
    /// This codelet's noise, overriding `[perfmodels] noise`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Spanned<RawNoise>>,
    /// `[[codelets.models]]`: one per device or device kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<Spanned<RawDeviceModel>>,
}

/// `[[codelets.models]]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawDeviceModel {
    /// "cpu", "gpu" or the name of a GPU.
    pub device: Spanned<String>,
    /// Measured sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Spanned<Vec<Spanned<RawHistoryEntry>>>>,
    /// `a·size^b + c`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regression: Option<Spanned<RawRegression>>,
    /// Duration = flops / flop_rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flop_rate: Option<Spanned<RawQuantity>>,
    /// Deviation of regression and flop-rate durations, relative to their mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rel_stddev: Option<Spanned<f64>>,
}

/// One `{ size = ..., mean = ..., stddev = ..., samples = ... }` of a history.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawHistoryEntry {
    /// Footprint size in bytes.
    pub size: Spanned<RawQuantity>,
    /// Mean duration.
    pub mean: Spanned<RawQuantity>,
    /// Standard deviation; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev: Option<Spanned<RawQuantity>>,
    /// Number of measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<Spanned<i64>>,
    /// Floating-point operations of a task of this size (StarPU's `flops` column), optional:
    /// only reports use it (GFlop/s in `hetsim calibrate show`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops: Option<Spanned<f64>>,
}

/// `regression = { a = ..., b = ..., c = ..., min_size = ..., max_size = ... }`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRegression {
    /// Coefficient, in seconds per byte^b (a duration); default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<Spanned<RawQuantity>>,
    /// Exponent; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<Spanned<f64>>,
    /// Constant term (a duration); default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<Spanned<RawQuantity>>,
    /// Smallest size the regression applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<Spanned<RawQuantity>>,
    /// Largest size the regression applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<Spanned<RawQuantity>>,
}

/// `[machine]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawHeader {
    /// Short name, e.g. "mirage".
    pub name: Spanned<String>,
    /// One line of description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `[[memory_nodes]]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemNode {
    /// "RAM", "CUDA0", ...
    pub name: Spanned<String>,
    /// "ram" or "gpu".
    pub kind: Spanned<String>,
    /// Size, in bytes or with a unit.
    pub capacity: Spanned<RawQuantity>,
}

/// `[[cpus]]`: a group of identical cores.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCpus {
    /// Number of cores.
    pub count: Spanned<i64>,
    /// "Intel Xeon X5650".
    pub model: String,
    /// Memory node the cores work in.
    pub memory: Spanned<String>,
    /// Peak rate of one core, optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops_per_core: Option<Spanned<RawQuantity>>,
}

/// `[[gpus]]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawGpu {
    /// "CUDA0".
    pub name: Spanned<String>,
    /// "Tesla M2070".
    pub model: String,
    /// Memory node of kind "gpu".
    pub memory: Spanned<String>,
    /// Peak compute rate, optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_flops: Option<Spanned<RawQuantity>>,
    /// Peak device-memory bandwidth, optional (the roofline models need it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bandwidth: Option<Spanned<RawQuantity>>,
}

/// `[[links]]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLink {
    /// Unique name; routes refer to it.
    pub name: Spanned<String>,
    /// Capacity.
    pub bandwidth: Spanned<RawQuantity>,
    /// Per-flow latency; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Spanned<RawQuantity>>,
    /// "shared" (default), "fatpipe" or "split-duplex".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Spanned<String>>,
}

/// `[[routes]]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRoute {
    /// Source memory node.
    pub src: Spanned<String>,
    /// Destination memory node.
    pub dst: Spanned<String>,
    /// Link names in order from src to dst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Spanned<Vec<Spanned<String>>>>,
    /// Also add the route dst → src with the links reversed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symmetric: Option<Spanned<bool>>,
    /// A size-dependent transfer model that replaces fluid sharing on this route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Spanned<RawModel>>,
    /// What the runtime's schedulers predict a transfer on this route costs (StarPU's bus
    /// benchmark figures): an affine model, used by estimates only, never by the transfers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Spanned<RawModel>>,
}

/// `model = { kind = "...", ... }`. One struct for every kind, so that spans survive
/// (internally tagged enums lose them); validation checks which fields each kind needs.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    /// "affine", "piecewise" or "stencil".
    pub kind: Spanned<String>,
    /// affine: fixed cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Spanned<RawQuantity>>,
    /// affine: asymptotic bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Spanned<RawQuantity>>,
    /// piecewise: `[[bytes, seconds], ...]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Spanned<Vec<RawPoint>>>,
    /// stencil: peak bandwidth B0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b0: Option<Spanned<RawQuantity>>,
    /// stencil: latency t0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t0: Option<Spanned<RawQuantity>>,
}

/// One `[bytes, seconds]` pair of a piecewise model (its length is checked in validation).
pub type RawPoint = Spanned<Vec<Spanned<RawQuantity>>>;

/// `[runtime]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRuntime {
    /// cudaMalloc cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_malloc: Option<Spanned<RawQuantity>>,
    /// cudaFree cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_free: Option<Spanned<RawQuantity>>,
    /// Pinned host allocation cost per MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_alloc_per_mib: Option<Spanned<RawQuantity>>,
    /// Queueing cost of each transfer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_queue: Option<Spanned<RawQuantity>>,
    /// Queueing cost of each GPU task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_queue: Option<Spanned<RawQuantity>>,
    /// Simulated time the pushing thread spends on each push.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_cost: Option<Spanned<RawQuantity>>,
    /// Simulated time the submitting thread spends on each task it submits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_cost: Option<Spanned<RawQuantity>>,
    /// Simulated time a worker spends on each buffer of a popped task before it can run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_input_cost: Option<Spanned<RawQuantity>>,
    /// How long a work-stealing thief that failed to lock its victim sleeps before it pops
    /// again (0: until a push wakes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_retry: Option<Spanned<RawQuantity>>,
    /// Whether a work-stealing thief takes the last task of the victim's highest level
    /// (false: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_from_back: Option<bool>,
    /// Whether small GPU allocations come out of 32 MiB chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suballocator: Option<bool>,
    /// Whether transfers take time (`false`: every copy is done the instant it starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_cost: Option<bool>,
    /// Percentage of clean GPU chunks under which dirty ones are written back ahead of need.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_clean_pct: Option<Spanned<i64>>,
    /// Percentage of clean GPU chunks such a tidying aims at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_clean_pct: Option<Spanned<i64>>,
    /// Pending requests per pair under which a fetch is submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pending_fetches: Option<Spanned<i64>>,
    /// Pending requests per pair under which a prefetch is submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pending_prefetches: Option<Spanned<i64>>,
    /// Pending requests per pair under which an idle request is submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pending_idle: Option<Spanned<i64>>,
    /// Tasks a GPU worker holds at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_pipeline_depth: Option<Spanned<i64>>,
    /// Whether each GPU takes a CPU core to drive it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_driver_cores: Option<bool>,
}

/// The dotted field path (`links[2].bandwidth`) of the innermost key or value of `text` whose
/// span contains `offset`, or `None` if nothing does.
/// Used to name the field of errors that serde reports with only a span.
///
/// The whole tree is searched: the span of a table only covers its header (`[[links]]`), not
/// its body, so containment cannot be used to prune.
pub fn field_path_at(text: &str, offset: usize) -> Option<String> {
    // The recoverable parser still builds a tree around syntax errors, so those get a path too.
    let (doc, _errors) = toml::de::DeTable::parse_recoverable(text);
    let offset = char_floor(text, offset);
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let mut found = Found {
        best: None,
        same_line: None,
    };
    let mut path = String::new();
    search_table(doc.get_ref(), offset, line_start, &mut path, &mut found);
    // A syntax error may point just past the broken value (an unclosed string); then the key
    // written on the same line, before the error, is the best guess.
    found.best.or(found.same_line).map(|(_, p)| p)
}

/// The largest char boundary of `text` at or before `offset`, so that slicing cannot panic
/// whatever offset an error reports.
pub(crate) fn char_floor(text: &str, offset: usize) -> usize {
    let mut i = offset.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

struct Found {
    /// Smallest span containing the offset: (span length, path).
    best: Option<(usize, String)>,
    /// Last key starting on the offset's line, before it: (key start, path).
    same_line: Option<(usize, String)>,
}

fn consider(span: &Range<usize>, offset: usize, path: &str, found: &mut Found) {
    let best = &mut found.best;
    let end = span.end.max(span.start + 1);
    if span.start <= offset && offset < end {
        let len = end - span.start;
        // Smallest span wins; on a tie the deeper (longer) path, e.g. an inline table's key
        // rather than the table.
        let better = match best {
            None => true,
            Some((l, p)) => len < *l || (len == *l && path.len() > p.len()),
        };
        if better {
            *best = Some((len, path.to_string()));
        }
    }
}

fn search_table(
    table: &toml::de::DeTable<'_>,
    offset: usize,
    line_start: usize,
    path: &mut String,
    found: &mut Found,
) {
    for (key, value) in table.iter() {
        let before = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key.get_ref());
        consider(&key.span(), offset, path, found);
        consider(&value.span(), offset, path, found);
        let k = key.span().start;
        if line_start <= k && k <= offset && found.same_line.as_ref().is_none_or(|(s, _)| k >= *s) {
            found.same_line = Some((k, path.clone()));
        }
        search_value(value.get_ref(), offset, line_start, path, found);
        path.truncate(before);
    }
}

fn search_value(
    value: &toml::de::DeValue<'_>,
    offset: usize,
    line_start: usize,
    path: &mut String,
    found: &mut Found,
) {
    match value {
        toml::de::DeValue::Table(t) => search_table(t, offset, line_start, path, found),
        toml::de::DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let before = path.len();
                path.push_str(&format!("[{i}]"));
                consider(&item.span(), offset, path, found);
                search_value(item.get_ref(), offset, line_start, path, found);
                path.truncate(before);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_of_a_value_in_an_array_of_tables() {
        let text = "[machine]\nname = \"m\"\n\n[[links]]\nname = \"a\"\n\n[[links]]\nname = \"b\"\nbandwidth = \"1 GB/s\"\n";
        let at = text.find("\"1 GB/s\"").unwrap();
        assert_eq!(
            field_path_at(text, at).as_deref(),
            Some("links[1].bandwidth")
        );
        let at = text.find("bandwidth").unwrap();
        assert_eq!(
            field_path_at(text, at).as_deref(),
            Some("links[1].bandwidth")
        );
    }

    #[test]
    fn path_inside_an_inline_table() {
        let text = "[[routes]]\nsrc = \"A\"\nmodel = { kind = \"affine\", latency = \"1 us\" }\n";
        let at = text.find("\"1 us\"").unwrap();
        assert_eq!(
            field_path_at(text, at).as_deref(),
            Some("routes[0].model.latency")
        );
    }

    #[test]
    fn offsets_inside_a_character_do_not_panic() {
        let text = "[machine]\nname = \"µµµ\"\n";
        let inside = text.find('µ').unwrap() + 1;
        assert!(!text.is_char_boundary(inside));
        assert_eq!(field_path_at(text, inside).as_deref(), Some("machine.name"));
        assert_eq!(char_floor(text, inside), inside - 1);
        assert_eq!(char_floor(text, 10_000), text.len());
    }

    /// Every field of every table, each with a value other than its default.
    const EVERY_FIELD: &str = r#"
[machine]
name = "every"
description = "every field of the format"

[[memory_nodes]]
name = "RAM"
kind = "ram"
capacity = "64 GiB"

[[memory_nodes]]
name = "G0"
kind = "gpu"
capacity = "16 GiB"

[[memory_nodes]]
name = "G1"
kind = "gpu"
capacity = "16 GiB"

[[cpus]]
count = 4
model = "some CPU"
memory = "RAM"
flops_per_core = "20 Gflop/s"

[[gpus]]
name = "G0"
model = "some GPU"
memory = "G0"
peak_flops = "10 Tflop/s"
memory_bandwidth = "900 GB/s"

[[gpus]]
name = "G1"
model = "some GPU"
memory = "G1"

[[links]]
name = "Up"
bandwidth = "12 GB/s"
latency = "5 us"
sharing = "fatpipe"

[[links]]
name = "Down"
bandwidth = "11 GB/s"

[[routes]]
src = "RAM"
dst = "G0"
links = ["Down"]
model = { kind = "piecewise", points = [[0.0, "5 us"], ["1 MiB", "180 us"]] }

[[routes]]
src = "G0"
dst = "RAM"
links = ["Up"]
model = { kind = "affine", latency = "10 us", bandwidth = "6 GB/s" }

[[routes]]
src = "RAM"
dst = "G1"
links = ["Down", "Up"]
symmetric = true
model = { kind = "stencil", b0 = "4.29 GB/s", t0 = "16.9 us" }

[runtime]
cuda_malloc = "100 us"
cuda_free = "200 us"
pinned_alloc_per_mib = "300 us"
transfer_queue = "4 us"
kernel_queue = "6 us"
push_cost = "0.5 us"
suballocator = false
max_pending_fetches = 7
max_pending_prefetches = 3
max_pending_idle = 2
gpu_pipeline_depth = 3
gpu_driver_cores = false

[affinity]
G0 = [3, 2, 1, 0]

[perfmodels]
noise = { kind = "histogram", edges = [0.9, 1.0, 1.1], weights = [2.0, 7.0] }

[[codelets]]
name = "gemm"
noise = { kind = "histogram", samples = [0.8, 1.0, 1.3] }

[[codelets.models]]
device = "cpu"
history = [{ size = "4096 B", mean = "12 us", stddev = "1 us", samples = 30, flops = 1.5e6 }]
regression = { a = "2e-3 us", b = 1.5, c = "5 us", min_size = "900 B", max_size = "110000 B" }
rel_stddev = 0.05

[[codelets.models]]
device = "G0"
flop_rate = "1 Tflop/s"
"#;

    #[test]
    fn serialising_what_was_read_gives_the_same_file_back() {
        let raw: RawMachineFile = toml::from_str(EVERY_FIELD).unwrap();
        let written = raw.to_document().unwrap().to_string();
        // The same keys and values (as TOML, whatever the layout)...
        let values = |t: &str| toml::from_str::<toml::Table>(t).unwrap();
        assert_eq!(values(&written), values(EVERY_FIELD), "{written}");
        // ... the same machine ...
        assert_eq!(
            super::super::from_str(&written, "w.toml").unwrap(),
            super::super::from_str(EVERY_FIELD, "r.toml").unwrap()
        );
        // ... and the layout of the format's documentation: sections as tables in its order,
        // lists of tables as [[...]], the rest inline.
        let headers: Vec<&str> = written.lines().filter(|l| l.starts_with('[')).collect();
        assert_eq!(
            headers,
            [
                "[machine]",
                "[[memory_nodes]]",
                "[[memory_nodes]]",
                "[[memory_nodes]]",
                "[[cpus]]",
                "[[gpus]]",
                "[[gpus]]",
                "[[links]]",
                "[[links]]",
                "[[routes]]",
                "[[routes]]",
                "[[routes]]",
                "[runtime]",
                "[affinity]",
                "[perfmodels]",
                "[[codelets]]",
                "[[codelets.models]]",
                "[[codelets.models]]",
            ]
        );
        assert!(written.contains(
            "\nmodel = { kind = \"affine\", latency = \"10 us\", bandwidth = \"6 GB/s\" }\n"
        ));
        assert!(written.contains("\nG0 = [3, 2, 1, 0]\n"));

        // Included files are not read here, only named.
        let include =
            "[machine]\nname = \"m\"\n\n[perfmodels]\ninclude = [\"a.toml\", \"b.toml\"]\n";
        let raw: RawMachineFile = toml::from_str(include).unwrap();
        assert_eq!(raw.to_document().unwrap().to_string(), include);
    }

    #[test]
    fn absent_fields_and_empty_lists_are_not_written() {
        let raw: RawMachineFile = toml::from_str(
            "[machine]\nname = \"m\"\n[[links]]\nname = \"l\"\nbandwidth = \"1 GB/s\"\n",
        )
        .unwrap();
        assert_eq!(
            raw.to_document().unwrap().to_string(),
            "[machine]\nname = \"m\"\n\n[[links]]\nname = \"l\"\nbandwidth = \"1 GB/s\"\n"
        );
        // A value made in code serialises as its value.
        let quantity = unspanned(RawQuantity::Text("6.5 GB/s".into()));
        assert_eq!(quantity.span(), 0..0);
        assert_eq!(
            toml_edit::ser::to_document(&RawLink {
                name: unspanned("x".into()),
                bandwidth: quantity,
                latency: Some(unspanned(RawQuantity::Number(0.0))),
                sharing: None,
            })
            .unwrap()
            .to_string(),
            "name = \"x\"\nbandwidth = \"6.5 GB/s\"\nlatency = 0.0\n"
        );
    }

    /// Every machine file shipped in `calibration/` loads to the same machine once written
    /// from what was read (cluster files, another format, are skipped).
    #[test]
    fn shipped_machine_files_survive_a_round_trip() {
        let mut n = 0;
        let dir = hetsim_testkit::repo("calibration");
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            let Ok(raw) = toml::from_str::<RawMachineFile>(&text) else {
                continue;
            };
            let written = raw.to_document().unwrap().to_string();
            assert_eq!(
                super::super::from_str(&written, &path).unwrap(),
                super::super::load(&path).unwrap(),
                "{}",
                path.display()
            );
            n += 1;
        }
        // attila, mirage, idgraf, sirocco, hannibal, hannibal-pitch, gemini, h100-sxm-8x,
        // qs20-cell and the four *-node.toml files.
        assert!(n >= 13, "{n} machine files");
    }

    #[test]
    fn quantity_accepts_numbers_and_strings() {
        #[derive(Deserialize)]
        struct T {
            a: RawQuantity,
            b: RawQuantity,
            c: RawQuantity,
            d: RawQuantity,
        }
        let t: T = toml::from_str("a = 5\nb = 2.5\nc = \"1 GB\"\nd = nan\n").unwrap();
        assert_eq!(t.a, RawQuantity::Number(5.0));
        assert_eq!(t.b, RawQuantity::Number(2.5));
        assert_eq!(t.c, RawQuantity::Text("1 GB".into()));
        assert!(matches!(t.d, RawQuantity::Number(x) if x.is_nan()));
        assert!(toml::from_str::<T>("a = true\nb = 1\nc = 1\nd = 1\n").is_err());
    }
}
