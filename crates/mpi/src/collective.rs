//! Collectives built from point-to-point messages, so that the executor simulates their
//! contention instead of assuming it.
//!
//! Broadcast follows MPICH's algorithms and selection rule (Liu et al. 2012 §3.2;
//! [`hetsim_core::mpich::mpich_bcast_algorithm`], the same rule the analytic model uses):
//! a binomial tree for short messages (< 12 288 bytes) or fewer than 8 ranks; for medium messages
//! (< 524 288 bytes) on a power-of-two number of ranks, a binomial scatter of the message cut in
//! n pieces followed by a recursive-doubling allgather; otherwise the scatter followed by a
//! ring allgather.
//!
//! Sends are blocking, as `MPI_Send` of a large message is (rendezvous): a rank's next send of
//! the collective starts when its previous one is delivered. A rank forwards data only after
//! its own receive of that data, and only after its entry operation (`ready`) is done.

use hetsim_core::mpich::{BcastAlgorithm, MpichBcastThresholds, mpich_bcast_algorithm};

use super::program::{Buffer, Message, OpId, ProgramBuilder, RankId};

/// A broadcast to build.
#[derive(Debug, Clone, Copy)]
pub struct Bcast<'a> {
    /// The ranks taking part, in the order that defines relative ranks.
    pub group: &'a [RankId],
    /// Index in `group` of the root.
    pub root: usize,
    /// Message size, bytes.
    pub bytes: f64,
    /// Where the data lives on every rank (sent from and received into).
    pub buffer: Buffer,
    /// `None`: MPICH's selection rule; `Some`: this algorithm.
    pub algorithm: Option<BcastAlgorithm>,
}

impl Bcast<'_> {
    /// The algorithm used: forced, or MPICH's choice for this group size and message size.
    pub fn chosen_algorithm(&self) -> BcastAlgorithm {
        self.algorithm.unwrap_or_else(|| {
            mpich_bcast_algorithm(
                self.group.len() as u64,
                self.bytes,
                &MpichBcastThresholds::default(),
            )
        })
    }
}

/// Per-member state while building: the op after which it holds what it has, and its last
/// send (blocking sends are chained).
struct Member {
    entry: Option<OpId>,
    holds: Option<OpId>,
    last_send: Option<OpId>,
}

struct Ctx<'a, 'b> {
    b: &'a mut ProgramBuilder,
    spec: &'a Bcast<'b>,
    m: Vec<Member>,
}

impl Ctx<'_, '_> {
    fn n(&self) -> usize {
        self.spec.group.len()
    }

    /// Member at relative rank `vr`.
    fn abs(&self, vr: usize) -> usize {
        (vr + self.spec.root) % self.n()
    }

    /// A message from relative rank `from` to `to` of `bytes`; returns it and records it as the
    /// receiver's latest holding.
    fn send(&mut self, from: usize, to: usize, bytes: f64) -> OpId {
        let (fa, ta) = (self.abs(from), self.abs(to));
        let mut deps = Vec::with_capacity(3);
        let f = &self.m[fa];
        deps.extend(f.entry);
        deps.extend(f.holds);
        deps.extend(f.last_send);
        deps.sort_unstable();
        deps.dedup();
        let buf = self.spec.buffer;
        let msg = Message {
            src: self.spec.group[fa],
            dst: self.spec.group[ta],
            bytes,
            from: buf,
            to: buf,
        };
        let op = self.b.message(msg, &deps);
        self.m[fa].last_send = Some(op);
        op
    }

    fn received(&mut self, to: usize, op: OpId) {
        let ta = self.abs(to);
        self.m[ta].holds = Some(op);
    }

    /// MPICH's binomial tree: relative rank vr receives from vr − mask (mask its lowest set
    /// bit), then sends to vr + mask for the masks below, largest first. The whole message
    /// goes down every edge.
    fn binomial(&mut self, bytes: f64) {
        self.tree(|_| bytes);
    }

    /// MPICH's binomial scatter of n pieces of `chunk` bytes: the same tree, vr receiving the
    /// pieces of its subtree [vr, vr + subtree) from its parent.
    fn scatter(&mut self, chunk: f64) {
        self.tree(|pieces| pieces as f64 * chunk);
    }

    /// Walk the binomial tree from the root; the edge to a child whose subtree holds `pieces`
    /// ranks carries `edge_bytes(pieces)`.
    fn tree(&mut self, edge_bytes: impl Fn(usize) -> f64) {
        let n = self.n();
        // Process senders in order of the round they receive in, so dependencies exist
        // before use: relative ranks sorted by number of trailing zeros is not enough; a BFS
        // by round is: round r receivers are vr with highest set bit at position r-1.
        let mut order = vec![0usize];
        let mut i = 0;
        while i < order.len() {
            let vr = order[i];
            i += 1;
            let mut mask = 1usize;
            while mask < n && vr & mask == 0 {
                mask <<= 1;
            }
            // vr's subtree children: vr + m for m = mask/2, mask/4, ... (vr = 0: all masks
            // below n's next power of two).
            let top = if vr == 0 { n.next_power_of_two() } else { mask };
            let mut m = top >> 1;
            while m > 0 {
                let child = vr + m;
                if child < n {
                    let op = self.send(vr, child, edge_bytes(m.min(n - child)));
                    self.received(child, op);
                    order.push(child);
                }
                m >>= 1;
            }
        }
    }

    /// Recursive-doubling allgather (n a power of two): at step k, vr exchanges its 2^k pieces
    /// with vr XOR 2^k.
    fn recursive_doubling(&mut self, chunk: f64) {
        let n = self.n();
        let mut mask = 1usize;
        while mask < n {
            // All sends of a step first (they depend on the previous step's holdings), then
            // record the receives.
            let ops: Vec<(usize, OpId)> = (0..n)
                .map(|vr| (vr ^ mask, self.send(vr, vr ^ mask, mask as f64 * chunk)))
                .collect();
            for (to, op) in ops {
                self.received(to, op);
            }
            mask <<= 1;
        }
    }

    /// Ring allgather: n − 1 steps; at each, vr sends one piece to vr + 1.
    fn ring(&mut self, chunk: f64) {
        let n = self.n();
        for _ in 0..n - 1 {
            let ops: Vec<(usize, OpId)> = (0..n)
                .map(|vr| ((vr + 1) % n, self.send(vr, (vr + 1) % n, chunk)))
                .collect();
            for (to, op) in ops {
                self.received(to, op);
            }
        }
    }
}

/// Build a broadcast. `ready`: per member (same order as `group`), the operation after which it
/// enters the broadcast, or an empty slice for none. Returns, per member, the operation after
/// which it holds the whole message (for the root: its entry, or an empty join).
///
/// # Panics
/// If `root` is out of range or `ready` has another length than `group` (generator bugs).
pub fn bcast(b: &mut ProgramBuilder, spec: &Bcast<'_>, ready: &[Option<OpId>]) -> Vec<OpId> {
    let n = spec.group.len();
    assert!(spec.root < n, "broadcast root {} of {n} ranks", spec.root);
    assert!(
        ready.is_empty() || ready.len() == n,
        "one ready op per member"
    );
    let m = (0..n)
        .map(|i| Member {
            entry: ready.get(i).copied().flatten(),
            holds: None,
            last_send: None,
        })
        .collect();
    let mut c = Ctx { b, spec, m };
    if n > 1 {
        match spec.chosen_algorithm() {
            BcastAlgorithm::Binomial => c.binomial(spec.bytes),
            alg => {
                // MPICH: scatter_size = ceil(nbytes / comm_size).
                let chunk = (spec.bytes / n as f64).ceil();
                c.scatter(chunk);
                if alg == BcastAlgorithm::RecursiveDoubling && n.is_power_of_two() {
                    c.recursive_doubling(chunk);
                } else {
                    c.ring(chunk);
                }
            }
        }
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let op = match (c.m[i].holds, c.m[i].entry) {
            (Some(h), _) if i != spec.root => h,
            (_, Some(e)) if i == spec.root => e,
            _ => c.b.join(&[]),
        };
        out.push(op);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Op, Program};

    fn build(n: u32, bytes: f64, alg: Option<BcastAlgorithm>, root: usize) -> (Program, Vec<OpId>) {
        let group: Vec<RankId> = (0..n).map(RankId).collect();
        let mut b = ProgramBuilder::new(n);
        let spec = Bcast {
            group: &group,
            root,
            bytes,
            buffer: Buffer::Device,
            algorithm: alg,
        };
        let h = bcast(&mut b, &spec, &[]);
        (b.build(), h)
    }

    fn messages(p: &Program) -> Vec<(u32, u32, f64)> {
        p.messages().map(|m| (m.src.0, m.dst.0, m.bytes)).collect()
    }

    /// Longest chain of messages ending at each op (the number of communication rounds if
    /// every message takes the same time).
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
    fn binomial_on_8_is_3_rounds_of_7_messages() {
        let (p, h) = build(8, 1024.0, None, 0);
        let ms = messages(&p);
        // By hand (MPICH binomial, root 0): 0→4, 0→2, 0→1 (blocking, in that order), 4→6,
        // 4→5, 2→3, 6→7.
        let mut pairs: Vec<(u32, u32)> = ms.iter().map(|m| (m.0, m.1)).collect();
        pairs.sort_unstable();
        assert_eq!(
            pairs,
            vec![(0, 1), (0, 2), (0, 4), (2, 3), (4, 5), (4, 6), (6, 7)]
        );
        let d = depth(&p);
        // Rounds at which each rank holds the data: 0: 0; 4: 1; 2, 6: 2; 1, 3, 5, 7: 3.
        let rounds: Vec<u32> = h.iter().map(|o| d[o.index()]).collect();
        assert_eq!(rounds, vec![0, 3, 2, 3, 1, 3, 2, 3]);
    }

    #[test]
    fn root_is_relative() {
        let (p, h) = build(5, 100.0, Some(BcastAlgorithm::Binomial), 3);
        // Relative ranks 0..5 map to 3, 4, 0, 1, 2. Relative sends 0→4, 0→2, 0→1, 2→3 become
        // 3→2, 3→0, 3→4, 0→1.
        let mut pairs: Vec<(u32, u32)> = messages(&p).iter().map(|m| (m.0, m.1)).collect();
        pairs.sort_unstable();
        assert_eq!(pairs, vec![(0, 1), (3, 0), (3, 2), (3, 4)]);
        assert_eq!(h.len(), 5);
    }

    #[test]
    fn scatter_recursive_doubling_on_8() {
        // 64 KiB on 8 ranks: medium, power of two → scatter + recursive doubling.
        let bytes = 65536.0;
        let (p, _) = build(8, bytes, None, 0);
        let ms = messages(&p);
        // Scatter: 7 messages; sizes: 0→4 four pieces, 0→2 two, 0→1 one, 4→6 two, 4→5 one,
        // 2→3 one, 6→7 one: 12 pieces of 8192 B. Allgather: 3 steps × 8 messages of 1, 2, 4
        // pieces: 8 × 7 = 56 pieces.
        assert_eq!(ms.len(), 7 + 24);
        let total: f64 = ms.iter().map(|m| m.2).sum();
        assert_eq!(total, (12.0 + 56.0) * 8192.0);
        // Rounds: scatter 3, allgather 3.
        assert_eq!(*depth(&p).iter().max().unwrap(), 6);
    }

    #[test]
    fn scatter_ring_on_6() {
        // Fewer than 8 ranks would choose the binomial tree: force the ring. Pieces of
        // ceil(1048576 / 6) = 174763 B.
        let (p, _) = build(6, 1048576.0, Some(BcastAlgorithm::Ring), 0);
        let ms = messages(&p);
        // Scatter: 5 messages; ring: 5 steps × 6.
        assert_eq!(ms.len(), 5 + 30);
        // Scatter pieces by hand (n = 6, next power of two 8): 0→4 min(4, 2) = 2, 0→2 2,
        // 0→1 1, 2→3 1, 4→5 1: 7 pieces.
        let scatter: f64 = ms[..5].iter().map(|m| m.2).sum();
        assert_eq!(scatter, 7.0 * 174763.0);
        // Scatter rounds 3 (0→4, 0→2 then 2→3 ... 0→1 third; 4→5 second), ring 5 → 8.
        assert_eq!(*depth(&p).iter().max().unwrap(), 8);
    }

    #[test]
    fn small_groups_use_binomial_and_singletons_send_nothing() {
        let (p, _) = build(4, 1e6, None, 0);
        assert_eq!(messages(&p).len(), 3);
        // 12 ranks, 64 KiB: medium but not a power of two → ring: 11 + 12 × 11 messages.
        let (p, _) = build(12, 65536.0, None, 0);
        assert_eq!(messages(&p).len(), 11 + 132);
        let (p, h) = build(1, 1e6, None, 0);
        assert!(messages(&p).is_empty());
        assert_eq!(h.len(), 1);
    }
}
