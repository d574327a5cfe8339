//! Runtime throughput on MPI programs: operations per second of
//! `hetsim::programs::simulate_program_default` on large
//! programs, in a release build.
//!
//! - `bcast-ring`: one 1 MiB broadcast over N ranks (4 per node), MPICH's choice for a long
//!   message: binomial scatter + ring allgather, N − 1 + N(N − 1) messages, three
//!   store-and-forward flows each; the ring's messages of one step run concurrently.
//! - `bcast-binomial`: R repeated 4 KiB binomial broadcasts over N ranks (short messages).
//! - `alltoall`: every rank sends 64 KiB to every other rank at once (a big connected
//!   component for the fluid solver: every NIC is shared by many flows).
//!
//! Run: `cargo bench -p hetsim-benches --bench mpi_exec`. Without `--bench` (as `cargo test --benches` runs it)
//! the sizes are small.

use std::time::Instant;

use hetsim::analytic::loggp::BcastAlgorithm;
use hetsim::cluster::{Cluster, Nic, OverheadTable, Switch};
use hetsim::machine::MemNodeId;
use hetsim::mpi::collective::{Bcast, Selection, bcast};
use hetsim::mpi::{Buffer, Message, Program, ProgramBuilder, RankId};
use hetsim::programs::simulate_program_default as run;

fn cluster(nodes: u32) -> Cluster {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../calibration/h100-sxm-8x.toml"
    );
    let node = hetsim::machine::load(path).expect("node file");
    Cluster::single_node(node)
        .with_network(
            Nic {
                bandwidth_bytes_per_sec: 25e9,
                latency_s: 1e-6,
                count: 1,
                attach: MemNodeId(0),
            },
            Switch::FatTree {
                nodes_per_leaf: 32,
                oversubscription: 2.0,
                latency_s: 0.1e-6,
            },
            false,
            OverheadTable::new(vec![(1.0, 2e-6, 2e-6), (1048576.0, 20e-6, 20e-6)]).unwrap(),
        )
        .unwrap()
        .with_shape(nodes, 4)
        .unwrap()
}

fn bcasts(ranks: u32, bytes: f64, alg: Selection<BcastAlgorithm>, repeat: u32) -> Program {
    let group: Vec<RankId> = (0..ranks).map(RankId).collect();
    let mut b = ProgramBuilder::new(ranks);
    let mut ready: Vec<Option<hetsim::mpi::OpId>> = vec![None; ranks as usize];
    for i in 0..repeat {
        let spec = Bcast {
            group: &group,
            root: (i % ranks) as usize,
            bytes,
            buffer: Buffer::Device,
            algorithm: alg,
        };
        let h = bcast(&mut b, &spec, &ready);
        ready = h.into_iter().map(Some).collect();
    }
    b.build()
}

fn alltoall(ranks: u32, bytes: f64) -> Program {
    let mut b = ProgramBuilder::new(ranks);
    for s in 0..ranks {
        for d in 0..ranks {
            if s != d {
                b.message(Message::device(RankId(s), RankId(d), bytes), &[]);
            }
        }
    }
    b.build()
}

fn measure(name: &str, nodes: u32, p: &Program) {
    let c = cluster(nodes);
    let t = Instant::now();
    let r = run(p, &c).expect("run");
    let wall = t.elapsed().as_secs_f64();
    let ops = p.ops().len();
    println!(
        "{name:16} nodes {nodes:4} ranks {:5} messages {:8} operations {:9} \
         simulated {:.6} s  wall {:.3} s  {:.0} operations/s",
        p.ranks(),
        r.cluster.as_ref().map_or(0, |c| c.messages),
        ops,
        r.makespan_s,
        wall,
        ops as f64 / wall
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (big, rep, a2a) = if full { (256, 64, 64) } else { (4, 2, 4) };
    measure(
        "bcast-ring",
        big,
        &bcasts(4 * big, 1048576.0, Selection::Mpich, 1),
    );
    measure(
        "bcast-binomial",
        big,
        &bcasts(
            4 * big,
            4096.0,
            Selection::Forced(BcastAlgorithm::Binomial),
            rep,
        ),
    );
    measure("alltoall", a2a, &alltoall(4 * a2a, 65536.0));
}
