//! Unit tests of the HPL generator: input errors, and program shapes counted by hand.

use super::*;
use crate::{Kernel, Op};

fn node4() -> Cluster {
    let m =
        hetsim_platform::machine::load(hetsim_testkit::repo("calibration/hdpex-p100-node.toml"))
            .unwrap();
    Cluster::single_node(m)
}

fn spec(n: u64, nb: u64) -> HplSpec {
    toml::from_str(&format!(
        "n = {n}\nnb = {nb}\nlookahead = 0\npanel = \"gpu\"\n\
         gpu_dgemm = {{ peak = \"4.7 Tflop/s\", e_max = 0.8, s_half = 0 }}\n"
    ))
    .unwrap()
}

fn field(e: &InputError) -> &str {
    e.location.field.as_deref().unwrap_or("")
}

#[test]
fn error_n_zero() {
    let e = spec(0, 1).plan(&node4()).unwrap_err();
    assert_eq!(field(&e), "workload.n");
}

#[test]
fn error_nb_zero() {
    let e = spec(10, 0).plan(&node4()).unwrap_err();
    assert_eq!(field(&e), "workload.nb");
}

#[test]
fn error_nb_larger_than_n() {
    let e = spec(10, 20).plan(&node4()).unwrap_err();
    assert_eq!(field(&e), "workload.nb");
    assert!(e.message.contains("larger"), "{}", e.message);
}

#[test]
fn error_lookahead_two() {
    let e = HplSpec {
        lookahead: 2,
        ..spec(400, 100)
    }
    .plan(&node4())
    .unwrap_err();
    assert_eq!(field(&e), "workload.lookahead");
}

#[test]
fn error_p_does_not_divide() {
    let e = HplSpec {
        p: Some(3),
        ..spec(400, 100)
    }
    .plan(&node4())
    .unwrap_err();
    assert_eq!(field(&e), "workload.p");
    assert!(e.message.contains("4 ranks"), "{}", e.message);
}

#[test]
fn error_q_does_not_divide() {
    let e = HplSpec {
        q: Some(3),
        ..spec(400, 100)
    }
    .plan(&node4())
    .unwrap_err();
    assert_eq!(field(&e), "workload.q");
}

#[test]
fn error_grid_does_not_match_ranks() {
    let e = HplSpec {
        p: Some(2),
        q: Some(3),
        ..spec(400, 100)
    }
    .plan(&node4())
    .unwrap_err();
    assert_eq!(field(&e), "workload.p");
    assert!(e.message.contains("2 × 3 = 6"), "{}", e.message);
}

#[test]
fn error_efficiency_out_of_range() {
    let mut s = spec(400, 100);
    s.gpu_dgemm.e_max = 1.5;
    let e = s.plan(&node4()).unwrap_err();
    assert_eq!(field(&e), "workload.gpu_dgemm.e_max");
}

#[test]
fn error_peak_unit() {
    let mut s = spec(400, 100);
    s.gpu_dgemm.peak = RawQuantity::Text("4.7 GB/s".into());
    let e = s.plan(&node4()).unwrap_err();
    assert_eq!(field(&e), "workload.gpu_dgemm.peak");
}

#[test]
fn error_negative_half_size() {
    let mut s = spec(400, 100);
    s.gpu_dgemm.s_half = -1.0;
    let e = s.plan(&node4()).unwrap_err();
    assert_eq!(field(&e), "workload.gpu_dgemm.s_half");
}

#[test]
fn error_cpu_panel_without_cpu_model() {
    let e = HplSpec {
        panel: PanelUnit::Cpu,
        ..spec(400, 100)
    }
    .plan(&node4())
    .unwrap_err();
    assert_eq!(field(&e), "workload.cpu_dgemm");
}

#[test]
fn error_matrix_too_large_for_gpu_memory() {
    // One rank (P = Q = 1) needs (N² + 4·N·NB)·8 bytes; 16 GiB = 2^31 doubles. With
    // NB = 384: N² + 1536·N ≤ 2^31 gives N ≤ 45 579, so the largest multiple of 384 is
    // 118 × 384 = 45 312 (45 312² + 1536·45 312 = 2 122 776 576 ≤ 2 147 483 648, and
    // 45 696 gives 2 158 313 472 >).
    let m =
        hetsim_platform::machine::load(hetsim_testkit::repo("calibration/hdpex-p100-node.toml"))
            .unwrap();
    // One GPU: square_grid(1) = 1 × 1; fits at 45 312, not at 45 696.
    let c = Cluster::single_node(m).with_shape(1, 1).unwrap();
    assert!(spec(45_312, 384).plan(&c).is_ok());
    let e = spec(45_696, 384).plan(&c).unwrap_err();
    assert_eq!(field(&e), "workload.n");
    assert!(e.message.contains("45312"), "{}", e.message);
    assert!(e.message.contains("16.000 GiB"), "{}", e.message);
}

#[test]
fn error_unknown_field_and_variant() {
    let base = "n = 400\nnb = 100\ngpu_dgemm = { peak = \"4.7 Tflop/s\", e_max = 0.8, \
                s_half = 0 }\n";
    assert!(toml::from_str::<HplSpec>(base).is_ok());
    let e = toml::from_str::<HplSpec>(&format!("{base}depths = 1\n")).unwrap_err();
    assert!(e.to_string().contains("depths"), "{e}");
    let e = toml::from_str::<HplSpec>(&format!("{base}bcast = \"3ring\"\n")).unwrap_err();
    assert!(e.to_string().contains("increasing-ring"), "{e}");
}

fn kernels<'a>(p: &'a crate::Program, name: &'a str) -> impl Iterator<Item = &'a Kernel> + 'a {
    p.ops().iter().filter_map(move |o| match o {
        Op::Kernel(k) if k.name == name => Some(k),
        _ => None,
    })
}

#[test]
fn two_by_two_grid_update_counts_and_flops_by_hand() {
    // 4 ranks on one node: square_grid(4) = 2 × 2. N = 4·NB: 4 panels, blocks 0..3 dealt
    // cyclically (block i to row i mod 2 and column i mod 2); the right-hand side is column N,
    // in block 4 (column 0). Trailing columns after panel k: k = 0: blocks 1, 2, 3 and the
    // right-hand side (both columns, both rows); k = 1: 2, 3, rhs (both); k = 2: 3 (column 1)
    // and rhs (column 0); k = 3: rhs (column 0). With rows below the panel on both process
    // rows for k = 0, 1, 2 and on row 1 only for k = 3 — but every process row of the column
    // applies DTRSM to its U, so each of the P ranks of a column with trailing columns makes
    // one update call: 4 + 4 + 4 + 2 = 14.
    let nb = 100;
    let s = spec(4 * nb, nb);
    let c = node4();
    let plan = s.plan(&c).unwrap();
    assert_eq!((plan.p, plan.q, plan.panels), (2, 2, 4));
    let prog = s.generate(&c).unwrap();
    assert_eq!(kernels(&prog, "update").count(), 14);
    // Flops: DGEMM 2·(N − t)·(N + 1 − t)·NB over the grid, t = (k + 1)·NB, and DTRSM
    // NB²·(N + 1 − t) on each of the P = 2 process rows:
    // DGEMM 2·NB·[300·301 + 200·201 + 100·101 + 0] = 2·100·140 600 = 28 120 000;
    // DTRSM 2·NB²·(301 + 201 + 101 + 1) = 2·10 000·604 = 12 080 000. Total 40 200 000.
    let upd: f64 = kernels(&prog, "update").map(|k| k.flops).sum();
    assert_eq!(upd, 40_200_000.0);
}

/// The graph written without the program is the program's graph, task for task and edge for
/// edge, on a 2 × 2 grid with look-ahead and with each kind of pivot search.
#[test]
fn the_graph_written_directly_is_the_programs_graph() {
    for search in ["collapsed", "messages"] {
        let s: HplSpec = toml::from_str(&format!(
            "n = 1600\nnb = 100\nlookahead = 1\npanel = \"gpu\"\npivot_search = \"{search}\"\n\
             gpu_dgemm = {{ peak = \"4.7 Tflop/s\", e_max = 0.8, s_half = 0 }}\n"
        ))
        .unwrap();
        let c = node4();
        let via_program = s.generate(&c).unwrap().into_task_graph().unwrap();
        let direct = s.generate_graph(&c).unwrap();
        assert!(via_program.num_tasks() > 400, "{}", via_program.num_tasks());
        assert_eq!(direct.num_tasks(), via_program.num_tasks());
        assert_eq!(direct.num_edges(), via_program.num_edges());
        assert_eq!(direct.codelet_names(), via_program.codelet_names());
        for t in via_program.task_ids() {
            assert_eq!(direct.task(t), via_program.task(t), "{t:?}");
            assert_eq!(direct.predecessors(t), via_program.predecessors(t), "{t:?}");
            for unit in [hetsim_taskgraph::Unit::Gpu, hetsim_taskgraph::Unit::Cpu] {
                assert_eq!(
                    direct.fixed_duration_s(t, unit),
                    via_program.fixed_duration_s(t, unit)
                );
            }
            assert_eq!(direct.payload_bytes(t), via_program.payload_bytes(t));
            if via_program.task(t).is_delay() {
                assert_eq!(direct.delay_s(t), via_program.delay_s(t));
            }
        }
    }
}
