//! The fuzz targets, one per parser, each fed structured mutations of real files
//! ([`crate::mutate`]). A target's closure panics only if hetsim does: an input error is the
//! expected answer to most mutants, and an internal error (a bug by hetsim's own account) is
//! turned into a panic so that it is reported too.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::TestRunner;

use hetsim::Error;
use hetsim::calibrate::{self, ImportOptions};
use hetsim::cli::model::{ModelArgs, render};
use hetsim::fluid::SharingMode;
use hetsim::scenario::{self, Override};

use crate::mutate::{self, EXTREMES};
use crate::{Drawn, Target, draw};

/// Every target, in the order `all` runs them.
pub static TARGETS: &[Target] = &[
    Target {
        name: "machine",
        help: "machine TOML (calibration/*.toml) -> machine::from_str, summary",
        draw: machine,
    },
    Target {
        name: "scenario",
        help: "scenario TOML with random --set overrides -> scenario::from_str, load_cluster",
        draw: scenario,
    },
    Target {
        name: "cluster",
        help: "cluster TOML (calibration/*-cluster.toml) -> cluster::from_str, summary",
        draw: cluster,
    },
    Target {
        name: "net",
        help: "net JSON (scenarios/net-mirage-pcie.json) -> netcase::parse, run",
        draw: net,
    },
    Target {
        name: "starpu-bus",
        help: "StarPU bus files (.config, .bandwidth, .latency, .affinity) -> import-starpu",
        draw: starpu_bus,
    },
    Target {
        name: "starpu-codelets",
        help: "StarPU codelet history files (codelets/45/*) -> import-starpu",
        draw: starpu_codelets,
    },
    Target {
        name: "starpu-platform",
        help: "StarPU/SimGrid platform XML (bus/*.platform.v4.xml) -> import-starpu",
        draw: starpu_platform,
    },
    Target {
        name: "model",
        help: "hetsim model KIND --param ... (every registered model)",
        draw: model,
    },
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

const MACHINES: &[(&str, &str)] = &[
    (
        "tsubame2-node.toml",
        include_str!("../../calibration/tsubame2-node.toml"),
    ),
    (
        "hdpex-p100-node.toml",
        include_str!("../../calibration/hdpex-p100-node.toml"),
    ),
    (
        "h100-sxm-8x.toml",
        include_str!("../../calibration/h100-sxm-8x.toml"),
    ),
    (
        "hannibal.toml",
        include_str!("../../calibration/hannibal.toml"),
    ),
    (
        "qs20-cell.toml",
        include_str!("../../calibration/qs20-cell.toml"),
    ),
];

const CLUSTERS: &[(&str, &str)] = &[
    (
        "example-cluster.toml",
        include_str!("../../calibration/example-cluster.toml"),
    ),
    (
        "tsubame2-cluster.toml",
        include_str!("../../calibration/tsubame2-cluster.toml"),
    ),
    (
        "hdpex-p100-cluster.toml",
        include_str!("../../calibration/hdpex-p100-cluster.toml"),
    ),
    (
        "cray-xk6m-cluster.toml",
        include_str!("../../calibration/cray-xk6m-cluster.toml"),
    ),
    (
        "dawning-tc3600-cluster.toml",
        include_str!("../../calibration/dawning-tc3600-cluster.toml"),
    ),
];

const SCENARIOS: &[(&str, &str)] = &[
    (
        "cholesky-tsubame2-node.toml",
        include_str!("../../scenarios/cholesky-tsubame2-node.toml"),
    ),
    (
        "cholesky-mirage-mpi.toml",
        include_str!("../../scenarios/cholesky-mirage-mpi.toml"),
    ),
    (
        "stencil-diffusion-tsubame2.toml",
        include_str!("../../scenarios/stencil-diffusion-tsubame2.toml"),
    ),
    (
        "hpl-hdpex-p100.toml",
        include_str!("../../scenarios/hpl-hdpex-p100.toml"),
    ),
    (
        "offload-pbpi.toml",
        include_str!("../../scenarios/offload-pbpi.toml"),
    ),
    (
        "bcast-example-cluster.toml",
        include_str!("../../scenarios/bcast-example-cluster.toml"),
    ),
    (
        "matmul-dawning-tc3600.toml",
        include_str!("../../scenarios/matmul-dawning-tc3600.toml"),
    ),
];

/// Scenario keys worth overriding (from `docs/scenarios.md`), plus a few that do not exist.
const KEYS: &[&str] = &[
    "scenario.machine",
    "scenario.name",
    "machine.nodes",
    "machine.gpus_per_node",
    "machine.ranks_per_node",
    "workload.kind",
    "workload.n",
    "workload.nb",
    "workload.precision",
    "workload.p",
    "workload.q",
    "workload.algorithm",
    "workload.bytes",
    "workload.method",
    "scheduler.name",
    "scheduler.beta",
    "run.seed",
    "run.noise",
    "run.ncpu",
    "run.ncuda",
    "run.prefetch",
    "run.sharing",
    "nope",
    "workload.n.x",
    "run",
];

/// Pick a seed and mutate it: (seed name, mutated text).
fn mutated(
    runner: &mut TestRunner,
    seeds: &[(&'static str, &'static str)],
) -> (&'static str, String) {
    let (i, edits) = draw(runner, (0..seeds.len(), mutate::edits(4)));
    let (name, text) = seeds[i];
    (name, mutate::apply(text, &edits))
}

fn machine(runner: &mut TestRunner) -> Drawn {
    let (name, text) = mutated(runner, MACHINES);
    let path = repo().join("calibration").join(name);
    let shown = format!("# machine {name}\n{text}");
    (
        shown,
        Box::new(move || {
            if let Ok(m) = hetsim::machine::from_str(&text, &path) {
                let _ = m.summary();
            }
        }),
    )
}

fn cluster(runner: &mut TestRunner) -> Drawn {
    let (name, text) = mutated(runner, CLUSTERS);
    let path = repo().join("calibration").join(name);
    let shown = format!("# cluster {name}\n{text}");
    (
        shown,
        Box::new(move || {
            if let Ok(c) = hetsim::cluster::from_str(&text, &path) {
                let _ = c.summary();
            }
        }),
    )
}

fn scenario(runner: &mut TestRunner) -> Drawn {
    let (name, text) = mutated(runner, SCENARIOS);
    let value = prop_oneof![
        (0..EXTREMES.len()).prop_map(|i| EXTREMES[i].to_string()),
        (0u64..100_000).prop_map(|v| v.to_string()),
        "[a-z_]{1,10}",
        "[ -~]{0,10}",
    ];
    let sets = draw(
        runner,
        proptest::collection::vec((0..KEYS.len(), value), 0..4),
    );
    let sets: Vec<String> = sets
        .into_iter()
        .map(|(k, v)| format!("{}={v}", KEYS[k]))
        .collect();
    let path = repo().join("scenarios").join(name);
    let shown = format!("# scenario {name}, --set {sets:?}\n{text}");
    (
        shown,
        Box::new(move || {
            let ovs: Vec<Override> = sets
                .iter()
                .filter_map(|s| Override::parse_set(s).ok())
                .collect();
            if let Ok(sc) = scenario::from_str(&text, &path, &ovs) {
                let _ = sc.load_cluster();
            }
        }),
    )
}

fn net(runner: &mut TestRunner) -> Drawn {
    let (_, text) = mutated(
        runner,
        &[(
            "net-mirage-pcie.json",
            include_str!("../../scenarios/net-mirage-pcie.json"),
        )],
    );
    (
        text.clone(),
        Box::new(move || {
            if let Ok(case) = hetsim::netcase::parse(&text) {
                let _ = case.run(SharingMode::Plain);
                let _ = case.run(SharingMode::SimGrid);
            }
        }),
    )
}

/// The calibration directory of [`calibration_dir`], once made.
static CALIBRATION_DIR: OnceLock<tempfile::TempDir> = OnceLock::new();

/// Remove the calibration directory, if a target made it: a static is never dropped, and the
/// fuzzer ends with `process::exit`.
pub fn remove_scratch() {
    if let Some(d) = CALIBRATION_DIR.get() {
        let _ = std::fs::remove_dir_all(d.path());
    }
}

/// A calibration directory of host `hannibal` (bus files and three codelet files), made once
/// per process; each input overwrites one file and puts it back.
fn calibration_dir() -> &'static Path {
    CALIBRATION_DIR
        .get_or_init(|| {
            let d = tempfile::Builder::new()
                .prefix("hetsim-fuzz-starpu")
                .tempdir()
                .expect("a temporary directory");
            hetsim_testkit::hannibal_calibration(
                d.path(),
                &[
                    "chol_model_gemm",
                    "chol_model_potrf",
                    "starpu_slu_lu_model_getrf",
                ],
            )
            .expect("copy the hannibal sample");
            d
        })
        .path()
}

/// Import the calibration directory with `rel` replaced by `text`, then put the original
/// back. An internal error (the importer wrote a machine file the loader refuses) panics.
fn import_with(rel: &str, text: &str) {
    let dir = calibration_dir();
    let file = dir.join(rel);
    let original = std::fs::read(&file).ok();
    std::fs::write(&file, text).expect("write the mutated file");
    let opts = ImportOptions {
        dir: dir.to_path_buf(),
        host: "hannibal".into(),
        ..ImportOptions::default()
    };
    let outcome = calibrate::import_starpu(&opts)
        .map_err(Error::from)
        .and_then(|im| calibrate::imported_toml(&im));
    match original {
        Some(o) => std::fs::write(&file, o).expect("restore the file"),
        None => std::fs::remove_file(&file).expect("remove the file"),
    }
    if let Err(Error::Internal(m)) = outcome {
        panic!("internal error: {m}");
    }
}

fn starpu_bus(runner: &mut TestRunner) -> Drawn {
    const BUS: &[(&str, &str)] = &[
        (
            "bus/hannibal.config",
            include_str!("../../tests/data/starpu-samples/starpu-sampling/bus/hannibal.config"),
        ),
        (
            "bus/hannibal.bandwidth",
            include_str!("../../tests/data/starpu-samples/starpu-sampling/bus/hannibal.bandwidth"),
        ),
        (
            "bus/hannibal.latency",
            include_str!("../../tests/data/starpu-samples/starpu-sampling/bus/hannibal.latency"),
        ),
        (
            "bus/hannibal.affinity",
            include_str!("../../tests/data/starpu-samples/starpu-sampling/bus/hannibal.affinity"),
        ),
    ];
    let (rel, text) = mutated(runner, BUS);
    (
        format!("# {rel}\n{text}"),
        Box::new(move || import_with(rel, &text)),
    )
}

fn starpu_codelets(runner: &mut TestRunner) -> Drawn {
    const CODELETS: &[(&str, &str)] = &[
        (
            "codelets/45/chol_model_gemm.hannibal",
            include_str!(
                "../../tests/data/starpu-samples/starpu-sampling/codelets/45/chol_model_gemm.mirage"
            ),
        ),
        (
            "codelets/45/chol_model_potrf.hannibal",
            include_str!(
                "../../tests/data/starpu-samples/starpu-sampling/codelets/45/chol_model_potrf.hannibal"
            ),
        ),
        (
            "codelets/45/starpu_slu_lu_model_getrf.hannibal",
            include_str!(
                "../../tests/data/starpu-samples/starpu-sampling/codelets/45/starpu_slu_lu_model_getrf.idgraf"
            ),
        ),
    ];
    let (rel, text) = mutated(runner, CODELETS);
    (
        format!("# {rel}\n{text}"),
        Box::new(move || import_with(rel, &text)),
    )
}

fn starpu_platform(runner: &mut TestRunner) -> Drawn {
    const PLATFORM: &[(&str, &str)] = &[(
        "bus/hannibal.platform.v4.xml",
        include_str!(
            "../../tests/data/starpu-samples/starpu-sampling/bus/hannibal.platform.v4.xml"
        ),
    )];
    let (rel, text) = mutated(runner, PLATFORM);
    (
        format!("# {rel}\n{text}"),
        Box::new(move || import_with(rel, &text)),
    )
}

fn model(runner: &mut TestRunner) -> Drawn {
    let models = hetsim::analytic::MODELS;
    let m = &models[draw(runner, 0..models.len())];
    let names: Vec<String> = m
        .params
        .iter()
        .map(|p| p.name.replace("<k>", "1"))
        .chain([
            "l2_alpha_s".into(),
            "l9_bandwidth_bytes_per_sec".into(),
            "bogus".into(),
        ])
        .collect();
    let value = prop_oneof![
        (0..EXTREMES.len()).prop_map(|i| EXTREMES[i].trim_matches('"').to_string()),
        any::<f64>().prop_map(|v| v.to_string()),
        (0u64..5000).prop_map(|v| v.to_string()),
        (1e-9f64..1e13).prop_map(|v| format!("{v:e}")),
        "[a-z]{1,8}",
    ];
    let params = draw(
        runner,
        proptest::collection::vec((0..names.len(), value), 0..(names.len() + 3)),
    );
    let params: Vec<String> = params
        .into_iter()
        .map(|(k, v)| format!("{}={v}", names[k]))
        .collect();
    let sweep = draw(runner, proptest::option::weighted(0.2, 0..names.len()))
        .map(|k| format!("{}=1,2,1e999,0", names[k]));
    let args = ModelArgs {
        kind: m.name.to_string(),
        params,
        from: None,
        json: false,
        sweep,
        help_params: false,
    };
    (
        format!("{args:?}"),
        Box::new(move || {
            if let Err(Error::Internal(m)) = render(&args) {
                panic!("internal error: {m}");
            }
        }),
    )
}
