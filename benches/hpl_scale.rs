//! Scale benchmark: HPL with N = 400 000 on 256 nodes × 4 P100 (1024 ranks, a 32 × 32 grid) of
//! the HD-PEX cluster file, simulated on one core. Prints build time (the task graph, written
//! by the generator without a program, as `hetsim run` does), simulation time, operations,
//! edges, operations/s, the process's peak memory (VmHWM) and that peak per operation.
//!
//! The pivot searches are collapsed (`pivot_search = "collapsed"`: per panel and process one
//! search as messages, one kernel and one delay, rather than `⌈log2 P⌉` rounds of messages per
//! column), which is what makes this size fit; `messages` after `--` writes every search.
//!
//! `cargo bench -p hetsim-benches --bench hpl_scale` (release profile). Optional arguments after `--`:
//! `NODES GPUS N NB` (default 256 4 400000 384) and `messages` or `collapsed`.

use std::time::Instant;

use hetsim::programs::simulate_program_graph_default as run;
use hetsim::workload::{PivotSearch, ProgramGenerator};

mod common;
use common::{hpl_case, vm_hwm_kb};

fn main() {
    // `cargo bench` passes `--bench`; keep only numbers.
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let get = |i: usize, d: u64| args.get(i).copied().unwrap_or(d);
    let (nodes, gpus, n, nb) = (get(0, 256), get(1, 4), get(2, 400_000), get(3, 384));
    let mode = if std::env::args().any(|a| a == "messages") {
        ("messages", PivotSearch::Messages)
    } else {
        ("collapsed", PivotSearch::Collapsed)
    };
    let (cluster, spec) = hpl_case(nodes, gpus, n, nb, mode.1);
    let t0 = Instant::now();
    let graph = spec.generate_graph(&cluster).expect("task graph");
    let (ops, edges) = (graph.num_tasks(), graph.num_edges());
    let build_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let report = run(&graph, &cluster).expect("run");
    let sim_s = t1.elapsed().as_secs_f64();
    let peak_kb = vm_hwm_kb();
    println!(
        "hpl_scale: {nodes} nodes x {gpus} GPUs, N = {n}, NB = {nb}, grid {} ranks, \
         pivot_search = {}",
        cluster.ranks(),
        mode.0
    );
    println!("  build        {build_s:.2} s");
    println!("  simulate     {sim_s:.2} s");
    println!("  ops          {ops}");
    println!("  edges        {edges}");
    println!("  operations/s {:.3e}", ops as f64 / sim_s);
    println!(
        "  peak memory  {} (VmHWM)",
        peak_kb.map_or("unknown".into(), |k| format!(
            "{:.1} MB, {:.0} B per operation",
            k as f64 / 1e3,
            k as f64 * 1e3 / ops as f64
        ))
    );
    println!(
        "  simulated    {:.3} s, {:.1} GFlop/s",
        report.makespan_s,
        spec.counted_flops() / report.makespan_s / 1e9
    );
}
