//! The executor: runs a [`Program`] on a [`Cluster`]'s fluid network, deterministically.
//!
//! Semantics (`docs/mpi.md`):
//!
//! - An operation becomes ready when all its predecessors are done.
//! - Kernels queue on their (rank, unit) processor, which runs one at a time: higher priority
//!   first, then program order. A rank's CPU is one core of its node; it also runs the rank's
//!   message overheads o_s and o_r, which go before queued kernels (MPI progress) but never
//!   interrupt a running one.
//! - A message: o_s(bytes) on the sender's CPU; then the bytes (same rank and buffer: nothing; same node:
//!   the node machine's route, or staged through the NIC's RAM node; other node: three
//!   store-and-forward flows device→host, host→host, host→device, each started when the
//!   previous ends, or one GPU-direct flow where the cluster says so); then o_r(bytes) on the
//!   receiver's CPU. The receive is taken as posted: nothing waits for a matching receive.
//! - Each flow pays its route's latency (the fluid network does) and shares link bandwidth
//!   max-min fairly with the other flows. A route with a transfer model instead of links takes
//!   the model's time without sharing, as in the runtime.
//!
//! Cost: each event costs O(log n) in the calendar and the processor queues plus the fluid
//! solver's incremental work; nothing scans all ranks or all operations.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

use hetsim_core::engine::Calendar;
use hetsim_core::error::InputError;
use hetsim_core::fluid::{FlowId, FlowSpec, SharingMode};
use hetsim_platform::cluster::{Cluster, ClusterNetwork, Endpoint, NodeId, Segment};
use hetsim_platform::machine::MemNodeId;

use super::program::{Buffer, Message, Op, OpId, Program, RankId, Unit};

/// How to run a program.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExecOptions {
    /// Flow weighting in the fluid network.
    pub sharing: SharingMode,
}

impl Default for ExecOptions {
    /// Plain max-min sharing.
    fn default() -> Self {
        ExecOptions {
            sharing: SharingMode::Plain,
        }
    }
}

/// What a program run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgramReport {
    /// Completion time of the last operation, s.
    pub makespan_s: f64,
    /// Ranks of the program.
    pub ranks: u32,
    /// Nodes of the cluster.
    pub nodes: u32,
    /// Operations executed.
    pub ops: u64,
    /// Kernels executed.
    pub kernels: u64,
    /// Messages delivered.
    pub messages: u64,
    /// Payload of all messages, bytes.
    pub message_bytes: f64,
    /// Fluid flows started (a message between nodes through host memory makes up to three).
    pub flows: u64,
    /// Bytes of flows that crossed NIC links.
    pub internode_bytes: f64,
    /// Bytes of flows that stayed inside a node (PCIe, NVLink ...), model steps included.
    pub intranode_bytes: f64,
    /// Per rank, time its GPU ran kernels, s.
    pub gpu_busy_s: Vec<f64>,
    /// Per rank, time its CPU core ran kernels and message overheads, s.
    pub cpu_busy_s: Vec<f64>,
    /// Sum of the kernels' flops.
    pub kernel_flops: f64,
    /// Events processed (calendar events and fluid activations/completions).
    pub events: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Kernel,
    Send,
    Recv,
}

/// A processor's queue entry: priority, then program order, then phase.
type QueueKey = (i32, Reverse<u32>, Reverse<Phase>);

#[derive(Debug, Default)]
struct Proc {
    busy: Option<(u32, Phase)>,
    queue: BinaryHeap<QueueKey>,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Proc(u32),
    Delay(u32),
    Model(u32),
}

#[derive(Debug)]
struct InFlight {
    op: u32,
    bytes: f64,
    steps: Vec<Segment>,
    next: usize,
}

/// Priority of message overheads on a CPU: before any queued kernel.
const OVERHEAD_PRIORITY: i32 = i32::MAX;

struct Exec<'a> {
    program: &'a Program,
    cluster: &'a Cluster,
    net: ClusterNetwork,
    cal: Calendar<Ev>,
    now: f64,
    waiting: Vec<u32>,
    procs: Vec<Proc>,
    inflight: Vec<Option<InFlight>>,
    free_inflight: Vec<u32>,
    flow_owner: Vec<u32>,
    gpu_mem: Vec<MemNodeId>,
    to_complete: Vec<u32>,
    /// Processors whose queue grew or that became idle at this instant: started after all
    /// completions of the event are drained, so that priorities decide among simultaneous
    /// arrivals.
    to_start: Vec<u32>,
    done: u64,
    report: ProgramReport,
}

/// Run `program` on `cluster`. Errors (found before the first event): more ranks than the
/// cluster has, a message between nodes of a cluster without network, a pair of memory nodes
/// the node machine cannot connect, a transfer model that never finishes.
pub fn run(
    program: &Program,
    cluster: &Cluster,
    opts: &ExecOptions,
) -> Result<ProgramReport, InputError> {
    if program.ranks() > cluster.ranks() {
        return Err(InputError::new(format!(
            "the program has {} ranks but the cluster `{}` has {} ({} node(s) × {} GPU(s))",
            program.ranks(),
            cluster.name(),
            cluster.ranks(),
            cluster.nodes(),
            cluster.gpus_per_node()
        ))
        .at_field("machine.nodes"));
    }
    let net = ClusterNetwork::new(cluster, opts.sharing)?;
    let ranks = program.ranks() as usize;
    let machine = cluster.node_machine();
    let gpu_mem = machine
        .gpus()
        .iter()
        .take(cluster.gpus_per_node() as usize)
        .map(|g| g.memory)
        .collect();
    let mut ex = Exec {
        program,
        cluster,
        net,
        cal: Calendar::new(),
        now: 0.0,
        waiting: (0..program.ops().len())
            .map(|i| program.preds(OpId(i as u32)).len() as u32)
            .collect(),
        procs: (0..2 * ranks).map(|_| Proc::default()).collect(),
        inflight: Vec::new(),
        free_inflight: Vec::new(),
        flow_owner: Vec::new(),
        gpu_mem,
        to_complete: Vec::new(),
        to_start: Vec::new(),
        done: 0,
        report: ProgramReport {
            makespan_s: 0.0,
            ranks: program.ranks(),
            nodes: cluster.nodes(),
            ops: 0,
            kernels: 0,
            messages: 0,
            message_bytes: 0.0,
            flows: 0,
            internode_bytes: 0.0,
            intranode_bytes: 0.0,
            gpu_busy_s: vec![0.0; ranks],
            cpu_busy_s: vec![0.0; ranks],
            kernel_flops: 0.0,
            events: 0,
        },
    };
    // Every message's path is checked before the first event, so a bad route is an input
    // error, not a failure half-way.
    for (i, op) in program.ops().iter().enumerate() {
        if let Op::Message(m) = op {
            let steps = ex.plan(m).map_err(|e| {
                InputError::new(format!(
                    "operation {i} ({} → {}): {}",
                    m.src, m.dst, e.message
                ))
                .at_field(e.location.field.unwrap_or_else(|| "machine".into()))
            })?;
            for s in &steps {
                if let Segment::Model(model) = s {
                    let d = model.duration_secs(m.bytes);
                    if !d.is_finite() {
                        return Err(InputError::new(format!(
                            "operation {i} ({} → {}): the node machine's transfer model gives \
                             {d} s for {} bytes (zero bandwidth?)",
                            m.src, m.dst, m.bytes
                        ))
                        .at_field("routes.model"));
                    }
                }
            }
        }
    }
    ex.run();
    Ok(ex.report)
}

impl Exec<'_> {
    fn location(&self, r: RankId) -> (NodeId, MemNodeId) {
        let (node, gpu) = self.cluster.rank_location(r);
        (node, self.gpu_mem[gpu.index()])
    }

    fn mem_of(&self, r: RankId, b: Buffer) -> Endpoint {
        let (node, gmem) = self.location(r);
        Endpoint {
            node,
            mem: match b {
                Buffer::Device => gmem,
                Buffer::Host => self.net.attach(),
            },
        }
    }

    /// One hop inside a node: the node machine's route, else staged through the NIC's RAM node.
    fn intra_steps(
        &self,
        node: NodeId,
        a: MemNodeId,
        b: MemNodeId,
        out: &mut Vec<Segment>,
    ) -> Result<(), InputError> {
        if a == b {
            return Ok(());
        }
        if let Some(s) = self.net.intra(node, a, b) {
            out.push(s);
            return Ok(());
        }
        let ram = self.net.attach();
        let names = |m: MemNodeId| {
            self.cluster
                .node_machine()
                .memory_node(m)
                .map_or_else(|| m.0.to_string(), |n| n.name.clone())
        };
        if a != ram
            && b != ram
            && let (Some(x), Some(y)) = (self.net.intra(node, a, ram), self.net.intra(node, ram, b))
        {
            out.push(x);
            out.push(y);
            return Ok(());
        }
        Err(InputError::new(format!(
            "the node machine `{}` has no route from {} to {} (nor through {})",
            self.cluster.node_machine().name(),
            names(a),
            names(b),
            names(ram)
        ))
        .at_field("routes"))
    }

    /// The store-and-forward steps of a message.
    fn plan(&self, m: &Message) -> Result<Vec<Segment>, InputError> {
        let mut steps = Vec::new();
        // A rank's copy between its own device and host memory (HPL's panel copies) crosses
        // the node's route like any intra-node message; only same-buffer self-messages are free.
        if m.src == m.dst && m.from == m.to {
            return Ok(steps);
        }
        let (s, d) = (self.mem_of(m.src, m.from), self.mem_of(m.dst, m.to));
        if s.node == d.node {
            self.intra_steps(s.node, s.mem, d.mem, &mut steps)?;
            return Ok(steps);
        }
        let host = self.net.inter_host(s.node, d.node).ok_or_else(|| {
            InputError::new(format!(
                "{} and {} are on different nodes of `{}`, which has no network (a plain \
                 machine file)",
                m.src,
                m.dst,
                self.cluster.name()
            ))
            .at_field("machine")
        })?;
        let ram = self.net.attach();
        if self.cluster.gpu_direct()
            && let Some(r) = self.net.route(s, d)
        {
            steps.push(Segment::Fluid(r));
            return Ok(steps);
        }
        self.intra_steps(s.node, s.mem, ram, &mut steps)?;
        steps.push(Segment::Fluid(host));
        self.intra_steps(d.node, ram, d.mem, &mut steps)?;
        Ok(steps)
    }

    fn proc_index(r: RankId, u: Unit) -> usize {
        2 * r.index()
            + match u {
                Unit::Gpu => 0,
                Unit::Cpu => 1,
            }
    }

    fn run(&mut self) {
        let total = self.program.ops().len() as u64;
        for i in 0..self.program.ops().len() {
            if self.waiting[i] == 0 {
                self.make_ready(i as u32);
            }
        }
        self.drain_completions();
        let mut finished: Vec<FlowId> = Vec::new();
        let mut slots: Vec<u32> = Vec::new();
        loop {
            let tc = self.cal.peek_time();
            let tf = self.net.net.next_event_time();
            let fluid_first = match (tc, tf) {
                (None, None) => break,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(c), Some(f)) => f < c,
            };
            self.report.events += 1;
            if fluid_first {
                let t = tf.expect("fluid event");
                self.now = t;
                finished.clear();
                self.net.net.advance(t, &mut finished);
                // Owners first: a next step started below may reuse a finished flow's id.
                slots.clear();
                slots.extend(finished.iter().map(|f| self.flow_owner[f.0 as usize]));
                for &slot in &slots {
                    self.step_done(slot);
                }
            } else {
                let (t, ev) = self.cal.pop().expect("calendar event");
                self.now = t;
                match ev {
                    Ev::Proc(p) => self.proc_done(p as usize),
                    Ev::Delay(op) => self.complete(op),
                    Ev::Model(slot) => self.step_done(slot),
                }
            }
            self.drain_completions();
        }
        assert_eq!(
            self.done, total,
            "the executor stopped with operations pending (a bug: programs are acyclic)"
        );
        self.report.ops = self.done;
        self.report.makespan_s = self.now;
    }

    fn make_ready(&mut self, op: u32) {
        match self.program.ops()[op as usize] {
            Op::Kernel(k) => {
                let p = Self::proc_index(k.rank, k.unit);
                self.procs[p]
                    .queue
                    .push((k.priority, Reverse(op), Reverse(Phase::Kernel)));
                self.to_start.push(p as u32);
            }
            Op::Message(m) => {
                let p = Self::proc_index(m.src, Unit::Cpu);
                self.procs[p]
                    .queue
                    .push((OVERHEAD_PRIORITY, Reverse(op), Reverse(Phase::Send)));
                self.to_start.push(p as u32);
            }
            Op::Delay { secs, .. } => self.cal.schedule(self.now + secs, Ev::Delay(op)),
            Op::Join => self.to_complete.push(op),
        }
    }

    fn complete(&mut self, op: u32) {
        self.to_complete.push(op);
    }

    /// Complete queued operations and release their successors (iteratively: joins complete at
    /// once and may chain).
    fn drain_completions(&mut self) {
        loop {
            while let Some(op) = self.to_complete.pop() {
                self.done += 1;
                let program = self.program;
                for &s in program.succs(OpId(op)) {
                    let w = &mut self.waiting[s.index()];
                    *w -= 1;
                    if *w == 0 {
                        self.make_ready(s.0);
                    }
                }
            }
            if self.to_start.is_empty() {
                break;
            }
            // Sorted so that the order of starts (and of the calendar's ties) does not depend
            // on the order of arrivals.
            let mut procs = std::mem::take(&mut self.to_start);
            procs.sort_unstable();
            procs.dedup();
            for p in procs {
                self.try_start(p as usize);
            }
        }
    }

    fn try_start(&mut self, p: usize) {
        if self.procs[p].busy.is_some() {
            return;
        }
        let Some((_, Reverse(op), Reverse(phase))) = self.procs[p].queue.pop() else {
            return;
        };
        let oh = self.cluster.overheads();
        let secs = match (phase, self.program.ops()[op as usize]) {
            (Phase::Kernel, Op::Kernel(k)) => {
                self.report.kernels += 1;
                self.report.kernel_flops += k.flops;
                k.secs
            }
            (Phase::Send, Op::Message(m)) => oh.send_s(m.bytes),
            (Phase::Recv, Op::Message(m)) => oh.recv_s(m.bytes),
            _ => unreachable!("queue entries match their operations"),
        };
        let rank = p / 2;
        if p.is_multiple_of(2) {
            self.report.gpu_busy_s[rank] += secs;
        } else {
            self.report.cpu_busy_s[rank] += secs;
        }
        self.procs[p].busy = Some((op, phase));
        self.cal.schedule(self.now + secs, Ev::Proc(p as u32));
    }

    fn proc_done(&mut self, p: usize) {
        let (op, phase) = self.procs[p].busy.take().expect("busy processor");
        match phase {
            Phase::Kernel | Phase::Recv => self.complete(op),
            Phase::Send => self.send_bytes(op),
        }
        self.to_start.push(p as u32);
    }

    fn send_bytes(&mut self, op: u32) {
        let Op::Message(m) = self.program.ops()[op as usize] else {
            unreachable!("send phase of a message")
        };
        let steps = self.plan(&m).expect("routes checked before the run");
        if steps.is_empty() {
            self.deliver(op);
            return;
        }
        let st = InFlight {
            op,
            bytes: m.bytes,
            steps,
            next: 0,
        };
        let slot = match self.free_inflight.pop() {
            Some(s) => {
                self.inflight[s as usize] = Some(st);
                s
            }
            None => {
                self.inflight.push(Some(st));
                (self.inflight.len() - 1) as u32
            }
        };
        self.start_step(slot);
    }

    fn start_step(&mut self, slot: u32) {
        let st = self.inflight[slot as usize].as_ref().expect("live message");
        let bytes = st.bytes;
        match &st.steps[st.next] {
            Segment::Fluid(links) => {
                let inter = links.iter().any(|&l| self.net.is_internode_link(l));
                let spec = FlowSpec::new(links.clone(), bytes);
                if inter {
                    self.report.internode_bytes += bytes;
                } else {
                    self.report.intranode_bytes += bytes;
                }
                self.report.flows += 1;
                let f = self.net.net.start_flow(self.now, spec);
                let fi = f.0 as usize;
                if self.flow_owner.len() <= fi {
                    self.flow_owner.resize(fi + 1, u32::MAX);
                }
                self.flow_owner[fi] = slot;
            }
            Segment::Model(model) => {
                let d = model.duration_secs(bytes);
                self.report.intranode_bytes += bytes;
                self.cal.schedule(self.now + d, Ev::Model(slot));
            }
        }
    }

    fn step_done(&mut self, slot: u32) {
        let st = self.inflight[slot as usize].as_mut().expect("live message");
        st.next += 1;
        if st.next < st.steps.len() {
            self.start_step(slot);
            return;
        }
        let op = st.op;
        self.inflight[slot as usize] = None;
        self.free_inflight.push(slot);
        self.deliver(op);
    }

    /// The bytes are there: o_r on the receiver's CPU.
    fn deliver(&mut self, op: u32) {
        let Op::Message(m) = self.program.ops()[op as usize] else {
            unreachable!("delivery of a message")
        };
        self.report.messages += 1;
        self.report.message_bytes += m.bytes;
        let p = Self::proc_index(m.dst, Unit::Cpu);
        self.procs[p]
            .queue
            .push((OVERHEAD_PRIORITY, Reverse(op), Reverse(Phase::Recv)));
        self.to_start.push(p as u32);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{Kernel, ProgramBuilder};
    use hetsim_platform::cluster::{Nic, OverheadTable, Switch};
    use hetsim_platform::machine::{Machine, MemNodeId};

    /// [`hetsim_testkit::split_duplex_node_text`]'s machine: RAM and `ngpu` GPUs on
    /// split-duplex PCIe links.
    pub fn node(ngpu: usize) -> Machine {
        let t = hetsim_testkit::split_duplex_node_text(ngpu);
        hetsim_platform::machine::from_str(&t, "n.toml").unwrap()
    }

    /// NIC figures: 5 GB/s, 2 µs; crossbar 0.5 µs.
    pub const NIC_BW: f64 = 5e9;
    /// See [`NIC_BW`].
    pub const NIC_LAT: f64 = 2e-6;
    /// See [`NIC_BW`].
    pub const SW_LAT: f64 = 0.5e-6;

    pub fn cluster(nodes: u32, ngpu: u32, overheads: OverheadTable) -> Cluster {
        Cluster::single_node(node(ngpu as usize))
            .with_network(
                Nic {
                    bandwidth_bytes_per_sec: NIC_BW,
                    latency_s: NIC_LAT,
                    count: 1,
                    attach: MemNodeId(0),
                },
                Switch::Crossbar { latency_s: SW_LAT },
                false,
                overheads,
            )
            .unwrap()
            .with_shape(nodes, ngpu)
            .unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-9)
    }

    #[test]
    fn internode_message_is_three_steps_plus_overheads() {
        // o_s = 3 µs, o_r = 4 µs at every size.
        let oh = OverheadTable::new(vec![(1.0, 3e-6, 4e-6)]).unwrap();
        let c = cluster(2, 2, oh);
        let mut b = ProgramBuilder::new(4);
        // rank 0 = node 0 GPU 0 → rank 2 = node 1 GPU 0, 1 MB device to device.
        b.message(Message::device(RankId(0), RankId(2), 1e6), &[]);
        let r = run(&b.build(), &c, &ExecOptions::default()).unwrap();
        // By hand: o_s 3 µs; GPU→RAM 1 µs + 1e6/10e9 = 101 µs; RAM→RAM NIC latency 2 µs +
        // switch 0.5 µs + 1e6/5e9 = 202.5 µs; RAM→GPU 101 µs; o_r 4 µs. Total 411.5 µs.
        assert!(close(r.makespan_s, 411.5e-6), "{}", r.makespan_s);
        assert_eq!(r.flows, 3);
        assert_eq!(r.messages, 1);
        assert_eq!(r.internode_bytes, 1e6);
        assert_eq!(r.intranode_bytes, 2e6);
        assert!(close(r.cpu_busy_s[0], 3e-6) && close(r.cpu_busy_s[2], 4e-6));
    }

    #[test]
    fn host_to_host_skips_pcie_and_gpu_direct_is_one_flow() {
        let c = cluster(2, 1, OverheadTable::default());
        let mut b = ProgramBuilder::new(2);
        b.message(Message::host(RankId(0), RankId(1), 1e6), &[]);
        let r = run(&b.build(), &c, &ExecOptions::default()).unwrap();
        // 2.5 µs + 200 µs.
        assert!(close(r.makespan_s, 202.5e-6), "{}", r.makespan_s);
        assert_eq!(r.flows, 1);
        let nic = c.nic().unwrap().clone();
        let gd = c
            .clone()
            .with_network(nic, c.switch().clone(), true, OverheadTable::default())
            .unwrap();
        let mut b = ProgramBuilder::new(2);
        b.message(Message::device(RankId(0), RankId(1), 1e6), &[]);
        let r = run(&b.build(), &gd, &ExecOptions::default()).unwrap();
        // One flow: latencies 1 + 2.5 + 1 µs, bottleneck 5 GB/s: 4.5 + 200 µs.
        assert!(close(r.makespan_s, 204.5e-6), "{}", r.makespan_s);
        assert_eq!(r.flows, 1);
    }

    #[test]
    fn two_gpus_share_one_nic() {
        let c = cluster(2, 2, OverheadTable::default());
        let mut b = ProgramBuilder::new(4);
        b.message(Message::device(RankId(0), RankId(2), 1e6), &[]);
        b.message(Message::device(RankId(1), RankId(3), 1e6), &[]);
        let r = run(&b.build(), &c, &ExecOptions::default()).unwrap();
        // PCIe steps are on separate links (101 µs each, in parallel); both host→host flows
        // activate together at 101 + 2.5 µs and share 5 GB/s: 2e6 / 5e9 = 400 µs; then 101 µs.
        // Total 101 + 2.5 + 400 + 101 = 604.5 µs.
        assert!(close(r.makespan_s, 604.5e-6), "{}", r.makespan_s);
    }

    #[test]
    fn kernels_queue_by_priority_then_program_order() {
        let c = cluster(1, 1, OverheadTable::default());
        let mut b = ProgramBuilder::new(1);
        let k = |n, s| Kernel::new(RankId(0), Unit::Gpu, n, s, 1.0);
        let a = b.kernel(k("a", 1.0), &[]);
        let lo = b.kernel(k("lo", 2.0), &[a]);
        let hi = b.kernel(k("hi", 3.0).with_priority(5), &[a]);
        let after_hi = b.join(&[hi]);
        let d = b.delay(RankId(0), 0.5, &[after_hi]);
        b.join(&[lo, d]);
        let r = run(&b.build(), &c, &ExecOptions::default()).unwrap();
        // a [0,1], then hi (priority 5) [1,4], then lo [4,6]; the delay ends at 4.5.
        assert_eq!(r.makespan_s, 6.0);
        assert_eq!(r.gpu_busy_s[0], 6.0);
        assert_eq!(r.kernels, 3);
        assert_eq!(r.ops, 6);
    }

    #[test]
    fn errors_before_running() {
        let single = Cluster::single_node(node(2));
        let mut b = ProgramBuilder::new(3);
        b.message(Message::device(RankId(0), RankId(2), 1.0), &[]);
        let e = run(&b.build(), &single, &ExecOptions::default()).unwrap_err();
        assert!(e.message.contains("3 ranks"), "{}", e.message);
    }
}
