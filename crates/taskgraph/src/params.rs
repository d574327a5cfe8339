//! Per task, the figures its kind gives meaning to: a delay's length, a payload message's
//! bytes, the durations a computation fixes on a CPU core and on a GPU.
//!
//! Most graphs set at most one figure per task (a delay, a payload, a kernel whose duration is
//! fixed on the one unit it runs on), so one `f64` per task holds it, its sign bit telling which
//! of the two slots it fills (the figures are never negative). A graph in which some task fills
//! both slots keeps two per task.

/// The slot of a task's figure: the first (a delay's length, a payload's bytes, a CPU
/// duration) or the second (a GPU duration).
pub(crate) type Slot = usize;

/// The figures of every task, NaN where unset.
#[derive(Debug, Clone, Default)]
pub(crate) enum Params {
    /// No task sets any.
    #[default]
    None,
    /// At most one per task: the value of the first slot, or the negated value of the second
    /// (`-0.0` is a second-slot zero).
    One(Vec<f64>),
    /// Both slots of every task.
    Two(Vec<[f64; 2]>),
}

impl Params {
    /// Task `t`'s figure in `slot` (NaN if unset).
    #[inline]
    pub fn get(&self, t: usize, slot: Slot) -> f64 {
        match self {
            Params::None => f64::NAN,
            Params::One(v) => match v.get(t) {
                Some(&x) if x.is_nan() => x,
                Some(&x) if x.is_sign_negative() == (slot == 1) => x.abs(),
                _ => f64::NAN,
            },
            Params::Two(v) => v.get(t).map_or(f64::NAN, |p| p[slot]),
        }
    }

    /// Whether task `t` has a figure in either slot.
    #[inline]
    pub fn any(&self, t: usize) -> bool {
        !(self.get(t, 0).is_nan() && self.get(t, 1).is_nan())
    }

    /// Set task `t`'s figure in `slot` to `v` (finite and non-negative), `tasks` being the
    /// number of tasks so far.
    pub fn set(&mut self, t: usize, slot: Slot, v: f64, tasks: usize) {
        debug_assert!(v.is_finite() && v >= 0.0, "figure {v}");
        if let Params::None = self {
            *self = Params::One(Vec::new());
        }
        if let Params::One(one) = self {
            let other = one.get(t).map_or(f64::NAN, |&x| {
                if x.is_nan() || x.is_sign_negative() == (slot == 1) {
                    f64::NAN
                } else {
                    x
                }
            });
            if other.is_nan() {
                if one.len() < tasks {
                    one.resize(tasks, f64::NAN);
                }
                one[t] = if slot == 1 { -v } else { v };
                return;
            }
            // Both slots of one task: every task gets two.
            let two = (0..one.len())
                .map(|i| [self.get(i, 0), self.get(i, 1)])
                .collect();
            *self = Params::Two(two);
        }
        let Params::Two(two) = self else {
            unreachable!("two slots per task from here")
        };
        if two.len() < tasks {
            two.resize(tasks, [f64::NAN; 2]);
        }
        two[t][slot] = v;
    }

    /// Room for figures of `tasks` tasks in all (one slot each).
    pub fn reserve_exact(&mut self, tasks: usize) {
        if let Params::None = self {
            *self = Params::One(Vec::new());
        }
        match self {
            Params::One(v) => v.reserve_exact(tasks.saturating_sub(v.len())),
            Params::Two(v) => v.reserve_exact(tasks.saturating_sub(v.len())),
            Params::None => unreachable!("made one above"),
        }
    }

    /// Pad to `tasks` tasks (NaN figures) if any figure is set, so that lookups need no
    /// bounds beyond the task count.
    pub fn pad(&mut self, tasks: usize) {
        match self {
            Params::One(v) if !v.is_empty() => v.resize(tasks, f64::NAN),
            Params::Two(v) if !v.is_empty() => v.resize(tasks, [f64::NAN; 2]),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_figure_per_task_takes_one_word_and_both_slots_switch_to_two() {
        let mut p = Params::default();
        assert!(p.get(0, 0).is_nan() && !p.any(0));
        p.set(1, 0, 2.5, 3);
        p.set(2, 1, 0.0, 3);
        assert!(matches!(&p, Params::One(v) if v.len() == 3));
        assert_eq!((p.get(1, 0), p.get(2, 1)), (2.5, 0.0));
        assert!(p.get(1, 1).is_nan() && p.get(2, 0).is_nan() && p.get(0, 0).is_nan());
        assert!(p.any(1) && p.any(2) && !p.any(0));
        // Overwriting the same slot keeps one word.
        p.set(1, 0, 4.0, 3);
        assert!(matches!(p, Params::One(_)));
        assert_eq!(p.get(1, 0), 4.0);
        // Task 2's first slot too: two per task, every figure kept.
        p.set(2, 0, 7.0, 4);
        assert!(matches!(&p, Params::Two(v) if v.len() == 4));
        assert_eq!((p.get(1, 0), p.get(2, 0), p.get(2, 1)), (4.0, 7.0, 0.0));
        assert!(p.get(1, 1).is_nan() && p.get(3, 0).is_nan());
    }

    #[test]
    fn padding_covers_every_task_once_a_figure_is_set() {
        let mut p = Params::default();
        p.pad(5);
        assert!(matches!(p, Params::None));
        p.set(0, 1, 1.0, 1);
        p.pad(5);
        assert!(matches!(&p, Params::One(v) if v.len() == 5));
        assert_eq!(p.get(0, 1), 1.0);
        assert!(p.get(4, 1).is_nan());
    }
}
