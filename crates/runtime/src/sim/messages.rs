//! Messages between ranks: StarPU-MPI's send and receive of one piece of data, as a message task
//! of the distributed graph (`hetsim_taskgraph::distributed`) that reads the sender's handle and
//! writes the receiver's.
//!
//! - **Two sides.** A message's predecessors that access the handle it sends are the send side
//!   (the data's last writer on the sender); the others are the receive side (the readers of
//!   the receiver's previous copy). The send starts when the send side is done, the receive is
//!   posted when the receive side is.
//! - **Send.** The sender acquires the data in its RAM, fetching it from a GPU if that holds
//!   the only valid copy (StarPU-MPI sends from main memory), or, on a cluster with GPU-direct
//!   transfers, straight from a GPU holding it. Its MPI progress thread then pays the sender's
//!   overhead o_s (the cluster's overhead table), one message at a time per rank.
//! - **Protocol.** A message of at most [`EAGER_LIMIT_BYTES`] is eager: its bytes leave as
//!   soon as the send is posted. A larger one is rendezvous: its bytes leave once the receive is
//!   posted too.
//! - **Bytes.** One flow over the cluster network from the sender's memory node to the
//!   receiver's RAM (NIC up, switch, NIC down, and the PCIe links of a GPU-direct source),
//!   sharing links with everything else; ranks of one node exchange through shared memory, at
//!   no cost.
//! - **Receive buffer.** The first receive into a copy finds no memory behind it (StarPU-MPI
//!   registers the copies of remote data with no home, `starpu_matrix_data_register(.., -1,
//!   NULL, ..)`): acquiring it for writing (`_starpu_mpi_isend_irecv_common`) allocates it in
//!   pinned RAM, which StarPU-SimGrid charges `pinned_alloc_per_mib` (`_starpu_malloc_on_node`)
//!   and, up to 4 MiB, carves out of 32 MiB chunks (`starpu_malloc_on_node_flags`, the
//!   suballocator), so only a new chunk pays, for the whole chunk, holding the chunk lock
//!   meanwhile. The allocation is a data request of the RAM node, which the rank's workers serve
//!   between tasks (`__starpu_datawizard_progress`): an idle worker takes the next waiting one
//!   and is blocked until it is served (behind the chunk being allocated). The receive is posted
//!   only then. Later receives into the same copy reuse its buffer.
//! - **Receive.** Once the bytes are there and the receive is posted, the receiver's progress
//!   thread pays o_r; then the receiver's copy is valid in its RAM (a new version: a write),
//!   the sender's copy is released, and the message's successors go on.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use super::{Event, FlowOwner, Sim};
use crate::WorkerId;
use crate::WorkerKind;
use crate::layout::endpoint;
use crate::observe::SimEvent;
use crate::suballoc::Suballocator;
use hetsim_core::fluid::FlowSpec;
use hetsim_platform::machine::{MemKind, MemNodeId};
use hetsim_taskgraph::{HandleId, TaskGraph, TaskId, TaskKind};

/// Largest message sent eagerly, bytes: MPICH's and SimGrid SMPI's default threshold between
/// the eager and rendezvous protocols (64 KiB).
pub const EAGER_LIMIT_BYTES: f64 = 65536.0;

/// One message's progress.
#[derive(Debug, Clone, Copy)]
struct Msg {
    from: u32,
    to: u32,
    bytes: f64,
    send_left: u32,
    recv_left: u32,
    /// The sender's memory node the bytes leave from, once the send started.
    src: Option<MemNodeId>,
    sent: bool,
    posted: bool,
    moving: bool,
    arrived: bool,
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
    state: FxHashMap<u32, Msg>,
    /// Per rank, its receive buffers.
    buffers: Vec<RecvBuffers>,
    /// Copies that have a RAM buffer already (received into before).
    has_buffer: FxHashSet<HandleId>,
}

/// Whether task `t` accesses the handle message `m` sends (then it is on the send side).
fn on_send_side(graph: &TaskGraph, m: TaskId, t: TaskId) -> bool {
    let sent = graph.accesses(m)[0].handle;
    graph.accesses(t).iter().any(|a| a.handle == sent)
}

impl Messages {
    pub fn new(graph: &TaskGraph) -> Self {
        let mut state = FxHashMap::default();
        for m in graph.task_ids() {
            let task = graph.task(m);
            if let TaskKind::Message { from, to } = task.kind {
                let bytes = graph.handle(graph.accesses(m)[0].handle).size_bytes as f64;
                state.insert(
                    m.0,
                    Msg {
                        from: from.0,
                        to: to.0,
                        bytes,
                        send_left: 0,
                        recv_left: 0,
                        src: None,
                        sent: false,
                        posted: false,
                        moving: false,
                        arrived: false,
                    },
                );
            }
        }
        if !state.is_empty() {
            for t in graph.task_ids() {
                for &s in graph.successors(t) {
                    if let Some(msg) = state.get_mut(&s.0) {
                        if on_send_side(graph, s, t) {
                            msg.send_left += 1;
                        } else {
                            msg.recv_left += 1;
                        }
                    }
                }
            }
        }
        let buffers = if state.is_empty() {
            Vec::new()
        } else {
            (0..graph.nodes()).map(|_| RecvBuffers::default()).collect()
        };
        Messages {
            state,
            buffers,
            has_buffer: FxHashSet::default(),
        }
    }

    /// Whether local worker `w` of rank `r` is blocked allocating a receive buffer at `now_s`.
    pub fn allocating(&self, r: usize, w: WorkerId, now_s: f64) -> bool {
        self.buffers
            .get(r)
            .and_then(|b| b.busy_until_s.get(w.index()))
            .is_some_and(|&until| until > now_s)
    }

    /// The messages with a side that waits for no task, in task order.
    pub fn waiting_for_nothing(&self) -> Vec<TaskId> {
        let mut v: Vec<TaskId> = self
            .state
            .iter()
            .filter(|(_, m)| m.send_left == 0 || m.recv_left == 0)
            .map(|(&t, _)| TaskId(t))
            .collect();
        v.sort_unstable();
        v
    }

    /// For a message whose send started: the sending rank and the memory node its bytes leave
    /// from.
    pub fn source(&self, t: TaskId) -> Option<(usize, MemNodeId)> {
        let m = self.state.get(&t.0)?;
        Some((m.from as usize, m.src?))
    }

    fn get(&mut self, m: TaskId) -> &mut Msg {
        self.state.get_mut(&m.0).expect("a message task")
    }

    /// The messages still waiting, for a deadlock diagnosis.
    pub fn diagnosis(&self, graph: &TaskGraph) -> String {
        let mut waiting: Vec<(u32, &Msg)> = self
            .state
            .iter()
            .filter(|(_, m)| !(m.sent && m.posted && m.arrived))
            .map(|(&t, m)| (t, m))
            .collect();
        if waiting.is_empty() {
            return String::new();
        }
        waiting.sort_unstable_by_key(|&(t, _)| t);
        let list: Vec<String> = waiting
            .iter()
            .take(8)
            .map(|(t, m)| {
                format!(
                    "message {t} ({} bytes of handle {}) from rank {} to rank {}: {}",
                    m.bytes,
                    graph.accesses(TaskId(*t))[0].handle.0,
                    m.from,
                    m.to,
                    match (m.src.is_some(), m.sent, m.posted) {
                        (false, _, _) => "send waits for its data's writer",
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

impl Sim<'_> {
    /// A message one of whose sides waits for nothing: that side starts at once.
    pub(super) fn message_ready(&mut self, m: TaskId) {
        let msg = *self.messages.get(m);
        if msg.send_left == 0 {
            self.message_send(m);
        }
        if msg.recv_left == 0 {
            self.message_post(m);
        }
    }

    /// Predecessor `t` of message `m` ended.
    pub(super) fn message_pred_done(&mut self, m: TaskId, t: TaskId) {
        let send = on_send_side(self.graph, m, t);
        let msg = self.messages.get(m);
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

    /// The send side of `m` is done: acquire its data where it leaves from.
    fn message_send(&mut self, m: TaskId) {
        let msg = *self.messages.get(m);
        let r = msg.from as usize;
        let h = self.graph.accesses(m)[0].handle;
        let ram = self.ranks[r].data.memory().ram();
        let src = self
            .gpu_direct_source(m, &msg)
            .filter(|&g| self.ranks[r].data.memory().is_valid(h, g))
            .unwrap_or(ram);
        self.messages.get(m).src = Some(src);
        self.buffers_left[m.index()] = 1;
        self.mark(r);
        if self.ranks[r].data.pin_buffer(m, 0, h, src) {
            self.buffer_allocated(m, 0);
        } else {
            self.retry_allocations(r, src);
        }
    }

    /// With GPU-direct transfers, a GPU of the sender holding the data that has a route of
    /// links to the receiver.
    fn gpu_direct_source(&self, m: TaskId, msg: &Msg) -> Option<MemNodeId> {
        let cluster = self.cluster?;
        if !cluster.gpu_direct() {
            return None;
        }
        let net = self.cluster_net.as_ref()?;
        let r = &self.ranks[msg.from as usize];
        let to = &self.ranks[msg.to as usize];
        let h = self.graph.accesses(m)[0].handle;
        let memory = r.data.memory();
        let ram = memory.ram();
        (0..memory.nnodes() as u32).map(MemNodeId).find(|&n| {
            memory.kind(n) == MemKind::Gpu
                && memory.is_valid(h, n)
                && net
                    .route(endpoint(r.node, n), endpoint(to.node, ram))
                    .is_some()
        })
    }

    /// The data of `m` is in place on the sender: its progress thread pays o_s.
    pub(super) fn message_data_ready(&mut self, m: TaskId) {
        let msg = *self.messages.get(m);
        let o_s = self
            .cluster
            .map_or(0.0, |c| c.overheads().send_s(msg.bytes));
        let rank = &mut self.ranks[msg.from as usize];
        let end = rank.mpi_free_at.max(self.now) + o_s;
        rank.mpi_free_at = end;
        self.cal.schedule(end, Event::MessageSent(m));
    }

    pub(super) fn message_sent(&mut self, m: TaskId) {
        let msg = self.messages.get(m);
        msg.sent = true;
        if msg.bytes <= EAGER_LIMIT_BYTES || msg.posted {
            self.message_move(m);
        }
    }

    /// The receive side of `m` is done: the receive is posted, once its copy has a buffer.
    fn message_post(&mut self, m: TaskId) {
        let received = self.graph.accesses(m)[1].handle;
        if self.messages.has_buffer.insert(received) {
            let to = self.messages.get(m).to as usize;
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
            let bytes = self.messages.get(m).bytes as u64;
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
        let to = self.messages.get(m).to as usize;
        self.mark(to);
        self.message_posted(m);
    }

    /// The receive of `m` is posted.
    fn message_posted(&mut self, m: TaskId) {
        let msg = self.messages.get(m);
        msg.posted = true;
        let msg = *msg;
        if msg.arrived {
            self.message_deliver(m);
        } else if msg.sent && !msg.moving {
            self.message_move(m);
        }
    }

    /// The bytes of `m` start moving.
    fn message_move(&mut self, m: TaskId) {
        let msg = self.messages.get(m);
        msg.moving = true;
        let msg = *msg;
        let (from, to) = (msg.from as usize, msg.to as usize);
        let src = msg.src.expect("sent from somewhere");
        let dst = self.ranks[to].data.memory().ram();
        let route = self.cluster_net.as_ref().and_then(|net| {
            net.route(
                endpoint(self.ranks[from].node, src),
                endpoint(self.ranks[to].node, dst),
            )
        });
        let (gsrc, gdst) = (self.global_mem(from, src), self.global_mem(to, dst));
        self.note(&SimEvent::MessageStart {
            task: m,
            from_rank: msg.from,
            to_rank: msg.to,
            src: gsrc,
            dst: gdst,
            bytes: msg.bytes,
        });
        match route {
            Some(links) if !links.is_empty() && msg.bytes > 0.0 => {
                let f = self
                    .net
                    .start_flow(self.now, FlowSpec::new(links, msg.bytes));
                self.own_flow(f, FlowOwner::Message(m));
            }
            // Shared memory between ranks of one node, or nothing to move.
            _ => self.cal.schedule(self.now, Event::MessageArrived(m)),
        }
    }

    pub(super) fn message_arrived(&mut self, m: TaskId) {
        let msg = self.messages.get(m);
        msg.arrived = true;
        if msg.posted {
            self.message_deliver(m);
        }
    }

    /// The bytes of `m` are at the receiver and its receive is posted: its progress thread
    /// pays o_r.
    fn message_deliver(&mut self, m: TaskId) {
        let msg = *self.messages.get(m);
        let o_r = self
            .cluster
            .map_or(0.0, |c| c.overheads().recv_s(msg.bytes));
        let rank = &mut self.ranks[msg.to as usize];
        let end = rank.mpi_free_at.max(self.now) + o_r;
        rank.mpi_free_at = end;
        self.cal.schedule(end, Event::MessageReceived(m));
    }

    /// `m` is received: the receiver's copy is valid in its RAM, the sender's is released.
    pub(super) fn message_received(&mut self, m: TaskId) {
        let msg = *self.messages.get(m);
        let (from, to) = (msg.from as usize, msg.to as usize);
        let src = msg.src.expect("sent from somewhere");
        let sent = self.graph.accesses(m)[0].handle;
        let received = self.graph.accesses(m)[1].handle;
        let dst = self.ranks[to].data.memory().ram();
        self.ranks[to].data.receive(received, dst);
        self.ranks[from].data.release(sent, src);
        let (gsrc, gdst) = (self.global_mem(from, src), self.global_mem(to, dst));
        self.note(&SimEvent::MessageEnd {
            task: m,
            from_rank: msg.from,
            to_rank: msg.to,
            src: gsrc,
            dst: gdst,
            bytes: msg.bytes,
        });
        self.tasks_done += 1;
        self.last_task_end = self.now;
        self.mark(from);
        self.mark(to);
        self.release_successors(m, None);
        // Releasing a device copy may let a waiting allocation evict it.
        if self.ranks[from].data.memory().kind(src) == MemKind::Gpu {
            self.retry_allocations(from, src);
        }
    }
}
