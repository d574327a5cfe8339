//! The run's random number generator: portable, so a seed gives the same run everywhere.

use rand::SeedableRng;

/// The generator every random draw of a run comes from (kernel noise, random policies).
pub type SimRng = rand::rngs::Xoshiro256PlusPlus;

/// A generator seeded with `seed`.
pub fn rng_from_seed(seed: u64) -> SimRng {
    SimRng::seed_from_u64(seed)
}
