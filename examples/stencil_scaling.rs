//! Strong scaling of the Shimokawabe et al. 2013 stencils: simulated by hetsim (the stencil workload run by the
//! MPI executor on the cluster files) and predicted by the paper's own model (Shimokawabe et al. 2013 eqs. 2-5,
//! `hetsim::analytic::stencil`), for both methods, on the grids of the paper's Figs. 7, 8 and 11.
//!
//! Usage: `cargo run --release --example stencil_scaling -- OUT_STEM [STEPS]` writes
//! `OUT_STEM.csv` and one SVG per figure, `OUT_STEM-<figure>.svg`. `scripts/stencil-scaling.sh`
//! runs it. Points whose subdomain does not fit in GPU memory (two copies of the state: diffusion
//! 2 × 4 B per point, LBM 2 × 19 × 4 B) are left out, as no run could have measured them.

use hetsim::analytic::stencil::{BandwidthModel, Mesh2d, StencilParams, stencil};
use hetsim::cluster;
use hetsim::programs::simulate_program_default as run;
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
            title: "Diffusion on TSUBAME 2.0 (Shimokawabe et al. 2013 Fig. 7)",
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
            title: "Diffusion on the Cray XK6m (Shimokawabe et al. 2013 Fig. 8)",
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
            title: "D3Q19 LBM on TSUBAME 2.0 (Shimokawabe et al. 2013 Fig. 11)",
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
    let path = format!("{stem}.csv");
    let mut csv = csv::Writer::from_path(&path).expect("create csv");
    csv.write_record([
        "figure",
        "grid",
        "method",
        "nodes",
        "gpus",
        "py",
        "pz",
        "sim_step_s",
        "sim_gflops",
        "model_gflops",
        "sim_over_model",
        "sim_compute_step_s",
        "sim_comm_share",
    ])
    .expect("write csv");
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
                    let r = run(&program, &c).expect("run");
                    let step = r.makespan_s / steps as f64;
                    let compute = hetsim::programs::busy_by_rank(&r)
                        .0
                        .into_iter()
                        .fold(0.0, f64::max)
                        / steps as f64;
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
            csv.write_record([
                fig.name.to_string(),
                format!("{}x{}x{}", r.grid.0, r.grid.1, r.grid.2),
                r.method.to_string(),
                r.nodes.to_string(),
                r.gpus.to_string(),
                r.py.to_string(),
                r.pz.to_string(),
                format!("{:.6e}", r.sim_step_s),
                format!("{:.2}", r.sim_gflops),
                format!("{:.2}", r.model_gflops),
                format!("{:.3}", r.sim_gflops / r.model_gflops),
                format!("{:.6e}", r.compute_step_s),
                format!("{:.3}", 1.0 - r.compute_step_s / r.sim_step_s),
            ])
            .expect("write csv");
        }
        let svg = format!("{stem}-{}.svg", fig.name);
        plot(&fig, &rows, &svg).expect("draw svg");
        eprintln!("wrote {svg}");
    }
    csv.flush().expect("write csv");
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

const COLOURS: [(u8, u8, u8); 3] = [(31, 95, 191), (192, 48, 42), (34, 34, 34)];

/// Width in pixels of `text` drawn by plotters at font `size` (its SVG backend writes
/// `font-size` = size / 1.24), over-estimated at 0.62 em per character so nothing is clipped.
fn text_px(text: &str, size: f64) -> u32 {
    (text.chars().count() as f64 * 0.62 * size / 1.24).ceil() as u32
}

/// GFlop/s against GPUs, both log scales, drawn with plotters: hetsim as thick lines with
/// markers (solid with triangles: overlapping; dashed with open circles: non-overlapping), the
/// paper's model as thin dotted lines; the legend in a column right of the plot.
fn plot(fig: &Figure, rows: &[Row], path: &str) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::coord::combinators::{BindKeyPoints, IntoLogRange};
    use plotters::element::DashedPathElement;
    use plotters::prelude::*;

    let mut gpus: Vec<u64> = rows.iter().map(|r| r.gpus).collect();
    gpus.sort_unstable();
    gpus.dedup();
    let (gmin, gmax) = (gpus[0] as f64, gpus[gpus.len() - 1] as f64);
    let ys = rows.iter().flat_map(|r| [r.sim_gflops, r.model_gflops]);
    let (lo, hi) = ys.fold((f64::MAX, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let decades: Vec<f64> = (d0..=d1).map(|d| 10f64.powi(d)).collect();
    // Legend: one entry per grid and method drawn, then the model's line style.
    let mut entries: Vec<(usize, bool, String)> = Vec::new();
    for (gi, &grid) in fig.grids.iter().enumerate() {
        for (overlap, method) in [(true, "overlapping"), (false, "non-overlapping")] {
            if rows.iter().any(|r| r.grid == grid && r.method == method) {
                let (a, b, c) = grid;
                let what = if overlap { "overlap" } else { "non-overlap" };
                entries.push((gi, overlap, format!("{a}x{b}x{c} {what}")));
            }
        }
    }
    let notes = ["Shimokawabe et al. 2013 model (dotted)", "thick: hetsim"];
    let legend_w = entries
        .iter()
        .map(|e| text_px(&e.2, 14.0))
        .chain(notes.iter().map(|n| text_px(n, 14.0)))
        .max()
        .unwrap_or(0)
        + 60;
    let (plot_w, h) = (620u32, 520u32);
    let root = SVGBackend::new(path, (plot_w + legend_w, h)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(fig.title, ("sans-serif", 19))?;
    let (area, legend) = root.split_horizontally(plot_w);
    let mut chart = ChartBuilder::on(&area)
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (gmin * 0.9..gmax * 1.1)
                .log_scale()
                .with_key_points(gpus.iter().map(|&g| g as f64).collect()),
            (decades[0]..decades[decades.len() - 1])
                .log_scale()
                .with_key_points(decades.clone()),
        )?;
    chart
        .configure_mesh()
        .x_desc("GPUs")
        .y_desc("GFlop/s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(WHITE)
        .draw()?;
    for (gi, &grid) in fig.grids.iter().enumerate() {
        let (r, g, b) = COLOURS[gi % COLOURS.len()];
        let colour = RGBColor(r, g, b);
        for (overlap, method) in [(true, "overlapping"), (false, "non-overlapping")] {
            let pts: Vec<&Row> = rows
                .iter()
                .filter(|r| r.grid == grid && r.method == method)
                .collect();
            if pts.is_empty() {
                continue;
            }
            let model: Vec<(f64, f64)> = pts
                .iter()
                .map(|r| (r.gpus as f64, r.model_gflops))
                .collect();
            chart.draw_series(DashedLineSeries::new(model, 2, 3, colour.stroke_width(1)))?;
            let sim: Vec<(f64, f64)> = pts.iter().map(|r| (r.gpus as f64, r.sim_gflops)).collect();
            if overlap {
                chart.draw_series(LineSeries::new(sim.clone(), colour.stroke_width(2)))?;
                chart.draw_series(
                    sim.iter()
                        .map(|&p| TriangleMarker::new(p, 5, colour.filled())),
                )?;
            } else {
                chart.draw_series(DashedLineSeries::new(
                    sim.clone(),
                    7,
                    4,
                    colour.stroke_width(2),
                ))?;
                chart.draw_series(sim.iter().map(|&p| Circle::new(p, 4, WHITE.filled())))?;
                chart.draw_series(
                    sim.iter()
                        .map(|&p| Circle::new(p, 4, colour.stroke_width(1))),
                )?;
            }
        }
    }
    // The legend column.
    let x = 10;
    let mut y = 40;
    for (gi, overlap, text) in &entries {
        let (r, g, b) = COLOURS[gi % COLOURS.len()];
        let colour = RGBColor(r, g, b);
        if *overlap {
            legend.draw(&PathElement::new(
                vec![(x, y), (x + 28, y)],
                colour.stroke_width(2),
            ))?;
            legend.draw(&TriangleMarker::new((x + 14, y), 5, colour.filled()))?;
        } else {
            legend.draw(&DashedPathElement::new(
                vec![(x, y), (x + 28, y)],
                7,
                4,
                colour.stroke_width(2),
            ))?;
            legend.draw(&Circle::new((x + 14, y), 4, WHITE.filled()))?;
            legend.draw(&Circle::new((x + 14, y), 4, colour.stroke_width(1)))?;
        }
        legend.draw(&Text::new(
            text.clone(),
            (x + 36, y - 8),
            ("sans-serif", 14),
        ))?;
        y += 22;
    }
    y += 8;
    legend.draw(&DashedPathElement::new(
        vec![(x, y), (x + 28, y)],
        2,
        3,
        RGBColor(85, 85, 85).stroke_width(1),
    ))?;
    legend.draw(&Text::new(notes[0], (x + 36, y - 8), ("sans-serif", 14)))?;
    legend.draw(&Text::new(notes[1], (x, y + 14), ("sans-serif", 14)))?;
    root.present()?;
    Ok(())
}
