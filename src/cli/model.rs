//! `hetsim model KIND [--param KEY=VALUE]... [--from FILE] [--json] [--sweep KEY=V1,V2,...]`:
//! evaluate one of the papers' analytic models ([`crate::analytic`]) and print the prediction
//! with its terms.
//!
//! Parameters come from `--from FILE` (a TOML table of `key = value`, optionally with
//! `kind = "..."`), then from each `--param` in order (later ones win). Every kind declares its
//! parameters ([`specs`]); an unknown kind or parameter, a missing one or a value that is not a
//! number is an input error (exit status 2) naming the parameter.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{ErrorKind, Write};
use std::path::PathBuf;

use clap::Args;

use super::json_line;
use crate::analytic::hpl::{self, HplParams, MclHplParams, MclLayer};
use crate::analytic::loggp::{
    self, BcastAlgorithm, BcastParams, Device, LogGp, MhLogGpCalibration, MpichBcastThresholds,
};
use crate::analytic::mmgp::{self, MmgpParams};
use crate::analytic::roofline;
use crate::analytic::stencil::{self, BandwidthModel, Mesh2d, StencilParams};
use crate::error::read_input;
use crate::{Error, InputError};

/// Options of `hetsim model`.
#[derive(Debug, Args)]
#[command(after_help = help_text())]
pub struct ModelArgs {
    /// The model: loggp, mhloggp, bcast, hpl, mcl-hpl, mmgp, mmgp-search, roofline, stencil.
    pub kind: String,
    /// A parameter, KEY=VALUE (repeatable; overrides --from).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// A TOML file of parameters (`key = value` lines; `kind = "..."` optional).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Evaluate over the values of one parameter and print a table: KEY=V1,V2,...
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub sweep: Option<String>,
    /// Print the parameters of KIND and exit.
    #[arg(long)]
    pub help_params: bool,
}

/// The kinds, in the order `--help` lists them.
pub const KINDS: [&str; 9] = [
    "loggp",
    "mhloggp",
    "bcast",
    "hpl",
    "mcl-hpl",
    "mmgp",
    "mmgp-search",
    "roofline",
    "stencil",
];

/// What a parameter's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// A number.
    Real,
    /// A whole number >= 0.
    Count,
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// A file path.
    Path,
}

/// Whether a parameter must be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// It must be given.
    Required,
    /// It has this default.
    Default(&'static str),
    /// It may be left out (the help says what happens then).
    Optional,
}

/// One parameter of a kind. A name containing `<k>` stands for a family: `l<k>_alpha_s` is
/// `l1_alpha_s`, `l2_alpha_s` ...
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// The parameter's name, units included.
    pub name: &'static str,
    /// Its type.
    pub ty: ParamType,
    /// Required, defaulted or optional.
    pub need: Need,
    /// One line of help.
    pub help: &'static str,
}

const fn req(name: &'static str, ty: ParamType, help: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        need: Need::Required,
        help,
    }
}

const fn def(name: &'static str, ty: ParamType, d: &'static str, help: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        need: Need::Default(d),
        help,
    }
}

const fn opt(name: &'static str, ty: ParamType, help: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        need: Need::Optional,
        help,
    }
}

use ParamType::{Count, Path as PathT, Real};

const DEVICES: &[&str] = &["cpu", "gpu"];
const BCAST_ALGOS: &[&str] = &["auto", "binomial", "recursive-doubling", "ring"];

const LOGGP: &[ParamSpec] = &[
    req("bytes", Real, "message size k"),
    req("latency_s", Real, "latency l (L)"),
    req("send_overhead_s", Real, "sender overhead o_s"),
    req("recv_overhead_s", Real, "receiver overhead o_r"),
    def("gap_s", Real, "0", "gap g between consecutive messages"),
    def("gap_per_byte_s", Real, "0", "gap per byte G (0: LogP)"),
    def("messages", Count, "1", "consecutive messages of k bytes"),
];

const MHLOGGP: &[ParamSpec] = &[
    req(
        "sender",
        ParamType::Choice(DEVICES),
        "where the data starts",
    ),
    req(
        "receiver",
        ParamType::Choice(DEVICES),
        "where the data ends",
    ),
    req("bytes", Real, "message size k"),
    def(
        "first",
        Count,
        "1",
        "1: the receiving GPU is initialised (o_rgb)",
    ),
    opt(
        "overheads_csv",
        PathT,
        "overhead table (seed000_p2p_overheads_us.csv format); default: the paper's Table 1",
    ),
    opt(
        "gaps_csv",
        PathT,
        "gap table (seed000_gap.csv format); default: the paper's Table 2",
    ),
];

const BCAST: &[ParamSpec] = &[
    req("procs", Count, "nodes P"),
    req("bytes", Real, "message size k"),
    def(
        "algorithm",
        ParamType::Choice(BCAST_ALGOS),
        "auto",
        "auto: MPICH2's selection rule",
    ),
    opt(
        "overhead_s",
        Real,
        "o per step; default o_scn + o_rn from the paper's Table 1",
    ),
    opt(
        "gap_per_byte_s",
        Real,
        "G; default from the paper's Table 2",
    ),
    opt(
        "latency_s",
        Real,
        "l_nn of a k-byte message; default from the paper's Table 1",
    ),
    def(
        "short_msg_bytes",
        Real,
        "12288",
        "MPICH2 MPIR_BCAST_SHORT_MSG",
    ),
    def(
        "long_msg_bytes",
        Real,
        "524288",
        "MPICH2 MPIR_BCAST_LONG_MSG",
    ),
    def("min_procs", Count, "8", "MPICH2 MPIR_BCAST_MIN_PROCS"),
];

const HPL: &[ParamSpec] = &[
    req("n", Count, "matrix order N"),
    req("nb", Count, "block size NB"),
    req("p", Count, "process rows P"),
    req("q", Count, "process columns Q"),
    req("gamma_flops_per_sec", Real, "flop rate per process γ"),
    req("alpha_s", Real, "latency α"),
    req(
        "bandwidth_bytes_per_sec",
        Real,
        "bandwidth (β = 8 B / bandwidth)",
    ),
];

const MCL_HPL: &[ParamSpec] = &[
    req("n", Count, "matrix order N"),
    req("nb", Count, "block size NB"),
    req("p", Count, "process rows P"),
    req("q", Count, "process columns Q"),
    req(
        "gamma_flops_per_sec",
        Real,
        "flop rate per process γ (eq. 10)",
    ),
    req(
        "l<k>_alpha_s",
        Real,
        "latency of layer k = 1, 2, ... (innermost first)",
    ),
    req(
        "l<k>_bandwidth_bytes_per_sec",
        Real,
        "bandwidth of layer k (β = 8 B / bandwidth)",
    ),
    opt(
        "l<k>_p",
        Count,
        "process rows inside layer k; default 1, P for the last layer",
    ),
    opt(
        "l<k>_q",
        Count,
        "process columns inside layer k; default 1, Q for the last layer",
    ),
];

const MMGP_COMMON: [ParamSpec; 9] = [
    req("t_hpu_s", Real, "T_HPU(1,1), host part"),
    req(
        "t_apu_s",
        Real,
        "T_APU(1,1), parallelisable accelerator part",
    ),
    req("c_apu_s", Real, "C_APU, sequential accelerator part"),
    req("g_s", Real, "gap g between offloads"),
    def("o_offload_s", Real, "0", "O_offload per phase"),
    def("t_csw_s", Real, "0", "T_CSW, context switch"),
    def("o_col_s", Real, "0", "O_COL, global synchronisation"),
    def("alpha_m", Real, "1", "α_m, HPU contention factor"),
    def("phases", Real, "1", "N, phases paying the per-phase terms"),
];

const MMGP: &[ParamSpec] = &[
    MMGP_COMMON[0],
    MMGP_COMMON[1],
    MMGP_COMMON[2],
    MMGP_COMMON[3],
    MMGP_COMMON[4],
    MMGP_COMMON[5],
    MMGP_COMMON[6],
    MMGP_COMMON[7],
    MMGP_COMMON[8],
    req("m", Count, "HPU threads"),
    req("p", Count, "APUs per HPU thread"),
];

const MMGP_SEARCH: &[ParamSpec] = &[
    MMGP_COMMON[0],
    MMGP_COMMON[1],
    MMGP_COMMON[2],
    MMGP_COMMON[3],
    MMGP_COMMON[4],
    MMGP_COMMON[5],
    MMGP_COMMON[6],
    MMGP_COMMON[7],
    MMGP_COMMON[8],
    req(
        "n_apu",
        Count,
        "available APUs; the search covers m·p ≤ n_apu",
    ),
];

const ROOFLINE: &[ParamSpec] = &[
    req("peak_flops_per_sec", Real, "F_peak"),
    req("peak_bytes_per_sec", Real, "B_peak"),
    opt(
        "intensity_flops_per_byte",
        Real,
        "F/B; or give flops and bytes",
    ),
    opt("flops", Real, "F per unit of work"),
    opt("bytes", Real, "B per unit of work"),
    def(
        "other_s",
        Real,
        "0",
        "α, time of other operations per unit of work",
    ),
];

const STENCIL: &[ParamSpec] = &[
    req("nx", Count, "mesh points along x (not decomposed)"),
    req("ny", Count, "mesh points along y"),
    req("nz", Count, "mesh points along z"),
    req("py", Count, "GPUs along y"),
    req("pz", Count, "GPUs along z"),
    req(
        "flops_per_point",
        Real,
        "flops per point per step (diffusion 13, LBM 476)",
    ),
    req(
        "bytes_per_boundary_point",
        Real,
        "bytes sent per boundary point per step (diffusion 4, LBM 52)",
    ),
    req(
        "gpus_per_node",
        Count,
        "g, GPUs sharing a node's network link",
    ),
    opt(
        "single_gpu_flops_per_sec",
        Real,
        "P; default: Improved Roofline from the three parameters below",
    ),
    opt("peak_flops_per_sec", Real, "F_peak of one GPU"),
    opt("peak_bytes_per_sec", Real, "B_peak of one GPU"),
    opt("intensity_flops_per_byte", Real, "F/B of the kernel"),
    req("ib_b0_bytes_per_sec", Real, "inter-node B0 (eq. 5)"),
    req("ib_t0_s", Real, "inter-node t0"),
    req("pcie_b0_bytes_per_sec", Real, "GPU-CPU B0"),
    req("pcie_t0_s", Real, "GPU-CPU t0"),
];

/// The parameters of a kind, `None` for an unknown kind.
pub fn specs(kind: &str) -> Option<&'static [ParamSpec]> {
    Some(match kind {
        "loggp" => LOGGP,
        "mhloggp" => MHLOGGP,
        "bcast" => BCAST,
        "hpl" => HPL,
        "mcl-hpl" => MCL_HPL,
        "mmgp" => MMGP,
        "mmgp-search" => MMGP_SEARCH,
        "roofline" => ROOFLINE,
        "stencil" => STENCIL,
        _ => return None,
    })
}

fn kind_summary(kind: &str) -> &'static str {
    match kind {
        "loggp" => "LogP/LogGP point-to-point (Liu et al. 2012 eq. 1)",
        "mhloggp" => "mHLogGP CPU/GPU point-to-point, four cases (Liu et al. 2012 §3.1, Fig. 4)",
        "bcast" => {
            "broadcast: binomial, recursive doubling, ring, MPICH2 rule (Liu et al. 2012 §3.2)"
        }
        "hpl" => "original HPL model (HPL scalability.html; Kim et al. 2021 eq. 3)",
        "mcl-hpl" => "multi-communication-layer HPL (Kim et al. 2021 eqs. 17-29)",
        "mmgp" => "MMGP T(m, p) (Blagojevic et al. 2008 eq. 11)",
        "mmgp-search" => "best (m, p) with m·p ≤ N_APU (Blagojevic et al. 2008 eq. 11)",
        "roofline" => "Improved Roofline (Shimokawabe et al. 2013 eq. 1)",
        "stencil" => {
            "multi-GPU stencil scalability, 2-D decomposition (Shimokawabe et al. 2013 eqs. 2-5)"
        }
        _ => "",
    }
}

/// The parameters of one kind, one per line.
pub fn params_help(kind: &str) -> String {
    let mut out = String::new();
    let Some(specs) = specs(kind) else {
        return out;
    };
    let _ = writeln!(out, "{kind}: {}", kind_summary(kind));
    for s in specs {
        let ty = match s.ty {
            ParamType::Real => "number".to_string(),
            ParamType::Count => "integer".to_string(),
            ParamType::Choice(c) => c.join("|"),
            ParamType::Path => "file".to_string(),
        };
        let need = match s.need {
            Need::Required => "required".to_string(),
            Need::Default(d) => format!("default {d}"),
            Need::Optional => "optional".to_string(),
        };
        let _ = writeln!(out, "  {:<30} {:<10} {:<14} {}", s.name, ty, need, s.help);
    }
    out
}

/// The text after `--help`: every kind and its parameters.
pub fn help_text() -> String {
    let mut out = String::from("Kinds and their parameters (units in the names):\n\n");
    for k in KINDS {
        out.push_str(&params_help(k));
        out.push('\n');
    }
    out.push_str(
        "Example: hetsim model roofline --param peak_flops_per_sec=1030e9 \
         --param peak_bytes_per_sec=148e9 --param intensity_flops_per_byte=1.83\n\
         Equations, units and the papers' figures: docs/analytic.md",
    );
    out
}

/// A parameter value as given.
#[derive(Debug, Clone, PartialEq)]
enum Raw {
    Num(f64),
    Text(String),
}

impl Raw {
    fn show(&self) -> String {
        match self {
            Raw::Num(v) => fmt_num(*v),
            Raw::Text(t) => t.clone(),
        }
    }
}

/// Parameters given for one evaluation, checked against the kind's specs on access.
#[derive(Debug, Clone)]
struct Params {
    kind: &'static str,
    specs: &'static [ParamSpec],
    values: BTreeMap<String, (Raw, String)>, // value and where it came from
}

/// The spec a key names, if any (`l3_alpha_s` matches `l<k>_alpha_s`, k = 3).
fn spec_for(specs: &'static [ParamSpec], key: &str) -> Option<(&'static ParamSpec, Option<u64>)> {
    for s in specs {
        if let Some((pre, post)) = s.name.split_once("<k>") {
            if let Some(mid) = key.strip_prefix(pre).and_then(|r| r.strip_suffix(post))
                && !mid.is_empty()
                && mid.bytes().all(|b| b.is_ascii_digit())
                && let Ok(k) = mid.parse::<u64>()
            {
                return Some((s, Some(k)));
            }
        } else if s.name == key {
            return Some((s, None));
        }
    }
    None
}

impl Params {
    fn new(kind: &'static str, specs: &'static [ParamSpec]) -> Self {
        Params {
            kind,
            specs,
            values: BTreeMap::new(),
        }
    }

    fn set(&mut self, key: &str, value: Raw, origin: &str) -> Result<(), InputError> {
        let Some((spec, _)) = spec_for(self.specs, key) else {
            let known: Vec<&str> = self.specs.iter().map(|s| s.name).collect();
            return Err(InputError::new(format!(
                "unknown parameter `{key}` for `{}` (known: {})",
                self.kind,
                known.join(", ")
            ))
            .at_field(key));
        };
        // Type-check now, so errors name where the value came from.
        let value = check_type(spec, key, value).map_err(|e| e.in_origin(origin))?;
        self.values
            .insert(key.to_string(), (value, origin.to_string()));
        Ok(())
    }

    fn raw(&self, key: &str) -> Result<Option<Raw>, InputError> {
        if let Some((v, _)) = self.values.get(key) {
            return Ok(Some(v.clone()));
        }
        let spec = spec_for(self.specs, key).map(|(s, _)| s);
        match spec.map(|s| s.need) {
            Some(Need::Default(d)) => Ok(Some(match spec.map(|s| s.ty) {
                Some(ParamType::Real) | Some(ParamType::Count) => {
                    Raw::Num(d.parse().unwrap_or(f64::NAN))
                }
                _ => Raw::Text(d.to_string()),
            })),
            _ => Ok(None),
        }
    }

    fn missing(&self, key: &str) -> InputError {
        InputError::new(format!(
            "missing parameter `{key}` for `{}` (see `hetsim model {} --help-params`)",
            self.kind, self.kind
        ))
        .at_field(key)
    }

    fn opt_real(&self, key: &str) -> Result<Option<f64>, InputError> {
        Ok(match self.raw(key)? {
            Some(Raw::Num(v)) => Some(v),
            Some(Raw::Text(t)) => {
                return Err(InputError::new(format!("`{t}` is not a number")).at_field(key));
            }
            None => None,
        })
    }

    fn real(&self, key: &str) -> Result<f64, InputError> {
        self.opt_real(key)?.ok_or_else(|| self.missing(key))
    }

    fn opt_count(&self, key: &str) -> Result<Option<u64>, InputError> {
        self.opt_real(key)?.map(|v| to_count(key, v)).transpose()
    }

    fn count(&self, key: &str) -> Result<u64, InputError> {
        self.opt_count(key)?.ok_or_else(|| self.missing(key))
    }

    fn opt_text(&self, key: &str) -> Result<Option<String>, InputError> {
        Ok(self.raw(key)?.map(|r| match r {
            Raw::Text(t) => t,
            Raw::Num(v) => fmt_num(v),
        }))
    }

    fn text(&self, key: &str) -> Result<String, InputError> {
        self.opt_text(key)?.ok_or_else(|| self.missing(key))
    }

    /// The given parameters in name order, for reports.
    fn shown(&self) -> Vec<(String, String)> {
        self.values
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.show()))
            .collect()
    }
}

trait InOrigin {
    fn in_origin(self, origin: &str) -> Self;
}

impl InOrigin for InputError {
    fn in_origin(self, origin: &str) -> Self {
        if origin.is_empty() {
            self
        } else {
            let message = format!("{} (from {origin})", self.message);
            InputError { message, ..self }
        }
    }
}

fn to_count(key: &str, v: f64) -> Result<u64, InputError> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9.0e15 {
        Ok(v as u64)
    } else {
        Err(
            InputError::new(format!("must be a whole number >= 0, got {}", fmt_num(v)))
                .at_field(key),
        )
    }
}

fn check_type(spec: &ParamSpec, key: &str, value: Raw) -> Result<Raw, InputError> {
    match (spec.ty, value) {
        (ParamType::Real | ParamType::Count, Raw::Text(t)) => match t.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => check_type(spec, key, Raw::Num(v)),
            _ => Err(InputError::new(format!("`{t}` is not a number")).at_field(key)),
        },
        (ParamType::Real, Raw::Num(v)) => {
            if v.is_finite() {
                Ok(Raw::Num(v))
            } else {
                Err(InputError::new("must be a finite number").at_field(key))
            }
        }
        (ParamType::Count, Raw::Num(v)) => to_count(key, v).map(|_| Raw::Num(v)),
        (ParamType::Choice(choices), v) => {
            let t = v.show();
            if choices.contains(&t.as_str()) {
                Ok(Raw::Text(t))
            } else {
                Err(
                    InputError::new(format!("`{t}` is not one of {}", choices.join(", ")))
                        .at_field(key),
                )
            }
        }
        (ParamType::Path, v) => Ok(Raw::Text(v.show())),
    }
}

/// A model's result: named figures with units, and notes (choices the model made).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evaluation {
    /// `(name, value, unit)`, headline first.
    pub terms: Vec<(String, f64, &'static str)>,
    /// `(name, text)`: the algorithm chosen, the case, where defaults came from.
    pub notes: Vec<(String, String)>,
}

impl Evaluation {
    fn term(&mut self, name: impl Into<String>, value: f64, unit: &'static str) {
        self.terms.push((name.into(), value, unit));
    }

    fn note(&mut self, name: &str, text: impl Into<String>) {
        self.notes.push((name.to_string(), text.into()));
    }
}

fn p2p_terms(ev: &mut Evaluation, c: &loggp::P2pCost) {
    ev.term("total_s", c.total_s, "s");
    ev.term("send_overhead_s", c.send_overhead_s, "s");
    ev.term("transfer_s", c.transfer_s, "s");
    ev.term("latency_s", c.latency_s, "s");
    ev.term("recv_overhead_s", c.recv_overhead_s, "s");
    ev.term("gaps_s", c.gaps_s, "s");
}

fn calibration(p: &Params) -> Result<(MhLogGpCalibration, bool), InputError> {
    let ov = p.opt_text("overheads_csv")?;
    let gaps = p.opt_text("gaps_csv")?;
    if ov.is_none() && gaps.is_none() {
        return Ok((MhLogGpCalibration::dawning_tc3600(), true));
    }
    let (Some(ov), Some(gaps)) = (ov, gaps) else {
        return Err(
            InputError::new("give both overheads_csv and gaps_csv, or neither")
                .at_field("overheads_csv"),
        );
    };
    let ov_text = read_input(std::path::Path::new(&ov))?;
    let gap_text = read_input(std::path::Path::new(&gaps))?;
    let cal = MhLogGpCalibration::from_csv(&ov_text, &gap_text)?;
    Ok((cal, false))
}

fn mmgp_params(p: &Params) -> Result<MmgpParams, InputError> {
    Ok(MmgpParams {
        t_hpu_s: p.real("t_hpu_s")?,
        t_apu_s: p.real("t_apu_s")?,
        c_apu_s: p.real("c_apu_s")?,
        o_offload_s: p.real("o_offload_s")?,
        g_s: p.real("g_s")?,
        t_csw_s: p.real("t_csw_s")?,
        o_col_s: p.real("o_col_s")?,
        alpha_m: p.real("alpha_m")?,
        phases: p.real("phases")?,
    })
}

fn mmgp_terms(ev: &mut Evaluation, r: &mmgp::MmgpPrediction) {
    ev.term("total_s", r.total_s, "s");
    ev.term("hpu_s", r.hpu_s, "s");
    ev.term("apu_parallel_s", r.apu_parallel_s, "s");
    ev.term("apu_serial_s", r.apu_serial_s, "s");
    ev.term("overhead_s", r.overhead_s, "s");
    ev.term("gap_s", r.gap_s, "s");
}

/// The roofline estimate from `peak_flops_per_sec`, `peak_bytes_per_sec` and the intensity.
fn roofline_device(p: &Params) -> Result<roofline::Device, InputError> {
    Ok(roofline::Device {
        peak_flops_per_sec: p.real("peak_flops_per_sec")?,
        peak_bytes_per_sec: p.real("peak_bytes_per_sec")?,
    })
}

fn evaluate(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    match p.kind {
        "loggp" => {
            let params = LogGp {
                latency_s: p.real("latency_s")?,
                send_overhead_s: p.real("send_overhead_s")?,
                recv_overhead_s: p.real("recv_overhead_s")?,
                gap_s: p.real("gap_s")?,
                gap_per_byte_s: p.real("gap_per_byte_s")?,
            };
            let bytes = p.real("bytes")?;
            let n = p.count("messages")?;
            let c = loggp::loggp_p2p(&params, bytes, n)?;
            p2p_terms(&mut ev, &c);
            if c.total_s > 0.0 {
                ev.term(
                    "bandwidth_bytes_per_sec",
                    bytes * n as f64 / c.total_s,
                    "B/s",
                );
            }
        }
        "mhloggp" => {
            let parse = |k: &str| -> Result<Device, InputError> {
                let t = p.text(k)?;
                Device::parse(&t)
                    .ok_or_else(|| InputError::new(format!("`{t}` is not cpu or gpu")).at_field(k))
            };
            let (s, r) = (parse("sender")?, parse("receiver")?);
            let first = p.count("first")? != 0;
            let (cal, builtin) = calibration(p)?;
            let c = loggp::mhloggp_p2p(&cal, s, r, p.real("bytes")?, first)?;
            p2p_terms(&mut ev, &c);
            let case = match (s, r) {
                (Device::Cpu, Device::Cpu) => "A (CPU to CPU)",
                (Device::Cpu, Device::Gpu) => "B (CPU to GPU)",
                (Device::Gpu, Device::Cpu) => "C (GPU to CPU)",
                (Device::Gpu, Device::Gpu) => "D (GPU to GPU)",
            };
            ev.note("case", case);
            if builtin {
                ev.note("calibration", "Liu et al. 2012 Tables 1-2 (Dawning TC3600)");
            }
        }
        "bcast" => {
            let procs = p.count("procs")?;
            let bytes = p.real("bytes")?;
            let thresholds = MpichBcastThresholds {
                short_msg_bytes: p.real("short_msg_bytes")?,
                long_msg_bytes: p.real("long_msg_bytes")?,
                min_procs: p.count("min_procs")?,
            };
            let table = loggp::bcast_params_from_calibration(
                &MhLogGpCalibration::dawning_tc3600(),
                procs,
                bytes,
            )?;
            let mut defaulted = Vec::new();
            let mut pick = |k: &'static str, d: f64| -> Result<f64, InputError> {
                Ok(match p.opt_real(k)? {
                    Some(v) => v,
                    None => {
                        defaulted.push(k);
                        d
                    }
                })
            };
            let params = BcastParams {
                procs,
                bytes,
                overhead_s: pick("overhead_s", table.overhead_s)?,
                gap_per_byte_s: pick("gap_per_byte_s", table.gap_per_byte_s)?,
                latency_s: pick("latency_s", table.latency_s)?,
            };
            let algo = match p.text("algorithm")?.as_str() {
                "auto" => loggp::mpich_bcast_algorithm(procs, bytes, &thresholds),
                other => BcastAlgorithm::parse(other).ok_or_else(|| {
                    InputError::new(format!("unknown algorithm `{other}`")).at_field("algorithm")
                })?,
            };
            let c = loggp::bcast_cost(&params, algo)?;
            ev.term("total_s", c.total_s, "s");
            ev.term("overhead_s", c.overhead_s, "s");
            ev.term("network_s", c.network_s, "s");
            ev.term("o_s", params.overhead_s, "s");
            ev.term("gap_per_byte_s", params.gap_per_byte_s, "s/B");
            ev.term("l_s", params.latency_s, "s");
            ev.note("algorithm", algo.name());
            if !defaulted.is_empty() {
                ev.note(
                    "defaults",
                    format!(
                        "{} from Liu et al. 2012 Tables 1-2, CPU to CPU",
                        defaulted.join(", ")
                    ),
                );
            }
        }
        "hpl" => {
            let r = hpl::hpl(&HplParams {
                n: p.count("n")?,
                nb: p.count("nb")?,
                p: p.count("p")?,
                q: p.count("q")?,
                gamma_flops_per_sec: p.real("gamma_flops_per_sec")?,
                alpha_s: p.real("alpha_s")?,
                bandwidth_bytes_per_sec: p.real("bandwidth_bytes_per_sec")?,
            })?;
            ev.term("flops_per_sec", r.flops_per_sec, "flop/s");
            ev.term("total_s", r.total_s, "s");
            ev.term("compute_s", r.compute_s, "s");
            ev.term("bandwidth_s", r.bandwidth_s, "s");
            ev.term("latency_s", r.latency_s, "s");
        }
        "mcl-hpl" => {
            let (pp, qq) = (p.count("p")?, p.count("q")?);
            // Layers: 1..=K where K is the largest k given for any l<k>_ parameter.
            let k_max = p
                .values
                .keys()
                .filter_map(|key| spec_for(p.specs, key).and_then(|(_, k)| k))
                .max()
                .unwrap_or(0);
            if k_max == 0 {
                return Err(p.missing("l1_alpha_s"));
            }
            let mut layers = Vec::new();
            for k in 1..=k_max {
                let last = k == k_max;
                let key = |f: &str| format!("l{k}_{f}");
                layers.push(MclLayer {
                    name: format!("l{k}"),
                    alpha_s: p.real(&key("alpha_s"))?,
                    bandwidth_bytes_per_sec: p.real(&key("bandwidth_bytes_per_sec"))?,
                    grid_p: p.opt_count(&key("p"))?.unwrap_or(if last { pp } else { 1 }),
                    grid_q: p.opt_count(&key("q"))?.unwrap_or(if last { qq } else { 1 }),
                });
            }
            let r = hpl::mcl_hpl(&MclHplParams {
                n: p.count("n")?,
                nb: p.count("nb")?,
                p: pp,
                q: qq,
                gamma_flops_per_sec: p.real("gamma_flops_per_sec")?,
                layers,
            })?;
            ev.term("flops_per_sec", r.flops_per_sec, "flop/s");
            ev.term("total_s", r.total_s, "s");
            ev.term("compute_s", r.compute_s, "s");
            ev.term("comm_s", r.comm_s, "s");
            for l in &r.layers {
                ev.term(format!("{}_pivot_s", l.name), l.pivot_s, "s");
                ev.term(format!("{}_broadcast_s", l.name), l.broadcast_s, "s");
                ev.term(format!("{}_update_s", l.name), l.update_s, "s");
                ev.term(format!("{}_comm_s", l.name), l.comm_s, "s");
                ev.term(format!("{}_m_upper", l.name), l.m_bounds.1, "rows");
            }
            ev.term("n_new", r.n_new, "");
        }
        "mmgp" => {
            let r = mmgp::mmgp(&mmgp_params(p)?, p.count("m")?, p.count("p")?)?;
            mmgp_terms(&mut ev, &r);
        }
        "mmgp-search" => {
            let s = mmgp::mmgp_search(&mmgp_params(p)?, p.count("n_apu")?)?;
            ev.term("best_m", s.best.m as f64, "");
            ev.term("best_p", s.best.p as f64, "");
            mmgp_terms(&mut ev, &s.best);
            for c in &s.all {
                ev.term(format!("total_s[m={},p={}]", c.m, c.p), c.total_s, "s");
            }
        }
        "roofline" => {
            let dev = roofline_device(p)?;
            let intensity = p.opt_real("intensity_flops_per_byte")?;
            let (f, b) = (p.opt_real("flops")?, p.opt_real("bytes")?);
            let other = p.real("other_s")?;
            let (improved, i) = match (intensity, f, b) {
                (Some(i), None, None) if other == 0.0 => {
                    (roofline::improved_roofline_from_intensity(&dev, i)?, i)
                }
                (None, Some(f), Some(b)) => (
                    roofline::improved_roofline_flops_per_sec(&dev, f, b, other)?,
                    if b > 0.0 { f / b } else { f64::INFINITY },
                ),
                (Some(_), None, None) => {
                    return Err(InputError::new(
                        "other_s needs flops and bytes (eq. 1, first form), not an intensity",
                    )
                    .at_field("other_s"));
                }
                _ => {
                    return Err(InputError::new(
                        "give either intensity_flops_per_byte, or flops and bytes",
                    )
                    .at_field("intensity_flops_per_byte"));
                }
            };
            ev.term("improved_flops_per_sec", improved, "flop/s");
            if i.is_finite() {
                ev.term(
                    "roofline_flops_per_sec",
                    roofline::roofline_flops_per_sec(&dev, i)?,
                    "flop/s",
                );
                ev.term("intensity_flops_per_byte", i, "flop/B");
            }
        }
        "stencil" => {
            let mesh = Mesh2d {
                nx: p.count("nx")?,
                ny: p.count("ny")?,
                nz: p.count("nz")?,
                py: p.count("py")?,
                pz: p.count("pz")?,
                flops_per_point: p.real("flops_per_point")?,
                bytes_per_boundary_point: p.real("bytes_per_boundary_point")?,
            };
            mesh.check()?;
            let single = match p.opt_real("single_gpu_flops_per_sec")? {
                Some(v) => v,
                None => {
                    let dev = roofline_device(p).map_err(|e| {
                        InputError::new(format!(
                            "{}; give single_gpu_flops_per_sec, or peak_flops_per_sec, \
                             peak_bytes_per_sec and intensity_flops_per_byte",
                            e.message
                        ))
                        .at_field(e.location.field.unwrap_or_default())
                    })?;
                    ev.note(
                        "single_gpu",
                        "Improved Roofline (Shimokawabe et al. 2013 eq. 1)",
                    );
                    roofline::improved_roofline_from_intensity(
                        &dev,
                        p.real("intensity_flops_per_byte")?,
                    )?
                }
            };
            let params = StencilParams {
                flops_per_subdomain: mesh.flops_per_subdomain(),
                single_gpu_flops_per_sec: single,
                subdomains: mesh.subdomains(),
                gpus_per_node: p.count("gpus_per_node")?,
                messages_bytes: mesh.messages_bytes(),
                inter_node: BandwidthModel {
                    peak_bytes_per_sec: p.real("ib_b0_bytes_per_sec")?,
                    latency_s: p.real("ib_t0_s")?,
                },
                pcie: BandwidthModel {
                    peak_bytes_per_sec: p.real("pcie_b0_bytes_per_sec")?,
                    latency_s: p.real("pcie_t0_s")?,
                },
            };
            let r = stencil::stencil(&params)?;
            ev.term("overlap_flops_per_sec", r.overlap_flops_per_sec, "flop/s");
            ev.term(
                "non_overlap_flops_per_sec",
                r.non_overlap_flops_per_sec,
                "flop/s",
            );
            ev.term("compute_s", r.compute_s, "s");
            ev.term("comm_s", r.comm_s, "s");
            ev.term("inter_node_s", r.inter_node_s, "s");
            ev.term("pcie_s", r.pcie_s, "s");
            ev.term("single_gpu_flops_per_sec", single, "flop/s");
            ev.term("subdomains", params.subdomains as f64, "");
            ev.term("messages", params.messages_bytes.len() as f64, "");
            ev.term(
                "message_bytes_max",
                params.messages_bytes.iter().copied().fold(0.0, f64::max),
                "B",
            );
        }
        other => {
            return Err(InputError::new(format!("unknown model kind `{other}`")));
        }
    }
    Ok(ev)
}

fn unknown_kind(kind: &str) -> InputError {
    InputError::new(format!(
        "unknown model kind `{kind}` (known: {})",
        KINDS.join(", ")
    ))
}

fn kind_of(text: &str) -> Result<&'static str, InputError> {
    KINDS
        .iter()
        .copied()
        .find(|k| *k == text)
        .ok_or_else(|| unknown_kind(text))
}

/// Split `KEY=VALUE`.
fn split_kv(text: &str, flag: &str) -> Result<(String, String), InputError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(InputError::new(format!(
            "{flag} {text}: expected KEY=VALUE"
        ))),
    }
}

/// Read `--from FILE`: a flat TOML table.
fn load_file(params: &mut Params, path: &std::path::Path) -> Result<(), InputError> {
    let text = read_input(path)?;
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| InputError::new(format!("not a TOML table: {}", e.message())).in_file(path))?;
    for (key, value) in &table {
        let raw = match value {
            toml::Value::Integer(i) => Raw::Num(*i as f64),
            toml::Value::Float(f) => Raw::Num(*f),
            toml::Value::Boolean(b) => Raw::Num(if *b { 1.0 } else { 0.0 }),
            toml::Value::String(s) => Raw::Text(s.clone()),
            _ => {
                return Err(InputError::new("expected a number or a string")
                    .in_file(path)
                    .at_field(key));
            }
        };
        if key == "kind" {
            if raw.show() != params.kind {
                return Err(InputError::new(format!(
                    "the file is for `{}`, not `{}`",
                    raw.show(),
                    params.kind
                ))
                .in_file(path)
                .at_field("kind"));
            }
            continue;
        }
        params.set(key, raw, "").map_err(|e| e.in_file(path))?;
    }
    Ok(())
}

fn fmt_num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e7 {
        format!("{v:.0}")
    } else if (1e-3..1e6).contains(&a) {
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        format!("{v:.6e}")
    }
}

fn evaluation_json(ev: &Evaluation) -> serde_json::Value {
    let mut result = serde_json::Map::new();
    for (name, v, _) in &ev.terms {
        result.insert(name.clone(), serde_json::json!(v));
    }
    let mut notes = serde_json::Map::new();
    for (name, t) in &ev.notes {
        notes.insert(name.clone(), serde_json::json!(t));
    }
    serde_json::json!({ "result": result, "notes": notes })
}

fn params_json(p: &Params) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (k, (v, _)) in &p.values {
        m.insert(
            k.clone(),
            match v {
                Raw::Num(x) => serde_json::json!(x),
                Raw::Text(t) => serde_json::json!(t),
            },
        );
    }
    serde_json::Value::Object(m)
}

/// Evaluate and render, without printing (for tests).
pub fn render(args: &ModelArgs) -> crate::Result<String> {
    let kind = kind_of(&args.kind)?;
    let spec = specs(kind).ok_or_else(|| unknown_kind(kind))?;
    if args.help_params {
        return Ok(params_help(kind));
    }
    let mut params = Params::new(kind, spec);
    if let Some(path) = &args.from {
        load_file(&mut params, path)?;
    }
    for p in &args.params {
        let (k, v) = split_kv(p, "--param")?;
        params.set(&k, Raw::Text(v), &format!("--param {p}"))?;
    }
    let Some(sweep) = &args.sweep else {
        let ev = evaluate(&params)?;
        return Ok(if args.json {
            let mut obj = evaluation_json(&ev);
            obj["kind"] = serde_json::json!(kind);
            obj["params"] = params_json(&params);
            json_line(&obj)?
        } else {
            text_single(&params, &ev)
        });
    };
    let (key, values) = split_kv(sweep, "--sweep")?;
    let values: Vec<&str> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(InputError::new(format!("--sweep {sweep}: no values")).into());
    }
    let mut rows = Vec::with_capacity(values.len());
    for v in &values {
        let mut p = params.clone();
        p.set(&key, Raw::Text(v.to_string()), &format!("--sweep {sweep}"))?;
        let ev = evaluate(&p)?;
        let shown = p
            .values
            .get(&key)
            .map(|(r, _)| r.show())
            .unwrap_or_default();
        rows.push((shown, ev));
    }
    if args.json {
        let arr: Vec<serde_json::Value> = rows
            .iter()
            .map(|(v, ev)| {
                let mut o = evaluation_json(ev);
                o["value"] = serde_json::json!(v);
                o
            })
            .collect();
        let obj = serde_json::json!({
            "kind": kind,
            "params": params_json(&params),
            "sweep": key,
            "rows": arr,
        });
        json_line(&obj)
    } else {
        Ok(text_sweep(kind, &params, &key, &rows))
    }
}

fn text_single(p: &Params, ev: &Evaluation) -> String {
    let mut out = format!("model {}: {}\n", p.kind, kind_summary(p.kind));
    out.push_str("parameters\n");
    for (k, v) in p.shown() {
        let _ = writeln!(out, "  {k} = {v}");
    }
    out.push_str("prediction\n");
    let width = ev.terms.iter().map(|t| t.0.len()).max().unwrap_or(0);
    for (name, v, unit) in &ev.terms {
        let _ = writeln!(out, "  {name:<width$}  {:>14}  {unit}", fmt_num(*v));
    }
    for (name, t) in &ev.notes {
        let _ = writeln!(out, "  {name}: {t}");
    }
    out
}

fn text_sweep(kind: &str, p: &Params, key: &str, rows: &[(String, Evaluation)]) -> String {
    let mut out = format!("model {kind}: {}\n", kind_summary(kind));
    let fixed: Vec<String> = p
        .shown()
        .into_iter()
        .filter(|(k, _)| k != key)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !fixed.is_empty() {
        let _ = writeln!(out, "# {}", fixed.join(" "));
    }
    // Columns: the union of term names, in first-seen order, capped for readability.
    let mut cols: Vec<String> = Vec::new();
    for (_, ev) in rows {
        for (name, _, _) in &ev.terms {
            if !cols.contains(name) && cols.len() < 12 {
                cols.push(name.clone());
            }
        }
    }
    let w = 14usize;
    let mut header = format!("{key:>w$}");
    for c in &cols {
        let _ = write!(header, " {c:>w$}");
    }
    let _ = writeln!(out, "{header}");
    for (v, ev) in rows {
        let mut line = format!("{v:>w$}");
        for c in &cols {
            let cell = ev
                .terms
                .iter()
                .find(|t| &t.0 == c)
                .map(|t| fmt_num(t.1))
                .unwrap_or_else(|| "-".to_string());
            let _ = write!(line, " {cell:>w$}");
        }
        let notes: Vec<String> = ev.notes.iter().map(|(n, t)| format!("{n}: {t}")).collect();
        if !notes.is_empty() {
            let _ = write!(line, "  {}", notes.join("; "));
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Run `hetsim model`.
pub fn run(args: &ModelArgs) -> crate::Result<()> {
    let text = render(args)?;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::Internal(format!("cannot write to stdout: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(kind: &str, params: &[&str]) -> ModelArgs {
        ModelArgs {
            kind: kind.into(),
            params: params.iter().map(|s| s.to_string()).collect(),
            from: None,
            json: false,
            sweep: None,
            help_params: false,
        }
    }

    fn err(a: &ModelArgs) -> String {
        render(a).unwrap_err().to_string()
    }

    #[test]
    fn every_kind_has_specs_and_help() {
        for k in KINDS {
            assert!(specs(k).is_some(), "{k}");
            assert!(!kind_summary(k).is_empty(), "{k}");
            assert!(help_text().contains(k));
        }
    }

    #[test]
    fn hpl_text_output_has_the_terms() {
        let a = args(
            "hpl",
            &[
                "n=1000",
                "nb=100",
                "p=2",
                "q=4",
                "gamma_flops_per_sec=1e9",
                "alpha_s=1e-5",
                "bandwidth_bytes_per_sec=8e8",
            ],
        );
        let t = render(&a).unwrap();
        for term in ["flops_per_sec", "compute_s", "bandwidth_s", "latency_s"] {
            assert!(t.contains(term), "{t}");
        }
        assert!(t.contains("0.083333"), "{t}"); // compute 1/12 s
    }

    #[test]
    fn errors_name_the_parameter() {
        let e = err(&args("hpl", &["n=10"]));
        assert!(e.contains("missing parameter `nb`"), "{e}");
        let e = err(&args("hpl", &["n=ten"]));
        assert!(e.contains("`n`") && e.contains("not a number"), "{e}");
        let e = err(&args("hpl", &["n=10.5"]));
        assert!(e.contains("whole number"), "{e}");
        let e = err(&args("hpl", &["bogus=1"]));
        assert!(e.contains("unknown parameter `bogus`"), "{e}");
        let e = err(&args("mhloggp", &["sender=fpga"]));
        assert!(e.contains("sender") && e.contains("cpu, gpu"), "{e}");
        let e = err(&args("nope", &[]));
        assert!(e.contains("unknown model kind"), "{e}");
        let e = err(&args(
            "roofline",
            &["peak_flops_per_sec=1", "peak_bytes_per_sec=1"],
        ));
        assert!(e.contains("intensity_flops_per_byte"), "{e}");
    }

    #[test]
    fn mcl_layers_from_numbered_parameters() {
        let a = args(
            "mcl-hpl",
            &[
                "n=1000",
                "nb=100",
                "p=2",
                "q=4",
                "gamma_flops_per_sec=1e9",
                "l1_alpha_s=1e-6",
                "l1_bandwidth_bytes_per_sec=1e10",
                "l2_alpha_s=1e-5",
                "l2_bandwidth_bytes_per_sec=8e8",
            ],
        );
        let t = render(&a).unwrap();
        assert!(t.contains("l1_comm_s") && t.contains("l2_comm_s"), "{t}");
        // a gap in the layer numbers is a missing parameter
        let mut b = args(
            "mcl-hpl",
            &[
                "n=1000",
                "nb=100",
                "p=1",
                "q=1",
                "gamma_flops_per_sec=1e9",
                "l2_alpha_s=1e-5",
                "l2_bandwidth_bytes_per_sec=8e8",
            ],
        );
        assert!(err(&b).contains("l1_alpha_s"));
        b.params.truncate(5);
        assert!(err(&b).contains("l1_alpha_s"));
    }

    #[test]
    fn bcast_defaults_come_from_the_paper_and_the_rule_picks() {
        let t = render(&args("bcast", &["procs=8", "bytes=1048576"])).unwrap();
        assert!(t.contains("algorithm: ring"), "{t}");
        assert!(t.contains("Liu et al. 2012"), "{t}");
        let t = render(&args("bcast", &["procs=4", "bytes=1048576"])).unwrap();
        assert!(t.contains("algorithm: binomial"), "{t}");
    }

    #[test]
    fn sweep_and_json() {
        let mut a = args(
            "roofline",
            &["peak_flops_per_sec=1030e9", "peak_bytes_per_sec=148e9"],
        );
        a.sweep = Some("intensity_flops_per_byte=0.41,1.83".into());
        let t = render(&a).unwrap();
        assert_eq!(
            t.lines()
                .filter(|l| l.trim_start().starts_with("0.41"))
                .count(),
            1
        );
        a.json = true;
        let v: serde_json::Value = serde_json::from_str(&render(&a).unwrap()).unwrap();
        assert_eq!(v["rows"].as_array().unwrap().len(), 2);
        a.sweep = Some("intensity_flops_per_byte=".into());
        assert!(render(&a).is_err());
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(fmt_num(44000.0), "44000");
        assert_eq!(fmt_num(0.5), "0.5");
        assert_eq!(fmt_num(3.84e12), "3.840000e12");
        assert_eq!(fmt_num(1.5e-7), "1.500000e-7");
    }
}
