//! Paje traces with StarPU's container hierarchy, aliases and state names
//! (`starpu_fxt_tool`'s `paje.trace`; `starpu-reference.md` §1d).
//!
//! Hierarchy (aliases in parentheses; `<k>` a memory node, `<i>` a worker, `<l>` a link):
//!
//! ```text
//! program (p, type P "Program")
//! ├── MEMNODE<k> (mn<k>, Mn "Memory Node")
//! │   ├── MEMMANAGER<k> (mm<k>, Mm "Memory Manager")  variable `use` "Used (MB)", eviction events
//! │   └── T<i> (t<i>, T "Thread")                      one per worker of that memory node
//! │       └── <worker name> (w<i>, W "Worker")        state `WS` "Worker State"
//! └── <link name> (l<l>, L "Link")                     variable `bw` "Bandwidth (MB/s)"
//! ```
//!
//! - Memory node `k` is the machine's `k`-th memory node (RAM is `MEMNODE0` on the shipped
//!   machines); workers keep hetsim's names (`CUDA0`, `CPU3`). Link containers are hetsim's
//!   addition: StarPU has no per-link containers.
//! - Worker states: `I` (Idle), `Fi` (FetchingInput: holds a task whose data is not all
//!   there) and, while a task runs, the task's codelet name (each codelet is an entity value
//!   of `WS`, as StarPU declares them), set with StarPU's extended `PajeSetState` (id 20) that
//!   carries Size, JobId, SubmitOrder, Priority and GFlop.
//! - Transfers are links of type `F` (fetch), `PF` (prefetch) or `WB` (write-back; hetsim's
//!   addition) from `mm<src>` to `mm<dst>`, started with StarPU's extended `PajeStartLink`
//!   (id 24: Handle, HName, X, Y = tile row and column); value = bytes, key `com_<n>`. The
//!   work-steal link type `WSL` is declared for schedulers that will steal.
//! - Dates are in milliseconds, as StarPU writes them, with nanosecond resolution; they never
//!   decrease. There are no comment lines (ViTE warns on them).
//!
//! On a cluster (several nodes in the run's [`Layout`](hetsim_runtime::Layout)), as
//! StarPU-MPI's traces: a root `root` of type `MPIP` "MPI Program" holds a program `p<k>` per
//! node (named `n<k>`) with the hierarchy above inside it (memory nodes named by the node
//! machine's numbers, `MEMNODE0` being each node's RAM; aliases and workers by global ids and
//! names), plus each rank's MPI communication thread `mpi<r>` (`MPICt`, named `rank<r>`): the
//! ranks of a node share its memory nodes, so they are not containers above them. Links go
//! under the root. Messages are links of type `MPIL` in the root from the sender's thread to
//! the receiver's, value = bytes, key `mpi_<message task>`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::{
    LinkResolution, LinkWindows, Sink, handle_name, ns_of, push_fixed, push_scaled, push_u64,
};
use hetsim_runtime::observe::WorkerStatus;
use hetsim_runtime::{Observer, SimEvent, TransferKind};

/// The event definitions: StarPU's ids and field orders (`starpu_paje.c`).
const EVENT_DEFS: &str = "\
%EventDef PajeDefineContainerType 1
%\tAlias string
%\tType string
%\tName string
%EndEventDef
%EventDef PajeDefineEventType 2
%\tAlias string
%\tType string
%\tName string
%EndEventDef
%EventDef PajeDefineStateType 3
%\tAlias string
%\tType string
%\tName string
%EndEventDef
%EventDef PajeDefineVariableType 4
%\tAlias string
%\tType string
%\tName string
%\tColor color
%EndEventDef
%EventDef PajeDefineLinkType 5
%\tAlias string
%\tType string
%\tStartContainerType string
%\tEndContainerType string
%\tName string
%EndEventDef
%EventDef PajeDefineEntityValue 6
%\tAlias string
%\tType string
%\tName string
%\tColor color
%EndEventDef
%EventDef PajeCreateContainer 7
%\tTime date
%\tAlias string
%\tType string
%\tContainer string
%\tName string
%EndEventDef
%EventDef PajeDestroyContainer 8
%\tTime date
%\tType string
%\tName string
%EndEventDef
%EventDef PajeNewEvent 9
%\tTime date
%\tType string
%\tContainer string
%\tValue string
%EndEventDef
%EventDef PajeSetState 10
%\tTime date
%\tContainer string
%\tType string
%\tValue string
%EndEventDef
%EventDef PajeSetVariable 13
%\tTime date
%\tContainer string
%\tType string
%\tValue double
%EndEventDef
%EventDef PajeStartLink 18
%\tTime date
%\tType string
%\tContainer string
%\tValue string
%\tStartContainer string
%\tKey string
%EndEventDef
%EventDef PajeEndLink 19
%\tTime date
%\tType string
%\tContainer string
%\tValue string
%\tEndContainer string
%\tKey string
%EndEventDef
%EventDef PajeSetState 20
%\tTime date
%\tContainer string
%\tType string
%\tValue string
%\tSize string
%\tParams string
%\tFootprint string
%\tTag string
%\tJobId string
%\tSubmitOrder string
%\tPriority string
%\tGFlop string
%\tX string
%\tY string
%\tIteration string
%\tSubiteration string
%\tNumaNodes string
%EndEventDef
%EventDef PajeStartLink 24
%\tTime date
%\tType string
%\tContainer string
%\tValue string
%\tStartContainer string
%\tKey string
%\tHandle string
%\tHName string
%\tX string
%\tY string
%EndEventDef
";

/// The container types of a machine's trace: a program at the root.
const MACHINE_ROOT: &str = "1 P 0 \"Program\"\n";
/// The container types of a cluster's trace: StarPU-MPI's root of the programs, one per node.
const CLUSTER_ROOT: &str = "1 MPIP 0 \"MPI Program\"\n1 P MPIP \"Program\"\n";
/// The container types under a program.
const PROGRAM_TYPES: &str = "\
1 Mn P \"Memory Node\"
1 T Mn \"Thread\"
1 W T \"Worker\"
1 Mm Mn \"Memory Manager\"
";
/// Where link containers go: under the program on a machine; on a cluster, beside each
/// node's program the MPI communication threads of its ranks, and links under the root.
const MACHINE_LINKS: &str = "1 L P \"Link\"\n";
const CLUSTER_LINKS: &str = "1 MPICt P \"MPI Communication Thread\"\n1 L MPIP \"Link\"\n";
/// States, variables, events, entity values and link types, on both.
const TYPES: &str = "\
3 WS W \"Worker State\"
4 use Mm \"Used (MB)\" \"0 0 0\"
4 bw L \"Bandwidth (MB/s)\" \"0 0 1\"
2 evict Mm \"Eviction\"
6 I WS Idle \".9 .1 .0\"
6 Fi WS FetchingInput \"1.0 .1 1.0\"
6 E WS Executing \".0 .6 .5\"
5 F P Mm Mm \"Intra-node data Fetch\"
5 PF P Mm Mm \"Intra-node data PreFetch\"
5 WB P Mm Mm \"Intra-node data WriteBack\"
5 WSL P W W \"Work steal\"
";
/// MPI messages on a cluster: from the sender's communication thread to the receiver's.
const CLUSTER_MESSAGES: &str = "5 MPIL MPIP MPICt MPICt \"MPI communication\"\n";

/// Writes a Paje trace of a run, as StarPU's `starpu_fxt_tool` lays it out (see the module
/// documentation for the hierarchy and names).
///
/// Feed it a run with [`simulate_observed`](hetsim_runtime::simulate_observed), then call
/// [`finish`](Self::finish). It streams: memory stays small whatever the run's length.
#[derive(Debug)]
pub struct PajeWriter<W: Write> {
    sink: Sink<W>,
    /// Whether the run is on a cluster (a program container per node under a root).
    cluster: bool,
    /// Per worker: its node (whose program contains its steals).
    worker_node: Vec<u32>,
    /// Per memory node: its node (whose program contains its transfers).
    mem_node: Vec<u32>,
    /// Number of nodes, ranks and links, to destroy their containers.
    nnodes: usize,
    nranks: usize,
    nlinks: usize,
    /// Paje-quoted codelet names, by codelet id.
    codelets: Vec<String>,
    /// Paje-quoted handle display names, by handle id.
    handles: Vec<String>,
    /// Tile (row, col) per handle, for the X and Y fields.
    tiles: Vec<Option<(u32, u32)>>,
    /// Per in-flight transfer id: its link's key number, type, value (bytes) and destination.
    open: Vec<Option<OpenLink>>,
    next_key: u64,
    /// Per message task in flight: receiving rank and bytes, to end its link if the run
    /// stops early.
    messages: BTreeMap<u32, (u32, u64)>,
    steals: u64,
    last_ns: u64,
    started: bool,
    ended: bool,
    links: LinkResolution,
    windows: LinkWindows,
    /// Lines of the current link window, held back until the window's averages are written.
    pending: Vec<u8>,
}

impl PajeWriter<BufWriter<File>> {
    /// A writer to a new file at `path` (buffered).
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self::new(BufWriter::new(File::create(path)?)))
    }
}

impl<W: Write> PajeWriter<W> {
    /// A writer to `out`.
    pub fn new(out: W) -> Self {
        PajeWriter {
            sink: Sink::new(out),
            cluster: false,
            worker_node: Vec::new(),
            mem_node: Vec::new(),
            nnodes: 0,
            nranks: 0,
            nlinks: 0,
            codelets: Vec::new(),
            handles: Vec::new(),
            tiles: Vec::new(),
            open: Vec::new(),
            next_key: 0,
            messages: BTreeMap::new(),
            steals: 0,
            last_ns: 0,
            started: false,
            ended: false,
            links: LinkResolution::default(),
            windows: LinkWindows::default(),
            pending: Vec::new(),
        }
    }

    /// How to report link bandwidth (default: [`LinkResolution::Auto`] with 2048 windows).
    pub fn with_link_resolution(mut self, links: LinkResolution) -> Self {
        self.links = links;
        self
    }

    /// End the trace (if the run did not reach its end, close what is open at the last date
    /// seen), write everything out and give the writer back; the first I/O error if any.
    pub fn finish(mut self) -> io::Result<W> {
        if self.started && !self.ended {
            let t = self.last_ns;
            self.end_run(t);
        }
        self.sink.finish()
    }

    fn end_run(&mut self, t: u64) {
        self.advance_windows(t);
        let buf = &mut self.sink.buf;
        self.windows
            .close_partial(t, &mut |at, l, v| bandwidth_line(buf, at, l, v));
        buf.append(&mut self.pending);
        self.windows
            .final_values(t, &mut |at, l, v| bandwidth_line(buf, at, l, v));
        // Transfers still in flight (only if the run stopped early).
        for id in 0..self.open.len() {
            if let Some(o) = self.open[id].take() {
                end_link(&mut self.sink.buf, t, self.cluster, &o);
            }
        }
        for (task, (to, bytes)) in std::mem::take(&mut self.messages) {
            message_link(&mut self.sink.buf, b"19 ", t, task, to, bytes);
        }
        let b = &mut self.sink.buf;
        for w in 0..self.worker_node.len() {
            destroy(b, t, b" W w", w as u64);
            destroy(b, t, b" T t", w as u64);
        }
        for k in 0..self.mem_node.len() {
            destroy(b, t, b" Mm mm", k as u64);
            destroy(b, t, b" Mn mn", k as u64);
        }
        for l in 0..self.nlinks {
            if self.links == LinkResolution::Off {
                break;
            }
            destroy(b, t, b" L l", l as u64);
        }
        if self.cluster {
            for r in 0..self.nranks {
                destroy(b, t, b" MPICt mpi", r as u64);
            }
            for k in 0..self.nnodes {
                destroy(b, t, b" P p", k as u64);
            }
            line(b, b"8 ", t);
            b.extend_from_slice(b" MPIP root\n");
        } else {
            line(b, b"8 ", t);
            b.extend_from_slice(b" P p\n");
        }
        self.ended = true;
    }

    fn run_start(
        &mut self,
        graph: &hetsim_taskgraph::TaskGraph,
        layout: &hetsim_runtime::Layout,
        bounds: &super::Bounds,
    ) {
        self.started = true;
        let (windows, links) = LinkWindows::for_run(self.links, &layout.links, bounds);
        self.windows = windows;
        self.cluster = layout.is_cluster();
        self.nnodes = layout.nodes.len();
        self.nranks = layout.ranks.len();
        self.nlinks = links.len();
        self.mem_node = layout.memories.iter().map(|m| m.node).collect();
        self.worker_node = layout
            .workers
            .iter()
            .map(|w| self.mem_node[w.memory.index()])
            .collect();
        self.codelets = graph.codelet_names().iter().map(|n| quote(n)).collect();
        self.handles = (0..graph.handles().len())
            .map(|h| quote(&handle_name(graph, hetsim_taskgraph::HandleId(h as u32))))
            .collect();
        self.tiles = graph
            .handles()
            .iter()
            .map(|h| h.tile.map(|t| (t.row, t.col)))
            .collect();
        let cluster = self.cluster;
        let b = &mut self.sink.buf;
        b.extend_from_slice(EVENT_DEFS.as_bytes());
        let (root, links_type) = if cluster {
            (CLUSTER_ROOT, CLUSTER_LINKS)
        } else {
            (MACHINE_ROOT, MACHINE_LINKS)
        };
        for part in [root, PROGRAM_TYPES, links_type, TYPES] {
            b.extend_from_slice(part.as_bytes());
        }
        if cluster {
            b.extend_from_slice(CLUSTER_MESSAGES.as_bytes());
        }
        for (i, name) in self.codelets.iter().enumerate() {
            let (r, g, bl) = super::codelet_rgb(i);
            b.extend_from_slice(b"6 ");
            b.extend_from_slice(name.as_bytes());
            b.extend_from_slice(b" WS ");
            b.extend_from_slice(name.as_bytes());
            b.extend_from_slice(b" \"");
            push_fixed(b, f64::from(r) / 255.0, 3);
            b.push(b' ');
            push_fixed(b, f64::from(g) / 255.0, 3);
            b.push(b' ');
            push_fixed(b, f64::from(bl) / 255.0, 3);
            b.extend_from_slice(b"\"\n");
        }
        if cluster {
            // StarPU-MPI's root, a program per node (a StarPU-MPI process's container; the
            // ranks of a node share its memory nodes, so they are not containers above them),
            // and each rank's MPI communication thread, which messages link.
            b.extend_from_slice(b"7 0.000000 root MPIP 0 \"cluster\"\n");
            for (k, name) in layout.nodes.iter().enumerate() {
                b.extend_from_slice(b"7 0.000000 p");
                push_u64(b, k as u64);
                b.extend_from_slice(b" P root ");
                b.extend_from_slice(quote(name).as_bytes());
                b.push(b'\n');
            }
            for (r, rank) in layout.ranks.iter().enumerate() {
                b.extend_from_slice(b"7 0.000000 mpi");
                push_u64(b, r as u64);
                b.extend_from_slice(b" MPICt p");
                push_u64(b, u64::from(rank.node));
                b.extend_from_slice(b" rank");
                push_u64(b, r as u64);
                b.push(b'\n');
            }
        } else {
            b.extend_from_slice(b"7 0.000000 p P 0 program\n");
        }
        let per_node = layout.memories.len() / self.nnodes.max(1);
        for (k, m) in layout.memories.iter().enumerate() {
            // Memory nodes keep the node machine's numbers: MEMNODE0 is each node's RAM.
            let local = (k % per_node.max(1)) as u64;
            let k = k as u64;
            b.extend_from_slice(b"7 0.000000 mn");
            push_u64(b, k);
            b.extend_from_slice(b" Mn");
            push_program(b, cluster, m.node);
            b.extend_from_slice(b" MEMNODE");
            push_u64(b, local);
            b.extend_from_slice(b"\n7 0.000000 mm");
            push_u64(b, k);
            b.extend_from_slice(b" Mm mn");
            push_u64(b, k);
            b.extend_from_slice(b" MEMMANAGER");
            push_u64(b, local);
            b.push(b'\n');
        }
        for w in &layout.workers {
            let i = w.id.0 as u64;
            b.extend_from_slice(b"7 0.000000 t");
            push_u64(b, i);
            b.extend_from_slice(b" T mn");
            push_u64(b, u64::from(w.memory.0));
            b.extend_from_slice(b" T");
            push_u64(b, i);
            b.extend_from_slice(b"\n7 0.000000 w");
            push_u64(b, i);
            b.extend_from_slice(b" W t");
            push_u64(b, i);
            b.push(b' ');
            b.extend_from_slice(quote(&w.name).as_bytes());
            b.push(b'\n');
        }
        let link_parent: &[u8] = if cluster { b" L root " } else { b" L p " };
        for (l, name) in links.iter().enumerate() {
            b.extend_from_slice(b"7 0.000000 l");
            push_u64(b, l as u64);
            b.extend_from_slice(link_parent);
            b.extend_from_slice(quote(name).as_bytes());
            b.push(b'\n');
        }
        for w in &layout.workers {
            b.extend_from_slice(b"10 0.000000 w");
            push_u64(b, w.id.0 as u64);
            b.extend_from_slice(b" WS I\n");
        }
        for (k, used) in super::initial_memory_use(graph, layout)
            .into_iter()
            .enumerate()
        {
            b.extend_from_slice(b"13 0.000000 mm");
            push_u64(b, k as u64);
            b.extend_from_slice(b" use ");
            push_fixed(b, used as f64 / 1048576.0, 3);
            b.push(b'\n');
        }
        for l in 0..links.len() {
            b.extend_from_slice(b"13 0.000000 l");
            push_u64(b, l as u64);
            b.extend_from_slice(b" bw 0\n");
        }
    }

    /// Close the link windows that end by `t`: their averages, then the lines held back.
    fn advance_windows(&mut self, t: u64) {
        let buf = &mut self.sink.buf;
        while self
            .windows
            .advance(t, &mut |at, l, v| bandwidth_line(buf, at, l, v))
        {
            buf.append(&mut self.pending);
        }
    }

    fn open_link(&mut self, id: u32, kind: TransferKind, bytes: u64, dst: u32) -> u64 {
        let id = id as usize;
        if self.open.len() <= id {
            self.open.resize(id + 1, None);
        }
        self.next_key += 1;
        self.open[id] = Some(OpenLink {
            key: self.next_key,
            kind,
            bytes,
            dst,
            node: self.mem_node.get(dst as usize).copied().unwrap_or(0),
        });
        self.next_key
    }
}

/// A transfer's link, started and not ended.
#[derive(Debug, Clone, Copy)]
struct OpenLink {
    key: u64,
    kind: TransferKind,
    bytes: u64,
    dst: u32,
    /// The node whose program contains the link.
    node: u32,
}

fn end_link(b: &mut Vec<u8>, t: u64, cluster: bool, o: &OpenLink) {
    line(b, b"19 ", t);
    b.push(b' ');
    b.extend_from_slice(link_type(o.kind));
    push_program(b, cluster, o.node);
    b.push(b' ');
    push_u64(b, o.bytes);
    b.extend_from_slice(b" mm");
    push_u64(b, u64::from(o.dst));
    b.extend_from_slice(b" com_");
    push_u64(b, o.key);
    b.push(b'\n');
}

/// ` p` (the program of a machine) or ` p<node>` (a node's program on a cluster).
fn push_program(b: &mut Vec<u8>, cluster: bool, node: u32) {
    b.extend_from_slice(b" p");
    if cluster {
        push_u64(b, u64::from(node));
    }
}

/// One end of an MPI message's link (`18 ` start, `19 ` end): `<id> <date> MPIL root <bytes>
/// mpi<rank> mpi_<task>`, the key being the message task (each is sent once).
fn message_link(b: &mut Vec<u8>, id: &[u8], t: u64, task: u32, rank: u32, bytes: u64) {
    line(b, id, t);
    b.extend_from_slice(b" MPIL root ");
    push_u64(b, bytes);
    b.extend_from_slice(b" mpi");
    push_u64(b, u64::from(rank));
    b.extend_from_slice(b" mpi_");
    push_u64(b, u64::from(task));
    b.push(b'\n');
}

/// `13 <date> l<link> bw <MB/s>`.
fn bandwidth_line(b: &mut Vec<u8>, t: u64, link: u32, kbps: u64) {
    line(b, b"13 ", t);
    b.extend_from_slice(b" l");
    push_u64(b, u64::from(link));
    b.extend_from_slice(b" bw ");
    push_scaled(b, kbps, 3);
    b.push(b'\n');
}

/// Start an event line: `<id prefix><date in ms>`.
#[inline]
/// `PajeDestroyContainer` (event 8) of container `<alias><idx>` of type `ty_alias`, given as
/// b" TYPE alias".
fn destroy(b: &mut Vec<u8>, t: u64, ty_alias: &[u8], idx: u64) {
    line(b, b"8 ", t);
    b.extend_from_slice(ty_alias);
    push_u64(b, idx);
    b.push(b'\n');
}

fn line(b: &mut Vec<u8>, prefix: &[u8], t_ns: u64) {
    b.extend_from_slice(prefix);
    push_scaled(b, t_ns, 6);
}

/// A name as a Paje string: always double-quoted; Paje has no escapes, so `"` becomes `'` and
/// line breaks become spaces.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        q.push(match c {
            '"' => '\'',
            '\n' | '\r' => ' ',
            c => c,
        });
    }
    q.push('"');
    q
}

fn link_type(kind: TransferKind) -> &'static [u8] {
    match kind {
        TransferKind::Fetch => b"F",
        TransferKind::Prefetch => b"PF",
        TransferKind::WriteBack => b"WB",
    }
}

impl<W: Write> Observer for PajeWriter<W> {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        if self.sink.is_finished() || self.ended {
            return;
        }
        // Dates never decrease in the stream; rounding keeps that, and this makes sure.
        let t = ns_of(at_s).max(self.last_ns);
        self.last_ns = t;
        self.advance_windows(t);
        match *event {
            SimEvent::RunStart {
                graph,
                bounds,
                layout,
                ..
            } => self.run_start(graph, layout, &bounds),
            SimEvent::RunEnd { .. } => self.end_run(t),
            SimEvent::WorkerState { worker, state } => {
                let v: &[u8] = match state {
                    WorkerStatus::Idle => b" WS I\n",
                    WorkerStatus::FetchingInput => b" WS Fi\n",
                    // The task's start sets the codelet as the state.
                    WorkerStatus::Executing => return,
                };
                let b = &mut self.pending;
                line(b, b"10 ", t);
                b.extend_from_slice(b" w");
                push_u64(b, u64::from(worker.0));
                b.extend_from_slice(v);
            }
            SimEvent::TaskStart {
                task,
                worker,
                codelet,
                flops,
                size_bytes,
                priority,
                ..
            } => {
                let b = &mut self.pending;
                line(b, b"20 ", t);
                b.extend_from_slice(b" w");
                push_u64(b, u64::from(worker.0));
                b.extend_from_slice(b" WS ");
                b.extend_from_slice(self.codelets[codelet.index()].as_bytes());
                b.push(b' ');
                push_u64(b, size_bytes);
                b.extend_from_slice(b" - 00000000 0 ");
                push_u64(b, u64::from(task.0));
                b.push(b' ');
                push_u64(b, u64::from(task.0));
                b.push(b' ');
                super::push_i64(b, i64::from(priority));
                b.push(b' ');
                push_fixed(b, flops / 1e9, 6);
                b.extend_from_slice(b" -1 -1 -1 -1 -1\n");
            }
            SimEvent::TaskEnd { .. } => {}
            SimEvent::TransferStart {
                handle,
                src,
                dst,
                bytes,
                kind,
                id,
                ..
            } => {
                let key = self.open_link(id, kind, bytes as u64, dst.0);
                let node = self.mem_node.get(dst.index()).copied().unwrap_or(0);
                let b = &mut self.pending;
                line(b, b"24 ", t);
                b.push(b' ');
                b.extend_from_slice(link_type(kind));
                push_program(b, self.cluster, node);
                b.push(b' ');
                push_u64(b, bytes as u64);
                b.extend_from_slice(b" mm");
                push_u64(b, u64::from(src.0));
                b.extend_from_slice(b" com_");
                push_u64(b, key);
                b.push(b' ');
                push_u64(b, u64::from(handle.0));
                b.push(b' ');
                b.extend_from_slice(self.handles[handle.index()].as_bytes());
                match self.tiles[handle.index()] {
                    Some((r, c)) => {
                        b.push(b' ');
                        push_u64(b, u64::from(r));
                        b.push(b' ');
                        push_u64(b, u64::from(c));
                        b.push(b'\n');
                    }
                    None => b.extend_from_slice(b" -1 -1\n"),
                }
            }
            SimEvent::TransferEnd { id, .. } => {
                if let Some(o) = self.open.get_mut(id as usize).and_then(Option::take) {
                    end_link(&mut self.pending, t, self.cluster, &o);
                }
            }
            SimEvent::Allocate {
                node, used_bytes, ..
            } => {
                let b = &mut self.pending;
                line(b, b"13 ", t);
                b.extend_from_slice(b" mm");
                push_u64(b, u64::from(node.0));
                b.extend_from_slice(b" use ");
                push_fixed(b, used_bytes as f64 / 1048576.0, 3);
                b.push(b'\n');
            }
            SimEvent::Evict { node, handle, .. } => {
                let b = &mut self.pending;
                line(b, b"9 ", t);
                b.extend_from_slice(b" evict mm");
                push_u64(b, u64::from(node.0));
                b.push(b' ');
                b.extend_from_slice(self.handles[handle.index()].as_bytes());
                b.push(b'\n');
            }
            SimEvent::LinkLoads { changed } => {
                let b = &mut self.pending;
                let mut emit = |at, l, v| bandwidth_line(b, at, l, v);
                for &(link, bytes_per_sec) in changed {
                    self.windows.set(t, link, bytes_per_sec, &mut emit);
                }
            }
            SimEvent::Steal { task, from, to } => {
                self.steals += 1;
                let n = self.steals;
                let node = self.worker_node.get(from.index()).copied().unwrap_or(0);
                let b = &mut self.pending;
                for (ev, w) in [(&b"18 "[..], from), (&b"19 "[..], to)] {
                    line(b, ev, t);
                    b.extend_from_slice(b" WSL");
                    push_program(b, self.cluster, node);
                    b.push(b' ');
                    push_u64(b, u64::from(task.0));
                    b.extend_from_slice(b" w");
                    push_u64(b, u64::from(w.0));
                    b.extend_from_slice(b" steal_");
                    push_u64(b, n);
                    b.push(b'\n');
                }
            }
            SimEvent::MessageStart {
                task,
                from_rank,
                to_rank,
                bytes,
                ..
            } => {
                let bytes = bytes as u64;
                self.messages.insert(task.0, (to_rank, bytes));
                message_link(&mut self.pending, b"18 ", t, task.0, from_rank, bytes);
            }
            SimEvent::MessageEnd { task, to_rank, .. } => {
                if let Some((_, bytes)) = self.messages.remove(&task.0) {
                    message_link(&mut self.pending, b"19 ", t, task.0, to_rank, bytes);
                }
            }
            // Events added to the stream later are not drawn until this writer knows them.
            _ => {}
        }
        if !self.windows.windowed() {
            self.sink.buf.append(&mut self.pending);
        }
        self.sink.maybe_flush();
    }

    fn wants_link_loads(&self) -> bool {
        self.links != LinkResolution::Off
    }
}
