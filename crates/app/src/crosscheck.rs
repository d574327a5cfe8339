//! Cross-checks: run a program workload in the simulator and evaluate the analytic model that
//! describes it (`src/analytic`), side by side, with the relative difference and the model
//! assumptions the scenario breaks.
//!
//! | workload kind | model |
//! |---|---|
//! | `offload` | MMGP, Blagojevic et al. 2008 eq. 11 ([`hetsim_analytic::mmgp`]) |
//! | `p2p`, `bcast` | LogGP / mHLogGP, Liu et al. 2012 §3 ([`hetsim_analytic::loggp`]) |
//! | `stencil` | stencil scalability + Improved Roofline, Shimokawabe et al. 2013 ([`hetsim_analytic::stencil`]) |
//! | `hpl` | HPL and MCL-HPL, Kim et al. 2021 ([`hetsim_analytic::hpl`]) |
//!
//! A scenario outside a model's parameter mapping (a single node where the model needs a
//! network, matmul which no model describes) is reported as [`Outcome::NotComparable`], never
//! estimated. The assumptions are detected from the scenario
//! (its machine's routes, the workload's parameters), not listed per file.
//!
//! `docs/crosscheck.md` describes each comparison and its parameter mapping.

use serde::Serialize;

use hetsim_analytic::mmgp::{MmgpParams, mmgp, mmgp_search};
use hetsim_core::Error;
use hetsim_core::error::InputError;
use hetsim_mpi::RankId;
use hetsim_mpi::workload::{OffloadSpec, ProgramGenerator, ProgramWorkload};
use hetsim_platform::cluster::Cluster;
use hetsim_platform::machine::{Direction, LinkPolicy, MachineLinkId};
use hetsim_runtime::RunReport;

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

impl Term {
    /// A term the simulation does not measure separately.
    fn model(name: impl Into<String>, model_s: f64) -> Term {
        Term {
            name: name.into(),
            model_s,
            simulated_s: None,
        }
    }
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
    /// The model and where it comes from: "MMGP (Blagojevic et al. 2008 eq. 11)".
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
    pub report: RunReport,
}

/// What a cross-check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Model and simulation, compared.
    Compared(Box<Comparison>),
    /// The scenario falls outside what the model's parameter mapping covers: nothing compared.
    NotComparable {
        /// The workload kind.
        kind: String,
        /// The model.
        model: String,
        /// Why.
        reason: String,
    },
}

/// Cross-check `workload` on `cluster`: simulate it and evaluate its model.
pub fn crosscheck(workload: &ProgramWorkload, cluster: &Cluster) -> Result<Outcome, Error> {
    match workload {
        ProgramWorkload::Offload(spec) => {
            offload(spec, cluster).map(|c| Outcome::Compared(c.into()))
        }
        ProgramWorkload::P2p(spec) => p2p(spec, cluster),
        ProgramWorkload::Bcast(spec) => bcast_check(spec, cluster),
        ProgramWorkload::Stencil(spec) => stencil_check(spec, cluster),
        ProgramWorkload::Hpl(spec) => hpl_check(spec, cluster),
        ProgramWorkload::Reduce(_)
        | ProgramWorkload::Allreduce(_)
        | ProgramWorkload::Alltoall(_) => {
            let kind = workload.kind_name();
            Ok(Outcome::NotComparable {
                kind: kind.into(),
                model: model_name(kind).into(),
                reason: format!(
                    "none of the seeds' analytic models describes {kind}; \
                     tests/integration/smpi_collectives.rs compares it with SMPI"
                ),
            })
        }
        ProgramWorkload::Matmul(_) => Ok(Outcome::NotComparable {
            kind: "matmul".into(),
            model: model_name("matmul").into(),
            reason: "none of the seeds' analytic models describes the matmul workload".into(),
        }),
    }
}

/// The simulation of `program` on `cluster` (the program scheduler, seed 1).
fn simulate(program: &hetsim_mpi::Program, cluster: &Cluster) -> Result<RunReport, Error> {
    crate::programs::simulate_program_default(program, cluster)
}

/// The analytic model that matches a workload kind (`workload.kind`).
pub fn model_name(kind: &str) -> &'static str {
    match kind {
        "offload" => "MMGP (Blagojevic et al. 2008 eq. 11)",
        "p2p" => "LogGP / mHLogGP point-to-point (Liu et al. 2012 eq. 1, §3.1)",
        "bcast" => "binomial-tree broadcast, mHLogGP (Liu et al. 2012 eq. 3)",
        "stencil" => {
            "stencil scalability model + Improved Roofline (Shimokawabe et al. 2013 eqs. 1-5)"
        }
        "hpl" => "HPL model and MCL-HPL (Kim et al. 2021 eqs. 17-29)",
        _ => "none",
    }
}

/// The MMGP parameters an offload workload stands for (the mapping of
/// [`hetsim_mpi::workload::OffloadSpec`]'s documentation).
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
/// of `cluster` (Liu et al. 2012 eq. 1), read off the cluster file: `l` = the NIC latency plus the
/// switch crossings on the way (crossbar: one; fat tree: one inside a leaf, three across the
/// spine), `G` = 1 / NIC bandwidth, `o_s`, `o_r` = the `[overheads]` table at `bytes`, `g` = 0
/// (the simulator has no gap beyond `o_s`). `None` for a cluster without network.
pub fn loggp_params(
    cluster: &Cluster,
    src: hetsim_platform::cluster::NodeId,
    dst: hetsim_platform::cluster::NodeId,
    bytes: f64,
) -> Option<hetsim_analytic::loggp::LogGp> {
    use hetsim_platform::cluster::Switch;
    let nic = cluster.nic()?;
    let switch_s = match cluster.switch() {
        Switch::Crossbar { latency_s } => *latency_s,
        Switch::FatTree {
            nodes_per_leaf,
            latency_s,
            ..
        } => {
            let leaf = |n: hetsim_platform::cluster::NodeId| n.0 / (*nodes_per_leaf).max(1);
            if leaf(src) == leaf(dst) {
                *latency_s
            } else {
                3.0 * latency_s
            }
        }
    };
    Some(hetsim_analytic::loggp::LogGp {
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

fn offload(spec: &OffloadSpec, cluster: &Cluster) -> Result<Comparison, Error> {
    let q = spec.params()?;
    let params = mmgp_params(spec)?;
    let program = spec.generate(cluster)?;
    let report = simulate(&program, cluster)?;
    let pred = mmgp(&params, q.m, q.p)?;
    let n_apu = u64::from(cluster.ranks());
    let best = mmgp_search(&params, n_apu)?.best;
    // The host kernels all run on rank 0's CPU, the one HPU; rank 0's GPU is thread 0's first
    // APU, which also runs the serial part C_APU.
    let (gpu_busy, cpu_busy) = crate::programs::busy_by_rank(&report);
    let hpu_busy = cpu_busy.first().copied();
    let apu0_busy = gpu_busy.first().copied();
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
        Term::model("N·(O_offload + T_CSW + O_COL)", pred.overhead_s),
        Term::model("N·p·g (offload gaps)", pred.gap_s),
    ];
    let notes = vec![format!(
        "the model's best configuration on {n_apu} APUs (m·p <= N_APU): (m, p) = ({}, {}), {:.6} s",
        best.m, best.p, best.total_s
    )];
    Ok(Comparison {
        model: "MMGP (Blagojevic et al. 2008 eq. 11)".into(),
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

/// Staging through host memory: a violation of LogGP's single network when a buffer is on a GPU
/// and the cluster has no GPU-direct path.
fn staging_violation(cluster: &Cluster, device_ends: usize) -> Option<Violation> {
    if device_ends == 0 || cluster.gpu_direct() {
        return None;
    }
    Some(Violation {
        assumption:
            "one network between the end points: l and G are the NIC's (Liu et al. 2012 eq. 1)"
                .into(),
        detail: format!(
            "{device_ends} end(s) of each message in GPU memory without GPU-direct: the bytes are \
             staged device → host → host → device over PCIe, store and forward (mHLogGP counts \
             this in o_sg/o_rd, Liu et al. 2012 §3.1), which adds to the simulated time"
        ),
    })
}

fn p2p(spec: &hetsim_mpi::workload::P2pSpec, cluster: &Cluster) -> Result<Outcome, Error> {
    use hetsim_analytic::loggp::loggp_p2p;
    use hetsim_mpi::workload::BufferSpec;
    let program = spec.generate(cluster)?;
    let dst = spec.receiver(cluster);
    let (ns, _) = cluster.rank_location(RankId(spec.src));
    let (nd, _) = cluster.rank_location(RankId(dst));
    let k = spec.bytes.0;
    let model_name = model_name("p2p").to_string();
    if ns == nd {
        return Ok(Outcome::NotComparable {
            kind: "p2p".into(),
            model: model_name,
            reason: format!(
                "ranks {} and {dst} are both on {ns}: the LogGP mapping takes l and G from the \
                 NIC (use ranks on two nodes)",
                spec.src
            ),
        });
    }
    let Some(params) = loggp_params(cluster, ns, nd, k) else {
        return Ok(Outcome::NotComparable {
            kind: "p2p".into(),
            model: model_name,
            reason: "the machine has no network".into(),
        });
    };
    let report = simulate(&program, cluster)?;
    let one = loggp_p2p(&params, k, 1)?;
    // mHLogGP (Liu et al. 2012 §3.1, Fig. 4): a GPU buffer adds o_sg (GPU → host) to o_s and o_rd
    // (host → GPU) to o_r. Here they are the copies over the node's route between the GPU and
    // the NIC's memory node, latency + k / bottleneck; o_rgb (first-receive GPU
    // initialisation) is 0, the executor has none. With GPU-direct nothing is staged.
    let staged = !cluster.gpu_direct();
    let copy = |rank: u32, to_gpu: bool| -> Result<f64, InputError> {
        if !staged {
            return Ok(0.0);
        }
        let machine = cluster.node_machine();
        let (_, gpu) = cluster.rank_location(RankId(rank));
        let host = cluster.nic().map(|n| n.attach);
        let g = machine.gpus().get(gpu.index()).map(|g| g.memory);
        let route = match (host, g) {
            (Some(h), Some(g)) if to_gpu => machine.route(h, g),
            (Some(h), Some(g)) => machine.route(g, h),
            _ => None,
        };
        let bw = route.and_then(|r| machine.route_bottleneck_bytes_per_sec(r));
        match (route, bw) {
            (Some(r), Some(bw)) => Ok(machine.route_latency_s(r) + k / bw),
            _ => Err(InputError::new(format!(
                "rank {rank}'s GPU has no link route to the NIC's memory node: o_sg/o_rd unknown"
            ))
            .at_field("workload.from")),
        }
    };
    let on_gpu = |b: BufferSpec| b == BufferSpec::Device;
    // Forward messages go src → dst with (from, to); in a ping-pong every second one comes back.
    let n_back = if spec.pingpong { spec.repeat / 2 } else { 0 };
    let n_fwd = spec.repeat - n_back;
    let o_sg_fwd = if on_gpu(spec.from) {
        copy(spec.src, false)?
    } else {
        0.0
    };
    let o_rd_fwd = if on_gpu(spec.to) {
        copy(dst, true)?
    } else {
        0.0
    };
    let o_sg_back = if on_gpu(spec.to) {
        copy(dst, false)?
    } else {
        0.0
    };
    let o_rd_back = if on_gpu(spec.from) {
        copy(spec.src, true)?
    } else {
        0.0
    };
    let (nf, nb) = (f64::from(n_fwd), f64::from(n_back));
    let n = nf + nb;
    let gpu_s = nf * (o_sg_fwd + o_rd_fwd) + nb * (o_sg_back + o_rd_back);
    let terms = vec![
        Term::model("n·o_s (o_scn)", n * one.send_overhead_s),
        Term::model("n·(k−1)·G", n * one.transfer_s),
        Term::model("n·l", n * one.latency_s),
        Term::model("n·o_r (o_rn)", n * one.recv_overhead_s),
        Term::model("Σ o_sg + o_rd (GPU ↔ host copies)", gpu_s),
    ];
    let model_s = n * one.total_s + gpu_s;
    let case = match (spec.from, spec.to) {
        (BufferSpec::Host, BufferSpec::Host) => "A, CPU → CPU",
        (BufferSpec::Host, BufferSpec::Device) => "B, CPU → GPU",
        (BufferSpec::Device, BufferSpec::Host) => "C, GPU → CPU",
        (BufferSpec::Device, BufferSpec::Device) => "D, GPU → GPU",
    };
    let mut notes = vec![
        "each message is sent after the previous one is delivered, so the model is n \
         single-message times (no LogGP pipelining)"
            .into(),
    ];
    if gpu_s > 0.0 {
        notes.push(format!(
            "o_sg, o_rd: copies over the node's GPU ↔ host route (latency + k/bandwidth); \
             plain LogGP without them would predict {:.6e} s",
            n * one.total_s
        ));
    }
    let mut violations = Vec::new();
    if !staged && (on_gpu(spec.from) || on_gpu(spec.to)) {
        violations.push(Violation {
            assumption: "G is the network's gap per byte (Liu et al. 2012 eq. 1)".into(),
            detail: "GPU-direct: one flow from GPU memory through the NIC, whose rate may be set \
                     by the PCIe link rather than the NIC"
                .into(),
        });
    }
    Ok(Outcome::Compared(Box::new(Comparison {
        model: format!("mHLogGP case {case} (Liu et al. 2012 eq. 1, §3.1 Fig. 4)"),
        configuration: format!(
            "{} message(s){} of {k} bytes, rank {} ({ns}) → rank {dst} ({nd}); l = {:.3e} s, \
             G = {:.3e} s/B, o_s = {:.3e} s, o_r = {:.3e} s",
            spec.repeat,
            if spec.pingpong { " ping-pong" } else { "" },
            spec.src,
            params.latency_s,
            params.gap_per_byte_s,
            params.send_overhead_s,
            params.recv_overhead_s
        ),
        terms,
        model_s,
        simulated_s: report.makespan_s,
        relative_difference: relative_difference(report.makespan_s, model_s),
        notes,
        violations,
        report,
    })))
}

fn bcast_check(
    spec: &hetsim_mpi::workload::BcastSpec,
    cluster: &Cluster,
) -> Result<Outcome, Error> {
    use hetsim_analytic::loggp::{BcastAlgorithm, BcastParams, bcast_cost};
    use hetsim_mpi::workload::BufferSpec;
    use hetsim_platform::cluster::Switch;
    let program = spec.generate(cluster)?;
    let group = spec.group(cluster)?;
    let k = spec.bytes.0;
    let procs = group.len() as u64;
    let algorithm = spec.chosen_algorithm(group.len());
    let nodes: Vec<hetsim_platform::cluster::NodeId> =
        group.iter().map(|r| cluster.rank_location(*r).0).collect();
    let root_node = cluster.rank_location(RankId(spec.root)).0;
    let other = nodes.iter().copied().find(|n| *n != root_node);
    let model_name = model_name("bcast").to_string();
    let (Some(other), Some(_)) = (other, cluster.nic()) else {
        return Ok(Outcome::NotComparable {
            kind: "bcast".into(),
            model: model_name,
            reason: "all ranks of the broadcast are on one node: the model's l and G are the \
                     NIC's"
                .into(),
        });
    };
    let Some(p) = loggp_params(cluster, root_node, other, k) else {
        unreachable!("a cluster with a NIC has LogGP parameters")
    };
    let report = simulate(&program, cluster)?;
    let cost = bcast_cost(
        &BcastParams {
            procs,
            bytes: k,
            overhead_s: p.send_overhead_s + p.recv_overhead_s,
            gap_per_byte_s: p.gap_per_byte_s,
            latency_s: p.latency_s,
        },
        algorithm,
    )?;
    let mut violations = Vec::new();
    let mut distinct = nodes.clone();
    distinct.sort();
    distinct.dedup();
    if distinct.len() < nodes.len() {
        violations.push(Violation {
            assumption:
                "P processes on P nodes, every step crossing the network (Liu et al. 2012 §3.2)"
                    .into(),
            detail: format!(
                "{} ranks on {} nodes: ranks of one node share its NIC and exchange data inside \
                 the node, which the model prices as network steps",
                nodes.len(),
                distinct.len()
            ),
        });
    }
    let device_ends = if spec.buffer == BufferSpec::Device {
        2
    } else {
        0
    };
    violations.extend(staging_violation(cluster, device_ends));
    if let Switch::FatTree {
        nodes_per_leaf,
        oversubscription,
        ..
    } = cluster.switch()
    {
        let leaves = {
            let mut l: Vec<u32> = distinct
                .iter()
                .map(|n| n.0 / (*nodes_per_leaf).max(1))
                .collect();
            l.dedup();
            l.len()
        };
        if leaves > 1 && *oversubscription > 1.0 {
            violations.push(Violation {
                assumption: "no contention in the network (Liu et al. 2012 §3.2)".into(),
                detail: format!(
                    "the group spans {leaves} leaf switches with {oversubscription}:1 \
                     oversubscribed uplinks: concurrent steps contend in the switch"
                ),
            });
        }
    }
    if algorithm == BcastAlgorithm::Binomial
        && procs > 2
        && k < hetsim_mpi::collective::EAGER_BELOW_BYTES
    {
        violations.push(Violation {
            assumption: "a parent sends to its children one after the other, each step costing \
                         o + k·G + l (Liu et al. 2012 §3.2)"
                .into(),
            detail: format!(
                "{k} B is below the eager limit of {} B: a parent's sends leave together and \
                 share its NIC",
                hetsim_mpi::collective::EAGER_BELOW_BYTES
            ),
        });
    }
    if algorithm != BcastAlgorithm::Binomial {
        violations.push(Violation {
            assumption:
                "every step pays the overhead o(k) of the whole message (Liu et al. 2012 §3.2)"
                    .into(),
            detail: format!(
                "{algorithm:?}: the simulated scatter and allgather send pieces of about k/P \
                 bytes, each paying o_s and o_r at its own size"
            ),
        });
    }
    Ok(Outcome::Compared(Box::new(Comparison {
        model: format!(
            "{algorithm:?} broadcast (Liu et al. 2012 §3.2, eq. 3 for the binomial tree)"
        ),
        configuration: format!(
            "P = {procs} ranks, k = {k} bytes, root rank {}; o = o_s + o_r = {:.3e} s, \
             G = {:.3e} s/B, l = {:.3e} s",
            spec.root,
            p.send_overhead_s + p.recv_overhead_s,
            p.gap_per_byte_s,
            p.latency_s
        ),
        terms: vec![
            Term::model("overheads", cost.overhead_s),
            Term::model("network (k·G + l per step)", cost.network_s),
        ],
        model_s: cost.total_s,
        simulated_s: report.makespan_s,
        relative_difference: relative_difference(report.makespan_s, cost.total_s),
        notes: Vec::new(),
        violations,
        report,
    })))
}

/// The MMGP assumptions an offload scenario breaks (Blagojevic et al. 2008 §3.1: data streamed and overlapped
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
                    costs only O_offload (Blagojevic et al. 2008 §3.1)";
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
                         (Blagojevic et al. 2008 eq. 2)"
                .into(),
            detail: "the cluster's MPI overheads o_s/o_r are charged per copy as well, o_s on \
                     the HPU's CPU"
                .into(),
        });
    }
    // Copies from host memory to the APUs of node 0: do several cross one link (in one
    // direction)? A shared uplink serialises them, which eq. 11 cannot see.
    let ranks: Vec<u32> = (0..used.min(per_node) as u32).collect();
    for (name, apus) in shared_host_links(cluster, &ranks) {
        out.push(Violation {
            assumption:
                "each APU's traffic is independent of the others' (Blagojevic et al. 2008 §3.1)"
                    .into(),
            detail: format!(
                "{} APUs (ranks {}) receive their copies over the shared link `{name}`",
                apus.len(),
                list(&apus)
            ),
        });
    }
    Ok(out)
}

/// The links of node 0's machine that the host → GPU routes of several of `ranks` (ranks of
/// node 0) cross in the same direction, with those ranks: a shared uplink (a PCIe switch, a
/// memory interface) that their transfers contend for. Fatpipe links and model routes are not
/// shared.
pub fn shared_host_links(cluster: &Cluster, ranks: &[u32]) -> Vec<(String, Vec<u32>)> {
    let machine = cluster.node_machine();
    let host = match cluster.nic() {
        Some(nic) => nic.attach,
        None => match machine.cpus().first() {
            Some(c) => c.memory,
            None => return Vec::new(),
        },
    };
    let mut users: Vec<(LinkUse, Vec<u32>)> = Vec::new();
    for &r in ranks {
        let (_, gpu) = cluster.rank_location(RankId(r));
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
                .is_some_and(|l| l.sharing != LinkPolicy::Fatpipe);
            if !shared {
                continue;
            }
            let key = (hop.link, hop.direction);
            match users.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => {
                    if !v.contains(&r) {
                        v.push(r)
                    }
                }
                None => users.push((key, vec![r])),
            }
        }
    }
    users
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|((link, _), v)| {
            let name = machine.link(link).map_or("?", |l| l.name.as_str());
            (name.to_string(), v)
        })
        .collect()
}

fn stencil_check(
    spec: &hetsim_mpi::workload::StencilSpec,
    cluster: &Cluster,
) -> Result<Outcome, Error> {
    use hetsim_analytic::stencil::{BandwidthModel, StencilParams, stencil};
    use hetsim_mpi::workload::StencilMethod;
    let machine = cluster.node_machine();
    let layout = spec.layout_on(cluster)?;
    let program = spec.generate(cluster)?;
    let r = u64::from(cluster.ranks());
    let g = u64::from(cluster.gpus_per_node());
    // B_PCIe(s) from node 0's route host memory → GPU 0: bottleneck bandwidth and latency.
    let host = cluster
        .nic()
        .map(|n| n.attach)
        .or_else(|| machine.cpus().first().map(|c| c.memory));
    let route = host.and_then(|h| {
        machine
            .gpus()
            .first()
            .and_then(|g0| machine.route(h, g0.memory))
    });
    let pcie = route.and_then(|rt| {
        machine
            .route_bottleneck_bytes_per_sec(rt)
            .map(|b| BandwidthModel {
                peak_bytes_per_sec: b,
                latency_s: machine.route_latency_s(rt),
            })
    });
    let Some(pcie) = pcie else {
        return Ok(Outcome::NotComparable {
            kind: "stencil".into(),
            model: model_name("stencil").into(),
            reason: "the node machine has no link route from host memory to GPU 0 (a transfer \
                     model route or none): B_PCIe(s) is unknown"
                .into(),
        });
    };
    let inter_node = match (
        cluster.nic(),
        loggp_params(
            cluster,
            hetsim_platform::cluster::NodeId(0),
            hetsim_platform::cluster::NodeId(1.min(cluster.nodes() - 1)),
            1.0,
        ),
    ) {
        (Some(nic), Some(p)) => BandwidthModel {
            peak_bytes_per_sec: nic.bandwidth_bytes_per_sec,
            latency_s: p.latency_s,
        },
        // One node: the inter-node term is 0 whenever R <= g; any positive rate will do.
        _ => BandwidthModel {
            peak_bytes_per_sec: 1.0,
            latency_s: 0.0,
        },
    };
    // The subdomain with the most halo bytes sets the step (an interior one on large grids).
    let mut worst: Vec<f64> = Vec::new();
    let mut worst_rank = RankId(0);
    for rank in 0..cluster.ranks() {
        let rid = RankId(rank);
        let msgs: Vec<f64> = layout
            .neighbours(rid)
            .iter()
            .map(|(f, _)| layout.halo_bytes(rid, *f))
            .collect();
        if msgs.iter().sum::<f64>() > worst.iter().sum::<f64>() {
            worst = msgs;
            worst_rank = rid;
        }
    }
    let (nx, ny, nz) = layout.grid;
    let points = nx as f64 * ny as f64 * nz as f64;
    let single =
        layout.flops_per_point / layout.secs_per_point.first().copied().unwrap_or(f64::NAN);
    let params = StencilParams {
        flops_per_subdomain: layout.flops_per_point * points / r as f64,
        single_gpu_flops_per_sec: single,
        subdomains: r,
        gpus_per_node: g,
        messages_bytes: worst.clone(),
        inter_node,
        pcie,
    };
    let pred = stencil(&params)?;
    let report = simulate(&program, cluster)?;
    let steps = spec.steps as f64;
    let (step_s, eq) = match spec.method {
        StencilMethod::NonOverlapping => (pred.non_overlap_step_s, "eq. 2, non-overlapping"),
        StencilMethod::Overlapping => (pred.overlap_step_s, "eq. 4, overlapping"),
    };
    let model_s = steps * step_s;
    let mut violations = Vec::new();
    let node0: Vec<u32> = (0..cluster.gpus_per_node().min(cluster.ranks())).collect();
    for (name, gpus) in shared_host_links(cluster, &node0) {
        violations.push(Violation {
            assumption:
                "each message crosses PCIe at B_PCIe(s) of its own (Shimokawabe et al. 2013 eq. 3 \
                         charges 2s/B_PCIe per message, no sharing between GPUs)"
                    .into(),
            detail: format!(
                "{} GPUs of a node (ranks {}) share the link `{name}` to host memory: their \
                 halo copies contend, which makes the simulation slower",
                gpus.len(),
                list(&gpus)
            ),
        });
    }
    let neighbours = layout.neighbours(worst_rank);
    let own_node = cluster.rank_location(worst_rank).0;
    let local = neighbours
        .iter()
        .filter(|(_, n)| cluster.rank_location(*n).0 == own_node)
        .count();
    if r > g && local > 0 {
        violations.push(Violation {
            assumption:
                "every halo message crosses the network (Shimokawabe et al. 2013 eq. 3, 2g·s/B_IB)"
                    .into(),
            detail: format!(
                "{local} of the {} messages of the busiest subdomain ({worst_rank}) go to a GPU of \
                 the same node and never reach the NIC: the simulation is faster",
                neighbours.len()
            ),
        });
    }
    if r > g && cluster.nic().is_some() {
        violations.push(Violation {
            assumption: "sends and receives share the node's link (Shimokawabe et al. 2013 eq. 3: B_IB/2g per \
                         GPU)"
                .into(),
            detail: "the cluster's NIC links are full duplex (an up and a down link): the \
                     simulation is faster"
                .into(),
        });
    }
    if neighbours.len() > 1 && spec.exchange == hetsim_mpi::workload::StencilExchange::Concurrent {
        violations.push(Violation {
            assumption: "a subdomain's messages follow one another (Shimokawabe et al. 2013 eq. 3 sums them)"
                .into(),
            detail: format!(
                "the {} messages of a subdomain are in flight together: their latencies and \
                 their PCIe and network steps overlap, which makes the simulation faster unless \
                 they contend on a shared link",
                neighbours.len()
            ),
        });
    }
    if let Some(nic) = cluster.nic()
        && nic.count > 1
    {
        violations.push(Violation {
            assumption: "the g GPUs of a node share one network link (Shimokawabe et al. 2013 eq. 3, 2g/B_IB)"
                .into(),
            detail: format!(
                "each node has {} NIC links: fewer GPUs share each, the simulation is faster",
                nic.count
            ),
        });
    }
    if let hetsim_platform::cluster::Switch::FatTree {
        oversubscription, ..
    } = cluster.switch()
        && *oversubscription > 1.0
        && cluster.nodes() > 1
    {
        violations.push(Violation {
            assumption: "no contention in the switch (Shimokawabe et al. 2013 eq. 3)".into(),
            detail: format!(
                "fat tree with {oversubscription}:1 oversubscribed leaf uplinks: halo traffic \
                 between leaves contends there"
            ),
        });
    }
    let mut notes = vec![format!(
        "Improved Roofline / calibrated single-GPU rate P = {:.4e} flop/s; B_PCIe = {:.4e} B/s + \
         {:.3e} s; B_IB = {:.4e} B/s + {:.3e} s",
        single,
        pcie.peak_bytes_per_sec,
        pcie.latency_s,
        inter_node.peak_bytes_per_sec,
        inter_node.latency_s
    )];
    if spec.method == StencilMethod::Overlapping {
        notes.push(
            "eq. 4 neglects the boundary kernels that run before the messages leave; the \
             simulation runs them"
                .into(),
        );
    }
    Ok(Outcome::Compared(Box::new(Comparison {
        model: format!(
            "stencil scalability model (Shimokawabe et al. 2013 {eq}) with the Improved Roofline (eq. 1)"
        ),
        configuration: format!(
            "{nx}×{ny}×{nz} grid on {r} GPUs ({} per node, {}×{} subdomains), {} step(s); \
             messages of the busiest subdomain: {:?} bytes",
            g, layout.py, layout.pz, spec.steps, worst
        ),
        terms: vec![
            Term {
                name: "steps·V/P (compute)".into(),
                model_s: steps * pred.compute_s,
                simulated_s: crate::programs::busy_by_rank(&report)
                    .0
                    .into_iter()
                    .reduce(f64::max),
            },
            Term::model("steps·Σ s·2g/B_IB(s) (network)", steps * pred.inter_node_s),
            Term::model("steps·Σ 2s/B_PCIe(s) (PCIe)", steps * pred.pcie_s),
        ],
        model_s,
        simulated_s: report.makespan_s,
        relative_difference: relative_difference(report.makespan_s, model_s),
        notes,
        violations,
        report,
    })))
}

fn hpl_check(spec: &hetsim_mpi::workload::HplSpec, cluster: &Cluster) -> Result<Outcome, Error> {
    use hetsim_analytic::hpl::{HplParams, MclHplParams, MclLayer, hpl, mcl_hpl};
    let plan = spec.plan(cluster)?;
    let nodes = cluster.nodes();
    let p = loggp_params(
        cluster,
        hetsim_platform::cluster::NodeId(0),
        hetsim_platform::cluster::NodeId(1.min(nodes.saturating_sub(1))),
        1.0,
    );
    let (Some(net), Some(nic)) = (p, cluster.nic()) else {
        return Ok(Outcome::NotComparable {
            kind: "hpl".into(),
            model: model_name("hpl").into(),
            reason: "one machine without network: HPL's α and β are the interconnect's".into(),
        });
    };
    let program = spec.generate(cluster)?;
    // γ: one GPU's DGEMM rate on the trailing updates, whose smallest dimension is NB (the
    // workload's rate model at s = NB).
    let gamma = plan.gpu.rate_flops_per_sec(plan.nb as f64);
    let (pp, qq) = (u64::from(plan.p), u64::from(plan.q));
    let alpha = net.latency_s + cluster.overheads().send_s(8.0) + cluster.overheads().recv_s(8.0);
    let base = hpl(&HplParams {
        n: plan.n,
        nb: plan.nb,
        p: pp,
        q: qq,
        gamma_flops_per_sec: gamma,
        alpha_s: alpha,
        bandwidth_bytes_per_sec: nic.bandwidth_bytes_per_sec,
    })?;
    // MCL-HPL with two layers: each GPU with its PCIe route to host memory (1 × 1), then the
    // interconnect over the whole P × Q grid.
    let machine = cluster.node_machine();
    let pcie = nic_host_gpu0(cluster).and_then(|rt| {
        machine
            .route_bottleneck_bytes_per_sec(rt)
            .map(|b| (machine.route_latency_s(rt), b))
    });
    let mcl = match pcie {
        Some((lat, bw)) => Some(mcl_hpl(&MclHplParams {
            n: plan.n,
            nb: plan.nb,
            p: pp,
            q: qq,
            gamma_flops_per_sec: gamma,
            layers: vec![
                MclLayer {
                    name: "pcie".into(),
                    alpha_s: lat,
                    bandwidth_bytes_per_sec: bw,
                    grid_p: 1,
                    grid_q: 1,
                },
                MclLayer {
                    name: "network".into(),
                    alpha_s: alpha,
                    bandwidth_bytes_per_sec: nic.bandwidth_bytes_per_sec,
                    grid_p: pp,
                    grid_q: qq,
                },
            ],
        })?),
        None => None,
    };
    let report = simulate(&program, cluster)?;
    let mut violations = Vec::new();
    if plan.gpu.s_half > 0.0 {
        violations.push(Violation {
            assumption: "a constant per-process rate γ (HPL model)".into(),
            detail: format!(
                "the GPU DGEMM rate grows with the update size (s_half = {} elements): updates \
                 smaller than NB run below γ, larger ones above",
                plan.gpu.s_half
            ),
        });
    }
    if plan.cpu.is_some() {
        violations.push(Violation {
            assumption: "all 2N³/3 flops at γ (HPL model)".into(),
            detail: "the panel factorisation runs on the host CPU at its own (lower) rate: the \
                     simulation is slower"
                .into(),
        });
    }
    if spec.lookahead > 0 {
        violations.push(Violation {
            assumption: "computation and communication add up (HPL model: T = compute + β·… + \
                         α·…)"
                .into(),
            detail: format!(
                "look-ahead depth {}: the next panel's factorisation and broadcast overlap the \
                 update: the simulation is faster",
                spec.lookahead
            ),
        });
    }
    if pp * qq == 1 {
        violations.push(Violation {
            assumption: "the processes exchange panels and rows over the network (HPL model's \
                         β and α terms)"
                .into(),
            detail: "a single process sends nothing, but β·N²(3P+Q)/(2PQ) and the α term are \
                     not zero for P = Q = 1: the simulation is faster"
                .into(),
        });
    }
    if cluster.gpus_per_node() > 1 && nodes > 1 {
        violations.push(Violation {
            assumption: "every process has its own link to the network (HPL model)".into(),
            detail: format!(
                "{} GPUs (ranks) per node share the node's NIC, and neighbours on one node talk \
                 over the node's host memory",
                cluster.gpus_per_node()
            ),
        });
    }
    if !cluster.gpu_direct() && pp * qq > 1 {
        violations.push(Violation {
            assumption: "one network layer (HPL model; MCL-HPL adds the PCIe layer)".into(),
            detail: "GPU data is staged through host memory over PCIe for every message".into(),
        });
    }
    let mut notes = vec![format!(
        "γ = {:.4e} flop/s (GPU DGEMM at s = NB), α = {:.3e} s (latency + o_s + o_r of a word), \
         bandwidth {:.4e} B/s",
        gamma, alpha, nic.bandwidth_bytes_per_sec
    )];
    if let Some(m) = &mcl {
        notes.push(format!(
            "MCL-HPL (Kim et al. 2021 eqs. 17-29, layers pcie 1×1 and network {pp}×{qq}): {:.6} s, \
             difference of the simulation {:+.2} %",
            m.total_s,
            100.0 * relative_difference(report.makespan_s, m.total_s)
        ));
    }
    Ok(Outcome::Compared(Box::new(Comparison {
        model: "HPL model (HPL's scalability.html), with MCL-HPL in the notes".into(),
        configuration: format!(
            "N = {}, NB = {}, P × Q = {pp} × {qq} on {} node(s)",
            plan.n, plan.nb, nodes
        ),
        terms: vec![
            Term {
                name: "2N³/(3PQγ) (compute; simulated: busiest GPU)".into(),
                model_s: base.compute_s,
                simulated_s: crate::programs::busy_by_rank(&report)
                    .0
                    .into_iter()
                    .reduce(f64::max),
            },
            Term::model("β·N²(3P+Q)/(2PQ) (bandwidth)", base.bandwidth_s),
            Term::model("α·N((NB+1)·log P + P)/NB (latency)", base.latency_s),
        ],
        model_s: base.total_s,
        simulated_s: report.makespan_s,
        relative_difference: relative_difference(report.makespan_s, base.total_s),
        notes,
        violations,
        report,
    })))
}

/// Node 0's route from the NIC's memory node (or the first CPU's) to GPU 0.
fn nic_host_gpu0(cluster: &Cluster) -> Option<&hetsim_platform::machine::Route> {
    let machine = cluster.node_machine();
    let host = cluster
        .nic()
        .map(|n| n.attach)
        .or_else(|| machine.cpus().first().map(|c| c.memory))?;
    machine.route(host, machine.gpus().first()?.memory)
}

/// A link in one direction (`None` for a link shared by both directions).
type LinkUse = (MachineLinkId, Option<Direction>);

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
        Outcome::NotComparable {
            kind,
            model,
            reason,
        } => {
            let _ = writeln!(
                s,
                "crosscheck {scenario}: workload kind `{kind}`, model {model}\n\
                 not compared: {reason}"
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
                // Rounding noise below 1e-9 is printed as 0, not as "-0.0000".
                if c.relative_difference.abs() < 1e-9 {
                    0.0
                } else {
                    100.0 * c.relative_difference
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_platform::cluster::{Nic, NodeId, OverheadTable, Switch};
    use hetsim_platform::machine::MemNodeId;

    /// `n` GPUs; with `bus`, every host → GPU route also crosses one shared `Bus` link.
    fn node(n: usize, bus: bool) -> hetsim_platform::machine::Machine {
        let mut t = String::from(
            "[machine]\nname = \"t\"\n[[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\n\
             capacity = \"1 GiB\"\n[[cpus]]\ncount = 8\nmodel = \"c\"\nmemory = \"RAM\"\n\
             [[links]]\nname = \"Bus\"\nbandwidth = \"1 GB/s\"\n",
        );
        for i in 0..n {
            let via = if bus { "\"Bus\", " } else { "" };
            t += &format!(
                "[[memory_nodes]]\nname = \"G{i}\"\nkind = \"gpu\"\ncapacity = \"1 GiB\"\n\
                 [[gpus]]\nname = \"G{i}\"\nmodel = \"g\"\nmemory = \"G{i}\"\n\
                 [[links]]\nname = \"P{i}\"\nbandwidth = \"1 GB/s\"\nsharing = \"split-duplex\"\n\
                 [[routes]]\nsrc = \"RAM\"\ndst = \"G{i}\"\nlinks = [{via}\"P{i}_DOWN\"]\n\
                 [[routes]]\nsrc = \"G{i}\"\ndst = \"RAM\"\nlinks = [{via}\"P{i}_UP\"]\n"
            );
        }
        hetsim_platform::machine::from_str(&t, "t.toml").unwrap()
    }

    fn fat_tree(nodes: u32) -> Cluster {
        Cluster::single_node(node(1, false))
            .with_network(
                Nic {
                    bandwidth_bytes_per_sec: 2e9,
                    latency_s: 1e-6,
                    count: 1,
                    attach: MemNodeId(0),
                },
                Switch::FatTree {
                    nodes_per_leaf: 2,
                    oversubscription: 2.0,
                    latency_s: 0.25e-6,
                },
                false,
                OverheadTable::new(vec![(0.0, 2e-6, 3e-6), (1000.0, 4e-6, 5e-6)]).unwrap(),
            )
            .unwrap()
            .with_shape(nodes, 1)
            .unwrap()
    }

    #[test]
    fn loggp_parameters_by_hand() {
        let c = fat_tree(4);
        // Same leaf (nodes 0, 1): l = 1 µs + one crossing of 0.25 µs.
        let p = loggp_params(&c, NodeId(0), NodeId(1), 500.0).unwrap();
        assert!((p.latency_s - 1.25e-6).abs() < 1e-18);
        // Across the spine (nodes 0, 2): three crossings, 1.75 µs.
        let p = loggp_params(&c, NodeId(0), NodeId(2), 500.0).unwrap();
        assert!((p.latency_s - 1.75e-6).abs() < 1e-18);
        assert_eq!(p.gap_per_byte_s, 0.5e-9);
        // Overheads halfway between the rows: 3 µs and 4 µs.
        assert!((p.send_overhead_s - 3e-6).abs() < 1e-18);
        assert!((p.recv_overhead_s - 4e-6).abs() < 1e-18);
        assert_eq!(p.gap_s, 0.0);
        assert!(
            loggp_params(
                &Cluster::single_node(node(1, false)),
                NodeId(0),
                NodeId(0),
                1.0
            )
            .is_none()
        );
    }

    #[test]
    fn shared_links_are_found_only_where_routes_share_them() {
        let shared = Cluster::single_node(node(3, true));
        let found = shared_host_links(&shared, &[0, 1, 2]);
        assert_eq!(found, vec![("Bus".to_string(), vec![0, 1, 2])]);
        // One rank alone shares nothing.
        assert!(shared_host_links(&shared, &[1]).is_empty());
        let own = Cluster::single_node(node(3, false));
        assert!(shared_host_links(&own, &[0, 1, 2]).is_empty());
    }

    #[test]
    fn relative_difference_and_text() {
        assert_eq!(relative_difference(1.1, 1.0), 0.10000000000000009);
        assert_eq!(relative_difference(0.0, 0.0), 0.0);
        assert!(relative_difference(1.0, 0.0).is_infinite());
        let t = text(
            "s",
            &Outcome::NotComparable {
                kind: "matmul".into(),
                model: "none".into(),
                reason: "why".into(),
            },
        );
        assert!(t.contains("not compared: why"), "{t}");
    }

    #[test]
    fn broadcast_across_oversubscribed_leaves_is_flagged() {
        let c = fat_tree(4);
        let spec: hetsim_mpi::workload::BcastSpec =
            toml::from_str("bytes = 1024\nbuffer = \"host\"\nalgorithm = \"binomial\"\n").unwrap();
        let Outcome::Compared(cmp) = crosscheck(&ProgramWorkload::Bcast(spec), &c).unwrap() else {
            panic!("compared")
        };
        // The leaves, and (1 KiB is eager) the parents' sends leaving together.
        assert_eq!(cmp.violations.len(), 2, "{:?}", cmp.violations);
        assert!(cmp.violations[0].detail.contains("2 leaf switches"));
        assert!(cmp.violations[1].detail.contains("below the eager limit"));
    }
}
