//! `hetsim calibrate show`: a machine's kernel models as tables, one per codelet and device,
//! like StarPU's `starpu_perfmodel_display` (size, mean, deviation, samples, GFlop/s).

use std::fmt::Write;

use hetsim_core::error::InputError;
use hetsim_core::units::{format_secs, format_si};
use hetsim_platform::machine::Machine;

/// The tables for every codelet of `machine`, or only `codelet`. An unknown codelet name is an
/// input error listing the known ones.
pub fn render(machine: &Machine, codelet: Option<&str>) -> Result<String, InputError> {
    let pm = machine.perf_models();
    let codelets: Vec<_> = match codelet {
        Some(name) => match pm.codelet(name) {
            Some(c) => vec![c],
            None => {
                let known: Vec<&str> = pm.codelets().iter().map(|c| c.name()).collect();
                return Err(InputError::new(format!(
                    "machine `{}` has no kernel model for codelet `{name}`; codelets: {}",
                    machine.name(),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        },
        None => pm.codelets().iter().collect(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "machine {}: {} codelets with kernel models",
        machine.name(),
        pm.codelets().len()
    );
    for c in codelets {
        let _ = writeln!(out, "\ncodelet {}", c.name());
        let _ = writeln!(
            out,
            "  {:<8} {:>12} {:>12} {:>12} {:>8} {:>9}",
            "device", "size (B)", "mean", "deviation", "samples", "GFlop/s"
        );
        for m in c.models() {
            let dev = pm.selector_name(m.device());
            for e in m.history().entries() {
                let rate = e
                    .flop_rate_per_s()
                    .map_or("-".to_string(), |r| format!("{:.2}", r / 1e9));
                let _ = writeln!(
                    out,
                    "  {:<8} {:>12} {:>12} {:>12} {:>8} {:>9}",
                    dev,
                    e.size_bytes,
                    format_secs(e.mean_s),
                    format_secs(e.stddev_s),
                    e.samples.map_or("-".to_string(), |n| n.to_string()),
                    rate
                );
            }
            if let Some(r) = m.regression() {
                let range = match (r.min_size_bytes(), r.max_size_bytes()) {
                    (Some(lo), Some(hi)) => format!(" for sizes [{lo}, {hi}] B"),
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "  {:<8} regression {:e} s * size^{} + {}{range}",
                    dev,
                    r.a(),
                    r.b(),
                    format_secs(r.c_s())
                );
            }
            if let Some(f) = m.flop_rate_per_s() {
                let _ = writeln!(
                    out,
                    "  {:<8} flop rate {} (relative deviation {})",
                    dev,
                    format_si(f, "flop/s"),
                    m.rel_stddev()
                );
            }
        }
    }
    Ok(out)
}
