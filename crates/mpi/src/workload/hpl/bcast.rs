//! HPL's panel broadcasts along a process row (`HPL_bcast_1ring`, `_1rinM`, `_2ring`, `_2rinM`,
//! `_blong`, `_blonM`): who sends what to whom, in which order, with which MPI call.
//!
//! In the ring variants the root sends the whole panel with blocking `MPI_Send`s and every other
//! process probes for it (`MPI_Iprobe`), receives it and forwards it with `MPI_Send`. In the
//! long variants the panel is cut in pieces scattered by a binomial tree of `MPI_Ssend`s, then
//! rolled around the ring with `MPI_Issend`/`MPI_Recv` until everyone has every piece; a
//! receiver does not probe (see [`BcastVariant::probes`]) and is blocked from its first call
//! until the roll is over.

use serde::Deserialize;

use super::exec::{Script, Slot, Tag};
use crate::RankId;

/// HPL's `BCAST`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BcastVariant {
    /// `1ring`: root → right neighbour → … (each forwards).
    #[default]
    #[serde(alias = "1ring")]
    IncreasingRing,
    /// `1ringM`: the root sends to its right neighbour (the next panel's owner, which then
    /// forwards nothing) and to the one after, which starts the ring over the rest.
    #[serde(alias = "1ringM", alias = "1rinM")]
    IncreasingRingModified,
    /// `2ring`: the root sends to its right neighbour and to the process half-way round; each
    /// starts a ring over its half.
    #[serde(alias = "2ring")]
    Increasing2Ring,
    /// `2ringM`: as `2ring`, with the right neighbour served alone first (as in `1ringM`).
    #[serde(alias = "2ringM", alias = "2rinM")]
    Increasing2RingModified,
    /// `long` (`blong`): scatter of `Q` pieces by a binomial tree, then a roll around the ring.
    #[serde(alias = "blong")]
    Long,
    /// `longM` (`blonM`): the whole panel to the right neighbour first, then `long` among the
    /// others.
    #[serde(alias = "longM", alias = "blonM")]
    LongModified,
}

impl BcastVariant {
    /// Whether a receiver probes for the panel and goes on with its update until it has come.
    /// In HPL 2.0's `blong` and `blonM` the probe is compiled out (`#if 0`: "This probing
    /// mechanism causes problems when lookahead is on"): their receivers wait in their first
    /// call of `HPL_bcast` until the panel is there.
    pub fn probes(self) -> bool {
        !matches!(self, BcastVariant::Long | BcastVariant::LongModified)
    }
}

/// How a process's first receive of the broadcast is posted.
#[derive(Clone, Copy)]
pub(super) enum FirstRecv<'a> {
    /// By a probe on the rank's GPU once past its gate (HPL probes between update chunks).
    Probe(&'a dyn Fn(u64) -> Slot),
    /// Where the script is (HPL spins in `HPL_bcast` until it has come).
    Posted,
}

/// One process's part of a row broadcast.
#[derive(Debug, Default)]
pub(super) struct Part {
    /// Its calls, in order (empty for a process that takes no part).
    pub script: Script,
    /// What its calls cost with the network to itself, s: the time it is blocked in them once
    /// its piece has come, if nothing else slows them down.
    pub alone_s: f64,
}

/// The parts of the processes of a row of `q` columns when column `root` broadcasts a panel of
/// `bytes`: `parts[c]` is column `c`'s. `rank(c)`: the rank of column `c`; `alone(a, b, bytes)`:
/// the time of one message between two ranks on an idle network.
#[allow(clippy::too_many_arguments)]
pub(super) fn row(
    v: BcastVariant,
    q: u64,
    root: u64,
    bytes: f64,
    tag: Tag,
    first: FirstRecv<'_>,
    rank: &dyn Fn(u64) -> RankId,
    alone: &dyn Fn(RankId, RankId, f64) -> f64,
) -> Vec<Part> {
    let mut parts: Vec<Part> = (0..q).map(|_| Part::default()).collect();
    if q <= 1 {
        return parts;
    }
    let col = |d: u64| (root + d) % q;
    let recv = |part: &mut Part, me: u64, from: u64, bytes: f64| {
        match first {
            FirstRecv::Probe(gate) if part.script.0.is_empty() => {
                part.script.probe_recv(rank(from), tag, gate(me));
            }
            _ => part.script.recv(rank(from), tag),
        }
        part.alone_s += alone(rank(from), rank(me), bytes);
    };
    let send = |part: &mut Part, me: u64, to: u64, bytes: f64, sync: bool| {
        if sync {
            part.script.ssend(rank(to), tag, bytes);
        } else {
            part.script.send(rank(to), tag, bytes);
        }
        part.alone_s += alone(rank(me), rank(to), bytes);
    };
    match v {
        BcastVariant::Long => long(
            &mut parts,
            &(0..q).map(col).collect::<Vec<_>>(),
            bytes,
            &recv,
            &send,
            &rank,
            tag,
            alone,
        ),
        BcastVariant::LongModified => {
            let next = col(1);
            send(&mut parts[root as usize], root, next, bytes, true);
            recv(&mut parts[next as usize], next, root, bytes);
            if q > 2 {
                let members: Vec<u64> = std::iter::once(root).chain((2..q).map(col)).collect();
                long(&mut parts, &members, bytes, &recv, &send, &rank, tag, alone);
            }
        }
        _ => {
            for d in 0..q {
                let (parent, children) = ring_links(v, q, d);
                let me = col(d);
                let part = &mut parts[me as usize];
                if let Some(p) = parent {
                    recv(part, me, col(p), bytes);
                }
                for c in children {
                    send(part, me, col(c), bytes, false);
                }
            }
        }
    }
    parts
}

/// In a ring variant, the process at distance `d` from the root: the distance it receives from
/// and those it sends to, in order.
fn ring_links(v: BcastVariant, q: u64, d: u64) -> (Option<u64>, Vec<u64>) {
    let next = (d + 1) % q;
    let roo2 = q.div_ceil(2) % q;
    match v {
        BcastVariant::IncreasingRing => {
            if d == 0 {
                (None, vec![1])
            } else {
                (Some(d - 1), if next != 0 { vec![next] } else { vec![] })
            }
        }
        BcastVariant::IncreasingRingModified => {
            if d == 0 {
                (None, if q > 2 { vec![1, 2] } else { vec![1] })
            } else {
                let parent = if q > 2 && d == 2 { 0 } else { d - 1 };
                let fwd = d - 1 != 0 && next != 0;
                (Some(parent), if fwd { vec![next] } else { vec![] })
            }
        }
        BcastVariant::Increasing2Ring => {
            if d == 0 {
                (None, if q > 2 { vec![1, roo2] } else { vec![1] })
            } else {
                let parent = if d - 1 == 0 || d == roo2 { 0 } else { d - 1 };
                let fwd = next != roo2 && next != 0;
                (Some(parent), if fwd { vec![next] } else { vec![] })
            }
        }
        BcastVariant::Increasing2RingModified => {
            if d == 0 {
                let mut v = vec![1];
                if q > 2 {
                    if 2 % q != roo2 {
                        v.push(2);
                    }
                    v.push(roo2);
                }
                (None, v)
            } else {
                let prev = d - 1;
                let parent = if prev == 0 || d == roo2 || (prev >= 1 && prev - 1 == 0) {
                    0
                } else {
                    prev
                };
                let fwd = prev != 0 && next != roo2 && next != 0;
                (Some(parent), if fwd { vec![next] } else { vec![] })
            }
        }
        BcastVariant::Long | BcastVariant::LongModified => unreachable!("not a ring"),
    }
}

/// `HPL_bcast_blong`'s scatter and roll among `members` (columns, the root first) of a panel
/// of `bytes`, cut in `members.len()` pieces of `⌊len / size⌋` doubles (the last takes the rest).
#[allow(clippy::too_many_arguments)]
fn long(
    parts: &mut [Part],
    members: &[u64],
    bytes: f64,
    recv: &dyn Fn(&mut Part, u64, u64, f64),
    send: &dyn Fn(&mut Part, u64, u64, f64, bool),
    rank: &dyn Fn(u64) -> RankId,
    tag: Tag,
    alone: &dyn Fn(RankId, RankId, f64) -> f64,
) {
    let size = members.len() as i64;
    let total = (bytes / 8.0).round() as i64; // HPL's COUNT, doubles
    let count = (total / size).max(1);
    let (mut ip2_0, mut mask_0) = (1i64, 1i64);
    let mut k = size - 1;
    while k > 1 {
        k >>= 1;
        ip2_0 <<= 1;
        mask_0 = (mask_0 << 1) + 1;
    }
    let piece = |i: i64| -> f64 {
        let start = i * count;
        let end = if i == size - 1 { total } else { start + count };
        8.0 * (end.min(total) - start).max(0) as f64
    };
    for mydist in 0..size {
        let me = members[mydist as usize];
        let part = &mut parts[me as usize];
        // The scatter.
        let (mut ip2, mut mask, mut mydist2, mut indx) = (ip2_0, mask_0, mydist, ip2_0);
        loop {
            mask ^= ip2;
            if mydist & mask == 0 {
                let ibuf = indx * count;
                let mut lbuf = total - ibuf;
                if indx + ip2 < size {
                    lbuf = lbuf.min(ip2 * count);
                }
                let b = 8.0 * lbuf.max(0) as f64;
                let partner = mydist ^ ip2;
                if mydist & ip2 != 0 {
                    recv(part, me, members[partner as usize], b);
                } else if partner < size {
                    send(part, me, members[partner as usize], b, true);
                }
            }
            if mydist2 < ip2 {
                ip2 >>= 1;
                indx -= ip2;
            } else {
                mydist2 -= ip2;
                ip2 >>= 1;
                indx += ip2;
            }
            if ip2 == 0 {
                break;
            }
        }
        // The roll: every step an MPI_Issend to one neighbour, an MPI_Recv from it, a wait.
        let at = |d: i64| members[d.rem_euclid(size) as usize];
        let (prev, next) = (at(mydist - 1), at(mydist + 1));
        for k in 0..size - 1 {
            let l = k >> 1;
            let (s_idx, r_idx, partner) = if (mydist + k) & 1 != 0 {
                (mydist + l, mydist - l - 1, prev)
            } else {
                (mydist - l, mydist + l + 1, next)
            };
            let (sb, rb) = (piece(s_idx.rem_euclid(size)), piece(r_idx.rem_euclid(size)));
            part.script.issend(rank(partner), tag, sb);
            part.script.recv(rank(partner), tag);
            part.script.wait_all();
            part.alone_s +=
                alone(rank(me), rank(partner), sb).max(alone(rank(partner), rank(me), rb));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::hpl::exec::Act;

    /// (receive-from, [send-to]) per column, for a ring variant rooted at 0.
    fn links(v: BcastVariant, q: u64) -> Vec<(Option<u32>, Vec<u32>)> {
        let parts = row(
            v,
            q,
            0,
            1e6,
            0,
            FirstRecv::Posted,
            &|c| RankId(c as u32),
            &|_, _, _| 0.0,
        );
        parts
            .iter()
            .map(|p| {
                let mut from = None;
                let mut to = Vec::new();
                for a in &p.script.0 {
                    match *a {
                        Act::Recv { from: f, .. } => from = Some(f.0),
                        Act::Send { to: t, .. } => to.push(t.0),
                        _ => {}
                    }
                }
                (from, to)
            })
            .collect()
    }

    #[test]
    fn ring_variants_on_five_columns_by_hand() {
        use BcastVariant::*;
        // 1ring: 0 → 1 → 2 → 3 → 4.
        assert_eq!(
            links(IncreasingRing, 5),
            [
                (None, vec![1]),
                (Some(0), vec![2]),
                (Some(1), vec![3]),
                (Some(2), vec![4]),
                (Some(3), vec![])
            ]
        );
        // 1ringM: 0 → 1, 0 → 2 → 3 → 4.
        assert_eq!(
            links(IncreasingRingModified, 5),
            [
                (None, vec![1, 2]),
                (Some(0), vec![]),
                (Some(0), vec![3]),
                (Some(2), vec![4]),
                (Some(3), vec![])
            ]
        );
        // 2ring: roo2 = 3: 0 → 1 → 2, 0 → 3 → 4.
        assert_eq!(
            links(Increasing2Ring, 5),
            [
                (None, vec![1, 3]),
                (Some(0), vec![2]),
                (Some(1), vec![]),
                (Some(0), vec![4]),
                (Some(3), vec![])
            ]
        );
        // 2ringM: 0 → 1, 0 → 2, 0 → 3 → 4.
        assert_eq!(
            links(Increasing2RingModified, 5),
            [
                (None, vec![1, 2, 3]),
                (Some(0), vec![]),
                (Some(0), vec![]),
                (Some(0), vec![4]),
                (Some(3), vec![])
            ]
        );
        // Two columns: every variant is one message.
        for v in [
            IncreasingRing,
            IncreasingRingModified,
            Increasing2Ring,
            Increasing2RingModified,
        ] {
            assert_eq!(links(v, 2), [(None, vec![1]), (Some(0), vec![])]);
        }
    }

    #[test]
    fn long_on_four_columns_by_hand() {
        // COUNT = 1000 doubles, 4 pieces of 250. Scatter: 0 → 2 (pieces 2-3: 500 doubles),
        // 0 → 1 (piece 1), 2 → 3 (piece 3). Roll: 3 steps with both neighbours.
        let parts = row(
            BcastVariant::Long,
            4,
            0,
            8000.0,
            0,
            FirstRecv::Posted,
            &|c| RankId(c as u32),
            &|_, _, _| 0.0,
        );
        let sends: Vec<Vec<(u32, f64, bool)>> = parts
            .iter()
            .map(|p| {
                p.script
                    .0
                    .iter()
                    .filter_map(|a| match *a {
                        Act::Send {
                            to,
                            bytes,
                            blocking,
                            ..
                        } => Some((to.0, bytes, blocking)),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        // Root: Ssend 4000 B to 2, 2000 B to 1; then roll steps: (0+0) even → next (1) with its
        // piece 0; (0+1) odd → prev (3) with piece 0; (0+2) even, l = 1 → next with piece 3.
        assert_eq!(
            sends[0],
            [
                (2, 4000.0, true),
                (1, 2000.0, true),
                (1, 2000.0, false),
                (3, 2000.0, false),
                (1, 2000.0, false)
            ]
        );
        assert_eq!(sends[2][0], (3, 2000.0, true));
        // Every process is in all three roll steps.
        for p in &parts {
            let waits = p
                .script
                .0
                .iter()
                .filter(|a| matches!(a, Act::WaitAll))
                .count();
            assert_eq!(waits, 3);
        }
    }
}
