//! Simulation against analytic model (`hetsim crosscheck`'s library): where the model's
//! assumptions hold exactly they agree within 1 %; where they differ by design, the direction
//! and its cause are shown.
//!
//! Expected values always come from `src/analytic` (code independent of the simulator) or from
//! hand derivation written next to them, never from a simulation.

use crate::common::hetsim;
use hetsim::analytic::mmgp::{MmgpParams, mmgp};
use hetsim::cluster::Cluster;
use hetsim::crosscheck::{Outcome, crosscheck, mmgp_params};
use hetsim::machine::Machine;
use hetsim::programs::simulate_program_default as run;
use hetsim::workload::{OffloadSpec, ProgramGenerator, ProgramWorkload};

/// A node with `n` accelerators. Host → accelerator routes cross the accelerator's own link
/// (`own_gbps` GB/s per direction) and, if `bus_gbps` is given, one shared `Bus` link (a shared
/// memory interface, as the Cell's MIC or a PCIe switch uplink). `gpu_driver_cores = false`:
/// the Cell's 2 PPEs drive 16 SPEs.
fn node(n: usize, own_gbps: f64, bus_gbps: Option<f64>) -> Machine {
    let mut t = String::from(
        "[machine]\nname = \"test-node\"\n[runtime]\ngpu_driver_cores = false\n\
         [[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\ncapacity = \"8 GiB\"\n\
         [[cpus]]\ncount = 2\nmodel = \"host\"\nmemory = \"RAM\"\n",
    );
    if let Some(b) = bus_gbps {
        t += &format!("[[links]]\nname = \"Bus\"\nbandwidth = \"{b} GB/s\"\n");
    }
    for i in 0..n {
        let bus = if bus_gbps.is_some() { "\"Bus\", " } else { "" };
        t += &format!(
            "[[memory_nodes]]\nname = \"A{i}\"\nkind = \"gpu\"\ncapacity = \"1 GiB\"\n\
             [[gpus]]\nname = \"A{i}\"\nmodel = \"apu\"\nmemory = \"A{i}\"\n\
             [[links]]\nname = \"L{i}\"\nbandwidth = \"{own_gbps} GB/s\"\nsharing = \"split-duplex\"\n\
             [[routes]]\nsrc = \"RAM\"\ndst = \"A{i}\"\nlinks = [{bus}\"L{i}_DOWN\"]\n\
             [[routes]]\nsrc = \"A{i}\"\ndst = \"RAM\"\nlinks = [{bus}\"L{i}_UP\"]\n"
        );
    }
    hetsim::machine::from_str(&t, "test-node.toml").expect("test node")
}

/// PBPI's MMGP parameters (Blagojevic et al. 2008 §4.1 and §4.3, `seed002_mmgp_params.csv`): T_HPU = 1.3 s,
/// T_APU = 370 s, g = 0.8 s, C_APU = 1.72 s, α_m = 1.28; O_offload = 70 ns and T_CSW = 2 µs from
/// the micro-benchmarks of §4.1; O_COL not given (0). Totals over the run, so N = 1
/// (docs/analytic.md).
fn pbpi(m: u64, p: u64) -> OffloadSpec {
    toml::from_str(&format!(
        "hpu_threads = {m}\napus_per_thread = {p}\nt_hpu = \"1.3 s\"\nt_apu = \"370 s\"\n\
         c_apu = \"1.72 s\"\no_offload = \"70 ns\"\ngap = \"0.8 s\"\nt_csw = \"2 us\"\n\
         alpha_m = 1.28\n"
    ))
    .expect("PBPI spec")
}

fn simulate(spec: &OffloadSpec, cluster: &Cluster) -> f64 {
    let program = spec.generate(cluster).expect("program");
    run(&program, cluster).expect("run").makespan_s
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b) / b
}

#[test]
fn mmgp_agrees_for_every_feasible_configuration_of_pbpi() {
    // 16 SPEs, as the QS20 of Blagojevic et al. 2008 §4; no data moves with an offload (PBPI keeps its code
    // in the local stores and the SPEs fetch their arguments themselves, §4.1), so the
    // simulated program has exactly eq. 11's terms.
    let cluster = Cluster::single_node(node(16, 25.6, None));
    let params = MmgpParams {
        t_hpu_s: 1.3,
        t_apu_s: 370.0,
        c_apu_s: 1.72,
        o_offload_s: 70e-9,
        g_s: 0.8,
        t_csw_s: 2e-6,
        o_col_s: 0.0,
        alpha_m: 1.28,
        phases: 1.0,
    };
    let mut configurations = 0;
    for m in 1..=16u64 {
        for p in 1..=16 / m {
            let spec = pbpi(m, p);
            // The parameters the cross-check derives from the workload are the paper's.
            assert_eq!(mmgp_params(&spec).unwrap(), params);
            let model = mmgp(&params, m, p).unwrap().total_s;
            let sim = simulate(&spec, &cluster);
            assert!(
                rel(sim, model).abs() < 0.01,
                "PBPI (m, p) = ({m}, {p}): simulated {sim} s, MMGP {model} s"
            );
            configurations += 1;
        }
    }
    // Every feasible (m, p) with m·p ≤ 16 (as Fig. 7 of Blagojevic et al. 2008): Σ_m ⌊16/m⌋ = 50.
    assert_eq!(configurations, 50);
    // Spot value by hand: (4, 4) = 1.28·1.3 + 370/16 + 1.72 + 70e-9 + 2e-6 + 4·0.8 = 29.70900207
    let sim = simulate(&pbpi(4, 4), &cluster);
    assert!(rel(sim, 29.709_002_07).abs() < 1e-9, "{sim}");
}

#[test]
fn mmgp_agrees_with_per_phase_terms_over_many_phases() {
    // N = 8 phases with a global synchronisation O_COL = 5 ms per phase: eq. 11 multiplies
    // O_offload, T_CSW, O_COL and p·g by N.
    let cluster = Cluster::single_node(node(16, 25.6, None));
    for (m, p) in [(1, 1), (2, 8), (4, 4), (16, 1), (3, 5)] {
        let mut spec = pbpi(m, p);
        spec.phases = 8;
        spec.o_col = Some(Box::new(toml::from_str::<Q>("v = \"5 ms\"").unwrap().v));
        let params = mmgp_params(&spec).unwrap();
        assert_eq!(params.phases, 8.0);
        assert_eq!(params.o_col_s, 5e-3);
        let model = mmgp(&params, m, p).unwrap().total_s;
        let sim = simulate(&spec, &cluster);
        assert!(
            rel(sim, model).abs() < 0.01,
            "({m}, {p}) over 8 phases: simulated {sim} s, MMGP {model} s"
        );
    }
}

#[derive(serde::Deserialize)]
struct Q {
    v: hetsim::machine::format::RawQuantity,
}

#[test]
fn offload_copies_over_a_shared_bus_make_the_simulation_slower_than_mmgp() {
    // Differs by design. MMGP assumes the offloaded data is streamed and hidden behind APU
    // computation (Blagojevic et al. 2008 §3.1): an offload costs O_offload only. Here every offload first
    // copies 64 MiB from host memory to its APU, and the 16 APUs' routes all cross one shared
    // 25.6 GB/s `Bus` (their own links are 100 GB/s). With (m, p) = (16, 1) all 16 offloads
    // start together, after O_offload + g. All 16 copies (thread 0's first APU is rank 0,
    // the HPU itself, but its copy still goes host memory → GPU memory) share the bus max-min
    // fairly (each gets 25.6/16 GB/s; the own links never limit) and all end at 16·S/B_bus. The
    // APU kernels start then, so the simulation is slower than eq. 11 by exactly
    // 16 × 67108864 B / 25.6e9 B/s = 0.04194304 s.
    let cluster = Cluster::single_node(node(16, 100.0, Some(25.6)));
    let mut spec = pbpi(16, 1);
    spec.offload_bytes = Some(Box::new(toml::from_str::<Q>("v = \"64 MiB\"").unwrap().v));
    let model = mmgp(&mmgp_params(&spec).unwrap(), 16, 1).unwrap().total_s;
    let sim = simulate(&spec, &cluster);
    assert!(
        sim > model,
        "simulated {sim} s should exceed MMGP's {model} s"
    );
    let extra = 16.0 * 67_108_864.0 / 25.6e9;
    assert!(
        ((sim - model) - extra).abs() < 1e-9,
        "excess {} s, expected {extra} s",
        sim - model
    );
    // The cross-check names both broken assumptions: the copies, and the shared bus.
    let Outcome::Compared(c) = crosscheck(&ProgramWorkload::Offload(spec), &cluster).unwrap()
    else {
        panic!("offload must be compared")
    };
    assert!(c.relative_difference > 0.0);
    assert!(
        c.violations
            .iter()
            .any(|v| v.detail.contains("copies 67108864 bytes")),
        "{:?}",
        c.violations
    );
    assert!(
        c.violations
            .iter()
            .any(|v| v.detail.contains("16 APUs") && v.detail.contains("`Bus`")),
        "{:?}",
        c.violations
    );
}

#[test]
fn no_violation_is_reported_when_mmgp_holds() {
    let cluster = Cluster::single_node(node(16, 25.6, Some(25.6)));
    let Outcome::Compared(c) = crosscheck(&ProgramWorkload::Offload(pbpi(4, 4)), &cluster).unwrap()
    else {
        panic!("offload must be compared")
    };
    // No data moves, so the shared bus is irrelevant.
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    assert!(c.relative_difference.abs() < 0.01);
    // The model's best configuration on 16 APUs is (16, 1) (tests/integration/analytic_papers.rs).
    assert!(c.notes[0].contains("(m, p) = (16, 1)"), "{}", c.notes[0]);
}

// ---------------------------------------------------------------------------------------------
// LogGP (Liu et al. 2012 eq. 1) and the binomial broadcast (Liu et al. 2012 eq. 3) against messages and
// broadcasts simulated between nodes joined by one NIC link each and a crossbar.

use hetsim::analytic::loggp::{BcastAlgorithm, BcastParams, bcast_cost, loggp_p2p};
use hetsim::cluster::{Nic, NodeId, OverheadTable, Switch};
use hetsim::crosscheck::loggp_params;
use hetsim::machine::MemNodeId;
use hetsim::mpi::collective::{Bcast, Selection, bcast};
use hetsim::mpi::{Buffer, Message, ProgramBuilder, RankId};

/// Test network figures (not from a paper): NIC 3.2 GB/s and 1.5 µs, crossbar 0.1 µs.
const NIC_BW: f64 = 3.2e9;
const NIC_LAT: f64 = 1.5e-6;
const SW_LAT: f64 = 0.1e-6;

/// Liu et al. 2012 Table 1's host send and receive overheads (o_scn, o_rn) by size, from the
/// validation CSV (microseconds), as a cluster `[overheads]` table.
fn seed000_overheads() -> OverheadTable {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/analytic/seed000_p2p_overheads_us.csv"
    ))
    .unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (b, s, r) = (col("message_bytes"), col("oscn"), col("orn"));
    let rows = lines
        .map(|l| {
            let f: Vec<f64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            (f[b], f[s] * 1e-6, f[r] * 1e-6)
        })
        .collect();
    OverheadTable::new(rows).unwrap()
}

/// `nodes` copies of `node` (using `gpus` GPUs each) behind one NIC on host memory
/// (`nic_bw` B/s, `nic_lat` s) and a crossbar of latency `sw_lat`, without GPU-direct.
fn crossbar(
    node: Machine,
    (nic_bw, nic_lat, sw_lat): (f64, f64, f64),
    overheads: OverheadTable,
    nodes: u32,
    gpus: u32,
) -> Cluster {
    Cluster::single_node(node)
        .with_network(
            Nic {
                bandwidth_bytes_per_sec: nic_bw,
                latency_s: nic_lat,
                count: 1,
                attach: MemNodeId(0),
            },
            Switch::Crossbar { latency_s: sw_lat },
            false,
            overheads,
        )
        .unwrap()
        .with_shape(nodes, gpus)
        .unwrap()
}

fn network(nodes: u32) -> Cluster {
    let nic = (NIC_BW, NIC_LAT, SW_LAT);
    crossbar(node(1, 6.0, None), nic, seed000_overheads(), nodes, 1)
}

fn one_message(cluster: &Cluster, m: Message) -> f64 {
    let mut b = ProgramBuilder::new(cluster.ranks());
    b.message(m, &[]);
    run(&b.build(), cluster).unwrap().makespan_s
}

#[test]
fn loggp_point_to_point_agrees_from_1_byte_to_256_megabytes() {
    // Host to host between two nodes: LogGP's assumptions hold (one message, nothing else on
    // the network, no intra-node step). The model differs from the fluid network only in how
    // it counts the first byte: (k − 1)·G instead of k/B, i.e. by G = 0.31 ns.
    let cluster = network(2);
    let mut sizes: Vec<f64> = (0..=28).step_by(2).map(|e| f64::from(1u32 << e)).collect();
    sizes.extend([1000.0, 1e6, 12_345_678.0]);
    for k in sizes {
        let params = loggp_params(&cluster, NodeId(0), NodeId(1), k).unwrap();
        let model = loggp_p2p(&params, k, 1).unwrap().total_s;
        let sim = one_message(&cluster, Message::host(RankId(0), RankId(1), k));
        assert!(
            rel(sim, model).abs() < 0.01,
            "{k} B: simulated {sim} s, LogGP {model} s"
        );
    }
    // The mapping itself, by hand: l = 1.5 + 0.1 µs; G = 1/3.2e9; o_s, o_r = Table 1's o_scn,
    // o_rn at 1 B (4 and 3 µs).
    let p = loggp_params(&cluster, NodeId(0), NodeId(1), 1.0).unwrap();
    assert!((p.latency_s - 1.6e-6).abs() < 1e-18);
    assert_eq!(p.gap_per_byte_s, 1.0 / 3.2e9);
    assert!((p.send_overhead_s - 4e-6).abs() < 1e-18);
    assert!((p.recv_overhead_s - 3e-6).abs() < 1e-18);
}

#[test]
fn gpu_to_gpu_messages_are_slower_than_loggp_by_the_two_pcie_steps() {
    // Differs by design: LogGP (and eq. 1) has one network; a GPU-to-GPU message between nodes
    // without GPU-direct is staged through host memory in three store-and-forward steps
    // (docs/mpi.md). mHLogGP folds the PCIe steps into its o_sg/o_rd overheads; plain LogGP with
    // the NIC's G does not see them. Excess by hand: two PCIe copies of k bytes at 6 GB/s (no
    // latency on the test node's links), plus the G LogGP leaves out for the first byte:
    // 2·k/6e9 + 1/3.2e9.
    let cluster = network(2);
    for k in [4096.0, 1e6, 64e6] {
        let params = loggp_params(&cluster, NodeId(0), NodeId(1), k).unwrap();
        let model = loggp_p2p(&params, k, 1).unwrap().total_s;
        let sim = one_message(&cluster, Message::device(RankId(0), RankId(1), k));
        assert!(sim > model);
        let excess = 2.0 * k / 6e9 + 1.0 / NIC_BW;
        assert!(
            ((sim - model) - excess).abs() < 1e-9 * sim,
            "{k} B: excess {} s, expected {excess} s",
            sim - model
        );
    }
}

#[test]
fn binomial_broadcast_agrees_on_2_to_8_nodes() {
    // One rank per node, host buffers, the binomial tree forced (MPICH would switch to
    // scatter + allgather for large messages on 8 nodes): Liu et al. 2012 eq. 3,
    // ⌈lg P⌉·(o + k·G + l) with o = o_s + o_r, which the simulated tree matches when every
    // rank's sends are sequential (from 64 KiB, rendezvous: a send returns when delivered) and
    // each step's messages use distinct NIC links (no contention).
    //
    // Below 64 KiB sends are eager: a parent's sends leave one o_s apart on its progress thread
    // (o_s > k·G here, so they do not overlap on its NIC), and the child of its j-th send holds
    // the data at parent + j·o_s + k·G + l + o_r. On a power of two the last rank's path takes
    // every parent's first send, ⌈lg P⌉·(o_s + k·G + l + o_r): eq. 3 again. Otherwise, by
    // hand: P = 3, rank 1 is the root's second send, 2·o_s + (k·G + l + o_r); P = 5, 6, 7, the
    // root's second send then its child's first (rank 3) or the root's third (rank 1),
    // 3·o_s + 2·(k·G + l + o_r).
    for nodes in 2..=8u32 {
        let cluster = network(nodes);
        for k in [8.0, 1024.0, 65536.0, 4_194_304.0] {
            let group: Vec<RankId> = (0..nodes).map(RankId).collect();
            let mut b = ProgramBuilder::new(nodes);
            let spec = Bcast {
                group: &group,
                root: 0,
                bytes: k,
                buffer: Buffer::Host,
                algorithm: Selection::Forced(BcastAlgorithm::Binomial),
            };
            bcast(&mut b, &spec, &vec![None; nodes as usize]);
            let sim = run(&b.build(), &cluster).unwrap().makespan_s;
            let p = loggp_params(&cluster, NodeId(0), NodeId(1), k).unwrap();
            let model = bcast_cost(
                &BcastParams {
                    procs: u64::from(nodes),
                    bytes: k,
                    overhead_s: p.send_overhead_s + p.recv_overhead_s,
                    gap_per_byte_s: p.gap_per_byte_s,
                    latency_s: p.latency_s,
                },
                BcastAlgorithm::Binomial,
            )
            .unwrap()
            .total_s;
            let hop = k * p.gap_per_byte_s + p.latency_s + p.recv_overhead_s;
            let expect = match nodes {
                _ if k >= 65536.0 || nodes.is_power_of_two() => model,
                3 => 2.0 * p.send_overhead_s + hop,
                _ => 3.0 * p.send_overhead_s + 2.0 * hop,
            };
            assert!(
                rel(sim, expect).abs() < 0.01,
                "{nodes} nodes, {k} B: simulated {sim} s, expected {expect} s (eq. 3 {model} s)"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `hetsim crosscheck` end to end.

#[test]
fn cli_compares_the_bundled_pbpi_scenario() {
    let out = hetsim(&["crosscheck", "scenarios/offload-pbpi.toml", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["crosscheck"];
    assert_eq!(c["outcome"], "compared");
    // (4, 4) by hand: 1.28·1.3 + 370/16 + 1.72 + 70e-9 + 2e-6 + 4·0.8 = 29.70900207 s
    let model = c["model_s"].as_f64().unwrap();
    assert!(rel(model, 29.709_002_07).abs() < 1e-12, "{model}");
    assert!(c["relative_difference"].as_f64().unwrap().abs() < 0.01);
    assert_eq!(c["violations"].as_array().unwrap().len(), 0);
    // The same run twice prints the same bytes.
    let again = hetsim(&["crosscheck", "scenarios/offload-pbpi.toml", "--json"]);
    assert_eq!(out.stdout, again.stdout);
    // --set reaches the workload; a copy per offload is reported as a violation.
    let out = hetsim(&[
        "crosscheck",
        "scenarios/offload-pbpi.toml",
        "--set",
        "workload.offload_bytes=\"64 KiB\"",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("assumptions violated:\n"), "{text}");
    assert!(text.contains("shared link `MIC0`"), "{text}");
}

#[test]
fn cli_bad_inputs_exit_2_with_their_own_messages() {
    let err = |args: &[&str]| {
        let out = hetsim(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let e = err(&[
        "crosscheck",
        "scenarios/offload-pbpi.toml",
        "--set",
        "workload.hpu_threads=5",
    ]);
    assert!(e.contains("m·p = 5 × 4 = 20 APUs"), "{e}");
    let e = err(&["crosscheck", "scenarios/cholesky-mirage.toml"]);
    assert!(
        e.contains("task-graph workload has no analytic model"),
        "{e}"
    );
    let e = err(&[
        "crosscheck",
        "scenarios/offload-pbpi.toml",
        "--set",
        "workload.gap=\"3 parsecs\"",
    ]);
    assert!(e.contains("workload.gap"), "{e}");
    let e = err(&["crosscheck", "scenarios/no-such-file.toml"]);
    assert!(e.contains("no-such-file.toml"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Stencil (Shimokawabe et al. 2013 eqs. 2-3): where the simulation differs from the model by design.

fn stencil_cluster(bus_gbps: Option<f64>) -> Cluster {
    let nic = (5e9, 1e-6, 0.0);
    crossbar(node(2, 8.0, bus_gbps), nic, OverheadTable::default(), 2, 2)
}

fn stencil_spec() -> hetsim::workload::StencilSpec {
    // 64×256×256 points cut along z in 4 (py = 1): ranks 0-1 on node 0, 2-3 on node 1; every
    // face is 64×256 points × 4 B = 64 KiB; 10^10 points/s per GPU.
    toml::from_str(
        "nx = 64\nny = 256\nnz = 256\npy = 1\npz = 4\nhalo = 1\nflops_per_point = 13\n\
         bytes_per_boundary_point = 4\npoints_per_sec = 1e10\nsteps = 2\n\
         method = \"non-overlapping\"\n",
    )
    .unwrap()
}

fn compared(w: ProgramWorkload, c: &Cluster) -> hetsim::crosscheck::Comparison {
    match crosscheck(&w, c).unwrap() {
        Outcome::Compared(c) => *c,
        other => panic!("not compared: {other:?}"),
    }
}

#[test]
fn stencil_simulation_is_slower_than_the_model_when_gpus_share_a_pcie_uplink() {
    // Shimokawabe et al. 2013 eq. 3 charges each message 2s/B_PCIe(s): its own PCIe link, both ways. Here the
    // two GPUs of a node reach host memory through one shared 0.5 GB/s `Bus` (their own links
    // are 8 GB/s), so B_PCIe = 0.5 GB/s (the route's bottleneck). The busiest subdomain, rank 1,
    // has 2 messages: the model charges 2·2s/B. But in the simulation node 0's Bus carries
    // every copy of both GPUs in both directions: rank 0 → 1 (out and in), rank 1 → 0 (out and
    // in), rank 1 → 2 (out) and 2 → 1 (in): 6 crossings of s against the model's 4, so the
    // simulation is slower, by more than the other effects (full-duplex NIC, the same-node
    // neighbour that never uses the NIC) gain back: the PCIe term dominates (2.6e-4 s per
    // message against 1e-4 s of compute). Messages are sequential (the workload's default, as
    // eq. 3 sums them), but the two GPUs of a node exchange at the same time.
    let shared = stencil_cluster(Some(0.5));
    let c = compared(ProgramWorkload::Stencil(stencil_spec()), &shared);
    assert!(
        c.simulated_s > c.model_s,
        "simulated {} s, model {} s",
        c.simulated_s,
        c.model_s
    );
    assert!(
        c.violations
            .iter()
            .any(|v| v.detail.contains("share the link `Bus`")),
        "{:?}",
        c.violations
    );
    // The model's step by hand (eq. 2 with eq. 3): V/P = 64·256·64 points / 1e10 = 1.048576e-4
    // s; messages of rank 1: two of s = 65536 B; network 2g·s/B_IB = 4·65536/5e9 + latency
    // term 4·1e-6 (B(s) = s/(s/B0 + t0), so s·2g/B(s) = 2g(s/B0 + t0)); PCIe 2s/B = 2·65536/0.5e9.
    let net = 2.0 * (4.0 * (65536.0 / 5e9 + 1e-6));
    let pcie = 2.0 * (2.0 * 65536.0 / 0.5e9);
    let step = 64.0 * 256.0 * 64.0 / 1e10 + net + pcie;
    assert!(
        rel(c.model_s, 2.0 * step).abs() < 1e-12,
        "{} vs {}",
        c.model_s,
        2.0 * step
    );

    // Control: without the shared bus (own 8 GB/s links only) the same run is faster than the
    // model, because the NIC is full duplex (eq. 3's 2g shares B_IB between directions) and a
    // neighbour on the same node never uses the NIC (eq. 3 sends every message over it).
    let own = stencil_cluster(None);
    let c = compared(ProgramWorkload::Stencil(stencil_spec()), &own);
    assert!(
        c.simulated_s < c.model_s,
        "{} vs {}",
        c.simulated_s,
        c.model_s
    );
    assert!(
        !c.violations
            .iter()
            .any(|v| v.detail.contains("share the link"))
    );
    assert!(
        c.violations
            .iter()
            .any(|v| v.detail.contains("full duplex"))
    );
}

#[test]
fn hpl_model_parameters_come_from_the_cluster_and_the_rate_model() {
    // 4 nodes, one 8 GB/s GPU link each; NIC 3.2 GB/s, 1.5 µs; crossbar 0.1 µs; constant
    // o_s = 2 µs, o_r = 3 µs.
    let overheads = OverheadTable::new(vec![(1.0, 2e-6, 3e-6)]).unwrap();
    let cluster = crossbar(
        node(1, 8.0, None),
        (NIC_BW, NIC_LAT, SW_LAT),
        overheads,
        4,
        1,
    );
    let spec: hetsim::workload::HplSpec = toml::from_str(
        "n = 4000\nnb = 200\npanel = \"gpu\"\nlookahead = 1\n\
         gpu_dgemm = { peak = \"1 Tflop/s\", e_max = 0.8, s_half = 0 }\n",
    )
    .unwrap();
    let c = compared(ProgramWorkload::Hpl(spec), &cluster);
    // By hand, HPL's model with P × Q = 2 × 2, γ = 0.8 Tflop/s (s_half = 0: constant),
    // α = 1.5 + 0.1 + 2 + 3 µs = 6.6 µs, β = 8 B / 3.2 GB/s = 2.5 ns:
    //   compute   2·4000³/(3·4·8e11)                = 0.0133333… s
    //   bandwidth 2.5e-9 · 4000² · (3·2 + 2)/(2·4)  = 0.04 s
    //   latency   6.6e-6 · 4000 · (201·log2 2 + 2)/200 = 0.026796 s
    let want = 2.0 * 4000f64.powi(3) / (3.0 * 4.0 * 8e11) + 0.04 + 0.026796;
    assert!(
        rel(c.model_s, want).abs() < 1e-12,
        "{} vs {want}",
        c.model_s
    );
    // Look-ahead 1 and PCIe staging are named; the rate is constant and the panel on the GPU,
    // so those two are not.
    let details: Vec<&str> = c.violations.iter().map(|v| v.detail.as_str()).collect();
    assert!(
        details.iter().any(|d| d.contains("look-ahead depth 1")),
        "{details:?}"
    );
    assert!(details.iter().any(|d| d.contains("staged")), "{details:?}");
    assert!(!details.iter().any(|d| d.contains("s_half")), "{details:?}");
    assert!(
        !details.iter().any(|d| d.contains("host CPU")),
        "{details:?}"
    );
    assert!(
        c.notes.iter().any(|n| n.starts_with("MCL-HPL")),
        "{:?}",
        c.notes
    );
}

#[test]
fn mhloggp_case_d_accounts_for_the_staging_copies() {
    // mHLogGP (Liu et al. 2012 §3.1, case D) adds o_sg and o_rd to LogGP: here the cross-check takes
    // them as the PCIe copies of the node's route, k/6e9 each (no latency on the test links), so
    // the model is eq. 1 + 2k/6e9 and agrees with the staged simulation within 1 % (it differs
    // only by the first-byte G).
    let cluster = network(2);
    for k in [4096.0, 1e6, 64e6] {
        let spec: hetsim::workload::P2pSpec = toml::from_str(&format!("bytes = {k}\n")).unwrap();
        let c = compared(ProgramWorkload::P2p(spec), &cluster);
        let params = loggp_params(&cluster, NodeId(0), NodeId(1), k).unwrap();
        let want = loggp_p2p(&params, k, 1).unwrap().total_s + 2.0 * k / 6e9;
        assert!(
            rel(c.model_s, want).abs() < 1e-12,
            "{k} B: {} vs {want}",
            c.model_s
        );
        assert!(c.model.contains("case D"), "{}", c.model);
        assert!(
            c.relative_difference.abs() < 0.01,
            "{k} B: {}",
            c.relative_difference
        );
        assert!(c.violations.is_empty(), "{:?}", c.violations);
    }
}
