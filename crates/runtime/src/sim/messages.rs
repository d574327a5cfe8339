//! Messages between ranks, as message tasks of the distributed graph
//! (`hetsim_taskgraph::TaskKind::Message`). Two kinds:
//!
//! - **Data messages**: StarPU-MPI's send and receive of one piece of data
//!   (`hetsim_taskgraph::distributed`): the task reads the sender's handle and writes the
//!   receiver's.
//! - **Payload messages**: a number of bytes from a place (host memory or one of the rank's
//!   GPUs) on one rank to a place on another (or the same) rank, standing for what its
//!   dependencies say (the cluster workloads written as MPI programs).
//!
//! Semantics:
//!
//! - **Two sides.** A data message's predecessors that access the handle it sends are the send
//!   side (the data's last writer on the sender); the others are the receive side (the readers
//!   of the receiver's previous copy). The send starts when the send side is done, the receive is
//!   posted when the receive side is. A payload message's predecessors are all on the send side,
//!   and its receive is posted from the start (the receive is taken as posted).
//! - **Send.** A data message's sender acquires the data in its RAM, fetching it from a GPU if
//!   that holds the only valid copy (StarPU-MPI sends from main memory), or, on a cluster with
//!   GPU-direct transfers, straight from a GPU holding it. Its MPI progress thread then pays the
//!   sender's overhead o_s (the cluster's overhead table), one message at a time per rank.
//! - **Protocol.** A message of at most [`EAGER_LIMIT_BYTES`] is eager: its bytes leave as
//!   soon as the send is posted. A larger one is rendezvous: its bytes leave once the receive is
//!   posted too.
//! - **Bytes** ([`Sim::message_route`]): between nodes, one flow from the source's memory node
//!   to the destination's on a cluster with GPU-direct transfers; otherwise store and forward,
//!   each step starting when the previous ends: source → the node's RAM (where the NIC is),
//!   RAM → RAM over the NICs and switch, RAM → destination. Inside a node, the node machine's
//!   route, or two steps through RAM if it has none; a rank's copy between two of its own
//!   places crosses the node's route too. Ranks of one node exchange host memory at no cost.
//!   Every flow shares links with everything else; a route with a transfer model takes the
//!   model's time.
//! - **Receive buffer.** The first receive of a data message into a copy finds no memory behind
//!   it (StarPU-MPI registers the copies of remote data with no home,
//!   `starpu_matrix_data_register(.., -1, NULL, ..)`): acquiring it for writing
//!   (`_starpu_mpi_isend_irecv_common`) allocates it in pinned RAM, which StarPU-SimGrid charges
//!   `pinned_alloc_per_mib` (`_starpu_malloc_on_node`) and, up to 4 MiB, carves out of 32 MiB
//!   chunks (`starpu_malloc_on_node_flags`, the suballocator), so only a new chunk pays, for the
//!   whole chunk, holding the chunk lock meanwhile. The allocation is a data request of the RAM
//!   node, which the rank's workers serve between tasks (`__starpu_datawizard_progress`): an
//!   idle worker takes the next waiting one and is blocked until it is served (behind the chunk
//!   being allocated). The receive is posted only then. Later receives into the same copy reuse
//!   its buffer. Payload messages land in memory the program owns: no allocation.
//! - **Receive.** Once the bytes are there and the receive is posted, the receiver's progress
//!   thread pays o_r; then a data message's copy is valid in the receiver's RAM (a new version:
//!   a write) and the sender's copy is released; the message's successors go on.

use std::collections::VecDeque;

use fixedbitset::FixedBitSet;
use rustc_hash::{FxHashMap, FxHashSet};

use super::{Event, FlowOwner, Pending, Sim};
use crate::layout::endpoint;
use crate::observe::SimEvent;
use crate::suballoc::Suballocator;
use crate::{WorkerId, WorkerKind};
use hetsim_core::error::InputError;
use hetsim_core::fluid::{FlowSpec, LinkId};
use hetsim_platform::cluster::{NodeId, Segment};
use hetsim_platform::machine::{MemKind, MemNodeId, TransferModel};
use hetsim_taskgraph::{HandleId, Place, TaskGraph, TaskId, TaskKind};

/// Largest message sent eagerly, bytes: MPICH's and SimGrid SMPI's default threshold between
/// the eager and rendezvous protocols (64 KiB).
pub const EAGER_LIMIT_BYTES: f64 = 65536.0;

/// One message's progress, in 12 bytes. What the message is (ranks, size, places) is read
/// from the graph ([`info`]), so that this stays small: a cluster program is mostly messages.
#[derive(Debug, Clone, Copy)]
struct Msg {
    /// Its send side's predecessors not done (at most [`Msg::MAX_SIDE_PREDS`]).
    send_left: u16,
    /// Its receive side's predecessors not done.
    recv_left: u16,
    /// The sender's memory node the bytes leave from, once the send started ([`Msg::NO_SRC`]
    /// before: an `Option` would take 8 bytes).
    src: u16,
    /// Its route in [`Messages::routes`], and how many of its steps are done, once it moves.
    route: u32,
    done_steps: u8,
    /// [`Msg::SENT`], [`Msg::POSTED`], [`Msg::MOVING`], [`Msg::ARRIVED`].
    flags: u8,
}

const _: () = assert!(std::mem::size_of::<Msg>() == 12);

impl Msg {
    const NO_SRC: u16 = u16::MAX;
    /// Predecessors a side of a message may wait for.
    const MAX_SIDE_PREDS: u16 = u16::MAX;
    /// The send side's overhead is paid.
    const SENT: u8 = 1;
    /// The receive is posted.
    const POSTED: u8 = 1 << 1;
    /// The bytes have started along their route.
    const MOVING: u8 = 1 << 2;
    /// The bytes are at the receiver.
    const ARRIVED: u8 = 1 << 3;

    fn src(&self) -> Option<MemNodeId> {
        (self.src != Self::NO_SRC).then_some(MemNodeId(u32::from(self.src)))
    }

    fn set_src(&mut self, src: MemNodeId) {
        // A rank's memory nodes are its machine's, checked against this bound before the run
        // ([`Messages::new`]).
        let id = u16::try_from(src.0)
            .ok()
            .filter(|&i| i != Self::NO_SRC)
            .expect("a machine's memory node id below 65535");
        self.src = id;
    }

    fn is(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    fn set(&mut self, flag: u8) {
        self.flags |= flag;
    }
}

/// What the graph says of a message.
#[derive(Debug, Clone, Copy)]
struct MsgInfo {
    from: u32,
    to: u32,
    bytes: f64,
    /// A payload message's places on each side; `None` for a data message.
    payload: Option<(Place, Place)>,
}

/// Message `m`'s ranks, size and places.
fn info(graph: &TaskGraph, m: TaskId) -> MsgInfo {
    let TaskKind::Message { from, to, src, dst } = graph.task(m).kind() else {
        unreachable!("task {m} is a message")
    };
    let (bytes, payload) = match graph.payload_bytes(m) {
        Some(bytes) => (bytes, Some((src, dst))),
        None => {
            let sent = graph.accesses(m)[0].handle;
            (graph.handle(sent).size_bytes as f64, None)
        }
    };
    MsgInfo {
        from: from.0,
        to: to.0,
        bytes,
        payload,
    }
}

/// A route's key: sending rank, source memory node, receiving rank, destination memory node.
type RouteKey = (u32, MemNodeId, u32, MemNodeId);

/// One step of a route in a [`RouteTable`].
#[derive(Debug, Clone, Copy)]
enum Step {
    /// A flow over `len` links of [`RouteTable::links`] from `first`.
    Fluid { first: u32, len: u32 },
    /// A duration from [`RouteTable::models`]' entry.
    Model(u32),
}

/// The distinct routes messages took, each computed once, stored flat: a message step reads
/// one step record and its run of links, not a vector of vectors.
#[derive(Debug)]
struct RouteTable {
    /// Per route, where its steps start in `steps`, and one more entry, the end.
    starts: Vec<u32>,
    steps: Vec<Step>,
    links: Vec<LinkId>,
    models: Vec<TransferModel>,
    ids: FxHashMap<RouteKey, u32>,
}

impl Default for RouteTable {
    fn default() -> Self {
        RouteTable {
            starts: vec![0],
            steps: Vec::new(),
            links: Vec::new(),
            models: Vec::new(),
            ids: FxHashMap::default(),
        }
    }
}

impl RouteTable {
    /// Add a route; returns its id.
    fn push(&mut self, key: RouteKey, segments: Vec<Segment>) -> u32 {
        for seg in segments {
            let step = match seg {
                Segment::Fluid(links) => {
                    let first = self.links.len() as u32;
                    self.links.extend_from_slice(&links);
                    Step::Fluid {
                        first,
                        len: links.len() as u32,
                    }
                }
                Segment::Model(model) => {
                    self.models.push(model);
                    Step::Model(self.models.len() as u32 - 1)
                }
            };
            self.steps.push(step);
        }
        self.starts.push(self.steps.len() as u32);
        let id = self.starts.len() as u32 - 2;
        self.ids.insert(key, id);
        id
    }

    /// The steps of route `id`.
    fn steps(&self, id: u32) -> &[Step] {
        let i = id as usize;
        &self.steps[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// The links of a fluid step.
    fn links(&self, first: u32, len: u32) -> &[LinkId] {
        &self.links[first as usize..(first + len) as usize]
    }
}

/// One rank's receive buffers in pinned RAM (see the module documentation).
#[derive(Debug, Default)]
struct RecvBuffers {
    chunks: Suballocator,
    /// When the allocator is next free: a new chunk holds its lock until it is allocated.
    free_at_s: f64,
    /// Receives waiting for a worker to allocate their buffer, in the order they were posted.
    waiting: VecDeque<TaskId>,
    /// Per local worker, until when it is blocked allocating a buffer.
    busy_until_s: Vec<f64>,
}

/// Every message task's progress.
#[derive(Debug, Default)]
pub(super) struct Messages {
    /// The messages in task order.
    state: Vec<Msg>,
    /// The distinct routes messages took.
    routes: RouteTable,
    /// Per rank, its receive buffers.
    buffers: Vec<RecvBuffers>,
    /// Copies that have a RAM buffer already (received into before).
    has_buffer: FxHashSet<HandleId>,
}

/// Whether task `t` is on message `m`'s send side: it accesses the handle `m` sends, or `m` is
/// a payload message.
fn on_send_side(graph: &TaskGraph, m: TaskId, t: TaskId) -> bool {
    let Some(sent) = graph.accesses(m).first() else {
        return true;
    };
    graph.accesses(t).iter().any(|a| a.handle == sent.handle)
}

impl Messages {
    /// The messages of `graph`, whose states are numbered as `pending` says, on ranks whose
    /// machine has `memory_nodes` memory nodes. Fails if a side of a message waits for more
    /// than [`Msg::MAX_SIDE_PREDS`] tasks, or if the machine has more memory nodes than a
    /// message's state can name.
    pub fn new(
        graph: &TaskGraph,
        pending: &[Pending],
        memory_nodes: usize,
    ) -> Result<Self, InputError> {
        let count = graph.tasks().iter().filter(|t| t.is_message()).count();
        if count > 0 && memory_nodes > usize::from(Msg::NO_SRC) {
            return Err(InputError::new(format!(
                "the graph has messages and the machine {memory_nodes} memory nodes: messages \
                 between ranks support machines of at most {} memory nodes",
                Msg::NO_SRC
            ))
            .at_field("memory_nodes"));
        }
        let mut state = Vec::with_capacity(count);
        for m in graph.task_ids() {
            if !graph.task(m).is_message() {
                continue;
            }
            debug_assert_eq!(pending[m.index()].message_slot(), Some(state.len() as u32));
            state.push(Msg {
                send_left: 0,
                recv_left: 0,
                src: Msg::NO_SRC,
                route: u32::MAX,
                done_steps: 0,
                // A payload message has no receive buffer to wait for.
                flags: if graph.payload_bytes(m).is_some() {
                    Msg::POSTED
                } else {
                    0
                },
            });
        }
        // Each message's dependencies, counted per side from the successor lists (the graph
        // keeps no predecessor lists for the runtime).
        if !state.is_empty() {
            for p in graph.task_ids() {
                for &m in graph.successors(p) {
                    let Some(slot) = pending[m.index()].message_slot() else {
                        continue;
                    };
                    let msg = &mut state[slot as usize];
                    let (left, side) = if on_send_side(graph, m, p) {
                        (&mut msg.send_left, "send")
                    } else {
                        (&mut msg.recv_left, "receive")
                    };
                    if *left == Msg::MAX_SIDE_PREDS {
                        return Err(InputError::new(format!(
                            "message {m} waits for more than {} tasks on its {side} side: \
                             at most {} are supported",
                            Msg::MAX_SIDE_PREDS,
                            Msg::MAX_SIDE_PREDS
                        )));
                    }
                    *left += 1;
                }
            }
        }
        let buffers = if state.is_empty() {
            Vec::new()
        } else {
            (0..graph.nodes()).map(|_| RecvBuffers::default()).collect()
        };
        Ok(Messages {
            state,
            routes: RouteTable::default(),
            buffers,
            has_buffer: FxHashSet::default(),
        })
    }

    /// The task ids of the messages, in order (the order of their states).
    fn ids(graph: &TaskGraph) -> impl Iterator<Item = TaskId> + '_ {
        graph.task_ids().filter(|&t| graph.task(t).is_message())
    }

    /// Whether local worker `w` of rank `r` is blocked allocating a receive buffer at `now_s`.
    pub fn allocating(&self, r: usize, w: WorkerId, now_s: f64) -> bool {
        self.buffers
            .get(r)
            .and_then(|b| b.busy_until_s.get(w.index()))
            .is_some_and(|&until| until > now_s)
    }

    /// The messages with a side that waits for no task, as a set of task indices (a bit per
    /// task: a list of ids took 4 bytes per such message, most messages of a large HPL run).
    pub fn waiting_for_nothing(&self, graph: &TaskGraph) -> FixedBitSet {
        let mut set = FixedBitSet::with_capacity(graph.num_tasks());
        for (t, m) in Self::ids(graph).zip(&self.state) {
            if m.send_left == 0 || m.recv_left == 0 {
                set.insert(t.index());
            }
        }
        set
    }

    /// The distinct (sending rank, source place, receiving rank, destination place) of the
    /// payload messages, to check their routes before the run.
    pub fn payload_routes(&self, graph: &TaskGraph) -> Vec<(u32, Place, u32, Place)> {
        // Deduplicated as they are met: a cluster program has far fewer distinct routes than
        // messages.
        let mut seen = FxHashSet::default();
        let mut routes = Vec::new();
        for m in Self::ids(graph).map(|t| info(graph, t)) {
            if let Some((s, d)) = m.payload {
                let key = (m.from, place_key(s), m.to, place_key(d));
                if seen.insert(key) {
                    routes.push((key, (m.from, s, m.to, d)));
                }
            }
        }
        routes.sort_unstable_by_key(|&(key, _)| key);
        routes.into_iter().map(|(_, route)| route).collect()
    }

    /// The messages still waiting, for a deadlock diagnosis.
    pub fn diagnosis(&self, graph: &TaskGraph) -> String {
        let waiting: Vec<(TaskId, &Msg)> = Self::ids(graph)
            .zip(&self.state)
            .filter(|(_, m)| !(m.is(Msg::SENT) && m.is(Msg::POSTED) && m.is(Msg::ARRIVED)))
            .collect();
        if waiting.is_empty() {
            return String::new();
        }
        let list: Vec<String> = waiting
            .iter()
            .take(8)
            .map(|&(t, m)| {
                let i = info(graph, t);
                format!(
                    "message {t} ({} bytes) from rank {} to rank {}: {}",
                    i.bytes,
                    i.from,
                    i.to,
                    match (m.src().is_some(), m.is(Msg::SENT), m.is(Msg::POSTED)) {
                        (false, _, _) => "send waits for its predecessors",
                        (true, false, _) => "send waits for its data",
                        (true, true, false) => "receive not posted",
                        _ => "in flight",
                    }
                )
            })
            .collect();
        format!(" {} message(s) wait: {}.", waiting.len(), list.join("; "))
    }
}

fn place_key(p: Place) -> u32 {
    match p {
        Place::Host => u32::MAX,
        Place::Device(g) => u32::from(g),
    }
}

impl Sim<'_> {
    /// Message `m`'s state.
    fn msg(&mut self, m: TaskId) -> &mut Msg {
        let slot = self.pending[m.index()]
            .message_slot()
            .expect("a message task");
        &mut self.messages.state[slot as usize]
    }

    /// Task `t`'s message state, if it is a message.
    fn msg_state(&self, t: TaskId) -> Option<&Msg> {
        let slot = self.pending[t.index()].message_slot()?;
        Some(&self.messages.state[slot as usize])
    }

    /// For a data message whose send started: the sending rank and the memory node its bytes
    /// leave from.
    pub(super) fn message_source(&self, t: TaskId) -> Option<(usize, MemNodeId)> {
        let src = self.msg_state(t)?.src()?;
        Some((info(self.graph, t).from as usize, src))
    }

    /// The memory node of `place` on rank `r`.
    fn place_mem(&self, r: usize, place: Place) -> Result<MemNodeId, InputError> {
        match place {
            Place::Host => Ok(self.ranks[r].data.memory().ram()),
            Place::Device(g) => self.ranks[r]
                .gpu_mems
                .get(usize::from(g))
                .copied()
                .ok_or_else(|| {
                    InputError::new(format!(
                        "a message uses GPU {g} of rank {r}, which has {} GPU worker(s)",
                        self.ranks[r].gpu_mems.len()
                    ))
                    .at_field("machine.gpus_per_node")
                }),
        }
    }

    /// Check, before the run, that every payload message has a route.
    pub(super) fn check_message_routes(&self) -> Result<(), InputError> {
        for (from, src, to, dst) in self.messages.payload_routes(self.graph) {
            let (f, t) = (from as usize, to as usize);
            let (s, d) = (self.place_mem(f, src)?, self.place_mem(t, dst)?);
            self.message_route(f, s, t, d).map_err(|e| {
                InputError::new(format!(
                    "a message from rank {from} to rank {to}: {}",
                    e.message
                ))
                .at_field(e.location.field.unwrap_or_else(|| "machine".into()))
            })?;
        }
        Ok(())
    }

    /// The steps of a message from memory node `src` of rank `from` to `dst` of rank `to`
    /// (module documentation).
    fn message_route(
        &self,
        from: usize,
        src: MemNodeId,
        to: usize,
        dst: MemNodeId,
    ) -> Result<Vec<Segment>, InputError> {
        let (a, b) = (self.ranks[from].node, self.ranks[to].node);
        let mut steps = Vec::new();
        if a == b {
            if from != to && src == dst {
                // Two ranks of one node share its host memory.
                return Ok(steps);
            }
            self.intra_steps(a, src, dst, &mut steps)?;
            return Ok(steps);
        }
        let Some(net) = self.cluster_net.as_ref() else {
            return Err(InputError::new(
                "ranks on different nodes of a machine without network",
            ));
        };
        let host = net.inter_host(NodeId(a), NodeId(b)).ok_or_else(|| {
            InputError::new(format!(
                "nodes {a} and {b} of `{}` have no network between them (a plain machine file)",
                self.cluster.map_or(self.machine.name(), |c| c.name())
            ))
            .at_field("machine")
        })?;
        if self.cluster.is_some_and(|c| c.gpu_direct())
            && let Some(r) = net.route(endpoint(a, src), endpoint(b, dst))
        {
            steps.push(Segment::Fluid(r));
            return Ok(steps);
        }
        let ram = net.attach();
        self.intra_steps(a, src, ram, &mut steps)?;
        steps.push(Segment::Fluid(host));
        self.intra_steps(b, ram, dst, &mut steps)?;
        Ok(steps)
    }

    /// One hop inside node `node`: the node machine's route, else staged through its RAM.
    fn intra_steps(
        &self,
        node: u32,
        a: MemNodeId,
        b: MemNodeId,
        out: &mut Vec<Segment>,
    ) -> Result<(), InputError> {
        if a == b {
            return Ok(());
        }
        let machine = self.machine;
        let ram = self.ranks[0].data.memory().ram();
        let intra = |x: MemNodeId, y: MemNodeId| match &self.cluster_net {
            Some(net) => net.intra(NodeId(node), x, y),
            None => self.ranks[0].data.segment(x, y),
        };
        if let Some(s) = intra(a, b) {
            out.push(s);
            return Ok(());
        }
        if a != ram
            && b != ram
            && let (Some(x), Some(y)) = (intra(a, ram), intra(ram, b))
        {
            out.push(x);
            out.push(y);
            return Ok(());
        }
        let name = |m: MemNodeId| {
            machine
                .memory_node(m)
                .map_or_else(|| m.0.to_string(), |n| n.name.clone())
        };
        Err(InputError::new(format!(
            "the node machine `{}` has no route from {} to {} (nor through {})",
            machine.name(),
            name(a),
            name(b),
            name(ram)
        ))
        .at_field("routes"))
    }

    /// A side of message `m` waits for nothing: that side starts at once.
    pub(super) fn message_ready(&mut self, m: TaskId) {
        let msg = self.msg(m);
        let (send, recv) = (msg.send_left == 0, msg.recv_left == 0);
        if send {
            self.message_send(m);
        }
        if recv {
            self.message_post(m);
        }
    }

    /// Predecessor `t` of message `m` ended.
    pub(super) fn message_pred_done(&mut self, m: TaskId, t: TaskId) {
        let send = on_send_side(self.graph, m, t);
        let msg = self.msg(m);
        let left = if send {
            &mut msg.send_left
        } else {
            &mut msg.recv_left
        };
        *left -= 1;
        if *left == 0 {
            if send {
                self.message_send(m);
            } else {
                self.message_post(m);
            }
        }
    }

    /// The send side of `m` is done: a payload leaves from its place; a data message acquires
    /// its data where it leaves from.
    fn message_send(&mut self, m: TaskId) {
        let MsgInfo { from, payload, .. } = info(self.graph, m);
        let r = from as usize;
        self.mark(r);
        if let Some((src, _)) = payload {
            let src = self.place_mem(r, src).expect("checked before the run");
            self.msg(m).set_src(src);
            self.message_data_ready(m);
            return;
        }
        let h = self.graph.accesses(m)[0].handle;
        let ram = self.ranks[r].data.memory().ram();
        let src = self.gpu_direct_source(m).unwrap_or(ram);
        self.msg(m).set_src(src);
        let taken = super::Taken {
            worker: u32::MAX,
            buffers_left: 1,
        };
        self.taken.insert(m.0, taken);
        if self.ranks[r].data.pin_buffer(m, 0, h, src) {
            self.buffer_allocated(m, 0);
        } else {
            self.retry_allocations(r, src);
        }
    }

    /// With GPU-direct transfers, a GPU of the sender holding the data of data message `m`.
    fn gpu_direct_source(&self, m: TaskId) -> Option<MemNodeId> {
        if !self.cluster?.gpu_direct() {
            return None;
        }
        let memory = self.ranks[info(self.graph, m).from as usize].data.memory();
        let h = self.graph.accesses(m)[0].handle;
        (0..memory.nnodes() as u32)
            .map(MemNodeId)
            .find(|&n| memory.kind(n) == MemKind::Gpu && memory.is_valid(h, n))
    }

    /// The data of `m` is in place on the sender: its progress thread pays o_s.
    pub(super) fn message_data_ready(&mut self, m: TaskId) {
        let MsgInfo { from, bytes, .. } = info(self.graph, m);
        let from = from as usize;
        let o_s = self.cluster.map_or(0.0, |c| c.overheads().send_s(bytes));
        let rank = &mut self.ranks[from];
        let end = rank.mpi_free_at.max(self.now) + o_s;
        rank.mpi_free_at = end;
        self.cal.schedule(end, Event::MessageSent(m));
    }

    pub(super) fn message_sent(&mut self, m: TaskId) {
        let bytes = info(self.graph, m).bytes;
        let msg = self.msg(m);
        msg.set(Msg::SENT);
        if bytes <= EAGER_LIMIT_BYTES || msg.is(Msg::POSTED) {
            self.message_move(m);
        }
    }

    /// The receive side of `m` is done: the receive is posted, once a data message's copy has a
    /// buffer.
    fn message_post(&mut self, m: TaskId) {
        if let Some(received) = self.graph.accesses(m).get(1).map(|a| a.handle)
            && self.messages.has_buffer.insert(received)
        {
            let to = info(self.graph, m).to as usize;
            let pinned = self.ranks[to]
                .workers
                .workers()
                .iter()
                .any(|w| w.kind == WorkerKind::Gpu);
            // Without a GPU, StarPU allocates plain memory, at no simulated cost.
            if pinned && self.machine.runtime().pinned_alloc_s_per_mib > 0.0 {
                self.messages.buffers[to].waiting.push_back(m);
                self.mark(to);
                return;
            }
        }
        self.message_posted(m);
    }

    /// Rank `r`'s idle workers, in index order, each take the next receive whose buffer waits
    /// to be allocated, and are blocked until it is (see the module documentation).
    pub(super) fn take_buffer_allocations(&mut self, r: usize) {
        if self
            .messages
            .buffers
            .get(r)
            .is_none_or(|b| b.waiting.is_empty())
        {
            return;
        }
        let rt = self.machine.runtime();
        let n = self.ranks[r].workers.workers().len();
        let now = self.now;
        for i in 0..n {
            let w = WorkerId(i as u32);
            if !self.ranks[r].workers.held(w).is_empty() || self.messages.allocating(r, w, now) {
                continue;
            }
            let Some(m) = self.messages.buffers[r].waiting.pop_front() else {
                break;
            };
            let bytes = info(self.graph, m).bytes as u64;
            let b = &mut self.messages.buffers[r];
            // A small buffer pays only when it opens a chunk, and then for the whole chunk.
            let paid_bytes = if rt.suballocator && Suballocator::serves(bytes) {
                let (_, new) = b.chunks.carve(bytes);
                if new { Suballocator::CHUNK_BYTES } else { 0 }
            } else {
                bytes
            };
            let mut at = now.max(b.free_at_s);
            if paid_bytes > 0 {
                at += rt.pinned_alloc_secs(paid_bytes as f64);
                b.free_at_s = at;
            }
            if b.busy_until_s.len() < n {
                b.busy_until_s.resize(n, 0.0);
            }
            b.busy_until_s[i] = at;
            self.cal.schedule(at, Event::RecvBufferReady(m));
        }
    }

    /// The buffer of `m`'s receive is allocated: the receive is posted, and the worker that
    /// allocated it is free again.
    pub(super) fn recv_buffer_ready(&mut self, m: TaskId) {
        let to = info(self.graph, m).to as usize;
        self.mark(to);
        self.message_posted(m);
    }

    /// The receive of `m` is posted.
    fn message_posted(&mut self, m: TaskId) {
        let msg = self.msg(m);
        msg.set(Msg::POSTED);
        let (arrived, waits) = (
            msg.is(Msg::ARRIVED),
            msg.is(Msg::SENT) && !msg.is(Msg::MOVING),
        );
        if arrived {
            self.message_deliver(m);
        } else if waits {
            self.message_move(m);
        }
    }

    /// Where the bytes of `m` (described by `i`), whose send started, leave from (the node its
    /// send chose) and go to (a payload's place, or the receiver's RAM).
    fn message_places(&self, m: TaskId, i: MsgInfo) -> (MemNodeId, MemNodeId) {
        let src = self.msg_state(m).and_then(Msg::src);
        let t = i.to as usize;
        let dst = match i.payload {
            Some((_, dst)) => self.place_mem(t, dst).expect("checked before the run"),
            None => self.ranks[t].data.memory().ram(),
        };
        (src.expect("sent from somewhere"), dst)
    }

    /// The bytes of `m` start moving along their route.
    fn message_move(&mut self, m: TaskId) {
        let i = info(self.graph, m);
        let MsgInfo {
            from, to, bytes, ..
        } = i;
        self.msg(m).set(Msg::MOVING);
        let (src, dst) = self.message_places(m, i);
        let (f, t) = (from as usize, to as usize);
        let key = (from, src, to, dst);
        let route = match self.messages.routes.ids.get(&key) {
            Some(&id) => id,
            None => {
                let steps = self.message_route(f, src, t, dst).expect(
                    "data messages go RAM to RAM or GPU-direct; payload routes are checked",
                );
                // A message counts its steps done in 8 bits; routes have a handful.
                assert!(
                    steps.len() <= usize::from(u8::MAX),
                    "a route of {} steps",
                    steps.len()
                );
                self.messages.routes.push(key, steps)
            }
        };
        let steps = self.messages.routes.steps(route).len() as u32;
        let (gsrc, gdst) = (self.global_mem(f, src), self.global_mem(t, dst));
        self.note(&SimEvent::MessageStart {
            task: m,
            from_rank: from,
            to_rank: to,
            src: gsrc,
            dst: gdst,
            bytes,
            steps,
        });
        let msg = self.msg(m);
        msg.route = route;
        msg.done_steps = 0;
        self.message_next_step(m);
    }

    /// Start the next step of `m`'s route, or, if none is left, `m` has arrived.
    fn message_next_step(&mut self, m: TaskId) {
        let msg = *self.msg(m);
        let bytes = info(self.graph, m).bytes;
        let routes = &self.messages.routes;
        let Some(&step) = routes.steps(msg.route).get(msg.done_steps as usize) else {
            self.message_arrived(m);
            return;
        };
        match step {
            Step::Fluid { first, len } if len > 0 && bytes > 0.0 => {
                let spec = FlowSpec::new(routes.links(first, len), bytes);
                let f = self.net.start_flow(self.now, spec);
                self.own_flow(f, FlowOwner::Message(m));
            }
            Step::Fluid { .. } => self.cal.schedule(self.now, Event::MessageStep(m)),
            Step::Model(model) => {
                let at = self.now + routes.models[model as usize].duration_secs(bytes);
                self.cal.schedule(at, Event::MessageStep(m));
            }
        }
    }

    /// A step of `m`'s route ended.
    pub(super) fn message_step_done(&mut self, m: TaskId) {
        self.msg(m).done_steps += 1;
        self.message_next_step(m);
    }

    fn message_arrived(&mut self, m: TaskId) {
        let msg = self.msg(m);
        msg.set(Msg::ARRIVED);
        if msg.is(Msg::POSTED) {
            self.message_deliver(m);
        }
    }

    /// The bytes of `m` are at the receiver and its receive is posted: its progress thread
    /// pays o_r.
    fn message_deliver(&mut self, m: TaskId) {
        let MsgInfo { to, bytes, .. } = info(self.graph, m);
        let to = to as usize;
        let o_r = self.cluster.map_or(0.0, |c| c.overheads().recv_s(bytes));
        let rank = &mut self.ranks[to];
        let end = rank.mpi_free_at.max(self.now) + o_r;
        rank.mpi_free_at = end;
        self.cal.schedule(end, Event::MessageReceived(m));
    }

    /// `m` is received: a data message's copy is valid in the receiver's RAM and the sender's
    /// copy is released; the successors go on.
    pub(super) fn message_received(&mut self, m: TaskId) {
        let i = info(self.graph, m);
        let MsgInfo {
            from,
            to,
            bytes,
            payload,
        } = i;
        let (src, dst) = self.message_places(m, i);
        let (f, t) = (from as usize, to as usize);
        if payload.is_none() {
            let sent = self.graph.accesses(m)[0].handle;
            let received = self.graph.accesses(m)[1].handle;
            self.ranks[t].data.receive(received, dst);
            self.ranks[f].data.release(sent, src);
        }
        let (gsrc, gdst) = (self.global_mem(f, src), self.global_mem(t, dst));
        self.note(&SimEvent::MessageEnd {
            task: m,
            from_rank: from,
            to_rank: to,
            src: gsrc,
            dst: gdst,
            bytes,
        });
        self.tasks_done += 1;
        self.last_task_end = self.now;
        self.mark(f);
        self.mark(t);
        self.release_successors(m, None);
        // Releasing a device copy may let a waiting allocation evict it.
        if payload.is_none() && self.ranks[f].data.memory().kind(src) == MemKind::Gpu {
            self.retry_allocations(f, src);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_table_keeps_each_route_s_steps_and_links_in_order() {
        let mut table = RouteTable::default();
        let link = |ids: &[u32]| ids.iter().map(|&l| LinkId(l)).collect::<Vec<_>>();
        let model = TransferModel::affine(1e-6, 1e9).unwrap();
        let a = table.push(
            (0, MemNodeId(1), 1, MemNodeId(0)),
            vec![
                Segment::Fluid(link(&[3, 4])),
                Segment::Model(model.clone()),
                Segment::Fluid(link(&[7])),
            ],
        );
        let b = table.push((1, MemNodeId(0), 0, MemNodeId(0)), vec![]);
        let c = table.push(
            (1, MemNodeId(0), 2, MemNodeId(0)),
            vec![Segment::Fluid(link(&[9, 8, 5]))],
        );
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(table.ids[&(1, MemNodeId(0), 2, MemNodeId(0))], 2);
        let links = |id: u32| -> Vec<Vec<u32>> {
            table
                .steps(id)
                .iter()
                .map(|s| match *s {
                    Step::Fluid { first, len } => {
                        table.links(first, len).iter().map(|l| l.0).collect()
                    }
                    Step::Model(i) => vec![u32::MAX - i],
                })
                .collect()
        };
        assert_eq!(links(a), vec![vec![3, 4], vec![u32::MAX], vec![7]]);
        assert!(links(b).is_empty());
        assert_eq!(links(c), vec![vec![9, 8, 5]]);
        // 2 MB at 1 GB/s after 1 µs.
        assert!((table.models[0].duration_secs(2e6) - 2.001e-3).abs() < 1e-15);
    }

    #[test]
    fn a_message_side_over_65535_tasks_or_a_machine_over_65535_memory_nodes_is_an_input_error() {
        use hetsim_taskgraph::TaskGraphBuilder;
        let graph = |preds: u32| {
            let mut b = TaskGraphBuilder::new();
            let c = b.codelet("k").unwrap();
            let after: Vec<TaskId> = (0..preds)
                .map(|_| b.submit_delay(c, NodeId(0), 0.0, &[]).unwrap())
                .collect();
            let host = |n| (NodeId(n), Place::Host);
            b.submit_payload(c, host(0), host(1), 8.0, 0, &after)
                .unwrap();
            b.build().unwrap()
        };
        let g = graph(65535);
        let m = Messages::new(&g, &Pending::for_graph(&g), 2).unwrap();
        assert_eq!(m.state[0].send_left, 65535);
        let g = graph(65536);
        let e = Messages::new(&g, &Pending::for_graph(&g), 2)
            .expect_err("too many")
            .to_string();
        assert!(
            e.contains("message task 65536 waits for more than 65535 tasks on its send side"),
            "{e}"
        );
        // A machine whose memory nodes a message's state cannot name.
        let g = graph(1);
        let e = Messages::new(&g, &Pending::for_graph(&g), 65536)
            .expect_err("too many memory nodes")
            .to_string();
        assert!(
            e.contains("messages between ranks support machines of at most 65535 memory nodes"),
            "{e}"
        );
        assert!(Messages::new(&g, &Pending::for_graph(&g), 65535).is_ok());
    }
}
