//! Run an HPL scenario's workload at a given shape, without the scenario runner:
//! `cargo run --release --example hpl_run -- SCENARIO.toml NODES GPUS N [E_MAX]`.
//! Reads the scenario's `machine` (a cluster file) and `[workload]` table, replaces `n` (and the
//! GPU DGEMM model's `e_max` when given), and prints one line:
//! `nodes gpus P Q N gflops makespan_s`. Used by scripts/hpl-calibrate.sh and
//! scripts/hpl-hdpex-predictions.sh.

use hetsim::workload::{HplSpec, ProgramGenerator};

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("hpl_run: {msg}");
    std::process::exit(2)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 5 {
        fail("usage: hpl_run SCENARIO.toml NODES GPUS N [E_MAX]");
    }
    let num = |i: usize| {
        a[i].parse::<f64>()
            .unwrap_or_else(|_| fail(format!("`{}` is not a number", a[i])))
    };
    let path = std::path::Path::new(&a[1]);
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(e));
    let mut doc: toml::Table = toml::from_str(&text).unwrap_or_else(|e| fail(e));
    let machine = doc
        .get("scenario")
        .and_then(|s| s.get("machine"))
        .and_then(|m| m.as_str())
        .unwrap_or_else(|| fail("no scenario.machine"))
        .to_string();
    let cluster_path = path
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join(machine);
    let cluster = hetsim::cluster::load(&cluster_path)
        .and_then(|c| c.with_shape(num(2) as u32, num(3) as u32))
        .unwrap_or_else(|e| fail(e));
    let mut w = doc
        .remove("workload")
        .and_then(|w| w.as_table().cloned())
        .unwrap_or_else(|| fail("no [workload]"));
    w.remove("kind");
    w.insert("n".into(), toml::Value::Integer(num(4) as i64));
    if a.len() > 5 {
        let g = w
            .get_mut("gpu_dgemm")
            .and_then(|g| g.as_table_mut())
            .unwrap_or_else(|| fail("no [workload.gpu_dgemm]"));
        g.insert("e_max".into(), toml::Value::Float(num(5)));
    }
    let spec: HplSpec = w.try_into().unwrap_or_else(|e| fail(e));
    let plan = spec.plan(&cluster).unwrap_or_else(|e| fail(e));
    let prog = spec.generate(&cluster).unwrap_or_else(|e| fail(e));
    let rep =
        hetsim::mpi::exec::run(&prog, &cluster, &Default::default()).unwrap_or_else(|e| fail(e));
    println!(
        "{} {} {} {} {} {:.1} {:.4}",
        cluster.nodes(),
        cluster.gpus_per_node(),
        plan.p,
        plan.q,
        spec.n,
        spec.counted_flops() / rep.makespan_s / 1e9,
        rep.makespan_s
    );
}
