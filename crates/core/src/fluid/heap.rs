//! A binary min-heap over dense `u32` ids whose positions live in a slice the caller owns.
//!
//! The fluid network keeps several such heaps: the dates of its timers (flows in latency, links,
//! bound-limited variables), and per link the variables it carries, keyed by the link's clock
//! value at which their next member finishes. Keeping positions outside lets a variable hold its
//! place in whichever link heap it is attached to without one position array per link. Moving an
//! id's key is O(log n) and hashes nothing (a dense indexed heap measured 1.1-1.4x faster than
//! the `priority-queue` crate on whole network runs, `docs/performance.md`).

/// Position of an id that is not in the heap.
pub(super) const ABSENT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Item {
    key: f64,
    tie: u64,
    id: u32,
}

impl Item {
    fn before(&self, other: &Item) -> bool {
        self.key < other.key || (self.key == other.key && self.tie < other.tie)
    }
}

/// Min-heap of `(key, tie, id)`: smallest key first, equal keys in increasing `tie`.
#[derive(Debug, Clone, Default)]
pub(super) struct IndexedHeap {
    items: Vec<Item>,
}

impl IndexedHeap {
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The smallest id, its key and its tie.
    pub(super) fn peek(&self) -> Option<(u32, f64, u64)> {
        self.items.first().map(|i| (i.id, i.key, i.tie))
    }

    /// The key of `id`, if it is in.
    pub(super) fn key_of(&self, pos: &[u32], id: u32) -> Option<f64> {
        match pos[id as usize] {
            ABSENT => None,
            p => Some(self.items[p as usize].key),
        }
    }

    /// Add `delta` to every key, calling `each` with every id. Rounding is monotonic, so the
    /// order of the keys, hence the heap, stays valid.
    pub(super) fn shift(&mut self, delta: f64, mut each: impl FnMut(u32)) {
        for item in &mut self.items {
            item.key += delta;
            each(item.id);
        }
    }

    /// Insert `id` or move it to `key`. `pos[id]` must be `ABSENT` or its current position.
    pub(super) fn set(&mut self, pos: &mut [u32], id: u32, key: f64, tie: u64) {
        debug_assert!(!key.is_nan(), "NaN key in an indexed heap");
        let item = Item { key, tie, id };
        match pos[id as usize] {
            ABSENT => {
                self.items.push(item);
                self.sift_up(pos, self.items.len() - 1);
            }
            p => {
                let p = p as usize;
                let up = item.before(&self.items[p]);
                self.items[p] = item;
                if up {
                    self.sift_up(pos, p);
                } else {
                    self.sift_down(pos, p);
                }
            }
        }
    }

    /// Take `id` out if it is in; returns whether it was.
    pub(super) fn remove(&mut self, pos: &mut [u32], id: u32) -> bool {
        let p = pos[id as usize];
        if p == ABSENT {
            return false;
        }
        pos[id as usize] = ABSENT;
        let last = self
            .items
            .pop()
            .expect("a present id means a non-empty heap");
        let p = p as usize;
        if p < self.items.len() {
            let up = last.before(&self.items[p]);
            self.items[p] = last;
            if up {
                self.sift_up(pos, p);
            } else {
                self.sift_down(pos, p);
            }
        }
        true
    }

    /// Remove and return the smallest id and its key.
    #[cfg(test)]
    pub(super) fn pop(&mut self, pos: &mut [u32]) -> Option<(u32, f64)> {
        let (id, key, _) = self.peek()?;
        self.remove(pos, id);
        Some((id, key))
    }

    fn place(&mut self, pos: &mut [u32], i: usize, item: Item) {
        pos[item.id as usize] = i as u32;
        self.items[i] = item;
    }

    fn sift_up(&mut self, pos: &mut [u32], mut i: usize) {
        let item = self.items[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.items[parent];
            if !item.before(&p) {
                break;
            }
            self.place(pos, i, p);
            i = parent;
        }
        self.place(pos, i, item);
    }

    fn sift_down(&mut self, pos: &mut [u32], mut i: usize) {
        let item = self.items[i];
        let n = self.items.len();
        loop {
            let mut child = 2 * i + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && self.items[child + 1].before(&self.items[child]) {
                child += 1;
            }
            let c = self.items[child];
            if !c.before(&item) {
                break;
            }
            self.place(pos, i, c);
            i = child;
        }
        self.place(pos, i, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_move_and_ties_follow_the_tie_number() {
        let mut pos = vec![ABSENT; 6];
        let mut h = IndexedHeap::default();
        for (id, key) in [(0u32, 5.0), (1, 3.0), (2, 4.0), (3, 3.0), (4, 9.0)] {
            h.set(&mut pos, id, key, u64::from(id));
        }
        h.set(&mut pos, 4, 1.0, 10); // moved earlier
        h.set(&mut pos, 1, 6.0, 11); // moved later
        assert!(h.remove(&mut pos, 2));
        assert!(!h.remove(&mut pos, 2));
        assert!(!h.remove(&mut pos, 5));
        let order: Vec<_> = std::iter::from_fn(|| h.pop(&mut pos)).collect();
        assert_eq!(order, vec![(4, 1.0), (3, 3.0), (0, 5.0), (1, 6.0)]);
        assert!(pos.iter().all(|&p| p == ABSENT));
    }

    #[test]
    fn random_operations_agree_with_a_sorted_list() {
        // A reference that re-sorts a plain list after every operation.
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut pos = vec![ABSENT; 40];
        let mut h = IndexedHeap::default();
        let mut reference: Vec<(f64, u64, u32)> = Vec::new();
        for tie in 0..4000u64 {
            let id = next(40) as u32;
            match next(4) {
                0 => {
                    let removed = h.remove(&mut pos, id);
                    let at = reference.iter().position(|e| e.2 == id);
                    assert_eq!(removed, at.is_some());
                    if let Some(i) = at {
                        reference.remove(i);
                    }
                }
                1 => {
                    let got = h.pop(&mut pos);
                    reference.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    let want = (!reference.is_empty()).then(|| reference.remove(0));
                    assert_eq!(got, want.map(|e| (e.2, e.0)));
                }
                _ => {
                    let key = next(50) as f64;
                    h.set(&mut pos, id, key, tie);
                    reference.retain(|e| e.2 != id);
                    reference.push((key, tie, id));
                }
            }
            assert_eq!(h.len(), reference.len());
        }
    }
}
