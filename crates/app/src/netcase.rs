//! Flow-set cases for `hetsim net`: the JSON format of the SimGrid oracle
//! (`scripts/oracle/README.md`).
//!
//! ```json
//! {"hosts": ["h0", "h1"],
//!  "links":  [{"name": "l0", "bandwidth": 1e9, "latency": 1e-3, "sharing": "SHARED"}],
//!  "routes": [{"src": "h0", "dst": "h1", "links": ["l0"]}],
//!  "flows":  [{"id": "f0", "src": "h0", "dst": "h1", "bytes": 1000000000, "start": 0.0}]}
//! ```
//! Units are bytes, bytes/s and seconds. `sharing` is `SHARED`, `FATPIPE` or `SPLITDUPLEX`; a
//! split-duplex link `x` is named `x_UP` or `x_DOWN` in routes, one shared link per direction.
//! Routes are per ordered host pair and need not be symmetric. `hosts` is optional; when given,
//! every route and flow endpoint must be one of them.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use hetsim_core::error::{InputError, line_of_offset, read_input};
use hetsim_core::fluid::{
    FlowSpec, FluidNetwork, LinkId, Sharing, SharingMode, run_flow_set_observed,
};
use hetsim_core::units::{self, Kind};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    /// The generator's seed, kept for reference; not used.
    #[serde(default)]
    #[allow(dead_code)]
    seed: Option<serde_json::Value>,
    #[serde(default)]
    hosts: Option<Vec<String>>,
    links: Vec<RawLink>,
    routes: Vec<RawRoute>,
    flows: Vec<RawFlow>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    name: String,
    bandwidth: f64,
    latency: f64,
    sharing: RawSharing,
}

#[derive(Debug, Clone, Copy, Deserialize)]
enum RawSharing {
    #[serde(rename = "SHARED")]
    Shared,
    #[serde(rename = "FATPIPE")]
    Fatpipe,
    #[serde(rename = "SPLITDUPLEX")]
    SplitDuplex,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    src: String,
    dst: String,
    links: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    id: String,
    src: String,
    dst: String,
    bytes: f64,
    start: f64,
}

/// One directional fluid link of a case (a split-duplex link gives two).
#[derive(Debug, Clone, PartialEq)]
struct CaseLink {
    bandwidth_bytes_per_sec: f64,
    latency_s: f64,
    sharing: Sharing,
}

/// A flow of a validated case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseFlow {
    /// The flow's id, as in the file.
    pub id: String,
    /// Fluid links crossed, in route order (indices into the case's links).
    route: Vec<LinkId>,
    /// Bytes to send.
    pub bytes: f64,
    /// Start date, seconds.
    pub start_s: f64,
}

/// A validated flow-set case, ready to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct NetCase {
    links: Vec<CaseLink>,
    flows: Vec<CaseFlow>,
}

/// The latest start date of a flow, in seconds (about 30 years): later dates lose the
/// precision of the microsecond latencies added to them.
pub const MAX_START_S: f64 = 1e9;

/// Read and validate a case file.
pub fn load(path: &Path) -> Result<NetCase, InputError> {
    let text = read_input(path)?;
    parse(&text).map_err(|e| e.in_file(path))
}

/// Validate a case from its JSON text. Errors carry the line (when it can be found) and the
/// field path; the caller adds the file name.
pub fn parse(text: &str) -> Result<NetCase, InputError> {
    let raw: RawCase = serde_json::from_str(text).map_err(|e| {
        InputError::new(format!("invalid case JSON: {e}"))
            .at_line(e.line().max(1))
            .at_field(json_error_field(&e))
    })?;
    let locate = |section: &str, token: &str| find_line(text, section, token);

    let hosts: Option<Vec<&str>> = raw
        .hosts
        .as_ref()
        .map(|h| h.iter().map(String::as_str).collect());
    let check_host = |h: &str, field: String, section: &str| -> Result<(), InputError> {
        match &hosts {
            Some(list) if !list.contains(&h) => Err(InputError::new(format!(
                "unknown host `{h}`: expected one of the `hosts` list"
            ))
            .at_field(field)
            .at_line(locate(section, h))),
            _ => Ok(()),
        }
    };

    // Links: a split-duplex link becomes NAME_UP and NAME_DOWN.
    let mut links = Vec::new();
    let mut by_name: BTreeMap<String, LinkId> = BTreeMap::new();
    let mut split_names: BTreeMap<&str, ()> = BTreeMap::new();
    for (i, l) in raw.links.iter().enumerate() {
        let at = |field: &str| {
            InputError::new("")
                .at_field(format!("links[{i}].{field}"))
                .at_line(locate("links", &l.name))
        };
        let with = |field: &str, msg: String| InputError {
            message: msg,
            ..at(field)
        };
        // The machine files' ranges: beyond them the solver's figures (shares weighted by
        // 1 / latency, levels capacity / usage) leave the doubles' range.
        if !(l.bandwidth.is_finite() && l.bandwidth > 0.0)
            || units::check_number(Kind::BytesPerSec, l.bandwidth).is_err()
        {
            return Err(with(
                "bandwidth",
                format!(
                    "link `{}` has bandwidth {:?}: expected a number of bytes per second {}",
                    l.name,
                    l.bandwidth,
                    Kind::BytesPerSec.range().2
                ),
            ));
        }
        if units::check_number(Kind::Seconds, l.latency).is_err() {
            return Err(with(
                "latency",
                format!(
                    "link `{}` has latency {:?}: expected 0 or a number of seconds {}",
                    l.name,
                    l.latency,
                    Kind::Seconds.range().2
                ),
            ));
        }
        let mut add = |name: String, sharing: Sharing| -> Result<(), InputError> {
            if by_name.contains_key(&name) {
                return Err(with("name", format!("duplicate link name `{name}`")));
            }
            by_name.insert(name, LinkId(links.len() as u32));
            links.push(CaseLink {
                bandwidth_bytes_per_sec: l.bandwidth,
                latency_s: l.latency,
                sharing,
            });
            Ok(())
        };
        match l.sharing {
            RawSharing::Shared => add(l.name.clone(), Sharing::Shared)?,
            RawSharing::Fatpipe => add(l.name.clone(), Sharing::Fatpipe)?,
            RawSharing::SplitDuplex => {
                split_names.insert(&l.name, ());
                add(format!("{}_UP", l.name), Sharing::Shared)?;
                add(format!("{}_DOWN", l.name), Sharing::Shared)?;
            }
        }
    }

    let mut routes: BTreeMap<(&str, &str), Vec<LinkId>> = BTreeMap::new();
    for (i, r) in raw.routes.iter().enumerate() {
        check_host(&r.src, format!("routes[{i}].src"), "routes")?;
        check_host(&r.dst, format!("routes[{i}].dst"), "routes")?;
        let mut ids = Vec::with_capacity(r.links.len());
        for (j, name) in r.links.iter().enumerate() {
            let field = format!("routes[{i}].links[{j}]");
            let Some(&id) = by_name.get(name) else {
                let hint = if split_names.contains_key(name.as_str()) {
                    format!(": `{name}` is split-duplex, name `{name}_UP` or `{name}_DOWN`")
                } else {
                    ": expected the name of a link of `links`".to_string()
                };
                return Err(InputError::new(format!(
                    "route {} -> {} names unknown link `{name}`{hint}",
                    r.src, r.dst
                ))
                .at_field(field)
                .at_line(locate("routes", name)));
            };
            ids.push(id);
        }
        if ids.is_empty() {
            return Err(InputError::new(format!(
                "route {} -> {} has no links: expected at least one",
                r.src, r.dst
            ))
            .at_field(format!("routes[{i}].links")));
        }
        if routes.insert((&r.src, &r.dst), ids).is_some() {
            return Err(InputError::new(format!(
                "duplicate route {} -> {}: expected one route per ordered host pair",
                r.src, r.dst
            ))
            .at_field(format!("routes[{i}]")));
        }
    }

    let mut flows = Vec::with_capacity(raw.flows.len());
    let mut ids: BTreeMap<&str, ()> = BTreeMap::new();
    for (i, f) in raw.flows.iter().enumerate() {
        let err = |field: &str, msg: String| {
            InputError::new(msg)
                .at_field(format!("flows[{i}].{field}"))
                .at_line(locate("flows", &f.id))
        };
        if ids.insert(&f.id, ()).is_some() {
            return Err(err("id", format!("duplicate flow id `{}`", f.id)));
        }
        check_host(&f.src, format!("flows[{i}].src"), "flows")?;
        check_host(&f.dst, format!("flows[{i}].dst"), "flows")?;
        if units::check_number(Kind::Bytes, f.bytes).is_err() {
            return Err(err(
                "bytes",
                format!(
                    "flow `{}` has {:?} bytes: expected 0 or a number of bytes {}",
                    f.id,
                    f.bytes,
                    Kind::Bytes.range().2
                ),
            ));
        }
        if !(f.start.is_finite() && (0.0..=MAX_START_S).contains(&f.start)) {
            return Err(err(
                "start",
                format!(
                    "flow `{}` starts at {}: expected a number of seconds from 0 to {MAX_START_S}",
                    f.id, f.start
                ),
            ));
        }
        let Some(route) = routes.get(&(f.src.as_str(), f.dst.as_str())) else {
            return Err(err(
                "dst",
                format!(
                    "flow `{}`: no route from `{}` to `{}` in `routes`",
                    f.id, f.src, f.dst
                ),
            ));
        };
        flows.push(CaseFlow {
            id: f.id.clone(),
            route: route.clone(),
            bytes: f.bytes,
            start_s: f.start,
        });
    }
    Ok(NetCase { links, flows })
}

impl NetCase {
    /// The flows, in file order.
    pub fn flows(&self) -> &[CaseFlow] {
        &self.flows
    }

    /// Simulate every flow and return `(id, finish date in seconds)` in file order.
    pub fn run(&self, mode: SharingMode) -> Vec<(String, f64)> {
        self.run_observed(mode, 0.0, &mut |_| {})
    }

    /// [`NetCase::run`] with the re-share after completions put off by up to `reshare_delay_s`
    /// ([`FluidNetwork::set_reshare_delay_s`]; 0: exact), telling `finished` how many flows
    /// ended at each date flows end.
    pub fn run_observed(
        &self,
        mode: SharingMode,
        reshare_delay_s: f64,
        finished: &mut dyn FnMut(usize),
    ) -> Vec<(String, f64)> {
        let mut net = FluidNetwork::new(mode);
        net.set_reshare_delay_s(reshare_delay_s);
        for l in &self.links {
            net.add_link(l.bandwidth_bytes_per_sec, l.latency_s, l.sharing);
        }
        let specs = self
            .flows
            .iter()
            .map(|f| (f.start_s, FlowSpec::new(f.route.clone(), f.bytes)))
            .collect();
        let finish = run_flow_set_observed(&mut net, specs, finished);
        self.flows
            .iter()
            .map(|f| f.id.clone())
            .zip(finish)
            .collect()
    }
}

/// `{"flow_id": finish_time_s, ...}` in the given order; floats in shortest round-trip form.
pub fn finish_times_json(results: &[(String, f64)]) -> String {
    let map: serde_json::Map<String, serde_json::Value> = results
        .iter()
        .map(|(id, t)| (id.clone(), serde_json::Value::from(*t)))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// The field a serde_json error is about, when its message names one.
fn json_error_field(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    msg.split('`')
        .nth(1)
        .filter(|_| msg.contains("field"))
        .map_or_else(|| "(document)".to_string(), str::to_string)
}

/// Line of the first `"token"` after the `"section"` key, or of the section itself.
fn find_line(text: &str, section: &str, token: &str) -> usize {
    let start = text.find(&format!("\"{section}\"")).unwrap_or(0);
    let offset = text[start..]
        .find(&format!("\"{token}\""))
        .map_or(start, |o| start + o);
    line_of_offset(text, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"{"hosts": ["a", "b"],
 "links": [{"name": "l", "bandwidth": 1e9, "latency": 1e-3, "sharing": "SHARED"}],
 "routes": [{"src": "a", "dst": "b", "links": ["l"]}],
 "flows": [{"id": "f", "src": "a", "dst": "b", "bytes": 1000000000, "start": 0.0}]}"#;

    #[test]
    fn sanity_case_from_the_oracle_readme() {
        // 1 GB over one 1 GB/s link with 1 ms latency ends at 1.001 s.
        let case = parse(ONE).unwrap();
        assert_eq!(case.run(SharingMode::Plain), vec![("f".to_string(), 1.001)]);
        assert_eq!(
            finish_times_json(&case.run(SharingMode::SimGrid)),
            r#"{"f":1.001}"#
        );
    }

    /// Found by fuzzing (`net`): a 1e308 s latency made SimGrid's 1 / latency weights
    /// underflow and the solver panic; figures outside the machine files' ranges are refused.
    #[test]
    fn latencies_and_bandwidths_past_their_ranges_are_refused() {
        let err = parse(&ONE.replace("1e-3", "1e308")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2: field `links[0].latency`: link `l` has latency 1e308: expected 0 or a \
             number of seconds from 1 fs to 1 hour"
        );
        let err = parse(&ONE.replace("1e9,", "1e300,")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2: field `links[0].bandwidth`: link `l` has bandwidth 1e300: expected a \
             number of bytes per second from 1 B/s to 1 PB/s"
        );
    }

    #[test]
    fn split_duplex_links_are_named_by_direction() {
        let text = ONE
            .replace("SHARED", "SPLITDUPLEX")
            .replace(r#"["l"]"#, r#"["l_UP"]"#);
        assert!(parse(&text).is_ok());
        let err = parse(&ONE.replace("SHARED", "SPLITDUPLEX")).unwrap_err();
        assert!(err.message.contains("l_UP"), "{err}");
    }

    #[test]
    fn unknown_link_names_route_field_and_line() {
        let err = parse(&ONE.replace(r#"["l"]"#, r#"["zz"]"#)).unwrap_err();
        assert!(err.message.contains("unknown link `zz`"), "{err}");
        assert_eq!(err.location.field.as_deref(), Some("routes[0].links[0]"));
        assert_eq!(err.location.line, Some(3));
    }

    #[test]
    fn zero_bandwidth_is_refused() {
        let err = parse(&ONE.replace("1e9", "0")).unwrap_err();
        assert!(err.message.contains("bandwidth 0"), "{err}");
        assert_eq!(err.location.field.as_deref(), Some("links[0].bandwidth"));
        assert_eq!(err.location.line, Some(2));
    }

    #[test]
    fn malformed_json_reports_its_line() {
        let err = parse("{\n\"links\": [,]}").unwrap_err();
        assert!(err.message.contains("invalid case JSON"), "{err}");
        assert_eq!(err.location.line, Some(2));
    }

    #[test]
    fn missing_route_is_refused() {
        let text = ONE.replace(
            r#""src": "a", "dst": "b", "bytes""#,
            r#""src": "b", "dst": "a", "bytes""#,
        );
        let err = parse(&text).unwrap_err();
        assert!(err.message.contains("no route from `b` to `a`"), "{err}");
    }
}
