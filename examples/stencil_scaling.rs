//! Strong scaling of the seed 004 stencils: simulated by hetsim (the stencil workload run by the
//! MPI executor on the cluster files) and predicted by the paper's own model (seed 004 eqs. 2-5,
//! `hetsim::analytic::stencil`), for both methods, on the grids of the paper's Figs. 7, 8 and 11.
//!
//! Usage: `cargo run --release --example stencil_scaling -- OUT_STEM [STEPS]` writes
//! `OUT_STEM.csv` and one SVG per figure, `OUT_STEM-<figure>.svg`. `scripts/stencil-scaling.sh`
//! runs it. Points whose subdomain does not fit in GPU memory (two copies of the state: diffusion
//! 2 × 4 B per point, LBM 2 × 19 × 4 B) are left out, as no run could have measured them.

use std::fmt::Write as _;

use hetsim::analytic::stencil::{BandwidthModel, Mesh2d, StencilParams, stencil};
use hetsim::cluster;
use hetsim::mpi::exec::{ExecOptions, run};
use hetsim::workload::{ProgramGenerator, StencilSpec};

/// One figure of the paper.
struct Figure {
    /// Short name, used in file names.
    name: &'static str,
    /// Title of the plot.
    title: &'static str,
    /// Cluster file.
    cluster: &'static str,
    /// Preset.
    preset: &'static str,
    /// Grids (nx, ny, nz).
    grids: &'static [(u64, u64, u64)],
    /// Node counts.
    nodes: &'static [u32],
    /// State bytes per point in GPU memory (two time levels).
    state_bytes_per_point: f64,
    /// The paper's PCIe fit (Tables 1-2), for its model.
    pcie: BandwidthModel,
    /// The paper's network fit (Tables 1-2), for its model.
    net: BandwidthModel,
    /// Peak flop/s and memory bytes/s of the GPU (§4), for the model's P.
    peaks: (f64, f64),
}

const TSUBAME_NODES: &[u32] = &[1, 2, 4, 8, 16, 32, 64, 128];
const CRAY_NODES: &[u32] = &[1, 2, 4, 8, 16, 32, 40];
const M2050: (f64, f64) = (1030e9, 148e9);
const K20X: (f64, f64) = (3950e9, 250e9);

fn bw(b0: f64, t0: f64) -> BandwidthModel {
    BandwidthModel {
        peak_bytes_per_sec: b0,
        latency_s: t0,
    }
}

fn figures() -> Vec<Figure> {
    vec![
        Figure {
            name: "diffusion-tsubame2",
            title: "Diffusion on TSUBAME 2.0 (seed 004 Fig. 7)",
            cluster: "calibration/tsubame2-cluster.toml",
            preset: "diffusion",
            grids: &[(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048)],
            nodes: TSUBAME_NODES,
            state_bytes_per_point: 8.0,
            pcie: bw(4.29e9, 16.9e-6),
            net: bw(5.80e9, 7.47e-6),
            peaks: M2050,
        },
        Figure {
            name: "diffusion-cray-xk6m",
            title: "Diffusion on the Cray XK6m (seed 004 Fig. 8)",
            cluster: "calibration/cray-xk6m-cluster.toml",
            preset: "diffusion",
            grids: &[(512, 512, 512), (1024, 1024, 1024)],
            nodes: CRAY_NODES,
            state_bytes_per_point: 8.0,
            pcie: bw(6.34e9, 41.5e-6),
            net: bw(9.87e9, 3.75e-6),
            peaks: K20X,
        },
        Figure {
            name: "lbm-tsubame2",
            title: "D3Q19 LBM on TSUBAME 2.0 (seed 004 Fig. 11)",
            cluster: "calibration/tsubame2-nonaligned-cluster.toml",
            preset: "lbm",
            grids: &[(192, 512, 512), (192, 2048, 2048), (192, 4096, 4096)],
            nodes: TSUBAME_NODES,
            state_bytes_per_point: 2.0 * 19.0 * 4.0,
            pcie: bw(4.29e9, 16.9e-6),
            net: bw(3.67e9, 6.07e-6),
            peaks: M2050,
        },
    ]
}

struct Row {
    grid: (u64, u64, u64),
    method: &'static str,
    gpus: u64,
    nodes: u32,
    py: u64,
    pz: u64,
    sim_step_s: f64,
    sim_gflops: f64,
    model_gflops: f64,
    compute_step_s: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let stem = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "stencil-scaling".into());
    let steps: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    let mut csv = String::from(
        "figure,grid,method,nodes,gpus,py,pz,sim_step_s,sim_gflops,model_gflops,\
         sim_over_model,sim_compute_step_s,sim_comm_share\n",
    );
    for fig in figures() {
        let base = cluster::load(fig.cluster).unwrap_or_else(|e| panic!("{e}"));
        let g = base.gpus_per_node();
        let gpu_mem = base.node_machine().memory_nodes()
            [base.node_machine().gpus()[0].memory.index()]
        .capacity_bytes as f64;
        let mut rows = Vec::new();
        for &grid in fig.grids {
            for method in ["overlapping", "non-overlapping"] {
                for &nodes in fig.nodes {
                    let c = base.clone().with_shape(nodes, g).expect("shape");
                    let gpus = c.ranks() as u64;
                    let points = (grid.0 * grid.1 * grid.2) as f64;
                    if points / gpus as f64 * fig.state_bytes_per_point > gpu_mem {
                        continue;
                    }
                    let spec: StencilSpec = toml::from_str(&format!(
                        "preset = \"{}\"\nnx = {}\nny = {}\nnz = {}\nsteps = {steps}\n\
                         method = \"{method}\"\n",
                        fig.preset, grid.0, grid.1, grid.2
                    ))
                    .expect("spec");
                    let Ok(program) = spec.generate(&c) else {
                        continue;
                    };
                    let r = run(&program, &c, &ExecOptions::default()).expect("run");
                    let step = r.makespan_s / steps as f64;
                    let compute = r.gpu_busy_s.iter().cloned().fold(0.0, f64::max) / steps as f64;
                    let (py, pz) = hetsim::workload::squarest(gpus);
                    // The paper's model with its own inputs: P from eq. 1, the Tables' fits.
                    let fig_p = spec_rate(&fig);
                    let mesh = Mesh2d {
                        nx: grid.0,
                        ny: grid.1,
                        nz: grid.2,
                        py,
                        pz,
                        flops_per_point: fig_p.0,
                        bytes_per_boundary_point: fig_p.2,
                    };
                    let pred = stencil(&StencilParams {
                        flops_per_subdomain: mesh.flops_per_subdomain(),
                        single_gpu_flops_per_sec: fig_p.1,
                        subdomains: gpus,
                        gpus_per_node: g as u64,
                        messages_bytes: mesh.messages_bytes(),
                        inter_node: fig.net,
                        pcie: fig.pcie,
                    })
                    .expect("model");
                    let model = if method == "overlapping" {
                        pred.overlap_flops_per_sec
                    } else {
                        pred.non_overlap_flops_per_sec
                    };
                    rows.push(Row {
                        grid,
                        method,
                        gpus,
                        nodes,
                        py,
                        pz,
                        sim_step_s: step,
                        sim_gflops: spec.counted_flops_on(&c) / r.makespan_s / 1e9,
                        model_gflops: model / 1e9,
                        compute_step_s: compute,
                    });
                }
            }
        }
        for r in &rows {
            let _ = writeln!(
                csv,
                "{},{}x{}x{},{},{},{},{},{},{:.6e},{:.2},{:.2},{:.3},{:.6e},{:.3}",
                fig.name,
                r.grid.0,
                r.grid.1,
                r.grid.2,
                r.method,
                r.nodes,
                r.gpus,
                r.py,
                r.pz,
                r.sim_step_s,
                r.sim_gflops,
                r.model_gflops,
                r.sim_gflops / r.model_gflops,
                r.compute_step_s,
                1.0 - r.compute_step_s / r.sim_step_s
            );
        }
        let svg = plot(&fig, &rows);
        let path = format!("{stem}-{}.svg", fig.name);
        std::fs::write(&path, svg).expect("write svg");
        eprintln!("wrote {path}");
    }
    let path = format!("{stem}.csv");
    std::fs::write(&path, csv).expect("write csv");
    eprintln!("wrote {path}");
}

/// (flops per point, the model's single-GPU rate P by eq. 1, bytes per boundary point).
fn spec_rate(fig: &Figure) -> (f64, f64, f64) {
    let preset = match fig.preset {
        "lbm" => hetsim::workload::StencilPreset::Lbm,
        _ => hetsim::workload::StencilPreset::Diffusion,
    };
    let f = preset.figures();
    let p = f.flops_per_point / (f.flops_per_point / fig.peaks.0 + f.bytes_per_point / fig.peaks.1);
    (
        f.flops_per_point,
        p,
        f.bytes_per_boundary_point * f.halo as f64,
    )
}

const COLOURS: [&str; 3] = ["#1f5fbf", "#c0302a", "#222222"];

/// GFlop/s against GPUs, both log scales: hetsim as thick lines with markers (solid:
/// overlapping, dashed: non-overlapping), the paper's model as thin dotted lines.
fn plot(fig: &Figure, rows: &[Row]) -> String {
    let (w, h, ml, mr, mt, mb) = (760.0, 520.0, 70.0, 200.0, 40.0, 50.0);
    let xs: Vec<f64> = rows.iter().map(|r| r.gpus as f64).collect();
    let ys: Vec<f64> = rows
        .iter()
        .flat_map(|r| [r.sim_gflops, r.model_gflops])
        .collect();
    let (x0, x1) = (
        xs.iter().cloned().fold(f64::MAX, f64::min).log10(),
        xs.iter().cloned().fold(0.0, f64::max).log10(),
    );
    let (y0, y1) = (
        ys.iter().cloned().fold(f64::MAX, f64::min).log10().floor(),
        ys.iter().cloned().fold(0.0, f64::max).log10().ceil(),
    );
    let px = |x: f64| ml + (x.log10() - x0) / (x1 - x0).max(1e-9) * (w - ml - mr);
    let py = |y: f64| h - mb - (y.log10() - y0) / (y1 - y0).max(1e-9) * (h - mt - mb);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" \
         fill=\"white\"/>\n<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n",
        ml, fig.title
    );
    // Axes and decade grid.
    let mut d = y0 as i32;
    while d as f64 <= y1 {
        let y = py(10f64.powi(d));
        let _ = writeln!(
            s,
            "<line x1=\"{ml}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            w - mr,
            ml - 6.0,
            y + 4.0,
            10f64.powi(d)
        );
        d += 1;
    }
    let mut ticks: Vec<u64> = rows.iter().map(|r| r.gpus).collect();
    ticks.sort();
    ticks.dedup();
    for t in ticks {
        let x = px(t as f64);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{mt}\" y2=\"{}\" stroke=\"#eee\"/>\
             <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{t}</text>",
            h - mb,
            h - mb + 16.0
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">GPUs</text>\
         <text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">GFlop/s</text>",
        (ml + w - mr) / 2.0,
        h - 12.0,
        h / 2.0,
        h / 2.0
    );
    let mut legend_y = mt + 10.0;
    for (gi, &grid) in fig.grids.iter().enumerate() {
        let colour = COLOURS[gi % COLOURS.len()];
        for method in ["overlapping", "non-overlapping"] {
            let pts: Vec<&Row> = rows
                .iter()
                .filter(|r| r.grid == grid && r.method == method)
                .collect();
            if pts.is_empty() {
                continue;
            }
            let dash = if method == "overlapping" {
                ""
            } else {
                " stroke-dasharray=\"7 4\""
            };
            let line = |f: &dyn Fn(&Row) -> f64| {
                pts.iter()
                    .map(|r| format!("{:.1},{:.1}", px(r.gpus as f64), py(f(r))))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let _ = writeln!(
                s,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1\" \
                 stroke-dasharray=\"2 3\"/>",
                line(&|r| r.model_gflops)
            );
            let _ = writeln!(
                s,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2.2\"{dash}/>",
                line(&|r| r.sim_gflops)
            );
            for r in &pts {
                let (x, y) = (px(r.gpus as f64), py(r.sim_gflops));
                if method == "overlapping" {
                    let _ = writeln!(
                        s,
                        "<path d=\"M{x:.1},{:.1} l4,7 h-8 z\" fill=\"{colour}\"/>",
                        y - 4.5
                    );
                } else {
                    let _ = writeln!(
                        s,
                        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"white\" \
                         stroke=\"{colour}\"/>"
                    );
                }
            }
            let lx = w - mr + 12.0;
            let _ = writeln!(
                s,
                "<line x1=\"{lx}\" x2=\"{}\" y1=\"{legend_y}\" y2=\"{legend_y}\" stroke=\"{colour}\" \
                 stroke-width=\"2.2\"{dash}/><text x=\"{}\" y=\"{}\">{}x{}x{} {}</text>",
                lx + 28.0,
                lx + 34.0,
                legend_y + 4.0,
                grid.0,
                grid.1,
                grid.2,
                if method == "overlapping" {
                    "overlap"
                } else {
                    "non-overlap"
                }
            );
            legend_y += 18.0;
        }
    }
    let lx = w - mr + 12.0;
    let _ = writeln!(
        s,
        "<line x1=\"{lx}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#555\" stroke-dasharray=\"2 3\"/>\
         <text x=\"{}\" y=\"{}\">seed 004 model</text>\
         <text x=\"{lx}\" y=\"{}\">thick: hetsim</text>",
        lx + 28.0,
        legend_y + 8.0,
        legend_y + 8.0,
        lx + 34.0,
        legend_y + 12.0,
        legend_y + 30.0
    );
    s.push_str("</svg>\n");
    s
}
