//! Prints a distributed run's messages and tasks, one line per event, in the form the
//! StarPU-MPI comparison of `docs/validation/README.md` ("Tracing messages") uses: date in µs,
//! rank, what happened, and the tiles involved.
//!
//! Usage: `cargo run --release --example mpi_events -- SCENARIO [KEY=VALUE ...]`, each
//! `KEY=VALUE` being a `--set` override (`machine.nodes=2`, `scheduler.name=dmda`, ...).
//!
//! Lines: `TASK <µs> r<rank> start|end <codelet> w<worker> (row,col)...` and
//! `MSG <µs> r<from>->r<to> start|end (row,col)`, `XFER <µs> start|end m<src>->m<dst> ...`
//! (global memory node ids).

use std::fmt::Write as _;

use hetsim::runtime::{Observer, SimEvent};
use hetsim::scenario::{self, Override};
use hetsim::workload::{Handle, TaskGraph};

/// Per task, its tiles as `(row,col)` text, and per global worker its rank.
#[derive(Default)]
struct Printer {
    tiles: Vec<String>,
    handle_tiles: Vec<String>,
    worker_rank: Vec<u32>,
}

fn tiles_of(graph: &TaskGraph, t: hetsim::workload::TaskId) -> String {
    let mut s = String::new();
    for a in graph.accesses(t) {
        match graph.handle(a.handle).tile {
            Some(tile) => write!(s, " ({},{})", tile.row, tile.col).unwrap(),
            None => s.push_str(" (?)"),
        }
    }
    s
}

impl Observer for Printer {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        let us = at_s * 1e6;
        match event {
            SimEvent::RunStart { graph, layout, .. } => {
                self.tiles = graph.task_ids().map(|t| tiles_of(graph, t)).collect();
                self.handle_tiles = graph
                    .handles()
                    .iter()
                    .map(|h| match h {
                        Handle {
                            tile: Some(t),
                            node,
                            ..
                        } => format!("({},{})@r{}", t.row, t.col, node.0),
                        _ => "(?)".into(),
                    })
                    .collect();
                self.worker_rank = vec![0; layout.workers.len()];
                for (r, rank) in layout.ranks.iter().enumerate() {
                    for w in rank.workers.clone() {
                        self.worker_rank[w as usize] = r as u32;
                    }
                }
            }
            SimEvent::TaskStart {
                task,
                worker,
                codelet_name,
                ..
            } => println!(
                "TASK {us:.3} r{} start {codelet_name} w{}{}",
                self.worker_rank[worker.index()],
                worker.0,
                self.tiles[task.index()]
            ),
            SimEvent::TaskEnd { task, worker, .. } => println!(
                "TASK {us:.3} r{} end w{}{}",
                self.worker_rank[worker.index()],
                worker.0,
                self.tiles[task.index()]
            ),
            SimEvent::MessageStart {
                task,
                from_rank,
                to_rank,
                ..
            } => println!(
                "MSG {us:.3} r{from_rank}->r{to_rank} start{}",
                self.tiles[task.index()]
            ),
            SimEvent::MessageEnd {
                task,
                from_rank,
                to_rank,
                ..
            } => println!(
                "MSG {us:.3} r{from_rank}->r{to_rank} end{}",
                self.tiles[task.index()]
            ),
            SimEvent::TransferStart {
                handle,
                src,
                dst,
                kind,
                ..
            } => println!(
                "XFER {us:.3} start m{}->m{} {kind:?} {}",
                src.0,
                dst.0,
                self.handle_tiles[handle.index()]
            ),
            SimEvent::TransferEnd {
                handle, src, dst, ..
            } => println!(
                "XFER {us:.3} end m{}->m{} {}",
                src.0,
                dst.0,
                self.handle_tiles[handle.index()]
            ),
            _ => {}
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: mpi_events SCENARIO [KEY=VALUE ...]")?;
    let overrides = args
        .map(|a| Override::parse_set(&a))
        .collect::<Result<Vec<_>, _>>()?;
    let sc = scenario::load(&path, &overrides)?;
    let mut printer = Printer::default();
    let report = sc.run_observed(&mut printer)?;
    println!("MAKESPAN {:.3}", report.makespan_s * 1e3);
    Ok(())
}
