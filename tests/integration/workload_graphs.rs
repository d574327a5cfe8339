//! Task-graph generators and dependency inference, checked against closed forms, hand-written
//! small cases and an independent brute-force reading of the dependency rule.

use hetsim::workload::{
    Access, AccessMode, CHOL_GEMM, CHOL_POTRF, CHOL_SYRK, CHOL_TRSM, Handle, Precision, Priorities,
    TaskGraph, TaskGraphBuilder, TaskId, TiledAlgorithm, cholesky, cholesky_with, gemm,
    gemm_codelet, lu, lu_codelets, lu_with,
};
use std::collections::BTreeSet;

fn count(g: &TaskGraph, name: &str) -> u64 {
    g.task_ids()
        .filter(|&t| g.task_codelet_name(t) == name)
        .count() as u64
}

fn edges(g: &TaskGraph) -> Vec<(u32, u32)> {
    g.task_ids()
        .flat_map(|t| g.successors(t).iter().map(move |s| (t.0, s.0)))
        .collect()
}

/// Closed forms, written from the loop structure of the algorithms (not from the code):
/// Cholesky has T potrf, T(T−1)/2 trsm, T(T−1)/2 syrk and C(T,3) gemm.
fn cholesky_counts(t: u64) -> (u64, u64, u64, u64) {
    let pairs = t * (t - 1) / 2;
    let triples = if t >= 3 { t * (t - 1) * (t - 2) / 6 } else { 0 };
    (t, pairs, pairs, triples)
}

#[test]
fn cholesky_task_counts_match_closed_forms() {
    for t in [1u64, 2, 3, 4, 7, 12, 60, 80] {
        let g = cholesky(t * 8, 8, Precision::Double).unwrap();
        let (p, tr, sy, ge) = cholesky_counts(t);
        assert_eq!(count(&g, CHOL_POTRF), p, "potrf, T={t}");
        assert_eq!(count(&g, CHOL_TRSM), tr, "trsm, T={t}");
        assert_eq!(count(&g, CHOL_SYRK), sy, "syrk, T={t}");
        assert_eq!(count(&g, CHOL_GEMM), ge, "gemm, T={t}");
        // T + 2·T(T−1)/2 + T(T−1)(T−2)/6
        let total = t + 2 * (t * (t - 1) / 2) + t * (t - 1) * t.saturating_sub(2) / 6;
        assert_eq!(g.num_tasks() as u64, total, "T={t}");
    }
    assert_eq!(
        cholesky(60 * 16, 16, Precision::Single)
            .unwrap()
            .num_tasks(),
        37_820
    );
    assert_eq!(
        cholesky(80 * 16, 16, Precision::Single)
            .unwrap()
            .num_tasks(),
        88_560
    );
}

#[test]
fn lu_task_counts_match_closed_forms() {
    for precision in [Precision::Single, Precision::Double] {
        let names = lu_codelets(precision);
        for t in [1u64, 2, 3, 5, 10, 40] {
            let g = lu(t * 4, 4, precision).unwrap();
            assert_eq!(count(&g, names.getrf), t);
            assert_eq!(count(&g, names.trsm_ll), t * (t - 1) / 2);
            assert_eq!(count(&g, names.trsm_ru), t * (t - 1) / 2);
            // Σ_k (T−1−k)² = (T−1)T(2T−1)/6
            assert_eq!(count(&g, names.gemm), (t - 1) * t * (2 * t - 1) / 6);
            let total = t + t * (t - 1) + (t - 1) * t * (2 * t - 1) / 6;
            assert_eq!(g.num_tasks() as u64, total, "T={t}");
        }
    }
}

#[test]
fn gemm_task_counts_match_closed_forms() {
    for t in [1u64, 2, 3, 6, 20] {
        let g = gemm(t * 2, 2, Precision::Single).unwrap();
        assert_eq!(g.num_tasks() as u64, t * t * t);
        assert_eq!(count(&g, gemm_codelet(Precision::Single)), t * t * t);
        // One chain of T−1 edges per C tile.
        assert_eq!(g.num_edges() as u64, t * t * (t - 1));
    }
}

#[test]
fn cholesky_2x2_exact_tasks_and_edges() {
    // By hand, T = 2:
    //   0 potrf(0)    RW A00
    //   1 trsm(1,0)   R A00, RW A10          (waits for 0: A00)
    //   2 syrk(1,0)   R A10, RW A11          (waits for 1: A10)
    //   3 potrf(1)    RW A11                 (waits for 2: A11)
    // There is no gemm (it needs m > n > k). Priorities 2T−2k, 2T−2k−m, 2T−2k−n: 4, 3, 3, 2.
    let nb = 4;
    let g = cholesky(2 * nb, nb, Precision::Double).unwrap();
    let names: Vec<&str> = g.task_ids().map(|t| g.task_codelet_name(t)).collect();
    assert_eq!(names, vec![CHOL_POTRF, CHOL_TRSM, CHOL_SYRK, CHOL_POTRF]);
    assert_eq!(edges(&g), vec![(0, 1), (1, 2), (2, 3)]);
    let prios: Vec<i32> = g.tasks().iter().map(|t| t.priority).collect();
    assert_eq!(prios, vec![4, 3, 3, 2]);

    let tile = |t: u32, i: usize| {
        let a = g.accesses(TaskId(t))[i];
        let tile = g.handle(a.handle).tile.unwrap();
        (tile.row, tile.col, a.mode)
    };
    use AccessMode::{R, RW};
    assert_eq!(g.accesses(TaskId(0)).len(), 1);
    assert_eq!(tile(0, 0), (0, 0, RW));
    assert_eq!((tile(1, 0), tile(1, 1)), ((0, 0, R), (1, 0, RW)));
    assert_eq!((tile(2, 0), tile(2, 1)), ((1, 0, R), (1, 1, RW)));
    assert_eq!(tile(3, 0), (1, 1, RW));
    // Lower triangle only: A00, A10, A11.
    assert_eq!(g.handles().len(), 3);
    for h in g.handles() {
        assert_eq!(h.size_bytes, 4 * 4 * 8);
    }
    // Model sizes: 1, 2, 2, 1 tiles.
    let sizes: Vec<u64> = g.tasks().iter().map(|t| t.model_size_bytes()).collect();
    assert_eq!(sizes, vec![128, 256, 256, 128]);
}

#[test]
fn cholesky_3x3_priorities_follow_starpu_rule() {
    // StarPU 1.4.12's examples/cholesky/cholesky_implicit.c, T = 3, computed by hand:
    //   k=0: potrf 6; trsm m=1: 6−0−1=5, m=2: 4; syrk n=1: 6−0−1=5; gemm(2,1): 6−0−2−1=3;
    //        syrk n=2: 6−0−2=4
    //   k=1: potrf 6−2=4; trsm m=2: 6−2−2=2; syrk n=2: 6−2−2=2
    //   k=2: potrf 6−4=2
    // StarPU 1.3's syrk(n, k) is 6−2k−2n: 4, 2, then 0 at k=1; every other task alike.
    let g = cholesky(9, 3, Precision::Single).unwrap();
    let got: Vec<(&str, i32)> = g
        .task_ids()
        .map(|t| (g.task_codelet_name(t), g.task(t).priority))
        .collect();
    let want = vec![
        (CHOL_POTRF, 6),
        (CHOL_TRSM, 5),
        (CHOL_TRSM, 4),
        (CHOL_SYRK, 5),
        (CHOL_GEMM, 3),
        (CHOL_SYRK, 4),
        (CHOL_POTRF, 4),
        (CHOL_TRSM, 2),
        (CHOL_SYRK, 2),
        (CHOL_POTRF, 2),
    ];
    assert_eq!(got, want);
    let v13 = cholesky_with(9, 3, Precision::Single, Priorities::StarPu13).unwrap();
    let prios: Vec<i32> = v13.tasks().iter().map(|t| t.priority).collect();
    assert_eq!(prios, [6, 5, 4, 4, 3, 2, 4, 2, 0, 2]);
}

#[test]
fn lu_3x3_priorities_follow_starpu_rule() {
    // StarPU examples/lu/xlu_implicit.c, T = 3 (3T = 9), by hand:
    //   k=0: getrf 9; i=1: trsm_ll, trsm_ru 9−0−1=8; i=2: 7, 7;
    //        gemm (i,j) = (1,1) 7, (1,2) 6, (2,1) 6, (2,2) 5
    //   k=1: getrf 6; i=2: trsm_ll, trsm_ru 9−2−2=5; gemm (2,2): 9−1−2−2=4
    //   k=2: getrf 3
    let g = lu(9, 3, Precision::Single).unwrap();
    let prios: Vec<i32> = g.tasks().iter().map(|t| t.priority).collect();
    assert_eq!(prios, vec![9, 8, 8, 7, 7, 7, 6, 6, 5, 6, 5, 5, 4, 3]);
    // StarPU 1.3.10's: STARPU_MAX_PRIO (1 here) on getrf, on trsm_ll(k,k+1) and
    // trsm_ru(k,k+1), and on gemm(k,k+1,k+1); the default (0) elsewhere.
    let v13 = lu_with(9, 3, Precision::Single, Priorities::StarPu13).unwrap();
    let prios: Vec<i32> = v13.tasks().iter().map(|t| t.priority).collect();
    assert_eq!(prios, vec![1, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1]);
}

/// Independent reading of the rule: i → j (i < j) iff, for some handle h both access,
/// - i is the last writer of h before j (j reads or writes h), or
/// - j writes h and i reads h after the last write of h before j.
fn brute_force_edges(g: &TaskGraph) -> BTreeSet<(u32, u32)> {
    let mut out = BTreeSet::new();
    let n = g.num_tasks() as u32;
    for j in 0..n {
        for aj in g.accesses(TaskId(j)) {
            let h = aj.handle;
            let touches = |i: u32, pred: fn(AccessMode) -> bool| {
                g.accesses(TaskId(i))
                    .iter()
                    .any(|a| a.handle == h && pred(a.mode))
            };
            let last_writer = (0..j).rev().find(|&i| touches(i, AccessMode::writes));
            if let Some(w) = last_writer {
                out.insert((w, j));
            }
            if aj.mode.writes() {
                let from = last_writer.map_or(0, |w| w + 1);
                for i in from..j {
                    if touches(i, AccessMode::reads) {
                        out.insert((i, j));
                    }
                }
            }
        }
    }
    out
}

/// Every pair of tasks that conflict on a handle (one of them writes it) is ordered by a path,
/// in submission order.
fn assert_conflicts_are_ordered(g: &TaskGraph) {
    let n = g.num_tasks();
    let words = n.div_ceil(64);
    // reach[j] = set of tasks j transitively waits for. Edges point forward, so when task i is
    // visited its own set is complete.
    let mut reach = vec![vec![0u64; words]; n];
    for i in 0..n {
        let mut ri = reach[i].clone();
        ri[i / 64] |= 1 << (i % 64);
        for s in g.successors(TaskId(i as u32)) {
            assert!(s.index() > i, "edge {i} -> {} points backwards", s.0);
            for (dst, src) in reach[s.index()].iter_mut().zip(&ri) {
                *dst |= src;
            }
        }
    }
    for (j, waits_for) in reach.iter().enumerate() {
        for i in 0..j {
            let conflict = g.accesses(TaskId(i as u32)).iter().any(|a| {
                g.accesses(TaskId(j as u32))
                    .iter()
                    .any(|b| a.handle == b.handle && (a.mode.writes() || b.mode.writes()))
            });
            if conflict {
                assert!(
                    waits_for[i / 64] >> (i % 64) & 1 == 1,
                    "tasks {i} and {j} conflict but are not ordered"
                );
            }
        }
    }
}

fn small_graphs() -> Vec<(&'static str, TaskGraph)> {
    vec![
        ("cholesky T=1", cholesky(5, 5, Precision::Single).unwrap()),
        ("cholesky T=6", cholesky(6, 1, Precision::Single).unwrap()),
        ("lu T=5", lu(10, 2, Precision::Double).unwrap()),
        ("gemm T=3", gemm(3, 1, Precision::Double).unwrap()),
    ]
}

#[test]
fn generated_edges_equal_the_brute_force_rule() {
    for (name, g) in small_graphs() {
        let got: BTreeSet<(u32, u32)> = edges(&g).into_iter().collect();
        assert_eq!(got.len(), g.num_edges(), "{name}: duplicate edges");
        assert_eq!(got, brute_force_edges(&g), "{name}");
        assert_conflicts_are_ordered(&g);
    }
}

#[test]
fn every_generated_graph_is_acyclic_and_consistent() {
    let mut graphs = small_graphs();
    for p in [Precision::Single, Precision::Double] {
        for k in [
            TiledAlgorithm::Cholesky,
            TiledAlgorithm::Lu,
            TiledAlgorithm::Gemm,
        ] {
            graphs.push(("generated", k.generate(960 * 12, 960, p).unwrap()));
        }
    }
    for (name, g) in &graphs {
        g.check_acyclic().unwrap();
        let mut indegree = vec![0u32; g.num_tasks()];
        for t in g.task_ids() {
            let s = g.successors(t);
            // Inferred edges always point forward in submission order, sorted, no duplicates.
            assert!(s.windows(2).all(|w| w[0] < w[1]), "{name}");
            assert!(s.iter().all(|&x| x > t), "{name}");
            for x in s {
                indegree[x.index()] += 1;
            }
        }
        for t in g.task_ids() {
            assert_eq!(g.predecessor_count(t), indegree[t.index()], "{name}");
        }
        // The predecessor lists are the same edges seen from the other end, sorted.
        let mut incoming = 0;
        for t in g.task_ids() {
            let p = g.predecessors(t);
            assert!(p.windows(2).all(|w| w[0] < w[1]), "{name}");
            assert!(p.iter().all(|&x| g.has_edge(x, t)), "{name}");
            incoming += p.len();
        }
        assert_eq!(incoming, g.num_edges(), "{name}");
        assert!(g.roots().count() >= 1);
    }
}

#[test]
fn dependency_rules_on_hand_made_sequences() {
    use AccessMode::{R, RW, W};
    let mut b = TaskGraphBuilder::new();
    let c = b.codelet("k").unwrap();
    let x = b.add_handle(Handle::bytes(10)).unwrap();
    let y = b.add_handle(Handle::bytes(20)).unwrap();
    let s = |b: &mut TaskGraphBuilder, acc: &[(hetsim::workload::HandleId, AccessMode)]| {
        let acc: Vec<Access> = acc.iter().map(|&(h, m)| Access::new(h, m)).collect();
        b.submit(c, 1.0, 0, &acc).unwrap()
    };
    s(&mut b, &[(x, W)]); // 0: writes x
    s(&mut b, &[(x, R), (y, W)]); // 1: R after W → 0→1
    s(&mut b, &[(x, R)]); // 2: R after W → 0→2 (not 1→2)
    s(&mut b, &[(x, RW), (y, R)]); // 3: W after R's → 0,1,2 → 3; R y after W y → 1→3
    s(&mut b, &[(y, RW)]); // 4: W y after R y by 3 and W by 1 → 1→4, 3→4
    s(&mut b, &[(x, RW)]); // 5: RW chain on x → 3→5
    let g = b.build().unwrap();
    assert_eq!(
        edges(&g),
        vec![
            (0, 1),
            (0, 2),
            (0, 3),
            (1, 3),
            (1, 4),
            (2, 3),
            (3, 4),
            (3, 5)
        ]
    );
    assert_eq!(g.predecessor_count(TaskId(3)), 3);
    assert_eq!(g.task(TaskId(3)).model_size_bytes(), 30);
}

#[test]
fn cycle_check_names_a_task_on_the_cycle() {
    let mut b = TaskGraphBuilder::new();
    let c = b.codelet("chol_model_gemm").unwrap();
    for _ in 0..5 {
        b.submit(c, 0.0, 0, &[]).unwrap();
    }
    b.add_dependency(TaskId(0), TaskId(1)).unwrap();
    b.add_dependency(TaskId(1), TaskId(3)).unwrap();
    b.add_dependency(TaskId(3), TaskId(4)).unwrap();
    b.add_dependency(TaskId(4), TaskId(1)).unwrap();
    let err = b.build().unwrap_err();
    let on_cycle = ["task 1 ", "task 3 ", "task 4 "];
    assert!(
        on_cycle.iter().any(|s| err.message.contains(s)),
        "{}",
        err.message
    );
    assert!(err.message.contains("chol_model_gemm"), "{}", err.message);
    assert_eq!(err.location.field.as_deref(), Some("workload.dependencies"));
}

#[test]
fn bad_parameters_name_the_field() {
    let field = |r: Result<TaskGraph, hetsim::InputError>| r.unwrap_err().location.field;
    assert_eq!(
        field(cholesky(0, 4, Precision::Single)).as_deref(),
        Some("workload.n")
    );
    assert_eq!(
        field(lu(100, 0, Precision::Single)).as_deref(),
        Some("workload.nb")
    );
    assert_eq!(
        field(gemm(100, 30, Precision::Single)).as_deref(),
        Some("workload.nb")
    );
    // 1000³ gemm tasks is far beyond the limit.
    assert_eq!(
        field(gemm(1000, 1, Precision::Single)).as_deref(),
        Some("workload.nb")
    );
}

#[test]
fn cholesky_80_tiles_has_the_closed_form_task_count() {
    // Speed is measured by the runtime benchmark, not here: a timed test is noise on shared CI.
    let g = cholesky(80 * 960, 960, Precision::Double).unwrap();
    let t = 80u64;
    assert_eq!(
        g.num_tasks() as u64,
        t + t * (t - 1) + t * (t - 1) * (t - 2) / 6
    );
}
