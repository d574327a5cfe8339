//! Cross-checks: run a program workload in the simulator and evaluate the analytic model that
//! describes it (`src/analytic`), side by side, with the relative difference and the model
//! assumptions the scenario breaks.
//!
//! | workload kind | model |
//! |---|---|
//! | `offload` | MMGP, seed 002 eq. 11 ([`crate::analytic::mmgp`]) |
//! | `p2p`, `bcast` | LogGP / mHLogGP, seed 000 §3 ([`crate::analytic::loggp`]) |
//! | `stencil` | stencil scalability + Improved Roofline, seed 004 ([`crate::analytic::stencil`]) |
//! | `hpl` | HPL and MCL-HPL, seed 001 ([`crate::analytic::hpl`]) |
//!
//! A kind whose simulation workload does not exist yet is reported as such
//! ([`Outcome::NoWorkload`]), never estimated. The assumptions are detected from the scenario
//! (its machine's routes, the workload's parameters), not listed per file.
//!
//! `docs/crosscheck.md` describes each comparison and its parameter mapping.

use serde::Serialize;

use crate::analytic::mmgp::{MmgpParams, mmgp, mmgp_search};
use crate::cluster::Cluster;
use crate::error::InputError;
use crate::machine::{Direction, LinkId, Sharing};
use crate::mpi::RankId;
use crate::mpi::exec::{ExecOptions, ProgramReport, run};
use crate::workload::{OffloadSpec, ProgramGenerator, ProgramWorkload};

/// One term of a prediction, with the simulation's matching measurement where there is one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Term {
    /// What it is, with the paper's notation.
    pub name: String,
    /// The model's value, s.
    pub model_s: f64,
    /// What the simulation measured for the same thing, s, if it measures it.
    pub simulated_s: Option<f64>,
}

/// A model assumption the scenario does not satisfy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    /// The assumption, as the paper makes it.
    pub assumption: String,
    /// What in the scenario breaks it, and which way it moves the simulation.
    pub detail: String,
}

/// A side-by-side comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The model and where it comes from: "MMGP (seed 002 eq. 11)".
    pub model: String,
    /// The configuration compared, e.g. "(m, p) = (4, 4) on 16 APUs".
    pub configuration: String,
    /// The model's terms (their sum is [`Comparison::model_s`]).
    pub terms: Vec<Term>,
    /// The model's prediction, s.
    pub model_s: f64,
    /// The simulated makespan, s.
    pub simulated_s: f64,
    /// (simulated − model) / model.
    pub relative_difference: f64,
    /// What else the model says (e.g. its best configuration).
    pub notes: Vec<String>,
    /// Assumptions of the model the scenario violates; empty when none is detected.
    pub violations: Vec<Violation>,
    /// The simulation's report.
    #[serde(skip)]
    pub report: ProgramReport,
}

/// What a cross-check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Model and simulation, compared.
    Compared(Box<Comparison>),
    /// The workload kind has a model but no simulation workload yet: nothing is compared.
    NoWorkload {
        /// The workload kind.
        kind: String,
        /// The model that would be compared.
        model: String,
    },
}

/// Cross-check `workload` on `cluster`: simulate it and evaluate its model.
pub fn crosscheck(workload: &ProgramWorkload, cluster: &Cluster) -> Result<Outcome, InputError> {
    match workload {
        ProgramWorkload::Offload(spec) => {
            offload(spec, cluster).map(|c| Outcome::Compared(c.into()))
        }
        other => Ok(no_workload(other.kind_name())),
    }
}

/// The outcome for a kind that has a model but no simulation workload to compare yet.
pub fn no_workload(kind: &str) -> Outcome {
    Outcome::NoWorkload {
        kind: kind.to_string(),
        model: model_name(kind).to_string(),
    }
}

/// The analytic model that matches a workload kind (`workload.kind`).
pub fn model_name(kind: &str) -> &'static str {
    match kind {
        "offload" => "MMGP (seed 002 eq. 11)",
        "p2p" => "LogGP / mHLogGP point-to-point (seed 000 eq. 1, §3.1)",
        "bcast" => "binomial-tree broadcast, mHLogGP (seed 000 eq. 3)",
        "stencil" => "stencil scalability model + Improved Roofline (seed 004 eqs. 1-5)",
        "hpl" => "HPL model and MCL-HPL (seed 001 eqs. 17-29)",
        _ => "none",
    }
}

/// The MMGP parameters an offload workload stands for (the mapping of
/// [`crate::workload::OffloadSpec`]'s documentation).
pub fn mmgp_params(spec: &OffloadSpec) -> Result<MmgpParams, InputError> {
    let q = spec.params()?;
    Ok(MmgpParams {
        t_hpu_s: q.t_hpu_s,
        t_apu_s: q.t_apu_s,
        c_apu_s: q.c_apu_s,
        o_offload_s: q.o_offload_s,
        g_s: q.gap_s,
        t_csw_s: q.t_csw_s,
        o_col_s: q.o_col_s,
        alpha_m: q.alpha_m,
        phases: q.phases as f64,
    })
}

/// LogGP parameters of one host-to-host message of `bytes` bytes from node `src` to node `dst`
/// of `cluster` (seed 000 eq. 1), read off the cluster file: `l` = the NIC latency plus the
/// switch crossings on the way (crossbar: one; fat tree: one inside a leaf, three across the
/// spine), `G` = 1 / NIC bandwidth, `o_s`, `o_r` = the `[overheads]` table at `bytes`, `g` = 0
/// (the simulator has no gap beyond `o_s`). `None` for a cluster without network.
pub fn loggp_params(
    cluster: &Cluster,
    src: crate::cluster::NodeId,
    dst: crate::cluster::NodeId,
    bytes: f64,
) -> Option<crate::analytic::loggp::LogGp> {
    use crate::cluster::Switch;
    let nic = cluster.nic()?;
    let switch_s = match cluster.switch() {
        Switch::Crossbar { latency_s } => *latency_s,
        Switch::FatTree {
            nodes_per_leaf,
            latency_s,
            ..
        } => {
            let leaf = |n: crate::cluster::NodeId| n.0 / (*nodes_per_leaf).max(1);
            if leaf(src) == leaf(dst) {
                *latency_s
            } else {
                3.0 * latency_s
            }
        }
    };
    Some(crate::analytic::loggp::LogGp {
        latency_s: nic.latency_s + switch_s,
        send_overhead_s: cluster.overheads().send_s(bytes),
        recv_overhead_s: cluster.overheads().recv_s(bytes),
        gap_s: 0.0,
        gap_per_byte_s: 1.0 / nic.bandwidth_bytes_per_sec,
    })
}

/// Relative difference (simulated − model) / model; 0 when both are 0.
pub fn relative_difference(simulated_s: f64, model_s: f64) -> f64 {
    if model_s == 0.0 {
        if simulated_s == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (simulated_s - model_s) / model_s
    }
}

fn offload(spec: &OffloadSpec, cluster: &Cluster) -> Result<Comparison, InputError> {
    let q = spec.params()?;
    let params = mmgp_params(spec)?;
    let program = spec.generate(cluster)?;
    let report = run(&program, cluster, &ExecOptions::default())?;
    let pred = mmgp(&params, q.m, q.p)?;
    let n_apu = u64::from(cluster.ranks());
    let best = mmgp_search(&params, n_apu)?.best;
    // The host kernels all run on rank 0's CPU, the one HPU; rank 0's GPU is thread 0's first
    // APU, which also runs the serial part C_APU.
    let hpu_busy = report.cpu_busy_s.first().copied();
    let apu0_busy = report.gpu_busy_s.first().copied();
    let terms = vec![
        Term {
            name: "α_m·T_HPU(1,1) (host work on the HPU)".into(),
            model_s: pred.hpu_s,
            simulated_s: hpu_busy,
        },
        Term {
            name: "T_APU(1,1)/(m·p) + C_APU (busiest APU)".into(),
            model_s: pred.apu_parallel_s + pred.apu_serial_s,
            simulated_s: apu0_busy,
        },
        Term {
            name: "N·(O_offload + T_CSW + O_COL)".into(),
            model_s: pred.overhead_s,
            simulated_s: None,
        },
        Term {
            name: "N·p·g (offload gaps)".into(),
            model_s: pred.gap_s,
            simulated_s: None,
        },
    ];
    let notes = vec![format!(
        "the model's best configuration on {n_apu} APUs (m·p <= N_APU): (m, p) = ({}, {}), {:.6} s",
        best.m, best.p, best.total_s
    )];
    Ok(Comparison {
        model: "MMGP (seed 002 eq. 11)".into(),
        configuration: format!(
            "(m, p) = ({}, {}), N = {} phase(s), on {n_apu} APUs",
            q.m, q.p, q.phases
        ),
        terms,
        model_s: pred.total_s,
        simulated_s: report.makespan_s,
        relative_difference: relative_difference(report.makespan_s, pred.total_s),
        notes,
        violations: offload_violations(spec, cluster)?,
        report,
    })
}

/// The MMGP assumptions an offload scenario breaks (seed 002 §3.1: data streamed and overlapped
/// with APU computation, so an offload costs only `O_offload`).
pub fn offload_violations(
    spec: &OffloadSpec,
    cluster: &Cluster,
) -> Result<Vec<Violation>, InputError> {
    let q = spec.params()?;
    let mut out = Vec::new();
    if q.offload_bytes <= 0.0 {
        return Ok(out);
    }
    let streamed = "offloaded data is streamed and overlapped with APU computation; an offload \
                    costs only O_offload (seed 002 §3.1)";
    out.push(Violation {
        assumption: streamed.into(),
        detail: format!(
            "each of the N·m·p = {} offloads copies {} bytes host → APU before the APU starts; \
             the copies are not in eq. 11, so the simulation is slower",
            q.phases * q.m * q.p,
            q.offload_bytes
        ),
    });
    let used = q.m * q.p;
    let per_node = u64::from(cluster.gpus_per_node());
    if used > per_node {
        out.push(Violation {
            assumption: streamed.into(),
            detail: format!(
                "the {used} APUs span {} nodes: copies to APUs beyond the first {per_node} cross \
                 the NIC and the switch",
                used.div_ceil(per_node)
            ),
        });
    }
    if cluster.overheads().send_s(q.offload_bytes) > 0.0
        || cluster.overheads().recv_s(q.offload_bytes) > 0.0
    {
        out.push(Violation {
            assumption: "an offload's software cost is O_offload, once per phase and thread \
                         (seed 002 eq. 2)"
                .into(),
            detail: "the cluster's MPI overheads o_s/o_r are charged per copy as well, o_s on \
                     the HPU's CPU"
                .into(),
        });
    }
    // Copies from host memory to the APUs of node 0: do several cross one link (in one
    // direction)? A shared uplink serialises them, which eq. 11 cannot see.
    let machine = cluster.node_machine();
    if let Some(host) = machine.cpus().first().map(|c| c.memory) {
        let mut users: Vec<(LinkUse, Vec<u32>)> = Vec::new();
        for r in 0..used.min(per_node) {
            let (_, gpu) = cluster.rank_location(RankId(r as u32));
            let Some(g) = machine.gpus().get(gpu.index()) else {
                continue;
            };
            let Some(route) = machine.route(host, g.memory) else {
                continue;
            };
            if route.model.is_some() {
                continue;
            }
            for hop in &route.hops {
                let shared = machine
                    .link(hop.link)
                    .is_some_and(|l| l.sharing != Sharing::Fatpipe);
                if !shared {
                    continue;
                }
                let key = (hop.link, hop.direction);
                match users.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => {
                        if !v.contains(&(r as u32)) {
                            v.push(r as u32)
                        }
                    }
                    None => users.push((key, vec![r as u32])),
                }
            }
        }
        for ((link, _), apus) in users.iter().filter(|(_, v)| v.len() > 1) {
            let name = machine.link(*link).map_or("?", |l| l.name.as_str());
            out.push(Violation {
                assumption: "each APU's traffic is independent of the others' (seed 002 \
                             §3.1)"
                    .into(),
                detail: format!(
                    "{} APUs (ranks {}) receive their copies over the shared link `{name}`",
                    apus.len(),
                    list(apus)
                ),
            });
        }
    }
    Ok(out)
}

/// A link in one direction (`None` for a link shared by both directions).
type LinkUse = (LinkId, Option<Direction>);

fn list(v: &[u32]) -> String {
    if v.len() > 6 {
        format!("{}, {}, … {}", v[0], v[1], v[v.len() - 1])
    } else {
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
    }
}

/// The text report of an outcome.
pub fn text(scenario: &str, outcome: &Outcome) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    match outcome {
        Outcome::NoWorkload { kind, model } => {
            let _ = writeln!(
                s,
                "crosscheck {scenario}: workload kind `{kind}`, model {model}\n\
                 no simulation workload for this model yet: nothing compared"
            );
        }
        Outcome::Compared(c) => {
            let _ = writeln!(s, "crosscheck {scenario}");
            let _ = writeln!(s, "model: {}", c.model);
            let _ = writeln!(s, "configuration: {}", c.configuration);
            let _ = writeln!(s);
            let _ = writeln!(s, "{:<44} {:>16} {:>16}", "term", "model s", "simulated s");
            for t in &c.terms {
                let sim = t
                    .simulated_s
                    .map_or_else(|| "-".to_string(), |v| format!("{v:.9}"));
                let _ = writeln!(s, "{:<44} {:>16.9} {:>16}", t.name, t.model_s, sim);
            }
            let _ = writeln!(
                s,
                "{:<44} {:>16.9} {:>16.9}",
                "total (makespan)", c.model_s, c.simulated_s
            );
            let _ = writeln!(
                s,
                "relative difference (simulated - model)/model: {:+.4} %",
                100.0 * c.relative_difference
            );
            for n in &c.notes {
                let _ = writeln!(s, "note: {n}");
            }
            if c.violations.is_empty() {
                let _ = writeln!(s, "assumptions violated: none detected");
            } else {
                let _ = writeln!(s, "assumptions violated:");
                for v in &c.violations {
                    let _ = writeln!(s, "- {}: {}", v.assumption, v.detail);
                }
            }
        }
    }
    s
}

/// A scenario whose workload is a program (`p2p`, `bcast`, `hpl`, `stencil`, `matmul`,
/// `offload`), as `hetsim crosscheck` reads it.
///
/// This reader covers `[scenario] name, description, machine`, `[machine] nodes, gpus_per_node`
/// and `[workload] kind, ...` with `--set` overrides; it stands in until `src/scenario.rs` loads
/// program workloads itself.
#[derive(Debug, Clone)]
pub struct ProgramScenario {
    /// `[scenario] name`.
    pub name: String,
    /// The machine or cluster, shaped by `[machine]`.
    pub cluster: Cluster,
    /// `workload.kind`.
    pub kind: String,
    /// The workload, when crosscheck can simulate and compare its kind (`None`: it has a model
    /// but no simulation workload to compare yet).
    pub workload: Option<ProgramWorkload>,
}

/// Read a program scenario from `path`, applying `overrides` (`--set KEY=VALUE`) first.
pub fn load_scenario(
    path: &std::path::Path,
    overrides: &[crate::scenario::Override],
) -> Result<ProgramScenario, InputError> {
    let text = crate::error::read_input(path)?;
    let locate = |e: InputError| {
        let line = e
            .location
            .field
            .as_deref()
            .and_then(|f| line_of_field(&text, f));
        let e = e.in_file(path);
        match line {
            Some(l) => e.at_line(l),
            None => e,
        }
    };
    let mut doc: toml::Table = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let err = InputError::new(format!("not a valid TOML file: {}", e.message())).in_file(path);
        match line {
            Some(l) => err.at_line(l),
            None => err,
        }
    })?;
    for ov in overrides {
        apply_override(&mut doc, ov)?;
    }
    for key in doc.keys() {
        if !["scenario", "machine", "workload"].contains(&key.as_str()) {
            return Err(locate(
                InputError::new(format!(
                    "unknown table `{key}`: expected `scenario`, `machine` or `workload`"
                ))
                .at_field(key.clone()),
            ));
        }
    }
    let table = |name: &str| -> Result<toml::Table, InputError> {
        match doc.get(name) {
            None => Ok(toml::Table::new()),
            Some(toml::Value::Table(t)) => Ok(t.clone()),
            Some(_) => Err(locate(
                InputError::new("expected a table").at_field(name.to_string()),
            )),
        }
    };
    let scenario = table("scenario")?;
    let str_field =
        |t: &toml::Table, section: &str, key: &str| -> Result<Option<String>, InputError> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(locate(
                    InputError::new("expected a string").at_field(format!("{section}.{key}")),
                )),
            }
        };
    for key in scenario.keys() {
        if !["name", "description", "machine"].contains(&key.as_str()) {
            return Err(locate(
                InputError::new(format!(
                    "unknown field `{key}`: expected `name`, `description` or `machine`"
                ))
                .at_field(format!("scenario.{key}")),
            ));
        }
    }
    let name = str_field(&scenario, "scenario", "name")?.unwrap_or_else(|| {
        path.file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
    });
    let Some(machine) = str_field(&scenario, "scenario", "machine")? else {
        return Err(locate(
            InputError::new("missing: the machine or cluster file, relative to the scenario")
                .at_field("scenario.machine"),
        ));
    };
    let machine_path = path
        .parent()
        .unwrap_or_else(|| std::path::Path::new("."))
        .join(&machine);
    let mut cluster = crate::cluster::load(&machine_path)?;
    let shape = table("machine")?;
    let count = |key: &str, default: u32| -> Result<u32, InputError> {
        match shape.get(key) {
            None => Ok(default),
            Some(toml::Value::Integer(v)) if *v >= 0 && *v <= i64::from(u32::MAX) => Ok(*v as u32),
            Some(v) => Err(locate(
                InputError::new(format!("expected a whole number >= 0, got {v}"))
                    .at_field(format!("machine.{key}")),
            )),
        }
    };
    for key in shape.keys() {
        if !["nodes", "gpus_per_node"].contains(&key.as_str()) {
            return Err(locate(
                InputError::new(format!(
                    "unknown field `{key}`: expected `nodes` or `gpus_per_node`"
                ))
                .at_field(format!("machine.{key}")),
            ));
        }
    }
    if !shape.is_empty() {
        let nodes = count("nodes", cluster.nodes())?;
        let gpus = count("gpus_per_node", cluster.gpus_per_node())?;
        cluster = cluster.with_shape(nodes, gpus).map_err(locate)?;
    }
    let mut workload = table("workload")?;
    let kind = match workload.remove("kind") {
        Some(toml::Value::String(s)) => s,
        Some(_) => {
            return Err(locate(
                InputError::new("expected a string").at_field("workload.kind"),
            ));
        }
        None => {
            return Err(locate(
                InputError::new(format!(
                    "missing: the workload kind, one of {}",
                    ProgramWorkload::KINDS.join(", ")
                ))
                .at_field("workload.kind"),
            ));
        }
    };
    let spec = toml::Value::Table(workload);
    fn de<T: serde::de::DeserializeOwned>(v: toml::Value) -> Result<T, InputError> {
        v.try_into::<T>().map_err(|e| {
            let msg = e.message().to_string();
            let field = msg
                .split('`')
                .nth(1)
                .map_or_else(|| "workload".to_string(), |f| format!("workload.{f}"));
            InputError::new(msg).at_field(field)
        })
    }
    // Only the kinds crosscheck compares are read here; the others' parameters belong to
    // their generators and are left to them.
    let workload = match kind.as_str() {
        "offload" => Some(ProgramWorkload::Offload(de(spec).map_err(locate)?)),
        k if ProgramWorkload::KINDS.contains(&k) => None,
        other => {
            return Err(locate(
                InputError::new(format!(
                    "`{other}` is not a program workload: crosscheck compares {} with their \
                     models (task-graph workloads have no analytic model here)",
                    ProgramWorkload::KINDS.join(", ")
                ))
                .at_field("workload.kind"),
            ));
        }
    };
    Ok(ProgramScenario {
        name,
        cluster,
        kind,
        workload,
    })
}

/// Apply one `--set` override to the TOML document.
fn apply_override(doc: &mut toml::Table, ov: &crate::scenario::Override) -> Result<(), InputError> {
    use crate::scenario::OverrideValue;
    let value = match &ov.value {
        OverrideValue::Str(s) => toml::Value::String(s.clone()),
        OverrideValue::Toml(text) => toml::from_str::<toml::Table>(&format!("v = {text}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(text.clone())),
    };
    let (last, parents) = ov
        .path
        .split_last()
        .ok_or_else(|| InputError::new(format!("{}: empty key", ov.label)))?;
    let mut t = doc;
    for key in parents {
        let entry = t
            .entry(key.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = match entry {
            toml::Value::Table(inner) => inner,
            _ => {
                return Err(InputError::new(format!(
                    "{}: `{key}` is not a table",
                    ov.label
                )));
            }
        };
    }
    t.insert(last.clone(), value);
    Ok(())
}

/// The 1-based line of `section.key` (or of `[section]`) in a TOML text, for error messages.
fn line_of_field(text: &str, field: &str) -> Option<usize> {
    let (section, key) = field.split_once('.').unwrap_or((field, ""));
    let mut in_section = false;
    let mut header = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('[') {
            in_section = line.trim_start_matches('[').trim_end_matches(']').trim() == section;
            if in_section {
                header = Some(i + 1);
            }
            continue;
        }
        if in_section
            && !key.is_empty()
            && let Some((k, _)) = line.split_once('=')
            && k.trim() == key
        {
            return Some(i + 1);
        }
    }
    header
}
