//! The SVG plot of a sweep: GFlop/s against the first varied value, drawn with plotters.

use std::path::Path;

use hetsim_app::sweep::{Layout, Line, Row, Sweep, layout, lines, rest_label};
use hetsim_core::Error;

/// Twelve distinguishable colours (Tableau's, then four darker ones).
const COLOURS: [(u8, u8, u8); 12] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (0, 0, 0),
    (100, 60, 0),
];

/// Width in pixels of `text` drawn by plotters in a sans-serif font of `size`, over-estimated
/// so that what is laid out from it is never clipped: plotters' SVG backend writes
/// `font-size` = size / 1.24, and 0.62 em per character is wider than DejaVu Sans' and
/// Liberation Sans' averages.
fn text_px(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * 0.62 * size / 1.24
}

/// A number for an axis: at most six decimals, trailing zeros dropped.
fn tick(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// One legend entry: a line sample (colour, dashed or not, with a marker) and its text.
struct Entry {
    colour: (u8, u8, u8),
    dash: usize,
    text: String,
}

/// Dash patterns (dash, gap) of the lines after the first, in pixels; 0: solid.
const DASHES: [(u32, u32); 3] = [(0, 0), (8, 5), (2, 4)];

/// Draw the SVG plot of GFlop/s against the first varied value: one line (mean over seeds)
/// per scheduler and combination of the other varied values, with a band from min to max
/// over seeds (see [`layout`] for how they are told apart). The legend sits in its own
/// column right of the plotting area, sized for its longest entry.
pub fn plot_svg(sweep: &Sweep, rows: &[Row], title: &str, path: &Path) -> Result<(), Error> {
    use plotters::prelude::*;
    let (xs, lines) = lines(sweep, rows);
    let numeric = xs.iter().all(|x| x.parse::<f64>().is_ok());
    let mut scheds: Vec<&str> = Vec::new();
    let mut combos: Vec<&[String]> = Vec::new();
    for l in &lines {
        if !scheds.contains(&l.sched.as_str()) {
            scheds.push(&l.sched);
        }
        if !combos.contains(&l.rest.as_slice()) {
            combos.push(&l.rest);
        }
    }
    let lay = layout(scheds.len(), combos.len());
    let colour_of = |l: &Line| {
        let i = match lay {
            Layout::Values => combos.iter().position(|c| *c == l.rest.as_slice()),
            _ => scheds.iter().position(|s| *s == l.sched),
        };
        COLOURS[i.unwrap_or(0) % COLOURS.len()]
    };
    let dash_of = |l: &Line| match lay {
        Layout::Dashes => combos
            .iter()
            .position(|c| *c == l.rest.as_slice())
            .unwrap_or(0),
        _ => 0,
    };
    // Legend entries.
    let mut entries: Vec<Entry> = Vec::new();
    match lay {
        Layout::Values => {
            for (i, c) in combos.iter().enumerate() {
                entries.push(Entry {
                    colour: COLOURS[i % COLOURS.len()],
                    dash: 0,
                    text: rest_label(sweep, c),
                });
            }
        }
        _ => {
            for (i, s) in scheds.iter().enumerate() {
                entries.push(Entry {
                    colour: COLOURS[i % COLOURS.len()],
                    dash: 0,
                    text: (*s).to_string(),
                });
            }
        }
    }
    if lay == Layout::Dashes {
        for (i, c) in combos.iter().enumerate() {
            entries.push(Entry {
                colour: (60, 60, 60),
                dash: i,
                text: rest_label(sweep, c),
            });
        }
    }
    let seeds = rows
        .iter()
        .filter(|r| r.sched == lines.first().map_or("", |l| l.sched.as_str()))
        .map(|r| r.seed)
        .collect::<std::collections::BTreeSet<u64>>()
        .len();
    let ydesc = if seeds > 1 {
        format!("GFlop/s (mean of {seeds} seeds; band: min to max)")
    } else {
        "GFlop/s".to_string()
    };
    // Ranges.
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, _, _, max) in lines.iter().flat_map(|l| l.points.iter()) {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(max);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    }
    let pad = (x1 - x0) * 0.03;
    let y1 = if y1 > 0.0 { y1 * 1.08 } else { 1.0 };
    let xlabel = sweep.vary.first().map_or("", |v| v.key.as_str());
    // Canvas: panels of 920 × 560 at most three a row, the legend column beside them.
    const LEGEND_FONT: f64 = 14.0;
    let legend_w = entries
        .iter()
        .map(|e| text_px(&e.text, LEGEND_FONT))
        .fold(0.0, f64::max)
        .ceil() as u32
        + 60;
    let panels = if lay == Layout::Panels {
        combos.len()
    } else {
        1
    };
    let pcols = panels.min(3);
    let prows = panels.div_ceil(pcols);
    let (pw, ph) = if panels == 1 { (940, 580) } else { (520, 400) };
    let title_h = 44;
    let legend_h = 30 + 22 * entries.len() as u32;
    let plot_w = pw * pcols as u32;
    let width = plot_w + legend_w;
    let height = (title_h + ph * prows as u32).max(title_h + legend_h);
    let label_of = |x: &f64| {
        if numeric {
            tick(*x)
        } else {
            let i = x.round();
            if (x - i).abs() < 1e-9 && i >= 0.0 && (i as usize) < xs.len() {
                xs[i as usize].clone()
            } else {
                String::new()
            }
        }
    };
    let ylabel_of = |y: &f64| {
        if y1 >= 20.0 {
            format!("{y:.0}")
        } else {
            tick(*y)
        }
    };
    // Room for the y tick labels: the widest of them.
    let ytick_w = text_px(&ylabel_of(&y1), 12.0).ceil() as u32;
    // Drawn in memory, then written all at once (the file changes only if drawing succeeds).
    let mut svg = String::new();
    let mut draw = || -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 22))?;
        let (plots, legend) = root.split_horizontally(plot_w);
        let areas = if panels == 1 {
            vec![plots]
        } else {
            plots.split_evenly((prows, pcols))
        };
        for (p, area) in areas.iter().enumerate().take(panels) {
            let mut builder = ChartBuilder::on(area);
            builder
                .margin(12)
                .x_label_area_size(48)
                .y_label_area_size(ytick_w + 40);
            if lay == Layout::Panels {
                builder.caption(rest_label(sweep, combos[p]), ("sans-serif", 16));
            }
            let mut chart = builder.build_cartesian_2d((x0 - pad)..(x1 + pad), 0.0..y1)?;
            chart
                .configure_mesh()
                .x_desc(xlabel)
                .y_desc(ydesc.as_str())
                .x_labels(xs.len().clamp(2, 12))
                .x_label_formatter(&label_of)
                .y_label_formatter(&ylabel_of)
                .label_style(("sans-serif", 12))
                .axis_desc_style(("sans-serif", 13))
                .light_line_style(WHITE.mix(0.0))
                .draw()?;
            for l in lines
                .iter()
                .filter(|l| lay != Layout::Panels || l.rest.as_slice() == combos[p])
            {
                let (r, g, b) = colour_of(l);
                let colour = RGBColor(r, g, b);
                if l.points.iter().any(|p| p.3 > p.1) {
                    let mut band: Vec<(f64, f64)> = l.points.iter().map(|p| (p.0, p.3)).collect();
                    band.extend(l.points.iter().rev().map(|p| (p.0, p.1)));
                    chart.draw_series(std::iter::once(Polygon::new(
                        band,
                        colour.mix(0.15).filled(),
                    )))?;
                }
                let pts: Vec<(f64, f64)> = l.points.iter().map(|p| (p.0, p.2)).collect();
                match DASHES[dash_of(l) % DASHES.len()] {
                    (0, _) => {
                        chart.draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))?;
                    }
                    (d, gap) => {
                        chart.draw_series(DashedLineSeries::new(
                            pts.clone(),
                            d,
                            gap,
                            colour.stroke_width(2),
                        ))?;
                    }
                }
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
            }
        }
        // The legend column: entries from the top, a 28 px line sample then the text.
        let x = 12;
        for (i, e) in entries.iter().enumerate() {
            let y = 40 + 22 * i as i32;
            let (r, g, b) = e.colour;
            let style = RGBColor(r, g, b).stroke_width(2);
            match DASHES[e.dash % DASHES.len()] {
                (0, _) => legend.draw(&PathElement::new(vec![(x, y), (x + 28, y)], style))?,
                (d, gap) => {
                    legend.draw(&plotters::element::DashedPathElement::new(
                        vec![(x, y), (x + 28, y)],
                        d,
                        gap,
                        style,
                    ))?;
                }
            }
            legend.draw(&Circle::new((x + 14, y), 3, RGBColor(r, g, b).filled()))?;
            legend.draw(&Text::new(
                e.text.clone(),
                (x + 36, y - 8),
                ("sans-serif", LEGEND_FONT),
            ))?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| Error::Internal(format!("cannot draw {}: {e}", path.display())))?;
    hetsim_core::files::write_output(path, svg.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_app::sweep::Vary;

    fn row(sched: &str, seed: u64, values: &[&str], gflops: f64) -> Row {
        Row {
            sched: sched.into(),
            seed,
            values: values.iter().map(|v| (*v).to_string()).collect(),
            makespan_s: 0.5,
            gflops,
            gflops_starpu: None,
            bytes_transferred: 1e9,
            fetch_bytes: 0.25,
            prefetch_bytes: 0.0,
            writeback_bytes: 3.0,
            evictions: 4,
            writebacks: 5,
            tasks: 6,
            messages: None,
        }
    }

    /// Two schedulers, x = 1 and 2, method a or b, seeds 1 and 2: GFlop/s = 10 x, plus 1 for
    /// method b, plus seed / 10.
    fn two_keys() -> (Sweep, Vec<Row>) {
        let sw = Sweep {
            scenario: "s.toml".into(),
            scheds: vec!["s1".into(), "s2".into()],
            vary: vec![
                Vary {
                    key: "machine.nodes".into(),
                    values: vec!["1".into(), "2".into()],
                },
                Vary {
                    key: "workload.method".into(),
                    values: vec!["a".into(), "b".into()],
                },
            ],
            seeds: vec![1, 2],
            sets: Vec::new(),
        };
        let mut rows = Vec::new();
        for s in ["s1", "s2"] {
            for x in ["1", "2"] {
                for m in ["a", "b"] {
                    for seed in [1, 2] {
                        let g = 10.0 * x.parse::<f64>().unwrap()
                            + if m == "b" { 1.0 } else { 0.0 }
                            + seed as f64 / 10.0;
                        rows.push(row(s, seed, &[x, m], g));
                    }
                }
            }
        }
        (sw, rows)
    }

    /// (x, text) of every `<text>` element of an SVG written by plotters (one per line).
    fn texts(svg: &str) -> Vec<(f64, String)> {
        svg.split("<text ")
            .skip(1)
            .map(|t| {
                let x = t["x=\"".len()..]
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                let body = t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].trim();
                (x, body.to_string())
            })
            .collect()
    }

    #[test]
    fn the_legend_is_beside_the_plot_and_fits() {
        let (mut sw, mut rows) = two_keys();
        // A long value: its legend entry is the widest text.
        let long = "a-rather-long-value-that-would-not-fit-in-a-corner";
        sw.vary[1].values[1] = long.into();
        for r in &mut rows {
            if r.values[1] == "b" {
                r.values[1] = long.into();
            }
        }
        let path = std::env::temp_dir().join(format!("hetsim-plot-{}.svg", std::process::id()));
        plot_svg(&sw, &rows, "t", &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let width: f64 = svg["<svg width=\"".len()..]
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let t = texts(&svg);
        let entry = format!("workload.method={long}");
        let (x, _) = t.iter().find(|(_, s)| *s == entry).expect("legend entry");
        // Two schedulers and two methods: one 940 px panel, the legend column after it; the
        // entry ends inside the canvas at 10 px per character (more than the font's 11.3 px
        // em can take).
        assert!(*x >= 940.0, "legend at x = {x}");
        assert!(x + 10.0 * entry.len() as f64 * 0.62 <= width, "{x} {width}");
        for s in ["s1", "s2", "workload.method=a", "machine.nodes"] {
            assert!(t.iter().any(|(_, b)| b == s), "no {s}");
        }
        // Every text starts inside the canvas.
        assert!(t.iter().all(|(x, _)| *x >= 0.0 && *x <= width));
    }
}
