//! hetsim's HPL against SimGrid's SMPI running HPL 2.0 (`docs/validation/smpi-hpl.csv`, the
//! oracle described in `docs/validation/README.md`, "SMPI-HPL"): every cell of the CSV that
//! hetsim expresses, on the platform mirroring the HD-PEX cluster (`net`) and on its twin where
//! communication is free (`free`), both built here from the shipped calibration files.

use hetsim::cluster::{Cluster, Switch};
use hetsim::machine::Machine;
use hetsim::programs::simulate_program_default as run;
use hetsim::workload::{HplSpec, PivotSearch, ProgramGenerator};

/// One row of the CSV.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Cell {
    pub grid_p: u32,
    pub grid_q: u32,
    pub n: u64,
    pub nb: u64,
    pub depth: u32,
    pub bcast: String,
    pub swap: String,
    pub pfact: String,
    pub rfact: String,
    pub nbmin: u64,
    pub ndiv: u64,
    pub sim_s: f64,
    pub platform: String,
    pub nodes: u32,
    pub gpus_per_node: u32,
}

/// The CSV's rows (its `#` lines are provenance).
pub fn cells() -> Vec<Cell> {
    let path = hetsim_testkit::repo("docs/validation/smpi-hpl.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    csv::Reader::from_reader(body.as_bytes())
        .deserialize()
        .map(|r| r.unwrap())
        .collect()
}

/// The HD-PEX node as SMPI's platform has it: the shipped node file plus a route between every
/// two GPUs (one flow over both slots and both directions of the uplink, as SMPI's
/// intra-node route, with its 1.17 µs); `free`: every link at 10^6 GB/s and no latency.
fn node(free: bool) -> Machine {
    let mut text =
        std::fs::read_to_string(hetsim_testkit::repo("calibration/hdpex-p100-node.toml")).unwrap();
    let (lat, bw) = if free {
        ("0 us", "1000000 GB/s")
    } else {
        ("1.17 us", "1000000 GB/s")
    };
    if free {
        text = text.replace("bandwidth = \"15.75 GB/s\"", "bandwidth = \"1000000 GB/s\"");
    }
    text.push_str(&format!(
        "\n[[links]]\nname = \"IntraNode\"\nbandwidth = \"{bw}\"\nlatency = \"{lat}\"\nsharing = \"fatpipe\"\n"
    ));
    for a in 0..4 {
        for b in 0..4 {
            if a != b {
                text.push_str(&format!(
                    "\n[[routes]]\nsrc = \"CUDA{a}\"\ndst = \"CUDA{b}\"\nlinks = [\"Slot{a}_UP\", \
                     \"Uplink_UP\", \"Uplink_DOWN\", \"Slot{b}_DOWN\", \"IntraNode\"]\n"
                ));
            }
        }
    }
    hetsim::machine::from_str(&text, "hdpex-p100-node-smpi.toml").unwrap()
}

/// The HD-PEX cluster as SMPI's platform has it: the shipped cluster file with GPU-direct
/// messages (SMPI's inter-node message is one flow, GPU to GPU) and [`node`]'s nodes.
pub fn cluster(free: bool, nodes: u32, gpus: u32) -> Cluster {
    let shipped =
        hetsim::cluster::load(hetsim_testkit::repo("calibration/hdpex-p100-cluster.toml")).unwrap();
    let mut nic = shipped.nic().unwrap().clone();
    let mut switch = shipped.switch().clone();
    if free {
        nic.bandwidth_bytes_per_sec = 1e15;
        nic.latency_s = 0.0;
        switch = match switch {
            Switch::Crossbar { .. } => Switch::Crossbar { latency_s: 0.0 },
            other => other,
        };
    }
    Cluster::single_node(node(free))
        .with_network(nic, switch, true, shipped.overheads().clone())
        .unwrap()
        .with_shape(nodes, gpus)
        .unwrap()
}

/// The cell's HPL.dat as a workload, with the oracle's kernel model (`docs/validation/README.md`:
/// the scenario's rates and the panel copies as delays at 15.75 GB/s).
pub fn spec(c: &Cell) -> HplSpec {
    let text = format!(
        "n = {}\nnb = {}\np = {}\nq = {}\nlookahead = {}\nbcast = \"{}\"\nswap = \"{}\"\n\
         pfact = \"{}\"\nrfact = \"{}\"\nnbmin = {}\nndiv = {}\nswap_threshold = 64\n\
         panel = \"cpu\"\nprocess = \"sequential\"\npanel_copy_rate = \"15.75 GB/s\"\n\
         gpu_dgemm = {{ peak = \"4.7 Tflop/s\", e_max = 0.8915, s_half = 32 }}\n\
         cpu_dgemm = {{ peak = \"35.2 Gflop/s\", e_max = 0.9, s_half = 32 }}\n",
        c.n, c.nb, c.grid_p, c.grid_q, c.depth, c.bcast, c.swap, c.pfact, c.rfact, c.nbmin, c.ndiv
    );
    toml::from_str(&text).unwrap()
}

/// hetsim's time for a cell, s.
pub fn simulate(c: &Cell) -> f64 {
    simulate_with(c, PivotSearch::Messages)
}

/// hetsim's time for a cell with the pivot searches written as `mode` says, s.
fn simulate_with(c: &Cell, mode: PivotSearch) -> f64 {
    let cl = cluster(c.platform == "free", c.nodes, c.gpus_per_node);
    let mut spec = spec(c);
    spec.pivot_search = mode;
    let prog = spec.generate(&cl).unwrap();
    run(&prog, &cl).unwrap().makespan_s
}

/// The cell's key, as the table prints it and the tolerances name it.
fn key(c: &Cell) -> String {
    format!(
        "{}x{}:{}:{}:{}:{}:K{}G{}",
        c.grid_p, c.grid_q, c.n, c.bcast, c.swap, c.platform, c.nodes, c.gpus_per_node
    )
}

/// hetsim's relative deviation from SMPI must stay within 5 % on every cell of the grids that
/// `grid` selects (no cell is exempt: the oracle charges the same kernel model, so what is left
/// is the communication and its overlap, which the model must get right).
fn check(grid: impl Fn(&Cell) -> bool) {
    let chosen: Vec<Cell> = cells().into_iter().filter(|c| grid(c)).collect();
    assert!(!chosen.is_empty(), "no cell selected");
    let mut bad = Vec::new();
    for c in &chosen {
        let h = simulate(c);
        let dev = (h - c.sim_s) / c.sim_s;
        // The table of docs/hpl.md (`-- --nocapture` shows it).
        println!(
            "{:50} smpi {:.4} s hetsim {h:.4} s {:+.1} %",
            key(c),
            c.sim_s,
            100.0 * dev
        );
        if dev.abs() > 0.05 {
            bad.push(format!(
                "{}: smpi {:.4} s hetsim {h:.4} s ({:+.1} %)",
                key(c),
                c.sim_s,
                100.0 * dev
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} cells outside 5 %:\n{}",
        bad.len(),
        chosen.len(),
        bad.join("\n")
    );
}

#[test]
fn the_oracle_covers_every_grid_size_and_setting_of_the_issue() {
    // Grids 1x2, 2x1, 2x2, 1x4, 4x1, 2x4, 3x4, 4x4 at N = 20 000 and 40 000, each with the
    // default HPL.dat (1ring, binary exchange) on the network; SWAP and BCAST varied on grids
    // where they act (P > 1 for SWAP, Q > 1 for BCAST).
    let all = cells();
    assert_eq!(all.len(), 139);
    for (p, q) in [
        (1, 2),
        (2, 1),
        (2, 2),
        (1, 4),
        (4, 1),
        (2, 4),
        (3, 4),
        (4, 4),
    ] {
        for n in [20_000, 40_000] {
            let at = |c: &&Cell| c.grid_p == p && c.grid_q == q && c.n == n && c.platform == "net";
            assert!(
                all.iter()
                    .filter(at)
                    .any(|c| c.bcast == "1ring" && c.swap == "binary-exchange")
            );
            if p > 1 {
                assert!(all.iter().filter(at).any(|c| c.swap == "spread-roll"));
            }
            if q > 1 {
                assert!(all.iter().filter(at).any(|c| c.bcast == "long"));
            }
        }
    }
}

#[test]
fn one_process_row_or_column_within_5_percent() {
    check(|c| c.grid_p == 1 || c.grid_q == 1);
}

#[test]
fn grids_2x2_and_2x4_within_5_percent() {
    check(|c| c.grid_p == 2 && c.grid_q > 1);
}

#[test]
fn grid_3x4_within_5_percent() {
    check(|c| c.grid_p == 3);
}

#[test]
fn grid_4x4_within_5_percent() {
    check(|c| c.grid_p == 4 && c.grid_q == 4);
}

/// The collapsed pivot search (for scale) against the messages it stands for and against SMPI,
/// on every cell `grid` selects: within 7 % of the messages mode and 9 % of SMPI. Not the
/// messages mode's 5 %: on grids of 3 or 4 process rows across nodes the searches' messages
/// of consecutive columns overlap and share the NICs, which the idle-network time per column
/// misses, so collapsed runs up to 7 % fast there (`docs/hpl.md`, "Scale").
fn check_collapsed(grid: impl Fn(&Cell) -> bool) {
    let chosen: Vec<Cell> = cells().into_iter().filter(|c| grid(c)).collect();
    assert!(!chosen.is_empty(), "no cell selected");
    let mut bad = Vec::new();
    for c in &chosen {
        let m = simulate_with(c, PivotSearch::Messages);
        let h = simulate_with(c, PivotSearch::Collapsed);
        let (dm, ds) = ((h - m) / m, (h - c.sim_s) / c.sim_s);
        println!(
            "{:50} smpi {:.4} s messages {m:.4} s collapsed {h:.4} s {:+.2} % vs messages, \
             {:+.1} % vs smpi",
            key(c),
            c.sim_s,
            100.0 * dm,
            100.0 * ds
        );
        if dm.abs() > 0.07 || ds.abs() > 0.09 {
            bad.push(format!(
                "{}: collapsed {h:.4} s, messages {m:.4} s ({:+.2} %), smpi {:.4} s ({:+.1} %)",
                key(c),
                100.0 * dm,
                c.sim_s,
                100.0 * ds
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} cells outside 7 % of the messages mode or 9 % of SMPI:\n{}",
        bad.len(),
        chosen.len(),
        bad.join("\n")
    );
}

#[test]
fn collapsed_pivot_search_on_one_or_two_process_rows() {
    check_collapsed(|c| c.grid_p <= 2);
}

#[test]
fn collapsed_pivot_search_on_three_or_four_process_rows() {
    check_collapsed(|c| c.grid_p >= 3);
}
