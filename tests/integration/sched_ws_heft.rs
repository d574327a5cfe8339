//! Work stealing and HEFT on real runs: every registered scheduler (`sched::REGISTRY`) completes Cholesky,
//! LU and GEMM with its queue drained; ws and lws steal; heft runs exactly its plan (each task
//! on its planned worker, in planned order) and is deterministic.

use hetsim::machine::{self, Machine};
use hetsim::runtime::{
    FlopRate, Observer, RunConfig, SimEvent, WorkerId, simulate, simulate_observed,
};
use hetsim::sched::{self, Heft, WorkStealing};
use hetsim::workload::{Precision, TaskId, TiledAlgorithm};

const NB: u64 = 960;
const TILE: u64 = NB * NB * 4;

/// RAM, `ngpu` GPUs of `gpu_bytes` each behind their own PCIe link, 8 CPU cores.
fn machine(ngpu: usize, gpu_bytes: u64) -> Machine {
    let mut t = String::from(
        "[machine]\nname = \"t\"\n\
         [[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\ncapacity = \"64 GiB\"\n",
    );
    for g in 0..ngpu {
        t += &format!(
            "[[memory_nodes]]\nname = \"GPU{g}\"\nkind = \"gpu\"\ncapacity = \"{gpu_bytes} B\"\n"
        );
    }
    t += "[[cpus]]\ncount = 8\nmodel = \"cpu\"\nmemory = \"RAM\"\n";
    for g in 0..ngpu {
        t += &format!(
            "[[gpus]]\nname = \"GPU{g}\"\nmodel = \"gpu\"\nmemory = \"GPU{g}\"\n\
             [[links]]\nname = \"L{g}\"\nbandwidth = \"6e9 B/s\"\nlatency = \"1e-5 s\"\n\
             [[routes]]\nsrc = \"RAM\"\ndst = \"GPU{g}\"\nlinks = [\"L{g}\"]\nsymmetric = true\n"
        );
    }
    machine::from_str(&t, "t.toml").unwrap()
}

const KERNELS: FlopRate = FlopRate {
    cpu_flops_per_sec: 1e10,
    gpu_flops_per_sec: 1e12,
};

fn config(seed: u64) -> RunConfig {
    RunConfig {
        seed,
        ncpu: Some(4),
        ..RunConfig::default()
    }
}

#[test]
fn every_scheduler_completes_every_workload_and_drains_its_queues() {
    for (label, m) in [
        ("roomy", machine(2, 1 << 30)),
        ("tight", machine(2, 6 * TILE)),
    ] {
        for kind in [
            TiledAlgorithm::Cholesky,
            TiledAlgorithm::Lu,
            TiledAlgorithm::Gemm,
        ] {
            let g = kind.generate(6 * NB, NB, Precision::Single).unwrap();
            for name in sched::names() {
                let mut s = sched::by_name(name, 1).unwrap();
                let r = simulate(&m, &g, &KERNELS, s.as_mut(), &config(1))
                    .unwrap_or_else(|e| panic!("{name} on {label} {kind:?}: {e}"));
                assert_eq!(r.tasks as usize, g.num_tasks(), "{name} {label} {kind:?}");
                assert_eq!(s.queued(), 0, "{name} {label} {kind:?}: tasks left queued");
            }
        }
    }
}

#[test]
fn work_stealing_steals_on_a_real_run() {
    let m = machine(2, 1 << 30);
    let g = TiledAlgorithm::Cholesky
        .generate(12 * NB, NB, Precision::Single)
        .unwrap();
    for mut s in [WorkStealing::ws(), WorkStealing::lws()] {
        let r = simulate(&m, &g, &KERNELS, &mut s, &config(1)).unwrap();
        assert_eq!(r.tasks as usize, g.num_tasks());
        assert!(s.steals() > 0, "no steal");
        assert!((s.steals() as usize) < g.num_tasks());
    }
}

/// Records which worker started which task, in order.
#[derive(Default)]
struct Starts(Vec<(TaskId, WorkerId)>);

impl Observer for Starts {
    fn event(&mut self, _at: f64, e: &SimEvent<'_>) {
        if let SimEvent::TaskStart { task, worker, .. } = *e {
            self.0.push((task, worker));
        }
    }
}

#[test]
fn heft_runs_exactly_its_plan() {
    let m = machine(2, 1 << 30);
    for kind in [TiledAlgorithm::Cholesky, TiledAlgorithm::Lu] {
        let g = kind.generate(8 * NB, NB, Precision::Single).unwrap();
        let mut s = Heft::new();
        let mut starts = Starts::default();
        let r = simulate_observed(&m, &g, &KERNELS, &mut s, &config(1), &mut starts).unwrap();
        assert_eq!(r.tasks as usize, g.num_tasks());
        let plan = s.plan().expect("planned at the first push");
        // Each task ran on its planned worker; each worker ran its tasks in planned order.
        let nw = r.workers.len();
        let mut ran: Vec<Vec<TaskId>> = vec![Vec::new(); nw];
        for &(t, w) in &starts.0 {
            assert_eq!(plan.slots[t.index()].worker, w, "task {}", t.0);
            ran[w.index()].push(t);
        }
        for (w, tasks) in ran.iter().enumerate() {
            let starts: Vec<f64> = tasks
                .iter()
                .map(|t| plan.slots[t.index()].start_s)
                .collect();
            assert!(
                starts.windows(2).all(|p| p[0] <= p[1]),
                "worker {w} ran out of planned order"
            );
        }
        // Ranks decrease along the placement order.
        assert!(
            plan.order
                .windows(2)
                .all(|p| plan.rank_s[p[0].index()] >= plan.rank_s[p[1].index()])
        );
        // The plan uses the GPUs.
        let gpu_tasks: u64 = r
            .workers
            .iter()
            .filter(|w| w.kind == "gpu")
            .map(|w| w.tasks)
            .sum();
        assert!(gpu_tasks > 0);
    }
}

#[test]
fn heft_and_work_stealing_are_deterministic() {
    let m = machine(2, 6 * TILE);
    let g = TiledAlgorithm::Cholesky
        .generate(8 * NB, NB, Precision::Single)
        .unwrap();
    for name in ["ws", "lws", "heft"] {
        let run = || {
            let mut s = sched::by_name(name, 3).unwrap();
            simulate(&m, &g, &KERNELS, s.as_mut(), &config(3)).unwrap()
        };
        assert_eq!(run(), run(), "{name}");
    }
}
