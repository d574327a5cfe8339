//! The event kernel: simulated time, a calendar of typed events, and a re-timable queue.
//!
//! Time is `f64` seconds. Integer ticks were considered and rejected: the fluid model computes
//! finish dates as `now + remaining_bytes / rate`, which is not a whole number of any tick, and
//! the SimGrid oracle (itself in `f64` seconds) is matched to 1e-9 relative on dates that range
//! from microseconds to seconds, which a fixed tick would have to be sub-femtosecond to honour.
//! `f64` keeps 15-16 significant digits at every scale; NaN is refused at insertion.
//!
//! Two queues, chosen by measurement (`cargo bench -p hetsim-benches --bench calendar`; full tables in
//! `docs/performance.md`, 2-core EPYC VM, hold model with 4 random re-timings per pop):
//!
//! - [`Calendar`]: a plain binary heap of `(time, insertion sequence)` for events that are
//!   scheduled once and fired once (task ends, allocations, transfer queueing). Ties are broken
//!   by insertion order, so runs are deterministic; dates equal to the picosecond are ties
//!   (the same durations summed in different orders differ in their last bits, and which of
//!   two events at one date goes first must not depend on that). It is the fastest of the
//!   queues measured for that pattern.
//! - [`RetimableQueue`]: one pending date per key with O(log n) re-timing, on the
//!   `priority-queue` crate's `change_priority`, for keys of any hashable type. Against a binary
//!   heap with lazy deletion it does 2.8-2.9 vs 1.7-2.1 M steps/s at 64 keys and 1.6-2.1 vs
//!   1.0-1.3 M at 4096, and the lazy heap grows to 5-7× the live keys; compacting the lazy heap
//!   at 2N entries only brings it level (2.3 and 1.7-2.2 M). A hand-written heap indexed by a
//!   dense `u32` measured 1.0-1.4× faster again at those sizes (3.3-4.7× at 262 144 keys): the
//!   fluid network, whose keys are dense flow, link and variable indices, keeps its dates in
//!   such a heap of its own (`fluid::heap`).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::hash::{BuildHasherDefault, Hash};

use ordered_float::NotNan;
use priority_queue::PriorityQueue;

/// A point in simulated time, in seconds: never NaN, so totally ordered.
type TimeKey = NotNan<f64>;

fn checked_time(at_s: f64) -> TimeKey {
    // -0.0 is stored as 0.0, so that the dates handed back never print as "-0".
    NotNan::new(if at_s == 0.0 { 0.0 } else { at_s }).expect("event scheduled at NaN seconds")
}

/// Picoseconds per second: the calendar orders events by their date rounded to this grid.
const TICKS_PER_S: f64 = 1e12;

/// `at_s` in whole picoseconds (an integral `f64`, exact at any date): the grid on which the
/// [`Calendar`] ties dates. The same durations summed in different orders differ in their last
/// bits; code that asks whether two dates are one instant compares their ticks.
pub fn tick(at_s: f64) -> f64 {
    (at_s * TICKS_PER_S).round()
}

/// `s` rounded to the picosecond grid of [`tick`].
pub fn to_tick_s(s: f64) -> f64 {
    tick(s) / TICKS_PER_S
}

struct Entry<E> {
    at: TimeKey,
    /// (tick, insertion sequence) as one integer that orders as the pair: the tick (`at` in
    /// whole picoseconds, an integral `f64`) mapped to an unsigned integer in the order of the
    /// dates, then the sequence.
    key: u128,
    event: E,
}

/// `x` (not NaN) as an unsigned integer in the order of the values: positive numbers with the
/// sign bit set, negative ones with every bit flipped.
fn ordered_bits(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 0 {
        bits | (1 << 63)
    } else {
        !bits
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (tick, seq) first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// The sequence bits of the events scheduled with [`Calendar::schedule`]: they sort after the
/// ones scheduled with [`Calendar::schedule_first`] at the same date.
const LATE: u64 = 1 << 62;

/// The sequence bits of the events scheduled with [`Calendar::schedule_last`].
const LAST: u64 = 3 << 62;

/// The event calendar: typed events popped in order of time, ties (dates equal to the
/// picosecond) in order of insertion.
pub struct Calendar<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    last_popped_s: f64,
}

impl<E> Default for Calendar<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Calendar<E> {
    /// An empty calendar.
    pub fn new() -> Self {
        Calendar {
            heap: BinaryHeap::new(),
            next_seq: 0,
            last_popped_s: f64::NEG_INFINITY,
        }
    }

    /// Schedule `event` at `at_s` seconds.
    ///
    /// # Panics
    /// If `at_s` is NaN or earlier than an event already popped (the past cannot change):
    /// both are bugs of the caller, never consequences of user input.
    pub fn schedule(&mut self, at_s: f64, event: E) {
        self.insert(at_s, event, LATE);
    }

    /// [`Calendar::schedule`], before every event scheduled that way at the same date (after
    /// the ones scheduled earlier with this method): for a thread that, at a shared date,
    /// runs before the ones its earlier actions woke.
    pub fn schedule_first(&mut self, at_s: f64, event: E) {
        self.insert(at_s, event, 0);
    }

    /// [`Calendar::schedule`], after every event scheduled with either method at the same
    /// date (before the ones scheduled later with this method): for a thread that, at a shared
    /// date, runs after the ones already under way.
    pub fn schedule_last(&mut self, at_s: f64, event: E) {
        self.insert(at_s, event, LAST);
    }

    fn insert(&mut self, at_s: f64, event: E, class: u64) {
        let at = checked_time(at_s);
        assert!(
            at_s >= self.last_popped_s,
            "event scheduled at {at_s} s, before the current time {} s",
            self.last_popped_s
        );
        // -0.0 ticks as 0.0, as NaN is refused above.
        let tick = tick(at_s) + 0.0;
        let seq = self.next_seq | class;
        self.next_seq += 1;
        self.heap.push(Entry {
            at,
            key: (u128::from(ordered_bits(tick)) << 64) | u128::from(seq),
            event,
        });
    }

    /// Date of the next event, if any.
    pub fn peek_time(&self) -> Option<f64> {
        self.heap
            .peek()
            .map(|e| e.at.into_inner().max(self.last_popped_s))
    }

    /// Remove and return the next event with its date (never before the last one returned:
    /// of two tied dates, the later may go first).
    pub fn pop(&mut self) -> Option<(f64, E)> {
        let e = self.heap.pop()?;
        self.last_popped_s = e.at.into_inner().max(self.last_popped_s);
        Some((self.last_popped_s, e.event))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True if no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// A queue holding at most one date per key, where a key's date can be moved in O(log n).
///
/// Ties are broken by the order in which dates were last set (first set, first out), so the order
/// of same-time pops is deterministic.
pub struct RetimableQueue<K: Hash + Eq> {
    queue: PriorityQueue<K, Reverse<(TimeKey, u64)>, BuildHasherDefault<rustc_hash::FxHasher>>,
    next_seq: u64,
}

impl<K: Hash + Eq> std::fmt::Debug for RetimableQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RetimableQueue({} dates)", self.len())
    }
}

impl<K: Hash + Eq> Default for RetimableQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq> RetimableQueue<K> {
    /// An empty queue.
    pub fn new() -> Self {
        RetimableQueue {
            queue: PriorityQueue::with_default_hasher(),
            next_seq: 0,
        }
    }

    /// Set (or move) the date of `key` to `at_s` seconds.
    ///
    /// # Panics
    /// If `at_s` is NaN (a caller bug).
    pub fn set(&mut self, key: K, at_s: f64) {
        let prio = Reverse((checked_time(at_s), self.next_seq));
        self.next_seq += 1;
        self.queue.push(key, prio);
    }

    /// Forget the date of `key`; returns its date if it had one.
    pub fn remove(&mut self, key: &K) -> Option<f64> {
        self.queue
            .remove(key)
            .map(|(_, Reverse((t, _)))| t.into_inner())
    }

    /// The earliest key and its date.
    pub fn peek(&self) -> Option<(&K, f64)> {
        self.queue
            .peek()
            .map(|(k, Reverse((t, _)))| (k, t.into_inner()))
    }

    /// Remove and return the earliest key and its date.
    pub fn pop(&mut self) -> Option<(K, f64)> {
        self.queue
            .pop()
            .map(|(k, Reverse((t, _)))| (k, t.into_inner()))
    }

    /// Number of keys with a date.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// True if no key has a date.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The calendar's integer key orders dates as the dates do, -0 and 0 alike.
        #[test]
        fn ordered_bits_order_as_the_values(a in proptest::num::f64::ANY, b in proptest::num::f64::ANY) {
            proptest::prop_assume!(!a.is_nan() && !b.is_nan());
            let (ka, kb) = (ordered_bits(a + 0.0), ordered_bits(b + 0.0));
            proptest::prop_assert_eq!(ka.cmp(&kb), a.partial_cmp(&b).expect("not NaN"));
        }
    }

    #[test]
    fn calendar_orders_by_time_then_insertion() {
        let mut c = Calendar::new();
        c.schedule(2.0, "c");
        c.schedule(1.0, "a");
        c.schedule(1.0, "b");
        c.schedule(0.5, "z");
        let order: Vec<_> = std::iter::from_fn(|| c.pop()).collect();
        assert_eq!(order, vec![(0.5, "z"), (1.0, "a"), (1.0, "b"), (2.0, "c")]);
    }

    #[test]
    fn events_scheduled_first_go_before_the_others_of_their_date() {
        let mut c = Calendar::new();
        c.schedule(1.0, "a");
        c.schedule(0.5, "z");
        c.schedule_first(1.0, "first");
        c.schedule(1.0, "b");
        c.schedule_first(1.0, "second");
        c.schedule_first(2.0, "later");
        let order: Vec<_> = std::iter::from_fn(|| c.pop()).map(|p| p.1).collect();
        assert_eq!(order, ["z", "first", "second", "a", "b", "later"]);
    }

    #[test]
    fn events_scheduled_last_go_after_the_others_of_their_date() {
        let mut c = Calendar::new();
        c.schedule_last(1.0, "last");
        c.schedule(1.0, "a");
        c.schedule_last(1.0, "after last");
        c.schedule_first(1.0, "first");
        c.schedule(1.0, "b");
        c.schedule_last(0.5, "earlier");
        let order: Vec<_> = std::iter::from_fn(|| c.pop()).map(|p| p.1).collect();
        assert_eq!(order, ["earlier", "first", "a", "b", "last", "after last"]);
    }

    #[test]
    fn calendar_zero_and_negative_zero_tie_by_insertion() {
        let mut c = Calendar::new();
        c.schedule(0.0, 1);
        c.schedule(-0.0, 2);
        assert_eq!(c.pop(), Some((0.0, 1)));
        assert_eq!(c.pop().map(|p| p.1), Some(2));
    }

    /// The same three durations summed in two orders land 1 ulp apart; the event scheduled
    /// first goes first, and time never goes back.
    #[test]
    fn calendar_ties_dates_equal_to_the_picosecond() {
        let e: f64 = 0.001_188;
        let (early, late) = {
            let a = (e + 1e-6) + 2e-6;
            let b = ((e + 1e-6) + 1e-6) + 1e-6;
            assert_ne!(a, b, "the sums must differ for this test to mean anything");
            (a.min(b), a.max(b))
        };
        let mut c = Calendar::new();
        c.schedule(late, "first");
        c.schedule(early, "second");
        c.schedule(late + 2e-12, "third");
        assert_eq!(c.peek_time(), Some(late));
        assert_eq!(c.pop(), Some((late, "first")));
        assert_eq!(c.peek_time(), Some(late));
        assert_eq!(c.pop(), Some((late, "second")));
        assert_eq!(c.pop(), Some((late + 2e-12, "third")));
    }

    #[test]
    #[should_panic(expected = "before the current time")]
    fn calendar_refuses_the_past() {
        let mut c = Calendar::new();
        c.schedule(1.0, ());
        c.pop();
        c.schedule(0.5, ());
    }

    #[test]
    #[should_panic(expected = "NaN")]
    fn calendar_refuses_nan() {
        Calendar::new().schedule(f64::NAN, ());
    }

    #[test]
    fn retimable_queue_moves_dates() {
        let mut q = RetimableQueue::new();
        q.set(1u32, 5.0);
        q.set(2u32, 3.0);
        q.set(3u32, 4.0);
        assert_eq!(q.peek().map(|(k, t)| (*k, t)), Some((2, 3.0)));
        q.set(2, 6.0); // moved later
        q.set(3, 1.0); // moved earlier
        assert_eq!(q.len(), 3);
        assert_eq!(q.remove(&1), Some(5.0));
        assert_eq!(q.pop(), Some((3, 1.0)));
        assert_eq!(q.pop(), Some((2, 6.0)));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn retimable_queue_ties_pop_in_setting_order() {
        let mut q = RetimableQueue::new();
        for k in [7u32, 3, 9, 1] {
            q.set(k, 2.0);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|p| p.0)).collect();
        assert_eq!(order, vec![7, 3, 9, 1]);
    }
}
