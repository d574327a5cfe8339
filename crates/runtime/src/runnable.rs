//! Which workers a run has, and which of them can run each task in how long on average.

use hetsim_core::error::InputError;
use hetsim_models::NoModel;
use hetsim_platform::machine::Machine;
use hetsim_taskgraph::{TaskGraph, TaskId};

use super::{KernelTimes, RunConfig, Worker, WorkerId, WorkerKind};

/// Mean durations per (task, worker device), `NaN` where the worker cannot run the task.
#[derive(Debug)]
pub(crate) struct Runnable {
    means: Vec<f64>,
    ndev: usize,
    worker_dev: Vec<usize>,
}

impl Runnable {
    pub fn mean_s(&self, task: TaskId, worker: WorkerId) -> Option<f64> {
        let m = self.means[task.index() * self.ndev + self.worker_dev[worker.index()]];
        (!m.is_nan()).then_some(m)
    }

    /// The makespan bounds of the graph on `workers` from these means (`trace::stats`).
    pub fn bounds(&self, graph: &TaskGraph, workers: &[Worker]) -> crate::bounds::Bounds {
        let mut cpu = vec![f64::INFINITY; graph.num_tasks()];
        let mut gpu = vec![f64::INFINITY; graph.num_tasks()];
        let mut col_kind = vec![WorkerKind::Cpu; self.ndev];
        for (w, &col) in self.worker_dev.iter().enumerate() {
            col_kind[col] = workers[w].kind;
        }
        for t in 0..graph.num_tasks() {
            for (col, kind) in col_kind.iter().enumerate() {
                let m = self.means[t * self.ndev + col];
                if m.is_nan() {
                    continue;
                }
                let slot = match kind {
                    WorkerKind::Cpu => &mut cpu[t],
                    WorkerKind::Gpu => &mut gpu[t],
                };
                *slot = slot.min(m);
            }
        }
        crate::bounds::bounds_from_means(graph, &cpu, &gpu, workers)
    }
}

pub(crate) fn workers_of(machine: &Machine, config: &RunConfig) -> Result<Vec<Worker>, InputError> {
    let rt = machine.runtime();
    let ngpu_all = machine.gpus().len() as u32;
    let ngpu = config.ncuda.unwrap_or(ngpu_all);
    if ngpu > ngpu_all {
        return Err(InputError::new(format!(
            "{ngpu} GPUs asked for, but machine `{}` has {ngpu_all}",
            machine.name()
        ))
        .at_field("runtime.ncuda"));
    }
    let cores = machine.cpu_cores();
    let reserved = if rt.gpu_driver_cores { ngpu } else { 0 };
    let ncpu = match config.ncpu {
        Some(n) if n + reserved > cores => {
            return Err(InputError::new(format!(
                "{n} CPU workers asked for, but machine `{}` has {cores} cores{}",
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
        None => cores.saturating_sub(reserved),
    };
    let mut workers = Vec::new();
    for g in machine.gpus().iter().take(ngpu as usize) {
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
    'groups: for group in machine.cpus() {
        for _ in 0..group.count {
            if core == ncpu {
                break 'groups;
            }
            workers.push(Worker {
                id: WorkerId(workers.len() as u32),
                name: format!("CPU{core}"),
                kind: WorkerKind::Cpu,
                device: "CPU".to_string(),
                memory: group.memory,
                pipeline_depth: 1,
            });
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

pub(crate) fn runnable_of(
    graph: &TaskGraph,
    kernels: &dyn KernelTimes,
    workers: &[Worker],
    machine: &Machine,
) -> Result<Runnable, InputError> {
    // One column per distinct (device, memory node): workers of one kind share predictions.
    let mut devs: Vec<usize> = Vec::new(); // representative worker per column
    let mut worker_dev = Vec::with_capacity(workers.len());
    for w in workers {
        let col = devs.iter().position(|&r| {
            workers[r].device == w.device
                && workers[r].memory == w.memory
                && workers[r].kind == w.kind
        });
        worker_dev.push(col.unwrap_or_else(|| {
            devs.push(w.id.index());
            devs.len() - 1
        }));
    }
    let ndev = devs.len();
    let mut means = vec![f64::NAN; graph.num_tasks() * ndev];
    for t in graph.task_ids() {
        let need: u64 = graph
            .accesses(t)
            .iter()
            .map(|a| graph.handle(a.handle).size_bytes)
            .sum();
        let mut modelled = false;
        let mut fits_somewhere = false;
        for (col, &r) in devs.iter().enumerate() {
            let w = &workers[r];
            let Some(m) = kernels.mean_s(graph, t, w) else {
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
                means[t.index() * ndev + col] = m;
            }
        }
        if !modelled {
            let why: Vec<NoModel> = devs
                .iter()
                .filter_map(|&r| kernels.explain(graph, t, &workers[r]))
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
    Ok(Runnable {
        means,
        ndev,
        worker_dev,
    })
}
