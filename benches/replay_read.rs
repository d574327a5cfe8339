//! Reading a large StarPU `tasks.rec`: a synthetic trace of a tiled Cholesky of about a million
//! tasks, written the way `starpu_fxt_tool` writes one (every field StarPU 1.4 writes for a
//! codelet task, dependencies from the tiles' last writers and readers, a `WontUse` record per
//! panel), then read into a task graph. Prints the file's size, the reading time, the tasks and
//! edges read, and the peak memory of the reading (VmHWM, reset before it).
//!
//! `cargo bench -p hetsim-benches --bench replay_read` (release profile). Optional argument
//! after `--`: the tiles per side T (default 181: 1 004 731 tasks). The file goes to the
//! system's temporary directory and is removed at the end.

use std::io::{BufWriter, Write};
use std::time::Instant;

use hetsim::workload::import::{ImportOptions, import};

mod common;
use common::vm_hwm_kb;

/// What the generator remembers per tile: its last writer, and the readers since.
#[derive(Default, Clone)]
struct Tile {
    writer: Option<u64>,
    readers: Vec<u64>,
}

struct Gen<W: Write> {
    out: W,
    tiles: Vec<Tile>,
    t: u32,
    job: u64,
    submit: u64,
    deps: Vec<u64>,
}

impl<W: Write> Gen<W> {
    fn tile(&self, m: u32, n: u32) -> usize {
        (m * (m + 1) / 2 + n) as usize
    }

    /// One codelet task: `(tile, writes)` per buffer.
    fn task(&mut self, name: &str, model: &str, prio: i64, gflop: f64, bufs: &[(usize, bool)]) {
        self.job += 1;
        self.submit += 1;
        let job = self.job;
        self.deps.clear();
        for &(tile, writes) in bufs {
            let st = &mut self.tiles[tile];
            if let Some(w) = st.writer {
                self.deps.push(w);
            }
            if writes {
                self.deps.append(&mut st.readers);
                st.writer = Some(job);
            } else {
                st.readers.push(job);
            }
        }
        self.deps.sort_unstable();
        self.deps.dedup();
        self.deps.retain(|&d| d != job);
        let worker = job % 12;
        let node = if worker < 3 { worker + 1 } else { 0 };
        let deps: Vec<String> = self.deps.iter().map(u64::to_string).collect();
        let labels = vec!["task"; deps.len()];
        let handles: Vec<String> = bufs
            .iter()
            .map(|b| format!("{:x}", 0x55aa_0000_0000u64 + 0x1000 * b.0 as u64))
            .collect();
        let modes: Vec<&str> = bufs.iter().map(|b| if b.1 { "RW" } else { "R" }).collect();
        let sizes = vec!["3686400"; bufs.len()];
        let start = job as f64 * 0.01;
        let w = &mut self.out;
        let _ = write!(
            w,
            "Name: {name}\nModel: {model}\nFile: cholesky_implicit.c\nLine: 124\nJobId: {job}\n\
             SubmitOrder: {}\nPriority: {prio}\n",
            self.submit
        );
        if !deps.is_empty() {
            let _ = write!(
                w,
                "DependsOn: {}\nDepLabels: {}\n",
                deps.join(" "),
                labels.join(" ")
            );
        }
        let _ = write!(
            w,
            "Tag: 0\nWorkerId: {worker}\nMemoryNode: {node}\nSubmitTime: {:.6}\nStartTime: {:.6}\n\
             EndTime: {:.6}\nFootprint: 24c84a50\nGFlop: {gflop:.6}\nIteration: 0\n\
             Parameters: {}\nHandles: {}\nModes: {}\nSizes: {}\nNumaNodes: {}\nMPIRank: -1\n\n",
            start,
            start + 1.0,
            start + 3.8,
            vec!["M960x960x4"; bufs.len()].join(" "),
            handles.join(" "),
            modes.join(" "),
            sizes.join(" "),
            vec!["-1"; bufs.len()].join(" ")
        );
    }

    fn wont_use(&mut self, tile: usize) {
        self.job += 1;
        self.submit += 1;
        let _ = write!(
            self.out,
            "Control: WontUse\nJobId: {}\nSubmitOrder: {}\nSubmitTime: 0.1\nHandles: {:x}\nMPIRank: -1\n\n",
            self.job,
            self.submit,
            0x55aa_0000_0000u64 + 0x1000 * tile as u64
        );
    }

    fn cholesky(&mut self) {
        let t = self.t;
        let tt = 2 * t as i64;
        for k in 0..t {
            let ki = k as i64;
            let kk = self.tile(k, k);
            self.task(
                "POTRF",
                "chol_model_potrf",
                tt - 2 * ki,
                0.295373,
                &[(kk, true)],
            );
            for m in k + 1..t {
                let mk = self.tile(m, k);
                self.task(
                    "TRSM",
                    "chol_model_trsm",
                    tt - 2 * ki - m as i64,
                    0.885657,
                    &[(kk, false), (mk, true)],
                );
            }
            self.wont_use(kk);
            for n in k + 1..t {
                let (nk, nn) = (self.tile(n, k), self.tile(n, n));
                self.task(
                    "SYRK",
                    "chol_model_syrk",
                    tt - 2 * ki - n as i64,
                    0.885657,
                    &[(nk, false), (nn, true)],
                );
                for m in n + 1..t {
                    let (mk, mn) = (self.tile(m, k), self.tile(m, n));
                    let p = tt - 2 * ki - m as i64 - n as i64;
                    self.task(
                        "GEMM",
                        "chol_model_gemm",
                        p,
                        1.769472,
                        &[(mk, false), (nk, false), (mn, true)],
                    );
                }
                self.wont_use(nk);
            }
        }
    }
}

fn main() {
    let t: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(181);
    let path = std::env::temp_dir().join(format!("hetsim-replay-read-{}.rec", std::process::id()));
    let t0 = Instant::now();
    {
        let file = std::fs::File::create(&path).expect("create the trace file");
        let mut g = Gen {
            out: BufWriter::with_capacity(1 << 20, file),
            tiles: vec![Tile::default(); (t * (t + 1) / 2) as usize],
            t,
            job: 0,
            submit: 0,
            deps: Vec::new(),
        };
        g.cholesky();
        g.out.flush().expect("write the trace file");
    }
    let write_s = t0.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    // Forget the generator's peak: measure the reading alone.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before_kb = vm_hwm_kb();
    let t1 = Instant::now();
    let imported = import(&path, &ImportOptions::default()).expect("the trace reads");
    let read_s = t1.elapsed().as_secs_f64();
    let peak_kb = vm_hwm_kb();
    let g = &imported.graph;
    println!("replay_read: synthetic Cholesky tasks.rec, T = {t}");
    println!(
        "  file         {:.1} MB (written in {write_s:.1} s)",
        bytes as f64 / 1e6
    );
    println!("  read         {read_s:.2} s");
    println!("  tasks        {}", g.num_tasks());
    println!("  edges        {}", g.num_edges());
    println!("  hints        {}", g.wont_use_hints().len());
    println!("  tasks/s      {:.3e}", g.num_tasks() as f64 / read_s);
    let mb = |k: Option<u64>| k.map_or("unknown".into(), |k| format!("{:.1} MB", k as f64 / 1e3));
    println!(
        "  peak memory  {} (VmHWM; {} before reading)",
        mb(peak_kb),
        mb(before_kb)
    );
    let _ = std::fs::remove_file(&path);
}
