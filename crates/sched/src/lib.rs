//! Schedulers: policies that decide which worker runs which ready task.
//!
//! A scheduler never touches the simulation. The runtime tells it that a task became ready
//! ([`Scheduler::push`]) and asks it for work when a worker has room ([`Scheduler::pop`]); it
//! answers from its own queues, looking at the world only through a read-only [`View`]
//! (clock, predicted task lengths, predicted transfer times, where data is valid, what workers
//! hold), and may ask for [`Decision`]s such as prefetches. This is StarPU's push/pop shape
//! (`starpu-reference.md` §1a), so the dmda family and work stealing fit the same trait.
//!
//! Every policy registers in [`REGISTRY`] ([`registry`]): its name, its rule in one line, its
//! options as its own serde type, and how to build it. The scenario reader, the command's help
//! and the docs' tests read the registry; a new policy is its file and its entry.

mod central;
pub mod dmda;
pub mod heft;
mod list;
pub mod peft;
mod random;
mod recorded;
pub mod registry;
#[cfg(test)]
mod runtime_rules;
pub mod ws;

pub use central::{Eager, Prio};
pub use dmda::{Dmda, Params, TransferEstimate, Variant};
pub use heft::Heft;
pub use list::{ListPlanner, ListScheduler, Plan, Slot};
pub use random::Random;
pub use recorded::Recorded;
pub use registry::{SchedulerConfig, SchedulerEntry};
pub use ws::{Victims, WorkStealing};

pub use hetsim_runtime::sched::{Decision, Scheduler, Wakes};

use dmda::{DM_OPTIONS, DMDA_OPTIONS, DmOptions, DmdaOptions, READY_OPTIONS, ReadyOptions};
use registry::{NoOptions, configured};

/// Every scheduler, in the order help texts and docs list them. A policy registers here with
/// its name, its rule in one line, its options and how to build it from them.
pub static REGISTRY: &[SchedulerEntry] = &[
    SchedulerEntry {
        name: "eager",
        help: "one central FIFO; a worker takes the first task it can run",
        options: &[],
        configure: |de| configured(de, |_: &NoOptions, _| Box::new(Eager::default())),
    },
    SchedulerEntry {
        name: "prio",
        help: "one central queue, highest priority first, FIFO within a level",
        options: &[],
        configure: |de| configured(de, |_: &NoOptions, _| Box::new(Prio::default())),
    },
    SchedulerEntry {
        name: "random",
        help: "a worker drawn with probability proportional to its relative speed, seeded",
        options: &[],
        configure: |de| configured(de, |_: &NoOptions, seed| Box::new(Random::new(seed))),
    },
    SchedulerEntry {
        name: "dm",
        help: "StarPU's deque model: the worker with the earliest expected end, FIFO queues",
        options: DM_OPTIONS,
        configure: |de| {
            configured(de, |o: &DmOptions, _| {
                Box::new(Dmda::new(Variant::Dm, o.params()))
            })
        },
    },
    SchedulerEntry {
        name: "dmda",
        help: "dm with the transfer penalty (data-aware), inputs prefetched at push",
        options: DMDA_OPTIONS,
        configure: |de| {
            configured(de, |o: &DmdaOptions, _| {
                Box::new(Dmda::new(Variant::Dmda, o.params()))
            })
        },
    },
    SchedulerEntry {
        name: "dmdap",
        help: "dmda with queues sorted by priority",
        options: DMDA_OPTIONS,
        configure: |de| {
            configured(de, |o: &DmdaOptions, _| {
                Box::new(Dmda::new(Variant::Dmdap, o.params()))
            })
        },
    },
    SchedulerEntry {
        name: "dmdar",
        help: "dmda popping first the queued task whose data is most ready",
        options: READY_OPTIONS,
        configure: |de| {
            configured(de, |o: &ReadyOptions, _| {
                Box::new(Dmda::new(Variant::Dmdar, o.params()))
            })
        },
    },
    SchedulerEntry {
        name: "dmdas",
        help: "dmdar with queues sorted by priority",
        options: READY_OPTIONS,
        configure: |de| {
            configured(de, |o: &ReadyOptions, _| {
                Box::new(Dmda::new(Variant::Dmdas, o.params()))
            })
        },
    },
    SchedulerEntry {
        name: "dmdasd",
        help: "dmdas; a task waits only behind queued tasks of priority at least its own",
        options: READY_OPTIONS,
        configure: |de| {
            configured(de, |o: &ReadyOptions, _| {
                Box::new(Dmda::new(Variant::Dmdasd, o.params()))
            })
        },
    },
    SchedulerEntry {
        name: "ws",
        help: "work stealing: push where the task was released, idle workers steal round-robin",
        options: &[],
        configure: |de| configured(de, |_: &NoOptions, _| Box::new(WorkStealing::ws())),
    },
    SchedulerEntry {
        name: "lws",
        help: "work stealing, victims nearest first",
        options: ws::LWS_OPTIONS,
        configure: |de| {
            configured(de, |o: &ws::LwsOptions, _| {
                if o.hwloc.unwrap_or(true) {
                    Box::new(WorkStealing::lws())
                } else {
                    Box::new(WorkStealing::ws_named_lws())
                }
            })
        },
    },
    SchedulerEntry {
        name: "heft",
        help: "HEFT (Topcuoglu et al. 2002), planned once over the whole graph, then executed",
        options: &[],
        configure: |de| configured(de, |_: &NoOptions, _| Box::new(Heft::new())),
    },
    SchedulerEntry {
        name: "peft",
        help: "PEFT (Arabnejad and Barbosa 2014): a plan like heft's, ranked and placed by an optimistic cost table",
        options: &[],
        configure: |de| configured(de, |_: &NoOptions, _| Box::new(peft::Peft::new())),
    },
    SchedulerEntry {
        name: "recorded",
        help: "each task on the worker it ran on in the recorded run (tasks.rec's WorkerId), FIFO per worker",
        options: &[],
        configure: |de| configured(de, |_: &NoOptions, _| Box::new(Recorded::default())),
    },
];

/// The registered scheduler called `name`.
pub fn lookup(name: &str) -> Option<&'static SchedulerEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// The registered names, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|e| e.name)
}

/// Build a registered scheduler by name with default options. `seed` feeds the policies that
/// draw random numbers.
pub fn by_name(name: &str, seed: u64) -> Option<Box<dyn Scheduler>> {
    lookup(name).map(|e| e.default_config().build(seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(text: &str) -> registry::OptionsDeserializer<'_> {
        registry::OptionsDeserializer::parse(text).unwrap()
    }

    #[test]
    fn every_entry_builds_by_its_name_and_documents_its_fields() {
        for e in REGISTRY {
            let config = e.default_config();
            assert_eq!(config.build(1).name(), e.name);
            let documented: Vec<&str> = e.options.iter().map(|o| o.name).collect();
            assert_eq!(config.option_fields(), documented, "{}", e.name);
        }
        let mut names: Vec<&str> = names().collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len(), "names are unique");
    }

    #[test]
    fn options_reach_the_policy_and_strangers_are_refused() {
        let dmdas = lookup("dmdas").unwrap();
        let c = (dmdas.configure)(options(
            "alpha = 0.5\nbeta = 2\ntransfer_estimate = \"nominal\"\nready_first = false",
        ))
        .unwrap();
        let want = ReadyOptions {
            alpha: Some(registry::NonNegative(0.5)),
            beta: Some(registry::NonNegative(2.0)),
            transfer_estimate: Some(TransferEstimate::Nominal),
            ready_first: Some(false),
            ..ReadyOptions::default()
        };
        assert_eq!(format!("{c:?}"), format!("{want:?}"));
        let p = want.params();
        assert_eq!(
            (p.alpha, p.beta, p.gamma, p.ready_first, p.transfer_estimate),
            (0.5, 2.0, 1000.0, false, TransferEstimate::Nominal)
        );
        let e = (lookup("dmda").unwrap().configure)(options("ready_first = false")).unwrap_err();
        assert!(e.message().contains("unknown field `ready_first`"), "{e}");
        let e = (lookup("dm").unwrap().configure)(options("alpha = -1")).unwrap_err();
        assert!(e.message().contains("finite number >= 0, found -1"), "{e}");
        let e = (lookup("eager").unwrap().configure)(options("alpha = 1")).unwrap_err();
        assert!(e.message().contains("unknown field `alpha`"), "{e}");
        let e =
            (lookup("dmda").unwrap().configure)(options("transfer_estimate = \"x\"")).unwrap_err();
        assert!(
            e.message().contains("expected `starpu` or `nominal`"),
            "{e}"
        );
    }
}
