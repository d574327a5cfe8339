//! A Gantt chart of a run as a standalone SVG file.
//!
//! One row per worker (tasks coloured by codelet, the time spent holding a task whose data is
//! not there yet in light grey), then one row per transfer direction used (`RAM->CUDA0`, ...;
//! fetches, prefetches and write-backs in three colours), a time axis in seconds and a legend.
//!
//! The SVG is written by hand rather than with a plotting crate: a Gantt chart is rectangles,
//! labels and a legend, and drawing them directly keeps the output small, deterministic and
//! free of a dependency. To stay readable (and small) for runs of tens of thousands of tasks,
//! neighbouring boxes of one row closer than half a pixel are merged when they have the same
//! colour or either is narrower than a pixel; a merged box takes the colour covering most of
//! it. Zooming into the SVG shows every box at least a pixel wide at the chart's nominal
//! width.
//!
//! On a cluster, rows go node by node under the node's name: its workers, its transfer
//! directions, and a row of the MPI messages it sends; the title counts the messages.
//!
//! For machines with many cores, [`GanttOptions::rows`] can leave out the workers that ran
//! nothing and [`GanttOptions::group`] can draw the CPU workers of one memory node as one
//! row stacking how many of them are busy, per codelet, over time.
//!
//! The writer keeps one 24-byte record per task, waiting period and transfer until
//! [`GanttWriter::finish`], since it needs the run's length to scale the chart.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::codelet_rgb;
use hetsim_runtime::observe::WorkerStatus;
use hetsim_runtime::{Observer, SimEvent, TransferKind, WorkerKind};

/// Size, title and rows of the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct GanttOptions {
    /// Width of the time axis, pixels.
    pub width_px: u32,
    /// Height of one row, pixels.
    pub row_px: u32,
    /// Title; default: machine, scheduler, tasks and makespan.
    pub title: Option<String>,
    /// Which workers get a row.
    pub rows: GanttRows,
    /// Whether identical CPU workers share a row.
    pub group: GanttGroup,
}

impl Default for GanttOptions {
    fn default() -> Self {
        GanttOptions {
            width_px: 1600,
            row_px: 16,
            title: None,
            rows: GanttRows::All,
            group: GanttGroup::None,
        }
    }
}

/// Which workers get a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GanttRows {
    /// Every worker.
    #[default]
    All,
    /// Only the workers that ran a task (a row of grouped workers if one of them did); the
    /// title says how many were left out.
    Busy,
}

/// Whether workers share rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GanttGroup {
    /// One row per worker.
    #[default]
    None,
    /// The CPU workers of one memory node (identical for the runtime: same kind, same memory
    /// node, same device) share one taller row that stacks, over time, how many of them run
    /// each codelet or wait for data (averaged over each pixel's span). A lone such worker
    /// keeps its own row; GPU workers always do.
    Identical,
}

/// One box: a row, a colour index, a span in ns.
#[derive(Debug, Clone, Copy)]
struct GBox {
    row: u32,
    colour: u16,
    start: u64,
    end: u64,
}

/// Writes an SVG Gantt chart of a run at [`finish`](Self::finish).
#[derive(Debug)]
pub struct GanttWriter<W: Write> {
    out: Option<W>,
    opts: GanttOptions,
    title: String,
    worker_names: Vec<String>,
    /// Per worker: the group it belongs to when CPU workers of one node share a row
    /// (`u32::MAX`: its own row).
    worker_group: Vec<u32>,
    /// Per worker: tasks it ran.
    worker_tasks: Vec<u64>,
    /// Per worker: its node.
    worker_node: Vec<u32>,
    /// Names of one node's memory nodes (without the node's prefix on a cluster).
    node_names: Vec<String>,
    /// On a cluster: the nodes' names (empty on one machine).
    cluster_nodes: Vec<String>,
    /// Per rank: its node.
    rank_node: Vec<u32>,
    codelets: Vec<String>,
    /// Per codelet: whether only messages have it (left out of the legend: messages have
    /// their own colour).
    message_codelets: Vec<bool>,
    nworkers: u32,
    /// Memory nodes per node.
    nnodes: u32,
    boxes: Vec<GBox>,
    /// Per worker: (task start or waiting start, codelet) of what is open.
    running: Vec<Option<(u64, u16)>>,
    fetching: Vec<Option<u64>>,
    /// Per in-flight transfer id: (start, pair row, kind colour).
    open: Vec<Option<(u64, u32, u16)>>,
    /// Per message task in flight: (start, sending node).
    messages_open: BTreeMap<u32, (u64, u32)>,
    /// Messages between ranks, and their bytes.
    messages: u64,
    message_bytes: f64,
    end: u64,
    makespan_s: f64,
    tasks: u64,
}

impl GanttWriter<BufWriter<File>> {
    /// A writer to a new file at `path` (buffered), with default options.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        Self::create_with(path, GanttOptions::default())
    }

    /// A writer to a new file at `path` (buffered).
    pub fn create_with(path: impl AsRef<Path>, opts: GanttOptions) -> io::Result<Self> {
        Ok(Self::with_options(
            BufWriter::new(File::create(path)?),
            opts,
        ))
    }
}

/// Colour slots after the codelets: fetch, prefetch, write-back, waiting for data.
const FETCH: u16 = 0;
const PREFETCH: u16 = 1;
const WRITEBACK: u16 = 2;
const WAITING: u16 = 3;
const SPECIAL: [(&str, (u8, u8, u8)); 4] = [
    ("fetch", (40, 40, 40)),
    ("prefetch", (140, 140, 140)),
    ("write-back", (0, 90, 200)),
    ("FetchingInput", (215, 215, 215)),
];
/// On a cluster, one more colour: MPI messages.
const MESSAGE: u16 = 4;
const MESSAGE_COLOUR: (&str, (u8, u8, u8)) = ("MPI message", (150, 20, 70));

impl<W: Write> GanttWriter<W> {
    /// A writer to `out` with default options.
    pub fn new(out: W) -> Self {
        Self::with_options(out, GanttOptions::default())
    }

    /// A writer to `out`.
    pub fn with_options(out: W, opts: GanttOptions) -> Self {
        GanttWriter {
            out: Some(out),
            opts,
            title: String::new(),
            worker_names: Vec::new(),
            worker_group: Vec::new(),
            worker_tasks: Vec::new(),
            worker_node: Vec::new(),
            node_names: Vec::new(),
            cluster_nodes: Vec::new(),
            rank_node: Vec::new(),
            codelets: Vec::new(),
            message_codelets: Vec::new(),
            nworkers: 0,
            nnodes: 0,
            boxes: Vec::new(),
            running: Vec::new(),
            fetching: Vec::new(),
            open: Vec::new(),
            messages_open: BTreeMap::new(),
            messages: 0,
            message_bytes: 0.0,
            end: 0,
            makespan_s: 0.0,
            tasks: 0,
        }
    }

    fn ncod(&self) -> u16 {
        self.codelets.len() as u16
    }

    /// Draw the chart, write it and give the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        let svg = self.render();
        let mut out = self
            .out
            .take()
            .ok_or_else(|| io::Error::other("Gantt writer already finished"))?;
        out.write_all(svg.as_bytes())?;
        out.flush()?;
        Ok(out)
    }

    /// Nodes of the run (1 on one machine).
    fn node_count(&self) -> usize {
        self.cluster_nodes.len().max(1)
    }

    /// The source row of transfers from `src` to `dst` (memory nodes of one node, global
    /// ids), after the workers' rows: one per node and direction.
    fn pair_row(&self, src: u32, dst: u32) -> u32 {
        let m = self.nnodes.max(1);
        self.nworkers + (dst / m) * m * m + (src % m) * m + dst % m
    }

    /// The source row of the messages `node` sends, after the transfer rows.
    fn message_row(&self, node: u32) -> u32 {
        self.nworkers + self.node_count() as u32 * self.nnodes * self.nnodes + node
    }

    /// The rows drawn, in order, and where each source row (worker, then transfer direction,
    /// then a node's messages) goes (`u32::MAX`: not drawn). Node by node on a cluster: its
    /// workers, its transfer directions, its messages.
    fn layout(&self) -> (Vec<Row>, Vec<u32>) {
        let nw = self.nworkers as usize;
        let nn = self.nnodes as usize;
        let nodes = self.node_count();
        let pairs = nodes * nn * nn;
        let mut used = vec![false; pairs + nodes];
        for b in &self.boxes {
            if b.row >= self.nworkers {
                used[(b.row - self.nworkers) as usize] = true;
            }
        }
        let mut row_of = vec![u32::MAX; nw + used.len()];
        let mut rows: Vec<Row> = Vec::new();
        // Workers: a grouped worker goes to its group's row, made at its first member.
        let mut group_row: Vec<u32> = vec![u32::MAX; nw];
        for node in 0..nodes as u32 {
            let workers = (0..nw).filter(|&w| self.worker_node.get(w).is_none_or(|&n| n == node));
            for w in workers {
                let name = &self.worker_names[w];
                let g = self.worker_group.get(w).copied().unwrap_or(u32::MAX);
                if g == u32::MAX {
                    if self.opts.rows == GanttRows::Busy && self.worker_tasks[w] == 0 {
                        continue;
                    }
                    row_of[w] = rows.len() as u32;
                    rows.push(Row {
                        label: name.clone(),
                        members: 1,
                        node,
                    });
                    continue;
                }
                let g = g as usize;
                if group_row[g] == u32::MAX {
                    let members: Vec<usize> = (0..nw)
                        .filter(|&v| self.worker_group[v] as usize == g)
                        .collect();
                    let busy = members.iter().any(|&v| self.worker_tasks[v] > 0);
                    if self.opts.rows == GanttRows::Busy && !busy {
                        group_row[g] = u32::MAX - 1;
                        continue;
                    }
                    group_row[g] = rows.len() as u32;
                    rows.push(Row {
                        label: format!("CPU ×{}", members.len()),
                        members: members.len() as u32,
                        node,
                    });
                }
                if group_row[g] < u32::MAX - 1 {
                    row_of[w] = group_row[g];
                }
            }
            let first = node as usize * nn * nn;
            for p in first..first + nn * nn {
                if used[p] {
                    row_of[nw + p] = rows.len() as u32;
                    let (s, d) = ((p - first) / nn, (p - first) % nn);
                    rows.push(Row {
                        label: format!("{}->{}", self.node_names[s], self.node_names[d]),
                        members: 1,
                        node,
                    });
                }
            }
            if used[pairs + node as usize] {
                row_of[nw + pairs + node as usize] = rows.len() as u32;
                rows.push(Row {
                    label: "MPI send".to_string(),
                    members: 1,
                    node,
                });
            }
        }
        (rows, row_of)
    }

    /// The SVG text.
    fn render(&mut self) -> String {
        let o = self.opts.clone();
        let row_h = f64::from(o.row_px.max(4));
        let width = f64::from(o.width_px.max(100));
        let (rows, row_of) = self.layout();
        // Left margin: the longest label at about 6.5 px per character of the 11 px font;
        // on a cluster, a column of node names (bold, about 7 px per character) before it.
        let longest = rows
            .iter()
            .map(|r| r.label.chars().count())
            .max()
            .unwrap_or(0);
        let node_col = match self.cluster_nodes.iter().map(|n| n.chars().count()).max() {
            Some(n) => (n as f64 * 7.0 + 16.0).ceil(),
            None => 0.0,
        };
        let left = (longest as f64 * 6.5 + 14.0).max(120.0).ceil() + node_col;
        let top = 40.0;
        // A group row is four rows high.
        let height = |r: &Row| if r.members > 1 { 4.0 * row_h } else { row_h };
        let mut row_y = Vec::with_capacity(rows.len());
        let mut plot_h = 0.0;
        for r in &rows {
            row_y.push(top + plot_h);
            plot_h += height(r);
        }
        let end = self.end.max(1) as f64;
        let px_per_ns = width / end;
        let ncod = self.ncod();
        let colours: Vec<(String, (u8, u8, u8))> = self
            .codelets
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), codelet_rgb(i)))
            .chain(SPECIAL.iter().map(|&(n, c)| (n.to_string(), c)))
            .chain(
                (!self.cluster_nodes.is_empty())
                    .then(|| (MESSAGE_COLOUR.0.to_string(), MESSAGE_COLOUR.1)),
            )
            .collect();
        let in_legend = |i: usize| !self.message_codelets.get(i).copied().unwrap_or(false);
        let legend_rows = (0..colours.len())
            .filter(|&i| in_legend(i))
            .count()
            .div_ceil(4) as f64;
        let grouped = rows.iter().any(|r| r.members > 1);
        let notes = if grouped { 18.0 } else { 0.0 };
        let total_w = left + width + 20.0;
        let total_h = top + plot_h + 40.0 + legend_rows * 18.0 + notes + 10.0;
        let mut s = String::with_capacity(64 * 1024);
        let _ = writeln!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{total_w:.0}\" height=\"{total_h:.0}\" \
             viewBox=\"0 0 {total_w:.0} {total_h:.0}\" font-family=\"sans-serif\" font-size=\"11\">"
        );
        s.push_str("<style>");
        for (i, (_, (r, g, b))) in colours.iter().enumerate() {
            let _ = write!(s, ".c{i}{{fill:#{r:02x}{g:02x}{b:02x}}}");
        }
        s.push_str("</style>\n");
        let _ = writeln!(
            s,
            "<rect width=\"{total_w:.0}\" height=\"{total_h:.0}\" fill=\"white\"/>"
        );
        let mut title = if let Some(t) = &o.title {
            t.clone()
        } else {
            self.title.clone()
        };
        let hidden = (0..self.nworkers as usize)
            .filter(|&w| row_of[w] == u32::MAX)
            .count();
        if !self.cluster_nodes.is_empty() {
            title = format!(
                "{title} · {} MPI messages ({})",
                self.messages,
                hetsim_core::units::format_bytes(self.message_bytes)
            );
        }
        if hidden > 0 {
            title = format!("{title} · {hidden} workers that ran no task not shown");
        }
        let _ = writeln!(
            s,
            "<text x=\"{left:.0}\" y=\"20\" font-size=\"14\">{}</text>",
            xml(&title)
        );
        // Row backgrounds and labels.
        for (r, row) in rows.iter().enumerate() {
            let (y, h) = (row_y[r], height(row));
            if r % 2 == 1 {
                let _ = writeln!(
                    s,
                    "<rect x=\"{left:.0}\" y=\"{y:.1}\" width=\"{width:.0}\" height=\"{h:.1}\" fill=\"#f4f4f4\"/>"
                );
            }
            if row.members > 1 {
                let _ = writeln!(
                    s,
                    "<text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
                     <text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"9\">{}</text>\
                     <text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"9\">0</text>",
                    left - 6.0,
                    y + h * 0.5,
                    xml(&row.label),
                    left - 6.0,
                    y + 9.0,
                    row.members,
                    left - 6.0,
                    y + h - 1.0,
                );
            } else {
                let _ = writeln!(
                    s,
                    "<text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                    left - 6.0,
                    y + h * 0.75,
                    xml(&row.label)
                );
            }
        }
        // Nodes: a name beside each node's rows, a line between nodes.
        if !self.cluster_nodes.is_empty() {
            let mut r = 0;
            while r < rows.len() {
                let node = rows[r].node;
                let mut last = r;
                while last + 1 < rows.len() && rows[last + 1].node == node {
                    last += 1;
                }
                let (y0, y1) = (row_y[r], row_y[last] + height(&rows[last]));
                if r > 0 {
                    let _ = writeln!(
                        s,
                        "<line x1=\"4\" y1=\"{y0:.1}\" x2=\"{:.0}\" y2=\"{y0:.1}\" stroke=\"#444\"/>",
                        left + width
                    );
                }
                let name = self
                    .cluster_nodes
                    .get(node as usize)
                    .map_or("", String::as_str);
                let _ = writeln!(
                    s,
                    "<text x=\"6\" y=\"{:.1}\" font-weight=\"bold\">{}</text>",
                    (y0 + y1) / 2.0 + 4.0,
                    xml(name)
                );
                r = last + 1;
            }
        }
        // Boxes, row by row: merged below the pixel, or stacked counts for a group.
        self.boxes
            .sort_unstable_by_key(|b| (row_of[b.row as usize], b.start, b.end, b.colour));
        let mut i = 0;
        let boxes = std::mem::take(&mut self.boxes);
        let ncolours = colours.len();
        while i < boxes.len() {
            let row = row_of[boxes[i].row as usize];
            let mut j = i;
            while j < boxes.len() && row_of[boxes[j].row as usize] == row {
                j += 1;
            }
            if row == u32::MAX {
                i = j;
                continue;
            }
            let spec = &rows[row as usize];
            let y = row_y[row as usize] + 1.0;
            let h = height(spec) - 2.0;
            let _ = write!(s, "<g transform=\"translate({left:.0},{y:.1})\">");
            if spec.members > 1 {
                let cols = width.round() as usize;
                let layers = stacked_counts(&boxes[i..j], end, cols, ncolours);
                draw_stack(&mut s, &layers, f64::from(spec.members), h);
            } else {
                merge_row(&boxes[i..j], px_per_ns, ncod, |x0, x1, colour| {
                    let _ = write!(
                        s,
                        "<rect class=\"c{colour}\" x=\"{x0:.2}\" width=\"{:.2}\" height=\"{h:.1}\"/>",
                        (x1 - x0).max(0.5)
                    );
                });
            }
            s.push_str("</g>\n");
            i = j;
        }
        self.boxes = boxes;
        // Frame and time axis.
        let axis_y = top + plot_h;
        let _ = writeln!(
            s,
            "<rect x=\"{left:.0}\" y=\"{top:.0}\" width=\"{width:.0}\" height=\"{plot_h:.1}\" fill=\"none\" stroke=\"#888\"/>"
        );
        let end_s = end / 1e9;
        let step = nice_step(end_s / 10.0);
        let mut k = 0u64;
        loop {
            let ts = k as f64 * step;
            if ts > end_s * 1.000_001 {
                break;
            }
            let x = left + ts * 1e9 * px_per_ns;
            let _ = writeln!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{top:.0}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#bbb\" stroke-width=\"0.5\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                axis_y + 4.0,
                axis_y + 16.0,
                fmt_seconds(ts, step)
            );
            k += 1;
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">time (s)</text>",
            left + width,
            axis_y + 30.0
        );
        // Legend.
        let ly = axis_y + 44.0;
        let shown = colours.iter().enumerate().filter(|&(i, _)| in_legend(i));
        for (slot, (i, (name, _))) in shown.enumerate() {
            let (col, lrow) = (slot % 4, slot / 4);
            let x = left + col as f64 * (width / 4.0);
            let y = ly + lrow as f64 * 18.0;
            let _ = writeln!(
                s,
                "<rect class=\"c{i}\" x=\"{x:.0}\" y=\"{:.0}\" width=\"12\" height=\"12\"/>\
                 <text x=\"{:.0}\" y=\"{:.0}\">{}</text>",
                y - 10.0,
                x + 16.0,
                y,
                xml(name)
            );
        }
        if grouped {
            let _ = writeln!(
                s,
                "<text x=\"{left:.0}\" y=\"{:.0}\">CPU ×N rows: how many of the N workers run \
                 each codelet or wait for data, stacked (average over each pixel's time span)</text>",
                ly + legend_rows * 18.0
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

/// A row of the chart: its label and how many workers share it (1: one worker or one
/// transfer direction).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    label: String,
    members: u32,
    /// The node whose row it is.
    node: u32,
}

/// The boxes of a group row as, per colour and per column of `end / cols` ns, the average
/// number of workers in that colour over the column.
fn stacked_counts(boxes: &[GBox], end: f64, cols: usize, ncolours: usize) -> Vec<Vec<f64>> {
    let mut layers = vec![vec![0.0; cols]; ncolours];
    if cols == 0 {
        return layers;
    }
    let col_ns = end / cols as f64;
    for b in boxes {
        let layer = &mut layers[b.colour as usize];
        let (s, e) = (b.start as f64, (b.end as f64).min(end));
        if e <= s {
            continue;
        }
        let first = ((s / col_ns) as usize).min(cols - 1);
        let last = ((e / col_ns) as usize).min(cols - 1);
        for (c, v) in layer.iter_mut().enumerate().take(last + 1).skip(first) {
            let (c0, c1) = (c as f64 * col_ns, (c + 1) as f64 * col_ns);
            let covered = e.min(c1) - s.max(c0);
            if covered > 0.0 {
                *v += covered / col_ns;
            }
        }
    }
    layers
}

/// Draw stacked layers (per column, counts out of `members`) in a box of height `h`, one
/// path per non-empty layer, bottom up in colour order.
fn draw_stack(s: &mut String, layers: &[Vec<f64>], members: f64, h: f64) {
    let cols = layers.first().map_or(0, Vec::len);
    let mut below = vec![0.0f64; cols];
    let y = |count: f64| h - (count / members).min(1.0) * h;
    for (colour, layer) in layers.iter().enumerate() {
        if layer.iter().all(|&v| v <= 0.0) {
            continue;
        }
        let above: Vec<f64> = below.iter().zip(layer).map(|(b, v)| b + v).collect();
        // Top edge left to right, then the bottom edge back, as steps one pixel wide; a
        // vertical move only where the value changes.
        let _ = write!(s, "<path class=\"c{colour}\" d=\"M0,{:.1}", y(above[0]));
        let mut last = y(above[0]);
        for (c, &v) in above.iter().enumerate().skip(1) {
            let yv = y(v);
            if (yv - last).abs() >= 0.05 {
                let _ = write!(s, "H{c}V{yv:.1}");
                last = yv;
            }
        }
        let _ = write!(s, "H{cols}V{:.1}", y(below[cols - 1]));
        let mut last = y(below[cols - 1]);
        for c in (0..cols - 1).rev() {
            let yv = y(below[c]);
            if (yv - last).abs() >= 0.05 {
                let _ = write!(s, "H{}V{yv:.1}", c + 1);
                last = yv;
            }
        }
        s.push_str("H0Z\"/>");
        below = above;
    }
}

/// Merge a row's boxes (sorted by start) below the pixel and hand each drawn box to `draw`
/// as (x0, x1, colour) in pixels.
fn merge_row(boxes: &[GBox], px_per_ns: f64, _ncod: u16, mut draw: impl FnMut(f64, f64, u16)) {
    // The box being built: extent and coverage per colour.
    let mut cur: Option<(f64, f64)> = None;
    let mut cover: Vec<(u16, f64)> = Vec::new();
    let flush = |cur: &mut Option<(f64, f64)>,
                 cover: &mut Vec<(u16, f64)>,
                 draw: &mut dyn FnMut(f64, f64, u16)| {
        if let Some((x0, x1)) = cur.take() {
            let colour = cover
                .iter()
                .copied()
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                .map_or(0, |c| c.0);
            draw(x0, x1, colour);
        }
        cover.clear();
    };
    for b in boxes {
        let x0 = b.start as f64 * px_per_ns;
        let x1 = b.end as f64 * px_per_ns;
        if let Some((c0, c1)) = cur {
            let single = cover.len() == 1 && cover[0].0 == b.colour;
            let narrow = (c1 - c0) < 1.0 || (x1 - x0) < 1.0;
            if x0 - c1 < 0.5 && (single || narrow) {
                cur = Some((c0, c1.max(x1)));
                add_cover(&mut cover, b.colour, x1 - x0);
                continue;
            }
            flush(&mut cur, &mut cover, &mut draw);
        }
        cur = Some((x0, x1));
        add_cover(&mut cover, b.colour, x1 - x0);
    }
    flush(&mut cur, &mut cover, &mut draw);
}

fn add_cover(cover: &mut Vec<(u16, f64)>, colour: u16, w: f64) {
    match cover.iter_mut().find(|c| c.0 == colour) {
        Some(c) => c.1 += w,
        None => cover.push((colour, w)),
    }
}

/// 1, 2 or 5 × a power of ten, at least `x`.
fn nice_step(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= x {
            return m * p;
        }
    }
    10.0 * p
}

/// A tick label with as many decimals as the step needs.
fn fmt_seconds(t: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{t:.decimals$}")
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl<W: Write> Observer for GanttWriter<W> {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        let t = super::ns_of(at_s);
        self.end = self.end.max(t);
        match *event {
            SimEvent::RunStart {
                machine,
                graph,
                sched,
                layout,
                ..
            } => {
                let workers = &layout.workers;
                let cluster = layout.is_cluster();
                let mem_node = |w: &hetsim_runtime::Worker| {
                    layout.memories.get(w.memory.index()).map_or(0, |m| m.node)
                };
                self.worker_node = workers.iter().map(mem_node).collect();
                self.worker_names = workers
                    .iter()
                    .map(|w| layout.local_name(mem_node(w), &w.name).to_string())
                    .collect();
                self.worker_tasks = vec![0; workers.len()];
                self.worker_group = vec![u32::MAX; workers.len()];
                if self.opts.group == GanttGroup::Identical {
                    let key = |w: &hetsim_runtime::Worker| (w.memory, w.device.clone());
                    for (i, w) in workers.iter().enumerate() {
                        if w.kind != WorkerKind::Cpu {
                            continue;
                        }
                        let twins = workers
                            .iter()
                            .filter(|v| v.kind == WorkerKind::Cpu && key(v) == key(w))
                            .count();
                        if twins > 1 {
                            // The group is named by its first worker.
                            let first = workers
                                .iter()
                                .position(|v| v.kind == WorkerKind::Cpu && key(v) == key(w))
                                .expect("w itself");
                            self.worker_group[i] = first as u32;
                        }
                    }
                }
                let nodes = layout.nodes.len().max(1);
                let per_node = layout.memories.len() / nodes;
                self.node_names = layout.memories[..per_node]
                    .iter()
                    .map(|m| layout.local_name(0, &m.name).to_string())
                    .collect();
                self.codelets = graph.codelet_names().to_vec();
                self.nworkers = workers.len() as u32;
                self.nnodes = per_node as u32;
                self.running = vec![None; workers.len()];
                self.fetching = vec![None; workers.len()];
                self.title = if cluster {
                    self.cluster_nodes = layout.nodes.clone();
                    self.rank_node = layout.ranks.iter().map(|r| r.node).collect();
                    let tasks = graph.tasks().iter().filter(|t| !t.is_message()).count();
                    let mut only_messages = vec![false; self.codelets.len()];
                    for t in graph.tasks().iter().filter(|t| t.is_message()) {
                        only_messages[t.codelet.index()] = true;
                    }
                    for t in graph.tasks().iter().filter(|t| !t.is_message()) {
                        only_messages[t.codelet.index()] = false;
                    }
                    self.message_codelets = only_messages;
                    format!(
                        "{} nodes of {} · {} · {} tasks",
                        nodes,
                        machine.name(),
                        sched,
                        tasks
                    )
                } else {
                    format!(
                        "{} · {} · {} tasks",
                        machine.name(),
                        sched,
                        graph.num_tasks()
                    )
                };
            }
            SimEvent::RunEnd { makespan_s } => {
                self.makespan_s = makespan_s;
                self.title = format!(
                    "{} · makespan {:.6} s (last write-back {:.6} s)",
                    self.title, makespan_s, at_s
                );
            }
            SimEvent::WorkerState { worker, state } => {
                let w = worker.index();
                if let Some(since) = self.fetching[w].take()
                    && t > since
                {
                    self.boxes.push(GBox {
                        row: w as u32,
                        colour: self.ncod() + WAITING,
                        start: since,
                        end: t,
                    });
                }
                if state == WorkerStatus::FetchingInput {
                    self.fetching[w] = Some(t);
                }
            }
            SimEvent::TaskStart {
                worker, codelet, ..
            } => {
                self.running[worker.index()] = Some((t, codelet.0));
            }
            SimEvent::TaskEnd { worker, .. } => {
                if let Some((start, c)) = self.running[worker.index()].take() {
                    self.tasks += 1;
                    self.worker_tasks[worker.index()] += 1;
                    self.boxes.push(GBox {
                        row: worker.0,
                        colour: c,
                        start,
                        end: t,
                    });
                }
            }
            SimEvent::TransferStart {
                src, dst, kind, id, ..
            } => {
                let id = id as usize;
                if self.open.len() <= id {
                    self.open.resize(id + 1, None);
                }
                let row = self.pair_row(src.0, dst.0);
                let colour = self.ncod()
                    + match kind {
                        TransferKind::Fetch => FETCH,
                        TransferKind::Prefetch => PREFETCH,
                        TransferKind::WriteBack => WRITEBACK,
                    };
                self.open[id] = Some((t, row, colour));
            }
            SimEvent::TransferEnd { id, .. } => {
                if let Some((start, row, colour)) =
                    self.open.get_mut(id as usize).and_then(Option::take)
                {
                    self.boxes.push(GBox {
                        row,
                        colour,
                        start,
                        end: t,
                    });
                }
            }
            SimEvent::MessageStart {
                task, from_rank, ..
            } => {
                let node = self.rank_node.get(from_rank as usize).copied().unwrap_or(0);
                self.messages_open.insert(task.0, (t, node));
            }
            SimEvent::MessageEnd { task, bytes, .. } => {
                if let Some((start, node)) = self.messages_open.remove(&task.0) {
                    self.messages += 1;
                    self.message_bytes += bytes;
                    self.boxes.push(GBox {
                        row: self.message_row(node),
                        colour: self.ncod() + MESSAGE,
                        start,
                        end: t,
                    });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(boxes: &[(u64, u64, u16)], px_per_ns: f64) -> Vec<(f64, f64, u16)> {
        let bs: Vec<GBox> = boxes
            .iter()
            .map(|&(start, end, colour)| GBox {
                row: 0,
                colour,
                start,
                end,
            })
            .collect();
        let mut out = Vec::new();
        merge_row(&bs, px_per_ns, 4, |a, b, c| out.push((a, b, c)));
        out
    }

    #[test]
    fn wide_boxes_stay_apart_and_sub_pixel_ones_merge() {
        // 1 px per ns: two wide boxes of different colours, touching, stay apart.
        assert_eq!(
            run(&[(0, 10, 0), (10, 20, 1)], 1.0),
            vec![(0.0, 10.0, 0), (10.0, 20.0, 1)]
        );
        // Same colour, touching: merged.
        assert_eq!(run(&[(0, 10, 0), (10, 20, 0)], 1.0), vec![(0.0, 20.0, 0)]);
        // A gap of a pixel or more keeps them apart.
        assert_eq!(run(&[(0, 10, 0), (11, 20, 0)], 1.0).len(), 2);
        // Ten sub-pixel boxes (0.1 px each), mostly colour 2: one box of colour 2.
        let tiny: Vec<(u64, u64, u16)> = (0..10)
            .map(|i| (i, i + 1, if i < 7 { 2 } else { 1 }))
            .collect();
        assert_eq!(run(&tiny, 0.1), vec![(0.0, 1.0, 2)]);
    }

    #[test]
    fn axis_steps() {
        assert_eq!(nice_step(0.13), 0.2);
        assert_eq!(nice_step(8.0), 10.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(fmt_seconds(0.4, 0.2), "0.4");
        assert_eq!(fmt_seconds(20.0, 10.0), "20");
    }

    #[test]
    fn group_counts_are_averages_per_column() {
        // A 10 ns run drawn in 2 columns of 5 ns. Colour 0: [0, 5) and [2, 8) on two workers;
        // colour 1: [8, 10).
        let b = |start, end, colour| GBox {
            row: 0,
            colour,
            start,
            end,
        };
        let layers = stacked_counts(&[b(0, 5, 0), b(2, 8, 0), b(8, 10, 1)], 10.0, 2, 2);
        // Column 0: 5 + 3 busy ns of colour 0 over 5 ns = 1.6; column 1: 3 ns = 0.6, and
        // 2 ns of colour 1 = 0.4.
        let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12);
        assert!(close(&layers[0], &[1.6, 0.6]), "{layers:?}");
        assert!(close(&layers[1], &[0.0, 0.4]), "{layers:?}");
        // Drawn in a 10 px high box for 2 workers: colour 0 from the bottom (y 10) up to
        // 10 - 1.6/2 * 10 = 2, then 10 - 0.6/2 * 10 = 7; colour 1 on top of it: nothing in
        // the first column (2 to 2), 7 up to 10 - 1.0/2 * 10 = 5 in the second.
        let mut s = String::new();
        draw_stack(&mut s, &layers, 2.0, 10.0);
        assert_eq!(
            s,
            "<path class=\"c0\" d=\"M0,2.0H1V7.0H2V10.0H0Z\"/>\
             <path class=\"c1\" d=\"M0,2.0H1V5.0H2V7.0H1V2.0H0Z\"/>"
        );
    }

    /// Which workers start a task, by name.
    #[derive(Default)]
    struct Ran {
        names: Vec<String>,
        ran: std::collections::BTreeSet<String>,
    }

    impl Observer for Ran {
        fn event(&mut self, _at_s: f64, event: &SimEvent<'_>) {
            match *event {
                SimEvent::RunStart { workers, .. } => {
                    self.names = workers.iter().map(|w| w.name.clone()).collect();
                }
                SimEvent::TaskStart { worker, .. } => {
                    self.ran.insert(self.names[worker.index()].clone());
                }
                _ => {}
            }
        }
    }

    /// A 4-tile Cholesky (20 tasks) on 112 cores and 2 GPUs (110 CPU workers: a core drives
    /// each GPU), drawn with `opts`; the SVG and the workers that ran tasks.
    fn big_machine_chart(opts: GanttOptions) -> (String, Ran) {
        use hetsim_runtime::fixture::{RATES, star_machine};
        let m = star_machine(2, 112);
        let g =
            hetsim_taskgraph::cholesky(4 * 960, 960, hetsim_taskgraph::Precision::Single).unwrap();
        let mut gw = GanttWriter::with_options(Vec::new(), opts);
        let mut ran = Ran::default();
        let mut s = hetsim_sched::by_name("eager", 1).unwrap();
        hetsim_runtime::simulate_observed(
            &m,
            &g,
            &RATES,
            s.as_mut(),
            &hetsim_runtime::RunConfig::default(),
            &mut [&mut gw as &mut dyn Observer, &mut ran],
        )
        .unwrap();
        assert_eq!(ran.names.len(), 112);
        (String::from_utf8(gw.finish().unwrap()).unwrap(), ran)
    }

    /// The row labels of a chart (texts right-aligned in the label column).
    fn labels(svg: &str) -> Vec<String> {
        svg.split("text-anchor=\"end\">")
            .skip(1)
            .map(|t| t[..t.find('<').unwrap()].to_string())
            .filter(|l| l != "time (s)")
            .collect()
    }

    #[test]
    fn a_112_core_machine_by_worker_busy_workers_and_groups() {
        // Every worker: 112 rows of workers.
        let (all, ran) = big_machine_chart(GanttOptions::default());
        let l = labels(&all);
        assert!(l.contains(&"CPU109".to_string()) && l.contains(&"GPU1".to_string()));
        assert_eq!(l.iter().filter(|l| !l.contains("-&gt;")).count(), 112);
        // 20 tasks ran on at most 20 workers: the others are left out and counted.
        let (busy, _) = big_machine_chart(GanttOptions {
            rows: GanttRows::Busy,
            ..GanttOptions::default()
        });
        let shown: std::collections::BTreeSet<String> = labels(&busy)
            .into_iter()
            .filter(|l| !l.contains("-&gt;"))
            .collect();
        assert_eq!(shown, ran.ran);
        assert!(ran.ran.len() <= 20);
        assert!(busy.contains(&format!(
            "· {} workers that ran no task not shown",
            112 - ran.ran.len()
        )));
        // Grouped: the 110 CPU workers of RAM in one row, stacked (a path per colour used),
        // the GPUs on their own.
        let (grouped, _) = big_machine_chart(GanttOptions {
            group: GanttGroup::Identical,
            ..GanttOptions::default()
        });
        let l = labels(&grouped);
        let workers: Vec<&String> = l.iter().filter(|l| !l.contains("-&gt;")).collect();
        assert_eq!(workers, ["GPU0", "GPU1", "CPU ×110"]);
        // Its scale: 0 to 110 workers.
        assert!(grouped.contains("font-size=\"9\">110</text>"));
        assert!(grouped.contains("<path class=\"c"));
        assert!(grouped.len() < all.len());
    }
}
