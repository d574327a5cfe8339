//! Scripts of MPI calls, one per thread of a rank, turned into program operations with MPI's
//! semantics, the way SimGrid's SMPI runs them:
//!
//! - a thread runs its script in order; each operation waits for the thread's previous one;
//! - a standard send of fewer than [`EAGER_LIMIT_BYTES`] is eager (detached): its bytes leave at
//!   once and the sender goes on; a larger one, and every synchronous send, is rendezvous: its
//!   bytes leave once the matching receive is posted, and a blocking send returns when they
//!   have arrived;
//! - a receive is posted where the script says (`irecv`, or a blocking `recv`), and completes
//!   when the bytes have arrived;
//! - sends and receives between two ranks with one tag match in the order they were posted
//!   (MPI's non-overtaking rule);
//! - a *probed* receive (HPL's `MPI_Iprobe` loop on a panel broadcast) is posted by a probe
//!   kernel of zero length on the rank's GPU, of high priority, ready once the send is posted
//!   and the receiving thread has passed a gate: the rank's GPU worker takes it between two
//!   kernels, which is where HPL probes;
//! - marks and joins order threads of one rank (a thread publishes its position, another waits
//!   for it).
//!
//! A rank may run up to [`LANES`] threads: its MPI process, its GPU stream (NVIDIA-style runs,
//! where the GPU works asynchronously) and the continuation of a broadcast detected at a probe.

use std::collections::VecDeque;
use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

use crate::program::OpSink;
use crate::{Buffer, Kernel, Message, OpId, ProgramBuilder, RankId, Unit};

/// Messages strictly smaller are eager (SMPI's `smpi/async-small-thresh` and
/// `smpi/send-is-detached-thresh` of the oracle runs, and MPICH's default: 64 KiB).
pub(super) const EAGER_LIMIT_BYTES: f64 = 65536.0;

/// Priority of the probe kernels: above every compute kernel, so that a rank's GPU worker
/// takes a pending probe as soon as its current kernel ends.
pub(super) const PROBE_PRIORITY: i32 = 100;

/// A message tag: sends and receives match only within one tag.
pub(super) type Tag = u32;

/// Operations a thread's position may list before a join replaces them ([`Exec::compact`]).
const FRONT_MAX: usize = 16;

/// Threads per rank.
pub(super) const LANES: usize = 3;

/// Which thread of a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lane {
    /// The rank's MPI process: HPL's program order.
    Main = 0,
    /// The rank's GPU stream, when the GPU runs asynchronously from the process.
    Gpu = 1,
    /// A panel broadcast's continuation once its receive was detected at a probe.
    Bcast = 2,
}

/// A thread: a rank and a lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tid {
    pub rank: RankId,
    pub lane: Lane,
}

impl Tid {
    pub fn main(rank: RankId) -> Tid {
        Tid {
            rank,
            lane: Lane::Main,
        }
    }

    fn index(self) -> usize {
        self.rank.index() * LANES + self.lane as usize
    }
}

/// A place where a thread publishes its position for the other threads of its rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Slot(pub u32);

/// One step of a script.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Act {
    /// Work on one of the rank's processors.
    Kernel {
        unit: Unit,
        name: &'static str,
        secs: f64,
        flops: f64,
    },
    /// Time that passes (a fixed cost, an estimate of time spent blocked).
    Delay(f64),
    /// A copy between the rank's own memories (a message from the rank to itself).
    Copy {
        bytes: f64,
        from: Buffer,
        to: Buffer,
    },
    /// A send; `blocking`: the thread goes on only when it completes; `sync`: rendezvous at any
    /// size (`MPI_Ssend`).
    Send {
        to: RankId,
        tag: Tag,
        bytes: f64,
        sync: bool,
        blocking: bool,
    },
    /// A receive posted here; `blocking`: the thread waits for it.
    Recv {
        from: RankId,
        tag: Tag,
        blocking: bool,
    },
    /// A blocking receive posted by a probe after the rank's thread has passed `gate`.
    ProbeRecv { from: RankId, tag: Tag, gate: Slot },
    /// Wait for every non-blocking send and receive of the thread.
    WaitAll,
    /// Publish the thread's position.
    Mark(Slot),
    /// Wait for a published position.
    Join(Slot),
}

/// A script under construction: the helpers follow HPL's communication calls.
#[derive(Debug, Default, Clone)]
pub(super) struct Script(pub Vec<Act>);

impl Script {
    pub fn kernel(&mut self, unit: Unit, name: &'static str, secs: f64, flops: f64) {
        if secs > 0.0 || flops > 0.0 {
            self.0.push(Act::Kernel {
                unit,
                name,
                secs,
                flops,
            });
        }
    }

    pub fn delay(&mut self, secs: f64) {
        if secs > 0.0 {
            self.0.push(Act::Delay(secs));
        }
    }

    pub fn copy(&mut self, bytes: f64, from: Buffer, to: Buffer) {
        if bytes > 0.0 {
            self.0.push(Act::Copy { bytes, from, to });
        }
    }

    /// `MPI_Send`.
    pub fn send(&mut self, to: RankId, tag: Tag, bytes: f64) {
        self.0.push(Act::Send {
            to,
            tag,
            bytes,
            sync: false,
            blocking: true,
        });
    }

    /// `MPI_Ssend`.
    pub fn ssend(&mut self, to: RankId, tag: Tag, bytes: f64) {
        self.0.push(Act::Send {
            to,
            tag,
            bytes,
            sync: true,
            blocking: true,
        });
    }

    /// `MPI_Issend`.
    pub fn issend(&mut self, to: RankId, tag: Tag, bytes: f64) {
        self.0.push(Act::Send {
            to,
            tag,
            bytes,
            sync: true,
            blocking: false,
        });
    }

    /// `MPI_Recv`.
    pub fn recv(&mut self, from: RankId, tag: Tag) {
        self.0.push(Act::Recv {
            from,
            tag,
            blocking: true,
        });
    }

    /// `MPI_Irecv`.
    pub fn irecv(&mut self, from: RankId, tag: Tag) {
        self.0.push(Act::Recv {
            from,
            tag,
            blocking: false,
        });
    }

    pub fn wait_all(&mut self) {
        self.0.push(Act::WaitAll);
    }

    /// HPL's `HPL_sdrv`: `MPI_Irecv`, `MPI_Send`, `MPI_Wait`, skipping a side of no bytes.
    pub fn sendrecv(&mut self, partner: RankId, tag: Tag, send_bytes: f64, recv_bytes: f64) {
        match (send_bytes > 0.0, recv_bytes > 0.0) {
            (true, true) => {
                self.irecv(partner, tag);
                self.send(partner, tag, send_bytes);
                self.wait_all();
            }
            (false, true) => self.recv(partner, tag),
            (true, false) => self.send(partner, tag, send_bytes),
            (false, false) => {}
        }
    }

    /// HPL's `HPL_send`: nothing for no bytes.
    pub fn hpl_send(&mut self, to: RankId, tag: Tag, bytes: f64) {
        if bytes > 0.0 {
            self.send(to, tag, bytes);
        }
    }

    /// HPL's `HPL_recv`: nothing for no bytes.
    pub fn hpl_recv(&mut self, from: RankId, tag: Tag, bytes: f64) {
        if bytes > 0.0 {
            self.recv(from, tag);
        }
    }

    pub fn probe_recv(&mut self, from: RankId, tag: Tag, gate: Slot) {
        self.0.push(Act::ProbeRecv { from, tag, gate });
    }

    pub fn mark(&mut self, s: Slot) {
        self.0.push(Act::Mark(s));
    }

    pub fn join(&mut self, s: Slot) {
        self.0.push(Act::Join(s));
    }

    pub fn extend(&mut self, other: &Script) {
        self.0.extend_from_slice(&other.0);
    }
}

/// The operations of `a` and `b` into `out`, sorted, each once.
fn deps_of<'o>(a: &[OpId], b: &[OpId], out: &'o mut Vec<OpId>) -> &'o [OpId] {
    out.clear();
    out.extend_from_slice(a);
    out.extend_from_slice(b);
    sorted(out)
}

/// A list of operations kept in [`Exec::pool`] until the end of the current
/// [`Exec::run`]: the positions and completions a run stores, without a vector each.
#[derive(Debug, Clone, Copy, Default)]
struct Ops {
    start: u32,
    len: u32,
}

impl Ops {
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }

    fn of(self, pool: &[OpId]) -> &[OpId] {
        &pool[self.range()]
    }

    /// The operations `pool` holds from `start` on.
    fn from(pool: &[OpId], start: usize) -> Ops {
        let at = |i: usize| u32::try_from(i).expect("one run keeps fewer than 2^32 operation ids");
        Ops {
            start: at(start),
            len: at(pool.len() - start),
        }
    }
}

/// Append `ops` to `pool`: their [`Ops`].
fn keep(pool: &mut Vec<OpId>, ops: &[OpId]) -> Ops {
    let start = pool.len();
    pool.extend_from_slice(ops);
    Ops::from(pool, start)
}

/// `front` sorted, each operation once (in place: no list is allocated per operation).
fn sorted(front: &mut Vec<OpId>) -> &[OpId] {
    front.sort_unstable();
    front.dedup();
    front
}

/// Index of a request (a send or a receive) in [`Exec::reqs`].
type ReqId = usize;

/// How a send waits to be matched.
#[derive(Debug)]
struct SendRec {
    /// The sender's position when it posted the send.
    posted: Ops,
    bytes: f64,
    /// The message, already moving (eager sends).
    eager: Option<OpId>,
    req: ReqId,
}

#[derive(Debug)]
enum Posted {
    /// A receive posted at this position.
    At(Ops),
    /// A receive posted by a probe once past this gate.
    Probe(Ops),
}

/// Sends and receives match by (source rank, destination rank, tag).
type Key = (u32, u32, Tag);

/// A send or a receive being posted.
enum Posting {
    Send(SendRec),
    Recv(RecvRec),
}

/// What waits to be matched on one key.
#[derive(Debug)]
enum Waiting {
    Sends(VecDeque<SendRec>),
    Recvs(VecDeque<RecvRec>),
}

impl Waiting {
    fn is_empty(&self) -> bool {
        match self {
            Waiting::Sends(q) => q.is_empty(),
            Waiting::Recvs(q) => q.is_empty(),
        }
    }
}

#[derive(Debug)]
struct RecvRec {
    posted: Posted,
    req: ReqId,
}

/// What a stalled thread waits for.
#[derive(Debug, Clone, Copy)]
enum Block {
    Req(ReqId),
    AllReqs,
    Slot(Slot),
}

/// The interpreter: per-thread positions carry from one call of [`Exec::run`] to the next.
pub(super) struct Exec<S: OpSink> {
    pub b: ProgramBuilder<S>,
    ranks: usize,
    front: Vec<Vec<OpId>>,
    scripts: Vec<Script>,
    pc: Vec<usize>,
    pending: Vec<Vec<ReqId>>,
    blocked: Vec<Option<Block>>,
    /// A completed request: the operations it completes with, and whether they already wait
    /// for everything its thread waited for when it posted it.
    reqs: Vec<Option<(Ops, bool)>>,
    req_owner: Vec<usize>,
    /// Per (source, destination, tag), the sends or the receives posted and not matched yet
    /// (never both: one matches the other as it is posted); a key with none has no entry, so
    /// the map holds only what is outstanding.
    waiting: FxHashMap<Key, Waiting>,
    /// Emptied waiting lists, kept for the next key (a key waits for one record or two,
    /// millions of times).
    spare_sends: Vec<VecDeque<SendRec>>,
    spare_recvs: Vec<VecDeque<RecvRec>>,
    slots: FxHashMap<Slot, Ops>,
    slot_waiters: FxHashMap<Slot, Vec<usize>>,
    queue: VecDeque<usize>,
    queued: Vec<bool>,
    /// The operation lists the current run keeps ([`Ops`]), emptied when it ends.
    pool: Vec<OpId>,
    /// Room to gather a probe's or a message's dependencies.
    scratch: Vec<OpId>,
}

impl<S: OpSink> Exec<S> {
    pub fn new(b: ProgramBuilder<S>) -> Self {
        let ranks = b.ranks() as usize;
        let threads = ranks * LANES;
        Exec {
            b,
            ranks,
            front: vec![Vec::new(); threads],
            scripts: vec![Script::default(); threads],
            pc: vec![0; threads],
            pending: vec![Vec::new(); threads],
            blocked: vec![None; threads],
            reqs: Vec::new(),
            req_owner: Vec::new(),
            waiting: FxHashMap::default(),
            spare_sends: Vec::new(),
            spare_recvs: Vec::new(),
            slots: FxHashMap::default(),
            slot_waiters: FxHashMap::default(),
            queue: VecDeque::new(),
            queued: vec![false; threads],
            pool: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The script thread `t` runs at the next [`Exec::run`] (appended to what it has).
    pub fn script(&mut self, t: Tid) -> &mut Script {
        &mut self.scripts[t.index()]
    }

    /// Forget where thread `t` is: its next operation waits for nothing before it (a broadcast
    /// continuation starts afresh each panel).
    pub fn restart(&mut self, t: Tid) {
        self.front[t.index()].clear();
    }

    /// Run every thread's script to its end, building the operations; slots are cleared after.
    ///
    /// Panics if the scripts deadlock (a generator bug: HPL's patterns never do).
    pub fn run(&mut self) {
        for t in 0..self.scripts.len() {
            if !self.scripts[t].0.is_empty() {
                self.enqueue(t);
            }
        }
        while let Some(t) = self.queue.pop_front() {
            self.queued[t] = false;
            self.advance(t);
        }
        for t in 0..self.scripts.len() {
            assert!(
                self.pc[t] == self.scripts[t].0.len() && self.blocked[t].is_none(),
                "HPL program generator: thread {} of rank {} deadlocked at step {} of {}: {:?}",
                t % LANES,
                t / LANES,
                self.pc[t],
                self.scripts[t].0.len(),
                self.scripts[t].0.get(self.pc[t].saturating_sub(1))
            );
            self.scripts[t].0.clear();
            self.pc[t] = 0;
        }
        debug_assert!(self.waiting.is_empty(), "unmatched sends or receives");
        self.waiting.clear();
        self.slots.clear();
        self.slot_waiters.clear();
        self.reqs.clear();
        self.req_owner.clear();
        self.pool.clear();
    }

    fn enqueue(&mut self, t: usize) {
        if !self.queued[t] {
            self.queued[t] = true;
            self.queue.push_back(t);
        }
    }

    fn rank_of(&self, t: usize) -> RankId {
        RankId((t / LANES) as u32)
    }

    fn new_req(&mut self, owner: usize) -> ReqId {
        self.reqs.push(None);
        self.req_owner.push(owner);
        self.reqs.len() - 1
    }

    fn fill(&mut self, r: ReqId, ops: Ops, covers: bool) {
        self.reqs[r] = Some((ops, covers));
        let owner = self.req_owner[r];
        if self.blocked[owner].is_some() {
            self.enqueue(owner);
        }
    }

    /// Try to unblock thread `t`: true if it may go on.
    fn unblock(&mut self, t: usize) -> bool {
        let Some(block) = self.blocked[t] else {
            return true;
        };
        match block {
            Block::Req(r) => {
                let Some((ops, covers)) = self.reqs[r] else {
                    return false;
                };
                // A blocking call: the thread has not moved since it posted it.
                if covers {
                    self.front[t].clear();
                }
                self.front[t].extend_from_slice(ops.of(&self.pool));
            }
            Block::AllReqs => {
                if self.pending[t].iter().any(|&r| self.reqs[r].is_none()) {
                    return false;
                }
                for r in std::mem::take(&mut self.pending[t]) {
                    let (ops, _) = self.reqs[r].expect("checked");
                    self.front[t].extend_from_slice(ops.of(&self.pool));
                }
            }
            Block::Slot(s) => {
                let Some(ops) = self.slots.get(&s) else {
                    self.slot_waiters.entry(s).or_default().push(t);
                    return false;
                };
                self.front[t].extend_from_slice(ops.of(&self.pool));
            }
        }
        self.blocked[t] = None;
        self.compact(t);
        true
    }

    /// Keep thread `t`'s position small: without a kernel in between, receives and joins add
    /// to it each iteration (a rank with no columns left), and marks copy it to other threads,
    /// so it would grow without bound; past [`FRONT_MAX`] operations, one join stands for them
    /// (it takes no time, so nothing moves).
    fn compact(&mut self, t: usize) {
        let f = &mut self.front[t];
        if f.len() > FRONT_MAX {
            f.sort_unstable();
            f.dedup();
            if f.len() > FRONT_MAX {
                let j = self.b.join(f);
                f.clear();
                f.push(j);
            }
        }
    }

    fn advance(&mut self, t: usize) {
        let rank = self.rank_of(t);
        loop {
            if !self.unblock(t) {
                return;
            }
            let Some(&act) = self.scripts[t].0.get(self.pc[t]) else {
                return;
            };
            self.pc[t] += 1;
            match act {
                Act::Kernel {
                    unit,
                    name,
                    secs,
                    flops,
                } => {
                    let k = self.b.kernel(
                        Kernel::new(rank, unit, name, secs, flops),
                        sorted(&mut self.front[t]),
                    );
                    self.set_front(t, k);
                }
                Act::Delay(secs) => {
                    let d = self.b.delay(rank, secs, sorted(&mut self.front[t]));
                    self.set_front(t, d);
                }
                Act::Copy { bytes, from, to } => {
                    let m = self.b.message(
                        Message {
                            src: rank,
                            dst: rank,
                            bytes,
                            from,
                            to,
                        },
                        sorted(&mut self.front[t]),
                    );
                    self.set_front(t, m);
                }
                Act::Send {
                    to,
                    tag,
                    bytes,
                    sync,
                    blocking,
                } => {
                    let req = self.new_req(t);
                    let posted = keep(&mut self.pool, sorted(&mut self.front[t]));
                    let eager = if !sync && bytes < EAGER_LIMIT_BYTES {
                        let m = self
                            .b
                            .message(Message::device(rank, to, bytes), posted.of(&self.pool));
                        // A detached send is complete for the sender at once.
                        self.reqs[req] = Some((Ops::default(), false));
                        Some(m)
                    } else {
                        None
                    };
                    let key = (rank.0, to.0, tag);
                    let send = SendRec {
                        posted,
                        bytes,
                        eager,
                        req,
                    };
                    self.post(key, Posting::Send(send));
                    self.wait_or_keep(t, req, blocking);
                }
                Act::Recv {
                    from,
                    tag,
                    blocking,
                } => {
                    let req = self.new_req(t);
                    let key = (from.0, rank.0, tag);
                    let posted = Posted::At(keep(&mut self.pool, &self.front[t]));
                    self.post(key, Posting::Recv(RecvRec { posted, req }));
                    self.wait_or_keep(t, req, blocking);
                }
                Act::ProbeRecv { from, tag, gate } => {
                    let Some(&g) = self.slots.get(&gate) else {
                        // Not past its gate yet: retry this step once it is. (Not a join: the
                        // probe waits for the gate, the thread only for the receive.)
                        self.pc[t] -= 1;
                        self.slot_waiters.entry(gate).or_default().push(t);
                        return;
                    };
                    let req = self.new_req(t);
                    let key = (from.0, rank.0, tag);
                    let posted = Posted::Probe(g);
                    self.post(key, Posting::Recv(RecvRec { posted, req }));
                    self.wait_or_keep(t, req, true);
                }
                Act::WaitAll => {
                    self.blocked[t] = Some(Block::AllReqs);
                }
                Act::Mark(s) => {
                    let here = keep(&mut self.pool, &self.front[t]);
                    self.slots.insert(s, here);
                    if let Some(w) = self.slot_waiters.remove(&s) {
                        for x in w {
                            self.enqueue(x);
                        }
                    }
                }
                Act::Join(s) => {
                    self.blocked[t] = Some(Block::Slot(s));
                }
            }
        }
    }

    /// Thread `t` is now just past `op`.
    fn set_front(&mut self, t: usize, op: OpId) {
        let f = &mut self.front[t];
        f.clear();
        f.push(op);
    }

    fn wait_or_keep(&mut self, t: usize, req: ReqId, blocking: bool) {
        if blocking {
            self.blocked[t] = Some(Block::Req(req));
        } else {
            self.pending[t].push(req);
        }
    }

    /// Post a send or a receive on `key`: it matches the oldest of the other kind waiting
    /// there (MPI's non-overtaking order), or waits.
    fn post(&mut self, key: Key, posting: Posting) {
        const NEVER_EMPTY: &str = "a waiting list is never empty";
        let matched = match self.waiting.entry(key) {
            Entry::Vacant(e) => {
                e.insert(match posting {
                    Posting::Send(s) => {
                        let mut q = self.spare_sends.pop().unwrap_or_default();
                        q.push_back(s);
                        Waiting::Sends(q)
                    }
                    Posting::Recv(r) => {
                        let mut q = self.spare_recvs.pop().unwrap_or_default();
                        q.push_back(r);
                        Waiting::Recvs(q)
                    }
                });
                None
            }
            Entry::Occupied(mut e) => {
                let matched = match (e.get_mut(), posting) {
                    (Waiting::Recvs(q), Posting::Send(s)) => {
                        Some((s, q.pop_front().expect(NEVER_EMPTY)))
                    }
                    (Waiting::Sends(q), Posting::Recv(r)) => {
                        Some((q.pop_front().expect(NEVER_EMPTY), r))
                    }
                    (Waiting::Sends(q), Posting::Send(s)) => {
                        q.push_back(s);
                        None
                    }
                    (Waiting::Recvs(q), Posting::Recv(r)) => {
                        q.push_back(r);
                        None
                    }
                };
                if e.get().is_empty() {
                    match e.remove() {
                        Waiting::Sends(q) => self.spare_sends.push(q),
                        Waiting::Recvs(q) => self.spare_recvs.push(q),
                    }
                }
                matched
            }
        };
        if let Some((s, r)) = matched {
            self.matched(key, s, r);
        }
    }

    /// Send `s` and receive `r` of `key` match: the message and what completes each side.
    fn matched(&mut self, key: Key, s: SendRec, r: RecvRec) {
        let (src, dst) = (RankId(key.0), RankId(key.1));
        // Whether what completes the receive waits for the receiving thread's position.
        let covers = matches!(r.posted, Posted::At(_));
        // Where the receive is posted: the receiver's position, or a probe on the receiver's
        // GPU once the send is posted and the receiver is past its gate.
        let posted = match r.posted {
            Posted::At(at) => at,
            Posted::Probe(gate) => {
                let deps = deps_of(
                    s.posted.of(&self.pool),
                    gate.of(&self.pool),
                    &mut self.scratch,
                );
                let probe = self.b.kernel(
                    Kernel::new(dst, Unit::Gpu, "probe", 0.0, 0.0).with_priority(PROBE_PRIORITY),
                    deps,
                );
                keep(&mut self.pool, &[probe])
            }
        };
        let recv_done = match s.eager {
            // The bytes left at the send; the receive completes when they are there and it is
            // posted.
            Some(m) => {
                let start = self.pool.len();
                self.pool.extend_from_within(posted.range());
                self.pool.push(m);
                Ops::from(&self.pool, start)
            }
            None => {
                let deps = deps_of(
                    s.posted.of(&self.pool),
                    posted.of(&self.pool),
                    &mut self.scratch,
                );
                let m = self.b.message(Message::device(src, dst, s.bytes), deps);
                let done = keep(&mut self.pool, &[m]);
                self.fill(s.req, done, true);
                done
            }
        };
        self.fill(r.req, recv_done, covers);
    }

    /// The finished builder, once every run is over.
    pub fn into_builder(self) -> ProgramBuilder<S> {
        debug_assert_eq!(self.front.len(), self.ranks * LANES);
        self.b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Op, Program};

    fn run_scripts(ranks: u32, scripts: Vec<(Tid, Script)>) -> Program {
        let mut e = Exec::new(ProgramBuilder::new(ranks));
        for (t, s) in scripts {
            e.script(t).extend(&s);
        }
        e.run();
        e.into_builder().build()
    }

    fn messages(p: &Program) -> Vec<(OpId, &Message)> {
        p.ops()
            .iter()
            .enumerate()
            .filter_map(|(i, o)| match o {
                Op::Message(m) => Some((OpId(i as u32), m)),
                _ => None,
            })
            .collect()
    }

    /// Rank 0: kernel a, sends `bytes`, kernel after. Rank 1: kernel b, receives, kernel c.
    fn kernel_send_kernel(bytes: f64) -> Program {
        let (r0, r1) = (RankId(0), RankId(1));
        let mut s0 = Script::default();
        s0.kernel(Unit::Gpu, "a", 1.0, 0.0);
        s0.send(r1, 7, bytes);
        s0.kernel(Unit::Gpu, "after", 1.0, 0.0);
        let mut s1 = Script::default();
        s1.kernel(Unit::Gpu, "b", 2.0, 0.0);
        s1.recv(r0, 7);
        s1.kernel(Unit::Gpu, "c", 1.0, 0.0);
        run_scripts(2, vec![(Tid::main(r0), s0), (Tid::main(r1), s1)])
    }

    #[test]
    fn rendezvous_waits_for_the_posted_receive() {
        // 1 MB: the message waits for both kernels (rendezvous); c waits for the message.
        let p = kernel_send_kernel(1e6);
        let ms = messages(&p);
        assert_eq!(ms.len(), 1);
        let (m, _) = ms[0];
        let names: Vec<&str> = p
            .preds(m)
            .iter()
            .map(|d| match p.ops()[d.index()] {
                Op::Kernel(k) => k.name,
                _ => "?",
            })
            .collect();
        assert_eq!(names, ["a", "b"]);
        // Both "after" (the blocking send) and "c" wait for the message.
        for (i, o) in p.ops().iter().enumerate() {
            if let Op::Kernel(k) = o
                && (k.name == "after" || k.name == "c")
            {
                assert_eq!(p.preds(OpId(i as u32)), &[m]);
            }
        }
    }

    #[test]
    fn eager_leaves_at_once_and_the_sender_goes_on() {
        let p = kernel_send_kernel(100.0);
        let (m, _) = messages(&p)[0];
        // The message waits for "a" only; "after" waits for "a" only; "c" for b and the message.
        assert_eq!(p.preds(m).len(), 1);
        for (i, o) in p.ops().iter().enumerate() {
            if let Op::Kernel(k) = o {
                let preds = p.preds(OpId(i as u32));
                match k.name {
                    "after" => assert!(!preds.contains(&m)),
                    "c" => {
                        assert!(preds.contains(&m));
                        assert_eq!(preds.len(), 2);
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn sendrecv_pairs_and_issend_rings_do_not_deadlock() {
        // Three ranks in a ring, each Issend to the next, Recv from the previous, then Wait: a
        // pattern that deadlocks if a send waited for its receive before going on.
        let r = |i: u32| RankId(i);
        let mut scripts = Vec::new();
        for i in 0..3u32 {
            let mut s = Script::default();
            s.issend(r((i + 1) % 3), 1, 1e6);
            s.recv(r((i + 2) % 3), 1);
            s.wait_all();
            s.sendrecv(r((i + 1) % 3), 2, 10.0, 0.0);
            s.sendrecv(r((i + 2) % 3), 2, 0.0, 10.0);
            scripts.push((Tid::main(r(i)), s));
        }
        let p = run_scripts(3, scripts);
        assert_eq!(messages(&p).len(), 6);
    }

    #[test]
    fn a_probed_receive_is_posted_by_a_probe_past_the_gate() {
        let (r0, r1) = (RankId(0), RankId(1));
        let mut s0 = Script::default();
        s0.kernel(Unit::Cpu, "fact", 1.0, 0.0);
        s0.send(r1, 3, 1e6);
        let mut main1 = Script::default();
        main1.kernel(Unit::Gpu, "swap", 1.0, 0.0);
        main1.mark(Slot(0));
        main1.kernel(Unit::Gpu, "chunk", 1.0, 0.0);
        main1.join(Slot(1));
        let mut bc1 = Script::default();
        bc1.probe_recv(r0, 3, Slot(0));
        bc1.mark(Slot(1));
        let p = run_scripts(
            2,
            vec![
                (Tid::main(r0), s0),
                (Tid::main(r1), main1),
                (
                    Tid {
                        rank: r1,
                        lane: Lane::Bcast,
                    },
                    bc1,
                ),
            ],
        );
        let probe = p
            .ops()
            .iter()
            .position(|o| matches!(o, Op::Kernel(k) if k.name == "probe"))
            .expect("a probe kernel");
        let Op::Kernel(k) = p.ops()[probe] else {
            unreachable!()
        };
        assert_eq!(
            (k.rank, k.unit, k.priority),
            (r1, Unit::Gpu, PROBE_PRIORITY)
        );
        let names = |o: OpId| -> Vec<&str> {
            p.preds(o)
                .iter()
                .map(|d| match p.ops()[d.index()] {
                    Op::Kernel(k) => k.name,
                    Op::Message(_) => "msg",
                    _ => "?",
                })
                .collect()
        };
        let mut pn = names(OpId(probe as u32));
        pn.sort_unstable();
        assert_eq!(pn, ["fact", "swap"]);
        let (m, _) = messages(&p)[0];
        assert_eq!(names(m), ["fact", "probe"]);
        // The chunk does not wait for the broadcast; the end of the iteration does.
        let last = OpId(p.ops().len() as u32 - 1);
        let _ = last;
        for (i, o) in p.ops().iter().enumerate() {
            if let Op::Kernel(k) = o
                && k.name == "chunk"
            {
                assert_eq!(names(OpId(i as u32)), ["swap"]);
            }
        }
    }
}
