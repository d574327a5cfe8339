//! The human-readable summary printed by `hetsim check`.

use std::fmt::Write;

use super::Machine;
use hetsim_core::units::{format_bytes, format_secs, format_si};
use hetsim_models::{DeviceKind, DeviceModel, DeviceSelector};

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
    for (label, secs, per) in [
        ("cudaMalloc", rt.cuda_malloc_s, ""),
        ("cudaFree", rt.cuda_free_s, ""),
        (
            "pinned host allocation",
            rt.pinned_alloc_s_per_mib,
            " per MiB",
        ),
        ("transfer queueing", rt.transfer_queue_s, ""),
        ("GPU kernel queueing", rt.kernel_queue_s, ""),
        ("push", rt.push_s, " (delays the pops it wakes)"),
        ("submission", rt.submit_s, " per task"),
        (
            "fetching input",
            rt.fetch_input_s,
            " per buffer of a popped task",
        ),
        (
            "failed steal",
            rt.steal_retry_s,
            " asleep before a ws thief that found its victim locked pops again",
        ),
    ] {
        let _ = writeln!(out, "  {label} {}{per}", format_secs(secs));
    }
    let _ = writeln!(
        out,
        "  GPU suballocator: {}",
        if rt.suballocator {
            "allocations up to 4 MiB share 32 MiB chunks"
        } else {
            "off (one cudaMalloc per allocation)"
        }
    );
    let _ = writeln!(
        out,
        "  GPU tidying: dirty chunks written back below {} % clean, up to {} %",
        rt.min_clean_pct, rt.target_clean_pct
    );
    if !rt.transfer_cost {
        let _ = writeln!(
            out,
            "  transfers: free (every copy done the instant it starts)"
        );
    }
    let l = rt.pending_limits;
    let _ = writeln!(
        out,
        "  pending requests per pair: fetch < {}, prefetch < {}, idle < {}",
        l.fetch, l.prefetch, l.idle
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
    affinity_section(m, &mut out);
    codelets_section(m, &mut out);
    out
}

/// `[affinity]`, when the file has one: per GPU, its cores nearest first, as ranges
/// ("6-11, 0-5").
fn affinity_section(m: &Machine, out: &mut String) {
    let lists: Vec<&[u32]> = m.gpus().iter().map(|g| m.gpu_affinity(g.id)).collect();
    if lists.iter().all(|l| l.is_empty()) {
        return;
    }
    let _ = writeln!(out, "\naffinity: CPU cores nearest each GPU, nearest first");
    let width = m.gpus().iter().map(|g| g.name.len()).max().unwrap_or(0);
    for (g, list) in m.gpus().iter().zip(lists) {
        let cores = if list.is_empty() {
            "none given".to_string()
        } else {
            core_ranges(list)
        };
        let _ = writeln!(out, "  {:<width$}  {cores}", g.name);
    }
}

/// Core indices as ascending runs: `[6, 7, 8, 0, 1]` is "6-8, 0-1"; a run of one is the bare
/// index.
pub(super) fn core_ranges(cores: &[u32]) -> String {
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cores.len() {
        let mut j = i;
        while j + 1 < cores.len() && cores[j + 1] == cores[j] + 1 {
            j += 1;
        }
        runs.push(if i == j {
            cores[i].to_string()
        } else {
            format!("{}-{}", cores[i], cores[j])
        });
        i = j + 1;
    }
    runs.join(", ")
}

/// How many sizes of a history are written out in full; longer lists show their first and last
/// few around "...".
const SIZES_SHOWN: usize = 8;

/// The codelets with a model, one line per group of devices whose models have the same shape:
/// which kinds of model (history with its sizes, regression, flop rate), and the GPUs that can
/// run none of it.
fn codelets_section(m: &Machine, out: &mut String) {
    let pm = m.perf_models();
    if pm.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\ncodelets: {} modelled (default noise: {})",
        pm.codelets().len(),
        pm.default_noise().kind_name()
    );
    for c in pm.codelets() {
        let _ = write!(out, "  {}", c.name());
        if let Some(n) = c.noise_override() {
            let _ = write!(out, "  (noise: {})", n.kind_name());
        }
        let _ = writeln!(out);
        // Groups of devices with the same description, in order of first appearance.
        let mut groups: Vec<(Vec<String>, String)> = Vec::new();
        for dm in c.models() {
            let name = pm.selector_name(dm.device());
            let what = model_shape(dm);
            match groups.iter_mut().find(|(_, w)| *w == what) {
                Some((names, _)) => names.push(name),
                None => groups.push((vec![name], what)),
            }
        }
        let labels: Vec<String> = groups.iter().map(|(n, _)| n.join(", ")).collect();
        let width = labels.iter().map(String::len).max().unwrap_or(0);
        for (label, (_, what)) in labels.iter().zip(&groups) {
            let _ = writeln!(out, "    {label:<width$}  {what}");
        }
        // Devices that can run none of the codelet: the CPU cores without a `cpu` model, and,
        // when some GPU has a model, the GPUs with neither their own nor a `gpu` one (a
        // per-GPU calibration may have missed one).
        let has = |sel: DeviceSelector| c.models().iter().any(|d| d.device() == sel);
        let mut missing: Vec<&str> = Vec::new();
        if m.cpu_cores() > 0 && !has(DeviceSelector::Kind(DeviceKind::Cpu)) {
            missing.push("cpu");
        }
        let some_gpu = m.gpus().iter().any(|g| has(DeviceSelector::Gpu(g.id)));
        if some_gpu && !has(DeviceSelector::Kind(DeviceKind::Gpu)) {
            missing.extend(
                m.gpus()
                    .iter()
                    .filter(|g| !has(DeviceSelector::Gpu(g.id)))
                    .map(|g| g.name.as_str()),
            );
        }
        if !missing.is_empty() {
            let _ = writeln!(out, "    no model on: {}", missing.join(", "));
        }
    }
}

/// "history, 3 sizes: 1228800, 4915200, 11059200 B; regression ...; flop rate ...".
fn model_shape(dm: &DeviceModel) -> String {
    let mut parts = Vec::new();
    let h = dm.history();
    if !h.is_empty() {
        let sizes: Vec<u64> = h.sizes().collect();
        let n = sizes.len();
        let shown: Vec<String> = if n <= SIZES_SHOWN {
            sizes.iter().map(u64::to_string).collect()
        } else {
            let head = sizes[..SIZES_SHOWN / 2].iter().map(u64::to_string);
            let tail = sizes[n - (SIZES_SHOWN / 2 - 1)..]
                .iter()
                .map(u64::to_string);
            head.chain(std::iter::once("...".to_string()))
                .chain(tail)
                .collect()
        };
        parts.push(format!(
            "history, {n} size{}: {} B",
            if n == 1 { "" } else { "s" },
            shown.join(", ")
        ));
    }
    if let Some(r) = dm.regression() {
        let mut s = format!(
            "regression {:e}·size^{} + {}",
            r.a(),
            r.b(),
            format_secs(r.c_s())
        );
        if r.min_size_bytes().is_some() || r.max_size_bytes().is_some() {
            let _ = write!(
                s,
                " on [{}, {}] B",
                r.min_size_bytes().unwrap_or(0.0),
                r.max_size_bytes()
                    .map_or("inf".to_string(), |x| x.to_string())
            );
        }
        parts.push(s);
    }
    if let Some(f) = dm.flop_rate_per_s() {
        parts.push(format!("flop rate {}", format_si(f, "flop/s")));
    }
    parts.join("; ")
}

fn node_name(m: &Machine, index: usize) -> &str {
    m.memory_nodes().get(index).map_or("?", |n| n.name.as_str())
}
