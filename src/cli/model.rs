//! `hetsim model KIND [--param KEY=VALUE]... [--from FILE] [--json] [--sweep KEY=V1,V2,...]`:
//! evaluate one of the papers' analytic models ([`crate::analytic`]) and print the prediction
//! with its terms.
//!
//! Parameters come from `--from FILE` (a TOML table of `key = value`, optionally with
//! `kind = "..."`), then from each `--param` in order (later ones win). Every model declares
//! its parameters in the analytic crate's registry ([`crate::analytic::MODELS`]); an unknown
//! kind or parameter, a missing one or a value that is not a number is an input error (exit
//! status 2) naming the parameter.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use super::json_line;
use crate::InputError;
use crate::analytic::params::{Evaluation, Need, ParamType, Value, format_number};
use crate::analytic::{MODELS, ModelEntry, Params};
use crate::error::read_input;

/// Options of `hetsim model`.
#[derive(Debug, Args)]
#[command(after_help = help_text())]
pub struct ModelArgs {
    /// The model (listed below with its parameters).
    pub kind: String,
    /// A parameter, KEY=VALUE (repeatable; overrides --from).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// A TOML file of parameters (`key = value` lines; `kind = "..."` optional).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Evaluate over the values of one parameter and print a table: KEY=V1,V2,...
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub sweep: Option<String>,
    /// Print the parameters of KIND and exit.
    #[arg(long)]
    pub help_params: bool,
}

/// The parameters of one model, one per line.
pub fn params_help(model: &ModelEntry) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", model.name, model.summary);
    for s in model.params {
        let ty = match s.ty {
            ParamType::Real => "number".to_string(),
            ParamType::Count => "integer".to_string(),
            ParamType::Choice(c) => c.join("|"),
            ParamType::Path => "file".to_string(),
        };
        let need = match s.need {
            Need::Required => "required".to_string(),
            Need::Default(d) => format!("default {d}"),
            Need::Optional => "optional".to_string(),
        };
        let _ = writeln!(out, "  {:<30} {:<10} {:<14} {}", s.name, ty, need, s.help);
    }
    out
}

/// The text after `--help`: every kind and its parameters.
pub fn help_text() -> String {
    let mut out = String::from("Kinds and their parameters (units in the names):\n\n");
    for m in MODELS {
        out.push_str(&params_help(m));
        out.push('\n');
    }
    out.push_str(
        "Example: hetsim model roofline --param peak_flops_per_sec=1030e9 \
         --param peak_bytes_per_sec=148e9 --param intensity_flops_per_byte=1.83\n\
         Equations, units and the papers' figures: docs/analytic.md",
    );
    out
}

/// Evaluate `params` with its model, after reading the files its path parameters name.
fn evaluate(params: &Params) -> Result<Evaluation, InputError> {
    let mut p = params.clone();
    for (key, path) in p.files_to_read() {
        // An unreadable file is reported only if the model reads it.
        p.set_file_text(&key, read_input(std::path::Path::new(&path)));
    }
    let ev = (p.model().evaluate)(&p)?;
    // A parameter given but never read would be silently ignored: the user meant something
    // the model does not do.
    if let Some(key) = p.unused().first() {
        return Err(InputError::new(format!(
            "parameter `{key}` is not used by `{}` with the other parameters given; remove it \
             (see `hetsim model {} --help-params`)",
            p.model().name,
            p.model().name
        ))
        .at_field(*key));
    }
    // The models' figures are finite for finite parameters in their ranges; anything else is
    // a parameter out of range that the model did not catch.
    if let Some((name, v, _)) = ev.terms.iter().find(|t| !t.1.is_finite()) {
        return Err(InputError::new(format!(
            "the parameters give {name} = {v}: a parameter is out of the model's range (a zero \
             rate or size, or figures that overflow)"
        )));
    }
    Ok(ev)
}

fn model_of(text: &str) -> Result<&'static ModelEntry, InputError> {
    crate::analytic::model(text).ok_or_else(|| {
        let known: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
        InputError::new(format!(
            "unknown model kind `{text}` (known: {})",
            known.join(", ")
        ))
    })
}

/// Split `KEY=VALUE`.
fn split_kv(text: &str, flag: &str) -> Result<(String, String), InputError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(InputError::new(format!(
            "{flag} {text}: expected KEY=VALUE"
        ))),
    }
}

/// Read `--from FILE`: a flat TOML table.
fn load_file(params: &mut Params, path: &std::path::Path) -> Result<(), InputError> {
    let text = read_input(path)?;
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| InputError::new(format!("not a TOML table: {}", e.message())).in_file(path))?;
    for (key, value) in &table {
        let raw = match value {
            toml::Value::Integer(i) => Value::Num(*i as f64),
            toml::Value::Float(f) => Value::Num(*f),
            toml::Value::Boolean(b) => Value::Num(if *b { 1.0 } else { 0.0 }),
            toml::Value::String(s) => Value::Text(s.clone()),
            _ => {
                return Err(InputError::new("expected a number or a string")
                    .in_file(path)
                    .at_field(key));
            }
        };
        if key == "kind" {
            if raw.show() != params.model().name {
                return Err(InputError::new(format!(
                    "the file is for `{}`, not `{}`",
                    raw.show(),
                    params.model().name
                ))
                .in_file(path)
                .at_field("kind"));
            }
            continue;
        }
        params.set(key, raw, "").map_err(|e| e.in_file(path))?;
    }
    Ok(())
}

fn evaluation_json(ev: &Evaluation) -> serde_json::Value {
    let mut result = serde_json::Map::new();
    for (name, v, _) in &ev.terms {
        result.insert(name.clone(), serde_json::json!(v));
    }
    let mut notes = serde_json::Map::new();
    for (name, t) in &ev.notes {
        notes.insert(name.clone(), serde_json::json!(t));
    }
    serde_json::json!({ "result": result, "notes": notes })
}

fn params_json(p: &Params) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (k, v) in p.values() {
        m.insert(
            k.to_string(),
            match v {
                Value::Num(x) => serde_json::json!(x),
                Value::Text(t) => serde_json::json!(t),
            },
        );
    }
    serde_json::Value::Object(m)
}

/// Evaluate and render, without printing (for tests).
pub fn render(args: &ModelArgs) -> crate::Result<String> {
    let model = model_of(&args.kind)?;
    let kind = model.name;
    if args.help_params {
        return Ok(params_help(model));
    }
    let mut params = Params::new(model);
    if let Some(path) = &args.from {
        load_file(&mut params, path)?;
    }
    for p in &args.params {
        let (k, v) = split_kv(p, "--param")?;
        params.set(&k, Value::Text(v), &format!("--param {p}"))?;
    }
    let Some(sweep) = &args.sweep else {
        let ev = evaluate(&params)?;
        return Ok(if args.json {
            let mut obj = evaluation_json(&ev);
            obj["kind"] = serde_json::json!(kind);
            obj["params"] = params_json(&params);
            json_line(&obj)?
        } else {
            text_single(&params, &ev)
        });
    };
    let (key, values) = split_kv(sweep, "--sweep")?;
    let values: Vec<&str> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(InputError::new(format!("--sweep {sweep}: no values")).into());
    }
    let mut rows = Vec::with_capacity(values.len());
    for v in &values {
        let mut p = params.clone();
        p.set(
            &key,
            Value::Text(v.to_string()),
            &format!("--sweep {sweep}"),
        )?;
        let ev = evaluate(&p)?;
        let shown = p.given(&key).map(Value::show).unwrap_or_default();
        rows.push((shown, ev));
    }
    if args.json {
        let arr: Vec<serde_json::Value> = rows
            .iter()
            .map(|(v, ev)| {
                let mut o = evaluation_json(ev);
                o["value"] = serde_json::json!(v);
                o
            })
            .collect();
        let obj = serde_json::json!({
            "kind": kind,
            "params": params_json(&params),
            "sweep": key,
            "rows": arr,
        });
        json_line(&obj)
    } else {
        Ok(text_sweep(&params, &key, &rows))
    }
}

fn text_single(p: &Params, ev: &Evaluation) -> String {
    let mut out = format!("model {}: {}\n", p.model().name, p.model().summary);
    out.push_str("parameters\n");
    for (k, v) in p.shown() {
        let _ = writeln!(out, "  {k} = {v}");
    }
    out.push_str("prediction\n");
    let width = ev.terms.iter().map(|t| t.0.len()).max().unwrap_or(0);
    for (name, v, unit) in &ev.terms {
        let _ = writeln!(out, "  {name:<width$}  {:>14}  {unit}", format_number(*v));
    }
    for (name, t) in &ev.notes {
        let _ = writeln!(out, "  {name}: {t}");
    }
    out
}

fn text_sweep(p: &Params, key: &str, rows: &[(String, Evaluation)]) -> String {
    let mut out = format!("model {}: {}\n", p.model().name, p.model().summary);
    let fixed: Vec<String> = p
        .shown()
        .into_iter()
        .filter(|(k, _)| k != key)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !fixed.is_empty() {
        let _ = writeln!(out, "# {}", fixed.join(" "));
    }
    // Columns: the union of term names, in first-seen order, capped for readability.
    let mut cols: Vec<String> = Vec::new();
    for (_, ev) in rows {
        for (name, _, _) in &ev.terms {
            if !cols.contains(name) && cols.len() < 12 {
                cols.push(name.clone());
            }
        }
    }
    let w = 14usize;
    let mut header = format!("{key:>w$}");
    for c in &cols {
        let _ = write!(header, " {c:>w$}");
    }
    let _ = writeln!(out, "{header}");
    for (v, ev) in rows {
        let mut line = format!("{v:>w$}");
        for c in &cols {
            let cell = ev
                .terms
                .iter()
                .find(|t| &t.0 == c)
                .map(|t| format_number(t.1))
                .unwrap_or_else(|| "-".to_string());
            let _ = write!(line, " {cell:>w$}");
        }
        let notes: Vec<String> = ev.notes.iter().map(|(n, t)| format!("{n}: {t}")).collect();
        if !notes.is_empty() {
            let _ = write!(line, "  {}", notes.join("; "));
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Run `hetsim model`.
pub fn run(args: &ModelArgs) -> crate::Result<()> {
    super::print(&render(args)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(kind: &str, params: &[&str]) -> ModelArgs {
        ModelArgs {
            kind: kind.into(),
            params: params.iter().map(|s| s.to_string()).collect(),
            from: None,
            json: false,
            sweep: None,
            help_params: false,
        }
    }

    fn err(a: &ModelArgs) -> String {
        render(a).unwrap_err().to_string()
    }

    #[test]
    fn every_model_is_in_the_help() {
        for m in MODELS {
            assert!(!m.summary.is_empty(), "{}", m.name);
            assert!(help_text().contains(&params_help(m)), "{}", m.name);
        }
    }

    #[test]
    fn hpl_text_output_has_the_terms() {
        let a = args(
            "hpl",
            &[
                "n=1000",
                "nb=100",
                "p=2",
                "q=4",
                "gamma_flops_per_sec=1e9",
                "alpha_s=1e-5",
                "bandwidth_bytes_per_sec=8e8",
            ],
        );
        let t = render(&a).unwrap();
        for term in ["flops_per_sec", "compute_s", "bandwidth_s", "latency_s"] {
            assert!(t.contains(term), "{t}");
        }
        assert!(t.contains("0.083333"), "{t}"); // compute 1/12 s
    }

    #[test]
    fn errors_name_the_parameter() {
        let e = err(&args("hpl", &["n=10"]));
        assert!(e.contains("missing parameter `nb`"), "{e}");
        let e = err(&args("hpl", &["n=ten"]));
        assert!(e.contains("`n`") && e.contains("not a number"), "{e}");
        let e = err(&args("hpl", &["n=10.5"]));
        assert!(e.contains("whole number"), "{e}");
        let e = err(&args("hpl", &["bogus=1"]));
        assert!(e.contains("unknown parameter `bogus`"), "{e}");
        let e = err(&args("mhloggp", &["sender=fpga"]));
        assert!(e.contains("sender") && e.contains("cpu, gpu"), "{e}");
        let e = err(&args("nope", &[]));
        assert!(e.contains("unknown model kind"), "{e}");
        let e = err(&args(
            "roofline",
            &["peak_flops_per_sec=1", "peak_bytes_per_sec=1"],
        ));
        assert!(e.contains("intensity_flops_per_byte"), "{e}");
    }

    #[test]
    fn mcl_layers_from_numbered_parameters() {
        let a = args(
            "mcl-hpl",
            &[
                "n=1000",
                "nb=100",
                "p=2",
                "q=4",
                "gamma_flops_per_sec=1e9",
                "l1_alpha_s=1e-6",
                "l1_bandwidth_bytes_per_sec=1e10",
                "l2_alpha_s=1e-5",
                "l2_bandwidth_bytes_per_sec=8e8",
            ],
        );
        let t = render(&a).unwrap();
        assert!(t.contains("l1_comm_s") && t.contains("l2_comm_s"), "{t}");
        // a gap in the layer numbers is a missing parameter
        let mut b = args(
            "mcl-hpl",
            &[
                "n=1000",
                "nb=100",
                "p=1",
                "q=1",
                "gamma_flops_per_sec=1e9",
                "l2_alpha_s=1e-5",
                "l2_bandwidth_bytes_per_sec=8e8",
            ],
        );
        assert!(err(&b).contains("l1_alpha_s"));
        b.params.truncate(5);
        assert!(err(&b).contains("l1_alpha_s"));
    }

    #[test]
    fn bcast_defaults_come_from_the_paper_and_the_rule_picks() {
        let t = render(&args("bcast", &["procs=8", "bytes=1048576"])).unwrap();
        assert!(t.contains("algorithm: ring"), "{t}");
        assert!(t.contains("Liu et al. 2012"), "{t}");
        let t = render(&args("bcast", &["procs=4", "bytes=1048576"])).unwrap();
        assert!(t.contains("algorithm: binomial"), "{t}");
    }

    #[test]
    fn sweep_and_json() {
        let mut a = args(
            "roofline",
            &["peak_flops_per_sec=1030e9", "peak_bytes_per_sec=148e9"],
        );
        a.sweep = Some("intensity_flops_per_byte=0.41,1.83".into());
        let t = render(&a).unwrap();
        assert_eq!(
            t.lines()
                .filter(|l| l.trim_start().starts_with("0.41"))
                .count(),
            1
        );
        a.json = true;
        let v: serde_json::Value = serde_json::from_str(&render(&a).unwrap()).unwrap();
        assert_eq!(v["rows"].as_array().unwrap().len(), 2);
        a.sweep = Some("intensity_flops_per_byte=".into());
        assert!(render(&a).is_err());
    }
}
