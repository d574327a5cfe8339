//! The machine files built from Liu et al. 2012, Kim et al. 2021 and Shimokawabe et al. 2013 and from public H100 specifications: each
//! loads, carries the figures of its source (typed here from the papers and validation CSVs), and
//! its Cholesky scenario runs to completion.

use crate::common::{close, repo};

use hetsim::machine::{self, Direction, Machine, TransferModel};
use hetsim::perfmodel::DeviceRef;

fn load(rel: &str) -> Machine {
    machine::load(repo(rel)).unwrap_or_else(|e| panic!("{rel} should load: {e}"))
}

const FILES: [&str; 4] = [
    "cray-xk6m-node",
    "dawning-tc3600-node",
    "hdpex-p100-node",
    "h100-sxm-8x",
];

/// Every codelet hetsim's Cholesky, LU and GEMM generators use.
const CODELETS: [&str; 14] = [
    "chol_model_potrf",
    "chol_model_trsm",
    "chol_model_syrk",
    "chol_model_gemm",
    "starpu_slu_lu_model_getrf",
    "starpu_slu_lu_model_trsm_ll",
    "starpu_slu_lu_model_trsm_ru",
    "starpu_slu_lu_model_gemm",
    "starpu_dlu_lu_model_getrf",
    "starpu_dlu_lu_model_trsm_ll",
    "starpu_dlu_lu_model_trsm_ru",
    "starpu_dlu_lu_model_gemm",
    "starpu_sgemm_gemm",
    "starpu_dgemm_gemm",
];

#[test]
fn each_file_loads_with_models_for_every_generator_codelet() {
    for f in FILES {
        let m = load(&format!("calibration/{f}.toml"));
        assert_eq!(m.name(), f);
        let pm = m.perf_models();
        for c in CODELETS {
            pm.predict_s(c, DeviceRef::Cpu, 1, 1e9)
                .unwrap_or_else(|e| panic!("{f}: {c} on cpu: {e:?}"));
            for g in m.gpus() {
                pm.predict_s(c, DeviceRef::Gpu(g.id), 1, 1e9)
                    .unwrap_or_else(|e| panic!("{f}: {c} on {}: {e:?}", g.name));
            }
        }
    }
}

#[test]
fn cray_xk6m_figures_of_seed_004() {
    let m = load("calibration/cray-xk6m-node.toml");
    // Shimokawabe et al. 2013 section 2.2: "a 16-core AMD Opteron 6272 processor", "a NVIDIA Tesla K20X GPU".
    assert_eq!(m.cpu_cores(), 16);
    assert_eq!(m.gpus().len(), 1);
    let g = &m.gpus()[0];
    // Shimokawabe et al. 2013 section 4 (seed004_stencil_facts.csv k20x_peak_flops, k20x_peak_bw):
    // 3950 GFlops single precision, 250 GB/s.
    assert_eq!(g.peak_flops_per_sec, Some(3950e9));
    assert_eq!(g.memory_bandwidth_bytes_per_sec, Some(250e9));
    // Shimokawabe et al. 2013 section 2.2: "16 GB DDR3 main memory".
    let ram = m.memory_node_by_name("RAM").unwrap();
    assert_eq!(ram.capacity_bytes, 16 * (1u64 << 30));
    for (src, dst) in [(ram.id, g.memory), (g.memory, ram.id)] {
        // Shimokawabe et al. 2013 Table 2 (seed004_bandwidth_models.csv, cray_xk6m_k20x,pcie):
        // B0 = 6.34 GB/s, t0 = 41.5 us.
        let Some(TransferModel::Stencil(s)) = &m.route(src, dst).unwrap().model else {
            panic!("the K20X routes should carry the stencil model")
        };
        assert!(close(s.b0_bytes_per_sec(), 6.34e9, 1e-9));
        assert!(close(s.t0_s(), 41.5e-6, 1e-9));
    }
}

#[test]
fn dawning_figures_of_seed_000() {
    let m = load("calibration/dawning-tc3600-node.toml");
    assert_eq!(m.gpus()[0].model, "Tesla C2050");
    let ram = m.memory_node_by_name("RAM").unwrap().id;
    let gpu = m.gpus()[0].memory;
    let Some(TransferModel::Piecewise(h2d)) = &m.route(ram, gpu).unwrap().model else {
        panic!("RAM -> CUDA0 should carry Table 1's piecewise model")
    };
    let Some(TransferModel::Piecewise(d2h)) = &m.route(gpu, ram).unwrap().model else {
        panic!("CUDA0 -> RAM should carry Table 1's piecewise model")
    };
    // Liu et al. 2012 Table 1 (seed000_p2p_overheads_us.csv), row "oscd,ord": 4 KB 45 us, 1 MB 381 us,
    // 256 MB 71799 us; row "Org": 4 KB 22 us, 1 MB 824 us, 256 MB 70209 us.
    for (pts, expect) in [
        (
            h2d.points(),
            [
                (4096.0, 45e-6),
                (1048576.0, 381e-6),
                (268435456.0, 71799e-6),
            ],
        ),
        (
            d2h.points(),
            [
                (4096.0, 22e-6),
                (1048576.0, 824e-6),
                (268435456.0, 70209e-6),
            ],
        ),
    ] {
        assert_eq!(pts.len(), 9);
        for (size, secs) in expect {
            let p = pts.iter().find(|p| p.0 == size).expect("table size");
            assert!(
                close(p.1, secs, 1e-9),
                "{size} B: {} s, expected {secs} s",
                p.1
            );
        }
    }
}

#[test]
fn hdpex_p100_figures_of_seed_001() {
    let m = load("calibration/hdpex-p100-node.toml");
    // Kim et al. 2021 Table 4: "Xeon E5-2650 v4, 12c", "256 GB"; the test platform used "3 x P100 per
    // SLED", Table 3 and section 5.1 say a SLED takes up to four: the file holds four, runs with
    // fewer use the first G (cluster `gpus_per_node`).
    assert_eq!(m.cpu_cores(), 12);
    assert_eq!(m.gpus().len(), 4);
    let ram = m.memory_node_by_name("RAM").unwrap();
    assert_eq!(ram.capacity_bytes, 256 * (1u64 << 30));
    let uplink = m.link_by_name("Uplink").unwrap().id;
    for g in m.gpus() {
        // Kim et al. 2021 section 4.1 (seed001_platform.csv, gpu): HBM2 "732.2 GB/s", "16 GB".
        assert_eq!(g.memory_bandwidth_bytes_per_sec, Some(732.2e9));
        assert_eq!(
            m.memory_node(g.memory).unwrap().capacity_bytes,
            16 * (1u64 << 30)
        );
        // Every host <-> GPU route crosses the one shared uplink, in its direction.
        let down = &m.route(ram.id, g.memory).unwrap().hops;
        let up = &m.route(g.memory, ram.id).unwrap().hops;
        assert!(
            down.iter()
                .any(|h| h.link == uplink && h.direction == Some(Direction::Down))
        );
        assert!(
            up.iter()
                .any(|h| h.link == uplink && h.direction == Some(Direction::Up))
        );
    }
}

#[test]
fn h100_node_is_a_shared_nothing_nvswitch() {
    let m = load("calibration/h100-sxm-8x.toml");
    assert_eq!(m.gpus().len(), 8);
    assert_eq!(m.cpu_cores(), 112);
    // NVIDIA H100 datasheet (SXM): NVLink 900 GB/s per GPU, modelled as 450 GB/s per direction.
    for i in 0..8 {
        let l = m.link_by_name(&format!("NVL{i}")).unwrap();
        assert_eq!(l.bandwidth_bytes_per_sec, 450e9);
    }
    for a in m.gpus() {
        for b in m.gpus().iter().filter(|b| b.id != a.id) {
            let names: Vec<String> = m
                .route(a.memory, b.memory)
                .unwrap()
                .hops
                .iter()
                .map(|h| m.hop_name(h))
                .collect();
            let (i, j) = (&a.name[4..], &b.name[4..]);
            assert_eq!(names, [format!("NVL{i}_UP"), format!("NVL{j}_DOWN")]);
        }
    }
}

#[test]
fn each_scenario_runs_to_completion() {
    for f in FILES {
        let path = repo(&format!("scenarios/cholesky-{f}.toml"));
        let sc = hetsim::scenario::load(&path, &[])
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let r = sc
            .run()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(r.tasks > 0 && r.makespan_s > 0.0, "{f}: {r:?}");
        assert!(r.gflops > 0.0 && r.gflops.is_finite(), "{f}: {r:?}");
    }
}
