//! Chrome Trace Event JSON, as ui.perfetto.dev and chrome://tracing read it
//! (`rust-ecosystem.md` §3).
//!
//! Layout:
//!
//! - one process per memory node (pid = node index + 1, named after the node, e.g. `RAM`,
//!   `CUDA0`), and one more, `Links`, for the link bandwidth counters;
//! - one thread per worker in its memory node's process, named after the worker; tids are
//!   unique in the trace and distinct from every pid (Perfetto keys threads by tid alone):
//!   tid = number of processes + 1 + worker index. Process-scoped events (names, counters,
//!   transfers) carry no tid;
//! - tasks: complete events (`X`) named after the codelet, category `task`, with `args`
//!   `job_id`, `codelet`, `size`, `flops`, `priority`; the time a worker holds a task whose
//!   data is not there yet: `X` events named `FetchingInput`, category `state`;
//! - transfers: async events (`b`/`e`, one id each, so concurrent transfers overlap) in the
//!   destination's process, named `SRC->DST`, category `fetch`, `prefetch` or `writeback`,
//!   with `args` `handle` (id), `data` (tile name) and `bytes`;
//! - flow arrows (flow v2, `bind_id`/`flow_out` on the transfer, `bind_id`/`flow_in` on the
//!   task): a task gets one arrow, from the transfer of its inputs that arrived last into its
//!   memory node and that no earlier task consumed (the one it most likely waited for; the
//!   format allows one incoming arrow per slice). Only those transfers start an arrow, so
//!   every arrow has both ends: a transfer's events are written once it is known whether a
//!   task takes its arrow (a task reads it, another transfer of that data arrives there, the
//!   replica is evicted, or the run ends), not when it starts;
//! - counters: `memory` (`used MiB`) per memory node, and `GB/s` in the `Links` process with
//!   one series per link (Perfetto names the tracks `GB/s <link>`); one counter event per date
//!   carries the links whose load changed then; evictions are process-scoped instant events
//!   `evict`;
//! - on a cluster: one process per node (pid = node index + 1, named `n<k>`) holding its
//!   workers (by their names in the node), its memory counters (`memory <name>`), its links'
//!   series (NICs included) and the transfers into it; the switches' links in a `Network`
//!   process; each MPI message as two async pairs of category `mpi` over its flight, its send
//!   in the sender's process and its receive in the receiver's, joined by a flow arrow
//!   (`flow_out` on the send, `flow_in` on the receive), both written at its receipt;
//! - timestamps in µs (the simulation's dates rounded to the nanosecond);
//! - `otherData` records the generator, machine, scheduler and seed.
//!
//! Events are written by `serde_json`'s serializer into a buffered writer, one event at a
//! time, so memory does not grow with the run. The file is a JSON object and is always
//! completed: [`ChromeWriter::finish`] (or dropping the writer) writes the closing brackets
//! even if the run stopped early.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde::Serialize;
use serde::ser::SerializeMap;

use super::{LinkResolution, LinkWindows, handle_name, ns_of};
use hetsim_runtime::observe::WorkerStatus;
use hetsim_runtime::{Observer, SimEvent};

/// Bytes gathered before they are handed to the output.
const BUFFER: usize = 1 << 16;

/// A task being executed, until its end is reported.
#[derive(Debug, Clone, Copy)]
struct Running {
    task: u32,
    start_ns: u64,
    codelet: u16,
    flops: f64,
    size: u64,
    priority: i32,
    /// Bind id of the flow arrow into it (0: none).
    flow: u64,
}

#[derive(Debug, Clone, Default)]
struct WorkerSlot {
    pid: u32,
    tid: u32,
    node: u32,
    fetching_since: Option<u64>,
    running: Option<Running>,
}

/// A transfer not written yet: in flight, or arrived and waiting to be read.
#[derive(Debug, Clone, Copy)]
struct Transfer {
    /// Async id, and bind id of its arrow if a task takes one.
    serial: u64,
    src: u32,
    dst: u32,
    kind: &'static str,
    handle: u32,
    bytes: f64,
    start: u64,
    end: u64,
}

/// A date in ns as the format's µs.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// A float as JSON: integral values (byte counts, most flop counts) as integers, others in
/// the shortest form that reads back the same.
#[derive(Debug, Clone, Copy)]
struct Num(f64);

impl Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        if x.fract() == 0.0 && x.abs() < 9.0e15 {
            s.serialize_i64(x as i64)
        } else if x.is_finite() {
            s.serialize_f64(x)
        } else {
            s.serialize_u8(0)
        }
    }
}

/// The `args` of an event.
#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Name {
        name: &'a str,
    },
    SortIndex {
        sort_index: u64,
    },
    Memory {
        #[serde(rename = "used MiB")]
        used_mib: f64,
    },
    Links(LinkArgs<'a>),
    Task {
        job_id: u32,
        codelet: &'a str,
        size: u64,
        flops: Num,
        priority: i32,
    },
    Transfer {
        handle: u32,
        data: &'a str,
        bytes: Num,
    },
    Data {
        data: &'a str,
    },
    Message {
        task: u32,
        bytes: Num,
    },
}

/// One counter value per link whose load changed: `{"<link>": GB/s, ...}`.
struct LinkArgs<'a> {
    names: &'a [String],
    values: &'a [(u32, u64)],
}

impl Serialize for LinkArgs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.values.len()))?;
        for &(link, kbps) in self.values {
            m.serialize_entry(&self.names[link as usize], &(kbps as f64 / 1e6))?;
        }
        m.end()
    }
}

/// One trace event; absent fields are left out.
#[derive(Serialize)]
struct Event<'a> {
    ph: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bind_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_in: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_out: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args<'a>>,
}

impl<'a> Event<'a> {
    fn new(ph: &'static str, name: &'a str, pid: u32) -> Self {
        Event {
            ph,
            name,
            cat: None,
            s: None,
            id: None,
            pid,
            tid: None,
            ts: None,
            dur: None,
            bind_id: None,
            flow_in: None,
            flow_out: None,
            args: None,
        }
    }

    fn at(mut self, ns: u64) -> Self {
        self.ts = Some(micros(ns));
        self
    }
}

/// `otherData`.
#[derive(Serialize)]
struct OtherData<'a> {
    generator: &'static str,
    machine: &'a str,
    sched: &'a str,
    seed: u64,
    tasks: u64,
    /// Nodes, on a cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    nodes: Option<u32>,
}

/// The JSON output: a buffered writer, the serializer's formatter and the first I/O error
/// (observers cannot return errors; `finish` reports it). Nothing is written after an error.
#[derive(Debug)]
struct Out<W: Write> {
    w: Option<BufWriter<W>>,
    err: Option<io::Error>,
    /// Whether an event was written to `traceEvents` (for the separators).
    any: bool,
}

impl<W: Write> Out<W> {
    fn raw(&mut self, bytes: &[u8]) {
        if self.err.is_none()
            && let Some(w) = self.w.as_mut()
            && let Err(e) = w.write_all(bytes)
        {
            self.err = Some(e);
        }
    }

    fn value<T: Serialize>(&mut self, v: &T) {
        if self.err.is_none()
            && let Some(w) = self.w.as_mut()
            && let Err(e) = v.serialize(&mut serde_json::Serializer::new(w))
        {
            self.err = Some(e.into());
        }
    }

    /// One element of `traceEvents`, after a separator (a newline between events keeps the
    /// file readable line by line).
    fn event(&mut self, e: &Event<'_>) {
        if self.any {
            self.raw(b",\n");
        }
        self.any = true;
        self.value(e);
    }
}

/// Writes a Chrome Trace Event JSON file of a run (see the module documentation for the
/// layout). Streams: memory grows only with the number of handles × memory nodes (one record
/// per replica, for the flow arrows), never with the run's length.
#[derive(Debug)]
pub struct ChromeWriter<W: Write> {
    out: Out<W>,
    started: bool,
    closed: bool,
    /// The link counter event being gathered: its date and (link, kB/s) values.
    links_date: u64,
    links_pending: Vec<(u32, u64)>,
    /// Memory nodes of the run, and of one node.
    nnodes: usize,
    per_node: usize,
    /// The process of the links that belong to no node (all of them on one machine).
    links_pid: u32,
    /// Per link: the process of its counter.
    link_pids: Vec<u32>,
    /// Per memory node: its process, and the name of its memory counter.
    mem_pids: Vec<u32>,
    mem_counters: Vec<String>,
    /// Per rank: its node's process.
    rank_pids: Vec<u32>,
    workers: Vec<WorkerSlot>,
    codelets: Vec<String>,
    /// Handle display names.
    handles: Vec<String>,
    /// `SRC->DST` per (src, dst) memory nodes of one node.
    pairs: Vec<String>,
    /// Link names (in their node's process on a cluster: without the node's prefix).
    links: Vec<String>,
    /// Per message task in flight: (start, sending rank, receiving rank, bytes).
    messages: BTreeMap<u32, (u64, u32, u32, f64)>,
    /// Per in-flight transfer id.
    open: Vec<Option<Transfer>>,
    next_serial: u64,
    /// Per (handle, node): the last transfer that arrived there and that no task read yet.
    arrivals: Vec<Option<Transfer>>,
    last_ns: u64,
    link_res: LinkResolution,
    windows: LinkWindows,
}

impl ChromeWriter<BufWriter<File>> {
    /// A writer to a new file at `path` (buffered).
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self::new(BufWriter::new(File::create(path)?)))
    }
}

impl<W: Write> ChromeWriter<W> {
    /// A writer to `out`.
    pub fn new(out: W) -> Self {
        ChromeWriter {
            out: Out {
                w: Some(BufWriter::with_capacity(BUFFER, out)),
                err: None,
                any: false,
            },
            started: false,
            closed: false,
            links_date: 0,
            links_pending: Vec::new(),
            nnodes: 0,
            per_node: 0,
            links_pid: 0,
            link_pids: Vec::new(),
            mem_pids: Vec::new(),
            mem_counters: Vec::new(),
            rank_pids: Vec::new(),
            workers: Vec::new(),
            codelets: Vec::new(),
            handles: Vec::new(),
            pairs: Vec::new(),
            links: Vec::new(),
            messages: BTreeMap::new(),
            open: Vec::new(),
            next_serial: 0,
            arrivals: Vec::new(),
            last_ns: 0,
            link_res: LinkResolution::default(),
            windows: LinkWindows::default(),
        }
    }

    /// How to report link bandwidth (default: [`LinkResolution::Auto`] with 2048 windows).
    pub fn with_link_resolution(mut self, links: LinkResolution) -> Self {
        self.link_res = links;
        self
    }

    /// Complete the file (closing open transfers at the last date seen if the run stopped
    /// early), write everything out and give the writer back; the first I/O error if any.
    pub fn finish(mut self) -> io::Result<W> {
        self.close();
        self.take_output()
    }

    fn take_output(&mut self) -> io::Result<W> {
        let w = self.out.w.take();
        if let Some(e) = self.out.err.take() {
            return Err(e);
        }
        let w = w.ok_or_else(|| io::Error::other("trace writer already finished"))?;
        let mut inner = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        inner.flush()?;
        Ok(inner)
    }

    fn close(&mut self) {
        if self.closed {
            return;
        }
        self.flush_links();
        if !self.started {
            self.out
                .raw(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        }
        let t = self.last_ns;
        self.flush_windows(t);
        self.with_link_windows(|windows, mut emit| {
            windows.close_partial(t, &mut emit);
            windows.final_values(t, &mut emit);
        });
        self.flush_links();
        // Transfers still in flight end now; arrivals no task read get no arrow.
        for id in 0..self.open.len() {
            if let Some(mut o) = self.open[id].take() {
                o.end = t;
                self.write_transfer(&o, false);
            }
        }
        for slot in 0..self.arrivals.len() {
            if let Some(a) = self.arrivals[slot].take() {
                self.write_transfer(&a, false);
            }
        }
        // Messages still in flight: their send only, without an arrow.
        for (task, (start, from, to, bytes)) in std::mem::take(&mut self.messages) {
            self.write_message_half(task, start, t, from, to, bytes, Half::Send, None);
        }
        self.out.raw(b"\n]}\n");
        self.closed = true;
    }

    /// Run `f` on the link windows with an emitter that gathers link-counter values.
    fn with_link_windows(
        &mut self,
        f: impl FnOnce(&mut LinkWindows, &mut dyn FnMut(u64, u32, u64)),
    ) {
        let ChromeWriter {
            out,
            links_date,
            links_pending,
            link_pids,
            links,
            windows,
            ..
        } = self;
        let mut emit = |at: u64, link: u32, kbps: u64| {
            if !links_pending.is_empty() && *links_date != at {
                write_links(out, link_pids, links, *links_date, links_pending);
            }
            *links_date = at;
            links_pending.push((link, kbps));
        };
        f(windows, &mut emit);
    }

    /// Write the link counter event being gathered, if any.
    fn flush_links(&mut self) {
        if !self.links_pending.is_empty() {
            write_links(
                &mut self.out,
                &self.link_pids,
                &self.links,
                self.links_date,
                &mut self.links_pending,
            );
        }
    }

    /// Close the link windows that end by `t`, writing their averages.
    fn flush_windows(&mut self, t: u64) {
        self.with_link_windows(|windows, mut emit| while windows.advance(t, &mut emit) {});
    }

    fn run_start(
        &mut self,
        machine: &hetsim_platform::machine::Machine,
        graph: &hetsim_taskgraph::TaskGraph,
        layout: &hetsim_runtime::Layout,
        sched: &str,
        seed: u64,
        bounds: &super::Bounds,
    ) {
        self.started = true;
        let (windows, links) = LinkWindows::for_run(self.link_res, &layout.links, bounds);
        self.windows = windows;
        let cluster = layout.is_cluster();
        let mems = &layout.memories;
        self.nnodes = mems.len();
        self.per_node = (mems.len() / layout.nodes.len().max(1)).max(1);
        // A process per memory node on one machine, per node on a cluster; then the links'
        // (on a cluster, those of no node: the switches').
        let nproc = if cluster {
            layout.nodes.len()
        } else {
            mems.len()
        };
        self.links_pid = nproc as u32 + 1;
        self.mem_pids = (0..mems.len())
            .map(|k| {
                if cluster {
                    mems[k].node + 1
                } else {
                    k as u32 + 1
                }
            })
            .collect();
        let local = |k: usize| layout.local_name(mems[k].node, &mems[k].name);
        self.mem_counters = (0..mems.len())
            .map(|k| {
                if cluster {
                    format!("memory {}", local(k))
                } else {
                    "memory".to_string()
                }
            })
            .collect();
        self.link_pids = (0..links.len())
            .map(|l| match layout.link_nodes.get(l).copied().flatten() {
                Some(n) if cluster => n + 1,
                _ => self.links_pid,
            })
            .collect();
        self.links = (0..links.len())
            .map(|l| match layout.link_nodes.get(l).copied().flatten() {
                Some(n) => layout.local_name(n, &links[l]).to_string(),
                None => links[l].clone(),
            })
            .collect();
        self.rank_pids = layout.ranks.iter().map(|r| r.node + 1).collect();
        self.codelets = graph.codelet_names().to_vec();
        self.handles = (0..graph.handles().len())
            .map(|h| handle_name(graph, hetsim_taskgraph::HandleId(h as u32)))
            .collect();
        let m = self.per_node;
        self.pairs = (0..m * m)
            .map(|p| format!("{}->{}", local(p / m), local(p % m)))
            .collect();
        self.arrivals = vec![None; graph.handles().len() * self.nnodes];
        let workers = &layout.workers;
        self.workers = workers
            .iter()
            .map(|w| WorkerSlot {
                pid: self.mem_pids[w.memory.index()],
                tid: self.links_pid + 1 + w.id.0,
                node: w.memory.0,
                ..WorkerSlot::default()
            })
            .collect();
        self.out.raw(b"{\"displayTimeUnit\":\"ns\",\"otherData\":");
        self.out.value(&OtherData {
            generator: concat!("hetsim ", env!("CARGO_PKG_VERSION")),
            machine: machine.name(),
            sched,
            seed,
            tasks: graph.num_tasks() as u64,
            nodes: cluster.then_some(layout.nodes.len() as u32),
        });
        self.out.raw(b",\"traceEvents\":[\n");
        // Names and order of processes and threads.
        let process_names: Vec<&str> = if cluster {
            layout.nodes.iter().map(String::as_str).collect()
        } else {
            mems.iter().map(|m| m.name.as_str()).collect()
        };
        for (k, name) in process_names.into_iter().enumerate() {
            meta(&mut self.out, "process_name", k as u32 + 1, None, name);
            sort_index(&mut self.out, "process_sort_index", k as u32 + 1, None, k);
        }
        if self.link_pids.contains(&self.links_pid) {
            let name = if cluster { "Network" } else { "Links" };
            meta(&mut self.out, "process_name", self.links_pid, None, name);
            sort_index(
                &mut self.out,
                "process_sort_index",
                self.links_pid,
                None,
                nproc,
            );
        }
        for (i, w) in workers.iter().enumerate() {
            let (pid, tid) = (self.workers[i].pid, self.workers[i].tid);
            let name = layout.local_name(mems[w.memory.index()].node, &w.name);
            meta(&mut self.out, "thread_name", pid, Some(tid), name);
            sort_index(&mut self.out, "thread_sort_index", pid, Some(tid), i);
        }
        // Initial counters.
        for (k, used) in super::initial_memory_use(graph, layout)
            .into_iter()
            .enumerate()
        {
            self.memory_counter(0, k as u32, used);
        }
        for l in 0..self.links.len() {
            self.links_pending.push((l as u32, 0));
        }
        self.links_date = 0;
        self.flush_links();
    }

    fn memory_counter(&mut self, t: u64, node: u32, used: u64) {
        let mib = (used as f64 / 1048576.0 * 1e3).round() / 1e3;
        let k = node as usize;
        self.out.event(&Event {
            args: Some(Args::Memory { used_mib: mib }),
            ..Event::new("C", &self.mem_counters[k], self.mem_pids[k]).at(t)
        });
    }

    /// One half of a message: its send in the sender's process or its receive in the
    /// receiver's, as an async pair from `start` to `end`, with one end of the arrow `arrow`.
    #[allow(clippy::too_many_arguments)]
    fn write_message_half(
        &mut self,
        task: u32,
        start: u64,
        end: u64,
        from: u32,
        to: u32,
        bytes: f64,
        half: Half,
        arrow: Option<u64>,
    ) {
        self.next_serial += 1;
        let serial = self.next_serial;
        let rank = |r: u32| -> u32 { self.rank_pids.get(r as usize).copied().unwrap_or(1) };
        let (name, pid) = match half {
            Half::Send => (format!("send to rank {to}"), rank(from)),
            Half::Receive => (format!("receive from rank {from}"), rank(to)),
        };
        self.out.event(&Event {
            cat: Some("mpi"),
            id: Some(serial),
            bind_id: arrow,
            flow_out: arrow.filter(|_| half == Half::Send).map(|_| true),
            flow_in: arrow.filter(|_| half == Half::Receive).map(|_| true),
            args: Some(Args::Message {
                task,
                bytes: Num(bytes),
            }),
            ..Event::new("b", &name, pid).at(start)
        });
        self.out.event(&Event {
            cat: Some("mpi"),
            id: Some(serial),
            ..Event::new("e", &name, pid).at(end)
        });
    }

    /// Write a transfer's async pair, with the start of an arrow if a task takes it.
    fn write_transfer(&mut self, o: &Transfer, arrow: bool) {
        let m = self.per_node;
        let name = &self.pairs[o.src as usize % m * m + o.dst as usize % m];
        let pid = self.mem_pids[o.dst as usize];
        self.out.event(&Event {
            cat: Some(o.kind),
            id: Some(o.serial),
            bind_id: arrow.then_some(o.serial),
            flow_out: arrow.then_some(true),
            args: Some(Args::Transfer {
                handle: o.handle,
                data: &self.handles[o.handle as usize],
                bytes: Num(o.bytes),
            }),
            ..Event::new("b", name, pid).at(o.start)
        });
        self.out.event(&Event {
            cat: Some(o.kind),
            id: Some(o.serial),
            ..Event::new("e", name, pid).at(o.end)
        });
    }

    /// A transfer arrived: it waits in its (handle, node) slot for a task to read it; the one
    /// it replaces is written without an arrow.
    fn arrived(&mut self, o: Transfer) {
        let slot = o.handle as usize * self.nnodes + o.dst as usize;
        if let Some(prev) = self.arrivals[slot].replace(o) {
            self.write_transfer(&prev, false);
        }
    }
}

/// A metadata event naming a process or thread.
fn meta<W: Write>(out: &mut Out<W>, what: &str, pid: u32, tid: Option<u32>, name: &str) {
    out.event(&Event {
        tid,
        args: Some(Args::Name { name }),
        ..Event::new("M", what, pid)
    });
}

/// A metadata event ordering a process or thread.
fn sort_index<W: Write>(out: &mut Out<W>, what: &str, pid: u32, tid: Option<u32>, i: usize) {
    out.event(&Event {
        tid,
        args: Some(Args::SortIndex {
            sort_index: i as u64,
        }),
        ..Event::new("M", what, pid)
    });
}

/// The link loads gathered for one date, as one `GB/s` counter event per process holding
/// the links (`pids`, per link; one process on one machine), with one series per link;
/// empties `values`.
fn write_links<W: Write>(
    out: &mut Out<W>,
    pids: &[u32],
    names: &[String],
    date: u64,
    values: &mut Vec<(u32, u64)>,
) {
    let pid = |v: &(u32, u64)| pids[v.0 as usize];
    // Links in order within a process (a stable sort).
    if values.windows(2).any(|w| pid(&w[0]) != pid(&w[1])) {
        values.sort_by_key(pid);
    }
    for group in values.chunk_by(|a, b| pid(a) == pid(b)) {
        out.event(&Event {
            args: Some(Args::Links(LinkArgs {
                names,
                values: group,
            })),
            ..Event::new("C", "GB/s", pid(&group[0])).at(date)
        });
    }
    values.clear();
}

/// Which half of a message an async pair draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    Send,
    Receive,
}

impl<W: Write> Observer for ChromeWriter<W> {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        if self.closed {
            return;
        }
        let t = ns_of(at_s).max(self.last_ns);
        self.last_ns = t;
        self.flush_windows(t);
        if !matches!(event, SimEvent::LinkLoads { .. }) {
            self.flush_links();
        }
        match *event {
            SimEvent::RunStart {
                machine,
                graph,
                sched,
                config,
                bounds,
                layout,
                ..
            } => self.run_start(machine, graph, layout, sched, config.seed, &bounds),
            SimEvent::RunEnd { makespan_s } => {
                self.out.event(&Event {
                    s: Some("g"),
                    ..Event::new("i", "last task ends", 1).at(ns_of(makespan_s))
                });
                self.out.event(&Event {
                    s: Some("g"),
                    ..Event::new("i", "final write-back ends", 1).at(t)
                });
                self.close();
            }
            SimEvent::WorkerState { worker, state } => {
                let w = worker.index();
                let slot = &mut self.workers[w];
                if let Some(since) = slot.fetching_since.take()
                    && t > since
                {
                    self.out.event(&Event {
                        cat: Some("state"),
                        tid: Some(slot.tid),
                        dur: Some(micros(t - since)),
                        ..Event::new("X", "FetchingInput", slot.pid).at(since)
                    });
                }
                if state == WorkerStatus::FetchingInput {
                    self.workers[w].fetching_since = Some(t);
                }
            }
            SimEvent::TaskStart {
                task,
                worker,
                reads,
                codelet,
                flops,
                size_bytes,
                priority,
                ..
            } => {
                // The flow arrow: the latest arrival among the task's inputs that no task
                // read yet; the other arrivals it reads are written without one.
                let node = self.workers[worker.index()].node as usize;
                let mut best: Option<Transfer> = None;
                for &(h, _, _) in reads {
                    let Some(a) = self.arrivals[h.index() * self.nnodes + node].take() else {
                        continue;
                    };
                    match best {
                        Some(b) if (b.end, b.serial) >= (a.end, a.serial) => {
                            self.write_transfer(&a, false);
                        }
                        Some(b) => {
                            self.write_transfer(&b, false);
                            best = Some(a);
                        }
                        None => best = Some(a),
                    }
                }
                if let Some(b) = &best {
                    self.write_transfer(b, true);
                }
                self.workers[worker.index()].running = Some(Running {
                    task: task.0,
                    start_ns: t,
                    codelet: codelet.0,
                    flops,
                    size: size_bytes,
                    priority,
                    flow: best.map_or(0, |b| b.serial),
                });
            }
            SimEvent::TaskEnd { worker, .. } => {
                let w = &mut self.workers[worker.index()];
                let Some(r) = w.running.take() else {
                    return;
                };
                let name = &self.codelets[r.codelet as usize];
                let flow = (r.flow != 0).then_some(r.flow);
                self.out.event(&Event {
                    cat: Some("task"),
                    tid: Some(w.tid),
                    dur: Some(micros(t.saturating_sub(r.start_ns))),
                    bind_id: flow,
                    flow_in: flow.map(|_| true),
                    args: Some(Args::Task {
                        job_id: r.task,
                        codelet: name,
                        size: r.size,
                        flops: Num(r.flops),
                        priority: r.priority,
                    }),
                    ..Event::new("X", name, w.pid).at(r.start_ns)
                });
            }
            SimEvent::TransferStart {
                handle,
                src,
                dst,
                bytes,
                kind,
                id,
                ..
            } => {
                self.next_serial += 1;
                let id = id as usize;
                if self.open.len() <= id {
                    self.open.resize(id + 1, None);
                }
                self.open[id] = Some(Transfer {
                    serial: self.next_serial,
                    src: src.0,
                    dst: dst.0,
                    kind: kind.as_str(),
                    handle: handle.0,
                    bytes,
                    start: t,
                    end: t,
                });
            }
            SimEvent::TransferEnd { id, .. } => {
                if let Some(mut o) = self.open.get_mut(id as usize).and_then(Option::take) {
                    o.end = t;
                    self.arrived(o);
                }
            }
            SimEvent::Allocate {
                node, used_bytes, ..
            } => self.memory_counter(t, node.0, used_bytes),
            SimEvent::Evict { node, handle, .. } => {
                self.out.event(&Event {
                    s: Some("p"),
                    args: Some(Args::Data {
                        data: &self.handles[handle.index()],
                    }),
                    ..Event::new("i", "evict", self.mem_pids[node.index()]).at(t)
                });
                if let Some(a) = self.arrivals[handle.index() * self.nnodes + node.index()].take() {
                    self.write_transfer(&a, false);
                }
            }
            SimEvent::LinkLoads { changed } => {
                self.with_link_windows(|windows, mut emit| {
                    for &(link, bytes_per_sec) in changed {
                        windows.set(t, link, bytes_per_sec, &mut emit);
                    }
                });
                self.flush_links();
            }
            SimEvent::MessageStart {
                task,
                from_rank,
                to_rank,
                bytes,
                ..
            } => {
                self.messages.insert(task.0, (t, from_rank, to_rank, bytes));
            }
            SimEvent::MessageEnd { task, .. } => {
                // Both halves at once, so that every arrow has both ends.
                if let Some((start, from, to, bytes)) = self.messages.remove(&task.0) {
                    let arrow = self.next_serial + 1;
                    let (id, f) = (task.0, Some(arrow));
                    self.write_message_half(id, start, t, from, to, bytes, Half::Send, f);
                    self.write_message_half(id, start, t, from, to, bytes, Half::Receive, f);
                }
            }
            _ => {}
        }
    }

    fn wants_link_loads(&self) -> bool {
        self.link_res != LinkResolution::Off
    }
}

impl<W: Write> Drop for ChromeWriter<W> {
    /// A writer dropped without [`finish`](ChromeWriter::finish) still leaves a complete file
    /// (Perfetto rejects incomplete ones); errors are lost then.
    fn drop(&mut self) {
        if self.out.w.is_some() {
            self.close();
            let _ = self.take_output();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::*;
    use hetsim_platform::machine::MemNodeId;
    use hetsim_runtime::{RunConfig, TransferKind, Worker, WorkerId, WorkerKind};
    use hetsim_taskgraph::{CodeletId, HandleId, Precision, TaskId};

    /// The events of a trace, parsed.
    fn events(bytes: &[u8]) -> Vec<Value> {
        let doc: Value = serde_json::from_slice(bytes).expect("valid JSON");
        doc["traceEvents"].as_array().expect("events").clone()
    }

    /// Per bind id: (flow starts, flow ends).
    fn arrows(events: &[Value]) -> BTreeMap<u64, (u32, u32)> {
        let mut m: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
        for e in events {
            if let Some(id) = e.get("bind_id").and_then(Value::as_u64) {
                let c = m.entry(id).or_default();
                if e.get("flow_out") == Some(&Value::Bool(true)) {
                    c.0 += 1;
                }
                if e.get("flow_in") == Some(&Value::Bool(true)) {
                    c.1 += 1;
                }
            }
        }
        m
    }

    #[test]
    fn only_the_transfer_a_task_waited_for_starts_an_arrow() {
        let machine = hetsim_runtime::fixture::star_machine(1, 1);
        let graph = hetsim_taskgraph::cholesky(2 * 960, 960, Precision::Single).unwrap();
        let workers = vec![
            Worker {
                id: WorkerId(0),
                name: "GPU0".into(),
                kind: WorkerKind::Gpu,
                device: "GPU0".into(),
                memory: MemNodeId(1),
                pipeline_depth: 2,
            },
            Worker {
                id: WorkerId(1),
                name: "CPU0".into(),
                kind: WorkerKind::Cpu,
                device: "CPU".into(),
                memory: MemNodeId(0),
                pipeline_depth: 1,
            },
        ];
        let config = RunConfig::default();
        let (ram, gpu) = (MemNodeId(0), MemNodeId(1));
        let (h0, h1, h2) = (HandleId(0), HandleId(1), HandleId(2));
        let start = |handle, src, dst, kind, id| SimEvent::TransferStart {
            handle,
            src,
            dst,
            bytes: 100.0,
            kind,
            version: 0,
            id,
        };
        let end = |handle, src, dst, kind, id| SimEvent::TransferEnd {
            handle,
            src,
            dst,
            bytes: 100.0,
            kind,
            version: 0,
            id,
        };
        let reads = [(h0, 0, 0), (h1, 0, 0)];
        let mut w = ChromeWriter::new(Vec::new()).with_link_resolution(LinkResolution::Off);
        let layout = hetsim_runtime::Layout::of_machine(&machine, &workers, &[]);
        let stream: Vec<(f64, SimEvent<'_>)> = vec![
            (
                0.0,
                SimEvent::RunStart {
                    machine: &machine,
                    graph: &graph,
                    workers: &workers,
                    links: &[],
                    sched: "eager",
                    config: &config,
                    bounds: super::super::Bounds {
                        critical_path_s: 0.0,
                        area_bound_s: 0.0,
                    },
                    layout: &layout,
                },
            ),
            // Serial 1: h0, arrives at 5 µs; serial 2: h1, arrives at 3 µs.
            (1e-6, start(h0, ram, gpu, TransferKind::Fetch, 0)),
            (1e-6, start(h1, ram, gpu, TransferKind::Fetch, 1)),
            (3e-6, end(h1, ram, gpu, TransferKind::Fetch, 1)),
            (5e-6, end(h0, ram, gpu, TransferKind::Fetch, 0)),
            // The task reads both: its arrow comes from h0, the later arrival (serial 1).
            (
                6e-6,
                SimEvent::TaskStart {
                    task: TaskId(0),
                    worker: WorkerId(0),
                    duration_s: 3e-6,
                    reads: &reads,
                    codelet: CodeletId(0),
                    codelet_name: "potrf",
                    flops: 1.0,
                    size_bytes: 100,
                    priority: 0,
                },
            ),
            // Serial 3: a prefetch of h2, evicted before any task reads it.
            (7e-6, start(h2, ram, gpu, TransferKind::Prefetch, 0)),
            (8e-6, end(h2, ram, gpu, TransferKind::Prefetch, 0)),
            (
                9e-6,
                SimEvent::TaskEnd {
                    task: TaskId(0),
                    worker: WorkerId(0),
                    node: gpu,
                },
            ),
            (
                10e-6,
                SimEvent::Evict {
                    node: gpu,
                    handle: h2,
                    bytes: 100,
                },
            ),
            // Serial 4: the final write-back of h0, which no task reads.
            (10e-6, start(h0, gpu, ram, TransferKind::WriteBack, 0)),
            (12e-6, end(h0, gpu, ram, TransferKind::WriteBack, 0)),
            (12e-6, SimEvent::RunEnd { makespan_s: 9e-6 }),
        ];
        for (at, e) in &stream {
            w.event(*at, e);
        }
        let ev = events(&w.finish().unwrap());
        // One arrow, 1 → the task.
        assert_eq!(arrows(&ev), BTreeMap::from([(1, (1, 1))]));
        let task = ev.iter().find(|e| e["ph"] == "X").unwrap();
        assert_eq!(task["bind_id"], 1);
        assert_eq!(task["ts"], 6.0);
        assert_eq!(task["dur"], 3.0);
        // Every transfer is there once, with its dates (µs), whether or not it has an arrow.
        let mut pairs: BTreeMap<u64, (f64, f64, String)> = BTreeMap::new();
        for e in &ev {
            let id = e.get("id").and_then(Value::as_u64);
            match (e["ph"].as_str().unwrap(), id) {
                ("b", Some(id)) => {
                    let prev =
                        pairs.insert(id, (e["ts"].as_f64().unwrap(), -1.0, e["cat"].to_string()));
                    assert!(prev.is_none(), "transfer {id} begins twice");
                }
                ("e", Some(id)) => {
                    let p = pairs.get_mut(&id).expect("'e' after its 'b'");
                    assert_eq!(p.1, -1.0, "transfer {id} ends twice");
                    p.1 = e["ts"].as_f64().unwrap();
                }
                _ => {}
            }
        }
        let want = |a: f64, b: f64, c: &str| (a, b, format!("\"{c}\""));
        assert_eq!(
            pairs,
            BTreeMap::from([
                (1, want(1.0, 5.0, "fetch")),
                (2, want(1.0, 3.0, "fetch")),
                (3, want(7.0, 8.0, "prefetch")),
                (4, want(10.0, 12.0, "writeback")),
            ])
        );
    }
}
