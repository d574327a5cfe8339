//! Progress on stderr for long commands: a spinner while something that reports nothing is
//! built, and a bar of items done out of a total. Each appears only once its work has lasted a
//! second, so quick commands print nothing; indicatif draws nothing when stderr is not a
//! terminal.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work lasts before its progress is shown.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// A bar on stderr of `total` `unit` (shown at once: [`CountBar`] waits before making one).
pub(super) fn count_bar(total: u64, unit: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let template = format!("{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {unit}, eta {{eta}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A bar of items done out of a total, shown once the work has lasted [`SHOW_AFTER`].
pub(super) struct CountBar {
    enabled: bool,
    /// What is counted ("tasks", "flows").
    unit: &'static str,
    pub(super) start: Instant,
    total: u64,
    done: u64,
    bar: Option<ProgressBar>,
}

impl CountBar {
    /// Items between two looks at the clock: reading it per item would cost more than the
    /// item.
    const CHECK_EVERY: u64 = 1024;

    /// A bar counting `unit`, which shows nothing if not `enabled` (`--quiet`, `--json`).
    pub fn new(enabled: bool, unit: &'static str) -> Self {
        CountBar {
            enabled,
            unit,
            start: Instant::now(),
            total: 0,
            done: 0,
            bar: None,
        }
    }

    pub fn set_total(&mut self, total: u64) {
        self.total = total;
    }

    /// `n` more items are done.
    pub fn advance(&mut self, n: u64) {
        if !self.enabled || n == 0 {
            return;
        }
        let before = self.done;
        self.done += n;
        if let Some(bar) = &self.bar {
            bar.set_position(self.done);
        } else if before / Self::CHECK_EVERY != self.done / Self::CHECK_EVERY
            && self.start.elapsed() >= SHOW_AFTER
        {
            let bar = count_bar(self.total, self.unit).with_elapsed(self.start.elapsed());
            bar.set_position(self.done);
            self.bar = Some(bar);
        }
    }

    /// The work is over: the bar goes.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// Where the bar stands, if it is shown.
    #[cfg(test)]
    pub fn shown_at(&self) -> Option<u64> {
        self.bar.as_ref().map(ProgressBar::position)
    }
}

/// A spinner saying `what` is going on, shown once that has lasted [`SHOW_AFTER`], until
/// [`Spinner::finish`]. It ticks on a thread of its own, since the work reports nothing.
pub(super) struct Spinner {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    const TICK: Duration = Duration::from_millis(100);

    /// Start waiting to show the spinner; nothing at all if not `enabled`.
    pub fn start(enabled: bool, what: &'static str) -> Self {
        if !enabled {
            return Spinner {
                stop: None,
                thread: None,
            };
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let waiting = move |d| matches!(stopped.recv_timeout(d), Err(RecvTimeoutError::Timeout));
        let thread = std::thread::spawn(move || {
            if !waiting(SHOW_AFTER) {
                return;
            }
            let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                .with_elapsed(SHOW_AFTER);
            if let Ok(style) =
                ProgressStyle::with_template(&format!("{{elapsed_precise}} {{spinner}} {what}"))
            {
                spinner.set_style(style);
            }
            while waiting(Self::TICK) {
                spinner.tick();
            }
            spinner.finish_and_clear();
        });
        Spinner {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Take the spinner down (if it is up) and wait for its thread.
    pub fn finish(&mut self) {
        // Dropping the sender wakes the thread.
        self.stop = None;
        if let Some(t) = self.thread.take() {
            // A spinner that panicked only loses its drawing.
            let _ = t.join();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bar appears once the work has lasted a second, at the first clock check after it
    /// (every 1024 items, also when one call crosses several), and follows the count; quick
    /// work, or a disabled bar, shows none.
    #[test]
    fn the_bar_appears_after_a_second_and_counts() {
        let mut quick = CountBar::new(true, "tasks");
        quick.advance(2048);
        assert_eq!(quick.shown_at(), None, "under a second: no bar");

        let mut slow = CountBar::new(true, "tasks");
        slow.start = Instant::now() - Duration::from_secs(2);
        for _ in 0..1023 {
            slow.advance(1);
        }
        assert_eq!(slow.shown_at(), None, "the clock is read every 1024 items");
        slow.advance(1);
        assert_eq!(slow.shown_at(), Some(1024));
        slow.advance(5);
        assert_eq!(slow.shown_at(), Some(1029));

        let mut batch = CountBar::new(true, "flows");
        batch.start = Instant::now() - Duration::from_secs(2);
        batch.advance(1000);
        batch.advance(1000);
        assert_eq!(batch.shown_at(), Some(2000), "1024 crossed within one call");

        let mut quiet = CountBar::new(false, "tasks");
        quiet.start = Instant::now() - Duration::from_secs(2);
        quiet.advance(4096);
        assert_eq!(quiet.shown_at(), None);
    }

    /// The spinner's thread ends when the work it waits for is over; a disabled spinner starts
    /// none.
    #[test]
    fn the_spinner_thread_ends_when_finished() {
        let mut s = Spinner::start(true, "building");
        assert!(s.thread.is_some());
        s.finish();
        assert!(s.thread.is_none() && s.stop.is_none());
        assert!(Spinner::start(false, "building").thread.is_none());
    }
}
