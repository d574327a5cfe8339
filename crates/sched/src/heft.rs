//! `heft`: classic HEFT (Topcuoglu, Hariri and Wu, 2002) as a static list scheduler, for
//! comparison with StarPU's dynamic policies. (StarPU itself maps the name `heft` to `dmda`;
//! this is the textbook algorithm.)
//!
//! **Planning**, once, at the first push, over the whole graph ([`View::graph`]), with the
//! costs, placement and execution of `crate::list` (mean cost `w̄` of a task over the workers
//! that can run it; edge cost `c̄ = L̄ + bytes / B̄` between distinct memory nodes, free within
//! one; earliest finish time with insertion):
//!
//! - *Upward rank.* `rank(t) = w̄(t) + max over successors s of (c̄(t, s) + rank(s))`, with
//!   `c̄(t, s)` the cost of the edge's bytes (0 without bytes).
//! - *Assignment.* Tasks by decreasing rank (ties: topological position, which is submission
//!   order for generated workloads). Each goes to the worker with the earliest finish time
//!   `EFT = EST + length`, where `EST` is the start of the earliest idle slot of the worker, at
//!   or after the data-ready time, long enough for the task (insertion policy). Ties go to the
//!   lowest worker id.
//!
//! **Execution.** Each worker runs its planned tasks in planned start order: it pops only its
//! next planned task, and only once that task is ready (pushed); otherwise nothing. The runtime
//! then times everything itself (real transfers with contention, drawn kernel durations); the
//! plan fixes only who runs what, in which order. No prefetch.

use crate::list::{Costs, ListPlanner, ListScheduler, Placement};
pub use crate::list::{Plan, Slot};
use hetsim_runtime::{View, WorkerId};
use hetsim_taskgraph::TaskId;

/// The HEFT policy: plans at the first push, then executes the plan.
pub type Heft = ListScheduler<HeftRule>;

/// HEFT's planning rule.
#[derive(Debug)]
pub struct HeftRule;

impl ListPlanner for HeftRule {
    const NAME: &'static str = "heft";
    type Output = Plan;

    fn schedule(output: &Plan) -> &Plan {
        output
    }

    /// The HEFT plan of the whole graph.
    fn compute_plan(view: &View<'_>) -> Plan {
        let g = view.graph();
        let n = g.num_tasks();
        let workers = view.workers();
        let costs = Costs::of(view);

        // Upward ranks, successors first.
        let mut rank = vec![0.0; n];
        for &t in costs.topo.iter().rev() {
            let mut tail: f64 = 0.0;
            for &s in g.successors(t) {
                tail = tail.max(costs.transfer_s(costs.edge_bytes(t, s)) + rank[s.index()]);
            }
            rank[t.index()] = costs.mean[t.index()] + tail;
        }
        let mut order: Vec<TaskId> = costs.topo.clone();
        order.sort_by(|a, b| {
            rank[b.index()]
                .total_cmp(&rank[a.index()])
                .then(costs.pos[a.index()].cmp(&costs.pos[b.index()]))
        });

        // Earliest finish time with insertion.
        let mut placed = Placement::new(&costs, view);
        for &t in &order {
            if !view.is_local(t) {
                placed.place_elsewhere(&costs, t);
                continue;
            }
            let mut best: Option<(WorkerId, crate::list::Fit)> = None;
            for w in workers {
                let Some(fit) = placed.fit(&costs, workers, t, w) else {
                    continue;
                };
                if best.is_none_or(|b| fit.finish_s < b.1.finish_s) {
                    best = Some((w.id, fit));
                }
            }
            let (w, fit) = best.expect("some worker can run the task");
            placed.place(t, w, fit);
        }
        Plan {
            rank_s: rank,
            order,
            slots: placed.into_slots(),
            mean_latency_s: costs.lat,
            mean_bandwidth: costs.bw,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scheduler;
    use hetsim_platform::machine;
    use hetsim_runtime::fixture::Fixture;
    use hetsim_runtime::{FlopRate, RunConfig};
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraph, TaskGraphBuilder};

    /// RAM and one GPU, linked at 1 GB/s with 1 ms latency; two CPU cores.
    fn machine() -> machine::Machine {
        let t = "[machine]\nname = \"t\"\n\
                 [[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\ncapacity = \"64 GiB\"\n\
                 [[memory_nodes]]\nname = \"GPU0\"\nkind = \"gpu\"\ncapacity = \"8 GiB\"\n\
                 [[cpus]]\ncount = 2\nmodel = \"c\"\nmemory = \"RAM\"\n\
                 [[gpus]]\nname = \"GPU0\"\nmodel = \"g\"\nmemory = \"GPU0\"\n\
                 [[links]]\nname = \"L\"\nbandwidth = \"1e9 B/s\"\nlatency = \"1e-3 s\"\n\
                 [[routes]]\nsrc = \"RAM\"\ndst = \"GPU0\"\nlinks = [\"L\"]\nsymmetric = true\n";
        machine::from_str(t, "t.toml").unwrap()
    }

    /// GPU 4 Gflop/s, CPU 1 Gflop/s: a task of f Mflop takes f/4 ms on the GPU, f ms on a CPU.
    const RATES: FlopRate = FlopRate {
        cpu_flops_per_sec: 1e9,
        gpu_flops_per_sec: 4e9,
    };

    const S: u64 = 1_000_000;

    /// Fork-join A → {B, C} → D on 1 MB tiles (A writes h0; B, C read it and write h1, h2; D
    /// reads h1, h2), plus an independent task E writing h3. Mflop: A 4, B 40, C 2, D 4, E 1.
    fn fork_join() -> TaskGraph {
        let mut b = TaskGraphBuilder::new();
        let cl = b.codelet("k").unwrap();
        let h: Vec<_> = (0..4)
            .map(|_| b.add_handle(Handle::bytes(S)).unwrap())
            .collect();
        let (r, w) = (AccessMode::R, AccessMode::W);
        b.submit(cl, 4e6, 0, &[Access::new(h[0], w)]).unwrap();
        b.submit(cl, 40e6, 0, &[Access::new(h[0], r), Access::new(h[1], w)])
            .unwrap();
        b.submit(cl, 2e6, 0, &[Access::new(h[0], r), Access::new(h[2], w)])
            .unwrap();
        b.submit(cl, 4e6, 0, &[Access::new(h[1], r), Access::new(h[2], r)])
            .unwrap();
        b.submit(cl, 1e6, 0, &[Access::new(h[3], w)]).unwrap();
        b.build().unwrap()
    }

    fn config() -> RunConfig {
        RunConfig {
            ncpu: Some(1),
            ncuda: Some(1),
            ..RunConfig::default()
        }
    }

    fn close(got: f64, want_ms: f64) {
        assert!(
            (got - want_ms * 1e-3).abs() < 1e-12,
            "{got} s vs {want_ms} ms"
        );
    }

    #[test]
    fn ranks_and_earliest_finish_times_on_a_fork_join() {
        // Workers: GPU0 = 0, CPU = 1. Edge cost c̄ = L̄ + 1 MB / B̄ = 1 + 1 = 2 ms.
        // Mean costs (ms): A 2.5, B 25, C 1.25, D 2.5, E 0.625.
        // Ranks: D 2.5; B 25 + 2 + 2.5 = 29.5; C 1.25 + 2 + 2.5 = 5.75;
        //        A 2.5 + max(2 + 29.5, 2 + 5.75) = 34; E 0.625.
        let m = machine();
        let g = fork_join();
        let f = Fixture::new(&m, &g, &RATES, &config());
        let plan = Heft::compute_plan(&f.view(0.0));
        close(plan.mean_latency_s, 1.0);
        assert!((plan.mean_bandwidth - 1e9).abs() < 1e-3);
        for (t, want) in [34.0, 29.5, 5.75, 2.5, 0.625].into_iter().enumerate() {
            close(plan.rank_s[t], want);
        }
        assert_eq!(
            plan.order,
            [TaskId(0), TaskId(1), TaskId(2), TaskId(3), TaskId(4)]
        );
        // EFTs (ms):
        // A: GPU 0 + 1 = 1, CPU 4 → GPU [0, 1].
        // B: GPU ready 1 → 1 + 10 = 11; CPU ready 1 + 2 = 3 → 43 → GPU [1, 11].
        // C: GPU free at 11 → 11.5; CPU ready 3 → 5 → CPU [3, 5].
        // D: GPU ready max(11, 5 + 2) = 11 → 12; CPU ready max(11 + 2, 5) = 13 → 17
        //    → GPU [11, 12].
        // E: GPU free at 12 → 12.25; CPU idle slot [0, 3) fits it: 0 + 1 = 1 → CPU [0, 1],
        //    inserted before C.
        let want = [
            (0, 0.0, 1.0),
            (0, 1.0, 11.0),
            (1, 3.0, 5.0),
            (0, 11.0, 12.0),
            (1, 0.0, 1.0),
        ];
        for (t, &(w, st, fin)) in want.iter().enumerate() {
            let s = plan.slots[t];
            assert_eq!(s.worker, WorkerId(w), "task {t}");
            close(s.start_s, st);
            close(s.finish_s, fin);
        }
        close(plan.makespan_s(), 12.0);
    }

    #[test]
    fn workers_pop_their_planned_tasks_in_order_once_ready() {
        let m = machine();
        let g = fork_join();
        let f = Fixture::new(&m, &g, &RATES, &config());
        let view = f.view(0.0);
        let mut s = Heft::new();
        // Roots A and E are ready at the start.
        s.push(TaskId(0), &view, &mut Vec::new());
        s.push(TaskId(4), &view, &mut Vec::new());
        assert_eq!(s.planned(WorkerId(0)), [TaskId(0), TaskId(1), TaskId(3)]);
        assert_eq!(s.planned(WorkerId(1)), [TaskId(4), TaskId(2)]);
        assert_eq!(s.pop(WorkerId(1), &view), Some(TaskId(4)));
        // C is the CPU's next task but is not ready: nothing, though A is queued.
        assert_eq!(s.pop(WorkerId(1), &view), None);
        assert_eq!(s.pop(WorkerId(0), &view), Some(TaskId(0)));
        // A ended: B and C ready. C was pushed first, but the GPU's next is B.
        s.push(TaskId(2), &view, &mut Vec::new());
        s.push(TaskId(1), &view, &mut Vec::new());
        assert_eq!(s.pop(WorkerId(0), &view), Some(TaskId(1)));
        assert_eq!(s.pop(WorkerId(0), &view), None);
        assert_eq!(s.pop(WorkerId(1), &view), Some(TaskId(2)));
        s.push(TaskId(3), &view, &mut Vec::new());
        assert_eq!(s.pop(WorkerId(1), &view), None);
        assert_eq!(s.pop(WorkerId(0), &view), Some(TaskId(3)));
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn initial_data_in_ram_counts_on_other_nodes() {
        // One task reading 1 GB from RAM: GPU 0.25 ms + 1 ms + 1 s transfer, CPU 1 ms → CPU.
        let m = machine();
        let mut b = TaskGraphBuilder::new();
        let cl = b.codelet("k").unwrap();
        let h = b.add_handle(Handle::bytes(1_000_000_000)).unwrap();
        b.submit(cl, 1e6, 0, &[Access::new(h, AccessMode::R)])
            .unwrap();
        let g = b.build().unwrap();
        let f = Fixture::new(&m, &g, &RATES, &config());
        let plan = Heft::compute_plan(&f.view(0.0));
        assert_eq!(plan.slots[0].worker, WorkerId(1));
        close(plan.slots[0].finish_s, 1.0);
    }
}
