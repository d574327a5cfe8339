//! Calibrated machines: import StarPU's calibration directory (`$STARPU_PERF_MODEL_DIR`, by
//! default `~/.starpu/sampling/`) into a hetsim machine file, and show a machine's kernel models.
//!
//! [`import_starpu`] reads, for one host name:
//! - `bus/<host>.config` ([`starpu_bus::parse_config`]): CPU and CUDA device counts;
//! - `bus/<host>.platform.v4.xml`, else `bus/<host>.platform.xml`
//!   ([`starpu_platform::parse_platform`]): GPU models and memory sizes, links and routes,
//!   including the PCI switch tree, NVLink peer links and the shared `Host` (or
//!   `NUMA`/`Interconnect`) link;
//! - `bus/<host>.bandwidth` and `.latency` ([`starpu_bus::parse_matrix`]): the measured
//!   matrices, quoted in the machine file next to the links they produced;
//! - `bus/<host>.affinity` ([`starpu_bus::parse_affinity`]): the cores nearest each GPU;
//! - `codelets/45/*.<host>` ([`starpu_codelets::parse_codelet_file`]): the kernel history per
//!   codelet and device.
//!
//! [`write::machine_toml`] then writes the machine file by serialising the loader's own schema
//! (`hetsim_platform::machine::format`) with the provenance comments attached as `toml_edit`
//! decor (`docs/calibrate.md` gives the mapping), and [`import_to_toml`] checks that the result
//! loads. Bad input is an [`InputError`] naming the
//! file and line; lines the importer does not know are skipped with a `tracing::warn!`.
//!
//! [`show::render`] prints a machine's kernel models as tables, like StarPU's
//! `starpu_perfmodel_display`.

use std::path::{Path, PathBuf};

use hetsim_core::error::{Error, InputError, read_input};
use hetsim_core::files::{FileRole, RoleFile};

mod notes;
pub mod show;
pub mod starpu_bus;
pub mod starpu_codelets;
pub mod starpu_platform;
pub mod write;

use starpu_bus::{Affinity, BusConfig, Matrix};
use starpu_codelets::{CodeletFile, StarpuDevice};
use starpu_platform::Platform;

/// A non-comment, non-blank line of a text file, with its 1-based number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataLine<'a> {
    /// 1-based line number.
    pub line: usize,
    /// The line, without its end-of-line characters.
    pub text: &'a str,
}

/// The lines of `text` that are neither blank nor comments (`#` first).
pub fn data_lines(text: &str) -> Vec<DataLine<'_>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        })
        .map(|(i, l)| DataLine {
            line: i + 1,
            text: l,
        })
        .collect()
}

/// An input error at `path`, line `line`.
pub fn err_at(path: &Path, line: usize, msg: impl Into<String>) -> InputError {
    InputError::new(msg).in_file(path).at_line(line)
}

/// What `hetsim calibrate import-starpu` was asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportOptions {
    /// The calibration directory (holding `bus/` and `codelets/45/`).
    pub dir: PathBuf,
    /// StarPU's host name (`STARPU_HOSTNAME`): the suffix of the files.
    pub host: String,
    /// The machine's name in hetsim (`[machine] name`); default: the host name.
    pub name: Option<String>,
    /// More hosts whose `codelets/45/*.<host>` files are imported too (calibrations of the same
    /// machine made under another host name, e.g. gemini's LU runs). A codelet of the main host
    /// wins over one of the same name from these.
    pub codelets_from: Vec<String>,
    /// Host memory capacity, a size with a unit ("36 GiB"): StarPU's files do not record it.
    pub ram: Option<String>,
    /// Where the host memory figure comes from, for the comment.
    pub ram_source: Option<String>,
    /// CPU model: StarPU's files do not record it.
    pub cpu_model: Option<String>,
    /// GPU model, for platform files without a `model` property (gemini).
    pub gpu_model: Option<String>,
    /// Lines added to the header comment (where the figures given as options come from).
    pub notes: Vec<String>,
}

/// The placeholder host memory written when none is given: StarPU's bus files do not record it.
pub const DEFAULT_RAM: &str = "64 GiB";

/// A codelet to write: a parsed file under the name workloads use.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedCodelet {
    /// The codelet name in the machine file.
    pub name: String,
    /// The parsed file (its `symbol` is StarPU's name).
    pub file: CodeletFile,
    /// Why the name differs from the file's symbol, or how the entries were derived.
    pub note: Option<String>,
}

/// Everything read from a calibration directory for one host.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The options it was made with.
    pub options: ImportOptions,
    /// `bus/<host>.config`.
    pub config: BusConfig,
    /// The platform file's name (`mirage.platform.v4.xml`).
    pub platform_file: String,
    /// The platform.
    pub platform: Platform,
    /// `bus/<host>.bandwidth` (MB/s).
    pub bandwidth: Matrix,
    /// `bus/<host>.latency` (µs).
    pub latency: Matrix,
    /// `bus/<host>.affinity`, if present.
    pub affinity: Option<Affinity>,
    /// Codelets with at least one usable model, sorted by name.
    pub codelets: Vec<ImportedCodelet>,
    /// Codelet files without any usable model (file names).
    pub empty_codelets: Vec<String>,
    /// Number of codelet files read per host.
    pub files_per_host: Vec<(String, usize)>,
    /// Every file read, in reading order.
    pub read: Vec<PathBuf>,
}

impl Imported {
    /// The machine's name.
    pub fn name(&self) -> &str {
        self.options.name.as_deref().unwrap_or(&self.options.host)
    }

    /// The files read, as inputs (an output must not overwrite them).
    pub fn input_files(&self) -> Vec<RoleFile> {
        self.read
            .iter()
            .map(|p| RoleFile::new(FileRole::StarpuCalibration, p))
            .collect()
    }
}

fn bus_file(opts: &ImportOptions, ext: &str) -> PathBuf {
    opts.dir.join("bus").join(format!("{}.{ext}", opts.host))
}

/// The hosts with a `bus/<host>.config` in `dir`, sorted, for messages.
fn known_hosts(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("bus"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".config"))
                .map(str::to_string)
        })
        .collect();
    v.sort();
    v
}

/// The longest host name accepted (a DNS name's limit; StarPU uses the host name as it is).
pub const MAX_HOST_NAME: usize = 253;

/// Check a StarPU host name given on the command line: it is the suffix of file names in the
/// calibration directory, so it must be a plain name — letters, digits, `-`, `_` and `.`, not
/// starting with `.` — never a path (`../x`) or empty.
pub fn check_host_name(name: &str, flag: &str) -> Result<(), InputError> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let why = if name.is_empty() {
        "it is empty".to_string()
    } else if name.len() > MAX_HOST_NAME {
        format!(
            "it has {} characters, more than {MAX_HOST_NAME}",
            name.len()
        )
    } else if name.starts_with('.') {
        "it starts with `.`".to_string()
    } else if let Some(c) = name.chars().find(|&c| !ok_char(c)) {
        format!("{c:?} is not allowed")
    } else {
        return Ok(());
    };
    Err(InputError::new(format!(
        "{flag} {name:?}: not a StarPU host name ({why}): expected letters, digits, `-`, `_` \
         and `.`, as in the suffix of bus/HOST.config"
    )))
}

/// Older StarPU examples named the Cholesky and LU kernels by their block indices; workloads use
/// the newer names. (`PROVENANCE.md` of the gemini samples: chol_model_11/21/22 =
/// potrf/trsm/gemm, lu_model_11/12/21/22 = getrf/trsm_ll/trsm_ru/gemm.)
fn legacy_name(symbol: &str) -> Option<String> {
    let table: [(&str, &str); 4] = [
        ("_11", "getrf"),
        ("_12", "trsm_ll"),
        ("_21", "trsm_ru"),
        ("_22", "gemm"),
    ];
    if let Some(rest) = symbol.strip_prefix("chol_model") {
        return match rest {
            "_11" => Some("chol_model_potrf".into()),
            "_21" => Some("chol_model_trsm".into()),
            "_22" => Some("chol_model_gemm".into()),
            _ => None,
        };
    }
    for p in ["starpu_slu_lu_model", "starpu_dlu_lu_model"] {
        if let Some(rest) = symbol.strip_prefix(p) {
            return table
                .iter()
                .find(|(s, _)| *s == rest)
                .map(|(_, n)| format!("{p}_{n}"));
        }
    }
    None
}

/// Read the codelet files of `host` (sorted by file name).
fn read_codelets(
    opts: &ImportOptions,
    host: &str,
    ncuda: u32,
    read: &mut Vec<PathBuf>,
) -> Result<Vec<CodeletFile>, InputError> {
    let dir = opts.dir.join("codelets").join("45");
    let suffix = format!(".{host}");
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        InputError::new(format!("cannot read the codelet directory: {e}")).in_file(&dir)
    })?;
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.len() > suffix.len() && n.ends_with(&suffix))
        .collect();
    names.sort();
    let mut files = Vec::new();
    for n in names {
        let path = dir.join(&n);
        let symbol = &n[..n.len() - suffix.len()];
        let text = read_input(&path)?;
        read.push(path.clone());
        let mut f = starpu_codelets::parse_codelet_file(&text, &path, symbol)?;
        f.models.retain(|m| match m.device {
            StarpuDevice::Cuda(i) if i >= ncuda => {
                tracing::warn!(
                    "{}:line {}: CUDA device {i} is not in the configuration ({ncuda} CUDA \
                     devices), its model is skipped",
                    path.display(),
                    m.line
                );
                false
            }
            _ => true,
        });
        files.push(f);
    }
    Ok(files)
}

/// Read a calibration directory for `options.host`. Missing or malformed files are input
/// errors naming the file (and line).
pub fn import_starpu(options: &ImportOptions) -> Result<Imported, InputError> {
    let opts = options;
    check_host_name(&opts.host, "--host")?;
    for h in &opts.codelets_from {
        check_host_name(h, "--codelets-from")?;
    }
    // Present but not a regular file (a FIFO, a directory): `read_input` says what it is.
    let config_path = bus_file(opts, "config");
    if !config_path.exists() {
        let hosts = known_hosts(&opts.dir);
        return Err(InputError::new(format!(
            "no StarPU calibration for host `{}`: this file does not exist; hosts calibrated in \
             {}: {}",
            opts.host,
            opts.dir.display(),
            if hosts.is_empty() {
                "none (is this a StarPU sampling directory, with bus/ and codelets/45/?)"
                    .to_string()
            } else {
                hosts.join(", ")
            }
        ))
        .in_file(&config_path));
    }
    let config = starpu_bus::parse_config(&read_input(&config_path)?, &config_path)?;
    let mut read = vec![config_path.clone()];

    let v4 = bus_file(opts, "platform.v4.xml");
    let v3 = bus_file(opts, "platform.xml");
    let platform_path = if v4.exists() {
        v4
    } else if v3.exists() {
        v3
    } else {
        return Err(InputError::new(
            "no platform file: neither this file nor the v3 `platform.xml` exists; hetsim \
             needs it for the GPUs' memory sizes, the links and the routes",
        )
        .in_file(v4));
    };
    let platform = starpu_platform::parse_platform(&read_input(&platform_path)?, &platform_path)?;
    read.push(platform_path.clone());
    let platform_file = platform_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();

    let bw_path = bus_file(opts, "bandwidth");
    let bandwidth = starpu_bus::parse_matrix(&read_input(&bw_path)?, &bw_path, "bandwidth (MB/s)")?;
    let lat_path = bus_file(opts, "latency");
    let latency = starpu_bus::parse_matrix(&read_input(&lat_path)?, &lat_path, "latency (us)")?;
    read.extend([bw_path, lat_path]);
    let aff_path = bus_file(opts, "affinity");
    let affinity = if aff_path.exists() {
        let a = starpu_bus::parse_affinity(
            &read_input(&aff_path)?,
            &aff_path,
            config.cuda,
            config.cpus,
            config.numa,
        )?;
        read.push(aff_path);
        Some(a)
    } else {
        tracing::warn!("{}: not found, no [affinity] written", aff_path.display());
        None
    };

    // Every CUDA device of the configuration needs its host in the platform.
    for i in 0..config.cuda {
        let id = format!("CUDA{i}");
        let Some(h) = platform.host(&id) else {
            return Err(InputError::new(format!(
                "the configuration has {} CUDA devices but the platform has no host `{id}`",
                config.cuda
            ))
            .in_file(&platform_path));
        };
        let Some(memsize) = h.props.get("memsize") else {
            return Err(err_at(
                &platform_path,
                h.line,
                format!("host `{id}` has no memsize property (the GPU's memory size)"),
            ));
        };
        // StarPU writes the size in bytes as an integer; the machine file needs at least one.
        if !memsize.trim().parse::<u64>().is_ok_and(|b| b > 0) {
            return Err(err_at(
                &platform_path,
                h.line,
                format!(
                    "host `{id}`: memsize {memsize:?}: expected the GPU's memory size in bytes, \
                     a whole number > 0"
                ),
            ));
        }
    }
    if platform.host("RAM").is_none() {
        return Err(InputError::new("the platform has no `RAM` host").in_file(&platform_path));
    }

    // Codelets: the host's, then those of the extra hosts not already present.
    let mut files_per_host = Vec::new();
    let mut all: Vec<CodeletFile> = Vec::new();
    let mut hosts = vec![opts.host.clone()];
    hosts.extend(opts.codelets_from.iter().cloned());
    for h in &hosts {
        let files = read_codelets(opts, h, config.cuda, &mut read)?;
        files_per_host.push((h.clone(), files.len()));
        for f in files {
            if all.iter().any(|g| g.symbol == f.symbol) {
                tracing::warn!(
                    "{}: codelet `{}` already imported from another host, skipped",
                    f.file_name,
                    f.symbol
                );
                continue;
            }
            all.push(f);
        }
    }
    let mut empty_codelets = Vec::new();
    let mut codelets: Vec<ImportedCodelet> = Vec::new();
    let symbols: Vec<String> = all.iter().map(|f| f.symbol.clone()).collect();
    for f in all {
        if f.models
            .iter()
            .all(|m| m.entries.is_empty() && m.regression.is_none())
        {
            empty_codelets.push(f.file_name.clone());
            continue;
        }
        let (name, note) = match legacy_name(&f.symbol) {
            Some(n) if !symbols.contains(&n) => {
                let note = format!(
                    "`{}` is StarPU's older name of `{n}` (block indices: 11 = potrf/getrf, \
                     21 = trsm/trsm_ru, 12 = trsm_ll, 22 = gemm)",
                    f.symbol
                );
                (n, Some(note))
            }
            _ => (f.symbol.clone(), None),
        };
        codelets.push(ImportedCodelet {
            name,
            file: f,
            note,
        });
    }
    // The older Cholesky ran its diagonal update with the GEMM codelet (chol_model_22) on three
    // tiles; workloads run it as chol_model_syrk on two. Without a syrk model, that GEMM's time
    // is the one StarPU's runs measured for it.
    if !codelets.iter().any(|c| c.name == "chol_model_syrk")
        && let Some(g) = codelets
            .iter()
            .find(|c| c.name == "chol_model_gemm" && c.file.symbol == "chol_model_22")
    {
        let mut file = g.file.clone();
        for m in &mut file.models {
            m.entries.retain(|e| e.size % 3 == 0);
            for e in &mut m.entries {
                e.size = e.size / 3 * 2;
            }
            m.dropped_duplicates.clear();
            m.regression = None;
        }
        file.models.retain(|m| !m.entries.is_empty());
        if !file.models.is_empty() {
            codelets.push(ImportedCodelet {
                name: "chol_model_syrk".into(),
                file,
                note: Some(format!(
                    "derived from {}: the older Cholesky had no SYRK codelet and ran the \
                     diagonal update as chol_model_22's GEMM on three tiles (A[k][i] twice and \
                     A[i][i]); each entry below is that GEMM's entry, at the size of the \
                     two-tile SYRK task of hetsim's generator (2/3 of the GEMM's size)",
                    g.file.file_name
                )),
            });
        }
    }
    codelets.sort_by(|a, b| a.name.cmp(&b.name));

    Ok(Imported {
        options: opts.clone(),
        config,
        platform_file,
        platform,
        bandwidth,
        latency,
        affinity,
        codelets,
        empty_codelets,
        files_per_host,
        read,
    })
}

/// Import and write the machine file's text ([`import_starpu`], then [`imported_toml`]).
pub fn import_to_toml(options: &ImportOptions) -> Result<String, Error> {
    imported_toml(&import_starpu(options)?)
}

/// The machine file's text of what was imported, checked to load as a hetsim machine. The
/// importer checks the figures it copies, so a machine file the loader refuses is an internal
/// error (an importer bug), and nothing is written.
pub fn imported_toml(imported: &Imported) -> Result<String, Error> {
    let text = write::machine_toml(imported)?;
    hetsim_platform::machine::from_str(&text, "(the imported machine file)").map_err(|e| {
        Error::Internal(format!(
            "the machine file imported from {} for host `{}` does not load, so it was not \
             written (an importer bug; please report it with the calibration files): {e}",
            imported.options.dir.display(),
            imported.options.host
        ))
    })?;
    Ok(text)
}
