//! The unpinned replicas of one memory node in least-recently-used order, each filed clean or
//! dirty (StarPU's `memalloc.c` keeps the same two orders).
//!
//! A replica is filed as the most recent (unpinned after a use) far more often than anything
//! else happens, and refiled between clean and dirty keeping its age whenever a copy appears or
//! goes elsewhere. So one list in age order holds both files: filing the newest, taking a
//! replica out and refiling it are O(1); each file's oldest comes from a min-heap of ages with
//! lazy deletion (an entry is live while the replica is still filed there with that age),
//! amortised O(log n). A third heap gives the oldest clean replica not kept for a task (one a
//! prefetch may evict). The heaps are built at the first question about the oldest replicas
//! (from the list, in one pass) and kept from then on: a node whose memory never fills is
//! never asked, and its replicas are filed in O(1) with no heap at all.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

const NONE: u32 = u32::MAX;

/// The heaps: the clean file, the dirty file, the clean replicas not kept.
const CLEAN: usize = 0;
const DIRTY: usize = 1;
const SPARE: usize = 2;

#[derive(Debug, Clone, Copy)]
struct Entry {
    prev: u32,
    next: u32,
    tick: u64,
    dirty: bool,
    filed: bool,
    /// Kept for a task that has not used it yet (filed or not).
    kept: bool,
}

impl Entry {
    fn in_heap(&self, heap: usize) -> bool {
        self.filed
            && match heap {
                CLEAN => !self.dirty,
                DIRTY => self.dirty,
                _ => !self.dirty && !self.kept,
            }
    }
}

/// The LRU order of one memory node's replicas, by replica slot.
#[derive(Debug, Clone)]
pub(crate) struct Lru {
    entries: Vec<Entry>,
    head: u32,
    tail: u32,
    /// Filed replicas, clean and dirty.
    counts: [u32; 2],
    /// Per heap (clean, dirty, spare), (tick, slot) of its replicas, some stale.
    oldest: [BinaryHeap<Reverse<(u64, u32)>>; 3],
    /// Per heap, the length above which it is rebuilt.
    limits: [usize; 3],
    /// Whether the heaps are kept: false until the oldest replicas are first asked for.
    heaps_kept: bool,
}

impl Lru {
    /// An empty order for replicas of slots `0..slots`.
    pub fn new(slots: usize) -> Self {
        let empty = Entry {
            prev: NONE,
            next: NONE,
            tick: 0,
            dirty: false,
            filed: false,
            kept: false,
        };
        Lru {
            entries: vec![empty; slots],
            head: NONE,
            tail: NONE,
            counts: [0; 2],
            oldest: [BinaryHeap::new(), BinaryHeap::new(), BinaryHeap::new()],
            limits: [64; 3],
            heaps_kept: false,
        }
    }

    /// Where `slot` is filed: (dirty, tick), or `None` while it is not.
    pub fn filed(&self, slot: u32) -> Option<(bool, u64)> {
        let e = &self.entries[slot as usize];
        e.filed.then_some((e.dirty, e.tick))
    }

    /// File `slot` as the most recently used, `tick` being above every filed replica's.
    pub fn push_newest(&mut self, slot: u32, tick: u64, dirty: bool) {
        debug_assert!(!self.entries[slot as usize].filed);
        debug_assert!(self.tail == NONE || self.entries[self.tail as usize].tick < tick);
        let kept = self.entries[slot as usize].kept;
        self.entries[slot as usize] = Entry {
            prev: self.tail,
            next: NONE,
            tick,
            dirty,
            filed: true,
            kept,
        };
        match self.tail {
            NONE => self.head = slot,
            t => self.entries[t as usize].next = slot,
        }
        self.tail = slot;
        self.enter_file(slot);
    }

    /// Take `slot` out of the order; returns where it was filed.
    pub fn remove(&mut self, slot: u32) -> Option<(bool, u64)> {
        let e = self.entries[slot as usize];
        if !e.filed {
            return None;
        }
        match e.prev {
            NONE => self.head = e.next,
            p => self.entries[p as usize].next = e.next,
        }
        match e.next {
            NONE => self.tail = e.prev,
            n => self.entries[n as usize].prev = e.prev,
        }
        let entry = &mut self.entries[slot as usize];
        entry.filed = false;
        entry.prev = NONE;
        entry.next = NONE;
        self.counts[usize::from(e.dirty)] -= 1;
        Some((e.dirty, e.tick))
    }

    /// File a filed `slot` clean or dirty, keeping its age.
    pub fn refile(&mut self, slot: u32, dirty: bool) {
        let e = &mut self.entries[slot as usize];
        debug_assert!(e.filed);
        if e.dirty == dirty {
            return;
        }
        self.counts[usize::from(e.dirty)] -= 1;
        e.dirty = dirty;
        self.enter_file(slot);
    }

    /// Mark `slot` kept for a task that has not used it yet, or no longer.
    pub fn set_kept(&mut self, slot: u32, kept: bool) {
        let e = &mut self.entries[slot as usize];
        if e.kept != kept {
            e.kept = kept;
            if e.in_heap(SPARE) {
                self.push_heap(SPARE, slot);
            }
        }
    }

    fn enter_file(&mut self, slot: u32) {
        let e = self.entries[slot as usize];
        self.counts[usize::from(e.dirty)] += 1;
        self.push_heap(usize::from(e.dirty), slot);
        if e.in_heap(SPARE) {
            self.push_heap(SPARE, slot);
        }
    }

    fn push_heap(&mut self, heap: usize, slot: u32) {
        if !self.heaps_kept {
            return;
        }
        let tick = self.entries[slot as usize].tick;
        let h = &mut self.oldest[heap];
        h.push(Reverse((tick, slot)));
        // Stale entries are dropped at the top as they surface; when the heap has doubled
        // since its last rebuild, it is rebuilt from its live entries, once each (a replica
        // moved out and back with the same age is pushed twice, both live again).
        if h.len() > self.limits[heap] {
            let entries = &self.entries;
            let mut items = std::mem::take(h).into_vec();
            items.retain(|&Reverse((tick, s))| live(entries, heap, tick, s));
            items.sort_unstable();
            items.dedup();
            self.limits[heap] = 2 * items.len() + 64;
            *h = BinaryHeap::from(items);
        }
    }

    fn oldest_in(&mut self, heap: usize) -> Option<u32> {
        if !self.heaps_kept {
            self.build_heaps();
        }
        while let Some(&Reverse((tick, slot))) = self.oldest[heap].peek() {
            if live(&self.entries, heap, tick, slot) {
                return Some(slot);
            }
            self.oldest[heap].pop();
        }
        None
    }

    /// Build the heaps from the list, each filed replica once in each heap it belongs to,
    /// and keep them from now on.
    fn build_heaps(&mut self) {
        let mut items: [Vec<Reverse<(u64, u32)>>; 3] = Default::default();
        for slot in self.oldest_first() {
            let e = &self.entries[slot as usize];
            for (heap, list) in items.iter_mut().enumerate() {
                if e.in_heap(heap) {
                    list.push(Reverse((e.tick, slot)));
                }
            }
        }
        for (heap, list) in items.into_iter().enumerate() {
            self.limits[heap] = 2 * list.len() + 64;
            self.oldest[heap] = BinaryHeap::from(list);
        }
        self.heaps_kept = true;
    }

    /// The least recently used replica of the dirty or the clean file.
    pub fn oldest(&mut self, dirty: bool) -> Option<u32> {
        self.oldest_in(usize::from(dirty))
    }

    /// The least recently used clean replica not kept for a task.
    pub fn oldest_spare(&mut self) -> Option<u32> {
        self.oldest_in(SPARE)
    }

    fn oldest_first(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((self.head != NONE).then_some(self.head), |&s| {
            let next = self.entries[s as usize].next;
            (next != NONE).then_some(next)
        })
    }

    /// Dirty replicas filed.
    pub fn dirty_len(&self) -> u32 {
        self.counts[DIRTY]
    }

    /// The dirty replicas, least recently used first (walks the clean ones too).
    pub fn dirty_oldest_first(&self) -> impl Iterator<Item = u32> + '_ {
        self.oldest_first()
            .filter(|&s| self.entries[s as usize].dirty)
    }
}

fn live(entries: &[Entry], heap: usize, tick: u64, slot: u32) -> bool {
    let e = &entries[slot as usize];
    e.in_heap(heap) && e.tick == tick
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The two ordered sets the list stands for.
    #[derive(Default)]
    struct Reference {
        files: [BTreeSet<(u64, u32)>; 2],
    }

    impl Reference {
        fn find(&self, slot: u32) -> Option<(bool, u64)> {
            (0..2).find_map(|f| {
                self.files[f]
                    .iter()
                    .find(|&&(_, s)| s == slot)
                    .map(|&(t, _)| (f == 1, t))
            })
        }
    }

    #[test]
    fn agrees_with_two_ordered_sets_over_random_operations() {
        agrees_with_the_reference(0);
    }

    /// The heaps built from the list at the first question, after a long history of filing,
    /// refiling and keeping (with slots moved out and back), answer as the reference does.
    #[test]
    fn heaps_built_late_agree_with_two_ordered_sets() {
        agrees_with_the_reference(2000);
    }

    /// Random operations on 40 slots, the oldest replicas asked for only after `quiet` of them.
    fn agrees_with_the_reference(quiet: usize) {
        use rand::{RngExt, SeedableRng, rngs::StdRng};
        let slots = 40u32;
        for seed in 0..20 {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut lru = Lru::new(slots as usize);
            let mut reference = Reference::default();
            let mut tick = 0u64;
            let mut kept = vec![false; slots as usize];
            for step in 0..3000 {
                let slot = rng.random_range(0..slots);
                if rng.random_bool(0.1) {
                    let k = rng.random_bool(0.5);
                    kept[slot as usize] = k;
                    lru.set_kept(slot, k);
                }
                match rng.random_range(0..5) {
                    0 | 1 => {
                        if reference.find(slot).is_none() {
                            tick += 1;
                            let dirty = rng.random_bool(0.5);
                            lru.push_newest(slot, tick, dirty);
                            reference.files[usize::from(dirty)].insert((tick, slot));
                        }
                    }
                    2 => {
                        let expected = reference.find(slot);
                        if let Some((d, t)) = expected {
                            reference.files[usize::from(d)].remove(&(t, slot));
                        }
                        assert_eq!(lru.remove(slot), expected);
                    }
                    3 => {
                        if let Some((d, t)) = reference.find(slot) {
                            let dirty = rng.random_bool(0.5);
                            reference.files[usize::from(d)].remove(&(t, slot));
                            reference.files[usize::from(dirty)].insert((t, slot));
                            lru.refile(slot, dirty);
                        }
                    }
                    _ if step < quiet => {}
                    _ => {
                        for (f, file) in reference.files.iter().enumerate() {
                            let expected = file.first().map(|&(_, s)| s);
                            assert_eq!(lru.oldest(f == 1), expected);
                        }
                        let spare = reference.files[0]
                            .iter()
                            .map(|&(_, s)| s)
                            .find(|&s| !kept[s as usize]);
                        assert_eq!(lru.oldest_spare(), spare);
                    }
                }
                assert_eq!(lru.dirty_len() as usize, reference.files[1].len());
                assert_eq!(lru.filed(slot), reference.find(slot));
            }
            let walked: Vec<u32> = lru.dirty_oldest_first().collect();
            let expected: Vec<u32> = reference.files[1].iter().map(|&(_, s)| s).collect();
            assert_eq!(walked, expected);
        }
    }

    #[test]
    fn a_refiled_replica_keeps_its_age() {
        let mut lru = Lru::new(3);
        lru.push_newest(0, 1, true);
        lru.push_newest(1, 2, false);
        lru.push_newest(2, 3, false);
        assert_eq!(lru.oldest(false), Some(1));
        // Slot 0, the oldest of all, becomes clean: it is now the clean file's oldest.
        lru.refile(0, false);
        assert_eq!(lru.oldest(false), Some(0));
        assert_eq!(lru.oldest(true), None);
        assert_eq!(lru.remove(0), Some((false, 1)));
        assert_eq!(lru.oldest(false), Some(1));
    }
}
