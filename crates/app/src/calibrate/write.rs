//! Writing an [`Imported`] calibration as a hetsim machine file (`docs/machine-format.md`).
//!
//! The output is deterministic (same input, same bytes), quotes every figure as StarPU wrote it
//! with its unit, and says in comments which file and line each one comes from.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::starpu_bus::AffinityUnit;
use super::starpu_codelets::{HistoryLine, StarpuDevice};
use super::{DEFAULT_RAM, Imported};
use hetsim_core::error::InputError;
use hetsim_models::Regression;

/// A TOML basic string.
fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Text safe for a one-line comment.
fn c(s: &str) -> String {
    s.chars()
        .map(|ch| if ch.is_control() { ' ' } else { ch })
        .collect()
}

/// A float for TOML: StarPU's `%e` text when it is a valid TOML float, else Rust's `{:?}`.
fn toml_float(text: &str, value: f64) -> String {
    let ok = {
        let t = text.strip_prefix('-').unwrap_or(text);
        let (mant, exp) = t.split_once(['e', 'E']).unwrap_or((t, "0"));
        let (int, frac) = mant.split_once('.').unwrap_or((mant, "0"));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let exp = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        digits(int) && digits(frac) && digits(exp) && !(int.len() > 1 && int.starts_with('0'))
    };
    if ok {
        text.to_string()
    } else {
        format!("{value:?}")
    }
}

fn device_name(d: StarpuDevice) -> String {
    match d {
        StarpuDevice::Cpu => "cpu".to_string(),
        StarpuDevice::Cuda(i) => format!("CUDA{i}"),
    }
}

fn history_entry(h: &HistoryLine) -> String {
    let mut s = format!(
        "{{ size = {}, mean = {}, stddev = {}, samples = {}",
        q(&format!("{} B", h.size)),
        q(&format!("{} us", h.mean_text)),
        q(&format!("{} us", h.dev_text)),
        h.samples
    );
    if h.flops.is_finite() && h.flops >= 0.0 {
        let _ = write!(s, ", flops = {}", toml_float(&h.flops_text, h.flops));
    }
    let _ = write!(s, " }},  # line {}, footprint {}", h.line, h.footprint);
    s
}

/// Memory nodes kept: RAM and the CUDA devices of the configuration.
fn kept_node(im: &Imported, id: &str) -> bool {
    id == "RAM"
        || id
            .strip_prefix("CUDA")
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n < im.config.cuda && format!("CUDA{n}") == id)
}

/// One route to write: (src, dst, links, source line, generated from a symmetrical route).
type OutRoute = (String, String, Vec<String>, usize, bool);

fn routes(im: &Imported) -> Vec<OutRoute> {
    let mut out: Vec<OutRoute> = Vec::new();
    for r in &im.platform.routes {
        if kept_node(im, &r.src) && kept_node(im, &r.dst) && r.src != r.dst {
            out.push((r.src.clone(), r.dst.clone(), r.links.clone(), r.line, false));
        }
    }
    for r in &im.platform.routes {
        if r.symmetrical
            && kept_node(im, &r.src)
            && kept_node(im, &r.dst)
            && r.src != r.dst
            && !out.iter().any(|o| o.0 == r.dst && o.1 == r.src)
        {
            let mut links = r.links.clone();
            links.reverse();
            out.push((r.dst.clone(), r.src.clone(), links, r.line, true));
        }
    }
    out
}

/// The machine file for an import. Fails (as bad input) only if the platform lacks a route
/// between RAM and a GPU.
pub fn machine_toml(im: &Imported) -> Result<String, InputError> {
    let o = &im.options;
    let host = &o.host;
    let name = im.name();
    let cfg = &im.config;
    let pf = &im.platform_file;
    let mut s = String::new();
    let w = &mut s;

    let gpu_model = |i: u32| -> (String, &'static str) {
        match im
            .platform
            .host(&format!("CUDA{i}"))
            .and_then(|h| h.props.get("model"))
        {
            Some(m) => (m.clone(), "platform"),
            None => match &o.gpu_model {
                Some(m) => (m.clone(), "option"),
                None => ("unknown".to_string(), "none"),
            },
        }
    };
    let routes = routes(im);
    let used: BTreeSet<&str> = routes
        .iter()
        .flat_map(|r| r.2.iter().map(String::as_str))
        .collect();
    let links: Vec<_> = im
        .platform
        .links
        .iter()
        .filter(|l| used.contains(l.id.as_str()))
        .collect();
    let dropped_links: Vec<&str> = im
        .platform
        .links
        .iter()
        .filter(|l| !used.contains(l.id.as_str()))
        .map(|l| l.id.as_str())
        .collect();
    let dropped_hosts: Vec<&str> = im
        .platform
        .hosts
        .iter()
        .map(|h| h.id.as_str())
        .filter(|h| !kept_node(im, h) && *h != "MAIN" && !h.starts_with("CPU"))
        .collect();
    let dropped_routes =
        im.platform.routes.len() + routes.iter().filter(|r| r.4).count() - routes.len();

    // Header.
    let _ = writeln!(
        w,
        "# {}: imported by `hetsim calibrate import-starpu` from StarPU's calibration files.",
        c(name)
    );
    let _ = writeln!(w, "#   directory: {}", c(&o.dir.display().to_string()));
    let _ = writeln!(w, "#   host:      {}", c(host));
    let _ = writeln!(w, "# Files read:");
    let _ = writeln!(
        w,
        "#   bus/{h}.config          device counts ({} CPUs, {} CUDA, {} OpenCL{})",
        cfg.cpus,
        cfg.cuda,
        cfg.opencl,
        if cfg.has_numa_line {
            format!(", {} NUMA nodes", cfg.numa)
        } else {
            String::new()
        },
        h = c(host)
    );
    let _ = writeln!(
        w,
        "#   bus/{pf}  GPU models and memsize, links, routes (SimGrid v{} syntax)",
        c(&im.platform.version)
    );
    let _ = writeln!(
        w,
        "#   bus/{h}.bandwidth, .latency  measured matrices (MB/s, us), quoted at [[links]]",
        h = c(host)
    );
    if im.affinity.is_some() {
        let _ = writeln!(
            w,
            "#   bus/{h}.affinity        CPU cores nearest each GPU ([affinity])",
            h = c(host)
        );
    }
    for (h, n) in &im.files_per_host {
        let _ = writeln!(
            w,
            "#   codelets/45/*.{}  {n} files: kernel history per codelet and device ([[codelets]])",
            c(h)
        );
    }
    for n in &o.notes {
        let _ = writeln!(w, "# {}", c(n));
    }
    let _ = writeln!(
        w,
        "# StarPU's calibration data is (C) University of Bordeaux, CNRS (LaBRI UMR 5800), Inria,\n\
         # under the GNU LGPL version 2.1 or later (COPYING.starpu); this file is a derived work\n\
         # under the same licence.\n\
         #\n\
         # Figures are copied as written, with their units (SimGrid's Bps and s on links, us for\n\
         # kernel times, bytes for sizes), never recomputed."
    );
    let _ = writeln!(
        w,
        "# Left out: OpenCL devices (StarPU's OpenCL view of the same GPUs) and DISK nodes: hosts {},\n\
         # with {} links and {} routes of theirs; MAIN and the CPU hosts carry no links (cores are\n\
         # [[cpus]]). [runtime] is omitted: StarPU-SimGrid's defaults apply.",
        if dropped_hosts.is_empty() {
            "none".to_string()
        } else {
            dropped_hosts.join(", ")
        },
        dropped_links.len(),
        dropped_routes
    );
    let _ = writeln!(w);

    // [machine]
    let (model0, _) = gpu_model(0);
    let _ = writeln!(w, "[machine]\nname = {}", q(name));
    let _ = writeln!(
        w,
        "description = {}",
        q(&format!(
            "{} CPU cores, {}x {}; imported from StarPU's calibration of host {}",
            cfg.cpus, cfg.cuda, model0, host
        ))
    );
    let _ = writeln!(w);

    // Memory nodes.
    match (&o.ram, &o.ram_source) {
        (Some(_), Some(src)) => {
            let _ = writeln!(
                w,
                "# Host memory: StarPU's bus files do not record it; {}.",
                c(src)
            );
        }
        (Some(_), None) => {
            let _ = writeln!(
                w,
                "# Host memory: StarPU's bus files do not record it; given with --ram."
            );
        }
        (None, _) => {
            let _ = writeln!(
                w,
                "# Host memory: StarPU's bus files do not record it. {DEFAULT_RAM} is a \
                 PLACEHOLDER, not a\n# measurement (import with --ram to set it)."
            );
        }
    }
    let ram = o.ram.as_deref().unwrap_or(DEFAULT_RAM);
    let _ = writeln!(
        w,
        "[[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\ncapacity = {}\n",
        q(ram)
    );
    let _ = writeln!(
        w,
        "# GPU memories: the `memsize` property of each CUDA host of {pf}, in bytes."
    );
    for i in 0..cfg.cuda {
        let h = im.platform.host(&format!("CUDA{i}"));
        let mem = h.and_then(|h| h.props.get("memsize")).map_or("0", |m| m);
        let cap = mem
            .trim()
            .parse::<u64>()
            .map_or_else(|_| q(mem), |v| q(&format!("{v} B")));
        let _ = writeln!(
            w,
            "[[memory_nodes]]\nname = \"CUDA{i}\"\nkind = \"gpu\"\ncapacity = {cap}  # line {}\n",
            h.map_or(0, |h| h.line)
        );
    }

    // CPUs and GPUs.
    let _ = writeln!(
        w,
        "# {host}.config: \"{} # Number of CPUs\".{}",
        cfg.cpus,
        match &o.cpu_model {
            Some(_) =>
                " Processor model: given with --cpu-model (StarPU's files do not record it).",
            None => " StarPU's files do not record the processor model.",
        },
        host = c(host)
    );
    let _ = writeln!(
        w,
        "[[cpus]]\ncount = {}\nmodel = {}\nmemory = \"RAM\"\n",
        cfg.cpus,
        q(o.cpu_model.as_deref().unwrap_or("unknown"))
    );
    let _ = writeln!(
        w,
        "# {}.config: \"{} # Number of CUDA devices\"; models from the `model` property of {pf}.",
        c(host),
        cfg.cuda
    );
    for i in 0..cfg.cuda {
        let (m, from) = gpu_model(i);
        let note = match from {
            "option" => "  # no `model` property in the platform: given with --gpu-model",
            "none" => "  # no `model` property in the platform",
            _ => "",
        };
        let _ = writeln!(
            w,
            "[[gpus]]\nname = \"CUDA{i}\"\nmodel = {}{note}\nmemory = \"CUDA{i}\"\n",
            q(&m)
        );
    }

    // Links.
    let _ = writeln!(
        w,
        "# Links used by the routes between RAM and the GPUs, in {pf}'s order, with its figures.\n\
         # All are SimGrid SHARED links unless marked. PCI `through` links have twice the\n\
         # bandwidth of their bridge because StarPU models PCI hubs as full duplex.\n\
         # Measured, for comparison (rows of {h}.bandwidth in MB/s and {h}.latency in us; memory\n\
         # node 0 is RAM, node {} + i is CUDAi). The platform keeps the best measured bandwidth\n\
         # per direction and latencies to the microsecond.",
        cfg.numa,
        h = c(host)
    );
    let numa = cfg.numa as usize;
    for i in 0..cfg.cuda as usize {
        let g = numa + i;
        let cell = |m: &super::starpu_bus::Matrix, a: usize, b: usize| {
            m.text(a, b).unwrap_or("missing").to_string()
        };
        let _ = writeln!(
            w,
            "#   RAM->CUDA{i}: {} MB/s, {} us (line {});  CUDA{i}->RAM: {} MB/s, {} us (line {})",
            cell(&im.bandwidth, 0, g),
            cell(&im.latency, 0, g),
            im.bandwidth.lines.first().copied().unwrap_or(0),
            cell(&im.bandwidth, g, 0),
            cell(&im.latency, g, 0),
            im.bandwidth.lines.get(g).copied().unwrap_or(0),
        );
    }
    for l in &links {
        let _ = writeln!(
            w,
            "[[links]]\nname = {}  # line {}\nbandwidth = {}\nlatency = {}{}\n",
            q(&l.id),
            l.line,
            q(&l.bandwidth),
            q(&l.latency),
            if l.fatpipe {
                "\nsharing = \"fatpipe\"  # sharing_policy=\"FATPIPE\""
            } else {
                ""
            }
        );
    }

    // Routes.
    for i in 0..cfg.cuda {
        let g = format!("CUDA{i}");
        for (a, b) in [("RAM", g.as_str()), (g.as_str(), "RAM")] {
            if !routes.iter().any(|r| r.0 == a && r.1 == b) {
                return Err(InputError::new(format!(
                    "the platform has no route {a} -> {b}; every GPU needs a route from RAM and \
                     one back"
                ))
                .in_file(im.options.dir.join("bus").join(pf)));
            }
        }
    }
    let _ = writeln!(
        w,
        "# Routes, as in {pf} (symmetrical=\"NO\": each direction is listed). GPU-GPU routes cross\n\
         # `Host` twice when they go through the host bridge, as StarPU wrote them; GPU pairs\n\
         # without a route are staged through RAM by the runtime."
    );
    for (src, dst, links, line, generated) in &routes {
        let _ = writeln!(
            w,
            "[[routes]]  # line {line}{}\nsrc = {}\ndst = {}\nlinks = [",
            if *generated {
                " (the reverse of a symmetrical route)"
            } else {
                ""
            },
            q(src),
            q(dst)
        );
        for l in links {
            let _ = writeln!(w, "  {},", q(l));
        }
        let _ = writeln!(w, "]\n");
    }

    // Affinity.
    if let Some(a) = &im.affinity {
        let cores: Vec<Vec<u32>> = match a.unit {
            AffinityUnit::Cores => a.cuda.iter().map(|(_, v)| v.clone()).collect(),
            AffinityUnit::Numa if cfg.numa == 1 => {
                a.cuda.iter().map(|_| (0..cfg.cpus).collect()).collect()
            }
            AffinityUnit::Numa => Vec::new(),
        };
        if cores.is_empty() {
            let _ = writeln!(
                w,
                "# {}.affinity lists NUMA nodes, and the bus files do not say which cores each of\n\
                 # the {} NUMA nodes holds: no [affinity] written.\n",
                c(host),
                cfg.numa
            );
        } else {
            let _ = writeln!(
                w,
                "# {}.affinity: for each GPU, the CPU cores sorted by proximity (nearest first).{}",
                c(host),
                if a.unit == AffinityUnit::Numa {
                    "\n# The file lists NUMA nodes; with a single NUMA node every core is as near."
                } else {
                    ""
                }
            );
            let _ = writeln!(w, "[affinity]");
            for (i, (line, _)) in a.cuda.iter().enumerate() {
                let list: Vec<String> = cores[i].iter().map(u32::to_string).collect();
                let _ = writeln!(w, "CUDA{i} = [{}]  # line {line}", list.join(", "));
            }
            let _ = writeln!(w);
        }
    }

    // Codelets.
    let _ = writeln!(
        w,
        "# Kernel models: one [[codelets]] per codelet file, one model per device (StarPU's\n\
         # cpu0_impl0 is `cpu`, every core; cudaN_impl0 is `CUDAN`). Each history entry is a line\n\
         # of the file: size (bytes), mean and deviation (us), samples, flops. Where several\n\
         # footprints have the same size, the one with the most samples is kept (the others are\n\
         # listed in a comment). StarPU's NL regression a*size^b + c is kept when StarPU would use\n\
         # it (a, b, c not nan, n >= 10, minx < 0.9*maxx), on [0.9*minx, 1.1*maxx].{}",
        if im.empty_codelets.is_empty() {
            String::new()
        } else {
            format!(
                "\n# Files without any usable model (no combination, or only OpenCL/empty entries): {}.",
                c(&im.empty_codelets.join(", "))
            )
        }
    );
    for cl in &im.codelets {
        let f = &cl.file;
        let _ = writeln!(w);
        let _ = writeln!(w, "# {}", c(&f.file_name));
        if let Some(n) = &cl.note {
            let _ = writeln!(w, "# Note: {}", c(n));
        }
        if !f.skipped.is_empty() {
            let _ = writeln!(w, "# Skipped combinations: {}", c(&f.skipped.join(", ")));
        }
        let _ = writeln!(w, "[[codelets]]\nname = {}", q(&cl.name));
        let mut models: Vec<_> = f.models.iter().collect();
        models.sort_by_key(|m| m.device);
        for m in models {
            let regression = m.regression.as_ref().and_then(|r| {
                let lo = 0.9 * r.minx as f64;
                let hi = 1.1 * r.maxx as f64;
                match Regression::new(r.a.1 * 1e-6, r.b.1, r.c.1 * 1e-6, Some(lo), Some(hi)) {
                    Ok(_) => Some(format!(
                        "regression = {{ a = {}, b = {}, c = {}, min_size = {}, max_size = {} }}  # line {}, n = {}, minx = {}, maxx = {}",
                        q(&format!("{} us", r.a.0)),
                        toml_float(&r.b.0, r.b.1),
                        q(&format!("{} us", r.c.0)),
                        q(&format!("{lo:?} B")),
                        q(&format!("{hi:?} B")),
                        r.line,
                        r.samples,
                        r.minx,
                        r.maxx
                    )),
                    Err(e) => {
                        tracing::warn!(
                            "{}:line {}: NL regression not imported: {e}",
                            f.file_name,
                            r.line
                        );
                        None
                    }
                }
            });
            if m.entries.is_empty() && regression.is_none() {
                continue;
            }
            let _ = writeln!(
                w,
                "\n[[codelets.models]]\ndevice = {}  # {}, line {}",
                q(&device_name(m.device)),
                m.device.arch_name(),
                m.line
            );
            if !m.entries.is_empty() {
                let _ = writeln!(w, "history = [");
                for h in &m.entries {
                    let _ = writeln!(w, "  {}", history_entry(h));
                }
                let _ = writeln!(w, "]");
            }
            for (d, kept) in &m.dropped_duplicates {
                let _ = writeln!(
                    w,
                    "# dropped line {} (footprint {}, size {}, mean {} us, {} samples): same size as line {kept}, fewer samples",
                    d.line, d.footprint, d.size, d.mean_text, d.samples
                );
            }
            if !m.skipped_empty.is_empty() {
                let lines: Vec<String> = m.skipped_empty.iter().map(usize::to_string).collect();
                let _ = writeln!(
                    w,
                    "# skipped lines {} (no samples or a zero mean: StarPU ignores them)",
                    lines.join(", ")
                );
            }
            if let Some(r) = regression {
                let _ = writeln!(w, "{r}");
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_stay_as_written_when_toml_accepts_them() {
        assert_eq!(toml_float("1.769472e+09", 1.769472e9), "1.769472e+09");
        assert_eq!(toml_float("0.000000e+00", 0.0), "0.000000e+00");
        assert_eq!(toml_float("5.", 5.0), "5.0");
        assert_eq!(toml_float("1e5", 1e5), "1e5");
        assert_eq!(q("PCI:0000:[00-0f] up"), "\"PCI:0000:[00-0f] up\"");
    }
}
