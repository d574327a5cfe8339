//! Programs: what the ranks of an MPI-style application do, as a DAG of operations.
//!
//! A [`Program`] is plain data, like a task graph: kernels on a rank's GPU or CPU, messages
//! between ranks, delays and joins, each with the operations it waits for. Workload generators
//! (HPL, stencil, master/worker, the point-to-point and broadcast microbenchmarks) build one
//! with a [`ProgramBuilder`]; the executor ([`super::exec`]) runs it on a cluster's fluid
//! network. Placement is fixed by the program (owner computes): there is no scheduler.
//!
//! Dependencies can only point to operations built earlier, so every program is acyclic by
//! construction.

pub use hetsim_platform::cluster::RankId;

use hetsim_core::error::InputError;
use hetsim_platform::cluster::NodeId;
use hetsim_taskgraph::distributed::MESSAGE_CODELET;
use hetsim_taskgraph::{CodeletId, Place, TaskGraph, TaskGraphBuilder, TaskId};

/// Index of an operation in [`Program::ops`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub u32);

impl OpId {
    /// The index as `usize`, for slices.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Which processor of a rank runs a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// The rank's GPU: one kernel at a time.
    Gpu,
    /// The rank's host core (the one that drives its GPU): one kernel at a time, shared with
    /// the rank's message overheads.
    Cpu,
}

/// Where a message's bytes are at one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Buffer {
    /// In the rank's GPU memory.
    Device,
    /// In the rank's host memory.
    Host,
}

/// A kernel: a fixed amount of work on one processor of one rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kernel {
    /// Whose processor.
    pub rank: RankId,
    /// Which processor.
    pub unit: Unit,
    /// How long it runs, s (finite, ≥ 0).
    pub secs: f64,
    /// Useful flops it performs (for utilisation and GFlop/s; may be 0).
    pub flops: f64,
    /// Among kernels ready on the same processor, higher runs first; ties in program order.
    pub priority: i32,
    /// What it is ("dgemm", "panel", "inner" ...), for reports and traces.
    pub name: &'static str,
}

impl Kernel {
    /// A kernel of priority 0.
    pub fn new(rank: RankId, unit: Unit, name: &'static str, secs: f64, flops: f64) -> Self {
        Kernel {
            rank,
            unit,
            secs,
            flops,
            priority: 0,
            name,
        }
    }

    /// The same kernel with another priority.
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }
}

/// A point-to-point message. The executor charges the sender's overhead o_s on the sender's
/// CPU, moves the bytes (through host memory in the three steps device→host, host→host,
/// host→device, or in one GPU-direct flow where the cluster allows it), then charges o_r on the
/// receiver's CPU. The receive is taken as posted: the message completes when the bytes and
/// o_r are done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Message {
    /// Sender.
    pub src: RankId,
    /// Receiver.
    pub dst: RankId,
    /// Payload, bytes (finite, ≥ 0).
    pub bytes: f64,
    /// Where the payload is on the sender.
    pub from: Buffer,
    /// Where it goes on the receiver.
    pub to: Buffer,
}

impl Message {
    /// GPU memory to GPU memory, the default placement of a rank's data.
    pub fn device(src: RankId, dst: RankId, bytes: f64) -> Self {
        Message {
            src,
            dst,
            bytes,
            from: Buffer::Device,
            to: Buffer::Device,
        }
    }

    /// Host memory to host memory.
    pub fn host(src: RankId, dst: RankId, bytes: f64) -> Self {
        Message {
            src,
            dst,
            bytes,
            from: Buffer::Host,
            to: Buffer::Host,
        }
    }
}

/// One operation of a program.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// Work on a processor.
    Kernel(Kernel),
    /// A message between two ranks.
    Message(Message),
    /// Time that passes without occupying any resource (a fixed overhead, a barrier's cost).
    Delay {
        /// Whose time it is (for reports).
        rank: RankId,
        /// How long, s (finite, ≥ 0).
        secs: f64,
    },
    /// Completes as soon as everything it waits for has: a synchronisation point.
    Join,
}

/// A validated program: operations and their dependencies, acyclic by construction.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    ranks: u32,
    ops: Vec<Op>,
    /// `preds[pred_start[i]..pred_start[i+1]]` are the operations op i waits for.
    pred_start: Vec<u32>,
    preds: Vec<OpId>,
}

impl Program {
    /// Number of ranks.
    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    /// The operations, indexed by [`OpId`].
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The operations `op` waits for.
    pub fn preds(&self, op: OpId) -> &[OpId] {
        let i = op.index();
        &self.preds[self.pred_start[i] as usize..self.pred_start[i + 1] as usize]
    }

    /// The messages, in program order.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.ops.iter().filter_map(|o| match o {
            Op::Message(m) => Some(m),
            _ => None,
        })
    }

    /// Total number of dependency edges.
    pub fn edges(&self) -> usize {
        self.preds.len()
    }

    /// Sum of the kernels' flops.
    pub fn flops(&self) -> f64 {
        self.ops
            .iter()
            .map(|o| match o {
                Op::Kernel(k) => k.flops,
                _ => 0.0,
            })
            .sum()
    }

    /// The program as a distributed task graph (one graph node per rank), in operation order
    /// so that task `i` is operation `i`: a kernel becomes a computation of its rank that runs
    /// only on its unit in its time ([`TaskGraphBuilder::submit_fixed`]), a message a payload
    /// message (the rank's GPU is its GPU 0), a delay a delay and a join a delay of 0 s; each
    /// waits for the operations it waited for.
    pub fn to_task_graph(&self) -> Result<TaskGraph, InputError> {
        self.submit_all()?.build()
    }

    /// [`Program::to_task_graph`], dropping the program before the graph's successor lists
    /// are made: the peak memory is the program and the graph's tasks, not the whole graph on
    /// top of the program.
    pub fn into_task_graph(self) -> Result<TaskGraph, InputError> {
        let b = self.submit_all()?;
        drop(self);
        b.build()
    }

    /// A builder holding the program's operations as tasks ([`Program::to_task_graph`]).
    fn submit_all(&self) -> Result<TaskGraphBuilder, InputError> {
        let mut g = GraphOps::with_capacity(self.ops.len(), self.edges())?;
        for (i, op) in self.ops.iter().enumerate() {
            g.push(*op, self.preds(OpId(i as u32)));
        }
        g.into_builder()
    }
}

/// Where a [`ProgramBuilder`] puts the operations it is given, already checked.
pub trait OpSink {
    /// Number of operations so far.
    fn len(&self) -> usize;

    /// True before the first operation.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append `op`, which waits for `after` (all built before it).
    fn push(&mut self, op: Op, after: &[OpId]);
}

/// The operations as a [`Program`]'s lists: what [`ProgramBuilder::new`] builds.
#[derive(Debug, Clone)]
pub struct OpList {
    ops: Vec<Op>,
    pred_start: Vec<u32>,
    preds: Vec<OpId>,
}

impl Default for OpList {
    fn default() -> Self {
        OpList {
            ops: Vec::new(),
            pred_start: vec![0],
            preds: Vec::new(),
        }
    }
}

impl OpSink for OpList {
    fn len(&self) -> usize {
        self.ops.len()
    }

    fn push(&mut self, op: Op, after: &[OpId]) {
        self.preds.extend_from_slice(after);
        self.ops.push(op);
        self.pred_start
            .push(u32::try_from(self.preds.len()).expect("more than 2^32 dependency edges"));
    }
}

/// The operations submitted at once as tasks of a distributed task graph, as
/// [`Program::to_task_graph`] makes them: what [`ProgramBuilder::for_task_graph`] builds, for
/// generators whose program would be as large as its graph.
#[derive(Debug)]
pub struct GraphOps {
    b: TaskGraphBuilder,
    message: CodeletId,
    delay: CodeletId,
    join: CodeletId,
    after: Vec<TaskId>,
    tasks: usize,
    /// The first submission the graph refused; the later operations are counted, not submitted.
    error: Option<InputError>,
}

impl GraphOps {
    /// Room for `ops` tasks and `edges` dependencies.
    fn with_capacity(ops: usize, edges: usize) -> Result<Self, InputError> {
        let mut b = TaskGraphBuilder::with_capacity(ops, 0, 0);
        b.reserve_fixed(edges);
        Ok(GraphOps {
            message: b.codelet(MESSAGE_CODELET)?,
            delay: b.codelet("delay")?,
            join: b.codelet("join")?,
            b,
            after: Vec::new(),
            tasks: 0,
            error: None,
        })
    }

    fn submit(&mut self, op: Op) -> Result<TaskId, InputError> {
        let place = |buf: Buffer| match buf {
            Buffer::Device => Place::Device(0),
            Buffer::Host => Place::Host,
        };
        let (b, after) = (&mut self.b, &self.after[..]);
        match op {
            Op::Kernel(k) => {
                let unit = match k.unit {
                    Unit::Gpu => hetsim_taskgraph::Unit::Gpu,
                    Unit::Cpu => hetsim_taskgraph::Unit::Cpu,
                };
                let c = b.codelet(k.name)?;
                b.submit_fixed(
                    c,
                    NodeId(k.rank.0),
                    unit,
                    k.secs,
                    k.flops,
                    k.priority,
                    after,
                )
            }
            Op::Message(m) => b.submit_payload(
                self.message,
                (NodeId(m.src.0), place(m.from)),
                (NodeId(m.dst.0), place(m.to)),
                m.bytes,
                0,
                after,
            ),
            Op::Delay { rank, secs } => b.submit_delay(self.delay, NodeId(rank.0), secs, after),
            Op::Join => b.submit_delay(self.join, NodeId(0), 0.0, after),
        }
    }

    /// The builder holding the tasks, or the first error.
    fn into_builder(self) -> Result<TaskGraphBuilder, InputError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.b),
        }
    }
}

impl OpSink for GraphOps {
    fn len(&self) -> usize {
        self.tasks
    }

    fn push(&mut self, op: Op, after: &[OpId]) {
        self.tasks += 1;
        if self.error.is_some() {
            return;
        }
        self.after.clear();
        self.after.extend(after.iter().map(|p| TaskId(p.0)));
        if let Err(e) = self.submit(op) {
            self.error = Some(e);
        }
    }
}

/// Builds a [`Program`] ([`ProgramBuilder::new`]) or, without the program, its task graph
/// ([`ProgramBuilder::for_task_graph`]). Every operation names the earlier operations it
/// waits for.
///
/// The builder checks what only a generator bug could break (ranks in range, durations and
/// sizes finite and ≥ 0, dependencies on existing operations) with assertions: generators
/// validate user input before building.
#[derive(Debug, Clone, Default)]
pub struct ProgramBuilder<S: OpSink = OpList> {
    ranks: u32,
    sink: S,
}

impl ProgramBuilder {
    /// An empty program over `ranks` ranks.
    pub fn new(ranks: u32) -> Self {
        ProgramBuilder {
            ranks,
            sink: OpList::default(),
        }
    }

    /// Reserve room for `ops` more operations with `edges` more dependency edges in all, so
    /// that a generator that knows its size does not leave up to half its vectors unused.
    pub fn reserve(&mut self, ops: usize, edges: usize) {
        self.sink.ops.reserve_exact(ops);
        self.sink.pred_start.reserve_exact(ops);
        self.sink.preds.reserve_exact(edges);
    }

    /// The finished program.
    pub fn build(self) -> Program {
        Program {
            ranks: self.ranks,
            ops: self.sink.ops,
            pred_start: self.sink.pred_start,
            preds: self.sink.preds,
        }
    }
}

impl ProgramBuilder<GraphOps> {
    /// An empty program over `ranks` ranks whose operations go straight into a task graph,
    /// with room for `ops` operations and `edges` dependencies: the graph
    /// [`Program::to_task_graph`] would make of the program, without the program.
    pub fn for_task_graph(ranks: u32, ops: usize, edges: usize) -> Result<Self, InputError> {
        Ok(ProgramBuilder {
            ranks,
            sink: GraphOps::with_capacity(ops, edges)?,
        })
    }

    /// The finished task graph.
    pub fn into_task_graph(self) -> Result<TaskGraph, InputError> {
        self.sink.into_builder()?.build()
    }
}

impl<S: OpSink> ProgramBuilder<S> {
    /// Number of ranks.
    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    /// Number of operations so far.
    pub fn len(&self) -> usize {
        self.sink.len()
    }

    /// True before the first operation.
    pub fn is_empty(&self) -> bool {
        self.sink.is_empty()
    }

    /// Add a kernel that starts (on its processor, in priority order) once `after` are done.
    pub fn kernel(&mut self, k: Kernel, after: &[OpId]) -> OpId {
        self.check_rank(k.rank);
        assert!(
            k.secs.is_finite() && k.secs >= 0.0,
            "kernel `{}` duration {} s",
            k.name,
            k.secs
        );
        assert!(
            k.flops.is_finite() && k.flops >= 0.0,
            "kernel flops {}",
            k.flops
        );
        self.push(Op::Kernel(k), after)
    }

    /// Add a message sent once `after` are done.
    pub fn message(&mut self, m: Message, after: &[OpId]) -> OpId {
        self.check_rank(m.src);
        self.check_rank(m.dst);
        assert!(
            m.bytes.is_finite() && m.bytes >= 0.0,
            "message size {}",
            m.bytes
        );
        self.push(Op::Message(m), after)
    }

    /// Add a delay of `secs` that starts once `after` are done.
    pub fn delay(&mut self, rank: RankId, secs: f64, after: &[OpId]) -> OpId {
        self.check_rank(rank);
        assert!(secs.is_finite() && secs >= 0.0, "delay {secs} s");
        self.push(Op::Delay { rank, secs }, after)
    }

    /// Add a join of `after`.
    pub fn join(&mut self, after: &[OpId]) -> OpId {
        self.push(Op::Join, after)
    }

    fn check_rank(&self, r: RankId) {
        assert!(
            r.0 < self.ranks,
            "{r} out of range: the program has {} ranks",
            self.ranks
        );
    }

    fn push(&mut self, op: Op, after: &[OpId]) -> OpId {
        let id = OpId(u32::try_from(self.sink.len()).expect("more than 2^32 operations"));
        for a in after {
            assert!(a.0 < id.0, "dependency on op {} not yet built", a.0);
        }
        self.sink.push(op, after);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_keep_their_predecessors_in_order() {
        let mut b = ProgramBuilder::new(2);
        let k0 = b.kernel(Kernel::new(RankId(0), Unit::Gpu, "a", 1.0, 10.0), &[]);
        let m = b.message(Message::device(RankId(0), RankId(1), 8.0), &[k0]);
        let k1 = b.kernel(Kernel::new(RankId(1), Unit::Gpu, "b", 2.0, 5.0), &[m, k0]);
        let j = b.join(&[k1]);
        let p = b.build();
        assert_eq!(p.ops().len(), 4);
        assert!(p.preds(k0).is_empty());
        assert_eq!(p.preds(m), &[k0]);
        assert_eq!(p.preds(k1), &[m, k0]);
        assert_eq!(p.preds(j), &[k1]);
        assert_eq!(p.edges(), 4);
        assert_eq!(p.flops(), 15.0);
    }

    #[test]
    #[should_panic(expected = "not yet built")]
    fn forward_dependencies_are_refused() {
        let mut b = ProgramBuilder::new(1);
        b.join(&[OpId(3)]);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn ranks_are_checked() {
        let mut b = ProgramBuilder::new(1);
        b.message(Message::host(RankId(0), RankId(1), 1.0), &[]);
    }
}
