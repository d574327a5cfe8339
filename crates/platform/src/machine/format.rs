//! The machine file as written: serde structures mirroring the TOML, with source spans kept so
//! that validation can point at the line of every value. Nothing here is checked beyond TOML
//! types and field names; validation (the private `validate` module) turns a
//! [`RawMachineFile`] into a [`super::Machine`].
//!
//! `[machine]` plus the arrays are kept in one struct so that a later cluster format can embed
//! the same tables per node.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

pub use hetsim_core::units::RawQuantity;

/// A whole machine file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMachineFile {
    /// `[machine]`: name and description.
    pub machine: Spanned<RawHeader>,
    /// `[[memory_nodes]]`.
    #[serde(default)]
    pub memory_nodes: Vec<Spanned<RawMemNode>>,
    /// `[[cpus]]`: groups of identical cores.
    #[serde(default)]
    pub cpus: Vec<Spanned<RawCpus>>,
    /// `[[gpus]]`.
    #[serde(default)]
    pub gpus: Vec<Spanned<RawGpu>>,
    /// `[[links]]`.
    #[serde(default)]
    pub links: Vec<Spanned<RawLink>>,
    /// `[[routes]]`.
    #[serde(default)]
    pub routes: Vec<Spanned<RawRoute>>,
    /// `[runtime]`: overheads and policies, all optional.
    #[serde(default)]
    pub runtime: Option<Spanned<RawRuntime>>,
    /// `[perfmodels]`: machine-wide settings of the kernel models, all optional.
    #[serde(default)]
    pub perfmodels: Option<Spanned<RawPerfModels>>,
    /// `[[codelets]]`: kernel performance models.
    #[serde(default)]
    pub codelets: Vec<Spanned<RawCodelet>>,
    /// `[affinity]`: per GPU name, the CPU core indices sorted by proximity (StarPU's
    /// `bus/<host>.affinity`), optional.
    #[serde(default)]
    pub affinity: Option<Spanned<RawAffinity>>,
}

/// `[affinity]`: GPU name → CPU core indices, nearest first.
pub type RawAffinity = std::collections::BTreeMap<String, Spanned<Vec<Spanned<i64>>>>;

/// A file named by `[perfmodels] include`: only `[[codelets]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCodeletsFile {
    /// `[[codelets]]`.
    #[serde(default)]
    pub codelets: Vec<Spanned<RawCodelet>>,
}

/// `[perfmodels]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPerfModels {
    /// Noise of the codelets that set none; default none.
    #[serde(default)]
    pub noise: Option<Spanned<RawNoise>>,
    /// Files holding more `[[codelets]]`, relative to the machine file's directory.
    #[serde(default)]
    pub include: Option<Spanned<Vec<Spanned<String>>>>,
}

/// `noise = { kind = "...", ... }`: one struct for every kind, as for transfer models.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNoise {
    /// "none", "normal", "lognormal" or "histogram".
    pub kind: Spanned<String>,
    /// histogram: bin edges, strictly increasing.
    #[serde(default)]
    pub edges: Option<Spanned<Vec<Spanned<f64>>>>,
    /// histogram: one weight per bin.
    #[serde(default)]
    pub weights: Option<Spanned<Vec<Spanned<f64>>>>,
    /// histogram: observed values, drawn uniformly (instead of edges and weights).
    #[serde(default)]
    pub samples: Option<Spanned<Vec<Spanned<f64>>>>,
}

/// `[[codelets]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCodelet {
    /// StarPU's performance-model symbol, e.g. "chol_model_gemm".
    pub name: Spanned<String>,
    /// This codelet's noise, overriding `[perfmodels] noise`.
    #[serde(default)]
    pub noise: Option<Spanned<RawNoise>>,
    /// `[[codelets.models]]`: one per device or device kind.
    #[serde(default)]
    pub models: Vec<Spanned<RawDeviceModel>>,
}

/// `[[codelets.models]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDeviceModel {
    /// "cpu", "gpu" or the name of a GPU.
    pub device: Spanned<String>,
    /// Measured sizes.
    #[serde(default)]
    pub history: Option<Spanned<Vec<Spanned<RawHistoryEntry>>>>,
    /// `a·size^b + c`.
    #[serde(default)]
    pub regression: Option<Spanned<RawRegression>>,
    /// Duration = flops / flop_rate.
    #[serde(default)]
    pub flop_rate: Option<Spanned<RawQuantity>>,
    /// Deviation of regression and flop-rate durations, relative to their mean.
    #[serde(default)]
    pub rel_stddev: Option<Spanned<f64>>,
}

/// One `{ size = ..., mean = ..., stddev = ..., samples = ... }` of a history.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHistoryEntry {
    /// Footprint size in bytes.
    pub size: Spanned<RawQuantity>,
    /// Mean duration.
    pub mean: Spanned<RawQuantity>,
    /// Standard deviation; default 0.
    #[serde(default)]
    pub stddev: Option<Spanned<RawQuantity>>,
    /// Number of measurements.
    #[serde(default)]
    pub samples: Option<Spanned<i64>>,
    /// Floating-point operations of a task of this size (StarPU's `flops` column), optional:
    /// only reports use it (GFlop/s in `hetsim calibrate show`).
    #[serde(default)]
    pub flops: Option<Spanned<f64>>,
}

/// `regression = { a = ..., b = ..., c = ..., min_size = ..., max_size = ... }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRegression {
    /// Coefficient, in seconds per byte^b (a duration); default 0.
    #[serde(default)]
    pub a: Option<Spanned<RawQuantity>>,
    /// Exponent; default 0.
    #[serde(default)]
    pub b: Option<Spanned<f64>>,
    /// Constant term (a duration); default 0.
    #[serde(default)]
    pub c: Option<Spanned<RawQuantity>>,
    /// Smallest size the regression applies to.
    #[serde(default)]
    pub min_size: Option<Spanned<RawQuantity>>,
    /// Largest size the regression applies to.
    #[serde(default)]
    pub max_size: Option<Spanned<RawQuantity>>,
}

/// `[machine]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHeader {
    /// Short name, e.g. "mirage".
    pub name: Spanned<String>,
    /// One line of description.
    #[serde(default)]
    pub description: Option<String>,
}

/// `[[memory_nodes]]`.
#[derive(Debug, Deserialize)]
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
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCpus {
    /// Number of cores.
    pub count: Spanned<i64>,
    /// "Intel Xeon X5650".
    pub model: String,
    /// Memory node the cores work in.
    pub memory: Spanned<String>,
    /// Peak rate of one core, optional.
    #[serde(default)]
    pub flops_per_core: Option<Spanned<RawQuantity>>,
}

/// `[[gpus]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGpu {
    /// "CUDA0".
    pub name: Spanned<String>,
    /// "Tesla M2070".
    pub model: String,
    /// Memory node of kind "gpu".
    pub memory: Spanned<String>,
    /// Peak compute rate, optional.
    #[serde(default)]
    pub peak_flops: Option<Spanned<RawQuantity>>,
    /// Peak device-memory bandwidth, optional (the roofline models need it).
    #[serde(default)]
    pub memory_bandwidth: Option<Spanned<RawQuantity>>,
}

/// `[[links]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLink {
    /// Unique name; routes refer to it.
    pub name: Spanned<String>,
    /// Capacity.
    pub bandwidth: Spanned<RawQuantity>,
    /// Per-flow latency; default 0.
    #[serde(default)]
    pub latency: Option<Spanned<RawQuantity>>,
    /// "shared" (default), "fatpipe" or "split-duplex".
    #[serde(default)]
    pub sharing: Option<Spanned<String>>,
}

/// `[[routes]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRoute {
    /// Source memory node.
    pub src: Spanned<String>,
    /// Destination memory node.
    pub dst: Spanned<String>,
    /// Link names in order from src to dst.
    #[serde(default)]
    pub links: Option<Spanned<Vec<Spanned<String>>>>,
    /// Also add the route dst → src with the links reversed.
    #[serde(default)]
    pub symmetric: Option<Spanned<bool>>,
    /// A size-dependent transfer model that replaces fluid sharing on this route.
    #[serde(default)]
    pub model: Option<Spanned<RawModel>>,
}

/// `model = { kind = "...", ... }`. One struct for every kind, so that spans survive
/// (internally tagged enums lose them); validation checks which fields each kind needs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    /// "affine", "piecewise" or "stencil".
    pub kind: Spanned<String>,
    /// affine: fixed cost.
    #[serde(default)]
    pub latency: Option<Spanned<RawQuantity>>,
    /// affine: asymptotic bandwidth.
    #[serde(default)]
    pub bandwidth: Option<Spanned<RawQuantity>>,
    /// piecewise: `[[bytes, seconds], ...]`.
    #[serde(default)]
    pub points: Option<Spanned<Vec<RawPoint>>>,
    /// stencil: peak bandwidth B0.
    #[serde(default)]
    pub b0: Option<Spanned<RawQuantity>>,
    /// stencil: latency t0.
    #[serde(default)]
    pub t0: Option<Spanned<RawQuantity>>,
}

/// One `[bytes, seconds]` pair of a piecewise model (its length is checked in validation).
pub type RawPoint = Spanned<Vec<Spanned<RawQuantity>>>;

/// `[runtime]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRuntime {
    /// cudaMalloc cost.
    #[serde(default)]
    pub cuda_malloc: Option<Spanned<RawQuantity>>,
    /// cudaFree cost.
    #[serde(default)]
    pub cuda_free: Option<Spanned<RawQuantity>>,
    /// Pinned host allocation cost per MiB.
    #[serde(default)]
    pub pinned_alloc_per_mib: Option<Spanned<RawQuantity>>,
    /// Queueing cost of each transfer.
    #[serde(default)]
    pub transfer_queue: Option<Spanned<RawQuantity>>,
    /// Queueing cost of each GPU task.
    #[serde(default)]
    pub kernel_queue: Option<Spanned<RawQuantity>>,
    /// Simulated time the pushing thread spends on each push.
    #[serde(default)]
    pub push_cost: Option<Spanned<RawQuantity>>,
    /// Whether small GPU allocations come out of 32 MiB chunks.
    #[serde(default)]
    pub suballocator: Option<bool>,
    /// Pending requests per pair under which a fetch is submitted.
    #[serde(default)]
    pub max_pending_fetches: Option<Spanned<i64>>,
    /// Pending requests per pair under which a prefetch is submitted.
    #[serde(default)]
    pub max_pending_prefetches: Option<Spanned<i64>>,
    /// Pending requests per pair under which an idle request is submitted.
    #[serde(default)]
    pub max_pending_idle: Option<Spanned<i64>>,
    /// Tasks a GPU worker holds at once.
    #[serde(default)]
    pub gpu_pipeline_depth: Option<Spanned<i64>>,
    /// Whether each GPU takes a CPU core to drive it.
    #[serde(default)]
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
