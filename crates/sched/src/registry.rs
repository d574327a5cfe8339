//! What a scheduler registers: its name, one line of help, and its options as its own serde
//! type with `deny_unknown_fields`, read from a scenario's `[scheduler]` table. The registry
//! itself is [`crate::REGISTRY`]; the scenario reader, `hetsim run --help` and the docs' tests
//! read it, so a new policy is a file and an entry there.

use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, Error as _};

pub use hetsim_core::options::{OptionDoc, OptionValues, field_names};

use crate::Scheduler;

/// A `[scheduler]` table without its `name`, as the scenario reader hands it over: a TOML
/// deserializer that keeps the values' source spans, so that an error points at the file's
/// line or at the `--set` argument.
pub type OptionsDeserializer<'a> = toml::de::Deserializer<'a>;

/// An error reading options (with the span of the offending key or value).
pub type OptionsError = toml::de::Error;

/// A scheduler with its options read: builds a fresh policy for each run.
pub trait SchedulerConfig: fmt::Debug + Send + Sync {
    /// The policy; `seed` feeds the policies that draw random numbers (their own stream,
    /// derived from the run's seed, so the kernel-noise stream is unaffected).
    fn build(&self, seed: u64) -> Box<dyn Scheduler>;

    /// The option names the options type accepts (serde's fields).
    fn option_fields(&self) -> &'static [&'static str];
}

/// One registered scheduler.
#[derive(Debug, Clone, Copy)]
pub struct SchedulerEntry {
    /// Its name (`--sched`, `scheduler.name`).
    pub name: &'static str,
    /// One line: the rule it follows.
    pub help: &'static str,
    /// Its options, as documented.
    pub options: &'static [OptionDoc],
    /// Read its options (unknown ones refused) into a configuration.
    pub configure: fn(OptionsDeserializer<'_>) -> Result<Arc<dyn SchedulerConfig>, OptionsError>,
}

impl SchedulerEntry {
    /// The configuration with every option at its default.
    pub fn default_config(&self) -> Arc<dyn SchedulerConfig> {
        let empty = OptionsDeserializer::parse("").expect("the empty document parses");
        (self.configure)(empty).expect("every option of a scheduler has a default")
    }

    /// Its documented option called `name`.
    pub fn option(&self, name: &str) -> Option<&'static OptionDoc> {
        self.options.iter().find(|o| o.name == name)
    }
}

/// Options of type `O`, read, with the function that builds the policy from them.
pub struct Configured<O> {
    options: O,
    build: fn(&O, u64) -> Box<dyn Scheduler>,
}

impl<O: fmt::Debug> fmt::Debug for Configured<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.options.fmt(f)
    }
}

impl<O: DeserializeOwned + fmt::Debug + Send + Sync> SchedulerConfig for Configured<O> {
    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        (self.build)(&self.options, seed)
    }

    fn option_fields(&self) -> &'static [&'static str] {
        field_names::<O>()
    }
}

/// Read options of type `O` from `de` and keep `build` to make the policy: what a registry
/// entry's `configure` calls.
pub fn configured<O>(
    de: OptionsDeserializer<'_>,
    build: fn(&O, u64) -> Box<dyn Scheduler>,
) -> Result<Arc<dyn SchedulerConfig>, OptionsError>
where
    O: DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    let options = O::deserialize(de)?;
    Ok(Arc::new(Configured { options, build }))
}

/// The options of a scheduler that takes none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// A finite number ≥ 0 (weights, powers).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct NonNegative(pub f64);

impl<'de> Deserialize<'de> for NonNegative {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if v.is_finite() && v >= 0.0 {
            Ok(NonNegative(v))
        } else {
            Err(D::Error::custom(format!(
                "expected a finite number >= 0, found {v}"
            )))
        }
    }
}
