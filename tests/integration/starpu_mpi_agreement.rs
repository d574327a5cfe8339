//! hetsim against StarPU-MPI 1.4.12 run in SimGrid mode: every multi-node cell of
//! `docs/validation/starpu14-mpi-cholesky.csv` (distributed Cholesky on 2 and 4 mirage nodes,
//! dmda and ws, n = 9600, 19200, 38400), simulated with `scenarios/cholesky-mirage-mpi.toml`.
//! Targets: dmda within 5 %, ws within 10 % (`docs/mpi.md`, "Agreement with StarPU-MPI").

use hetsim::scenario::{self, Override};

/// A cell held to a bound other than its scheduler's target, and why.
struct Exception {
    nodes: &'static str,
    sched: &'static str,
    n: &'static str,
    /// Largest relative difference accepted.
    bound: f64,
}

/// 2 nodes, dmda, n = 9600 is +7.4 % (+5.7 % before transfers paid their queueing at
/// submission and dmda predicted them from the bus matrices, +9.6 % with those rules, +7.3 %
/// with each GPU driver's passes over its requests, +7.4 % since a driver sees a request
/// complete only in its pass). Its messages and receive buffers follow StarPU-MPI's dates (the
/// first potrf starts at 41.7 ms in StarPU-MPI, 41.6 ms in hetsim, after two pinned chunks);
/// the rest is the node's own schedule: in the first panel hetsim started the three trsm
/// together, so their tiles' copies to RAM for the sends share mirage's PCIe bus and the three
/// sends share the NIC, where StarPU's GPUs start them 3 ms apart. With 10 tiles per dimension
/// this panel is a large share of the run.
const EXCEPTIONS: &[Exception] = &[Exception {
    nodes: "2",
    sched: "dmda",
    n: "9600",
    bound: 0.10,
}];

fn target(nodes: &str, sched: &str, n: &str) -> f64 {
    EXCEPTIONS
        .iter()
        .find(|e| e.nodes == nodes && e.sched == sched && e.n == n)
        .map_or(if sched == "dmda" { 0.05 } else { 0.10 }, |e| e.bound)
}

#[test]
fn distributed_cholesky_agrees_with_starpu_mpi() {
    let path = hetsim_testkit::repo("scenarios/cholesky-mirage-mpi.toml");
    let mut report = Vec::new();
    let mut bad = Vec::new();
    for c in crate::common::starpu_mpi_cells() {
        let overrides = [
            Override::parse_set(&format!("machine.nodes={}", c.nodes)).unwrap(),
            Override::parse_set(&format!("scheduler.name={}", c.sched)).unwrap(),
            Override::parse_set(&format!("workload.n={}", c.n)).unwrap(),
        ];
        let sc = scenario::load(&path, &overrides).unwrap();
        let hetsim_ms = sc.run().unwrap().makespan_s * 1e3;
        let diff = (hetsim_ms - c.sim_ms) / c.sim_ms;
        let line = format!(
            "{} nodes {} n={}: StarPU-MPI {:.2} ms, hetsim {hetsim_ms:.2} ms ({:+.1} %)",
            c.nodes,
            c.sched,
            c.n,
            c.sim_ms,
            diff * 100.0
        );
        if diff.abs() > target(&c.nodes, &c.sched, &c.n) {
            bad.push(line.clone());
        }
        report.push(line);
    }
    assert_eq!(
        report.len(),
        12,
        "2 and 4 nodes, two schedulers, three sizes"
    );
    assert!(
        bad.is_empty(),
        "outside the target: {bad:#?}\nall: {report:#?}"
    );
}
