//! StarPU-MPI's message rules on a tiny cluster, with dates derived by hand
//! (`crates/runtime/src/sim/messages.rs`, `docs/mpi.md` "Messages of distributed task graphs").
//!
//! The node: RAM and one GPU on its own PCIe links (6 GB/s, 10 µs each way), no CPU worker
//! used, pinned host memory at 100 µs per MiB, so a 32 MiB chunk of the suballocator costs
//! 3.2 ms. The cluster: two such nodes, NICs of 100 GB/s and 1 µs, a crossbar of 0 latency, no
//! MPI overheads. Tiles are 960 × 960 single precision (3 686 400 bytes): nine fit in a chunk.

use std::path::PathBuf;

use hetsim::cluster::{self, Cluster};
use hetsim::runtime::{FlopRate, Observer, RunConfig, SimEvent, simulate_cluster};
use hetsim::sched;
use hetsim::workload::distributed::DistributedBuilder;
use hetsim::workload::{AccessMode, Handle, NodeId, TaskGraph, TaskId};

const TILE: f64 = 960.0 * 960.0 * 4.0;
const PCIE_BW: f64 = 6e9;
const PCIE_LAT: f64 = 10e-6;
const NIC_BW: f64 = 100e9;
const NIC_LAT: f64 = 1e-6;
/// One new 32 MiB chunk of pinned RAM at 100 µs per MiB.
const CHUNK: f64 = 32.0 * 100e-6;
/// The runtime's defaults: transfer queueing, cudaMalloc, kernel queueing.
const QUEUE: f64 = 10e-6;
const MALLOC: f64 = 175e-6;
const KQ: f64 = 10e-6;
/// The GPU driver's progress call (RAM's lists, then its own) before each pass over the
/// requests it handles.
const PASS: f64 = 2e-6;
/// The GPU driver's request of each buffer of a task it took (`runtime.fetch_input_cost`).
const FETCH: f64 = 1e-6;
const GPU_RATE: f64 = 1e12;

const NODE: &str = r#"
[machine]
name = "mnode"
[[memory_nodes]]
name = "RAM"
kind = "ram"
capacity = "64 GiB"
[[memory_nodes]]
name = "GPU0"
kind = "gpu"
capacity = "8 GiB"
[[cpus]]
count = 2
model = "c"
memory = "RAM"
[[gpus]]
name = "GPU0"
model = "g"
memory = "GPU0"
[[links]]
name = "UP"
bandwidth = "6 GB/s"
latency = "10 us"
[[links]]
name = "DOWN"
bandwidth = "6 GB/s"
latency = "10 us"
[[routes]]
src = "RAM"
dst = "GPU0"
links = ["DOWN"]
[[routes]]
src = "GPU0"
dst = "RAM"
links = ["UP"]
[runtime]
pinned_alloc_per_mib = "100 us"
"#;

const CLUSTER: &str = r#"[cluster]
name = "mcluster"
node = "node.toml"
nodes = 2
[nic]
bandwidth = "100 GB/s"
latency = "1 us"
[switch]
kind = "crossbar"
latency = 0
"#;

fn cluster(name: &str) -> Cluster {
    let d: PathBuf = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("mpi_messages")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("node.toml"), NODE).unwrap();
    std::fs::write(d.join("cluster.toml"), CLUSTER).unwrap();
    cluster::load(d.join("cluster.toml")).unwrap()
}

fn tile() -> Handle {
    Handle {
        dims: Some((960, 960)),
        ..Handle::bytes(TILE as u64)
    }
}

/// Message start dates and task start dates, by task id.
#[derive(Default)]
struct Dates {
    message_start: Vec<(TaskId, f64)>,
    task_start: Vec<(TaskId, f64)>,
}

impl Observer for Dates {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        match event {
            SimEvent::MessageStart { task, .. } => self.message_start.push((*task, at_s)),
            SimEvent::TaskStart { task, .. } => self.task_start.push((*task, at_s)),
            _ => {}
        }
    }
}

/// Run `graph` with one GPU worker and no CPU worker per rank, under eager.
fn run(c: &Cluster, graph: &TaskGraph) -> Dates {
    let cfg = RunConfig {
        ncpu: Some(0),
        ncuda: Some(1),
        wont_use: false,
        ..RunConfig::default()
    };
    let kernels = FlopRate {
        cpu_flops_per_sec: 1e9,
        gpu_flops_per_sec: GPU_RATE,
    };
    let mut scheds: Vec<_> = (0..2)
        .map(|r| sched::by_name("eager", r).unwrap())
        .collect();
    let mut dates = Dates::default();
    simulate_cluster(c, 1, graph, &kernels, &mut scheds, &cfg, &mut dates).unwrap();
    dates
}

fn close(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1e-9),
        "got {got:.12e}, expected {want:.12e}"
    );
}

/// Ten tiles of node 0 read by ten tasks of node 1: ten receives into copies that have no
/// memory yet. Their buffers come out of pinned chunks of nine tiles: the first nine receives
/// are posted when the first chunk is allocated (3.2 ms), the tenth when the second is (6.4 ms),
/// and node 1's only worker, which allocates them, runs nothing before.
#[test]
fn first_receives_wait_for_their_pinned_buffer_and_block_the_worker() {
    let c = cluster("first");
    let mut b = DistributedBuilder::new(2, true).unwrap();
    let cl = b.codelet("k").unwrap();
    let xs: Vec<_> = (0..10)
        .map(|_| b.register(tile(), NodeId(0)).unwrap())
        .collect();
    let y = b.register(tile(), NodeId(1)).unwrap();
    let flops = 1e9;
    let mut tasks = Vec::new();
    for &x in &xs {
        tasks.push(
            b.insert(cl, flops, 0, &[(x, AccessMode::R), (y, AccessMode::RW)])
                .unwrap(),
        );
    }
    let g = b.build().unwrap();
    let d = run(&c, &g);
    // Every send is ready at 0 (its tile is valid in node 0's RAM, o_s = 0); a message moves
    // once its receive is posted (rendezvous), and a receive is posted once its buffer is.
    // The worker takes the first request at 0: it opens chunk 1, served at CHUNK. At CHUNK it
    // takes the next ones one by one: requests 2-9 fit in chunk 1 (served at once), request
    // 10 opens chunk 2, served at 2 CHUNK.
    assert_eq!(d.message_start.len(), 10);
    let mut starts: Vec<f64> = d.message_start.iter().map(|&(_, t)| t).collect();
    starts.sort_by(f64::total_cmp);
    for &t in &starts[..9] {
        close(t, CHUNK);
    }
    close(starts[9], 2.0 * CHUNK);
    // The nine first messages share the NIC: they arrive at CHUNK + latency + 9 tiles / BW,
    // before 2 CHUNK, so the first task is ready then, but the worker is blocked allocating
    // until 2 CHUNK. It then holds task 0: GPU room for X0 opens a chunk (cudaMalloc), Y comes
    // out of it and ends after it; the GPU's next pass submits both copies, which follow each
    // other on the RAM→GPU pair, the second's queueing paid while the first moves; its next
    // pass sees the second arrive, then the kernel is queued.
    const { assert!(CHUNK + NIC_LAT + 9.0 * TILE / NIC_BW < 2.0 * CHUNK) };
    let copy = QUEUE + PCIE_LAT + TILE / PCIE_BW;
    let first = d
        .task_start
        .iter()
        .map(|&(_, t)| t)
        .fold(f64::MAX, f64::min);
    close(
        first,
        2.0 * CHUNK + MALLOC + PASS + 2.0 * copy - QUEUE + PASS + KQ,
    );
    assert_eq!(d.task_start[0].0, tasks[0]);
}

/// A copy received into a second time (written on its owner and flushed in between) keeps its
/// buffer: the second receive is posted as soon as the reader of the first copy ends.
#[test]
fn a_second_receive_into_a_copy_reuses_its_buffer() {
    let c = cluster("second");
    let mut b = DistributedBuilder::new(2, true).unwrap();
    let cl = b.codelet("k").unwrap();
    let x = b.register(tile(), NodeId(0)).unwrap();
    let y = b.register(tile(), NodeId(1)).unwrap();
    let flops = 1e9; // 1 ms on the GPU
    let t1 = b
        .insert(cl, flops, 0, &[(x, AccessMode::R), (y, AccessMode::RW)])
        .unwrap();
    b.flush(x).unwrap();
    let w = b.insert(cl, flops, 0, &[(x, AccessMode::RW)]).unwrap();
    let t2 = b
        .insert(cl, flops, 0, &[(x, AccessMode::R), (y, AccessMode::RW)])
        .unwrap();
    let g = b.build().unwrap();
    let d = run(&c, &g);
    let at = |t: TaskId| d.task_start.iter().find(|&&(u, _)| u == t).unwrap().1;
    let kernel = flops / GPU_RATE;
    let copy = QUEUE + PCIE_LAT + TILE / PCIE_BW;
    // First message: posted at CHUNK (a new buffer), moves alone: latency + tile / BW.
    let m1 = CHUNK + NIC_LAT + TILE / NIC_BW;
    // Node 0: W writes X after the send read it, so it starts once the first message is
    // received; it fetches X to its GPU (cudaMalloc, the GPU's pass, one copy, seen in the
    // GPU's next pass).
    close(at(w), m1 + MALLOC + PASS + copy + PASS + KQ);
    // Node 1: T1 fetches X and Y to its GPU (one cudaMalloc; one pass submits both copies,
    // which move in turn, the second's queueing paid while the first moves; the next pass
    // sees the second arrive).
    let t1_start = m1 + MALLOC + PASS + 2.0 * copy - QUEUE + PASS + KQ;
    close(at(t1), t1_start);
    // Second message: its send waits for W and X's copy back to node 0's RAM, its receive
    // for T1 (the reader of the first copy), which ends at t1_start + kernel; no second
    // allocation (it would post the receive a CHUNK later). X goes back in the pass of node
    // 0's GPU after W, which sees the copy complete in its next pass.
    let x_in_ram = at(w) + kernel + PASS + copy + PASS;
    let t1_end = t1_start + kernel;
    let second = d.message_start.iter().map(|&(_, t)| t).fold(0.0, f64::max);
    close(second, x_in_ram.max(t1_end));
    // T2 fetches the new X into the GPU room X had (Y is still there) and runs: with no
    // allocation to wait for, the GPU's pass follows its thread's requests of T2's two
    // buffers, and its next pass sees the copy arrive.
    let m2 = second + NIC_LAT + TILE / NIC_BW;
    close(at(t2), m2 + 2.0 * FETCH + PASS + copy + PASS + KQ);
}
