//! `MPI_Bcast`'s algorithms, member by member as MPICH's code posts its calls (SimGrid 3.32's
//! copies: `src/smpi/colls/bcast/bcast-binomial-tree.cpp`, `bcast-scatter-rdb-allgather.cpp`,
//! `bcast-scatter-LR-allgather.cpp`, `bcast-SMP-binomial.cpp`; MPICH's
//! `src/mpi/coll/bcast/bcast_intra_binomial.c`, `bcast_intra_scatter_recursive_doubling_allgather.c`,
//! `bcast_intra_scatter_ring_allgather.c`, `bcast_utils.c`). Members are indices into the group,
//! the root one of them; a relative rank counts from the root.

use super::calls::{Calls, Tag};

const TAG: Tag = 1;

/// Member index of relative rank `rel` (relative to `root`) among `n`.
fn abs(rel: usize, root: usize, n: usize) -> usize {
    (rel + root) % n
}

/// In MPICH's binomial tree over `n`, the distance to relative rank `rel`'s parent (its lowest
/// set bit; none for the root), and the distances to its children, largest first: the masks
/// below that bit (below n's next power of two for the root) that land on a rank.
fn tree(rel: usize, n: usize) -> (Option<usize>, impl Iterator<Item = usize>) {
    let low = (rel > 0).then(|| 1 << rel.trailing_zeros());
    let top = low.unwrap_or_else(|| n.next_power_of_two());
    let children = (0..top.trailing_zeros())
        .rev()
        .map(|k| 1 << k)
        .filter(move |m| rel + m < n);
    (low, children)
}

/// Binomial tree: relative rank v receives from v − 2^k (2^k its lowest set bit), then sends
/// to v + 2^j for j < k, largest first, each a blocking `MPI_Send` of the whole message.
pub(super) fn binomial(c: &mut Calls, root: usize, bytes: f64) {
    let n = c.members();
    for rel in 0..n {
        let me = abs(rel, root, n);
        let (parent, children) = tree(rel, n);
        if let Some(m) = parent {
            c.recv(me, abs(rel - m, root, n), TAG);
        }
        for m in children {
            c.send(me, abs(rel + m, root, n), bytes, TAG);
        }
    }
}

/// SimGrid's `bcast__SMP_binomial` with one rank per host: the root first sends the message to
/// member 0, which then roots a binomial tree over all members (the root included).
pub(super) fn smp_binomial(c: &mut Calls, root: usize, bytes: f64) {
    if root != 0 {
        c.send(root, 0, bytes, TAG);
        c.recv(0, root, TAG);
    }
    binomial(c, 0, bytes);
}

/// Size of the scatter's pieces: ⌈nbytes / n⌉ (MPICH's `scatter_size`).
fn piece(nbytes: i64, n: usize) -> i64 {
    (nbytes + n as i64 - 1) / n as i64
}

/// Bytes of piece `i` (the last ones may be short or empty).
fn piece_bytes(nbytes: i64, n: usize, i: usize) -> i64 {
    let s = piece(nbytes, n);
    (nbytes - i as i64 * s).clamp(0, s)
}

/// MPICH's `scatter_for_bcast`: the binomial tree again, relative rank v receiving from its
/// parent the pieces [v, v + subtree) that exist, and sending its children theirs. A member
/// whose first piece starts beyond the message receives nothing.
fn scatter(c: &mut Calls, root: usize, nbytes: i64) {
    let n = c.members();
    let s = piece(nbytes, n);
    // Bytes each relative rank holds once its receive is done; a parent is processed before
    // its children (it has a lower relative rank).
    let mut curr = vec![0i64; n];
    curr[0] = nbytes;
    for rel in 0..n {
        let me = abs(rel, root, n);
        let (parent, children) = tree(rel, n);
        if let Some(m) = parent
            && nbytes - rel as i64 * s > 0
        {
            c.recv(me, abs(rel - m, root, n), TAG);
        }
        for m in children {
            let send = curr[rel] - s * m as i64;
            if send > 0 {
                c.send(me, abs(rel + m, root, n), send as f64, TAG);
                curr[rel + m] = send;
                curr[rel] -= send;
            }
        }
    }
}

/// Scatter, then recursive-doubling allgather: at step k, relative ranks v and v XOR 2^k
/// exchange (`MPI_Sendrecv`) all they hold. On a number of members that is not a power of two,
/// the subtrees left without a partner get the missing data from the ranks of theirs that
/// have it, by recursive halving (MPICH's code, which its rule never reaches there).
pub(super) fn scatter_recursive_doubling(c: &mut Calls, root: usize, bytes: f64) {
    let n = c.members();
    let nbytes = bytes.ceil() as i64;
    if n < 2 || nbytes == 0 {
        return;
    }
    scatter(c, root, nbytes);
    // What each relative rank holds, and what it last received (the size the non-power-of-two
    // part forwards), step by step for all ranks at once.
    let mut curr: Vec<i64> = (0..n).map(|v| piece_bytes(nbytes, n, v)).collect();
    let mut last_recv = vec![0i64; n];
    let mut mask = 1usize;
    let mut i = 0u32;
    while mask < n {
        let before = curr.clone();
        for rel in 0..n {
            let dst = rel ^ mask;
            if dst < n {
                let me = abs(rel, root, n);
                let other = abs(dst, root, n);
                c.sendrecv(me, other, before[rel] as f64, other, TAG);
                last_recv[rel] = before[dst];
                curr[rel] += before[dst];
            }
        }
        // Ranks whose partner subtree does not exist: `k` bits, halving the distance each
        // round; in a round a rank either sends (it has the data), receives, or neither.
        let mut k = mask.trailing_zeros();
        let mut tmp = mask >> 1;
        while tmp > 0 {
            let mut received = Vec::new();
            for (rel, &last) in last_recv.iter().enumerate() {
                let dst_tree_root = ((rel ^ mask) >> i) << i;
                if dst_tree_root + mask <= n {
                    continue;
                }
                let my_tree_root = (rel >> i) << i;
                let completed = n as i64 - my_tree_root as i64 - mask as i64;
                let to = rel ^ tmp;
                let tree_root = ((rel >> k) << k) as i64;
                let (r, t) = (rel as i64, to as i64);
                let me = abs(rel, root, n);
                if t > r && r < tree_root + completed && t >= tree_root + completed {
                    c.send(me, abs(to, root, n), last as f64, TAG);
                    received.push((to, last));
                } else if t < r && t < tree_root + completed && r >= tree_root + completed {
                    c.recv(me, abs(to, root, n), TAG);
                }
            }
            for (to, got) in received {
                last_recv[to] = got;
                curr[to] += got;
            }
            tmp >>= 1;
            k = k.saturating_sub(1);
        }
        mask <<= 1;
        i += 1;
    }
    debug_assert!(curr.iter().all(|&h| h == nbytes), "every rank has it all");
}

/// Scatter, then ring allgather: n − 1 steps in which every member sends to its right
/// neighbour the piece it received last (its own first) and receives from its left one
/// (`MPI_Sendrecv`; empty pieces are still messages).
pub(super) fn scatter_ring(c: &mut Calls, root: usize, bytes: f64) {
    let n = c.members();
    let nbytes = bytes.ceil() as i64;
    if n < 2 {
        return;
    }
    scatter(c, root, nbytes);
    for me in 0..n {
        let (left, right) = ((me + n - 1) % n, (me + 1) % n);
        let (mut src, mut next) = (me, left);
        for _ in 1..n {
            let piece = piece_bytes(nbytes, n, (src + n - root) % n);
            c.sendrecv(me, right, piece as f64, left, TAG);
            src = next;
            next = (next + n - 1) % n;
        }
    }
}
