//! Reading cluster files (`docs/cluster-format.md`): raw TOML structures with spans, then checks
//! that name file, line and field. A file without a `[cluster]` table is a machine file.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::machine::format::RawQuantity;
use crate::machine::{MemKind, MemNodeId};
use hetsim_core::error::{InputError, read_input};
use hetsim_core::files::{FileRole, InputFiles, RoleFile};
use hetsim_core::units::{self, Kind};

use super::{Cluster, Nic, OverheadTable, Switch};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClusterFile {
    cluster: Spanned<RawHeader>,
    nic: Option<Spanned<RawNic>>,
    switch: Option<Spanned<RawSwitch>>,
    overheads: Option<Spanned<RawOverheads>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    name: Spanned<String>,
    // Accepted for the reader of the file; reports use the name.
    #[allow(dead_code)]
    description: Option<String>,
    node: Spanned<String>,
    nodes: Option<Spanned<i64>>,
    gpus_per_node: Option<Spanned<i64>>,
    gpu_direct: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNic {
    bandwidth: Spanned<RawQuantity>,
    latency: Option<Spanned<RawQuantity>>,
    count: Option<Spanned<i64>>,
    attach: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    kind: Option<Spanned<String>>,
    latency: Option<Spanned<RawQuantity>>,
    nodes_per_leaf: Option<Spanned<i64>>,
    oversubscription: Option<Spanned<RawQuantity>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverheads {
    rows: Option<Vec<Spanned<RawRow>>>,
    csv: Option<Spanned<String>>,
    bytes_column: Option<String>,
    send_column: Option<String>,
    recv_column: Option<String>,
    unit: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    bytes: Spanned<RawQuantity>,
    send: Spanned<RawQuantity>,
    recv: Spanned<RawQuantity>,
}

/// The cluster file being read (the machine reader's context: same error locations).
type Ctx<'a> = crate::machine::FileCtx<'a>;

/// An integer field of at least `min` that fits in `u32`.
fn count(ctx: &Ctx<'_>, v: &Spanned<i64>, field: &str, min: i64) -> Result<u32, InputError> {
    let x = *v.get_ref();
    if x < min || x > i64::from(u32::MAX) {
        return Err(ctx.err(
            v.span(),
            field,
            format!("{x}: expected an integer >= {min}"),
        ));
    }
    Ok(x as u32)
}

/// Load a cluster file, or a plain machine file as a one-node cluster.
pub(super) fn load(path: &Path) -> Result<Cluster, InputError> {
    let text = read_input(path)?;
    from_str(&text, path)
}

/// Parse cluster (or machine) file `text`; `path` locates errors and relative paths.
pub(super) fn from_str(text: &str, path: &Path) -> Result<Cluster, InputError> {
    // A cluster file is the one with a `[cluster]` table; TOML errors of a machine file are the
    // machine loader's to report.
    let is_cluster = toml::from_str::<toml::Table>(text)
        .map(|t| t.contains_key("cluster"))
        .unwrap_or_else(|_| text.lines().any(|l| l.trim() == "[cluster]"));
    if !is_cluster {
        return crate::machine::from_str(text, path).map(Cluster::single_node);
    }
    let ctx = Ctx { text, file: path };
    let raw: RawClusterFile =
        toml::from_str(text).map_err(|e| crate::machine::toml_error(&ctx, &e))?;
    let h = raw.cluster.get_ref();
    let dir = path.parent().unwrap_or(Path::new("."));
    let node_path: PathBuf = dir.join(h.node.get_ref());
    if !node_path.is_file() {
        return Err(ctx.err(
            h.node.span(),
            "cluster.node",
            format!(
                "node machine file `{}` not found (looked for {}; the path is relative to the \
                 cluster file)",
                h.node.get_ref(),
                node_path.display()
            ),
        ));
    }
    let machine = crate::machine::load(&node_path).map_err(|e| {
        let inner = e.to_string();
        ctx.err(
            h.node.span(),
            "cluster.node",
            format!("the node machine file does not load: {inner}"),
        )
    })?;
    let ngpu = machine.gpus().len() as i64;
    let nodes = match &h.nodes {
        Some(v) => count(&ctx, v, "cluster.nodes", 1)?,
        None => 1,
    };
    let gpus = match &h.gpus_per_node {
        Some(v) => {
            let g = count(&ctx, v, "cluster.gpus_per_node", 1)?;
            if i64::from(g) > ngpu {
                return Err(ctx.err(
                    v.span(),
                    "cluster.gpus_per_node",
                    format!(
                        "{g} GPUs per node, but the node machine `{}` has {ngpu}; expected 1 to \
                         {ngpu}",
                        machine.name()
                    ),
                ));
            }
            g
        }
        None => {
            if ngpu == 0 {
                return Err(ctx.err(
                    h.node.span(),
                    "cluster.node",
                    format!(
                        "the node machine `{}` has no GPU: ranks run one per GPU",
                        machine.name()
                    ),
                ));
            }
            ngpu as u32
        }
    };
    let Some(nic) = &raw.nic else {
        return Err(ctx.err(
            raw.cluster.span(),
            "nic",
            "a cluster file needs a [nic] table (bandwidth, latency, count)",
        ));
    };
    let n = nic.get_ref();
    let bandwidth = ctx.quantity(&n.bandwidth, Kind::BytesPerSec, "nic.bandwidth")?;
    if bandwidth <= 0.0 {
        return Err(ctx.err(
            n.bandwidth.span(),
            "nic.bandwidth",
            "zero NIC bandwidth: no message between nodes could finish; expected a bandwidth \
             such as \"6.8 GB/s\", greater than zero",
        ));
    }
    let latency = match &n.latency {
        Some(q) => ctx.quantity(q, Kind::Seconds, "nic.latency")?,
        None => 0.0,
    };
    let count = match &n.count {
        Some(v) => count(&ctx, v, "nic.count", 1)?,
        None => 1,
    };
    let attach = match &n.attach {
        Some(a) => match machine.memory_node_by_name(a.get_ref()) {
            Some(m) => m.id,
            None => {
                return Err(ctx.err(
                    a.span(),
                    "nic.attach",
                    format!(
                        "unknown memory node `{}`; the node machine has: {}",
                        a.get_ref(),
                        machine
                            .memory_nodes()
                            .iter()
                            .map(|m| m.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        },
        None => machine
            .memory_nodes()
            .iter()
            .find(|m| m.kind == MemKind::Ram)
            .map_or(MemNodeId(0), |m| m.id),
    };
    let switch = match &raw.switch {
        None => Switch::Crossbar { latency_s: 0.0 },
        Some(s) => switch(&ctx, s)?,
    };
    let overheads = match &raw.overheads {
        None => OverheadTable::default(),
        Some(o) => overheads(&ctx, o, dir)?,
    };
    let mut sources = vec![RoleFile::new(FileRole::Cluster, path)];
    if let Some(csv) = raw
        .overheads
        .as_ref()
        .and_then(|o| o.get_ref().csv.as_ref())
    {
        sources.push(RoleFile::new(
            FileRole::OverheadsCsv,
            dir.join(csv.get_ref()),
        ));
    }
    let mut cluster = Cluster::single_node(machine)
        .with_name(h.name.get_ref().clone())
        .with_network(
            Nic {
                bandwidth_bytes_per_sec: bandwidth,
                latency_s: latency,
                count,
                attach,
            },
            switch,
            h.gpu_direct.unwrap_or(false),
            overheads,
        )
        .map_err(|e| e.in_file(path))?;
    cluster.sources = InputFiles(sources);
    cluster.with_shape(nodes, gpus).map_err(|e| e.in_file(path))
}

fn switch(ctx: &Ctx<'_>, s: &Spanned<RawSwitch>) -> Result<Switch, InputError> {
    let r = s.get_ref();
    let latency_s = match &r.latency {
        Some(q) => ctx.quantity(q, Kind::Seconds, "switch.latency")?,
        None => 0.0,
    };
    let kind = r.kind.as_ref().map_or("crossbar", |k| k.get_ref().as_str());
    match kind {
        "crossbar" => {
            for (f, present) in [
                ("switch.nodes_per_leaf", r.nodes_per_leaf.is_some()),
                ("switch.oversubscription", r.oversubscription.is_some()),
            ] {
                if present {
                    return Err(ctx.err(
                        s.span(),
                        f,
                        "only a fat tree has this field; a crossbar has only `latency`",
                    ));
                }
            }
            Ok(Switch::Crossbar { latency_s })
        }
        "fat-tree" => {
            let Some(npl) = &r.nodes_per_leaf else {
                return Err(ctx.err(
                    s.span(),
                    "switch.nodes_per_leaf",
                    "a fat tree needs nodes_per_leaf (nodes on one leaf switch)",
                ));
            };
            let nodes_per_leaf = count(ctx, npl, "switch.nodes_per_leaf", 1)?;
            let oversubscription = match &r.oversubscription {
                None => 1.0,
                Some(q) => match q.get_ref() {
                    RawQuantity::Number(v) if v.is_finite() && *v > 0.0 => *v,
                    RawQuantity::Number(v) => {
                        return Err(ctx.err(
                            q.span(),
                            "switch.oversubscription",
                            format!(
                                "{v}: expected a ratio > 0 (a leaf's down capacity over its up \
                                 capacity; 1 = full bisection)"
                            ),
                        ));
                    }
                    RawQuantity::Text(t) => {
                        return Err(ctx.err(
                            q.span(),
                            "switch.oversubscription",
                            format!("\"{t}\": expected a plain number > 0, such as 2.0"),
                        ));
                    }
                },
            };
            Ok(Switch::FatTree {
                nodes_per_leaf,
                oversubscription,
                latency_s,
            })
        }
        other => Err(ctx.err(
            r.kind.as_ref().map_or(s.span(), |k| k.span()),
            "switch.kind",
            format!("unknown switch kind `{other}`: expected `crossbar` or `fat-tree`"),
        )),
    }
}

fn overheads(
    ctx: &Ctx<'_>,
    o: &Spanned<RawOverheads>,
    dir: &Path,
) -> Result<OverheadTable, InputError> {
    let r = o.get_ref();
    let rows = match (&r.rows, &r.csv) {
        (Some(_), Some(c)) => {
            return Err(ctx.err(
                c.span(),
                "overheads.csv",
                "give either `rows` or `csv`, not both",
            ));
        }
        (None, None) => {
            return Err(ctx.err(
                o.span(),
                "overheads",
                "expected `rows = [...]` or `csv = \"file\"`",
            ));
        }
        (Some(rows), None) => {
            let mut out = Vec::with_capacity(rows.len());
            for (i, row) in rows.iter().enumerate() {
                let f = |x: &str| format!("overheads.rows[{i}].{x}");
                let w = row.get_ref();
                out.push((
                    ctx.quantity_base(&w.bytes, Kind::Bytes, &f("bytes"))?,
                    ctx.quantity(&w.send, Kind::Seconds, &f("send"))?,
                    ctx.quantity(&w.recv, Kind::Seconds, &f("recv"))?,
                ));
                if let Err(e) = OverheadTable::new(out.clone()) {
                    return Err(ctx.err(row.span(), format!("overheads.rows[{i}]"), e.message));
                }
            }
            out
        }
        (None, Some(c)) => {
            let unit = r.unit.as_ref().map_or("us", |u| u.get_ref().as_str());
            let scale = units::parse_secs(&format!("1 {unit}")).map_err(|e| {
                ctx.err(
                    r.unit.as_ref().map_or(o.span(), |u| u.span()),
                    "overheads.unit",
                    e.message,
                )
            })?;
            let csv_path = dir.join(c.get_ref());
            let text = read_input(&csv_path)
                .map_err(|e| ctx.err(c.span(), "overheads.csv", e.to_string()))?;
            read_csv(
                &text,
                &csv_path,
                r.bytes_column.as_deref().unwrap_or("message_bytes"),
                r.send_column.as_deref().unwrap_or("oscn"),
                r.recv_column.as_deref().unwrap_or("orn"),
                scale,
            )?
        }
    };
    OverheadTable::new(rows).map_err(|e| ctx.err(o.span(), "overheads", e.message))
}

/// Rows (bytes, o_s s, o_r s) of an overhead CSV: `#` comments, a header, then numbers
/// (read by the `csv` crate, cells trimmed).
fn read_csv(
    text: &str,
    path: &Path,
    bytes_col: &str,
    send_col: &str,
    recv_col: &str,
    scale_s: f64,
) -> Result<Vec<(f64, f64, f64)>, InputError> {
    let mut reader = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(text.as_bytes());
    let at = |msg: String, pos: Option<&csv::Position>| {
        let e = InputError::new(msg).in_file(path);
        match pos {
            Some(p) => e.at_line(p.line() as usize),
            None => e,
        }
    };
    let syntax = |e: csv::Error| at(format!("not a valid CSV: {e}"), e.position());
    let header = reader.headers().map_err(syntax)?.clone();
    let find = |c: &str| {
        header.iter().position(|h| h == c).ok_or_else(|| {
            at(
                format!(
                    "no column `{c}` in the header (columns: {})",
                    header.iter().collect::<Vec<_>>().join(", ")
                ),
                header.position(),
            )
        })
    };
    let (b, s, r) = (find(bytes_col)?, find(send_col)?, find(recv_col)?);
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(syntax)?;
        let loc = |msg: String| at(msg, record.position());
        let get = |j: usize, name: &str| -> Result<f64, InputError> {
            let cell = record.get(j).unwrap_or("");
            match cell.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(loc(format!(
                    "column `{name}`: `{cell}` is not a finite number >= 0"
                ))
                .at_field(name.to_string())),
            }
        };
        let row = (
            get(b, bytes_col)?,
            get(s, send_col)? * scale_s,
            get(r, recv_col)? * scale_s,
        );
        if let Some(last) = rows.last().map(|r: &(f64, f64, f64)| r.0)
            && row.0 <= last
        {
            return Err(loc(format!(
                "message size {} does not increase (previous row: {last})",
                row.0
            ))
            .at_field(bytes_col.to_string()));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(InputError::new("no data rows (expected a header then rows)").in_file(path));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_dir() -> PathBuf {
        hetsim_testkit::repo("calibration/x.toml")
    }

    fn parse(extra: &str) -> Result<Cluster, InputError> {
        let text = format!(
            "[cluster]\nname = \"c\"\nnode = \"hdpex-p100-node.toml\"\nnodes = 4\n\
             gpus_per_node = 2\n[nic]\nbandwidth = \"6.8 GB/s\"\nlatency = \"1 us\"\n{extra}"
        );
        from_str(&text, &node_dir())
    }

    #[test]
    fn reads_a_cluster() {
        let c = parse("[switch]\nkind = \"fat-tree\"\nnodes_per_leaf = 2\noversubscription = 2\n")
            .unwrap();
        assert_eq!((c.nodes(), c.gpus_per_node(), c.ranks()), (4, 2, 8));
        assert_eq!(c.nic().unwrap().bandwidth_bytes_per_sec, 6.8e9);
        assert_eq!(c.nic().unwrap().latency_s, 1e-6);
        assert!(matches!(
            c.switch(),
            Switch::FatTree { nodes_per_leaf: 2, oversubscription, .. } if *oversubscription == 2.0
        ));
    }

    #[test]
    fn overheads_from_the_seed_csv_format() {
        let csv = "# comment\nmessage_bytes,oscn,orn\n1,4,3\n1048576,65,67\n";
        let rows = read_csv(
            csv,
            Path::new("o.csv"),
            "message_bytes",
            "oscn",
            "orn",
            1e-6,
        )
        .unwrap();
        assert_eq!(rows, vec![(1.0, 4e-6, 3e-6), (1048576.0, 65e-6, 67e-6)]);
        let e = read_csv(
            "message_bytes,oscn,orn\n1,nan,3\n",
            Path::new("o.csv"),
            "message_bytes",
            "oscn",
            "orn",
            1e-6,
        )
        .unwrap_err();
        assert_eq!(e.location.line, Some(2));
        assert_eq!(e.location.field.as_deref(), Some("oscn"));
        // Lines count comments and blank lines: the bad row is the file's fifth line.
        let e = read_csv(
            "# c\n\nmessage_bytes, oscn, orn\n1, 4, 3\n2, -1, 3\n",
            Path::new("o.csv"),
            "message_bytes",
            "oscn",
            "orn",
            1e-6,
        )
        .unwrap_err();
        assert_eq!(e.location.line, Some(5));
        let e = read_csv(
            "bytes,oscn,orn\n1,2,3\n",
            Path::new("o.csv"),
            "message_bytes",
            "oscn",
            "orn",
            1.0,
        )
        .unwrap_err();
        assert_eq!(e.location.line, Some(1));
        assert!(e.message.contains("no column `message_bytes`"), "{e}");
    }

    #[test]
    fn located_errors() {
        let field = |extra: &str| {
            let e = parse(extra).unwrap_err();
            assert!(e.location.line.is_some(), "{e}");
            e.location.field.unwrap_or_default()
        };
        assert_eq!(field("[switch]\nkind = \"torus\"\n"), "switch.kind");
        assert_eq!(
            field("[switch]\nkind = \"fat-tree\"\nnodes_per_leaf = 2\noversubscription = 0\n"),
            "switch.oversubscription"
        );
        assert_eq!(
            field("[overheads]\nrows = [{bytes = 1, send = nan, recv = \"1 s\"}]\n"),
            "overheads.rows[0].send"
        );
    }
}
