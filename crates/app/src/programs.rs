//! Running the cluster workloads written as MPI programs (`hetsim_mpi`): their operations
//! become a distributed task graph ([`Program::to_task_graph`]) that the runtime runs with one
//! rank per used GPU, each rank under its own instance of a scheduler.

use hetsim_core::error::Error;
use hetsim_mpi::Program;
use hetsim_platform::cluster::Cluster;
use hetsim_runtime::{Drivers, FlopRate, Observer, RunConfig, RunReport, Scheduler};
use hetsim_taskgraph::TaskGraph;

/// The scheduler program workloads run under unless a scenario names another: among a rank's
/// ready kernels the one of highest priority goes first, as MPI programs order them.
pub const PROGRAM_SCHEDULER: &str = "prio";

/// Run `program` on `cluster`, rank r under `sched(r)`, reporting every event to `observer`.
pub fn simulate_program(
    program: &Program,
    cluster: &Cluster,
    sched: &dyn Fn(u32) -> Box<dyn Scheduler>,
    config: &RunConfig,
    observer: &mut dyn Observer,
) -> Result<RunReport, Error> {
    let graph = program.to_task_graph()?;
    simulate_program_graph(&graph, cluster, sched, config, observer)
}

/// [`simulate_program`] on the program's task graph ([`Program::to_task_graph`]), so that a
/// caller can drop the program (as large as the graph) before the run.
pub fn simulate_program_graph(
    graph: &TaskGraph,
    cluster: &Cluster,
    sched: &dyn Fn(u32) -> Box<dyn Scheduler>,
    config: &RunConfig,
    observer: &mut dyn Observer,
) -> Result<RunReport, Error> {
    let mut scheds: Vec<_> = (0..cluster.ranks()).map(sched).collect();
    // An MPI program's ranks have no runtime's driver threads.
    let config = &RunConfig {
        drivers: Drivers::Passive,
        ..config.clone()
    };
    // Every kernel of a program fixes its own duration: no kernel model is consulted.
    let no_models = FlopRate {
        cpu_flops_per_sec: 0.0,
        gpu_flops_per_sec: 0.0,
    };
    hetsim_runtime::simulate_cluster(
        cluster,
        cluster.gpus_per_node(),
        graph,
        &no_models,
        &mut scheds,
        config,
        observer,
    )
}

/// [`simulate_program`] under [`PROGRAM_SCHEDULER`] with default options, seed 1, without
/// StarPU's simulated runtime costs (an MPI program is not a StarPU one): the cross-checks'
/// runs.
pub fn simulate_program_default(program: &Program, cluster: &Cluster) -> Result<RunReport, Error> {
    simulate_program_graph_default(&program.to_task_graph()?, cluster)
}

/// [`simulate_program_default`] on the program's task graph ([`Program::to_task_graph`]).
pub fn simulate_program_graph_default(
    graph: &TaskGraph,
    cluster: &Cluster,
) -> Result<RunReport, Error> {
    let cluster = cluster
        .clone()
        .map_node_machine(hetsim_platform::machine::Machine::clear_runtime_costs);
    let cluster = &cluster;
    let config = RunConfig::default();
    let seed = config.seed;
    let sched = |r: u32| {
        hetsim_sched::by_name(PROGRAM_SCHEDULER, seed.wrapping_add(u64::from(r)))
            .expect("the program scheduler is registered")
    };
    simulate_program_graph(graph, cluster, &sched, &config, &mut ())
}

/// Per rank, the busy time of its GPU workers and of its CPU workers in `report` (a cluster
/// run; workers are listed rank by rank).
pub fn busy_by_rank(report: &RunReport) -> (Vec<f64>, Vec<f64>) {
    // One rank: the report names none.
    let rank = |w: &hetsim_runtime::WorkerReport| w.rank.unwrap_or(0) as usize;
    let ranks = report.workers.iter().map(rank).max().map_or(0, |r| r + 1);
    let (mut gpu, mut cpu) = (vec![0.0; ranks], vec![0.0; ranks]);
    for w in &report.workers {
        match w.kind.as_str() {
            "gpu" => gpu[rank(w)] += w.busy_s,
            _ => cpu[rank(w)] += w.busy_s,
        }
    }
    (gpu, cpu)
}
