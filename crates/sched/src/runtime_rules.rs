//! The runtime's wake-up and request rules, checked on whole runs under real policies (they
//! need a scheduler, so they live beside the policies).

use hetsim_platform::machine::{Machine, MemNodeId};
use hetsim_runtime::fixture::{RATES, star_machine, workers};
use hetsim_runtime::{Observer, RunConfig, SimEvent, TransferKind, WorkerId, simulate_observed};
use hetsim_taskgraph::{self as workload, HandleId, Precision, TaskGraph, TaskId};

/// Records which worker started each task, and when (for the policies' tests too).
pub(crate) struct WhoRan(pub Vec<(TaskId, WorkerId, f64)>);

impl WhoRan {
    /// Each task started and its worker, in start order.
    pub(crate) fn placed(&self) -> Vec<(TaskId, WorkerId)> {
        self.0.iter().map(|&(t, w, _)| (t, w)).collect()
    }
}

impl Observer for WhoRan {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        if let SimEvent::TaskStart { task, worker, .. } = event {
            self.0.push((*task, *worker, at_s));
        }
    }
}

/// StarPU's wake-up dates on a central queue (`starpu-reference.md` §1a, eager, and the 1 µs
/// push cost, paid before the push wakes anyone): a worker woken by a push pops after the push
/// and its own progress call (1 µs per memory node it drives), the worker whose task end
/// released the task after its pushes and its progress call; a "will not be used" hint whose
/// writer ends is one more push for that worker. Hand derivation on the 2×2-tile Cholesky,
/// submitted as potrf(0,0), trsm(1,0), hint on A(0,0), syrk(1,1), hint on A(1,0), potrf(1,1) —
/// a chain — with one GPU (worker 0) and one CPU (worker 1), both able to run everything:
/// - at the start both are idle and nobody released potrf(0,0): the lower id, the GPU,
///   takes it;
/// - its end releases trsm: the push wakes the CPU at 1 µs, which pops at 1 + 1 = 2 µs; the
///   GPU also pushes the hint's task and pops at 2 + 2 = 4 µs: the CPU takes trsm;
/// - the CPU's end releases syrk: the push wakes the GPU at 1 µs, which pops at 3 µs; the CPU
///   pushes the hint on A(1,0) too and pops at 2 + 1 = 3 µs, last among equals: the GPU takes
///   syrk;
/// - the GPU's end releases potrf(1,1): the CPU, woken at 1 µs, pops at 2 µs, the GPU at
///   1 + 2 = 3 µs: the CPU takes it.
///
/// Workers in id order first would give all four to the GPU.
#[test]
fn the_first_to_reach_its_pop_takes_the_released_task() {
    let m = star_machine(1, 2);
    let g = workload::cholesky(2 * 960, 960, Precision::Single).unwrap();
    let mut s = crate::by_name("eager", 1).unwrap();
    let mut who = WhoRan(Vec::new());
    simulate_observed(&m, &g, &RATES, s.as_mut(), &workers(1, 1), &mut who).unwrap();
    let names: Vec<&str> = who
        .0
        .iter()
        .map(|&(t, ..)| g.task_codelet_name(t))
        .collect();
    assert_eq!(
        names,
        [
            "chol_model_potrf",
            "chol_model_trsm",
            "chol_model_syrk",
            "chol_model_potrf"
        ]
    );
    let on: Vec<u32> = who.0.iter().map(|&(_, w, _)| w.0).collect();
    assert_eq!(on, [0, 1, 0, 1]);
}

/// One task released, then three: each idle worker takes one before anyone fills a
/// pipeline, in the order the pop dates give. By hand, with GPU0 (worker 0), GPU1
/// (worker 1, pipeline of 2) and one CPU (worker 2), root A, and B1, B2, B3 each reading
/// A's output:
/// - A is queued at 0; the workers start awake and pop once after their first progress call:
///   the CPU at 1 µs, before the GPUs (2 µs): the CPU takes it;
/// - A's end on the CPU releases B1, B2, B3, pushed in that order. Push 0 wakes GPU0, push 1
///   GPU1; the CPU is the releaser. With StarPU 1.4's 1 µs per push, paid before the push
///   wakes anyone, GPU0 pops at 1 + 2 µs, GPU1 at 2 + 2 µs, the CPU at 3 + 1 µs (a tie it
///   loses: the releaser last): B1 to GPU0, B2 to GPU1, B3 to the CPU;
/// - with no push cost (StarPU 1.3) the CPU pops at 1 µs, GPU0 and GPU1 at 2 µs (in push
///   order): B1 to the CPU, B2 to GPU0, B3 to GPU1.
///
/// Nobody fills a second pipeline slot: filling GPU1's first would give it two tasks.
#[test]
fn each_woken_worker_takes_one_task_in_pop_date_order() {
    let (g, a, bs) = fan_out(3, false);
    for (runtime, want) in [("", [0, 1, 2]), ("[runtime]\npush_cost = 0\n", [2, 0, 1])] {
        let text = hetsim_runtime::fixture::star_machine_text(2, 3) + runtime;
        let m = hetsim_platform::machine::from_str(&text, "t.toml").unwrap();
        let on = ran_on(&m, &g, "eager");
        assert_eq!(on(a), Some(2));
        let got: Vec<Option<u32>> = bs.iter().map(|&t| on(t)).collect();
        assert_eq!(got, want.map(Some), "with `{runtime}`");
    }
}

/// StarPU's drivers start awake: each makes one progress call and pops once before it first
/// sleeps. StarPU 1.4.12 with every runtime cost off shows it on LU (attila, n = 9600, eager):
/// the first getrf is pushed as the program starts and finds no worker asleep, so it wakes
/// nobody; the CPU workers come back from their first progress call 1 µs later, the GPUs'
/// drivers 2 µs later, and the first CPU worker takes it. By hand, GPU0, GPU1 and one CPU, no
/// runtime cost, one task A writing a handle (nothing to copy): the CPU pops first, at 1 µs,
/// and starts A then. Workers that start asleep, as an MPI program's ranks
/// (`Drivers::Passive`), are woken by A's push: the first asleep by id, GPU0, which under
/// eager pops at the event and starts A at 0.
#[test]
fn the_workers_start_awake_and_the_first_back_takes_the_first_task() {
    use hetsim_runtime::Drivers;
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraphBuilder};
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("a").unwrap();
    let h = b.add_handle(Handle::bytes(1000)).unwrap();
    let a = b
        .submit(cl, 1e6, 0, &[Access::new(h, AccessMode::W)])
        .unwrap();
    let g = b.build().unwrap();
    let text = hetsim_runtime::fixture::star_machine_text(2, 3)
        + "[runtime]\ncuda_malloc = 0\ncuda_free = 0\npinned_alloc_per_mib = 0\n\
           transfer_queue = 0\nkernel_queue = 0\npush_cost = 0\nsubmit_cost = 0\n\
           fetch_input_cost = 0\n";
    let m = hetsim_platform::machine::from_str(&text, "t.toml").unwrap();
    for (drivers, worker, at_s) in [(Drivers::StarPu, 2, 1e-6), (Drivers::Passive, 0, 0.0)] {
        let mut s = crate::by_name("eager", 1).unwrap();
        let mut starts = WhoRan(Vec::new());
        let cfg = RunConfig {
            drivers,
            ..workers(1, 2)
        };
        simulate_observed(&m, &g, &RATES, s.as_mut(), &cfg, &mut starts).unwrap();
        assert_eq!(starts.0, [(a, WorkerId(worker), at_s)], "{drivers:?}");
    }
}

/// Root A (writing one handle; synchronous on a GPU if `a_gpu_sync`), then `n` tasks
/// reading A's output, each writing its own handle. Returns the graph, A and the others.
fn fan_out(n: usize, a_gpu_sync: bool) -> (TaskGraph, TaskId, Vec<TaskId>) {
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraphBuilder};
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("a").unwrap();
    if a_gpu_sync {
        b.gpu_synchronous(cl);
    }
    let h = b.add_handle(Handle::bytes(1 << 20)).unwrap();
    let a = b
        .submit(cl, 1e6, 0, &[Access::new(h, AccessMode::RW)])
        .unwrap();
    let other = b.codelet("b").unwrap();
    let mut bs = Vec::new();
    for _ in 0..n {
        let o = b.add_handle(Handle::bytes(1 << 20)).unwrap();
        let acc = [Access::new(h, AccessMode::R), Access::new(o, AccessMode::W)];
        bs.push(b.submit(other, 1e6, 0, &acc).unwrap());
    }
    (b.build().unwrap(), a, bs)
}

/// Run `g` under `sched` with one CPU and two GPU workers; which worker ran each task.
fn ran_on(m: &Machine, g: &TaskGraph, sched: &str) -> impl Fn(TaskId) -> Option<u32> + use<> {
    let mut s = crate::by_name(sched, 1).unwrap();
    let mut who = WhoRan(Vec::new());
    simulate_observed(m, g, &RATES, s.as_mut(), &workers(1, 2), &mut who).unwrap();
    move |t: TaskId| who.0.iter().find(|&&(x, ..)| x == t).map(|&(_, w, _)| w.0)
}

/// ws wakes every sleeping worker at the first push (`ws_push_task`), so woken CPUs
/// steal before woken GPUs even with StarPU 1.4's 1 µs per push. By hand, with GPU0
/// (worker 0), GPU1 (worker 1) and one CPU (worker 2), root A (synchronous on a GPU, as
/// potrf is), then B1 and B2 reading A's output:
/// - A is ready at the start: round-robin from the cursor at worker 0 puts it on GPU1,
///   which does not pop again while A runs (a synchronous task blocks its pipeline);
/// - A's end on GPU1 pushes B1, B2 into GPU1's deque; GPU1 is still busy (its last pop
///   returned A). GPU0 and the CPU wake at push 0, at 1 µs: the CPU pops at 2 µs, after push
///   1 of that date (a push goes before the pops of its date), and steals the back of the
///   level, B2 (StarPU 1.4); GPU0 at 3 µs steals B1; GPU1, the releaser, pops at 2 + 2 µs and
///   finds nothing.
///
/// With eager's one wake per push GPU0 (woken by push 0, 1 + 2 µs) would tie with the CPU
/// (push 1, 2 + 1 µs) and, pushed first, take B1. Were A asynchronous, GPU1 would have popped again
/// while A ran, found nothing and stopped being busy: nobody could steal at A's end.
#[test]
fn ws_wakes_every_sleeping_worker_at_the_first_push() {
    let (g, a, bs) = fan_out(2, true);
    let on = ran_on(&star_machine(2, 3), &g, "ws");
    assert_eq!(on(a), Some(1));
    assert_eq!(on(bs[0]), Some(0));
    assert_eq!(on(bs[1]), Some(2));
}

/// Records transfer starts (time, handle, kind, source), transfer ends (time, handle) and
/// task ends (time, task).
#[derive(Default)]
struct Log {
    starts: Vec<(f64, HandleId, TransferKind, MemNodeId)>,
    arrivals: Vec<(f64, HandleId)>,
    ends: Vec<(f64, TaskId)>,
}

impl Observer for Log {
    fn event(&mut self, at_s: f64, event: &SimEvent<'_>) {
        match event {
            SimEvent::TransferStart {
                handle, kind, src, ..
            } => self.starts.push((at_s, *handle, *kind, *src)),
            SimEvent::TransferEnd { handle, .. } => self.arrivals.push((at_s, *handle)),
            SimEvent::TaskEnd { task, .. } => self.ends.push((at_s, *task)),
            _ => {}
        }
    }
}

/// StarPU's `starpu_data_wont_use` (`_starpu_data_wont_use`, an idle prefetch to the home
/// node once the last writer before the hint is done). One GPU (pipeline 2), no CPU
/// worker, eager. Tasks in submission order:
/// - A writes h0 (W, no fetch), 1e8 flops = 1 ms on the 100 GFlop/s GPU; then the hint
///   `wont_use(h0)`;
/// - C reads h2 and h3, 8 MB each in RAM: 8 ms each on the 1 GB/s link, one at a time.
///
/// The GPU takes A, then C into its second pipeline slot; C's copies of h2 and h3 are
/// requested while A runs (h3 queued behind h2). A's end (about 1.2 ms, after its
/// allocation) makes the hint hold: h0's only valid copy is on the GPU, so a write-back
/// GPU→RAM is requested at idle priority. StarPU's driver submits an idle request out to a
/// peer while none of its requests out to that peer is pending
/// (`_starpu_check_that_no_data_request_is_pending` for that peer and direction; the
/// incoming ones wait for every peer's): h2 and h3 come in, nothing goes out, so the
/// write-back is submitted in GPU1's next pass and moves before h3 does. With
/// `run.wont_use = false` h0 stays on the GPU until the final write-back after the last task.
#[test]
fn wont_use_writes_back_at_idle_priority_after_the_writer() {
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraphBuilder};
    let m = star_machine(1, 1);
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let h0 = b.add_handle(Handle::bytes(1000)).unwrap();
    let h2 = b.add_handle(Handle::bytes(8_000_000)).unwrap();
    let h3 = b.add_handle(Handle::bytes(8_000_000)).unwrap();
    let a = b
        .submit(cl, 1e8, 0, &[Access::new(h0, AccessMode::W)])
        .unwrap();
    b.wont_use(h0).unwrap();
    let reads = [
        Access::new(h2, AccessMode::R),
        Access::new(h3, AccessMode::R),
    ];
    let c = b.submit(cl, 1e6, 0, &reads).unwrap();
    let g = b.build().unwrap();
    assert_eq!(g.wont_use_triggers(), [Some(a)]);

    let run = |wont_use: bool| {
        let mut s = crate::by_name("eager", 1).unwrap();
        let mut log = Log::default();
        let cfg = RunConfig {
            wont_use,
            ..workers(0, 1)
        };
        let r = simulate_observed(&m, &g, &RATES, s.as_mut(), &cfg, &mut log).unwrap();
        (r, log)
    };
    let (report, log) = run(true);
    let end = |t: TaskId| log.ends.iter().find(|e| e.1 == t).unwrap().0;
    let start = |h: HandleId| log.starts.iter().find(|e| e.1 == h).unwrap();
    let (wb_at, _, wb_kind, wb_src) = *start(h0);
    assert_eq!(wb_kind, TransferKind::WriteBack);
    assert_eq!(wb_src, MemNodeId(1));
    assert!(wb_at > end(a), "write-back before the writer ended");
    let (h2_at, ..) = *start(h2);
    let (h3_at, ..) = *start(h3);
    assert!(h3_at - h2_at > 7e-3, "h3 waits for h2 on the link");
    assert!(end(a) < h3_at, "A ends while h3 is still queued");
    let h3_arrival = log.arrivals.iter().find(|e| e.1 == h3).unwrap().0;
    assert!(h3_arrival - h3_at > 7e-3, "h3 takes 8 ms");
    // Submitted in GPU1's first pass after A's end: its thread first pushes the hint's two
    // internal tasks (1 µs each), then makes its progress call (2 µs); it moves after its
    // 10 µs of queueing, while h3 still waits.
    assert!(
        (wb_at - (end(a) + 2e-6 + 2e-6 + 10e-6)).abs() < 1e-12,
        "the idle write-back waits for nothing going out: {wb_at} vs {}",
        end(a)
    );
    assert!(wb_at < h3_at, "it overtakes h3, which comes in");
    assert!(wb_at < end(c), "it happens during the run, not at the end");
    assert_eq!(report.writebacks, 1);

    let (_, off) = run(false);
    let c_end = off.ends.iter().find(|e| e.1 == c).unwrap().0;
    let wb = off.starts.iter().find(|e| e.1 == h0).unwrap();
    assert!(
        wb.0 >= c_end,
        "without the hint h0 goes back only at the end"
    );
}

/// A CPU driver's input requests wake the sleeping drivers of its memory node: each
/// request's callback broadcasts to the threads waiting on the node
/// (`_starpu_fetch_task_input_cb`), and a woken driver makes a progress call and pops; one
/// that a broadcast reaches during its progress call polls again instead of sleeping. StarPU
/// 1.4.12 shows it on Cholesky with CPUs only (attila, n = 9600, dmda): as potrf's thread
/// pushes the trsm one per µs, the idle CPU workers stay awake and each pops its trsm at the
/// date of its push, not 1 µs later. By hand, dmda, five CPU workers and the default costs
/// (1 µs per push, per input requested and per progress call; no submission cost), root A
/// (one handle, 1 000 µs) and B1..B4 each reading A's handle and writing its own:
/// - A, pushed at 1 µs, is taken by worker 0 at its first pop (1 µs), starts after one
///   request at 2 µs and ends at 1 002 µs;
/// - worker 0 pushes B1 to itself at 1 003, B2 to worker 1 at 1 004, B3 to worker 2 at
///   1 005, B4 to worker 3 at 1 006 (the idle workers, lowest id first);
/// - worker 1, woken by its push, pops at 1 005 and starts B2 after two requests, at 1 007;
///   its first request broadcasts at 1 005, after the push of B3 at that date (which woke
///   worker 2: it pops at 1 006, starts B3 at 1 008) but before anyone woke workers 3 and 4:
///   they poll at 1 006, after that date's push, so worker 3 finds B4 and starts it at
///   1 008;
/// - worker 0 pops after its last push and its progress call, at 1 007: B1 at 1 009.
///
/// Without the broadcast worker 3 would be woken by B4's push and start it at 1 009.
#[test]
fn a_cpu_drivers_input_requests_wake_the_other_drivers_of_its_node() {
    let (g, a, bs) = fan_out(4, false);
    let text = hetsim_runtime::fixture::star_machine_text(0, 5) + "[runtime]\nsubmit_cost = 0\n";
    let m = hetsim_platform::machine::from_str(&text, "t.toml").unwrap();
    let mut s = crate::by_name("dmda", 1).unwrap();
    let mut who = WhoRan(Vec::new());
    simulate_observed(&m, &g, &RATES, s.as_mut(), &workers(5, 0), &mut who).unwrap();
    let us = |t: TaskId| {
        let &(_, w, at) = who.0.iter().find(|&&(x, ..)| x == t).unwrap();
        (w.0, (at * 1e6).round() as u64)
    };
    assert_eq!(us(a), (0, 2));
    let got: Vec<(u32, u64)> = bs.iter().map(|&t| us(t)).collect();
    assert_eq!(got, [(0, 1009), (1, 1007), (2, 1008), (3, 1008)]);
}

/// A GPU's driver holding a kernel in flight sleeps when its pop finds nothing, as an idle
/// driver does (`_starpu_cuda_driver_run_once` waits whenever its progress call did nothing
/// and its pull found no task): a push wakes it, and it pops after its progress call, not at
/// the push. StarPU 1.4.12 shows it on LU at sirocco under ws (n = 9600): the CPUs steal the
/// trsm pushed by the thread that ended getrf, the GPUs running gemms come 2 µs later. By
/// hand, ws, GPU0, GPU1 and one CPU (workers 0, 1, 2), the default costs and no submission
/// cost; roots A (1e9 flops, 10 ms on a GPU) and C (1e6 flops), then D reading C's output:
/// - the main thread pushes A and C round-robin from worker 0: A to GPU1, C to the CPU; each
///   pops its own (the drivers start awake); GPU1 pops again while A runs, finds nothing and
///   sleeps;
/// - C ends on the CPU at t (1 ms after its start); the CPU pushes D into its own deque at t + 1 µs (ws wakes every
///   sleeping driver: GPU0 and GPU1, each popping at t + 1 + 2 µs) and pops it itself after
///   its progress call, at t + 2 µs; D starts after two input requests, at t + 4 µs.
///
/// Were GPU1 awake while it holds A, it would steal D at the push, at t + 1 µs, and run it
/// after A.
#[test]
fn a_gpu_driver_holding_a_kernel_sleeps_until_a_push_wakes_it() {
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraphBuilder};
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    let (ha, hc, hd) = (
        b.add_handle(Handle::bytes(1000)).unwrap(),
        b.add_handle(Handle::bytes(1000)).unwrap(),
        b.add_handle(Handle::bytes(1000)).unwrap(),
    );
    let a = b
        .submit(cl, 1e9, 0, &[Access::new(ha, AccessMode::W)])
        .unwrap();
    let c = b
        .submit(cl, 1e6, 0, &[Access::new(hc, AccessMode::W)])
        .unwrap();
    let d = b
        .submit(
            cl,
            1e6,
            0,
            &[
                Access::new(hc, AccessMode::R),
                Access::new(hd, AccessMode::W),
            ],
        )
        .unwrap();
    let g = b.build().unwrap();
    let text = hetsim_runtime::fixture::star_machine_text(2, 3) + "[runtime]\nsubmit_cost = 0\n";
    let m = hetsim_platform::machine::from_str(&text, "t.toml").unwrap();
    let mut s = crate::by_name("ws", 1).unwrap();
    let mut who = WhoRan(Vec::new());
    simulate_observed(&m, &g, &RATES, s.as_mut(), &workers(1, 2), &mut who).unwrap();
    let ran = |t: TaskId| *who.0.iter().find(|&&(x, ..)| x == t).unwrap();
    assert_eq!((ran(a).1, ran(c).1), (WorkerId(1), WorkerId(2)));
    // C runs 1e6 flops on a 1 GFlop/s core.
    let c_end = ran(c).2 + 1e-3;
    let (_, on, at) = ran(d);
    assert_eq!(on, WorkerId(2), "the CPU takes D");
    assert!(
        (at - (c_end + 4e-6)).abs() < 1e-12,
        "D starts 4 µs after C's end: {at} vs {c_end}"
    );
}
