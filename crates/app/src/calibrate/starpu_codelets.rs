//! StarPU's per-codelet history files, `codelets/45/<symbol>.<host>` (format:
//! `starpu-reference.md` §1b; writer `dump_model_file`, reader `parse_model_file` and
//! `scan_reg_model` in StarPU's `perfmodel_history.c`).
//!
//! Layout, comments (`#`) and blank lines aside: the format version; the number of
//! combinations; per combination the number of device types, then per type the device type,
//! device id and number of cores, then the number of implementations; per implementation the
//! number of entries, the linear-regression line (`sumlnx sumlnx2 sumlny sumlnxlny alpha beta n
//! minx maxx`), the NL-regression line (`a b c`), the multiple-regression line (`0`, or `ncoeff`
//! and the coefficients), and one history line per footprint (`hash size flops mean dev sum sum2
//! n`, times in µs).
//!
//! Choices (see `docs/calibrate.md`):
//! - only single-device combinations of a CPU core (`cpu0_impl0`, ncores = 1) or a CUDA device
//!   are kept; OpenCL, MIC, parallel CPU combinations and multi-device combinations are skipped
//!   with a warning; only implementation 0 is kept;
//! - history entries with no samples or a zero mean (StarPU ignores them) are skipped;
//! - several footprints with the same size (sgemm on non-square shapes): the entry with the most
//!   samples is kept (first in file order on a tie), the others are listed as dropped;
//! - the NL regression is kept when StarPU would use it: `a`, `b`, `c` not NaN, `n ≥ 10`
//!   (`STARPU_CALIBRATE_MINIMUM`) and `minx < 0.9·maxx` (`VALID_REGRESSION`);
//! - the `a b c` and multiple-regression lines are accepted in either order (one idgraf file has
//!   them swapped), with a warning;
//! - lines after the declared combinations are skipped with a warning, as StarPU ignores them.

use std::path::Path;

use super::{DataLine, data_lines, err_at};
use hetsim_core::error::InputError;
use hetsim_core::units::{self, Kind};

/// StarPU's calibration minimum (`STARPU_CALIBRATE_MINIMUM`, default 10): the regression is
/// only trusted with at least this many samples.
pub const CALIBRATION_MINIMUM: u64 = 10;

/// A device of a kept combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StarpuDevice {
    /// Any CPU core (StarPU's `cpu0_impl0`, ncores = 1).
    Cpu,
    /// CUDA device with this id (`cudaN_impl0`).
    Cuda(u32),
}

impl StarpuDevice {
    /// StarPU's arch name: `cpu0_impl0`, `cuda1_impl0`.
    pub fn arch_name(self) -> String {
        match self {
            StarpuDevice::Cpu => "cpu0_impl0".to_string(),
            StarpuDevice::Cuda(i) => format!("cuda{i}_impl0"),
        }
    }
}

/// One history line, with its figures as written.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryLine {
    /// 1-based line in the file.
    pub line: usize,
    /// Footprint hash, as written (`24c84a50`).
    pub footprint: String,
    /// Size in bytes (the sum of the task's buffers).
    pub size: u64,
    /// Flops as written (`1.769472e+09`, or `nan`), and its value.
    pub flops_text: String,
    /// Flops, NaN when StarPU wrote `nan`.
    pub flops: f64,
    /// Mean in µs as written (`2.805491e+03`).
    pub mean_text: String,
    /// Mean in µs.
    pub mean_us: f64,
    /// Deviation in µs as written.
    pub dev_text: String,
    /// Deviation in µs.
    pub dev_us: f64,
    /// Number of samples.
    pub samples: u64,
}

/// StarPU's NL regression `a·size^b + c` (µs), usable within `[0.9·minx, 1.1·maxx]`.
#[derive(Debug, Clone, PartialEq)]
pub struct NlRegression {
    /// Line of the `a b c` values.
    pub line: usize,
    /// `a`, µs per byte^b, as written and as a value.
    pub a: (String, f64),
    /// `b`.
    pub b: (String, f64),
    /// `c`, µs.
    pub c: (String, f64),
    /// `minx` of the regression line (bytes).
    pub minx: u64,
    /// `maxx` (bytes).
    pub maxx: u64,
    /// `n` of the regression line.
    pub samples: u64,
}

/// The model of one device in a codelet file.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchModel {
    /// The device.
    pub device: StarpuDevice,
    /// 1-based line of the combination's device type.
    pub line: usize,
    /// Kept history lines (one per size), in file order.
    pub entries: Vec<HistoryLine>,
    /// Lines dropped because another footprint of the same size had more samples:
    /// (dropped, line of the kept one).
    pub dropped_duplicates: Vec<(HistoryLine, usize)>,
    /// Lines skipped because they have no samples or a zero mean.
    pub skipped_empty: Vec<usize>,
    /// The NL regression, if StarPU would use it.
    pub regression: Option<NlRegression>,
}

/// A parsed codelet file.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeletFile {
    /// The performance-model symbol (file name without `.<host>`).
    pub symbol: String,
    /// The file name (`chol_model_gemm.mirage`).
    pub file_name: String,
    /// Kept models, in file order.
    pub models: Vec<ArchModel>,
    /// Combinations skipped (OpenCL, ...), described for the header comment.
    pub skipped: Vec<String>,
}

struct Cursor<'a, 'p> {
    lines: Vec<DataLine<'a>>,
    at: usize,
    path: &'p Path,
    last_line: usize,
}

impl<'a> Cursor<'a, '_> {
    fn next(&mut self, what: &str) -> Result<DataLine<'a>, InputError> {
        let l = self.lines.get(self.at).copied().ok_or_else(|| {
            err_at(
                self.path,
                self.last_line,
                format!("truncated file: expected {what} after the last line"),
            )
        })?;
        self.at += 1;
        Ok(l)
    }

    fn peek(&self) -> Option<DataLine<'a>> {
        self.lines.get(self.at).copied()
    }

    fn int(&mut self, what: &str) -> Result<(usize, u64), InputError> {
        let l = self.next(what)?;
        let t = l.text.trim();
        t.parse::<u64>()
            .map(|v| (l.line, v))
            .map_err(|_| err_at(self.path, l.line, format!("expected {what}, found {t:?}")))
    }

    fn fields(&mut self, n: usize, what: &str) -> Result<(usize, Vec<&'a str>), InputError> {
        let l = self.next(what)?;
        let f: Vec<&str> = l.text.split_whitespace().collect();
        if f.len() != n {
            return Err(err_at(
                self.path,
                l.line,
                format!(
                    "expected {what} ({n} values), found {} values: {:?}",
                    f.len(),
                    l.text.trim()
                ),
            ));
        }
        Ok((l.line, f))
    }
}

/// A float as StarPU writes it: `%e`, `%f`, or `nan` (StarPU's mark of a figure it has not
/// measured). A value too large for a double (`1e999`, `inf`) is refused: StarPU never writes
/// one, so the file is corrupt.
fn float(t: &str, path: &Path, line: usize, what: &str) -> Result<f64, InputError> {
    if t.eq_ignore_ascii_case("nan") || t.eq_ignore_ascii_case("-nan") {
        return Ok(f64::NAN);
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(err_at(
            path,
            line,
            format!("{what}: {t:?} is not a finite number (the file is corrupt)"),
        )),
        Err(_) => Err(err_at(
            path,
            line,
            format!("{what}: expected a number, found {t:?}"),
        )),
    }
}

fn uint(t: &str, path: &Path, line: usize, what: &str) -> Result<u64, InputError> {
    t.parse::<u64>().map_err(|_| {
        err_at(
            path,
            line,
            format!("{what}: expected a non-negative integer, found {t:?}"),
        )
    })
}

/// A size in bytes: an integer in the range machine files take (at most 1 EiB).
fn bytes(t: &str, path: &Path, line: usize, what: &str) -> Result<u64, InputError> {
    let v = uint(t, path, line, what)?;
    units::check_number(Kind::Bytes, v as f64).map_err(|_| {
        err_at(
            path,
            line,
            format!(
                "{what}: {v} bytes is out of the range of data sizes ({})",
                Kind::Bytes.range().2
            ),
        )
    })?;
    Ok(v)
}

/// Parse a codelet file's text. `symbol` is the model symbol (from the file name), `path` the
/// file for messages.
pub fn parse_codelet_file(
    text: &str,
    path: &Path,
    symbol: &str,
) -> Result<CodeletFile, InputError> {
    let file_name = path.file_name().map_or_else(
        || path.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    let mut c = Cursor {
        lines: data_lines(text),
        at: 0,
        path,
        last_line: text.lines().count().max(1),
    };
    let (vline, version) = c.int("the performance model version")?;
    if version != 45 {
        tracing::warn!(
            "{}:line {vline}: performance model version {version}, expected 45; reading it as \
             version 45",
            path.display()
        );
    }
    let (_, ncombs) = c.int("the number of combinations")?;
    let mut models: Vec<ArchModel> = Vec::new();
    let mut skipped = Vec::new();
    for _ in 0..ncombs {
        let (tline, ntypes) = c.int("the number of device types of a combination")?;
        let mut devs = Vec::new();
        for _ in 0..ntypes {
            let (dline, ty) = c.int("a device type (CPU 0, CUDA 1, OpenCL 2, ...)")?;
            let (_, id) = c.int("a device id")?;
            let (_, ncores) = c.int("a number of cores")?;
            devs.push((dline, ty, id, ncores));
        }
        let (_, nimpls) = c.int("the number of implementations")?;
        let device = match devs.as_slice() {
            [(_, 0, _, 1)] => Some(StarpuDevice::Cpu),
            [(_, 1, id, _)] => u32::try_from(*id).ok().map(StarpuDevice::Cuda),
            _ => None,
        };
        let line = devs.first().map_or(tline, |d| d.0);
        let describe = || {
            devs.iter()
                .map(|(_, ty, id, nc)| {
                    let kind = match ty {
                        0 => "CPU",
                        1 => "CUDA",
                        2 => "OpenCL",
                        3 => "MIC",
                        _ => "device type",
                    };
                    format!("{kind} {id} ({nc} cores)")
                })
                .collect::<Vec<_>>()
                .join(" + ")
        };
        for imp in 0..nimpls {
            let (ne_line, nentries) = c.int("the number of entries")?;
            let (rline, reg) = c.fields(
                9,
                "the regression line (sumlnx sumlnx2 sumlny sumlnxlny alpha beta n minx maxx)",
            )?;
            // `a b c` then the multiple-regression line; one real file has them swapped.
            let first = c.next("the NL-regression line (a b c)")?;
            let second = c.next("the multiple-regression line")?;
            let (abc, mlr) = if first.text.split_whitespace().count() == 1
                && second.text.split_whitespace().count() == 3
            {
                tracing::warn!(
                    "{}:line {}: the multiple-regression line comes before the `a b c` line; \
                     read in that order",
                    path.display(),
                    first.line
                );
                (second, first)
            } else {
                (first, second)
            };
            let abc_f: Vec<&str> = abc.text.split_whitespace().collect();
            if abc_f.len() != 3 {
                return Err(err_at(
                    path,
                    abc.line,
                    format!(
                        "expected the NL-regression line `a b c` (3 values), found {:?}",
                        abc.text.trim()
                    ),
                ));
            }
            let mlr_f: Vec<&str> = mlr.text.split_whitespace().collect();
            let ncoeff = mlr_f
                .first()
                .map(|t| {
                    uint(
                        t,
                        path,
                        mlr.line,
                        "number of multiple-regression coefficients",
                    )
                })
                .transpose()?
                .unwrap_or(0);
            if mlr_f.len() as u64 != ncoeff + 1 {
                return Err(err_at(
                    path,
                    mlr.line,
                    format!(
                        "expected the multiple-regression line: the number of coefficients \
                         ({ncoeff}) followed by that many values, found {:?}",
                        mlr.text.trim()
                    ),
                ));
            }
            if ncoeff > 0 {
                tracing::warn!(
                    "{}:line {}: multiple-regression coefficients are not imported",
                    path.display(),
                    mlr.line
                );
            }
            let mut lines = Vec::new();
            for _ in 0..nentries {
                let (hl, h) =
                    c.fields(8, "a history line (hash size flops mean dev sum sum2 n)")?;
                let what = |col: &str| format!("history column `{col}`");
                if h[0].len() > 8 || u32::from_str_radix(h[0], 16).is_err() {
                    return Err(err_at(
                        path,
                        hl,
                        format!(
                            "expected a footprint hash of 8 hex digits, found {:?}",
                            h[0]
                        ),
                    ));
                }
                let size = bytes(h[1], path, hl, &what("size"))?;
                let flops = float(h[2], path, hl, &what("flops"))?;
                let mean = float(h[3], path, hl, &what("mean"))?;
                let dev = float(h[4], path, hl, &what("dev"))?;
                float(h[5], path, hl, &what("sum"))?;
                float(h[6], path, hl, &what("sum2"))?;
                let n = uint(h[7], path, hl, &what("n"))?;
                lines.push(HistoryLine {
                    line: hl,
                    footprint: h[0].to_string(),
                    size,
                    flops_text: h[2].to_string(),
                    flops,
                    mean_text: h[3].to_string(),
                    mean_us: mean,
                    dev_text: h[4].to_string(),
                    dev_us: dev,
                    samples: n,
                });
            }
            let Some(device) = device else {
                if imp == 0 {
                    skipped.push(format!("{} (line {line})", describe()));
                    tracing::warn!(
                        "{}:line {line}: combination {} is not modelled (only one CPU core or \
                         one CUDA device per combination is), skipped",
                        path.display(),
                        describe()
                    );
                }
                continue;
            };
            if imp > 0 {
                tracing::warn!(
                    "{}:line {ne_line}: implementation {imp} of {} skipped: only implementation \
                     0 is imported",
                    path.display(),
                    device.arch_name()
                );
                continue;
            }
            if models.iter().any(|m| m.device == device) {
                tracing::warn!(
                    "{}:line {line}: a second combination for {}, skipped (the first is kept)",
                    path.display(),
                    device.arch_name()
                );
                continue;
            }
            // Regression.
            let num = |i: usize, what: &str| float(reg[i], path, rline, what);
            let reg_n = uint(reg[6], path, rline, "regression `n`")?;
            let minx = bytes(reg[7], path, rline, "regression `minx`")?;
            let maxx = bytes(reg[8], path, rline, "regression `maxx`")?;
            for (i, w) in [
                (0, "sumlnx"),
                (1, "sumlnx2"),
                (2, "sumlny"),
                (3, "sumlnxlny"),
            ] {
                num(i, w)?;
            }
            num(4, "alpha")?;
            num(5, "beta")?;
            let a = float(abc_f[0], path, abc.line, "NL regression `a`")?;
            let b = float(abc_f[1], path, abc.line, "NL regression `b`")?;
            let cc = float(abc_f[2], path, abc.line, "NL regression `c`")?;
            let valid = a.is_finite()
                && b.is_finite()
                && cc.is_finite()
                && reg_n >= CALIBRATION_MINIMUM
                && (minx as f64) < 0.9 * maxx as f64;
            let regression = valid.then(|| NlRegression {
                line: abc.line,
                a: (abc_f[0].to_string(), a),
                b: (abc_f[1].to_string(), b),
                c: (abc_f[2].to_string(), cc),
                minx,
                maxx,
                samples: reg_n,
            });
            // History: drop empty entries, keep one per size.
            let mut entries: Vec<HistoryLine> = Vec::new();
            let mut dropped = Vec::new();
            let mut skipped_empty = Vec::new();
            for h in lines {
                // StarPU writes an entry it has no measurement for with no samples or a zero
                // mean; any other mean that is not a positive time is corruption.
                if h.samples == 0 || h.mean_us == 0.0 {
                    skipped_empty.push(h.line);
                    continue;
                }
                if !(h.mean_us.is_finite() && h.mean_us > 0.0) {
                    return Err(err_at(
                        path,
                        h.line,
                        format!(
                            "history column `mean`: expected a positive time in us for {} \
                             samples, found {:?}",
                            h.samples, h.mean_text
                        ),
                    ));
                }
                if h.flops < 0.0 {
                    return Err(err_at(
                        path,
                        h.line,
                        format!(
                            "history column `flops`: expected a non-negative count or nan, \
                             found {:?}",
                            h.flops_text
                        ),
                    ));
                }
                // Machine files take durations from 1 fs to 1 hour (or a zero deviation).
                for (col, us, text) in [
                    ("mean", h.mean_us, &h.mean_text),
                    ("dev", h.dev_us, &h.dev_text),
                ] {
                    let secs = us * 1e-6;
                    let zero_mean = col == "mean" && secs == 0.0;
                    if us.is_finite()
                        && (zero_mean || units::check_number(Kind::Seconds, secs).is_err())
                    {
                        return Err(err_at(
                            path,
                            h.line,
                            format!(
                                "history column `{col}`: {text} us is out of the range of \
                                 kernel times ({})",
                                Kind::Seconds.range().2
                            ),
                        ));
                    }
                }
                if !(h.dev_us.is_finite() && h.dev_us >= 0.0) {
                    return Err(err_at(
                        path,
                        h.line,
                        format!("expected a non-negative deviation, found {:?}", h.dev_text),
                    ));
                }
                match entries.iter_mut().find(|e| e.size == h.size) {
                    Some(e) if h.samples > e.samples => {
                        let old = std::mem::replace(e, h);
                        dropped.push((old, e.line));
                    }
                    Some(e) => {
                        let kept = e.line;
                        dropped.push((h, kept));
                    }
                    None => entries.push(h),
                }
            }
            models.push(ArchModel {
                device,
                line,
                entries,
                dropped_duplicates: dropped,
                skipped_empty,
                regression,
            });
        }
    }
    if let Some(l) = c.peek() {
        tracing::warn!(
            "{}:line {}: {} lines after the {ncombs} declared combinations, skipped (StarPU reads \
             only the declared ones)",
            path.display(),
            l.line,
            c.lines.len() - c.at
        );
    }
    Ok(CodeletFile {
        symbol: symbol.to_string(),
        file_name,
        models,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing (`starpu-codelets`): figures the importer copied but the loader
    /// refuses (a mean that rounds to 0 s, a size past 1 EiB) are refused at their line.
    #[test]
    fn figures_outside_the_machine_files_ranges_are_refused_at_their_line() {
        let tiny = ONE.replace("2.9e+03", "1e-320");
        let e = parse_codelet_file(&tiny, Path::new("x.h"), "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.h:line 27: history column `mean`: 1e-320 us is out of the range of kernel times \
             (from 1 fs to 1 hour)"
        );
        let huge = ONE.replace("24c84a51\t11059200", "24c84a51\t9223372036854775808");
        let e = parse_codelet_file(&huge, Path::new("x.h"), "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.h:line 27: history column `size`: 9223372036854775808 bytes is out of the range \
             of data sizes (from 1 B to 1 EiB)"
        );
    }

    const ONE: &str = "##\n# Performance Model Version\n45\n\n# COMBs\n1\n# types\n1\n# type\n1\n# id\n2\n# cores\n1\n# impls\n1\n# entries\n3\n# sumlnx\n0 0 0 0 nan nan 0 0 0\n# a b c\nnan nan nan\n# not mlr\n0\n# hash\n24c84a50\t11059200\t1.769472e+09\t2.8e+03\t7.0e+01\t3.6e+07\t1.0e+11\t12996\n24c84a51\t11059200\t1.769472e+09\t2.9e+03\t7.0e+01\t3.6e+07\t1.0e+11\t13000\n0000aaaa\t100\t0\t0\t0\t0\t0\t0\n";

    #[test]
    fn one_cuda_combination() {
        let f = parse_codelet_file(ONE, Path::new("x.h"), "x").unwrap();
        assert_eq!(f.models.len(), 1);
        let m = &f.models[0];
        assert_eq!(m.device, StarpuDevice::Cuda(2));
        assert_eq!(m.entries.len(), 1);
        // The footprint with more samples wins.
        assert_eq!(m.entries[0].mean_text, "2.9e+03");
        assert_eq!(m.dropped_duplicates.len(), 1);
        assert_eq!(m.skipped_empty.len(), 1);
        assert!(m.regression.is_none());
    }

    #[test]
    fn truncated_and_garbage() {
        let cut: String = ONE.lines().take(27).collect::<Vec<_>>().join("\n");
        let e = parse_codelet_file(&cut, Path::new("x.h"), "x").unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        let e = parse_codelet_file("hello\n", Path::new("x.h"), "x").unwrap_err();
        assert!(e.to_string().starts_with("x.h:line 1:"), "{e}");
        let bad = ONE.replace("2.8e+03", "fast");
        let e = parse_codelet_file(&bad, Path::new("x.h"), "x").unwrap_err();
        assert!(e.to_string().starts_with("x.h:line 26:"), "{e}");
    }

    #[test]
    fn swapped_regression_lines_and_valid_nl() {
        let t = ONE
            .replace("nan nan nan\n# not mlr\n0\n", "0\nnan nan nan\n")
            .replace("0 0 0 0 nan nan 0 0 0", "0 0 0 0 nan nan 20 100 1000")
            .replace("nan nan nan", "1e-3 1.5 2");
        let f = parse_codelet_file(&t, Path::new("x.h"), "x").unwrap();
        let r = f.models[0].regression.as_ref().unwrap();
        assert_eq!((r.minx, r.maxx, r.b.1), (100, 1000, 1.5));
    }
}
