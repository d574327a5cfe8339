//! Task graphs read from files (`workload.kind = "taskgraph"`): StarPU 1.4.12's own recordings
//! (`traces/starpu/`, PROVENANCE.md there) against hetsim's generators and against StarPU's
//! `starpu_replay` (`docs/validation/starpu14-replay.csv`), the other formats, and bad input.

use std::path::Path;

use crate::common::hetsim;
use hetsim::workload::import::{GpuSynchronous, ImportOptions, Imported, import};
use hetsim::workload::{Precision, TaskGraph, TaskId, cholesky};

fn repo(p: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn read(p: &str, gpu_synchronous: GpuSynchronous) -> Imported {
    let options = ImportOptions {
        format: None,
        gpu_synchronous,
    };
    import(&repo(p), &options).unwrap_or_else(|e| panic!("{e}"))
}

/// Where `a` and `b` differ as graphs: tasks (codelet, priority, flops to the 6 decimals of a
/// GFlop figure, model size, accesses with handles matched by first use), edges, hints.
fn differences(a: &TaskGraph, b: &TaskGraph) -> Vec<String> {
    let mut out = Vec::new();
    if a.num_tasks() != b.num_tasks() {
        return vec![format!("{} tasks against {}", a.num_tasks(), b.num_tasks())];
    }
    // Handles are numbered differently (file: by first use; generator: by tile); match them
    // by first use in submission order.
    let mut map: Vec<Option<u32>> = vec![None; a.handles().len()];
    for t in a.task_ids() {
        let (x, y) = (a.task(t), b.task(t));
        if a.task_codelet_name(t) != b.task_codelet_name(t) || x.priority != y.priority {
            out.push(format!(
                "task {}: {} prio {} against {} prio {}",
                t.0,
                a.task_codelet_name(t),
                x.priority,
                b.task_codelet_name(t),
                y.priority
            ));
        }
        if (x.flops / 1e9 - y.flops / 1e9).abs() > 1e-6 || x.model_size_bytes() != y.model_size_bytes() {
            out.push(format!("task {}: flops or size differ", t.0));
        }
        let (aa, ba) = (a.accesses(t), b.accesses(t));
        if aa.len() != ba.len() {
            out.push(format!("task {}: {} buffers against {}", t.0, aa.len(), ba.len()));
            continue;
        }
        for (p, q) in aa.iter().zip(ba) {
            let m = map[p.handle.index()].get_or_insert(q.handle.0);
            if *m != q.handle.0 || p.mode != q.mode {
                out.push(format!("task {}: access {:?} against {:?}", t.0, p, q));
            }
        }
        if a.successors(t) != b.successors(t) {
            out.push(format!(
                "task {}: successors {:?} against {:?}",
                t.0,
                a.successors(t),
                b.successors(t)
            ));
        }
    }
    let hints = |g: &TaskGraph| -> Vec<(u32, u32)> {
        g.wont_use_hints().iter().map(|h| (h.handle.0, h.after.0)).collect()
    };
    let mapped: Vec<(u32, u32)> = hints(a)
        .into_iter()
        .map(|(h, t)| (map[h as usize].unwrap_or(u32::MAX), t))
        .collect();
    if mapped != hints(b) {
        out.push(format!("hints {mapped:?} against {:?}", hints(b)));
    }
    if a.gpu_synchronous_codelets().collect::<Vec<_>>()
        != b.gpu_synchronous_codelets().collect::<Vec<_>>()
    {
        out.push("GPU-synchronous codelets differ".into());
    }
    out
}

#[test]
fn the_recorded_cholesky_is_hetsims_cholesky() {
    let rec = read(
        "traces/starpu/cholesky-9600-dmdas/tasks.rec",
        GpuSynchronous::Codelets(vec!["chol_model_potrf".into()]),
    );
    let generated = cholesky(9600, 960, Precision::Single).unwrap();
    let diff = differences(&rec.graph, &generated);
    assert!(diff.is_empty(), "{} differences:\n{}", diff.len(), diff[..diff.len().min(20)].join("\n"));
    let _ = TaskId(0);
}
