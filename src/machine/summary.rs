//! The human-readable summary printed by `hetsim check`.

use std::fmt::Write;

use super::Machine;
use crate::units::{format_bytes, format_secs, format_si};

pub(super) fn summary(m: &Machine) -> String {
    // Writing to a String cannot fail; `let _ =` keeps this free of unwraps.
    let mut out = String::new();
    let _ = writeln!(out, "machine {}", m.name());
    if let Some(d) = m.description() {
        let _ = writeln!(out, "  {d}");
    }

    let _ = writeln!(
        out,
        "\ndevices: {} CPU cores, {} GPUs",
        m.cpu_cores(),
        m.gpus().len()
    );
    for c in m.cpus() {
        let mem = node_name(m, c.memory.index());
        let _ = write!(out, "  {} x CPU core  {}  (memory {mem}", c.count, c.model);
        if let Some(f) = c.flops_per_sec_per_core {
            let _ = write!(out, ", {} per core", format_si(f, "flop/s"));
        }
        let _ = writeln!(out, ")");
    }
    for g in m.gpus() {
        let mem = node_name(m, g.memory.index());
        let _ = write!(out, "  GPU {}  {}  (memory {mem}", g.name, g.model);
        if let Some(f) = g.peak_flops_per_sec {
            let _ = write!(out, ", peak {}", format_si(f, "flop/s"));
        }
        if let Some(b) = g.memory_bandwidth_bytes_per_sec {
            let _ = write!(out, ", memory bandwidth {}", format_si(b, "B/s"));
        }
        let _ = writeln!(out, ")");
    }

    let _ = writeln!(out, "\nmemories: {}", m.memory_nodes().len());
    let width = m
        .memory_nodes()
        .iter()
        .map(|n| n.name.len())
        .max()
        .unwrap_or(0);
    for n in m.memory_nodes() {
        let _ = writeln!(
            out,
            "  {:<width$}  {}  {} ({} B)",
            n.name,
            n.kind,
            format_bytes(n.capacity_bytes as f64),
            n.capacity_bytes
        );
    }

    let _ = writeln!(out, "\nlinks: {}", m.links().len());
    let width = m.links().iter().map(|l| l.name.len()).max().unwrap_or(0);
    for l in m.links() {
        let _ = writeln!(
            out,
            "  {:<width$}  {:>14}  latency {:>11}  {}",
            l.name,
            format_si(l.bandwidth_bytes_per_sec, "B/s"),
            format_secs(l.latency_s),
            l.sharing
        );
    }

    let _ = writeln!(out, "\nroutes: {}", m.routes().len());
    for r in m.routes() {
        let _ = write!(
            out,
            "  {} -> {}",
            node_name(m, r.src.index()),
            node_name(m, r.dst.index())
        );
        if r.generated_by_symmetry {
            let _ = write!(out, "  (reverse of a symmetric route)");
        }
        let _ = writeln!(out);
        if !r.hops.is_empty() {
            let names: Vec<String> = r.hops.iter().map(|h| m.hop_name(h)).collect();
            let _ = writeln!(out, "      links: {}", names.join(", "));
            let bottleneck = m
                .route_bottleneck_bytes_per_sec(r)
                .map_or_else(|| "-".to_string(), |b| format_si(b, "B/s"));
            let _ = writeln!(
                out,
                "      latency {}, bottleneck {bottleneck}",
                format_secs(m.route_latency_s(r))
            );
        }
        if let Some(model) = &r.model {
            let _ = writeln!(out, "      model: {model} (replaces fluid sharing)");
        }
    }

    let rt = m.runtime();
    let _ = writeln!(out, "\nruntime:");
    let _ = writeln!(out, "  cudaMalloc {}", format_secs(rt.cuda_malloc_s));
    let _ = writeln!(out, "  cudaFree {}", format_secs(rt.cuda_free_s));
    let _ = writeln!(
        out,
        "  pinned host allocation {} per MiB",
        format_secs(rt.pinned_alloc_s_per_mib)
    );
    let _ = writeln!(
        out,
        "  transfer queueing {}",
        format_secs(rt.transfer_queue_s)
    );
    let _ = writeln!(out, "  GPU pipeline depth {}", rt.gpu_pipeline_depth);
    let _ = writeln!(
        out,
        "  GPU driver cores: {}",
        if rt.gpu_driver_cores {
            "one CPU core reserved per GPU"
        } else {
            "none reserved"
        }
    );
    out.push_str(&m.perf_models().summary());
    out
}

fn node_name(m: &Machine, index: usize) -> &str {
    m.memory_nodes().get(index).map_or("?", |n| n.name.as_str())
}
