//! A sweep's runs on several threads (rayon).

use hetsim_app::shard::Shard;
use hetsim_app::sweep::{Row, Sweep};
use hetsim_core::Error;
use rayon::prelude::*;

/// Check `sweep`, then run every point on `threads` threads (0: as many as cores), calling
/// `progress` after each run. Rows are in [`Sweep::points`] order, whatever the number of
/// threads. A failed run fails the sweep, its error naming the run.
pub fn run(sweep: &Sweep, threads: usize, progress: &(dyn Fn() + Sync)) -> Result<Vec<Row>, Error> {
    run_shard(sweep, None, threads, progress)
}

/// [`run`], only the points of `shard` if given ([`Shard::owns`]), in sweep order.
pub fn run_shard(
    sweep: &Sweep,
    shard: Option<Shard>,
    threads: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Row>, Error> {
    sweep.check()?;
    let points: Vec<_> = sweep
        .points()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| s.owns(*i)))
        .map(|(_, p)| p)
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the thread pool: {e}")))?;
    let results: Vec<Result<Row, Error>> = pool.install(|| {
        points
            .par_iter()
            .map(|p| {
                let r = sweep.run_point(p);
                progress();
                r
            })
            .collect()
    });
    results.into_iter().collect()
}
