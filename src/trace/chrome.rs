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
//!   format allows one incoming arrow per slice);
//! - counters: `memory` (`used MiB`) per memory node, and `GB/s` in the `Links` process with
//!   one series per link (Perfetto names the tracks `GB/s <link>`); one counter event per date
//!   carries the links whose load changed then; evictions are process-scoped instant events
//!   `evict`;
//! - timestamps in µs with nanosecond resolution, written from integers;
//! - `otherData` records the generator, machine, scheduler and seed.
//!
//! The file is a JSON object and is always completed: [`ChromeWriter::finish`] (or dropping
//! the writer) writes the closing brackets even if the run stopped early.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::{
    LinkResolution, LinkWindows, Sink, handle_name, ns_of, push_f64, push_fixed, push_json_str,
    push_scaled, push_u64,
};
use crate::runtime::observe::WorkerStatus;
use crate::runtime::{Observer, SimEvent};

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

/// A transfer started and not ended: its serial number, process and name.
#[derive(Debug, Clone, Copy)]
struct Open {
    serial: u64,
    src: u32,
    dst: u32,
    kind: &'static str,
}

/// Writes a Chrome Trace Event JSON file of a run (see the module documentation for the
/// layout). Streams: memory grows only with the number of handles × memory nodes (one record
/// per replica, for the flow arrows), never with the run's length.
#[derive(Debug)]
pub struct ChromeWriter<W: Write> {
    sink: Sink<W>,
    started: bool,
    closed: bool,
    /// Whether an event was written (for the commas).
    any: bool,
    /// Date of the link counter event being written (its `args` still open), if any.
    links_open: Option<u64>,
    nnodes: usize,
    links_pid: u32,
    workers: Vec<WorkerSlot>,
    /// JSON-quoted codelet names.
    codelets: Vec<String>,
    /// JSON-quoted handle display names.
    handles: Vec<String>,
    /// JSON-quoted memory node names.
    nodes: Vec<String>,
    /// JSON-quoted link names.
    links: Vec<String>,
    /// Per in-flight transfer id.
    open: Vec<Option<Open>>,
    next_serial: u64,
    /// Per (handle, node): the last transfer that arrived there and no task consumed yet
    /// (serial, end date in ns); serial 0: none.
    arrivals: Vec<(u64, u64)>,
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
            sink: Sink::new(out),
            started: false,
            closed: false,
            any: false,
            links_open: None,
            nnodes: 0,
            links_pid: 0,
            workers: Vec::new(),
            codelets: Vec::new(),
            handles: Vec::new(),
            nodes: Vec::new(),
            links: Vec::new(),
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
        self.sink.finish()
    }

    fn close(&mut self) {
        if self.closed {
            return;
        }
        self.close_links();
        if !self.started {
            self.sink
                .buf
                .extend_from_slice(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        }
        let t = self.last_ns;
        self.flush_windows(t);
        self.with_link_windows(|windows, mut emit| {
            windows.close_partial(t, &mut emit);
            windows.final_values(t, &mut emit);
        });
        self.close_links();
        for id in 0..self.open.len() {
            if let Some(o) = self.open[id].take() {
                self.transfer_end(t, &o);
            }
        }
        self.sink.buf.extend_from_slice(b"\n]}\n");
        self.closed = true;
    }

    /// Run `f` on the link windows with an emitter that writes link-counter events: the
    /// windows and the output buffer are borrowed from `self` side by side.
    fn with_link_windows(
        &mut self,
        f: impl FnOnce(&mut LinkWindows, &mut dyn FnMut(u64, u32, u64)),
    ) {
        let ChromeWriter {
            sink,
            any,
            links_open,
            links_pid,
            links,
            windows,
            ..
        } = self;
        let mut emit =
            |at, l, v| link_counter(&mut sink.buf, any, links_open, *links_pid, links, at, l, v);
        f(windows, &mut emit);
    }

    /// Start an event: the separator, then `{"ph":"<ph>"`.
    #[inline]
    fn begin(&mut self, ph: &[u8]) -> &mut Vec<u8> {
        begin(&mut self.sink.buf, &mut self.any, ph)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_start(
        &mut self,
        machine: &crate::machine::Machine,
        graph: &crate::workload::TaskGraph,
        workers: &[crate::runtime::Worker],
        links: &[String],
        sched: &str,
        seed: u64,
        bounds: &super::Bounds,
    ) {
        self.started = true;
        let (windows, links) = LinkWindows::for_run(self.link_res, links, bounds);
        self.windows = windows;
        self.nnodes = machine.memory_nodes().len();
        self.links_pid = self.nnodes as u32 + 1;
        self.codelets = graph.codelet_names().iter().map(|n| json(n)).collect();
        self.handles = (0..graph.handles().len())
            .map(|h| json(&handle_name(graph, crate::workload::HandleId(h as u32))))
            .collect();
        self.nodes = machine
            .memory_nodes()
            .iter()
            .map(|n| json(&n.name))
            .collect();
        self.links = links.iter().map(|n| json(n)).collect();
        self.arrivals = vec![(0, 0); graph.handles().len() * self.nnodes];
        self.workers = workers
            .iter()
            .map(|w| WorkerSlot {
                pid: w.memory.0 + 1,
                tid: self.links_pid + 1 + w.id.0,
                node: w.memory.0,
                ..WorkerSlot::default()
            })
            .collect();
        let b = &mut self.sink.buf;
        b.extend_from_slice(b"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":");
        push_json_str(b, concat!("hetsim ", env!("CARGO_PKG_VERSION")));
        b.extend_from_slice(b",\"machine\":");
        push_json_str(b, machine.name());
        b.extend_from_slice(b",\"sched\":");
        push_json_str(b, sched);
        b.extend_from_slice(b",\"seed\":");
        push_u64(b, seed);
        b.extend_from_slice(b",\"tasks\":");
        push_u64(b, graph.num_tasks() as u64);
        b.extend_from_slice(b"},\"traceEvents\":[\n");
        // Names and order of processes and threads.
        for k in 0..self.nnodes {
            let name = self.nodes[k].clone();
            self.meta_process(k as u32 + 1, &name, k as u64);
        }
        if !self.links.is_empty() {
            self.meta_process(self.links_pid, "\"Links\"", self.nnodes as u64);
        }
        for (i, w) in workers.iter().enumerate() {
            let (pid, tid) = (self.workers[i].pid, self.workers[i].tid);
            let b = self.begin(b"M");
            b.extend_from_slice(b",\"name\":\"thread_name\",\"pid\":");
            push_u64(b, u64::from(pid));
            b.extend_from_slice(b",\"tid\":");
            push_u64(b, u64::from(tid));
            b.extend_from_slice(b",\"args\":{\"name\":");
            push_json_str(b, &w.name);
            b.extend_from_slice(b"}}");
            let b = self.begin(b"M");
            b.extend_from_slice(b",\"name\":\"thread_sort_index\",\"pid\":");
            push_u64(b, u64::from(pid));
            b.extend_from_slice(b",\"tid\":");
            push_u64(b, u64::from(tid));
            b.extend_from_slice(b",\"args\":{\"sort_index\":");
            push_u64(b, i as u64);
            b.extend_from_slice(b"}}");
        }
        // Initial counters.
        let ram_used: u64 = graph.handles().iter().map(|h| h.size_bytes).sum();
        for n in machine.memory_nodes() {
            let used = if n.kind == crate::machine::MemKind::Ram {
                ram_used
            } else {
                0
            };
            self.memory_counter(0, n.id.0, used);
        }
        for l in 0..self.links.len() {
            link_counter(
                &mut self.sink.buf,
                &mut self.any,
                &mut self.links_open,
                self.links_pid,
                &self.links,
                0,
                l as u32,
                0,
            );
        }
        self.close_links();
    }

    fn meta_process(&mut self, pid: u32, quoted_name: &str, sort: u64) {
        let b = self.begin(b"M");
        b.extend_from_slice(b",\"name\":\"process_name\",\"pid\":");
        push_u64(b, u64::from(pid));
        b.extend_from_slice(b",\"args\":{\"name\":");
        b.extend_from_slice(quoted_name.as_bytes());
        b.extend_from_slice(b"}}");
        let b = self.begin(b"M");
        b.extend_from_slice(b",\"name\":\"process_sort_index\",\"pid\":");
        push_u64(b, u64::from(pid));
        b.extend_from_slice(b",\"args\":{\"sort_index\":");
        push_u64(b, sort);
        b.extend_from_slice(b"}}");
    }

    fn memory_counter(&mut self, t: u64, node: u32, used: u64) {
        let b = self.begin(b"C");
        b.extend_from_slice(b",\"name\":\"memory\",\"pid\":");
        push_u64(b, u64::from(node) + 1);
        b.extend_from_slice(b",\"ts\":");
        push_scaled(b, t, 3);
        b.extend_from_slice(b",\"args\":{\"used MiB\":");
        push_fixed(b, used as f64 / 1048576.0, 3);
        b.extend_from_slice(b"}}");
    }

    /// Close the link windows that end by `t`, writing their averages.
    fn flush_windows(&mut self, t: u64) {
        self.with_link_windows(|windows, mut emit| while windows.advance(t, &mut emit) {});
    }

    fn close_links(&mut self) {
        if self.links_open.take().is_some() {
            self.sink.buf.extend_from_slice(b"}}");
        }
    }

    /// A complete event on a worker's thread.
    fn complete(
        &mut self,
        w: usize,
        name: &[u8],
        cat: &[u8],
        start: u64,
        end: u64,
    ) -> &mut Vec<u8> {
        let (pid, tid) = (self.workers[w].pid, self.workers[w].tid);
        let b = self.begin(b"X");
        complete_fields(b, name, cat, pid, tid, start, end);
        b
    }

    fn transfer_end(&mut self, t: u64, o: &Open) {
        let b = begin(&mut self.sink.buf, &mut self.any, b"e");
        pair_fields(b, &self.nodes, o);
        b.extend_from_slice(b",\"ts\":");
        push_scaled(b, t, 3);
        b.push(b'}');
    }
}

/// A link's load in kB/s: one counter event `GB/s` per date in the `Links` process, with one
/// series per link (only the links whose load changed at that date); `links_open` holds the
/// date of the counter event whose `args` are still open.
#[allow(clippy::too_many_arguments)]
fn link_counter(
    buf: &mut Vec<u8>,
    any: &mut bool,
    links_open: &mut Option<u64>,
    pid: u32,
    names: &[String],
    t: u64,
    link: u32,
    kbps: u64,
) {
    if links_open.is_some_and(|open| open != t) {
        buf.extend_from_slice(b"}}");
        *links_open = None;
    }
    let b = if links_open.is_some() {
        buf.push(b',');
        buf
    } else {
        *links_open = Some(t);
        let b = begin(buf, any, b"C");
        b.extend_from_slice(b",\"name\":\"GB/s\",\"pid\":");
        push_u64(b, u64::from(pid));
        b.extend_from_slice(b",\"ts\":");
        push_scaled(b, t, 3);
        b.extend_from_slice(b",\"args\":{");
        b
    };
    b.extend_from_slice(names[link as usize].as_bytes());
    b.push(b':');
    push_scaled(b, kbps, 6);
}

/// The fields of a complete event after `ph`.
fn complete_fields(
    b: &mut Vec<u8>,
    name: &[u8],
    cat: &[u8],
    pid: u32,
    tid: u32,
    start: u64,
    end: u64,
) {
    b.extend_from_slice(b",\"name\":");
    b.extend_from_slice(name);
    b.extend_from_slice(b",\"cat\":\"");
    b.extend_from_slice(cat);
    b.extend_from_slice(b"\",\"pid\":");
    push_u64(b, u64::from(pid));
    b.extend_from_slice(b",\"tid\":");
    push_u64(b, u64::from(tid));
    b.extend_from_slice(b",\"ts\":");
    push_scaled(b, start, 3);
    b.extend_from_slice(b",\"dur\":");
    push_scaled(b, end.saturating_sub(start), 3);
}

/// Start an event in `b`: the separator if `any`, then `{"ph":"<ph>"`.
#[inline]
fn begin<'b>(b: &'b mut Vec<u8>, any: &mut bool, ph: &[u8]) -> &'b mut Vec<u8> {
    if *any {
        b.extend_from_slice(b",\n");
    }
    *any = true;
    b.extend_from_slice(b"{\"ph\":\"");
    b.extend_from_slice(ph);
    b.push(b'"');
    b
}

/// `,"name":"SRC->DST","cat":"<kind>","id":<n>,"pid":<dst+1>` of a transfer's async events.
fn pair_fields(b: &mut Vec<u8>, nodes: &[String], o: &Open) {
    b.extend_from_slice(b",\"name\":\"");
    let src = &nodes[o.src as usize];
    let dst = &nodes[o.dst as usize];
    b.extend_from_slice(&src.as_bytes()[1..src.len() - 1]);
    b.extend_from_slice(b"->");
    b.extend_from_slice(&dst.as_bytes()[1..dst.len() - 1]);
    b.extend_from_slice(b"\",\"cat\":\"");
    b.extend_from_slice(o.kind.as_bytes());
    b.extend_from_slice(b"\",\"id\":");
    push_u64(b, o.serial);
    b.extend_from_slice(b",\"pid\":");
    push_u64(b, u64::from(o.dst) + 1);
}

fn json(s: &str) -> String {
    let mut b = Vec::with_capacity(s.len() + 2);
    push_json_str(&mut b, s);
    String::from_utf8(b).expect("escaped UTF-8 stays UTF-8")
}

impl<W: Write> Observer for ChromeWriter<W> {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        if self.closed {
            return;
        }
        let t = ns_of(at_s).max(self.last_ns);
        self.last_ns = t;
        self.flush_windows(t);
        self.close_links();
        match *event {
            SimEvent::RunStart {
                machine,
                graph,
                workers,
                links,
                sched,
                config,
                bounds,
            } => self.run_start(machine, graph, workers, links, sched, config.seed, &bounds),
            SimEvent::RunEnd { makespan_s } => {
                let b = self.begin(b"i");
                b.extend_from_slice(b",\"name\":\"last task ends\",\"s\":\"g\",\"pid\":1,\"ts\":");
                push_scaled(b, ns_of(makespan_s), 3);
                b.push(b'}');
                let b = self.begin(b"i");
                b.extend_from_slice(
                    b",\"name\":\"final write-back ends\",\"s\":\"g\",\"pid\":1,\"ts\":",
                );
                push_scaled(b, t, 3);
                b.push(b'}');
                self.close();
            }
            SimEvent::WorkerState { worker, state } => {
                let w = worker.index();
                if let Some(since) = self.workers[w].fetching_since.take()
                    && t > since
                {
                    self.complete(w, b"\"FetchingInput\"", b"state", since, t)
                        .push(b'}');
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
                // The flow arrow: the latest unconsumed arrival among the task's inputs.
                let node = self.workers[worker.index()].node as usize;
                let mut best = (0u64, 0u64);
                for &(h, _, _) in reads {
                    let slot = &mut self.arrivals[h.index() * self.nnodes + node];
                    if slot.0 != 0 {
                        if (slot.1, slot.0) > (best.1, best.0) {
                            best = (slot.0, slot.1);
                        }
                        slot.0 = 0;
                    }
                }
                self.workers[worker.index()].running = Some(Running {
                    task: task.0,
                    start_ns: t,
                    codelet: codelet.0,
                    flops,
                    size: size_bytes,
                    priority,
                    flow: best.0,
                });
            }
            SimEvent::TaskEnd { worker, .. } => {
                let w = worker.index();
                let Some(r) = self.workers[w].running.take() else {
                    return;
                };
                let name = &self.codelets[r.codelet as usize];
                let (pid, tid) = (self.workers[w].pid, self.workers[w].tid);
                let b = begin(&mut self.sink.buf, &mut self.any, b"X");
                complete_fields(b, name.as_bytes(), b"task", pid, tid, r.start_ns, t);
                b.extend_from_slice(b",\"args\":{\"job_id\":");
                push_u64(b, u64::from(r.task));
                b.extend_from_slice(b",\"codelet\":");
                b.extend_from_slice(name.as_bytes());
                b.extend_from_slice(b",\"size\":");
                push_u64(b, r.size);
                b.extend_from_slice(b",\"flops\":");
                push_f64(b, r.flops);
                b.extend_from_slice(b",\"priority\":");
                super::push_i64(b, i64::from(r.priority));
                b.push(b'}');
                if r.flow != 0 {
                    b.extend_from_slice(b",\"bind_id\":");
                    push_u64(b, r.flow);
                    b.extend_from_slice(b",\"flow_in\":true");
                }
                b.push(b'}');
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
                let o = Open {
                    serial: self.next_serial,
                    src: src.0,
                    dst: dst.0,
                    kind: kind.as_str(),
                };
                let id = id as usize;
                if self.open.len() <= id {
                    self.open.resize(id + 1, None);
                }
                self.open[id] = Some(o);
                let b = begin(&mut self.sink.buf, &mut self.any, b"b");
                let (nodes, handles) = (&self.nodes, &self.handles);
                pair_fields(b, nodes, &o);
                b.extend_from_slice(b",\"ts\":");
                push_scaled(b, t, 3);
                b.extend_from_slice(b",\"bind_id\":");
                push_u64(b, o.serial);
                b.extend_from_slice(b",\"flow_out\":true,\"args\":{\"handle\":");
                push_u64(b, u64::from(handle.0));
                b.extend_from_slice(b",\"data\":");
                b.extend_from_slice(handles[handle.index()].as_bytes());
                b.extend_from_slice(b",\"bytes\":");
                push_f64(b, bytes);
                b.extend_from_slice(b"}}");
            }
            SimEvent::TransferEnd {
                handle, dst, id, ..
            } => {
                if let Some(o) = self.open.get_mut(id as usize).and_then(Option::take) {
                    self.transfer_end(t, &o);
                    self.arrivals[handle.index() * self.nnodes + dst.index()] = (o.serial, t);
                }
            }
            SimEvent::Allocate {
                node, used_bytes, ..
            } => self.memory_counter(t, node.0, used_bytes),
            SimEvent::Evict { node, handle, .. } => {
                let b = begin(&mut self.sink.buf, &mut self.any, b"i");
                b.extend_from_slice(b",\"name\":\"evict\",\"s\":\"p\",\"pid\":");
                push_u64(b, u64::from(node.0) + 1);
                b.extend_from_slice(b",\"ts\":");
                push_scaled(b, t, 3);
                b.extend_from_slice(b",\"args\":{\"data\":");
                b.extend_from_slice(self.handles[handle.index()].as_bytes());
                b.extend_from_slice(b"}}");
                self.arrivals[handle.index() * self.nnodes + node.index()].0 = 0;
            }
            SimEvent::LinkLoads { changed } => {
                self.with_link_windows(|windows, mut emit| {
                    for &(link, bytes_per_sec) in changed {
                        windows.set(t, link, bytes_per_sec, &mut emit);
                    }
                });
                self.close_links();
            }
            _ => {}
        }
        self.sink.maybe_flush();
    }

    fn wants_link_loads(&self) -> bool {
        self.link_res != LinkResolution::Off
    }
}

impl<W: Write> Drop for ChromeWriter<W> {
    /// A writer dropped without [`finish`](ChromeWriter::finish) still leaves a complete file
    /// (Perfetto rejects incomplete ones); errors are lost then.
    fn drop(&mut self) {
        if !self.sink.is_finished() {
            self.close();
            let _ = self.sink.finish();
        }
    }
}
