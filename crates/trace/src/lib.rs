//! Traces of a run that people open in viewers, a Gantt chart, and bounds on the makespan.
//!
//! Every writer is an [`Observer`](hetsim_runtime::Observer) of the simulation's event stream;
//! none reaches into the simulation:
//!
//! - [`PajeWriter`]: a Paje trace with StarPU's container hierarchy and state names (ViTE,
//!   `pj_dump`, StarPU's R and Python tools);
//! - [`ChromeWriter`]: a Chrome Trace Event JSON file (ui.perfetto.dev, chrome://tracing);
//! - [`GanttWriter`]: an SVG Gantt chart, one row per worker and one per transfer direction;
//! - [`formats::FORMATS`]: the registry of the trace formats, each with its name, extension,
//!   help and options, from which the command line offers `--paje FILE` and the like;
//! - [`stats::bounds`]: the critical path and the area bound of a task graph on a set of
//!   workers, which [`RunReport`](hetsim_runtime::RunReport) carries.
//!
//! The two trace writers stream: each event becomes text as it arrives, in a small buffer
//! written out in 64 KiB pieces, so their memory does not grow with the run (only with the
//! number of handles, memory nodes and workers). The Gantt writer keeps one small record per
//! task and transfer, because it needs the run's length before it can draw.
//!
//! Output is deterministic: the same run gives byte-identical files. Dates are the
//! simulation's, rounded to the nanosecond; the Paje writer prints them from integers, the
//! Chrome writer through `serde_json` (shortest round-trip floats, in µs).
//!
//! Writing files, all at once:
//!
//! ```no_run
//! use hetsim_runtime::{Observer, RunConfig, kernels_for, simulate_observed};
//! use hetsim_trace::{ChromeWriter, GanttWriter, PajeWriter};
//! use hetsim_taskgraph::{Precision, cholesky};
//!
//! let machine = hetsim_platform::machine::load("calibration/mirage.toml")?;
//! let graph = cholesky(8 * 960, 960, Precision::Single)?;
//! let kernels = kernels_for(&machine)?;
//! let mut sched = hetsim_sched::by_name("eager", 1).expect("a known scheduler");
//! let mut paje = PajeWriter::create("run.paje")?;
//! let mut chrome = ChromeWriter::create("run.json")?;
//! let mut gantt = GanttWriter::create("run.svg")?;
//! let _report = simulate_observed(
//!     &machine,
//!     &graph,
//!     kernels.as_ref(),
//!     sched.as_mut(),
//!     &RunConfig::default(),
//!     &mut [&mut paje as &mut dyn Observer, &mut chrome, &mut gantt],
//! )?;
//! paje.finish()?;
//! chrome.finish()?;
//! gantt.finish()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod chrome;
pub mod formats;
mod gantt;
mod paje;

pub use chrome::ChromeWriter;
pub use formats::{FORMATS, TraceFormat, TraceOptions, TraceWriter};
pub use gantt::{GanttGroup, GanttOptions, GanttRows, GanttWriter};
pub use hetsim_runtime::bounds::{Bounds, bounds, bounds_from_means};
pub use paje::PajeWriter;

use std::io::{self, Write};

/// How the trace writers report the bandwidth used on each link.
///
/// A link's load changes whenever a transfer crossing it, or one sharing a link with those,
/// starts or ends: about twenty changes per transfer on a machine like mirage, which for a
/// long run is most of a trace. Averages over short windows keep the area under the curve
/// (the bytes moved) exact with a bounded number of values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinkResolution {
    /// No link bandwidth (the simulation then skips computing link loads).
    Off,
    /// Every change of a link's load, at its date.
    Exact,
    /// The average load over consecutive windows of this many seconds (from date 0), written
    /// at each window's start when it differs from the previous value.
    Window(f64),
    /// Windows of (the lower bound on the makespan) / `n`: about `n` values per link over
    /// the run whatever its length. The default, with `n` = 2048.
    Auto(u32),
}

impl Default for LinkResolution {
    fn default() -> Self {
        LinkResolution::Auto(2048)
    }
}

/// Per-link loads, exact or averaged over windows, handed to a writer's `emit` as
/// (date in ns, link, load in kB/s) when the printed value changes.
#[derive(Debug, Default)]
pub(crate) struct LinkWindows {
    /// Window length in ns; 0: exact.
    window: u64,
    /// Start of the current window.
    start: u64,
    cur: Vec<f64>,
    since: Vec<u64>,
    acc: Vec<f64>,
    /// Last value handed out, kB/s.
    last: Vec<u64>,
    /// Whether a load changed in the current window.
    touched: bool,
}

impl LinkWindows {
    /// Windows for the run's `links` at resolution `res`, and the links the writer traces:
    /// none when link tracing is off.
    pub fn for_run<'a>(
        res: LinkResolution,
        links: &'a [String],
        bounds: &Bounds,
    ) -> (Self, &'a [String]) {
        let links = if res == LinkResolution::Off {
            &[][..]
        } else {
            links
        };
        (LinkWindows::new(res, links.len(), bounds), links)
    }

    pub fn new(res: LinkResolution, nlinks: usize, bounds: &Bounds) -> Self {
        let window_s = match res {
            LinkResolution::Off | LinkResolution::Exact => 0.0,
            LinkResolution::Window(w) => w,
            LinkResolution::Auto(n) => bounds.lower_bound_s() / f64::from(n.max(1)),
        };
        LinkWindows {
            window: if window_s.is_finite() && window_s > 0.0 {
                ns_of(window_s).max(1)
            } else {
                0
            },
            start: 0,
            cur: vec![0.0; nlinks],
            since: vec![0; nlinks],
            acc: vec![0.0; nlinks],
            last: vec![0; nlinks],
            touched: false,
        }
    }

    /// Whether values are averaged over windows (and so written at window starts, before
    /// events already seen).
    pub fn windowed(&self) -> bool {
        self.window > 0
    }

    fn put(
        &mut self,
        at: u64,
        link: usize,
        bytes_per_sec: f64,
        emit: &mut impl FnMut(u64, u32, u64),
    ) {
        let kbps = (bytes_per_sec.max(0.0) / 1e3).round() as u64;
        if kbps != self.last[link] {
            self.last[link] = kbps;
            emit(at, link as u32, kbps);
        }
    }

    /// Close the current window if it ends by `t`, handing out its averages (dated at its
    /// start); true if it closed. Then what was held back during it can be written, and
    /// `advance` must be called again (until false) before handling an event at `t`.
    pub fn advance(&mut self, t: u64, emit: &mut impl FnMut(u64, u32, u64)) -> bool {
        if self.window == 0 || t < self.start + self.window {
            return false;
        }
        let end = self.start + self.window;
        for l in 0..self.cur.len() {
            let avg =
                (self.acc[l] + self.cur[l] * (end - self.since[l]) as f64) / self.window as f64;
            self.acc[l] = 0.0;
            self.put(self.start, l, avg, emit);
        }
        self.start = end;
        if !self.touched && t >= self.start + self.window {
            // The window just closed saw no change, so neither did those up to `t`: their
            // values are the ones just handed out.
            self.start += (t - self.start) / self.window * self.window;
        }
        self.touched = false;
        let start = self.start;
        self.since.iter_mut().for_each(|s| *s = start);
        true
    }

    /// A link's load is now `bytes_per_sec` (after [`advance`](Self::advance) to `t`).
    pub fn set(
        &mut self,
        t: u64,
        link: u32,
        bytes_per_sec: f64,
        emit: &mut impl FnMut(u64, u32, u64),
    ) {
        let l = link as usize;
        if l >= self.cur.len() {
            return;
        }
        if self.window == 0 {
            self.put(t, l, bytes_per_sec, emit);
            return;
        }
        self.acc[l] += self.cur[l] * (t - self.since[l]) as f64;
        self.cur[l] = bytes_per_sec;
        self.since[l] = t;
        self.touched = true;
    }

    /// The run ends at `t` (after [`advance`](Self::advance) to `t`): the average over the
    /// last, partial window, at its start.
    pub fn close_partial(&mut self, t: u64, emit: &mut impl FnMut(u64, u32, u64)) {
        if self.window == 0 || t <= self.start {
            return;
        }
        let len = (t - self.start) as f64;
        for l in 0..self.cur.len() {
            let avg = (self.acc[l] + self.cur[l] * (t - self.since[l]) as f64) / len;
            self.acc[l] = 0.0;
            self.put(self.start, l, avg, emit);
        }
    }

    /// The loads at the end `t` (after [`close_partial`](Self::close_partial)).
    pub fn final_values(&mut self, t: u64, emit: &mut impl FnMut(u64, u32, u64)) {
        if self.window == 0 {
            return;
        }
        for l in 0..self.cur.len() {
            self.put(t, l, self.cur[l], emit);
        }
        self.window = 0;
    }
}

/// Bytes gathered before they are handed to the writer.
const CHUNK: usize = 1 << 16;

/// A text sink: a growable line buffer in front of a writer, that remembers the first I/O
/// error (observers cannot return errors; `finish` reports it) and writes nothing after it.
#[derive(Debug)]
pub(crate) struct Sink<W: Write> {
    out: Option<W>,
    pub buf: Vec<u8>,
    err: Option<io::Error>,
}

impl<W: Write> Sink<W> {
    pub fn new(out: W) -> Self {
        Sink {
            out: Some(out),
            buf: Vec::with_capacity(CHUNK + 4096),
            err: None,
        }
    }

    /// Hand the buffer to the writer if it is full enough.
    #[inline]
    pub fn maybe_flush(&mut self) {
        if self.buf.len() >= CHUNK {
            self.flush_buf();
        }
    }

    fn flush_buf(&mut self) {
        if self.err.is_none()
            && let Some(out) = self.out.as_mut()
            && let Err(e) = out.write_all(&self.buf)
        {
            self.err = Some(e);
        }
        self.buf.clear();
    }

    /// Write out everything, flush, and give the writer back (or the first error).
    pub fn finish(&mut self) -> io::Result<W> {
        self.flush_buf();
        if let Some(e) = self.err.take() {
            self.out = None;
            return Err(e);
        }
        let mut out = self
            .out
            .take()
            .ok_or_else(|| io::Error::other("trace writer already finished"))?;
        out.flush()?;
        Ok(out)
    }

    /// Whether `finish` ran.
    pub fn is_finished(&self) -> bool {
        self.out.is_none()
    }
}

/// A date in seconds as integer nanoseconds (dates are never negative).
#[inline]
pub(crate) fn ns_of(at_s: f64) -> u64 {
    let ns = at_s * 1e9;
    // Round half up; `as` saturates (and maps NaN to 0).
    if ns > 0.0 { (ns + 0.5) as u64 } else { 0 }
}

/// Two decimal digits per pair of bytes, "00" to "99".
const DIGITS2: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Append the decimal digits of `v`.
#[inline]
pub(crate) fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    if v < 10 {
        buf.push(b'0' + v as u8);
        return;
    }
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    while v >= 100 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        tmp[i] = DIGITS2[r];
        tmp[i + 1] = DIGITS2[r + 1];
    }
    if v >= 10 {
        let r = v as usize * 2;
        i -= 2;
        tmp[i] = DIGITS2[r];
        tmp[i + 1] = DIGITS2[r + 1];
    } else {
        i -= 1;
        tmp[i] = b'0' + v as u8;
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// Append a signed integer.
#[inline]
pub(crate) fn push_i64(buf: &mut Vec<u8>, v: i64) {
    if v < 0 {
        buf.push(b'-');
    }
    push_u64(buf, v.unsigned_abs());
}

/// Append `ns` nanoseconds as `whole.frac` in units of 10^`digits` nanoseconds, e.g. µs with
/// `digits` = 3, ms with 6: exact, no float formatting.
#[inline(always)]
pub(crate) fn push_scaled(buf: &mut Vec<u8>, ns: u64, digits: u32) {
    let unit = 10u64.pow(digits);
    push_u64(buf, ns / unit);
    if digits == 0 {
        return;
    }
    buf.push(b'.');
    let mut frac = ns % unit;
    let mut tmp = [b'0'; 10];
    let mut i = digits as usize;
    while i >= 2 {
        let r = (frac % 100) as usize * 2;
        frac /= 100;
        i -= 2;
        tmp[i] = DIGITS2[r];
        tmp[i + 1] = DIGITS2[r + 1];
    }
    if i == 1 {
        tmp[0] = b'0' + (frac % 10) as u8;
    }
    buf.extend_from_slice(&tmp[..digits as usize]);
}

/// Append a float with a fixed number of decimals (at most 9; `0` if it is not finite),
/// rounded half away from zero, printed from integers (fast, and the same everywhere).
pub(crate) fn push_fixed(buf: &mut Vec<u8>, x: f64, decimals: u32) {
    let scaled = (x * 10f64.powi(decimals as i32)).round();
    if !scaled.is_finite() {
        buf.push(b'0');
        return;
    }
    if scaled.abs() >= 9.0e18 {
        let d = decimals as usize;
        let _ = write!(buf, "{x:.d$}");
        return;
    }
    let v = scaled as i64;
    if v < 0 {
        buf.push(b'-');
    }
    push_scaled(buf, v.unsigned_abs(), decimals);
}

/// Bytes in use on each memory node of the run at its start: a node's RAM holds that node's
/// handles (every handle on one machine), device memories nothing.
pub(crate) fn initial_memory_use(
    graph: &hetsim_taskgraph::TaskGraph,
    layout: &hetsim_runtime::Layout,
) -> Vec<u64> {
    let mut ram = vec![0u64; layout.nodes.len()];
    for h in graph.handles() {
        if let Some(u) = ram.get_mut(h.node.0 as usize) {
            *u += h.size_bytes;
        }
    }
    layout
        .memories
        .iter()
        .map(|m| match m.kind {
            hetsim_platform::machine::MemKind::Ram => ram.get(m.node as usize).copied(),
            _ => None,
        })
        .map(|u| u.unwrap_or(0))
        .collect()
}

/// A display name for a handle: its tile (`A(1,0)`) or `h<id>`.
pub(crate) fn handle_name(
    graph: &hetsim_taskgraph::TaskGraph,
    h: hetsim_taskgraph::HandleId,
) -> String {
    match graph.handle(h).tile {
        Some(t) => t.to_string(),
        None => format!("h{}", h.0),
    }
}

/// A colour per codelet, as (r, g, b) in 0..=255: a fixed palette (ColorBrewer Set1/Dark2
/// tones, distinguishable and printable) without the red and magenta StarPU gives the Idle and
/// FetchingInput states, then golden-angle hues.
pub(crate) fn codelet_rgb(i: usize) -> (u8, u8, u8) {
    const PALETTE: [(u8, u8, u8); 9] = [
        (55, 126, 184),
        (77, 175, 74),
        (152, 78, 163),
        (255, 127, 0),
        (166, 86, 40),
        (27, 158, 119),
        (117, 112, 179),
        (230, 171, 2),
        (102, 102, 102),
    ];
    if let Some(&c) = PALETTE.get(i) {
        return c;
    }
    let h = (i as f64 * 137.507_764) % 360.0;
    hsv_rgb(h, 0.65, 0.85)
}

fn hsv_rgb(h: f64, s: f64, v: f64) -> (u8, u8, u8) {
    let c = v * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = v - c;
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let to = |f: f64| ((f + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    (to(r), to(g), to(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_scaled_dates() {
        let mut b = Vec::new();
        push_u64(&mut b, 0);
        b.push(b' ');
        push_u64(&mut b, 18446744073709551615);
        b.push(b' ');
        push_i64(&mut b, -42);
        b.push(b' ');
        push_scaled(&mut b, 1_234_567, 3);
        b.push(b' ');
        push_scaled(&mut b, 5, 6);
        b.push(b' ');
        push_fixed(&mut b, -2.5e-4, 3);
        b.push(b' ');
        push_fixed(&mut b, 1.23456, 2);
        b.push(b' ');
        push_fixed(&mut b, 1e-7, 3);
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "0 18446744073709551615 -42 1234.567 0.000005 0.000 1.23 0.000"
        );
        assert_eq!(ns_of(1.5e-9), 2);
        assert_eq!(ns_of(-1.0), 0);
        assert_eq!(ns_of(80.186), 80_186_000_000);
    }

    #[test]
    fn link_windows_average_and_date_at_window_starts() {
        let bounds = Bounds {
            critical_path_s: 0.0,
            area_bound_s: 0.0,
        };
        let mut w = LinkWindows::new(LinkResolution::Window(10e-9), 1, &bounds);
        let mut out = Vec::new();
        let mut emit = |at, l, v| out.push((at, l, v));
        // 1 MB/s during the first 5 ns of the first 10 ns window, then nothing until 35 ns.
        w.set(0, 0, 1e6, &mut emit);
        w.set(5, 0, 0.0, &mut emit);
        let mut closes = 0;
        while w.advance(35, &mut emit) {
            closes += 1;
        }
        // [0, 10) averages 500 kB/s; [10, 20) is idle; [20, 30) is the same and not repeated.
        assert_eq!(closes, 2);
        w.set(35, 0, 2e6, &mut emit);
        w.close_partial(38, &mut emit);
        w.final_values(38, &mut emit);
        // The last, partial window [30, 38): 2 MB/s during 3 of its 8 ns.
        assert_eq!(
            out,
            vec![(0, 0, 500), (10, 0, 0), (30, 0, 750), (38, 0, 2000)]
        );
        // Exact: every change at its date.
        let mut w = LinkWindows::new(LinkResolution::Exact, 1, &bounds);
        let mut out = Vec::new();
        let mut emit = |at, l, v| out.push((at, l, v));
        w.set(3, 0, 1e6, &mut emit);
        w.set(4, 0, 1e6, &mut emit);
        w.set(7, 0, 0.0, &mut emit);
        assert_eq!(out, vec![(3, 0, 1000), (7, 0, 0)]);
    }
}
