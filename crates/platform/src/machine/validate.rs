//! From the raw TOML structures to a checked [`Machine`]. Every check reports the file, the line
//! of the offending value (from its span) and its field path.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::format::{
    self, RawCodelet, RawCodeletsFile, RawDeviceModel, RawMachineFile, RawModel, RawNoise,
    RawPerfModels, RawQuantity, RawRuntime, char_floor,
};
use super::{
    CpuGroup, Direction, Gpu, GpuId, Hop, Link, LinkPolicy, Machine, MachineLinkId, MemKind,
    MemNode, MemNodeId, Route, RuntimeConfig, TransferModel,
};
use hetsim_core::error::{InputError, line_of_offset, read_input};
use hetsim_core::files::{FileRole, InputFiles, RoleFile};
use hetsim_core::units::Kind;
use hetsim_models::{
    DeviceKind, DeviceModel, DeviceSelector, Histogram, History, HistoryEntry, Noise, ParamError,
    PerfModels, Regression, history::MAX_EXACT_SIZE,
};

/// Upper bounds that keep ids in `u32` and catch typos such as `count = 1200000`.
const MAX_ITEMS: usize = 1 << 20;
/// Largest pipeline depth or pending-request limit accepted in `[runtime]`.
const MAX_COUNT: i64 = 1024;

/// A file being read: its text and path, to locate errors (file, line, field). Shared with the
/// cluster-file reader.
pub(crate) struct Ctx<'a> {
    pub(crate) text: &'a str,
    pub(crate) file: &'a Path,
}

impl Ctx<'_> {
    /// An error at `span` of the text, on `field`.
    pub(crate) fn err(
        &self,
        span: Range<usize>,
        field: impl Into<String>,
        msg: impl Into<String>,
    ) -> InputError {
        InputError::new(msg)
            .in_file(self.file)
            .at_line(line_of_offset(self.text, span.start))
            .at_field(field)
    }

    /// A quantity of `kind`, non-negative and finite.
    pub(crate) fn quantity(
        &self,
        q: &Spanned<RawQuantity>,
        kind: Kind,
        field: &str,
    ) -> Result<f64, InputError> {
        self.any_quantity(q, kind, field, false)
    }

    /// A quantity of `kind` in a field named after its unit (`bytes`): a bare number is read in
    /// base units.
    pub(crate) fn quantity_base(
        &self,
        q: &Spanned<RawQuantity>,
        kind: Kind,
        field: &str,
    ) -> Result<f64, InputError> {
        q.get_ref()
            .read_base(kind)
            .map_err(|e| self.err(q.span(), field, e.message))
    }

    /// A quantity of `kind` that may be negative (finite).
    fn quantity_signed(
        &self,
        q: &Spanned<RawQuantity>,
        kind: Kind,
        field: &str,
    ) -> Result<f64, InputError> {
        self.any_quantity(q, kind, field, true)
    }

    fn any_quantity(
        &self,
        q: &Spanned<RawQuantity>,
        kind: Kind,
        field: &str,
        signed: bool,
    ) -> Result<f64, InputError> {
        let r = if signed {
            q.get_ref().read_signed(kind)
        } else {
            q.get_ref().read(kind)
        };
        r.map_err(|e| self.err(q.span(), field, e.message))
    }

    /// A plain number (no unit), finite.
    fn finite(&self, v: &Spanned<f64>, field: &str) -> Result<f64, InputError> {
        let x = *v.get_ref();
        if !x.is_finite() {
            return Err(self.err(
                v.span(),
                field,
                format!("expected a finite number, found {x}"),
            ));
        }
        Ok(x)
    }

    /// A finite number that must not be negative: "expected a non-negative {what}, found ...".
    fn non_negative(&self, v: &Spanned<f64>, field: &str, what: &str) -> Result<f64, InputError> {
        let x = self.finite(v, field)?;
        if x < 0.0 {
            return Err(self.err(
                v.span(),
                field,
                format!("expected a non-negative {what}, found {x}"),
            ));
        }
        Ok(x)
    }

    /// The name `raw`, trimmed, for a new entry of a list whose names must be unique (memory
    /// nodes, GPUs, codelets): refused with `empty` when blank, and with the message
    /// `duplicate(name, earlier)` when `seen` already holds it.
    fn new_name<V>(
        &self,
        raw: &Spanned<String>,
        field: String,
        empty: &str,
        seen: &HashMap<String, V>,
        duplicate: impl FnOnce(&str, &V) -> String,
    ) -> Result<String, InputError> {
        self.non_empty(raw, &field, empty)?;
        let name = raw.get_ref().trim().to_string();
        if let Some(prev) = seen.get(&name) {
            return Err(self.err(raw.span(), field, duplicate(&name, prev)));
        }
        Ok(name)
    }

    /// Refuse a blank name with the message `empty`.
    fn non_empty(&self, raw: &Spanned<String>, field: &str, empty: &str) -> Result<(), InputError> {
        if raw.get_ref().trim().is_empty() {
            return Err(self.err(raw.span(), field, empty));
        }
        Ok(())
    }

    /// A bandwidth that must be positive: zero gets its own message, because a zero-bandwidth
    /// link or model makes every transfer on its routes last forever. `link` names the link, or
    /// is `None` for a route's transfer model.
    fn bandwidth(
        &self,
        q: &Spanned<RawQuantity>,
        field: &str,
        link: Option<&str>,
    ) -> Result<f64, InputError> {
        let v = self.quantity(q, Kind::BytesPerSec, field)?;
        if v == 0.0 {
            let what = match link {
                Some(name) => format!(
                    "zero bandwidth on link `{name}`: every route through it would be a \
                     zero-bandwidth route, on which no transfer can finish"
                ),
                None => "zero-bandwidth route: with this transfer model no transfer on the route \
                         could finish"
                    .to_string(),
            };
            return Err(self.err(
                q.span(),
                field,
                format!(
                    "{what}; expected {}, greater than zero",
                    Kind::BytesPerSec.expectation()
                ),
            ));
        }
        Ok(v)
    }

    /// An optional positive rate (flop/s or B/s): zero would mean "cannot compute", which is
    /// better said by leaving the device out.
    fn positive_opt(
        &self,
        q: &Option<Spanned<RawQuantity>>,
        kind: Kind,
        field: &str,
    ) -> Result<Option<f64>, InputError> {
        let Some(q) = q else { return Ok(None) };
        let v = self.quantity(q, kind, field)?;
        if v == 0.0 {
            return Err(self.err(
                q.span(),
                field,
                format!(
                    "expected {}, greater than zero (or leave the field out)",
                    kind.expectation()
                ),
            ));
        }
        Ok(Some(v))
    }
}

/// Turn a serde/TOML error into an [`InputError`] with the line and, when the document is at
/// least syntactically valid TOML, the field path of the spot it points at.
pub(crate) fn toml_error(ctx: &Ctx<'_>, e: &toml::de::Error) -> InputError {
    let mut err = InputError::new(e.message().trim().to_string()).in_file(ctx.file);
    if let Some(span) = e.span() {
        err = err.at_line(line_of_offset(ctx.text, span.start));
        if let Some(path) = format::field_path_at(ctx.text, span.start) {
            err = err.at_field(path);
        } else if let Some(key) = key_on_line(ctx.text, span.start) {
            // A syntax error: the tree is unavailable, but the key written on that line (with
            // the table header above it) still tells the user where to look.
            err = err.at_field(key);
        }
    }
    err
}

/// For a syntax error at `offset`: `header.key` from the text itself, where `header` is the last
/// `[table]` or `[[array]]` header above the line and `key` the bare key starting the line.
fn key_on_line(text: &str, offset: usize) -> Option<String> {
    let offset = char_floor(text, offset);
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = line
        .split('=')
        .next()
        .map(str::trim)
        .filter(|k| line.contains('=') && !k.is_empty() && !k.starts_with('['))
        .map(|k| k.trim_matches('"').to_string());
    let header = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let header_of_line = line.trim().starts_with('[').then(|| {
        line.trim()
            .trim_matches(|c| c == '[' || c == ']')
            .trim()
            .to_string()
    });
    match (header_of_line, header, key) {
        (Some(h), _, _) => Some(h),
        (None, Some(h), Some(k)) => Some(format!("{h}.{k}")),
        (None, None, Some(k)) => Some(k),
        (None, Some(h), None) => Some(h),
        (None, None, None) => None,
    }
}

pub(super) fn parse_and_validate(text: &str, file: &Path) -> Result<Machine, InputError> {
    let ctx = Ctx { text, file };
    let raw: RawMachineFile = toml::from_str(text).map_err(|e| toml_error(&ctx, &e))?;
    validate(&ctx, raw)
}

fn check_count(ctx: &Ctx<'_>, n: usize, span: Range<usize>, field: &str) -> Result<(), InputError> {
    if n > MAX_ITEMS {
        return Err(ctx.err(
            span,
            field,
            format!("too many entries ({n}); at most {MAX_ITEMS}"),
        ));
    }
    Ok(())
}

/// Names as a short list for messages ("`RAM`, `CUDA0`, ... (40 in all)").
fn known_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let all: Vec<&str> = names.collect();
    if all.is_empty() {
        return "none are defined".to_string();
    }
    let shown: Vec<String> = all.iter().take(8).map(|n| format!("`{n}`")).collect();
    if all.len() > 8 {
        format!("{}, ... ({} in all)", shown.join(", "), all.len())
    } else {
        shown.join(", ")
    }
}

fn validate(ctx: &Ctx<'_>, raw: RawMachineFile) -> Result<Machine, InputError> {
    let whole = 0..ctx.text.len();

    // [machine]
    let header = raw.machine.into_inner();
    let name = header.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(ctx.err(
            header.name.span(),
            "machine.name",
            "expected a non-empty machine name",
        ));
    }

    // [[memory_nodes]]
    check_count(ctx, raw.memory_nodes.len(), whole.clone(), "memory_nodes")?;
    let mut memory_nodes: Vec<MemNode> = Vec::new();
    let mut mem_by_name: HashMap<String, MemNodeId> = HashMap::new();
    let mut mem_spans: Vec<Range<usize>> = Vec::new();
    for (i, m) in raw.memory_nodes.iter().enumerate() {
        let m = m.get_ref();
        let field = |f: &str| format!("memory_nodes[{i}].{f}");
        let node_name = ctx.new_name(
            &m.name,
            field("name"),
            "expected a non-empty memory node name",
            &mem_by_name,
            |name, prev| {
                format!(
                    "duplicate memory node name `{name}` (already used by memory_nodes[{}]); \
                     expected each memory node to have its own name",
                    prev.0
                )
            },
        )?;
        let kind = match m.kind.get_ref().as_str() {
            "ram" => MemKind::Ram,
            "gpu" => MemKind::Gpu,
            other => {
                return Err(ctx.err(
                    m.kind.span(),
                    field("kind"),
                    format!("unknown memory node kind {other:?}; expected \"ram\" or \"gpu\""),
                ));
            }
        };
        let cap = ctx.quantity(&m.capacity, Kind::Bytes, &field("capacity"))?;
        // u64::MAX as f64 rounds up to 2^64, so `>=` keeps the cast below exact-or-smaller.
        if cap < 1.0 || cap >= u64::MAX as f64 {
            return Err(ctx.err(
                m.capacity.span(),
                field("capacity"),
                format!(
                    "expected {}, at least 1 byte and below 16 EiB, found {cap}",
                    Kind::Bytes.expectation()
                ),
            ));
        }
        let id = MemNodeId(i as u32);
        mem_by_name.insert(node_name.clone(), id);
        mem_spans.push(m.name.span());
        memory_nodes.push(MemNode {
            id,
            name: node_name,
            kind,
            capacity_bytes: cap.round() as u64,
        });
    }
    if !memory_nodes.iter().any(|m| m.kind == MemKind::Ram) {
        let span = raw.memory_nodes.first().map_or(0..0, |m| m.span());
        return Err(ctx.err(
            span,
            "memory_nodes",
            "no memory node of kind \"ram\"; expected at least one (host memory)",
        ));
    }
    let mem_names = || memory_nodes.iter().map(|m| m.name.as_str());
    let lookup_mem = |s: &Spanned<String>, field: String| -> Result<MemNodeId, InputError> {
        mem_by_name.get(s.get_ref().trim()).copied().ok_or_else(|| {
            ctx.err(
                s.span(),
                field,
                format!(
                    "unknown memory node `{}`; expected one of the names in [[memory_nodes]]: {}",
                    s.get_ref(),
                    known_list(mem_names())
                ),
            )
        })
    };

    // [[cpus]]
    check_count(ctx, raw.cpus.len(), whole.clone(), "cpus")?;
    let mut cpus = Vec::new();
    let mut total_cores: u64 = 0;
    for (i, c) in raw.cpus.iter().enumerate() {
        let c = c.get_ref();
        let field = |f: &str| format!("cpus[{i}].{f}");
        let count = *c.count.get_ref();
        if count < 1 || count > MAX_ITEMS as i64 {
            return Err(ctx.err(
                c.count.span(),
                field("count"),
                format!("expected a number of cores between 1 and {MAX_ITEMS}, found {count}"),
            ));
        }
        let memory = lookup_mem(&c.memory, field("memory"))?;
        if memory_nodes[memory.index()].kind != MemKind::Ram {
            return Err(ctx.err(
                c.memory.span(),
                field("memory"),
                format!(
                    "CPU cores must work in a memory node of kind \"ram\", but `{}` is a GPU memory",
                    c.memory.get_ref()
                ),
            ));
        }
        let flops = ctx.positive_opt(
            &c.flops_per_core,
            Kind::FlopsPerSec,
            &field("flops_per_core"),
        )?;
        total_cores += count as u64;
        cpus.push(CpuGroup {
            model: c.model.clone(),
            count: count as u32,
            memory,
            flops_per_sec_per_core: flops,
        });
    }
    if total_cores > MAX_ITEMS as u64 {
        return Err(ctx.err(
            whole.clone(),
            "cpus",
            format!("too many CPU cores in all ({total_cores}); at most {MAX_ITEMS}"),
        ));
    }

    // [[gpus]]
    check_count(ctx, raw.gpus.len(), whole.clone(), "gpus")?;
    let mut gpus: Vec<Gpu> = Vec::new();
    let mut gpu_by_name: HashMap<String, usize> = HashMap::new();
    let mut gpu_of_mem: HashMap<MemNodeId, usize> = HashMap::new();
    for (i, g) in raw.gpus.iter().enumerate() {
        let g = g.get_ref();
        let field = |f: &str| format!("gpus[{i}].{f}");
        let gpu_name = ctx.new_name(
            &g.name,
            field("name"),
            "expected a non-empty GPU name",
            &gpu_by_name,
            |name, prev| format!("duplicate GPU name `{name}` (already used by gpus[{prev}])"),
        )?;
        let memory = lookup_mem(&g.memory, field("memory"))?;
        if memory_nodes[memory.index()].kind != MemKind::Gpu {
            return Err(ctx.err(
                g.memory.span(),
                field("memory"),
                format!(
                    "GPU `{gpu_name}` is on memory node `{}`, which is of kind \"ram\"; expected a \
                     memory node of kind \"gpu\" (its device memory)",
                    g.memory.get_ref()
                ),
            ));
        }
        if let Some(prev) = gpu_of_mem.get(&memory) {
            return Err(ctx.err(
                g.memory.span(),
                field("memory"),
                format!(
                    "memory node `{}` already belongs to gpus[{prev}]; expected one memory node \
                     per GPU",
                    g.memory.get_ref()
                ),
            ));
        }
        let peak = ctx.positive_opt(&g.peak_flops, Kind::FlopsPerSec, &field("peak_flops"))?;
        let mem_bw = ctx.positive_opt(
            &g.memory_bandwidth,
            Kind::BytesPerSec,
            &field("memory_bandwidth"),
        )?;
        gpu_by_name.insert(gpu_name.clone(), i);
        gpu_of_mem.insert(memory, i);
        gpus.push(Gpu {
            id: GpuId(i as u32),
            name: gpu_name,
            model: g.model.clone(),
            memory,
            peak_flops_per_sec: peak,
            memory_bandwidth_bytes_per_sec: mem_bw,
        });
    }

    // [[links]]
    check_count(ctx, raw.links.len(), whole.clone(), "links")?;
    let mut links: Vec<Link> = Vec::new();
    // Every name a route may use: plain links by name, split-duplex halves by NAME_UP/NAME_DOWN.
    let mut route_names: HashMap<String, (Hop, usize)> = HashMap::new();
    let mut base_names: HashMap<String, usize> = HashMap::new();
    for (i, l) in raw.links.iter().enumerate() {
        let l = l.get_ref();
        let field = |f: &str| format!("links[{i}].{f}");
        // Link names are kept exactly as written: StarPU's contain spaces ("PCI:0000:02:00.0 up").
        let link_name = l.name.get_ref().clone();
        ctx.non_empty(&l.name, &field("name"), "expected a non-empty link name")?;
        let sharing = match &l.sharing {
            None => LinkPolicy::Shared,
            Some(s) => match s.get_ref().as_str() {
                "shared" => LinkPolicy::Shared,
                "fatpipe" => LinkPolicy::Fatpipe,
                "split-duplex" => LinkPolicy::SplitDuplex,
                other => {
                    return Err(ctx.err(
                        s.span(),
                        field("sharing"),
                        format!(
                            "unknown sharing policy {other:?}; expected \"shared\", \"fatpipe\" \
                             or \"split-duplex\""
                        ),
                    ));
                }
            },
        };
        let bw = ctx.bandwidth(&l.bandwidth, &field("bandwidth"), Some(&link_name))?;
        let latency = match &l.latency {
            Some(q) => ctx.quantity(q, Kind::Seconds, &field("latency"))?,
            None => 0.0,
        };
        let id = MachineLinkId(i as u32);
        let names: Vec<(String, Option<Direction>)> = match sharing {
            LinkPolicy::SplitDuplex => vec![
                (format!("{link_name}_UP"), Some(Direction::Up)),
                (format!("{link_name}_DOWN"), Some(Direction::Down)),
            ],
            _ => vec![(link_name.clone(), None)],
        };
        let dup = base_names.get(&link_name).copied().or_else(|| {
            names
                .iter()
                .find_map(|(n, _)| route_names.get(n).map(|(_, j)| *j))
        });
        if let Some(prev) = dup {
            return Err(ctx.err(
                l.name.span(),
                field("name"),
                format!(
                    "duplicate link name `{link_name}` (clashes with links[{prev}]; a \
                     split-duplex link `x` also takes the names `x_UP` and `x_DOWN`); expected \
                     each link to have its own name"
                ),
            ));
        }
        base_names.insert(link_name.clone(), i);
        for (n, direction) in names {
            route_names.insert(
                n,
                (
                    Hop {
                        link: id,
                        direction,
                    },
                    i,
                ),
            );
        }
        links.push(Link {
            id,
            name: link_name,
            bandwidth_bytes_per_sec: bw,
            latency_s: latency,
            sharing,
        });
    }

    // [[routes]]
    check_count(ctx, raw.routes.len(), whole.clone(), "routes")?;
    let mut routes: Vec<Route> = Vec::new();
    let mut route_index: BTreeMap<(MemNodeId, MemNodeId), usize> = BTreeMap::new();
    // Where each (src, dst) pair was defined, for duplicate messages.
    let mut route_origin: HashMap<(MemNodeId, MemNodeId), String> = HashMap::new();
    for (i, r) in raw.routes.iter().enumerate() {
        let r_span = r.span();
        let r = r.get_ref();
        let field = |f: &str| format!("routes[{i}].{f}");
        let src = lookup_mem(&r.src, field("src"))?;
        let dst = lookup_mem(&r.dst, field("dst"))?;
        if src == dst {
            return Err(ctx.err(
                r.dst.span(),
                field("dst"),
                format!(
                    "route from `{}` to itself; expected two different memory nodes",
                    r.src.get_ref()
                ),
            ));
        }
        let mut hops = Vec::new();
        if let Some(list) = &r.links {
            for (k, name) in list.get_ref().iter().enumerate() {
                let lf = format!("routes[{i}].links[{k}]");
                match route_names.get(name.get_ref()) {
                    Some((hop, _)) => hops.push(*hop),
                    None => {
                        let msg = match base_names.get(name.get_ref()) {
                            Some(_) => format!(
                                "link `{0}` is split-duplex: a route must say which direction it \
                                 uses, as `{0}_UP` or `{0}_DOWN`",
                                name.get_ref()
                            ),
                            None => format!(
                                "unknown link `{}` in route {} → {}; expected the name of a link \
                                 defined in [[links]]: {}",
                                name.get_ref(),
                                r.src.get_ref(),
                                r.dst.get_ref(),
                                known_list(links.iter().map(|l| l.name.as_str()))
                            ),
                        };
                        return Err(ctx.err(name.span(), lf, msg));
                    }
                }
            }
        }
        let estimate = match &r.estimate {
            Some(m) => match model(ctx, m, &field("estimate"))? {
                TransferModel::Affine(a) => Some(a),
                _ => {
                    return Err(ctx.err(
                        m.get_ref().kind.span(),
                        field("estimate.kind"),
                        "a route's estimate is what the schedulers predict from a latency and a \
                         bandwidth; expected kind = \"affine\""
                            .to_string(),
                    ));
                }
            },
            None => None,
        };
        let model = match &r.model {
            Some(m) => Some(model(ctx, m, &field("model"))?),
            None => None,
        };
        if hops.is_empty() && model.is_none() {
            let span = r.links.as_ref().map_or(r_span.clone(), |l| l.span());
            return Err(ctx.err(
                span,
                field("links"),
                format!(
                    "route {} → {} has no links and no model; expected a non-empty list of link \
                     names, a `model`, or both",
                    r.src.get_ref(),
                    r.dst.get_ref()
                ),
            ));
        }
        let symmetric = r.symmetric.as_ref().is_some_and(|s| *s.get_ref());
        let mut add = |route: Route, origin: String, span: Range<usize>, f: String| {
            let key = (route.src, route.dst);
            if let Some(prev) = route_origin.get(&key) {
                return Err(ctx.err(
                    span,
                    f,
                    format!(
                        "duplicate route {} → {} (already defined by {prev}); expected one route \
                         per ordered pair of memory nodes",
                        memory_nodes[key.0.index()].name,
                        memory_nodes[key.1.index()].name
                    ),
                ));
            }
            route_origin.insert(key, origin);
            route_index.insert(key, routes.len());
            routes.push(route);
            Ok(())
        };
        let reverse = symmetric.then(|| Route {
            src: dst,
            dst: src,
            hops: hops
                .iter()
                .rev()
                .map(|h| Hop {
                    link: h.link,
                    direction: h.direction.map(Direction::reversed),
                })
                .collect(),
            model: model.clone(),
            // The estimate is one direction's measurement.
            estimate: None,
            generated_by_symmetry: true,
        });
        add(
            Route {
                src,
                dst,
                hops,
                model,
                estimate,
                generated_by_symmetry: false,
            },
            format!("routes[{i}]"),
            r.src.span(),
            field("src"),
        )?;
        if let (Some(rev), Some(sym)) = (reverse, &r.symmetric) {
            add(
                rev,
                format!("routes[{i}] with symmetric = true"),
                sym.span(),
                field("symmetric"),
            )?;
        }
    }

    // Every GPU memory must be reachable from host memory and back, or data could never get
    // onto the GPU or results off it.
    for (i, node) in memory_nodes.iter().enumerate() {
        if node.kind != MemKind::Gpu {
            continue;
        }
        let rams: Vec<&MemNode> = memory_nodes
            .iter()
            .filter(|m| m.kind == MemKind::Ram)
            .collect();
        let ram_names = rams
            .iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
            .join(" or ");
        let from_ram = rams
            .iter()
            .any(|m| route_index.contains_key(&(m.id, node.id)));
        let to_ram = rams
            .iter()
            .any(|m| route_index.contains_key(&(node.id, m.id)));
        let missing = if !from_ram {
            Some(format!("{ram_names} → {}", node.name))
        } else if !to_ram {
            Some(format!("{} → {ram_names}", node.name))
        } else {
            None
        };
        if let Some(which) = missing {
            return Err(ctx.err(
                mem_spans[i].clone(),
                "routes",
                format!(
                    "missing route {which}: every GPU memory node needs a route from host memory \
                     and one back; expected a [[routes]] entry for that pair (or symmetric = true \
                     on the route in the other direction)"
                ),
            ));
        }
    }

    // [runtime]
    let mut runtime = RuntimeConfig::default();
    if let Some(rt) = &raw.runtime {
        apply_runtime(rt.get_ref(), &mut runtime, &|span, field, msg| {
            ctx.err(span, field, msg)
        })?;
    }
    if runtime.gpu_driver_cores && (gpus.len() as u64) > total_cores {
        let span = raw.gpus.last().map_or(whole, |g| g.span());
        return Err(ctx.err(
            span,
            "runtime.gpu_driver_cores",
            too_few_driver_cores(gpus.len(), total_cores),
        ));
    }

    let mut sources = vec![RoleFile::new(FileRole::Machine, ctx.file)];
    let perf_models = perf_models(
        ctx,
        raw.perfmodels.as_ref(),
        &raw.codelets,
        &gpus,
        &mut sources,
    )?;
    let affinity = affinity(ctx, raw.affinity.as_ref(), &gpus, total_cores)?;

    Ok(Machine {
        name,
        description: header.description,
        memory_nodes,
        cpus,
        gpus,
        links,
        routes,
        route_index,
        runtime,
        perf_models,
        affinity,
        sources: InputFiles(sources),
    })
}

/// `[affinity]`: each key a GPU name, each value distinct core indices below the core count.
/// Returns one list per GPU (by [`GpuId`]), empty for GPUs the table does not name.
fn affinity(
    ctx: &Ctx<'_>,
    raw: Option<&Spanned<format::RawAffinity>>,
    gpus: &[Gpu],
    total_cores: u64,
) -> Result<Vec<Vec<u32>>, InputError> {
    let mut out = vec![Vec::new(); gpus.len()];
    let Some(raw) = raw else {
        return Ok(out);
    };
    for (name, cores) in raw.get_ref() {
        let field = format!("affinity.{name}");
        let Some(g) = gpus.iter().find(|g| g.name == *name) else {
            return Err(ctx.err(
                cores.span(),
                field,
                format!(
                    "unknown GPU `{name}`; expected the name of a GPU in [[gpus]]: {}",
                    known_list(gpus.iter().map(|g| g.name.as_str()))
                ),
            ));
        };
        let mut seen = vec![false; total_cores as usize];
        let mut list = Vec::with_capacity(cores.get_ref().len());
        for (k, c) in cores.get_ref().iter().enumerate() {
            let v = *c.get_ref();
            let idx = usize::try_from(v).ok().filter(|&i| i < seen.len());
            let Some(i) = idx else {
                return Err(ctx.err(
                    c.span(),
                    format!("{field}[{k}]"),
                    format!(
                        "expected a CPU core index from 0 to {}, found {v}",
                        total_cores.saturating_sub(1)
                    ),
                ));
            };
            if seen[i] {
                return Err(ctx.err(
                    c.span(),
                    format!("{field}[{k}]"),
                    format!("core {v} is listed twice; expected each core at most once"),
                ));
            }
            seen[i] = true;
            list.push(i as u32);
        }
        out[g.id.index()] = list;
    }
    Ok(out)
}

/// `[perfmodels]`, the `[[codelets]]` of the machine file, then those of each included file
/// (added to `sources`).
fn perf_models(
    ctx: &Ctx<'_>,
    settings: Option<&Spanned<RawPerfModels>>,
    raw_codelets: &[Spanned<RawCodelet>],
    gpus: &[Gpu],
    sources: &mut Vec<RoleFile>,
) -> Result<PerfModels, InputError> {
    let settings = settings.map(Spanned::get_ref);
    let default_noise = match settings.and_then(|p| p.noise.as_ref()) {
        Some(n) => noise(ctx, n, "perfmodels.noise")?,
        None => Noise::None,
    };
    let mut pm = PerfModels::new(gpus.iter().map(|g| g.name.clone()).collect(), default_noise);
    // Where each codelet was defined, for duplicate messages.
    let mut seen: HashMap<String, String> = HashMap::new();
    codelets(ctx, raw_codelets, gpus, &mut pm, &mut seen)?;
    if settings.is_some_and(|p| p.include.is_some()) {
        for v in seen.values_mut() {
            *v = format!("{v} in {}", ctx.file.display());
        }
    }

    let Some(includes) = settings.and_then(|p| p.include.as_ref()) else {
        return Ok(pm);
    };
    let dir = ctx.file.parent().unwrap_or(Path::new(""));
    for (i, inc) in includes.get_ref().iter().enumerate() {
        let field = format!("perfmodels.include[{i}]");
        let rel = inc.get_ref().trim();
        if rel.is_empty() {
            return Err(ctx.err(inc.span(), field, "expected a file name"));
        }
        let path = dir.join(rel);
        let text = read_input(&path).map_err(|e| {
            ctx.err(
                inc.span(),
                field.clone(),
                format!(
                    "cannot read included file {}: {}",
                    path.display(),
                    e.message
                ),
            )
        })?;
        sources.push(RoleFile::new(FileRole::Included, &path));
        let inc_ctx = Ctx {
            text: &text,
            file: &path,
        };
        let file: RawCodeletsFile = toml::from_str(&text).map_err(|e| toml_error(&inc_ctx, &e))?;
        codelets(&inc_ctx, &file.codelets, gpus, &mut pm, &mut seen)?;
        // Later files name this one in their duplicate messages.
        for v in seen.values_mut() {
            if !v.contains(" in ") {
                *v = format!("{v} in {}", path.display());
            }
        }
    }
    Ok(pm)
}

/// A ParamError from a perfmodel constructor, located at `span` and `field`.
fn located(ctx: &Ctx<'_>, e: ParamError, span: Range<usize>, field: String) -> InputError {
    ctx.err(span, field, e.message)
}

fn codelets(
    ctx: &Ctx<'_>,
    raw: &[Spanned<RawCodelet>],
    gpus: &[Gpu],
    pm: &mut PerfModels,
    seen: &mut HashMap<String, String>,
) -> Result<(), InputError> {
    check_count(ctx, raw.len(), 0..ctx.text.len(), "codelets")?;
    for (i, c) in raw.iter().enumerate() {
        let c = c.get_ref();
        let at = format!("codelets[{i}]");
        let name = ctx.new_name(
            &c.name,
            format!("{at}.name"),
            "expected a non-empty codelet name (StarPU's performance-model symbol, such as \
             \"chol_model_gemm\")",
            seen,
            |name, prev| {
                format!(
                    "duplicate codelet `{name}` (already defined by {prev}); expected one \
                     [[codelets]] entry per codelet, holding one [[codelets.models]] per device"
                )
            },
        )?;
        let own_noise = match &c.noise {
            Some(n) => Some(noise(ctx, n, &format!("{at}.noise"))?),
            None => None,
        };
        let idx = pm
            .add_codelet(name.clone(), own_noise)
            .map_err(|e| located(ctx, e, c.name.span(), format!("{at}.name")))?;
        seen.insert(name, at.clone());
        check_count(ctx, c.models.len(), c.name.span(), &format!("{at}.models"))?;
        for (j, m) in c.models.iter().enumerate() {
            let m = m.get_ref();
            let at = format!("{at}.models[{j}]");
            let model = device_model(ctx, m, gpus, &at)?;
            pm.add_model(idx, model)
                .map_err(|e| located(ctx, e, m.device.span(), format!("{at}.device")))?;
        }
    }
    Ok(())
}

fn device_model(
    ctx: &Ctx<'_>,
    m: &RawDeviceModel,
    gpus: &[Gpu],
    at: &str,
) -> Result<DeviceModel, InputError> {
    let f = |name: &str| format!("{at}.{name}");
    let device = match m.device.get_ref().trim() {
        "cpu" => DeviceSelector::Kind(DeviceKind::Cpu),
        "gpu" => DeviceSelector::Kind(DeviceKind::Gpu),
        other => match gpus.iter().find(|g| g.name == other) {
            Some(g) => DeviceSelector::Gpu(g.id),
            None => {
                return Err(ctx.err(
                    m.device.span(),
                    f("device"),
                    format!(
                        "unknown device `{other}`; expected \"cpu\" (every CPU core), \"gpu\" \
                         (every GPU) or the name of a GPU in [[gpus]]: {}",
                        known_list(gpus.iter().map(|g| g.name.as_str()))
                    ),
                ));
            }
        },
    };

    // history
    let mut entries = Vec::new();
    let mut size_spans = Vec::new();
    if let Some(h) = &m.history {
        check_count(ctx, h.get_ref().len(), h.span(), &f("history"))?;
        for (k, e) in h.get_ref().iter().enumerate() {
            let e = e.get_ref();
            let ef = |name: &str| format!("{at}.history[{k}].{name}");
            let size = ctx.quantity(&e.size, Kind::Bytes, &ef("size"))?;
            if size.fract() != 0.0 || size > MAX_EXACT_SIZE as f64 {
                return Err(ctx.err(
                    e.size.span(),
                    ef("size"),
                    format!(
                        "expected a whole number of bytes (the footprint size, up to 2^53), \
                         found {size}"
                    ),
                ));
            }
            let mean = ctx.quantity(&e.mean, Kind::Seconds, &ef("mean"))?;
            let stddev = match &e.stddev {
                Some(q) => ctx.quantity(q, Kind::Seconds, &ef("stddev"))?,
                None => 0.0,
            };
            let samples = match &e.samples {
                Some(n) if *n.get_ref() < 0 => {
                    return Err(ctx.err(
                        n.span(),
                        ef("samples"),
                        format!(
                            "expected a non-negative number of measurements, found {}",
                            n.get_ref()
                        ),
                    ));
                }
                Some(n) => Some(*n.get_ref() as u64),
                None => None,
            };
            let flops = match &e.flops {
                Some(v) => Some(ctx.non_negative(v, &ef("flops"), "number of flop")?),
                None => None,
            };
            let entry = HistoryEntry::new(size as u64, mean, stddev, samples).map_err(|err| {
                let span = match err.field {
                    "stddev" => e.stddev.as_ref().map_or(e.mean.span(), Spanned::span),
                    "size" => e.size.span(),
                    _ => e.mean.span(),
                };
                let field = ef(err.field);
                located(ctx, err, span, field)
            })?;
            let entry = match flops {
                Some(x) => entry.with_flops(x),
                None => entry,
            };
            entries.push(entry);
            size_spans.push(e.size.span());
        }
    }
    let history = History::new(entries).map_err(|err| {
        let k = err.index.unwrap_or(0);
        let span = size_spans.get(k).cloned().unwrap_or(m.device.span());
        located(ctx, err, span, format!("{at}.history[{k}].size"))
    })?;

    // regression
    let regression = match &m.regression {
        None => None,
        Some(r) => {
            let rf = |name: &str| format!("{at}.regression.{name}");
            let raw = r.get_ref();
            let secs = |q: &Option<Spanned<RawQuantity>>, name: &str| match q {
                Some(q) => ctx.quantity_signed(q, Kind::Seconds, &rf(name)),
                None => Ok(0.0),
            };
            let size = |q: &Option<Spanned<RawQuantity>>, name: &str| match q {
                Some(q) => ctx.quantity(q, Kind::Bytes, &rf(name)).map(Some),
                None => Ok(None),
            };
            let a = secs(&raw.a, "a")?;
            let b = match &raw.b {
                Some(b) => ctx.finite(b, &rf("b"))?,
                None => 0.0,
            };
            let c = secs(&raw.c, "c")?;
            let lo = size(&raw.min_size, "min_size")?;
            let hi = size(&raw.max_size, "max_size")?;
            let reg = Regression::new(a, b, c, lo, hi).map_err(|err| {
                let span = match err.field {
                    "a" => raw.a.as_ref().map(Spanned::span),
                    "b" => raw.b.as_ref().map(Spanned::span),
                    "c" => raw.c.as_ref().map(Spanned::span),
                    "min_size" => raw.min_size.as_ref().map(Spanned::span),
                    "max_size" => raw.max_size.as_ref().map(Spanned::span),
                    _ => None,
                }
                .unwrap_or(r.span());
                let field = rf(err.field);
                located(ctx, err, span, field)
            })?;
            Some(reg)
        }
    };

    let flop_rate = ctx.positive_opt(&m.flop_rate, Kind::FlopsPerSec, &f("flop_rate"))?;
    let rel_stddev = match &m.rel_stddev {
        Some(v) => ctx.non_negative(v, &f("rel_stddev"), "relative deviation")?,
        None => 0.0,
    };
    DeviceModel::new(device, history, regression, flop_rate, rel_stddev)
        .map_err(|err| located(ctx, err, m.device.span(), at.to_string()))
}

/// `noise = { kind = ..., ... }`.
fn noise(ctx: &Ctx<'_>, n: &Spanned<RawNoise>, field: &str) -> Result<Noise, InputError> {
    let raw = n.get_ref();
    let f = |name: &str| format!("{field}.{name}");
    let kind = raw.kind.get_ref().as_str();
    let present = [
        ("edges", raw.edges.as_ref()),
        ("weights", raw.weights.as_ref()),
        ("samples", raw.samples.as_ref()),
    ];
    let simple = match kind {
        "none" => Some(Noise::None),
        "normal" => Some(Noise::Normal),
        "lognormal" => Some(Noise::LogNormal),
        "histogram" => None,
        other => {
            return Err(ctx.err(
                raw.kind.span(),
                f("kind"),
                format!(
                    "unknown noise kind {other:?}; expected \"none\", \"normal\", \
                     \"lognormal\" or \"histogram\""
                ),
            ));
        }
    };
    if let Some(noise) = simple {
        if let Some((name, v)) = present.iter().find(|(_, v)| v.is_some())
            && let Some(v) = v
        {
            return Err(ctx.err(
                v.span(),
                f(name),
                format!("`{name}` belongs to \"histogram\" noise, not to {kind:?}"),
            ));
        }
        return Ok(noise);
    }
    let values = |v: &Spanned<Vec<Spanned<f64>>>| -> Vec<f64> {
        v.get_ref().iter().map(|x| *x.get_ref()).collect()
    };
    // Locate a ParamError on edges/weights/samples at the offending item.
    let locate = |err: ParamError| {
        let arr = match err.field {
            "edges" => raw.edges.as_ref(),
            "weights" => raw.weights.as_ref(),
            _ => raw.samples.as_ref(),
        };
        let (span, path) = match (arr, err.index) {
            (Some(a), Some(k)) => (
                a.get_ref().get(k).map_or(a.span(), Spanned::span),
                format!("{field}.{}[{k}]", err.field),
            ),
            (Some(a), None) => (a.span(), f(err.field)),
            (None, _) => (n.span(), f(err.field)),
        };
        ctx.err(span, path, err.message)
    };
    let hist = match (&raw.edges, &raw.weights, &raw.samples) {
        (Some(e), Some(w), None) => Histogram::from_bins(values(e), values(w)).map_err(locate)?,
        (None, None, Some(s)) => Histogram::from_samples(values(s)).map_err(locate)?,
        (_, _, Some(s)) => {
            return Err(ctx.err(
                s.span(),
                f("samples"),
                "give either `samples` or `edges` and `weights`, not both",
            ));
        }
        _ => {
            return Err(ctx.err(
                raw.kind.span(),
                field,
                "a \"histogram\" noise needs `edges` and `weights` (bins), or `samples`",
            ));
        }
    };
    Ok(Noise::Histogram(hist))
}

/// A route's `model = { kind = ..., ... }`.
fn model(ctx: &Ctx<'_>, m: &Spanned<RawModel>, field: &str) -> Result<TransferModel, InputError> {
    let raw = m.get_ref();
    let kind = raw.kind.get_ref().as_str();
    let f = |name: &str| format!("{field}.{name}");
    // Which optional fields each kind takes; any other one present is a mistake worth reporting
    // (a "latency" on a stencil model would otherwise be silently ignored).
    let allowed: &[&str] = match kind {
        "affine" => &["latency", "bandwidth"],
        "piecewise" => &["points"],
        "stencil" => &["b0", "t0"],
        other => {
            return Err(ctx.err(
                raw.kind.span(),
                f("kind"),
                format!(
                    "unknown transfer model kind {other:?}; expected \"affine\", \"piecewise\" or \
                     \"stencil\""
                ),
            ));
        }
    };
    let present: [(&str, Option<Range<usize>>); 5] = [
        ("latency", raw.latency.as_ref().map(Spanned::span)),
        ("bandwidth", raw.bandwidth.as_ref().map(Spanned::span)),
        ("points", raw.points.as_ref().map(Spanned::span)),
        ("b0", raw.b0.as_ref().map(Spanned::span)),
        ("t0", raw.t0.as_ref().map(Spanned::span)),
    ];
    for (name, span) in &present {
        if let Some(span) = span
            && !allowed.contains(name)
        {
            return Err(ctx.err(
                span.clone(),
                f(name),
                format!(
                    "`{name}` does not belong to a {kind:?} model; expected only: {}",
                    allowed.join(", ")
                ),
            ));
        }
    }
    let need = |q: &Option<Spanned<RawQuantity>>,
                name: &str|
     -> Result<Spanned<RawQuantity>, InputError> {
        q.clone().ok_or_else(|| {
            ctx.err(
                m.span(),
                f(name),
                format!(
                    "a {kind:?} model needs `{name}`; expected: {}",
                    allowed.join(", ")
                ),
            )
        })
    };
    let located = |e: super::ModelError, span: Range<usize>| {
        let path = match e.index {
            Some(i) => format!("{field}.{}[{i}]", e.field),
            None => f(e.field),
        };
        ctx.err(span, path, e.message)
    };
    match kind {
        "affine" => {
            let lat_q = need(&raw.latency, "latency")?;
            let bw_q = need(&raw.bandwidth, "bandwidth")?;
            let lat = ctx.quantity(&lat_q, Kind::Seconds, &f("latency"))?;
            let bw = ctx.bandwidth(&bw_q, &f("bandwidth"), None)?;
            TransferModel::affine(lat, bw).map_err(|e| located(e, bw_q.span()))
        }
        "stencil" => {
            let b0_q = need(&raw.b0, "b0")?;
            let t0_q = need(&raw.t0, "t0")?;
            let b0 = ctx.bandwidth(&b0_q, &f("b0"), None)?;
            let t0 = ctx.quantity(&t0_q, Kind::Seconds, &f("t0"))?;
            TransferModel::stencil(b0, t0).map_err(|e| located(e, b0_q.span()))
        }
        _ => {
            let Some(points_q) = &raw.points else {
                return Err(ctx.err(
                    m.span(),
                    f("points"),
                    "a \"piecewise\" model needs `points = [[bytes, seconds], ...]`",
                ));
            };
            let mut points = Vec::new();
            let mut spans = Vec::new();
            for (k, p) in points_q.get_ref().iter().enumerate() {
                let pf = format!("{field}.points[{k}]");
                let pair = p.get_ref();
                if pair.len() != 2 {
                    return Err(ctx.err(
                        p.span(),
                        pf,
                        format!(
                            "expected a pair [bytes, seconds] such as [\"1 MiB\", \"200 us\"], \
                             found {} values",
                            pair.len()
                        ),
                    ));
                }
                let s = ctx.quantity(&pair[0], Kind::Bytes, &format!("{pf}[0]"))?;
                let t = ctx.quantity(&pair[1], Kind::Seconds, &format!("{pf}[1]"))?;
                points.push((s, t));
                spans.push(p.span());
            }
            TransferModel::piecewise(points).map_err(|e| {
                let span = e
                    .index
                    .and_then(|i| spans.get(i).cloned())
                    .unwrap_or_else(|| points_q.span());
                located(e, span)
            })
        }
    }
}

/// The message for `gpus` GPUs that each want a driver core on a machine of `cores` cores.
pub(crate) fn too_few_driver_cores(gpus: usize, cores: u64) -> String {
    format!(
        "{gpus} GPUs each need a CPU core to drive them, but the machine has {cores} cores; \
         expected at least one core per GPU, or gpu_driver_cores = false"
    )
}

/// Set the fields of `runtime` that `raw` gives (a machine file's `[runtime]`, or a scenario's
/// `[runtime]` overriding it), checking each; `err` locates an error at a span of its text, on a
/// field such as `runtime.push_cost`.
pub fn apply_runtime(
    raw: &RawRuntime,
    runtime: &mut RuntimeConfig,
    err: &dyn Fn(Range<usize>, String, String) -> InputError,
) -> Result<(), InputError> {
    let secs =
        |q: &Option<Spanned<RawQuantity>>, f: &str, slot: &mut f64| -> Result<(), InputError> {
            if let Some(q) = q {
                *slot = q
                    .get_ref()
                    .read(Kind::Seconds)
                    .map_err(|e| err(q.span(), format!("runtime.{f}"), e.message))?;
            }
            Ok(())
        };
    secs(&raw.cuda_malloc, "cuda_malloc", &mut runtime.cuda_malloc_s)?;
    secs(&raw.cuda_free, "cuda_free", &mut runtime.cuda_free_s)?;
    secs(
        &raw.pinned_alloc_per_mib,
        "pinned_alloc_per_mib",
        &mut runtime.pinned_alloc_s_per_mib,
    )?;
    secs(
        &raw.transfer_queue,
        "transfer_queue",
        &mut runtime.transfer_queue_s,
    )?;
    secs(
        &raw.kernel_queue,
        "kernel_queue",
        &mut runtime.kernel_queue_s,
    )?;
    secs(&raw.push_cost, "push_cost", &mut runtime.push_s)?;
    secs(&raw.submit_cost, "submit_cost", &mut runtime.submit_s)?;
    secs(
        &raw.fetch_input_cost,
        "fetch_input_cost",
        &mut runtime.fetch_input_s,
    )?;
    secs(&raw.steal_retry, "steal_retry", &mut runtime.steal_retry_s)?;
    if let Some(b) = raw.steal_from_back {
        runtime.steal_from_back = b;
    }
    if let Some(b) = raw.suballocator {
        runtime.suballocator = b;
    }
    if let Some(b) = raw.transfer_cost {
        runtime.transfer_cost = b;
    }
    // An integer between `lo` and `hi`, or an error naming the field.
    let int_in = |c: &Option<Spanned<i64>>,
                  f: &str,
                  what: &str,
                  (lo, hi): (i64, i64),
                  slot: &mut u32|
     -> Result<(), InputError> {
        if let Some(c) = c {
            let v = *c.get_ref();
            if !(lo..=hi).contains(&v) {
                return Err(err(
                    c.span(),
                    format!("runtime.{f}"),
                    format!("expected {what} between {lo} and {hi}, found {v}"),
                ));
            }
            *slot = v as u32;
        }
        Ok(())
    };
    let count = (1, MAX_COUNT);
    int_in(
        &raw.gpu_pipeline_depth,
        "gpu_pipeline_depth",
        "a pipeline depth",
        count,
        &mut runtime.gpu_pipeline_depth,
    )?;
    let limits = &mut runtime.pending_limits;
    let what = "a number of pending requests";
    int_in(
        &raw.max_pending_fetches,
        "max_pending_fetches",
        what,
        count,
        &mut limits.fetch,
    )?;
    int_in(
        &raw.max_pending_prefetches,
        "max_pending_prefetches",
        what,
        count,
        &mut limits.prefetch,
    )?;
    int_in(
        &raw.max_pending_idle,
        "max_pending_idle",
        what,
        count,
        &mut limits.idle,
    )?;
    let pct = (0, 100);
    int_in(
        &raw.min_clean_pct,
        "min_clean_pct",
        "a percentage",
        pct,
        &mut runtime.min_clean_pct,
    )?;
    int_in(
        &raw.target_clean_pct,
        "target_clean_pct",
        "a percentage",
        pct,
        &mut runtime.target_clean_pct,
    )?;
    if let Some(b) = raw.gpu_driver_cores {
        runtime.gpu_driver_cores = b;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Direction, LinkPolicy, MemKind, PendingLimits, TransferModel, from_str};

    /// One RAM, one GPU, links "Host", "Bus" (split-duplex) and "Peer"; routes appended by
    /// each test.
    const BASE: &str = r#"
[machine]
name = "t"
[[memory_nodes]]
name = "RAM"
kind = "ram"
capacity = "17179869184 B"
[[memory_nodes]]
name = "GPU0"
kind = "gpu"
capacity = "4 GiB"
[[cpus]]
count = 2
model = "c"
memory = "RAM"
[[gpus]]
name = "GPU0"
model = "g"
memory = "GPU0"
[[links]]
name = "Host"
bandwidth = "6.5e9 B/s"
[[links]]
name = "Bus"
bandwidth = "8 GB/s"
latency = "1 us"
sharing = "split-duplex"
[[links]]
name = "Fat"
bandwidth = "100 Gbit/s"
sharing = "fatpipe"
"#;

    fn with(extra: &str) -> Result<super::Machine, hetsim_core::InputError> {
        from_str(&format!("{BASE}{extra}"), "t.toml")
    }

    fn err(extra: &str) -> hetsim_core::InputError {
        with(extra).expect_err("should be refused")
    }

    const BOTH_ROUTES: &str = r#"
[[routes]]
src = "RAM"
dst = "GPU0"
links = ["Bus_DOWN", "Host"]
symmetric = true
"#;

    #[test]
    fn symmetric_reverses_links_and_split_duplex_directions() {
        let m = with(BOTH_ROUTES).unwrap();
        let ram = m.memory_node_by_name("RAM").unwrap().id;
        let gpu = m.memory_node_by_name("GPU0").unwrap().id;
        let back = m.route(gpu, ram).unwrap();
        let names: Vec<String> = back.hops.iter().map(|h| m.hop_name(h)).collect();
        assert_eq!(names, ["Host", "Bus_UP"]);
        assert!(back.generated_by_symmetry);
        assert_eq!(back.hops[1].direction, Some(Direction::Up));
        assert_eq!(m.route_latency_s(back), 1e-6);
        assert_eq!(m.route_bottleneck_bytes_per_sec(back), Some(6.5e9));
    }

    #[test]
    fn values_are_converted_to_si_units() {
        let m = with(BOTH_ROUTES).unwrap();
        assert_eq!(m.memory_nodes()[0].kind, MemKind::Ram);
        assert_eq!(m.memory_nodes()[0].capacity_bytes, 17_179_869_184);
        assert_eq!(m.memory_nodes()[1].capacity_bytes, 4 << 30);
        let fat = m.link_by_name("Fat").unwrap();
        assert_eq!(fat.sharing, LinkPolicy::Fatpipe);
        assert_eq!(fat.bandwidth_bytes_per_sec, 12.5e9);
        assert_eq!(fat.latency_s, 0.0, "latency defaults to 0");
        assert_eq!(m.link_by_name("Host").unwrap().sharing, LinkPolicy::Shared);
    }

    #[test]
    fn a_scenario_override_keeps_the_driver_core_check() {
        let text =
            hetsim_testkit::star_machine_text(2, 1) + "[runtime]\ngpu_driver_cores = false\n";
        let mut m = super::super::from_str(&text, "m.toml").unwrap();
        let raw: super::super::format::RawRuntime =
            toml::from_str("transfer_cost = false\npush_cost = \"2 us\"").unwrap();
        m.override_runtime(&raw).unwrap();
        assert_eq!(
            (m.runtime().transfer_cost, m.runtime().push_s),
            (false, 2e-6)
        );
        let raw: super::super::format::RawRuntime =
            toml::from_str("gpu_driver_cores = true").unwrap();
        let e = m.override_runtime(&raw).unwrap_err();
        assert!(e.message.contains("2 GPUs each need a CPU core"), "{e}");
        assert_eq!(
            e.location.field.as_deref(),
            Some("runtime.gpu_driver_cores")
        );
        // Refused as a whole: the earlier settings stay.
        assert!(!m.runtime().gpu_driver_cores);
    }

    #[test]
    fn runtime_defaults_and_overrides() {
        let m = with(BOTH_ROUTES).unwrap();
        let rt = m.runtime();
        assert_eq!(rt.cuda_malloc_s, 175e-6);
        assert_eq!(rt.cuda_free_s, 125e-6);
        assert_eq!(rt.transfer_queue_s, 10e-6);
        assert_eq!(rt.gpu_pipeline_depth, 2);
        assert_eq!(rt.kernel_queue_s, 10e-6);
        assert_eq!(rt.push_s, 1e-6);
        assert!(rt.suballocator);
        assert_eq!(
            rt.pending_limits,
            PendingLimits {
                fetch: 5,
                prefetch: 2,
                idle: 1
            }
        );
        assert!(rt.gpu_driver_cores);
        // 650 us per MiB: 10 MiB take 6.5 ms.
        assert!((rt.pinned_alloc_secs(10.0 * 1_048_576.0) - 6.5e-3).abs() < 1e-15);
        let m = with(&format!(
            "{BOTH_ROUTES}[runtime]\ncuda_free = \"750 us\"\ngpu_pipeline_depth = 4\n\
             gpu_driver_cores = false\npinned_alloc_per_mib = 0\nkernel_queue = \"0 s\"\n\
             push_cost = 0\nsuballocator = false\nmax_pending_fetches = 20\nmax_pending_prefetches = 10\n"
        ))
        .unwrap();
        assert_eq!(m.runtime().kernel_queue_s, 0.0);
        assert_eq!(m.runtime().push_s, 0.0);
        assert!(!m.runtime().suballocator);
        assert_eq!(
            m.runtime().pending_limits,
            PendingLimits {
                fetch: 20,
                prefetch: 10,
                idle: 1
            }
        );
        assert_eq!(m.runtime().cuda_free_s, 750e-6);
        assert_eq!(m.runtime().gpu_pipeline_depth, 4);
        assert!(!m.runtime().gpu_driver_cores);
        assert_eq!(m.runtime().pinned_alloc_s_per_mib, 0.0);
        let e = err(&format!("{BOTH_ROUTES}[runtime]\ngpu_pipeline_depth = 0\n"));
        assert_eq!(
            e.location.field.as_deref(),
            Some("runtime.gpu_pipeline_depth")
        );
        let e = err(&format!(
            "{BOTH_ROUTES}[runtime]\nmax_pending_prefetches = 0\n"
        ));
        assert_eq!(
            e.location.field.as_deref(),
            Some("runtime.max_pending_prefetches")
        );
        assert!(
            e.to_string()
                .contains("expected a number of pending requests between 1 and 1024, found 0"),
            "{e}"
        );
        let e = err(&format!("{BOTH_ROUTES}[runtime]\nmin_clean_pct = 101\n"));
        assert_eq!(e.location.field.as_deref(), Some("runtime.min_clean_pct"));
        assert!(
            e.to_string()
                .contains("expected a percentage between 0 and 100, found 101"),
            "{e}"
        );
    }

    #[test]
    fn models_on_routes() {
        let m = with(
            r#"
[[routes]]
src = "RAM"
dst = "GPU0"
model = { kind = "piecewise", points = [[0, "5 us"], ["1 MB", "1005 us"]] }
[[routes]]
src = "GPU0"
dst = "RAM"
links = ["Host"]
model = { kind = "affine", latency = "10 us", bandwidth = "6 GB/s" }
"#,
        )
        .unwrap();
        let ram = m.memory_node_by_name("RAM").unwrap().id;
        let gpu = m.memory_node_by_name("GPU0").unwrap().id;
        let down = m.route(ram, gpu).unwrap();
        assert!(down.hops.is_empty(), "a model alone is a valid route");
        assert!(matches!(down.model, Some(TransferModel::Piecewise(_))));
        let up = m.route(gpu, ram).unwrap().model.as_ref().unwrap();
        assert!((up.duration_secs(6e6) - 1.010e-3).abs() < 1e-15);
    }

    /// A route's estimate is read as given and kept apart from its links; the reverse that
    /// `symmetric = true` adds has none; only an affine estimate is accepted, and a bad one is
    /// refused under `routes[i].estimate`.
    #[test]
    fn route_estimates_are_affine_and_one_directional() {
        let m = with(
            r#"
[[routes]]
src = "RAM"
dst = "GPU0"
links = ["Host"]
symmetric = true
estimate = { kind = "affine", latency = "9.836008 us", bandwidth = "6030.996807 MB/s" }
"#,
        )
        .unwrap();
        let ram = m.memory_node_by_name("RAM").unwrap().id;
        let gpu = m.memory_node_by_name("GPU0").unwrap().id;
        let down = m.route(ram, gpu).unwrap();
        let e = down.estimate.as_ref().expect("estimate read");
        assert!((e.latency_s() / 9.836008e-6 - 1.0).abs() < 1e-12);
        assert!((e.bandwidth_bytes_per_sec() / 6030.996807e6 - 1.0).abs() < 1e-12);
        assert!(
            down.model.is_none(),
            "an estimate does not model the transfers"
        );
        assert!(m.route(gpu, ram).unwrap().estimate.is_none());
        for (estimate, field, msg) in [
            (
                r#"estimate = { kind = "stencil", b0 = "4 GB/s", t0 = "1 us" }"#,
                "routes[0].estimate.kind",
                "expected kind = \"affine\"",
            ),
            (
                r#"estimate = { kind = "affine", latency = "1 us", bandwidth = "0 B/s" }"#,
                "routes[0].estimate.bandwidth",
                "",
            ),
        ] {
            let e = err(&format!(
                "[[routes]]\nsrc = \"RAM\"\ndst = \"GPU0\"\nlinks = [\"Host\"]\nsymmetric = true\n{estimate}\n"
            ));
            assert_eq!(e.location.field.as_deref(), Some(field), "{estimate}: {e}");
            assert!(e.message.contains(msg), "{estimate}: {e}");
            assert!(e.location.line.is_some());
        }
    }

    #[test]
    fn model_errors_name_the_model_field() {
        let cases = [
            (
                r#"model = { kind = "cubic" }"#,
                "routes[0].model.kind",
                "unknown transfer model",
            ),
            (
                r#"model = { kind = "stencil", b0 = "4 GB/s" }"#,
                "routes[0].model.t0",
                "needs `t0`",
            ),
            (
                r#"model = { kind = "stencil", b0 = "4 GB/s", t0 = "1 us", latency = "1 us" }"#,
                "routes[0].model.latency",
                "does not belong",
            ),
            (
                r#"model = { kind = "piecewise", points = [[1, 1, 1], [2, 2]] }"#,
                "routes[0].model.points[0]",
                "pair",
            ),
            (
                r#"model = { kind = "stencil", b0 = "4 GB/s", t0 = "-1 us" }"#,
                "routes[0].model.t0",
                "negative",
            ),
        ];
        for (model, field, msg) in cases {
            let e = err(&format!(
                "[[routes]]\nsrc = \"RAM\"\ndst = \"GPU0\"\nlinks = [\"Host\"]\nsymmetric = true\n{model}\n"
            ));
            assert_eq!(e.location.field.as_deref(), Some(field), "{model}: {e}");
            assert!(e.message.contains(msg), "{model}: {e}");
            assert!(e.location.line.is_some());
        }
    }

    #[test]
    fn structural_errors() {
        let e = err("[[routes]]\nsrc = \"RAM\"\ndst = \"GPU0\"\nlinks = []\nsymmetric = true\n");
        assert!(e.message.contains("no links and no model"), "{e}");
        let e = err("[[routes]]\nsrc = \"RAM\"\ndst = \"RAM\"\nlinks = [\"Host\"]\n");
        assert!(e.message.contains("to itself"), "{e}");
        let e = err(&format!(
            "{BOTH_ROUTES}[[links]]\nname = \"Bus_UP\"\nbandwidth = \"1 B/s\"\n"
        ));
        assert!(e.message.contains("duplicate link name"), "{e}");
        // More GPUs than cores when each GPU takes a driver core.
        let text = format!("{BASE}{BOTH_ROUTES}").replace("count = 2", "count = 0");
        let e = from_str(&text, "t.toml").unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("cpus[0].count"));
        let one_core = format!(
            "{BASE}{BOTH_ROUTES}[[memory_nodes]]\nname = \"GPU1\"\nkind = \"gpu\"\ncapacity = \"1 B\"\n\
             [[gpus]]\nname = \"GPU1\"\nmodel = \"g\"\nmemory = \"GPU1\"\n\
             [[routes]]\nsrc = \"RAM\"\ndst = \"GPU1\"\nlinks = [\"Host\"]\nsymmetric = true\n"
        )
        .replace("count = 2", "count = 1");
        let e = from_str(&one_core, "t.toml").unwrap_err();
        assert_eq!(
            e.location.field.as_deref(),
            Some("runtime.gpu_driver_cores"),
            "{e}"
        );
        let ok = format!("{one_core}[runtime]\ngpu_driver_cores = false\n");
        assert!(from_str(&ok, "t.toml").is_ok());
    }

    #[test]
    fn two_gpus_cannot_share_a_memory_node() {
        let e = err(&format!(
            "{BOTH_ROUTES}[[gpus]]\nname = \"GPU1\"\nmodel = \"g\"\nmemory = \"GPU0\"\n"
        ));
        assert_eq!(e.location.field.as_deref(), Some("gpus[1].memory"));
        assert!(e.message.contains("already belongs"), "{e}");
    }

    #[test]
    fn a_machine_needs_host_memory() {
        let text = BASE.replace("kind = \"ram\"", "kind = \"gpu\"");
        let e = from_str(&text, "t.toml").unwrap_err();
        assert!(e.message.contains("no memory node of kind \"ram\""), "{e}");
    }

    #[test]
    fn key_on_line_reads_header_and_key() {
        let text = "[machine]\nname = \"x\"\n[[links]]\nbandwidth = \"6 GB/s\n";
        let at = text.find("\"6").unwrap();
        assert_eq!(
            super::key_on_line(text, at).as_deref(),
            Some("links.bandwidth")
        );
    }
}
