//! A sweep's runs on several threads (rayon).

use hetsim_app::sweep::{Row, Sweep};
use hetsim_core::Error;
use rayon::prelude::*;

/// Check `sweep`, then run every point on `threads` threads (0: as many as cores), calling
/// `progress` after each run. Rows are in [`Sweep::points`] order, whatever the number of
/// threads. A failed run fails the sweep, its error naming the run.
pub fn run(sweep: &Sweep, threads: usize, progress: &(dyn Fn() + Sync)) -> Result<Vec<Row>, Error> {
    sweep.check()?;
    let points = sweep.points();
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
