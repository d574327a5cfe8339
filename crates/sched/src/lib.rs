//! Schedulers: policies that decide which worker runs which ready task.
//!
//! A scheduler never touches the simulation. The runtime tells it that a task became ready
//! ([`Scheduler::push`]) and asks it for work when a worker has room ([`Scheduler::pop`]); it
//! answers from its own queues, looking at the world only through a read-only [`View`]
//! (clock, predicted task lengths, predicted transfer times, where data is valid, what workers
//! hold), and may ask for [`Decision`]s such as prefetches. This is StarPU's push/pop shape
//! (`starpu-reference.md` §1a), so the dmda family and work stealing fit the same trait.

mod central;
pub mod dmda;
pub mod heft;
mod random;
#[cfg(test)]
mod runtime_rules;
pub mod ws;

pub use central::{Eager, Prio};
pub use dmda::{Dmda, Params, TransferEstimate, Variant};
pub use heft::Heft;
pub use random::Random;
pub use ws::{Victims, WorkStealing};

pub use hetsim_runtime::sched::{Decision, Scheduler};

/// Scheduler names accepted by [`by_name`] and [`build`].
pub const NAMES: &[&str] = &[
    "eager", "prio", "random", "dm", "dmda", "dmdap", "dmdar", "dmdas", "dmdasd", "ws", "lws",
    "heft",
];

/// Build a scheduler by name with default options. `seed` feeds the policies that draw random
/// numbers (their own stream, derived from the run's seed, so the kernel-noise stream is
/// unaffected).
pub fn by_name(name: &str, seed: u64) -> Option<Box<dyn Scheduler>> {
    build(name, seed, &Params::default())
}

/// Build a scheduler by name; the dmda family takes `params`, the others ignore them
/// (`ws`, `lws` and `heft` have no options).
pub fn build(name: &str, seed: u64, params: &Params) -> Option<Box<dyn Scheduler>> {
    match name {
        "eager" => Some(Box::new(Eager::default())),
        "prio" => Some(Box::new(Prio::default())),
        "random" => Some(Box::new(Random::new(seed))),
        "ws" => Some(Box::new(WorkStealing::ws())),
        "lws" => Some(Box::new(WorkStealing::lws())),
        "heft" => Some(Box::new(Heft::new())),
        _ => {
            Variant::from_name(name).map(|v| Box::new(Dmda::new(v, *params)) as Box<dyn Scheduler>)
        }
    }
}
