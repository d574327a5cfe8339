//! Kernel performance models: lookup order (history, regression, flop rate; a GPU's own model,
//! then its kind's), the no-model error, noise (statistics, support, determinism), the
//! `[[codelets]]` format with includes, and the mirage/attila entries against StarPU's files.

// Figures are typed exactly as StarPU's files write them.
#![allow(clippy::excessive_precision)]

use crate::common::{close, repo};

use std::path::Path;

use hetsim::machine::{self, GpuId, Machine};
use hetsim::perfmodel::{
    DeviceKind, DeviceRef, DeviceSelector, Histogram, History, HistoryEntry, NoModelReason, Noise,
    PerfModels, rng_from_seed,
};

const CPU: DeviceRef = DeviceRef::Cpu;
const CUDA0: DeviceRef = DeviceRef::Gpu(GpuId(0));
const CUDA1: DeviceRef = DeviceRef::Gpu(GpuId(1));

/// A machine with 4 cores and two GPUs, CUDA0 and CUDA1; codelets appended by each test.
const BASE: &str = r#"
[machine]
name = "t"
[[memory_nodes]]
name = "RAM"
kind = "ram"
capacity = "16 GiB"
[[memory_nodes]]
name = "CUDA0"
kind = "gpu"
capacity = "4 GiB"
[[memory_nodes]]
name = "CUDA1"
kind = "gpu"
capacity = "4 GiB"
[[cpus]]
count = 4
model = "c"
memory = "RAM"
[[gpus]]
name = "CUDA0"
model = "g"
memory = "CUDA0"
[[gpus]]
name = "CUDA1"
model = "g"
memory = "CUDA1"
[[links]]
name = "PCIe"
bandwidth = "6 GB/s"
[[routes]]
src = "RAM"
dst = "CUDA0"
links = ["PCIe"]
symmetric = true
[[routes]]
src = "RAM"
dst = "CUDA1"
links = ["PCIe"]
symmetric = true
"#;

fn machine_with(extra: &str) -> Machine {
    machine::from_str(&format!("{BASE}{extra}"), "t.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn models_with(extra: &str) -> PerfModels {
    machine_with(extra).perf_models().clone()
}

/// gemm: CPU history at two sizes; `gpu` kind history at 1000 B and 2000 B; CUDA1's own history
/// at 1000 B (a slower GPU) and a flop rate.
const GEMM: &str = r#"
[[codelets]]
name = "gemm"

[[codelets.models]]
device = "cpu"
history = [
  { size = "1000 B", mean = "10 ms", stddev = "1 ms", samples = 20 },
  { size = "4 kB", mean = "80 ms" },
]

[[codelets.models]]
device = "gpu"
history = [
  { size = "1000 B", mean = "1 ms", stddev = "0.1 ms" },
  { size = "2000 B", mean = "3 ms" },
]

[[codelets.models]]
device = "CUDA1"
history = [{ size = "1000 B", mean = "2 ms", stddev = "0.2 ms" }]
flop_rate = "500 Gflop/s"
"#;

#[test]
fn history_exact_size_lookup() {
    let pm = models_with(GEMM);
    assert_eq!(pm.predict_s("gemm", CPU, 1000, 0.0).unwrap(), 10e-3);
    assert_eq!(pm.predict_s("gemm", CPU, 4000, 0.0).unwrap(), 80e-3);
    // No interpolation between history sizes: 2000 B has no CPU model.
    assert!(pm.predict_s("gemm", CPU, 2000, 0.0).is_err());
    let e = pm
        .model_for("gemm", DeviceSelector::Kind(DeviceKind::Cpu))
        .unwrap()
        .history()
        .get(1000)
        .unwrap();
    assert_eq!((e.stddev_s, e.samples), (1e-3, Some(20)));
}

#[test]
fn a_gpu_prefers_its_own_model_then_its_kind() {
    let pm = models_with(GEMM);
    // CUDA0 has no model of its own: the `gpu` kind model.
    assert_eq!(pm.predict_s("gemm", CUDA0, 1000, 0.0).unwrap(), 1e-3);
    // CUDA1's own history wins over the kind's at the same size.
    assert_eq!(pm.predict_s("gemm", CUDA1, 1000, 0.0).unwrap(), 2e-3);
    // CUDA1's own flop rate comes before the kind's history: the GPU's own model is tried
    // completely first. 2 Gflop at 500 Gflop/s = 4 ms.
    assert_eq!(pm.predict_s("gemm", CUDA1, 2000, 2e9).unwrap(), 4e-3);
    // Without flops, the flop rate does not apply and the kind's history does.
    assert_eq!(pm.predict_s("gemm", CUDA1, 2000, 0.0).unwrap(), 3e-3);
    // Keys give the same answers.
    let k = pm.key("gemm", CUDA1).unwrap();
    assert_eq!(k.device(), CUDA1);
    assert_eq!(pm.predict_key_s(k, 1000, 0.0).unwrap(), 2e-3);
    assert_eq!(pm.predict_key_s(k, 2000, 0.0).unwrap(), 3e-3);
}

#[test]
fn regression_for_an_unseen_size() {
    let pm = models_with(
        r#"
[[codelets]]
name = "potrf"
[[codelets.models]]
device = "gpu"
history = [{ size = "409600 B", mean = "11 ms" }]
regression = { a = "0.5 ns", b = 1.5, c = "20 us", min_size = "1 MB", max_size = "10 MB" }
"#,
    );
    // The history size is still exact.
    assert_eq!(pm.predict_s("potrf", CUDA0, 409_600, 0.0).unwrap(), 11e-3);
    // 4e6 B: 0.5e-9 s * (4e6)^1.5 + 20e-6 s = 0.5e-9 * 8e9 + 20e-6 = 4.00002 s.
    let t = pm.predict_s("potrf", CUDA0, 4_000_000, 0.0).unwrap();
    assert!(close(t, 4.00002, 1e-12), "{t}");
    // 1e6 B (the lower bound): 0.5e-9 * 1e9 + 20e-6 = 0.50002 s.
    let t = pm.predict_s("potrf", CUDA1, 1_000_000, 0.0).unwrap();
    assert!(close(t, 0.50002, 1e-12), "{t}");
    // Outside [min_size, max_size]: no model.
    let e = pm.predict_s("potrf", CUDA0, 10_000_001, 0.0).unwrap_err();
    assert!(matches!(e.reason, NoModelReason::SizeNotCovered { .. }));
    // A constant: only `c`.
    let pm = models_with(
        "[[codelets]]\nname = \"k\"\n[[codelets.models]]\ndevice = \"cpu\"\nregression = { c = \"1.25 ms\" }\n",
    );
    assert_eq!(pm.predict_s("k", CPU, 0, 0.0).unwrap(), 1.25e-3);
    assert_eq!(pm.predict_s("k", CPU, 123_456_789, 0.0).unwrap(), 1.25e-3);
}

#[test]
fn flop_rate_model() {
    let pm = models_with(
        r#"
[[codelets]]
name = "sgemm"
[[codelets.models]]
device = "gpu"
flop_rate = "500 GFlop/s"
[[codelets.models]]
device = "cpu"
flop_rate = "10e9 flop/s"
"#,
    );
    // An sgemm on 960 tiles: 2 * 960^3 = 1.769472e9 flop; at 500 Gflop/s, 3.538944 ms.
    let t = pm
        .predict_s("sgemm", CUDA0, 11_059_200, 1.769472e9)
        .unwrap();
    assert!(close(t, 3.538944e-3, 1e-12), "{t}");
    // At 10 Gflop/s: 0.1769472 s.
    let t = pm.predict_s("sgemm", CPU, 11_059_200, 1.769472e9).unwrap();
    assert!(close(t, 0.1769472, 1e-12), "{t}");
    // A task without a flop count gets no duration from a flop rate.
    assert!(pm.predict_s("sgemm", CPU, 11_059_200, 0.0).is_err());
}

#[test]
fn no_model_errors_name_codelet_device_size_and_the_sizes_that_exist() {
    let pm = models_with(GEMM);
    let e = pm.predict_s("gemm", CUDA0, 1234, 0.0).unwrap_err();
    assert_eq!(e.codelet, "gemm");
    assert_eq!(e.device, "CUDA0");
    assert_eq!(e.size_bytes, Some(1234));
    assert_eq!(
        e.reason,
        NoModelReason::SizeNotCovered {
            available_sizes: vec![1000, 2000]
        }
    );
    let msg = e.to_string();
    for needle in ["`gemm`", "CUDA0", "size 1234 B", "1000 B, 2000 B"] {
        assert!(msg.contains(needle), "{needle:?} not in {msg}");
    }
    // CUDA1: its own sizes and its kind's, merged.
    let e = pm.predict_s("gemm", CUDA1, 1234, 0.0).unwrap_err();
    assert!(e.to_string().contains("1000 B, 2000 B"), "{e}");

    let e = pm.predict_s("trsm", CPU, 1000, 0.0).unwrap_err();
    assert!(matches!(e.reason, NoModelReason::UnknownCodelet { .. }));
    assert!(e.to_string().contains("`trsm`"), "{e}");
    assert!(
        e.to_string().contains("codelets with models: `gemm`"),
        "{e}"
    );

    let pm = models_with(
        "[[codelets]]\nname = \"g\"\n[[codelets.models]]\ndevice = \"CUDA1\"\nflop_rate = \"1e9 flop/s\"\n",
    );
    let e = pm.key("g", CUDA0).unwrap_err();
    assert_eq!(
        e.reason,
        NoModelReason::NoDeviceModel {
            devices: vec!["CUDA1".to_string()]
        }
    );
    assert!(e.to_string().contains("on device CUDA0:"), "{e}");
    assert!(pm.key("g", CPU).is_err());
}

#[test]
fn without_noise_a_draw_is_the_mean() {
    let pm = models_with(GEMM);
    let mut rng = rng_from_seed(7);
    for _ in 0..1000 {
        assert_eq!(pm.draw_s("gemm", CPU, 1000, 0.0, &mut rng).unwrap(), 10e-3);
        assert_eq!(pm.draw_s("gemm", CUDA1, 1000, 0.0, &mut rng).unwrap(), 2e-3);
    }
}

/// Sample mean and standard deviation of `n` draws.
fn stats(n: usize, mut draw: impl FnMut() -> f64) -> (f64, f64, f64, f64) {
    let xs: Vec<f64> = (0..n).map(|_| draw()).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, var.sqrt(), lo, hi)
}

/// GEMM with `[perfmodels] noise = { kind = "<kind>"<rest> }`.
fn with_noise(kind: &str, rest: &str) -> PerfModels {
    models_with(&format!(
        "[perfmodels]\nnoise = {{ kind = \"{kind}\"{rest} }}\n{GEMM}"
    ))
}

#[test]
fn normal_and_lognormal_match_the_entry_mean_and_deviation() {
    // gemm on the CPU at 1000 B: mean 10 ms, deviation 1 ms. 20 000 draws with a fixed seed:
    // the standard error of the mean is 0.07 %, of the deviation about 0.5 %.
    for kind in ["normal", "lognormal"] {
        let pm = with_noise(kind, "");
        let key = pm.key("gemm", CPU).unwrap();
        let mut rng = rng_from_seed(2024);
        let (mean, sd, lo, _) = stats(20_000, || pm.draw_key_s(key, 1000, 0.0, &mut rng).unwrap());
        assert!(close(mean, 10e-3, 0.01), "{kind}: mean {mean}");
        assert!(close(sd, 1e-3, 0.03), "{kind}: deviation {sd}");
        assert!(lo > 0.0, "{kind}: {lo}");
        // Predictions stay the mean.
        assert_eq!(pm.predict_key_s(key, 1000, 0.0).unwrap(), 10e-3);
    }
}

#[test]
fn regression_and_flop_rate_draws_use_rel_stddev() {
    let pm = models_with(
        r#"
[perfmodels]
noise = { kind = "lognormal" }
[[codelets]]
name = "f"
[[codelets.models]]
device = "gpu"
flop_rate = "1 Tflop/s"
rel_stddev = 0.05
"#,
    );
    let mut rng = rng_from_seed(11);
    let (mean, sd, _, _) = stats(20_000, || pm.draw_s("f", CUDA0, 0, 2e9, &mut rng).unwrap());
    assert!(close(mean, 2e-3, 0.01), "{mean}");
    assert!(close(sd, 0.05 * 2e-3, 0.03), "{sd}");
}

#[test]
fn histogram_draws_stay_in_its_support_and_keep_the_mean() {
    // Bins [0.9, 1.0), [1.0, 1.1), [1.1, 2.0) with weights 2, 7, 1: mean of the bin midpoints
    // (2 * 0.95 + 7 * 1.05 + 1 * 1.55) / 10 = 1.08; draws are mean * x / 1.08.
    let pm = models_with(&format!(
        "[perfmodels]\nnoise = {{ kind = \"histogram\", edges = [0.9, 1.0, 1.1, 2.0], weights = [2, 7, 1] }}\n{GEMM}"
    ));
    let mut rng = rng_from_seed(5);
    let (mean, _, lo, hi) = stats(20_000, || {
        pm.draw_s("gemm", CPU, 1000, 0.0, &mut rng).unwrap()
    });
    let (min_s, max_s) = (10e-3 * 0.9 / 1.08, 10e-3 * 2.0 / 1.08);
    assert!(
        lo >= min_s && hi <= max_s,
        "[{lo}, {hi}] not in [{min_s}, {max_s}]"
    );
    assert!(close(mean, 10e-3, 0.01), "{mean}");

    // Samples, as a codelet's own noise.
    let pm = models_with(&GEMM.replace(
        "name = \"gemm\"\n",
        "name = \"gemm\"\nnoise = { kind = \"histogram\", samples = [1.0, 1.0, 1.0, 3.0] }\n",
    ));
    assert_eq!(
        pm.codelet("gemm")
            .unwrap()
            .noise_override()
            .unwrap()
            .kind_name(),
        "histogram"
    );
    let mut rng = rng_from_seed(6);
    for _ in 0..1000 {
        let d = pm.draw_s("gemm", CPU, 1000, 0.0, &mut rng).unwrap();
        // mean of the samples 1.5: draws are 10 ms * 1/1.5 or 10 ms * 3/1.5.
        assert!(
            close(d, 10e-3 / 1.5, 1e-12) || close(d, 20e-3, 1e-12),
            "{d}"
        );
    }
}

#[test]
fn same_seed_same_durations_other_seed_other_durations() {
    for (noise, rest) in [
        ("normal", ""),
        ("lognormal", ""),
        ("histogram", ", samples = [1, 2, 3, 5]"),
    ] {
        let pm = with_noise(noise, rest);
        let key = pm.key("gemm", CUDA1).unwrap();
        let run = |seed: u64| -> Vec<f64> {
            let mut rng = rng_from_seed(seed);
            (0..100)
                .map(|_| pm.draw_key_s(key, 1000, 0.0, &mut rng).unwrap())
                .collect()
        };
        assert_eq!(run(1), run(1), "{noise}");
        assert_ne!(run(1), run(2), "{noise}");
    }
}

#[test]
fn set_noise_everywhere_overrides_the_file() {
    let mut pm = with_noise("normal", "");
    pm.set_noise_everywhere(Noise::None);
    let mut rng = rng_from_seed(1);
    assert_eq!(pm.draw_s("gemm", CPU, 1000, 0.0, &mut rng).unwrap(), 10e-3);
}

#[test]
fn models_built_in_code() {
    let mut pm = PerfModels::new(
        vec!["CUDA0".into()],
        Noise::Histogram(Histogram::from_samples(vec![1.0, 2.0]).unwrap()),
    );
    let c = pm.add_codelet("x", Some(Noise::None)).unwrap();
    let h = History::new(vec![HistoryEntry::new(8, 1.0, 0.5, None).unwrap()]).unwrap();
    let m = hetsim::perfmodel::DeviceModel::new(DeviceSelector::Gpu(GpuId(0)), h, None, None, 0.0)
        .unwrap();
    pm.add_model(c, m.clone()).unwrap();
    assert!(pm.add_model(c, m).is_err(), "one model per device");
    assert!(pm.add_codelet("x", None).is_err(), "one codelet per name");
    let mut rng = rng_from_seed(0);
    assert_eq!(pm.draw_s("x", CUDA0, 8, 0.0, &mut rng).unwrap(), 1.0);
}

#[test]
fn included_files_add_codelets_and_locate_their_errors() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("perfmodel_include");
    std::fs::create_dir_all(dir.join("models")).unwrap();
    let main = dir.join("m.toml");
    std::fs::write(
        &main,
        format!("{BASE}[perfmodels]\ninclude = [\"models/k.toml\"]\n{GEMM}"),
    )
    .unwrap();
    let inc = dir.join("models/k.toml");
    std::fs::write(
        &inc,
        "[[codelets]]\nname = \"potrf\"\n[[codelets.models]]\ndevice = \"CUDA0\"\nhistory = [{ size = \"8 B\", mean = \"5 us\" }]\n",
    )
    .unwrap();
    let m = machine::load(&main).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.perf_models().codelets().len(), 2);
    let t = m.perf_models().predict_s("potrf", CUDA0, 8, 0.0).unwrap();
    assert!(close(t, 5e-6, 1e-12), "{t}");

    // An error inside the included file names that file, its line and field.
    std::fs::write(
        &inc,
        "[[codelets]]\nname = \"potrf\"\n[[codelets.models]]\ndevice = \"CUDA0\"\nhistory = [{ size = \"8 B\", mean = \"-5 us\" }]\n",
    )
    .unwrap();
    let e = machine::load(&main).unwrap_err();
    assert_eq!(e.location.file.as_deref(), Some(inc.as_path()), "{e}");
    assert_eq!(e.location.line, Some(5), "{e}");
    assert_eq!(
        e.location.field.as_deref(),
        Some("codelets[0].models[0].history[0].mean")
    );

    // A codelet defined in both files.
    std::fs::write(
        &inc,
        "[[codelets]]\nname = \"gemm\"\n[[codelets.models]]\ndevice = \"CUDA0\"\nflop_rate = \"1e9 flop/s\"\n",
    )
    .unwrap();
    let e = machine::load(&main).unwrap_err();
    assert_eq!(e.location.file.as_deref(), Some(inc.as_path()), "{e}");
    assert!(e.message.contains("duplicate codelet `gemm`"), "{e}");
    assert!(e.message.contains("m.toml"), "names the first file: {e}");
}

#[test]
fn truncated_codelet_sections_never_panic() {
    let text = format!(
        "{BASE}[perfmodels]\nnoise = {{ kind = \"histogram\", edges = [1, 2], weights = [1] }}\n{GEMM}"
    );
    for cut in (0..text.len()).filter(|&c| text.is_char_boundary(c)) {
        let _ = machine::from_str(&text[..cut], "truncated.toml");
    }
}

// ---------------------------------------------------------------------------------------------
// The shipped calibrations against StarPU's files. Expected values are typed from
// tests/data/starpu-samples/starpu-sampling/codelets/45/ (columns: hash, size, flops,
// mean (us), dev (us), sum, sum2, n).

fn load(rel: &str) -> Machine {
    machine::load(repo(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Check the history entry of (codelet, device) at `size` against a StarPU line.
fn check_entry(
    m: &Machine,
    codelet: &str,
    device: DeviceSelector,
    size: u64,
    mean_us: f64,
    dev_us: f64,
    n: u64,
) {
    let pm = m.perf_models();
    let e = pm
        .model_for(codelet, device)
        .unwrap_or_else(|| panic!("{codelet}: no model for {device:?}"))
        .history()
        .get(size)
        .unwrap_or_else(|| panic!("{codelet} {device:?}: no entry of size {size}"));
    assert!(
        close(e.mean_s, mean_us * 1e-6, 1e-12),
        "{codelet}: {}",
        e.mean_s
    );
    assert!(
        close(e.stddev_s, dev_us * 1e-6, 1e-12),
        "{codelet}: {}",
        e.stddev_s
    );
    assert_eq!(e.samples, Some(n), "{codelet}");
}

const CPU_MODEL: DeviceSelector = DeviceSelector::Kind(DeviceKind::Cpu);

#[test]
fn mirage_kernel_models_match_starpu_files() {
    let m = load("calibration/mirage.toml");
    // chol_model_gemm.mirage line 39 (cpu0_impl0):
    // d46431bb 1228800 6.553600e+07 3.262643e+03 7.810468e+01 1.532463e+07 5.002746e+10 4697
    check_entry(
        &m,
        "chol_model_gemm",
        CPU_MODEL,
        1228800,
        3.262643e+03,
        7.810468e+01,
        4697,
    );
    // chol_model_gemm.mirage line 76 (cuda0_impl0):
    // 24c84a50 11059200 1.769472e+09 2.805491e+03 6.931361e+01 3.683329e+07 1.033985e+11 13129
    let cuda0 = DeviceSelector::Gpu(GpuId(0));
    check_entry(
        &m,
        "chol_model_gemm",
        cuda0,
        11059200,
        2.805491e+03,
        6.931361e+01,
        13129,
    );
    // chol_model_gemm.mirage line 146 (cuda2_impl0, Comb3):
    // 24c84a50 11059200 1.769472e+09 2.828209e+03 7.003112e+01 3.675541e+07 1.040157e+11 12996
    let cuda2 = DeviceSelector::Gpu(GpuId(2));
    check_entry(
        &m,
        "chol_model_gemm",
        cuda2,
        11059200,
        2.828209e+03,
        7.003112e+01,
        12996,
    );
    // chol_model_potrf.mirage line 41 (cpu0_impl0):
    // 617e5fe6 3686400 2.953730e+08 1.884969e+04 7.370619e+02 2.111165e+06 3.985565e+10 112
    check_entry(
        &m,
        "chol_model_potrf",
        CPU_MODEL,
        3686400,
        1.884969e+04,
        7.370619e+02,
        112,
    );
    // starpu_slu_lu_model_getrf.mirage line 39 (cpu0_impl0):
    // afdd228b 1638400 0.000000e+00 3.789658e+04 4.182352e+03 1.250587e+06 4.797021e+10 33
    check_entry(
        &m,
        "starpu_slu_lu_model_getrf",
        CPU_MODEL,
        1638400,
        3.789658e+04,
        4.182352e+03,
        33,
    );
    // starpu_sgemm_gemm.mirage line 87 (cuda0_impl0):
    // 24c84a50 11059200 1.769472e+09 2.878495e+03 2.262529e+01 3.051205e+05 8.783425e+08 106
    check_entry(
        &m,
        "starpu_sgemm_gemm",
        cuda0,
        11059200,
        2.878495e+03,
        2.262529e+01,
        106,
    );

    // What a scheduler sees for a 960-tile gemm on CUDA2 is that mean, in seconds.
    let t = m
        .perf_models()
        .predict_s(
            "chol_model_gemm",
            DeviceRef::Gpu(GpuId(2)),
            11059200,
            1.769472e9,
        )
        .unwrap();
    assert!(close(t, 2.828209e-3, 1e-12), "{t}");
    // The Cholesky, LU and GEMM codelets have a CPU model and one per GPU, none for the `gpu`
    // kind: each of their files has combinations cpu0_impl0 and cuda{0,1,2}_impl0.
    let mut names: Vec<String> = ["potrf", "trsm", "syrk", "gemm"]
        .iter()
        .map(|k| format!("chol_model_{k}"))
        .collect();
    for p in ["s", "d"] {
        for k in ["getrf", "trsm_ll", "trsm_ru", "gemm"] {
            names.push(format!("starpu_{p}lu_lu_model_{k}"));
        }
        names.push(format!("starpu_{p}gemm_gemm"));
    }
    assert_eq!(names.len(), 14);
    for n in &names {
        let c = m
            .perf_models()
            .codelet(n)
            .unwrap_or_else(|| panic!("no {n}"));
        assert_eq!(c.models().len(), 4, "{n}");
    }
    // The importer keeps every codelet file: codelets/45/ holds 53 files `*.mirage`, each with
    // at least one CPU or CUDA history entry.
    assert_eq!(m.perf_models().codelets().len(), 53);
}

#[test]
fn attila_kernel_models_match_starpu_files() {
    let m = load("calibration/attila.toml");
    // chol_model_potrf.attila line 73 (cuda0_impl0; 960 tiles, 960^2 * 4 B):
    // 617e5fe6 3686400 2.953730e+08 4.425357e+04 2.763302e+03 7.523107e+05 3.342224e+10 17
    let cuda0 = DeviceSelector::Gpu(GpuId(0));
    check_entry(
        &m,
        "chol_model_potrf",
        cuda0,
        3686400,
        4.425357e+04,
        2.763302e+03,
        17,
    );
    // chol_model_gemm.attila line 74 (cuda0_impl0):
    // 24c84a50 11059200 1.769472e+09 2.795670e+03 5.624760e+01 1.818024e+07 5.084653e+10 6503
    check_entry(
        &m,
        "chol_model_gemm",
        cuda0,
        11059200,
        2.795670e+03,
        5.624760e+01,
        6503,
    );
    // chol_model_trsm.attila line 142 (cuda2_impl0):
    // ff82dda0 7372800 8.856576e+08 6.297128e+03 2.218514e+02 1.542796e+06 9.727245e+09 245
    let cuda2 = DeviceSelector::Gpu(GpuId(2));
    check_entry(
        &m,
        "chol_model_trsm",
        cuda2,
        7372800,
        6.297128e+03,
        2.218514e+02,
        245,
    );
    // attila has no 32x32 entries: the smallest Cholesky gemm is 320 tiles.
    let e = m
        .perf_models()
        .predict_s("chol_model_gemm", DeviceRef::Cpu, 12288, 6.5536e4)
        .unwrap_err();
    assert!(
        e.to_string().contains("1228800 B, 4915200 B, 11059200 B"),
        "{e}"
    );
    // The message docs/machine-format.md shows.
    let e = m
        .perf_models()
        .predict_s("chol_model_gemm", DeviceRef::Gpu(GpuId(0)), 12288, 6.5536e4)
        .unwrap_err();
    let doc = std::fs::read_to_string(repo("docs/machine-format.md")).unwrap();
    assert!(
        doc.contains(&format!("\n{e}\n")),
        "the docs should show: {e}"
    );
}

#[test]
fn the_example_in_the_docs_loads() {
    let doc = std::fs::read_to_string(repo("docs/machine-format.md")).unwrap();
    let section = doc
        .split("## Kernel performance models")
        .nth(1)
        .and_then(|s| s.split("### Example").nth(1))
        .expect("docs/machine-format.md has a kernel-model example");
    let toml = section
        .split("```toml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the example is in a ```toml block");
    let pm = models_with(toml);
    assert_eq!(pm.default_noise().kind_name(), "lognormal");
    // chol_model_gemm.mirage line 41: 8.778020e+04 us on one core.
    let t = pm
        .predict_s("chol_model_gemm", CPU, 11059200, 1.769472e9)
        .unwrap();
    assert!(close(t, 8.778020e-2, 1e-12), "{t}");
    // CUDA1 at 960 tiles: its own entry; CUDA0: the flop rate, 1.769472e9 / 1e12 s.
    let t = pm
        .predict_s("chol_model_gemm", CUDA1, 11059200, 1.769472e9)
        .unwrap();
    assert!(close(t, 3.1e-3, 1e-12), "{t}");
    let t = pm
        .predict_s("chol_model_gemm", CUDA0, 11059200, 1.769472e9)
        .unwrap();
    assert!(close(t, 1.769472e-3, 1e-12), "{t}");
    // potrf on 640 tiles (1638400 B): 1.1e-11 s * 1638400^1.5 + 150 us
    // = 1.1e-11 * 2097152000 + 150e-6 = 0.023218672 s.
    let t = pm.predict_s("chol_model_potrf", CPU, 1638400, 0.0).unwrap();
    assert!(close(t, 0.023218672, 1e-12), "{t}");
    assert_eq!(
        pm.noise(pm.key("chol_model_potrf", CPU).unwrap().codelet())
            .kind_name(),
        "histogram"
    );
}

// ---------------------------------------------------------------------------------------------
// The calibrated models drive a run: every task of the generators' Cholesky, LU and GEMM on
// the calibrated tile sizes finds its model on every worker.

mod runs {
    use super::*;
    use hetsim::runtime::CalibratedKernels;
    use hetsim::runtime::{KernelTimes, RunConfig, simulate};
    use hetsim::workload::{Precision, TaskGraph, cholesky, gemm, lu};

    /// Every task has a model on the CPU and on every GPU (workers as the runtime builds them
    /// are private, so the devices are checked directly).
    fn every_task_has_a_model(m: &Machine, g: &TaskGraph) {
        let mut devices = vec![DeviceRef::Cpu];
        devices.extend((0..m.gpus().len() as u32).map(|i| DeviceRef::Gpu(GpuId(i))));
        for task in g.tasks() {
            let name = g.codelet_name(task.codelet);
            for &d in &devices {
                m.perf_models()
                    .predict_s(name, d, task.model_size_bytes(), task.flops())
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }

    fn run(m: &Machine, g: &TaskGraph, seed: u64) -> f64 {
        every_task_has_a_model(m, g);
        let kernels = CalibratedKernels::new(m.perf_models());
        let mut sched = hetsim::sched::by_name("eager", seed).unwrap();
        let config = RunConfig {
            seed,
            ..RunConfig::default()
        };
        let k: &dyn KernelTimes = &kernels;
        simulate(m, g, k, sched.as_mut(), &config)
            .unwrap_or_else(|e| panic!("{e}"))
            .makespan_s
    }

    #[test]
    fn calibrated_machines_run_the_generators_on_their_tile_sizes() {
        for file in ["calibration/mirage.toml", "calibration/attila.toml"] {
            let m = load(file);
            for nb in [320, 640, 960] {
                let graphs = [
                    cholesky(4 * nb, nb, Precision::Single).unwrap(),
                    lu(3 * nb, nb, Precision::Single).unwrap(),
                    lu(3 * nb, nb, Precision::Double).unwrap(),
                ];
                for g in &graphs {
                    let t = run(&m, g, 1);
                    assert!(t > 0.0 && t.is_finite(), "{file} nb={nb}: {t}");
                }
            }
            // starpu_sgemm_gemm on 960 tiles (11059200 B).
            let g = gemm(2 * 960, 960, Precision::Single).unwrap();
            assert!(run(&m, &g, 1) > 0.0);
        }
    }

    #[test]
    fn with_noise_the_seed_decides_the_run() {
        let text = std::fs::read_to_string(repo("calibration/attila.toml")).unwrap();
        let text = text.replace(
            "[machine]\n",
            "[perfmodels]\nnoise = { kind = \"lognormal\" }\n\n[machine]\n",
        );
        let m = machine::from_str(&text, "attila-noisy.toml").unwrap();
        let g = cholesky(4 * 960, 960, Precision::Single).unwrap();
        assert_eq!(run(&m, &g, 7), run(&m, &g, 7));
        assert_ne!(run(&m, &g, 7), run(&m, &g, 8));
        // Without noise the eager run is the same whatever the seed.
        let quiet = load("calibration/attila.toml");
        assert_eq!(run(&quiet, &g, 7), run(&quiet, &g, 8));
    }
}
