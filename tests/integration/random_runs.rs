//! Random simulations keep their invariants: proptest draws task graphs (handle sizes, access
//! modes, priorities, fan-in and fan-out through shared handles) on machines of 1 to 8 GPUs
//! (memories from just enough for the largest task to roomy, link and kernel figures across
//! their valid ranges), runs them under every registered scheduler with the per-event checks
//! of `runtime_semantics`, and checks besides: no NaN or infinity in any report, a run that
//! cannot finish is an error (exit status 2) rather than a hang or a panic, and the same seed
//! gives the same report, event for event.

use proptest::prelude::*;

use hetsim::machine::{self, Machine};
use hetsim::runtime::{FlopRate, RunConfig};
use hetsim::sched;
use hetsim::workload::{Access, AccessMode, Handle, TaskGraph, TaskGraphBuilder};

use crate::runtime_semantics::{assert_invariants, run_observed};

/// A machine: RAM and `gpus` GPUs of `gpu_bytes` each, each GPU behind its own PCIe pair and a
/// shared host link.
fn machine(gpus: usize, gpu_bytes: u64, bw: f64, lat: f64) -> Machine {
    let mut t = String::from(
        "[machine]\nname = \"random\"\n\
         [[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\ncapacity = \"1 TiB\"\n",
    );
    for g in 0..gpus {
        t += &format!(
            "[[memory_nodes]]\nname = \"GPU{g}\"\nkind = \"gpu\"\ncapacity = \"{gpu_bytes} B\"\n"
        );
    }
    t += "[[cpus]]\ncount = 12\nmodel = \"cpu\"\nmemory = \"RAM\"\n";
    for g in 0..gpus {
        t += &format!("[[gpus]]\nname = \"GPU{g}\"\nmodel = \"gpu\"\nmemory = \"GPU{g}\"\n");
    }
    t += &format!("[[links]]\nname = \"Host\"\nbandwidth = \"{bw} B/s\"\nlatency = 0\n");
    for g in 0..gpus {
        t += &format!(
            "[[links]]\nname = \"RAM-GPU{g}\"\nbandwidth = \"{bw} B/s\"\nlatency = \"{lat} s\"\n\
             [[links]]\nname = \"GPU{g}-RAM\"\nbandwidth = \"{bw} B/s\"\nlatency = \"{lat} s\"\n\
             [[routes]]\nsrc = \"RAM\"\ndst = \"GPU{g}\"\nlinks = [\"RAM-GPU{g}\", \"Host\"]\n\
             [[routes]]\nsrc = \"GPU{g}\"\ndst = \"RAM\"\nlinks = [\"GPU{g}-RAM\", \"Host\"]\n"
        );
    }
    machine::from_str(&t, "random-machine.toml").expect("the drawn machine is valid")
}

/// One task: (handle indices with their modes, flops, priority).
type TaskSpec = (Vec<(usize, u8)>, f64, i32);

/// A graph drawn: handle sizes, then tasks in submission order.
#[derive(Debug, Clone)]
struct GraphSpec {
    handles: Vec<u64>,
    tasks: Vec<TaskSpec>,
}

fn graph_spec() -> impl Strategy<Value = GraphSpec> {
    (1usize..12).prop_flat_map(|nh| {
        let handles = proptest::collection::vec(1u64 << 10..64 << 20, nh);
        let access = (0..nh, 0u8..3);
        let task = (
            proptest::collection::vec(access, 1..=4.min(nh)),
            1e3f64..1e12,
            -5i32..5,
        );
        (handles, proptest::collection::vec(task, 1..30))
            .prop_map(|(handles, tasks)| GraphSpec { handles, tasks })
    })
}

fn build(spec: &GraphSpec) -> TaskGraph {
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let h: Vec<_> = spec
        .handles
        .iter()
        .map(|&bytes| b.add_handle(Handle::bytes(bytes)).unwrap())
        .collect();
    for (accesses, flops, prio) in &spec.tasks {
        let mut seen = Vec::new();
        let acc: Vec<Access> = accesses
            .iter()
            .filter(|(i, _)| {
                // A handle at most once per task.
                let fresh = !seen.contains(i);
                seen.push(*i);
                fresh
            })
            .map(|&(i, m)| {
                let mode = [AccessMode::R, AccessMode::W, AccessMode::RW][usize::from(m)];
                Access::new(h[i], mode)
            })
            .collect();
        b.submit(cl, *flops, *prio, &acc).unwrap();
    }
    b.build().unwrap()
}

/// The largest task's data: the least GPU memory that can run every task.
fn largest_task_bytes(spec: &GraphSpec) -> u64 {
    spec.tasks
        .iter()
        .map(|(acc, _, _)| {
            let mut ids: Vec<usize> = acc.iter().map(|a| a.0).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.iter().map(|&i| spec.handles[i]).sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_on_random_machines_keep_the_invariants(
        spec in graph_spec(),
        gpus in 1usize..=8,
        // 1: just room for the largest task's data (tight); up to 64 times that (roomy).
        room in prop_oneof![Just(1.0f64), 1.0f64..4.0, Just(64.0)],
        bw in prop_oneof![Just(1e3f64), 1e6f64..1e12, Just(1e15)],
        lat in prop_oneof![Just(0.0f64), 1e-9f64..1e-3, Just(1.0)],
        cpu_rate in prop_oneof![Just(1.0f64), 1e6f64..1e12],
        gpu_rate in prop_oneof![Just(1e19f64), 1e9f64..1e15],
        ncpu in 0u32..4,
        seed in 0u64..1000,
    ) {
        let g = build(&spec);
        let need = largest_task_bytes(&spec);
        let m = machine(gpus, ((need as f64 * room) as u64).max(1 << 20), bw, lat);
        let kernels = FlopRate { cpu_flops_per_sec: cpu_rate, gpu_flops_per_sec: gpu_rate };
        let config = RunConfig {
            ncpu: Some(ncpu),
            seed,
            ..RunConfig::default()
        };
        for name in sched::names() {
            match run_observed(&m, &g, name, &config, &kernels) {
                Ok((r, inv)) => {
                    assert_invariants(&g, &r, &inv);
                    let shown = format!("{r:?}");
                    prop_assert!(
                        !shown.contains("NaN") && !shown.contains("inf"),
                        "{name}: a non-finite figure in {shown}"
                    );
                    // The same seed: the same report and the same events.
                    let (again, inv2) = run_observed(&m, &g, name, &config, &kernels).unwrap();
                    prop_assert_eq!(format!("{again:?}"), shown);
                    prop_assert_eq!((inv.events, inv.fingerprint), (inv2.events, inv2.fingerprint));
                }
                // A run that cannot be done (no worker can hold a task, a diagnosed deadlock)
                // is bad input, said so.
                Err(e) => prop_assert_eq!(e.exit_code(), 2, "{}: {}", name, e),
            }
        }
    }
}
