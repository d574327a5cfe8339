//! Hold benchmark of the event queues: which structure should hold the flows' dates?
//!
//! N items are kept pending. One *step* pops the earliest item and puts it back at a later
//! date; with re-timing, a step first moves the dates of R random pending keys (the fluid
//! model's pattern: a sharing update moves several finish dates), then pops one.
//!
//! - `Calendar`: `hetsim::engine::Calendar` (BinaryHeap of (time, seq)), pop + schedule;
//! - `RetimableQueue`: `hetsim::engine::RetimableQueue` (priority-queue crate), R × `set` on
//!   existing keys, pop, `set`;
//! - `LazyHeap`: a BinaryHeap with lazy deletion written here: a re-time pushes a new entry
//!   stamped with the key's new generation; entries whose generation is stale are skipped at
//!   pop. `LazyHeap+compact` also rebuilds the heap from its live entries whenever stale
//!   entries outnumber live ones, which bounds it to 2N entries.
//! - `IndexedHeap`: a binary heap of dense `u32` keys with a position array (keys are flow
//!   indices in the fluid network), moving a key's date in place: what `RetimableQueue` does,
//!   without hashing.
//!
//! Run: `cargo bench -p hetsim-benches --bench calendar`. Without `--bench` (as `cargo test --benches` runs it)
//! every case runs a few thousand steps only.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Instant;

use hetsim::engine::{Calendar, RetimableQueue};

mod common;
use common::Rng;

/// An entry of the lazily deleted heap: earliest (time, seq) first.
struct LazyEntry {
    at: f64,
    seq: u64,
    key: u32,
    generation: u32,
}

impl PartialEq for LazyEntry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for LazyEntry {}
impl PartialOrd for LazyEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for LazyEntry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.total_cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

/// One date per key, re-timed by pushing a new entry; stale entries are skipped when popped.
struct LazyHeap {
    heap: BinaryHeap<LazyEntry>,
    /// Current generation of each key; an entry is live iff its generation matches and the key
    /// is pending.
    generation: Vec<u32>,
    pending: Vec<bool>,
    live: usize,
    next_seq: u64,
    compact: bool,
    max_len: usize,
    compactions: u64,
}

impl LazyHeap {
    fn new(keys: usize, compact: bool) -> Self {
        LazyHeap {
            heap: BinaryHeap::with_capacity(2 * keys),
            generation: vec![0; keys],
            pending: vec![false; keys],
            live: 0,
            next_seq: 0,
            compact,
            max_len: 0,
            compactions: 0,
        }
    }

    fn set(&mut self, key: u32, at: f64) {
        let k = key as usize;
        self.generation[k] = self.generation[k].wrapping_add(1);
        if !self.pending[k] {
            self.pending[k] = true;
            self.live += 1;
        }
        self.heap.push(LazyEntry {
            at,
            seq: self.next_seq,
            key,
            generation: self.generation[k],
        });
        self.next_seq += 1;
        if self.compact && self.heap.len() > 2 * self.live.max(32) {
            let (generation, pending) = (&self.generation, &self.pending);
            self.heap
                .retain(|e| pending[e.key as usize] && generation[e.key as usize] == e.generation);
            self.compactions += 1;
        }
        self.max_len = self.max_len.max(self.heap.len());
    }

    fn pop(&mut self) -> Option<(u32, f64)> {
        while let Some(e) = self.heap.pop() {
            let k = e.key as usize;
            if self.pending[k] && self.generation[k] == e.generation {
                self.pending[k] = false;
                self.live -= 1;
                return Some((e.key, e.at));
            }
        }
        None
    }
}

/// A binary heap of dense `u32` keys with a position array: one date per key, moved in place in
/// O(log n) like `RetimableQueue`, but indexed by the key instead of hashed, and no stale entries.
struct IndexedHeap {
    heap: Vec<u32>,
    /// Position of each key in `heap`, `u32::MAX` if it has no date.
    pos: Vec<u32>,
    /// (date, setting order) of each key.
    prio: Vec<(f64, u64)>,
    next_seq: u64,
}

impl IndexedHeap {
    fn new(keys: usize) -> Self {
        IndexedHeap {
            heap: Vec::with_capacity(keys),
            pos: vec![u32::MAX; keys],
            prio: vec![(0.0, 0); keys],
            next_seq: 0,
        }
    }

    fn before(&self, a: u32, b: u32) -> bool {
        let (pa, pb) = (self.prio[a as usize], self.prio[b as usize]);
        pa.0.total_cmp(&pb.0).then(pa.1.cmp(&pb.1)) == Ordering::Less
    }

    fn place(&mut self, i: usize, key: u32) {
        self.heap[i] = key;
        self.pos[key as usize] = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        let key = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if !self.before(key, p) {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, key);
    }

    fn sift_down(&mut self, mut i: usize) {
        let key = self.heap[i];
        let n = self.heap.len();
        loop {
            let mut child = 2 * i + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && self.before(self.heap[child + 1], self.heap[child]) {
                child += 1;
            }
            let c = self.heap[child];
            if !self.before(c, key) {
                break;
            }
            self.place(i, c);
            i = child;
        }
        self.place(i, key);
    }

    fn set(&mut self, key: u32, at: f64) {
        let k = key as usize;
        let old = self.prio[k];
        self.prio[k] = (at, self.next_seq);
        self.next_seq += 1;
        match self.pos[k] {
            u32::MAX => {
                self.heap.push(key);
                self.sift_up(self.heap.len() - 1);
            }
            p if at < old.0 => self.sift_up(p as usize),
            p => self.sift_down(p as usize),
        }
    }

    fn pop(&mut self) -> Option<(u32, f64)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("non-empty");
        self.pos[top as usize] = u32::MAX;
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down(0);
        }
        Some((top, self.prio[top as usize].0))
    }
}

/// The queue operations a hold step needs.
trait Queue {
    fn set(&mut self, key: u32, at: f64);
    fn pop(&mut self) -> (u32, f64);
}

impl Queue for RetimableQueue<u32> {
    fn set(&mut self, key: u32, at: f64) {
        RetimableQueue::set(self, key, at);
    }
    fn pop(&mut self) -> (u32, f64) {
        RetimableQueue::pop(self).expect("N > 0 keys pending")
    }
}

impl Queue for IndexedHeap {
    fn set(&mut self, key: u32, at: f64) {
        IndexedHeap::set(self, key, at);
    }
    fn pop(&mut self) -> (u32, f64) {
        IndexedHeap::pop(self).expect("N > 0 keys pending")
    }
}

impl Queue for LazyHeap {
    fn set(&mut self, key: u32, at: f64) {
        LazyHeap::set(self, key, at);
    }
    fn pop(&mut self) -> (u32, f64) {
        LazyHeap::pop(self).expect("N > 0 keys pending")
    }
}

/// Mean of the exponential delays: N, so that the clock advances about 1 per pop.
fn mean_delay(n: usize) -> f64 {
    n as f64
}

/// Hold with re-timing: `steps` steps on a queue filled with `n` keys; returns seconds.
fn hold_retime(q: &mut dyn Queue, n: usize, retimes: usize, warm: u64, steps: u64) -> f64 {
    let mut rng = Rng(0xca1e_0000 + n as u64);
    let mean = mean_delay(n);
    for k in 0..n {
        q.set(k as u32, rng.exp(mean));
    }
    let mut now = 0.0;
    let mut step = |q: &mut dyn Queue, rng: &mut Rng| {
        for _ in 0..retimes {
            let k = rng.below(n) as u32;
            q.set(k, now + rng.exp(mean));
        }
        let (k, t) = q.pop();
        now = t;
        q.set(k, now + rng.exp(mean));
    };
    for _ in 0..warm {
        step(q, &mut rng);
    }
    let begin = Instant::now();
    for _ in 0..steps {
        step(q, &mut rng);
    }
    begin.elapsed().as_secs_f64()
}

/// Plain hold on the `Calendar`: pop, schedule later. Returns seconds.
fn hold_calendar(n: usize, warm: u64, steps: u64) -> f64 {
    let mut rng = Rng(0xca1e_0000 + n as u64);
    let mean = mean_delay(n);
    let mut c = Calendar::new();
    for k in 0..n {
        c.schedule(rng.exp(mean), k as u32);
    }
    let step = |c: &mut Calendar<u32>, rng: &mut Rng| {
        let (t, k) = c.pop().expect("N > 0 events pending");
        c.schedule(t + rng.exp(mean), k);
    };
    for _ in 0..warm {
        step(&mut c, &mut rng);
    }
    let begin = Instant::now();
    for _ in 0..steps {
        step(&mut c, &mut rng);
    }
    std::hint::black_box(c.len());
    begin.elapsed().as_secs_f64()
}

struct Stat {
    median: f64,
    lo: f64,
    hi: f64,
}

/// Steps per second over `reps` repetitions.
fn stats(mut rates: Vec<f64>) -> Stat {
    rates.sort_by(f64::total_cmp);
    Stat {
        median: rates[rates.len() / 2],
        lo: rates[0],
        hi: rates[rates.len() - 1],
    }
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (steps, reps) = if bench { (1_000_000u64, 3) } else { (2_000, 1) };
    const R: usize = 4;

    println!(
        "| queue | N | R | steps/s (median of {reps}) | range | ns/step | ns/queue op | \
         heap len / N (max) | compactions |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in [64usize, 4096, 262_144] {
        // Warm-up: enough steps for every key to be popped and re-timed several times, so the
        // lazy heap's stale entries reach their steady state.
        let warm = if bench {
            (4 * n as u64).max(100_000)
        } else {
            100
        };
        let row = |name: &str, r: usize, s: Stat, ops: usize, growth: Option<(f64, u64)>| {
            let (g, c) = growth.map_or(("-".to_string(), "-".to_string()), |(g, c)| {
                (format!("{g:.2}"), c.to_string())
            });
            println!(
                "| {name} | {n} | {r} | {:.3e} | {:.2e}–{:.2e} | {:.0} | {:.0} | {g} | {c} |",
                s.median,
                s.lo,
                s.hi,
                1e9 / s.median,
                1e9 / s.median / ops as f64,
            );
        };

        let cal = stats(
            (0..reps)
                .map(|_| steps as f64 / hold_calendar(n, warm, steps))
                .collect(),
        );
        row("Calendar (BinaryHeap)", 0, cal, 2, None);

        for r in [0, R] {
            let rq = stats(
                (0..reps)
                    .map(|_| {
                        let mut q = RetimableQueue::<u32>::new();
                        steps as f64 / hold_retime(&mut q, n, r, warm, steps)
                    })
                    .collect(),
            );
            row("RetimableQueue", r, rq, r + 2, None);
            let ih = stats(
                (0..reps)
                    .map(|_| {
                        let mut q = IndexedHeap::new(n);
                        steps as f64 / hold_retime(&mut q, n, r, warm, steps)
                    })
                    .collect(),
            );
            row("IndexedHeap", r, ih, r + 2, None);
            for compact in [false, true] {
                let mut growth = (0.0f64, 0u64);
                let lz = stats(
                    (0..reps)
                        .map(|_| {
                            let mut q = LazyHeap::new(n, compact);
                            let secs = hold_retime(&mut q, n, r, warm, steps);
                            growth = (q.max_len as f64 / n as f64, q.compactions);
                            steps as f64 / secs
                        })
                        .collect(),
                );
                let name = if compact {
                    "LazyHeap+compact"
                } else {
                    "LazyHeap"
                };
                row(name, r, lz, r + 2, Some(growth));
            }
        }
    }
}
