//! StarPU's bus calibration files: `bus/<host>.config`, `.bandwidth`, `.latency` and
//! `.affinity` (format: `starpu-reference.md` §1b, writer `perfmodel_bus.c`).
//!
//! Every parser takes the file's text and its path (for messages) and returns a typed value or an
//! [`InputError`] naming the file and the line. Lines it does not know are skipped with a
//! `tracing::warn!`.

use std::path::Path;

use super::{data_lines, err_at};
use hetsim_core::error::InputError;

/// `bus/<host>.config`: how many devices of each kind StarPU calibrated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusConfig {
    /// `N # Number of CPUs`.
    pub cpus: u32,
    /// `N # Number of CUDA devices`.
    pub cuda: u32,
    /// `N # Number of OpenCL devices` (0 if absent).
    pub opencl: u32,
    /// `N # Number of NUMA nodes` (newer files; 1 when absent).
    pub numa: u32,
    /// Whether the file had a NUMA line (newer writers).
    pub has_numa_line: bool,
}

/// The most devices of one kind a configuration may count (a machine file's limit on cores).
pub const MAX_DEVICES: u32 = 1 << 20;

/// Parse a `.config` file. The CPU and CUDA counts are required; MIC, MPI and unknown lines are
/// skipped (with a warning for unknown ones).
pub fn parse_config(text: &str, path: &Path) -> Result<BusConfig, InputError> {
    let mut cpus = None;
    let mut cuda = None;
    let mut opencl = None;
    let mut numa = None;
    for l in data_lines(text) {
        let (value, what) = match l.text.split_once('#') {
            Some((v, w)) => (v.trim(), w.trim().to_ascii_lowercase()),
            None => (l.text.trim(), String::new()),
        };
        let n: u32 = value.parse().map_err(|_| {
            err_at(
                path,
                l.line,
                format!(
                    "expected a count followed by its description, such as \"12 # Number of \
                     CPUs\", found {:?}",
                    l.text
                ),
            )
        })?;
        let slot = if what.contains("cpu") {
            &mut cpus
        } else if what.contains("cuda") {
            &mut cuda
        } else if what.contains("opencl") {
            &mut opencl
        } else if what.contains("numa") {
            &mut numa
        } else if what.contains("mic") || what.contains("mpi") {
            continue;
        } else {
            tracing::warn!(
                "{}:line {}: unknown configuration line {:?}, skipped",
                path.display(),
                l.line,
                l.text
            );
            continue;
        };
        if n > MAX_DEVICES {
            return Err(err_at(
                path,
                l.line,
                format!("{n} devices: at most {MAX_DEVICES} (a machine file's limit)"),
            ));
        }
        *slot = Some(n);
    }
    let last = text.lines().count().max(1);
    let need = |v: Option<u32>, what: &str| {
        v.ok_or_else(|| {
            err_at(
                path,
                last,
                format!("missing line \"N # Number of {what}\"; the file is truncated or not a StarPU bus configuration"),
            )
        })
    };
    Ok(BusConfig {
        cpus: need(cpus, "CPUs")?,
        cuda: need(cuda, "CUDA devices")?,
        opencl: opencl.unwrap_or(0),
        numa: numa.unwrap_or(1).max(1),
        has_numa_line: numa.is_some(),
    })
}

/// A `.bandwidth` (MB/s) or `.latency` (µs) matrix: rows are sources, columns destinations;
/// memory node 0 is RAM (or NUMA0..k), then the CUDA devices, then the OpenCL devices. Values
/// are kept as written, so that reports can quote them.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// `cells[src][dst]`: the text as written and its value (`None` for `nan`).
    pub cells: Vec<Vec<(String, Option<f64>)>>,
    /// 1-based line of each row.
    pub lines: Vec<usize>,
}

impl Matrix {
    /// The value from `src` to `dst`, if present and not `nan`.
    pub fn get(&self, src: usize, dst: usize) -> Option<f64> {
        self.cells.get(src)?.get(dst)?.1
    }

    /// The text of the cell from `src` to `dst`, as written.
    pub fn text(&self, src: usize, dst: usize) -> Option<&str> {
        self.cells.get(src)?.get(dst).map(|c| c.0.as_str())
    }

    /// Number of rows (= number of columns).
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// True for an empty matrix (never returned by [`parse_matrix`]).
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

/// Parse a square matrix of non-negative numbers or `nan`. `what` names the quantity for
/// messages ("bandwidth (MB/s)"). A row with a different number of columns, a value that is not
/// a number, or fewer rows than columns (a truncated file) is an error naming the line; rows
/// beyond the square are skipped with a warning.
pub fn parse_matrix(text: &str, path: &Path, what: &str) -> Result<Matrix, InputError> {
    let mut cells: Vec<Vec<(String, Option<f64>)>> = Vec::new();
    let mut lines = Vec::new();
    let mut width = None;
    for l in data_lines(text) {
        let row: Vec<&str> = l.text.split_whitespace().collect();
        let w = *width.get_or_insert(row.len());
        if cells.len() == w {
            tracing::warn!(
                "{}:line {}: extra row after the {w}x{w} {what} matrix, skipped",
                path.display(),
                l.line
            );
            continue;
        }
        if row.len() != w {
            return Err(err_at(
                path,
                l.line,
                format!(
                    "expected {w} {what} values on this row (as on the first row), found {}; \
                     the matrix is truncated or malformed",
                    row.len()
                ),
            ));
        }
        let mut parsed = Vec::with_capacity(w);
        for (col, t) in row.iter().enumerate() {
            let v = if t.eq_ignore_ascii_case("nan") || t.eq_ignore_ascii_case("-nan") {
                None
            } else {
                match t.parse::<f64>() {
                    Ok(v) if v.is_finite() && v >= 0.0 => Some(v),
                    _ => {
                        return Err(err_at(
                            path,
                            l.line,
                            format!(
                                "column {col}: expected a non-negative {what} or nan, found {t:?}"
                            ),
                        ));
                    }
                }
            };
            parsed.push((t.to_string(), v));
        }
        cells.push(parsed);
        lines.push(l.line);
    }
    let Some(w) = width else {
        return Err(err_at(
            path,
            text.lines().count().max(1),
            format!("no {what} matrix: the file has no data lines"),
        ));
    };
    if cells.len() < w {
        return Err(err_at(
            path,
            lines.last().copied().unwrap_or(1),
            format!(
                "truncated {what} matrix: expected {w} rows (one per memory node, as there are \
                 {w} columns), found {}",
                cells.len()
            ),
        ));
    }
    Ok(Matrix { cells, lines })
}

/// What the rows of an affinity file list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AffinityUnit {
    /// CPU core ids (`# GPU CPU0 CPU1 ...`, older writers).
    Cores,
    /// NUMA node ids (`# GPU NUMA0 ...`, newer writers).
    Numa,
}

/// `bus/<host>.affinity`: for each CUDA device, the CPU cores (or NUMA nodes) sorted by
/// proximity. The OpenCL block that follows is skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Affinity {
    /// What the ids are.
    pub unit: AffinityUnit,
    /// Per CUDA device id: (line, ids nearest first).
    pub cuda: Vec<(usize, Vec<u32>)>,
}

/// Parse an affinity file for `ncuda` CUDA devices: the first `ncuda` rows, each `GPU id`
/// followed by ids, with GPU ids 0..ncuda in order. Ids must be below `limit` (the number of CPUs
/// or NUMA nodes, as the header says).
pub fn parse_affinity(
    text: &str,
    path: &Path,
    ncuda: u32,
    ncpus: u32,
    nnuma: u32,
) -> Result<Affinity, InputError> {
    let unit = if text
        .lines()
        .find(|l| l.trim_start().starts_with('#'))
        .is_some_and(|h| h.contains("NUMA"))
    {
        AffinityUnit::Numa
    } else {
        AffinityUnit::Cores
    };
    let limit = match unit {
        AffinityUnit::Cores => ncpus,
        AffinityUnit::Numa => nnuma,
    };
    let mut cuda = Vec::new();
    let mut rows = data_lines(text).into_iter();
    for expect in 0..ncuda {
        let Some(l) = rows.next() else {
            return Err(err_at(
                path,
                text.lines().count().max(1),
                format!(
                    "truncated affinity file: expected a row for each of the {ncuda} CUDA \
                     devices, found {expect}"
                ),
            ));
        };
        let mut ids = Vec::new();
        for t in l.text.split_whitespace() {
            let v: u32 = t.parse().map_err(|_| {
                err_at(
                    path,
                    l.line,
                    format!("expected a device or core id, found {t:?}"),
                )
            })?;
            ids.push(v);
        }
        let Some((&gpu, rest)) = ids.split_first() else {
            continue;
        };
        if gpu != expect {
            return Err(err_at(
                path,
                l.line,
                format!("expected the row of CUDA device {expect}, found device {gpu}"),
            ));
        }
        if let Some(bad) = rest.iter().find(|&&c| c >= limit) {
            return Err(err_at(
                path,
                l.line,
                format!(
                    "id {bad} is out of range: the configuration has {limit} {}",
                    match unit {
                        AffinityUnit::Cores => "CPUs",
                        AffinityUnit::Numa => "NUMA nodes",
                    }
                ),
            ));
        }
        if let Some((_, &dup)) = rest
            .iter()
            .enumerate()
            .find(|&(i, c)| rest[..i].contains(c))
        {
            return Err(err_at(
                path,
                l.line,
                format!("id {dup} is listed twice for CUDA device {gpu}: expected each once"),
            ));
        }
        cuda.push((l.line, rest.to_vec()));
    }
    Ok(Affinity { unit, cuda })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing (`starpu-bus`): the importer copied these into a machine file the
    /// loader refuses; they are now refused at their line.
    #[test]
    fn a_core_listed_twice_or_a_billion_cpus_is_refused_at_its_line() {
        let e = parse_affinity("0\t0\t1\t2\t0\t\n", Path::new("h.affinity"), 1, 8, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "h.affinity:line 1: id 0 is listed twice for CUDA device 0: expected each once"
        );
        let e = parse_config("1000000000 # Number of CPUs\n", Path::new("h.config")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "h.config:line 1: 1000000000 devices: at most 1048576 (a machine file's limit)"
        );
    }

    #[test]
    fn config_old_and_new() {
        let c = parse_config(
            "# Current configuration\n8 # Number of CPUs\n3 # Number of CUDA devices\n3 # Number of OpenCL devices\n",
            Path::new("h.config"),
        )
        .unwrap();
        assert_eq!((c.cpus, c.cuda, c.opencl, c.numa), (8, 3, 3, 1));
        let e = parse_config("8 # Number of CPUs\n", Path::new("h.config")).unwrap_err();
        assert!(e.to_string().contains("CUDA devices"), "{e}");
        let e = parse_config("x # Number of CPUs\n", Path::new("h.config")).unwrap_err();
        assert!(e.to_string().starts_with("h.config:line 1:"), "{e}");
    }

    #[test]
    fn matrix_truncated_and_ragged() {
        let ok = "# to 0\tto 1\n0.0\t5.0\nnan\t0\n";
        let m = parse_matrix(ok, Path::new("b"), "bandwidth (MB/s)").unwrap();
        assert_eq!(m.get(0, 1), Some(5.0));
        assert_eq!(m.get(1, 0), None);
        let e = parse_matrix("0 1\n", Path::new("b"), "bw").unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        let e = parse_matrix("0 1\n2\n", Path::new("b"), "bw").unwrap_err();
        assert!(e.to_string().starts_with("b:line 2:"), "{e}");
        let e = parse_matrix("0 x\n1 0\n", Path::new("b"), "bw").unwrap_err();
        assert!(e.to_string().contains("\"x\""), "{e}");
    }

    #[test]
    fn affinity_rows() {
        let a = parse_affinity(
            "# GPU\tCPU0\tCPU1\n0\t1\t0\n1\t0\t1\n0\t1\t0\n",
            Path::new("a"),
            2,
            2,
            1,
        )
        .unwrap();
        assert_eq!(a.cuda[1].1, [0, 1]);
        assert!(parse_affinity("0 5\n", Path::new("a"), 1, 2, 1).is_err());
    }
}
