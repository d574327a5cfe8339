//! `MPI_Reduce`'s and `MPI_Allreduce`'s algorithms, member by member as MPICH's code posts its
//! calls, for a commutative operation (SimGrid 3.32's copies: `src/smpi/colls/reduce/reduce-binomial.cpp`,
//! `reduce-scatter-gather.cpp`, `allreduce/allreduce-rdb.cpp`, `allreduce-rab-rdb.cpp`; MPICH's
//! `src/mpi/coll/reduce/reduce_intra_binomial.c`, `reduce_intra_reduce_scatter_gather.c`,
//! `allreduce/allreduce_intra_recursive_doubling.c`, `allreduce_intra_reduce_scatter_allgather.c`).
//!
//! Sizes are in elements of `ext` bytes. On a number of members p that is not a power of two,
//! the first 2·(p − pof2) members pair up so that pof2 take part in the halving and doubling
//! (pof2 the largest power of two ≤ p): in reduce the odd member of a pair sends to the even
//! one, in allreduce the even one to the odd one.

use hetsim_core::mpich::pof2_floor;

use super::calls::{Calls, Tag};

const REDUCE: Tag = 2;
const ALLREDUCE: Tag = 3;

/// Binomial tree towards `root`: relative rank v receives (and reduces) from v | 2^k for the
/// bits 2^k below its lowest set one, then sends its partial result to v without that bit.
pub(super) fn reduce_binomial(c: &mut Calls, root: usize, bytes: f64) {
    let n = c.members();
    for rank in 0..n {
        let rel = (rank + n - root) % n;
        let mut mask = 1;
        while mask < n {
            if rel & mask == 0 {
                let source = rel | mask;
                if source < n {
                    c.recv(rank, (source + root) % n, REDUCE);
                    c.apply(rank, bytes);
                }
            } else {
                c.send(rank, ((rel & !mask) + root) % n, bytes, REDUCE);
                break;
            }
            mask <<= 1;
        }
    }
}

/// Element counts of the pof2 blocks of a reduce-scatter of `count` elements: `count / pof2`
/// each, the last one taking the remainder.
fn blocks(count: u64, pof2: usize) -> Vec<u64> {
    let each = count / pof2 as u64;
    let mut v = vec![each; pof2];
    v[pof2 - 1] = count - each * (pof2 as u64 - 1);
    v
}

fn sum(cnts: &[u64], from: usize, to: usize) -> u64 {
    cnts[from..to].iter().sum()
}

/// Where a member stands in the halving: its new rank among the pof2, and the block indices it
/// is left with.
#[derive(Debug, Clone, Copy)]
struct Halved {
    newrank: usize,
    send_idx: usize,
    last_idx: usize,
}

/// Reduce-scatter by recursive halving among the pof2 members of new rank `newrank` (distance
/// 1 first): at each step the pair exchanges (`MPI_Sendrecv`) the halves each keeps for the
/// other and reduces the half it keeps. `real` maps a new rank to its member.
fn reduce_scatter_halving(
    c: &mut Calls,
    me: usize,
    newrank: usize,
    cnts: &[u64],
    ext: f64,
    tag: Tag,
    real: impl Fn(usize) -> usize,
) -> Halved {
    let pof2 = cnts.len();
    let (mut send_idx, mut recv_idx, mut last_idx) = (0, 0, pof2);
    let mut mask = 1;
    while mask < pof2 {
        let newdst = newrank ^ mask;
        let (send_cnt, recv_cnt);
        if newrank < newdst {
            send_idx = recv_idx + pof2 / (mask * 2);
            send_cnt = sum(cnts, send_idx, last_idx);
            recv_cnt = sum(cnts, recv_idx, send_idx);
        } else {
            recv_idx = send_idx + pof2 / (mask * 2);
            send_cnt = sum(cnts, send_idx, recv_idx);
            recv_cnt = sum(cnts, recv_idx, last_idx);
        }
        let dst = real(newdst);
        c.sendrecv(me, dst, send_cnt as f64 * ext, dst, tag);
        c.apply(me, recv_cnt as f64 * ext);
        send_idx = recv_idx;
        mask <<= 1;
        if mask < pof2 {
            last_idx = recv_idx + pof2 / mask;
        }
    }
    Halved {
        newrank,
        send_idx,
        last_idx,
    }
}

/// One step of the doubling that undoes the halving (the gather of the reduce, the allgather of
/// the allreduce), with new rank `newdst` at distance `mask`: the blocks `me` sends and the
/// index its received ones start at. `last_idx` grows as the held range doubles.
fn doubling_step(h: &mut Halved, newdst: usize, mask: usize, cnts: &[u64]) -> (u64, usize) {
    let pof2 = cnts.len();
    let half = pof2 / (mask * 2);
    if h.newrank < newdst {
        if mask != pof2 / 2 {
            h.last_idx += half;
        }
        (sum(cnts, h.send_idx, h.send_idx + half), h.send_idx + half)
    } else {
        (sum(cnts, h.send_idx, h.last_idx), h.send_idx - half)
    }
}

/// Rabenseifner's reduce: the pairs of the non-power-of-two part fold (odd → even), a
/// reduce-scatter by recursive halving, then a binomial gather of the blocks to `root`
/// (through new rank 0 if the root was folded away). `count` < p is padded to p elements, as
/// MPICH's code does.
pub(super) fn reduce_scatter_gather(c: &mut Calls, root: usize, count: u64, ext: f64) {
    let n = c.members();
    let pof2 = pof2_floor(n as u64) as usize;
    let rem = n - pof2;
    let count = count.max(n as u64);
    let cnts = blocks(count, pof2);
    let real = |newdst: usize| {
        if newdst < rem {
            newdst * 2
        } else {
            newdst + rem
        }
    };
    for rank in 0..n {
        let newrank = if rank < 2 * rem {
            if !rank.is_multiple_of(2) {
                c.send(rank, rank - 1, count as f64 * ext, REDUCE);
                None
            } else {
                c.recv(rank, rank + 1, REDUCE);
                c.apply(rank, count as f64 * ext);
                Some(rank / 2)
            }
        } else {
            Some(rank - rem)
        };
        let mut at =
            newrank.map(|nr| reduce_scatter_halving(c, rank, nr, &cnts, ext, REDUCE, real));
        // The gather.
        let newroot;
        if root < 2 * rem {
            if !root.is_multiple_of(2) {
                if rank == root {
                    c.recv(rank, 0, REDUCE);
                    at = Some(Halved {
                        newrank: 0,
                        send_idx: 0,
                        last_idx: 2,
                    });
                } else if at.is_some_and(|h| h.newrank == 0) {
                    c.send(rank, root, cnts[0] as f64 * ext, REDUCE);
                    at = None;
                }
                newroot = 0;
            } else {
                newroot = root / 2;
            }
        } else {
            newroot = root - rem;
        }
        let Some(mut h) = at else {
            continue;
        };
        let mut j = pof2.trailing_zeros() as i32 - 1;
        let mut mask = pof2 >> 1;
        while mask > 0 {
            let newdst = h.newrank ^ mask;
            let mut dst = real(newdst);
            if newdst == 0 && root < 2 * rem && !root.is_multiple_of(2) {
                dst = root;
            }
            let (send_cnt, recv_idx) = doubling_step(&mut h, newdst, mask, &cnts);
            let tree = |v: usize| (v >> j) << j;
            if tree(newdst) == tree(newroot) {
                c.send(rank, dst, send_cnt as f64 * ext, REDUCE);
                break;
            }
            c.recv(rank, dst, REDUCE);
            if h.newrank > newdst {
                h.send_idx = recv_idx;
            }
            mask >>= 1;
            j -= 1;
        }
    }
}

/// The allreduce's fold of the non-power-of-two part: the even member of each of the first
/// `rem` pairs sends its vector to the odd one (which reduces it) and sits out; the new rank of
/// the others.
fn allreduce_fold(c: &mut Calls, rank: usize, rem: usize, bytes: f64) -> Option<usize> {
    if rank < 2 * rem {
        if rank.is_multiple_of(2) {
            c.send(rank, rank + 1, bytes, ALLREDUCE);
            None
        } else {
            c.recv(rank, rank - 1, ALLREDUCE);
            c.apply(rank, bytes);
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    }
}

/// The allreduce's unfold: the odd member of each of the first `rem` pairs sends the result
/// back to the even one.
fn allreduce_unfold(c: &mut Calls, rank: usize, rem: usize, bytes: f64) {
    if rank < 2 * rem {
        if !rank.is_multiple_of(2) {
            c.send(rank, rank - 1, bytes, ALLREDUCE);
        } else {
            c.recv(rank, rank + 1, ALLREDUCE);
        }
    }
}

/// The allreduce's member of new rank `newdst`.
fn allreduce_real(rem: usize) -> impl Fn(usize) -> usize {
    move |newdst| {
        if newdst < rem {
            newdst * 2 + 1
        } else {
            newdst + rem
        }
    }
}

/// Recursive-doubling allreduce: fold, log₂ pof2 exchanges (`MPI_Sendrecv`) of the whole
/// vector with new rank XOR 2^k, each reduced, unfold.
pub(super) fn allreduce_recursive_doubling(c: &mut Calls, bytes: f64) {
    let n = c.members();
    let pof2 = pof2_floor(n as u64) as usize;
    let rem = n - pof2;
    let real = allreduce_real(rem);
    for rank in 0..n {
        if let Some(newrank) = allreduce_fold(c, rank, rem, bytes) {
            let mut mask = 1;
            while mask < pof2 {
                let dst = real(newrank ^ mask);
                c.sendrecv(rank, dst, bytes, dst, ALLREDUCE);
                c.apply(rank, bytes);
                mask <<= 1;
            }
        }
        allreduce_unfold(c, rank, rem, bytes);
    }
}

/// Rabenseifner's allreduce: fold, reduce-scatter by recursive halving, allgather by recursive
/// doubling (the same pairs in reverse order, each sending the blocks it holds), unfold.
pub(super) fn allreduce_reduce_scatter_allgather(c: &mut Calls, count: u64, ext: f64) {
    let n = c.members();
    let pof2 = pof2_floor(n as u64) as usize;
    let rem = n - pof2;
    let real = allreduce_real(rem);
    let cnts = blocks(count, pof2);
    let bytes = count as f64 * ext;
    for rank in 0..n {
        if let Some(newrank) = allreduce_fold(c, rank, rem, bytes) {
            let mut h = reduce_scatter_halving(c, rank, newrank, &cnts, ext, ALLREDUCE, &real);
            let mut mask = pof2 >> 1;
            while mask > 0 {
                let newdst = newrank ^ mask;
                let (send_cnt, recv_idx) = doubling_step(&mut h, newdst, mask, &cnts);
                let dst = real(newdst);
                c.sendrecv(rank, dst, send_cnt as f64 * ext, dst, ALLREDUCE);
                if newrank > newdst {
                    h.send_idx = recv_idx;
                }
                mask >>= 1;
            }
        }
        allreduce_unfold(c, rank, rem, bytes);
    }
}
