//! Which workers a run has, and which of them can run each task in how long on average.

use hetsim_core::error::InputError;
use hetsim_models::NoModel;
use hetsim_platform::machine::Machine;
use hetsim_taskgraph::{CodeletId, NodeId, TaskGraph, TaskId};

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

/// What a task's means depend on when the kernels read its shape only
/// ([`KernelTimes::means_by_shape`]), with its rank and the bytes its data takes (the
/// checks): codelet, rank, model size, flops (bits), data bytes.
type Shape = (CodeletId, NodeId, u64, u64, u64);

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
    // The last task whose means came from the kernels, and its shape: a task of the same
    // shape on the same rank has the same means (and passed the same checks), when the
    // kernels read nothing else.
    let by_shape = kernels.means_by_shape();
    let mut last: Option<(TaskId, Shape)> = None;
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
        let fixed = graph.fixes_duration(t);
        if by_shape && !fixed {
            let shape = (
                task.codelet,
                task.node,
                task.model_size_bytes(),
                task.flops().to_bits(),
                need,
            );
            match last {
                Some((prev, prev_shape)) if prev_shape == shape => {
                    if table {
                        let from = prev.index() * ndev;
                        means.copy_within(from..from + ndev, t.index() * ndev);
                    }
                    continue;
                }
                _ => last = Some((t, shape)),
            }
        }
        let mut modelled = false;
        let mut fits_somewhere = false;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{star_machine, workers};
    use crate::{FlopRate, SimRng};
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraphBuilder};

    /// Means by codelet, flops and model size: a kernel model of shapes, which may or may not
    /// say so.
    struct Shaped {
        promise: bool,
    }

    impl KernelTimes for Shaped {
        fn mean_s(&self, g: &TaskGraph, t: TaskId, w: &Worker) -> Option<f64> {
            let task = g.task(t);
            let per_kind = match w.kind {
                WorkerKind::Cpu => 1.0,
                WorkerKind::Gpu => 0.1,
            };
            let codelet = f64::from(task.codelet.0 + 1);
            Some(
                per_kind * codelet * (task.flops() * 1e-9 + task.model_size_bytes() as f64 * 1e-12),
            )
        }

        fn draw_s(&self, _: &TaskGraph, _: TaskId, _: &Worker, mean_s: f64, _: &mut SimRng) -> f64 {
            mean_s
        }

        fn means_by_shape(&self) -> bool {
            self.promise
        }
    }

    #[test]
    fn alike_tasks_get_the_means_the_kernels_give_each() {
        // Neighbours that differ in one thing each: codelet, flops, data size; and runs of
        // alike ones.
        let mut b = TaskGraphBuilder::new();
        let (k, l) = (b.codelet("k").unwrap(), b.codelet("l").unwrap());
        let small = b.add_handle(Handle::bytes(1 << 20)).unwrap();
        let large = b.add_handle(Handle::bytes(1 << 22)).unwrap();
        let tasks = [
            (k, 1e9, small),
            (k, 1e9, small),
            (l, 1e9, small),
            (l, 1e9, small),
            (l, 2e9, small),
            (l, 2e9, large),
            (l, 2e9, large),
            (k, 2e9, large),
            (k, 1e9, small),
        ];
        for (codelet, flops, h) in tasks {
            b.submit(codelet, flops, 0, &[Access::new(h, AccessMode::R)])
                .unwrap();
        }
        let g = b.build().unwrap();
        let m = star_machine(1, 3);
        let ws = workers_of(&m, &workers(2, 1)).unwrap();
        let table = |k: &dyn KernelTimes| runnable_of(&g, k, &[&ws], &m).unwrap().0.means;
        let asked = table(&Shaped { promise: false });
        let copied = table(&Shaped { promise: true });
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&copied), bits(&asked));
        // Every neighbour pair that differs has different means.
        let ndev = asked.len() / tasks.len();
        for (i, pair) in tasks.windows(2).enumerate() {
            let row = |t: usize| &asked[t * ndev..][..ndev];
            assert_eq!(
                pair[0] == pair[1],
                bits(row(i)) == bits(row(i + 1)),
                "tasks {i}, {}",
                i + 1
            );
        }
        // The flop-rate model promises it too.
        assert!(
            FlopRate {
                cpu_flops_per_sec: 1e9,
                gpu_flops_per_sec: 1e10
            }
            .means_by_shape()
        );
    }
}
