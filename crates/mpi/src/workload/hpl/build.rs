//! HPL 2.0's driver loops (`HPL_pdgesv0` without look-ahead, `HPL_pdgesvK2` with it) as scripts
//! of every rank's threads, iteration by iteration.

use super::bcast::{self, FirstRecv};
use super::exec::{Exec, Lane, Script, Slot, Tag, Tid};
use super::grid::Grid;
use super::net::Wires;
use super::pfact::{self, PanelAlgo};
use super::rate::RateModel;
use super::swap::{self, SwapAlgorithm};
use super::{BcastVariant, HplPlan, HplSpec, PanelUnit, PivotSearch, Pivots, ProcessModel};
use crate::program::OpSink;
use crate::{Buffer, ProgramBuilder, RankId, Unit};
use hetsim_platform::cluster::Cluster;

/// A process row's part of a panel factorisation: the flops between its pivot searches
/// ([`pfact::segments`]) and their seconds.
struct Segments {
    flops: Vec<f64>,
    secs: Vec<f64>,
}

/// Bytes of a double, HPL's element.
const WORD: f64 = 8.0;

/// What a message tag stands for, within one panel.
#[derive(Clone, Copy)]
enum Phase {
    Pivot = 0,
    Bcast = 1,
    SwapAhead = 2,
    Swap = 3,
}

fn tag(panel: u64, phase: Phase) -> Tag {
    (panel * 4 + phase as u64) as Tag
}

/// Slot `i` (< 4) of a rank in an iteration of the concurrent process model: the GPU's position
/// when the iteration starts, the launches of the updates and the look-ahead's completion.
fn slot(rank: RankId, i: u32) -> Slot {
    Slot(rank.0 * 4 + i)
}

/// How the panel's copies between GPU and host memory cost time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Copies {
    /// Messages from the rank to itself over its node's route (shared with other traffic).
    Link,
    /// Fixed delays at this rate, B/s (as the SMPI oracle charges them).
    Fixed(f64),
}

/// Everything the scripts are written from.
pub(super) struct Builder<'a> {
    pub grid: Grid,
    pub plan: &'a HplPlan,
    pub algo: PanelAlgo,
    pub bcast: BcastVariant,
    pub swap: SwapAlgorithm,
    pub swap_threshold: u64,
    pub equil: bool,
    pub lookahead: bool,
    pub process: ProcessModel,
    pub panel: PanelUnit,
    pub pivot_search: PivotSearch,
    pub copies: Copies,
    pub wires: Wires,
    /// Per panel, the pivot rows each process row gives ([`swap::pivot_rows`]).
    pub pivot_rows: Vec<Vec<u64>>,
}

impl<'a> Builder<'a> {
    pub fn new(spec: &HplSpec, plan: &'a HplPlan, cluster: &Cluster, copies: Copies) -> Self {
        let grid = Grid {
            n: plan.n,
            nb: plan.nb,
            p: plan.p as u64,
            q: plan.q as u64,
            order: spec.rank_order,
        };
        let mut rng = hetsim_core::rng::rng_from_seed(spec.pivot_seed);
        let pivot_rows = (0..grid.panels())
            .map(|k| {
                let (j, jb) = grid.panel(k);
                let rows: Vec<u64> = (0..grid.p).map(|r| grid.rows_from(j, r)).collect();
                let curr = (k % grid.p) as usize;
                match spec.pivots {
                    Pivots::Random => swap::draw_pivot_rows(&rows, curr, jb, &mut rng),
                    Pivots::Expected => swap::pivot_rows(&rows, curr, jb),
                }
            })
            .collect();
        Builder {
            grid,
            plan,
            algo: PanelAlgo {
                pfact: spec.pfact,
                rfact: spec.rfact,
                nbmin: spec.nbmin,
                ndiv: spec.ndiv,
            },
            bcast: spec.bcast,
            swap: spec.swap,
            swap_threshold: spec.swap_threshold,
            equil: spec.equilibration,
            lookahead: spec.lookahead == 1,
            process: spec.process,
            panel: spec.panel,
            pivot_search: spec.pivot_search,
            copies,
            wires: Wires::new(cluster),
            pivot_rows,
        }
    }

    /// The program's operations, into `b`.
    pub fn build<S: OpSink>(&self, b: ProgramBuilder<S>) -> ProgramBuilder<S> {
        let mut e = Exec::new(b);
        let g = self.grid;
        let panels = g.panels();
        match self.process {
            // Without look-ahead (DEPTH 0, or HPL 2.0's sequential process on one process
            // column, which never looks ahead) each panel waits for the previous update.
            _ if !self.lookahead || (self.process == ProcessModel::Sequential && g.q == 1) => {
                for k in 0..panels {
                    self.fact(&mut e, k);
                    self.broadcast_polled(&mut e, k);
                    for c in 0..g.q {
                        let (j, jb) = g.panel(k);
                        let n = g.cols_from(j + jb, c);
                        for r in 0..g.p {
                            let t = Tid::main(g.rank(r, c));
                            let mut s = std::mem::take(e.script(t));
                            self.swap_rows(&mut s, k, r, c, n, tag(k, Phase::Swap));
                            self.update(&mut s, Unit::Gpu, k, r, n, None);
                            *e.script(t) = s;
                        }
                    }
                    e.run();
                }
            }
            ProcessModel::Sequential => {
                self.fact(&mut e, 0);
                self.broadcast_polled(&mut e, 0);
                e.run();
                for k in 1..panels {
                    self.iteration_sequential(&mut e, k);
                    e.run();
                }
                self.last_update(&mut e, Lane::Main);
                e.run();
            }
            ProcessModel::Concurrent => {
                self.fact(&mut e, 0);
                self.broadcast_polled(&mut e, 0);
                e.run();
                for k in 1..panels {
                    self.iteration_concurrent(&mut e, k);
                    e.run();
                }
                self.last_update(&mut e, Lane::Gpu);
                e.run();
            }
        }
        e.into_builder()
    }

    /// The host rate model, or the GPU's for a panel on the GPU, and the unit.
    fn panel_rate(&self) -> (RateModel, Unit) {
        match (self.panel, self.plan.cpu) {
            (PanelUnit::Cpu, Some(cpu)) => (cpu, Unit::Cpu),
            _ => (self.plan.gpu, Unit::Gpu),
        }
    }

    fn copy(&self, s: &mut Script, bytes: f64, from: Buffer, to: Buffer) {
        if self.panel == PanelUnit::Gpu {
            return;
        }
        match self.copies {
            Copies::Link => s.copy(bytes, from, to),
            Copies::Fixed(rate) => s.delay(bytes / rate),
        }
    }

    /// `HPL_pdfact` of panel `k` on its process column: every process of the column copies its
    /// rows to the host, factorises them column by column with a pivot search per column, and
    /// copies them back. With collapsed pivot searches, a process exchanges for the first
    /// column only, then computes its part in one kernel and waits, in one delay, for what the
    /// other columns' lock-step adds: per column the slowest process's compute and the
    /// exchange's time alone ([`pfact::pivot_search_secs`]).
    fn fact<S: OpSink>(&self, e: &mut Exec<S>, k: u64) {
        let g = self.grid;
        let (j, jb) = g.panel(k);
        let c = k % g.q;
        let curr = k % g.p;
        let (rate, unit) = self.panel_rate();
        let rank_at = |d: u64| g.rank((curr + d) % g.p, c);
        // Per process row: the flops between searches and their seconds. They depend on the
        // row's count of panel rows and on whether it holds the diagonal block only, so the
        // rows share a few distinct lists (computed once each).
        let mut kinds: Vec<((u64, bool), Segments)> = Vec::new();
        let kind_of: Vec<usize> = (0..g.p)
            .map(|r| {
                let key = (g.rows_from(j, r), r == curr);
                if let Some(i) = kinds.iter().position(|(k, _)| *k == key) {
                    return i;
                }
                let (mp, is_curr) = key;
                // The recursion's largest products have inner dimension jb/2; a process without
                // rows still updates its copy of the jb × jb top block.
                let size = if mp > 0 {
                    (mp as f64).min(jb as f64 / 2.0)
                } else {
                    jb as f64 / 2.0
                };
                let flops = pfact::segments(&self.algo, mp, jb, is_curr);
                let secs = flops.iter().map(|&f| rate.secs(f, size)).collect();
                kinds.push((key, Segments { flops, secs }));
                kinds.len() - 1
            })
            .collect();
        let segs = |r: u64| &kinds[kind_of[r as usize]].1;
        let lockstep_s = (self.pivot_search == PivotSearch::Collapsed).then(|| {
            // The slowest row at each step (a maximum: the same over the distinct lists).
            let slowest: f64 = (0..=jb as usize)
                .map(|i| kinds.iter().map(|(_, k)| k.secs[i]).fold(0.0, f64::max))
                .sum();
            let msg =
                |a: u64, b: u64, bytes: f64| self.wires.message_secs(rank_at(a), rank_at(b), bytes);
            slowest + (jb - 1) as f64 * pfact::pivot_search_secs(g.p, jb, &msg)
        });
        for r in 0..g.p {
            let Segments { flops, secs } = segs(r);
            let mp = g.rows_from(j, r);
            let s = e.script(Tid::main(g.rank(r, c)));
            let bytes = WORD * (mp * jb) as f64;
            self.copy(s, bytes, Buffer::Device, Buffer::Host);
            let mydist = (r + g.p - curr) % g.p;
            let search = |s: &mut Script| {
                pfact::pivot_search(s, g.p, mydist, jb, tag(k, Phase::Pivot), &rank_at);
            };
            match lockstep_s {
                None => {
                    for (i, (&f, &t)) in flops.iter().zip(secs).enumerate() {
                        s.kernel(unit, "panel", t, f);
                        if (i as u64) < jb {
                            search(s);
                        }
                    }
                }
                Some(total_s) => {
                    search(s);
                    let own_s: f64 = secs.iter().sum();
                    s.kernel(unit, "panel", own_s, flops.iter().sum());
                    s.delay(total_s - own_s);
                }
            }
            self.copy(s, bytes, Buffer::Host, Buffer::Device);
        }
    }

    /// Bytes of panel `k` as process row `r` broadcasts it: its rows of `L` below the panel,
    /// the `jb × jb` top block and the pivots (`HPL_pdpanel_init`'s `len`).
    fn panel_bytes(&self, k: u64, r: u64) -> f64 {
        let (j, jb) = self.grid.panel(k);
        let ml2 = self.grid.rows_from(j + jb, r);
        WORD * (ml2 * jb + jb * jb + jb + 1) as f64
    }

    /// The broadcast parts of every row for panel `k`.
    fn broadcast_parts(&self, k: u64, r: u64, first: FirstRecv<'_>) -> Vec<bcast::Part> {
        let g = self.grid;
        let alone = |a: RankId, b: RankId, bytes: f64| self.wires.alone_secs(a, b, bytes);
        bcast::row(
            self.bcast,
            g.q,
            k % g.q,
            self.panel_bytes(k, r),
            tag(k, Phase::Bcast),
            first,
            &|c| g.rank(r, c),
            &alone,
        )
    }

    /// Panel `k`'s broadcast while every process spins in `HPL_bcast` (no look-ahead, or the
    /// first panel): each part runs on its rank's process.
    fn broadcast_polled<S: OpSink>(&self, e: &mut Exec<S>, k: u64) {
        let g = self.grid;
        for r in 0..g.p {
            for (c, part) in self
                .broadcast_parts(k, r, FirstRecv::Posted)
                .into_iter()
                .enumerate()
            {
                e.script(Tid::main(g.rank(r, c as u64)))
                    .extend(&part.script);
            }
        }
    }

    /// Row swaps of panel `k` on `n` columns of process `(r, c)`.
    fn swap_rows(&self, s: &mut Script, k: u64, r: u64, c: u64, n: u64, t: Tag) {
        let g = self.grid;
        if g.p <= 1 || n == 0 {
            return;
        }
        let jb = g.panel(k).1;
        let curr = k % g.p;
        let counts = &self.pivot_rows[k as usize];
        let spread = match self.swap {
            SwapAlgorithm::BinaryExchange => false,
            SwapAlgorithm::SpreadRoll => true,
            SwapAlgorithm::Mix => n > self.swap_threshold,
        };
        if spread {
            swap::spread_roll(
                s,
                r as usize,
                curr as usize,
                n,
                counts,
                self.equil,
                t,
                &|x| g.rank(x as u64, c),
            );
        } else {
            let by_dist: Vec<u64> = (0..g.p)
                .map(|d| counts[((curr + d) % g.p) as usize])
                .collect();
            swap::binary_exchange(s, g.p, (r + g.p - curr) % g.p, jb, n, &by_dist, t, &|d| {
                g.rank((curr + d) % g.p, c)
            });
        }
    }

    /// The update of `n` columns of process row `r` by panel `k` (`HPL_pdupdate`'s DTRSM and
    /// DGEMM): one call, or calls of at most `chunk` columns.
    fn update(&self, s: &mut Script, unit: Unit, k: u64, r: u64, n: u64, chunk: Option<u64>) {
        let g = self.grid;
        let (j, jb) = g.panel(k);
        let rows = g.rows_from(j + jb, r);
        let step = chunk.unwrap_or(n).max(1);
        let mut done = 0;
        while done < n {
            let cols = step.min(n - done);
            let (secs, flops) = self.plan.gpu.update(rows, cols, jb);
            s.kernel(unit, "update", secs, flops);
            done += cols;
        }
    }

    /// Iteration `k ≥ 1` of `HPL_pdgesvK2` (look-ahead depth 1): the owner of panel `k` applies
    /// panel `k − 1` to panel `k`'s columns and factorises it; the roots send it at their
    /// first call of `HPL_bcast`; everyone swaps and updates the rest of its columns with
    /// panel `k − 1` in chunks of `NB`, probing for panel `k` between chunks.
    fn iteration_sequential<S: OpSink>(&self, e: &mut Exec<S>, k: u64) {
        let g = self.grid;
        let owner = k % g.q;
        let (jk, jbk) = g.panel(k);
        let ranks = (g.p * g.q) as u32;
        let gate = |rank: RankId| Slot(rank.0);
        let end = |rank: RankId| Slot(ranks + rank.0);
        // The owner's look-ahead: swap and update panel k's columns, then factorise panel k.
        for r in 0..g.p {
            let t = Tid::main(g.rank(r, owner));
            let mut s = std::mem::take(e.script(t));
            self.swap_rows(&mut s, k - 1, r, owner, jbk, tag(k - 1, Phase::SwapAhead));
            self.update(&mut s, Unit::Gpu, k - 1, r, jbk, None);
            *e.script(t) = s;
        }
        self.fact(e, k);
        // The broadcast: roots on their process, at their first call of HPL_bcast; receivers on
        // their broadcast thread, posted by a probe once past their gate, or, where HPL does not
        // probe, on their process at their first call of HPL_bcast (before their swaps).
        let probing = self.bcast.probes();
        let gate_of = |r: u64| move |c: u64| gate(g.rank(r, c));
        let mut alone = vec![0.0; ranks as usize];
        for r in 0..g.p {
            let gate_r = gate_of(r);
            let first = if probing {
                FirstRecv::Probe(&gate_r)
            } else {
                FirstRecv::Posted
            };
            let parts = self.broadcast_parts(k, r, first);
            for (c, part) in parts.into_iter().enumerate() {
                let rank = g.rank(r, c as u64);
                if c as u64 == owner || !probing {
                    e.script(Tid::main(rank)).extend(&part.script);
                } else if !part.script.0.is_empty() {
                    let t = Tid {
                        rank,
                        lane: Lane::Bcast,
                    };
                    e.restart(t);
                    let s = e.script(t);
                    s.extend(&part.script);
                    s.mark(end(rank));
                    alone[rank.index()] = part.alone_s;
                }
            }
        }
        // The rest of the update, with its swaps.
        for c in 0..g.q {
            let n = g.cols_from(jk + jbk, c);
            for r in 0..g.p {
                let rank = g.rank(r, c);
                let t = Tid::main(rank);
                let mut s = std::mem::take(e.script(t));
                self.swap_rows(&mut s, k - 1, r, c, n, tag(k - 1, Phase::Swap));
                if c == owner || g.q == 1 || !probing {
                    // HPL_bcast succeeded at its first call: one call.
                    self.update(&mut s, Unit::Gpu, k - 1, r, n, None);
                } else {
                    s.mark(gate(rank));
                    self.update(&mut s, Unit::Gpu, k - 1, r, n, Some(g.nb));
                    // Blocked in the broadcast (receive, forwards) somewhere in between: at
                    // least its messages' time alone; and not done before the broadcast is.
                    s.delay(alone[rank.index()]);
                    s.join(end(rank));
                }
                *e.script(t) = s;
            }
        }
    }

    /// Iteration `k ≥ 1` with the GPU working asynchronously from the process (NVIDIA-style):
    /// the process swaps rows and launches the updates, then (owner) factorises panel `k` while
    /// the GPU updates the rest, and takes part in the broadcast; the GPU runs its kernels in
    /// order, each once launched.
    fn iteration_concurrent<S: OpSink>(&self, e: &mut Exec<S>, k: u64) {
        let g = self.grid;
        let owner = k % g.q;
        let (jk, jbk) = g.panel(k);
        for c in 0..g.q {
            let n = g.cols_from(jk + jbk, c);
            for r in 0..g.p {
                let rank = g.rank(r, c);
                let host = Tid::main(rank);
                let gpu = Tid {
                    rank,
                    lane: Lane::Gpu,
                };
                let mut h = std::mem::take(e.script(host));
                let mut d = std::mem::take(e.script(gpu));
                d.mark(slot(rank, 0));
                h.join(slot(rank, 0));
                if c == owner {
                    self.swap_rows(&mut h, k - 1, r, c, jbk, tag(k - 1, Phase::SwapAhead));
                    h.mark(slot(rank, 1));
                    d.join(slot(rank, 1));
                    self.update(&mut d, Unit::Gpu, k - 1, r, jbk, None);
                    d.mark(slot(rank, 2));
                }
                self.swap_rows(&mut h, k - 1, r, c, n, tag(k - 1, Phase::Swap));
                h.mark(slot(rank, 3));
                d.join(slot(rank, 3));
                self.update(&mut d, Unit::Gpu, k - 1, r, n, None);
                if c == owner {
                    h.join(slot(rank, 2));
                }
                *e.script(host) = h;
                *e.script(gpu) = d;
            }
        }
        self.fact(e, k);
        self.broadcast_polled(e, k);
    }

    /// After the last panel: its update of the right-hand side (the one column after it), on
    /// the process column that holds it.
    fn last_update<S: OpSink>(&self, e: &mut Exec<S>, lane: Lane) {
        let g = self.grid;
        let k = g.panels() - 1;
        let c = (g.n / g.nb) % g.q;
        let n = g.cols_from(g.n, c);
        for r in 0..g.p {
            let rank = g.rank(r, c);
            let host = Tid::main(rank);
            let mut h = std::mem::take(e.script(host));
            if lane == Lane::Gpu {
                let gpu = Tid { rank, lane };
                let mut d = std::mem::take(e.script(gpu));
                d.mark(slot(rank, 0));
                h.join(slot(rank, 0));
                self.swap_rows(&mut h, k, r, c, n, tag(k, Phase::Swap));
                h.mark(slot(rank, 1));
                d.join(slot(rank, 1));
                self.update(&mut d, Unit::Gpu, k, r, n, None);
                *e.script(gpu) = d;
            } else {
                self.swap_rows(&mut h, k, r, c, n, tag(k, Phase::Swap));
                self.update(&mut h, Unit::Gpu, k, r, n, None);
            }
            *e.script(host) = h;
        }
    }
}
