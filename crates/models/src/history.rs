//! History entries (StarPU's per-footprint lines) and the size regression `a·size^b + c`.

use super::ParamError;

/// Largest size kept exactly in an `f64` (2^53): sizes are byte counts, written as TOML numbers.
pub const MAX_EXACT_SIZE: u64 = 1 << 53;

/// One measured size: what a line of a StarPU `codelets/45/<symbol>.<host>` file holds
/// (`size`, `mean (us)`, `dev (us)`, `n`), with times in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// The footprint size: bytes summed over the task's buffers.
    pub size_bytes: u64,
    /// Mean duration, positive.
    pub mean_s: f64,
    /// Standard deviation of the duration, non-negative.
    pub stddev_s: f64,
    /// Number of measurements behind the mean, if known.
    pub samples: Option<u64>,
    /// Floating-point operations of a task of this size, if known (StarPU's `flops` column);
    /// reports only, never used to predict.
    pub flops: Option<f64>,
}

impl HistoryEntry {
    /// A checked entry: positive finite mean, finite non-negative deviation.
    pub fn new(
        size_bytes: u64,
        mean_s: f64,
        stddev_s: f64,
        samples: Option<u64>,
    ) -> Result<HistoryEntry, ParamError> {
        if !(mean_s.is_finite() && mean_s > 0.0) {
            return Err(ParamError::new(
                "mean",
                None,
                format!("expected a positive, finite mean duration, found {mean_s} s"),
            ));
        }
        if !(stddev_s.is_finite() && stddev_s >= 0.0) {
            return Err(ParamError::new(
                "stddev",
                None,
                format!("expected a finite, non-negative deviation, found {stddev_s} s"),
            ));
        }
        if size_bytes > MAX_EXACT_SIZE {
            return Err(ParamError::new(
                "size",
                None,
                format!("expected a size of at most 2^53 bytes, found {size_bytes}"),
            ));
        }
        Ok(HistoryEntry {
            size_bytes,
            mean_s,
            stddev_s,
            samples,
            flops: None,
        })
    }

    /// The same entry with its flop count (finite and non-negative; anything else is dropped,
    /// as StarPU writes `nan` when the flops of a size were incoherent).
    pub fn with_flops(mut self, flops: f64) -> HistoryEntry {
        self.flops = (flops.is_finite() && flops >= 0.0).then_some(flops);
        self
    }

    /// Achieved rate in flop/s (flops / mean), if the flop count is known and positive.
    pub fn flop_rate_per_s(&self) -> Option<f64> {
        self.flops.filter(|&f| f > 0.0).map(|f| f / self.mean_s)
    }
}

/// The history of one (codelet, device): entries sorted by size, one per size, looked up by
/// exact size in O(log n).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct History {
    entries: Vec<HistoryEntry>,
}

impl History {
    /// Sort `entries` by size; two entries with the same size are an error (the `index` of the
    /// error is the later one's position in `entries`).
    pub fn new(entries: Vec<HistoryEntry>) -> Result<History, ParamError> {
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by_key(|&i| (entries[i].size_bytes, i));
        for w in order.windows(2) {
            let (a, b) = (w[0], w[1]);
            if entries[a].size_bytes == entries[b].size_bytes {
                return Err(ParamError::new(
                    "history",
                    Some(a.max(b)),
                    format!(
                        "duplicate history entry for size {} B (also at history[{}]); expected \
                         one entry per size",
                        entries[b].size_bytes,
                        a.min(b)
                    ),
                ));
            }
        }
        let mut entries = entries;
        entries.sort_by_key(|e| e.size_bytes);
        Ok(History { entries })
    }

    /// The entry for exactly this size.
    #[inline]
    pub fn get(&self, size_bytes: u64) -> Option<&HistoryEntry> {
        self.entries
            .binary_search_by_key(&size_bytes, |e| e.size_bytes)
            .ok()
            .map(|i| &self.entries[i])
    }

    /// All entries, by increasing size.
    pub fn entries(&self) -> &[HistoryEntry] {
        &self.entries
    }

    /// The sizes with an entry, increasing.
    pub fn sizes(&self) -> impl Iterator<Item = u64> + '_ {
        self.entries.iter().map(|e| e.size_bytes)
    }

    /// True if there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Multiply each entry's mean and deviation by the next factor of `factors`, entry by
    /// entry by increasing size.
    pub fn scale_each(&mut self, factors: &mut impl FnMut() -> f64) {
        for e in &mut self.entries {
            let f = factors();
            e.mean_s *= f;
            e.stddev_s *= f;
        }
    }
}

/// StarPU's non-linear regression `t(size) = a·size^b + c` (seconds, size in bytes), valid for
/// sizes in `[min_size_bytes, max_size_bytes]` when those are given.
///
/// StarPU applies its NL regression within `[0.9·minx, 1.1·maxx]` of the sizes it was fitted
/// on; an importer writes those widened bounds here, so the range in the file is the range the
/// regression is used in.
#[derive(Debug, Clone, PartialEq)]
pub struct Regression {
    a: f64,
    b: f64,
    c_s: f64,
    min_size_bytes: Option<f64>,
    max_size_bytes: Option<f64>,
}

impl Regression {
    /// The same regression with every duration multiplied by `factor` (`a` and `c` scaled; a
    /// positive factor keeps the durations of its range non-negative).
    pub fn scaled(&self, factor: f64) -> Regression {
        Regression {
            a: self.a * factor,
            c_s: self.c_s * factor,
            ..*self
        }
    }

    /// A checked regression: `a` (seconds per byte^b), `b` and `c_s` (seconds) finite. With a
    /// size range, the durations at both ends must be non-negative (the function is monotone in
    /// size, so then every size of the range gets a non-negative duration); without one, `a`
    /// and `c_s` must be non-negative. Sizes at which it still gives no finite, non-negative
    /// duration (size 0 with `b < 0`) fall through to the next model.
    pub fn new(
        a: f64,
        b: f64,
        c_s: f64,
        min_size_bytes: Option<f64>,
        max_size_bytes: Option<f64>,
    ) -> Result<Regression, ParamError> {
        for (name, v) in [("a", a), ("b", b), ("c", c_s)] {
            if !v.is_finite() {
                return Err(ParamError::new(
                    name,
                    None,
                    format!("expected a finite number, found {v}"),
                ));
            }
        }
        for (name, v) in [("min_size", min_size_bytes), ("max_size", max_size_bytes)] {
            if let Some(v) = v
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(ParamError::new(
                    name,
                    None,
                    format!("expected a finite, non-negative size, found {v}"),
                ));
            }
        }
        if let (Some(lo), Some(hi)) = (min_size_bytes, max_size_bytes)
            && lo > hi
        {
            return Err(ParamError::new(
                "max_size",
                None,
                format!("expected max_size >= min_size, found {hi} < {lo}"),
            ));
        }
        let r = Regression {
            a,
            b,
            c_s,
            min_size_bytes,
            max_size_bytes,
        };
        match (min_size_bytes, max_size_bytes) {
            (Some(lo), Some(hi)) => {
                for (name, s) in [("min_size", lo), ("max_size", hi)] {
                    let t = r.eval(s);
                    // size 0 with b < 0 gives an infinite value; that size falls through.
                    if t < 0.0 || t.is_nan() {
                        return Err(ParamError::new(
                            name,
                            None,
                            format!(
                                "the regression gives a negative duration ({t} s) at {s} B; \
                                 expected a non-negative duration over the whole size range"
                            ),
                        ));
                    }
                }
            }
            _ => {
                if a < 0.0 || c_s < 0.0 {
                    return Err(ParamError::new(
                        if a < 0.0 { "a" } else { "c" },
                        None,
                        "without both min_size and max_size, a and c must be non-negative so \
                         that every size gets a non-negative duration"
                            .to_string(),
                    ));
                }
            }
        }
        Ok(r)
    }

    /// `a`, in seconds per byte^b.
    pub fn a(&self) -> f64 {
        self.a
    }
    /// The exponent `b`.
    pub fn b(&self) -> f64 {
        self.b
    }
    /// `c`, in seconds.
    pub fn c_s(&self) -> f64 {
        self.c_s
    }
    /// Smallest size the regression applies to, if bounded.
    pub fn min_size_bytes(&self) -> Option<f64> {
        self.min_size_bytes
    }
    /// Largest size the regression applies to, if bounded.
    pub fn max_size_bytes(&self) -> Option<f64> {
        self.max_size_bytes
    }

    /// `a·size^b + c`, whatever the range.
    #[inline]
    pub fn eval(&self, size_bytes: f64) -> f64 {
        if self.a == 0.0 {
            // A constant: 0·0^b would be NaN for b < 0.
            self.c_s
        } else {
            self.a * size_bytes.powf(self.b) + self.c_s
        }
    }

    /// The duration at `size_bytes` if the size is in range and the result is finite and
    /// non-negative.
    #[inline]
    pub fn duration_s(&self, size_bytes: u64) -> Option<f64> {
        let s = size_bytes as f64;
        if self.min_size_bytes.is_some_and(|lo| s < lo)
            || self.max_size_bytes.is_some_and(|hi| s > hi)
        {
            return None;
        }
        let t = self.eval(s);
        (t.is_finite() && t >= 0.0).then_some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(size: u64, mean: f64) -> HistoryEntry {
        HistoryEntry::new(size, mean, 0.0, None).unwrap()
    }

    #[test]
    fn history_sorts_and_finds_exact_sizes() {
        let h = History::new(vec![entry(30, 3.0), entry(10, 1.0), entry(20, 2.0)]).unwrap();
        assert_eq!(h.sizes().collect::<Vec<_>>(), [10, 20, 30]);
        assert_eq!(h.get(20).unwrap().mean_s, 2.0);
        assert!(h.get(21).is_none());
    }

    #[test]
    fn duplicate_sizes_name_the_later_entry() {
        let e = History::new(vec![entry(10, 1.0), entry(20, 2.0), entry(10, 3.0)]).unwrap_err();
        assert_eq!((e.field, e.index), ("history", Some(2)));
        assert!(e.message.contains("history[0]"), "{}", e.message);
    }

    #[test]
    fn entries_are_checked() {
        assert_eq!(
            HistoryEntry::new(1, f64::NAN, 0.0, None).unwrap_err().field,
            "mean"
        );
        assert_eq!(
            HistoryEntry::new(1, 0.0, 0.0, None).unwrap_err().field,
            "mean"
        );
        assert_eq!(
            HistoryEntry::new(1, 1.0, -1.0, None).unwrap_err().field,
            "stddev"
        );
    }

    #[test]
    fn regression_range_and_sign() {
        let r = Regression::new(2.0, 0.5, 1.0, Some(4.0), Some(100.0)).unwrap();
        assert_eq!(r.duration_s(16), Some(2.0 * 4.0 + 1.0));
        assert_eq!(r.duration_s(3), None);
        assert_eq!(r.duration_s(101), None);
        // Negative c is fine when the range keeps durations positive.
        assert!(Regression::new(1.0, 1.0, -1.0, Some(2.0), Some(10.0)).is_ok());
        assert_eq!(
            Regression::new(1.0, 1.0, -5.0, Some(2.0), Some(10.0))
                .unwrap_err()
                .field,
            "min_size"
        );
        assert_eq!(
            Regression::new(1.0, 1.0, -1.0, None, None)
                .unwrap_err()
                .field,
            "c"
        );
        assert_eq!(
            Regression::new(1.0, 1.0, 0.0, Some(5.0), Some(1.0))
                .unwrap_err()
                .field,
            "max_size"
        );
        // A constant.
        let k = Regression::new(0.0, 0.0, 1e-3, None, None).unwrap();
        assert_eq!(k.duration_s(0), Some(1e-3));
        // b < 0 at size 0 falls through instead of returning infinity.
        let inv = Regression::new(1.0, -1.0, 0.0, None, None).unwrap();
        assert_eq!(inv.duration_s(0), None);
        assert_eq!(inv.duration_s(4), Some(0.25));
    }
}
