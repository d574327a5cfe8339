//! Lower bounds on a run's makespan, from the task graph and the kernels' mean durations.
//!
//! - **Critical path** ([`Bounds::critical_path_s`]): the longest chain of dependent tasks,
//!   each task counted at its fastest mean duration over all workers. No schedule can end
//!   before it (transfers and contention only add to it).
//! - **Area bound** ([`Bounds::area_bound_s`]): the best makespan if the work could be split
//!   freely (fractionally) between the CPU workers and the GPU workers, ignoring dependencies
//!   and data movement — StarPU's "area" bound. With `C` CPU workers and `G` GPU workers, and
//!   task `i` taking `c_i` on a CPU and `g_i` on a GPU (the fastest device of each kind), it is
//!   the linear program
//!
//!   ```text
//!   minimise T  subject to  Σ_i x_i g_i ≤ G·T,   Σ_i (1 − x_i) c_i ≤ C·T,   0 ≤ x_i ≤ 1
//!   ```
//!
//!   (`x_i`: the fraction of task `i` done on GPUs; `x_i = 1` if no CPU can run it, `0` if no
//!   GPU can). An exchange argument solves it in closed form: moving GPU time from a task of
//!   lower ratio `c_i/g_i` to one of higher ratio never raises the CPU load, so the optimum
//!   gives the GPUs the tasks of highest ratio `c_i/g_i`. Sorted by decreasing ratio, tasks go
//!   to the GPUs while the GPU load `P/G` stays below the CPU load left `S/C`; the task where
//!   they would cross is split with the fraction
//!   `f = (S/C − P/G) / (g_k/G + c_k/C)` on GPUs, which equalises the two loads:
//!   `T = (P + f·g_k)/G`. With one kind of worker only, `T = Σ_i t_i / n`.
//!
//! Both ignore transfers, so a run's makespan divided by the larger of the two
//! ([`Bounds::ratio`]) is ≥ 1 and says how far the schedule is from what the machine could do
//! at best.

use serde::Serialize;

use crate::{KernelTimes, Worker, WorkerKind};
use hetsim_taskgraph::{TaskGraph, TaskId};

/// Lower bounds on the makespan of a task graph on a set of workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bounds {
    /// Longest dependency chain, each task at its fastest mean duration, seconds.
    pub critical_path_s: f64,
    /// Best makespan with the work spread perfectly over the CPU and GPU workers by speed,
    /// seconds.
    pub area_bound_s: f64,
}

impl Bounds {
    /// The larger of the two bounds.
    pub fn lower_bound_s(&self) -> f64 {
        self.critical_path_s.max(self.area_bound_s)
    }

    /// `makespan_s` / the larger bound (≥ 1 up to noise in the kernel durations; 0 if the
    /// bound is 0).
    pub fn ratio(&self, makespan_s: f64) -> f64 {
        let b = self.lower_bound_s();
        if b > 0.0 && b.is_finite() {
            makespan_s / b
        } else {
            0.0
        }
    }
}

/// The critical path and area bound of `graph` on `workers`, with the mean durations of
/// `kernels` (see the module documentation for the definitions and the formula).
///
/// Tasks no worker has a model for are left out (the run itself reports them). Device memory
/// capacity is not taken into account, which can only lower the bounds.
pub fn bounds(graph: &TaskGraph, kernels: &dyn KernelTimes, workers: &[Worker]) -> Bounds {
    // One representative worker per distinct (kind, device, memory node), as the runtime's
    // predictions are per device.
    let mut reps: Vec<&Worker> = Vec::new();
    for w in workers {
        if !reps
            .iter()
            .any(|r| r.kind == w.kind && r.device == w.device && r.memory == w.memory)
        {
            reps.push(w);
        }
    }
    let n = graph.num_tasks();
    // Fastest mean per kind for each task (infinite: that kind cannot run it).
    let mut cpu = vec![f64::INFINITY; n];
    let mut gpu = vec![f64::INFINITY; n];
    for t in graph.task_ids() {
        for r in &reps {
            let Some(m) = kernels.mean_s(graph, t, r) else {
                continue;
            };
            if !(m.is_finite() && m >= 0.0) {
                continue;
            }
            let slot = match r.kind {
                WorkerKind::Cpu => &mut cpu[t.index()],
                WorkerKind::Gpu => &mut gpu[t.index()],
            };
            *slot = slot.min(m);
        }
    }
    bounds_from_means(graph, |t| (cpu[t.index()], gpu[t.index()]), workers)
}

/// [`bounds`] from `means`, which gives each task's fastest mean duration on a CPU worker and
/// on a GPU worker, infinite where no worker of that kind can run the task, for callers that
/// have them already (the runtime's table of means, or the durations the graph fixes). They
/// are asked for as needed rather than gathered into arrays: a graph of tens of millions of
/// tasks would hold them beside itself before its run starts.
pub fn bounds_from_means(
    graph: &TaskGraph,
    means: impl Fn(TaskId) -> (f64, f64),
    workers: &[Worker],
) -> Bounds {
    let ncpu = workers.iter().filter(|w| w.kind == WorkerKind::Cpu).count() as f64;
    let ngpu = workers.iter().filter(|w| w.kind == WorkerKind::Gpu).count() as f64;
    let area_bound_s = area_bound(graph.num_tasks(), &means, ncpu, ngpu);
    let fastest = |t: TaskId| {
        let (c, g) = means(t);
        let m = c.min(g);
        if m.is_finite() { m } else { 0.0 }
    };
    Bounds {
        critical_path_s: critical_path(graph, fastest),
        area_bound_s,
    }
}

/// Longest path through the graph with `weight(t)` per task: in a topological order of the
/// dependencies (submission order when every edge points forward, else petgraph's: explicit
/// dependencies may point backwards), each task finishes `weight` after the latest of its
/// predecessors.
fn critical_path(graph: &TaskGraph, weight: impl Fn(TaskId) -> f64) -> f64 {
    let order: Box<dyn Iterator<Item = TaskId>> = if graph.edges_point_forward() {
        Box::new(graph.task_ids())
    } else {
        let sorted = petgraph::algo::toposort(graph, None)
            .expect("task graphs are acyclic: TaskGraphBuilder::build refuses cycles");
        Box::new(sorted.into_iter().map(|v| TaskId(v.index() as u32)))
    };
    // Each task's start is the latest end among its predecessors, pushed forward along the
    // successor lists (the graph keeps no predecessor lists for the runtime).
    let mut start = vec![0.0f64; graph.num_tasks()];
    let mut best = 0.0f64;
    for v in order {
        let f = start[v.index()] + weight(v);
        best = best.max(f);
        for s in graph.successors(v) {
            start[s.index()] = start[s.index()].max(f);
        }
    }
    best
}

/// The tasks `0..n` that `ratio` gives a ratio, as (ratio, index) sorted by decreasing ratio
/// (`f64::total_cmp`), equal ratios in index order. A graph's tasks take few distinct ratios
/// (one per kernel and size), so up to a few thousand it counts them and then places each
/// task in one pass (asking `ratio` twice) instead of sorting: no more memory than the result.
fn by_decreasing_ratio(n: usize, ratio: impl Fn(usize) -> Option<f64>) -> Vec<(f64, u32)> {
    const MAX_DISTINCT: usize = 4096;
    // The integer that orders as `total_cmp` orders the ratios.
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        bits ^ ((((bits >> 63) as u64) >> 1) as i64)
    };
    let mut counts: std::collections::BTreeMap<i64, usize> = Default::default();
    for r in (0..n).filter_map(&ratio) {
        *counts.entry(key(r)).or_default() += 1;
        if counts.len() > MAX_DISTINCT {
            let mut items: Vec<(f64, u32)> = (0..n)
                .filter_map(|i| ratio(i).map(|r| (r, i as u32)))
                .collect();
            items.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            return items;
        }
    }
    // Each ratio's first place, the largest first.
    let mut next = 0;
    for count in counts.values_mut().rev() {
        let c = *count;
        *count = next;
        next += c;
    }
    let mut out = vec![(0.0, 0); next];
    for i in 0..n {
        if let Some(r) = ratio(i) {
            let at = counts.get_mut(&key(r)).expect("counted");
            out[*at] = (r, i as u32);
            *at += 1;
        }
    }
    out
}

/// The two-kind area bound (module documentation) of `n` tasks whose fastest CPU and GPU
/// means `means` gives.
fn area_bound(n: usize, means: &impl Fn(TaskId) -> (f64, f64), ncpu: f64, ngpu: f64) -> f64 {
    let at = |i: usize| means(TaskId(i as u32));
    let runnable = |(c, g): (f64, f64)| c.is_finite() || g.is_finite();
    if ngpu == 0.0 || ncpu == 0.0 {
        let count = if ngpu == 0.0 { ncpu } else { ngpu };
        if count == 0.0 {
            return 0.0;
        }
        let time = |(c, g): (f64, f64)| if ngpu == 0.0 { c } else { g };
        let total: f64 = (0..n).map(at).filter(|&m| runnable(m)).map(time).sum();
        return total / count;
    }
    // Decreasing ratio c/g: GPU-only tasks first, CPU-only last.
    let ratio = |(c, g): (f64, f64)| -> f64 {
        match (c.is_finite(), g.is_finite()) {
            (false, _) => f64::INFINITY,
            (true, false) => -1.0,
            (true, true) if g > 0.0 => c / g,
            (true, true) if c > 0.0 => f64::INFINITY,
            (true, true) => 0.0,
        }
    };
    let order = by_decreasing_ratio(n, |i| {
        let m = at(i);
        runnable(m).then(|| ratio(m))
    });
    // P: GPU work assigned so far; S: CPU work of the tasks not assigned to GPUs.
    let mut p = 0.0f64;
    let mut s: f64 = order
        .iter()
        .map(|&(_, i)| at(i as usize).0)
        .filter(|c| c.is_finite())
        .sum();
    for &(_, i) in &order {
        let (c, g) = at(i as usize);
        if !c.is_finite() {
            p += g;
            continue;
        }
        if !g.is_finite() {
            break;
        }
        if (p + g) / ngpu <= (s - c) / ncpu {
            p += g;
            s -= c;
            continue;
        }
        let f = (s / ncpu - p / ngpu) / (g / ngpu + c / ncpu);
        if f <= 0.0 {
            break;
        }
        let f = f.min(1.0);
        return ((p + f * g) / ngpu).max((s - f * c) / ncpu);
    }
    (p / ngpu).max(s.max(0.0) / ncpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_path_by_hand() {
        use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraphBuilder};
        // A diamond on one handle: a writes, b and c read, d writes. Durations 1, 5, 2, 3:
        // the longest chain is a, b, d = 9 (a, c, d is 6).
        let mut b = TaskGraphBuilder::default();
        let k = b.codelet("k").unwrap();
        let h = b.add_handle(Handle::bytes(8)).unwrap();
        for mode in [AccessMode::W, AccessMode::R, AccessMode::R, AccessMode::RW] {
            b.submit(k, 0.0, 0, &[Access::new(h, mode)]).unwrap();
        }
        let g = b.build().unwrap();
        let path = |w: [f64; 4]| critical_path(&g, |t| w[t.index()]);
        assert_eq!(path([1.0, 5.0, 2.0, 3.0]), 9.0);
        assert_eq!(path([1.0, 2.0, 5.0, 3.0]), 9.0);
        assert_eq!(path([1.0, 1.0, 1.0, 0.0]), 2.0);
    }

    /// Counting the ratios places the tasks as sorting them does: decreasing ratio, then
    /// index, with -0.0 below 0.0 and the infinities at the ends, the tasks without a ratio
    /// left out, whether a few ratios repeat (counted) or every task has its own (more than
    /// the counting takes: sorted).
    #[test]
    fn ordering_by_ratio_counts_as_sorting_does() {
        use rand::{RngExt, SeedableRng, rngs::StdRng};
        let few = [0.5, 2.0, -1.0, 0.0, -0.0, f64::INFINITY, 13.25];
        for seed in 0..10 {
            let mut rng = StdRng::seed_from_u64(seed);
            for distinct in [false, true] {
                let items: Vec<(f64, u32)> = (0..6000u32)
                    .map(|i| {
                        let r = if distinct {
                            rng.random_range(-5.0..5.0)
                        } else {
                            few[rng.random_range(0..few.len())]
                        };
                        (r, i)
                    })
                    .collect();
                // Every seventh task runs nowhere: it has no ratio and no place.
                let mut sorted: Vec<(f64, u32)> =
                    items.iter().copied().filter(|&(_, i)| i % 7 != 0).collect();
                sorted.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                let bits = |v: &[(f64, u32)]| -> Vec<(u64, u32)> {
                    v.iter().map(|&(r, i)| (r.to_bits(), i)).collect()
                };
                let counted =
                    by_decreasing_ratio(items.len(), |i| (i % 7 != 0).then_some(items[i].0));
                assert_eq!(bits(&counted), bits(&sorted));
            }
        }
    }

    /// The area bound of tasks with these fastest CPU and GPU means.
    fn area_bound_of(cpu: &[f64], gpu: &[f64], ncpu: f64, ngpu: f64) -> f64 {
        area_bound(cpu.len(), &|t| (cpu[t.index()], gpu[t.index()]), ncpu, ngpu)
    }

    #[test]
    fn area_bound_by_hand() {
        // One CPU, one GPU; A: c = 10, g = 1; B: c = 2, g = 1. The GPU takes A, then 1/3 of B:
        // GPU 1 + 1/3, CPU 2/3 · 2.
        let t = area_bound_of(&[10.0, 2.0], &[1.0, 1.0], 1.0, 1.0);
        assert!((t - 4.0 / 3.0).abs() < 1e-12, "{t}");
        // GPU-only work heavier than everything else: the GPUs bound it.
        let t = area_bound_of(&[f64::INFINITY, 1.0], &[10.0, 1.0], 4.0, 1.0);
        assert!((t - 10.0).abs() < 1e-12, "{t}");
        // CPU-only work heavier: the CPUs bound it.
        let t = area_bound_of(&[8.0, 1.0], &[f64::INFINITY, 1.0], 1.0, 1.0);
        assert!((t - 8.0).abs() < 1e-12, "{t}");
        // One kind only.
        assert_eq!(
            area_bound_of(&[3.0, 5.0], &[f64::INFINITY; 2], 2.0, 0.0),
            4.0
        );
    }
}
