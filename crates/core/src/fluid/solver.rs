//! Progressive filling over the part of the network a change can reach.
//!
//! Three steps per re-solve:
//!
//! 1. [`Net::floor`]: the level x₀ below which a full progressive filling would fix exactly what
//!    it fixed last time. A variable that lost members (or left) was fixed at its level, and its
//!    links saturate no earlier without it. For a variable that gained members (or appeared),
//!    each of its links saturates no earlier than the root x of
//!    C = Σ_{known v} coefᵥ·min(levelᵥ, x) + x·Σ_{changed v} coefᵥ
//!    (every unchanged variable held at its level, changed ones still rising). For any threshold
//!    θ, C ≤ F_θ + x·U_θ at that root (F_θ: the load of the known variables below θ; U_θ: the
//!    coefficients of the others), so (C − F_θ)/U_θ is a lower bound; a few rounds of
//!    θ ← (C − F_θ)/U_θ from the link's current level tighten it.
//! 2. [`Net::collect`]: the variables at level ≥ x₀ connected to the changed links through such
//!    variables, and the links they cross. Each link of that region starts with its capacity
//!    less the load of its variables below x₀, which keep their rates; its variables in the
//!    region are listed once, so the filling never looks at the others again.
//! 3. [`Net::fill`]: progressive filling over the region. The next link to saturate comes from a
//!    min-heap of link levels that is allowed to go stale: fixing a variable at level L on a
//!    link whose level is ≥ L can only raise that link's level ((R − wL)/(U − w) ≥ R/U), and a
//!    fat pipe's level C / max(w/p) rises as variables leave the max, so a popped key is a lower
//!    bound; if the link's actual level is higher it goes back in with it. Each round fixes the
//!    variables of every link at the lowest level (they attach to the link that fixed them), or
//!    the variables whose bound is lower, and removes their share from their links.

use super::{
    ATTACH_BOUND, BOUNDED, CHANGED, FIXED, GREW, Link, LinkElem, Sharing, Var, VarData, VarElem,
};

/// Reused buffers.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Links of the region.
    pub links: Vec<u32>,
    /// Variables of the region.
    pub vars: Vec<u32>,
    /// Variables whose attachment changes, with the bytes per member they had served.
    pub movers: Vec<(u32, f64)>,
    /// Region variables of each region link (`Link::in_play`), with their weight on it.
    in_play: Vec<(u32, f64)>,
    stack: Vec<u32>,
    bounded: Vec<u32>,
    saturated: Vec<u32>,
    heap: LevelHeap,
}

/// The filling's heap of link levels: lowest level first, then lowest link index.
#[derive(Debug, Default)]
struct LevelHeap {
    items: Vec<(f64, u32)>,
}

impl LevelHeap {
    fn before(a: (f64, u32), b: (f64, u32)) -> bool {
        a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
    }

    fn clear(&mut self) {
        self.items.clear();
    }

    fn peek(&self) -> Option<(f64, u32)> {
        self.items.first().copied()
    }

    fn push(&mut self, level: f64, link: u32) {
        let item = (level, link);
        let mut i = self.items.len();
        self.items.push(item);
        while i > 0 {
            let parent = (i - 1) / 2;
            if !Self::before(item, self.items[parent]) {
                break;
            }
            self.items[i] = self.items[parent];
            i = parent;
        }
        self.items[i] = item;
    }

    fn pop(&mut self) {
        let Some(last) = self.items.pop() else {
            return;
        };
        let n = self.items.len();
        if n == 0 {
            return;
        }
        let mut i = 0;
        loop {
            let mut child = 2 * i + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && Self::before(self.items[child + 1], self.items[child]) {
                child += 1;
            }
            if !Self::before(self.items[child], last) {
                break;
            }
            self.items[i] = self.items[child];
            i = child;
        }
        self.items[i] = last;
    }
}

/// The network as the solver sees it.
pub(super) struct Net<'a> {
    pub links: &'a mut [Link],
    pub vars: &'a mut [Var],
    pub elems: &'a [VarElem],
    /// The current re-solve's stamp.
    pub stamp: u32,
}

fn elems_of<'e>(elems: &'e [VarElem], var: &Var) -> &'e [VarElem] {
    &elems[var.elem_start as usize..][..usize::from(var.elem_len)]
}

impl Net<'_> {
    /// Step 1: the level below which nothing changes.
    pub fn floor(&mut self, changed: &[u32], removed_floor: f64, bounds: &[VarData]) -> f64 {
        let mut x0 = removed_floor;
        for &v in changed {
            let var = &self.vars[v as usize];
            if var.active == 0 || !var.has(GREW) {
                continue;
            }
            x0 = x0.min(bounds[v as usize].bound * var.penalty);
            for e in elems_of(self.elems, var) {
                let link = &mut self.links[e.link as usize];
                if link.floor_stamp == self.stamp {
                    continue;
                }
                link.floor_stamp = self.stamp;
                x0 = x0.min(link_floor(link, self.vars));
            }
        }
        x0
    }

    /// Step 2: the region to re-solve, with each link's remaining capacity and usage, from the
    /// variables at level ≥ `floor` (and the changed ones) reachable from `seeds`.
    pub fn collect(&mut self, seeds: &[u32], changed: &[u32], floor: f64, s: &mut Scratch) {
        let mut floor = floor;
        loop {
            match self.try_collect(seeds, changed, floor, s) {
                Ok(()) => return,
                // A link of the region carries a variable attached to it below the floor (by
                // rounding its level can sit an ulp under a variable's that crosses it): take
                // everything from that level up instead.
                Err(lower) => {
                    self.stamp_fresh(s);
                    floor = lower;
                }
            }
        }
    }

    /// Step 2 when the links the changes touch carry one variable at most (the one changed
    /// variable with members, if any): the region is that variable and those links whatever
    /// the floor, so step 1 is skipped and each link's share comes from its one variable
    /// without the general scan. Gives what [`Net::collect`] gives, in the same order (the
    /// order in which links are re-dated breaks ties between equal dates).
    pub fn collect_alone(&mut self, seeds: &[u32], changed: &[u32], s: &mut Scratch) {
        self.begin_region(seeds, changed, s);
        while let Some(l) = s.stack.pop() {
            s.links.push(l);
            let start = s.in_play.len() as u32;
            let link = &mut self.links[l as usize];
            let usage = match link.elems[..] {
                [] => 0.0,
                [e] => {
                    let var = &self.vars[e.var as usize];
                    s.in_play.push((e.var, e.weight));
                    match link.sharing {
                        Sharing::Shared => e.weight * var.mp,
                        Sharing::Fatpipe => e.weight / var.penalty,
                    }
                }
                _ => unreachable!("a link the changes touch carries one variable at most"),
            };
            let remaining = link.capacity_bytes_per_sec;
            link.set_share(remaining, usage, start..s.in_play.len() as u32);
        }
    }

    /// Empty the region and put in it the changed variables with members, then the seed links
    /// (on the stack of links to scan).
    fn begin_region(&mut self, seeds: &[u32], changed: &[u32], s: &mut Scratch) {
        let stamp = self.stamp;
        s.links.clear();
        s.vars.clear();
        s.stack.clear();
        s.bounded.clear();
        s.in_play.clear();
        for &v in changed {
            if self.vars[v as usize].active > 0 && self.vars[v as usize].stamp != stamp {
                self.enter(v, s);
            }
        }
        for &l in seeds {
            let link = &mut self.links[l as usize];
            if link.stamp != stamp {
                link.stamp = stamp;
                s.stack.push(l);
            }
        }
    }

    /// Forget a failed region: its variables and links get a stamp no longer current.
    fn stamp_fresh(&mut self, s: &Scratch) {
        for &v in &s.vars {
            self.vars[v as usize].stamp = self.stamp.wrapping_sub(1);
        }
        for &l in &s.links {
            self.links[l as usize].stamp = self.stamp.wrapping_sub(1);
        }
        for &l in &s.stack {
            self.links[l as usize].stamp = self.stamp.wrapping_sub(1);
        }
    }

    fn try_collect(
        &mut self,
        seeds: &[u32],
        changed: &[u32],
        floor: f64,
        s: &mut Scratch,
    ) -> Result<(), f64> {
        // Levels found by different re-solves may differ by rounding: a variable within 1e-9 of
        // the floor is taken too.
        let floor = floor * (1.0 - 1e-9);
        self.begin_region(seeds, changed, s);
        while let Some(l) = s.stack.pop() {
            s.links.push(l);
            // Taken out while scanned: entering a variable stamps other links.
            let elems = std::mem::take(&mut self.links[l as usize].elems);
            let scanned = self.scan(l, &elems, floor, s);
            self.links[l as usize].elems = elems;
            scanned?;
        }
        Ok(())
    }

    /// Split the variables of region link `l` into those in the region (listed, their usage
    /// summed) and those below the floor (their load taken off the capacity).
    fn scan(&mut self, l: u32, elems: &[LinkElem], floor: f64, s: &mut Scratch) -> Result<(), f64> {
        let stamp = self.stamp;
        let sharing = self.links[l as usize].sharing;
        let mut remaining = self.links[l as usize].capacity_bytes_per_sec;
        let mut usage = 0.0;
        let start = s.in_play.len() as u32;
        for e in elems {
            let var = &self.vars[e.var as usize];
            if var.stamp == stamp || var.level >= floor {
                if var.stamp != stamp {
                    self.enter(e.var, s);
                }
                let var = &self.vars[e.var as usize];
                match sharing {
                    Sharing::Shared => usage += e.weight * var.mp,
                    Sharing::Fatpipe => usage = f64::max(usage, e.weight / var.penalty),
                }
                s.in_play.push((e.var, e.weight));
            } else if var.attach == l {
                // It follows this link's level, which is about to be re-solved.
                return Err(var.level * (1.0 - 1e-9));
            } else if sharing == Sharing::Shared {
                remaining -= e.weight * f64::from(var.active) * var.rate;
            }
        }
        self.links[l as usize].set_share(remaining, usage, start..s.in_play.len() as u32);
        Ok(())
    }

    /// Put `v` in the region and its links on the stack.
    fn enter(&mut self, v: u32, s: &mut Scratch) {
        let stamp = self.stamp;
        let var = &mut self.vars[v as usize];
        var.stamp = stamp;
        var.set(FIXED, false);
        s.vars.push(v);
        if var.has(BOUNDED) {
            s.bounded.push(v);
        }
        for e in elems_of(self.elems, var) {
            let link = &mut self.links[e.link as usize];
            if link.stamp != stamp {
                link.stamp = stamp;
                s.stack.push(e.link);
            }
        }
    }

    /// Step 3: progressive filling of the region; sets every region variable's `new_level` and
    /// `new_attach`, and every region link's `new_level` (NaN if it does not saturate).
    pub fn fill(&mut self, bounds: &[VarData], s: &mut Scratch) {
        match s.vars[..] {
            [v] => self.fill_one(v, bounds, s),
            _ => self.fill_many(bounds, s),
        }
    }

    /// [`Net::fill`] with the heap of link levels.
    pub(super) fn fill_many(&mut self, bounds: &[VarData], s: &mut Scratch) {
        s.heap.clear();
        for &l in &s.links {
            let link = &self.links[l as usize];
            if link.unfixed > 0 {
                s.heap.push(level_of(link), l);
            }
        }
        let bound_level =
            |v: u32, vars: &[Var]| bounds[v as usize].bound * vars[v as usize].penalty;
        s.bounded.sort_by(|&a, &b| {
            bound_level(a, self.vars)
                .total_cmp(&bound_level(b, self.vars))
                .then(a.cmp(&b))
        });

        let mut next_bounded = 0;
        let mut unfixed = s.vars.len();
        while unfixed > 0 {
            let top = self.pop_lowest(&mut s.heap, &s.in_play, f64::INFINITY);
            while next_bounded < s.bounded.len()
                && self.vars[s.bounded[next_bounded] as usize].has(FIXED)
            {
                next_bounded += 1;
            }
            let lowest_bound = s
                .bounded
                .get(next_bounded)
                .map_or(f64::INFINITY, |&v| bound_level(v, self.vars));
            match top {
                Some((level, l)) if level <= lowest_bound => {
                    // Every link at that level saturates at once, as SimGrid does (it matters
                    // for a fat pipe: fixing its widest variable elsewhere first would raise
                    // its level). "At that level" allows for rounding: flows grouped in one
                    // variable sum their weights in another order than flows taken one by one.
                    s.saturated.clear();
                    s.saturated.push(l);
                    let tied = level * (1.0 + TIE);
                    while let Some((_, k)) = self.pop_lowest(&mut s.heap, &s.in_play, tied) {
                        s.saturated.push(k);
                    }
                    for &l in &s.saturated {
                        self.links[l as usize].new_level = level;
                    }
                    let level = level.max(0.0);
                    for &l in &s.saturated {
                        let range = self.links[l as usize].in_play.clone();
                        for &(v, _) in &s.in_play[range.start as usize..range.end as usize] {
                            if !self.vars[v as usize].has(FIXED) {
                                let rate = level / self.vars[v as usize].penalty;
                                self.fix(v, rate, level, l);
                                unfixed -= 1;
                            }
                        }
                    }
                }
                _ => {
                    if let Some((level, l)) = top {
                        s.heap.push(level, l);
                    }
                    assert!(
                        lowest_bound.is_finite(),
                        "max-min: {unfixed} variables left with no saturating link or bound"
                    );
                    // Variables reaching their own bound before any link saturates.
                    while let Some(&v) = s.bounded.get(next_bounded) {
                        if !self.vars[v as usize].has(FIXED) {
                            if bound_level(v, self.vars) != lowest_bound {
                                break;
                            }
                            self.fix(v, bounds[v as usize].bound, lowest_bound, ATTACH_BOUND);
                            unfixed -= 1;
                        }
                        next_bounded += 1;
                    }
                }
            }
        }
    }

    /// [`Net::fill`] of a region with one variable (common where transfers seldom overlap):
    /// what the heap would give, without it. The variable's links all saturate when
    /// it is fixed, so the lowest (level, link) fixes it, and every link within the tie of that
    /// level saturates with it, unless its bound is lower.
    pub(super) fn fill_one(&mut self, v: u32, bounds: &[VarData], s: &Scratch) {
        let mut lowest: Option<(f64, u32)> = None;
        for &l in &s.links {
            let link = &self.links[l as usize];
            if link.unfixed > 0 {
                let item = (level_of(link), l);
                if lowest.is_none_or(|b| LevelHeap::before(item, b)) {
                    lowest = Some(item);
                }
            }
        }
        let var = &self.vars[v as usize];
        let bound_level = if var.has(BOUNDED) {
            bounds[v as usize].bound * var.penalty
        } else {
            f64::INFINITY
        };
        match lowest {
            Some((level, l)) if level <= bound_level => {
                let tied = level * (1.0 + TIE);
                for &k in &s.links {
                    let link = &mut self.links[k as usize];
                    if link.unfixed > 0 && level_of(link) <= tied {
                        link.new_level = level;
                    }
                }
                let level = level.max(0.0);
                let rate = level / self.vars[v as usize].penalty;
                self.fix(v, rate, level, l);
            }
            _ => {
                assert!(
                    bound_level.is_finite(),
                    "max-min: 1 variable left with no saturating link or bound"
                );
                self.fix(v, bounds[v as usize].bound, bound_level, ATTACH_BOUND);
            }
        }
    }

    /// Pop the link with the lowest level if that level is at most `at_most`. Keys are lower
    /// bounds of the levels: a link found higher than its key goes back in with its level.
    fn pop_lowest(
        &mut self,
        heap: &mut LevelHeap,
        in_play: &[(u32, f64)],
        at_most: f64,
    ) -> Option<(f64, u32)> {
        while let Some((key, l)) = heap.peek() {
            if key > at_most {
                return None;
            }
            heap.pop();
            let link = &mut self.links[l as usize];
            if link.unfixed == 0 {
                continue;
            }
            if link.dirty {
                // Sum afresh over the variables still rising on it.
                link.dirty = false;
                let rising = in_play[link.in_play.start as usize..link.in_play.end as usize]
                    .iter()
                    .map(|&(v, w)| (w, &self.vars[v as usize]))
                    .filter(|(_, v)| !v.has(FIXED));
                link.usage = match link.sharing {
                    Sharing::Shared => rising.map(|(w, v)| w * v.mp).sum(),
                    Sharing::Fatpipe => rising.map(|(w, v)| w / v.penalty).fold(0.0, f64::max),
                };
                link.usage_ref = link.usage;
            }
            let level = level_of(link);
            if level > key {
                heap.push(level, l);
                continue;
            }
            return Some((level, l));
        }
        None
    }

    /// Fix `v` at `rate` (its level `level`), following `attach`; take its share off its links.
    fn fix(&mut self, v: u32, rate: f64, level: f64, attach: u32) {
        let var = &mut self.vars[v as usize];
        var.set(FIXED, true);
        var.new_level = level;
        var.new_attach = attach;
        let members = f64::from(var.active);
        let mp = var.mp;
        for e in elems_of(self.elems, var) {
            let link = &mut self.links[e.link as usize];
            link.unfixed -= 1;
            match link.sharing {
                Sharing::Shared => {
                    link.remaining = (link.remaining - e.weight * members * rate).max(0.0);
                    link.usage -= e.weight * mp;
                    // Subtracting large weights from their sum loses the small ones left
                    // (SimGrid mode mixes 1/latency weights of 1e7 with weights of 1): sum
                    // afresh then.
                    if link.usage < 1e-6 * link.usage_ref {
                        link.dirty = true;
                    }
                }
                // A fat pipe's usage is a maximum: recompute it over the variables still rising.
                Sharing::Fatpipe => link.dirty = true,
            }
        }
    }
}

impl Link {
    /// Start a re-solve's filling of this region link: `remaining` capacity for the region's
    /// variables, listed at `in_play` in the scratch, whose usage is `usage`.
    fn set_share(&mut self, remaining: f64, usage: f64, in_play: std::ops::Range<u32>) {
        self.remaining = remaining.max(0.0);
        self.usage = usage;
        self.usage_ref = usage;
        self.unfixed = in_play.end - in_play.start;
        self.in_play = in_play;
        self.dirty = false;
        self.new_level = f64::NAN;
    }
}

/// Relative difference under which two link levels are one.
const TIE: f64 = 1e-12;

fn level_of(link: &Link) -> f64 {
    link.remaining / link.usage
}

/// A lower bound of the level at which `link` saturates when its changed variables rise.
fn link_floor(link: &Link, vars: &[Var]) -> f64 {
    let c = link.capacity_bytes_per_sec;
    match link.sharing {
        // Its level is C / max(w/p) over the variables still rising: at least C / the max over
        // all of them.
        Sharing::Fatpipe => {
            c / link
                .elems
                .iter()
                .map(|e| e.weight / vars[e.var as usize].penalty)
                .fold(0.0, f64::max)
        }
        Sharing::Shared => {
            let mut theta = if link.attached.is_empty() {
                f64::INFINITY
            } else {
                link.level
            };
            let mut best = 0.0f64;
            for _ in 0..3 {
                let (mut fixed, mut rising) = (0.0, 0.0);
                for e in &link.elems {
                    let v = &vars[e.var as usize];
                    let coef = e.weight * v.mp;
                    // NaN (unsolved) compares false: rising.
                    if !v.has(CHANGED) && v.level < theta {
                        fixed += coef * v.level;
                    } else {
                        rising += coef;
                    }
                }
                let x = (c - fixed).max(0.0) / rising;
                best = best.max(x);
                if x == theta {
                    break;
                }
                theta = x;
            }
            best
        }
    }
}
