//! A collective as the MPI calls each member posts, and the program those calls make.
//!
//! The algorithms ([`super::bcast`], [`super::reduce`], [`super::alltoall`]) write, member by
//! member, the calls that MPICH's (and SimGrid's) code posts: `MPI_Isend`, `MPI_Irecv`,
//! `MPI_Waitall`, and the reduction of received data; a blocking send, receive or sendrecv is
//! posts followed by a wait ([`Calls`]). [`lower`] then plays them: sends and receives are
//! matched in the order they are posted between the same two members with the same tag (MPI's
//! non-overtaking rule), and each match becomes a message of the program whose dependencies say
//! when its bytes may leave, following MPI's two protocols as SMPI runs them
//! (`src/smpi/mpi/smpi_request.cpp`, SimGrid 3.32):
//!
//! - **eager** (fewer than [`EAGER_BELOW_BYTES`] of payload): the send is detached. Its bytes
//!   leave when the sender posts it, whether or not the receive is posted, and the sender goes
//!   on at once; the receive completes when the bytes are there and it is posted;
//! - **rendezvous** (from [`EAGER_BELOW_BYTES`] on): the bytes leave once the send and the
//!   receive are both posted; both requests complete when the bytes are delivered.
//!
//! A member's wait completes when all the requests it posted since its last wait have; what it
//! does next waits for that. Every message carries [`ENVELOPE_BYTES`] besides its payload.

use std::collections::{HashMap, VecDeque};

use crate::program::{Buffer, Kernel, Message, OpId, ProgramBuilder, RankId, Unit};

/// Payloads shorter than this are sent eagerly; longer ones by rendezvous, bytes: MPICH's and
/// SMPI's default switch (`smpi/send-is-detached-thresh` and `smpi/async-small-thresh` at
/// 65536, compared with `<` in `Request::start`).
pub const EAGER_BELOW_BYTES: f64 = 65536.0;

/// Bytes every message carries besides its payload: SMPI's envelope (tag, source, communicator;
/// `payload_size_ = size_ + 16` in `Request::start`). It also makes a message of no payload
/// pay the route's latency, as an MPI message does.
pub const ENVELOPE_BYTES: f64 = 16.0;

/// A message tag: sends match receives of the same tag only.
pub(super) type Tag = u8;

/// One MPI call of a member, as its algorithm posts it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Call {
    /// `MPI_Isend` of `bytes` of payload to member `to`.
    Isend { to: u32, bytes: f64, tag: Tag },
    /// `MPI_Irecv` from member `from`.
    Irecv { from: u32, tag: Tag },
    /// `MPI_Waitall` on every request posted since the previous wait.
    WaitAll,
    /// The reduction operation applied to `bytes` of received data.
    Apply { bytes: f64 },
}

/// The calls of every member of a collective, in the order each posts them. Members are
/// indices into the group (communicator ranks).
#[derive(Debug, Clone, Default)]
pub(super) struct Calls {
    per: Vec<Vec<Call>>,
}

impl Calls {
    /// No calls yet, for `n` members.
    pub fn new(n: usize) -> Self {
        Calls {
            per: vec![Vec::new(); n],
        }
    }

    /// Number of members.
    pub fn members(&self) -> usize {
        self.per.len()
    }

    /// `MPI_Isend` from `me` to `to`.
    pub fn isend(&mut self, me: usize, to: usize, bytes: f64, tag: Tag) {
        assert!(
            to != me,
            "member {me} sends to itself: a local copy, not a call"
        );
        self.per[me].push(Call::Isend {
            to: to as u32,
            bytes,
            tag,
        });
    }

    /// `MPI_Irecv` by `me` from `from`.
    pub fn irecv(&mut self, me: usize, from: usize, tag: Tag) {
        assert!(from != me, "member {me} receives from itself: a local copy");
        self.per[me].push(Call::Irecv {
            from: from as u32,
            tag,
        });
    }

    /// `MPI_Waitall` by `me` on what it posted since its previous wait.
    pub fn waitall(&mut self, me: usize) {
        self.per[me].push(Call::WaitAll);
    }

    /// Blocking `MPI_Send`.
    pub fn send(&mut self, me: usize, to: usize, bytes: f64, tag: Tag) {
        self.isend(me, to, bytes, tag);
        self.waitall(me);
    }

    /// Blocking `MPI_Recv`.
    pub fn recv(&mut self, me: usize, from: usize, tag: Tag) {
        self.irecv(me, from, tag);
        self.waitall(me);
    }

    /// `MPI_Sendrecv`: an isend and an irecv posted together, then a wait for both. To and
    /// from `me` itself it is a local copy (SMPI's `Request::sendrecv`): no call.
    pub fn sendrecv(&mut self, me: usize, to: usize, bytes: f64, from: usize, tag: Tag) {
        if to == me && from == me {
            return;
        }
        self.isend(me, to, bytes, tag);
        self.irecv(me, from, tag);
        self.waitall(me);
    }

    /// `me` reduces `bytes` of data it has received (after a wait).
    pub fn apply(&mut self, me: usize, bytes: f64) {
        debug_assert_eq!(
            self.per[me].last(),
            Some(&Call::WaitAll),
            "a reduction follows a wait"
        );
        self.per[me].push(Call::Apply { bytes });
    }
}

/// When a request completes.
#[derive(Debug, Clone, Copy)]
enum Completion {
    /// A detached (eager) send: at once for its sender.
    Detached,
    /// When message `op` is delivered; `covers_at`: the message already waits for the
    /// member's position when it posted (a rendezvous message).
    Message { op: OpId, covers_at: bool },
}

#[derive(Debug, Clone, Copy)]
struct Request {
    owner: u32,
    done: Option<Completion>,
}

/// A posted call waiting for its counterpart.
#[derive(Debug, Clone, Copy)]
enum Posted {
    Send {
        at: Option<OpId>,
        bytes: f64,
        req: usize,
        /// The message, already moving if eager.
        eager: Option<OpId>,
    },
    Recv {
        at: Option<OpId>,
        req: usize,
    },
}

#[derive(Debug, Clone, Default)]
struct Member {
    /// Next call.
    pc: usize,
    /// The operation after which the member is where its calls say (None: its start).
    at: Option<OpId>,
    /// Requests posted since its last wait.
    reqs: Vec<usize>,
    /// Blocked in a wait on this many requests.
    waiting_on: u32,
}

/// How [`lower`] turns calls into a program.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lowering<'a> {
    /// The ranks of the members, by member index.
    pub group: &'a [RankId],
    /// Where every message's payload lives on both ends.
    pub buffer: Buffer,
    /// Seconds of a member's CPU per byte reduced (0: free, as in SMPI).
    pub op_s_per_byte: f64,
}

struct Player<'a, 'b> {
    b: &'a mut ProgramBuilder,
    how: Lowering<'b>,
    calls: Calls,
    members: Vec<Member>,
    requests: Vec<Request>,
    /// Unmatched posts per (sender, receiver, tag): all sends or all receives.
    unmatched: HashMap<(u32, u32, Tag), VecDeque<Posted>>,
    runnable: VecDeque<u32>,
}

impl Player<'_, '_> {
    fn message(&mut self, from: u32, to: u32, bytes: f64, deps: &[Option<OpId>]) -> OpId {
        let mut d: Vec<OpId> = deps.iter().flatten().copied().collect();
        d.sort_unstable();
        d.dedup();
        let g = self.how.group;
        let m = Message {
            src: g[from as usize],
            dst: g[to as usize],
            bytes: bytes + ENVELOPE_BYTES,
            from: self.how.buffer,
            to: self.how.buffer,
        };
        self.b.message(m, &d)
    }

    fn request(&mut self, owner: u32) -> usize {
        self.requests.push(Request { owner, done: None });
        self.members[owner as usize]
            .reqs
            .push(self.requests.len() - 1);
        self.requests.len() - 1
    }

    /// Request `req` completes as `c`; its owner runs again if that was the last it waited for.
    fn resolve(&mut self, req: usize, c: Completion) {
        let r = &mut self.requests[req];
        debug_assert!(r.done.is_none());
        r.done = Some(c);
        let owner = r.owner;
        let m = &mut self.members[owner as usize];
        if m.waiting_on > 0 {
            m.waiting_on -= 1;
            if m.waiting_on == 0 {
                self.runnable.push_back(owner);
            }
        }
    }

    fn post_send(&mut self, me: u32, to: u32, bytes: f64, tag: Tag) {
        let at = self.members[me as usize].at;
        let req = self.request(me);
        let eager = (bytes < EAGER_BELOW_BYTES).then(|| self.message(me, to, bytes, &[at]));
        if eager.is_some() {
            self.resolve(req, Completion::Detached);
        }
        let q = self.unmatched.entry((me, to, tag)).or_default();
        match q.front() {
            Some(Posted::Recv { .. }) => {
                let Some(Posted::Recv { at: rat, req: rreq }) = q.pop_front() else {
                    unreachable!()
                };
                match eager {
                    Some(op) => self.resolve(
                        rreq,
                        Completion::Message {
                            op,
                            covers_at: false,
                        },
                    ),
                    None => self.rendezvous(me, to, bytes, (at, req), (rat, rreq)),
                }
            }
            _ => q.push_back(Posted::Send {
                at,
                bytes,
                req,
                eager,
            }),
        }
    }

    fn post_recv(&mut self, me: u32, from: u32, tag: Tag) {
        let at = self.members[me as usize].at;
        let req = self.request(me);
        let q = self.unmatched.entry((from, me, tag)).or_default();
        match q.front() {
            Some(Posted::Send { .. }) => {
                let Some(Posted::Send {
                    at: sat,
                    bytes,
                    req: sreq,
                    eager,
                }) = q.pop_front()
                else {
                    unreachable!()
                };
                match eager {
                    Some(op) => self.resolve(
                        req,
                        Completion::Message {
                            op,
                            covers_at: false,
                        },
                    ),
                    None => self.rendezvous(from, me, bytes, (sat, sreq), (at, req)),
                }
            }
            _ => q.push_back(Posted::Recv { at, req }),
        }
    }

    /// A rendezvous message, once both ends are posted: it leaves when both are, and completes
    /// both requests.
    fn rendezvous(
        &mut self,
        from: u32,
        to: u32,
        bytes: f64,
        (sat, sreq): (Option<OpId>, usize),
        (rat, rreq): (Option<OpId>, usize),
    ) {
        let op = self.message(from, to, bytes, &[sat, rat]);
        let c = Completion::Message {
            op,
            covers_at: true,
        };
        self.resolve(sreq, c);
        self.resolve(rreq, c);
    }

    /// Member `me`'s wait, all of whose requests are complete: it goes on after them.
    fn finish_wait(&mut self, me: u32) {
        let m = &mut self.members[me as usize];
        let mut deps = Vec::with_capacity(m.reqs.len() + 1);
        let mut covered = false;
        for &r in &m.reqs {
            match self.requests[r].done.expect("every request is complete") {
                Completion::Detached => {}
                Completion::Message { op, covers_at } => {
                    deps.push(op);
                    covered |= covers_at;
                }
            }
        }
        m.reqs.clear();
        if !covered {
            deps.extend(m.at);
        }
        deps.sort_unstable();
        deps.dedup();
        m.at = match deps.len() {
            0 => m.at,
            1 => Some(deps[0]),
            _ => Some(self.b.join(&deps)),
        };
    }

    /// Run member `me`'s calls until it blocks in a wait or has none left.
    fn run(&mut self, me: u32) {
        let i = me as usize;
        while let Some(&call) = self.calls.per[i].get(self.members[i].pc) {
            match call {
                Call::Isend { to, bytes, tag } => self.post_send(me, to, bytes, tag),
                Call::Irecv { from, tag } => self.post_recv(me, from, tag),
                Call::WaitAll => {
                    let m = &self.members[i];
                    let pending = m
                        .reqs
                        .iter()
                        .filter(|&&r| self.requests[r].done.is_none())
                        .count() as u32;
                    if pending > 0 {
                        self.members[i].waiting_on = pending;
                        return;
                    }
                    self.finish_wait(me);
                }
                Call::Apply { bytes } => {
                    let secs = bytes * self.how.op_s_per_byte;
                    if secs > 0.0 {
                        let k = Kernel::new(self.how.group[i], Unit::Cpu, "reduce_op", secs, 0.0);
                        let at = self.members[i].at;
                        self.members[i].at = Some(self.b.kernel(k, at.as_slice()));
                    }
                }
            }
            self.members[i].pc += 1;
        }
    }
}

/// Play `calls` into `b`. `ready`: per member, the operation after which it makes its first
/// call (empty or `None`: at the start). Returns, per member, the operation after which its
/// last call has returned (an empty join for a member that waits for nothing).
///
/// # Panics
/// If the calls deadlock or leave a send or receive unmatched (an algorithm's bug).
pub(super) fn lower(
    b: &mut ProgramBuilder,
    how: Lowering<'_>,
    calls: Calls,
    ready: &[Option<OpId>],
) -> Vec<OpId> {
    let n = calls.members();
    assert_eq!(how.group.len(), n, "one rank per member");
    assert!(
        ready.is_empty() || ready.len() == n,
        "one ready op per member"
    );
    let members = (0..n)
        .map(|i| Member {
            at: ready.get(i).copied().flatten(),
            ..Member::default()
        })
        .collect();
    let mut p = Player {
        b,
        how,
        calls,
        members,
        requests: Vec::new(),
        unmatched: HashMap::new(),
        runnable: (0..n as u32).collect(),
    };
    while let Some(me) = p.runnable.pop_front() {
        p.run(me);
    }
    for (i, m) in p.members.iter().enumerate() {
        assert_eq!(
            m.pc,
            p.calls.per[i].len(),
            "member {i} of the collective is blocked for ever (an algorithm's bug)"
        );
    }
    assert!(
        p.unmatched.values().all(VecDeque::is_empty),
        "a send or a receive of the collective is unmatched (an algorithm's bug)"
    );
    let ats: Vec<Option<OpId>> = p.members.iter().map(|m| m.at).collect();
    ats.into_iter()
        .map(|at| at.unwrap_or_else(|| p.b.join(&[])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Op, Program};

    fn play(calls: Calls) -> (Program, Vec<OpId>) {
        let n = calls.members();
        let group: Vec<RankId> = (0..n as u32).map(RankId).collect();
        let mut b = ProgramBuilder::new(n as u32);
        let how = Lowering {
            group: &group,
            buffer: Buffer::Host,
            op_s_per_byte: 0.0,
        };
        let out = lower(&mut b, how, calls, &[]);
        (b.build(), out)
    }

    fn message_preds(p: &Program) -> Vec<Vec<u32>> {
        (0..p.ops().len())
            .filter(|&i| matches!(p.ops()[i], Op::Message(_)))
            .map(|i| p.preds(OpId(i as u32)).iter().map(|o| o.0).collect())
            .collect()
    }

    #[test]
    fn an_eager_send_leaves_at_once_and_its_sender_goes_on() {
        // 0 sends 1 KiB to 1 then to 2 (blocking sends, eager): both messages wait for nothing;
        // 0's sends return at once, so 0 ends where it started.
        let mut c = Calls::new(3);
        c.send(0, 1, 1024.0, 0);
        c.send(0, 2, 1024.0, 0);
        c.recv(1, 0, 0);
        c.recv(2, 0, 0);
        let (p, out) = play(c);
        assert_eq!(message_preds(&p), vec![Vec::<u32>::new(), vec![]]);
        let bytes: Vec<f64> = p.messages().map(|m| m.bytes).collect();
        assert_eq!(bytes, vec![1040.0, 1040.0]);
        // 0: nothing done (an empty join); 1 and 2: their messages.
        assert!(matches!(p.ops()[out[0].index()], Op::Join));
        assert_eq!((out[1], out[2]), (OpId(0), OpId(1)));
    }

    #[test]
    fn a_rendezvous_send_waits_for_the_receive_and_for_delivery() {
        // 0 sends 64 KiB to 1 then to 2; 1 receives only after its own receive from 2.
        let mut c = Calls::new(3);
        c.send(0, 1, 65536.0, 0);
        c.send(0, 2, 65536.0, 0);
        c.recv(1, 2, 1);
        c.recv(1, 0, 0);
        c.send(2, 1, 65536.0, 1);
        c.recv(2, 0, 0);
        let (p, _) = play(c);
        // Messages in creation order: 2→1 (both posted at the start), 0→1 (after 2→1, op 0,
        // which 1 waited for before posting), 0→2 (after 0→1, op 1, delivered, and 2's
        // receive, posted after its send 2→1, op 0).
        let pairs: Vec<(u32, u32)> = p.messages().map(|m| (m.src.0, m.dst.0)).collect();
        assert_eq!(pairs, vec![(2, 1), (0, 1), (0, 2)]);
        assert_eq!(message_preds(&p), vec![vec![], vec![0], vec![0, 1]]);
    }

    #[test]
    #[should_panic(expected = "blocked for ever")]
    fn a_receive_without_its_send_is_a_bug() {
        let mut c = Calls::new(2);
        c.recv(1, 0, 0);
        play(c);
    }
}
