//! HPL's row swaps (`HPL_pdlaswp00T`, binary exchange, and `HPL_pdlaswp01T`, spread-roll with
//! `HPL_equil`), which gather the panel's `jb` pivot rows into `U` (`jb × n` on every process row
//! of a process column) and send the rows they replace where the pivots came from; and the
//! number of pivot rows each process row gives.

use serde::Deserialize;

use rand::RngExt;

use super::exec::{Script, Tag};
use super::pfact::{binomial, pow2_below};
use crate::RankId;
use hetsim_core::rng::SimRng;

/// HPL's `SWAP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwapAlgorithm {
    /// `SWAP = 0`, `HPL_pdlaswp00T`.
    #[default]
    #[serde(alias = "bin-exch")]
    BinaryExchange,
    /// `SWAP = 1` (HPL calls it "long"), `HPL_pdlaswp01T`.
    #[serde(alias = "long")]
    SpreadRoll,
    /// `SWAP = 2`: spread-roll above the swapping threshold of columns, binary exchange at or
    /// below it.
    Mix,
}

/// The expected number of distinct rows of each process row among the `jb` pivots of a panel.
///
/// HPL picks each column's pivot as the largest candidate of the column; for HPL's random
/// matrix every candidate row is equally likely (the SMPI oracle draws them so). Column `i`'s
/// candidates are the `rows[r]` rows of every other process row and the current row's rows
/// below position `i`: `M_i = M − i`, `M = Σ rows`. A given row of process row `r ≠ curr` stays
/// unpicked with probability `Π_i (1 − 1/(M − i)) = (M − jb)/M` (the product telescopes), so `r`
/// gives `rows[r] · jb / M` distinct rows on average (a row picked twice moves once). The
/// current row's count is what the others leave of `jb`.
pub(super) fn pivot_rows(rows: &[u64], curr: usize, jb: u64) -> Vec<u64> {
    let total: u64 = rows.iter().sum();
    let mut out: Vec<u64> = rows
        .iter()
        .enumerate()
        .map(|(r, &m)| {
            if r == curr || total == 0 {
                0
            } else {
                (m as f64 * jb.min(total) as f64 / total as f64).round() as u64
            }
        })
        .collect();
    let others: u64 = out.iter().sum();
    out[curr] = jb.saturating_sub(others);
    out
}

/// The distinct rows of each process row among the `jb` pivots of a panel, drawn as HPL's
/// random matrix makes them (the SMPI oracle draws them so too): column `i`'s pivot is any of
/// its `M − i` candidate rows with equal probability — a process row is picked with probability
/// proportional to its candidates, then one of its rows uniformly; a row picked twice moves
/// once. The current row's count is what the others leave of `jb`.
pub(super) fn draw_pivot_rows(rows: &[u64], curr: usize, jb: u64, rng: &mut SimRng) -> Vec<u64> {
    let mut cand: Vec<u64> = rows.to_vec();
    let mut picked: Vec<Vec<u64>> = vec![Vec::new(); rows.len()];
    for _ in 0..jb {
        let total: u64 = cand.iter().sum();
        if total == 0 {
            break;
        }
        let mut x = rng.random_range(0..total);
        let r = cand
            .iter()
            .position(|&m| {
                if x < m {
                    true
                } else {
                    x -= m;
                    false
                }
            })
            .expect("x < total");
        if r != curr {
            let row = rng.random_range(0..rows[r]);
            if let Err(at) = picked[r].binary_search(&row) {
                picked[r].insert(at, row);
            }
        }
        cand[curr] = cand[curr].saturating_sub(1);
    }
    let mut out: Vec<u64> = picked.iter().map(|p| p.len() as u64).collect();
    let others: u64 = out.iter().sum();
    out[curr] = jb.saturating_sub(others);
    out
}

/// `HPL_pdlaswp00T` for the process at distance `mydist` below the current row, on `n` columns
/// of a panel of width `jb`, where `llen[d]` is the pivot rows of the process at distance `d`:
/// the processes beyond the largest power of two fold into a partner; then `log2 ip2` rounds in
/// which the holders of `U` (`jb × n`) send it to a partner that sends back the pivot rows it
/// has gathered (`W`: rows of `n + 1` numbers); `U` is then broadcast to the folded processes.
#[allow(clippy::too_many_arguments)]
pub(super) fn binary_exchange(
    s: &mut Script,
    p: u64,
    mydist: u64,
    jb: u64,
    n: u64,
    llen: &[u64],
    tag: Tag,
    rank: &dyn Fn(u64) -> RankId,
) {
    if n == 0 || jb == 0 || p <= 1 {
        return;
    }
    let u = 8.0 * (jb * n) as f64;
    let w = |rows: u64| 8.0 * (rows * (n + 1)) as f64;
    let mut llen: Vec<u64> = llen.to_vec();
    llen[0] = 0; // the current row sends U, not W
    let (ip2, hdim) = pow2_below(p);
    let extra = p - ip2;
    let fold = (extra > 0).then_some(mydist ^ ip2).filter(|&x| x < p);
    if let Some(partner) = fold {
        if mydist == 0 {
            s.sendrecv(rank(partner), tag, u, w(llen[partner as usize]));
        } else if mydist == ip2 {
            s.sendrecv(rank(partner), tag, w(llen[mydist as usize]), u);
        } else if mydist & ip2 != 0 {
            s.hpl_send(rank(partner), tag, w(llen[mydist as usize]));
        } else {
            s.hpl_recv(rank(partner), tag, w(llen[partner as usize]));
        }
    }
    for i in 1..extra {
        llen[i as usize] += llen[(i + ip2) as usize];
    }
    if mydist < ip2 {
        for k in 0..hdim {
            let ipow = 1u64 << k;
            let partner = mydist ^ ipow;
            let mine = w(llen[mydist as usize]);
            let theirs = w(llen[partner as usize]);
            if mydist >> (k + 1) == 0 {
                if mydist >> k == 0 {
                    s.sendrecv(rank(partner), tag, u, theirs);
                } else {
                    s.sendrecv(rank(partner), tag, mine, u);
                }
            } else {
                s.sendrecv(rank(partner), tag, mine, theirs);
            }
            for d in 0..ip2 {
                let x = d ^ ipow;
                if x > d {
                    llen[d as usize] += llen[x as usize];
                    llen[x as usize] = llen[d as usize];
                }
            }
        }
    } else if extra > 1 {
        let root = ip2;
        binomial(extra, mydist - root, |partner, receive| {
            if receive {
                s.hpl_recv(rank(root + partner), tag, u);
            } else {
                s.hpl_send(rank(root + partner), tag, u);
            }
        });
    }
    if let Some(partner) = fold {
        if mydist & ip2 != 0 {
            s.hpl_recv(rank(partner), tag, u);
        } else {
            s.hpl_send(rank(partner), tag, u);
        }
    }
}

/// `HPL_logsort`: the order in which the spread visits the process rows (`map[i]`: the process
/// row at position `i`, the current row first), and the prefix sums of their counts of `U` rows
/// in that order (`len`, `p + 1` entries). `counts[r]`: rows of `U` process row `r` holds before
/// the spread.
fn logsort(counts: &[u64], curr: usize) -> (Vec<usize>, Vec<u64>) {
    let p = counts.len();
    let mut map: Vec<usize> = (0..p).map(|j| (j + curr) % p).collect();
    let ones: Vec<u32> = (0..p).map(|j| (j as u32).count_ones()).collect();
    let dist = ones.iter().copied().max().unwrap_or(0);
    // len[i + 1]: count of the process at distance i.
    let mut len: Vec<u64> = std::iter::once(0)
        .chain((0..p).map(|j| counts[(j + curr) % p]))
        .collect();
    for k in 1..=dist {
        for j in 1..p {
            if ones[j] == k {
                for i in 2..p {
                    if k < ones[i] && len[j + 1] < len[i + 1] {
                        len.swap(j + 1, i + 1);
                        map.swap(j, i);
                    }
                }
            }
        }
    }
    len[0] = 0;
    for i in 0..p {
        len[i + 1] += len[i];
    }
    (map, len)
}

/// `HPL_spreadT`: from position `src` to the positions on its right (`right`) or left, the
/// rows `len[i]..len[i + 1]` of `U` for position `i`, by a binomial tree (`pos`: this process's
/// position in `map`).
#[allow(clippy::too_many_arguments)]
fn spread(
    s: &mut Script,
    right: bool,
    src: usize,
    pos: usize,
    n: u64,
    len: &[u64],
    map: &[usize],
    tag: Tag,
    rank: &dyn Fn(usize) -> RankId,
) {
    let p = map.len();
    let (nprow, mydist) = if right {
        if pos < src {
            return;
        }
        (p - src, pos - src)
    } else {
        if pos > src {
            return;
        }
        (src + 1, src - pos)
    };
    let npm1 = nprow - 1;
    if npm1 == 0 {
        return;
    }
    let (mut ip2, mut mask) = (1usize, 1usize);
    let mut k = npm1;
    while k > 1 {
        k >>= 1;
        ip2 <<= 1;
        mask = (mask << 1) + 1;
    }
    let mut mydist2 = mydist;
    let mut il: isize = if right {
        ip2 as isize
    } else {
        (npm1 - ip2) as isize
    };
    let lgth = if right { len[src + nprow] } else { len[nprow] };
    let row = |rows: u64| 8.0 * (rows * n) as f64;
    loop {
        mask ^= ip2;
        if mydist & mask == 0 {
            let (ibuf, end) = if right {
                let kk = il as usize + ip2;
                let ibuf = len[src + il as usize];
                (ibuf, if kk >= nprow { lgth } else { len[src + kk] })
            } else {
                // HPL lets `il` reach −1 here (then both ends are `len[0]`).
                let lo = il - il.min(ip2 as isize);
                (len[lo as usize], len[(il + 1) as usize])
            };
            let lbuf = end.saturating_sub(ibuf);
            if lbuf > 0 {
                let partner = mydist ^ ip2;
                let who = if right {
                    src + partner
                } else {
                    npm1.wrapping_sub(partner)
                };
                if mydist & ip2 != 0 {
                    s.recv(rank(map[who]), tag);
                } else if partner < nprow {
                    s.send(rank(map[who]), tag, row(lbuf));
                }
            }
        }
        let step = |il: isize, by: usize, plus: bool| {
            if plus {
                il + by as isize
            } else {
                il - by as isize
            }
        };
        if mydist2 < ip2 {
            ip2 >>= 1;
            il = step(il, ip2, !right);
        } else {
            mydist2 -= ip2;
            ip2 >>= 1;
            il = step(il, ip2, right);
        }
        if ip2 == 0 {
            break;
        }
    }
}

/// `HPL_pdlaswp01T` for process row `myrow` on `n` columns of a panel of width `jb` whose
/// current row is `curr`; `counts[r]`: pivot rows process row `r` gives (the current row's:
/// its own rows that stay in `U`). The current row spreads to each process row the rows it
/// swaps with it; with `equil`, `HPL_equil` rebalances the pieces of `U` so that every process
/// row holds `jb / P` of them; then the pieces roll around the ring of process rows until every
/// one has all of `U`.
#[allow(clippy::too_many_arguments)]
pub(super) fn spread_roll(
    s: &mut Script,
    myrow: usize,
    curr: usize,
    n: u64,
    counts: &[u64],
    equil: bool,
    tag: Tag,
    rank: &dyn Fn(usize) -> RankId,
) {
    let p = counts.len();
    if n == 0 || p <= 1 {
        return;
    }
    let (map, mut len) = logsort(counts, curr);
    let mut pos_of = vec![0usize; p];
    for (i, &r) in map.iter().enumerate() {
        pos_of[r] = i;
    }
    let pos = pos_of[myrow];
    spread(s, true, 0, pos, n, &len, &map, tag, rank);
    if equil && p > 2 {
        equilibrate(s, pos, n, &mut len, &map, tag, rank);
    }
    // HPL_rollT.
    let seg = |i: usize| len[i + 1] - len[i];
    let prev = map[(pos + p - 1) % p];
    let next = map[(pos + 1) % p];
    let row = |rows: u64| 8.0 * (rows * n) as f64;
    for k in 0..p - 1 {
        let l = k >> 1;
        let (send, recv, partner) = if (pos + k) & 1 != 0 {
            (seg((pos + l) % p), seg((pos + 2 * p - l - 1) % p), prev)
        } else {
            (seg((pos + p - l % p) % p), seg((pos + l + 1) % p), next)
        };
        if recv > 0 {
            s.irecv(rank(partner), tag);
        }
        if send > 0 {
            s.send(rank(partner), tag, row(send));
        }
        if recv > 0 {
            s.wait_all();
        }
    }
}

/// `HPL_equil`: unless every process row holds ⌊jb/P⌋ or ⌈jb/P⌉ rows of `U`, each one whose
/// piece sticks out of its target range spreads the excess left and right; afterwards the
/// pieces are the targets (the first `jb mod P` positions hold one more).
fn equilibrate(
    s: &mut Script,
    pos: usize,
    n: u64,
    len: &mut [u64],
    map: &[usize],
    tag: Tag,
    rank: &dyn Fn(usize) -> RankId,
) {
    let p = map.len() as u64;
    let slen = len[p as usize];
    let smax = slen.div_ceil(p);
    let smin = slen / p;
    let ip = slen - p * smin;
    // HPL's check stops before the last position (`HPL_equil`'s do-while): that one is not
    // looked at.
    let balanced = (0..p as usize - 1).all(|i| {
        let ll = len[i + 1] - len[i];
        ll == smin || ll == smax
    });
    if balanced {
        return;
    }
    let target = |i: u64| {
        if i < ip {
            (i * smax, smax)
        } else {
            (i * smin + ip, smin)
        }
    };
    let mut work = vec![0u64; p as usize + 1];
    for iprow in 0..p as usize {
        let ipu = len[iprow];
        let llu = len[iprow + 1] - ipu;
        let (iptgt, lltgt) = target(iprow as u64);
        let left = ipu < iptgt;
        let right = iptgt + lltgt < ipu + llu;
        if llu > 0 && (left || right) {
            let (mut ipcur, mut llcur) = (ipu, llu);
            for i in 0..p as usize {
                let (t0, tl) = target(i as u64);
                let last = (t0 + tl) as i64 - 1;
                let ll = if last >= ipcur as i64 && llcur > 0 {
                    let ll = ((last - ipcur as i64 + 1) as u64).min(llcur);
                    llcur -= ll;
                    ll
                } else {
                    0
                };
                work[i] = ipcur;
                ipcur += ll;
                work[i + 1] = ipcur;
            }
            if left {
                spread(s, false, iprow, pos, n, &work, map, tag, rank);
            }
            if right {
                spread(s, true, iprow, pos, n, &work, map, tag, rank);
            }
        }
    }
    for (i, l) in len.iter_mut().take(p as usize).enumerate() {
        *l = target(i as u64).0;
    }
    len[p as usize] = slen;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::hpl::exec::Act;

    #[test]
    fn expected_pivot_rows_by_hand() {
        // Two process rows of 1000 rows, jb = 2: M = 2000 then 1999. A row is missed with
        // probability (1999/2000)(1998/1999) = 0.999, so each of the 1000 rows of the other
        // process row is picked with 0.001: 1 row expected; the current row keeps 1.
        assert_eq!(pivot_rows(&[1000, 1000], 0, 2), vec![1, 1]);
        // 384 columns over 20 000 + 20 000 rows: the other row gives 20 000 · 384/40 000 = 192.
        let v = pivot_rows(&[20_000, 20_000], 1, 384);
        assert_eq!(v, vec![192, 192]);
        assert_eq!(v.iter().sum::<u64>(), 384);
    }

    fn pattern(s: &Script) -> Vec<(char, u32, f64)> {
        s.0.iter()
            .filter_map(|a| match *a {
                Act::Send { to, bytes, .. } => Some(('s', to.0, bytes)),
                Act::Recv { from, .. } => Some(('r', from.0, 0.0)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn binary_exchange_of_two_and_four() {
        // P = 2, n = 10 columns, jb = 4: the current row sends U (4·10 doubles) and receives the
        // other row's 3 pivot rows of 11 numbers; the other row the reverse.
        let r = |d: u64| RankId(d as u32);
        let mut s = Script::default();
        binary_exchange(&mut s, 2, 0, 4, 10, &[1, 3], 0, &r);
        assert_eq!(pattern(&s), [('r', 1, 0.0), ('s', 1, 320.0)]);
        let mut s = Script::default();
        binary_exchange(&mut s, 2, 1, 4, 10, &[1, 3], 0, &r);
        assert_eq!(pattern(&s), [('r', 0, 0.0), ('s', 0, 3.0 * 11.0 * 8.0)]);
        // P = 4: round 1 pairs (0,1) [U ↔ W1] and (2,3) [W2 ↔ W3]; round 2 pairs (0,2) [U ↔
        // W2+W3] and (1,3) [U ↔ W2+W3].
        let llen = [0, 1, 2, 3];
        let mut s = Script::default();
        binary_exchange(&mut s, 4, 3, 4, 10, &llen, 0, &r);
        assert_eq!(
            pattern(&s),
            [
                ('r', 2, 0.0),
                ('s', 2, 3.0 * 88.0),
                ('r', 1, 0.0),
                ('s', 1, 5.0 * 88.0)
            ]
        );
        let mut s = Script::default();
        binary_exchange(&mut s, 4, 1, 4, 10, &llen, 0, &r);
        assert_eq!(
            pattern(&s),
            [
                ('r', 0, 0.0),
                ('s', 0, 88.0),
                ('r', 3, 0.0),
                ('s', 3, 320.0)
            ]
        );
    }

    #[test]
    fn binary_exchange_of_three_folds_the_third() {
        // P = 3: distance 2 folds into the current row (sends its W, gets U), rows 0 and 1
        // exchange, then the current row sends the final U to 2.
        let r = |d: u64| RankId(d as u32);
        let llen = [0, 2, 3];
        let mut s = Script::default();
        binary_exchange(&mut s, 3, 2, 4, 10, &llen, 0, &r);
        assert_eq!(
            pattern(&s),
            [('r', 0, 0.0), ('s', 0, 3.0 * 88.0), ('r', 0, 0.0)]
        );
        let mut s = Script::default();
        binary_exchange(&mut s, 3, 0, 4, 10, &llen, 0, &r);
        assert_eq!(
            pattern(&s),
            [
                ('r', 2, 0.0),
                ('s', 2, 320.0),
                ('r', 1, 0.0),
                ('s', 1, 320.0),
                ('s', 2, 320.0)
            ]
        );
    }

    #[test]
    fn logsort_puts_large_pieces_near_the_root() {
        // P = 4, current row 1: positions 1, 2, 3 are rows 2, 3, 0 with 1, 5, 2 rows. Position 3
        // (binary 11: two hops of the spread) must not hold more than positions 1 and 2 (one
        // hop): rows 2 and 0 trade places.
        let (map, len) = logsort(&[2, 4, 1, 5], 1);
        assert_eq!(map, [1, 0, 3, 2]);
        assert_eq!(len, [0, 4, 6, 11, 12]);
    }

    #[test]
    fn spread_roll_of_two() {
        // P = 2: the current row (0) sends the other its 3 displaced rows; then one roll step:
        // each sends its piece (0: 1 row, 1: 3 rows) to the other.
        let r = |i: usize| RankId(i as u32);
        let mut s0 = Script::default();
        spread_roll(&mut s0, 0, 0, 10, &[1, 3], true, 0, &r);
        assert_eq!(
            pattern(&s0),
            [('s', 1, 240.0), ('r', 1, 0.0), ('s', 1, 80.0)]
        );
        let mut s1 = Script::default();
        spread_roll(&mut s1, 1, 0, 10, &[1, 3], true, 0, &r);
        assert_eq!(
            pattern(&s1),
            [('r', 0, 0.0), ('r', 0, 0.0), ('s', 0, 240.0)]
        );
    }
}
