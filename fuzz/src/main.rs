//! `hetsim-fuzz TARGET|all [--seconds N] [--seed S]`: fuzz one of hetsim's parsers (or each in
//! turn) for a bounded time on stable Rust, and exit non-zero if any input made it panic.
//!
//! Each target starts from real input files of the repository and draws structured edits of
//! them with proptest ([`mutate`]): a token replaced by an extreme value (NaN, 1e999, -1,
//! 2^64, an empty string ...), lines deleted, repeated or moved, text inserted, truncation.
//! An input that panics is written to `fuzz/crashes/TARGET-N.txt` (with the overrides or
//! parameters it had) and printed; it becomes a regression test. Runaway resources count as
//! crashes too: the address space is limited to [`MEMORY_LIMIT_BYTES`] (an allocation past it
//! aborts the process, and the input being run is in `fuzz/crashes/TARGET.current`), and an
//! input running longer than [`HANG_SECS`] is saved as `TARGET-hang.txt` and ends the run.
//! `.ci/run` runs every target for a few seconds, `scripts/fuzz.sh` for minutes.

mod mutate;
mod targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// One fuzz target: a name, and a function that draws one input, runs the parser on it and
/// returns the input's description (for a crash report).
pub struct Target {
    /// The name on the command line.
    pub name: &'static str,
    /// What it feeds.
    pub help: &'static str,
    /// Draw one input with `runner` and run it; the returned closure runs the parser and the
    /// string describes the input.
    pub draw: fn(&mut TestRunner) -> Drawn,
}

/// One drawn input: its description (saved if it crashes) and the run of the parser on it.
pub type Drawn = (String, Box<dyn FnOnce()>);

/// The address space the fuzzer may use: far more than any shipped input needs.
pub const MEMORY_LIMIT_BYTES: u64 = 4 << 30;

/// An input running longer than this is a hang.
pub const HANG_SECS: u64 = 20;

fn limit_memory() {
    let lim = libc::rlimit {
        rlim_cur: MEMORY_LIMIT_BYTES as libc::rlim_t,
        rlim_max: MEMORY_LIMIT_BYTES as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct it is given and nothing else.
    if unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) } != 0 {
        eprintln!("warning: cannot limit the address space; runaway memory is not caught");
    }
}

/// The input being run: (target, started, description), watched for hangs.
type Current = Arc<Mutex<Option<(&'static str, Instant, String)>>>;

fn watch_for_hangs(current: Current, crashes_dir: PathBuf) {
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let guard = current.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((name, started, described)) = guard.as_ref()
                && started.elapsed() > Duration::from_secs(HANG_SECS)
            {
                let file = crashes_dir.join(format!("{name}-hang.txt"));
                let _ = std::fs::write(&file, described);
                eprintln!(
                    "{name}: HANG (an input ran more than {HANG_SECS} s); input saved to {}",
                    file.display()
                );
                targets::remove_scratch();
                std::process::exit(1);
            }
        }
    });
}

fn save(dir: &Path, file: &str, text: &str) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let path = dir.join(file);
    let _ = std::fs::write(&path, text);
    path
}

fn usage() -> ! {
    eprintln!("usage: hetsim-fuzz TARGET|all [--seconds N] [--seed S]\ntargets:");
    for t in targets::TARGETS {
        eprintln!("  {:<18} {}", t.name, t.help);
    }
    std::process::exit(2)
}

/// Draw a value of `strategy` (no shrinking: a crash is saved as found).
pub fn draw<S: Strategy>(runner: &mut TestRunner, strategy: S) -> S::Value {
    strategy
        .new_tree(runner)
        .expect("the strategies never reject")
        .current()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(which) = args.first() else { usage() };
    let mut seconds = 10.0f64;
    let mut seed = 1u64;
    let mut i = 1;
    while i < args.len() {
        let v = args.get(i + 1).unwrap_or_else(|| usage());
        match args[i].as_str() {
            "--seconds" => seconds = v.parse().unwrap_or_else(|_| usage()),
            "--seed" => seed = v.parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
        i += 2;
    }
    let chosen: Vec<&Target> = if which == "all" {
        targets::TARGETS.iter().collect()
    } else {
        match targets::TARGETS.iter().find(|t| t.name == which) {
            Some(t) => vec![t],
            None => usage(),
        }
    };
    // Panics are caught and reported once, with their input.
    std::panic::set_hook(Box::new(|_| {}));
    limit_memory();
    let crashes_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crashes");
    let current: Current = Arc::default();
    watch_for_hangs(current.clone(), crashes_dir.clone());
    let mut failed = false;
    for t in chosen {
        let mut seed_bytes = [0u8; 32];
        seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
        seed_bytes[8..16].copy_from_slice(&(t.name.len() as u64).to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
        let mut runner = TestRunner::new_with_rng(Config::default(), rng);
        let start = Instant::now();
        let (mut inputs, mut crashes) = (0u64, 0u64);
        let mut slowest = (Duration::ZERO, String::new());
        while start.elapsed().as_secs_f64() < seconds {
            let (described, run) = (t.draw)(&mut runner);
            // Kept on disk while it runs: an abort (memory) leaves it there.
            let running = save(&crashes_dir, &format!("{}.current", t.name), &described);
            let t0 = Instant::now();
            *current.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((t.name, t0, described.clone()));
            let outcome = catch_unwind(AssertUnwindSafe(run));
            *current.lock().unwrap_or_else(|e| e.into_inner()) = None;
            let took = t0.elapsed();
            let _ = std::fs::remove_file(running);
            inputs += 1;
            if took > slowest.0 {
                slowest = (took, described.chars().take(200).collect());
            }
            if let Err(p) = outcome {
                crashes += 1;
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let file = save(
                    &crashes_dir,
                    &format!("{}-{crashes}.txt", t.name),
                    &described,
                );
                eprintln!(
                    "{}: PANIC ({msg}); input saved to {}",
                    t.name,
                    file.display()
                );
            }
        }
        println!(
            "{:<18} {inputs:>9} inputs in {:.0} s, {crashes} panics, slowest input {:.3} s",
            t.name,
            start.elapsed().as_secs_f64(),
            slowest.0.as_secs_f64()
        );
        failed |= crashes > 0;
    }
    targets::remove_scratch();
    std::process::exit(i32::from(failed))
}
