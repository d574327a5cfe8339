//! The papers' own numbers, reproduced from the papers' own parameters: the expected values are
//! the figures printed in the papers (Kim et al. 2021, Blagojevic et al. 2008 and Shimokawabe et al. 2013), not hetsim's. The parameters come
//! from copies of `shared/validation/*.csv` in `tests/data/analytic/`; where a paper leaves a
//! parameter open, the value chosen is named and justified here and in `docs/analytic.md`.
//!
//! The last tests run `hetsim model` end to end (output, `--json`, `--sweep`, exit status 2 on
//! bad input).

use crate::common::hetsim;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use hetsim::analytic::hpl::{
    self, MclHplParams, MclLayer, equivalent_bandwidth_bytes_per_sec, latency_from_cycles_s,
    rpeak_flops_per_sec,
};
use hetsim::analytic::loggp::{Location, MhLogGpCalibration, mhloggp_p2p};
use hetsim::analytic::mmgp::{MmgpParams, mmgp, mmgp_search};
use hetsim::analytic::roofline::{self, improved_roofline_from_intensity};
use hetsim::analytic::stencil::{BandwidthModel, fit_bandwidth_model};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/analytic")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(data(name)).expect("test data file")
}

/// CSV rows (comments and the header skipped) as maps from column name to cell.
fn csv(name: &str) -> Vec<HashMap<String, String>> {
    let text = read(name);
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let header: Vec<String> = lines
        .next()
        .expect("header")
        .split(',')
        .map(String::from)
        .collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(|c| c.trim().to_string()))
                .collect()
        })
        .collect()
}

/// `key,value,...` files: the value of `key` as a number.
fn fact(name: &str, key: &str) -> f64 {
    csv(name)
        .iter()
        .find(|r| r["key"] == key)
        .unwrap_or_else(|| panic!("{key} in {name}"))["value"]
        .parse()
        .unwrap_or_else(|_| panic!("{key} in {name} is a number"))
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b) / b
}

fn assert_within(what: &str, got: f64, paper: f64, tol: f64) {
    let e = rel(got, paper);
    eprintln!("{what}: paper {paper:.6e}, hetsim {got:.6e}, relative error {e:+.4}");
    assert!(
        e.abs() <= tol,
        "{what}: hetsim {got:e} vs paper {paper:e}: relative error {e:+.4} beyond {tol}"
    );
}

// ---------------------------------------------------------------------------------------------
// Shimokawabe et al. 2013: Improved Roofline (eq. 1) with the device peaks the paper states (§4: "M2050 ...
// 1030 GFlops and 148 GB/s; K20X ... 3950 GFlops and 250 GB/s", single precision).

const FACTS: &str = "seed004_stencil_facts.csv";

fn k20x() -> roofline::Peaks {
    roofline::Peaks {
        peak_flops_per_sec: fact(FACTS, "k20x_peak_flops"),
        peak_bytes_per_sec: fact(FACTS, "k20x_peak_bw"),
    }
}

fn m2050() -> roofline::Peaks {
    roofline::Peaks {
        peak_flops_per_sec: fact(FACTS, "m2050_peak_flops"),
        peak_bytes_per_sec: fact(FACTS, "m2050_peak_bw"),
    }
}

#[test]
fn improved_roofline_diffusion_on_k20x_is_99_gflops() {
    let paper = fact(FACTS, "diffusion_roofline_k20x"); // 99.0e9
    let intensity = fact(FACTS, "diffusion_arith_intensity"); // 0.41
    let got = improved_roofline_from_intensity(&k20x(), intensity).unwrap();
    assert_within("diffusion K20X, F/B = 0.41", got, paper, 0.01);
    // 0.41 is 13/32 rounded: 13 flops per point over 32 bytes. With the unrounded intensity the
    // paper's figure comes out to 0.03 %, and its M2050 figure (56.8 GFlop/s, §6.1.2) too.
    let exact = improved_roofline_from_intensity(&k20x(), 13.0 / 32.0).unwrap();
    assert_within("diffusion K20X, F/B = 13/32", exact, paper, 0.001);
    let m = improved_roofline_from_intensity(&m2050(), 13.0 / 32.0).unwrap();
    assert_within("diffusion M2050, F/B = 13/32", m, 56.8e9, 0.001);
}

#[test]
fn improved_roofline_lbm_on_m2050_is_214_5_gflops() {
    let paper = fact(FACTS, "lbm_roofline_m2050"); // 214.5e9
    let intensity = fact(FACTS, "lbm_arith_intensity"); // 1.83
    let got = improved_roofline_from_intensity(&m2050(), intensity).unwrap();
    assert_within("LBM M2050, F/B = 1.83", got, paper, 0.001);
    // The first form of eq. 1 with F = 476 flops and B = F/1.83 bytes per point agrees.
    let per_point =
        roofline::improved_roofline_flops_per_sec(&m2050(), 476.0, 476.0 / intensity, 0.0).unwrap();
    assert!((per_point - got).abs() <= 1e-9 * got);
    // The measured 198.0 GFlop/s lies below the estimate, as the paper says (−7.7 %).
    assert!(fact(FACTS, "lbm_measured_m2050") < got);
}

#[test]
fn bandwidth_model_fit_recovers_the_papers_tables() {
    // Eq. 5 sampled at the paper's fitted B0, t0 (Tables 1-2) from 1 KB to 64 MB, then fitted
    // back by least squares on the times: the tables come back.
    for row in csv("seed004_bandwidth_models.csv") {
        let b0 = row["B0_GB_per_s"].parse::<f64>().unwrap() * 1e9;
        let t0 = row["t0_us"].parse::<f64>().unwrap() * 1e-6;
        let model = BandwidthModel {
            peak_bytes_per_sec: b0,
            latency_s: t0,
        };
        let samples: Vec<(f64, f64)> = (10..=26)
            .map(|e| {
                let s = f64::from(1u32 << e);
                (s, model.bandwidth_bytes_per_sec(s))
            })
            .collect();
        let fit = fit_bandwidth_model(&samples).unwrap();
        assert!(rel(fit.peak_bytes_per_sec, b0).abs() < 1e-9, "{row:?}");
        assert!(rel(fit.latency_s, t0).abs() < 1e-6, "{row:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Kim et al. 2021: MCL-HPL for one P100 at N = 44 000 (§4.1, Table 5 row 1N1G): 3840 GFlop/s.
//
// The paper's parameters: 732.2 GB/s HBM2 over 3584 cores = 204 MB/s per core (eq. 6); the
// equivalent bandwidth 13 GB/s (eq. 7, × 64 quad-words: the 4096-bit HBM2 interface); latency
// 1029 cycles (eq. 8). Left open by the text, chosen here:
//
// - the clock for Rpeak (eq. 10) and for the latency: the P100 PCIe's boost clock, 1303 MHz,
//   so Rpeak = 3584 × 1 DP flop/cycle/core × 1.303 GHz = 4.67 TFlop/s (NVIDIA's datasheet:
//   4.7). The base clock (1126 MHz, 4.04 TFlop/s) cannot be it: the measured 3882 GFlop/s
//   would be 96 % of peak.
// - NB: not given; 384, a usual NB for CUDA HPL on one GPU. The result moves by less than 4 %
//   over NB = 128 ... 1024 (checked below), all within the 5 % tolerance.
// - β is per 8-byte word (HPL's convention), from the equivalent bandwidth; P = Q = 1, one
//   layer (the GPU's memory).

const P100_CORES: u64 = 3584;
const P100_CLOCK_HZ: f64 = 1.303e9;

fn p100(n: u64, nb: u64, bandwidth_bytes_per_sec: f64) -> MclHplParams {
    MclHplParams {
        n,
        nb,
        p: 1,
        q: 1,
        gamma_flops_per_sec: rpeak_flops_per_sec(P100_CORES, 1.0, P100_CLOCK_HZ),
        layers: vec![MclLayer {
            name: "hbm2".into(),
            alpha_s: latency_from_cycles_s(1029.0, P100_CLOCK_HZ),
            bandwidth_bytes_per_sec,
            grid_p: 1,
            grid_q: 1,
        }],
    }
}

fn p100_equivalent_bandwidth() -> f64 {
    equivalent_bandwidth_bytes_per_sec(732.2e9, P100_CORES, 64)
}

#[test]
fn mcl_hpl_single_p100_is_3840_gflops() {
    let facts = "seed001_platform.csv";
    let n = fact(facts, "calibration_1N1G_N") as u64; // 44 000
    let paper = fact(facts, "calibration_1N1G_mcl_estimate_gflops") * 1e9; // 3840
    let bw = p100_equivalent_bandwidth();
    assert!(rel(bw, 13.0e9).abs() < 0.01, "eq. 7 gives 13 GB/s: {bw:e}");
    let got = hpl::mcl_hpl(&p100(n, 384, bw)).unwrap();
    assert_within("MCL-HPL P100 N=44000", got.flops_per_sec, paper, 0.05);
    // ... and close to the measurement too (3882 GFlop/s).
    let measured = fact(facts, "calibration_1N1G_measured_gflops") * 1e9;
    assert_within(
        "MCL-HPL P100 vs measured",
        got.flops_per_sec,
        measured,
        0.05,
    );
    // The open NB matters little as long as it pads N by little (eq. 17 pads N to whole
    // panels): every NB from 128 to 1024 in steps of 128 that pads N = 44 000 by less than 1 %
    // is within 5 %. NB = 768 and 896 pad it to 44 544 and 44 800 (+1.2 %, +1.8 %) and fall
    // 6 % and 8 % below the paper (printed, not asserted).
    for nb in (128..=1024).step_by(128) {
        let r = hpl::mcl_hpl(&p100(n, nb, bw)).unwrap();
        if r.n_new <= 1.01 * n as f64 {
            assert_within(&format!("NB = {nb}"), r.flops_per_sec, paper, 0.05);
        } else {
            let e = rel(r.flops_per_sec, paper);
            eprintln!(
                "NB = {nb}: N_new = {}, relative error {e:+.4} (not asserted)",
                r.n_new
            );
        }
    }
}

#[test]
fn mcl_hpl_simple_bandwidth_overestimates_as_the_paper_says() {
    // "L1 Simulated Simple": the total 732.2 GB/s instead of the equivalent bandwidth. The
    // paper gets 4347 GFlop/s (+12 % over the measurement); so does the model, within 5 %,
    // and it lies above both the measurement and the MCL estimate.
    let simple = hpl::mcl_hpl(&p100(44_000, 384, 732.2e9)).unwrap();
    let mcl = hpl::mcl_hpl(&p100(44_000, 384, p100_equivalent_bandwidth())).unwrap();
    assert_within("L1 Simple P100", simple.flops_per_sec, 4347e9, 0.05);
    assert!(simple.flops_per_sec > 3882e9 && simple.flops_per_sec > mcl.flops_per_sec);
}

// ---------------------------------------------------------------------------------------------
// Blagojevic et al. 2008: MMGP eq. 11 on the PBPI and RAxML parameters (§4.3-4.6), against values computed
// by hand below. The CSV's figures are sums over the whole run (a profile of a sequential run,
// §4.1), so N = 1. For PBPI the micro-benchmarked O_offload = 70 ns and T_CSW = 2 µs (§4.1) are
// included (O_COL is not given: 0); for RAxML the paper disregards everything but T_HPU, T_APU,
// C_APU (g = 0 in the CSV) and α_m.

fn mmgp_row(app: &str) -> MmgpParams {
    let rows = csv("seed002_mmgp_params.csv");
    let r = rows.iter().find(|r| r["app"] == app).expect("app row");
    let num = |k: &str| r[k].parse::<f64>().unwrap();
    let pbpi = app == "PBPI";
    MmgpParams {
        t_hpu_s: num("T_HPU"),
        t_apu_s: num("T_APU"),
        c_apu_s: num("C_APU"),
        o_offload_s: if pbpi { 70e-9 } else { 0.0 },
        g_s: num("g"),
        t_csw_s: if pbpi { 2e-6 } else { 0.0 },
        o_col_s: 0.0,
        alpha_m: num("alpha_m"),
        phases: 1.0,
    }
}

#[test]
fn mmgp_eq11_pbpi_by_hand() {
    let p = mmgp_row("PBPI");
    // α_m·T_HPU = 1.28 × 1.3 = 1.664; O_offload + T_CSW = 2.07e-6
    let o = 2.07e-6;
    let cases = [
        ((1, 1), 1.664 + 370.0 + 1.72 + o + 0.8),
        ((1, 16), 1.664 + 370.0 / 16.0 + 1.72 + o + 12.8),
        ((4, 4), 1.664 + 23.125 + 1.72 + o + 3.2),
        ((8, 2), 1.664 + 23.125 + 1.72 + o + 1.6),
        ((16, 1), 1.664 + 23.125 + 1.72 + o + 0.8),
        ((2, 3), 1.664 + 370.0 / 6.0 + 1.72 + o + 2.4),
    ];
    for ((m, pp), want) in cases {
        let got = mmgp(&p, m, pp).unwrap().total_s;
        assert!(
            rel(got, want).abs() < 1e-12,
            "PBPI ({m},{pp}): {got} vs {want}"
        );
    }
}

#[test]
fn mmgp_eq11_raxml_by_hand() {
    let p = mmgp_row("RAxML");
    // α_m·T_HPU = 1.28 × 8.8 = 11.264; C_APU = 157 is never divided
    let cases = [
        ((1, 1), 11.264 + 118.0 + 157.0),
        ((1, 8), 11.264 + 14.75 + 157.0),
        ((4, 4), 11.264 + 7.375 + 157.0),
        ((16, 1), 11.264 + 7.375 + 157.0),
        ((3, 5), 11.264 + 118.0 / 15.0 + 157.0),
    ];
    for ((m, pp), want) in cases {
        let got = mmgp(&p, m, pp).unwrap().total_s;
        assert!(
            rel(got, want).abs() < 1e-12,
            "RAxML ({m},{pp}): {got} vs {want}"
        );
    }
}

#[test]
fn mmgp_best_configuration_on_16_spes() {
    // PBPI: with α_m constant (the paper's 1.28 for every m) eq. 11 is T_APU/(mp) + p·g plus
    // constants, so the search picks m·p = 16 with the fewest offload gaps: (16, 1), 27.309 s.
    // The paper reports (4, 4) as the measured and modelled optimum (Fig. 7); eq. 11 with the
    // published parameters does not reproduce that choice (at (4, 4) it gives 29.709 s), which
    // would need an α_m growing with m or a T_CSW paid per thread. See docs/analytic.md.
    let pbpi = mmgp_search(&mmgp_row("PBPI"), 16).unwrap();
    assert_eq!((pbpi.best.m, pbpi.best.p), (16, 1));
    assert!(rel(pbpi.best.total_s, 27.309 + 2.07e-6).abs() < 1e-12);
    // 50 feasible (m, p) with m·p ≤ 16.
    assert_eq!(pbpi.all.len(), 50);
    // RAxML: g = 0, so every m·p = 16 ties at 175.639 s; the tie rule (smaller p) gives the
    // paper's optimum, task-level parallelism on all 16 SPEs with no data-level split (Fig. 8).
    let rax = mmgp_search(&mmgp_row("RAxML"), 16).unwrap();
    assert_eq!((rax.best.m, rax.best.p), (16, 1));
    assert!(rel(rax.best.total_s, 175.639).abs() < 1e-12);
}

// ---------------------------------------------------------------------------------------------
// Liu et al. 2012: the calibration tables, read from the validation CSVs, equal the built-in ones.

#[test]
fn mhloggp_csv_tables_equal_the_built_in_calibration() {
    let cal = MhLogGpCalibration::from_csv(
        &read("seed000_p2p_overheads_us.csv"),
        &read("seed000_gap.csv"),
    )
    .unwrap();
    assert_eq!(cal, MhLogGpCalibration::dawning_tc3600());
    // 1 MB GPU→GPU, not the first message: o_s = org + oscn = 824 + 65; l = 755;
    // o_r = orn + ord = 67 + 381; (k − 1)·G = 1048575 × 0.000845 µs.
    let d = mhloggp_p2p(&cal, Location::Gpu, Location::Gpu, 1048576.0, false).unwrap();
    let want = (824.0 + 65.0 + 755.0 + 67.0 + 381.0 + 1048575.0 * 0.000845) * 1e-6;
    assert!(rel(d.total_s, want).abs() < 1e-12);
}

// ---------------------------------------------------------------------------------------------
// `hetsim model` end to end.

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {}; stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("utf-8")
}

fn fails(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(2), "exit status of {out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(needle), "stderr lacks `{needle}`: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn cli_roofline_json_matches_the_library() {
    let out = hetsim(&[
        "model",
        "roofline",
        "--param",
        "peak_flops_per_sec=1030e9",
        "--param",
        "peak_bytes_per_sec=148e9",
        "--param",
        "intensity_flops_per_byte=1.83",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["kind"], "roofline");
    let p = v["result"]["improved_flops_per_sec"].as_f64().unwrap();
    assert!(rel(p, 214.5e9).abs() < 0.001, "{v}");
}

#[test]
fn cli_mcl_hpl_from_file_reproduces_the_p100() {
    let out = hetsim(&[
        "model",
        "mcl-hpl",
        "--from",
        data("mcl-hpl-p100.toml").to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let p = v["result"]["flops_per_sec"].as_f64().unwrap();
    assert!(rel(p, 3840e9).abs() < 0.05, "{v}");
    // The same with the library's own derivation of the parameters.
    let lib = hpl::mcl_hpl(&p100(44_000, 384, p100_equivalent_bandwidth())).unwrap();
    assert!(rel(p, lib.flops_per_sec).abs() < 1e-4);
}

#[test]
fn cli_sweep_prints_one_row_per_value() {
    let out = hetsim(&[
        "model",
        "mmgp",
        "--from",
        data("mmgp-pbpi.toml").to_str().unwrap(),
        "--param",
        "m=1",
        "--sweep",
        "p=1,2,4,8,16",
    ]);
    let text = stdout(&out);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with(char::is_numeric))
        .collect();
    assert_eq!(rows.len(), 5, "{text}");
    let out = hetsim(&[
        "model",
        "mmgp",
        "--from",
        data("mmgp-pbpi.toml").to_str().unwrap(),
        "--param",
        "m=1",
        "--sweep",
        "p=1,2",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["rows"].as_array().unwrap().len(), 2);
}

#[test]
fn cli_bad_input_exits_2_naming_the_parameter() {
    fails(&hetsim(&["model", "nosuch"]), "unknown model kind `nosuch`");
    fails(
        &hetsim(&["model", "hpl", "--param", "n=1000", "--param", "nb=100"]),
        "missing parameter `p`",
    );
    fails(
        &hetsim(&["model", "roofline", "--param", "peak_flops=1"]),
        "unknown parameter `peak_flops`",
    );
    fails(
        &hetsim(&["model", "roofline", "--param", "peak_flops_per_sec=fast"]),
        "peak_flops_per_sec",
    );
    fails(
        &hetsim(&["model", "mmgp", "--param", "m"]),
        "expected KEY=VALUE",
    );
    fails(
        &hetsim(&["model", "mcl-hpl", "--from", "/nonexistent/x.toml"]),
        "cannot read",
    );
}

#[test]
fn cli_help_lists_kinds_and_parameters() {
    let text = stdout(&hetsim(&["model", "--help"]));
    for kind in [
        "loggp",
        "mhloggp",
        "bcast",
        "hpl",
        "mcl-hpl",
        "mmgp",
        "mmgp-search",
        "roofline",
        "stencil",
    ] {
        assert!(text.contains(kind), "--help lacks {kind}");
    }
    assert!(text.contains("gamma_flops_per_sec"));
    let params = stdout(&hetsim(&["model", "stencil", "--help-params"]));
    assert!(params.contains("ib_t0_s"), "{params}");
}
