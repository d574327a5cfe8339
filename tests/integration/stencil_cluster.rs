//! Stencil and matmul programs on the Shimokawabe et al. 2013 / Liu et al. 2012 machines, run by the executor.
//!
//! The clusters are built here from the node files and the network figures of the cluster files
//! (calibration/*-cluster.toml), so that the tests do not depend on the cluster-file reader.

use crate::common::close;
use hetsim::cluster::{Cluster, Nic, OverheadTable, Switch};
use hetsim::machine::MemNodeId;
use hetsim::programs::simulate_program_default as run;
use hetsim::runtime::RunReport;
use hetsim::workload::{MatmulSpec, ProgramGenerator, StencilSpec};

/// TSUBAME 2.0: 3 M2050 per node, IB aligned fit B0 = 5.80 GB/s, t0 = 7.47 us (Shimokawabe et al. 2013
/// Table 1), full-bisection fat tree of 18 nodes per leaf (calibration/tsubame2-cluster.toml).
fn tsubame(nodes: u32) -> Cluster {
    let switch = Switch::FatTree {
        nodes_per_leaf: 18,
        oversubscription: 1.0,
        latency_s: 0.0,
    };
    cluster(
        "calibration/tsubame2-node.toml",
        (5.80e9, 7.47e-6),
        switch,
        nodes,
        3,
    )
}

/// Cray XK6m: 1 K20X per node, Gemini fit B0 = 9.87 GB/s, t0 = 3.75 us (Shimokawabe et al. 2013 Table 2),
/// crossbar.
fn cray(nodes: u32) -> Cluster {
    let switch = Switch::Crossbar { latency_s: 0.0 };
    cluster(
        "calibration/cray-xk6m-node.toml",
        (9.87e9, 3.75e-6),
        switch,
        nodes,
        1,
    )
}

/// `nodes` copies of the node file (using `gpus` GPUs each), one NIC on host memory
/// (bandwidth B/s, latency s), `switch` between them, no GPU-direct, zero MPI overheads.
fn cluster(
    node_file: &str,
    (bw, lat): (f64, f64),
    switch: Switch,
    nodes: u32,
    gpus: u32,
) -> Cluster {
    let m = hetsim::machine::load(node_file).unwrap();
    let nic = Nic {
        bandwidth_bytes_per_sec: bw,
        latency_s: lat,
        count: 1,
        attach: MemNodeId(0),
    };
    Cluster::single_node(m)
        .with_network(nic, switch, false, OverheadTable::default())
        .unwrap()
        .with_shape(nodes, gpus)
        .unwrap()
}

fn stencil(text: &str) -> StencilSpec {
    toml::from_str(text).unwrap()
}

fn exec(spec: &dyn ProgramGenerator, c: &Cluster) -> RunReport {
    let p = spec.generate(c).unwrap();
    run(&p, c).unwrap()
}

/// Per rank, the time its GPU ran kernels.
fn gpu_busy(r: &RunReport) -> Vec<f64> {
    hetsim::programs::busy_by_rank(r).0
}

/// Messages between ranks.
fn messages(r: &RunReport) -> u64 {
    r.cluster.as_ref().map_or(0, |c| c.messages)
}

#[test]
fn one_exchange_on_two_cray_nodes_by_hand() {
    // 64³ diffusion on 2 ranks (1 × 2): each subdomain 64 × 64 × 32 = 131072 points.
    // Kernel (Improved Roofline, K20X 3950 Gflop/s, 250 GB/s; 13 flops and 32 bytes per point):
    //   131072 × (13/3950e9 + 32/250e9) s.
    // One face each way: 64 × 64 points × 4 B = 16384 B, in three steps:
    //   D2H and H2D on the PCIe model (Table 2: 16384/6.34e9 + 41.5e-6 each),
    //   host to host on the NIC (16384/9.87e9 + 3.75e-6); the two directions use the two
    //   halves of the full-duplex links, so they do not slow each other.
    let s = stencil(
        "preset = \"diffusion\"\nnx = 64\nny = 64\nnz = 64\nsteps = 1\n\
         method = \"non-overlapping\"\n",
    );
    let r = exec(&s, &cray(2));
    let kernel = 131072.0 * (13.0 / 3950e9 + 32.0 / 250e9);
    let pcie = 16384.0 / 6.34e9 + 41.5e-6;
    let nic = 16384.0 / 9.87e9 + 3.75e-6;
    let expected = kernel + 2.0 * pcie + nic;
    assert!(
        close(r.makespan_s, expected, 1e-9),
        "{} vs {expected}",
        r.makespan_s
    );
    assert!(close(gpu_busy(&r)[0], kernel, 1e-9));
    assert_eq!(messages(&r), 2);
}

#[test]
fn overlapping_beats_non_overlapping_on_a_small_cluster() {
    // 256³ diffusion on 4 TSUBAME nodes (12 M2050), 3 steps.
    let base = "preset = \"diffusion\"\nnx = 256\nny = 256\nnz = 256\nsteps = 3\n";
    let non = exec(
        &stencil(&format!("{base}method = \"non-overlapping\"\n")),
        &tsubame(4),
    );
    let ovl = exec(
        &stencil(&format!("{base}method = \"overlapping\"\n")),
        &tsubame(4),
    );
    assert!(
        ovl.makespan_s < non.makespan_s,
        "overlapping {} vs non-overlapping {}",
        ovl.makespan_s,
        non.makespan_s
    );
    // Same useful work either way.
    assert!(close(ovl.total_flops, non.total_flops, 1e-9));
}

#[test]
fn strong_scaling_communication_share_grows() {
    // 512³ diffusion, non-overlapping, 2 steps on 1, 2, 4, 8 TSUBAME nodes: the time not spent
    // computing (makespan − the busiest GPU's kernel time) grows relative to computing.
    let s = stencil(
        "preset = \"diffusion\"\nnx = 512\nny = 512\nnz = 512\nsteps = 2\n\
         method = \"non-overlapping\"\n",
    );
    let mut last = 0.0;
    for nodes in [1, 2, 4, 8] {
        let r = exec(&s, &tsubame(nodes));
        let compute = gpu_busy(&r).iter().cloned().fold(0.0, f64::max);
        let ratio = (r.makespan_s - compute) / compute;
        assert!(
            ratio > last,
            "{nodes} nodes: comm/compute {ratio} after {last}"
        );
        last = ratio;
    }
}

#[test]
fn matmul_runs_and_counts_its_flops() {
    // n = 512 on 3 Cray nodes: master + 2 workers; 2n³ flops, all on the workers' GPUs.
    let s: MatmulSpec = toml::from_str("n = 512\ngpu_init = \"0.1 s\"\n").unwrap();
    let r = exec(&s, &cray(3));
    assert!(close(r.total_flops, 2.0 * 512f64.powi(3), 1e-9));
    // At least: the GPU initialisation (0.1 s) after the first block arrives.
    assert!(r.makespan_s > 0.1);
    // 2 A blocks, B by a binomial broadcast over 3 ranks (2 messages into host memory), 2
    // host → GPU copies of B, 2 C blocks back.
    assert_eq!(messages(&r), 2 + 2 + 2 + 2);
}

#[test]
fn cluster_files_load_with_their_figures() {
    use hetsim::cluster;
    let t = cluster::load("calibration/tsubame2-cluster.toml").unwrap();
    assert_eq!(
        (t.gpus_per_node(), t.nic().unwrap().bandwidth_bytes_per_sec),
        (3, 5.80e9)
    );
    let t = cluster::load("calibration/tsubame2-nonaligned-cluster.toml").unwrap();
    assert_eq!(t.nic().unwrap().latency_s, 6.07e-6);
    let c = cluster::load("calibration/cray-xk6m-cluster.toml").unwrap();
    assert_eq!(
        (c.nodes(), c.nic().unwrap().bandwidth_bytes_per_sec),
        (40, 9.87e9)
    );
    let d = cluster::load("calibration/dawning-tc3600-cluster.toml").unwrap();
    // Liu et al. 2012 Table 1: oscn 65 us, orn 67 us at 1 MiB.
    assert!((d.overheads().send_s(1048576.0) - 65e-6).abs() < 1e-15);
    assert!((d.overheads().recv_s(1048576.0) - 67e-6).abs() < 1e-15);
    // The file-built TSUBAME cluster runs the hand-built one's program in the same time.
    let s = stencil(
        "preset = \"diffusion\"\nnx = 128\nny = 128\nnz = 128\nsteps = 2\n\
         method = \"overlapping\"\n",
    );
    let f = cluster::load("calibration/tsubame2-cluster.toml")
        .unwrap()
        .with_shape(2, 3)
        .unwrap();
    assert_eq!(exec(&s, &f).makespan_s, exec(&s, &tsubame(2)).makespan_s);
}

#[test]
fn same_program_same_report() {
    let s = stencil(
        "preset = \"lbm\"\nnx = 64\nny = 128\nnz = 128\nsteps = 3\nmethod = \"overlapping\"\n",
    );
    assert_eq!(exec(&s, &tsubame(3)), exec(&s, &tsubame(3)));
}

#[test]
fn weak_scaling_scenario_counts_the_whole_grid() {
    // The Cray diffusion scenario with 128³ per GPU on 4 nodes, overlapping: each GPU computes
    // at the Improved Roofline rate, 99.0 Gflop/s (Shimokawabe et al. 2013 §6.1.3). On 2 × 2 each GPU sends
    // two 128 × 128 faces of 64 KiB one after the other, each 2 × (65536/6.34e9 + 41.5e-6) +
    // (65536/9.87e9 + 3.75e-6) ≈ 114 us, 228 us in all, which hides behind the inner kernel
    // (about 98.5 % of 128³ points × 13 flops / 99 Gflop/s ≈ 272 us), so the run reports
    // 4 × 99.0 Gflop/s.
    use hetsim::scenario::{Override, load};
    let sets: Vec<Override> = [
        "workload.grid_per_rank=true",
        "workload.nx=128",
        "workload.ny=128",
        "workload.nz=128",
        "machine.nodes=4",
    ]
    .iter()
    .map(|s| Override::parse_set(s).unwrap())
    .collect();
    let sc = load("scenarios/stencil-diffusion-cray-xk6m.toml", &sets).unwrap();
    let r = sc.run().unwrap();
    let v = sc.json(&r).unwrap();
    let gflops = v["gflops"].as_f64().unwrap();
    assert!((gflops / (4.0 * 99.02) - 1.0).abs() < 0.01, "{gflops}");
}
