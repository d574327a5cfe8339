//! StarPU's SimGrid platform files: `bus/<host>.platform.v4.xml` (SimGrid v4 syntax: `speed`,
//! units such as `Bps` and `s`) and `bus/<host>.platform.xml` (v3: `power`, bare numbers in
//! bytes per second and seconds). Format: `starpu-reference.md` §1e, writer
//! `write_bus_platform_file_content` in StarPU's `perfmodel_bus.c`.
//!
//! Parsed with `roxmltree`; hosts, links and routes are kept with their line numbers and their
//! figures as written, so that a converted machine file can quote them verbatim.

use std::collections::BTreeMap;
use std::path::Path;

use super::err_at;
use hetsim_core::error::{InputError, line_of_offset};
use hetsim_core::units;

/// A `<host>`: its id and `<prop>`s (`model`, `memsize`, `memcpy_peer`).
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    /// `id`: `RAM`, `CUDA0`, `OpenCL1`, `CPU3`, `MAIN`, `DISK0`, ...
    pub id: String,
    /// `<prop id=... value=...>` children.
    pub props: BTreeMap<String, String>,
    /// 1-based line of the element.
    pub line: usize,
}

/// A `<link>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// `id`, e.g. `RAM-CUDA0`, `Host`, `PCI:0000:[00-0f] through`.
    pub id: String,
    /// The bandwidth as a hetsim quantity with its unit: the attribute verbatim when it has a
    /// unit hetsim reads (`6010679672.232608Bps`), else the bare number with ` B/s` appended
    /// (v3 files).
    pub bandwidth: String,
    /// The bandwidth in bytes per second.
    pub bandwidth_bytes_per_sec: f64,
    /// The latency as a hetsim quantity with its unit (`0.000010s`, or `... s` appended).
    pub latency: String,
    /// The latency in seconds.
    pub latency_s: f64,
    /// `sharing_policy="FATPIPE"`: true; SHARED (SimGrid's default, StarPU's only): false.
    pub fatpipe: bool,
    /// 1-based line of the element.
    pub line: usize,
}

/// A `<route>`: the links crossed from `src` to `dst`, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Source host id.
    pub src: String,
    /// Destination host id.
    pub dst: String,
    /// `symmetrical`: SimGrid's default is YES; StarPU writes NO.
    pub symmetrical: bool,
    /// `<link_ctn id=...>` in order.
    pub links: Vec<String>,
    /// 1-based line of the element.
    pub line: usize,
}

/// A parsed platform file.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    /// `<platform version=...>`: 3 or 4 (other values are read the same way).
    pub version: String,
    /// Hosts in file order.
    pub hosts: Vec<Host>,
    /// Links in file order.
    pub links: Vec<Link>,
    /// Routes in file order.
    pub routes: Vec<Route>,
}

impl Platform {
    /// The host with this id.
    pub fn host(&self, id: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.id == id)
    }

    /// The link with this id.
    pub fn link(&self, id: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.id == id)
    }

    /// The route from `src` to `dst` as written (not the reverse of a symmetrical one).
    pub fn route(&self, src: &str, dst: &str) -> Option<&Route> {
        self.routes.iter().find(|r| r.src == src && r.dst == dst)
    }
}

/// A quantity attribute: hetsim's unit parser first (`Bps`, `MBps`, `s`, `us`, ...), then a bare
/// number in base units. Returns (text for the machine file, value).
fn quantity(
    raw: &str,
    kind: units::Kind,
    path: &Path,
    line: usize,
    what: &str,
) -> Result<(String, f64), InputError> {
    let t = raw.trim();
    if let Ok(v) = t.parse::<f64>() {
        let v = units::check_number(kind, v)
            .map_err(|e| err_at(path, line, format!("{what}: {}", e.message)))?;
        return Ok((format!("{t} {}", kind.base_unit()), v));
    }
    let v = units::parse_or_base(kind, t)
        .map_err(|e| err_at(path, line, format!("{what}: {}", e.message)))?;
    Ok((t.to_string(), v))
}

/// Parse a platform file's text (`path` is for messages). Malformed XML is an error with the
/// line of the problem; so are links without a bandwidth, routes naming undeclared links or
/// hosts, and duplicate ids. Elements StarPU does not write (clusters, zone routes, ...) are
/// skipped with a warning.
pub fn parse_platform(text: &str, path: &Path) -> Result<Platform, InputError> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opts)
        .map_err(|e| err_at(path, e.pos().row as usize, format!("malformed XML: {e}")))?;
    let root = doc.root_element();
    let line_of = |n: roxmltree::Node<'_, '_>| line_of_offset(text, n.range().start);
    if root.tag_name().name() != "platform" {
        return Err(err_at(
            path,
            line_of(root),
            format!(
                "expected a SimGrid <platform> document, found <{}>",
                root.tag_name().name()
            ),
        ));
    }
    let version = root.attribute("version").unwrap_or("").to_string();
    let mut hosts: Vec<Host> = Vec::new();
    let mut links: Vec<Link> = Vec::new();
    let mut routes: Vec<Route> = Vec::new();
    let attr = |n: roxmltree::Node<'_, '_>, name: &str| -> Result<String, InputError> {
        n.attribute(name).map(str::to_string).ok_or_else(|| {
            err_at(
                path,
                line_of(n),
                format!("<{}> without the `{name}` attribute", n.tag_name().name()),
            )
        })
    };
    for n in root.descendants().filter(|n| n.is_element()) {
        let line = line_of(n);
        match n.tag_name().name() {
            "host" => {
                let id = attr(n, "id")?;
                if hosts.iter().any(|h| h.id == id) {
                    return Err(err_at(path, line, format!("duplicate host id {id:?}")));
                }
                let mut props = BTreeMap::new();
                for p in n.children().filter(|c| c.has_tag_name("prop")) {
                    props.insert(attr(p, "id")?, attr(p, "value")?);
                }
                hosts.push(Host { id, props, line });
            }
            "link" => {
                let id = attr(n, "id")?;
                if links.iter().any(|l| l.id == id) {
                    return Err(err_at(path, line, format!("duplicate link id {id:?}")));
                }
                let (bandwidth, bw) = quantity(
                    &attr(n, "bandwidth")?,
                    units::Kind::BytesPerSec,
                    path,
                    line,
                    &format!("link {id:?} bandwidth"),
                )?;
                if bw <= 0.0 {
                    return Err(err_at(
                        path,
                        line,
                        format!("link {id:?}: expected a positive bandwidth, found {bandwidth}"),
                    ));
                }
                let (latency, lat) = match n.attribute("latency") {
                    Some(l) => quantity(
                        l,
                        units::Kind::Seconds,
                        path,
                        line,
                        &format!("link {id:?} latency"),
                    )?,
                    None => ("0 s".to_string(), 0.0),
                };
                let fatpipe = match n.attribute("sharing_policy").map(str::to_ascii_uppercase) {
                    None => false,
                    Some(p) if p == "SHARED" => false,
                    Some(p) if p == "FATPIPE" => true,
                    Some(p) => {
                        return Err(err_at(
                            path,
                            line,
                            format!(
                                "link {id:?}: sharing_policy {p:?} is not supported by the \
                                 importer; expected SHARED or FATPIPE (StarPU writes neither)"
                            ),
                        ));
                    }
                };
                links.push(Link {
                    id,
                    bandwidth,
                    bandwidth_bytes_per_sec: bw,
                    latency,
                    latency_s: lat,
                    fatpipe,
                    line,
                });
            }
            "route" => {
                let src = attr(n, "src")?;
                let dst = attr(n, "dst")?;
                let symmetrical = !n
                    .attribute("symmetrical")
                    .is_some_and(|s| s.eq_ignore_ascii_case("no"));
                let mut ctn = Vec::new();
                for c in n.children().filter(|c| c.is_element()) {
                    if c.has_tag_name("link_ctn") {
                        if c.attribute("direction").is_some() {
                            return Err(err_at(
                                path,
                                line_of(c),
                                "link_ctn with a direction (split-duplex links) is not \
                                 supported by the importer; StarPU writes none",
                            ));
                        }
                        ctn.push(attr(c, "id")?);
                    } else {
                        tracing::warn!(
                            "{}:line {}: unknown element <{}> in a route, skipped",
                            path.display(),
                            line_of(c),
                            c.tag_name().name()
                        );
                    }
                }
                if ctn.is_empty() {
                    return Err(err_at(
                        path,
                        line,
                        format!(
                            "route {src} -> {dst} has no <link_ctn>; expected at least one \
                             (StarPU writes every route with its links)"
                        ),
                    ));
                }
                routes.push(Route {
                    src,
                    dst,
                    symmetrical,
                    links: ctn,
                    line,
                });
            }
            "platform" | "config" | "prop" | "AS" | "zone" | "link_ctn" => {}
            other => tracing::warn!(
                "{}:line {line}: element <{other}> is not one StarPU writes, skipped",
                path.display()
            ),
        }
    }
    // SimGrid's full routing takes one route per ordered pair; a symmetrical route is also
    // the route back.
    let mut defined: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in &routes {
        let mut pairs = vec![(r.src.as_str(), r.dst.as_str())];
        if r.symmetrical && r.src != r.dst {
            pairs.push((r.dst.as_str(), r.src.as_str()));
        }
        for (a, b) in pairs {
            if let Some(first) = defined.insert((a, b), r.line) {
                return Err(err_at(
                    path,
                    r.line,
                    format!(
                        "route {a} -> {b} is defined twice (first at line {first}); expected \
                         one route per ordered pair of hosts, a symmetrical one counting both ways"
                    ),
                ));
            }
        }
    }
    for r in &routes {
        for end in [&r.src, &r.dst] {
            if !hosts.iter().any(|h| &h.id == end) {
                return Err(err_at(
                    path,
                    r.line,
                    format!("route {} -> {}: unknown host {end:?}", r.src, r.dst),
                ));
            }
        }
        if let Some(bad) = r.links.iter().find(|l| !links.iter().any(|k| &k.id == *l)) {
            return Err(err_at(
                path,
                r.line,
                format!(
                    "route {} -> {}: unknown link {bad:?} (no <link id=\"{bad}\"> in the file)",
                    r.src, r.dst
                ),
            ));
        }
    }
    Ok(Platform {
        version,
        hosts,
        links,
        routes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V4: &str = r#"<?xml version="1.0"?>
 <!DOCTYPE platform SYSTEM "http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd">
 <platform version="4">
 <AS  id="AS0"  routing="Full">
   <host id="CUDA0" speed="2000000000f">
     <prop id="memsize" value="2817982464"/>
   </host>
   <host id="RAM" speed="1f"/>
   <link id="Host" bandwidth="6518853316.197578Bps" latency="0.000000s"/>
   <link id="RAM-CUDA0" bandwidth="6000" latency="0.000010"/>
   <route src="RAM" dst="CUDA0" symmetrical="NO">
    <link_ctn id="RAM-CUDA0"/>
    <!-- comment -->
    <link_ctn id="Host"/>
   </route>
 </AS>
 </platform>
"#;

    #[test]
    fn reads_hosts_links_routes_with_lines() {
        let p = parse_platform(V4, Path::new("p.xml")).unwrap();
        assert_eq!(p.version, "4");
        assert_eq!(p.host("CUDA0").unwrap().props["memsize"], "2817982464");
        let h = p.link("Host").unwrap();
        assert_eq!(h.bandwidth, "6518853316.197578Bps");
        assert_eq!(h.line, 9);
        let l = p.link("RAM-CUDA0").unwrap();
        assert_eq!(l.bandwidth, "6000 B/s");
        assert_eq!(l.latency, "0.000010 s");
        let r = p.route("RAM", "CUDA0").unwrap();
        assert!(!r.symmetrical);
        assert_eq!(r.links, ["RAM-CUDA0", "Host"]);
    }

    #[test]
    fn errors_name_the_line() {
        let broken = V4.replace("<link_ctn id=\"Host\"/>", "<link_ctn id=\"Host\">");
        let e = parse_platform(&broken, Path::new("p.xml")).unwrap_err();
        assert!(e.to_string().starts_with("p.xml:line "), "{e}");
        assert!(e.to_string().contains("malformed XML"), "{e}");
        let unknown = V4.replace("<link_ctn id=\"Host\"/>", "<link_ctn id=\"Hots\"/>");
        let e = parse_platform(&unknown, Path::new("p.xml")).unwrap_err();
        assert!(e.to_string().starts_with("p.xml:line 11:"), "{e}");
        let empty = V4
            .replace("<link_ctn id=\"RAM-CUDA0\"/>", "")
            .replace("<link_ctn id=\"Host\"/>", "");
        let e = parse_platform(&empty, Path::new("p.xml")).unwrap_err();
        assert!(
            e.to_string()
                .contains("route RAM -> CUDA0 has no <link_ctn>"),
            "{e}"
        );
        let route = V4.find("<route").unwrap();
        let end = V4[route..].find("</route>").unwrap() + route + "</route>".len();
        let twice = format!("{}{}", &V4[..end], &V4[route..]);
        let e = parse_platform(&twice, Path::new("p.xml")).unwrap_err();
        assert!(
            e.to_string()
                .contains("route RAM -> CUDA0 is defined twice"),
            "{e}"
        );
        let bad = V4.replace("6000", "fast");
        let e = parse_platform(&bad, Path::new("p.xml")).unwrap_err();
        assert!(e.to_string().starts_with("p.xml:line 10:"), "{e}");
    }
}
