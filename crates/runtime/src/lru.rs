//! The unpinned replicas of one memory node in least-recently-used order, each filed clean or
//! dirty (StarPU's `memalloc.c` keeps the same two orders).
//!
//! A replica is filed as the most recent (unpinned after a use) far more often than anything
//! else happens, and refiled between clean and dirty keeping its age whenever a copy appears or
//! goes elsewhere. So one list in age order holds both files: filing the newest, taking a
//! replica out and refiling it are O(1); each file's oldest comes from a min-heap of ages with
//! lazy deletion (an entry is live while the replica is still filed there with that age),
//! amortised O(log n).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Entry {
    prev: u32,
    next: u32,
    tick: u64,
    dirty: bool,
    filed: bool,
}

/// The LRU order of one memory node's replicas, by replica slot.
#[derive(Debug, Clone)]
pub(crate) struct Lru {
    entries: Vec<Entry>,
    head: u32,
    tail: u32,
    /// Filed replicas, clean and dirty.
    counts: [u32; 2],
    /// Per file (clean, dirty), (tick, slot) of its replicas, some stale.
    oldest: [BinaryHeap<Reverse<(u64, u32)>>; 2],
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
        };
        Lru {
            entries: vec![empty; slots],
            head: NONE,
            tail: NONE,
            counts: [0; 2],
            oldest: [BinaryHeap::new(), BinaryHeap::new()],
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
        self.entries[slot as usize] = Entry {
            prev: self.tail,
            next: NONE,
            tick,
            dirty,
            filed: true,
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

    fn enter_file(&mut self, slot: u32) {
        let e = self.entries[slot as usize];
        let file = usize::from(e.dirty);
        self.counts[file] += 1;
        let heap = &mut self.oldest[file];
        heap.push(Reverse((e.tick, slot)));
        // Stale entries are dropped at the top as they surface; rebuild when they are most.
        if heap.len() > 2 * self.counts[file] as usize + 64 {
            let entries = &self.entries;
            heap.retain(|&Reverse((tick, s))| live(entries, file, tick, s));
        }
    }

    /// The least recently used replica of the dirty or the clean file.
    pub fn oldest(&mut self, dirty: bool) -> Option<u32> {
        let file = usize::from(dirty);
        while let Some(&Reverse((tick, slot))) = self.oldest[file].peek() {
            if live(&self.entries, file, tick, slot) {
                return Some(slot);
            }
            self.oldest[file].pop();
        }
        None
    }

    /// Dirty replicas filed.
    pub fn dirty_len(&self) -> u32 {
        self.counts[1]
    }

    /// The dirty replicas, least recently used first (walks the clean ones too).
    pub fn dirty_oldest_first(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((self.head != NONE).then_some(self.head), |&s| {
            let next = self.entries[s as usize].next;
            (next != NONE).then_some(next)
        })
        .filter(|&s| self.entries[s as usize].dirty)
    }
}

fn live(entries: &[Entry], file: usize, tick: u64, slot: u32) -> bool {
    let e = &entries[slot as usize];
    e.filed && usize::from(e.dirty) == file && e.tick == tick
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
        use rand::{RngExt, SeedableRng, rngs::StdRng};
        let slots = 40u32;
        for seed in 0..20 {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut lru = Lru::new(slots as usize);
            let mut reference = Reference::default();
            let mut tick = 0u64;
            for _ in 0..3000 {
                let slot = rng.random_range(0..slots);
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
                    _ => {
                        for (f, file) in reference.files.iter().enumerate() {
                            let expected = file.first().map(|&(_, s)| s);
                            assert_eq!(lru.oldest(f == 1), expected);
                        }
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
