//! Which workers a run has, and which of them can run each task in how long on average.

use hetsim_core::error::InputError;
use hetsim_models::NoModel;
use hetsim_platform::machine::Machine;
use hetsim_taskgraph::{TaskGraph, TaskId};

use super::{KernelTimes, RunConfig, Worker, WorkerId, WorkerKind};

/// Mean durations per (task, worker class), `NaN` where the class cannot run the task. A class
/// is a distinct (device, memory node, kind): workers of one class share predictions. Each rank
/// maps its workers to classes ([`runnable_of`]).
///
/// When every computation fixes its durations and accesses no data (the cluster workloads
/// written as MPI programs) there is no table: the graph's fixed durations are the means.
#[derive(Debug)]
pub(crate) struct Runnable {
    /// Per task, per class; empty when the graph's fixed durations are read instead.
    means: Vec<f64>,
    ndev: usize,
    col_kind: Vec<WorkerKind>,
}

impl Runnable {
    /// The mean duration of `task` (of `graph`) on workers of class `col` of its rank, if they
    /// can run it.
    pub fn mean_s(&self, graph: &TaskGraph, task: TaskId, col: usize) -> Option<f64> {
        if self.means.is_empty() {
            return graph.fixed_duration_s(task, self.col_kind[col].unit());
        }
        let m = self.means[task.index() * self.ndev + col];
        (!m.is_nan()).then_some(m)
    }

    /// The makespan bounds of the graph on `workers` (all ranks') from these means
    /// (`trace::stats`).
    pub fn bounds(&self, graph: &TaskGraph, workers: &[Worker]) -> crate::bounds::Bounds {
        let fastest = |t: TaskId| {
            let (mut cpu, mut gpu) = (f64::INFINITY, f64::INFINITY);
            for (col, kind) in self.col_kind.iter().enumerate() {
                let Some(m) = self.mean_s(graph, t, col) else {
                    continue;
                };
                let slot = match kind {
                    WorkerKind::Cpu => &mut cpu,
                    WorkerKind::Gpu => &mut gpu,
                };
                *slot = slot.min(m);
            }
            (cpu, gpu)
        };
        crate::bounds::bounds_from_means(graph, fastest, workers)
    }
}

/// The workers of a whole machine: all its GPUs (or `config.ncuda`) and its cores less one
/// per GPU if the machine reserves driver cores (or `config.ncpu`).
pub(crate) fn workers_of(machine: &Machine, config: &RunConfig) -> Result<Vec<Worker>, InputError> {
    let ngpu = machine.gpus().len() as u32;
    workers_in(machine, config, 0..ngpu, 0..machine.cpu_cores(), 0)
}

/// The workers of a share of `machine`: its GPUs `gpus` (indices into the machine's GPU list;
/// the first `config.ncuda` of them), and of its cores `cores` (indices over the CPU groups in
/// order) all but one per GPU used if the machine reserves driver cores and `reserved` more
/// (or the first `config.ncpu`). GPUs are numbered first, then CPU cores; a CPU worker is
/// named after its core's index in the machine.
pub(crate) fn workers_in(
    machine: &Machine,
    config: &RunConfig,
    gpus: std::ops::Range<u32>,
    cores: std::ops::Range<u32>,
    reserved: u32,
) -> Result<Vec<Worker>, InputError> {
    let rt = machine.runtime();
    let ngpu_all = gpus.len() as u32;
    let ngpu = config.ncuda.unwrap_or(ngpu_all);
    if ngpu > ngpu_all {
        return Err(InputError::new(format!(
            "{ngpu} GPUs asked for, but machine `{}` has {ngpu_all}",
            machine.name()
        ))
        .at_field("runtime.ncuda"));
    }
    let ncores = cores.len() as u32;
    let reserved = reserved + if rt.gpu_driver_cores { ngpu } else { 0 };
    let ncpu = match config.ncpu {
        Some(n) if n + reserved > ncores => {
            return Err(InputError::new(format!(
                "{n} CPU workers asked for, but machine `{}` has {ncores} cores{}",
                machine.name(),
                if reserved > 0 {
                    format!(" of which {reserved} drive GPUs")
                } else {
                    String::new()
                }
            ))
            .at_field("runtime.ncpu"));
        }
        Some(n) => n,
        None => ncores.saturating_sub(reserved),
    };
    let mut workers = Vec::new();
    for g in machine
        .gpus()
        .iter()
        .skip(gpus.start as usize)
        .take(ngpu as usize)
    {
        workers.push(Worker {
            id: WorkerId(workers.len() as u32),
            name: g.name.clone(),
            kind: WorkerKind::Gpu,
            device: g.name.clone(),
            memory: g.memory,
            pipeline_depth: rt.gpu_pipeline_depth.max(1),
        });
    }
    let mut core = 0;
    let mut taken = 0;
    'groups: for group in machine.cpus() {
        for _ in 0..group.count {
            if taken == ncpu {
                break 'groups;
            }
            if core >= cores.start {
                workers.push(Worker {
                    id: WorkerId(workers.len() as u32),
                    name: format!("CPU{core}"),
                    kind: WorkerKind::Cpu,
                    device: "CPU".to_string(),
                    memory: group.memory,
                    pipeline_depth: 1,
                });
                taken += 1;
            }
            core += 1;
        }
    }
    if workers.is_empty() {
        return Err(
            InputError::new("no workers: at least one CPU core or GPU is needed")
                .at_field("runtime.ncpu"),
        );
    }
    Ok(workers)
}

/// The mean duration of every task on every worker class of its rank (`ranks[r]`: rank r's
/// workers, local ids), and per rank the class of each worker. Errors before the run: a task
/// that no worker of its rank has a model for, or whose data does not fit in the memory of any
/// worker of its rank that has one. Messages between ranks run on no worker.
pub(crate) fn runnable_of(
    graph: &TaskGraph,
    kernels: &dyn KernelTimes,
    ranks: &[&[Worker]],
    machine: &Machine,
) -> Result<(Runnable, Vec<Vec<usize>>), InputError> {
    // One column per distinct (device, memory node, kind).
    let mut devs: Vec<&Worker> = Vec::new(); // representative worker per column
    let mut cols = Vec::with_capacity(ranks.len());
    for workers in ranks {
        let mut worker_dev = Vec::with_capacity(workers.len());
        for w in *workers {
            let col = devs
                .iter()
                .position(|r| r.device == w.device && r.memory == w.memory && r.kind == w.kind);
            worker_dev.push(col.unwrap_or_else(|| {
                devs.push(w);
                devs.len() - 1
            }));
        }
        cols.push(worker_dev);
    }
    let ndev = devs.len();
    // Per rank, its classes in column order.
    let rank_cols: Vec<Vec<usize>> = cols
        .iter()
        .map(|c| {
            let mut v = c.clone();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    // Fixed durations on data-free tasks fit anywhere: the graph holds all the table would.
    let table = graph.tasks().iter().enumerate().any(|(i, task)| {
        task.is_compute() && (!graph.fixes_duration(TaskId(i as u32)) || task.access_count() > 0)
    });
    let mut means = if table {
        vec![f64::NAN; graph.num_tasks() * ndev]
    } else {
        Vec::new()
    };
    for t in graph.task_ids() {
        let task = graph.task(t);
        if !task.is_compute() {
            continue;
        }
        let Some(mine) = rank_cols.get(task.node.index()) else {
            return Err(InputError::new(format!(
                "task {} ({}) is on rank {} of a run of {} rank(s)",
                t.0,
                graph.task_codelet_name(t),
                task.node.0,
                rank_cols.len()
            ))
            .at_field("workload"));
        };
        let need: u64 = graph
            .accesses(t)
            .iter()
            .map(|a| graph.handle(a.handle).size_bytes)
            .sum();
        let mut modelled = false;
        let mut fits_somewhere = false;
        let fixed = graph.fixes_duration(t);
        for &col in mine {
            let w = devs[col];
            let m = if fixed {
                graph.fixed_duration_s(t, w.kind.unit())
            } else {
                kernels.mean_s(graph, t, w)
            };
            let Some(m) = m else {
                continue;
            };
            if !(m.is_finite() && m >= 0.0) {
                return Err(InputError::new(format!(
                    "kernel model gives {m} s for task {} ({}) on {}: expected a finite duration >= 0",
                    t.0,
                    graph.task_codelet_name(t),
                    w.name
                )));
            }
            modelled = true;
            let cap = machine
                .memory_node(w.memory)
                .map_or(0, |n| n.capacity_bytes);
            if need <= cap {
                fits_somewhere = true;
                if table {
                    means[t.index() * ndev + col] = m;
                }
            }
        }
        if !modelled {
            let why: Vec<NoModel> = mine
                .iter()
                .filter_map(|&col| kernels.explain(graph, t, devs[col]))
                .collect();
            return Err(InputError::new(format!(
                "unknown kernel: no worker of machine `{}` has a model for codelet `{}` (task {}){}; \
                 add a model for it to the machine file",
                machine.name(),
                graph.task_codelet_name(t),
                t.0,
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {}", NoModel::summarize(&why))
                }
            ))
            .at_field("codelets"));
        }
        if !fits_somewhere {
            return Err(InputError::new(format!(
                "task {} ({}) needs {need} bytes of data at once, more than the memory of any \
                 worker that can run it",
                t.0,
                graph.task_codelet_name(t)
            ))
            .at_field("workload"));
        }
    }
    let col_kind = devs.iter().map(|w| w.kind).collect();
    Ok((
        Runnable {
            means,
            ndev,
            col_kind,
        },
        cols,
    ))
}
