//! The collectives' messages, derived by hand from MPICH's algorithms.

use super::*;
use crate::{Op, Program};

fn group(n: u32) -> Vec<RankId> {
    (0..n).map(RankId).collect()
}

fn bcast_program(
    n: u32,
    bytes: f64,
    alg: Selection<BcastAlgorithm>,
    root: usize,
) -> (Program, Vec<OpId>) {
    let g = group(n);
    let mut b = ProgramBuilder::new(n);
    let spec = Bcast {
        group: &g,
        root,
        bytes,
        buffer: Buffer::Device,
        algorithm: alg,
    };
    let h = bcast(&mut b, &spec, &[]);
    (b.build(), h)
}

/// (src, dst, payload bytes) of every message, in program order.
fn messages(p: &Program) -> Vec<(u32, u32, f64)> {
    p.messages()
        .map(|m| (m.src.0, m.dst.0, m.bytes - ENVELOPE_BYTES))
        .collect()
}

fn pairs(p: &Program) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = messages(p).iter().map(|m| (m.0, m.1)).collect();
    v.sort_unstable();
    v
}

fn payload(p: &Program) -> f64 {
    messages(p).iter().map(|m| m.2).sum()
}

/// Payload received by each rank.
fn received(p: &Program, n: u32) -> Vec<f64> {
    let mut r = vec![0.0; n as usize];
    for (_, d, b) in messages(p) {
        r[d as usize] += b;
    }
    r
}

/// Longest chain of messages ending at each op (the number of communication rounds if every
/// message takes the same time and shares no link).
fn depth(p: &Program) -> Vec<u32> {
    let mut d = vec![0u32; p.ops().len()];
    for i in 0..p.ops().len() {
        let base = p.preds(OpId(i as u32)).iter().map(|x| d[x.index()]).max();
        let own = u32::from(matches!(p.ops()[i], Op::Message(_)));
        d[i] = base.unwrap_or(0) + own;
    }
    d
}

#[test]
fn binomial_on_8_is_7_messages_in_3_rounds_when_sends_block() {
    // 1 MiB forced to the binomial tree (MPICH's rule would scatter): rendezvous, so each send
    // returns when delivered. By hand (root 0): 0→4, 0→2, 0→1 in that order, 4→6 then 4→5,
    // 2→3, 6→7. Rounds at which each rank receives the data: 4: 1; 2 and 6: 2; 1, 3, 5, 7: 3.
    // Every rank returns after round 3: the root and 4, 2, 6 once their last send is
    // delivered.
    let (p, h) = bcast_program(8, 1048576.0, Selection::Forced(BcastAlgorithm::Binomial), 0);
    assert_eq!(
        pairs(&p),
        vec![(0, 1), (0, 2), (0, 4), (2, 3), (4, 5), (4, 6), (6, 7)]
    );
    let d = depth(&p);
    let mut got = vec![0; 8];
    for (i, op) in p.ops().iter().enumerate() {
        if let Op::Message(m) = op {
            got[m.dst.0 as usize] = d[i];
        }
    }
    assert_eq!(got, vec![0, 3, 2, 3, 1, 3, 2, 3]);
    let returns: Vec<u32> = h.iter().map(|o| d[o.index()]).collect();
    assert_eq!(returns, vec![3; 8]);
}

#[test]
fn eager_binomial_sends_leave_together_and_the_root_returns_at_once() {
    // 1 KiB: eager. The root's three sends wait for nothing: 4, 2 and 1 hold the data after
    // one message; 6, 5 (from 4) and 3 (from 2) after two; 7 (from 6) after three. The root
    // returns without waiting: its result is an empty join.
    let (p, h) = bcast_program(8, 1024.0, Selection::Mpich, 0);
    assert!(messages(&p).iter().all(|m| m.2 == 1024.0));
    let d = depth(&p);
    let rounds: Vec<u32> = h.iter().map(|o| d[o.index()]).collect();
    assert_eq!(rounds, vec![0, 1, 1, 2, 1, 2, 2, 3]);
    assert!(matches!(p.ops()[h[0].index()], Op::Join));
    assert!(p.preds(h[0]).is_empty());
}

#[test]
fn root_is_relative() {
    let (p, h) = bcast_program(5, 100.0, Selection::Forced(BcastAlgorithm::Binomial), 3);
    // Relative ranks 0..5 map to 3, 4, 0, 1, 2. Relative sends 0→4, 0→2, 0→1, 2→3 become
    // 3→2, 3→0, 3→4, 0→1.
    assert_eq!(pairs(&p), vec![(0, 1), (3, 0), (3, 2), (3, 4)]);
    assert_eq!(h.len(), 5);
}

#[test]
fn smpi_bcast_from_another_root_goes_through_rank_0() {
    // SimGrid's SMP_binomial from root 2 on 4 ranks: 2→0 first, then the tree from 0: 0→2,
    // 0→1, 2→3.
    let (p, _) = bcast_program(4, 100.0, Selection::SmpiMpich, 2);
    assert_eq!(messages(&p)[0], (2, 0, 100.0));
    assert_eq!(pairs(&p), vec![(0, 1), (0, 2), (2, 0), (2, 3)]);
}

#[test]
fn scatter_recursive_doubling_on_8() {
    // 64 KiB on 8 ranks: medium, power of two → scatter + recursive doubling, pieces of
    // 8192 B. Scatter: 0→4 four pieces, 0→2 two, 0→1 one, 4→6 two, 4→5 one, 2→3 one, 6→7
    // one: 12 pieces. Allgather: 3 steps × 8 messages of 1, 2, 4 pieces: 56 pieces.
    let (p, _) = bcast_program(8, 65536.0, Selection::Mpich, 0);
    let ms = messages(&p);
    assert_eq!(ms.len(), 7 + 24);
    assert_eq!(payload(&p), (12.0 + 56.0) * 8192.0);
    // Rank 0 posts its scatter sends (largest subtree first), then exchanges with 1, 2, 4.
    let from0: Vec<(u32, u32, f64)> = ms.iter().copied().filter(|m| m.0 == 0).collect();
    assert_eq!(
        from0,
        vec![
            (0, 4, 32768.0),
            (0, 2, 16384.0),
            (0, 1, 8192.0),
            (0, 1, 8192.0),
            (0, 2, 16384.0),
            (0, 4, 32768.0)
        ]
    );
}

#[test]
fn scatter_recursive_doubling_completes_every_rank_on_any_count() {
    // After the scatter (relative rank v receives the pieces of its subtree, the min(lowbit(v),
    // n − v) pieces from v on), the allgather brings every rank each piece it does not own
    // exactly once, also when the count is not a power of two (MPICH's code for the subtrees
    // without a partner). Root 1, so relative rank v is rank (v + 1) mod n.
    let bytes = 100_003.0;
    for n in 2..=40usize {
        let (p, _) = bcast_program(
            n as u32,
            bytes,
            Selection::Forced(BcastAlgorithm::RecursiveDoubling),
            1,
        );
        let s = (bytes / n as f64).ceil();
        let piece = |i: usize| (bytes - i as f64 * s).clamp(0.0, s);
        let r = received(&p, n as u32);
        for v in 0..n {
            let subtree = if v == 0 {
                0
            } else {
                (1 << v.trailing_zeros()).min(n - v)
            };
            let scattered: f64 = (v..v + subtree).map(piece).sum();
            let expect = scattered + bytes - piece(v);
            assert_eq!(r[(v + 1) % n], expect, "{n} ranks, relative rank {v}");
        }
    }
}

#[test]
fn scatter_ring_on_6() {
    // Fewer than 8 ranks would choose the binomial tree: force the ring. Pieces of
    // ceil(1048576 / 6) = 174763 B, the last one 1048576 − 5 × 174763 = 174761 B.
    let (p, _) = bcast_program(6, 1048576.0, Selection::Forced(BcastAlgorithm::Ring), 0);
    let ms = messages(&p);
    // Scatter: 5 messages; ring: 5 steps × 6.
    assert_eq!(ms.len(), 5 + 30);
    // Pieces 0..4 of 174763 B, piece 5 of 174761 B. Scatter by hand (top mask 4): 0→4
    // pieces 4 and 5, 0→2 pieces 2 and 3, 0→1 piece 1, 2→3 piece 3, 4→5 piece 5. Ring: every
    // rank receives the five pieces that are not its own.
    let scatter = 5.0 * 174763.0 + 2.0 * 174761.0;
    assert_eq!(payload(&p), scatter + 5.0 * 1048576.0);
}

#[test]
fn small_groups_use_binomial_and_singletons_send_nothing() {
    let (p, _) = bcast_program(4, 1e6, Selection::Mpich, 0);
    assert_eq!(messages(&p).len(), 3);
    // 12 ranks, 64 KiB: medium but not a power of two → ring: 11 + 12 × 11 messages.
    let (p, _) = bcast_program(12, 65536.0, Selection::Mpich, 0);
    assert_eq!(messages(&p).len(), 11 + 132);
    // SimGrid's selector: the binomial tree at any size.
    let (p, _) = bcast_program(12, 65536.0, Selection::SmpiMpich, 0);
    assert_eq!(messages(&p).len(), 11);
    let (p, h) = bcast_program(1, 1e6, Selection::Mpich, 0);
    assert!(messages(&p).is_empty());
    assert_eq!(h.len(), 1);
}

fn reduce_program(n: u32, count: u64, alg: ReduceAlgorithm, root: usize, op: f64) -> Program {
    let g = group(n);
    let mut b = ProgramBuilder::new(n);
    let spec = Reduce {
        group: &g,
        root,
        count,
        element_bytes: 8,
        buffer: Buffer::Host,
        algorithm: Selection::Forced(alg),
        op_s_per_byte: op,
    };
    reduce(&mut b, &spec, &[]);
    b.build()
}

#[test]
fn binomial_reduce_on_5() {
    // Relative rank v receives from v | 2^k below its lowest set bit, then sends to v without
    // it: 1→0, 3→2 (mask 1); 2→0 (mask 2); 4→0 (mask 4).
    let p = reduce_program(5, 128, ReduceAlgorithm::Binomial, 0, 0.0);
    assert_eq!(pairs(&p), vec![(1, 0), (2, 0), (3, 2), (4, 0)]);
    assert!(messages(&p).iter().all(|m| m.2 == 1024.0));
}

#[test]
fn reduce_operation_costs_the_receiver_cpu_per_byte() {
    // 4 ranks: 0 reduces what 1 and 2 send, 2 what 3 sends: three reductions of 1 KiB.
    let p = reduce_program(4, 128, ReduceAlgorithm::Binomial, 0, 1e-9);
    let kernels: Vec<(u32, f64)> = p
        .ops()
        .iter()
        .filter_map(|o| match o {
            Op::Kernel(k) => Some((k.rank.0, k.secs)),
            _ => None,
        })
        .collect();
    let mut ranks: Vec<u32> = kernels.iter().map(|k| k.0).collect();
    ranks.sort_unstable();
    assert_eq!(ranks, vec![0, 0, 2]);
    assert!(kernels.iter().all(|k| (k.1 - 1024e-9).abs() < 1e-18));
    assert!(
        !reduce_program(4, 128, ReduceAlgorithm::Binomial, 0, 0.0)
            .ops()
            .iter()
            .any(|o| matches!(o, Op::Kernel(_)))
    );
}

#[test]
fn reduce_scatter_gather_on_4() {
    // 1024 doubles on 4 ranks: blocks of 256 (2048 B). Halving: 0↔1 and 2↔3 exchange half
    // the vector (4096 B), then 0↔2 and 1↔3 a quarter (2048 B); 0 keeps block 0, 2 block 1,
    // 1 block 2, 3 block 3. Gather to 0 in the reverse order: 3→1 (block 3), 1→0 (blocks 2
    // and 3), 2→0 (block 1).
    let p = reduce_program(4, 1024, ReduceAlgorithm::ReduceScatterGather, 0, 0.0);
    assert_eq!(
        pairs(&p),
        vec![
            (0, 1),
            (0, 2),
            (1, 0),
            (1, 0),
            (1, 3),
            (2, 0),
            (2, 0),
            (2, 3),
            (3, 1),
            (3, 1),
            (3, 2)
        ]
    );
    // The gather messages are the last each of 1, 2, 3 sends.
    let last = |r: u32| messages(&p).into_iter().rev().find(|m| m.0 == r).unwrap();
    assert_eq!(
        [last(1), last(2), last(3)],
        [(1, 0, 4096.0), (2, 0, 2048.0), (3, 1, 2048.0)]
    );
    assert_eq!(payload(&p), 4.0 * 4096.0 + 4.0 * 2048.0 + 8192.0);
}

#[test]
fn reduce_scatter_gather_folds_the_odd_ranks_and_reaches_any_root() {
    // Every count of ranks, every root: the program is complete (no member blocked) and the
    // root receives something.
    for n in 2..=12u32 {
        for root in 0..n as usize {
            let p = reduce_program(n, 3000, ReduceAlgorithm::ReduceScatterGather, root, 0.0);
            assert!(received(&p, n)[root] > 0.0, "{n} ranks, root {root}");
        }
    }
}

fn allreduce_program(n: u32, count: u64, alg: AllreduceAlgorithm) -> Program {
    let g = group(n);
    let mut b = ProgramBuilder::new(n);
    let spec = Allreduce {
        group: &g,
        count,
        element_bytes: 8,
        buffer: Buffer::Host,
        algorithm: Selection::Forced(alg),
        op_s_per_byte: 0.0,
    };
    allreduce(&mut b, &spec, &[]);
    b.build()
}

#[test]
fn recursive_doubling_allreduce_on_3_folds_rank_0_into_1() {
    // pof2 = 2, rem = 1: 0 sends to 1, 1 and 2 exchange, 1 sends the result back to 0.
    let p = allreduce_program(3, 16, AllreduceAlgorithm::RecursiveDoubling);
    let ms: Vec<(u32, u32)> = messages(&p).iter().map(|m| (m.0, m.1)).collect();
    assert_eq!(ms.len(), 4);
    assert_eq!(pairs(&p), vec![(0, 1), (1, 0), (1, 2), (2, 1)]);
    assert!(messages(&p).iter().all(|m| m.2 == 128.0));
}

#[test]
fn rabenseifner_allreduce_on_4_halves_then_doubles() {
    // The halving of reduce_scatter_gather_on_4, then the same pairs in reverse with the
    // blocks each holds: 2048 B then 4096 B, 16 messages.
    let p = allreduce_program(4, 1024, AllreduceAlgorithm::ReduceScatterAllgather);
    assert_eq!(messages(&p).len(), 16);
    assert_eq!(payload(&p), 2.0 * (4.0 * 4096.0 + 4.0 * 2048.0));
    // Every rank receives 4096 + 2048 B in the halving and 2048 + 4096 B in the doubling.
    assert!(received(&p, 4).iter().all(|&r| r == 12288.0));
}

fn alltoall_program(n: u32, bytes: f64, alg: AlltoallAlgorithm) -> Program {
    let g = group(n);
    let mut b = ProgramBuilder::new(n);
    let spec = Alltoall {
        group: &g,
        bytes,
        buffer: Buffer::Host,
        algorithm: Selection::Forced(alg),
    };
    alltoall(&mut b, &spec, &[]);
    b.build()
}

#[test]
fn alltoall_algorithms_by_hand() {
    // Bruck on 8: 3 steps; blocks 1..7 with bit 1: 1, 3, 5, 7; bit 2: 2, 3, 6, 7; bit 4: 4..7.
    let p = alltoall_program(8, 100.0, AlltoallAlgorithm::Bruck);
    assert_eq!(messages(&p).len(), 24);
    assert!(messages(&p).iter().all(|m| m.2 == 400.0));
    assert!(
        messages(&p)
            .iter()
            .all(|m| [1, 2, 4].contains(&((m.1 + 8 - m.0) % 8)))
    );
    // On 6: steps 1, 2, 4; blocks with bit 1: 1, 3, 5; bit 2: 2, 3; bit 4: 4, 5.
    let mut sizes: Vec<f64> = messages(&alltoall_program(6, 1.0, AlltoallAlgorithm::Bruck))
        .iter()
        .map(|m| m.2)
        .collect();
    sizes.sort_by(f64::total_cmp);
    assert_eq!(sizes, [vec![2.0; 12], vec![3.0; 6]].concat());
    // Scattered, pairwise, ring: one message per ordered pair of distinct ranks.
    for alg in [
        AlltoallAlgorithm::Scattered { throttle: 4 },
        AlltoallAlgorithm::Pairwise,
        AlltoallAlgorithm::Ring,
    ] {
        for n in [2u32, 3, 6, 8] {
            let mut ps = pairs(&alltoall_program(n, 10.0, alg));
            let mut all: Vec<(u32, u32)> = (0..n)
                .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
                .collect();
            all.sort_unstable();
            ps.dedup();
            assert_eq!(ps, all, "{alg:?} on {n}");
        }
    }
    // Pairwise on 8: at step i rank r exchanges with r XOR i; the first messages of rank 0 go
    // to 1, 2, 3 in order.
    let firsts: Vec<u32> = messages(&alltoall_program(8, 10.0, AlltoallAlgorithm::Pairwise))
        .iter()
        .filter(|m| m.0 == 0)
        .map(|m| m.1)
        .collect();
    assert_eq!(firsts, (1..8).collect::<Vec<u32>>());
}

#[test]
fn smpi_selector_refuses_where_simgrid_aborts() {
    let g = group(3);
    let spec = Alltoall {
        group: &g,
        bytes: 65536.0,
        buffer: Buffer::Host,
        algorithm: Selection::SmpiMpich,
    };
    assert!(spec.chosen_algorithm().unwrap_err().contains("3 ranks"));
}
