//! Writing an [`Imported`] calibration as a hetsim machine file (`docs/machine-format.md`).
//!
//! The file is the reader's own schema, [`RawMachineFile`], filled from StarPU's figures and
//! serialised by [`RawMachineFile::to_document`]; the comments saying which file and line each
//! figure comes from are then attached to its tables and values as `toml_edit` decor. Every
//! figure keeps the text StarPU wrote, with its unit; the output is deterministic (same input,
//! same bytes).

use std::collections::BTreeSet;

use super::notes::{Notes, Place};
use super::starpu_bus::{AffinityUnit, Matrix};
use super::starpu_codelets::{ArchModel, HistoryLine, StarpuDevice};
use super::{DEFAULT_RAM, Imported, ImportedCodelet};
use hetsim_core::error::{Error, InputError};
use hetsim_core::units;
use hetsim_models::Regression;
use hetsim_platform::machine::format::{
    RawAffinity, RawCodelet, RawCpus, RawDeviceModel, RawGpu, RawHeader, RawHistoryEntry, RawLink,
    RawMachineFile, RawMemNode, RawModel, RawQuantity, RawRegression, RawRoute, unspanned,
};

/// The machine file for an import. Fails as bad input only if the platform lacks a route
/// between RAM and a GPU; any other failure is a bug of this writer.
pub fn machine_toml(im: &Imported) -> Result<String, Error> {
    let mut notes = Notes::default();
    let raw = machine_file(im, &mut notes)?;
    let mut doc = raw
        .to_document()
        .map_err(|e| Error::Internal(format!("cannot serialise the machine file: {e}")))?;
    notes.attach(&mut doc)?;
    Ok(doc.to_string())
}

// ---------------------------------------------------------------------------------------------
// The file's values, with the notes saying where they come from.

fn text(s: impl Into<String>) -> toml::Spanned<RawQuantity> {
    unspanned(RawQuantity::Text(s.into()))
}

fn name(s: impl Into<String>) -> toml::Spanned<String> {
    unspanned(s.into())
}

fn device_name(d: StarpuDevice) -> String {
    match d {
        StarpuDevice::Cpu => "cpu".to_string(),
        StarpuDevice::Cuda(i) => format!("CUDA{i}"),
    }
}

/// Memory nodes kept: RAM and the CUDA devices of the configuration.
fn kept_node(im: &Imported, id: &str) -> bool {
    id == "RAM"
        || id
            .strip_prefix("CUDA")
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n < im.config.cuda && format!("CUDA{n}") == id)
}

/// One route to write.
struct OutRoute {
    src: String,
    dst: String,
    links: Vec<String>,
    /// Line of the `<route>` element.
    line: usize,
    /// Made as the reverse of a symmetrical route.
    reversed: bool,
}

fn routes(im: &Imported) -> Vec<OutRoute> {
    let kept = |r: &super::starpu_platform::Route| {
        kept_node(im, &r.src) && kept_node(im, &r.dst) && r.src != r.dst
    };
    let mut out: Vec<OutRoute> = Vec::new();
    for r in im.platform.routes.iter().filter(|r| kept(r)) {
        out.push(OutRoute {
            src: r.src.clone(),
            dst: r.dst.clone(),
            links: r.links.clone(),
            line: r.line,
            reversed: false,
        });
    }
    for r in im
        .platform
        .routes
        .iter()
        .filter(|r| r.symmetrical && kept(r))
    {
        if !out.iter().any(|o| o.src == r.dst && o.dst == r.src) {
            out.push(OutRoute {
                src: r.dst.clone(),
                dst: r.src.clone(),
                links: r.links.iter().rev().cloned().collect(),
                line: r.line,
                reversed: true,
            });
        }
    }
    out
}

/// The links the routes cross.
fn used_links(routes: &[OutRoute]) -> BTreeSet<&str> {
    routes
        .iter()
        .flat_map(|r| r.links.iter().map(String::as_str))
        .collect()
}

/// The GPU model of CUDA device `i`, and a comment when the platform does not give it.
fn gpu_model(im: &Imported, i: u32) -> (String, Option<&'static str>) {
    let prop = im
        .platform
        .host(&format!("CUDA{i}"))
        .and_then(|h| h.props.get("model"));
    match (prop, &im.options.gpu_model) {
        (Some(m), _) => (m.clone(), None),
        (None, Some(m)) => (
            m.clone(),
            Some("no `model` property in the platform: given with --gpu-model"),
        ),
        (None, None) => (
            "unknown".to_string(),
            Some("no `model` property in the platform"),
        ),
    }
}

fn machine_file(im: &Imported, notes: &mut Notes) -> Result<RawMachineFile, InputError> {
    let cfg = &im.config;
    let routes = routes(im);
    for i in 0..cfg.cuda {
        let g = format!("CUDA{i}");
        for (a, b) in [("RAM", g.as_str()), (g.as_str(), "RAM")] {
            if !routes.iter().any(|r| r.src == a && r.dst == b) {
                return Err(InputError::new(format!(
                    "the platform has no route {a} -> {b}; every GPU needs a route from RAM and \
                     one back"
                ))
                .in_file(im.options.dir.join("bus").join(&im.platform_file)));
            }
        }
    }
    // The notes are taken in document order: a comment above a table that is not written
    // moves on to the next one.
    header(im, &routes, notes);
    let memory_nodes = memory_nodes(im, notes);
    let cpus = cpus(im, notes);
    let gpus = gpus(im, notes);
    let links = links(im, &routes, notes);
    let routes = out_routes(im, &routes, notes);
    let affinity = affinity(im, notes);
    let codelets = codelets(im, notes)?;
    Ok(RawMachineFile {
        machine: unspanned(RawHeader {
            name: name(im.name()),
            description: Some(format!(
                "{} CPU cores, {}x {}; imported from StarPU's calibration of host {}",
                cfg.cpus,
                cfg.cuda,
                gpu_model(im, 0).0,
                im.options.host
            )),
        }),
        memory_nodes,
        cpus,
        gpus,
        links,
        routes,
        runtime: None,
        perfmodels: None,
        codelets,
        affinity,
    })
}

/// The header's attribution and licence.
const LICENCE: [&str; 6] = [
    "StarPU's calibration data is (C) University of Bordeaux, CNRS (LaBRI UMR 5800), Inria,",
    "under the GNU LGPL version 2.1 or later (COPYING.starpu); this file is a derived work",
    "under the same licence.",
    "",
    "Figures are copied as written, with their units (SimGrid's Bps and s on links, us for",
    "kernel times, bytes for sizes), never recomputed.",
];

/// The header: what was read, the licence, what was left out.
fn header(im: &Imported, routes: &[OutRoute], notes: &mut Notes) {
    let o = &im.options;
    let host = &o.host;
    let cfg = &im.config;
    let pf = &im.platform_file;
    let used = used_links(routes);
    let dropped_links = im
        .platform
        .links
        .iter()
        .filter(|l| !used.contains(l.id.as_str()))
        .count();
    let dropped_hosts: Vec<&str> = im
        .platform
        .hosts
        .iter()
        .map(|h| h.id.as_str())
        .filter(|h| !kept_node(im, h) && *h != "MAIN" && !h.starts_with("CPU"))
        .collect();
    let reversed = routes.iter().filter(|r| r.reversed).count();
    let dropped_routes = im.platform.routes.len() + reversed - routes.len();

    let mut h = vec![
        format!(
            "{}: imported by `hetsim calibrate import-starpu` from StarPU's calibration files.",
            im.name()
        ),
        format!("  directory: {}", o.dir.display()),
        format!("  host:      {host}"),
        "Files read:".to_string(),
        format!(
            "  bus/{host}.config          device counts ({} CPUs, {} CUDA, {} OpenCL{})",
            cfg.cpus,
            cfg.cuda,
            cfg.opencl,
            if cfg.has_numa_line {
                format!(", {} NUMA nodes", cfg.numa)
            } else {
                String::new()
            }
        ),
        format!(
            "  bus/{pf}  GPU models and memsize, links, routes (SimGrid v{} syntax)",
            im.platform.version
        ),
        format!(
            "  bus/{host}.bandwidth, .latency  measured matrices (MB/s, us), quoted at [[links]]"
        ),
    ];
    if im.affinity.is_some() {
        h.push(format!(
            "  bus/{host}.affinity        CPU cores nearest each GPU ([affinity])"
        ));
    }
    for (host, n) in &im.files_per_host {
        h.push(format!(
            "  codelets/45/*.{host}  {n} files: kernel history per codelet and device ([[codelets]])"
        ));
    }
    h.extend(o.notes.iter().cloned());
    h.extend(LICENCE.iter().map(|l| l.to_string()));
    let dropped_hosts = if dropped_hosts.is_empty() {
        "none".to_string()
    } else {
        dropped_hosts.join(", ")
    };
    h.extend([
        format!(
            "Left out: OpenCL devices (StarPU's OpenCL view of the same GPUs) and DISK nodes: \
             hosts {dropped_hosts},"
        ),
        format!(
            "with {dropped_links} links and {dropped_routes} routes of theirs; MAIN and the CPU \
             hosts carry no links (cores are"
        ),
        "[[cpus]]). [runtime] is omitted: StarPU-SimGrid's defaults apply.".to_string(),
    ]);
    notes.header = h.join("\n");
}

/// RAM (its capacity is not in StarPU's files), then each GPU's memory.
fn memory_nodes(im: &Imported, notes: &mut Notes) -> Vec<toml::Spanned<RawMemNode>> {
    let o = &im.options;
    let place = Place::default().key("memory_nodes");
    notes.before(
        place.index(0),
        match (&o.ram, &o.ram_source) {
            (Some(_), Some(src)) => {
                format!("Host memory: StarPU's bus files do not record it; {src}.")
            }
            (Some(_), None) => {
                "Host memory: StarPU's bus files do not record it; given with --ram.".to_string()
            }
            (None, _) => [
                &format!(
                    "Host memory: StarPU's bus files do not record it. {DEFAULT_RAM} is a \
                     PLACEHOLDER, not a"
                ),
                "measurement (import with --ram to set it).",
            ]
            .join("\n"),
        },
    );
    let mut nodes = vec![unspanned(RawMemNode {
        name: name("RAM"),
        kind: name("ram"),
        capacity: text(o.ram.as_deref().unwrap_or(DEFAULT_RAM)),
    })];
    notes.before(
        place.index(1),
        format!(
            "GPU memories: the `memsize` property of each CUDA host of {}, in bytes.",
            im.platform_file
        ),
    );
    for i in 0..im.config.cuda {
        let h = im.platform.host(&format!("CUDA{i}"));
        let mem = h.and_then(|h| h.props.get("memsize")).map_or("0", |m| m);
        let capacity = mem
            .trim()
            .parse::<u64>()
            .map_or_else(|_| mem.to_string(), |v| format!("{v} B"));
        notes.after(
            place.index(nodes.len()).key("capacity"),
            format!("line {}", h.map_or(0, |h| h.line)),
        );
        nodes.push(unspanned(RawMemNode {
            name: name(format!("CUDA{i}")),
            kind: name("gpu"),
            capacity: text(capacity),
        }));
    }
    nodes
}

fn cpus(im: &Imported, notes: &mut Notes) -> Vec<toml::Spanned<RawCpus>> {
    let o = &im.options;
    notes.before(
        Place::default().key("cpus").index(0),
        format!(
            "{}.config: \"{} # Number of CPUs\".{}",
            o.host,
            im.config.cpus,
            match &o.cpu_model {
                Some(_) =>
                    " Processor model: given with --cpu-model (StarPU's files do not record it).",
                None => " StarPU's files do not record the processor model.",
            }
        ),
    );
    vec![unspanned(RawCpus {
        count: unspanned(i64::from(im.config.cpus)),
        model: o.cpu_model.clone().unwrap_or_else(|| "unknown".to_string()),
        memory: name("RAM"),
        flops_per_core: None,
    })]
}

fn gpus(im: &Imported, notes: &mut Notes) -> Vec<toml::Spanned<RawGpu>> {
    let gpus = Place::default().key("gpus");
    notes.before(
        gpus.index(0),
        format!(
            "{}.config: \"{} # Number of CUDA devices\"; models from the `model` property of {}.",
            im.options.host, im.config.cuda, im.platform_file
        ),
    );
    (0..im.config.cuda)
        .map(|i| {
            let (model, comment) = gpu_model(im, i);
            if let Some(c) = comment {
                notes.after(gpus.index(i as usize).key("model"), c);
            }
            unspanned(RawGpu {
                name: name(format!("CUDA{i}")),
                model,
                memory: name(format!("CUDA{i}")),
                peak_flops: None,
                memory_bandwidth: None,
            })
        })
        .collect()
}

/// The links crossed by the routes written, in the platform's order, with the measured
/// bandwidths and latencies quoted for comparison.
fn links(im: &Imported, routes: &[OutRoute], notes: &mut Notes) -> Vec<toml::Spanned<RawLink>> {
    let host = &im.options.host;
    let cfg = &im.config;
    let pf = &im.platform_file;
    let mut before = vec![
        format!(
            "Links used by the routes between RAM and the GPUs, in {pf}'s order, with its figures."
        ),
        "All are SimGrid SHARED links unless marked. PCI `through` links have twice the".into(),
        "bandwidth of their bridge because StarPU models PCI hubs as full duplex.".into(),
        format!(
            "Measured, for comparison (rows of {host}.bandwidth in MB/s and {host}.latency in us; \
             memory"
        ),
        format!(
            "node 0 is RAM, node {} + i is CUDAi). The platform keeps the best measured bandwidth",
            cfg.numa
        ),
        "per direction and latencies to the microsecond.".into(),
    ];
    let cell = |m: &Matrix, a: usize, b: usize| m.text(a, b).unwrap_or("missing").to_string();
    for i in 0..cfg.cuda as usize {
        let g = cfg.numa as usize + i;
        before.push(format!(
            "  RAM->CUDA{i}: {} MB/s, {} us (line {});  CUDA{i}->RAM: {} MB/s, {} us (line {})",
            cell(&im.bandwidth, 0, g),
            cell(&im.latency, 0, g),
            im.bandwidth.lines.first().copied().unwrap_or(0),
            cell(&im.bandwidth, g, 0),
            cell(&im.latency, g, 0),
            im.bandwidth.lines.get(g).copied().unwrap_or(0),
        ));
    }
    let links = Place::default().key("links");
    notes.before(links.index(0), before.join("\n"));
    let used = used_links(routes);
    im.platform
        .links
        .iter()
        .filter(|l| used.contains(l.id.as_str()))
        .enumerate()
        .map(|(i, l)| {
            notes.after(links.index(i).key("name"), format!("line {}", l.line));
            if l.fatpipe {
                notes.after(links.index(i).key("sharing"), "sharing_policy=\"FATPIPE\"");
            }
            unspanned(RawLink {
                name: name(&l.id),
                bandwidth: text(&l.bandwidth),
                latency: Some(text(&l.latency)),
                sharing: l.fatpipe.then(|| name("fatpipe")),
            })
        })
        .collect()
}

fn out_routes(
    im: &Imported,
    routes: &[OutRoute],
    notes: &mut Notes,
) -> Vec<toml::Spanned<RawRoute>> {
    let place = Place::default().key("routes");
    notes.before(
        place.index(0),
        [
            &format!(
                "Routes, as in {} (symmetrical=\"NO\": each direction is listed). GPU-GPU \
                 routes cross",
                im.platform_file
            ),
            "`Host` twice when they go through the host bridge, as StarPU wrote them; GPU pairs",
            "without a route are staged through RAM by the runtime.",
        ]
        .join("\n"),
    );
    routes
        .iter()
        .enumerate()
        .map(|(i, r)| {
            notes.header(
                place.index(i),
                format!(
                    "line {}{}",
                    r.line,
                    if r.reversed {
                        " (the reverse of a symmetrical route)"
                    } else {
                        ""
                    }
                ),
            );
            notes.one_per_line(place.index(i).key("links"), vec![None; r.links.len()]);
            unspanned(RawRoute {
                src: name(&r.src),
                dst: name(&r.dst),
                links: Some(unspanned(r.links.iter().map(name).collect())),
                symmetric: None,
                model: None,
                estimate: estimate(im, r),
            })
        })
        .collect()
}

/// A route's estimate: the bus benchmark's latency and bandwidth between its ends, which
/// StarPU's schedulers predict transfers with (`starpu_transfer_predict` reads the `.latency`
/// and `.bandwidth` matrices, not the platform's links). None where either cell is missing,
/// `nan` or not positive.
fn estimate(im: &Imported, r: &OutRoute) -> Option<toml::Spanned<RawModel>> {
    let node = |id: &str| match id {
        "RAM" => Some(0),
        _ => id
            .strip_prefix("CUDA")?
            .parse::<usize>()
            .ok()
            .map(|i| im.config.numa as usize + i),
    };
    let (a, b) = (node(&r.src)?, node(&r.dst)?);
    im.bandwidth.get(a, b).filter(|v| *v > 0.0)?;
    im.latency.get(a, b).filter(|v| *v >= 0.0)?;
    let latency = format!("{} us", im.latency.text(a, b)?);
    let bandwidth = format!("{} MB/s", im.bandwidth.text(a, b)?);
    // Written only if a machine file can hold it (the quantity ranges its reader checks).
    if let Err(e) = units::parse_secs(&latency).and(units::parse_bytes_per_sec(&bandwidth)) {
        tracing::warn!(
            "{} -> {}: bus benchmark figures not written as the route's estimate (its links \
             give it): {e}",
            r.src,
            r.dst
        );
        return None;
    }
    Some(unspanned(RawModel {
        kind: name("affine"),
        latency: Some(text(latency)),
        bandwidth: Some(text(bandwidth)),
        points: None,
        b0: None,
        t0: None,
    }))
}

/// `[affinity]`: for each GPU, the cores nearest first; none when the file lists NUMA nodes of
/// a machine with several (the bus files do not say which cores each holds).
fn affinity(im: &Imported, notes: &mut Notes) -> Option<toml::Spanned<RawAffinity>> {
    let a = im.affinity.as_ref()?;
    let cfg = &im.config;
    let host = &im.options.host;
    let place = Place::default().key("affinity");
    let cores: Vec<Vec<u32>> = match a.unit {
        AffinityUnit::Cores => a.cuda.iter().map(|(_, v)| v.clone()).collect(),
        AffinityUnit::Numa if cfg.numa == 1 => {
            a.cuda.iter().map(|_| (0..cfg.cpus).collect()).collect()
        }
        AffinityUnit::Numa => {
            notes.before(
                place,
                format!(
                    "{host}.affinity lists NUMA nodes, and the bus files do not say which cores \
                     each of\nthe {} NUMA nodes holds: no [affinity] written.",
                    cfg.numa
                ),
            );
            return None;
        }
    };
    notes.before(
        place.clone(),
        format!(
            "{host}.affinity: for each GPU, the CPU cores sorted by proximity (nearest first).{}",
            if a.unit == AffinityUnit::Numa {
                "\nThe file lists NUMA nodes; with a single NUMA node every core is as near."
            } else {
                ""
            }
        ),
    );
    let mut table = RawAffinity::new();
    for (i, ((line, _), cores)) in a.cuda.iter().zip(cores).enumerate() {
        let gpu = format!("CUDA{i}");
        notes.after(place.key(&gpu), format!("line {line}"));
        let cores = cores.into_iter().map(|c| unspanned(i64::from(c))).collect();
        table.insert(gpu, unspanned(cores));
    }
    Some(unspanned(table))
}

/// The comment above the kernel models: how StarPU's files become them.
const KERNEL_MODELS: [&str; 6] = [
    "Kernel models: one [[codelets]] per codelet file, one model per device (StarPU's",
    "cpu0_impl0 is `cpu`, every core; cudaN_impl0 is `CUDAN`). Each history entry is a line",
    "of the file: size (bytes), mean and deviation (us), samples, flops. Where several",
    "footprints have the same size, the one with the most samples is kept (the others are",
    "listed in a comment). StarPU's NL regression a*size^b + c is kept when StarPU would use",
    "it (a, b, c not nan, n >= 10, minx < 0.9*maxx), on [0.9*minx, 1.1*maxx].",
];

/// One `[[codelets]]` per codelet file, one `[[codelets.models]]` per device.
fn codelets(
    im: &Imported,
    notes: &mut Notes,
) -> Result<Vec<toml::Spanned<RawCodelet>>, InputError> {
    let mut kernel = KERNEL_MODELS.map(String::from).to_vec();
    if !im.empty_codelets.is_empty() {
        kernel.push(format!(
            "Files without any usable model (no combination, or only OpenCL/empty entries): {}.",
            im.empty_codelets.join(", ")
        ));
    }
    let place = Place::default().key("codelets");
    notes.before(place.index(0), kernel.join("\n"));
    im.codelets
        .iter()
        .enumerate()
        .map(|(i, cl)| codelet(im, cl, place.index(i), notes))
        .collect()
}

fn codelet(
    im: &Imported,
    cl: &ImportedCodelet,
    place: Place,
    notes: &mut Notes,
) -> Result<toml::Spanned<RawCodelet>, InputError> {
    let f = &cl.file;
    let mut before = f.file_name.clone();
    if let Some(n) = &cl.note {
        before.push_str(&format!("\nNote: {n}"));
    }
    if !f.skipped.is_empty() {
        before.push_str(&format!("\nSkipped combinations: {}", f.skipped.join(", ")));
    }
    notes.before(place.clone(), before);
    let mut sorted: Vec<&ArchModel> = f.models.iter().collect();
    sorted.sort_by_key(|m| m.device);
    let mut models = Vec::new();
    for m in sorted {
        let at = place.key("models").index(models.len());
        if let Some(model) = device_model(im, &f.file_name, m, at, notes)? {
            models.push(unspanned(model));
        }
    }
    Ok(unspanned(RawCodelet {
        name: name(&cl.name),
        noise: None,
        models,
    }))
}

/// The model of one device, placed at `at`; none when it has neither history nor a regression
/// StarPU would use.
fn device_model(
    im: &Imported,
    file_name: &str,
    m: &ArchModel,
    at: Place,
    notes: &mut Notes,
) -> Result<Option<RawDeviceModel>, InputError> {
    let regression = m.regression.as_ref().and_then(|r| {
        let lo = 0.9 * r.minx as f64;
        let hi = 1.1 * r.maxx as f64;
        match Regression::new(r.a.1 * 1e-6, r.b.1, r.c.1 * 1e-6, Some(lo), Some(hi)) {
            Ok(_) => Some((r, lo, hi)),
            Err(e) => {
                tracing::warn!(
                    "{file_name}:line {}: NL regression not imported: {e}",
                    r.line
                );
                None
            }
        }
    });
    if m.entries.is_empty() && regression.is_none() {
        return Ok(None);
    }
    notes.after(
        at.key("device"),
        format!("{}, line {}", m.device.arch_name(), m.line),
    );
    let mut after = Vec::new();
    for (d, kept) in &m.dropped_duplicates {
        after.push(format!(
            "dropped line {} (footprint {}, size {}, mean {} us, {} samples): same size as line \
             {kept}, fewer samples",
            d.line, d.footprint, d.size, d.mean_text, d.samples
        ));
    }
    if !m.skipped_empty.is_empty() {
        let lines: Vec<String> = m.skipped_empty.iter().map(usize::to_string).collect();
        after.push(format!(
            "skipped lines {} (no samples or a zero mean: StarPU ignores them)",
            lines.join(", ")
        ));
    }
    if !after.is_empty() {
        // Below the last value written so far: the history, else the device.
        let last = if m.entries.is_empty() {
            "device"
        } else {
            "history"
        };
        notes.lines_after(at.key(last), after.join("\n"));
    }
    let history = if m.entries.is_empty() {
        None
    } else {
        let entries = at.key("history");
        notes.one_per_line(
            entries.clone(),
            m.entries
                .iter()
                .map(|h| Some(format!("line {}, footprint {}", h.line, h.footprint)))
                .collect(),
        );
        let mut list = Vec::new();
        for (k, h) in m.entries.iter().enumerate() {
            if has_flops(h) {
                notes.float_text(entries.index(k).key("flops"), &h.flops_text);
            }
            let file = im.options.dir.join("codelets/45").join(file_name);
            list.push(unspanned(history_entry(h).map_err(|e| e.in_file(file))?));
        }
        Some(unspanned(list))
    };
    let regression = regression.map(|(r, lo, hi)| {
        notes.after(
            at.key("regression"),
            format!(
                "line {}, n = {}, minx = {}, maxx = {}",
                r.line, r.samples, r.minx, r.maxx
            ),
        );
        notes.float_text(at.key("regression").key("b"), &r.b.0);
        unspanned(RawRegression {
            a: Some(text(format!("{} us", r.a.0))),
            b: Some(unspanned(r.b.1)),
            c: Some(text(format!("{} us", r.c.0))),
            min_size: Some(text(format!("{lo:?} B"))),
            max_size: Some(text(format!("{hi:?} B"))),
        })
    });
    Ok(Some(RawDeviceModel {
        device: name(device_name(m.device)),
        history,
        regression,
        flop_rate: None,
        rel_stddev: None,
    }))
}

/// StarPU writes `nan` when it did not count the flops: then the entry has none.
fn has_flops(h: &HistoryLine) -> bool {
    h.flops.is_finite() && h.flops >= 0.0
}

/// A history line as an entry; fails (its file still to be named) on a sample count beyond
/// TOML's integers.
fn history_entry(h: &HistoryLine) -> Result<RawHistoryEntry, InputError> {
    let samples = i64::try_from(h.samples).map_err(|_| {
        InputError::new(format!(
            "history column `n`: {} samples is more than a machine file holds (at most {})",
            h.samples,
            i64::MAX
        ))
        .at_line(h.line)
    })?;
    Ok(RawHistoryEntry {
        size: text(format!("{} B", h.size)),
        mean: text(format!("{} us", h.mean_text)),
        stddev: Some(text(format!("{} us", h.dev_text))),
        samples: Some(unspanned(samples)),
        flops: has_flops(h).then(|| unspanned(h.flops)),
    })
}
