//! `MPI_Alltoall`'s algorithms, member by member as MPICH's code posts its calls (SimGrid 3.32's
//! copies: `src/smpi/colls/alltoall/alltoall-bruck.cpp`, `alltoall-mvapich-scatter-dest.cpp`,
//! `alltoall-pair.cpp`, `alltoall-ring.cpp`; MPICH's `src/mpi/coll/alltoall/alltoall_intra_brucks.c`,
//! `alltoall_intra_scattered.c`, `alltoall_intra_pairwise.c`). `bytes` is what each member sends
//! to each other one; a member's block for itself is a local copy.

use super::calls::{Calls, Tag};

const TAG: Tag = 4;

/// Bruck et al. 1997: for each bit 2^k < p, every member sends to rank + 2^k (and receives from
/// rank − 2^k, `MPI_Sendrecv`) the blocks whose index has that bit, packed in one message.
pub(super) fn bruck(c: &mut Calls, bytes: f64) {
    let n = c.members();
    let mut pof2 = 1;
    while pof2 < n {
        let blocks = (1..n).filter(|b| b & pof2 != 0).count();
        for me in 0..n {
            let (dst, src) = ((me + pof2) % n, (me + n - pof2) % n);
            c.sendrecv(me, dst, blocks as f64 * bytes, src, TAG);
        }
        pof2 *= 2;
    }
}

/// Scattered destinations: rounds of `throttle` peers, each round posting the irecvs from
/// rank + i, then the isends to rank − i, then a waitall on them all. The member's own block
/// (i = 0) is a local copy.
pub(super) fn scattered(c: &mut Calls, bytes: f64, throttle: u32) {
    let n = c.members();
    let block = (throttle as usize).clamp(1, n.max(1));
    for me in 0..n {
        for first in (0..n).step_by(block) {
            let round = (n - first).min(block);
            for i in 0..round {
                let from = (me + i + first) % n;
                if from != me {
                    c.irecv(me, from, TAG);
                }
            }
            for i in 0..round {
                let to = (me + n - i - first) % n;
                if to != me {
                    c.isend(me, to, bytes, TAG);
                }
            }
            c.waitall(me);
        }
    }
}

/// p − 1 steps of `MPI_Sendrecv`; at step i a member sends to `to(me, i)` and receives from
/// `from(me, i)`.
fn steps(c: &mut Calls, bytes: f64, partner: impl Fn(usize, usize, usize) -> (usize, usize)) {
    let n = c.members();
    for me in 0..n {
        for i in 1..n {
            let (to, from) = partner(me, i, n);
            c.sendrecv(me, to, bytes, from, TAG);
        }
    }
}

/// To rank + i, from rank − i (SimGrid's `alltoall__ring`; MPICH's pairwise exchange on a
/// number of members that is not a power of two).
pub(super) fn ring(c: &mut Calls, bytes: f64) {
    steps(c, bytes, |me, i, n| ((me + i) % n, (me + n - i) % n));
}

/// Pairwise exchange: with partner rank XOR i on a power of two, else as [`ring`].
pub(super) fn pairwise(c: &mut Calls, bytes: f64) {
    if c.members().is_power_of_two() {
        steps(c, bytes, |me, i, _| (me ^ i, me ^ i));
    } else {
        ring(c, bytes);
    }
}
