//! `hetsim calibrate`: import StarPU's calibrations and show a machine's kernel models.
//!
//! ```text
//! hetsim calibrate import-starpu DIR --host NAME [-o FILE] [--name NAME] [--codelets-from HOST]...
//!                                [--ram SIZE [--ram-source TEXT]] [--cpu-model TEXT] [--gpu-model TEXT]
//! hetsim calibrate show FILE [--codelet NAME]
//! ```

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::calibrate::{self, ImportOptions};
use crate::files::{FileRole, RoleFile, check_distinct, write_output};

/// Options of `hetsim calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(subcommand)]
    command: CalibrateCommand,
}

#[derive(Debug, Subcommand)]
enum CalibrateCommand {
    /// Convert a StarPU calibration directory (bus/ and codelets/45/, as in
    /// ~/.starpu/sampling) for one host into a hetsim machine file.
    ImportStarpu(ImportArgs),
    /// Print a machine's kernel models as tables (size, mean, deviation, samples, GFlop/s).
    Show(ShowArgs),
}

/// Options of `hetsim calibrate import-starpu`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// StarPU's calibration directory ($STARPU_PERF_MODEL_DIR, holding bus/ and codelets/45/).
    pub dir: PathBuf,
    /// The host name the files are suffixed with ($STARPU_HOSTNAME).
    #[arg(long, value_name = "NAME")]
    pub host: String,
    /// Write the machine file here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The machine's name in hetsim (default: the host name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Also import codelets/45/*.HOST of another host name of the same machine (repeatable);
    /// the main host's codelets win on a name clash.
    #[arg(long, value_name = "HOST")]
    pub codelets_from: Vec<String>,
    /// Host memory capacity, e.g. "36 GiB" (StarPU's files do not record it; default: a 64 GiB
    /// placeholder, said so in the file).
    #[arg(long, value_name = "SIZE")]
    pub ram: Option<String>,
    /// Where the --ram figure comes from, quoted in the file's comment.
    #[arg(long, value_name = "TEXT", requires = "ram")]
    pub ram_source: Option<String>,
    /// CPU model (StarPU's files do not record it).
    #[arg(long, value_name = "TEXT")]
    pub cpu_model: Option<String>,
    /// GPU model, for platform files without a `model` property.
    #[arg(long, value_name = "TEXT")]
    pub gpu_model: Option<String>,
    /// A line for the header comment, e.g. where --cpu-model comes from (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub note: Vec<String>,
}

/// Options of `hetsim calibrate show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Machine file (e.g. calibration/idgraf.toml).
    pub file: PathBuf,
    /// Only this codelet.
    #[arg(long, value_name = "NAME")]
    pub codelet: Option<String>,
}

/// Run `hetsim calibrate ...`.
pub fn run(args: &CalibrateArgs) -> crate::Result<()> {
    match &args.command {
        CalibrateCommand::ImportStarpu(a) => import(a),
        CalibrateCommand::Show(a) => show(a),
    }
}

fn import(a: &ImportArgs) -> crate::Result<()> {
    let opts = ImportOptions {
        dir: a.dir.clone(),
        host: a.host.clone(),
        name: a.name.clone(),
        codelets_from: a.codelets_from.clone(),
        ram: a.ram.clone(),
        ram_source: a.ram_source.clone(),
        cpu_model: a.cpu_model.clone(),
        gpu_model: a.gpu_model.clone(),
        notes: a.note.clone(),
    };
    if let Some(r) = &opts.ram {
        crate::units::parse_bytes(r).map_err(|e| {
            crate::InputError::new(format!("--ram: {}", e.message)).at_field("--ram")
        })?;
    }
    let imported = calibrate::import_starpu(&opts)?;
    if let Some(path) = &a.output {
        check_distinct(
            &imported.input_files(),
            &[RoleFile::new(FileRole::Output("output"), path)],
        )?;
    }
    let text = calibrate::imported_toml(&imported)?;
    match &a.output {
        Some(path) => Ok(write_output(path, text.as_bytes())?),
        None => super::print(&text),
    }
}

fn show(a: &ShowArgs) -> crate::Result<()> {
    let m = crate::machine::load(&a.file)?;
    let text = calibrate::show::render(&m, a.codelet.as_deref()).map_err(|e| e.in_file(&a.file))?;
    super::print(&text)
}
