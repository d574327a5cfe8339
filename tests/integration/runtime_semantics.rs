//! The runtime on small machines: timelines computed by hand from the documented semantics
//! (allocation, queueing, serialised transfers, kernels, final write-back), invariants checked on
//! every event of real runs, determinism, and the eviction-deadlock diagnosis.

use crate::common::assert_close;
use std::collections::BTreeMap;

use hetsim::machine::{self, Machine};
use hetsim::runtime::{
    FlopRate, Observer, RunConfig, SimEvent, WorkerId, simulate, simulate_observed,
};
use hetsim::sched;
use hetsim::workload::{
    self, Access, AccessMode, CodeletId, Handle, HandleId, Precision, TaskGraph, TaskGraphBuilder,
    TaskId,
};

const NB: u64 = 960;
/// One single-precision 960×960 tile.
const TILE: f64 = (NB * NB * 4) as f64;
const BW: f64 = 6e9;
const LAT: f64 = 10e-6;
const QUEUE: f64 = 10e-6;
const MALLOC: f64 = 175e-6;
/// Queueing a task to a GPU once its inputs are there (`runtime.kernel_queue`).
const KQ: f64 = 10e-6;
/// A worker's request of each buffer of a task it popped (`runtime.fetch_input_cost`).
const FETCH: f64 = 1e-6;
/// Pushing a task (`runtime.push`): the releasing driver's thread sleeps it before it goes back
/// to its own requests.
const PUSH: f64 = 1e-6;
/// Submitting a task (`runtime.submit_cost`).
const SUBMIT: f64 = 1e-6;
/// A GPU driver's progress call before it reads the request lists it handles: 1 µs for RAM's
/// and 1 µs for its own (`___starpu_datawizard_progress` in SimGrid builds).
const PASS: f64 = 2e-6;
const GPU_RATE: f64 = 1e12;
const CPU_RATE: f64 = 1e10;

/// RAM and `ngpu` GPUs, each GPU behind its own PCIe links plus one shared host link, as
/// StarPU's flat platforms (sirocco) are; GPU↔GPU copies are staged through RAM.
fn machine(ngpu: usize, gpu_capacity_bytes: u64) -> Machine {
    let mut t = String::from(
        "[machine]\nname = \"test\"\n\
         [[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\ncapacity = \"64 GiB\"\n",
    );
    for g in 0..ngpu {
        t += &format!(
            "[[memory_nodes]]\nname = \"GPU{g}\"\nkind = \"gpu\"\ncapacity = \"{gpu_capacity_bytes} B\"\n"
        );
    }
    t += "[[cpus]]\ncount = 8\nmodel = \"cpu\"\nmemory = \"RAM\"\n";
    for g in 0..ngpu {
        t += &format!("[[gpus]]\nname = \"GPU{g}\"\nmodel = \"gpu\"\nmemory = \"GPU{g}\"\n");
    }
    t += &format!("[[links]]\nname = \"Host\"\nbandwidth = \"{BW} B/s\"\nlatency = 0\n");
    for g in 0..ngpu {
        t += &format!(
            "[[links]]\nname = \"RAM-GPU{g}\"\nbandwidth = \"{BW} B/s\"\nlatency = \"{LAT} s\"\n\
             [[links]]\nname = \"GPU{g}-RAM\"\nbandwidth = \"{BW} B/s\"\nlatency = \"{LAT} s\"\n\
             [[routes]]\nsrc = \"RAM\"\ndst = \"GPU{g}\"\nlinks = [\"RAM-GPU{g}\", \"Host\"]\n\
             [[routes]]\nsrc = \"GPU{g}\"\ndst = \"RAM\"\nlinks = [\"GPU{g}-RAM\", \"Host\"]\n"
        );
    }
    machine::from_str(&t, "test-machine.toml").expect("test machine is valid")
}

/// [`machine`] with 1 GiB GPUs and the `[runtime]` settings `runtime_toml` (a scenario's
/// `[runtime]` table) replacing the defaults.
fn machine_with_runtime(ngpu: usize, runtime_toml: &str) -> Machine {
    let mut m = machine(ngpu, 1 << 30);
    let raw: machine::format::RawRuntime = toml::from_str(runtime_toml).unwrap();
    m.override_runtime(&raw).unwrap();
    m
}

const KERNELS: FlopRate = FlopRate {
    cpu_flops_per_sec: CPU_RATE,
    gpu_flops_per_sec: GPU_RATE,
};

fn gpu_only(ngpu: u32) -> RunConfig {
    RunConfig {
        ncpu: Some(0),
        ncuda: Some(ngpu),
        ..RunConfig::default()
    }
}

/// One copy of one tile alone on its pair: queueing, then route latency, then the tile at the
/// link bandwidth.
const COPY: f64 = QUEUE + LAT + TILE / BW;

#[test]
fn one_gemm_on_one_gpu_by_hand() {
    let m = machine(1, 1 << 30);
    let g = workload::gemm(NB, NB, Precision::Single).unwrap();
    assert_eq!(g.num_tasks(), 1);
    let mut s = sched::by_name("eager", 1).unwrap();
    let r = simulate(&m, &g, &KERNELS, s.as_mut(), &gpu_only(1)).unwrap();
    // First the program partitions A, B and C (xgemm.c: the whole matrix, then its one block,
    // each acquired by an internal task submitted and pushed): 6 × 2 µs.
    assert_eq!(g.startup_acquires(), 6);
    let startup = 6.0 * (SUBMIT + PUSH);
    // Three allocations in order: the first opens a 32 MiB chunk (one cudaMalloc, 175 µs),
    // the next two (3.7 MB each) come out of it for free but end after the first; then the
    // copies of A and B one after the other on the (RAM, GPU0) pair (the only task of a C
    // tile writes C without reading it, as xgemm.c's first task does), and the kernel is
    // queued to the GPU (10 µs). GPU0's thread submits both copies in its next pass (after
    // its progress call), sleeping 10 µs of queueing for each in turn: B's is over while A
    // moves, so B follows A at once. The driver sees B arrive in its next pass (its progress
    // call, nothing left to submit) and only then queues the kernel.
    let inputs_ready = startup + MALLOC + PASS + 2.0 * COPY - QUEUE + PASS;
    let kernel = g.tasks()[0].flops() / GPU_RATE;
    assert_close(r.makespan_s, inputs_ready + KQ + kernel, 1e-9);
    // C was written on the GPU: xgemm.c's `starpu_data_wont_use(C)` sends it back to RAM
    // once the task ends. The hint's acquire has two internal tasks, pushed by GPU0's thread
    // (1 µs each), which then makes its pass; its pass after the copy sees it complete.
    assert_close(
        r.end_with_writeback_s,
        inputs_ready + KQ + kernel + 2.0 * PUSH + PASS + COPY + PASS,
        1e-9,
    );
    assert_eq!(r.transfers, 3);
    assert_eq!(r.allocations, 1);
    assert_close(r.bytes_transferred, 3.0 * TILE, 1e-9);
    assert_close(r.fetch_bytes, 2.0 * TILE, 1e-9);
    assert_close(r.writeback_bytes, TILE, 1e-9);
    // The shared host link carried all three copies.
    let host = r.links.iter().find(|l| l.name == "Host").unwrap();
    assert_close(host.bytes, 3.0 * TILE, 1e-9);
}

/// `runtime.transfer_cost = false` (StarPU's `STARPU_SIMGRID_TRANSFER_COST=0`): the same run,
/// every copy done the instant it starts, with no queueing and no link used.
#[test]
fn free_transfers_take_no_time_by_hand() {
    let m = machine_with_runtime(1, "transfer_cost = false");
    let g = workload::gemm(NB, NB, Precision::Single).unwrap();
    let mut s = sched::by_name("eager", 1).unwrap();
    let r = simulate(&m, &g, &KERNELS, s.as_mut(), &gpu_only(1)).unwrap();
    let kernel = g.tasks()[0].flops() / GPU_RATE;
    // Only the startup acquisitions (as above), the allocation, GPU0's pass over its requests
    // (the driver's progress call is not a transfer cost; the copies complete within that
    // pass, which sees them) and the kernel's queueing are left before the kernel; C's
    // write-back (the `wont_use` hint's, as above) ends at GPU0's next pass.
    let startup = f64::from(g.startup_acquires()) * (SUBMIT + PUSH);
    assert_close(r.makespan_s, startup + MALLOC + PASS + KQ + kernel, 1e-9);
    assert_close(
        r.end_with_writeback_s,
        startup + MALLOC + PASS + KQ + kernel + 2.0 * PUSH + PASS,
        1e-9,
    );
    assert_eq!(r.transfers, 3);
    let host = r.links.iter().find(|l| l.name == "Host").unwrap();
    assert_eq!(host.bytes, 0.0);
}

#[test]
fn two_by_two_cholesky_on_one_gpu_by_hand() {
    let m = machine(1, 1 << 30);
    let g = workload::cholesky(2 * NB, NB, Precision::Single).unwrap();
    assert_eq!(g.num_tasks(), 4);
    let mut s = sched::by_name("eager", 1).unwrap();
    // Without the example's `starpu_data_wont_use` hints: with them, A00 goes back to RAM at
    // idle priority right after potrf(0,0), sharing the host link with A10's copy (that rule
    // is tested in `runtime::sim::tests`); this derivation is of the fetch path alone.
    let cfg = RunConfig {
        wont_use: false,
        ..gpu_only(1)
    };
    let r = simulate(&m, &g, &KERNELS, s.as_mut(), &cfg).unwrap();
    // A chain potrf(0,0) → trsm(1,0) → syrk(1,1) → potrf(1,1). Each of the first three
    // allocates one new tile and copies it in; only the first allocation opens a chunk
    // (175 µs), the other tiles come out of it. The last finds A11 in place. trsm and syrk
    // are queued to the GPU (10 µs) once their inputs are there; the two potrfs are
    // synchronous (StarPU's SimGrid `cl_potrf` lacks `STARPU_CUDA_ASYNC`) and are not.
    // Requesting a buffer costs the worker 1 µs: hidden behind the copies of the first three,
    // it delays the last potrf, whose tile is in place, by 1 µs. Each copy waits for GPU0's
    // next pass; for trsm and syrk, that comes after the thread is done pushing the task it
    // released (1 µs) and requesting the task's two buffers (2 µs). The driver sees each copy
    // arrive in the pass after it (one more progress call) before it runs or queues the task.
    let d: Vec<f64> = g.tasks().iter().map(|t| t.flops() / GPU_RATE).collect();
    let names: Vec<&str> = g.task_ids().map(|t| g.task_codelet_name(t)).collect();
    assert_eq!(
        names,
        [
            "chol_model_potrf",
            "chol_model_trsm",
            "chol_model_syrk",
            "chol_model_potrf"
        ]
    );
    let busy = PUSH.max(2.0 * FETCH);
    // Before potrf(0,0) the example partitions its matrix (the whole, then its 2 blocks: 3
    // acquisitions, each an internal task submitted and pushed).
    assert_eq!(g.startup_acquires(), 3);
    let startup = 3.0 * (SUBMIT + PUSH);
    let makespan = startup
        + MALLOC
        + 3.0 * (2.0 * PASS + COPY)
        + 2.0 * busy
        + 2.0 * KQ
        + FETCH
        + d.iter().sum::<f64>();
    assert_close(r.makespan_s, makespan, 1e-9);
    // All three tiles were modified on the GPU: three write-backs, submitted together in
    // GPU0's pass after the end and moving one after the other; the queueing of the second
    // and third is paid while the first moves; GPU0's next pass sees the last complete.
    assert_close(
        r.end_with_writeback_s,
        makespan + PASS + 3.0 * COPY - 2.0 * QUEUE + PASS,
        1e-9,
    );
    assert_eq!(r.writebacks, 3);
}

#[test]
fn staged_gpu_to_gpu_copy_goes_through_ram() {
    // Task a writes a tile on one GPU; task b reads it on the other (no peer route).
    let m = machine(2, 1 << 30);
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let h = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    b.submit(cl, 1e9, 0, &[Access::new(h, AccessMode::W)])
        .unwrap();
    b.submit(cl, 1e9, 0, &[Access::new(h, AccessMode::R)])
        .unwrap();
    let g = b.build().unwrap();
    // A scheduler that puts task i on worker i.
    struct Fixed(Vec<Option<TaskId>>);
    impl sched::Scheduler for Fixed {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn push(&mut self, t: TaskId, _: &hetsim::runtime::View<'_>, _: &mut Vec<sched::Decision>) {
            self.0[t.index()] = Some(t);
        }
        fn pop(&mut self, w: WorkerId, _: &hetsim::runtime::View<'_>) -> Option<TaskId> {
            self.0.get_mut(w.index()).and_then(Option::take)
        }
        fn queued(&self) -> usize {
            self.0.iter().flatten().count()
        }
    }
    let mut s = Fixed(vec![None, None]);
    let r = simulate(&m, &g, &KERNELS, &mut s, &gpu_only(2)).unwrap();
    let k = 1e9 / GPU_RATE;
    // a: popped at GPU0's first pop (each driver starts awake: one progress call, PASS),
    // allocate (no copy, write-only), queue, run. b: allocated at start (its worker popped
    // it when it became ready, after a; GPU1 opens its own chunk), then GPU0 → RAM (in
    // GPU0's pass, seen complete in its next one) → GPU1 (in GPU1's, seen in its next one),
    // queue, run.
    assert_close(
        r.makespan_s,
        PASS + MALLOC + KQ + k + MALLOC + 2.0 * (PASS + COPY + PASS) + KQ + k,
        1e-9,
    );
    assert_eq!(
        r.transfers, 2,
        "staged copy is two transfers; RAM is then valid"
    );
    assert_eq!(r.writebacks, 0);
}

/// A synchronous GPU codelet (no `STARPU_CUDA_ASYNC`): the CUDA driver runs it on its own
/// thread, so it is not queued (no 10 µs) and the GPU pops nothing while it holds it
/// (`pipeline_stuck`). One GPU, eager; S (synchronous) writes X (allocated, nothing copied),
/// 1 ms; B (asynchronous, independent) reads tile T from RAM, 1 ms. By hand:
/// - the GPU pops S at its first pop, after one progress call (PASS: it starts awake), S
///   allocates X (a new chunk, 175 µs) and starts at once: PASS + MALLOC + k;
/// - B is popped only when S ends; T comes out of the chunk for free and is requested by the
///   driver (FETCH), copied in its next pass (PASS + COPY), seen in the pass after (PASS),
///   and B is queued (KQ): makespan PASS + MALLOC + k + FETCH + 2 PASS + COPY + KQ + k.
///
/// With `run.gpu_sync = false` S is an ordinary task: it is queued (KQ), and B is popped as
/// soon as S has its inputs, so T's copy hides under S: PASS + MALLOC + KQ + k + k.
#[test]
fn a_synchronous_gpu_codelet_stalls_the_pipeline() {
    let m = machine(1, 1 << 30);
    let mut b = TaskGraphBuilder::new();
    let s = b.codelet("s").unwrap();
    b.gpu_synchronous(s);
    let a = b.codelet("a").unwrap();
    let x = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let t = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    b.submit(s, 1e9, 0, &[Access::new(x, AccessMode::W)])
        .unwrap();
    b.submit(a, 1e9, 0, &[Access::new(t, AccessMode::R)])
        .unwrap();
    let g = b.build().unwrap();
    let k = 1e9 / GPU_RATE;
    let run = |gpu_sync| {
        let mut sc = sched::by_name("eager", 1).unwrap();
        let cfg = RunConfig {
            gpu_sync,
            ..gpu_only(1)
        };
        simulate(&m, &g, &KERNELS, sc.as_mut(), &cfg).unwrap()
    };
    assert_close(
        run(true).makespan_s,
        PASS + MALLOC + k + FETCH + 2.0 * PASS + COPY + KQ + k,
        1e-9,
    );
    assert_close(run(false).makespan_s, PASS + MALLOC + KQ + k + k, 1e-9);
}

/// Checks every event of a run against the runtime's invariants.
#[derive(Default)]
pub(crate) struct Invariants {
    capacity: Vec<u64>,
    preds: BTreeMap<u32, Vec<u32>>,
    started: BTreeMap<u32, f64>,
    ended: BTreeMap<u32, f64>,
    running: BTreeMap<u32, u32>,
    last_write: BTreeMap<u32, (f64, u32)>,
    ram_versions: BTreeMap<u32, u32>,
    written: BTreeMap<u32, u32>,
    pub(crate) events: u64,
    pub(crate) fingerprint: u64,
    writes: Vec<Vec<u32>>,
}

impl Invariants {
    fn new(m: &Machine, g: &TaskGraph) -> Self {
        let mut preds: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for t in g.task_ids() {
            for &s in g.successors(t) {
                preds.entry(s.0).or_default().push(t.0);
            }
        }
        Invariants {
            capacity: m.memory_nodes().iter().map(|n| n.capacity_bytes).collect(),
            preds,
            writes: g
                .task_ids()
                .map(|t| {
                    g.accesses(t)
                        .iter()
                        .filter(|a| a.mode.writes())
                        .map(|a| a.handle.0)
                        .collect()
                })
                .collect(),
            ..Default::default()
        }
    }
}

impl Observer for Invariants {
    fn event(&mut self, at: f64, e: &SimEvent<'_>) {
        self.events += 1;
        self.fingerprint = self
            .fingerprint
            .wrapping_mul(0x100000001b3)
            .wrapping_add(at.to_bits() ^ format!("{e:?}").len() as u64);
        match *e {
            SimEvent::TaskStart {
                task,
                worker,
                reads,
                ..
            } => {
                assert!(
                    self.started.insert(task.0, at).is_none(),
                    "task {} started twice",
                    task.0
                );
                for p in self.preds.get(&task.0).into_iter().flatten() {
                    let end = self.ended.get(p).copied();
                    assert!(
                        end.is_some_and(|e| e <= at),
                        "task {} started at {at} before its predecessor {p} ended ({end:?})",
                        task.0
                    );
                }
                assert!(
                    self.running.insert(worker.0, task.0).is_none(),
                    "worker {} runs two tasks at once",
                    worker.0
                );
                for &(h, have, latest) in reads {
                    assert_eq!(
                        have, latest,
                        "task {} reads version {have} of handle {}, latest is {latest}",
                        task.0, h.0
                    );
                }
            }
            SimEvent::TaskEnd { task, worker, node } => {
                assert_eq!(self.running.remove(&worker.0), Some(task.0));
                self.ended.insert(task.0, at);
                for &h in &self.writes[task.index()] {
                    let v = self.written.entry(h).or_insert(0);
                    *v += 1;
                    self.last_write.insert(h, (at, *v));
                    if node.0 == 0 {
                        // Written in RAM itself.
                        self.ram_versions.insert(h, *v);
                    }
                }
            }
            SimEvent::Allocate {
                node, used_bytes, ..
            } => {
                assert!(
                    used_bytes <= self.capacity[node.index()],
                    "node {} uses {used_bytes} > capacity {}",
                    node.0,
                    self.capacity[node.index()]
                );
            }
            SimEvent::TransferEnd {
                handle,
                dst,
                version,
                ..
            } if dst.0 == 0 => {
                let v = self.ram_versions.entry(handle.0).or_insert(0);
                *v = (*v).max(version);
            }
            // Transfer starts, and the events added to the stream since (it is non-exhaustive).
            _ => {}
        }
    }
}

fn check_run(
    m: &Machine,
    g: &TaskGraph,
    sched_name: &str,
    config: &RunConfig,
) -> (hetsim::runtime::RunReport, Invariants) {
    let (r, inv) = run_observed(m, g, sched_name, config, &KERNELS).unwrap();
    assert_invariants(g, &r, &inv);
    (r, inv)
}

/// Run under `sched_name` with the invariants watching every event.
pub(crate) fn run_observed(
    m: &Machine,
    g: &TaskGraph,
    sched_name: &str,
    config: &RunConfig,
    kernels: &FlopRate,
) -> hetsim::Result<(hetsim::runtime::RunReport, Invariants)> {
    let mut inv = Invariants::new(m, g);
    let mut s = sched::by_name(sched_name, config.seed).unwrap();
    let r = simulate_observed(m, g, kernels, s.as_mut(), config, &mut inv)?;
    Ok((r, inv))
}

/// What must hold at the end of a run (the per-event checks run in [`Invariants`]).
pub(crate) fn assert_invariants(g: &TaskGraph, r: &hetsim::runtime::RunReport, inv: &Invariants) {
    assert_eq!(
        inv.started.len(),
        g.num_tasks(),
        "every task ran exactly once"
    );
    assert_eq!(inv.ended.len(), g.num_tasks());
    assert!(inv.running.is_empty());
    assert_eq!(r.tasks as usize, g.num_tasks());
    // Every written handle ends valid in RAM with its last version.
    for (h, &(_, v)) in &inv.last_write {
        let in_ram = inv.ram_versions.get(h).copied().unwrap_or(0);
        assert_eq!(
            in_ram, v,
            "handle {h}: RAM holds version {in_ram}, last write is {v}"
        );
    }
    for w in &r.workers {
        assert_close(
            w.busy_s + w.waiting_s + w.idle_s,
            r.end_with_writeback_s,
            1e-9,
        );
    }
}

#[test]
fn invariants_hold_on_every_scheduler_and_workload() {
    let roomy = machine(2, 1 << 30);
    for kind in [
        workload::TiledAlgorithm::Cholesky,
        workload::TiledAlgorithm::Lu,
        workload::TiledAlgorithm::Gemm,
    ] {
        let g = kind.generate(6 * NB, NB, Precision::Single).unwrap();
        for name in sched::names() {
            let config = RunConfig {
                ncpu: Some(4),
                ..RunConfig::default()
            };
            check_run(&roomy, &g, name, &config);
        }
    }
}

#[test]
fn invariants_hold_under_memory_pressure_with_evictions() {
    // Each GPU holds 6 tiles (two tasks of at most 3 tiles each, so the pipeline cannot pin
    // the memory full): a 6×6-tile Cholesky (21 tiles) must evict and write back constantly.
    let tight = machine(2, 6 * TILE as u64);
    let g = workload::cholesky(6 * NB, NB, Precision::Single).unwrap();
    for name in sched::names() {
        let config = RunConfig {
            ncpu: Some(2),
            ..RunConfig::default()
        };
        let (r, _) = check_run(&tight, &g, name, &config);
        assert!(r.evictions > 0, "{name}: expected evictions");
        for mem in r.memory.iter().filter(|m| m.name != "RAM") {
            assert!(mem.peak_used_bytes <= mem.capacity_bytes);
        }
    }
}

#[test]
fn less_gpu_memory_means_more_traffic() {
    let g = workload::cholesky(8 * NB, NB, Precision::Single).unwrap();
    let run = |cap: u64| {
        let m = machine(2, cap);
        let mut s = sched::by_name("eager", 1).unwrap();
        simulate(&m, &g, &KERNELS, s.as_mut(), &gpu_only(2)).unwrap()
    };
    let roomy = run(1 << 30);
    let tight = run(6 * TILE as u64);
    assert_eq!(roomy.evictions, 0);
    assert!(tight.evictions > 0);
    assert!(
        tight.bytes_transferred > roomy.bytes_transferred,
        "tight {} vs roomy {}",
        tight.bytes_transferred,
        roomy.bytes_transferred
    );
}

#[test]
fn same_seed_same_run_and_seeds_matter_for_random() {
    let m = machine(2, 1 << 30);
    let g = workload::cholesky(6 * NB, NB, Precision::Single).unwrap();
    let config = |seed| RunConfig {
        seed,
        ncpu: Some(4),
        ..RunConfig::default()
    };
    let (a, ia) = check_run(&m, &g, "random", &config(7));
    let (b, ib) = check_run(&m, &g, "random", &config(7));
    assert_eq!(a, b);
    assert_eq!((ia.events, ia.fingerprint), (ib.events, ib.fingerprint));
    let (c, ic) = check_run(&m, &g, "random", &config(8));
    assert!(
        ic.fingerprint != ia.fingerprint || c != a,
        "a different seed should give a different random schedule"
    );
}

/// What used to deadlock cannot any more: a GPU pops a task only when the tasks it holds have
/// all their inputs (StarPU's driver pops only when no task is transferring), so the task it
/// runs is never waiting for memory held by a task behind it. GPU memory holds 4 tiles;
/// t0 writes D, E, F; t1 reads A, B, C; t2 reads D, E, F. By hand:
/// - t0 allocates D, E, F and runs; t1 is popped then and gets A, then waits (D, E, F are
///   pinned by t0);
/// - t0 ends: B and C take the room of D and E, which hold the only valid copies: two
///   write-backs, two evictions; t1 runs;
/// - t2 is popped once t1 has its inputs; F is still there, D and E come back in place of A
///   and B (clean, once t1 is done): two more evictions; t2 runs; F goes back at the end.
///
/// (Before this rule the GPU held t2 while t1 waited, t2 pinned D, E, F, and nothing could
/// progress; the runtime still diagnoses such a state rather than hang, should it arise.)
#[test]
fn one_fetch_at_a_time_leaves_no_eviction_deadlock() {
    let m = machine(1, 4 * TILE as u64);
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let h: Vec<_> = (0..6)
        .map(|_| b.add_handle(Handle::bytes(TILE as u64)).unwrap())
        .collect();
    let acc = |ids: &[usize], mode| {
        ids.iter()
            .map(|&i| Access::new(h[i], mode))
            .collect::<Vec<_>>()
    };
    b.submit(cl, 1e9, 0, &acc(&[3, 4, 5], AccessMode::W))
        .unwrap();
    b.submit(cl, 1e9, 0, &acc(&[0, 1, 2], AccessMode::R))
        .unwrap();
    b.submit(cl, 1e9, 0, &acc(&[3, 4, 5], AccessMode::R))
        .unwrap();
    let g = b.build().unwrap();
    let mut s = sched::by_name("eager", 1).unwrap();
    let r = simulate(&m, &g, &KERNELS, s.as_mut(), &gpu_only(1)).unwrap();
    assert_eq!(r.evictions, 4);
    // D and E written back to make room, F at the end.
    assert_eq!(r.writebacks, 3);
    // A, B, C in; D, E out; D, E in again; F out.
    assert_eq!(r.transfers, 8);
}

#[test]
fn a_task_too_big_for_every_device_is_refused_before_the_run() {
    let m = machine(1, 2 * TILE as u64);
    let g = workload::gemm(NB, NB, Precision::Single).unwrap();
    let mut s = sched::by_name("eager", 1).unwrap();
    let err = simulate(&m, &g, &KERNELS, s.as_mut(), &gpu_only(1)).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("more than the memory"), "{err}");
}

#[test]
fn a_codelet_without_model_is_an_unknown_kernel() {
    let m = machine(1, 1 << 30);
    let g = workload::gemm(NB, NB, Precision::Single).unwrap();
    let none = FlopRate {
        cpu_flops_per_sec: 0.0,
        gpu_flops_per_sec: 0.0,
    };
    let mut s = sched::by_name("eager", 1).unwrap();
    let err = simulate(&m, &g, &none, s.as_mut(), &RunConfig::default()).unwrap_err();
    assert!(err.to_string().contains("unknown kernel"), "{err}");
    assert!(err.to_string().contains("starpu_sgemm_gemm"), "{err}");
}

#[test]
fn dmda_bookkeeping_never_goes_negative_and_drains_on_real_runs() {
    // Queued and pipeline lengths are asserted non-negative at every step inside the policy
    // (StarPU issue #6 was this bookkeeping going wrong); here they must also return to zero.
    use hetsim::sched::{Dmda, Params, Variant};
    let m = machine(2, 6 * TILE as u64);
    for kind in [
        workload::TiledAlgorithm::Cholesky,
        workload::TiledAlgorithm::Lu,
    ] {
        let g = kind.generate(6 * NB, NB, Precision::Single).unwrap();
        for v in [
            Variant::Dm,
            Variant::Dmda,
            Variant::Dmdap,
            Variant::Dmdar,
            Variant::Dmdas,
            Variant::Dmdasd,
        ] {
            let mut s = Dmda::new(v, Params::default());
            let config = RunConfig {
                ncpu: Some(3),
                ..RunConfig::default()
            };
            let r = simulate(&m, &g, &KERNELS, &mut s, &config).unwrap();
            assert_eq!(r.tasks as usize, g.num_tasks());
            s.check_drained();
        }
    }
}

/// StarPU's `starpu_memchunk_tidy` (`runtime.min_clean_pct`, `target_clean_pct`): once fewer
/// than ⌊chunks·5/100⌋ of a GPU's chunks are clean, its least recently used dirty chunks are
/// written back at idle priority until ⌊chunks·10/100⌋ are. 80 independent tasks each write a
/// tile of their own on one GPU (pipeline depth 2). By hand: when task k (from 1) ends, the GPU
/// holds the k tiles written so far, dirty, and the chunk of the next task, popped and allocated
/// while task k ran, clean: 1 ≥ ⌊(k + 1)·5/100⌋ until k = 39, when 1 < ⌊40·5/100⌋ = 2. Then
/// the 3 oldest dirty tiles (tasks 0, 1, 2) are written back until ⌊40·10/100⌋ = 4 are clean,
/// one after the other (one idle request at a time per pair), the first as task 39 ends. With
/// `min_clean_pct = 0` nothing is written back before the run's final write-back.
#[test]
fn dirty_chunks_are_tidied_back_to_ram_ahead_of_need() {
    #[derive(Default)]
    struct Seen {
        ends: Vec<f64>,
        write_backs: Vec<(f64, u32)>,
    }
    impl hetsim::runtime::Observer for Seen {
        fn event(&mut self, at: f64, e: &SimEvent<'_>) {
            match e {
                SimEvent::TransferStart {
                    kind: hetsim::runtime::TransferKind::WriteBack,
                    handle,
                    ..
                } => self.write_backs.push((at, handle.0)),
                SimEvent::TaskEnd { .. } => self.ends.push(at),
                _ => {}
            }
        }
    }
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    for _ in 0..80 {
        let h = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
        b.submit(cl, 1e9, 0, &[Access::new(h, AccessMode::W)])
            .unwrap();
    }
    let g = b.build().unwrap();
    let run = |min_clean_pct: &str| {
        let m = machine_with_runtime(1, &format!("min_clean_pct = {min_clean_pct}"));
        let mut seen = Seen::default();
        let mut s = sched::by_name("eager", 1).unwrap();
        let r = simulate_observed(&m, &g, &KERNELS, s.as_mut(), &gpu_only(1), &mut seen).unwrap();
        assert_eq!(r.writebacks, 80, "every tile reaches RAM once");
        seen
    };
    let tidied = run("5");
    let end_39 = tidied.ends[38];
    let early: Vec<u32> = tidied
        .write_backs
        .iter()
        .filter(|&&(t, _)| t < tidied.ends[40])
        .map(|&(_, h)| h)
        .collect();
    assert_eq!(early, [0, 1, 2], "the three oldest dirty tiles");
    let w0 = tidied.write_backs[0].0;
    assert!(
        w0 >= end_39 && w0 < tidied.ends[39],
        "first write-back at {w0}"
    );
    let untidied = run("0");
    let last_end = *untidied.ends.last().unwrap();
    assert!(
        untidied.write_backs.iter().all(|&(t, _)| t >= last_end),
        "{last_end} {:?}",
        &untidied.write_backs[..4]
    );
}

/// dmda requests a task's prefetches inside its push, as StarPU's `push_task_on_best_worker`
/// does (`starpu_prefetch_task_input_for`), so the next push of the same instant already sees
/// that data as on its way. Two GPUs; tasks 0 and 1, ready at once, read their own tile A0 / A1
/// and a shared tile B. By hand, with StarPU's estimate (latency + 2·2 GPUs·size/bandwidth =
/// 10 µs + 4·0.6144 ms = 2.4676 ms per tile) and 1 ms kernels: task 0 ties on both GPUs (two
/// tiles, ends at 5.935 ms) and goes to GPU0, which books 5.935 ms. Task 1 on GPU0 needs only A1
/// (B is requested there): it ends at 5.935 + 1 = 6.935 ms, fitness (6.935 − 5.935) + 2.4676 =
/// 3.47 ms; on GPU1 it needs both tiles: ends at 5.935 ms, fitness 0 + 4.935 ms. GPU0 wins.
/// Had B not been seen as requested, GPU0's fitness would be 1 + 4.935 ms and GPU1 would win.
#[test]
fn dmda_sees_the_prefetches_of_earlier_pushes_of_the_same_instant() {
    let m = machine(2, 1 << 30);
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let tile = || Handle::bytes(TILE as u64);
    let (a0, a1, shared) = (
        b.add_handle(tile()).unwrap(),
        b.add_handle(tile()).unwrap(),
        b.add_handle(tile()).unwrap(),
    );
    for a in [a0, a1] {
        b.submit(
            cl,
            1e9,
            0,
            &[
                Access::new(a, AccessMode::R),
                Access::new(shared, AccessMode::R),
            ],
        )
        .unwrap();
    }
    let g = b.build().unwrap();
    let mut s = sched::by_name("dmda", 1).unwrap();
    let r = simulate(&m, &g, &KERNELS, s.as_mut(), &gpu_only(2)).unwrap();
    let tasks: Vec<u64> = r.workers.iter().map(|w| w.tasks).collect();
    assert_eq!(tasks, [2, 0], "both tasks on GPU0: {:?}", r.workers);
    // Three tiles moved (A0, B, A1), none twice.
    assert_eq!(r.transfers, 3);
}

/// Every task start: (task, worker, date).
#[derive(Default)]
struct TaskStarts(Vec<(u32, u32, f64)>);

impl hetsim::runtime::Observer for TaskStarts {
    fn event(&mut self, at: f64, e: &SimEvent<'_>) {
        if let SimEvent::TaskStart { task, worker, .. } = e {
            self.0.push((task.0, worker.0, at));
        }
    }
}

/// The start date of each task of `g`, in task order, run under `sched` on `ncpu` CPU workers
/// of the test machine with `runtime_toml` as its `[runtime]`.
fn cpu_start_dates(g: &TaskGraph, sched: &str, runtime_toml: &str, ncpu: u32) -> Vec<f64> {
    let m = machine_with_runtime(1, runtime_toml);
    let config = RunConfig {
        ncpu: Some(ncpu),
        ncuda: Some(0),
        ..RunConfig::default()
    };
    let mut seen = TaskStarts::default();
    let mut s = sched::by_name(sched, 1).unwrap();
    simulate_observed(&m, g, &KERNELS, s.as_mut(), &config, &mut seen).unwrap();
    seen.0.sort_by_key(|&(t, _, _)| t);
    seen.0.iter().map(|&(_, _, at)| at).collect()
}

/// `got` holds as many dates as `want`, each equal to its counterpart to 1e-9 relative.
fn assert_dates(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?}");
    for (got, want) in got.iter().zip(want) {
        assert_close(*got, *want, 1e-9);
    }
}

/// The submitting thread (`runtime.submit_cost`, StarPU's `STARPU_SIMGRID_TASK_SUBMIT_COST`):
/// tasks reach the scheduler one after the other. By hand, three independent tasks of 100 µs on
/// two CPU workers under eager, 1 µs per submission and 1 µs per push: task 0 is submitted and
/// pushed at 0, while both workers are still on their way to their first pop (one progress
/// call, 1 µs): the first takes it at 1 µs, the second finds nothing and sleeps. Task 1 is
/// pushed at 1 + 1 = 2 µs, wakes the second worker and starts then; task 2 at 4 µs but both
/// workers are busy: it starts when task 0 ends, at 101 µs. Task 3, which needs task 0, is
/// submitted at 6 µs, pushed when task 0 ends, behind task 2, and starts when task 1 ends, at
/// 102 µs. With `submit_cost = 0` tasks 0 and 1 start at the workers' first pops, 1 µs, tasks
/// 2 and 3 at 101 µs. (Without the cost of requesting buffers, tested on its own below.)
#[test]
fn tasks_reach_the_scheduler_as_they_are_submitted() {
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let mut hs = Vec::new();
    for _ in 0..3 {
        let h = b.add_handle(Handle::bytes(1000)).unwrap();
        b.submit(cl, 1e6, 0, &[Access::new(h, AccessMode::W)])
            .unwrap();
        hs.push(h);
    }
    let h = b.add_handle(Handle::bytes(1000)).unwrap();
    b.submit(
        cl,
        1e6,
        0,
        &[
            Access::new(hs[0], AccessMode::R),
            Access::new(h, AccessMode::W),
        ],
    )
    .unwrap();
    let g = b.build().unwrap();
    let starts = |submit: &str| {
        cpu_start_dates(
            &g,
            "eager",
            &format!("submit_cost = \"{submit}\"\nfetch_input_cost = 0"),
            2,
        )
    };
    let task_s = 1e6 / CPU_RATE;
    let with = starts("1 us");
    assert_dates(
        &with,
        &[1e-6, 2e-6, task_s + 1e-6, task_s + 2e-6],
        "submit 1 µs",
    );
    let without = starts("0 us");
    assert_dates(
        &without,
        &[1e-6, 1e-6, task_s + 1e-6, task_s + 1e-6],
        "submit 0",
    );
}

/// Requesting a popped task's buffers (`runtime.fetch_input_cost`, StarPU's
/// `STARPU_SIMGRID_FETCHING_INPUT_COST`: `_starpu_fetch_task_input` sleeps 1 µs after each
/// buffer's request): a task starts no earlier than its pop plus the cost per distinct handle.
/// By hand, one CPU worker under eager, every task submitted at 0, its data in RAM: task 0
/// reads two handles and writes a third, task 1 writes one; both last 100 µs. The worker pops
/// task 0 at its first pop, after one progress call (1 µs). At 1 µs per buffer task 0 starts at
/// 1 + 3 = 4 µs and ends at 104 µs, task 1 starts at 105 µs; at 5 µs, at 16 µs and 121 µs; at
/// 0, at 1 and 101 µs.
#[test]
fn a_popped_task_waits_for_its_buffers_to_be_requested() {
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let h: Vec<_> = (0..4)
        .map(|_| b.add_handle(Handle::bytes(1000)).unwrap())
        .collect();
    b.submit(
        cl,
        1e6,
        0,
        &[
            Access::new(h[0], AccessMode::R),
            Access::new(h[1], AccessMode::R),
            Access::new(h[2], AccessMode::W),
        ],
    )
    .unwrap();
    b.submit(cl, 1e6, 0, &[Access::new(h[3], AccessMode::W)])
        .unwrap();
    let g = b.build().unwrap();
    let starts = |fetch: &str| {
        cpu_start_dates(
            &g,
            "eager",
            &format!("submit_cost = 0\nfetch_input_cost = \"{fetch}\""),
            1,
        )
    };
    let task_s = 1e6 / CPU_RATE;
    for (fetch, want) in [
        ("1 us", [4e-6, task_s + 5e-6]),
        ("5 us", [16e-6, task_s + 21e-6]),
        ("0 us", [1e-6, task_s + 1e-6]),
    ] {
        assert_dates(
            &starts(fetch),
            &want,
            &format!("fetch_input_cost = {fetch}"),
        );
    }
}

/// Woken workers pop at their own dates (`datawizard.c`: a woken driver pops after a progress
/// call that sleeps 1 µs per memory node it drives; `_starpu_push_task` pays the push cost before
/// the push wakes anyone; the releasing thread pops after its pushes). By hand, one CPU worker,
/// every task submitted at 0, 1 µs per requested buffer: task 0 writes a handle, task 1 reads it,
/// each lasts 100 µs. Task 0 is queued at 0, before the CPU's first pop (it starts awake: one
/// progress call, 1 µs), so no push wakes it: it pops task 0 at 1 µs and starts it at 2 µs.
/// - dmda, 1 µs per push: task 0 ends at 102 µs, the CPU pushes task 1 (103 µs) and pops it
///   after its progress call, at 104 µs: it starts at 105 µs;
/// - dmda, no push cost: 102 + 1 + 1 = 104 µs;
/// - eager pops at the event: at task 0's end, 102 µs, and starts task 1 at 103 µs.
#[test]
fn woken_workers_pop_at_their_own_dates() {
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let h = b.add_handle(Handle::bytes(1000)).unwrap();
    b.submit(cl, 1e6, 0, &[Access::new(h, AccessMode::W)])
        .unwrap();
    b.submit(cl, 1e6, 0, &[Access::new(h, AccessMode::R)])
        .unwrap();
    let g = b.build().unwrap();
    let task_s = 1e6 / CPU_RATE;
    for (sched, push, want) in [
        ("dmda", "1 us", [2e-6, task_s + 5e-6]),
        ("dmda", "0 us", [2e-6, task_s + 4e-6]),
        ("eager", "1 us", [2e-6, task_s + 3e-6]),
    ] {
        let runtime = format!("submit_cost = 0\npush_cost = \"{push}\"");
        let got = cpu_start_dates(&g, sched, &runtime, 1);
        assert_dates(&got, &want, &format!("{sched}, push cost {push}"));
    }
}

/// A "will not be used" hint costs what StarPU's acquire costs
/// (`starpu_data_acquire_on_node_cb_sequential_consistency_quick` submits its first task
/// internally while its writer runs; when the writer ends, the writer's worker pushes it,
/// `_starpu_data_acquire_cb_pre`, and once it ends its second, `_starpu_data_acquire_cb_release`,
/// the `quick_next` of the first): one submission on the submitting thread, two pushes on the
/// releasing worker. By hand, one CPU worker under dmda, 1 µs per submission and per push, no
/// cost per requested buffer: task A writes h (100 µs), the hint on h follows it, task B
/// writes another handle (100 µs). A is pushed at 0, before the CPU's first pop (it starts
/// awake: one progress call, 1 µs), which takes it at 1 µs; the thread is done with A by 2 µs,
/// the hint's submission takes it to 3 µs; B is pushed by 4 µs and queued behind A. A ends at
/// 101 µs; the CPU pushes the hint's two tasks (1 µs each) and pops B after its progress call,
/// at 104 µs. Without the hint: B at 102 µs.
#[test]
fn a_wont_use_hint_costs_a_submission_and_two_pushes() {
    let graph = |hint: bool| writers_then_hint(1, 1e6, hint);
    let task_s = 1e6 / CPU_RATE;
    let runtime = "fetch_input_cost = 0";
    for (hint, want) in [
        (true, [1e-6, task_s + 4e-6]),
        (false, [1e-6, task_s + 2e-6]),
    ] {
        let got = cpu_start_dates(&graph(hint), "dmda", runtime, 1);
        assert_dates(&got, &want, &format!("hint {hint}"));
    }
}

/// `writers` tasks of `flops` each writing a handle of its own, then, if `hint`, a "will not be
/// used" hint on the first task's handle, then one more task of `flops` writing another handle.
fn writers_then_hint(writers: usize, flops: f64, hint: bool) -> TaskGraph {
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let handles: Vec<_> = (0..=writers)
        .map(|_| b.add_handle(Handle::bytes(1000)).unwrap())
        .collect();
    for &h in &handles[..writers] {
        b.submit(cl, flops, 0, &[Access::new(h, AccessMode::W)])
            .unwrap();
    }
    if hint {
        b.wont_use(handles[0]).unwrap();
    }
    b.submit(
        cl,
        flops,
        0,
        &[Access::new(handles[writers], AccessMode::W)],
    )
    .unwrap();
    b.build().unwrap()
}

/// A "will not be used" hint whose writer has ended by the time the submitting thread reaches
/// it costs that thread a submission and a push: StarPU submits the acquire's first task
/// whenever the handle has had a writer (`_starpu_detect_implicit_data_deps_with_handle`),
/// and, its dependency being met, the thread pushes it itself (StarPU 1.4.12's main thread on
/// Cholesky with tiles of 32 under dmda: 658 of its gaps between submissions last 4 µs, the
/// 2 µs of a ready task's submission and push plus 2). By hand, one CPU worker under dmda,
/// 1 µs per submission and per push, no cost per requested buffer: A writes h (0.1 µs), P
/// writes another handle (0.1 µs), the hint on h follows P, B writes a third. A is pushed at
/// 0, before the CPU's first pop (it starts awake: one progress call), which takes A at 1 µs
/// (A ends at 1.1 µs). P is submitted and queued at 2 µs; the CPU pops it after its progress
/// call following A's end, at 2.1 µs (P ends at 2.2 µs, and the CPU pops again at 3.2 µs, finds
/// nothing and sleeps). The thread reaches the hint at 4 µs, after A's end, and spends 2 µs on
/// it; B is queued at 6 µs, its push wakes the CPU at 7 µs, and it starts at 8 µs. Without the
/// hint B is queued at 4 µs, its push wakes the CPU at 5 µs, and it starts at 6 µs.
#[test]
fn a_wont_use_hint_whose_writer_has_ended_costs_the_submitting_thread_a_push_too() {
    let graph = |hint: bool| writers_then_hint(2, 1e3, hint);
    let runtime = "fetch_input_cost = 0";
    for (hint, want) in [(true, [1e-6, 2.1e-6, 8e-6]), (false, [1e-6, 2.1e-6, 6e-6])] {
        let got = cpu_start_dates(&graph(hint), "dmda", runtime, 1);
        assert_dates(&got, &want, &format!("hint {hint}"));
    }
}

/// A "will not be used" hint acts after its writer's successors are pushed: StarPU's
/// `starpu_data_wont_use` is an acquire of the handle registered after the tasks submitted
/// before it. One GPU and one CPU core under dmda. Task w writes a 100 MB tile T on the GPU
/// (1 ms there, 100 ms on the core); task x (20 ms on the GPU, 2 s on the core) queues behind it;
/// the hint on T follows w; task r reads T (0.1 ms on the GPU, 10 ms on the core). By hand, when
/// w ends at about 1 ms, r is pushed before the hint asks for T's idle copy to RAM, so for the
/// core dmda counts that copy: 10 µs + 2·1 GPU·100 MB / 6 GB/s = 33.3 ms, its expected end is
/// 43 ms after now against 20.1 ms for the GPU, fitness (43 − 20.1) + 33.3 against 0: r goes to
/// the GPU. Had the hint come first, T would be on its way to RAM, the core's penalty 0, its end
/// 10 ms the earliest and its fitness 0: r would go to the core.
#[test]
fn a_wont_use_hint_acts_after_its_writers_successors_are_pushed() {
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let t = b.add_handle(Handle::bytes(100_000_000)).unwrap();
    let (xh, rh) = (
        b.add_handle(Handle::bytes(1000)).unwrap(),
        b.add_handle(Handle::bytes(1000)).unwrap(),
    );
    b.submit(cl, 1e9, 0, &[Access::new(t, AccessMode::W)])
        .unwrap();
    b.submit(cl, 2e10, 0, &[Access::new(xh, AccessMode::W)])
        .unwrap();
    b.wont_use(t).unwrap();
    b.submit(
        cl,
        1e8,
        0,
        &[
            Access::new(t, AccessMode::R),
            Access::new(rh, AccessMode::W),
        ],
    )
    .unwrap();
    let g = b.build().unwrap();
    let m = machine(1, 1 << 30);
    let config = RunConfig {
        ncpu: Some(1),
        ncuda: Some(1),
        ..RunConfig::default()
    };
    let mut seen = TaskStarts::default();
    let mut s = sched::by_name("dmda", 1).unwrap();
    let r = simulate_observed(&m, &g, &KERNELS, s.as_mut(), &config, &mut seen).unwrap();
    let gpu = r.workers.iter().position(|w| w.kind == "gpu").unwrap() as u32;
    let mut placed: Vec<(u32, u32)> = seen.0.iter().map(|&(t, w, _)| (t, w)).collect();
    placed.sort();
    assert_eq!(placed, [(0, gpu), (1, gpu), (2, gpu)], "{:?}", r.workers);
}

/// A scheduler that queues each task to the GPU worker `place` gives it (GPU 0 for tasks
/// beyond), in push order, and prefetches its inputs there at its push; with `wake`, the push
/// wakes that worker (`Wakes::Chosen`, as dmda's does), else the workers pop as under eager.
struct OnGpus {
    queues: Vec<std::collections::VecDeque<TaskId>>,
    place: Vec<u32>,
    wake: bool,
}

impl OnGpus {
    fn new(place: Vec<u32>, wake: bool) -> Self {
        OnGpus {
            queues: vec![Default::default(); 8],
            place,
            wake,
        }
    }
}

impl sched::Scheduler for OnGpus {
    fn name(&self) -> &'static str {
        "on-gpus"
    }
    fn push(&mut self, t: TaskId, _: &hetsim::runtime::View<'_>, d: &mut Vec<sched::Decision>) {
        let worker = WorkerId(self.place.get(t.index()).copied().unwrap_or(0));
        self.queues[worker.index()].push_back(t);
        if self.wake {
            d.push(sched::Decision::Wake { worker });
        }
        d.push(sched::Decision::Prefetch { task: t, worker });
    }
    fn pop(&mut self, w: WorkerId, _: &hetsim::runtime::View<'_>) -> Option<TaskId> {
        self.queues[w.index()].pop_front()
    }
    fn queued(&self) -> usize {
        self.queues.iter().map(|q| q.len()).sum()
    }
    fn wakes(&self) -> sched::Wakes {
        if self.wake {
            sched::Wakes::Chosen
        } else {
            sched::Wakes::Eager
        }
    }
}

/// Task starts and ends by task id, transfer starts and ends by handle id, in event order.
#[derive(Default)]
struct Timeline {
    starts: Vec<(u32, f64)>,
    ends: Vec<(u32, f64)>,
    moves: Vec<(u32, f64)>,
    arrivals: Vec<(u32, f64)>,
}

impl Timeline {
    /// The first date recorded for `id` in `dates`.
    fn at(dates: &[(u32, f64)], id: u32) -> f64 {
        dates.iter().find(|d| d.0 == id).expect("recorded").1
    }
}

impl Observer for Timeline {
    fn event(&mut self, at_s: f64, e: &SimEvent<'_>) {
        match e {
            SimEvent::TaskStart { task, .. } => self.starts.push((task.0, at_s)),
            SimEvent::TaskEnd { task, .. } => self.ends.push((task.0, at_s)),
            SimEvent::TransferStart { handle, .. } => self.moves.push((handle.0, at_s)),
            SimEvent::TransferEnd { handle, .. } => self.arrivals.push((handle.0, at_s)),
            _ => {}
        }
    }
}

/// A GPU driver running a synchronous task sees no transfer complete: StarPU's driver notes a
/// request's completion in its progress loop, which a synchronous kernel blocks
/// (`_starpu_cuda_driver_run_once`). One GPU; S (synchronous, reads X from RAM, writes Y,
/// 2 ms) and B (reads T from RAM) both queued to it, B's input prefetched at its push. One
/// pass of the GPU's driver submits X's fetch, then T's prefetch: S starts once X is there,
/// T's bytes arrive while S runs, but its copy completes (and B may start) only when S ends.
#[test]
fn a_synchronous_task_holds_the_completion_of_copies_into_its_gpu() {
    let m = machine(1, 1 << 30);
    let mut b = TaskGraphBuilder::new();
    let s = b.codelet("s").unwrap();
    b.gpu_synchronous(s);
    let a = b.codelet("a").unwrap();
    let x = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let y = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let t = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let s_accesses = [Access::new(x, AccessMode::R), Access::new(y, AccessMode::W)];
    b.submit(s, 2e9, 0, &s_accesses).unwrap();
    b.submit(a, 1e9, 0, &[Access::new(t, AccessMode::R)])
        .unwrap();
    let g = b.build().unwrap();
    let mut log = Timeline::default();
    let mut sc = OnGpus::new(Vec::new(), false);
    simulate_observed(&m, &g, &KERNELS, &mut sc, &gpu_only(1), &mut log).unwrap();
    let s_end = Timeline::at(&log.ends, 0);
    let b_start = Timeline::at(&log.starts, 1);
    let arrival = Timeline::at(&log.moves, t.0) + LAT + TILE / BW;
    assert!(arrival < s_end - 1e-3, "T's bytes arrive during S");
    assert_close(Timeline::at(&log.arrivals, t.0), s_end, 1e-12);
    // B, popped when S ends, requests its buffer (1 µs), now in place, and is queued to the
    // GPU (10 µs).
    assert_close(b_start, s_end + FETCH + KQ, 1e-9);
}

/// A GPU's driver makes its pass over its node's requests before it pulls a task
/// (`_starpu_cuda_driver_run_once`: progress, then pull), so the queueing sleeps of what it
/// submits there delay its next task. One GPU; A writes Y (1 ms); after it, in submission
/// order, K reads Y and B1, B2 read T1, T2 from RAM, the inputs prefetched at each push.
/// By hand, from A's end t:
/// - the GPU's thread pushes K, B1, B2 (1 µs each): the prefetches of T1 and T2 are posted at
///   t + 2 and t + 3 µs;
/// - its pass, after its pushes and its progress call (2 µs), at t + 5 µs, submits T1 and T2,
///   10 µs of queueing each: done at t + 25 µs;
/// - only then it pulls K, requests Y (in place, 1 µs) and queues K to the GPU (10 µs):
///   K starts at t + 36 µs (t + 16 µs if it pulled before its pass).
#[test]
fn a_gpu_driver_pulls_its_next_task_after_its_pass_over_requests() {
    let m = machine(1, 1 << 30);
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let y = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let t1 = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let t2 = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let a = b
        .submit(cl, 1e9, 0, &[Access::new(y, AccessMode::W)])
        .unwrap();
    let k = b
        .submit(cl, 1e6, 0, &[Access::new(y, AccessMode::R)])
        .unwrap();
    for t in [t1, t2] {
        b.submit(
            cl,
            1e6,
            0,
            &[Access::new(y, AccessMode::R), Access::new(t, AccessMode::R)],
        )
        .unwrap();
    }
    let g = b.build().unwrap();
    let mut log = Timeline::default();
    let mut sc = OnGpus::new(Vec::new(), true);
    simulate_observed(&m, &g, &KERNELS, &mut sc, &gpu_only(1), &mut log).unwrap();
    assert_close(
        Timeline::at(&log.starts, k.0) - Timeline::at(&log.ends, a.0),
        3.0 * PUSH + PASS + 2.0 * QUEUE + FETCH + KQ,
        1e-9,
    );
}

/// A driver sees a request complete only in a pass over its node's requests, and it runs the
/// task that waited for it only after that pass (`_starpu_cuda_driver_run_once`: the progress
/// call tests the pending requests and then submits what the lists allow; the task starts in
/// the next iteration). One GPU; K reads X, then P reads T1 and T2, all from RAM, P's inputs
/// prefetched at its push. One pass submits X's fetch and T1's prefetch; T2's waits, since two
/// requests of the (RAM, GPU) pair are pending (the prefetch limit). By hand, from the date x
/// X's last byte arrives:
/// - the GPU's next pass, after its progress call (2 µs), sees X complete (the copy's end is
///   reported then), which leaves one request pending, and submits T2 (10 µs of queueing);
/// - then K is queued to the GPU (10 µs): K starts at x + 22 µs (x + 10 µs if K started as X
///   arrived, x + 12 µs if the pass submitted nothing).
#[test]
fn a_driver_runs_a_task_after_the_pass_that_sees_its_input_arrive() {
    let m = machine(1, 1 << 30);
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let h = |b: &mut TaskGraphBuilder| b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let (x, t1, t2) = (h(&mut b), h(&mut b), h(&mut b));
    let k = b
        .submit(cl, 1e9, 0, &[Access::new(x, AccessMode::R)])
        .unwrap();
    b.submit(
        cl,
        1e9,
        0,
        &[
            Access::new(t1, AccessMode::R),
            Access::new(t2, AccessMode::R),
        ],
    )
    .unwrap();
    let g = b.build().unwrap();
    let mut log = Timeline::default();
    let mut sc = OnGpus::new(Vec::new(), true);
    simulate_observed(&m, &g, &KERNELS, &mut sc, &gpu_only(1), &mut log).unwrap();
    let bytes_in = |h: u32| Timeline::at(&log.moves, h) + LAT + TILE / BW;
    let x_in = bytes_in(x.0);
    assert_close(Timeline::at(&log.arrivals, x.0), x_in + PASS, 1e-9);
    // T1 moves after X on the pair; T2, submitted in the pass that sees X complete, after T1.
    assert_close(Timeline::at(&log.moves, t1.0), x_in, 1e-9);
    assert_close(Timeline::at(&log.moves, t2.0), bytes_in(t1.0), 1e-9);
    assert_close(
        Timeline::at(&log.starts, k.0) - x_in,
        PASS + QUEUE + KQ,
        1e-9,
    );
}

/// A task of codelet `writer` (1 GFlop) writing `w`, then for each of `reads` a task of codelet
/// `reader` (1 MFlop) reading it, each after the writer, in that order. Returns the writer.
fn writer_then_readers(
    b: &mut TaskGraphBuilder,
    writer: CodeletId,
    w: HandleId,
    reader: CodeletId,
    reads: &[HandleId],
) -> TaskId {
    let first = b
        .submit(writer, 1e9, 0, &[Access::new(w, AccessMode::W)])
        .unwrap();
    for &h in reads {
        let k = b
            .submit(reader, 1e6, 0, &[Access::new(h, AccessMode::R)])
            .unwrap();
        b.add_dependency(first, k).unwrap();
    }
    first
}

/// A prefetch of a replica already loading for another task posts one more request, which
/// takes a slot of its pair's pass and is dropped (StarPU reuses a request only for the same
/// task, `_starpu_search_existing_data_request`). One GPU; S, synchronous, writes W (1 ms,
/// its allocation opens the GPU's chunk); after it K1 and K2 read the small tile X and K3 the
/// tile T, queued to the GPU, each prefetching its inputs at its push. By hand, from S's end
/// e: the GPU's thread pushes K1, K2, K3 (1 µs each, their requests posted at e + 1, 2, 3 µs;
/// the rooms come out of the chunk at once); its pass (e + 5 µs) takes two prefetch requests,
/// the limit: X's, submitted (moving at e + 15 µs), and K2's for X, dropped; it pulls K1
/// (requesting X, 1 µs) and passes again (e + 18 µs), submitting T, which moves at e + 28 µs,
/// 13 µs after X. Without the duplicate, one pass submits X and T, and T moves as X's last
/// byte lands, 10.17 µs after X.
#[test]
fn a_prefetch_of_a_loading_replica_takes_a_slot_of_the_next_pass() {
    let m = machine(1, 1 << 30);
    let mut b = TaskGraphBuilder::new();
    let s = b.codelet("s").unwrap();
    b.gpu_synchronous(s);
    let cl = b.codelet("k").unwrap();
    let w = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let x = b.add_handle(Handle::bytes(1024)).unwrap();
    let t = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let st = writer_then_readers(&mut b, s, w, cl, &[x, x, t]);
    let g = b.build().unwrap();
    let mut log = Timeline::default();
    let mut sc = OnGpus::new(Vec::new(), true);
    simulate_observed(&m, &g, &KERNELS, &mut sc, &gpu_only(1), &mut log).unwrap();
    let e = Timeline::at(&log.ends, st.0);
    let x_moves = Timeline::at(&log.moves, x.0);
    assert_close(x_moves - e, 3.0 * PUSH + PASS + QUEUE, 1e-9);
    assert_close(Timeline::at(&log.moves, t.0) - x_moves, 13e-6, 1e-9);
}

/// A push that prefetches a handle whose copy a driver is submitting waits for that driver to
/// let go of the handle's header lock (`starpu_handle_data_request` holds it through the
/// transfer's queueing sleep; the pusher's `starpu_prefetch_task_input_for` takes it for each
/// buffer): StarPU's LU trace shows the releasing driver's pushes stall 10 µs twice so.
/// Two GPUs; A (GPU 0) writes W; after it K1 (GPU 1) reads the RAM tile Y, K2 (GPU 0) reads
/// W and K3 (GPU 0) reads Y, each queued and prefetched at its push, which wakes its worker.
/// By hand, from A's end e: GPU 0's thread pushes K1 at e + 1 µs (GPU 1 woken), K2 at e + 2;
/// GPU 1 passes at e + 3 and holds Y's lock while it submits Y's copy, to e + 13; K3's push at
/// e + 3 finds it taken and gets it 1 µs after it is let go, at e + 14, when K3's request for Y
/// is posted. GPU 0 passes after its last push and its progress call (e + 16) and Y's copy
/// into GPU 0 moves at e + 26; without the lock it would move at e + 15 (checked).
#[test]
fn a_push_waits_for_the_lock_of_a_handle_a_driver_is_submitting() {
    // No cudaMalloc: GPU 1's first allocation would hold its copy 175 µs.
    let m = machine_with_runtime(2, "cuda_malloc = 0");
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let w = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let y = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let a = writer_then_readers(&mut b, cl, w, cl, &[y, w, y]);
    let g = b.build().unwrap();
    let mut log = Timeline::default();
    let mut sc = OnGpus::new(vec![0, 1, 0, 0], true);
    simulate_observed(&m, &g, &KERNELS, &mut sc, &gpu_only(2), &mut log).unwrap();
    let e = Timeline::at(&log.ends, a.0);
    let y_moves: Vec<f64> = log
        .moves
        .iter()
        .filter(|mv| mv.0 == y.0)
        .map(|mv| mv.1 - e)
        .collect();
    assert_eq!(y_moves.len(), 2, "one copy of Y into each GPU: {y_moves:?}");
    assert_close(y_moves[0], PUSH + PASS + QUEUE, 1e-9);
    let lock_free = PUSH + PASS + QUEUE + 1e-6;
    assert_close(y_moves[1], lock_free + PASS + QUEUE, 1e-9);
}

/// The submitting thread counts a task as a user of each of its handles before anything else
/// (`_starpu_submit_job` takes their header locks in turn), so it waits while a driver holds
/// one through a copy's queueing sleep, even for a task that is not ready. One GPU, one CPU;
/// K1 (GPU) reads the RAM tile X; K2 (GPU, after K1) reads V; K3 (GPU, after K1) reads Y; K4
/// (CPU, ready) writes Z. By hand, with X = Y: K1 is submitted and pushed at 0 (push 1 µs,
/// submission 1 µs), before the GPU's first pop (it starts awake): its first progress call
/// over (2 µs), the GPU pops K1 and its thread takes the request for X and holds X's lock to
/// 12 µs (the queueing sleep); the submitting thread submits K2 at 2 µs and K3 at 3 µs, finds
/// Y = X taken, gets it 1 µs after it is let go (13 µs) and submits K4 at 14 µs instead of
/// 4 µs. Nothing else differs from the run where K1 reads another tile: K4 starts QUEUE
/// later.
#[test]
fn the_submitting_thread_waits_for_the_lock_of_a_handle_a_driver_is_submitting() {
    let m = machine_with_runtime(1, "cuda_malloc = 0");
    let k4_start = |shared: bool| {
        let mut b = TaskGraphBuilder::new();
        let cl = b.codelet("k").unwrap();
        let mut tile = || b.add_handle(Handle::bytes(TILE as u64)).unwrap();
        let (x, v, y, z) = (tile(), tile(), tile(), tile());
        let x = if shared { y } else { x };
        let read = |h| [Access::new(h, AccessMode::R)];
        let k1 = b.submit(cl, 1e6, 0, &read(x)).unwrap();
        for h in [v, y] {
            let k = b.submit(cl, 1e6, 0, &read(h)).unwrap();
            b.add_dependency(k1, k).unwrap();
        }
        let k4 = b
            .submit(cl, 1e6, 0, &[Access::new(z, AccessMode::W)])
            .unwrap();
        let g = b.build().unwrap();
        let mut log = Timeline::default();
        let mut sc = OnGpus::new(vec![0, 0, 0, 1], true);
        let config = RunConfig {
            ncpu: Some(1),
            ncuda: Some(1),
            ..RunConfig::default()
        };
        simulate_observed(&m, &g, &KERNELS, &mut sc, &config, &mut log).unwrap();
        Timeline::at(&log.starts, k4.0)
    };
    assert_close(k4_start(true) - k4_start(false), QUEUE, 1e-9);
}

/// A GPU whose next kernel ends while its thread still pushes what the previous one released
/// pushes the new successors after those, one thread, one push at a time. One GPU; A (1 ms)
/// writes W and releases S1, S2, S3 (reading W); B (1.5 µs), queued behind A, writes V and
/// releases S4 (reading the RAM tile Z). By hand, from A's end e: B runs from e to e + 1.5 µs;
/// the GPU's thread pushes S1, S2, S3 at e + 1, 2, 3 µs and S4 at e + 4 µs; it passes after its
/// progress call (e + 6 µs) and Z's copy moves after its queueing sleep, at e + 16 µs.
#[test]
fn a_gpu_pushes_the_successors_of_its_next_kernel_after_those_it_is_pushing() {
    let m = machine_with_runtime(1, "cuda_malloc = 0");
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let w = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let v = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let z = b.add_handle(Handle::bytes(TILE as u64)).unwrap();
    let a = b
        .submit(cl, 1e9, 0, &[Access::new(w, AccessMode::W)])
        .unwrap();
    let bt = b
        .submit(cl, 1.5e-6 * GPU_RATE, 0, &[Access::new(v, AccessMode::W)])
        .unwrap();
    for _ in 0..3 {
        let s = b
            .submit(cl, 1e6, 0, &[Access::new(w, AccessMode::R)])
            .unwrap();
        b.add_dependency(a, s).unwrap();
    }
    let s4 = b
        .submit(cl, 1e6, 0, &[Access::new(z, AccessMode::R)])
        .unwrap();
    b.add_dependency(bt, s4).unwrap();
    let g = b.build().unwrap();
    let mut log = Timeline::default();
    let mut sc = OnGpus::new(Vec::new(), true);
    simulate_observed(&m, &g, &KERNELS, &mut sc, &gpu_only(1), &mut log).unwrap();
    let e = Timeline::at(&log.ends, a.0);
    assert_close(Timeline::at(&log.ends, bt.0) - e, 1.5e-6, 1e-9);
    assert_close(
        Timeline::at(&log.moves, z.0) - e,
        4.0 * PUSH + PASS + QUEUE,
        1e-9,
    );
}

/// A worker whose pop found nothing but that the policy says comes back by itself
/// (`Scheduler::pop_again_after_s`: a ws thief that failed its trylock) pops again after that
/// sleep and its driver's progress call (2 µs for a GPU's driver, PASS), without a push: one
/// GPU, one task without data, refused at the first pop and taken at the second. By hand, the
/// task starts SLEEP + PASS later than when it is taken at once.
#[test]
fn a_worker_told_to_come_back_pops_after_its_sleep_and_progress_call() {
    const SLEEP: f64 = 5e-6;
    struct Refuses {
        task: Option<TaskId>,
        refusals_left: u32,
        asked_back: bool,
    }
    impl sched::Scheduler for Refuses {
        fn name(&self) -> &'static str {
            "refuses"
        }
        fn push(&mut self, t: TaskId, _: &hetsim::runtime::View<'_>, _: &mut Vec<sched::Decision>) {
            self.task = Some(t);
        }
        fn pop(&mut self, _: WorkerId, _: &hetsim::runtime::View<'_>) -> Option<TaskId> {
            if self.refusals_left > 0 && self.task.is_some() {
                self.refusals_left -= 1;
                self.asked_back = true;
                return None;
            }
            self.task.take()
        }
        fn pop_again_after_s(&mut self, _: WorkerId) -> Option<f64> {
            std::mem::take(&mut self.asked_back).then_some(SLEEP)
        }
        // As ws: under eager's wakes every worker would pop again at the event.
        fn wakes(&self) -> sched::Wakes {
            sched::Wakes::All
        }
        fn queued(&self) -> usize {
            usize::from(self.task.is_some())
        }
    }
    let m = machine(1, 1 << 30);
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    b.submit(cl, 1e9, 0, &[]).unwrap();
    let g = b.build().unwrap();
    let run = |refusals_left| {
        let mut s = Refuses {
            task: None,
            refusals_left,
            asked_back: false,
        };
        simulate(&m, &g, &KERNELS, &mut s, &gpu_only(1))
            .unwrap()
            .makespan_s
    };
    let (at_once, once_back, twice_back) = (run(0), run(1), run(2));
    assert_close(once_back - at_once, SLEEP + PASS, 1e-9);
    assert_close(twice_back - at_once, 2.0 * (SLEEP + PASS), 1e-9);
}

/// A driver allocates for its requests in the order its pass reaches them, its lists by the
/// copy's source node, RAM's first (`__starpu_datawizard_progress` over the peers in node
/// order), not in the order of the task's buffers: StarPU's sirocco Cholesky allocates a
/// GEMM's tile from RAM before the one from a GPU, 175 µs apart. Two GPUs; K, queued to GPU 0,
/// reads X (buffer 0, 8 MiB, valid on GPU 1 only) and Y (buffer 1, 8 MiB, in RAM): each needs a
/// cudaMalloc of its own on GPU 0 (over the 4 MiB the suballocator serves), one at a time.
/// By hand, from K's push p: Y's room is allocated from p to p + 175 µs, its copy is posted
/// then and moves after GPU 0's pass and queueing sleep; X's room from p + 175 µs to
/// p + 350 µs, its copy (staged through RAM, first hop handled by GPU 1's driver, idle too)
/// posted then, moving after the same pass and sleep: 175 µs after Y's. In buffer order X
/// would move first, 175 µs before Y.
#[test]
fn a_driver_allocates_for_its_requests_in_its_pass_order() {
    let m = machine(2, 1 << 30);
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let size = 8 << 20;
    let x = b
        .add_handle(Handle {
            home: workload::Home::Gpu(1),
            ..Handle::bytes(size)
        })
        .unwrap();
    let y = b.add_handle(Handle::bytes(size)).unwrap();
    b.submit(
        cl,
        1e6,
        0,
        &[Access::new(x, AccessMode::R), Access::new(y, AccessMode::R)],
    )
    .unwrap();
    let g = b.build().unwrap();
    let mut log = Timeline::default();
    let mut sc = OnGpus::new(vec![0], true);
    simulate_observed(&m, &g, &KERNELS, &mut sc, &gpu_only(2), &mut log).unwrap();
    let (x_moves, y_moves) = (Timeline::at(&log.moves, x.0), Timeline::at(&log.moves, y.0));
    assert_close(x_moves - y_moves, MALLOC, 1e-9);
}

/// A replica already valid where a task is pushed is marked for it at the push, before the
/// node's driver allocates for the task's other inputs (`_starpu_fetch_task_input` takes a
/// reference on a valid replica at once; the others wait for a pass): the allocations cannot
/// evict it. One GPU with room for two 8 MiB tiles and D (4 KiB). T0 reads A, T1 reads C and
/// writes D, so A is the older of the two clean tiles when T2 (reads B, A and D; ready when T1
/// ends) is pushed. B's room must evict a clean tile: with A marked, C goes, and A moves once.
/// Were A taken in source-node order with the copies (after B, from RAM), B's room would evict
/// A, whose copy would then evict C: A would move twice.
#[test]
fn a_replica_valid_at_the_push_is_marked_before_the_allocations() {
    let tile = 8 << 20;
    let small = 4096;
    let m = machine(1, 2 * tile + small);
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let a = b.add_handle(Handle::bytes(tile)).unwrap();
    let c = b.add_handle(Handle::bytes(tile)).unwrap();
    let bb = b.add_handle(Handle::bytes(tile)).unwrap();
    let d = b.add_handle(Handle::bytes(small)).unwrap();
    b.submit(cl, 1e6, 0, &[Access::new(a, AccessMode::R)])
        .unwrap();
    b.submit(
        cl,
        1e6,
        0,
        &[Access::new(c, AccessMode::R), Access::new(d, AccessMode::W)],
    )
    .unwrap();
    b.submit(
        cl,
        1e6,
        0,
        &[
            Access::new(bb, AccessMode::R),
            Access::new(a, AccessMode::R),
            Access::new(d, AccessMode::R),
        ],
    )
    .unwrap();
    let g = b.build().unwrap();
    let mut log = Timeline::default();
    let mut sc = OnGpus::new(vec![0, 0, 0], true);
    simulate_observed(&m, &g, &KERNELS, &mut sc, &gpu_only(1), &mut log).unwrap();
    let moves = |h: HandleId| log.moves.iter().filter(|mv| mv.0 == h.0).count();
    assert_eq!((moves(a), moves(c), moves(bb)), (1, 1, 1));
    let starts = |t: u32| Timeline::at(&log.starts, t);
    assert!(starts(0) < starts(1) && starts(1) < starts(2));
}
