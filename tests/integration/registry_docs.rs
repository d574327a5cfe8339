//! The docs list what is registered, and cannot drift from it: the schedulers' table of
//! `docs/schedulers.md`, the scheduler options of `docs/scenarios.md`, the trace formats of
//! `docs/traces.md` and the model kinds of `docs/analytic.md` are checked against the
//! registries, and `hetsim run --help` against the scheduler registry.

use crate::common::hetsim;
use hetsim::analytic::MODELS;
use hetsim::sched::REGISTRY;
use hetsim::sched::registry::OptionDoc;
use hetsim::trace::FORMATS;

fn doc(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rows of the Markdown table whose header line is `header`, as cells (trimmed, `\|`
/// unescaped), up to the first line that is not a row.
fn table(text: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| l.trim() != header);
    assert!(lines.next().is_some(), "no table with header {header:?}");
    lines
        .skip(1) // |---|
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.replace("\\|", "\u{1}")
                .trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().replace('\u{1}', "|"))
                .collect()
        })
        .collect()
}

/// `` `a`, `b` `` → ["a", "b"]; "—" → [].
fn code_list(cell: &str) -> Vec<String> {
    if cell == "—" {
        return Vec::new();
    }
    cell.split(',')
        .map(|c| c.trim().trim_matches('`').to_string())
        .collect()
}

fn names(options: &[OptionDoc]) -> Vec<String> {
    options.iter().map(|o| o.name.to_string()).collect()
}

#[test]
fn the_schedulers_table_is_the_registry() {
    let rows = table(
        &doc("docs/schedulers.md"),
        "| name | file | rule, in one line | options |",
    );
    let listed: Vec<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
    let registered: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
    assert_eq!(listed, registered);
    for (row, e) in rows.iter().zip(REGISTRY) {
        let file = row[1].trim_matches('`');
        assert!(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("crates/sched/src")
                .join(file)
                .is_file(),
            "{}: no file {file}",
            e.name
        );
        assert_eq!(row[2], e.help, "{}", e.name);
        assert_eq!(code_list(&row[3]), names(e.options), "{}", e.name);
    }
}

#[test]
fn the_scheduler_options_table_is_the_registry() {
    let rows = table(
        &doc("docs/scenarios.md"),
        "| option | values | default | taken by | meaning |",
    );
    // Every option of every scheduler, in first-seen order; one name, one meaning.
    let mut options: Vec<&OptionDoc> = Vec::new();
    for e in REGISTRY {
        for o in e.options {
            match options.iter().find(|p| p.name == o.name) {
                Some(p) => assert_eq!(*p, o, "`{}` is documented twice, differently", o.name),
                None => options.push(o),
            }
        }
    }
    let listed: Vec<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
    let registered: Vec<&str> = options.iter().map(|o| o.name).collect();
    assert_eq!(listed, registered);
    for (row, o) in rows.iter().zip(&options) {
        let takers: Vec<String> = REGISTRY
            .iter()
            .filter(|e| e.option(o.name).is_some())
            .map(|e| e.name.to_string())
            .collect();
        assert_eq!(row[1], o.values.describe(), "{}", o.name);
        assert_eq!(row[2].trim_matches('`'), o.default, "{}", o.name);
        assert_eq!(code_list(&row[3]), takers, "{}", o.name);
        assert_eq!(row[4], o.help, "{}", o.name);
    }
}

#[test]
fn the_trace_formats_table_is_the_registry() {
    let rows = table(
        &doc("docs/traces.md"),
        "| format | flag | extension | options |",
    );
    let listed: Vec<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
    let registered: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
    assert_eq!(listed, registered);
    for (row, f) in rows.iter().zip(FORMATS) {
        assert_eq!(row[1], format!("`--{} FILE`", f.name));
        assert_eq!(row[2], format!("`.{}`", f.extension));
        let options: Vec<String> = if row[3] == "—" {
            Vec::new()
        } else {
            // `rows` (`all`, `busy`), `group` (...): the names before each parenthesis.
            row[3]
                .split("), ")
                .map(|o| o.split(" (").next().unwrap().trim_matches('`').to_string())
                .collect()
        };
        assert_eq!(options, names(f.options), "{}", f.name);
    }
}

#[test]
fn the_model_kinds_are_the_registry() {
    let text = doc("docs/analytic.md");
    let start = text
        .find("- `KIND` is one of: ")
        .expect("the list of kinds");
    let end = start + text[start..].find(".\n").expect("its end");
    let listed: Vec<String> = code_list(
        text[start..end]
            .trim_start_matches("- `KIND` is one of: ")
            .replace('\n', " ")
            .trim(),
    );
    let registered: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
    assert_eq!(listed, registered);
}

#[test]
fn run_and_sweep_help_list_every_scheduler_with_its_rule() {
    for cmd in ["run", "sweep"] {
        let o = hetsim(&[cmd, "--help"]);
        assert_eq!(o.status.code(), Some(0));
        let help = String::from_utf8_lossy(&o.stdout);
        for e in REGISTRY {
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{} ", e.name)))
                .unwrap_or_else(|| panic!("{cmd} --help: no line for {}\n{help}", e.name));
            assert!(line.ends_with(e.help), "{cmd} --help: {line:?}");
        }
    }
}
